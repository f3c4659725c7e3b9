"""torch.tpu: the device module, named after torch.cuda's functions."""
from __future__ import annotations

import collections
import re
from typing import Any

import torch

from . import _C

__all__ = [
    "is_available", "is_initialized", "init", "device_count", "current_device",
    "set_device", "device", "synchronize", "get_device_name", "manual_seed",
    "manual_seed_all", "initial_seed", "seed", "seed_all", "get_rng_state", "set_rng_state",
    "get_rng_state_all", "set_rng_state_all",
    # memory, properties, streams and events (below)
    "memory_stats", "memory_stats_as_nested_dict", "memory_allocated", "max_memory_allocated",
    "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats",
    "reset_accumulated_memory_stats", "reset_max_memory_allocated", "mem_get_info",
    "empty_cache", "get_device_properties", "get_device_capability", "device_of", "Stream",
    "Event", "StreamContext", "stream", "current_stream", "default_stream", "set_stream",
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
# Each tpu:N has a default generator (seed + offset, csrc/device/generator.cpp) that
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
    """Restores a state from get_rng_state(). The state may live on tpu
    (DTensor's RNG tracker keeps its copy on the mesh's device)."""
    idx = _index(device)
    _C._check_device(idx)
    _ops().set_state(idx, new_state.detach().to("cpu").clone(memory_format=torch.contiguous_format))


def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state(i) for i in _all_indices()]


def set_rng_state_all(new_states) -> None:
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


# ---- memory -------------------------------------------------------------------
# The numbers come from the tpu allocator (csrc/device/allocator.cpp) through the
# same c10 DeviceAllocator calls torch.accelerator uses: allocated/active
# bytes are the bytes of live tpu storages; reserved bytes are what the device
# holds (PJRT_Device_MemoryStats where the plugin has it, else the bytes of
# live device buffers). There is no cache to empty: a buffer is freed when its
# last storage goes.


def _checked_index(device: Any) -> int:
    idx = _index(device)
    _C._check_device(idx)
    return idx


def memory_stats_as_nested_dict(device: Any = None) -> dict[str, Any]:
    if not is_initialized():
        return {}
    idx = _checked_index(device)
    return torch._C._accelerator_getDeviceStats(idx)


def memory_stats(device: Any = None) -> dict[str, Any]:
    """torch.cuda.memory_stats's flat dictionary ("allocated_bytes.all.current",
    "reserved_bytes.all.peak", "num_ooms", ...), sorted by key; empty before the
    plugin is opened."""
    result = []

    def add(prefix: str, obj: Any) -> None:
        if isinstance(obj, dict):
            for k, v in obj.items():
                add(f"{prefix}.{k}" if prefix else str(k), v)
        else:
            result.append((prefix, obj))

    add("", memory_stats_as_nested_dict(device))
    result.sort()
    return collections.OrderedDict(result)


def memory_allocated(device: Any = None) -> int:
    """Bytes of the live tpu storages on the device."""
    return memory_stats(device).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device: Any = None) -> int:
    return memory_stats(device).get("allocated_bytes.all.peak", 0)


def memory_reserved(device: Any = None) -> int:
    """Bytes the device holds (at least memory_allocated())."""
    return memory_stats(device).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device: Any = None) -> int:
    return memory_stats(device).get("reserved_bytes.all.peak", 0)


def reset_peak_memory_stats(device: Any = None) -> None:
    """Peaks restart from the current values."""
    if not is_initialized():
        return
    idx = _checked_index(device)
    torch._C._accelerator_resetPeakStats(idx)


def reset_accumulated_memory_stats(device: Any = None) -> None:
    if not is_initialized():
        return
    idx = _checked_index(device)
    torch._C._accelerator_resetAccumulatedStats(idx)


