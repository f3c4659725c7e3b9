"""Reductions (sum, mean, amax/amin, prod, any/all) and the matmul family
(mm, bmm, addmm, matmul, linear) against PyTorch's CPU kernels: dtypes, dims,
keepdim, dtype=, 0-d and zero-element inputs, non-contiguous operands, error
messages, autograd, the executable cache, and that each op ran natively (no
CPU fallback recorded for it)."""
import re

import pytest
import torch
import torch.nn.functional as F

import torch_pjrt
from conftest import dtype_id, make

pytestmark = pytest.mark.usefixtures("no_leaks")



TOL = {
    torch.float16: dict(rtol=1e-2, atol=1e-2),
    torch.bfloat16: dict(rtol=1e-2, atol=1e-2),
    torch.float32: dict(rtol=1.3e-6, atol=1e-5),
    torch.float64: dict(rtol=1e-12, atol=1e-12),
    torch.complex64: dict(rtol=1.3e-6, atol=1e-5),
    torch.complex128: dict(rtol=1e-12, atol=1e-12),
}
# Larger float32 reductions and matmuls: different summation orders.
BIG = dict(rtol=1e-5, atol=1e-4)

# Every matmul-family aten op a matmul/linear call may decompose into.
MATMUL_OPS = ("aten::mm", "aten::bmm", "aten::addmm", "aten::matmul", "aten::mv",
              "aten::addmv", "aten::dot", "aten::baddbmm", "aten::linear")


def check(actual, expected, tol=None):
    """actual (tpu) matches expected (cpu): device type, dtype, shape, values."""
    assert actual.device.type == "tpu", actual.device
    assert actual.dtype == expected.dtype, f"{actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{tuple(actual.shape)} != {tuple(expected.shape)}"
    if tol is None:
        tol = TOL.get(expected.dtype, dict(rtol=0, atol=0))
    torch.testing.assert_close(actual.detach().cpu(), expected.detach(), equal_nan=True, **tol)


class Fallbacks:
    """Records the CPU fallbacks taken inside the block, for ops named `ops`
    (an op name matches every overload: "aten::sum" covers
    "aten::sum.IntList_out")."""

    def __init__(self, *ops):
        self.ops = ops
        self.seen = {}

    def __enter__(self):
        torch.tpu.synchronize()
        torch_pjrt.reset_fallbacks()
        return self

    def __exit__(self, *exc):
        torch.tpu.synchronize()
        self.seen = {k: v for k, v in torch_pjrt.fallbacks().items()
                     if k.split(".")[0] in self.ops}
        return False

    def assert_native(self):
        assert not self.seen, f"ran on the CPU fallback (not native): {self.seen}"


