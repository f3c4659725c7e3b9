"""Output layout's cost (docs/PERFORMANCE.md "Output layout"): CPU µs per
eager op, contiguous and permuted/channels_last operands. Run it with two
builds alternately, in one shell loop, so both see the same machine load:

    for i in 1 2 3 4; do
      echo "before $(/work/main/.venv/bin/python bench/layout_compare.py)"
      echo "after $(.venv/bin/python bench/layout_compare.py)"
    done

Each line is a dict of name -> min over 9 repeats of process CPU µs per op
(the steadiest figure on a shared machine). Not a test.
"""
import time

import torch

import torch_pjrt  # noqa: F401


def us(fn, n=3000, reps=9):
    for _ in range(100):
        fn()
    torch.tpu.synchronize()
    r = []
    for _ in range(reps):
        t0 = time.process_time()
        for _ in range(n):
            fn()
        torch.tpu.synchronize()
        r.append((time.process_time() - t0) / n * 1e6)
    return min(r)


def main():
    a, b = torch.randn(16).to("tpu"), torch.randn(16).to("tpu")
    A, B = torch.randn(256, 256).to("tpu"), torch.randn(256, 256).to("tpu")
    T = torch.randn(256, 256).to("tpu").t()
    X = torch.randn(8, 16, 32, 32).to("tpu")
    Xc = torch.randn(8, 16, 32, 32).contiguous(memory_format=torch.channels_last).to("tpu")
    print(repr({
        "add (16,)": us(lambda: a + b),
        "mul scalar (16,)": us(lambda: a * 2.0),
        "exp (16,)": us(lambda: a.exp()),
        "add (256,256)": us(lambda: A + B, n=1000),
        "add (256,256).t() + (256,256).t()": us(lambda: T + T, n=1000),
        "exp (256,256).t()": us(lambda: T.exp(), n=1000),
        "relu (8,16,32,32)": us(lambda: torch.relu(X), n=500),
        "relu channels_last (8,16,32,32)": us(lambda: torch.relu(Xc), n=500),
    }))


if __name__ == "__main__":
    main()
