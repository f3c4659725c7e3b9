"""Elementwise ops beyond add/mul against PyTorch's CPU kernels: unary math
(float-promoting and same-dtype), sub/div/maximum/minimum/pow, comparisons,
where, in-place ops on tensors and on views, out= (right shape, resized, a
view); each must run on the device (no CPU fallback recorded for it). Also
autograd through them and the executable cache. Further down: clamp and
masked_fill; copysign, signbit, fmax/fmin, heaviside, logaddexp, xlogy,
angle, complex/polar, rsub, frexp, conj_physical, pow with a scalar base,
fill_ with a tensor value, gcd/lcm; and the math family (rounding, sign,
the erf family, inverse trig and hyperbolic functions, log2/log10/exp2,
reciprocal, remainder/fmod, rounding division, hypot, nan_to_num, bitwise
and logical ops)."""
import re
import warnings

import pytest
import torch

import torch_pjrt
from conftest import dtype_id
import torch.nn.functional as F
from conftest import make
from _op_check import CHECK_TOL, NativeOnly, check_close  # noqa: F401 (shared helpers)
from conftest import assert_bitwise_equal, make
from _op_check import NativeOnly, check_close
from test_ops_activation import Fallbacks, TOL as TOL_SOFTMAX, check as check_like_cpu, ints, raises_like_cpu as raises_like_cpu_msg, randn, same_error as same_error_meta  # noqa: F401 (shared helpers)
from test_ops_basic import TOL  # noqa: F401 (shared helpers)
from test_ops_create import check as check_math  # noqa: F401 (shared helpers)
from test_ops_index import same_error  # noqa: F401 (shared helpers)

pytestmark = pytest.mark.usefixtures("no_leaks")

NAN, INF = float("nan"), float("inf")

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


INF = float("inf")


NAN = float("nan")


EXACT = dict(rtol=0, atol=0)


def bools(shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 2, shape, generator=g).bool()


SOFTMAX_OPS = ("aten::_softmax", "aten::_log_softmax")


CLAMP_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
                torch.int64, torch.int8, torch.uint8]


CLAMP_BOUNDS = {"min": dict(min=-1), "max": dict(max=2), "both": dict(min=-1, max=2),
                "min>max": dict(min=3, max=1)}


def _clamp_data(dtype, shape=(4, 6), seed=23):
    if dtype.is_floating_point:
        return randn(shape, seed=seed, dtype=dtype, scale=3)
    lo = 0 if dtype == torch.uint8 else -6
    return ints(shape, seed=seed, lo=lo, hi=7, dtype=dtype)


@pytest.mark.parametrize("dtype", CLAMP_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("bounds", list(CLAMP_BOUNDS))
def test_clamp(dtype, bounds):
    x = _clamp_data(dtype)
    kw = CLAMP_BOUNDS[bounds]
    if dtype == torch.uint8 and kw.get("min", 0) < 0:
        kw = dict(kw, min=1)
    t = x.to("tpu")
    with Fallbacks("aten::clamp") as fb:
        rs = [(torch.clamp(t, **kw), torch.clamp(x, **kw)),
              (t.clamp(**kw), x.clamp(**kw)),
              (t.clip(**kw), x.clip(**kw))]
    for r, e in rs:
        check_like_cpu(r, e, EXACT)
    fb.assert_native()


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=dtype_id)
def test_clamp_min_clamp_max(dtype):
    x = _clamp_data(dtype, seed=24)
    t = x.to("tpu")
    with Fallbacks("aten::clamp") as fb:
        rs = [(torch.clamp_min(t, 0), torch.clamp_min(x, 0)),
              (torch.clamp_max(t, 1), torch.clamp_max(x, 1)),
              (t.clamp_min(-2), x.clamp_min(-2)),
              (t.clamp_max(-2), x.clamp_max(-2)),
              (torch.clamp(t, min=0), torch.clamp(x, min=0)),
              (torch.clamp(t, max=0), torch.clamp(x, max=0))]
    for r, e in rs:
        check_like_cpu(r, e, EXACT)
    fb.assert_native()


def test_clamp_nan_input_stays_nan():
    x = torch.tensor([[NAN, 1.0, -INF, INF], [-0.5, NAN, 0.5, 3.0]])
    t = x.to("tpu")
    with Fallbacks("aten::clamp") as fb:
        rs = [(t.clamp(0, 1), x.clamp(0, 1)), (t.clamp(min=0), x.clamp(min=0)),
              (t.clamp(max=0), x.clamp(max=0)), (t.clamp_min(2), x.clamp_min(2)),
              (t.clamp_max(-2), x.clamp_max(-2)), (t.clamp(-INF, INF), x.clamp(-INF, INF))]
    for r, e in rs:
        check_like_cpu(r, e, EXACT)
        assert torch.isnan(r.cpu()[0, 0]) and torch.isnan(r.cpu()[1, 1]), r.cpu()
    fb.assert_native()


@pytest.mark.parametrize("kw", [dict(min=NAN), dict(max=NAN), dict(min=NAN, max=NAN),
                                dict(min=0.0, max=NAN), dict(min=NAN, max=1.0)],
                         ids=["min", "max", "both", "max-only-nan", "min-only-nan"])
def test_clamp_nan_bound(kw):
    # CPU: a NaN bound makes every element NaN.
    x = torch.tensor([1.0, NAN, -2.0, 3.0, 0.5])
    with Fallbacks("aten::clamp") as fb:
        r = x.to("tpu").clamp(**kw)
    check_like_cpu(r, x.clamp(**kw), EXACT)
    fb.assert_native()


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8, torch.int8],
                         ids=dtype_id)
def test_clamp_int_with_float_bound_promotes(dtype):
    x = _clamp_data(dtype, seed=25)
    t = x.to("tpu")
    with Fallbacks("aten::clamp") as fb:
        rs = [(t.clamp(1.5, 4), x.clamp(1.5, 4)),
              (t.clamp(min=0.5), x.clamp(min=0.5)),
              (t.clamp(max=2.25), x.clamp(max=2.25)),
              (t.clamp(1, 4), x.clamp(1, 4))]
    assert rs[0][1].dtype == torch.float32 and rs[3][1].dtype == dtype
    for r, e in rs:
        check_like_cpu(r, e, EXACT)
    fb.assert_native()


def test_clamp_bool_and_zero_dim_and_empty():
    b = bools((3, 4), seed=26)
    s = torch.tensor(5.5)
    z = torch.zeros((0, 3))
    with Fallbacks("aten::clamp") as fb:
        rs = [(b.to("tpu").clamp(0, 1), b.clamp(0, 1)),
              (s.to("tpu").clamp(0, 1), s.clamp(0, 1)),
              (s.to("tpu").clamp(max=-1), s.clamp(max=-1)),
              (z.to("tpu").clamp(0, 1), z.clamp(0, 1))]
    for r, e in rs:
        check_like_cpu(r, e, EXACT)
    fb.assert_native()


def test_clamp_noncontiguous():
    x = randn((6, 8), seed=27, scale=2)
    t = x.to("tpu")
    with Fallbacks("aten::clamp") as fb:
        rs = [(t.t().clamp(-1, 1), x.t().clamp(-1, 1)),
              (t[::2, 1::3].clamp(min=0), x[::2, 1::3].clamp(min=0)),
              (t[:1].expand(3, 8).clamp(max=0), x[:1].expand(3, 8).clamp(max=0))]
    for r, e in rs:
        check_like_cpu(r, e, EXACT)
    fb.assert_native()


def test_clamp_out_of_range_bound_raises_like_cpu():
    x = torch.tensor([1, -5, 100], dtype=torch.int8)
    raises_like_cpu_msg(lambda a: a.clamp(min=-1000), (x,), (x.to("tpu"),))


def test_clamp_no_bounds_raises_like_cpu():
    x = torch.zeros(3)
    raises_like_cpu_msg(lambda a: a.clamp(), (x,), (x.to("tpu"),))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bfloat16], ids=dtype_id)
def test_clamp_inplace(dtype):
    x = _clamp_data(dtype, seed=28)
    t = x.to("tpu")
    with Fallbacks("aten::clamp") as fb:
        r = t.clamp_(0, 1)
        e = x.clone().clamp_(0, 1)
        assert r is t
        t2 = x.to("tpu")
        t2.clamp_(min=-1)
        t3 = x.to("tpu")
        torch.clamp_(t3, max=2)
    check_like_cpu(t, e, EXACT)
    check_like_cpu(t2, x.clone().clamp_(min=-1), EXACT)
    check_like_cpu(t3, x.clone().clamp_(max=2), EXACT)
    fb.assert_native()


