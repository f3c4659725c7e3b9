"""Reductions against PyTorch's CPU kernels: sum, mean, amax/amin, prod,
any/all (dtypes, dims, keepdim, dtype=, 0-d and zero-element inputs, views,
autograd, no recompiles), nansum, aminmax, equal, renorm, segment_reduce,
bincount, histc, complex logsumexp; and (below) the statistical ones."""
import re
import pytest
import torch
import torch.nn.functional as F
import torch_pjrt
from conftest import dtype_id, make
import warnings
from _op_check import CHECK_TOL, NativeOnly, check_close
from conftest import dtype_id
from conftest import make
from _op_check import CHECK_TOL, NativeOnly, check_close  # noqa: F401 (shared helpers)
from conftest import assert_bitwise_equal, make
from _op_check import NativeOnly, check_close
from test_ops_activation import same_error as same_error_meta  # noqa: F401 (shared helpers)
from test_ops_conv import randn  # noqa: F401 (shared helpers)
from test_ops_index import same_error  # noqa: F401 (shared helpers)
from test_ops_linalg import Fallbacks, TOL, _reset, data, leaf, raises_like_cpu  # noqa: F401 (shared helpers)

pytestmark = pytest.mark.usefixtures("no_leaks")


# Larger float32 reductions and matmuls: different summation orders.
BIG = dict(rtol=1e-5, atol=1e-4)


def check(actual, expected, tol=None):
    """actual (tpu) matches expected (cpu): device type, dtype, shape, values."""
    assert actual.device.type == "tpu", actual.device
    assert actual.dtype == expected.dtype, f"{actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{tuple(actual.shape)} != {tuple(expected.shape)}"
    if tol is None:
        tol = TOL.get(expected.dtype, dict(rtol=0, atol=0))
    torch.testing.assert_close(actual.detach().cpu(), expected.detach(), equal_nan=True, **tol)


SUM_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16,
              torch.int32, torch.int64, torch.int8, torch.bool]


DIMS = [0, 1, -1, (0, 2), (-1, -3), (2, 0, 1)]


DIM_IDS = ["0", "1", "-1", "(0,2)", "(-1,-3)", "(2,0,1)"]


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


NAN = float("nan")


INF = float("inf")


def rand(shape, dtype=torch.float32, seed=0, scale=1.0, shift=0.0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_complex:
        return torch.complex(rand(shape, torch.float32, seed), rand(shape, torch.float32, seed + 1))
    return (torch.randn(shape, generator=g, dtype=torch.float64) * scale + shift).to(dtype)


FLOATS = [torch.float32, torch.bfloat16, torch.float16, torch.float64]


@pytest.mark.parametrize("dtype", FLOATS + [torch.complex64], ids=dtype_id)
def test_var_std_dims_correction_keepdim(dtype):
    x = rand((4, 5, 6), dtype, seed=1, scale=3.0, shift=10.0)
    t = x.to("tpu")
    cases = [dict(), dict(dim=1), dict(dim=(0, 2), keepdim=True), dict(dim=-1, correction=0),
             dict(dim=(1,), correction=2), dict(unbiased=False)]
    with NativeOnly():
        rs = []
        for kw in cases:
            for fn in (torch.var, torch.std):
                rs.append((fn(t, **kw), fn(x, **kw)))
            for fn in (torch.var_mean, torch.std_mean):
                (a, b), (ea, eb) = fn(t, **kw), fn(x, **kw)
                rs += [(a, ea), (b, eb)]
    for r, e in rs:
        check_close(r, e)


def test_var_large_mean_is_precise():
    x = rand((1000,), seed=2, shift=1e4)
    with NativeOnly():
        r = torch.var(x.to("tpu"))
    check_close(r, torch.var(x), dict(rtol=1e-4, atol=0))


def test_var_views_zero_dim_empty_and_dof_warning():
    x = rand((6, 5), seed=3)
    t = x.to("tpu")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with NativeOnly():
            rs = [(torch.var(t.t()[::2], 1), torch.var(x.t()[::2], 1)),
                  (torch.std(t[:, 2]), torch.std(x[:, 2])),
                  (torch.var(torch.tensor(2.0, device="tpu")), torch.var(torch.tensor(2.0))),
                  (torch.var(torch.tensor(2.0, device="tpu"), correction=0),
                   torch.var(torch.tensor(2.0), correction=0)),
                  (torch.var(torch.empty(0, 3, device="tpu"), 0), torch.var(torch.empty(0, 3), 0)),
                  (torch.std(t, 0, correction=6), torch.std(x, 0, correction=6))]
    assert any("degrees of freedom is <= 0" in str(m.message) for m in w)
    for r, e in rs:
        check_close(r, e)


def test_var_out_errors_and_autograd():
    x = rand((3, 4), seed=4)
    t = x.to("tpu")
    o = torch.empty(0, device="tpu")
    with NativeOnly():
        torch.var(t, 1, out=o)
    check_close(o, torch.var(x, 1))
    with pytest.raises(RuntimeError, match="std and var only support floating point and complex"):
        torch.var(torch.ones(3, dtype=torch.int64, device="tpu"))
    for fn in (lambda v: torch.var(v, 1), lambda v: torch.std(v, 0, correction=0),
               lambda v: torch.std_mean(v, 1)[0]):
        xc, xt = x.clone().requires_grad_(), t.clone().requires_grad_()
        fn(xc).sum().backward()
        fn(xt).sum().backward()
        check_close(xt.grad, xc.grad)


ORDS = [2, 1, INF, -INF, 0, 3, 0.5, -1.5]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16,
                                   torch.complex64], ids=dtype_id)
