"""float32 torch.mm on tpu at a few sizes: ms per product, 20 calls after 3
warm-ups. Used to price the CPU plugin's compile options (PERFORMANCE.md,
"Matrix products without XNNPACK"): run it in fresh processes with and without
an XLA_FLAGS setting, TORCH_PJRT_CACHE_DIR= so that nothing comes from the disk
cache. Not a test.

    TORCH_PJRT_CACHE_DIR= .venv/bin/python bench/mm_sizes.py
"""
import time

import torch

import torch_pjrt  # noqa: F401  (registers tpu)

SIZES = [(64, 2048, 256), (512, 512, 512), (2048, 2048, 2048), (16, 4096, 4096)]


def main() -> None:
    for m, k, n in SIZES:
        a, b = torch.randn(m, k, device="tpu"), torch.randn(k, n, device="tpu")
        for _ in range(3):
            torch.mm(a, b)
        torch.tpu.synchronize()
        t = time.perf_counter()
        for _ in range(20):
            torch.mm(a, b)
        torch.tpu.synchronize()
        print(f"{m} x {k} x {n}: {(time.perf_counter() - t) / 20 * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
