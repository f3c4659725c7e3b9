"""torch_pjrt: a native PyTorch `tpu` device on the PJRT C API.

Importing this module (which `import torch` does through the `torch.backends`
entry point) registers the device; the PJRT plugin is opened on first use.
"""
from __future__ import annotations

import torch

from . import _plugin

torch.utils.rename_privateuse1_backend("tpu")

from . import _C  # noqa: E402  (the extension registers kernels at load)
from . import tpu as _tpu_module  # noqa: E402

_PLUGIN = _plugin.find_plugin()
_C._configure(
    _PLUGIN.path,
    _plugin.cpu_device_count() if _PLUGIN.platform == "cpu" else 0,
    _PLUGIN.error,
)

torch._register_device_module("tpu", _tpu_module)
torch.utils.generate_methods_for_privateuse1_backend(
    for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True)

__version__ = "0.1.0"


def plugin() -> dict:
    """Which plugin was chosen, and why not, if none."""
    return {"path": _PLUGIN.path, "platform": _PLUGIN.platform, "error": _PLUGIN.error}


def fallbacks() -> dict[str, int]:
    """aten ops that ran on the CPU because no tpu lowering exists, with counts."""
    return dict(_C._fallbacks())


def reset_fallbacks() -> None:
    _C._reset_fallbacks()


def metrics() -> dict:
    """Compiles, cache hits and misses, executions, compile seconds."""
    return dict(_C._metrics())


def lowered_ops() -> list[str]:
    """The overloads the C lowering table covers."""
    return list(_C._lowered_ops())


def info() -> dict:
    """Plugin, versions and devices (opens the plugin)."""
    d = dict(_C._info())
    d["torch_version"] = torch.__version__
    d["torch_pjrt_version"] = __version__
    return d
