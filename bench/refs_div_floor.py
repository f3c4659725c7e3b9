"""Where the time of PyTorch's `_refs.div` (rounding_mode="floor") OpInfo
goes on tpu (issue 19 item 13): its reference inputs run through the
Python reference, whose decomposition into prims gives each sample about ten
small ops of new shapes, each a new executable. Runs the samples of three
dtypes on CPU, then on tpu with an empty on-disk cache, then again with that
cache warm (a fresh process each), and prints seconds and compiles.

Usage: .venv/bin/python bench/refs_div_floor.py
"""
import os
import subprocess
import sys
import tempfile

CHILD = r'''
import sys, time, warnings
warnings.simplefilter("ignore")
import torch, torch_pjrt
from torch.testing._internal.common_methods_invocations import python_ref_db
op = next(o for o in python_ref_db if o.name == "_refs.div" and o.variant_test_name == "floor_rounding")
dev = sys.argv[1]
samples = [s for dt in (torch.float32, torch.int64, torch.float16) for s in op.sample_inputs(dev, dt)]
t0 = time.perf_counter()
for s in samples:
    op(s.input, *s.args, **s.kwargs)
if dev == "tpu":
    torch.tpu.synchronize()
m = torch_pjrt.metrics()
print("%d samples %.2f s compiles %d compile_s %.2f" % (len(samples), time.perf_counter() - t0,
      m["compiles"] if dev == "tpu" else 0, m["compile_seconds"] if dev == "tpu" else 0.0))
'''


def run(dev, cache):
    env = dict(os.environ, TORCH_PJRT_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, "-c", CHILD, dev], env=env, capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr[-500:]


def main():
    with tempfile.TemporaryDirectory() as cache:
        print("cpu:              ", run("cpu", cache))
        print("tpu, cold cache:  ", run("tpu", cache))
        print("tpu, warm cache:  ", run("tpu", cache))


if __name__ == "__main__":
    main()