def test_clamp_inplace_on_view():
    x = randn((4, 6), seed=29, scale=3)
    t = x.to("tpu")
    e = x.clone()
    with Fallbacks("aten::clamp") as fb:
        v = t[:, 1:]
        v.clamp_(0, 1)
        e[:, 1:].clamp_(0, 1)
        t.t()[::2].clamp_(min=0.5)       # a strided view of a transpose
        e.t()[::2].clamp_(min=0.5)
        t[1].clamp_(max=-0.25)
        e[1].clamp_(max=-0.25)
    check_like_cpu(t, e, EXACT)
    check_like_cpu(v, e[:, 1:], EXACT)
    fb.assert_native()


def test_clamp_inplace_int_with_float_bound_raises_like_cpu():
    # CPU says "... desired output type long int", the tpu "... Long".
    x = torch.arange(4)
    raises_like_cpu_msg(lambda a: a.clamp_(0.5, 1), (x.clone(),), (x.to("tpu"),),
                    accept=("result type Float can't be cast to the desired output type",))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=dtype_id)
def test_clamp_min_max_inplace(dtype):
    x = _clamp_data(dtype, seed=30)
    t1, t2 = x.to("tpu"), x.to("tpu")
    with Fallbacks("aten::clamp") as fb:
        t1.clamp_min_(0)
        t2.clamp_max_(1)
        v = x.to("tpu")
        v[:, ::2].clamp_min_(2)
    check_like_cpu(t1, x.clone().clamp_min_(0), EXACT)
    check_like_cpu(t2, x.clone().clamp_max_(1), EXACT)
    e = x.clone()
    e[:, ::2].clamp_min_(2)
    check_like_cpu(v, e, EXACT)
    fb.assert_native()


def test_clamp_tensor_bounds_values():
    # clamp with tensor bounds (aten::clamp.Tensor): values only.
    x = randn((3, 4), seed=31, scale=2)
    lo, hi = randn((4,), seed=32) - 1, randn((3, 1), seed=33) + 1
    r = torch.clamp(x.to("tpu"), min=lo.to("tpu"), max=hi.to("tpu"))
    check_like_cpu(r, torch.clamp(x, min=lo, max=hi), EXACT)


MF_OPS = ("aten::masked_fill",)


MF_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
             torch.int64, torch.int8, torch.uint8, torch.bool, torch.complex64]


def _mf_data(dtype, shape, seed):
    if dtype == torch.bool:
        return bools(shape, seed)
    if dtype.is_complex:
        return torch.complex(randn(shape, seed), randn(shape, seed + 1))
    if dtype.is_floating_point:
        return randn(shape, seed, dtype=dtype)
    return ints(shape, seed, lo=0, hi=50, dtype=dtype)


@pytest.mark.parametrize("dtype", MF_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("value", [0, 1, 2.5, True], ids=["0", "1", "2.5", "True"])
def test_masked_fill_scalar(dtype, value):
    x = _mf_data(dtype, (4, 5), seed=34)
    m = bools((4, 5), seed=35)
    with Fallbacks(*MF_OPS) as fb:
        r = x.to("tpu").masked_fill(m.to("tpu"), value)
        r2 = torch.masked_fill(x.to("tpu"), m.to("tpu"), value)
    e = x.masked_fill(m, value)
    check_like_cpu(r, e, EXACT)
    check_like_cpu(r2, e, EXACT)
    fb.assert_native()


@pytest.mark.parametrize("value", [NAN, INF, -INF, -0.0, 1e30], ids=str)
def test_masked_fill_special_values(value):
    x = randn((3, 4), seed=36)
    m = bools((3, 4), seed=37)
    with Fallbacks(*MF_OPS) as fb:
        r = x.to("tpu").masked_fill(m.to("tpu"), value)
    check_like_cpu(r, x.masked_fill(m, value), EXACT)
    fb.assert_native()


@pytest.mark.parametrize("mask_shape", [(5,), (4, 1), (1, 5), (), (1, 1)], ids=str)
def test_masked_fill_broadcast_mask(mask_shape):
    x = randn((4, 5), seed=38)
    m = bools(mask_shape, seed=39) if mask_shape else torch.tensor(True)
    with Fallbacks(*MF_OPS) as fb:
        r = x.to("tpu").masked_fill(m.to("tpu"), -1.5)
        t = x.to("tpu")
        t.masked_fill_(m.to("tpu"), 7)
    check_like_cpu(r, x.masked_fill(m, -1.5), EXACT)
    check_like_cpu(t, x.clone().masked_fill_(m, 7), EXACT)
    fb.assert_native()


def test_masked_fill_mask_larger_than_self():
    # Out of place broadcasts self up to the mask; in place raises like CPU.
    x = randn((3,), seed=40)
    m = bools((2, 3), seed=41)
    with Fallbacks(*MF_OPS) as fb:
        r = x.to("tpu").masked_fill(m.to("tpu"), 1.0)
    check_like_cpu(r, x.masked_fill(m, 1.0), EXACT)
    fb.assert_native()
    raises_like_cpu_msg(lambda a, b: a.masked_fill_(b, 1.0), (x.clone(), m),
                    (x.to("tpu"), m.to("tpu")))


@pytest.mark.parametrize("where", ["cpu", "tpu"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32], ids=dtype_id)
def test_masked_fill_zero_dim_tensor_value(where, dtype):
    x = _mf_data(dtype, (3, 4), seed=42)
    m = bools((3, 4), seed=43)
    v = torch.tensor(2.5, dtype=torch.float64)   # cast to x's dtype, as CPU does
    with Fallbacks(*MF_OPS) as fb:
        r = x.to("tpu").masked_fill(m.to("tpu"), v.to(where))
        t = x.to("tpu")
        t.masked_fill_(m.to("tpu"), v.to(where))
    check_like_cpu(r, x.masked_fill(m, v), EXACT)
    check_like_cpu(t, x.clone().masked_fill_(m, v), EXACT)
    fb.assert_native()


def test_masked_fill_inplace():
    x = randn((4, 5), seed=44)
    m = bools((4, 5), seed=45)
    t = x.to("tpu")
    with Fallbacks(*MF_OPS) as fb:
        r = t.masked_fill_(m.to("tpu"), 3.0)
    assert r is t
    check_like_cpu(t, x.clone().masked_fill_(m, 3.0), EXACT)
    fb.assert_native()


def test_masked_fill_inplace_on_view():
    x = randn((3, 4), seed=46)
    m = bools((3, 3), seed=47)
    t = x.to("tpu")
    e = x.clone()
    with Fallbacks(*MF_OPS) as fb:
        t[:, 1:].masked_fill_(m.to("tpu"), 0)
        e[:, 1:].masked_fill_(m, 0)
        t.t()[1:3].masked_fill_(m[:2].to("tpu"), -9)   # through a transpose
        e.t()[1:3].masked_fill_(m[:2], -9)
        t[2].masked_fill_(torch.tensor(True).to("tpu"), 5)
        e[2].masked_fill_(torch.tensor(True), 5)
    check_like_cpu(t, e, EXACT)
    fb.assert_native()


def test_masked_fill_noncontiguous_operands():
    x = randn((6, 8), seed=48)
    m = bools((8, 6), seed=49)
    with Fallbacks(*MF_OPS) as fb:
        r = x.to("tpu").masked_fill(m.to("tpu").t(), 1.0)
        r2 = x.to("tpu")[::2, 1::2].masked_fill(m.to("tpu").t()[::2, 1::2], -1.0)
    check_like_cpu(r, x.masked_fill(m.t(), 1.0), EXACT)
    check_like_cpu(r2, x[::2, 1::2].masked_fill(m.t()[::2, 1::2], -1.0), EXACT)
    fb.assert_native()


def test_masked_fill_attention_mask():
    # The causal-attention idiom: -inf above the diagonal, then softmax.
    scores = randn((2, 3, 5, 5), seed=50)
    causal = torch.ones(5, 5, dtype=torch.bool).triu(1)
    with Fallbacks(*MF_OPS, *SOFTMAX_OPS) as fb:
        s = scores.to("tpu").masked_fill(causal.to("tpu"), -INF)
        p = s.softmax(-1)
    es = scores.masked_fill(causal, -INF)
    check_like_cpu(s, es, EXACT)
    check_like_cpu(p, es.softmax(-1))
    pc = p.cpu()
    assert (pc[..., 0, 1:] == 0).all() and torch.allclose(pc[..., 0, 0], torch.ones(2, 3))
    fb.assert_native()


def test_masked_fill_zero_elements_and_zero_dim():
    z, mz = torch.zeros((0, 3)), torch.zeros((0, 3), dtype=torch.bool)
    s = torch.tensor(1.5)
    with Fallbacks(*MF_OPS) as fb:
        r = z.to("tpu").masked_fill(mz.to("tpu"), 1.0)
        r0 = s.to("tpu").masked_fill(torch.tensor(True).to("tpu"), -2.0)
        r1 = s.to("tpu").masked_fill(torch.tensor(False).to("tpu"), -2.0)
    check_like_cpu(r, z.masked_fill(mz, 1.0), EXACT)
    check_like_cpu(r0, s.masked_fill(torch.tensor(True), -2.0), EXACT)
    check_like_cpu(r1, s.masked_fill(torch.tensor(False), -2.0), EXACT)
    fb.assert_native()


@pytest.mark.parametrize("mask_dtype", [torch.int32, torch.uint8, torch.float32], ids=dtype_id)
def test_masked_fill_non_bool_mask_raises_like_cpu(mask_dtype):
    # CPU: "masked_fill_ only supports boolean masks, but got mask with dtype int".
    x = torch.zeros(3, 4)
    m = bools((3, 4), seed=51).to(mask_dtype)
    raises_like_cpu_msg(lambda a, b: a.masked_fill(b, 1.0), (x, m), (x.to("tpu"), m.to("tpu")))
    raises_like_cpu_msg(lambda a, b: a.masked_fill_(b, 1.0), (x.clone(), m),
                    (x.to("tpu"), m.to("tpu")))


def test_masked_fill_value_errors_raise_like_cpu():
    x = torch.zeros(3)
    m = torch.tensor([True, False, True])
    # A 1-D value tensor.
    raises_like_cpu_msg(lambda a, b: a.masked_fill(b, torch.tensor([1.0, 2.0])), (x, m),
                    (x.to("tpu"), m.to("tpu")))
    # A value that overflows the tensor's dtype.
    i8 = torch.zeros(3, dtype=torch.int8)
    raises_like_cpu_msg(lambda a, b: a.masked_fill(b, 1000), (i8, m), (i8.to("tpu"), m.to("tpu")))


def test_masked_fill_complex_value_on_real_raises_like_cpu():
    # CPU: "value cannot be converted to type float without overflow".
    x = torch.zeros(3)
    m = torch.tensor([True, False, True])
    raises_like_cpu_msg(lambda a, b: a.masked_fill(b, 1 + 2j), (x, m), (x.to("tpu"), m.to("tpu")))


def test_masked_fill_mask_on_cpu_raises():
    t = torch.zeros(3, device="tpu")
    with pytest.raises(RuntimeError, match="same device"):
        t.masked_fill(torch.tensor([True, False, True]), 1.0)
        torch.tpu.synchronize()


DEV = "tpu"


NAN, INF = float("nan"), float("inf")


def t(x):
    return x.to(DEV)


SPECIAL = torch.tensor([NAN, INF, -INF, -0.0, 0.0, 1.5, -2.5, 3.0, -NAN, 1e-3, 7.0, -1.0])


def pair(dtype, seed=0):
    a = make(dtype, (4, 6), seed=seed)
    b = make(dtype, (4, 6), seed=seed + 1)
    if dtype.is_floating_point:
        # specials on both sides, including equal infinities and zeros
        a.view(-1)[:12] = SPECIAL.to(dtype)
        b.view(-1)[:12] = SPECIAL.flip(0).to(dtype)
        b.view(-1)[12:15] = a.view(-1)[:3]
    return a, b


BINARY = {
    "copysign": torch.copysign,
    "fmax": torch.fmax,
    "fmin": torch.fmin,
    "logaddexp": torch.logaddexp,
    "logaddexp2": torch.logaddexp2,
    "xlogy": torch.xlogy,
    "heaviside": torch.heaviside,
}


FLOATS_ALL = [torch.float32, torch.float16, torch.bfloat16, torch.float64]


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("dtype", FLOATS_ALL, ids=str)
def test_binary_float(name, dtype):
    fn = BINARY[name]
    a, b = pair(dtype)
    with NativeOnly():
        check_close(fn(t(a), t(b)), fn(a, b))
        # non-contiguous and broadcast operands
        check_close(fn(t(a).t(), t(b)[:1].t()), fn(a.t(), b[:1].t()))


@pytest.mark.parametrize("name", ["copysign", "fmax", "fmin", "xlogy", "heaviside"])
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8, torch.bool], ids=str)
def test_binary_integer(name, dtype):
    fn = BINARY[name]
    a, b = make(dtype, (3, 5)), make(dtype, (3, 5), seed=3)
    if dtype != torch.bool:
        a, b = a % 7 - (3 if dtype != torch.uint8 else 0), b % 5
    with NativeOnly():
        check_close(fn(t(a), t(b)), fn(a, b), tol=dict(rtol=1e-6, atol=1e-6))


