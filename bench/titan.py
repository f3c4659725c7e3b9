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
run that fails is reported in one line under the table.

--profile then runs the largest N once more, compiled, under torch.profiler
(bench/_titan_profiled.py wraps TorchTitan's train_step from outside) and
prints where rank 0's profiled steps went: tpu executions, host time inside
collectives, host waits for results, the rest of the host's work, and the
executions that took most device time."""
import argparse
import json
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


def profile_one(assets, root, nproc, args):
    """The compiled run at nproc under bench/_titan_profiled.py; rank 0's
    summary (or {"error": ...})."""
    out = tempfile.mkdtemp(prefix=f"titan-profile-{nproc}-", dir=root)
    prof_dir = os.path.join(out, "profile")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_titan_profiled.py")
    try:
        train(assets, out, "--compile.enable", "--compile.backend", "tpu", nproc=nproc,
              module="torch_pjrt.titan", config="llama3_debugmodel", steps=args.steps,
              seq_len=args.seq_len, batch=args.batch, timeout=args.timeout, entry=(script,),
              env={"TPJ_PROFILE_OUT": prof_dir, "TPJ_PROFILE_WARMUP": str(args.warmup)})
    except TitanFailed as e:
        return {"error": _failure_line(str(e))}
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {args.timeout} s"}
    path = os.path.join(prof_dir, "rank0.json")
    if not os.path.exists(path):
        return {"error": "no profile written"}
    with open(path) as f:
        return json.load(f)


def print_profile(nproc, r):
    print()
    if "error" in r:
        print(f"FAILED profile nproc={nproc}: {r['error']}")
        return
    step = r["step_ms"]
    pct = lambda v: f"{100 * v / step:.0f}%" if step else "n/a"
    print(f"compiled, {nproc} processes, rank 0, {r['steps']} profiled steps: "
          f"{step:.0f} ms a step, {r['launches']:.0f} tpu executions a step")
    print("| where | ms/step | share of the step |")
    print("|---|---|---|")
    print(f"| tpu executions (union of their intervals) | {r['device_ms']:.0f} | {pct(r['device_ms'])} |")
    print(f"| host inside collectives (FSDP's all-gather/reduce-scatter spans and c10d calls) | "
          f"{r['collective_ms']:.0f} | {pct(r['collective_ms'])} |")
    print(f"| ... of which inside c10d / functional-collective calls (issue + wait) | "
          f"{r['c10d_ms']:.0f} | {pct(r['c10d_ms'])} |")
    print(f"| host waiting for results (item, synchronize) | {r['device_wait_ms']:.0f} | "
          f"{pct(r['device_wait_ms'])} |")
    print(f"| host, the rest (Python, dispatch, autograd, optimizer) | {r['host_ms']:.0f} | "
          f"{pct(r['host_ms'])} |")
    print("top tpu executions (ms/step, summed over overlapping runs): " +
          ", ".join(f"{k} {v:.0f}" for k, v in r["top_kernels_ms"][:6]))


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
    p.add_argument("--profile", action="store_true",
                   help="profile the compiled run at the largest N (where the step's time goes)")
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
        if args.profile:
            nprof = max(args.nprocs)
            print(f"# profile compiled nproc={nprof} ...", file=sys.stderr, flush=True)
            profiled = profile_one(assets, root, nprof, args)

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
    if args.profile:
        print_profile(max(args.nprocs), profiled)


if __name__ == "__main__":
    main()