def test_vector_norm_ords(dtype):
    x = rand((4, 6), dtype, seed=5)
    x[1, 2] = 0
    t = x.to("tpu")
    with NativeOnly():
        rs = [(torch.linalg.vector_norm(t, o, dim=d, keepdim=k),
               torch.linalg.vector_norm(x, o, dim=d, keepdim=k))
              for o in ORDS for d, k in ((None, False), (1, False), ((0, 1), True))]
    for r, e in rs:
        check_close(r, e)


def test_norm_entry_points_dtype_views_and_out():
    x = rand((5, 4), seed=6)
    t = x.to("tpu")
    h = x.to(torch.float16)
    o = torch.empty(0, device="tpu")
    with NativeOnly():
        rs = [(torch.norm(t), torch.norm(x)), (t.norm(p=1, dim=1), x.norm(p=1, dim=1)),
              (torch.norm(t, "fro"), torch.norm(x, "fro")),
              (torch.norm(t, INF, dim=0, keepdim=True), torch.norm(x, INF, dim=0, keepdim=True)),
              (torch.linalg.vector_norm(t.t()[1:]), torch.linalg.vector_norm(x.t()[1:])),
              (torch.linalg.vector_norm(h.to("tpu"), dtype=torch.float32),
               torch.linalg.vector_norm(h, dtype=torch.float32)),
              (torch.linalg.vector_norm(torch.tensor(-3.0, device="tpu")),
               torch.linalg.vector_norm(torch.tensor(-3.0))),
              (torch.linalg.vector_norm(torch.empty(0, 3, device="tpu"), dim=0),
               torch.linalg.vector_norm(torch.empty(0, 3), dim=0))]
        torch.linalg.vector_norm(t, 3, dim=0, out=o)
    rs.append((o, torch.linalg.vector_norm(x, 3, dim=0)))
    for r, e in rs:
        check_close(r, e)


