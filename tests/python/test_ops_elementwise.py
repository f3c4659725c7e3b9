"""Elementwise ops beyond add/mul against PyTorch's CPU kernels: unary math
(float-promoting and same-dtype), sub/div/maximum/minimum/pow, comparisons,
where, in-place ops on tensors and on views, out= (right shape, resized, a
view); each must run on the device (no CPU fallback recorded for it). Also
autograd through them and the executable cache."""
import re
import warnings

import pytest
import torch

import torch_pjrt
from conftest import dtype_id

pytestmark = pytest.mark.usefixtures("no_leaks")

NAN, INF = float("nan"), float("inf")

# Explicit tolerances per dtype; integers and bool are exact.
TOL = {
    torch.float16: dict(rtol=1e-3, atol=1e-3),
    torch.bfloat16: dict(rtol=8e-3, atol=8e-3),
    torch.float32: dict(rtol=1.3e-6, atol=1e-5),
    torch.float64: dict(rtol=1e-12, atol=1e-12),
    torch.complex64: dict(rtol=1.3e-6, atol=1e-5),
    torch.complex128: dict(rtol=1e-12, atol=1e-12),
}
# Transcendental functions: half types get two ulps.
MATH_TOL = dict(TOL)
MATH_TOL[torch.float16] = dict(rtol=2e-3, atol=2e-3)
MATH_TOL[torch.bfloat16] = dict(rtol=1.6e-2, atol=1.6e-2)


def check(actual, expected, tol=TOL):
    """actual (tpu) matches expected (cpu): device type, dtype, shape, values, NaNs."""
    assert isinstance(actual, torch.Tensor), type(actual)
    assert actual.device.type == "tpu", actual.device
    assert actual.dtype == expected.dtype, f"{actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{tuple(actual.shape)} != {tuple(expected.shape)}"
    t = tol.get(expected.dtype, dict(rtol=0, atol=0))
    torch.testing.assert_close(actual.cpu(), expected, equal_nan=True, **t)


def cpu_fallbacks_of(names):
    """The recorded fallbacks whose op (before the overload) is one of names
    or its in-place variant: aten::exp matches aten::exp.out, aten::exp_,
    not aten::expm1."""
    want = set(names) | {n + "_" for n in names}
    return {k: v for k, v in torch_pjrt.fallbacks().items() if k.split(".")[0] in want}


def to_tpu(x, device="tpu"):
    return x.to(device) if isinstance(x, torch.Tensor) else x


def same(names, f, *args, tol=TOL, device="tpu"):
    """f on the tpu copies of args matches f on the CPU args, and none of the
    aten ops in names ran on the CPU."""
    if isinstance(names, str):
        names = (names,)
    targs = [to_tpu(a, device) for a in args]
    # f may write into its arguments (in-place, out=): give each side its own copy.
    expected = f(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
    torch_pjrt.reset_fallbacks()
    actual = f(*targs)
    fb = cpu_fallbacks_of(names)
    check(actual, expected, tol)
    assert not fb, f"ran on the CPU (fallback), not natively: {fb}"
    return actual


def raises_like_cpu(f, *args, match=None):
    """f raises on CPU; on tpu it raises the same exception type (and the
    message matches `match`, or CPU's first line when match is None)."""
    with pytest.raises(Exception) as cpu_err:
        f(*args)
    targs = [to_tpu(a) for a in args]
    with pytest.raises(type(cpu_err.value)) as tpu_err:
        r = f(*targs)
        if isinstance(r, torch.Tensor):
            r.cpu()
    msg = str(tpu_err.value)
    if match is None:
        match = re.escape(str(cpu_err.value).splitlines()[0])
    assert re.search(match, msg), f"tpu message {msg!r} does not match {match!r} (CPU: {cpu_err.value})"


# ---- data ----------------------------------------------------------------------

def _gen(seed):
    return torch.Generator().manual_seed(seed)


def fdata(dtype, shape, lo, hi, seed=0, specials=()):
    """Uniform floats in [lo, hi) of dtype; specials scattered in when there is room."""
    g = _gen(seed)
    x = torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo
    n = x.numel()
    if specials and n >= len(specials) + 2:
        flat = x.reshape(-1).clone()
        idx = torch.randperm(n, generator=g)[:len(specials)]
        flat[idx] = torch.tensor(specials, dtype=torch.float64)
        x = flat.view(shape)
    return x.to(dtype)


def idata(dtype, shape, lo, hi, seed=0):
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=_gen(seed)).bool()
    return torch.randint(lo, hi, shape, generator=_gen(seed)).to(dtype)


def cdata(dtype, shape, lo, hi, seed=0):
    real = torch.float32 if dtype == torch.complex64 else torch.float64
    return torch.complex(fdata(real, shape, lo, hi, seed), fdata(real, shape, lo, hi, seed + 1))


# ---- unary ---------------------------------------------------------------------

class U:
    def __init__(self, fn, aten, lo, hi, specials, ilo, ihi, complex_ok, clo=-1.2, chi=1.2):
        self.fn, self.aten = fn, aten
        self.lo, self.hi, self.specials = lo, hi, specials
        self.ilo, self.ihi = ilo, ihi
        self.complex_ok = complex_ok
        self.clo, self.chi = clo, chi

    def data(self, dtype, shape, seed=0, specials=True):
        if dtype.is_complex:
            return cdata(dtype, shape, self.clo, self.chi, seed)
        if dtype.is_floating_point:
            return fdata(dtype, shape, self.lo, self.hi, seed, self.specials if specials else ())
        return idata(dtype, shape, self.ilo, self.ihi, seed)


