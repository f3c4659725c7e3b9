"""The math family against PyTorch's CPU kernels: the erf family, inverse
trig and hyperbolic functions, log2/log10/exp2, reciprocal, rounding,
sign, remainder/fmod and rounding division, atan2/hypot, nan_to_num,
isnan/isinf; casts and printing run natively; gradients match CPU's."""
import re

import pytest
import torch
import torch_pjrt

from conftest import dtype_id
from conftest import make
from _pointwise_check import (
    EXACT_math, INF, NAN, TOL_math, fdata_math, idata_math, native, raises_like_cpu_math)

pytestmark = pytest.mark.usefixtures("no_leaks")


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
