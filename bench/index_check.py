"""What a compiled graph's device-side index check costs (issue 19, item 5).

A compiled step that reads an embedding table (index_select) and reduces,
then one wait per step (.item(), as a decode loop does), timed with the
check on (the default) and off (TORCH_PJRT_GRAPH_INDEX_CHECKS=0), each in
its own process, alternating rounds in one run. Prints µs per step: wall
time, and the process's CPU time (all threads; steadier on a loaded
machine), the minimum over rounds.

    PYTHONPATH=python .venv/bin/python bench/index_check.py [steps] [rounds]
"""
import os
import subprocess
import sys

CHILD = r"""
import time, torch, torch_pjrt, torch.nn.functional as F
torch.manual_seed(0)
table = torch.randn(32000, 256, device="tpu")
step = torch.compile(lambda t, i: F.embedding(i, t).sum(), backend="tpu")
ids = [torch.randint(0, 32000, (64,), device="tpu") for _ in range(8)]
for i in ids: step(table, i).item()
n = int(STEPS)
t0, c0 = time.perf_counter(), time.process_time()
for k in range(n): step(table, ids[k % 8]).item()
print((time.perf_counter() - t0) / n * 1e6, (time.process_time() - c0) / n * 1e6)
"""


def run(checks: bool, steps: int) -> tuple:
    env = dict(os.environ, TORCH_PJRT_GRAPH_INDEX_CHECKS="1" if checks else "0")
    p = subprocess.run([sys.executable, "-c", CHILD.replace("STEPS", str(steps))], env=env,
                       capture_output=True, text=True, check=True)
    wall, cpu = p.stdout.strip().splitlines()[-1].split()
    return float(wall), float(cpu)


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    on, off = [], []
    for _ in range(rounds):
        on.append(run(True, steps))
        off.append(run(False, steps))
    for k, what in ((0, "wall"), (1, "CPU")):
        a, b = min(r[k] for r in off), min(r[k] for r in on)
        print(f"| compiled embedding step + .item(), {what} | check off {a:.1f} µs | "
              f"check on {b:.1f} µs | ratio {b / a:.2f} |")


if __name__ == "__main__":
    main()
