"""torch.distributed on tpu: the c10d backend "pjrt".

Registered at import for device "tpu", so `init_process_group()`,
`init_process_group("pjrt")`, `init_process_group("cpu:gloo,tpu:pjrt")` and
`init_device_mesh("tpu", ...)` send tpu tensors to it. The backend itself is
C++ (csrc/distributed/); this module builds what it stands on: the transport.

Transports (src/dist/transport.h):
- "gloo (host staging)": every collective downloads its operands into one host
  block, runs PyTorch's gloo on it, and uploads the results. It serves any
  plugin, and it is the only way across processes for the CPU plugin, whose
  client in each process believes it owns device 0.
- "xla": XLA's own collectives (stablehlo.all_reduce and its siblings),
  compiled once per (op, dtype, shape, devices) through the executable cache
  and launched on every rank's device at once. Its ranks are devices of this
  process's one client, each driven by its own thread: `local_groups()`.
"""
from __future__ import annotations

import datetime
import functools
import os

import torch
import torch.distributed as dist

from . import _C

BACKEND = "pjrt"
HOST_STAGING = "gloo (host staging)"


XLA = "xla"


def transport_for(platform: str | None = None, local: bool = False) -> str:
    """The transport a "pjrt" process group uses on this plugin: a group
    across processes stages through gloo (no plugin's client here is created
    with node_id/num_nodes yet, so none reaches another process); a group of
    this process's devices (`local_groups()`) runs XLA's collectives."""
    return XLA if local else HOST_STAGING


def local_groups(devices=None, timeout: datetime.timedelta = datetime.timedelta(minutes=30)):
    """One process group per rank over devices of this process (default:
    every tpu device), rank r driving tpu:devices[r], through XLA's
    collectives. Drive each rank from its own thread, as each process drives
    its rank under torchrun:

        groups = torch_pjrt.distributed.local_groups()
        def rank(r):
            t = torch.ones(4, device=f"tpu:{r}")
            dist.all_reduce(t, group=groups[r])
        threads = [threading.Thread(target=rank, args=(r,)) for r in range(len(groups))]

    A collective returns once every rank has called it. The groups are not
    registered with torch.distributed's world: pass them as `group=`."""
    if devices is None:
        devices = list(range(_C._device_count()))
    devices = [int(d.index if isinstance(d, torch.device) else d) for d in devices]
    backends = _C._dist_make_xla_backends(devices, timeout.total_seconds())
    store = dist.HashStore()
    groups = []
    for rank, backend in enumerate(backends):
        pg = dist.ProcessGroup(store, rank, len(backends))
        pg._register_backend(torch.device("tpu"), dist.ProcessGroup.BackendType.CUSTOM, backend)
        pg._set_default_backend(dist.ProcessGroup.BackendType.CUSTOM)
        pg.bound_device_id = torch.device("tpu", devices[rank])  # barrier's device
        groups.append(pg)
    # Rank lookups (get_rank(group), broadcast's src) read this table.
    c10d = dist.distributed_c10d
    for pg in groups:
        c10d._world.pg_group_ranks[pg] = {r: r for r in range(len(groups))}
        c10d._world.pg_map[pg] = (BACKEND, store)
    return groups


def transport(group=None) -> str:
    """The transport behind `group`'s tpu backend (default: the world group)."""
    pg = group or dist.distributed_c10d._get_default_group()
    return _C._dist_transport_name(pg._get_backend(torch.device("tpu")))


def _bind_device() -> None:
    # Under torchrun every process drives its own chip, as with CUDA; a user
    # who already chose one (set_device) keeps it.
    local = os.environ.get("LOCAL_RANK")
    if local is None or _state["bound"]:
        return
    _state["bound"] = True
    n = _C._device_count()
    if n > 0 and torch.tpu.current_device() == 0:
        torch.tpu.set_device(int(local) % n)


_state = {"bound": False}


