"""TorchTitan's Llama 3 debug model trained on tpu with
`torchrun -m torchtitan.train --module torch_pjrt.titan --config
llama3_debugmodel` at 1, 2 and 4 processes (FSDP over the data-parallel
ranks, TorchTitan's default), as a user runs it. Reads TorchTitan's own
metrics line (tps, tflops, mfu, memory) back from each run and prints one
table with the scaling efficiency from 1 to N processes. Not a test.

    .venv/bin/python bench/titan.py [--nprocs 1 2 4] [--steps 10] [--warmup 2]
                                    [--seq-len 128] [--batch 2] [--compile]

The tokenizer and dataset are the tests' (tests/python/titan/_assets.py) and
so is the command line (tests/python/titan/_run.py). TorchTitan's tps is
tokens per second of one rank (rank 0's line; the ranks step in lockstep),
so the total is N times it. Its MFU is computed against TorchTitan's own
peak table, which does not know this device and falls back to an A100's
bf16 peak (312 TFLOPS): on the CPU plugin it is a tiny number that only
compares rows with each other. TorchTitan prints tflops and mfu to two
decimals, so the means here carry that resolution (0.01).

--compile also runs every N with `--compile.enable --compile.backend tpu`; a
run that fails is reported in one line under the table."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "python", "titan"))
from _assets import build  # noqa: E402
from _run import TitanFailed, train  # noqa: E402


def _failure_line(text):
    """The most telling line of a failed run: the last exception line, and
    the compiled graph's op it was raised in when the traceback shows one."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for i in range(len(lines) - 1, -1, -1):
        if "Error" in lines[i] or "Exception" in lines[i]:
            graph_op = [ln for ln in lines[:i] if "= torch.ops." in ln]
            where = f" [in graph: {graph_op[-1].split(';')[0]}]" if graph_op else ""
            return lines[i][:300] + where
    return (lines[-1] if lines else "no output")[:300]


def run_one(assets, root, nproc, mode, args):
    out = tempfile.mkdtemp(prefix=f"titan-{mode}-{nproc}-", dir=root)
    extra = ["--compile.enable", "--compile.backend", "tpu"] if mode == "compiled" else []
    try:
        steps, _ = train(assets, out, *extra, nproc=nproc, module="torch_pjrt.titan",
                         config="llama3_debugmodel", steps=args.steps, seq_len=args.seq_len,
                         batch=args.batch, timeout=args.timeout)
    except TitanFailed as e:
        return {"error": _failure_line(str(e))}
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {args.timeout} s"}
    kept = [steps[s] for s in sorted(steps) if s > args.warmup]
    if not kept:
        return {"error": f"no metrics lines after step {args.warmup}"}
    return {"tps": statistics.mean(m["tps"] for m in kept),
            "tflops": statistics.mean(m["tflops"] for m in kept),
            "mfu": statistics.mean(m["mfu"] for m in kept),
            "memory_gib": max(m["memory_gib"] for m in kept),
            "loss": kept[-1]["loss"], "steps": len(kept)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nprocs", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2, help="first steps left out of the means")
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--batch", type=int, default=2, help="local batch per process")
    p.add_argument("--timeout", type=int, default=900, help="seconds per run")
    p.add_argument("--compile", action="store_true",
                   help="also run with --compile.enable --compile.backend tpu")
    args = p.parse_args()
    if args.steps <= args.warmup:
        p.error("--steps must be larger than --warmup")

    modes = ["eager"] + (["compiled"] if args.compile else [])
    with tempfile.TemporaryDirectory(prefix="bench-titan-") as root:
        assets = build(os.path.join(root, "assets"))
        results = {}
        for mode in modes:
            for n in args.nprocs:
                print(f"# {mode} nproc={n} ...", file=sys.stderr, flush=True)
                results[mode, n] = run_one(assets, root, n, mode, args)

    print(f"llama3_debugmodel, seq {args.seq_len}, local batch {args.batch}, "
          f"{args.steps} steps (means over steps {args.warmup + 1}..{args.steps})")
    print("| mode | procs | tps/proc | tps total | TFLOPS/proc | MFU % | memory GiB | "
          "scaling eff. |")
    print("|---|---|---|---|---|---|---|---|")
    failures = []
    for mode in modes:
        base = results.get((mode, 1), {}).get("tps")
        for n in args.nprocs:
            r = results[mode, n]
            if "error" in r:
                failures.append(f"{mode} nproc={n}: {r['error']}")
                print(f"| {mode} | {n} | failed | | | | | |")
                continue
            total = r["tps"] * n
            eff = f"{total / (n * base):.2f}" if base else "n/a"
            print(f"| {mode} | {n} | {r['tps']:,.0f} | {total:,.0f} | {r['tflops']:.3f} | "
                  f"{r['mfu']:.3f} | {r['memory_gib']:.2f} | {eff} |")
    for f in failures:
        print(f"FAILED {f}")


if __name__ == "__main__":
    main()