def test_binary_scalars_and_promotion():
    a = make(torch.float16, (3, 4))
    i = torch.arange(12).reshape(3, 4) - 5
    with NativeOnly():
        check_close(torch.copysign(t(a), -1.0), torch.copysign(a, -1.0))
        check_close(torch.copysign(t(i), t(a)), torch.copysign(i, a), CHECK_TOL[torch.float16])
        check_close(torch.xlogy(t(a).float(), 2.0), torch.xlogy(a.float(), 2.0))
        check_close(torch.xlogy(3, t(a).float().abs()), torch.xlogy(3, a.float().abs()))
        check_close(torch.fmax(t(i), t(a)), torch.fmax(i, a), CHECK_TOL[torch.float16])
        check_close(torch.logaddexp(t(a), t(a.double())), torch.logaddexp(a, a.double()))


def test_binary_inplace_and_out():
    a, b = pair(torch.float32)
    with NativeOnly():
        for name in ["copysign", "xlogy", "heaviside"]:
            x, y = a.clone(), t(a.clone())
            getattr(x, name + "_")(b)
            getattr(y, name + "_")(t(b))
            check_close(y, x)
        for name, fn in BINARY.items():
            out = torch.empty(4, 6, device=DEV)
            r = fn(t(a), t(b), out=out)
            assert r is out
            check_close(out, fn(a, b))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64, torch.int32,
                                   torch.int8, torch.uint8, torch.bool], ids=str)
def test_signbit(dtype):
    x = make(dtype, (4, 6)) if not dtype.is_floating_point else SPECIAL.to(dtype).view(3, 4)
    with NativeOnly():
        check_close(torch.signbit(t(x)), torch.signbit(x))
        out = torch.empty(0, dtype=torch.bool, device=DEV)
        torch.signbit(t(x), out=out)
        check_close(out, torch.signbit(x))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool,
                                   torch.complex64], ids=str)
def test_angle(dtype):
    x = SPECIAL.to(dtype) if dtype.is_floating_point else make(dtype, (12,))
    if dtype.is_complex:
        x = torch.complex(SPECIAL, SPECIAL.flip(0))
    with NativeOnly():
        check_close(torch.angle(t(x)), torch.angle(x))


def test_complex_and_polar():
    re, im = make(torch.float32, (3, 4), specials=False), make(torch.float32, (4,), seed=2,
                                                              specials=False)
    with NativeOnly():
        check_close(torch.complex(t(re), t(im)), torch.complex(re, im))
        check_close(torch.complex(t(re.double()), t(im.double())), torch.complex(re.double(), im.double()))
        check_close(torch.polar(t(re.abs()), t(im)), torch.polar(re.abs(), im), dict(rtol=1e-5, atol=1e-4))
        out = torch.empty(3, 4, dtype=torch.complex64, device=DEV)
        torch.complex(t(re), t(im), out=out)
        check_close(out, torch.complex(re, im))
    # complex32 is held on tpu but computed by CPU's kernel (test_dtypes_storage.py)
    h = re.half()
    c = torch.complex(t(h), t(h))
    assert c.dtype == torch.complex32 and c.device.type == DEV
    assert torch.equal(c.cpu().view(torch.int32), torch.complex(h, h).view(torch.int32))
    same_error(torch.polar, (h, h), NotImplementedError)


def test_rsub():
    a, b = pair(torch.float32)
    i = torch.arange(6)
    with NativeOnly():
        check_close(torch.rsub(t(a), t(b), alpha=2), torch.rsub(a, b, alpha=2))
        check_close(torch.rsub(t(i), t(i * 3)), torch.rsub(i, i * 3))
        check_close(3 - t(i), 3 - i)
        check_close(2.5 - t(a), 2.5 - a)


