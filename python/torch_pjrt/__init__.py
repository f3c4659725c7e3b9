"""torch_pjrt: a native PyTorch `tpu` device on the PJRT C API.

Importing this module (which `import torch` does through the `torch.backends`
entry point) registers the device; the PJRT plugin is opened on first use.
"""
from __future__ import annotations

import contextlib as _contextlib
import os
import sys

import torch

from . import _plugin

torch.utils.rename_privateuse1_backend("tpu")

from . import _C  # noqa: E402  (the extension registers kernels at load)
from . import tpu as _tpu_module  # noqa: E402

_PLUGIN = _plugin.find_plugin()
try:
    _C._set_create_options(_plugin.create_options(_PLUGIN.platform))
    _plugin.cache_size()
    _visible = _plugin.visible_devices()
    _setting = f"{_plugin.VISIBLE_DEVICES}={os.environ.get(_plugin.VISIBLE_DEVICES)}"
    if "ray" in sys.modules:  # a Ray worker given devices: those only (torch_pjrt.ray)
        from . import ray as _ray

        _visible, _setting = _ray._assigned(_visible, _setting)
    if _visible is not None:
        _C._set_visible_devices(_visible, _setting)
except ValueError as _e:
    # A bad setting fails the first tpu use, not `import torch`.
    if not _PLUGIN.error:
        _PLUGIN.error = str(_e)
_C._configure(_PLUGIN.path, 0, _PLUGIN.error)


def cache_dir() -> str:
    """Where compiled executables are kept across processes: TORCH_PJRT_CACHE_DIR
    (empty turns the disk cache off), else $XDG_CACHE_HOME or ~/.cache, /torch_pjrt."""
    if "TORCH_PJRT_CACHE_DIR" in os.environ:
        return os.environ["TORCH_PJRT_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "torch_pjrt")


_C._set_cache_dir(cache_dir())


class _DropProfilerNotice:
    """Dynamo warns once per process, from inside a compile, that it ignores
    torch.autograd.profiler.record_function (every torch.optim step enters
    one): a line in the user's terminal they did not ask for and cannot act
    on. Only that notice is dropped; the logger's other records pass."""

    def filter(self, record) -> bool:
        msg = str(record.msg)
        return not (msg.startswith("Profiler record function") or
                    msg.startswith("Profiler function") and msg.endswith("will be ignored"))


# By name, so torch._dynamo is not imported here: the module's logger is
# this same object when it loads.
import logging as _logging  # noqa: E402

_logging.getLogger("torch._dynamo.variables.ctx_manager").addFilter(_DropProfilerNotice())
_logging.getLogger("torch._dynamo.variables.torch").addFilter(_DropProfilerNotice())

torch._register_device_module("tpu", _tpu_module)
torch.utils.generate_methods_for_privateuse1_backend(
    for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True)

from . import _module  # noqa: E402

_module.install()  # tied parameters stay tied across tpu conversions

# Printing a tensor formats it element by element with slices and .item():
# on tpu every slice is a program of its own (printing a 300-element tensor
# compiled 316 executables and took 13 s). PyTorch copies xla, lazy, ipu and
# mtia tensors to the CPU first for this reason (torch/_tensor_str.py); tpu
# tensors are copied the same way, in one transfer.
import torch._tensor_str as _tensor_str_mod  # noqa: E402

_format_values = _tensor_str_mod._tensor_str


def _tensor_str_on_cpu(self, indent):
    if self.device.type == "tpu":
        self = self.to("cpu")
    return _format_values(self, indent)


_tensor_str_mod._tensor_str = _tensor_str_on_cpu

from .bucketing import bucket_size, pad_to_bucket  # noqa: E402,F401
from . import _exit  # noqa: E402,F401  (drains autograd workers at exit)
from . import _foreach  # noqa: E402,F401  (eager foreach ops, one launch each)
from . import distributed  # noqa: E402,F401  (registers the c10d backend "pjrt")

__version__ = "0.1.0"


def plugin() -> dict:
    """Which plugin was chosen, and why not, if none."""
    return {"path": _PLUGIN.path, "platform": _PLUGIN.platform, "error": _PLUGIN.error}


def fallbacks() -> dict[str, int]:
    """aten ops that ran on the CPU because no tpu lowering exists, with counts."""
    return dict(_C._fallbacks())


def reset_fallbacks() -> None:
    _C._reset_fallbacks()


_METRICS_BASE: dict = {}


def metrics() -> dict:
    """Counters since the process began (or the last reset_metrics()):
    compiles, compile_seconds, cache_hits_memory, cache_hits_disk,
    cache_misses, executions, evictions, h2d_bytes, d2h_bytes,
    fallback_calls; for torch.compile graph_compiles (graphs compiled),
    graph_runs, graph_traces (signatures captured), graph_splits (nodes
    left to eager), graph_collectives (functional collectives run from
    compiled graphs, through the process group) and donated_buffers
    (inputs a graph overwrote in place); and the gauges cache_size, live_buffers, live_bytes."""
    from . import _compile

    m = dict(_C._metrics())
    m.update(_compile.stats())
    m["cache_hits_memory"] = m["cache_hits"]
    m["fallback_calls"] = sum(_C._fallbacks().values())
    for k, v in _METRICS_BASE.items():
        m[k] = m[k] - v
    return m


def reset_metrics() -> None:
    """Zeroes the counters of metrics() and the fallback counts."""
    _METRICS_BASE.clear()
    _C._reset_fallbacks()
    m = metrics()
    for k in ("compiles", "compile_seconds", "cache_hits", "cache_hits_memory", "cache_misses",
              "executions", "evictions", "h2d_bytes", "d2h_bytes", "graph_compiles", "cache_hits_disk",
              "disk_writes", "disk_errors", "graph_runs", "donated_buffers",
              "graph_traces", "graph_splits", "graph_eager", "graph_collectives"):
        _METRICS_BASE[k] = m[k]


@_contextlib.contextmanager
def deferred_index_checks():
    """Within it, this thread's eager ops check index tensors that are on
    tpu on the device, as a compiled graph does, instead of waiting for
    their values on the host: the op returns at once, and an index out of
    range fails the next wait on the device (a .cpu(), .item() or
    synchronize) with a RuntimeError naming the op's check. Index tensors
    on the host are still checked at the call. Nests; restores the previous
    setting on exit."""
    prev = _C._set_deferred_index_checks(True)
    try:
        yield
    finally:
        _C._set_deferred_index_checks(prev)


def lowered_ops() -> list[str]:
    """The overloads the C lowering table covers."""
    return list(_C._lowered_ops())


def info() -> dict:
    """Plugin, versions and devices (opens the plugin)."""
    d = dict(_C._info())
    d["torch_version"] = torch.__version__
    d["torch_pjrt_version"] = __version__
    return d
