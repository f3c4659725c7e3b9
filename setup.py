"""Builds torch_pjrt._C: the thin C++ glue (csrc/ and its rooms device/,
ops/, compile/) linked with the C core (build/libtpj.a, made by `make lib`).
Build with --no-build-isolation so it compiles against the torch that is
installed, not a freshly downloaded one.

Build speed (docs/PERFORMANCE.md, "Build"): ninja runs one compile per core
(MAX_JOBS, default the core count); every file gets a precompiled header of
the torch includes all glue files share (csrc/pch.h), built once before
ninja runs with the very flags ninja uses; no debug info unless
TORCH_PJRT_DEBUG_BUILD=1 (it more than doubles the objects and the time)."""
import glob
import os
import shlex
import subprocess
import sys

from setuptools import setup

# Importing torch autoloads installed device backends, this one included;
# the build must not depend on a previously installed (maybe stale) copy.
os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
import torch.utils.cpp_extension as cpp_extension
from torch.utils.cpp_extension import BuildExtension, CppExtension

ROOT = os.path.dirname(os.path.abspath(__file__))
JOBS = os.environ.get("MAX_JOBS") or str(os.cpu_count() or 1)
os.environ["MAX_JOBS"] = JOBS  # ninja's own default is cores + 2
PCH_SRC = os.path.join(ROOT, "csrc", "pch.h")
PCH_DIR = os.path.join(ROOT, "build", "ext", "pch")


def pjrt_include():
    # TORCH_PJRT_PJRT_INCLUDE: a folder holding pjrt_c_api.h, for machines
    # without the xla-cpu-pjrt wheel (the header is never committed here).
    if os.environ.get("TORCH_PJRT_PJRT_INCLUDE"):
        return os.environ["TORCH_PJRT_PJRT_INCLUDE"]
    import xla_plugins.xla_cpu_pjrt as m

    return os.path.join(os.path.dirname(m.__file__), "include")


class BuildWithCore(BuildExtension):
    def finalize_options(self):
        super().finalize_options()
        # One lasting build folder (pip's editable builds use a fresh
        # temporary one each time): ninja then recompiles only what changed.
        self.build_temp = os.path.join(ROOT, "build", "ext")

    def run(self):
        venv = os.path.dirname(os.path.dirname(sys.executable))
        subprocess.check_call(["make", "-C", ROOT, f"-j{JOBS}", "lib", f"VENV={venv}",
                               f"PJRT_INCLUDE={pjrt_include()}"])
        super().run()


def _stale(target, depfile, flags_file, flags):
    """True when target is missing, its flags changed, or a file it was made
    from (the compiler's depfile) is newer."""
    if not (os.path.exists(target) and os.path.exists(depfile) and os.path.exists(flags_file)):
        return True
    if open(flags_file).read() != flags:
        return True
    deps = open(depfile).read().replace("\\\n", " ").split(":", 1)[1].split()
    t = os.path.getmtime(target)
    return any(not os.path.exists(d) or os.path.getmtime(d) > t for d in deps)


def _build_pch(cflags, post_cflags):
    """Compiles csrc/pch.h into build/ext/pch/pch.h.gch with the flags ninja
    passes to every file (GCC uses a PCH only when they match), and returns
    the flags that make each file start from it."""
    os.makedirs(PCH_DIR, exist_ok=True)
    header = os.path.join(PCH_DIR, "pch.h")
    text = open(PCH_SRC).read()
    if not os.path.exists(header) or open(header).read() != text:
        with open(header, "w") as f:
            f.write(text)
    gch, dep, flags_file = header + ".gch", header + ".d", header + ".flags"
    cmd = " ".join([shlex.quote(cpp_extension.get_cxx_compiler()), "-x", "c++-header",
                    *cflags, *post_cflags, "-MMD", "-MF", shlex.quote(dep),
                    shlex.quote(header), "-o", shlex.quote(gch)])
    if _stale(gch, dep, flags_file, cmd):
        print("torch_pjrt: precompiling csrc/pch.h", flush=True)
        subprocess.check_call(cmd, shell=True)
        with open(flags_file, "w") as f:
            f.write(cmd)
    return ["-include", shlex.quote(header), "-Winvalid-pch"]


_write_ninja_and_compile = cpp_extension._write_ninja_file_and_compile_objects


def _compile_with_pch(*args, **kwargs):
    kwargs["post_cflags"] = kwargs["post_cflags"] + _build_pch(kwargs["cflags"],
                                                               kwargs["post_cflags"])
    return _write_ninja_and_compile(*args, **kwargs)


# cpp_extension calls this module-level function by name for every ninja build.
cpp_extension._write_ninja_file_and_compile_objects = _compile_with_pch

csrc = sorted(os.path.relpath(p, ROOT)
              for p in glob.glob(os.path.join(ROOT, "csrc", "**", "*.cpp"), recursive=True))
debug = ["-g"] if os.environ.get("TORCH_PJRT_DEBUG_BUILD") == "1" else ["-g0"]

setup(
    ext_modules=[
        CppExtension(
            "torch_pjrt._C",
            csrc,
            include_dirs=[os.path.join(ROOT, "src"), os.path.join(ROOT, "csrc"), pjrt_include()],
            extra_objects=[os.path.join(ROOT, "build", "libtpj.a")],
            extra_compile_args=["-O2", *debug, "-std=c++17", "-Wall", "-Wno-unused-parameter"],
            libraries=["dl"],
        )
    ],
    cmdclass={"build_ext": BuildWithCore},
)
