"""Builds torch_pjrt._C: the thin C++ glue (csrc/) linked with the C core
(build/libtpj.a, made by `make lib`). Build with --no-build-isolation so it
compiles against the torch that is installed, not a freshly downloaded one."""
import os
import subprocess
import sys

from setuptools import setup

# Importing torch autoloads installed device backends, this one included;
# the build must not depend on a previously installed (maybe stale) copy.
os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
from torch.utils.cpp_extension import BuildExtension, CppExtension

ROOT = os.path.dirname(os.path.abspath(__file__))


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
        jobs = os.environ.get("MAX_JOBS") or str(os.cpu_count() or 1)
        subprocess.check_call(["make", "-C", ROOT, f"-j{jobs}", "lib", f"VENV={venv}",
                               f"PJRT_INCLUDE={pjrt_include()}"])
        super().run()


csrc = sorted(os.path.join("csrc", f) for f in os.listdir(os.path.join(ROOT, "csrc"))
              if f.endswith(".cpp"))

setup(
    ext_modules=[
        CppExtension(
            "torch_pjrt._C",
            csrc,
            include_dirs=[os.path.join(ROOT, "src"), pjrt_include()],
            extra_objects=[os.path.join(ROOT, "build", "libtpj.a")],
            extra_compile_args=["-O2", "-std=c++17", "-Wall", "-Wno-unused-parameter"],
            libraries=["dl"],
        )
    ],
    cmdclass={"build_ext": BuildWithCore},
)
