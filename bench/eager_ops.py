"""Eager dispatch cost of a small cached op, side by side with PyTorch's CPU
eager, and the cost of a first-seen op (lower + compile). Not a test.

    .venv/bin/python bench/eager_ops.py
"""
import statistics
import time

import torch

import torch_pjrt


def per_call_us(fn, sync, n=2000, repeats=5):
    for _ in range(50):
        fn()
    sync()
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        runs.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(runs)


def main():
    rows = []
    for shape in [(16,), (256, 256)]:
        a_cpu, b_cpu = torch.randn(shape), torch.randn(shape)
        a, b = a_cpu.to("tpu"), b_cpu.to("tpu")
        cpu_us = per_call_us(lambda: a_cpu + b_cpu, lambda: None)
        tpu_us = per_call_us(lambda: a + b, torch.tpu.synchronize)
        rows.append((f"add {tuple(shape)} cached", tpu_us, cpu_us))
        cpu_us = per_call_us(lambda: a_cpu * 2.0, lambda: None)
        tpu_us = per_call_us(lambda: a * 2.0, torch.tpu.synchronize)
        rows.append((f"mul by scalar {tuple(shape)} cached", tpu_us, cpu_us))

    # first-seen: a new shape each time forces lower + compile
    times = []
    for n in range(1000, 1010):
        x = torch.randn(n).to("tpu")
        t0 = time.perf_counter()
        y = x + x
        torch.tpu.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    first_ms = statistics.median(times)

    # a whole eager training step: forward, backward, AdamW
    import copy

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(),
                                torch.nn.LayerNorm(512), torch.nn.Linear(512, 256))
    steps = {}
    for dev in ["cpu", "tpu"]:
        m = copy.deepcopy(model).to(dev)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
        x, y = torch.randn(32, 256).to(dev), torch.randn(32, 256).to(dev)

        def step():
            opt.zero_grad()
            ((m(x) - y) ** 2).mean().backward()
            opt.step()

        sync = torch.tpu.synchronize if dev == "tpu" else (lambda: None)
        steps[dev] = per_call_us(step, sync, n=50, repeats=3) / 1e3

    print("| op | tpu eager (µs/op) | CPU eager (µs/op) | tpu / CPU |")
    print("|---|---|---|---|")
    for name, t, c in rows:
        print(f"| {name} | {t:.1f} | {c:.1f} | {t / c:.1f}x |")
    print(f"\nMLP training step (256-512-GELU-LayerNorm-256, batch 32, AdamW): tpu eager "
          f"{steps['tpu']:.2f} ms, CPU eager {steps['cpu']:.2f} ms, "
          f"tpu / CPU {steps['tpu'] / steps['cpu']:.1f}x")
    print(f"\nfirst-seen add (lower + compile + run), median of 10 shapes: {first_ms:.1f} ms")
    print("metrics:", torch_pjrt.metrics())


if __name__ == "__main__":
    main()
