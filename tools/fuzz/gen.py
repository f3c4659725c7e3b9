"""The program generator: inputs and random statements over the common ATen ops,
each statement validated by running it on the CPU."""
import math
import random
import warnings

MAX_NUMEL = 4096

# The data helper every program's inputs come from; reproducers embed it.
MK_SRC = '''
def mk(seed, shape, dtype, kind="normal", high=0):
    g = torch.Generator().manual_seed(seed)
    n, dt = math.prod(shape), getattr(torch, dtype)
    if kind in ("index", "nindex", "bad"):
        lo, hi = {"index": (0, high), "nindex": (-high, high), "bad": (-high - 2, high + 2)}[kind]
        v = torch.randint(lo, max(hi, lo + 1), (n,), generator=g)
    elif dt == torch.bool:
        v = torch.rand(n, generator=g) < 0.5
    elif dt.is_floating_point or dt.is_complex:
        parts = []
        for _ in range(2 if dt.is_complex else 1):
            if kind == "nice":
                p = torch.randint(-8, 9, (n,), generator=g).double() / 4
            else:
                p = torch.randn(n, generator=g, dtype=torch.float64) * 2
            if kind == "special":
                sp = torch.tensor([0.0, -0.0, inf, -inf, nan, 100.0, -100.0, 1e-3], dtype=torch.float64)
                pick = torch.randint(0, len(sp), (n,), generator=g)
                p = torch.where(torch.rand(n, generator=g) < 0.3, sp[pick], p)
            parts.append(p)
        v = torch.complex(*parts) if dt.is_complex else parts[0]
    else:
        info = torch.iinfo(dt)
        lo, hi = (info.min, info.max + 1) if kind == "special" else (max(info.min, -5), 6)
        v = torch.randint(lo, hi, (n,), generator=g, dtype=torch.int64)
    return v.to(dt).reshape(shape)
'''

DTYPES = ["bool", "uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32",
          "float64", "complex64"]
DTYPE_W = [4, 3, 3, 5, 8, 4, 4, 20, 5, 3]
FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("uint8", "int8", "int32", "int64")


def _base_ns(dev):
    import torch
    ns = {"torch": torch, "math": math, "inf": math.inf, "nan": math.nan, "dev": dev}
    exec(MK_SRC, ns)
    return ns


def input_line(inp):
    """An input: CPU data (a strided view of it, for some) moved to dev."""
    return "%s = mk(%d, %r, %r, %r, %d)%s" % (
        inp["name"], inp["seed"], tuple(inp["shape"]), inp["dtype"], inp["kind"], inp["high"],
        _to_dev(inp))


def _to_dev(inp):
    # to("cpu") of a CPU view is the view itself; copy=True makes it a fresh
    # tensor as a transfer to another device does (same layout where dense)
    return inp["view"] + ".to(dev, copy=True)" if inp.get("view") else ".to(dev)"


def steps_of(prog):
    """The program as (line, refs, post) steps: inputs first, then statements."""
    steps = [(input_line(i), [], [i["name"]]) for i in prog["inputs"]]
    steps += [(s["line"], s["refs"], s["post"]) for s in prog["stmts"]]
    return steps


# ---------------------------------------------------------------- generator


class Skip(Exception):
    """An op generator found nothing it can build from the current pool."""