def data(dtype, shape, seed=0, lo=-5, hi=6):
    """Moderate deterministic CPU data. Floats are multiples of 0.25 in
    [-2, 2] (low-precision sums of them are exact or nearly so); ints are in
    [lo, hi); bool is random."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if not (dtype.is_floating_point or dtype.is_complex):
        return torch.randint(lo, hi, shape, generator=g).to(dtype)
    if dtype.is_complex:
        re_ = torch.randint(-8, 9, shape, generator=g).double() / 4
        im = torch.randint(-8, 9, shape, generator=g).double() / 4
        return torch.complex(re_, im).to(dtype)
    return (torch.randint(-8, 9, shape, generator=g).double() / 4).to(dtype)


def randn(shape, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)


def raises_like_cpu(fn, cpu_args, tpu_args, accept=()):
    """fn(*tpu_args) raises the same exception type as fn(*cpu_args), with
    the CPU message (first line) or one of `accept` in its message."""
    with pytest.raises(Exception) as cpu_exc:
        fn(*cpu_args)
    cpu_msg = str(cpu_exc.value).splitlines()[0]
    with pytest.raises(type(cpu_exc.value)) as tpu_exc:
        r = fn(*tpu_args)
        torch.tpu.synchronize()
        del r
    msg = str(tpu_exc.value)
    # Break the traceback -> frame -> tensors cycles now rather than at some
    # later collection.
    cpu_exc.value.__traceback__ = None
    tpu_exc.value.__traceback__ = None
    del cpu_exc, tpu_exc, tpu_args, cpu_args
    assert cpu_msg in msg or any(a in msg for a in accept), (
        f"tpu message {msg!r} lacks CPU's {cpu_msg!r}" + (f" or any of {accept}" if accept else ""))


SUM_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16,
              torch.int32, torch.int64, torch.int8, torch.bool]
DIMS = [0, 1, -1, (0, 2), (-1, -3), (2, 0, 1)]
DIM_IDS = ["0", "1", "-1", "(0,2)", "(-1,-3)", "(2,0,1)"]


# ---- sum ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", SUM_DTYPES, ids=dtype_id)
def test_sum_all(dtype):
    x = data(dtype, (4, 5), seed=1)
    t = x.to("tpu")
    with Fallbacks("aten::sum") as fb:
        r = t.sum()
        r2 = torch.sum(t)
    e = x.sum()
    assert e.dtype == (torch.int64 if not (dtype.is_floating_point) else dtype)
    check(r, e)
    check(r2, e)
    fb.assert_native()


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.bool, torch.bfloat16],
                         ids=dtype_id)
@pytest.mark.parametrize("dim", DIMS, ids=DIM_IDS)
@pytest.mark.parametrize("keepdim", [False, True], ids=["", "keepdim"])
def test_sum_dim(dtype, dim, keepdim):
    x = data(dtype, (3, 4, 5), seed=2)
    with Fallbacks("aten::sum") as fb:
        r = x.to("tpu").sum(dim=dim, keepdim=keepdim)
    check(r, x.sum(dim=dim, keepdim=keepdim))
    fb.assert_native()


def test_sum_dtype_argument():
    i = data(torch.int32, (3, 4), seed=3)
    f = data(torch.float32, (3, 4), seed=4)
    h = data(torch.float16, (3, 4), seed=5)
    ti, tf, th = i.to("tpu"), f.to("tpu"), h.to("tpu")
    with Fallbacks("aten::sum") as fb:
        rs = [
            (ti.sum(), i.sum()),                                          # int32 -> int64
            (ti.sum(1), i.sum(1)),
            (ti.sum(dtype=torch.int32), i.sum(dtype=torch.int32)),
            (tf.sum(dtype=torch.float64), f.sum(dtype=torch.float64)),
            (tf.sum(0, dtype=torch.float64), f.sum(0, dtype=torch.float64)),
            (th.sum(dtype=torch.float32), h.sum(dtype=torch.float32)),
            (ti.sum(-1, keepdim=True, dtype=torch.float32),
             i.sum(-1, keepdim=True, dtype=torch.float32)),
        ]
    assert rs[0][1].dtype == torch.int64
    assert rs[3][1].dtype == torch.float64
    for r, e in rs:
        check(r, e)
    fb.assert_native()


def test_sum_float16_matches_cpu_float16():
    # fp16 sum: CPU's fp16 result, loose tolerance (accumulation may differ).
    x = randn((16, 24), seed=6, dtype=torch.float16)
    t = x.to("tpu")
    with Fallbacks("aten::sum") as fb:
        rs = [(t.sum(), x.sum()), (t.sum(0), x.sum(0)), (t.sum(1), x.sum(1))]
    for r, e in rs:
        assert e.dtype == torch.float16
        check(r, e, dict(rtol=1e-2, atol=1e-2))
    fb.assert_native()


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.bool], ids=dtype_id)
def test_sum_zero_dim(dtype):
    x = data(dtype, (), seed=7)
    t = x.to("tpu")
    with Fallbacks("aten::sum") as fb:
        rs = [(t.sum(), x.sum()), (t.sum(0), x.sum(0)), (t.sum(-1), x.sum(-1)),
              (t.sum(0, keepdim=True), x.sum(0, keepdim=True))]
    for r, e in rs:
        assert r.dim() == 0
        check(r, e)
    fb.assert_native()


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool], ids=dtype_id)
def test_sum_zero_elements(dtype):
    x = torch.zeros((0, 3), dtype=dtype)
    t = x.to("tpu")
    with Fallbacks("aten::sum") as fb:
        rs = [(t.sum(0), x.sum(0)), (t.sum(1), x.sum(1)), (t.sum(), x.sum()),
              (t.sum(0, keepdim=True), x.sum(0, keepdim=True))]
    assert rs[0][1].shape == (3,) and rs[1][1].shape == (0,)
    for r, e in rs:
        check(r, e)
    fb.assert_native()


def test_sum_noncontiguous():
    x = data(torch.float32, (6, 8), seed=8)
    t = x.to("tpu")
    with Fallbacks("aten::sum") as fb:
        rs = [
            (t.t().sum(0), x.t().sum(0)),
            (t.t().sum(1), x.t().sum(1)),
            (t[::2, 1::3].sum(), x[::2, 1::3].sum()),
            (t[::2, 1::3].sum(1), x[::2, 1::3].sum(1)),
            (t[:, 3].sum(), x[:, 3].sum()),
            (t[:1].expand(5, 8).sum(0), x[:1].expand(5, 8).sum(0)),
        ]
    for r, e in rs:
        check(r, e)
    p = data(torch.int64, (2, 3, 4), seed=9)
    with Fallbacks("aten::sum") as fb2:
        r = p.to("tpu").permute(2, 0, 1).sum((0, 2))
    check(r, p.permute(2, 0, 1).sum((0, 2)))
    fb.assert_native()
    fb2.assert_native()


def test_sum_large_float32():
    x = randn((64, 128), seed=10)
    t = x.to("tpu")
    with Fallbacks("aten::sum") as fb:
        rs = [(t.sum(), x.sum()), (t.sum(0), x.sum(0)), (t.sum(1), x.sum(1))]
    for r, e in rs:
        check(r, e, BIG)
    fb.assert_native()


def test_sum_special_values():
    x = make(torch.float32, (4, 6), seed=11)  # NaN, +-inf, -0.0, subnormal
    t = x.to("tpu")
    with Fallbacks("aten::sum") as fb:
        rs = [(t.sum(0), x.sum(0)), (t.sum(1), x.sum(1))]
    for r, e in rs:
        check(r, e, dict(rtol=1e-5, atol=1e-3))
    fb.assert_native()


def test_sum_on_second_device():
    x = data(torch.float32, (3, 5), seed=12)
    with Fallbacks("aten::sum") as fb:
        r = x.to("tpu:1").sum(1)
    assert r.device == torch.device("tpu:1")
    check(r, x.sum(1))
    fb.assert_native()


# ---- mean -----------------------------------------------------------------------

MEAN_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


@pytest.mark.parametrize("dtype", MEAN_DTYPES, ids=dtype_id)
def test_mean_all(dtype):
    x = data(dtype, (4, 5), seed=13)
    with Fallbacks("aten::mean") as fb:
        r = x.to("tpu").mean()
    check(r, x.mean())
    fb.assert_native()


@pytest.mark.parametrize("dtype", MEAN_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("dim", DIMS, ids=DIM_IDS)
@pytest.mark.parametrize("keepdim", [False, True], ids=["", "keepdim"])
def test_mean_dim(dtype, dim, keepdim):
    x = data(dtype, (3, 4, 5), seed=14)
    with Fallbacks("aten::mean") as fb:
        r = x.to("tpu").mean(dim=dim, keepdim=keepdim)
    check(r, x.mean(dim=dim, keepdim=keepdim))
    fb.assert_native()


def test_mean_complex():
    x = data(torch.complex64, (3, 4), seed=15)
    t = x.to("tpu")
    with Fallbacks("aten::mean") as fb:
        rs = [(t.mean(), x.mean()), (t.mean(0), x.mean(0)), (t.mean(-1, keepdim=True),
                                                            x.mean(-1, keepdim=True))]
    for r, e in rs:
        check(r, e)
    fb.assert_native()


def test_mean_dtype_argument_and_views():
    f = data(torch.float32, (4, 6), seed=16)
    h = data(torch.float16, (4, 6), seed=17)
    i = data(torch.int32, (4, 6), seed=18)
    tf, th, ti = f.to("tpu"), h.to("tpu"), i.to("tpu")
    with Fallbacks("aten::mean") as fb:
        rs = [
            (tf.mean(dtype=torch.float64), f.mean(dtype=torch.float64)),
            (th.mean(1, dtype=torch.float32), h.mean(1, dtype=torch.float32)),
            (ti.mean(dtype=torch.float32), i.mean(dtype=torch.float32)),  # allowed on CPU
            (tf.t().mean(1), f.t().mean(1)),
            (tf[1::2, ::3].mean(0), f[1::2, ::3].mean(0)),
        ]
    for r, e in rs:
        check(r, e)
    fb.assert_native()


def test_mean_zero_dim():
    s = torch.tensor(2.5)
    ts = s.to("tpu")
    with Fallbacks("aten::mean") as fb:
        rs = [(ts.mean(), s.mean()), (ts.mean(0), s.mean(0)), (ts.mean(-1, keepdim=True),
                                                            s.mean(-1, keepdim=True))]
    for r, e in rs:
        check(r, e)
    fb.assert_native()


def test_mean_zero_elements():
    z = torch.zeros((0, 3))
    tz = z.to("tpu")
    with Fallbacks("aten::mean") as fb:
        rs = [(tz.mean(0), z.mean(0)),   # NaN: 0 / 0
              (tz.mean(1), z.mean(1)),
              (tz.mean(), z.mean())]
    for r, e in rs:
        check(r, e)
    fb.assert_native()


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.bool], ids=dtype_id)
def test_mean_int_input_raises(dtype):
    x = data(dtype, (3, 4), seed=19)
    with pytest.raises(RuntimeError, match=re.escape("mean(): could not infer output dtype")):
        x.mean()  # what CPU does
    with pytest.raises(RuntimeError, match=re.escape("mean(): could not infer output dtype")):
        x.to("tpu").mean()
    with pytest.raises(RuntimeError, match=re.escape("mean(): could not infer output dtype")):
        x.to("tpu").mean(1)


def test_mean_int_dtype_argument_raises():
    raises_like_cpu(lambda x: x.mean(dtype=torch.int32), (torch.ones(3),),
                    (torch.ones(3, device="tpu"),),
                    accept=("mean(): could not infer output dtype",))


# ---- amax / amin ----------------------------------------------------------------

AMAX_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
               torch.int64]
AMAX_DIMS = [0, -1, (0, 2), (), (2, 1, 0)]
AMAX_IDS = ["0", "-1", "(0,2)", "()", "(2,1,0)"]


@pytest.mark.parametrize("op", ["amax", "amin"])
@pytest.mark.parametrize("dtype", AMAX_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("dim", AMAX_DIMS, ids=AMAX_IDS)
@pytest.mark.parametrize("keepdim", [False, True], ids=["", "keepdim"])
def test_amax_amin(op, dtype, dim, keepdim):
    x = data(dtype, (3, 4, 5), seed=20, lo=-1000, hi=1000)
    with Fallbacks("aten::" + op) as fb:
        r = getattr(torch, op)(x.to("tpu"), dim=dim, keepdim=keepdim)
    check(r, getattr(torch, op)(x, dim=dim, keepdim=keepdim))
    fb.assert_native()


@pytest.mark.parametrize("op", ["amax", "amin"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=dtype_id)
def test_amax_amin_nan_and_inf(op, dtype):
    x = torch.tensor([[1.0, float("nan"), 3.0, -2.0],
                      [float("inf"), 0.5, -float("inf"), 2.0],
                      [-float("inf"), -float("inf"), -float("inf"), -float("inf")],
                      [-0.0, 0.0, float("nan"), float("inf")]], dtype=dtype)
    t = x.to("tpu")
    f = getattr(torch, op)
    with Fallbacks("aten::" + op) as fb:
        rs = [(f(t, 0), f(x, 0)), (f(t, 1), f(x, 1)), (f(t), f(x)),
              (f(t, (0, 1), keepdim=True), f(x, (0, 1), keepdim=True))]
    for r, e in rs:
        check(r, e)
    # NaN really propagates (not just NaN-equal to an arbitrary result).
    assert torch.isnan(rs[1][0].cpu()[0]) and torch.isnan(rs[1][0].cpu()[3])
    assert torch.isnan(rs[2][0].cpu())
    fb.assert_native()


def test_amax_amin_noncontiguous():
    x = data(torch.float32, (6, 8), seed=21)
    t = x.to("tpu")
    with Fallbacks("aten::amax", "aten::amin") as fb:
        rs = [
            (t.t().amax(1), x.t().amax(1)),
            (t[::2, 1::3].amin(0), x[::2, 1::3].amin(0)),
            (t[:, 2].amax(), x[:, 2].amax()),
            (t[1::2].amin((0, 1), keepdim=True), x[1::2].amin((0, 1), keepdim=True)),
        ]
    for r, e in rs:
        check(r, e)
    fb.assert_native()


ZERO_DIM_REDUCTIONS = {
    "amax()": lambda s: s.amax(),
    "amax(0)": lambda s: s.amax(0),
    "amin(-1)": lambda s: s.amin(-1),
    "amin((),keepdim)": lambda s: s.amin((), keepdim=True),
    "prod()": lambda s: s.prod(),
    "prod(0)": lambda s: s.prod(0),
    "prod(-1,keepdim)": lambda s: s.prod(-1, keepdim=True),
    "any()": lambda s: s.any(),
    "any(0)": lambda s: s.any(0),
    "all()": lambda s: s.all(),
    "all(-1,keepdim)": lambda s: s.all(-1, keepdim=True),
}


@pytest.mark.parametrize("case", list(ZERO_DIM_REDUCTIONS))
def test_zero_dim_reductions(case):
    s = torch.tensor(-3.25)
    f = ZERO_DIM_REDUCTIONS[case]
    op = "aten::" + case.split("(")[0]
    with Fallbacks(op) as fb:
        r = f(s.to("tpu"))
    assert r.dim() == 0
    check(r, f(s))
    fb.assert_native()


def test_amax_zero_elements():
    z = torch.zeros((0, 3))
    with Fallbacks("aten::amax") as fb:
        r = z.to("tpu").amax(1)  # reducing a non-empty dim: an empty result
    check(r, z.amax(1))
    fb.assert_native()


@pytest.mark.parametrize("op", ["amax", "amin"])
@pytest.mark.parametrize("dim", [0, None, (0, 1)], ids=["dim0", "nodim", "dim(0,1)"])
def test_amax_amin_empty_dim_raises_like_cpu(op, dim):
    # CPU: IndexError "...Expected reduction dim 0 to have non-zero size." with
    # a dim, RuntimeError "...Expected reduction dim to be specified..." without.
    z = torch.zeros((0, 3))
    f = (lambda x: getattr(x, op)()) if dim is None else (lambda x: getattr(x, op)(dim))
    raises_like_cpu(f, (z,), (z.to("tpu"),))


# ---- prod -----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.int64,
                                   torch.bfloat16, torch.bool], ids=dtype_id)
def test_prod(dtype):
    x = data(dtype, (3, 4, 2), seed=22, lo=-3, hi=4)
    if dtype.is_floating_point:
        x = (x / 4 + 1).to(dtype)  # near 1: products stay moderate
    t = x.to("tpu")
    with Fallbacks("aten::prod") as fb:
        rs = [(t.prod(), x.prod()), (t.prod(0), x.prod(0)), (t.prod(-1), x.prod(-1)),
              (t.prod(1, keepdim=True), x.prod(1, keepdim=True))]
    for r, e in rs:
        check(r, e, dict(rtol=2e-2, atol=2e-2) if dtype == torch.bfloat16 else None)
    fb.assert_native()


def test_prod_dtype_argument_zero_dim_and_empty():
    i = data(torch.int32, (3, 4), seed=23, lo=-3, hi=4)
    f = data(torch.float32, (3, 4), seed=24) / 4 + 1
    s = torch.tensor(7, dtype=torch.int32)
    z = torch.zeros((0, 3))
    ti, tf = i.to("tpu"), f.to("tpu")
    with Fallbacks("aten::prod") as fb:
        rs = [
            (ti.prod(), i.prod()),                                     # int32 -> int64
            (ti.prod(1), i.prod(1)),
            (ti.prod(dtype=torch.int32), i.prod(dtype=torch.int32)),
            (ti.prod(0, dtype=torch.float64), i.prod(0, dtype=torch.float64)),
            (tf.prod(1, keepdim=True, dtype=torch.float64),
             f.prod(1, keepdim=True, dtype=torch.float64)),
            (tf.t().prod(1), f.t().prod(1)),
            (s.to("tpu").prod(), s.prod()),
            (s.to("tpu").prod(0), s.prod(0)),
            (z.to("tpu").prod(0), z.prod(0)),   # ones
            (z.to("tpu").prod(), z.prod()),
        ]
    assert rs[0][1].dtype == torch.int64
    for r, e in rs:
        check(r, e)
    fb.assert_native()


# ---- any / all ------------------------------------------------------------------

def _truthy(dtype, shape, seed):
    """Mostly-nonzero data with some zeros (and a NaN for floats: truthy)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 3, shape, generator=g)
    if dtype == torch.bool:
        return x.bool()
    x = x.to(dtype)
    if dtype.is_floating_point:
        x = x * 0.5
        x.view(-1)[1] = float("nan")
    return x


