"""An eager optimizer step on tpu: launches and time for the transformer LM's
AdamW (foreach, PyTorch's default on this device), next to the same step
inside one torch.compile'd function. Not a test.

    .venv/bin/python bench/optimizer_step.py [--steps 20]
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))

import torch  # noqa: E402

import models  # noqa: E402
import torch_pjrt  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    torch.manual_seed(0)
    model = models.TinyLM(vocab=256, d=64, heads=4, layers=2, seq=32).to("tpu")
    x, y = [t.to("tpu") for t in next(iter(models.lm_batches(1, batch=8, seq=32, vocab=256)))]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    models.lm_loss(model, x, y).backward()
    compiled = torch.compile(opt.step, backend="tpu")
    rows = []
    for name, fn in (("eager", opt.step), ("compiled", compiled)):
        for _ in range(3):
            fn()
        torch.tpu.synchronize()
        times = []
        m0 = torch_pjrt.metrics()["executions"]
        for _ in range(args.steps):
            t0 = time.perf_counter()
            fn()
            torch.tpu.synchronize()
            times.append((time.perf_counter() - t0) * 1e3)
        launches = (torch_pjrt.metrics()["executions"] - m0) / args.steps
        rows.append((name, statistics.median(times), launches))
    n = len(list(model.parameters()))
    print(f"AdamW step of the transformer LM ({n} parameters), median of {args.steps} steps")
    print("| optimizer step | ms | launches per step |")
    print("|---|---|---|")
    for name, ms, launches in rows:
        print(f"| {name} | {ms:.2f} | {launches:.0f} |")


if __name__ == "__main__":
    main()