def test_norm_nan_errors_and_autograd():
    x = torch.tensor([[1.0, NAN, -3.0], [2.0, -2.0, 0.5]])
    t = x.to("tpu")
    with NativeOnly():
        rs = [(torch.linalg.vector_norm(t, o, dim=1), torch.linalg.vector_norm(x, o, dim=1))
              for o in (INF, -INF, 2)]
    for r, e in rs:
        check_close(r, e)
    with pytest.raises(RuntimeError, match="linalg.vector_norm: Expected a floating point or "
                                           "complex tensor as input. Got Long"):
        torch.linalg.vector_norm(torch.ones(3, dtype=torch.int64, device="tpu"))
    with pytest.raises(RuntimeError, match="cannot compute the inf norm on an empty tensor"):
        torch.linalg.vector_norm(torch.empty(0, device="tpu"), INF)
    y = rand((3, 4), seed=7)
    for o in (2, 1, 3):
        yc, yt = y.clone().requires_grad_(), y.to("tpu").requires_grad_()
        torch.linalg.vector_norm(yc, o, dim=1).sum().backward()
        torch.linalg.vector_norm(yt, o, dim=1).sum().backward()
        check_close(yt.grad, yc.grad)


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
def test_logsumexp(dtype):
    x = rand((4, 6), dtype, seed=8, scale=30.0)
    t = x.to("tpu")
    with NativeOnly():
        rs = [(torch.logsumexp(t, d, keepdim=k), torch.logsumexp(x, d, keepdim=k))
              for d in (0, 1, (0, 1)) for k in (False, True)]
    for r, e in rs:
        check_close(r, e)


def test_logsumexp_infinities_ints_views_empty_out():
    x = torch.tensor([[1e4, 1e4 - 1, 0.0], [-INF, -INF, -INF], [INF, 1.0, 2.0], [NAN, 1.0, 0.0],
                      [INF, -INF, 0.0]])
    t = x.to("tpu")
    i = torch.arange(6).view(2, 3)
    y = rand((5, 4), seed=9)
    o = torch.empty(0, device="tpu")
    with NativeOnly():
        rs = [(torch.logsumexp(t, 1), torch.logsumexp(x, 1)),
              (torch.logsumexp(i.to("tpu"), 1), torch.logsumexp(i, 1)),
              (torch.logsumexp(y.to("tpu").t()[::2], 1), torch.logsumexp(y.t()[::2], 1)),
              (torch.logsumexp(torch.empty(0, 3, device="tpu"), 0),
               torch.logsumexp(torch.empty(0, 3), 0)),
              (torch.logsumexp(torch.tensor(1.5, device="tpu"), 0),
               torch.logsumexp(torch.tensor(1.5), 0))]
        torch.logsumexp(y.to("tpu"), 0, out=o)
    rs.append((o, torch.logsumexp(y, 0)))
    for r, e in rs:
        check_close(r, e)


def test_logsumexp_autograd():
    x = rand((3, 5), seed=10, scale=5.0)
    xc, xt = x.clone().requires_grad_(), x.to("tpu").requires_grad_()
    torch.logsumexp(xc, 1).sum().backward()
    torch.logsumexp(xt, 1).sum().backward()
    check_close(xt.grad, xc.grad)


DEV = "tpu"


NAN, INF = float("nan"), float("inf")


def t(x):
    return x.to(DEV)


def test_equal():
    a = make(torch.float32, (3, 4), specials=False)
    with NativeOnly():
        assert torch.equal(t(a), t(a.clone()))
        b = a.clone()
        b[1, 2] += 1
        assert not torch.equal(t(a), t(b))
        assert not torch.equal(t(a), t(a[:2]))
        assert torch.equal(t(a), t(a.double()))  # values compared, as on CPU
        assert torch.equal(t(a).t(), t(a.t().contiguous()))
        assert torch.equal(t(torch.empty(0, 3)), t(torch.empty(0, 3)))
        n = torch.tensor([1.0, NAN])
        assert torch.equal(t(n), t(n)) == torch.equal(n, n)
        i = torch.arange(5)
        assert torch.equal(t(i), t(i))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32, torch.bool], ids=str)
def test_nansum(dtype):
    x = make(dtype, (4, 6), specials=False)
    if dtype.is_floating_point:
        x[0, 1] = NAN
        x[2, 3] = NAN
    with NativeOnly():
        check_close(torch.nansum(t(x)), torch.nansum(x), dict(rtol=2e-3, atol=2e-2))
        check_close(torch.nansum(t(x), 1, keepdim=True), torch.nansum(x, 1, keepdim=True),
              dict(rtol=2e-3, atol=2e-2))
        if dtype.is_floating_point:
            check_close(torch.nanmean(t(x), 0), torch.nanmean(x, 0), dict(rtol=2e-3, atol=2e-2))
            check_close(torch.nansum(t(x), dtype=torch.float64), torch.nansum(x, dtype=torch.float64))
    same_error(torch.nansum, (torch.complex(torch.ones(2), torch.ones(2)),))