ANY_DTYPES = [torch.bool, torch.int32, torch.float32, torch.uint8]


@pytest.mark.parametrize("op", ["any", "all"])
@pytest.mark.parametrize("dtype", ANY_DTYPES, ids=dtype_id)
def test_any_all_no_dim(op, dtype):
    xs = [_truthy(dtype, (3, 4), seed=25), torch.zeros(3, 4, dtype=dtype),
          torch.ones(3, 4, dtype=dtype)]
    for x in xs:
        with Fallbacks("aten::" + op) as fb:
            r = getattr(x.to("tpu"), op)()
        check(r, getattr(x, op)())   # uint8 in -> uint8 out, like CPU
        fb.assert_native()


@pytest.mark.parametrize("op", ["any", "all"])
@pytest.mark.parametrize("dtype", ANY_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("dim", [0, 1, -1], ids=str)
@pytest.mark.parametrize("keepdim", [False, True], ids=["", "keepdim"])
def test_any_all_dim(op, dtype, dim, keepdim):
    x = _truthy(dtype, (3, 4, 5), seed=26)
    with Fallbacks("aten::" + op) as fb:
        r = getattr(x.to("tpu"), op)(dim, keepdim=keepdim)
    check(r, getattr(x, op)(dim, keepdim=keepdim))
    fb.assert_native()


@pytest.mark.parametrize("op", ["any", "all"])
def test_any_all_tuple_dims_views_and_empty(op):
    x = _truthy(torch.int32, (4, 6), seed=27)
    t = x.to("tpu")
    f = lambda a, *args, **kw: getattr(torch, op)(a, *args, **kw)  # noqa: E731
    z = torch.zeros((0, 3), dtype=torch.bool)
    with Fallbacks("aten::" + op) as fb:
        rs = [
            (f(t, dim=(0, 1)), f(x, dim=(0, 1))),
            (f(t.t(), 1), f(x.t(), 1)),
            (f(t[::2, 1::2], 0, keepdim=True), f(x[::2, 1::2], 0, keepdim=True)),
            (f(z.to("tpu")), f(z)),           # any() of nothing is False, all() True
            (f(z.to("tpu"), 0), f(z, 0)),
            (f(z.to("tpu"), 1), f(z, 1)),
        ]
    for r, e in rs:
        check(r, e)
    fb.assert_native()


# ---- mm / bmm / addmm ---------------------------------------------------------------

MM_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
             torch.int64]