def reset_max_memory_allocated(device: Any = None) -> None:
    reset_peak_memory_stats(device)


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes of device memory; for the CPU plugin, of host memory."""
    idx = _checked_index(device)
    return tuple(torch._C._accelerator_getMemoryInfo(idx))


def empty_cache() -> None:
    """Nothing to release: device buffers are freed with their last storage."""


# ---- device properties ----------------------------------------------------------


class _TpuDeviceProperties:
    """What torch.cuda.get_device_properties() gives, where PJRT says it."""

    def __init__(self, index: int):
        info = _C._info()
        dev = info["devices"][index]
        self.name: str = dev["kind"]
        self.type: str = "tpu"
        self.platform: str = info["platform"]
        self.index: int = index
        self.description: str = dev["description"]
        self.total_memory: int = mem_get_info(index)[1]
        self.major, self.minor = get_device_capability(index)

    def __repr__(self) -> str:
        return (f"_TpuDeviceProperties(name='{self.name}', platform='{self.platform}', "
                f"total_memory={self.total_memory // (1024 * 1024)}MB)")


def get_device_properties(device: Any = None) -> _TpuDeviceProperties:
    idx = _checked_index(device)
    return _TpuDeviceProperties(idx)


def get_device_capability(device: Any = None) -> tuple[int, int]:
    """(major, minor): the plugin's "compute_capability" device attribute where
    it has one (GPUs), else (0, 0). The dtypes the device takes are in
    torch.accelerator.get_device_capability()."""
    idx = _checked_index(device)
    m = re.search(r"compute_capability\D*(\d+)\.(\d+)", _C._info()["devices"][idx]["description"])
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def device_of(obj: Any) -> device:
    """Context manager that makes obj's device current when obj is a tpu tensor
    (a no-op otherwise), like torch.cuda.device_of."""
    if isinstance(obj, torch.Tensor) and obj.device.type == "tpu":
        return device(obj.device.index)
    return device(None)


# ---- streams and events -----------------------------------------------------------
# A stream tags the work launched while it is current; PJRT orders a device's
# work by data dependency, so results never depend on streams: synchronize()
# and query() wait for / poll the work of one stream, and an Event marks the
# work of its stream up to record() (csrc/device/stream.cpp).


class Stream(torch.Stream):
    """A tpu stream (torch.Stream subclass), like torch.cuda.Stream."""

    def __new__(cls, device: Any = None, priority: int = 0, **kwargs):
        if kwargs:  # stream_id / device_index / device_type: wraps an existing stream
            return super().__new__(cls, **kwargs)
        idx = _index(device)
        _C._check_device(idx)
        return super().__new__(cls, device=torch.device("tpu", idx), priority=priority)

    def wait_event(self, event) -> None:
        event.wait(self)

    def wait_stream(self, stream) -> None:
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        if event is None:
            event = Event()
        event.record(self)
        return event

    def __repr__(self) -> str:
        return f"<torch.tpu.Stream device=tpu:{self.device_index} stream_id={self.stream_id}>"


class _EventMeta(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, torch.Event) and obj.device.type == "tpu"


class Event(metaclass=_EventMeta):
    """A tpu event, like torch.cuda.Event: Event(enable_timing=True) is a
    torch.Event on the current tpu device. (Not a subclass instance:
    torch.Event.elapsed_time only accepts torch.Event itself.)"""

    def __new__(cls, enable_timing: bool = False, blocking: bool = False,
                interprocess: bool = False):
        return torch.Event(device=torch.device("tpu", _index(None)), enable_timing=enable_timing,
                           blocking=blocking, interprocess=interprocess)


def _wrap(s: torch.Stream) -> Stream:
    return Stream(stream_id=s.stream_id, device_index=s.device_index, device_type=s.device_type)


def current_stream(device: Any = None) -> Stream:
    idx = _checked_index(device)
    return _wrap(torch._C._accelerator_getStream(idx))


def default_stream(device: Any = None) -> Stream:
    idx = _checked_index(device)
    cur = torch._C._accelerator_getStream(idx)
    return Stream(stream_id=0, device_index=idx, device_type=cur.device_type)


def set_stream(stream: torch.Stream) -> None:
    """Makes stream current on its device (for this thread)."""
    if stream is None:
        return
    torch._C._accelerator_setStream(stream)


class StreamContext:
    """Selects a stream (and its device) for the body, like torch.cuda.StreamContext."""

    def __init__(self, stream: torch.Stream | None):
        self.stream = stream
        self.prev_device = -1
        self.prev_stream: Stream | None = None
        self.prev_on_stream_device: Stream | None = None

    def __enter__(self):
        if self.stream is None:
            return self.stream
        self.prev_device = current_device()
        self.prev_stream = current_stream(self.prev_device)
        if self.stream.device_index != self.prev_device:
            self.prev_on_stream_device = current_stream(self.stream.device_index)
        set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc):
        if self.stream is None:
            return False
        if self.prev_on_stream_device is not None:
            set_stream(self.prev_on_stream_device)
        set_stream(self.prev_stream)
        _C._set_device(self.prev_device)
        return False


def stream(stream: torch.Stream | None) -> StreamContext:
    return StreamContext(stream)


# ---- mixed precision and fork safety (python/torch_pjrt/_amp.py, _fork.py) ----
from ._amp import get_amp_supported_dtype, is_bf16_supported  # noqa: E402
from ._fork import _is_in_bad_fork, _lazy_init  # noqa: E402,F401,F811

__all__ += ["get_amp_supported_dtype", "is_bf16_supported"]
