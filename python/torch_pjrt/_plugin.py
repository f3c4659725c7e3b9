"""Finding the PJRT plugin to load.

Order: TORCH_PJRT_PLUGIN (a path) if set; else TORCH_PJRT_PLATFORM
(cpu|cuda|tpu); else auto: libtpu where a TPU is present, the XLA CUDA plugin
where an NVIDIA GPU is present, otherwise the xla-cpu-pjrt wheel.
"""
from __future__ import annotations

import glob
import importlib
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
    try:
        mod = importlib.import_module(modname)
    except Exception:
        return None
    f = getattr(mod, "__file__", None)
    if f:
        return os.path.dirname(f)
    paths = list(getattr(mod, "__path__", []))
    return paths[0] if paths else None


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


def cpu_device_count() -> int:
    raw = os.environ.get("TORCH_PJRT_CPU_DEVICES", "1")
    try:
        n = int(raw)
    except ValueError:
        raise RuntimeError(f"TORCH_PJRT_CPU_DEVICES={raw!r} is not an integer") from None
    if n < 1:
        raise RuntimeError(f"TORCH_PJRT_CPU_DEVICES={n} must be at least 1")
    return n