@pytest.mark.parametrize("dtype", MM_DTYPES, ids=dtype_id)
def test_mm(dtype):
    a, b = data(dtype, (5, 7), seed=28), data(dtype, (7, 3), seed=29)
    ta, tb = a.to("tpu"), b.to("tpu")
    with Fallbacks("aten::mm") as fb:
        rs = [(torch.mm(ta, tb), torch.mm(a, b)), (ta.mm(tb), a.mm(b)), (ta @ tb, a @ b)]
    for r, e in rs:
        check(r, e)
    fb.assert_native()


def test_mm_large_float32():
    a, b = randn((64, 128), seed=30), randn((128, 32), seed=31)
    with Fallbacks(*MATMUL_OPS) as fb:
        r = a.to("tpu") @ b.to("tpu")
        r2 = torch.mm(a.to("tpu"), b.to("tpu"))
    check(r, a @ b, BIG)
    check(r2, a @ b, BIG)
    fb.assert_native()


def test_mm_noncontiguous():
    a, b = randn((8, 6), seed=32), randn((10, 8), seed=33)
    ta, tb = a.to("tpu"), b.to("tpu")
    with Fallbacks(*MATMUL_OPS) as fb:
        rs = [
            (ta.t() @ tb.t(), a.t() @ b.t()),                        # (6,8) @ (8,10)
            (ta[::2] @ tb[1::2, :6].t(), a[::2] @ b[1::2, :6].t()),     # (4,6) @ (6,5)
            (ta[:, 1:5].t() @ ta[:, :3], a[:, 1:5].t() @ a[:, :3]),
            (torch.mm(tb[:, ::2], ta[1::2]), torch.mm(b[:, ::2], a[1::2])),
            (ta[:1].expand(4, 6) @ ta.t(), a[:1].expand(4, 6) @ a.t()),
        ]
    for r, e in rs:
        check(r, e, BIG)
    fb.assert_native()