def test_nansum_grad():
    x = make(torch.float32, (3, 4), specials=False)
    x[1, 1] = NAN
    xc, xt = x.clone().requires_grad_(), t(x).requires_grad_()
    torch.nansum(xc).backward()
    with NativeOnly():
        torch.nansum(xt).backward()
    check_close(xt.grad, xc.grad)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool], ids=str)
def test_aminmax(dtype):
    x = make(dtype, (4, 5), specials=False)
    with NativeOnly():
        for kw in [dict(), dict(dim=1), dict(dim=0, keepdim=True), dict(keepdim=True)]:
            lo, hi = torch.aminmax(t(x), **kw)
            elo, ehi = torch.aminmax(x, **kw)
            check_close(lo, elo)
            check_close(hi, ehi)
        lo, hi = torch.aminmax(t(x).t(), dim=-1)
        check_close(lo, torch.aminmax(x.t(), dim=-1)[0])
    same_error(lambda a: torch.aminmax(a, dim=0), (torch.empty(0, 3),), IndexError)


def test_aminmax_nan():
    x = torch.tensor([[1.0, NAN, 3.0], [2.0, -1.0, 0.5]])
    with NativeOnly():
        lo, hi = torch.aminmax(t(x), dim=1)
    check_close(lo, torch.aminmax(x, dim=1)[0])
    check_close(hi, torch.aminmax(x, dim=1)[1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
def test_renorm(dtype):
    x = make(dtype, (3, 4, 5), specials=False) / 50
    with NativeOnly():
        for p, dim, maxnorm in [(2, 0, 1.0), (1, 1, 0.5), (3.5, -1, 2.0), (float("inf"), 2, 0.3)]:
            check_close(torch.renorm(t(x), p, dim, maxnorm), torch.renorm(x, p, dim, maxnorm),
                  CHECK_TOL[dtype])
        y, yt = x.clone(), t(x)
        y.renorm_(2, 1, 0.7)
        yt.renorm_(2, 1, 0.7)
        check_close(yt, y, CHECK_TOL[dtype])
    same_error(torch.renorm, (x, 2, 0, -1.0))
    same_error(torch.renorm, (x, -1, 0, 1.0))


def test_renorm_grad():
    x = make(torch.float32, (3, 4), specials=False) / 50
    xc, xt = x.clone().requires_grad_(), t(x).requires_grad_()
    torch.renorm(xc, 2, 0, 1.0).sum().backward()
    with NativeOnly():
        torch.renorm(xt, 2, 0, 1.0).sum().backward()
    check_close(xt.grad, xc.grad)


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
def test_segment_reduce_matches_cpu(reduce):
    x = torch.randn(6, 3)
    x[2, 1] = NAN  # NaN propagates through max/min
    lengths = torch.tensor([2, 0, 3, 1])
    offsets = torch.tensor([[0, 2, 2, 6], [0, 1, 4, 6]])
    x2 = torch.randn(2, 6, 2)
    with NativeOnly():
        a = torch._segment_reduce(t(x), reduce, lengths=t(lengths))
        b = torch._segment_reduce(t(x), reduce, lengths=t(lengths), initial=1.5)
        c = torch._segment_reduce(t(x2), reduce, offsets=t(offsets), axis=1, unsafe=True)
        d = torch._segment_reduce(t(x).to(torch.bfloat16), reduce, lengths=t(lengths))
    check_close(a, torch._segment_reduce(x, reduce, lengths=lengths))
    check_close(b, torch._segment_reduce(x, reduce, lengths=lengths, initial=1.5))
    check_close(c, torch._segment_reduce(x2, reduce, offsets=offsets, axis=1, unsafe=True))
    check_close(d, torch._segment_reduce(x.to(torch.bfloat16), reduce, lengths=lengths))


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
def test_segment_reduce_backward(reduce):
    x = torch.tensor([[1.0, 2.0], [2.0, 0.0], [2.0, 3.0], [0.5, 0.0], [4.0, -1.0], [2.0, 2.0]])
    lengths = torch.tensor([1, 0, 3, 2])
    g = torch.tensor([[0.5, -1.0], [2.0, 1.0], [1.5, -0.5], [-2.0, 3.0]])

    def grads(dev, **kw):
        xx = x.clone().to(dev).requires_grad_()
        r = torch._segment_reduce(xx, reduce, lengths=lengths.to(dev), **kw)
        r.backward(g.to(dev))
        return xx.grad

    with NativeOnly():
        a = grads(DEV)
        b = grads(DEV, initial=2.0)
    check_close(a, grads("cpu"))
    check_close(b, grads("cpu", initial=2.0))


def test_segment_reduce_errors():
    x = torch.randn(3)
    same_error_meta(lambda x, l: torch._segment_reduce(x, "sum", lengths=l),
               [x, torch.tensor([0, 1, 1])], match="sum to data.size")
    same_error_meta(lambda x, l: torch._segment_reduce(x, "sum", lengths=l),
               [x, torch.tensor([-1, 2, 2])], match="negative")
    same_error_meta(lambda x, l: torch._segment_reduce(x, "foo", lengths=l),
               [x, torch.tensor([1, 2])], match="reduce argument")


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8])
def test_bincount_matches_cpu(dtype):
    x = torch.tensor([1, 2, 2, 5, 0, 5, 5], dtype=dtype)
    w = torch.linspace(-1, 2, 7)
    with NativeOnly():
        a = torch.bincount(t(x))
        b = torch.bincount(t(x), t(w), minlength=9)
        c = torch.bincount(t(x), t(w.double()))
        e = torch.bincount(t(x[:0]), minlength=3)
    assert_bitwise_equal(a.cpu(), torch.bincount(x))
    check_close(b, torch.bincount(x, w, minlength=9))
    check_close(c, torch.bincount(x, w.double()))
    assert_bitwise_equal(e.cpu(), torch.bincount(x[:0], minlength=3))
    same_error_meta(torch.bincount, [torch.tensor([-1, 2])], match="non-negative")
    same_error_meta(torch.bincount, [x, w[:2]], match="same length")


