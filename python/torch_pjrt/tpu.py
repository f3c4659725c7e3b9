"""torch.tpu: the device module, named after torch.cuda's functions."""
from __future__ import annotations

from typing import Any

import torch

from . import _C

__all__ = [
    "is_available", "is_initialized", "init", "device_count", "current_device",
    "set_device", "device", "synchronize", "get_device_name", "manual_seed",
    "manual_seed_all", "initial_seed", "seed", "seed_all", "get_rng_state", "set_rng_state",
    "get_rng_state_all", "set_rng_state_all",
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


# ---- seeds and generator state ------------------------------------------------
# Each tpu:N has a default generator (seed + offset, csrc/generator.cpp) that
# random ops on tpu draw from; torch.manual_seed() reaches manual_seed_all().
# The C++ side is reached through torch.ops.tpj_rng.
_U64 = 0xFFFF_FFFF_FFFF_FFFF


def _is_in_bad_fork() -> bool:
    return False


def _ops():
    return torch.ops.tpj_rng


def _to_i64(seed: int) -> int:
    seed = int(seed)
    if not -0x8000_0000_0000_0000 <= seed <= _U64:
        raise RuntimeError(f"Overflow when unpacking long long: seed {seed} is outside "
                           "[-0x8000_0000_0000_0000, 0xffff_ffff_ffff_ffff]")
    seed &= _U64  # negative seeds wrap, as torch.Generator.manual_seed does
    return seed - (1 << 64) if seed >= (1 << 63) else seed


def _all_indices() -> range:
    return range(device_count())


def manual_seed(seed: int) -> None:
    """Seeds the current tpu device's generator (its offset restarts at 0)."""
    s = _to_i64(seed)
    if device_count() == 0:
        return
    _ops().manual_seed(_index(None), s)


def manual_seed_all(seed: int) -> None:
    """Seeds the generator of every tpu device (without opening the plugin
    when no device was used yet: the generators start from this seed)."""
    _ops().manual_seed_all(_to_i64(seed))


def seed() -> None:
    """Seeds the current device's generator with a non-deterministic number."""
    if device_count() > 0:
        _ops().seed(_index(None))


def seed_all() -> None:
    """One non-deterministic seed for every tpu device."""
    if device_count() > 0:
        _ops().manual_seed_all(_ops().seed(0))


def initial_seed() -> int:
    """The current device's seed."""
    return _ops().initial_seed(_index(None)) & _U64


def get_rng_state(device: Any = "tpu") -> torch.Tensor:
    """The generator state of a tpu device as a CPU uint8 tensor (seed, offset)."""
    idx = _index(device)
    _C._check_device(idx)
    return _ops().get_state(idx)


def set_rng_state(new_state: torch.Tensor, device: Any = "tpu") -> None:
    """Restores a state from get_rng_state()."""
    idx = _index(device)
    _C._check_device(idx)
    _ops().set_state(idx, new_state.clone(memory_format=torch.contiguous_format))


def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state(i) for i in _all_indices()]


def set_rng_state_all(new_states) -> None:
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


# ---- mixed precision and fork safety (python/torch_pjrt/_amp.py, _fork.py) ----
from ._amp import get_amp_supported_dtype, is_bf16_supported  # noqa: E402
from ._fork import _is_in_bad_fork, _lazy_init  # noqa: E402,F401,F811

__all__ += ["get_amp_supported_dtype", "is_bf16_supported"]