def test_mm_zero_sizes():
    with Fallbacks(*MATMUL_OPS) as fb:
        rs = []
        for (m, k, n) in [(0, 3, 4), (3, 0, 4), (3, 4, 0)]:
            a, b = randn((m, k), seed=34), randn((k, n), seed=35)
            rs.append((a.to("tpu") @ b.to("tpu"), a @ b))  # k == 0: zeros
    for r, e in rs:
        check(r, e)
    fb.assert_native()


def test_mm_on_second_device():
    a, b = data(torch.float32, (4, 3), seed=36), data(torch.float32, (3, 2), seed=37)
    with Fallbacks("aten::mm") as fb:
        r = a.to("tpu:1") @ b.to("tpu:1")
    assert r.device == torch.device("tpu:1")
    check(r, a @ b)
    fb.assert_native()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.bfloat16],
                         ids=dtype_id)
def test_bmm(dtype):
    a, b = data(dtype, (3, 4, 5), seed=38), data(dtype, (3, 5, 2), seed=39)
    ta, tb = a.to("tpu"), b.to("tpu")
    with Fallbacks("aten::bmm") as fb:
        rs = [(torch.bmm(ta, tb), torch.bmm(a, b)),
              (torch.bmm(tb.transpose(1, 2), ta.transpose(1, 2)),
               torch.bmm(b.transpose(1, 2), a.transpose(1, 2))),
              (torch.bmm(ta[::2], tb[::2]), torch.bmm(a[::2], b[::2]))]
    for r, e in rs:
        check(r, e)
    fb.assert_native()


