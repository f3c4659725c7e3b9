"""nn.Module conversion between tpu and other devices keeps parameters shared.

`module.to("cuda")` keeps each Parameter object and swaps its data in place
(`param.data = moved`), so tied weights (a language model's embedding and
output layer) stay one Parameter. That path needs
`torch._has_compatible_shallow_copy_type(cpu, cuda)`, which PyTorch answers
False for PrivateUse1 (torch 2.13 has no hook for it), so `_apply` would make
a new Parameter per module instead: tied weights come apart and training
silently diverges from CPU. Conversions that cross into or out of tpu take
PyTorch's swap-tensors path instead (torch.__future__'s
swap_module_params_on_conversion, for the duration of the call): each
Parameter keeps its identity and stays shared, as on CUDA. Conversions that
do not touch tpu are left exactly as they were.
"""
from __future__ import annotations

import itertools
import threading

import torch
from torch import nn

_lock = threading.RLock()


def _device_types(module: nn.Module) -> set:
    return {t.device.type for t in itertools.chain(module.parameters(), module.buffers())}


def _crosses_tpu(module: nn.Module, target: str | None) -> bool:
    if target is None:
        return False
    types = _device_types(module)
    if target == "tpu":
        return bool(types - {"tpu"})
    return "tpu" in types


def _swapping(method, target_of):
    def wrapper(self, *args, **kwargs):
        if (torch.__future__.get_swap_module_params_on_conversion() or
                not _crosses_tpu(self, target_of(*args, **kwargs))):
            return method(self, *args, **kwargs)
        # The flag is process-wide: hold it for this call only, one
        # conversion at a time.
        with _lock:
            torch.__future__.set_swap_module_params_on_conversion(True)
            try:
                return method(self, *args, **kwargs)
            finally:
                torch.__future__.set_swap_module_params_on_conversion(False)

    wrapper.__name__ = method.__name__
    wrapper.__doc__ = method.__doc__
    wrapper.__wrapped__ = method
    return wrapper


def _target_of_to(*args, **kwargs):
    device = torch._C._nn._parse_to(*args, **kwargs)[0]
    return None if device is None else device.type


def install() -> None:
    """Wraps nn.Module.to, .cpu, .cuda and .tpu (idempotent)."""
    if getattr(nn.Module.to, "_torch_pjrt", False):
        return
    targets = {"to": _target_of_to, "cpu": lambda *a, **k: "cpu",
               "cuda": lambda *a, **k: "cuda", "tpu": lambda *a, **k: "tpu"}
    for name, target_of in targets.items():
        w = _swapping(getattr(nn.Module, name), target_of)
        w._torch_pjrt = True
        setattr(nn.Module, name, w)
