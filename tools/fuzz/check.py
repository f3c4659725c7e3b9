"""Comparing a program's cpu and tpu snapshots: the first statement that diverges,
with tolerances per dtype, and noise from earlier statements told apart."""
import re
import warnings

from .gen import _base_ns, steps_of
from .known import KNOWN

# (rtol, atol) per dtype; integers and bool are compared exactly.
TOL = {"float16": (1e-2, 1e-3), "bfloat16": (1.6e-2, 1e-2), "float32": (1e-5, 1e-6),
       "float64": (1e-10, 1e-12), "complex64": (1e-5, 1e-6), "complex128": (1e-10, 1e-12),
       "complex32": (1e-2, 1e-3)}


def _contig(shape, stride):
    expect = 1
    for n, s in reversed(list(zip(shape, stride))):
        if n != 1 and s != expect:
            return False
        expect *= n
    return True


def _layout(snap):
    """Strides that matter (sizes > 1) and the offset; nothing for an empty tensor."""
    _, _, shape, stride, off, val = snap
    if val.numel() == 0:
        return None
    return tuple(s for n, s in zip(shape, stride) if n > 1), off


def _real(t):
    """t as float64 (complex: its (re, im) pairs); integers and bool unchanged."""
    import torch
    if t.is_complex():
        return torch.view_as_real(t.to(torch.complex128))
    return t.double() if t.is_floating_point() else t


def _same(a, b):
    """Equal values, signed zeros included (they pick branch cuts); NaN equals NaN."""
    import torch
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.is_floating_point() or a.is_complex():
        a, b = _real(a), _real(b)
        nan = a.isnan() & b.isnan()
        return bool((((a == b) & (a.signbit() == b.signbit())) | nan).all())
    return torch.equal(a, b)


def _close(tpu, cpu, dtype, mag=None):
    """tpu's values within dtype's tolerance of CPU's; NaN and inf positions equal."""
    import torch
    if dtype not in TOL:
        return torch.equal(tpu, cpu)
    rtol, atol = TOL[dtype]
    a, b = _real(tpu), _real(cpu)
    if tpu.is_complex():  # an element is NaN when either part is
        na, nb = a.isnan().any(-1, keepdim=True), b.isnan().any(-1, keepdim=True)
        na, nb = na.expand_as(a), nb.expand_as(b)
    else:
        na, nb = a.isnan(), b.isnan()
    if not torch.equal(na, nb):
        return False
    inf = b.isinf() | a.isinf()
    if not bool((a[inf & ~nb] == b[inf & ~nb]).all()):
        return False
    ok = ~(na | inf)
    bound = atol + rtol * b.abs()
    if mag is not None:
        if tpu.is_complex() and isinstance(mag, torch.Tensor) and mag.dim() == tpu.dim():
            mag = mag.unsqueeze(-1)
        bound = bound + rtol * mag
    return bool(((a - b).abs() <= bound)[ok].all())


def _snap_diff(t, c, dtype_ctx=None, mag=None, values=True, tol_dt=None):
    """(category, detail) of the first way tpu's snapshot t differs from CPU's c, or None."""
    if t[0] != c[0]:
        return ("kind", "cpu %s, tpu %s" % (c[0], t[0]))
    if c[0] == "L":
        if len(t[1]) != len(c[1]):
            return ("kind", "lengths")
        for u, v in zip(t[1], c[1]):
            d = _snap_diff(u, v, dtype_ctx, None, values)
            if d:
                return d
        return None
    if c[0] == "P":
        if t[1] != c[1]:
            return ("kind", "cpu %s, tpu %s" % (c[1], t[1]))
        if t[2] == c[2] or not values:
            return None
        if isinstance(c[2], (float, complex)):
            import torch
            if _close(torch.tensor([t[2]]), torch.tensor([c[2]]), dtype_ctx or "float32"):
                return None
        return ("value", c[1])
    if c[0] in ("E", "O"):
        return None if t[:2] == c[:2] else ("kind", "%s / %s" % (c[:2], t[:2]))
    if t[1] != c[1]:
        return ("dtype", "cpu %s, tpu %s" % (c[1], t[1]))
    if t[2] != c[2]:
        return ("shape", "")
    if _layout(t) != _layout(c):
        return ("stride", "")
    if values and not _close(t[5], c[5], tol_dt if c[1] in TOL and tol_dt else c[1], mag):
        return ("value", c[1])
    return None