ADDMM_CASES = [(1, 1), (0.5, 2.0), (0, 1), (1, 0), (-1.5, 0.25)]


@pytest.mark.parametrize("beta,alpha", ADDMM_CASES, ids=[f"b{b}-a{a}" for b, a in ADDMM_CASES])
@pytest.mark.parametrize("bias_shape", [(4,), (3, 4), (1, 4), (3, 1), ()], ids=str)
def test_addmm(beta, alpha, bias_shape):
    m1, m2 = randn((3, 5), seed=40), randn((5, 4), seed=41)
    bias = randn(bias_shape, seed=42)
    with Fallbacks("aten::addmm") as fb:
        r = torch.addmm(bias.to("tpu"), m1.to("tpu"), m2.to("tpu"), beta=beta, alpha=alpha)
    check(r, torch.addmm(bias, m1, m2, beta=beta, alpha=alpha))
    fb.assert_native()


def test_addmm_beta_zero_ignores_nan_bias():
    m1, m2 = randn((3, 5), seed=43), randn((5, 4), seed=44)
    bias = torch.full((3, 4), float("nan"))
    bias[0, 0] = float("inf")
    with Fallbacks("aten::addmm") as fb:
        r = torch.addmm(bias.to("tpu"), m1.to("tpu"), m2.to("tpu"), beta=0)
        r2 = torch.addmm(bias[0].to("tpu"), m1.to("tpu"), m2.to("tpu"), beta=0, alpha=2)
    e = torch.addmm(bias, m1, m2, beta=0)
    assert not torch.isnan(e).any()
    check(r, e)
    check(r2, torch.addmm(bias[0], m1, m2, beta=0, alpha=2))
    assert not torch.isnan(r.cpu()).any()
    fb.assert_native()


def test_addmm_int_and_noncontiguous():
    m1, m2 = data(torch.int64, (4, 3), seed=45), data(torch.int64, (3, 5), seed=46)
    bias = data(torch.int64, (5,), seed=47)
    f1, f2 = randn((6, 4), seed=48), randn((5, 6), seed=49)
    fb_ = randn((5, 4), seed=50)
    with Fallbacks("aten::addmm") as fb:
        r = torch.addmm(bias.to("tpu"), m1.to("tpu"), m2.to("tpu"), beta=2, alpha=3)
        r2 = torch.addmm(fb_.to("tpu").t(), f1.to("tpu").t(), f2.to("tpu").t(), alpha=0.5)
    check(r, torch.addmm(bias, m1, m2, beta=2, alpha=3))
    check(r2, torch.addmm(fb_.t(), f1.t(), f2.t(), alpha=0.5))
    fb.assert_native()


