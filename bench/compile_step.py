"""The transformer LM's whole training step (forward, backward and AdamW in
one torch.compile'd function) on tpu and with inductor on the CPU, in
alternating rounds of separate processes, each the median of 5 timed runs
of --steps steps after 5 warm-up steps. On a shared machine the rounds
show how much of a difference is noise. Not a test.

    .venv/bin/python bench/compile_step.py [--rounds 3] [--steps 50] [--size small|large]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


SIZES = {
    # the LM of docs/PERFORMANCE.md's compile rows, and one 4x wider and
    # 4x longer (64x the attention scores, 16x the weights)
    "small": dict(model=dict(vocab=256, d=64, heads=4, layers=2, seq=32),
                  batch=8, seq=32, vocab=256),
    "large": dict(model=dict(vocab=1024, d=256, heads=8, layers=2, seq=128),
                  batch=8, seq=128, vocab=1024),
}


def child(device: str, backend: str, steps: int, size: str) -> None:
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))
    import torch
    import models
    import torch_pjrt  # noqa: F401

    torch.manual_seed(0)
    cfg = SIZES[size]
    model = models.TinyLM(**cfg["model"]).to(device)
    data = [(x.to(device), y.to(device))
            for x, y in models.lm_batches(4, batch=cfg["batch"], seq=cfg["seq"], vocab=cfg["vocab"])]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step = torch.compile(lambda x, y: (models.lm_loss(model, x, y).backward(), opt.step(),
                                       opt.zero_grad(set_to_none=True)), backend=backend)

    def sync():
        if device == "tpu":
            torch.tpu.synchronize()

    for i in range(5):
        step(*data[i % 4])
    sync()
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        for i in range(steps):
            step(*data[i % 4])
        sync()
        runs.append((time.perf_counter() - t0) / steps * 1e3)
    print(statistics.median(runs))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--size", choices=sorted(SIZES), default="small")
    ap.add_argument("--child", nargs=2)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.steps, args.size)
        return
    configs = [("tpu compiled whole step", "tpu", "tpu"),
               ("CPU inductor whole step", "cpu", "inductor")]
    results = {name: [] for name, _, _ in configs}
    for _ in range(args.rounds):
        for name, device, backend in configs:
            out = subprocess.run([sys.executable, __file__, "--steps", str(args.steps),
                                  "--size", args.size, "--child", device, backend],
                                 capture_output=True, text=True, check=True).stdout
            results[name].append(float(out.strip().splitlines()[-1]))
    print(f"transformer LM ({args.size}) whole training step, {args.rounds} rounds of "
          f"{args.steps} steps")
    print("| config | ms per step, each round | median |")
    print("|---|---|---|")
    for name, vals in results.items():
        print(f"| {name} | {' / '.join(f'{v:.2f}' for v in vals)} | {statistics.median(vals):.2f} |")
    t = statistics.median(results["tpu compiled whole step"])
    c = statistics.median(results["CPU inductor whole step"])
    print(f"tpu / inductor: {t / c:.2f}x")


if __name__ == "__main__":
    main()
