"""The command line: generate, run, compare, shrink, report."""
import argparse
import json
import time
import warnings

from . import __doc__ as DOC
from .check import outcome
from .gen import generate
from .shrink import Shrinker, program_text, reproducer
from .worker import run_programs, worker_main

QUICK_COUNT = 400
LONG_COUNT = 5000


def main(argv=None):
    """Generate, run, compare; shrink and print each failure class; exit 1 on any new one."""
    ap = argparse.ArgumentParser(description=DOC.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=None)
    ap.add_argument("--long", action="store_true", help="%d programs, up to 8 statements" % LONG_COUNT)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", help="write a JSON report here")
    ap.add_argument("--program", type=int, help="run only this program of the seed, verbosely")
    ap.add_argument("--start", type=int, default=0, help="index of the first program")
    ap.add_argument("--shrink-time", type=float, default=45, help="seconds per failure class")
    ap.add_argument("--shrink-budget", type=float, default=None,
                    help="seconds for all shrinking (default 150; 900 with --long)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        return worker_main()
    warnings.simplefilter("ignore")
    t0 = time.time()
    log = lambda m: print(m, flush=True)  # noqa: E731
    count = a.count or (LONG_COUNT if a.long else QUICK_COUNT)
    idx = [a.program] if a.program is not None else range(a.start, a.start + count)
    progs = [generate(a.seed, i, a.long) for i in idx]
    if a.program is not None:
        log(program_text(progs[0]))
    nstmt = sum(len(p["stmts"]) for p in progs)
    log("fuzz: seed %d, %d programs, %d statements (generated in %.1fs)"
        % (a.seed, len(progs), nstmt, time.time() - t0))
    results = run_programs(progs, a.jobs, log)
    t_run = time.time() - t0
    by_sig, stats = {}, dict(compared=0, noise=0, undefined=0)
    counts = dict(programs=len(progs), statements=nstmt, ok=0, fail=0, known=0, message=0,
                  crash=0, hang=0)
    fallbacks = {}
    for p in progs:
        r = results[p["id"]]
        fails, st = outcome(p, r)
        for k in stats:
            stats[k] += st[k]
        if r[0] == "ok":
            for op, c in r[1].get("fallbacks", {}).items():
                fallbacks.setdefault(op, []).append(p["id"])
        worst = "ok"
        for f in fails:
            by_sig.setdefault(f["sig"], []).append((p, f))
            w = f["cat"] if f["cat"] in ("crash", "hang") else "known" if f["known"] else \
                "message" if f["severity"] == "message" else "fail"
            order = ["ok", "message", "known", "fail", "hang", "crash"]
            worst = max(worst, w, key=order.index)
        counts[worst] += 1
    log("ran in %.1fs: %s" % (t_run, ", ".join("%s %d" % kv for kv in counts.items())))
    log("values compared %d, not compared (noise from earlier statements) %d, "
        "undefined by PyTorch %d" % (stats["compared"], stats["noise"], stats["undefined"]))
    if fallbacks:
        log("CPU fallbacks (op: programs): %s" % "; ".join(
            "%s: %s" % (op, " ".join(ids[:5])) for op, ids in sorted(fallbacks.items())))
    report = dict(seed=a.seed, counts=counts, stats=stats, fallbacks=fallbacks, failures=[],
                  seconds=None)
    order = sorted(by_sig.items(), key=lambda kv: (kv[1][0][1]["known"] is not None,
                                                   kv[1][0][1]["severity"] == "message", kv[0]))
    sh = Shrinker()
    shrink_end = time.time() + (a.shrink_budget if a.shrink_budget is not None else
                                900 if a.long else 150)
    for sig, items in order:
        p, f = items[0]
        small, sf = p, f
        left = shrink_end - time.time()
        if left > 5 and not f["known"] and "not reproduced alone" not in f["tpu"]:
            small, sf = sh.shrink(p, sig, min(a.shrink_time, left))
            if sf is None:
                small, sf = p, f
        tag = "KNOWN (%s)" % f["known"] if f["known"] else \
            "message mismatch" if f["severity"] == "message" else "FAIL"
        rep = reproducer(small, sf) if sf.get("step") is not None or sf.get("final") else \
            program_text(small)
        log("\n=== %s: %s in %d program(s), first %s" % (tag, sig, len(items), p["id"]))
        if not f["known"]:
            log("statement: %s\n  cpu: %s\n  tpu: %s" % (sf["line"], sf["cpu"], sf["tpu"]))
            log("reproducer:\n" + rep)
        report["failures"].append(dict(sig=sig, tag=tag, programs=[q["id"] for q, _ in items],
                                       first=f, shrunk=sf, reproducer=rep))
    sh.close()
    report["seconds"] = round(time.time() - t0, 1)
    log("\nfuzz: %d programs in %.1fs; %d crash, %d hang, %d fail, %d known, %d message-only"
        % (len(progs), report["seconds"], counts["crash"], counts["hang"], counts["fail"],
           counts["known"], counts["message"]))
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(report, fh, indent=1, default=str)
    return 1 if counts["crash"] or counts["hang"] or counts["fail"] else 0