def test_pointwise_autograd():
    a, b = make(torch.float32, (3, 4), specials=False), make(torch.float32, (3, 4), seed=1,
                                                             specials=False)
    for fn in [torch.logaddexp, torch.logaddexp2, torch.fmax, torch.fmin, torch.copysign,
               lambda x, y: torch.xlogy(x, y.abs()), lambda x, y: torch.rsub(x, y, alpha=3)]:
        ac, bc = a.clone().requires_grad_(), b.clone().requires_grad_()
        at, bt = t(a).requires_grad_(), t(b).requires_grad_()
        with NativeOnly():
            fn(at, bt).sum().backward()
        fn(ac, bc).sum().backward()
        check_close(at.grad, ac.grad)
        check_close(bt.grad, bc.grad)


def test_pointwise_errors():
    i = torch.arange(4)
    c = torch.complex(torch.ones(2), torch.ones(2))
    f = torch.ones(4)
    same_error(torch.logaddexp, (i, i), NotImplementedError)
    same_error(torch.logaddexp2, (c, c), NotImplementedError)
    same_error(torch.copysign, (c, c), NotImplementedError)
    same_error(torch.xlogy, (c, c), NotImplementedError)
    same_error(torch.signbit, (c,), NotImplementedError)
    same_error(torch.fmax, (c, c))
    same_error(torch.heaviside, (f, f.double()))
    same_error(torch.heaviside, (c, c))
    same_error(torch.complex, (i, i))
    same_error(torch.complex, (f, f.double()))
    same_error(torch.polar, (f, f.double()))
    same_error(torch.rsub, (i.bool(), i.bool()))


def test_complex_logaddexp_runs_cpus_kernel():
    c = torch.complex(torch.randn(5), torch.randn(5))
    torch_pjrt.reset_fallbacks()
    check_close(torch.logaddexp(t(c), t(c)), torch.logaddexp(c, c))
    assert "aten::logaddexp" in torch_pjrt.fallbacks()


def test_clamp_tensor_bounds():
    x = make(torch.float32, (4, 6))
    lo = make(torch.float32, (6,), seed=1, specials=False) - 20
    hi = lo + 40
    hi[2] = NAN
    with NativeOnly():
        check_close(torch.clamp(t(x), t(lo), t(hi)), torch.clamp(x, lo, hi))
        check_close(torch.clamp(t(x), min=t(lo)), torch.clamp(x, min=lo))
        check_close(torch.clamp(t(x), max=t(hi)), torch.clamp(x, max=hi))
        check_close(torch.clamp_min(t(x), t(lo)), torch.clamp_min(x, lo))
        check_close(torch.clamp_max(t(x), t(hi)), torch.clamp_max(x, hi))
        i = torch.arange(12).reshape(2, 6)
        check_close(torch.clamp(t(i), t(lo), t(hi)), torch.clamp(i, lo, hi))
        out = torch.empty(4, 6, device=DEV)
        torch.clamp_min(t(x), t(lo), out=out)
        check_close(out, torch.clamp_min(x, lo))
        a = make(torch.float32, (6,), specials=False).requires_grad_()
        at = t(a.detach()).requires_grad_()
        torch.clamp(at, t(lo), t(hi).nan_to_num()).sum().backward()
    torch.clamp(a, lo, hi.nan_to_num()).sum().backward()
    check_close(at.grad, a.grad)


def test_fill_tensor_value():
    with NativeOnly():
        x, xt = torch.zeros(3, 4), torch.zeros(3, 4, device=DEV)
        v = torch.tensor(2.5)
        x[:, 1].fill_(v)
        xt[:, 1].fill_(t(v))
        check_close(xt, x)
        xt.fill_(v)  # a CPU 0-d value
        check_close(xt, torch.full((3, 4), 2.5))
        it = torch.zeros(5, dtype=torch.int32, device=DEV)
        it.fill_(t(torch.tensor(7.9)))
        check_close(it, torch.zeros(5, dtype=torch.int32).fill_(torch.tensor(7.9)))
    same_error(lambda a, b: a.fill_(b), (torch.zeros(3), torch.ones(2)))


def test_pow_scalar_base_and_ldexp():
    e = torch.tensor([-2.0, 0.5, NAN, 3.0, INF])
    i = torch.arange(5)
    with NativeOnly():
        check_close(torch.pow(2.0, t(e)), torch.pow(2.0, e))
        check_close(torch.pow(1, t(e)), torch.pow(1, e))
        check_close(torch.pow(3, t(i)), torch.pow(3, i))
        check_close(torch.ldexp(t(e), t(i)), torch.ldexp(e, i))
        out = torch.empty(5, device=DEV)
        torch.pow(2.0, t(e), out=out)
        check_close(out, torch.pow(2.0, e))


def test_sgn_grad_zero_tensor():
    x = make(torch.float32, (3, 4), specials=False)
    xc, xt = x.clone().requires_grad_(), t(x).requires_grad_()
    torch.sgn(xc).sum().backward()
    with NativeOnly():
        torch.sgn(xt).sum().backward()
    check_close(xt.grad, xc.grad)


def test_conj_physical():
    c = torch.complex(make(torch.float32, (3, 4), specials=False), make(torch.float32, (3, 4), 1,
                                                                      specials=False))
    with NativeOnly():
        check_close(torch.conj_physical(t(c)), torch.conj_physical(c))
        check_close(torch.conj_physical(t(c).conj()), torch.conj_physical(c.conj()))
        out = torch.empty(3, 4, dtype=torch.complex64, device=DEV)
        torch.conj_physical(t(c), out=out)
        check_close(out, torch.conj_physical(c))
        x = make(torch.float32, (5,))
        out = torch.empty(5, device=DEV)
        torch.conj_physical(t(x), out=out)
        check_close(out, x)


@pytest.mark.parametrize("dtype", FLOATS_ALL, ids=str)
def test_frexp(dtype):
    x = make(dtype, (4, 6))
    x.view(-1)[:4] = torch.tensor([-0.0, 1.0, -3.0, 0.75], dtype=dtype)
    tiny = torch.finfo(dtype).tiny
    x.view(-1)[4:7] = torch.tensor([tiny / 2, -tiny / 8, tiny], dtype=torch.float64).to(dtype)
    with NativeOnly():
        m, e = torch.frexp(t(x))
        em, ee = torch.frexp(x)
        check_close(m, em)
        check_close(e, ee)
        m2, e2 = torch.frexp(t(x).t())
        check_close(m2, em.t())
        outs = (torch.empty(0, dtype=dtype, device=DEV), torch.empty(0, dtype=torch.int32, device=DEV))
        torch.frexp(t(x), out=outs)
        check_close(outs[0], em)
        check_close(outs[1], ee)
    same_error(torch.frexp, (torch.arange(3),))
    same_error(lambda a: torch.frexp(a, out=(torch.empty(3, dtype=torch.float64),
                                             torch.empty(3, dtype=torch.int32))), (torch.ones(3),))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8])
def test_gcd_lcm_match_cpu(dtype):
    info = torch.iinfo(dtype)
    g = torch.Generator().manual_seed(9)
    a = torch.randint(max(info.min, -1000), min(info.max, 1000), (40,), generator=g).to(dtype)
    b = torch.randint(max(info.min, -1000), min(info.max, 1000), (40,), generator=g).to(dtype)
    # zeros, extremes, Fibonacci neighbours (Euclid's longest case)
    a[:5] = torch.tensor([0, 0, info.min, info.max, 144 if info.max > 144 else 89]).to(dtype)
    b[:5] = torch.tensor([0, 7, 6, info.max - 1, 89 if info.max > 144 else 55]).to(dtype)
    if dtype == torch.int64:
        a[5], b[5] = 7540113804746346429, 4660046610375530309  # F(92), F(91)
    with NativeOnly():
        r1 = torch.gcd(t(a), t(b))
        r2 = torch.lcm(t(a), t(b))
        x = t(a)
        x.gcd_(t(b))
        o = torch.empty(0, device=DEV, dtype=dtype)
        torch.lcm(t(a), t(b), out=o)
    assert torch.equal(r1.cpu(), torch.gcd(a, b))
    assert torch.equal(r2.cpu(), torch.lcm(a, b))
    assert torch.equal(x.cpu(), torch.gcd(a, b))
    assert torch.equal(o.cpu(), torch.lcm(a, b))
    same_error_meta(torch.gcd, [torch.zeros(2), torch.zeros(2)], exc=NotImplementedError,
               match="gcd_cpu")


