"""Faults: what a rank sees when another passes a tensor of another shape,
stays away past the group's timeout, or dies."""
import datetime
import os
import time

import torch
import torch.distributed as dist

from _launch import init

TIMEOUT_S = 3


def _attempt(fn):
    t0 = time.monotonic()
    try:
        fn()
    except Exception as e:  # the error the user would see
        return {"error": f"{type(e).__name__}: {e}", "seconds": time.monotonic() - t0}
    return {"error": None, "seconds": time.monotonic() - t0}


def wrong_shape():
    rank, _ = init("pjrt", timeout_s=30)
    t = torch.ones(4 if rank == 0 else 8, device="tpu")
    return _attempt(lambda: dist.all_reduce(t))


def late_rank():
    # The short timeout on a group of its own: connecting the world group
    # under a loaded CI machine may itself take seconds.
    rank, _ = init("pjrt", timeout_s=30)
    g = dist.new_group([0, 1], timeout=datetime.timedelta(seconds=TIMEOUT_S))
    if rank == 1:
        time.sleep(3 * TIMEOUT_S)
        return {"error": None}
    return _attempt(lambda: dist.all_reduce(torch.ones(4, device="tpu"), group=g))


def dead_rank():
    rank, _ = init("pjrt", timeout_s=30)
    dist.all_reduce(torch.ones(2, device="tpu"))  # everyone connected
    if rank == 1:
        os._exit(3)
    return _attempt(lambda: dist.all_reduce(torch.ones(4, device="tpu")))


def mismatches():
    """Other disagreements the agreement exchange names: uneven all_to_all
    splits that do not pair up, and different collectives on each rank."""
    rank, _ = init("pjrt", timeout_s=30)
    out = {}
    splits = [1, 1] if rank == 0 else [2, 0]
    out["a2a"] = _attempt(lambda: dist.all_to_all_single(
        torch.empty(2, device="tpu"), torch.ones(2, device="tpu"), [1, 1], splits))
    t = torch.ones(3, device="tpu")
    out["ops"] = _attempt(lambda: dist.all_reduce(t) if rank == 0 else dist.broadcast(t, 0))
    # The group still works afterwards.
    dist.all_reduce(t)
    out["after"] = t.cpu().tolist()
    return out