def test_complex_logsumexp():
    x = make(torch.complex64, (3, 5, 2), seed=11, specials=False) / 50
    with NativeOnly():
        a = torch.logsumexp(t(x), 1)
        b = torch.logsumexp(t(x), (0, 2), keepdim=True)
    check_close(a, torch.logsumexp(x, 1))
    check_close(b, torch.logsumexp(x, (0, 2), keepdim=True))


def no_fallbacks():
    assert torch_pjrt.fallbacks() == {}


@pytest.mark.usefixtures("_reset")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_histc_matches_cpu(dtype):
    g = torch.Generator().manual_seed(1)
    x = (torch.randn(200, generator=g) * 3).to(dtype)
    x[:3] = torch.tensor([-2.0, 2.0, 0.0]).to(dtype)  # on the range's ends and an inner edge
    for bins, lo, hi in [(10, -2, 2), (7, 0, 0), (1, -1, 1), (16, -5, 3)]:
        got = torch.histc(x.to("tpu"), bins=bins, min=lo, max=hi)
        assert got.dtype == dtype and got.device.type == "tpu"
        torch.testing.assert_close(got.cpu(), torch.histc(x, bins=bins, min=lo, max=hi),
                                   atol=0, rtol=0)
    no_fallbacks()


@pytest.mark.usefixtures("_reset")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_histc_half_types_run_cpu_kernel_and_count_it(dtype):
    # CPU's half-precision bin edges round at every step, which XLA does not
    # reproduce exactly (an element near an edge could land a bin away), so
    # half types run CPU's kernel, counted as a fallback. Random data hits
    # edges: the answer must still be exact.
    x = (torch.randn(1000, generator=torch.Generator().manual_seed(3)) * 3).to(dtype)
    torch_pjrt.reset_metrics()
    got = torch.histc(x.to("tpu"), bins=37, min=-4, max=4)
    assert got.dtype == dtype and got.device.type == "tpu"
    torch.testing.assert_close(got.cpu(), torch.histc(x, bins=37, min=-4, max=4), atol=0, rtol=0)
    assert torch_pjrt.fallbacks() == {"aten::histc": 1}


