"""Unary and binary arithmetic against PyTorch's CPU kernels: the unary table
ops (float-promoting and same-dtype), sub/div/maximum/minimum/pow with
broadcasting, promotion and CPU 0-d operands; autograd through them; and
the executable cache (same op and shapes, or a new scalar value, do not
recompile)."""
import pytest
import torch
import torch_pjrt

from conftest import dtype_id
from test_ops_basic import TOL
from _pointwise_check import (
    INF, MATH_TOL, NAN, bdata, cdata, check, cpu_fallbacks_of, fdata, idata, raises_like_cpu,
    same)

pytestmark = pytest.mark.usefixtures("no_leaks")


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