def _undefined(stmt, cins, refs, cout):
    """Values PyTorch leaves undefined: float -> int casts out of range, scatter duplicates."""
    import torch
    tags = stmt["tags"]
    snaps = dict(zip(refs, cins))
    if tags.get("fcast") and cout[0] == "T" and cout[1] in ("uint8", "int8", "int32", "int64"):
        info = torch.iinfo(getattr(torch, cout[1]))
        for s in cins:
            if s[0] == "T" and (s[5].is_floating_point() or s[5].is_complex()) and s[5].numel():
                v = _real(s[5])
                if not bool(v.isfinite().all()) or float(v.max()) >= info.max + 1 or \
                        float(v.min()) <= info.min - 1:
                    return True
    if re.search(r"\.view\(torch\.u?int|signbit|copysign", stmt["line"]):  # NaN's sign, bits
        for s in cins:
            if s[0] == "T" and (s[5].is_floating_point() or s[5].is_complex()) and \
                    bool(_real(s[5]).isnan().any()):
                return True
    d = tags.get("dups")
    if d and d["ref"] in snaps and snaps[d["ref"]][0] == "T":
        idx = snaps[d["ref"]][5].long()
        if d["n"] > 0 and idx.numel():
            idx = idx.remainder(d["n"]).movedim(d["dim"], -1) if idx.dim() else idx.reshape(1)
            s = idx.sort(-1).values
            if bool((s[..., 1:] == s[..., :-1]).any()):
                return True
    return False


def _compute_dtype(stmt, cins, cout):
    """The dtype whose tolerance applies: an out= result is computed in the op's own
    dtype (float32 for integer inputs) and only then cast to out's."""
    if stmt["kind"] != "out" or cout[0] != "T" or cout[1] not in TOL:
        return None
    cands = [s[1] for s in cins if s[0] == "T" and s[1] in TOL] + ["float32", cout[1]]
    return max(cands, key=lambda d: TOL[d][0])


def _magnitude(stmt, cins, refs):
    """How large the accumulated terms are, for ops whose rounding depends on order."""
    import torch
    acc = stmt["tags"].get("acc")
    tens = [s[5] for s in cins if s[0] == "T" and (s[5].is_floating_point() or s[5].is_complex())]
    big = max([float(_real(v).abs().nan_to_num(0, 0, 0).max()) for v in tens if v.numel()]
              or [0.0])
    if acc == "sum":
        ns = _base_ns("cpu")
        for r, s in zip(refs, cins):
            if s[0] == "T":
                v = s[5]
                ns[r] = v.abs().double() if v.is_floating_point() or v.is_complex() else v
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exec(stmt["line"], ns)
            m = ns[stmt["post"][0]]
            if isinstance(m, torch.Tensor):
                return m.abs().double().nan_to_num(0, 0, 0)
        except Exception:
            pass
        n = max([v.numel() for v in tens] or [1])
        return big * big * n if stmt["kind"] == "linalg" else big * n
    if acc == "lse":
        return big
    if acc in ("var", "std"):
        return big * big
    if acc == "prod":
        n = max([v.numel() for v in tens] or [1])
        return big ** min(n, 64) if big > 1 else 1.0
    return None


def _subnormal(snap):
    import torch
    if snap[0] != "T" or not snap[5].is_floating_point() and not snap[5].is_complex():
        return False
    v = _real(snap[5]).abs()
    real = {"complex32": "float16", "complex64": "float32", "complex128": "float64"}
    tiny = torch.finfo(getattr(torch, real.get(snap[1], snap[1]))).tiny
    return bool(((v > 0) & (v < tiny)).any())


def _norm_msg(m):
    return m.replace("tpu:0", "cpu").replace("tpu", "cpu").split("\n")[0].strip()


def _describe(snap, exc=None):
    if exc:
        return "raises %s: %s" % (exc[1], exc[2][:300])
    if snap is None:
        return "(nothing)"
    if snap[0] == "T":
        v = snap[5]
        vals = v.flatten()[:12].tolist()
        return "%s shape %s stride %s offset %d values %s%s" % (
            snap[1], list(snap[2]), list(snap[3]), snap[4], vals, " ..." if v.numel() > 12 else "")
    return repr(snap[:3])[:300]


