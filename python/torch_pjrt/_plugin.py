"""Finding the PJRT plugin to load.

Order: TORCH_PJRT_PLUGIN (a path) if set; else TORCH_PJRT_PLATFORM
(cpu|cuda|tpu); else auto: libtpu where a TPU is present, the XLA CUDA plugin
where an NVIDIA GPU is present, otherwise the xla-cpu-pjrt wheel.
"""
from __future__ import annotations

import glob
import importlib
import importlib.util
import os
from dataclasses import dataclass
from importlib import metadata

PIP_HINT = {
    "cpu": "pip install xla-cpu-pjrt",
    "cuda": "pip install jax-cuda13-pjrt  (or jax-cuda12-pjrt / xla-cuda13-pjrt)",
    "tpu": "pip install libtpu",
}


@dataclass
class Plugin:
    path: str = ""
    platform: str = ""
    error: str = ""


def _module_dir(modname: str) -> str | None:
    # find_spec locates a package without running its __init__: the CUDA
    # plugin's package (jax_plugins.xla_cuda13) imports all of jax there.
    try:
        spec = importlib.util.find_spec(modname)
    except Exception:
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return list(spec.submodule_search_locations)[0]
    return os.path.dirname(spec.origin) if spec.origin else None


def _so_in(folder: str | None) -> str | None:
    if not folder:
        return None
    libs = sorted(glob.glob(os.path.join(folder, "*.so")))
    return libs[0] if libs else None


def _from_entry_points(keyword: str) -> str | None:
    for group in ("xla_plugins", "jax_plugins"):
        try:
            eps = metadata.entry_points(group=group)
        except Exception:
            continue
        for ep in eps:
            if keyword in ep.name or keyword in ep.value:
                so = _so_in(_module_dir(ep.value.split(":")[0]))
                if so:
                    return so
    return None


def _find_cpu() -> str | None:
    return _from_entry_points("cpu") or _so_in(_module_dir("xla_plugins.xla_cpu_pjrt"))


def _find_cuda() -> str | None:
    found = _from_entry_points("cuda")
    if found:
        return found
    for mod in ("jax_plugins.xla_cuda13", "jax_plugins.xla_cuda12"):
        so = _so_in(_module_dir(mod))
        if so:
            return so
    return None


def _find_tpu() -> str | None:
    try:
        import libtpu  # type: ignore

        get = getattr(libtpu, "get_library_path", None)
        if get:
            return get()
        return _so_in(os.path.dirname(libtpu.__file__))
    except Exception:
        return None


_FINDERS = {"cpu": _find_cpu, "cuda": _find_cuda, "tpu": _find_tpu}


def _has_tpu() -> bool:
    return bool(glob.glob("/dev/accel*") or glob.glob("/dev/vfio/[0-9]*"))


def _has_gpu() -> bool:
    return os.path.exists("/dev/nvidia0") or os.path.exists("/dev/nvidiactl")


def find_plugin() -> Plugin:
    path = os.environ.get("TORCH_PJRT_PLUGIN")
    if path:
        if not os.path.isfile(path):
            return Plugin(error=f"TORCH_PJRT_PLUGIN={path} does not exist")
        name = os.path.basename(path)
        plat = "cpu" if "cpu" in name else "tpu" if "tpu" in name else "cuda" if "cuda" in name else ""
        return Plugin(path=path, platform=plat)
    want = os.environ.get("TORCH_PJRT_PLATFORM", "").strip().lower()
    if want:
        if want not in _FINDERS:
            return Plugin(error=f"TORCH_PJRT_PLATFORM={want} is not one of cpu, cuda, tpu")
        so = _FINDERS[want]()
        if not so:
            return Plugin(platform=want, error=f"no PJRT plugin for platform '{want}' is installed; "
                                               f"fix with: {PIP_HINT[want]}")
        return Plugin(path=so, platform=want)
    order = []
    if _has_tpu():
        order.append("tpu")
    if _has_gpu():
        order.append("cuda")
    order.append("cpu")
    for plat in order:
        so = _FINDERS[plat]()
        if so:
            return Plugin(path=so, platform=plat)
    return Plugin(platform="cpu", error="no PJRT plugin is installed; fix with: " + PIP_HINT["cpu"])