def _create_backend(opts, backend_options=None):
    """Backend.register_backend's creator (extended API): a gloo Backend over
    its own key prefix (a "cpu:gloo" backend of the same group shares the
    store), wrapped by the C++ "pjrt" backend."""
    _bind_device()
    timeout = opts.timeout
    if not isinstance(timeout, datetime.timedelta):
        timeout = datetime.timedelta(seconds=float(timeout))
    store = dist.PrefixStore("pjrt/", opts.store)
    host = dist.ProcessGroupGloo(store, opts.group_rank, opts.group_size, timeout)
    return _C._dist_make_gloo_backend(host, timeout.total_seconds())


def _set_default_backend(pg, backend) -> None:
    """Works around pytorch#179901: for a backend string naming a registered
    custom backend (and no NCCL), torch 2.13 leaves the group's default
    backend undefined ("cpu:gloo,tpu:pjrt": it compares "PJRT" with "pjrt"),
    or names gloo it never created (`init_process_group()` on a tpu machine).
    The default backend is what the group reports and what DDP and barrier
    fall back on; ours is the accelerator's, as NCCL is on CUDA."""
    c10d = dist.distributed_c10d
    if pg is None or pg is c10d.GroupMember.NON_GROUP_MEMBER:
        return
    try:
        values = set(c10d.BackendConfig(backend).get_device_backend_map().values())
    except Exception:  # a string torch itself refused
        return
    if BACKEND in values and c10d.Backend.NCCL not in values:
        pg._set_default_backend(dist.ProcessGroup.BackendType.CUSTOM)


def _patch_group_helper() -> None:
    c10d = dist.distributed_c10d
    orig = c10d._new_process_group_helper
    if getattr(orig, "_torch_pjrt", False):
        return

    @functools.wraps(orig)
    def helper(group_size, group_rank, global_ranks_in_group, backend, *args, **kwargs):
        out = orig(group_size, group_rank, global_ranks_in_group, backend, *args, **kwargs)
        _set_default_backend(out[0] if isinstance(out, tuple) else out, backend)
        return out

    helper._torch_pjrt = True
    c10d._new_process_group_helper = helper


def _allow_bf16_hook() -> None:
    """DDP accepts its bf16 compression hook only on CUDA with NCCL or XPU
    with XCCL (a check by the hook's name); "pjrt" reduces bf16 on every
    plugin, so tpu models may use it too."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    orig = DDP._check_comm_hook
    if getattr(orig, "_torch_pjrt", False):
        return

    @functools.wraps(orig)
    def check(self, hook):
        name = getattr(hook, "__name__", "")
        if self.device_type == "tpu" and name in ("bf16_compress_hook", "bf16_compress_wrapper_hook"):
            return None
        return orig(self, hook)

    check._torch_pjrt = True
    DDP._check_comm_hook = check


def _add_set_timeout() -> None:
    """torch.distributed.set_timeout(timeout, group=None), PyTorch's newer
    public name for _set_pg_timeout, which TorchTitan 0.3.0 calls after its
    first step; torch 2.13 lacks it. Added only where missing. A gloo backend
    of the group gets the new default timeout; a "pjrt" backend keeps the one
    it was created with (init_process_group's timeout), which bounds its
    collectives as before."""
    if hasattr(dist, "set_timeout"):
        return
    c10d = dist.distributed_c10d

    def set_timeout(timeout: datetime.timedelta, group=None) -> None:
        if group is None:
            group = c10d._get_default_group()
        if c10d._rank_not_in_group(group):
            raise ValueError("Invalid process group specified")
        for device in group._device_types:
            backend = group._get_backend(device)
            if isinstance(backend, dist.ProcessGroupGloo):
                backend._set_default_timeout(timeout)

    dist.set_timeout = set_timeout


def _register() -> None:
    if not dist.is_available():
        return
    dist.Backend.register_backend(BACKEND, _create_backend, extended_api=True, devices=["tpu"])
    _patch_group_helper()
    _allow_bf16_hook()
    _add_set_timeout()


_register()