def compare(prog, res):
    """Divergences of one program: a list of failure dicts, and counters."""
    import torch
    steps = steps_of(prog)
    stmts = [dict(op="input", kind="input", tags={}, line=s[0], refs=[], post=s[2])
             for s in steps[:len(prog["inputs"])]] + prog["stmts"]
    cpu, tpu = res["cpu"], res["tpu"]
    fails, stats = [], dict(compared=0, noise=0, undefined=0)
    diverged = False
    last_cpu = {}

    def fail(cat, i, detail, cdesc, tdesc, severity="fail", cins=()):
        st = stmts[i]
        nc = st["tags"].get("noncontig") or \
            any(s[0] == "T" and s[5].numel() > 1 and not _contig(s[2], s[3]) for s in cins)
        empty = any(s[0] == "T" and s[5].numel() == 0 for s in cins)
        ints = [s[5] for s in cins if s[0] == "T" and s[5].numel() and s[1] in
                ("uint8", "int8", "int32", "int64")]
        f = dict(cat=cat, op=st["op"], kind=st["kind"], detail=detail, step=i, line=st["line"],
                 noncontig=nc, empty=empty, cpu=cdesc, tpu=tdesc, severity=severity,
                 int_max=max([int(v.abs().max()) for v in ints] or [0]))
        f["sig"] = "%s|%s|%s" % (cat, st["op"], detail)
        if cat == "value" and (any(_subnormal(x) for x in list(cins) + list(couts_i)) or
                               re.search(r"\.view\(torch\.(float|bfloat|complex)", st["line"])):
            # XLA:CPU flushes subnormals to zero: one class, whichever op met them
            f["sig"] = "value|(subnormal floats)|%s" % detail
        elif cat == "value" and detail.startswith("complex") and any(
                s[0] == "T" and s[5].is_complex() and not bool(s[5].isfinite().all())
                for s in cins):
            # C99 Annex G recovers infinities in complex products; XLA does not
            f["sig"] = "value|(complex inf/nan arithmetic)|%s" % detail
        f["known"] = next((k[0] for k in KNOWN if k[2](f)), None)
        fails.append(f)

    couts_i = []
    n = min(len(cpu["stmts"]), len(tpu["stmts"]))
    for i in range(n):
        st = stmts[i]
        refs = steps[i][1]
        (cins, couts), (tins, touts) = cpu["stmts"][i], tpu["stmts"][i]
        for r, s in zip(refs, cins):
            last_cpu[r] = s
        pairs = list(zip(tins, cins))
        meta_ok = all(_snap_diff(t, c, values=False) is None for t, c in pairs)
        exact = meta_ok and all(c[0] != "T" or _same(t[5], c[5]) for t, c in pairs)
        close = meta_ok and all(_snap_diff(t, c) is None for t, c in pairs)
        cexc = cpu["exc"] if cpu["exc"] and cpu["exc"][0] == i else None
        texc = tpu["exc"] if tpu["exc"] and tpu["exc"][0] == i else None
        if cexc or texc:
            if cexc and texc and cexc[1] == texc[1]:
                cm, tm = _norm_msg(cexc[2]), _norm_msg(texc[2])
                if close and cm not in tm:
                    fail("message", i, cexc[1], _describe(None, cexc), _describe(None, texc),
                         "message", cins)
            elif exact:
                fail("exception", i, "cpu %s, tpu %s" % (cexc[1] if cexc else "ok",
                                                          texc[1] if texc else "ok"),
                     _describe(couts[0] if couts else None, cexc),
                     _describe(touts[0] if touts else None, texc), cins=cins)
            else:
                stats["noise"] += 1
            diverged = True
            break
        dtype_ctx = next((c[1] for c in cins if c[0] == "T"), None)
        mag = None
        for p, t, c in zip(st["post"], touts, couts):
            last_cpu[p] = c
            stats["compared"] += 1
            d = _snap_diff(t, c, dtype_ctx, values=False)
            if d is None and p not in st["tags"].get("loose", ()):
                tol_dt = _compute_dtype(st, cins, c)
                d = _snap_diff(t, c, dtype_ctx, tol_dt=tol_dt)
                if d and st["tags"].get("acc"):
                    mag = _magnitude(st, cins, refs) if mag is None else mag
                    d = _snap_diff(t, c, dtype_ctx, mag, tol_dt=tol_dt)
                if d and (st["tags"].get("alias") or _undefined(st, cins, refs, c)):
                    stats["undefined"] += 1
                    diverged, d = True, None
            if d is None:
                continue
            cat = d[0]
            genuine = exact if cat == "value" or (cat == "shape" and st["tags"].get("datadep")) \
                else close
            if cat in ("value", "shape"):
                diverged = True
            if genuine:
                couts_i[:] = couts
                fail(cat, i, d[1], _describe(c), _describe(t), cins=cins)
                break
            stats["noise"] += 1
    if len(cpu["stmts"]) != len(tpu["stmts"]) and not (cpu["exc"] or tpu["exc"]):
        diverged = True
    if not diverged:  # writes through views that reached an alias later
        for name, c in cpu["final"].items():
            prev = last_cpu.get(name)
            if prev is None or prev[0] != "T" or c[0] != "T" or _same(prev[5], c[5]):
                continue
            t = tpu["final"].get(name)
            d = _snap_diff(t, c) if t else ("kind", "missing")
            if d and d[0] == "stride":  # a layout is set when a tensor is made: seen there
                d = None
            if d:
                st = dict(op="alias", kind="view", tags={}, line="(final value of %s)" % name)
                stmts.append(st)
                fail(d[0], len(stmts) - 1, d[1], _describe(c), _describe(t))
                fails[-1]["final"] = name
                break
    return fails, stats


def outcome(prog, r):
    """Failures of one run result (crash and hang included)."""
    if r[0] == "ok":
        return compare(prog, r[1])
    f = dict(cat=r[0], op="", kind="", detail=r[1] or "?", step=None, line="", noncontig=False,
             empty=False, int_max=0, cpu="", tpu=r[2], severity="fail", known=None)
    f["sig"] = "%s||%s" % (r[0], f["detail"])
    return [f], dict(compared=0, noise=0, undefined=0)