# Float-promoting: int and bool inputs give the default float dtype.
PROMOTING = {
    "exp": U(torch.exp, "aten::exp", -8, 8, (NAN, INF, -INF, -0.0), -5, 6, True),
    "log": U(torch.log, "aten::log", 0.01, 50, (NAN, INF, 0.0, 1.0), 1, 20, True, clo=-3, chi=3),
    "sin": U(torch.sin, "aten::sin", -10, 10, (NAN, -0.0, 0.0), -10, 10, True),
    "cos": U(torch.cos, "aten::cos", -10, 10, (NAN, -0.0, 0.0), -10, 10, True),
    "tanh": U(torch.tanh, "aten::tanh", -6, 6, (NAN, INF, -INF, -0.0), -10, 10, True, -1, 1),
    "sqrt": U(torch.sqrt, "aten::sqrt", 0.0, 50, (NAN, INF, 0.0, -0.0), 0, 30, True, clo=-3, chi=3),
    "rsqrt": U(torch.rsqrt, "aten::rsqrt", 0.01, 50, (NAN, INF, 0.0), 1, 30, False),
    "sigmoid": U(torch.sigmoid, "aten::sigmoid", -8, 8, (NAN, INF, -INF, -30.0, 30.0), -10, 10,
                 False),
    "log1p": U(torch.log1p, "aten::log1p", -0.9, 50, (NAN, INF, -1.0, -0.0), 0, 30, False),
    "expm1": U(torch.expm1, "aten::expm1", -8, 8, (NAN, INF, -INF, -0.0), -5, 6, False),
}
# Same dtype in and out (abs: complex -> real).
SAME = {
    "neg": U(torch.neg, "aten::neg", -100, 100, (NAN, INF, -INF, -0.0), -1000, 1000, True),
    "abs": U(torch.abs, "aten::abs", -100, 100, (NAN, INF, -INF, -0.0), -1000, 1000, True),
    "relu": U(torch.relu, "aten::relu", -100, 100, (NAN, INF, -INF, -0.0), -1000, 1000, False),
}
UNARY = {**PROMOTING, **SAME}

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int32, torch.int64]


def _unary_cases():
    out = []
    for name, u in PROMOTING.items():
        for dt in FLOATS + INTS + [torch.bool] + ([torch.complex64] if u.complex_ok else []):
            out.append((name, dt))
    for name, u in SAME.items():
        for dt in FLOATS + INTS + [torch.int8] + ([torch.complex64] if u.complex_ok else []):
            out.append((name, dt))
    return out


UNARY_CASES = _unary_cases()


@pytest.mark.parametrize("name,dtype", UNARY_CASES,
                         ids=[f"{n}-{dtype_id(d)}" for n, d in UNARY_CASES])
def test_unary(name, dtype):
    u = UNARY[name]
    x = u.data(dtype, (5, 7), seed=1)
    r = same(u.aten, u.fn, x, tol=MATH_TOL)
    if name in PROMOTING and not (dtype.is_floating_point or dtype.is_complex):
        assert r.dtype == torch.get_default_dtype()
    if name == "abs" and dtype == torch.complex64:
        assert r.dtype == torch.float32


@pytest.mark.parametrize("name", list(PROMOTING))
def test_unary_int_promotes_to_default_dtype(name):
    u = PROMOTING[name]
    x = u.data(torch.int32, (6,), seed=2)
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        r = same(u.aten, u.fn, x)
        assert r.dtype == torch.float64
    finally:
        torch.set_default_dtype(old)


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_noncontiguous(name):
    u = UNARY[name]
    f = u.fn
    x = u.data(torch.float32, (6, 8), seed=3)
    same(u.aten, lambda a: f(a.t()), x)                       # transposed
    same(u.aten, lambda a: f(a[::2, 1::3]), x)                # stepped slices
    same(u.aten, lambda a: f(a.t()[1::2]), x)                 # transposed + stepped
    same(u.aten, lambda a: f(a[:1].expand(5, 8)), x)          # stride-0 expand
    same(u.aten, lambda a: f(a[:, 3]), x)                     # a column
    p = u.data(torch.float32, (2, 3, 4), seed=4)
    same(u.aten, lambda a: f(a.permute(2, 0, 1)), p)
    xi = u.data(torch.int32, (6, 8), seed=5)                  # promoting path, transposed
    same(u.aten, lambda a: f(a.t()[::2]), xi)


@pytest.mark.parametrize("name", list(UNARY))
@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (1,)], ids=str)
def test_unary_zero_dim_and_empty(name, shape):
    u = UNARY[name]
    x = u.data(torch.float32, shape, seed=6, specials=False)
    r = same(u.aten, u.fn, x)
    assert r.shape == shape


@pytest.mark.parametrize("name", ["exp", "sqrt", "sigmoid", "abs", "neg", "relu"])
def test_unary_on_second_device(name):
    u = UNARY[name]
    x = u.data(torch.float32, (4, 5), seed=7)
    r = same(u.aten, u.fn, x, device="tpu:1")
    assert r.device == torch.device("tpu:1")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=dtype_id)
def test_log1p_expm1_accurate_near_zero(dtype):
    # The point of log1p/expm1: full relative accuracy where log(1+x)/exp(x)-1 lose it.
    x = torch.tensor([1e-10, -1e-9, 3e-8, 1e-6, -2e-5, 1e-4], dtype=dtype)
    rtol = 1e-5 if dtype == torch.float32 else 1e-12
    for name in ("log1p", "expm1"):
        u = UNARY[name]
        r = same(u.aten, u.fn, x)
        torch.testing.assert_close(r.cpu(), u.fn(x), rtol=rtol, atol=0)


def test_neg_bool_rejected_like_cpu():
    raises_like_cpu(torch.neg, torch.tensor([True, False]), match="Negation.*bool tensor")


def test_relu_bool_rejected_like_cpu():
    raises_like_cpu(torch.relu, torch.tensor([True, False]), match="Boolean inputs not supported")


def test_abs_bool_rejected():
    # CPU: NotImplementedError "abs_cpu" not implemented for 'Bool'; tpu must
    # refuse too (NotImplementedError is a RuntimeError) and name the dtype.
    with pytest.raises(RuntimeError, match="Bool"):
        torch.abs(torch.tensor([True, False], device="tpu")).cpu()


def test_abs_neg_int_min_wraps_like_cpu():
    for dt in (torch.int32, torch.int64):
        x = torch.tensor([torch.iinfo(dt).min, -1, 0, torch.iinfo(dt).max], dtype=dt)
        same("aten::abs", torch.abs, x)
        same("aten::neg", torch.neg, x)


@pytest.mark.parametrize("name,fn", [
    ("aten::exp", lambda x: x.exp_()),
    ("aten::sqrt", lambda x: x.sqrt_()),
    ("aten::sigmoid", lambda x: x.sigmoid_()),
    ("aten::neg", lambda x: x.neg_()),
    ("aten::abs", lambda x: x.abs_()),
    ("aten::relu", lambda x: x.relu_()),
], ids=["exp_", "sqrt_", "sigmoid_", "neg_", "abs_", "relu_"])
def test_unary_inplace_on_view(name, fn):
    # nn.ReLU(inplace=True) and friends: in-place unary on a strided view.
    x = fdata(torch.float32, (4, 6), 0.1, 3, seed=8)
    x[0, 0] = NAN

    def f(a):
        fn(a[:, 1::2])
        return a
    same(name, f, x)


