"""torch.tpu: the device module, named after torch.cuda's functions."""
from __future__ import annotations

from typing import Any

import torch

from . import _C

__all__ = [
    "is_available", "is_initialized", "init", "device_count", "current_device",
    "set_device", "device", "synchronize", "get_device_name", "manual_seed",
    "manual_seed_all", "initial_seed",
]


def _index(device: Any, optional: bool = True) -> int:
    if device is None:
        return _C._current_device()
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "tpu":
            raise ValueError(f"Expected a tpu device, but got: {device}")
        return _C._current_device() if device.index is None else device.index
    raise TypeError(f"Invalid device {device!r}: expected an int, a str or a torch.device")


def is_available() -> bool:
    """True when a PJRT plugin loads and has at least one device."""
    return _C._device_count() > 0


def is_initialized() -> bool:
    return _C._is_initialized()


def init() -> None:
    """Loads the plugin now (it is otherwise loaded on first use)."""
    _C._init()


def device_count() -> int:
    return _C._device_count()


def current_device() -> int:
    return _C._current_device()


def set_device(device: Any) -> None:
    idx = _index(device)
    if idx < 0:
        return
    _C._set_device(idx)


class device:
    """Context manager that changes the current tpu device, like torch.cuda.device."""

    def __init__(self, device: Any):
        self.idx = -1 if device is None else _index(device)
        self.prev = -1

    def __enter__(self):
        self.prev = _C._current_device()
        if self.idx >= 0 and self.idx != self.prev:
            _C._set_device(self.idx)
        return self

    def __exit__(self, *exc):
        if self.idx >= 0 and self.idx != self.prev:
            _C._set_device(self.prev)
        return False


def synchronize(device: Any = None) -> None:
    """Waits for all work launched on the device; raises the first failure of
    an asynchronous execution, naming its op."""
    idx = _index(device)
    _C._check_device(idx)
    _C._synchronize(idx)


def get_device_name(device: Any = None) -> str:
    idx = _index(device)
    _C._check_device(idx)
    return _C._info()["devices"][idx]["kind"]


# ---- seeds -------------------------------------------------------------------
# torch.manual_seed() calls these. The tpu generator that consumes the seed
# arrives with on-device random ops; until then random ops run through the
# CPU fallback on PyTorch's CPU generator, which torch.manual_seed seeds too,
# so results are reproducible either way.
_seed = 0


def _is_in_bad_fork() -> bool:
    return False


def manual_seed(seed: int) -> None:
    global _seed
    _seed = int(seed)


def manual_seed_all(seed: int) -> None:
    manual_seed(seed)


def initial_seed() -> int:
    return _seed