NAN, INF = float("nan"), float("inf")


TOL_math = {
    torch.float16: dict(rtol=2e-3, atol=2e-3),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1.6e-2),
    torch.float32: dict(rtol=1e-5, atol=1e-5),
    torch.float64: dict(rtol=1e-12, atol=1e-12),
}


EXACT_math = {}


def to_tpu_math(a):
    return a.to("tpu") if isinstance(a, torch.Tensor) else a


def native(f, *args, tol=TOL_math):
    """f on tpu copies of args matches f on CPU, with no CPU fallback at all."""
    expected = f(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
    targs = [to_tpu_math(a) for a in args]
    torch_pjrt.reset_fallbacks()
    actual = f(*targs)
    fb = torch_pjrt.fallbacks()
    check_math(actual, expected, tol)
    assert fb == {}, f"ran on the CPU (fallback): {fb}"
    return actual


def raises_like_cpu_math(f, *args, match=None):
    with pytest.raises(Exception) as cpu_err:
        f(*args)
    with pytest.raises(type(cpu_err.value)) as tpu_err:
        r = f(*[to_tpu_math(a) for a in args])
        if isinstance(r, torch.Tensor):
            r.cpu()
    if match is None:
        match = re.escape(str(cpu_err.value).splitlines()[0])
    assert re.search(match, str(tpu_err.value)), (str(tpu_err.value), str(cpu_err.value))


def fdata_math(dtype, shape, lo, hi, seed=0, specials=()):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo
    flat = x.reshape(-1)
    for i, v in enumerate(specials):
        flat[(i * 7 + 3) % flat.numel()] = v
    return x.to(dtype)


def idata_math(dtype, shape, lo=-20, hi=20, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    return torch.randint(lo, hi, shape, generator=g).to(dtype)


UNARY_math = {  # name: (fn, lo, hi, specials)
    "erf": (torch.erf, -3, 3, (NAN, INF, -INF, 0.0)),
    "erfc": (torch.erfc, -3, 3, (NAN, INF, -INF)),
    "erfinv": (torch.erfinv, -0.99, 0.99, (NAN, 1.0, -1.0, 0.0)),
    "tan": (torch.tan, -1.4, 1.4, (NAN, 0.0)),
    "asin": (torch.asin, -1, 1, (NAN, 1.0, -1.0, 2.0)),
    "acos": (torch.acos, -1, 1, (NAN, 1.0, -1.0, 2.0)),
    "atan": (torch.atan, -10, 10, (NAN, INF, -INF)),
    "sinh": (torch.sinh, -5, 5, (NAN, INF, -INF, 1e-4)),
    "cosh": (torch.cosh, -5, 5, (NAN, INF, -INF)),
    "asinh": (torch.asinh, -10, 10, (NAN, INF, -INF, 1e-4)),
    "acosh": (torch.acosh, 1, 10, (NAN, INF, 0.5)),
    "atanh": (torch.atanh, -0.99, 0.99, (NAN, 1.0, -1.0, 2.0)),
    "log2": (torch.log2, 0.01, 100, (NAN, INF, 0.0, -1.0, 8.0)),
    "log10": (torch.log10, 0.01, 100, (NAN, INF, 0.0, -1.0, 1000.0)),
    "exp2": (torch.exp2, -10, 10, (NAN, INF, -INF, 3.0)),
    "reciprocal": (torch.reciprocal, 0.1, 10, (NAN, INF, 0.0, -0.5)),
}


UNARY_CASES_math = [(n, d) for n in UNARY_math for d in (torch.float32, torch.bfloat16, torch.int64)]


@pytest.mark.parametrize("name,dtype", UNARY_CASES_math, ids=[f"{n}-{dtype_id(d)}" for n, d in UNARY_CASES_math])
def test_float_unary(name, dtype):
    fn, lo, hi, specials = UNARY_math[name]
    if dtype.is_floating_point:
        x = fdata_math(dtype, (6, 5), lo, hi, seed=1, specials=specials)
    else:
        x = idata_math(dtype, (6, 5), max(int(lo), -3), max(int(hi), 2) + 1)
    r = native(fn, x)
    if not dtype.is_floating_point:
        assert r.dtype == torch.float32
    # non-contiguous input, in-place and out= forms
    xt = fdata_math(torch.float32, (5, 6), lo, hi, seed=2).t()
    native(fn, xt)
    native(lambda a: getattr(a, name + "_")(), fdata_math(torch.float32, (4,), lo, hi, seed=3))
    native(lambda a, o: fn(a, out=o), fdata_math(torch.float32, (4,), lo, hi, seed=4),
           torch.empty(0))


def test_float_unary_inplace_on_int_raises():
    raises_like_cpu_math(lambda a: a.tan_(), torch.arange(3))


ROUND = {"floor": torch.floor, "ceil": torch.ceil, "trunc": torch.trunc, "round": torch.round,
         "frac": torch.frac, "sign": torch.sign, "sgn": torch.sgn}


HALVES = (NAN, INF, -INF, -0.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997)


@pytest.mark.parametrize("name", list(ROUND))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool],
                         ids=dtype_id)
def test_rounding(name, dtype):
    fn = ROUND[name]
    if dtype.is_floating_point:
        x = fdata_math(dtype, (5, 6), -10, 10, seed=5, specials=HALVES)
    else:
        x = idata_math(dtype, (5, 6))
    if (dtype == torch.bool and name not in ("sign", "sgn")) or (dtype == torch.int64 and name == "frac"):
        raises_like_cpu_math(fn, x)
        return
    native(fn, x, tol=EXACT_math if name != "frac" else TOL_math)
    if dtype == torch.float32:
        native(fn, x.t())
        native(lambda a: getattr(a, name + "_")(), x)
        native(lambda a, o: fn(a, out=o), x, torch.empty(2, dtype=dtype))


@pytest.mark.parametrize("decimals", [2, -1, 0])
def test_round_decimals(decimals):
    x = fdata_math(torch.float32, (4, 5), -500, 500, seed=6, specials=(NAN, INF, 1.005, 125.0))
    native(lambda a: torch.round(a, decimals=decimals), x)
    native(lambda a: a.round_(decimals=decimals), x)
    native(lambda a, o: torch.round(a, decimals=decimals, out=o), x, torch.empty(0))
    native(lambda a: torch.round(a, decimals=decimals), x.bfloat16())
    raises_like_cpu_math(lambda a: torch.round(a, decimals=1), torch.arange(3))


def test_sign_complex_raises_sgn_works():
    z = torch.tensor([3 + 4j, 0j, -2j], dtype=torch.complex64)
    raises_like_cpu_math(torch.sign, z)
    native(torch.sgn, z, tol={torch.complex64: dict(rtol=1e-6, atol=1e-6)})


BITWISE = {"and": (torch.bitwise_and, lambda a, b: a & b),
           "or": (torch.bitwise_or, lambda a, b: a | b),
           "xor": (torch.bitwise_xor, lambda a, b: a ^ b)}


@pytest.mark.parametrize("name", list(BITWISE))
@pytest.mark.parametrize("da,db", [(torch.int64, torch.int64), (torch.int32, torch.int64),
                                   (torch.bool, torch.bool), (torch.uint8, torch.bool)],
                         ids=lambda d: dtype_id(d))
def test_bitwise(name, da, db):
    fn, op = BITWISE[name]
    a, b = idata_math(da, (4, 5), -100, 100, seed=1), idata_math(db, (5,), -100, 100, seed=2)
    if da == torch.uint8:
        a = idata_math(da, (4, 5), 0, 255)
    native(fn, a, b)
    native(op, a.t().contiguous().t(), b)  # non-contiguous
    native(lambda x: op(x, 6), a)          # Tensor op Scalar
    native(lambda x: op(3, x), a)          # Scalar op Tensor
    native(lambda x, y: fn(x, y, out=torch.empty(0, dtype=x.dtype, device=x.device)), a, b)
    if da == db:
        native(lambda x, y: getattr(x, f"bitwise_{name}_")(y), a, b)


def test_bitwise_not_and_errors():
    for dt in (torch.int64, torch.int8, torch.bool, torch.uint8):
        x = idata_math(dt, (3, 4), -100, 100)
        native(torch.bitwise_not, x)
        native(lambda a: ~a, x.t())
        native(lambda a: a.bitwise_not_(), x)
    f = torch.randn(3)
    raises_like_cpu_math(torch.bitwise_and, f, f)
    raises_like_cpu_math(lambda a: a & 1, f)
    raises_like_cpu_math(lambda a: torch.bitwise_or(a, 1.5), torch.arange(3))
    raises_like_cpu_math(torch.bitwise_not, f)
    raises_like_cpu_math(lambda a: ~a, f)