@pytest.mark.parametrize("name", ["exp", "sin", "sqrt", "tanh", "abs", "neg"])
def test_unary_out(name):
    u = UNARY[name]
    x = u.data(torch.float32, (3, 4), seed=9)

    def f(a):
        base = torch.full((5, 4), 7.0, device=a.device)
        r = u.fn(a, out=base[1:4])
        assert r.data_ptr() == base[1:4].data_ptr()
        return base
    same(u.aten, f, x)


# ---- binary: sub, div, maximum, minimum, pow ------------------------------------

def bdata(dtype, shape, seed=0, zeros=True, nans=True):
    """Moderate operands; floats carry NaN/inf/0 when there is room."""
    if dtype == torch.bool:
        return idata(dtype, shape, 0, 2, seed)
    if dtype.is_complex:
        return cdata(dtype, shape, -5, 5, seed)
    if dtype.is_floating_point:
        sp = ((NAN, INF, -INF) if nans else ()) + ((0.0, -0.0) if zeros else ())
        return fdata(dtype, shape, -10, 10, seed, sp)
    lo = 0 if dtype == torch.uint8 else -11
    return idata(dtype, shape, lo, 12, seed)


BIN_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
              torch.int64]


@pytest.mark.parametrize("dtype", BIN_DTYPES + [torch.int8, torch.uint8, torch.complex64],
                         ids=dtype_id)
def test_sub(dtype):
    a, b = bdata(dtype, (4, 5), 10), bdata(dtype, (4, 5), 11)
    same("aten::sub", torch.sub, a, b)
    same("aten::sub", lambda x, y: x - y, a, b)
    same("aten::sub", lambda x, y: x.sub(y), a, b)
    same("aten::sub", lambda x, y: torch.sub(x, y, alpha=3), a, b)
    same("aten::sub", lambda x, y: torch.sub(x, y, alpha=-2), a, b)
    if dtype.is_floating_point or dtype.is_complex:
        same("aten::sub", lambda x, y: torch.sub(x, y, alpha=0.5), a, b)
    if dtype.is_complex:
        same("aten::sub", lambda x, y: torch.sub(x, y, alpha=1 - 2j), a, b)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8, torch.float32,
                                   torch.float64, torch.bfloat16, torch.complex64], ids=dtype_id)
def test_sub_python_scalar(dtype):
    a = bdata(dtype, (3, 4), 12)
    same("aten::sub", lambda x: x - 2, a)
    same("aten::sub", lambda x: x - 1.5, a)            # ints promote to the default float
    same("aten::sub", lambda x: torch.sub(x, 2, alpha=3), a)
    same((), lambda x: 2 - x, a)                        # rsub: value only
    if dtype.is_complex:
        same("aten::sub", lambda x: x - (1 + 2j), a)


def test_sub_int_minus_float_scalar_is_float():
    a = torch.arange(6, dtype=torch.int64)
    r = same("aten::sub", lambda x: x - 0.25, a)
    assert r.dtype == torch.float32


def test_sub_bool_rejected_like_cpu():
    a, b = torch.tensor([True, False, True]), torch.tensor([False, False, True])
    raises_like_cpu(torch.sub, a, b, match="Subtraction, the `-` operator, with two bool tensors")
    raises_like_cpu(lambda x, y: x - y, a, b, match="Subtraction.*bool")


def test_sub_float_alpha_on_int_rejected_like_cpu():
    a = torch.arange(3, dtype=torch.int32)
    raises_like_cpu(lambda x, y: torch.sub(x, y, alpha=1.5), a, a, match="alpha")


@pytest.mark.parametrize("dtype", BIN_DTYPES + [torch.bool, torch.uint8, torch.complex64],
                         ids=dtype_id)
def test_div_true(dtype):
    a, b = bdata(dtype, (4, 5), 13), bdata(dtype, (4, 5), 14)
    if not dtype.is_complex and dtype != torch.bool:
        b[0, :3] = 0                                  # x/0: inf, -inf, nan
        a[0, 0] = 0
    r = same("aten::div", torch.div, a, b)
    same("aten::div", lambda x, y: x / y, a, b)
    same("aten::div", lambda x, y: x.div(y), a, b)
    same("aten::div", lambda x, y: torch.true_divide(x, y), a, b)
    if not (dtype.is_floating_point or dtype.is_complex):
        assert r.dtype == torch.float32


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.float32, torch.float16,
                                   torch.complex64], ids=dtype_id)
def test_div_python_scalar(dtype):
    a = bdata(dtype, (3, 4), 15)
    same("aten::div", lambda x: x / 2, a)
    same("aten::div", lambda x: x / 0.5, a)
    same("aten::div", lambda x: x / 3, a)
    same("aten::div", lambda x: torch.div(x, -4), a)
    same((), lambda x: 2 / x, a)                        # reciprocal * 2: value only


@pytest.mark.parametrize("op", ["maximum", "minimum"])
@pytest.mark.parametrize("dtype", BIN_DTYPES + [torch.bool, torch.int8, torch.uint8],
                         ids=dtype_id)
def test_maximum_minimum(op, dtype):
    f = getattr(torch, op)
    a, b = bdata(dtype, (5, 6), 16), bdata(dtype, (5, 6), 17)
    if dtype.is_floating_point:
        a[1, :3] = torch.tensor([NAN, 1.0, NAN], dtype=dtype)   # NaN in either operand
        b[1, :3] = torch.tensor([2.0, NAN, NAN], dtype=dtype)
        a[2, :2] = torch.tensor([INF, -INF], dtype=dtype)
    same("aten::" + op, f, a, b)
    same("aten::" + op, lambda x, y: f(x.t(), y.t()), a, b)         # transposed
    same("aten::" + op, lambda x, y: f(x[::2, 1::2], y[::2, ::2]), a, b)
    same("aten::" + op, lambda x, y: f(x[:, :1], y), a, b)       # broadcasting


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_maximum_minimum_promotion_and_complex(op):
    f = getattr(torch, op)
    same("aten::" + op, f, bdata(torch.int32, (4,), 18), bdata(torch.float32, (4,), 19))
    same("aten::" + op, f, torch.tensor([200, 3], dtype=torch.uint8),
         torch.tensor([-56, 4], dtype=torch.int8))
    c = torch.ones(2, dtype=torch.complex64)
    raises_like_cpu(f, c, c, match="not implemented for complex")


