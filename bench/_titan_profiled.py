"""`python bench/_titan_profiled.py <torchtitan.train's arguments>`: runs
TorchTitan's trainer unchanged (torchrun starts this file on every rank) with
torch.profiler (CPU and tpu activities) over the steps after the first
TPJ_PROFILE_WARMUP, and writes each rank's summary of where those steps'
time went to TPJ_PROFILE_OUT/rank<N>.json. bench/titan.py --profile reads
rank 0's. TorchTitan's own --profiling flags record the CPU only, so the
device rows would be missing; this wraps Trainer.train_step from outside
instead (no TorchTitan file is changed).

Categories, each the union of its intervals within the profiled steps (so
nested or overlapping events count once):
- device: tpu executions (the profiler's tpu kernel rows: every launch,
  from start to completion). On the CPU plugin they run on the host's cores
  too, overlapping the host's work.
- collectives: the host inside a c10d or functional-collective call, or
  inside FSDP's all-gather / reduce-scatter spans (their copy-in and
  copy-out, issuing the collective, waiting for it in wait_tensor /
  Work.wait); c10d_ms: the c10d and functional-collective calls alone.
- device waits: the host blocked on results (item, synchronize).
- host: the rest of the step (Python, dispatch, autograd, optimizer).
"""
import json
import os
import runpy
import sys

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile, record_function

_COLLECTIVE = ("c10d::", "_c10d_functional::", "c10d_functional::", "record_param_comms",
               "FSDP::all_gather", "FSDP::post_backward_reduce", "FSDP::all_reduce")
_WAIT = ("aten::_local_scalar_dense", "aten::item", "torch.tpu.synchronize",
         "cudaDeviceSynchronize")
_STEP = "tpj_train_step"


def _union(intervals):
    total, end = 0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def _clip(iv, steps):
    out = []
    for s, e in iv:
        for a, b in steps:
            lo, hi = max(s, a), min(e, b)
            if hi > lo:
                out.append((lo, hi))
    return out


def summarize(events, nsteps):
    steps = [(e.time_range.start, e.time_range.end) for e in events if e.name == _STEP]
    dev, coll, c10d, wait, kernels = [], [], [], [], {}
    for e in events:
        iv = (e.time_range.start, e.time_range.end)
        if e.device_type != DeviceType.CPU:
            dev.append(iv)
            kernels[e.name] = kernels.get(e.name, 0) + iv[1] - iv[0]
        elif e.name.startswith(_COLLECTIVE):
            coll.append(iv)
            if not e.name.startswith("FSDP::"):
                c10d.append(iv)
        elif e.name.startswith(_WAIT):
            wait.append(iv)
    wall = sum(b - a for a, b in steps)
    coll_t = _union(_clip(coll, steps))
    # the host's waits inside a collective count as collective time
    wait_only = max(0, _union(_clip(coll + wait, steps)) - coll_t)
    n = max(1, len(steps))
    top = sorted(kernels.items(), key=lambda kv: -kv[1])[:8]
    return {
        "steps": len(steps), "step_ms": wall / n / 1e3,
        "device_ms": _union(_clip(dev, steps)) / n / 1e3,
        "device_sum_ms": sum(kernels.values()) / n / 1e3,
        "collective_ms": coll_t / n / 1e3,
        "c10d_ms": _union(_clip(c10d, steps)) / n / 1e3,
        "device_wait_ms": wait_only / n / 1e3,
        "host_ms": max(0, wall - _union(_clip(coll + wait, steps))) / n / 1e3,
        "launches": sum(1 for e in events if e.device_type != DeviceType.CPU) / n,
        "top_kernels_ms": [[k, v / n / 1e3] for k, v in top],
    }


def main():
    warmup = int(os.environ.get("TPJ_PROFILE_WARMUP", "2"))
    out_dir = os.environ["TPJ_PROFILE_OUT"]
    import torchtitan.trainer as trainer_mod

    state = {"n": 0, "prof": None}
    original = trainer_mod.Trainer.train_step

    def train_step(self, *args, **kwargs):
        state["n"] += 1
        if state["n"] == warmup + 1:
            state["prof"] = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1])
            state["prof"].__enter__()
        if state["prof"] is None:
            return original(self, *args, **kwargs)
        with record_function(_STEP):
            r = original(self, *args, **kwargs)
            with record_function("torch.tpu.synchronize"):
                torch.tpu.synchronize()  # the step's device work ends inside its range
        return r

    trainer_mod.Trainer.train_step = train_step
    sys.argv = ["torchtitan.train"] + sys.argv[1:]
    try:
        runpy.run_module("torchtitan.train", run_name="__main__")
    finally:
        prof = state["prof"]
        if prof is not None:
            prof.__exit__(None, None, None)
            rank = int(os.environ.get("RANK", "0"))
            summary = summarize(prof.events(), state["n"] - warmup)
            os.makedirs(out_dir, exist_ok=True)
            with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
                json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