class Gen:
    """One program under construction, with its values on the CPU."""

    def __init__(self, rng):
        import torch
        self.torch, self.rng = torch, rng
        self.ns = _base_ns("cpu")
        self.inputs, self.stmts, self.pool, self.n = [], [], [], 0

    def fresh(self, prefix="v"):
        self.n += 1
        return "%s%d" % (prefix, self.n)

    def t(self, name):
        return self.ns[name]

    def dtype(self, among=None):
        if among is None:
            return self.rng.choices(DTYPES, DTYPE_W)[0]
        return self.rng.choice(among)

    def shape(self, max_rank=4):
        r = self.rng.choices(range(max_rank + 1), [2, 4, 5, 4, 2][:max_rank + 1])[0]
        return [self.rng.choices([0, 1, 2, 3, 4, 5, 7], [1, 4, 6, 6, 4, 3, 1])[0] for _ in range(r)]

    def new_input(self, shape=None, dtype=None, kind=None, high=0):
        view = ""
        if shape is None:
            shape = self.shape()
            if len(shape) >= 2 and self.rng.random() < 0.2:
                view = self.rng.choice([".mT", "[::2]", "[..., 1:]", ".transpose(0, -1)"])
        dtype = dtype or self.dtype()
        if kind is None:
            kind = self.rng.choices(["normal", "nice", "special"], [5, 4, 1])[0]
        inp = dict(name=self.fresh("x"), shape=list(shape), dtype=dtype,
                   seed=self.rng.randrange(1 << 30), kind=kind, high=high)
        if view:
            inp["view"] = view
        exec(input_line(inp), self.ns)
        self.inputs.append(inp)
        self.pool.append(inp["name"])
        return inp["name"]

    def index(self, shape, high, unique=False):
        """A new int64 index input; now and then one out of range or negative."""
        kind = self.rng.choices(["index", "nindex", "bad"], [20, 3, 1])[0]
        return self.new_input(shape, self.rng.choice(["int64", "int64", "int32"]) if kind != "bad"
                              else "int64", kind, max(high, 0))

    def pick(self, pred=lambda t: True, new_p=0.35, **new_kw):
        """A pool tensor satisfying pred (recent ones preferred), or a new input."""
        names = [n for n in self.pool if pred(self.t(n))]
        if names and self.rng.random() > new_p:
            return self.rng.choice(names[-3:] if self.rng.random() < 0.6 else names)
        for _ in range(20):
            name = self.new_input(**new_kw)
            if pred(self.t(name)):
                return name
            self.drop_input(name)
        raise Skip

    def drop_input(self, name):
        self.inputs = [i for i in self.inputs if i["name"] != name]
        self.pool.remove(name)
        del self.ns[name]

    def bshape(self, shape):
        """A shape that broadcasts against shape (never larger than it, mostly)."""
        s = list(shape)[self.rng.randint(0, len(shape)):] if self.rng.random() < 0.4 else list(shape)
        s = [1 if self.rng.random() < 0.25 else d for d in s]
        if self.rng.random() < 0.08:
            s = [self.rng.choice([1, 2])] + s
        return s

    def operand(self, shape, dtype):
        """The other operand of a binary op: a Python scalar or a tensor."""
        r = self.rng.random()
        if r < 0.25:
            return self.scalar(dtype), []
        want = self.bshape(shape)
        dt = dtype if self.rng.random() < 0.6 else self.dtype()
        if r < 0.45:
            cands = [n for n in self.pool if list(self.t(n).shape) == want]
            if cands:
                n = self.rng.choice(cands)
                return n, [n]
        n = self.new_input(want, dt)
        return n, [n]

    def scalar(self, dtype=None):
        r = self.rng.random()
        if r < 0.35 or dtype in INTS and r < 0.7:
            return repr(self.rng.choice([0, 1, 2, 3, -1, -2, 5]))
        if r < 0.85:
            return repr(self.rng.choice([0.5, -1.5, 2.0, 0.25, 3.0, -0.0, 1e-3]))
        if r < 0.95:
            return self.rng.choice(["True", "False", "inf", "nan", "-inf"])
        return self.rng.choice(["(1+2j)", "1j"])

    def dim(self, t, allow_none=False):
        if t.dim() == 0:
            return self.rng.choice([0, -1]) if not allow_none else None
        d = self.rng.randrange(t.dim())
        return d - t.dim() if self.rng.random() < 0.3 else d

    def view(self, name, depth=None, overlap=False):
        """A random view expression of name (steps, transposes, selects, ...)."""
        expr = name
        for _ in range(depth or self.rng.choice([1, 1, 1, 2])):
            t = eval(expr, self.ns)
            expr = self.view1(expr, t, overlap) or expr
        return expr

    def view1(self, e, t, overlap):
        """One view op applied to expression e (value t), or None."""
        rng, nd, sh = self.rng, t.dim(), list(t.shape)
        choices = ["slice", "unsqueeze", "slice"]
        if nd >= 2:
            choices += ["t", "transpose", "permute", "diagonal"]
        if nd >= 1:
            choices += ["narrow", "select", "flatten", "movedim"]
        if 1 in sh:
            choices.append("squeeze")
        if t.is_contiguous():
            choices += ["view", "viewdtype"]
        if overlap:
            choices += ["expand", "unfold", "as_strided"]
        c = rng.choice(choices)
        if c == "unfold" and nd >= 1:
            d = self.dim(t)
            return "%s.unfold(%d, %d, %d)" % (e, d, rng.randint(0, max(sh[d], 0) + 1),
                                              rng.randint(1, 3))
        if c == "as_strided":  # any window inside the storage, overlapping or not
            n = t.untyped_storage().nbytes() // max(t.element_size(), 1)
            for _ in range(10):
                size = [rng.randint(0, 4) for _ in range(rng.randint(0, 3))]
                stride = [rng.randint(0, 4) for _ in size]
                off = rng.randint(0, max(n - 1, 0))
                if n and off + sum((a - 1) * b for a, b in zip(size, stride) if a) < n:
                    return "%s.as_strided(%r, %r, %d)" % (e, tuple(size), tuple(stride), off)
            return None
        if c == "t":
            return e + (".t()" if nd == 2 else ".mT")
        if c == "transpose":
            return "%s.transpose(%d, %d)" % (e, self.dim(t), self.dim(t))
        if c == "permute":
            p = list(range(nd))
            rng.shuffle(p)
            return "%s.permute(%s)" % (e, ", ".join(map(str, p)))
        if c == "diagonal":
            return "%s.diagonal(%d)" % (e, rng.choice([0, 0, 1, -1]))
        if c == "movedim":
            return "%s.movedim(%d, %d)" % (e, self.dim(t), self.dim(t))
        if c == "narrow":
            d = self.dim(t)
            n = sh[d]
            s = rng.randint(0, n)
            return "%s.narrow(%d, %d, %d)" % (e, d, s, rng.randint(0, n - s))
        if c == "select":
            d = self.dim(t)
            if sh[d] == 0:
                return None
            i = rng.randrange(sh[d])
            return ("%s[%d]" % (e, i)) if d == 0 and rng.random() < 0.5 else \
                "%s.select(%d, %d)" % (e, d, i - sh[d] if rng.random() < 0.3 else i)
        if c == "unsqueeze":
            return "%s.unsqueeze(%d)" % (e, rng.randint(-nd - 1, nd))
        if c == "squeeze":
            return "%s.squeeze(%d)" % (e, rng.choice([i for i, d in enumerate(sh) if d == 1]))
        if c == "flatten":
            return e + ".flatten()" if rng.random() < 0.5 else "%s.flatten(%d)" % (e, self.dim(t))
        if c == "expand":
            s = [rng.choice([2, 3]) if d == 1 and rng.random() < 0.7 else d for d in sh]
            if rng.random() < 0.3:
                s = [2] + s
            return "%s.expand(%s)" % (e, ", ".join(map(str, s)) or "()")
        if c == "view":
            n = t.numel()
            divs = [d for d in range(1, 9) if n % d == 0] or [1]
            a = rng.choice(divs)
            shape = rng.choice([[n], [a, n // a], [n // a, a], [-1, a], [a, 1, n // a]]) if n else [0, 3]
            return "%s.%s(%s)" % (e, rng.choice(["view", "reshape"]), ", ".join(map(str, shape)))
        if c == "viewdtype":
            same = {"float32": "int32", "int32": "float32", "float16": "bfloat16",
                    "bfloat16": "float16", "float64": "int64", "int64": "float64",
                    "int8": "uint8", "uint8": "int8"}
            other = same.get(str(t.dtype)[6:])
            return "%s.view(torch.%s)" % (e, other) if other else None
        # slice: one entry per dim, with steps, negative starts, ints, Ellipsis
        parts = []
        for d in sh:
            r = rng.random()
            if r < 0.35:
                parts.append(":")
            elif r < 0.55:
                parts.append("::%d" % rng.randint(1, 3))
            elif r < 0.75:
                a = rng.randint(0, max(d, 0))
                parts.append("%d:%s" % (a, rng.choice(["", str(rng.randint(a, d + 1))])))
            elif r < 0.87:
                parts.append("%d::%d" % (rng.randint(-d - 1, d), rng.randint(1, 3)))
            elif d > 0:
                parts.append(str(rng.randrange(-d, d)))
            else:
                parts.append(":")
        if parts and rng.random() < 0.3:
            parts = ["..."] + parts[rng.randint(1, len(parts)):]
        if rng.random() < 0.15:
            parts.insert(rng.randint(0, len(parts)), "None")
        return "%s[%s]" % (e, ", ".join(parts) or "...")


def _stmt(line, refs, post, op, kind, **tags):
    return dict(line=line, refs=list(dict.fromkeys(refs)), post=list(post), op=op, kind=kind,
                tags=tags)


UNARY = ("neg abs exp log sqrt rsqrt sin cos tanh sigmoid relu floor ceil round trunc sign "
         "reciprocal square log1p expm1 erf bitwise_not logical_not isnan isinf isfinite frac sgn "
         "exp2 log2 atan asin sinh signbit nan_to_num positive conj angle").split()
UNARY_INPLACE = "neg abs exp sqrt sin tanh sigmoid relu floor round trunc reciprocal".split()
BINARY = ("add sub mul div floor_divide remainder fmod pow maximum minimum fmax fmin atan2 "
          "hypot copysign bitwise_and bitwise_or bitwise_xor logical_and logical_or "
          "eq ne lt le gt ge").split()
OPERATORS = ["+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<", ">=", "==", "!="]


def _maybe_view(g, x):
    """x, or now and then an inline view of it; and whether that is non-contiguous."""
    e = g.view(x) if g.rng.random() < 0.25 else x
    t = eval(e, g.ns)
    return e, t, t.numel() > 1 and not t.is_contiguous()


def op_unary(g):
    base = g.pick()
    x, _, nc = _maybe_view(g, base)
    op = g.rng.choice(UNARY)
    out = g.fresh()
    form = "torch.%s(%s)" % (op, x) if g.rng.random() < 0.5 else "%s.%s()" % (x, op)
    if op == "round" and g.rng.random() < 0.3:
        form = "torch.round(%s, decimals=%d)" % (x, g.rng.choice([1, 2, -1]))
    return _stmt("%s = %s" % (out, form), [base], [out], op, "pointwise", noncontig=nc)


def op_binary(g):
    base = g.pick()
    x, t, nc = _maybe_view(g, base)
    other, refs = g.operand(list(t.shape), str(t.dtype)[6:])
    refs = [base] + refs
    out = g.fresh()
    r = g.rng.random()
    if r < 0.3:
        o = g.rng.choice(OPERATORS)
        a, b = (x, other) if g.rng.random() < 0.8 else (other, x)
        if a == other and len(refs) == 1 and g.rng.random() < 0.5:
            a, b = x, other
        return _stmt("%s = %s %s %s" % (out, a, o, b), refs, [out], "op" + o, "pointwise",
                     noncontig=nc)
    op = g.rng.choice(BINARY)
    kw = ""
    if op in ("add", "sub") and g.rng.random() < 0.3:
        kw = ", alpha=%s" % g.rng.choice(["2", "-1", "0.5"])
    if op == "div" and g.rng.random() < 0.5:
        kw = ", rounding_mode=%r" % g.rng.choice(["trunc", "floor"])
    if r < 0.65 or len(refs) == 1:
        line = "%s = torch.%s(%s, %s%s)" % (out, op, x, other, kw)
    else:
        line = "%s = %s.%s(%s%s)" % (out, x, op, other, kw)
    return _stmt(line, refs, [out], op, "pointwise", noncontig=nc)


def op_ternary(g):
    x = g.pick()
    t = g.t(x)
    out = g.fresh()
    c = g.rng.choice(["where", "where", "clamp", "clamp", "lerp", "addcmul", "masked_fill"])
    if c == "where":
        cond = g.pick(lambda u: u.dtype == g.torch.bool, new_p=0.6, shape=g.bshape(t.shape),
                      dtype="bool")
        other, refs = g.operand(list(t.shape), str(t.dtype)[6:])
        a, b = (x, other) if g.rng.random() < 0.5 else (other, x)
        return _stmt("%s = torch.where(%s, %s, %s)" % (out, cond, a, b), [cond, x] + refs, [out],
                     "where", "pointwise")
    if c == "clamp":
        if g.rng.random() < 0.6:
            lo, hi = g.scalar(str(t.dtype)[6:]), g.scalar(str(t.dtype)[6:])
            args, refs = [("min", lo), ("max", hi)][: g.rng.randint(1, 2)], []
        else:
            lo, r1 = g.operand(list(t.shape), str(t.dtype)[6:])
            hi, r2 = g.operand(list(t.shape), str(t.dtype)[6:])
            args, refs = [("min", lo), ("max", hi)], r1 + r2
        if g.rng.random() < 0.3:
            args = args[1:]
        kw = ", ".join("%s=%s" % a for a in args)
        return _stmt("%s = torch.clamp(%s, %s)" % (out, x, kw), [x] + refs, [out], "clamp",
                     "pointwise")
    if c == "masked_fill":
        m = g.pick(lambda u: u.dtype == g.torch.bool, new_p=0.7, shape=g.bshape(t.shape),
                   dtype="bool")
        if g.rng.random() < 0.7:
            v, refs = g.scalar(str(t.dtype)[6:]), []
        else:
            v = g.new_input([], g.dtype())
            refs = [v]
        return _stmt("%s = %s.masked_fill(%s, %s)" % (out, x, m, v), [x, m] + refs, [out],
                     "masked_fill", "pointwise")
    a, r1 = g.operand(list(t.shape), str(t.dtype)[6:])
    b, r2 = g.operand(list(t.shape), str(t.dtype)[6:])
    if c == "lerp":
        return _stmt("%s = torch.lerp(%s, %s, %s)" % (out, x, a, b), [x] + r1 + r2, [out],
                     "lerp", "pointwise")
    return _stmt("%s = torch.addcmul(%s, %s, %s, value=%s)" % (out, x, a, b, g.rng.choice("12")),
                 [x] + r1 + r2, [out], "addcmul", "pointwise")


REDUCE = "sum mean amax amin argmax argmin var std prod any all max min logsumexp nansum".split()


def op_reduce(g):
    base = g.pick()
    x, t, nc = _maybe_view(g, base)
    op = g.rng.choice(REDUCE)
    out = g.fresh()
    nd = t.dim()
    kw = []
    acc = {"sum": "sum", "mean": "sum", "nansum": "sum", "logsumexp": "lse", "var": "var",
           "std": "std", "prod": "prod"}.get(op)
    single = op in ("argmax", "argmin", "prod", "max", "min", "logsumexp", "any", "all")
    r = g.rng.random()
    dims = None
    if r < 0.25 and op not in ("max", "min", "logsumexp"):
        dims = None
    elif single or r < 0.6:
        dims = g.dim(t)
    else:
        k = g.rng.randint(0, nd)
        dims = tuple(g.rng.sample(range(nd), k)) if nd else ()
        if op in ("any", "all", "prod"):
            dims = g.dim(t)
    if dims is not None:
        kw.append(repr(dims))
        if g.rng.random() < 0.5:
            kw.append("keepdim=True")
    if op in ("var", "std") and g.rng.random() < 0.5:
        kw.append("correction=%d" % g.rng.choice([0, 1, 2]))
    if op in ("sum", "prod", "mean", "nansum") and g.rng.random() < 0.2:
        kw.append("dtype=torch.%s" % g.rng.choice(["float64", "int64", "float32"]))
    outs = [out]
    line = "%s = torch.%s(%s)" % (out, op, ", ".join([x] + kw))
    if op in ("max", "min") and dims is not None:
        idx = g.fresh()
        outs = [out, idx]
        line = "%s, %s = torch.%s(%s)" % (out, idx, op, ", ".join([x] + kw))
    return _stmt(line, [base], outs, op, "reduction", acc=acc, noncontig=nc)


def op_matmul(g):
    rng = g.rng
    dt = rng.choices(["float32", "float64", "float16", "bfloat16", "int64", "complex64", "bool"],
                     [10, 2, 2, 2, 1, 1, 1])[0]
    op = rng.choice(["matmul", "matmul", "mm", "bmm", "mv", "dot", "@"])
    k = rng.choice([0, 1, 2, 3, 5, 8])
    m, n, b = rng.choice([1, 2, 3, 4]), rng.choice([0, 1, 2, 3]), rng.choice([1, 2, 3])
    sa, sb = {"mm": ([m, k], [k, n]), "bmm": ([b, m, k], [b, k, n]), "mv": ([m, k], [k]),
              "dot": ([k], [k])}.get(op, (None, None))
    if sa is None:
        sa = rng.choice([[k], [m, k], [b, m, k], [2, b, m, k]])
        sb = rng.choice([[k], [k, n], [b, k, n], [1, k, n]])
    dtb = dt if rng.random() < 0.9 else g.dtype()

    def operand(shape, dtype):
        c = [n for n in g.pool if list(g.t(n).shape) == shape and str(g.t(n).dtype)[6:] == dtype]
        if c and rng.random() < 0.5:
            return rng.choice(c)
        if rng.random() < 0.3 and len(shape) >= 2:
            name = g.new_input(shape[:-2] + [shape[-1], shape[-2]], dtype)
            return name + ".mT"
        return g.new_input(shape, dtype)

    a, b_ = operand(sa, dt), operand(sb, dtb)
    out = g.fresh()
    refs = [a.split(".")[0], b_.split(".")[0]]
    line = "%s = %s @ %s" % (out, a, b_) if op == "@" else "%s = torch.%s(%s, %s)" % (out, op, a, b_)
    return _stmt(line, refs, [out], op, "linalg", acc="sum")


def op_softmax(g):
    x = g.pick()
    t = g.t(x)
    op = g.rng.choice(["softmax", "log_softmax"])
    out = g.fresh()
    kw = ", dtype=torch.float64" if g.rng.random() < 0.15 else ""
    return _stmt("%s = torch.%s(%s, %d%s)" % (out, op, x, g.dim(t), kw), [x], [out], op,
                 "softmax", acc="lse" if op == "log_softmax" else None)


def op_view(g):
    x = g.pick()
    out = g.fresh()
    e = g.view(x, overlap=g.rng.random() < 0.2)
    if e == x:
        raise Skip
    return _stmt("%s = %s" % (out, e), [x], [out], "view", "view")


def op_shape(g):
    """Shape ops that copy: cat, stack, flip, roll, repeat, contiguous, clone."""
    rng = g.rng
    x = g.pick()
    t = g.t(x)
    out = g.fresh()
    c = rng.choice(["cat", "cat", "stack", "flip", "roll", "repeat", "contiguous", "clone",
                    "reshape", "split", "tril"])
    if c == "split":
        d = g.dim(t)
        call = rng.choice(["torch.chunk(%s, %d, %d)" % (x, rng.randint(1, 3), d),
                           "torch.split(%s, %d, %d)" % (x, rng.randint(1, 3), d),
                           "torch.unbind(%s, %d)" % (x, d)])
        return _stmt("%s = %s" % (out, call), [x], [out], c, "view")
    if c == "tril":
        if t.dim() < 2:
            raise Skip
        f = rng.choice(["tril", "triu"])
        return _stmt("%s = torch.%s(%s, %d)" % (out, f, x, rng.randint(-2, 2)), [x], [out], f, "shape")
    if c in ("cat", "stack"):
        d = g.dim(t) if c == "cat" else rng.randint(-t.dim() - 1, t.dim())
        names = [x]
        for _ in range(rng.randint(0, 2)):
            s = list(t.shape)
            if c == "cat" and s and rng.random() < 0.6:
                s[d] = rng.choice([0, 1, 2, 3])
            if rng.random() < 0.1:
                s = [0]
            cands = [n for n in g.pool if list(g.t(n).shape) == s and n not in names]
            dt = str(t.dtype)[6:] if rng.random() < 0.7 else g.dtype()
            names.append(rng.choice(cands) if cands and rng.random() < 0.5 else g.new_input(s, dt))
        line = "%s = torch.%s([%s], %d)" % (out, c, ", ".join(names), d)
        return _stmt(line, names, [out], c, "shape")
    if c == "flip":
        dims = rng.sample(range(t.dim()), rng.randint(0, t.dim())) if t.dim() else []
        return _stmt("%s = torch.flip(%s, %r)" % (out, x, tuple(dims)), [x], [out], c, "shape")
    if c == "roll":
        if t.dim() and rng.random() < 0.7:
            d = g.dim(t)
            return _stmt("%s = torch.roll(%s, %d, %d)" % (out, x, rng.randint(-3, 4), d), [x],
                         [out], c, "shape")
        return _stmt("%s = torch.roll(%s, %d)" % (out, x, rng.randint(-3, 4)), [x], [out], c,
                     "shape")
    if c == "repeat":
        reps = [rng.choice([1, 2, 3]) for _ in range(t.dim() + rng.randint(0, 1))]
        return _stmt("%s = %s.repeat(%s)" % (out, x, ", ".join(map(str, reps)) or "()"), [x],
                     [out], c, "shape")
    if c == "reshape":
        n = t.numel()
        shape = rng.choice([[n], [-1], [1, n], [n, 1]])
        return _stmt("%s = %s.reshape(%s)" % (out, x, ", ".join(map(str, shape))), [x], [out],
                     c, "shape")
    return _stmt("%s = %s.%s()" % (out, x, c), [x], [out], c, "pointwise")


def op_index(g):
    rng = g.rng
    x = g.pick(lambda u: u.dim() >= 1, shape=[rng.randint(1, 5)] + g.shape(2))
    t = g.t(x)
    out = g.fresh()
    d = g.dim(t)
    n = t.shape[d]
    c = rng.choice(["index_select", "gather", "scatter", "scatter_add", "getitem", "getitem",
                    "mask", "index_add", "index_put", "nonzero", "scatter_reduce"])
    if c == "index_select":
        i = g.index([rng.randint(0, 5)], n)
        return _stmt("%s = torch.index_select(%s, %d, %s)" % (out, x, d, i), [x, i], [out], c,
                     "index")
    if c in ("gather", "scatter", "scatter_add", "scatter_reduce"):
        ishape = [rng.randint(0, s) for s in t.shape]
        ishape[d] = rng.randint(0, 4)
        i = g.index(ishape, n)
        if c == "gather":
            return _stmt("%s = torch.gather(%s, %d, %s)" % (out, x, d, i), [x, i], [out], c,
                         "index")
        if c == "scatter" and rng.random() < 0.4:
            src, refs = g.scalar(str(t.dtype)[6:]), []
        else:
            src = g.new_input(ishape if rng.random() < 0.7 else [s + 1 for s in ishape],
                              str(t.dtype)[6:] if rng.random() < 0.9 else g.dtype())
            refs = [src]
        dups = dict(ref=i, dim=d, n=n) if c == "scatter" else None
        if c == "scatter_reduce":
            red = rng.choice(["sum", "prod", "amax", "amin", "mean"])
            line = "%s = torch.scatter_reduce(%s, %d, %s, %s, %r, include_self=%s)" % (
                out, x, d, i, src, red, rng.choice(["True", "False"]))
            return _stmt(line, [x, i] + refs, [out], c, "index", acc="sum")
        return _stmt("%s = torch.%s(%s, %d, %s, %s)" % (out, c, x, d, i, src), [x, i] + refs,
                     [out], c, "index", dups=dups, acc="sum" if c == "scatter_add" else None)
    if c == "getitem":
        i = g.index(g.shape(2), t.shape[0])
        if t.dim() >= 2 and rng.random() < 0.4:
            j = g.index(g.bshape(list(g.t(i).shape)), t.shape[1])
            return _stmt("%s = %s[%s, %s]" % (out, x, i, j), [x, i, j], [out], c, "index")
        if t.dim() >= 2 and rng.random() < 0.3:
            i2 = g.index([rng.randint(0, 4)], t.shape[1])
            g.drop_input(i)
            return _stmt("%s = %s[:, %s]" % (out, x, i2), [x, i2], [out], c, "index")
        return _stmt("%s = %s[%s]" % (out, x, i), [x, i], [out], c, "index")
    if c == "mask":
        k = rng.randint(1, t.dim())
        m = g.new_input(list(t.shape[:k]), "bool")
        return _stmt("%s = %s[%s]" % (out, x, m), [x, m], [out], c, "index", datadep=True)
    if c == "nonzero":
        return _stmt("%s = torch.nonzero(%s)" % (out, x), [x], [out], c, "index", datadep=True)
    if c == "index_add":
        i = g.index([rng.randint(0, 4)], n)
        s = list(t.shape)
        s[d] = g.t(i).shape[0]
        src = g.new_input(s, str(t.dtype)[6:] if rng.random() < 0.9 else g.dtype())
        alpha = ", alpha=2" if rng.random() < 0.3 else ""
        return _stmt("%s = torch.index_add(%s, %d, %s, %s%s)" % (out, x, d, i, src, alpha),
                     [x, i, src], [out], c, "index", acc="sum")
    # index_put: x.index_put((i,), v, accumulate)
    i = g.index([rng.randint(0, 4)], t.shape[0])
    v = g.new_input(rng.choice([[], [g.t(i).shape[0]] + list(t.shape[1:]), list(t.shape[1:])]),
                    str(t.dtype)[6:])
    acc = rng.choice(["True", "False"])
    return _stmt("%s = %s.index_put((%s,), %s, accumulate=%s)" % (out, x, i, v, acc), [x, i, v],
                 [out], c, "index", dups=None if acc == "True" else dict(ref=i, dim=0, n=t.shape[0]),
                 acc="sum" if acc == "True" else None)


def op_scan(g):
    rng = g.rng
    x = g.pick()
    t = g.t(x)
    out = g.fresh()
    d = g.dim(t)
    c = rng.choice(["cumsum", "cumsum", "cumprod", "sort", "argsort", "topk"])
    if c in ("cumsum", "cumprod"):
        kw = ", dtype=torch.%s" % rng.choice(["float64", "int64"]) if rng.random() < 0.2 else ""
        return _stmt("%s = torch.%s(%s, %d%s)" % (out, c, x, d, kw), [x], [out], c, "scan",
                     acc="sum" if c == "cumsum" else "prod")
    stable = rng.random() < 0.6
    desc = rng.random() < 0.4
    if c in ("sort", "argsort"):
        idx = g.fresh()
        kw = "stable=True, " if stable else ""
        if c == "argsort":
            return _stmt("%s = torch.argsort(%s, dim=%d, %sdescending=%s)" % (out, x, d, kw, desc),
                         [x], [out], c, "sort", loose=[] if stable else [out])
        return _stmt("%s, %s = torch.sort(%s, dim=%d, %sdescending=%s)" % (out, idx, x, d, kw, desc),
                     [x], [out, idx], c, "sort", loose=[] if stable else [idx])
    n = t.shape[d] if t.dim() else 1
    k = rng.randint(0, n) if rng.random() < 0.95 else n + 1
    idx = g.fresh()
    return _stmt("%s, %s = torch.topk(%s, %d, dim=%d, largest=%s)" % (
        out, idx, x, k, d, not desc), [x], [out, idx], c, "sort", loose=[idx])


def op_convert(g):
    x = g.pick()
    out = g.fresh()
    dt = g.dtype()
    src = str(g.t(x).dtype)[6:]
    r = g.rng.random()
    if r < 0.7:
        line = "%s = %s.to(torch.%s)" % (out, x, dt)
    elif r < 0.85:
        m = {"float32": "float", "float64": "double", "float16": "half", "int64": "long",
             "int32": "int", "bool": "bool", "bfloat16": "bfloat16", "uint8": "byte", "int8": "char"}
        dt = g.rng.choice(list(m))
        line = "%s = %s.%s()" % (out, x, m[dt])
    else:
        y = g.pick()
        dt = str(g.t(y).dtype)[6:]
        return _stmt("%s = %s.type_as(%s)" % (out, x, y), [x, y], [out], "type_as", "pointwise",
                     fcast=src in FLOATS + ("complex64",) and dt not in FLOATS + ("complex64",))
    return _stmt(line, [x], [out], "to", "pointwise",
                 fcast=src in FLOATS + ("complex64",) and dt not in FLOATS + ("complex64",))


def op_inplace(g):
    """An in-place op on a pool tensor or on a view of one."""
    rng = g.rng
    x = g.pick()
    target = g.view(x, overlap=rng.random() < 0.1) if rng.random() < 0.6 else x
    tt = eval(target, g.ns)
    tdt = str(tt.dtype)[6:]
    out = g.fresh()
    # a target whose elements share memory (unfold, as_strided) and which CPU's
    # check calls too hard to judge: its in-place result depends on the order
    overlap = g.torch._debug_has_internal_overlap(tt) == 2
    c = rng.choice(["binary", "binary", "unary", "copy", "fill", "masked_fill", "clamp",
                    "setitem", "setitem", "index_put", "scatter", "index_add", "zero"])
    refs, tags, op = [x], {"alias": overlap}, c
    if c == "binary":
        op = rng.choice(["add_", "sub_", "mul_", "div_", "pow_", "remainder_", "maximum",
                         "bitwise_and_", "lerp_"])
        other, r2 = g.operand(list(tt.shape), tdt)
        if rng.random() < 0.15:  # the other operand overlaps the written one
            form = rng.choice(["%s.flip(0)", "%s.clone()", "%s", "%s.mT"])
            other, r2 = form % target, []
            tags["alias"] = overlap or form == "%s.mT"
            if rng.random() < 0.4 and tt.dim() and tt.shape[0] >= 2:
                target, other = "%s[1:]" % target, "%s[:-1]" % target
                tags["alias"] = True
        if op == "maximum":
            op = "copy_"
            other = "torch.maximum(%s, %s)" % (target, other)
        if op == "lerp_":
            other += ", 0.5"
        body = "%s.%s(%s)" % (target, op, other)
        refs += r2
    elif c == "unary":
        op = rng.choice(UNARY_INPLACE) + "_"
        body = "%s.%s()" % (target, op)
    elif c == "copy":
        op = "copy_"
        src = g.pick(new_p=0.6, shape=g.bshape(list(tt.shape)), dtype=tdt if rng.random() < 0.6
                     else g.dtype())
        body = "%s.copy_(%s)" % (target, src)
        refs.append(src)
        tags["fcast"] = str(g.t(src).dtype)[6:] in FLOATS + ("complex64",) and tdt not in \
            FLOATS + ("complex64",)
    elif c in ("fill", "zero"):
        op = c + "_"
        body = "%s.%s(%s)" % (target, op, g.scalar(tdt) if c == "fill" else "")
    elif c == "masked_fill":
        op = "masked_fill_"
        m = g.new_input(g.bshape(list(tt.shape)), "bool")
        body = "%s.masked_fill_(%s, %s)" % (target, m, g.scalar(tdt))
        refs.append(m)
    elif c == "clamp":
        op = "clamp_"
        body = "%s.clamp_(%s, %s)" % (target, g.scalar(tdt), g.scalar(tdt))
    elif c == "setitem":
        sub = g.view1("_T_", tt, False) or "_T_[...]"
        key = sub[len("_T_"):]
        if not key.startswith("["):
            key = "[...]"
        tgt = eval("_T_" + key, dict(g.ns, _T_=tt))
        r = rng.random()
        if r < 0.5:
            val, r2 = g.scalar(tdt), []
        else:
            val = g.new_input(g.bshape(list(tgt.shape)), tdt if rng.random() < 0.7 else g.dtype())
            r2 = [val]
        line = "%s%s = %s" % (target, key, val)
        return _stmt(line, refs + r2, [x], "setitem", "inplace")
    elif c == "index_put":
        if tt.dim() == 0:
            raise Skip
        i = g.index([rng.randint(0, 4)], tt.shape[0])
        acc = rng.random() < 0.5
        v = g.new_input(rng.choice([[], list(tt.shape[1:])]), tdt)
        body = "%s.index_put_((%s,), %s, accumulate=%s)" % (target, i, v, acc)
        refs += [i, v]
        op = "index_put_"
        if not acc:
            tags["dups"] = dict(ref=i, dim=0, n=tt.shape[0])
        else:
            tags["acc"] = "sum"
    elif c == "index_add":
        if tt.dim() == 0:
            raise Skip
        d = g.dim(tt)
        i = g.index([rng.randint(0, 4)], tt.shape[d])
        s = list(tt.shape)
        s[d] = g.t(i).shape[0]
        src = g.new_input(s, tdt)
        body = "%s.index_add_(%d, %s, %s)" % (target, d, i, src)
        refs += [i, src]
        op = "index_add_"
        tags["acc"] = "sum"
    else:  # scatter_
        if tt.dim() == 0:
            raise Skip
        d = g.dim(tt)
        ishape = [rng.randint(0, s) for s in tt.shape]
        ishape[d] = rng.randint(0, 3)
        i = g.index(ishape, tt.shape[d])
        body = "%s.scatter_(%d, %s, %s)" % (target, d, i, g.scalar(tdt))
        refs.append(i)
        op = "scatter_"
        tags["dups"] = dict(ref=i, dim=d, n=tt.shape[d])
    return _stmt("%s = %s" % (out, body), refs, [out, x], op, "inplace", **tags)


def op_item(g):
    x = g.pick(lambda u: u.numel() == 1, new_p=0.5, shape=[])
    out = g.fresh("s")
    return _stmt("%s = %s.item()" % (out, x), [x], [out], "item", "item")


def op_out(g):
    """An op writing into out=: an existing tensor, a view of one, or a fresh empty."""
    rng = g.rng
    x = g.pick()
    t = g.t(x)
    out = g.fresh()
    r = rng.random()
    if r < 0.4:
        dest = g.pick(new_p=0.5)
        refs = [dest]
        if rng.random() < 0.4:
            dest = g.view(dest)
    else:
        shape = list(t.shape) if r < 0.8 else g.shape()
        dest = "torch.empty(%r, dtype=torch.%s, device=dev)" % (
            tuple(shape), str(t.dtype)[6:] if rng.random() < 0.8 else g.dtype())
        refs = []
    c = rng.choice(["add", "mul", "exp", "sum", "amax", "cumsum", "where", "clamp", "index_select",
                    "cat", "matmul", "neg", "eq"])
    if c in ("add", "mul", "eq"):
        other, r2 = g.operand(list(t.shape), str(t.dtype)[6:])
        call, refs2 = "torch.%s(%s, %s" % (c, x, other), r2
    elif c in ("exp", "neg"):
        call, refs2 = "torch.%s(%s" % (c, x), []
    elif c in ("sum", "amax", "cumsum"):
        call, refs2 = "torch.%s(%s, %d" % (c, x, g.dim(t)), []
    elif c == "where":
        m = g.new_input(g.bshape(list(t.shape)), "bool")
        call, refs2 = "torch.where(%s, %s, %s" % (m, x, g.scalar()), [m]
    elif c == "clamp":
        call, refs2 = "torch.clamp(%s, %s" % (x, g.scalar()), []
    elif c == "index_select":
        if t.dim() == 0:
            raise Skip
        d = g.dim(t)
        i = g.index([rng.randint(0, 4)], t.shape[d])
        call, refs2 = "torch.index_select(%s, %d, %s" % (x, d, i), [i]
    elif c == "cat":
        call, refs2 = "torch.cat([%s, %s]" % (x, x), []
    else:
        y = g.pick(lambda u: u.dim() >= 1 and t.dim() >= 1 and u.shape[0] == t.shape[-1]
                   and u.dtype == t.dtype, new_p=0.5,
                   shape=[t.shape[-1] if t.dim() else 1, rng.randint(1, 3)], dtype=str(t.dtype)[6:])
        call, refs2 = "torch.matmul(%s, %s" % (x, y), [y]
    if refs and c in ("sum", "amax", "cumsum", "index_select", "matmul"):
        # out= sharing memory with an input is undefined for these (CPU checks no overlap)
        ptr = lambda n: g.t(n).untyped_storage().data_ptr()  # noqa: E731
        if any(ptr(refs[0]) == ptr(n) for n in [x] + refs2):
            raise Skip
    post = [out] + [r for r in refs]
    return _stmt("%s = %s, out=%s)" % (out, call, dest), [x] + refs + refs2, post, c + "(out=)",
                 "out", acc="sum" if c in ("sum", "cumsum", "matmul") else None)


def op_index_more(g):
    """index_fill_, index_copy_, masked_scatter_, masked_select, take on a pool tensor."""
    rng = g.rng
    x = g.pick(lambda u: u.dim() >= 1, shape=[rng.randint(1, 5)] + g.shape(2))
    t = g.t(x)
    out = g.fresh()
    dt = str(t.dtype)[6:]
    d = g.dim(t)
    c = rng.choice(["index_fill_", "index_copy_", "masked_scatter_", "masked_select", "take"])
    if c == "index_fill_":
        i = g.index([rng.randint(0, 4)], t.shape[d])
        return _stmt("%s = %s.index_fill_(%d, %s, %s)" % (out, x, d, i, g.scalar(dt)), [x, i],
                     [out, x], c, "inplace")
    if c == "index_copy_":
        i = g.index([rng.randint(0, 4)], t.shape[d])
        s = list(t.shape)
        s[d] = g.t(i).shape[0]
        src = g.new_input(s, dt)
        return _stmt("%s = %s.index_copy_(%d, %s, %s)" % (out, x, d, i, src), [x, i, src],
                     [out, x], c, "inplace", dups=dict(ref=i, dim=0, n=t.shape[d]))
    m = g.new_input(g.bshape(list(t.shape)), "bool")
    if c == "masked_scatter_":
        src = g.new_input([t.numel() + rng.randint(0, 2)], dt)
        return _stmt("%s = %s.masked_scatter_(%s, %s)" % (out, x, m, src), [x, m, src],
                     [out, x], c, "inplace")
    if c == "masked_select":
        return _stmt("%s = torch.masked_select(%s, %s)" % (out, x, m), [x, m], [out], c, "index",
                     datadep=True)
    g.drop_input(m)
    i = g.index(g.shape(2), t.numel())
    return _stmt("%s = torch.take(%s, %s)" % (out, x, i), [x, i], [out], c, "index")


OPS = [(op_unary, 12), (op_binary, 16), (op_ternary, 7), (op_reduce, 10), (op_matmul, 4),
       (op_softmax, 3), (op_view, 10), (op_shape, 6), (op_index, 9), (op_scan, 7),
       (op_convert, 5), (op_inplace, 14), (op_item, 1), (op_out, 4), (op_index_more, 3)]


def generate(seed, index, long=False):
    """Program `index` of run `seed`: a pure function of the two."""
    import torch
    rng = random.Random("%d:%d" % (seed, index))
    g = Gen(rng)
    want = rng.randint(1, 8 if long else 6)
    fns, ws = zip(*OPS)
    tries = 0
    while len(g.stmts) < want and tries < 80:
        tries += 1
        mark = (list(g.inputs), list(g.pool), g.n)
        try:
            st = rng.choices(fns, ws)[0](g)
            ok = None
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    exec(st["line"], g.ns)
                ok = True
            except Exception:
                ok = False
            if ok:
                for o in st["post"]:
                    v = g.ns.get(o)
                    if isinstance(v, torch.Tensor) and v.numel() > MAX_NUMEL:
                        raise Skip
            elif rng.random() > 0.2 or not g.stmts and rng.random() > 0.05:
                raise Skip
        except (Skip, IndexError, ValueError, RuntimeError, TypeError, ZeroDivisionError):
            for name in set(g.pool) - set(mark[1]):
                g.ns.pop(name, None)
            g.inputs, g.pool, g.n = mark
            continue
        if st["kind"] in ("inplace", "out") or "dtype=torch.int" in st["line"]:
            st["tags"]["fcast"] = True  # may cast floats into an integer tensor
        if st["kind"] in ("inplace", "out") and _reads_written(g, st):
            # a write that CPU's overlap check cannot see (strides it calls too
            # hard) reads what it has already written: the result is undefined
            st["tags"]["alias"] = True
        g.stmts.append(st)
        if not ok:
            break
        for o in st["post"]:  # loose results (tied indices) feed nothing
            if isinstance(g.ns.get(o), torch.Tensor) and o not in g.pool and \
                    o not in st["tags"].get("loose", ()):
                g.pool.append(o)
    prog = dict(id="%d:%d" % (seed, index), inputs=g.inputs, stmts=g.stmts)
    return prune(prog)


def _reads_written(g, st):
    import torch
    written = [p for p in st["post"] if p in st["refs"]]
    ptr = lambda n: g.ns[n].untyped_storage().data_ptr()  # noqa: E731
    tensors = [n for n in st["refs"] if isinstance(g.ns.get(n), torch.Tensor)]
    return any(ptr(r) == ptr(w) for w in written for r in tensors if r not in written)


def prune(prog):
    """prog without the inputs no statement reads."""
    used = set()
    for s in prog["stmts"]:
        used.update(s["refs"])
        used.update(s["tags"].get("dups") and [s["tags"]["dups"]["ref"]] or [])
    return dict(prog, inputs=[i for i in prog["inputs"] if i["name"] in used])