# The most devices the C core addresses (src/rt/internal.h, TPJ_MAX_DEVICES).
MAX_DEVICES = 256


def _env_number(name: str, default, kind, lo, hi):
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        v = kind(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not {'an integer' if kind is int else 'a number'}") from None
    if not lo <= v <= hi:
        raise ValueError(f"{name}={raw} must be between {lo} and {hi}")
    return v


def cpu_device_count() -> int:
    """TORCH_PJRT_CPU_DEVICES: how many devices the CPU plugin exposes (default 1).
    Checked before the plugin sees it: a huge count would make the plugin
    build that many devices (minutes, gigabytes) before anything refused it."""
    return _env_number("TORCH_PJRT_CPU_DEVICES", 1, int, 1, MAX_DEVICES)


VISIBLE_DEVICES = "TORCH_PJRT_VISIBLE_DEVICES"


def visible_devices() -> list[int] | None:
    """TORCH_PJRT_VISIBLE_DEVICES: the plugin's devices this process sees, as
    CUDA_VISIBLE_DEVICES: a comma-separated list of the plugin's device
    indices, which become tpu:0, tpu:1, ... in that order; empty hides every
    device; unset (None) shows all. Raises ValueError naming the variable for
    text that is not such a list (a missing device fails the first tpu use)."""
    raw = os.environ.get(VISIBLE_DEVICES)
    if raw is None:
        return None
    parts = [p.strip() for p in raw.split(",")]
    if parts == [""]:
        return []
    out = []
    for p in parts:
        if not p.isdigit():
            raise ValueError(f"{VISIBLE_DEVICES}={raw!r} is not a comma-separated list of "
                             "device indices (for example 0,2)")
        if int(p) in out:
            raise ValueError(f"{VISIBLE_DEVICES}={raw!r} names device {int(p)} twice")
        out.append(int(p))
    return out


def cache_size() -> int:
    """TORCH_PJRT_CACHE_SIZE: executables kept in memory (default 1024). Read
    by the runtime when it opens; checked here, since the runtime took 0, -1
    or 'abc' as 1 (every op then compiled again)."""
    return _env_number("TORCH_PJRT_CACHE_SIZE", 1024, int, 1, 2**31 - 1)


def _env_flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name}={raw!r} is not a boolean (use 1 or 0)")


GPU_ALLOCATORS = ("bfc", "platform", "cuda_async", "default")


def create_options(platform: str) -> list[tuple[str, object]]:
    """The named PJRT_Client_Create options for this platform, from the
    environment. Raises ValueError naming the variable for a bad value; the
    caller defers it to the first tpu use, so CPU-only code never sees it.

    CUDA (the XLA GPU plugin). Left alone, the plugin reserves 75% of the
    GPU's memory when the client is created, which a process that also uses
    torch.cuda (or a second process) cannot afford. torch_pjrt instead grows
    its pool on demand, as PyTorch's caching allocator does:
      TORCH_PJRT_GPU_MEMORY_FRACTION  the most of the GPU's memory the pool
                                      may take, 0 < f <= 1 (default 0.9)
      TORCH_PJRT_GPU_PREALLOCATE=1    reserve that fraction at start
      TORCH_PJRT_GPU_ALLOCATOR        bfc (default: XLA's caching pool),
                                      platform (cudaMalloc/cudaFree each
                                      buffer, no caching), cuda_async
    """
    if platform == "cpu":
        return [("cpu_device_count", cpu_device_count())]
    if platform == "cuda":
        fraction = _env_number("TORCH_PJRT_GPU_MEMORY_FRACTION", 0.9, float, 1e-6, 1.0)
        allocator = os.environ.get("TORCH_PJRT_GPU_ALLOCATOR", "bfc").strip().lower() or "bfc"
        if allocator not in GPU_ALLOCATORS:
            raise ValueError(f"TORCH_PJRT_GPU_ALLOCATOR={allocator!r} is not one of "
                             + ", ".join(GPU_ALLOCATORS))
        return [("allocator", allocator),
                ("memory_fraction", float(fraction)),
                ("preallocate", _env_flag("TORCH_PJRT_GPU_PREALLOCATE", False))]
    return []
