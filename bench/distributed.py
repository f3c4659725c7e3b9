"""Bus bandwidth of the "pjrt" backend's collectives on tpu tensors against
gloo on CPU tensors, in the same process group ("cpu:gloo,tpu:pjrt") and the
same run: all_reduce, all_gather_into_tensor and reduce_scatter_tensor from
4 KiB to 64 MiB, at 2 and 4 ranks. The ratio (tpu time / gloo time) is what
host staging costs. Then the step time of DDP and FSDP2 (fully_shard per
block) training the test LM (tests/python/models.py, d=128, 2 layers, seq 64,
global batch 8) at 1, 2 and 4 processes. Not a test.

    .venv/bin/python bench/distributed.py [--worlds 2 4] [--max-mib 64] [--train-worlds 1 2 4]
        [--xla-worlds 2 4]

--xla-worlds adds the XLA transport (torch_pjrt.distributed.local_groups: one
process, a rank per thread and CPU-plugin device) against gloo with a rank
per thread in one process.

Bus bandwidth as nccl-tests defines it: all_reduce moves 2(n-1)/n of the
buffer per rank, the other two (n-1)/n of the larger buffer."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

OPS = ["all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor"]


def _operands(op, numel, n, device):
    """(input, output) of op at numel elements; all_reduce works in place
    (output None); all_gather's output and reduce_scatter's input are numel."""
    import torch

    if op == "all_reduce":
        return torch.ones(numel, device=device), None
    if op == "all_gather_into_tensor":
        return torch.ones(numel // n, device=device), torch.empty(numel // n * n, device=device)
    return torch.ones(numel // n * n, device=device), torch.empty(numel // n, device=device)


def _row(op, nbytes, n, times):
    factor = 2 * (n - 1) / n if op == "all_reduce" else (n - 1) / n
    return {"op": op, "bytes": nbytes, "world": n,
            "gloo_ms": times["cpu"] * 1e3, "tpu_ms": times["tpu"] * 1e3,
            "gloo_busbw": nbytes * factor / times["cpu"] / 1e9,
            "tpu_busbw": nbytes * factor / times["tpu"] / 1e9,
            "ratio": times["tpu"] / times["cpu"]}


def _worker(sizes, out_path):
    import warnings

    # torch 2.13 renames all_gather_into_tensor and reduce_scatter_tensor;
    # the benchmark keeps the names users call.
    warnings.filterwarnings("ignore", category=FutureWarning, module="torch.distributed")
    import torch
    import torch.distributed as dist

    dist.init_process_group("cpu:gloo,tpu:pjrt", init_method="file://" + os.environ["BENCH_STORE"],
                            rank=int(os.environ["RANK"]), world_size=int(os.environ["WORLD_SIZE"]))
    n = dist.get_world_size()
    rows = []
    for nbytes in sizes:
        numel = nbytes // 4
        iters = max(3, min(50, (64 << 20) // (nbytes * 4)))
        for op in OPS:
            times = {}
            for dev in ("cpu", "tpu"):
                a, o = _operands(op, numel, n, dev)
                fn = {"all_reduce": lambda: dist.all_reduce(a),
                      "all_gather_into_tensor": lambda: dist.all_gather_into_tensor(o, a),
                      "reduce_scatter_tensor": lambda: dist.reduce_scatter_tensor(o, a)}[op]
                fn()  # warm-up: connections, compiles
                samples = []
                for _ in range(iters):
                    dist.barrier()
                    t0 = time.perf_counter()
                    fn()
                    if dev == "tpu":
                        torch.tpu.synchronize()
                    samples.append(time.perf_counter() - t0)
                # Every rank's median; the slowest rank's is the collective's.
                t = torch.tensor([statistics.median(samples)])
                dist.all_reduce(t, op=dist.ReduceOp.MAX)
                times[dev] = t.item()
            rows.append(_row(op, nbytes, n, times))
    if dist.get_rank() == 0:
        with open(out_path, "w") as f:
            json.dump(rows, f)
    dist.barrier()
    dist.destroy_process_group()


def _xla_worker(sizes, out_path):
    """The XLA transport: this process drives `world` devices of the CPU
    plugin, a rank per thread (local_groups), against gloo with a rank per
    thread on CPU tensors in the same process."""
    import datetime
    import threading

    import torch
    import torch.distributed as dist

    import torch_pjrt.distributed as tpd

    n = torch.tpu.device_count()
    xla = tpd.local_groups()
    store = dist.HashStore()
    gloo = [None] * n

    def make(r):
        gloo[r] = dist.ProcessGroupGloo(store, r, n, datetime.timedelta(seconds=300))
    ts = [threading.Thread(target=make, args=(r,)) for r in range(n)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    rows = []
    for nbytes in sizes:
        numel = nbytes // 4
        iters = max(3, min(50, (64 << 20) // (nbytes * 4)))
        for op in OPS:
            times = {}
            for dev in ("cpu", "tpu"):
                per_rank = [0.0] * n
                gate = threading.Barrier(n)

                def body(r):
                    d = torch.device("tpu", r) if dev == "tpu" else torch.device("cpu")
                    g = xla[r] if dev == "tpu" else gloo[r]
                    a, o = _operands(op, numel, n, d)
                    fn = {"all_reduce": lambda: g.allreduce([a]).wait(),
                          "all_gather_into_tensor": lambda: g._allgather_base(o, a).wait(),
                          "reduce_scatter_tensor": lambda: g._reduce_scatter_base(o, a).wait()}[op]
                    fn()
                    if dev == "tpu":
                        torch.tpu.synchronize(r)
                    samples = []
                    for _ in range(iters):
                        gate.wait()
                        t0 = time.perf_counter()
                        fn()
                        if dev == "tpu":
                            torch.tpu.synchronize(r)
                        samples.append(time.perf_counter() - t0)
                    per_rank[r] = statistics.median(samples)
                ts = [threading.Thread(target=body, args=(r,)) for r in range(n)]
                [t.start() for t in ts]
                [t.join() for t in ts]
                times[dev] = max(per_rank)
            rows.append(_row(op, nbytes, n, times))
    with open(out_path, "w") as f:
        json.dump(rows, f)


def _train_worker(out_path):
    import copy

    import torch
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard
    from torch.nn.parallel import DistributedDataParallel as DDP

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
    import models

    dist.init_process_group("pjrt", init_method="file://" + os.environ["BENCH_STORE"],
                            rank=int(os.environ["RANK"]), world_size=int(os.environ["WORLD_SIZE"]))
    rank, n = dist.get_rank(), dist.get_world_size()
    per = 8 // n
    batches = models.lm_batches(13, batch=8, seq=64, vocab=256)
    base = models.TinyLM(vocab=256, d=128, heads=4, layers=2, seq=64).to("tpu")
    result = {}
    for name in ("ddp", "fsdp2"):
        model = copy.deepcopy(base)
        if name == "ddp":
            run = DDP(model)
        else:
            for blk in model.blocks:
                fully_shard(blk)
            run = fully_shard(model)
        opt = torch.optim.SGD(run.parameters(), lr=0.01)
        samples = []
        for i, (idx, tgt) in enumerate(batches):
            idx, tgt = idx[rank * per:(rank + 1) * per].to("tpu"), tgt[rank * per:(rank + 1) * per].to("tpu")
            t0 = time.perf_counter()
            opt.zero_grad()
            models.lm_loss(run, idx, tgt).backward()
            opt.step()
            torch.tpu.synchronize()
            if i >= 3:  # after warm-up (compiles)
                samples.append(time.perf_counter() - t0)
        t = torch.tensor([statistics.median(samples)], device="tpu")
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        result[name] = t.item() * 1e3
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump(result, f)
    dist.barrier()
    dist.destroy_process_group()


def _run(world, sizes, mode="--worker"):
    tmp = tempfile.mkdtemp(prefix="tpj-bench-")
    out = os.path.join(tmp, "rows.json")
    procs = []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                   BENCH_STORE=os.path.join(tmp, "store"), TORCH_PJRT_CPU_DEVICES="1",
                   OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([sys.executable, __file__, mode, json.dumps(sizes), out],
                                      env=env))
    for p in procs:
        if p.wait() != 0:
            raise SystemExit(f"a rank failed (exit {p.returncode})")
    with open(out) as f:
        return json.load(f)


def _size(b):
    return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        return _worker(json.loads(sys.argv[2]), sys.argv[3])
    if len(sys.argv) > 1 and sys.argv[1] == "--train-worker":
        return _train_worker(sys.argv[3])
    if len(sys.argv) > 1 and sys.argv[1] == "--xla-worker":
        return _xla_worker(json.loads(sys.argv[2]), sys.argv[3])
    ap = argparse.ArgumentParser()
    ap.add_argument("--worlds", type=int, nargs="*", default=[2, 4])
    ap.add_argument("--max-mib", type=int, default=64)
    ap.add_argument("--train-worlds", type=int, nargs="*", default=[1, 2, 4])
    ap.add_argument("--xla-worlds", type=int, nargs="*", default=[],
                    help="also the XLA transport: one process, a rank per thread and device")
    args = ap.parse_args()
    sizes, s = [], 4 << 10
    while s <= args.max_mib << 20:
        sizes.append(s)
        s *= 4
    if args.worlds:
        print("| ranks | op | size | gloo CPU ms | pjrt tpu ms | gloo busbw GB/s | pjrt busbw GB/s | tpu/gloo |")
        print("|---|---|---|---|---|---|---|---|")
    for world in args.worlds:
        for r in _run(world, sizes):
            print(f"| {r['world']} | {r['op']} | {_size(r['bytes'])} | {r['gloo_ms']:.3f} | "
                  f"{r['tpu_ms']:.3f} | {r['gloo_busbw']:.2f} | {r['tpu_busbw']:.2f} | "
                  f"{r['ratio']:.2f} |", flush=True)
    if args.xla_worlds:
        print("\nXLA transport (one process, a rank per thread; gloo also a rank per thread)\n")
        print("| ranks | op | size | gloo CPU ms | xla tpu ms | gloo busbw GB/s | xla busbw GB/s | tpu/gloo |")
        print("|---|---|---|---|---|---|---|---|")
    for world in args.xla_worlds:
        out = os.path.join(tempfile.mkdtemp(prefix="tpj-bench-"), "xla.json")
        env = dict(os.environ, TORCH_PJRT_CPU_DEVICES=str(world))
        subprocess.run([sys.executable, __file__, "--xla-worker", json.dumps(sizes), out], env=env,
                       check=True)
        with open(out) as f:
            for r in json.load(f):
                print(f"| {r['world']} | {r['op']} | {_size(r['bytes'])} | {r['gloo_ms']:.3f} | "
                      f"{r['tpu_ms']:.3f} | {r['gloo_busbw']:.2f} | {r['tpu_busbw']:.2f} | "
                      f"{r['ratio']:.2f} |", flush=True)
    if args.train_worlds:
        print("\n| processes | DDP step ms | FSDP2 step ms |")
        print("|---|---|---|")
    for world in args.train_worlds:
        r = _run(world, [], mode="--train-worker")
        print(f"| {world} | {r['ddp']:.1f} | {r['fsdp2']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
