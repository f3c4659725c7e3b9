"""Eager dispatch cost of a small cached op, side by side with PyTorch's CPU
eager, and the cost of a first-seen op (lower + compile). Not a test.

    .venv/bin/python bench/eager_ops.py
"""
import statistics
import time

import torch

import torch_pjrt


CPU_TIMES = {}


def per_call_us(fn, sync, n=2000, repeats=5, name=None):
    """Median wall µs per call; the process CPU time per call (all threads,
    so the plugin's workers count) goes to CPU_TIMES[name]: on a shared,
    loaded machine it is the steadier of the two."""
    for _ in range(50):
        fn()
    sync()
    runs, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(n):
            fn()
        sync()
        runs.append((time.perf_counter() - t0) / n * 1e6)
        cpu.append((time.process_time() - c0) / n * 1e6)
    if name:
        CPU_TIMES[name] = statistics.median(cpu)
    return statistics.median(runs)


def main():
    rows = []
    for shape in [(16,), (256, 256)]:
        a_cpu, b_cpu = torch.randn(shape), torch.randn(shape)
        a, b = a_cpu.to("tpu"), b_cpu.to("tpu")
        name = f"add {tuple(shape)} cached"
        cpu_us = per_call_us(lambda: a_cpu + b_cpu, lambda: None, name=("cpu", name))
        tpu_us = per_call_us(lambda: a + b, torch.tpu.synchronize, name=("tpu", name))
        rows.append((name, tpu_us, cpu_us))
        name = f"mul by scalar {tuple(shape)} cached"
        cpu_us = per_call_us(lambda: a_cpu * 2.0, lambda: None, name=("cpu", name))
        tpu_us = per_call_us(lambda: a * 2.0, torch.tpu.synchronize, name=("tpu", name))
        rows.append((name, tpu_us, cpu_us))

    # ops whose output shape comes from a meta function (matmul, nn, reductions)
    import torch.nn.functional as F

    x_cpu, w_cpu = torch.randn(64, 64), torch.randn(64)
    img_cpu, m_cpu = torch.randn(8, 16, 8, 8), torch.randn(64, 64) > 0
    x, w, img, mask = x_cpu.to("tpu"), w_cpu.to("tpu"), img_cpu.to("tpu"), m_cpu.to("tpu")
    rm_cpu, rv_cpu = torch.zeros(16), torch.ones(16)
    rm, rv = rm_cpu.to("tpu"), rv_cpu.to("tpu")
    model_ops = [
        ("mm (64, 64)", lambda x, w, img, mask, rm, rv: x @ x),
        ("linear (64, 64)", lambda x, w, img, mask, rm, rv: F.linear(x, x, w)),
        ("softmax (64, 64)", lambda x, w, img, mask, rm, rv: x.softmax(-1)),
        ("layer_norm (64, 64)", lambda x, w, img, mask, rm, rv: F.layer_norm(x, (64,), w, w)),
        ("sum dim (64, 64)", lambda x, w, img, mask, rm, rv: x.sum(-1)),
        ("masked_fill (64, 64)", lambda x, w, img, mask, rm, rv: x.masked_fill(mask, 0.0)),
        ("batch_norm train (8, 16, 8, 8)",
         lambda x, w, img, mask, rm, rv: F.batch_norm(img, rm, rv, training=True)),
    ]
    for name, fn in model_ops:
        cpu_us = per_call_us(lambda: fn(x_cpu, w_cpu, img_cpu, m_cpu, rm_cpu, rv_cpu),
                             lambda: None, n=500, name=("cpu", name))
        tpu_us = per_call_us(lambda: fn(x, w, img, mask, rm, rv), torch.tpu.synchronize, n=500,
                             name=("tpu", name))
        rows.append((name, tpu_us, cpu_us))

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
        steps[dev] = per_call_us(step, sync, n=50, repeats=3, name=(dev, "step")) / 1e3

    print("| op | tpu eager (µs/op) | CPU eager (µs/op) | tpu / CPU | tpu CPU-time | "
          "CPU CPU-time | ratio |")
    print("|---|---|---|---|---|---|---|")
    for name, t, c in rows:
        tc, cc = CPU_TIMES[("tpu", name)], CPU_TIMES[("cpu", name)]
        print(f"| {name} | {t:.1f} | {c:.1f} | {t / c:.1f}x | {tc:.1f} | {cc:.1f} | "
              f"{tc / cc:.1f}x |")
    tc, cc = CPU_TIMES[("tpu", "step")] / 1e3, CPU_TIMES[("cpu", "step")] / 1e3
    print(f"\nMLP training step (256-512-GELU-LayerNorm-256, batch 32, AdamW): tpu eager "
          f"{steps['tpu']:.2f} ms, CPU eager {steps['cpu']:.2f} ms, "
          f"tpu / CPU {steps['tpu'] / steps['cpu']:.1f}x (process CPU time: tpu {tc:.2f} ms, "
          f"CPU {cc:.2f} ms, {tc / cc:.1f}x)")
    print(f"\nfirst-seen add (lower + compile + run), median of 10 shapes: {first_ms:.1f} ms")
    print("metrics:", torch_pjrt.metrics())


if __name__ == "__main__":
    main()