@pytest.mark.usefixtures("_reset")
def test_histc_nan_constant_views_and_out():
    x = torch.tensor([1.0, float("nan"), 3.0, 3.0, 5.0, float("inf")])
    torch.testing.assert_close(torch.histc(x.to("tpu"), 4, 0, 5).cpu(), torch.histc(x, 4, 0, 5))
    c = torch.full((5,), 2.0)  # min == max == the data's range: widened to [1, 3]
    torch.testing.assert_close(torch.histc(c.to("tpu"), 4).cpu(), torch.histc(c, 4))
    m = torch.arange(12.0).view(3, 4)
    torch.testing.assert_close(torch.histc(m.to("tpu").t()[:, 1:], 5, 0, 12).cpu(),
                               torch.histc(m.t()[:, 1:], 5, 0, 12))
    out = torch.empty(6, device="tpu")
    torch.histc(m.to("tpu"), 6, 0, 11, out=out)
    torch.testing.assert_close(out.cpu(), torch.histc(m, 6, 0, 11))
    assert torch.equal(torch.histc(torch.zeros(0, device="tpu"), 4).cpu(), torch.zeros(4))
    no_fallbacks()


@pytest.mark.usefixtures("_reset")
def test_histc_integers_count_expert_ids():
    # What a MoE layer does on an accelerator (CPU refuses integer input).
    ids = torch.tensor([0, 3, 3, 1, 7, 7, 7, 2, 9], dtype=torch.int32)
    got = torch.histc(ids.to("tpu"), bins=8, min=0, max=7)
    assert got.dtype == torch.int32
    expect = torch.histc(ids.float(), bins=8, min=0, max=7).to(torch.int32)
    assert torch.equal(got.cpu(), expect)  # 9 is past max: not counted
    with pytest.raises(NotImplementedError, match="not implemented for 'Int'"):
        torch.histc(ids, bins=8, min=0, max=7)
    no_fallbacks()


@pytest.mark.usefixtures("_reset")
def test_histc_errors_match_cpu():
    x = torch.randn(8)
    for kw, err, msg in [
        (dict(bins=0), RuntimeError, "bins must be > 0, but got 0"),
        (dict(bins=4, min=3, max=1), RuntimeError, "max must be larger than min"),
        (dict(bins=4, min=float("-inf"), max=1), RuntimeError, r"range of \[-inf, 1\] is not finite"),
    ]:
        with pytest.raises(err, match=msg):
            torch.histc(x, **kw)
        with pytest.raises(err, match=msg):
            torch.histc(x.to("tpu"), **kw)
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        torch.histc(torch.tensor([True], device="tpu"), 4)


# ---- issue 19 item 7: var/std with inf and nan ----


@pytest.mark.parametrize("vals", [[1.0, float("inf"), 2.0], [float("inf"), 1.0, 2.0],
                                  [1.0, 2.0, float("inf")], [1.0, float("nan"), 2.0],
                                  [float("inf"), float("inf"), 1.0],
                                  [float("-inf"), float("inf"), 1.0], [1.0, 2.0, float("-inf")]],
                         ids=str)
def test_var_std_with_inf_and_nan(vals):
    x = torch.tensor(vals)
    with NativeOnly():
        t = x.to("tpu")
        got = [torch.var(t), torch.std(t), *torch.var_mean(t), *torch.std_mean(t)]
    want = [torch.var(x), torch.std(x), *torch.var_mean(x), *torch.std_mean(x)]
    for k in (0, 1, 2, 4):  # var and std: CPU's
        torch.testing.assert_close(got[k].cpu(), want[k], equal_nan=True)
    # Pinned (docs/COVERAGE.md): var_mean's mean is torch.mean's. CPU's comes
    # out of its Welford update, where an inf before the last element
    # meets inf - inf: NaN for [1, inf, 2], inf for [1, 2, inf].
    for k in (3, 5):
        torch.testing.assert_close(got[k].cpu(), torch.mean(x), equal_nan=True)