# ---- matmul broadcasting and linear ---------------------------------------------------

MATMUL_SHAPES = [
    ((7,), (7, 4)),            # 1-D @ 2-D
    ((3, 7), (7,)),            # 2-D @ 1-D
    ((5, 3, 7), (7, 4)),       # batched 3-D @ 2-D
    ((3, 7), (5, 7, 4)),       # 2-D @ batched 3-D
    ((2, 5, 3, 7), (2, 5, 7, 4)),  # 4-D @ 4-D
    ((2, 1, 3, 7), (1, 5, 7, 4)),  # broadcast batch dims
    ((5, 3, 7), (7,)),         # 3-D @ 1-D
    ((7,), (2, 7, 4)),         # 1-D @ 3-D
    ((7,), (7,)),              # dot
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=dtype_id)
@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=[f"{a}@{b}" for a, b in MATMUL_SHAPES])
def test_matmul_broadcasting(dtype, shapes):
    a, b = data(dtype, shapes[0], seed=51), data(dtype, shapes[1], seed=52)
    with Fallbacks(*MATMUL_OPS) as fb:
        r = torch.matmul(a.to("tpu"), b.to("tpu"))
        r2 = a.to("tpu") @ b.to("tpu")
    check(r, torch.matmul(a, b))
    check(r2, a @ b)
    fb.assert_native()


def test_matmul_transposed_and_sliced_batched():
    a, b = randn((4, 6, 5), seed=53), randn((4, 6, 3), seed=54)
    ta, tb = a.to("tpu"), b.to("tpu")
    with Fallbacks(*MATMUL_OPS) as fb:
        rs = [
            (ta.transpose(1, 2) @ tb, a.transpose(1, 2) @ b),           # (4,5,6)@(4,6,3)
            (ta[::2, 1:, ::2].transpose(-1, -2) @ tb[::2, 1:],
             a[::2, 1:, ::2].transpose(-1, -2) @ b[::2, 1:]),
            (ta.permute(2, 0, 1) @ tb[1][:, ::2], a.permute(2, 0, 1) @ b[1][:, ::2]),
        ]
    for r, e in rs:
        check(r, e, BIG)
    fb.assert_native()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=dtype_id)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("xshape", [(6, 5), (2, 3, 5), (5,)], ids=str)
def test_linear(dtype, bias, xshape):
    x = data(dtype, xshape, seed=55)
    w = data(dtype, (4, 5), seed=56)
    b = data(dtype, (4,), seed=57) if bias else None
    with Fallbacks(*MATMUL_OPS) as fb:
        r = F.linear(x.to("tpu"), w.to("tpu"), b.to("tpu") if bias else None)
    check(r, F.linear(x, w, b))
    fb.assert_native()


def test_linear_module():
    torch.manual_seed(0)
    lin = torch.nn.Linear(12, 7)
    x = randn((9, 12), seed=58)
    e = lin(x)
    lin_t = lin.to("tpu")
    with Fallbacks(*MATMUL_OPS) as fb:
        r = lin_t(x.to("tpu"))
    check(r, e.detach())
    fb.assert_native()


# ---- matmul errors --------------------------------------------------------------------

DTYPE_MISMATCH = {
    "mm": lambda a, b: torch.mm(a, b),
    "matmul-2d": lambda a, b: a @ b,
    "matmul-3d@2d": lambda a, b: a.expand(2, 2, 3) @ b,
    "matmul-2d@1d": lambda a, b: a @ b[:, 0],
    "bmm": lambda a, b: torch.bmm(a[None], b[None]),
    "linear": lambda a, b: F.linear(a, b.t()),
    "addmm": lambda a, b: torch.addmm(a[0, :2], a, b),
}


@pytest.mark.parametrize("case", list(DTYPE_MISMATCH))
def test_matmul_dtype_mismatch_raises_like_cpu(case):
    a, b = torch.ones(2, 3), torch.ones(3, 2, dtype=torch.float64)
    f = DTYPE_MISMATCH[case]
    raises_like_cpu(f, (a, b), (a.to("tpu"), b.to("tpu")), accept=("same dtype",))


SHAPE_MISMATCH = {
    "mm": (lambda a, b: torch.mm(a, b), (2, 3), (2, 2)),
    "matmul-2d": (lambda a, b: a @ b, (2, 3), (4, 2)),
    "matmul-1d@2d": (lambda a, b: a @ b, (3,), (4, 2)),
    "matmul-3d@2d": (lambda a, b: a @ b, (2, 2, 3), (4, 2)),
    "linear": (lambda a, b: F.linear(a, b), (2, 3), (4, 5)),
    "addmm": (lambda a, b: torch.addmm(torch.zeros(2, device=a.device), a, b), (2, 3), (2, 2)),
}


