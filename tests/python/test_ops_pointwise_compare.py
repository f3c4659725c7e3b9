"""Comparisons, where, and the bitwise and logical ops against PyTorch's CPU
kernels: dtypes, promotion, Python scalars, broadcasting, zero-dim and
empty operands."""
import pytest
import torch

from conftest import dtype_id
from _pointwise_check import (
    NAN, bdata, cdata, fdata, fdata_math, idata, idata_math, native, raises_like_cpu,
    raises_like_cpu_math, same)

pytestmark = pytest.mark.usefixtures("no_leaks")


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