@pytest.mark.parametrize("dtype", BIN_DTYPES, ids=dtype_id)
def test_pow_tensor_tensor(dtype):
    if dtype.is_floating_point:
        a = fdata(dtype, (4, 5), 0.05, 4, 20, (NAN, INF, 0.0))
        b = fdata(dtype, (4, 5), -2, 3, 21, (NAN, 0.0, 1.0))
        tol = MATH_TOL
    else:
        a, b = idata(dtype, (4, 5), -4, 5, 20), idata(dtype, (4, 5), 0, 5, 21)
        tol = TOL
    same("aten::pow", torch.pow, a, b, tol=tol)
    same("aten::pow", lambda x, y: x ** y, a, b, tol=tol)
    same("aten::pow", lambda x, y: x.t() ** y.t()[:, :1], a, b, tol=tol)   # views, broadcast


def test_pow_tensor_tensor_promotion():
    a = fdata(torch.float32, (6,), 0.5, 3, 22)
    e = idata(torch.int64, (6,), 0, 4, 23)
    same("aten::pow", torch.pow, a, e)
    same("aten::pow", torch.pow, idata(torch.int32, (6,), 1, 5, 24), fdata(torch.float32, (6,), 0, 2, 25))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16],
                         ids=dtype_id)
@pytest.mark.parametrize("exponent", [2, 3, 0.5, 1.5, -1, -0.5, 0, 1, 2.5], ids=str)
def test_pow_tensor_scalar(dtype, exponent):
    x = fdata(dtype, (4, 6), 0.05, 5, 26, (NAN, INF))
    same("aten::pow", lambda t: t ** exponent, x, tol=MATH_TOL)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.int8], ids=dtype_id)
def test_pow_int_tensor_scalar(dtype):
    x = idata(dtype, (3, 5), -3, 5, 27)
    same("aten::pow", lambda t: t ** 2, x)
    same("aten::pow", lambda t: t ** 3, x)
    same("aten::pow", lambda t: t ** 0, x)
    xp = idata(dtype, (3, 5), 0, 9, 28)
    r = same("aten::pow", lambda t: t ** 0.5, xp)             # float exponent: default float
    assert r.dtype == torch.float32


def test_pow_noncontiguous_and_zero_dim():
    x = fdata(torch.float32, (6, 8), 0.1, 3, 29)
    same("aten::pow", lambda t: t.t()[::2] ** 2, x)
    same("aten::pow", lambda t: t[:1].expand(4, 8) ** 0.5, x)
    same("aten::pow", lambda t: t ** 2, torch.tensor(1.7))
    same("aten::pow", lambda t: t ** 0.5, torch.empty(0, 3))


BIN_OPS = {
    "sub": ("aten::sub", torch.sub),
    "div": ("aten::div", torch.div),
    "maximum": ("aten::maximum", torch.maximum),
    "minimum": ("aten::minimum", torch.minimum),
    "pow": ("aten::pow", torch.pow),
}
BROADCASTS = [((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((2, 3, 4), (3, 1)), ((5,), ()),
              ((), (2, 2)), ((), ()), ((0,), (1,)), ((3, 0), (3, 1)), ((4, 1, 3), (1, 5, 1))]


@pytest.mark.parametrize("op", list(BIN_OPS))
@pytest.mark.parametrize("shapes", BROADCASTS, ids=[f"{a}x{b}" for a, b in BROADCASTS])
def test_binary_broadcast_zero_dim_empty(op, shapes):
    aten, f = BIN_OPS[op]
    a = fdata(torch.float32, shapes[0], 0.5, 4, 30)
    b = fdata(torch.float32, shapes[1], 0.5, 4, 31)
    same(aten, f, a, b)


@pytest.mark.parametrize("op", list(BIN_OPS))
def test_binary_noncontiguous(op):
    aten, f = BIN_OPS[op]
    a = fdata(torch.float32, (6, 8), 0.5, 4, 32)
    b = fdata(torch.float32, (8, 6), 0.5, 4, 33)
    same(aten, lambda x, y: f(x, y.t()), a, b)
    same(aten, lambda x, y: f(x[::2], y.t()[1::2]), a, b)
    same(aten, lambda x, y: f(x[:, 1::3], y[2:5].t()[:, :3]), a, b)
    same(aten, lambda x, y: f(x[:1].expand(6, 8), y.t()), a, b)


@pytest.mark.parametrize("op", ["sub", "div"])
@pytest.mark.parametrize("dta,dtb", [(torch.int32, torch.float32), (torch.uint8, torch.int8),
                                     (torch.float16, torch.float32), (torch.bfloat16, torch.float16),
                                     (torch.int64, torch.float64), (torch.float32, torch.complex64)],
                         ids=lambda d: dtype_id(d))
def test_sub_div_type_promotion(op, dta, dtb):
    aten, f = BIN_OPS[op]
    a, b = bdata(dta, (3, 4), 34, zeros=False), bdata(dtb, (3, 4), 35, zeros=False)
    r = same(aten, f, a, b)
    assert r.dtype == f(a, b).dtype


def test_binary_cpu_zero_dim_operand():
    a = fdata(torch.float32, (3, 4), 0.5, 4, 36)
    s = torch.tensor(2.5)
    same("aten::sub", lambda x: x - s, a)
    same("aten::div", lambda x: x / s, a)
    same("aten::maximum", lambda x: torch.maximum(x, torch.tensor(2.0, device=x.device)), a)
    same("aten::pow", lambda x: torch.pow(x, torch.tensor(2.0, device=x.device)), a)


# ---- comparisons ----------------------------------------------------------------

CMP = ["eq", "ne", "lt", "le", "gt", "ge"]
CMP_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
              torch.int64, torch.bool, torch.uint8, torch.complex64]


def cmp_operands(dtype, shape, seed):
    a, b = bdata(dtype, shape, seed, zeros=True), bdata(dtype, shape, seed + 1, zeros=True)
    fa, fb = a.view(-1), b.view(-1)
    fb[::3] = fa[::3]               # equal elements (NaN stays unequal)
    return a, b


@pytest.mark.parametrize("op", CMP)
@pytest.mark.parametrize("dtype", CMP_DTYPES, ids=dtype_id)
def test_compare_tensor(op, dtype):
    if dtype.is_complex and op not in ("eq", "ne"):
        a = torch.ones(3, dtype=dtype)
        with pytest.raises(RuntimeError, match="ComplexFloat"):
            getattr(torch, op)(a.to("tpu"), a.to("tpu")).cpu()
        return
    f = getattr(torch, op)
    a, b = cmp_operands(dtype, (5, 6), 40)
    r = same("aten::" + op, f, a, b)
    assert r.dtype == torch.bool
    same("aten::" + op, getattr(torch.Tensor, "__%s__" % op), a, b)     # x < y
    same("aten::" + op, lambda x, y: f(x.t(), y.t()), a, b)             # views
    same("aten::" + op, lambda x, y: f(x[::2, 1:], y[::2, :1]), a, b)   # broadcast


SCALARS = [0.5, 0, -3, 2.0, True, float("nan"), float("inf")]


@pytest.mark.parametrize("op", CMP)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64, torch.int32,
                                   torch.int64, torch.uint8, torch.bool], ids=dtype_id)
