"""Training-step time and inference throughput of the small transformer LM
and CNN (tests/python/models.py), side by side in one run: tpu compiled
(torch.compile(backend="tpu")), tpu eager, PyTorch CPU eager, and
torch.compile's default inductor backend on the CPU; the "whole step" rows
compile one function holding forward, backward and the AdamW step. Then
cold-compile and
warm-start (disk cache) times of the compiled tpu step, each in a fresh
process. Not a test.

    .venv/bin/python bench/compile_train.py [--steps N] [--no-inductor]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import models  # noqa: E402
import torch_pjrt  # noqa: E402


def sync(device):
    if device == "tpu":
        torch.tpu.synchronize()


def make(kind, device):
    if kind == "lm":
        model = models.TinyLM(vocab=256, d=64, heads=4, layers=2, seq=32)
        data = models.lm_batches(4, batch=8, seq=32, vocab=256)

        def loss_fn(m, x, y):
            return models.lm_loss(m, x, y)
    else:
        model = models.SmallCNN()
        data = models.cnn_batches(4, batch=16, size=32)

        def loss_fn(m, x, y):
            return F.cross_entropy(m(x), y)
    model = model.to(device)
    data = [(x.to(device), y.to(device)) for x, y in data]
    return model, data, loss_fn


def time_train(kind, device, backend, steps, whole=False):
    torch._dynamo.reset()
    model, data, loss_fn = make(kind, device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    fwd = torch.compile(model, backend=backend) if backend and not whole else model

    def step(i):
        x, y = data[i % len(data)]
        loss = loss_fn(fwd, x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    if whole:  # forward, backward and the optimizer in one compiled function
        compiled = torch.compile(lambda x, y: (loss_fn(model, x, y).backward(), opt.step(),
                                              opt.zero_grad(set_to_none=True)), backend=backend)

        def step(i):  # noqa: F811
            compiled(*data[i % len(data)])

    t0 = time.perf_counter()
    step(0)
    sync(device)
    first = time.perf_counter() - t0
    for i in range(3):
        step(i)
    sync(device)
    runs = []
    for _ in range(3):
        t0 = time.perf_counter()
        for i in range(steps):
            step(i)
        sync(device)
        runs.append((time.perf_counter() - t0) / steps * 1e3)
    return statistics.median(runs), first


def time_infer(kind, device, backend, steps):
    torch._dynamo.reset()
    model, data, _ = make(kind, device)
    model.eval()
    fwd = torch.compile(model, backend=backend) if backend else model
    x = data[0][0]
    with torch.no_grad():
        for _ in range(3):
            fwd(x)
        sync(device)
        t0 = time.perf_counter()
        for _ in range(steps):
            fwd(x)
        sync(device)
    return x.shape[0] * steps / (time.perf_counter() - t0)


_COLD = r"""
import sys, time, json
sys.path.insert(0, {tests!r})
t0 = time.perf_counter()
import torch, torch_pjrt, models
import torch.nn.functional as F
model = models.TinyLM(vocab=256, d=64, heads=4, layers=2, seq=32).to("tpu")
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
cm = torch.compile(model, backend="tpu")
x, y = models.lm_batches(1, batch=8, seq=32, vocab=256)[0]
loss = models.lm_loss(cm, x.to("tpu"), y.to("tpu"))
loss.backward(); opt.step(); torch.tpu.synchronize()
m = torch_pjrt.metrics()
print(json.dumps({{"seconds": time.perf_counter() - t0, "compiles": m["compiles"],
                  "disk_hits": m["cache_hits_disk"], "compile_seconds": m["compile_seconds"]}}))
"""


def cold_warm():
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, TORCH_PJRT_CACHE_DIR=d, TORCH_PJRT_FALLBACK="allow")
        code = _COLD.format(tests=os.path.join(HERE, "..", "tests", "python"))
        out = []
        for _ in range(2):
            p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                               text=True, check=True)
            out.append(json.loads(p.stdout.strip().splitlines()[-1]))
        return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--no-inductor", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("TORCH_PJRT_FALLBACK", "allow")
    configs = [("tpu compiled", "tpu", "tpu", False), ("tpu compiled whole step", "tpu", "tpu", True),
               ("tpu eager", "tpu", None, False), ("CPU eager", "cpu", None, False)]
    if not args.no_inductor:
        configs += [("CPU inductor", "cpu", "inductor", False),
                    ("CPU inductor whole step", "cpu", "inductor", True)]
    print(f"torch {torch.__version__}, torch_pjrt {torch_pjrt.__version__}, "
          f"{os.cpu_count()} cores, steps={args.steps}")
    for kind, name in (("lm", "transformer LM"), ("cnn", "CNN")):
        rows = {}
        for label, device, backend, whole in configs:
            ms, first = time_train(kind, device, backend, args.steps, whole)
            ips = time_infer(kind, device, backend, args.steps)
            rows[label] = (ms, first, ips)
        base = rows["tpu compiled"][0]
        print(f"\n{name}: training step (fwd+bwd+AdamW) and inference")
        print("| config | train step (ms) | vs tpu compiled | first step (s) | inference (samples/s) |")
        print("|---|---|---|---|---|")
        for label, (ms, first, ips) in rows.items():
            print(f"| {label} | {ms:.2f} | {ms / base:.2f}x | {first:.2f} | {ips:.0f} |")
    cold, warm = cold_warm()
    print("\ntpu compiled LM, first training step in a fresh process:")
    print(f"| cold (empty cache) | {cold['seconds']:.2f} s | {cold['compiles']} compiles, "
          f"{cold['compile_seconds']:.2f} s compiling |")
    print(f"| warm (disk cache) | {warm['seconds']:.2f} s | {warm['compiles']} compiles, "
          f"{warm['disk_hits']} loaded from disk |")


if __name__ == "__main__":
    main()