LOGICAL = {"and": torch.logical_and, "or": torch.logical_or, "xor": torch.logical_xor}


@pytest.mark.parametrize("name", list(LOGICAL))
def test_logical(name):
    fn = LOGICAL[name]
    f = fdata_math(torch.float32, (4, 5), -1, 1, specials=(0.0, NAN, -0.0, 0.0))
    i = idata_math(torch.int64, (5,), -2, 2)
    b = idata_math(torch.bool, (4, 5))
    for x, y in ((f, i), (b, b), (i, b), (f.bfloat16(), f)):
        native(fn, x, y)
    native(fn, f.t(), b.t())
    native(lambda x, y, o: fn(x, y, out=o), f, i, torch.empty(0, dtype=torch.int32))
    native(lambda x, y: getattr(x, f"logical_{name}_")(y), f, b)


def test_logical_not():
    f = fdata_math(torch.float32, (4, 5), -1, 1, specials=(0.0, NAN, -0.0))
    for x in (f, f.bfloat16(), idata_math(torch.int64, (3,), -2, 2), idata_math(torch.bool, (6,))):
        native(torch.logical_not, x)
    native(lambda x, o: torch.logical_not(x, out=o), f, torch.empty(0, dtype=torch.int32))
    native(lambda x: x.logical_not_(), f)


DIVS = {
    "remainder": torch.remainder,
    "fmod": torch.fmod,
    "floor_divide": torch.floor_divide,
    "div_trunc": lambda a, b, **kw: torch.div(a, b, rounding_mode="trunc", **kw),
    "div_floor": lambda a, b, **kw: torch.div(a, b, rounding_mode="floor", **kw),
}


@pytest.mark.parametrize("name", list(DIVS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.int32],
                         ids=dtype_id)
def test_division_family(name, dtype):
    fn = DIVS[name]
    if dtype.is_floating_point:
        a = fdata_math(dtype, (4, 6), -20, 20, seed=1, specials=(NAN, INF, -INF, 0.0, -0.0, 6.0, -6.0))
        b = fdata_math(dtype, (6,), -5, 5, seed=2, specials=(0.0, -0.0, INF, 3.0, -3.0))
    else:
        a = idata_math(dtype, (4, 6), -20, 20, seed=1)
        b = idata_math(dtype, (6,), 1, 6, seed=2) * torch.tensor([1, -1, 1, -1, 1, -1], dtype=dtype)
    native(fn, a, b, tol=TOL_math)
    native(fn, a.t().contiguous().t(), b)
    native(lambda x: fn(x, 3), a)
    native(lambda x: fn(x, -2.5), a)
    native(lambda x, y: fn(x, y, out=torch.empty(0, dtype=x.dtype, device=x.device)), a, b)
    if name in ("remainder", "fmod", "floor_divide"):
        native(lambda x, y: getattr(x, name + "_")(y), a, b)
    else:
        mode = name.split("_")[1]
        native(lambda x, y: x.div_(y, rounding_mode=mode), a, b)
    if not dtype.is_floating_point:
        raises_like_cpu_math(fn, a, torch.zeros_like(b))
        raises_like_cpu_math(lambda x: fn(x, 0), a)


def test_division_operators_and_errors():
    a, b = idata_math(torch.int64, (7,), -9, 9), idata_math(torch.int64, (7,), 1, 4)
    native(lambda x, y: x // y, a, -b)
    native(lambda x, y: x % y, a, -b)
    native(lambda x: 7 % x, b)
    native(lambda x, y: x // y, a.float(), b.float())
    native(lambda x: x % 1.5, a.float())
    bo = idata_math(torch.bool, (4,))
    for fn in (torch.remainder, torch.fmod, torch.floor_divide):
        raises_like_cpu_math(fn, bo, bo)
    raises_like_cpu_math(lambda x, y: torch.div(x, y, rounding_mode="bad"), a, b)
    raises_like_cpu_math(lambda x, y: x.div_(y, rounding_mode="floor"), a, b.float())
    # integer division by zero raises as on CPU, but an empty result divides
    # nothing (take_along_dim on empty tensors computes index % 0)
    raises_like_cpu_math(lambda x: x % 0, a)
    raises_like_cpu_math(lambda x, y: torch.div(x, y * 0, rounding_mode="trunc"), a, b)
    native(lambda x: x % 0, a[:0])
    native(lambda x, y: torch.div(x, y * 0, rounding_mode="floor"), a[:0], b[:1])
    native(lambda x, i: torch.take_along_dim(x, i, dim=1), a.reshape(1, 7)[:0], b.reshape(1, 7)[:0])


def test_atan2_hypot():
    a = fdata_math(torch.float32, (4, 5), -3, 3, seed=1, specials=(NAN, INF, -INF, 0.0, -0.0))
    b = fdata_math(torch.float32, (5,), -3, 3, seed=2, specials=(INF, 0.0, -0.0))
    for fn in (torch.atan2, torch.hypot):
        native(fn, a, b)
        native(fn, a.bfloat16(), b.bfloat16())
        native(fn, a.t(), a.t())
        native(lambda x, y: getattr(x, fn.__name__ + "_")(y), a, b)
        native(lambda x, y, o: fn(x, y, out=o), a, b, torch.empty(0))
    native(torch.atan2, idata_math(torch.int64, (5,)), idata_math(torch.int32, (5,), seed=2))
    big = torch.tensor([1e30, 3e38, 0.0, NAN, 5.0])
    native(torch.hypot, big, torch.tensor([1e30, 3e38, 0.0, INF, 12.0]))
    raises_like_cpu_math(torch.hypot, torch.arange(3), torch.arange(3))


def test_nan_to_num_and_isnan():
    x = fdata_math(torch.float32, (4, 5), -3, 3, specials=(NAN, INF, -INF, NAN))
    native(torch.nan_to_num, x)
    native(lambda a: torch.nan_to_num(a, nan=1.5, posinf=1e40, neginf=-7.0), x)
    native(lambda a: torch.nan_to_num(a, posinf=100.0), x.bfloat16())
    native(torch.nan_to_num, x.half())
    native(torch.nan_to_num, idata_math(torch.int64, (5,)))
    native(lambda a: a.nan_to_num_(nan=0.5), x)
    native(lambda a, o: torch.nan_to_num(a, out=o), x.t(), torch.empty(0))
    for t in (x, x.bfloat16(), idata_math(torch.int64, (5,)), idata_math(torch.bool, (5,))):
        native(torch.isnan, t)


def test_isinf_isfinite_square():
    x = fdata_math(torch.float32, (4, 5), -3, 3, specials=(NAN, INF, -INF))
    for fn in (torch.isinf, torch.isfinite, torch.isposinf, torch.isneginf, torch.square):
        native(fn, x)
    native(torch.square, idata_math(torch.int64, (5,)))


def test_casts_are_native():
    x = fdata_math(torch.float32, (3, 4), -100, 100, specials=(0.5, -0.5, 1e5))
    native(lambda a: a.to(torch.float16), x)
    native(lambda a: a.to(torch.bfloat16), x)
    native(lambda a: a.int(), x)
    native(lambda a: a.long(), x)
    native(lambda a: a.bool(), x)
    native(lambda a: a.float(), idata_math(torch.int64, (5,)))
    native(lambda a: a.long(), idata_math(torch.bool, (5,)))
    native(lambda a: a.t().to(torch.float16), x)


# The printing helpers also reduce with min/max and masked_select, which
# another op family makes native; only those may fall back here.
PRINT_ALLOWED = {"aten::masked_select", "aten::min", "aten::max"}


@pytest.mark.parametrize("make", [
    lambda: torch.randn(3, 3),
    lambda: torch.randn(4, 5) * 1e6,
    lambda: torch.tensor([1.5, NAN, INF, -INF, 0.25]),
    lambda: torch.randn(3, 3).bfloat16(),
    lambda: torch.randint(-1000, 1000, (3, 4)),
    lambda: torch.rand(3, 3) > 0.5,
    lambda: torch.tensor(2.5),
], ids=["f32", "f32-large", "f32-special", "bf16", "int64", "bool", "scalar"])
def test_print_is_native(make):
    x = make()
    t = x.to("tpu")
    torch_pjrt.reset_fallbacks()
    s = repr(t)
    fb = {k: v for k, v in torch_pjrt.fallbacks().items() if k.split(".")[0] not in PRINT_ALLOWED}
    assert fb == {}, f"printing fell back: {fb}"
    # The device suffix can move dtype=... to a line of its own (as on CUDA):
    # compare the text without the suffix and without layout.
    norm = lambda r: re.sub(r"\s+", "", r).replace(",device='tpu:0'", "")  # noqa: E731
    assert norm(s) == norm(repr(x)), (s, repr(x))


@pytest.mark.parametrize("fn", [torch.erf, torch.atan, torch.asinh, torch.log2, torch.reciprocal,
                                lambda a: torch.atan2(a, a * 0.5 + 1), lambda a: torch.hypot(a, a + 1)],
                         ids=["erf", "atan", "asinh", "log2", "reciprocal", "atan2", "hypot"])
def test_grad_matches_cpu(fn):
    x = fdata_math(torch.float32, (6,), 0.2, 2.0, seed=9)
    xc = x.clone().requires_grad_()
    fn(xc).sum().backward()
    xt = x.to("tpu").requires_grad_()
    fn(xt).sum().backward()
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, rtol=1e-5, atol=1e-5)


# ---- issue 19 item 7: erf's tails, pow's special exponents, integer pow ----


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16],
                         ids=dtype_id)