def test_compare_scalar(op, dtype):
    magic = getattr(torch.Tensor, "__%s__" % op)
    a = bdata(dtype, (4, 5), 41)
    if dtype.is_floating_point:
        a[0, 0] = 0.5
    for s in SCALARS:
        if dtype == torch.uint8 and s == -3:
            continue
        r = same("aten::" + op, lambda x: magic(x, s), a)        # e.g. x < 0.5
        assert r.dtype == torch.bool
    same("aten::" + op, lambda x: getattr(torch, op)(x, 2), a)
    same("aten::" + op, lambda x: magic(x.t()[::2], 1), a)


@pytest.mark.parametrize("op", ["eq", "ne"])
def test_compare_complex_scalar(op):
    a = cdata(torch.complex64, (4,), -2, 2, 42)
    a[1] = 1 + 2j
    magic = getattr(torch.Tensor, "__%s__" % op)
    same("aten::" + op, lambda x: magic(x, 1 + 2j), a)
    same("aten::" + op, lambda x: magic(x, 0.5), a)


PROMOS = [(torch.int32, torch.float32), (torch.uint8, torch.int8), (torch.int8, torch.uint8),
          (torch.int64, torch.float16), (torch.float16, torch.bfloat16), (torch.bool, torch.int32),
          (torch.float32, torch.float64), (torch.int32, torch.int64)]


@pytest.mark.parametrize("op", CMP)
@pytest.mark.parametrize("dta,dtb", PROMOS, ids=[f"{dtype_id(a)}-{dtype_id(b)}" for a, b in PROMOS])
def test_compare_promotion(op, dta, dtb):
    f = getattr(torch, op)
    if {dta, dtb} == {torch.uint8, torch.int8}:
        # Without promotion to int16, 200 (u8) and -56 (i8) share the bits 0xC8.
        a = torch.tensor([200, 3, 255, 0, 127], dtype=torch.int64)
        b = torch.tensor([-56, 3, -1, 0, -128], dtype=torch.int64)
        if dta == torch.int8:
            a, b = b, a
        a, b = a.to(dta), b.to(dtb)
    elif dtb.is_floating_point and not dta.is_floating_point:
        a = torch.tensor([1, 2, 3, -4, 0, 16777217], dtype=torch.int64).to(dta)
        b = torch.tensor([1.0, 2.5, 2.999, -4.0, -0.0, 16777216.0], dtype=dtb)
        if dta == torch.bool:
            b = b[:5]
            a = a[:5]
    else:
        a, b = bdata(dta, (6,), 43), bdata(dtb, (6,), 44)
        b[::2] = a[::2].to(dtb)
    r = same("aten::" + op, f, a, b)
    assert r.dtype == torch.bool


def test_compare_int_tensor_float_scalar():
    a = torch.tensor([0, 1, -1, 2, 16777217], dtype=torch.int32)
    for s in (0.5, -0.5, 1.0, 16777216.0):
        same("aten::lt", lambda x: x < s, a)
        same("aten::eq", lambda x: x == s, a)
        same("aten::ge", lambda x: x >= s, a)


@pytest.mark.parametrize("op", CMP)
@pytest.mark.parametrize("shape", [(), (0,), (2, 0)], ids=str)
def test_compare_zero_dim_and_empty(op, shape):
    f = getattr(torch, op)
    a, b = fdata(torch.float32, shape, -1, 1, 45), fdata(torch.float32, shape, -1, 1, 46)
    same("aten::" + op, f, a, b)
    same("aten::" + op, lambda x: f(x, 0.25), a)


# ---- where -----------------------------------------------------------------------

WHERE_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
                torch.int64, torch.bool, torch.uint8, torch.complex64]


@pytest.mark.parametrize("dtype", WHERE_DTYPES, ids=dtype_id)
def test_where(dtype):
    c = idata(torch.bool, (4, 5), 0, 2, 50)
    a, b = bdata(dtype, (4, 5), 51), bdata(dtype, (4, 5), 52)
    same("aten::where", torch.where, c, a, b)
    same("aten::where", lambda cc, x, y: x.where(cc, y), c, a, b)
    same("aten::where", lambda cc, x, y: torch.where(cc.t(), x.t(), y[::2].t()[:, :1]), c, a, b)


WHERE_SHAPES = [((3, 1), (1, 4), (4,)), ((4,), (3, 4), ()), ((), (2, 3), (2, 1)),
                ((2, 1, 3), (4, 1), (1,)), ((0,), (0,), (1,)), ((), (), ()), ((3, 0), (1,), (3, 1))]


@pytest.mark.parametrize("shapes", WHERE_SHAPES, ids=[str(s) for s in WHERE_SHAPES])
def test_where_broadcasting(shapes):
    c = idata(torch.bool, shapes[0], 0, 2, 53)
    a, b = fdata(torch.float32, shapes[1], -1, 1, 54), fdata(torch.float32, shapes[2], -1, 1, 55)
    same("aten::where", torch.where, c, a, b)


WHERE_PROMOS = [(torch.int32, torch.float32), (torch.float16, torch.float32),
                (torch.bool, torch.int64), (torch.uint8, torch.int8), (torch.bfloat16, torch.float16),
                (torch.float32, torch.complex64), (torch.int64, torch.float64)]


@pytest.mark.parametrize("dta,dtb", WHERE_PROMOS,
                         ids=[f"{dtype_id(a)}-{dtype_id(b)}" for a, b in WHERE_PROMOS])
def test_where_promotion(dta, dtb):
    c = idata(torch.bool, (3, 4), 0, 2, 56)
    a, b = bdata(dta, (3, 4), 57), bdata(dtb, (1, 4), 58)
    r = same("aten::where", torch.where, c, a, b)
    assert r.dtype == torch.result_type(a, b)


