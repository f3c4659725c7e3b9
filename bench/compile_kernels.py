"""Single kernels at the large LM's sizes (bench/compile_step.py --size
large), each compiled alone: torch.compile(backend="tpu") against inductor
and PyTorch's CPU eager, side by side in one run. Shows which XLA:CPU
kernels are slower than PyTorch's own. Not a test.

    .venv/bin/python bench/compile_kernels.py [--iters 30]
"""
import argparse
import time

import torch
import torch.nn.functional as F

import torch_pjrt  # noqa: F401

CASES = {
    "softmax (8, 8, 128, 128)": (lambda x: torch.softmax(x, -1), [(8, 8, 128, 128)]),
    "exp (8, 8, 128, 128)": (torch.exp, [(8, 8, 128, 128)]),
    "add 1 (8, 8, 128, 128)": (lambda x: x + 1, [(8, 8, 128, 128)]),
    "gelu (1024, 1024)": (F.gelu, [(1024, 1024)]),
    "layer_norm (1024, 256)": (lambda x: F.layer_norm(x, (256,)), [(1024, 256)]),
    "sum(0) (1024, 1024)": (lambda x: x.sum(0), [(1024, 1024)]),
    "mm (1024, 256) x (256, 1024)": (torch.mm, [(1024, 256), (256, 1024)]),
    "bmm (64, 128, 32) x (64, 32, 128)": (torch.bmm, [(64, 128, 32), (64, 32, 128)]),
}


def time_us(fn, args, iters, device):
    def sync():
        if device == "tpu":
            torch.tpu.synchronize()

    for _ in range(3):
        fn(*args)
    sync()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn(*args)
    sync()
    return (time.perf_counter() - t0) / iters * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=30)
    args = ap.parse_args()
    print(f"torch {torch.__version__}, {args.iters} iterations, µs per call")
    print("| kernel | tpu compiled | CPU inductor | CPU eager | tpu / inductor |")
    print("|---|---|---|---|---|")
    for name, (fn, shapes) in CASES.items():
        torch.manual_seed(0)
        xs = [torch.randn(s) for s in shapes]
        torch._dynamo.reset()
        tpu = time_us(torch.compile(fn, backend="tpu"), [x.to("tpu") for x in xs],
                      args.iters, "tpu")
        ind = time_us(torch.compile(fn), xs, args.iters, "cpu")
        cpu = time_us(fn, xs, args.iters, "cpu")
        print(f"| {name} | {tpu:.0f} | {ind:.0f} | {cpu:.0f} | {tpu / ind:.2f}x |")


if __name__ == "__main__":
    main()
