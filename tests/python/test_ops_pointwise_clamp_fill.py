"""clamp (scalar and tensor bounds, in place, NaN bounds and inputs) and
masked_fill (scalar and tensor values, broadcast masks, in place, CPU's
errors) against PyTorch's CPU kernels."""
import pytest
import torch

from conftest import dtype_id
from test_ops_activation import (
    Fallbacks, check as check_like_cpu, ints, raises_like_cpu as raises_like_cpu_msg, randn)

pytestmark = pytest.mark.usefixtures("no_leaks")


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