def test_where_scalar_operands():
    c = idata(torch.bool, (3, 4), 0, 2, 59)
    x = fdata(torch.float32, (3, 4), -1, 1, 60)
    xi = idata(torch.int32, (3, 4), -5, 5, 61)
    same("aten::where", lambda cc, t: torch.where(cc, t, 0.0), c, x)
    same("aten::where", lambda cc, t: torch.where(cc, 2, t), c, xi)
    same("aten::where", lambda cc, t: torch.where(cc, t, 0.5), c, xi)       # int & float -> float
    same("aten::where", lambda cc, t: torch.where(cc, t, NAN), c, x)
    same("aten::where", lambda cc: torch.where(cc, 1.0, -1.0), c)


def test_where_condition_from_comparison():
    x = fdata(torch.float32, (5, 6), -2, 2, 62, (NAN,))
    same(("aten::where", "aten::gt"), lambda t: torch.where(t > 0, t, t * 0.1), x)


def test_where_condition_must_be_bool_or_uint8():
    c = torch.tensor([1.0, 0.0])
    raises_like_cpu(torch.where, c, torch.ones(2), torch.zeros(2),
                    match="condition to be a boolean tensor")


# ---- in-place ---------------------------------------------------------------------

INPLACE = {
    "add_": ("aten::add", torch.Tensor.add_),
    "sub_": ("aten::sub", torch.Tensor.sub_),
    "mul_": ("aten::mul", torch.Tensor.mul_),
    "div_": ("aten::div", torch.Tensor.div_),
}
IP = pytest.mark.parametrize("op", list(INPLACE))


@IP
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int32,
                                   torch.int64, torch.complex64], ids=dtype_id)
def test_inplace_contiguous(op, dtype):
    aten, m = INPLACE[op]
    if op == "div_" and not (dtype.is_floating_point or dtype.is_complex):
        return  # int.div_ is rejected, see test_inplace_int_rejects_float_result
    x, y = bdata(dtype, (4, 5), 70, zeros=False), bdata(dtype, (4, 5), 71, zeros=False)

    def tensor_form(a, b):
        r = m(a, b)
        assert r is a
        return a
    same(aten, tensor_form, x, y)
    same(aten, lambda a: m(a, 3), x)
    same(aten, lambda a: m(a, -2), x)
    if dtype.is_floating_point or dtype.is_complex:
        same(aten, lambda a: m(a, 0.5), x)
    same(aten, lambda a, b: m(a, b[1]), x, y)                    # broadcast row
    same(aten, lambda a, b: m(a, b[:, :1]), x, y)                # broadcast column
    same(aten, lambda a, b: m(a, b.t().t()[::1]), x, y)
    same(aten, lambda a: m(a, a), x)                             # fully aliased operand
    if op in ("add_", "sub_"):
        same(aten, lambda a, b: m(a, b, alpha=2), x, y)


VIEWS = {
    "cols": lambda a: a[:, 1:3],
    "t": lambda a: a.t(),
    "rows_step": lambda a: a[::2],
    "row": lambda a: a[1],
    "col_step": lambda a: a[:, ::2],
    "t_slice": lambda a: a.t()[1:4],
    "flat_slice": lambda a: a.view(-1)[3:11],
    "diag_strided": lambda a: a.as_strided((3,), (7,), 1),
}


@IP
@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("other", ["scalar", "tensor"])
def test_inplace_on_view(op, view, other):
    """x[:, 1:3].add_(1), x.t().mul_(2), x[::2].sub_(y), ...: the whole base
    afterwards, and aliases of the base see the write."""
    aten, m = INPLACE[op]
    v = VIEWS[view]
    x0 = fdata(torch.float32, (6, 6), 0.5, 4, 72, (NAN,))
    vshape = v(x0).shape
    y0 = fdata(torch.float32, vshape, 0.5, 4, 73)
    operand = (lambda t: 2.5) if other == "scalar" else (lambda t: t)

    e = x0.clone()
    ealias = e.view(-1)
    m(v(e), operand(y0))

    x = x0.to("tpu")
    y = y0.to("tpu")
    alias_flat = x.view(-1)
    alias_t = x.t()
    alias_tail = x[2:]
    ver = x._version
    torch_pjrt.reset_fallbacks()
    r = m(v(x), operand(y))
    fb = cpu_fallbacks_of([aten])
    check(x, e)
    check(r, v(e))
    check(alias_flat, ealias)
    check(alias_t, e.t())
    check(alias_tail, e[2:])
    assert x._version > ver, "version counter not bumped by an in-place write"
    assert not fb, f"ran on the CPU (fallback), not natively: {fb}"


@IP
def test_inplace_int_and_broadcast_view(op):
    aten, m = INPLACE[op]
    dt = torch.float32 if op == "div_" else torch.int32
    x0 = bdata(dt, (4, 6), 74, zeros=False)
    y0 = bdata(dt, (6,), 75, zeros=False)
    if op == "div_":
        y0 = y0.abs() + 1

    def f(a, b):
        m(a[1:3, ::2], b[::2])
        m(a.t()[::3], 2)
        return a
    same(aten, f, x0, y0)


@IP
def test_inplace_mixed_dtype_operand(op):
    aten, m = INPLACE[op]
    x = fdata(torch.float32, (3, 4), 0.5, 4, 76)
    same(aten, lambda a, b: m(a, b), x, idata(torch.int64, (3, 4), 1, 9, 77))
    same(aten, lambda a, b: m(a, b), x, fdata(torch.float64, (4,), 0.5, 4, 78))
    same(aten, lambda a, b: m(a, b), x, fdata(torch.float16, (3, 1), 0.5, 4, 79))
    same(aten, lambda a: m(a, torch.tensor(1.5)), x)             # 0-d CPU tensor
    same(aten, lambda a: m(a, torch.tensor(3, device=a.device)), x)


@IP
def test_inplace_zero_dim_and_empty(op):
    aten, m = INPLACE[op]
    same(aten, lambda a: m(a, 2), torch.tensor(3.5))
    same(aten, lambda a, b: m(a, b), torch.tensor(3.5), torch.tensor(-1.25))
    same(aten, lambda a: m(a, 2), torch.empty(0, 3))
    same(aten, lambda a, b: m(a, b), torch.empty(2, 0), torch.empty(1, 0))


