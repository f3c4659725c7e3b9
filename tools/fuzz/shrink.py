"""Shrinking a failing program, and printing it as a runnable reproducer."""
import math
import time
import warnings

from .check import outcome
from .gen import MK_SRC, _base_ns, _to_dev, input_line, prune, steps_of
from .worker import Worker


def _outs(stmt):
    return [p for p in stmt["post"] if p not in stmt["refs"]]


def _candidates(prog, step):
    """Smaller variants of prog, most promising first."""
    stmts, nin = prog["stmts"], len(prog["inputs"])
    last = step - nin if step is not None and nin <= step < nin + len(stmts) else None
    if last is not None and last + 1 < len(stmts):
        yield dict(prog, stmts=stmts[:last + 1])
    if last is not None:  # only what the failing statement reads, by name
        need, keep = set(stmts[last]["refs"]), [stmts[last]]
        for s in reversed(stmts[:last]):
            if need & set(s["post"]):
                keep.insert(0, s)
                need |= set(s["refs"])
        yield dict(prog, stmts=keep)
    for i in reversed(range(len(stmts))):
        if i == last:
            continue
        gone, keep = set(_outs(stmts[i])), []
        for j, s in enumerate(stmts):
            if j == i or j > i and gone & set(s["refs"]):
                gone.update(_outs(s))
            else:
                keep.append(s)
        yield dict(prog, stmts=keep)
    ns = _base_ns("cpu")
    for line, _, _ in steps_of(prog):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exec(line, ns)
        except Exception:
            break
    for i, st in enumerate(stmts[:-1]):
        outs = _outs(st)
        if not outs or not all(type(ns.get(o)).__name__ == "Tensor" for o in outs):
            continue
        new = [dict(name=o, shape=list(ns[o].shape), dtype=str(ns[o].dtype)[6:], seed=i,
                    kind="nice", high=0) for o in outs]
        yield dict(prog, inputs=prog["inputs"] + new, stmts=stmts[:i] + stmts[i + 1:])
    for k, inp in enumerate(prog["inputs"]):
        shapes = []
        for d, n in enumerate(inp["shape"]):
            shapes += [inp["shape"][:d] + [m] + inp["shape"][d + 1:] for m in (1, n // 2, n - 1)
                       if 0 <= m < n and not (m == 0 and n > 0)]
        variants = [dict(inp, shape=s) for s in shapes]
        if inp.get("view"):
            variants.insert(0, {k: v for k, v in inp.items() if k != "view"})
        if inp["kind"] in ("normal", "special"):
            variants.append(dict(inp, kind="nice"))
        if inp["dtype"] not in ("float32", "bool") and inp["kind"] not in ("index", "nindex", "bad"):
            variants.append(dict(inp, dtype="float32"))
        for v in variants:
            yield dict(prog, inputs=prog["inputs"][:k] + [v] + prog["inputs"][k + 1:])


class Shrinker:
    """Runs candidate programs in one worker (a fresh one after a crash)."""

    def __init__(self):
        self.w = None
        self.runs = 0

    def evaluate(self, prog):
        self.w = self.w or Worker()
        r = self.w.run(prog)
        self.runs += 1
        if r[0] != "ok":
            self.w = None
        return outcome(prog, r)[0]

    def shrink(self, prog, sig, budget_s):
        """The smallest variant of prog that still fails with sig, and that failure."""
        deadline = time.time() + budget_s
        best = prune(prog)
        fails = [f for f in self.evaluate(best) if f["sig"] == sig]
        if not fails:
            return prog, None
        best_f = fails[0]
        progress = True
        while progress and time.time() < deadline:
            progress = False
            for cand in _candidates(best, best_f["step"]):
                if time.time() > deadline:
                    break
                cand = prune(cand)
                if _size(cand) >= _size(best):
                    continue
                hit = [f for f in self.evaluate(cand) if f["sig"] == sig]
                if hit:
                    best, best_f, progress = cand, hit[0], True
                    break
        return best, best_f

    def close(self):
        if self.w:
            self.w.close()


def _size(prog):
    return (len(prog["stmts"]), sum(math.prod(i["shape"]) + len(i["shape"]) for i in prog["inputs"]),
            sum(i["dtype"] != "float32" for i in prog["inputs"]),
            sum(i["kind"] != "nice" for i in prog["inputs"]))


def _literal(inp):
    t = _base_ns("cpu")["mk"](inp["seed"], inp["shape"], inp["dtype"], inp["kind"], inp["high"])
    dt = "torch." + inp["dtype"]
    if t.numel() > 32:
        return None
    if t.numel() == 0:
        return "torch.empty(%r, dtype=%s)" % (tuple(inp["shape"]), dt)
    if t.is_complex():
        return "torch.complex(torch.tensor(%r), torch.tensor(%r)).to(%s)" % (
            t.real.double().tolist(), t.imag.double().tolist(), dt)
    vals = t.double().tolist() if t.is_floating_point() else t.tolist()
    return "torch.tensor(%r, dtype=%s)" % (vals, dt)


def reproducer(prog, f):
    """A runnable script that runs prog on cpu and tpu and prints what differs."""
    body, need_mk = [], False
    for inp in prog["inputs"]:
        lit = _literal(inp)
        if lit is None:
            need_mk = True
            body.append(input_line(inp))
        else:
            body.append("%s = %s%s" % (inp["name"], lit, _to_dev(inp)))
    step = f.get("step")
    nin = len(prog["inputs"])
    stmts = prog["stmts"]
    last = stmts[step - nin] if step is not None and nin <= step < nin + len(stmts) else None
    for s in stmts:
        if s is last:
            break
        body.append(s["line"])
    if f["cat"] in ("exception", "message") and last:
        body += ["try:", "    " + last["line"], "    print(dev, 'ok')",
                 "except Exception as e:", "    print(dev, type(e).__name__, e)"]
    else:
        if last:
            body.append(last["line"])
        show = [f["final"]] if f.get("final") else (last["post"] if last else [])
        for p in show:
            body.append("print(dev, %r, *((%s.dtype, tuple(%s.shape), %s.stride(), %s.cpu()) "
                        "if isinstance(%s, torch.Tensor) else (%s,)))" % (p, p, p, p, p, p, p))
    head = ["import torch", "from math import inf, nan"]
    if need_mk:
        head += ["import math"] + MK_SRC.strip().split("\n")
    return "\n".join(head + ["", "for dev in ('cpu', 'tpu'):"] + ["    " + b for b in body])


def program_text(prog):
    """The program as its lines (inputs built with mk), for logs."""
    return "\n".join([input_line(i) for i in prog["inputs"]] + [s["line"] for s in prog["stmts"]])
