"""In-place writes, tpu eager side by side with PyTorch's CPU eager: a slice
write into a big storage (which, without donation, copies the whole storage
on every call), a KV-cache style one-token write, and a whole-tensor add_.
Prints µs per op (median wall time over a few repeats, the device synchronized
at the end of each) and the process CPU time per op. Not a test.

Slice writes move through every position: a write into a block of the
storage takes its position at run time (one compile for all). Before that
change each new offset compiled its own program; run with
TORCH_PJRT_INPLACE_BENCH_POSITIONS=16 to cycle over 16 warmed positions and
compare builds without counting compiles.

    PYTHONPATH=python .venv/bin/python bench/inplace_write.py
"""
import os
import statistics
import time

import torch

import torch_pjrt


def per_op_us(fn, sync, n, repeats=5):
    """(median wall µs per call, median process-CPU µs per call)."""
    for i in range(20):
        fn(i)
    sync()
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        for i in range(n):
            fn(i)
        sync()
        wall.append((time.perf_counter() - t0) / n * 1e6)
        cpu.append((time.process_time() - c0) / n * 1e6)
    return statistics.median(wall), statistics.median(cpu)


def cases(dev):
    """name -> (step(i), n): each case owns its tensors on dev."""
    buf = torch.zeros(1024, 1024, device=dev)
    v = torch.ones(1024, 1, device=dev)

    npos = int(os.environ.get("TORCH_PJRT_INPLACE_BENCH_POSITIONS", "0"))

    def slice_write(i):
        j = 37 * (i % npos) if npos else i % 1023
        buf[:, j:j + 1] = v

    cache = torch.zeros(1, 4, 2048, 64, device=dev)
    k = torch.randn(1, 4, 1, 64, device=dev)
    pos_cpu = [torch.tensor([p]) for p in range(2048)]
    pos = [p.to(dev) for p in pos_cpu]

    def kv_slice(i):
        p = 100 * (i % npos) if npos else i % 2048
        cache[:, :, p:p + 1] = k

    def kv_index_copy(i):
        cache.index_copy_(2, pos[i % 2048], k)

    x = torch.zeros(1024, 1024, device=dev)

    def add_(i):
        x.add_(1)

    return {
        "buf[:, i:i+1] = v  (1024x1024 f32)": (slice_write, 500),
        "cache[:, :, p:p+1] = k  (1x4x2048x64)": (kv_slice, 500),
        "cache.index_copy_(2, p, k)  (1x4x2048x64)": (kv_index_copy, 500),
        "x.add_(1)  (1024x1024 f32)": (add_, 300),
    }


def main():
    results = {}
    for dev, sync in [("cpu", lambda: None), ("tpu", torch.tpu.synchronize)]:
        for name, (fn, n) in cases(dev).items():
            results[(dev, name)] = per_op_us(fn, sync, n)
    print(f"{'op':44s} {'tpu us':>9s} {'cpu us':>9s} {'tpu/cpu':>8s}"
          f" {'tpu cpu-time us':>16s}")
    for name in cases("cpu"):
        t, tc = results[("tpu", name)]
        c, _ = results[("cpu", name)]
        print(f"{name:44s} {t:9.1f} {c:9.1f} {t / c:8.2f} {tc:16.1f}")
    m = torch_pjrt.metrics()
    print("donated_buffers:", m.get("donated_buffers"))


if __name__ == "__main__":
    main()