def test_inplace_int_rejects_float_result():
    a = torch.arange(4)
    raises_like_cpu(lambda t: t.add_(1.5), a, match="can't be cast")
    raises_like_cpu(lambda t: t.add_(torch.ones(4, device=t.device)), a, match="can't be cast")
    raises_like_cpu(lambda t: t.sub_(0.5), a, match="can't be cast")
    raises_like_cpu(lambda t: t.mul_(0.5), a, match="can't be cast")
    raises_like_cpu(lambda t: t.div_(2), a, match="can't be cast")
    raises_like_cpu(lambda t: t[1:].div_(t[1:]), a, match="can't be cast")
    raises_like_cpu(lambda t: t.float().add_(1j), a, match="can't be cast")


def test_inplace_int_rejected_leaves_tensor_unchanged():
    a0 = torch.arange(6).view(2, 3)
    a = a0.to("tpu")
    with pytest.raises(RuntimeError, match="can't be cast"):
        a.add_(1.5)
    check(a, a0)


def test_inplace_broadcast_to_bigger_rejected_like_cpu():
    # self cannot be broadcast to the operand's shape
    raises_like_cpu(lambda a, b: a.add_(b), torch.ones(3), torch.ones(2, 3))


def test_inplace_overlapping_rejected_like_cpu():
    raises_like_cpu(lambda a: a[1:].add_(a[:-1]), torch.arange(5.0),
                    match="single memory location")
    raises_like_cpu(lambda a: a[:1].expand(3, 4).mul_(2), torch.ones(3, 4),
                    match="single memory location")


def test_inplace_chain_on_same_view():
    x0 = fdata(torch.float32, (5, 5), 0.5, 4, 80)

    def f(a):
        v = a[1:4, 1:4]
        v.add_(1).mul_(3).sub_(a[0, 1:4]).div_(2)
        a.t()[0].mul_(-1)
        return a
    same(("aten::add", "aten::mul", "aten::sub", "aten::div"), f, x0)


# ---- out= ---------------------------------------------------------------------

OUT = {
    "add": ("aten::add", torch.add),
    "mul": ("aten::mul", torch.mul),
    "sub": ("aten::sub", torch.sub),
    "div": ("aten::div", torch.div),
}
OP_OUT = pytest.mark.parametrize("op", list(OUT))


def _out_operands(seed):
    return fdata(torch.float32, (3, 4), 0.5, 4, seed), fdata(torch.float32, (3, 4), 0.5, 4, seed + 1)


@OP_OUT
def test_out_right_shape(op):
    aten, f = OUT[op]
    a, b = _out_operands(90)

    def g(x, y):
        o = torch.empty(3, 4, device=x.device)
        r = f(x, y, out=o)
        assert r.data_ptr() == o.data_ptr()
        return o
    same(aten, g, a, b)
    same(aten, lambda x: f(x, 2, out=torch.zeros_like(x)), a)
    same(aten, lambda x, y: f(x, y[0], out=torch.zeros_like(x)), a, b)   # broadcast
    same(aten, lambda x, y: f(x.t(), y.t(), out=torch.zeros(4, 3, device=x.device)), a, b)


def _resize_warned(w):
    return any("resized" in str(x.message) for x in w)


@OP_OUT
@pytest.mark.parametrize("oshape", [(5,), (0,), (2, 2, 3), (4, 3)], ids=str)
def test_out_wrong_shape_is_resized(op, oshape):
    aten, f = OUT[op]
    a, b = _out_operands(91)
    with warnings.catch_warnings(record=True) as wc:
        warnings.simplefilter("always")
        oc = torch.zeros(oshape)
        f(a, b, out=oc)
    ot = torch.zeros(oshape, device="tpu")
    ta, tb = a.to("tpu"), b.to("tpu")
    torch_pjrt.reset_fallbacks()
    with warnings.catch_warnings(record=True) as wt:
        warnings.simplefilter("always")
        r = f(ta, tb, out=ot)
    fb = cpu_fallbacks_of([aten])
    assert r.data_ptr() == ot.data_ptr()
    check(ot, oc)
    assert _resize_warned(wt) == _resize_warned(wc), (
        [str(x.message) for x in wt], [str(x.message) for x in wc])
    assert not fb, f"ran on the CPU (fallback), not natively: {fb}"


OUT_VIEWS = {
    "rows": (lambda base: base[1:4], (6, 4)),
    "cols": (lambda base: base[:, 2:6], (3, 7)),
    "t": (lambda base: base.t(), (4, 3)),
    "step": (lambda base: base[::2, 1::2], (5, 8)),
}


@OP_OUT
@pytest.mark.parametrize("view", list(OUT_VIEWS))
def test_out_is_view(op, view):
    """out= a view of a bigger tpu tensor: the view gets the result, the rest
    of the base is unchanged."""
    aten, f = OUT[op]
    v, bshape = OUT_VIEWS[view]
    a, b = _out_operands(92)
    base0 = fdata(torch.float32, bshape, -9, -5, 93)

    def g(x, y, base):
        alias = base.view(-1)
        o = v(base)
        r = f(x, y, out=o)
        assert r.data_ptr() == o.data_ptr()
        assert r.shape == (3, 4) and r.stride() == o.stride()
        return alias
    same(aten, g, a, b, base0)


@OP_OUT
def test_out_dtype(op):
    aten, f = OUT[op]
    a, b = _out_operands(94)
    # float32 result written into a float64 out
    same(aten, lambda x, y: f(x, y, out=torch.zeros(3, 4, dtype=torch.float64, device=x.device)),
         a, b)
    ai, bi = idata(torch.int32, (3, 4), 1, 9, 95), idata(torch.int32, (3, 4), 1, 9, 96)
    if op == "div":
        raises_like_cpu(lambda x, y: f(x, y, out=torch.zeros(3, 4, dtype=torch.int32,
                                                             device=x.device)),
                        ai, bi, match="can't be cast")
    else:
        # int result into a float out is fine
        same(aten, lambda x, y: f(x, y, out=torch.zeros(3, 4, device=x.device)), ai, bi)
    raises_like_cpu(lambda x, y: f(x, y, out=torch.zeros(3, 4, dtype=torch.int64,
                                                         device=x.device)),
                    a, b, match="can't be cast")


@OP_OUT
def test_out_aliases_input(op):
    aten, f = OUT[op]
    a, b = _out_operands(97)
    same(aten, lambda x, y: f(x, y, out=x), a, b)
    same(aten, lambda x, y: f(x, y, out=y), a, b)