def test_erf_tails_reach_one_like_cpu(dtype):
    # XLA's float32 erf stopped at +-0.99999982: erf(-10) + 1 was 1.8e-7
    x = torch.tensor([-INF, -20, -10, -6, -4, 4, 6, 10, INF, NAN], dtype=dtype)
    with NativeOnly():
        r = torch.erf(x.to("tpu"))
        torch.testing.assert_close((r + 1).cpu(), torch.erf(x) + 1, rtol=0, atol=0, equal_nan=True)


def test_erf_float32_within_three_ulps_of_float64_and_one_past_3_92():
    # XLA's erf (about 3 ulps) below 3.9192059, where the true erf rounds
    # to +-1 in float32; exactly +-1 from there on
    x = torch.linspace(-6, 6, 20001, dtype=torch.float32)
    ref = torch.erf(x.double())
    with NativeOnly():
        r = torch.erf(x.to("tpu")).cpu()
    ulp = torch.finfo(torch.float32).eps * ref.abs().clamp(min=torch.finfo(torch.float32).tiny)
    assert ((r.double() - ref).abs() / ulp).max().item() <= 3.0
    tail = x.abs() >= 3.9192059
    assert torch.equal(r[tail], x[tail].sign())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16],
                         ids=dtype_id)
@pytest.mark.parametrize("exponent", [0.5, -0.5], ids=str)
def test_pow_half_exponent_at_negative_inf_and_zero_like_cpu(dtype, exponent):
    # CPU's pow(Tensor, Scalar) is sqrt / rsqrt for +-0.5 in float32, float64
    # and bfloat16 (NaN at -inf, -0 and -inf at -0); float16 and
    # pow(Tensor, Tensor) keep pow's inf and +0
    x = torch.tensor([-INF, -0.0, 0.0, 4.0, -4.0, INF, NAN], dtype=dtype)
    e = torch.full_like(x, exponent)
    for f, a in ((lambda t: t ** exponent, (x,)), (torch.pow, (x, e))):
        with NativeOnly():
            r = f(*[v.to("tpu") for v in a]).cpu()
        want = f(*a)
        torch.testing.assert_close(r, want, rtol=0, atol=0, equal_nan=True)
        keep = ~want.isnan()
        assert torch.equal(r.signbit()[keep], want.signbit()[keep])


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8],
                         ids=dtype_id)
def test_pow_int_wraps_like_cpu(dtype):
    # XLA's integer power reads 6 bits of the exponent: 2 ** 64 was 1
    lo = 0 if dtype == torch.uint8 else -60
    base = torch.arange(lo, lo + 120).to(dtype)
    for e in (0, 1, 3, 7, 8, 9, 31, 32, 33, 63, 64, 65, 100):
        same("aten::pow", lambda t: t ** e, base)
    same("aten::pow", torch.pow, base, torch.arange(0, 120).to(dtype))
    same("aten::pow", lambda t: torch.pow(3, t), torch.arange(0, 120).to(dtype))
    if dtype != torch.uint8:  # negative tensor exponents: 1, +-1 or 0, as CPU's powi
        b = torch.tensor([0, 1, 2, 3, -1, -1, -2, 1, -1], dtype=dtype)
        e = torch.tensor([-1, -5, -2, 64, -3, -4, 65, -128, -128], dtype=dtype)
        same("aten::pow", torch.pow, b, e)


def test_nan_to_num_complex_like_cpu():
    # Found by tools/fuzz: CPU replaces in the real and imaginary parts.
    inf, nan = float("inf"), float("nan")
    x = torch.tensor([complex(nan, 1), complex(2, inf), complex(-inf, nan), -0.75 + 0.5j],
                     dtype=torch.complex64)
    for kw in ({}, {"nan": 1.0, "posinf": 2.0, "neginf": -3.0}):
        torch.testing.assert_close(torch.nan_to_num(x.to("tpu"), **kw).cpu(),
                                   torch.nan_to_num(x, **kw))


# ---- issue 19: the fuzzer's wrong answers (tools/fuzz) --------------------------

def _same_as_cpu(f, *args):
    """f on tpu equals f on CPU: dtype, shape, values (NaN where CPU has NaN)
    and the sign of every zero."""
    want = f(*args)
    got = f(*[to_tpu(a) for a in args])
    assert got.device.type == "tpu"
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got.cpu(), want, equal_nan=True, rtol=1e-6, atol=0)
    w, g = (torch.view_as_real(want), torch.view_as_real(got.cpu())) if want.is_complex() \
        else (want, got.cpu())
    if w.is_floating_point():
        assert torch.equal(torch.signbit(g[w == 0]), torch.signbit(w[w == 0])), (g, w)
    return got


def test_complex_to_bool_reads_both_parts():
    z = torch.complex(torch.tensor([0.0, 0.0, 1.0, -0.0, 2.0]),
                      torch.tensor([1.0, 0.0, 0.0, -0.0, -3.0]))
    _same_as_cpu(lambda x: x.to(torch.bool), z)
    _same_as_cpu(lambda x: x.to(torch.complex128).to(torch.bool), z)
    # a complex value filled into a bool tensor is z != 0 too
    m = torch.tensor([True, False, True])
    _same_as_cpu(lambda x, k: x.masked_fill(k, 1 + 2j), torch.tensor([False, False, False]), m)
    _same_as_cpu(lambda x, k: x.masked_fill(k, 0j), torch.tensor([True, True, True]), m)


def test_bool_times_nonfinite_is_nan_like_cpu():
    b = torch.tensor([[True], [False]])
    f = torch.tensor([INF, -INF, NAN, 2.0])
    _same_as_cpu(torch.mul, b, f)
    _same_as_cpu(torch.mul, f, b)
    _same_as_cpu(lambda s, x, y: torch.addcmul(s, x, y, value=2), torch.tensor([True]), b, f)
    _same_as_cpu(lambda s, x, y: torch.addcmul(s, x, y), torch.zeros(4), f, b)


def test_int_operand_of_a_half_op_is_cast_to_half_first():
    # CPU casts 70000 to float16 (inf) before floor-dividing
    i = torch.tensor([70000, -3, 7, 65519], dtype=torch.int32)
    for dt in (torch.float16, torch.bfloat16):
        h = torch.tensor([2.0], dtype=dt)
        _same_as_cpu(torch.floor_divide, i, h)
        _same_as_cpu(lambda a, c: torch.div(a, c, rounding_mode="trunc"), i, h)
        _same_as_cpu(torch.remainder, i, h)
        _same_as_cpu(lambda s, a, c: torch.addcmul(s, a, c), h, i, h)


def test_complex_pow_at_zero_and_inf_like_cpu():
    base = torch.complex(torch.tensor([0.0, -0.0, INF, -INF, 2.0, 0.0, 0.0, 1.5]),
                         torch.tensor([0.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.5]))
    exp = torch.complex(torch.tensor([1.75, 2.0, 1.0, 1.75, 0.5, 0.0, -1.0, -2.0]),
                        torch.tensor([-0.75, 0.0, 0.0, -0.75, 0.25, 0.0, 0.0, 1.0]))
    for dt in (torch.complex64, torch.complex128):
        want = base.to(dt) ** exp.to(dt)
        got = (base.to(dt).to("tpu") ** exp.to(dt).to("tpu")).cpu()
        torch.testing.assert_close(got, want, equal_nan=True, rtol=1e-5, atol=1e-6)
    # a real base promoted to complex (the fuzzer's reproducer)
    x = torch.tensor([INF, -0.0, -0.4089970488271134], dtype=torch.float64)
    e = torch.complex(torch.tensor(1.75), torch.tensor(-0.75))
    torch.testing.assert_close((x.to("tpu") ** e.to("tpu")).cpu(), x ** e, equal_nan=True)


