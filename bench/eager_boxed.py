"""Eager cost of ops the boxed glue serves (csrc/ops/boxed.cpp), for an A/B
against another build: run it with each build's Python, alternating, in one
session. Prints, per op, the best wall µs per call and the median process
CPU µs per call (all threads; on a shared machine the steadier of the two).
`add` is not served by the boxed glue: it is the control. bce waits on the
host for its input range (as before it was a row). Not a test.

    (cd /tmp && OLD/.venv/bin/python NEW/bench/eager_boxed.py before
               NEW/.venv/bin/python NEW/bench/eager_boxed.py after)
"""
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import torch_pjrt  # noqa: F401

N = 1000  # calls per timed round


def main():
    label = sys.argv[1] if len(sys.argv) > 1 else "run"
    x = torch.randn(64, 64).to("tpu")
    y = torch.randn(64, 64).to("tpu")
    m = (torch.randn(64, 64) > 0).to("tpu")
    p = torch.rand(64, 64).to("tpu")
    ops = [("erf", lambda: torch.erf(x)), ("bitwise_and", lambda: m & m),
           ("silu", lambda: F.silu(x)), ("leaky_relu", lambda: F.leaky_relu(x, 0.1)),
           ("special.i0e", lambda: torch.special.i0e(x)), ("atan2", lambda: torch.atan2(x, y)),
           ("leaky_relu_", lambda: F.leaky_relu_(y, 0.1)),
           # rows since the second boxed step: reduction, loss, pointwise,
           # softmax, hardtanh, igamma
           ("sum(dim)", lambda: x.sum(1)), ("mean(dim)", lambda: x.mean(0)),
           ("amax(dim)", lambda: x.amax(1)), ("any", lambda: m.any()),
           ("mse_loss", lambda: F.mse_loss(x, y)),
           ("smooth_l1_loss", lambda: F.smooth_l1_loss(x, y, beta=0.5)),
           ("bce", lambda: F.binary_cross_entropy(p, p)),
           ("copysign", lambda: torch.copysign(x, y)), ("xlogy", lambda: torch.xlogy(x, y)),
           ("softmax", lambda: torch.softmax(x, 1)), ("hardtanh", lambda: F.hardtanh(x)),
           ("igamma", lambda: torch.igamma(p, p)),
           ("add (control)", lambda: x + y)]
    out = []
    for name, fn in ops:
        for _ in range(100):
            fn()
        torch.tpu.synchronize()
        wall, cpu = [], []
        for _ in range(5):
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(N):
                fn()
            torch.tpu.synchronize()
            wall.append((time.perf_counter() - t0) / N * 1e6)
            cpu.append((time.process_time() - c0) / N * 1e6)
        out.append(f"{name}={min(wall):.1f}/{statistics.median(cpu):.1f}")
    print(label, " ".join(out))


if __name__ == "__main__":
    main()
