"""Eager cost of ops the boxed glue serves (csrc/ops/boxed.cpp), for an A/B
against another build: run it with each build's Python, alternating, in one
session. Prints, per op, the best wall µs per call and the median process
CPU µs per call (all threads; on a shared machine the steadier of the two).
`add` is not served by the boxed glue: it is the control. Not a test.

    (cd /tmp && OLD/.venv/bin/python NEW/bench/eager_boxed.py before
               NEW/.venv/bin/python NEW/bench/eager_boxed.py after)
"""
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import torch_pjrt  # noqa: F401


def main():
    label = sys.argv[1] if len(sys.argv) > 1 else "run"
    x = torch.randn(64, 64).to("tpu")
    y = torch.randn(64, 64).to("tpu")
    m = (torch.randn(64, 64) > 0).to("tpu")
    ops = [("erf", lambda: torch.erf(x)), ("bitwise_and", lambda: m & m),
           ("silu", lambda: F.silu(x)), ("leaky_relu", lambda: F.leaky_relu(x, 0.1)),
           ("special.i0e", lambda: torch.special.i0e(x)), ("atan2", lambda: torch.atan2(x, y)),
           ("leaky_relu_", lambda: F.leaky_relu_(y, 0.1)), ("add (control)", lambda: x + y)]
    out = []
    for name, fn in ops:
        for _ in range(100):
            fn()
        torch.tpu.synchronize()
        wall, cpu = [], []
        for _ in range(7):
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(2000):
                fn()
            torch.tpu.synchronize()
            wall.append((time.perf_counter() - t0) / 2000 * 1e6)
            cpu.append((time.process_time() - c0) / 2000 * 1e6)
        out.append(f"{name}={min(wall):.1f}/{statistics.median(cpu):.1f}")
    print(label, " ".join(out))


if __name__ == "__main__":
    main()