def test_complex_square_through_an_infinity_like_cpu():
    # CPU's pow(x, 2) is x * x: (inf + 100i)^2 is inf + inf i, not NaN
    z = torch.complex(torch.tensor([INF, 1.5, -INF, 2.0]), torch.tensor([100.0, INF, 1.0, -0.5]))
    for f in (torch.square, lambda x: x ** 2, lambda x: torch.pow(x, 2)):
        want = f(z)
        torch.testing.assert_close(f(z.to("tpu")).cpu(), want, equal_nan=True)


def test_complex_sqrt_keeps_the_sign_of_a_zero_imaginary_part():
    z = torch.complex(torch.tensor([-1.0, -1.0, 4.0, -4.0, 0.0, -0.0, -2.5]),
                      torch.tensor([-0.0, 0.0, -0.0, -0.0, -0.0, 0.0, -0.0]))
    for dt in (torch.complex64, torch.complex128):
        _same_as_cpu(torch.sqrt, z.to(dt))
    x = torch.tensor([-0.21804587, 2.8123217, -2.0316570, 0.49605766]).to(torch.complex64)
    _same_as_cpu(lambda v: v.sin().sqrt(), x)


def test_writes_into_expanded_tensors_like_cpu():
    # fill_, zero_, index_fill_ and x[i] = v write through stride-0 views on CPU
    def fill(x):
        return x.expand(4, 2).fill_(5)

    def zero(x):
        return x.flatten().expand(2, 2).zero_()

    def ifill(x):
        return x.expand(3, 2).index_fill_(0, torch.tensor([2], device=x.device), 7.0)

    def setitem(x):
        y = x.expand(3, 2)
        y[0] = 3.0
        y[1, 1] = -1.0
        return y

    for f in (fill, zero, ifill, setitem):
        base = torch.tensor([[0.5, -1.5]])
        want = f(base.clone())
        got = f(base.clone().to("tpu"))
        assert got.stride() == want.stride()
        check(got, want)
    # bool (the fuzzer's index_fill_ reproducer)
    b = torch.tensor([[True]])
    idx = torch.tensor([6])
    check(b.to("tpu").expand(7, 3).index_fill_(0, idx.to("tpu"), 0.001),
          b.expand(7, 3).index_fill_(0, idx, 0.001))
    # ...while ops CPU refuses to write through them still raise its error
    for f in (lambda x: x.expand(2, 2).add_(1), lambda x: x.expand(2, 2).copy_(torch.ones(2, 2, device=x.device)),
              lambda x: x.expand(2, 2).clamp_(1), lambda x: x.expand(2, 2).exp_(),
              lambda x: x.expand(2, 2).scatter_(0, torch.zeros(1, 1, dtype=torch.long, device=x.device), 1.0)):
        raises_like_cpu(f, torch.zeros(2), match="single memory location")


def test_out_dtype_checks_of_unary_ops_like_cpu():
    # TensorIterator's unary_op wants out= of the input's dtype
    raises_like_cpu(lambda a, o: torch.neg(a, out=o), torch.tensor([5]), torch.empty(1))
    raises_like_cpu(lambda a, o: torch.neg(a, out=o), torch.tensor([5.0]),
                    torch.empty(1, dtype=torch.int32))
    raises_like_cpu(lambda a, o: torch.clamp(a, 5, out=o), torch.tensor([[[5]]], dtype=torch.int8),
                    torch.tensor([[[-1.25]]]))
    # complex abs into a float out is fine, and so is clamp into its promoted dtype
    z = torch.complex(torch.tensor([3.0]), torch.tensor([4.0]))
    o = torch.empty(1, device="tpu")
    check(torch.abs(z.to("tpu"), out=o), torch.abs(z))
    o2 = torch.empty(2, device="tpu")
    check(torch.clamp(torch.tensor([1, 5]).to("tpu"), 2.5, out=o2), torch.clamp(torch.tensor([1, 5]), 2.5))


def test_lerp_weight_and_check_order_like_cpu():
    s, e = torch.tensor(1.25), torch.tensor(-0.5)
    # a 0-d weight tensor of another dtype takes part in promotion
    for w in (torch.tensor(-2, dtype=torch.int8), torch.tensor(0.25, dtype=torch.float64),
              torch.tensor(2.0 + 1j)):
        _same_as_cpu(torch.lerp, s, e, w)
        _same_as_cpu(torch.lerp, s.expand(3).clone(), e, w)
    raises_like_cpu(torch.lerp, torch.tensor([1.25]), torch.tensor([-0.5]),
                    torch.tensor([-2], dtype=torch.int8), match="for `weight` but got dtype")
    # in place: the broadcast shape is checked before the dtype
    raises_like_cpu(lambda a, b: a.lerp_(b, 0.5), torch.tensor(True), torch.tensor([False]))
    raises_like_cpu(lambda a, b: a.lerp_(b, b), torch.tensor(1.0), torch.tensor([0.0]))


def test_inplace_cast_is_checked_before_the_dtype_kernel():
    raises_like_cpu(lambda x: x.view(torch.int32).bitwise_and_(x), torch.tensor(1.5))
    raises_like_cpu(lambda x: x.view(torch.int32).bitwise_or_(1.5), torch.tensor(1.5))


def test_subnormal_floats_are_flushed_to_zero_pinned():
    # XLA:CPU runs with flush-to-zero / denormals-are-zero: a subnormal input
    # or result of arithmetic is 0 (CPU keeps it). Moving the bits is exact
    # (view, copy, to("cpu")); only arithmetic flushes. Documented in
    # docs/COVERAGE.md (Differential fuzzing).
    bits = torch.tensor([5, 1 << 20], dtype=torch.int32)
    sub = bits.view(torch.float32)
    assert (sub != 0).all()
    moved = bits.to("tpu").view(torch.float32)
    assert torch.equal(moved.cpu().view(torch.int32), bits)  # no flush when moving
    got = (moved * 1).cpu()
    assert torch.equal(got, torch.zeros(2))
    assert torch.equal(sub * 1, sub)  # CPU keeps them


def test_dtypes_cpu_refuses_raise_cpus_error():
    # issue 19 item 2, the cases the fuzzer found: complex erf family,
    # rounding, atan2, hypot, amax/amin; bool pow and bool scans
    z = torch.complex(torch.tensor([1.5, -0.5]), torch.tensor([0.25, 2.0]))
    b = torch.tensor([True, False])
    cases = [(f, (z,)) for f in (torch.erf, torch.erfc, torch.erfinv, torch.trunc, torch.floor,
                                 torch.ceil, torch.round, torch.frac,
                                 lambda x: torch.amax(x, 0), lambda x: torch.amin(x, 0))]
    cases += [(torch.atan2, (z, z)), (torch.hypot, (z, z)), (torch.pow, (b, b)),
              (lambda x: torch.cumsum(x, 0, dtype=torch.bool), (b,)),
              (lambda x: torch.cumprod(x, 0, out=torch.empty(2, dtype=torch.bool, device=x.device)),
               (b,))]
    for f, args in cases:
        with pytest.raises(NotImplementedError) as cpu:
            f(*args)
        with pytest.raises(NotImplementedError) as tpu:
            f(*[a.to("tpu") for a in args])
        assert str(tpu.value).splitlines()[0] == str(cpu.value).splitlines()[0]


def test_complex_add_of_an_infinite_part_pinned():
    # tpu adds; CPU multiplies b by alpha = 1 as a complex product first,
    # (0 + inf i)(1 + 0i) = NaN + inf i (docs/COVERAGE.md)
    a = torch.tensor([0.25, -1.0])
    b = torch.complex(torch.tensor([0.0, 2.0]), torch.tensor([INF, 1.0]))
    assert torch.isnan((a + b)[0].real)  # CPU's answer, pinned against
    got = (a.to("tpu") + b.to("tpu")).cpu()
    assert got[0].real.item() == 0.25 and got[0].imag.item() == INF
    torch.testing.assert_close(got[1], (a + b)[1])