def test_out_on_other_device_rejected():
    a = torch.ones(3, device="tpu:0")
    o = torch.empty(3, device="tpu:1")
    with pytest.raises(RuntimeError):
        torch.add(a, a, out=o)
        o.cpu()


# ---- autograd -----------------------------------------------------------------

def _f(a, b):
    return (torch.sigmoid(a) * torch.tanh(b) - a / (b.abs() + 1)).exp().sum()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=dtype_id)
@pytest.mark.parametrize("bshape", [(3, 4), (4,)], ids=str)
def test_autograd_through_elementwise(dtype, bshape):
    a0 = fdata(dtype, (3, 4), -1.5, 1.5, 100)
    b0 = fdata(dtype, bshape, 0.1, 1.5, 101) * torch.tensor([1.0, -1.0, 1.0, -1.0], dtype=dtype)
    ac, bc = a0.clone().requires_grad_(), b0.clone().requires_grad_()
    lc = _f(ac, bc)
    lc.backward()

    at, bt = a0.to("tpu").requires_grad_(), b0.to("tpu").requires_grad_()
    lt = _f(at, bt)
    assert lt.device.type == "tpu"
    lt.backward()
    assert at.grad is not None and bt.grad is not None
    assert at.grad.device.type == "tpu" and bt.grad.device.type == "tpu"
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(lt.detach().cpu(), lc.detach(), **tol)
    torch.testing.assert_close(at.grad.cpu(), ac.grad, **tol)
    torch.testing.assert_close(bt.grad.cpu(), bc.grad, **tol)


def test_autograd_forward_ops_native():
    a = fdata(torch.float32, (3, 4), -1, 1, 102).to("tpu").requires_grad_()
    b = fdata(torch.float32, (3, 4), 0.1, 1, 103).to("tpu").requires_grad_()
    torch_pjrt.reset_fallbacks()
    loss = _f(a, b)
    fb = cpu_fallbacks_of(["aten::sigmoid", "aten::tanh", "aten::div", "aten::sub",
                           "aten::exp", "aten::abs"])
    assert not fb, f"forward ran on the CPU: {fb}"
    loss.backward()


# ---- executable cache ------------------------------------------------------------

CACHE_OPS = {
    "exp": lambda a, b: torch.exp(a),
    "log": lambda a, b: torch.log(a),
    "sin": lambda a, b: torch.sin(a),
    "cos": lambda a, b: torch.cos(a),
    "tanh": lambda a, b: torch.tanh(a),
    "sqrt": lambda a, b: torch.sqrt(a),
    "rsqrt": lambda a, b: torch.rsqrt(a),
    "sigmoid": lambda a, b: torch.sigmoid(a),
    "log1p": lambda a, b: torch.log1p(a),
    "expm1": lambda a, b: torch.expm1(a),
    "neg": lambda a, b: -a,
    "abs": lambda a, b: a.abs(),
    "relu": lambda a, b: a.relu(),
    "sub": lambda a, b: a - b,
    "div": lambda a, b: a / b,
    "maximum": lambda a, b: torch.maximum(a, b),
    "minimum": lambda a, b: torch.minimum(a, b),
    "pow_tt": lambda a, b: a ** b,
    "pow_ts": lambda a, b: a ** 2,
    "lt": lambda a, b: a < b,
    "eq_scalar": lambda a, b: a == 0.5,
    "where": lambda a, b: torch.where(a > b, a, b),
    "add_view": lambda a, b: a.clone()[:, 1:3].add_(1),
    "mul_t": lambda a, b: a.clone().t().mul_(b.t()),
    "div_out": lambda a, b: torch.div(a, b, out=torch.empty_like(a)),
}


@pytest.mark.parametrize("op", list(CACHE_OPS))
def test_same_op_and_shapes_do_not_recompile(op):
    f = CACHE_OPS[op]
    a0 = fdata(torch.float32, (11, 19), 0.5, 2, 110)
    b0 = fdata(torch.float32, (11, 19), 0.5, 2, 111)
    a, b = a0.to("tpu"), b0.to("tpu")
    check(f(a, b), f(a0, b0))
    torch.tpu.synchronize()
    m0 = torch_pjrt.metrics()
    r = f(a, b)
    torch.tpu.synchronize()
    m1 = torch_pjrt.metrics()
    assert m1["compiles"] == m0["compiles"], (m0, m1)
    check(r, f(a0, b0))
    # fresh tensors with the same signature hit the cache too
    c0 = fdata(torch.float32, (11, 19), 0.5, 2, 112)
    c = c0.to("tpu")
    m2 = torch_pjrt.metrics()
    check(f(c, a), f(c0, a0))
    assert torch_pjrt.metrics()["compiles"] == m2["compiles"]


@pytest.mark.parametrize("case", ["sub_scalar", "div_scalar", "sub_alpha", "add_inplace",
                                  "mul_inplace", "lt_scalar", "where_scalar"])
def test_scalar_value_change_does_not_recompile(case):
    x0 = fdata(torch.float32, (7, 3), 0.5, 2, 113)
    fns = {
        "sub_scalar": lambda x, v: x - v,
        "div_scalar": lambda x, v: x / v,
        "sub_alpha": lambda x, v: torch.sub(x, x * 0.5, alpha=v),
        "add_inplace": lambda x, v: x.clone().add_(v),
        "mul_inplace": lambda x, v: x.clone()[1:].mul_(v),
        "lt_scalar": lambda x, v: x < v,
        "where_scalar": lambda x, v: torch.where(x > 1, x, v),
    }
    f = fns[case]
    x = x0.to("tpu")
    check(f(x, 1.5), f(x0, 1.5))
    m0 = torch_pjrt.metrics()
    for v in (2.25, -0.125, 1.75):
        check(f(x, v), f(x0, v))
    m1 = torch_pjrt.metrics()
    assert m1["compiles"] == m0["compiles"], (m0, m1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_pow_two_is_bit_exact_with_cpu(dtype):
    # x ** 2 runs as x * x, as on CPU: same bits, specials included
    x = torch.randn(1000, dtype=dtype) * 100
    x[:4] = torch.tensor([float("inf"), float("nan"), -0.0, -3.0])
    for e in (2, 2.0):
        torch.testing.assert_close(x.to("tpu").pow(e).cpu(), x.pow(e), atol=0, rtol=0,
                                   equal_nan=True)
    xt = x[4:20].to("tpu").requires_grad_()
    xc = x[4:20].clone().requires_grad_()
    (xt ** 2).sum().backward()
    (xc ** 2).sum().backward()
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, atol=0, rtol=0)