@pytest.mark.parametrize("case", list(SHAPE_MISMATCH))
def test_matmul_shape_mismatch_raises_like_cpu(case):
    f, sa, sb = SHAPE_MISMATCH[case]
    a, b = torch.ones(sa), torch.ones(sb)
    with pytest.raises(RuntimeError, match=re.escape("cannot be multiplied")):
        f(a, b)  # what CPU says
    raises_like_cpu(f, (a, b), (a.to("tpu"), b.to("tpu")))


def test_bmm_shape_mismatch_raises_like_cpu():
    a, b = torch.ones(2, 2, 3), torch.ones(2, 2, 2)
    raises_like_cpu(torch.bmm, (a, b), (a.to("tpu"), b.to("tpu")))


def test_matmul_mixed_devices_rejected():
    a = torch.ones(2, 3, device="tpu:0")
    b = torch.ones(3, 2, device="tpu:1")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.mm(a, b)


# ---- autograd -------------------------------------------------------------------------

def leaf(t, dev):
    """A fresh leaf on dev (t.to("cpu") would return t itself)."""
    return t.detach().to(dev, copy=True).requires_grad_()


def test_autograd_tiny_mlp():
    x0 = randn((8, 16), seed=60)
    w10, b10 = randn((32, 16), seed=61) * 0.25, randn((32,), seed=62) * 0.1
    w20 = randn((4, 32), seed=63) * 0.25

    def run(dev):
        x = leaf(x0, dev)
        w1 = leaf(w10, dev)
        b1 = leaf(b10, dev)
        w2 = leaf(w20, dev)
        loss = F.linear(F.relu(F.linear(x, w1, b1)), w2).sum()
        loss.backward()
        return loss, x, w1, b1, w2

    lc, *pc = run("cpu")
    with Fallbacks(*MATMUL_OPS, "aten::sum") as fb:
        lt, *pt = run("tpu")
    tol = dict(rtol=1e-5, atol=1e-5)
    assert lt.device.type == "tpu"
    check(lt, lc.detach(), tol)
    for name, c, t in zip(["x", "w1", "b1", "w2"], pc, pt):
        assert t.is_leaf and t.grad is not None, name
        assert t.grad.device.type == "tpu", name
        check(t.grad, c.grad, tol)
    fb.assert_native()


def test_autograd_mse():
    x0 = randn((10, 6), seed=64)
    w0 = randn((6, 3), seed=65)
    t0 = randn((10, 3), seed=66)

    def run(dev):
        x = x0.to(dev)
        w = leaf(w0, dev)
        t = t0.to(dev)
        y = x @ w
        loss = ((y - t) ** 2).mean()
        loss.backward()
        return loss, w

    lc, wc = run("cpu")
    with Fallbacks(*MATMUL_OPS, "aten::mean", "aten::sum") as fb:
        lt, wt = run("tpu")
    tol = dict(rtol=1e-5, atol=1e-5)
    check(lt, lc.detach(), tol)
    check(wt.grad, wc.grad, tol)
    fb.assert_native()


def test_autograd_reductions():
    x0 = randn((4, 5, 3), seed=67)

    def run(dev):
        x = leaf(x0, dev)
        loss = (x.sum(1) * 2).mean() + x.mean((0, 2)).sum() + x.amax(-1).sum()
        loss.backward()
        return loss, x

    lc, xc = run("cpu")
    lt, xt = run("tpu")
    tol = dict(rtol=1e-5, atol=1e-5)
    check(lt, lc.detach(), tol)
    check(xt.grad, xc.grad, tol)


# ---- executable cache -----------------------------------------------------------------

def test_same_reduction_and_shapes_do_not_recompile():
    x = randn((11, 13), seed=68).to("tpu")
    y = randn((11, 13), seed=69).to("tpu")
    a, b = randn((11, 13), seed=70).to("tpu"), randn((13, 5), seed=71).to("tpu")
    ops = [
        lambda t: t.sum(),
        lambda t: t.sum(1),
        lambda t: t.sum(0, keepdim=True),
        lambda t: t.mean(-1),
        lambda t: t.amax(0),
        lambda t: t.amin((0, 1)),
        lambda t: t.prod(1),
        lambda t: (t > 0).any(1),
        lambda t: (t > 0).all(),
    ]
    for f in ops:
        f(x).cpu()
    (a @ b).cpu()
    m0 = torch_pjrt.metrics()
    for f in ops:
        r = f(y)  # a different tensor with the same signature
        r.cpu()
    (a @ b).cpu()
    torch.mm(x, b).cpu()
    m1 = torch_pjrt.metrics()
    assert m1["compiles"] == m0["compiles"], (m0, m1)
    # Results still correct after the cache hits.
    check(y.sum(1), y.cpu().sum(1), BIG)
    check(torch.mm(x, b), x.cpu() @ b.cpu(), BIG)
