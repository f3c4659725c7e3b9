"""Odds and ends that used to fall back to the CPU (src/ops/misc2.c):
linalg_cross / cross, nanmedian, mode, unique_consecutive, glu (+ backward),
prelu (+ backward), gcd / lcm — against PyTorch's CPU kernels: float32 plus
half, integer and bool inputs where the op takes them, NaN and -0.0
specials, non-contiguous inputs, in-place and out= forms, autograd, CPU's
errors, and that each ran natively."""
import pytest
import torch
import torch.nn.functional as F

import torch_pjrt

from conftest import assert_bitwise_equal, make
from test_ops_stats import Native, check

pytestmark = pytest.mark.usefixtures("no_leaks")

DEV = "tpu"
NAN = float("nan")


def t(x):
    return x.to(DEV)


def same_error(fn, cpu_args, exc=RuntimeError, match=None):
    """fn raises the same type and first line on tpu as on CPU."""
    with pytest.raises(exc, match=match) as cpu:
        fn(*cpu_args)
    with pytest.raises(exc, match=match) as tpu:
        fn(*[t(a) if isinstance(a, torch.Tensor) else a for a in cpu_args])
    assert str(tpu.value).split("\n")[0] == str(cpu.value).split("\n")[0]


# ---- cross ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.complex64])
def test_cross_matches_cpu(dtype):
    a = make(dtype, (4, 3, 5), seed=1, specials=False)
    b = make(dtype, (4, 3, 5), seed=2, specials=False)
    with Native():
        r = torch.linalg.cross(t(a), t(b), dim=1)
        r2 = torch.cross(t(a).transpose(0, 2), t(b).transpose(0, 2), dim=1)  # non-contiguous
    check(r, torch.linalg.cross(a, b, dim=1))
    check(r2, torch.cross(a.transpose(0, 2), b.transpose(0, 2), dim=1))


def test_cross_broadcast_out_and_grad():
    a = torch.randn(2, 1, 3, requires_grad=True)
    b = torch.randn(1, 4, 3, requires_grad=True)
    ta, tb = t(a.detach()).requires_grad_(), t(b.detach()).requires_grad_()
    g = torch.randn(2, 4, 3)
    with Native():
        r = torch.linalg.cross(ta, tb)
        r.backward(t(g))
        out = torch.empty(0, device=DEV)
        torch.linalg.cross(ta.detach(), tb.detach(), out=out)
    e = torch.linalg.cross(a, b)
    e.backward(g)
    check(r, e)
    check(out, e.detach())
    check(ta.grad, a.grad)
    check(tb.grad, b.grad)


def test_cross_errors():
    same_error(torch.linalg.cross, [torch.zeros(3, 2), torch.zeros(3, 2)],
               match="must have length 3")
    same_error(torch.linalg.cross, [torch.zeros(3, 3), torch.zeros(3, 3, dtype=torch.int64)])


# ---- nanmedian, mode -------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32])
def test_nanmedian_matches_cpu(dtype):
    x = make(dtype, (5, 7), seed=3)
    if dtype.is_floating_point:
        x[1] = NAN  # an all-NaN row: its first NaN
        x[2, :5] = NAN  # more NaN than numbers
    with Native():
        v, i = torch.nanmedian(t(x), 1)
        vk, ik = torch.nanmedian(t(x).t(), 0, keepdim=True)
        whole = torch.nanmedian(t(x))
    ev, ei = torch.nanmedian(x, 1)
    assert_bitwise_equal(v.cpu(), ev)
    assert torch.equal(i.cpu(), ei)
    evk, eik = torch.nanmedian(x.t(), 0, keepdim=True)
    assert_bitwise_equal(vk.cpu(), evk)
    assert torch.equal(ik.cpu(), eik)
    assert_bitwise_equal(whole.cpu(), torch.nanmedian(x))


def test_nanmedian_out_grad_and_errors():
    x = torch.tensor([[1.0, NAN, 3.0, -2.0], [NAN, 5.0, 0.5, 4.0]])
    tx = t(x).requires_grad_()
    xc = x.clone().requires_grad_()
    with Native():
        v, i = torch.nanmedian(tx, 1)
        v.sum().backward()
        ov, oi = torch.empty(0, device=DEV), torch.empty(0, device=DEV, dtype=torch.long)
        torch.nanmedian(tx.detach(), 1, out=(ov, oi))
        empty = torch.nanmedian(torch.empty(0, device=DEV))
    ev, _ = torch.nanmedian(xc, 1)
    ev.sum().backward()
    check(v, ev.detach())
    check(ov, ev.detach())
    check(tx.grad, xc.grad)
    assert torch.isnan(empty.cpu())
    same_error(torch.nanmedian, [torch.zeros(2, 0), 1], exc=IndexError,
               match="non-zero size")


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_mode_matches_cpu(dtype):
    g = torch.Generator().manual_seed(4)
    x = torch.randint(0, 4, (6, 9), generator=g).to(dtype)  # many ties
    with Native():
        v, i = torch.mode(t(x), 1)
        v0, i0 = torch.mode(t(x).t(), 0, keepdim=True)
    ev, ei = torch.mode(x, 1)
    assert torch.equal(v.cpu(), ev) and torch.equal(i.cpu(), ei)
    ev0, ei0 = torch.mode(x.t(), 0, keepdim=True)
    assert torch.equal(v0.cpu(), ev0) and torch.equal(i0.cpu(), ei0)


def test_mode_long_slices_run_cpus_kernel():
    # past 16 elements CPU's index among ties comes from an introsort: the
    # call runs CPU's kernel and is counted
    x = torch.randint(0, 3, (2, 40), generator=torch.Generator().manual_seed(1))
    torch_pjrt.reset_fallbacks()
    v, i = torch.mode(t(x), 1)
    assert torch_pjrt.fallbacks() == {"aten::mode": 1}
    ev, ei = torch.mode(x, 1)
    assert torch.equal(v.cpu(), ev) and torch.equal(i.cpu(), ei)
    # distinct values: the mode occurs once, its index is unique: native
    y = torch.randn(3, 40)
    with Native():
        v, i = torch.mode(t(y), 1)
    ev, ei = torch.mode(y, 1)
    assert torch.equal(v.cpu(), ev) and torch.equal(i.cpu(), ei)


def test_mode_specials_grad_and_errors():
    x = torch.tensor([[-0.0, 0.0, 2.0, 2.0, 1e-40], [3.0, 1.0, 3.0, 1.0, 5.0]])
    tx = t(x).requires_grad_()
    xc = x.clone().requires_grad_()
    with Native():
        v, i = torch.mode(tx, 1)
        v.sum().backward()
    ev, ei = torch.mode(xc, 1)
    ev.sum().backward()
    check(v, ev.detach())
    assert torch.equal(i.cpu(), ei)
    check(tx.grad, xc.grad)
    same_error(torch.mode, [torch.zeros(2, 0), 1], exc=IndexError, match="non-zero size")
    same_error(torch.mode, [torch.zeros(3, dtype=torch.complex64), 0], exc=NotImplementedError)


# ---- unique_consecutive ------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.bool])
def test_unique_consecutive_matches_cpu(dtype):
    g = torch.Generator().manual_seed(5)
    x = torch.randint(0, 3, (4, 10), generator=g).to(dtype)
    if dtype.is_floating_point:
        x[0, :4] = torch.tensor([NAN, NAN, -0.0, 0.0])  # NaNs differ; zeros do not
    with Native():
        got = torch.unique_consecutive(t(x), return_inverse=True, return_counts=True)
        plain = torch.unique_consecutive(t(x))
        rows = torch.unique_consecutive(t(x).t(), return_inverse=True, return_counts=True, dim=0)
        cols = torch.unique_consecutive(t(x), dim=1)
    exp = torch.unique_consecutive(x, return_inverse=True, return_counts=True)
    for a, e in zip(got, exp):
        assert_bitwise_equal(a.cpu(), e)
    assert_bitwise_equal(plain.cpu(), torch.unique_consecutive(x))
    for a, e in zip(rows, torch.unique_consecutive(x.t(), return_inverse=True,
                                                   return_counts=True, dim=0)):
        assert_bitwise_equal(a.cpu(), e)
    assert_bitwise_equal(cols.cpu(), torch.unique_consecutive(x, dim=1))


def test_unique_consecutive_empty_and_errors():
    for args in [(torch.zeros(0),), (torch.zeros(0, 3), 0)]:
        dim = args[1] if len(args) > 1 else None
        with Native():
            got = torch.ops.aten.unique_consecutive(t(args[0]), True, True, dim)
        for a, e in zip(got, torch.ops.aten.unique_consecutive(args[0], True, True, dim)):
            assert a.shape == e.shape and a.dtype == e.dtype
    same_error(lambda x: torch.unique_consecutive(x, dim=0), [torch.zeros(2, 0)],
               match="0 sized dimensions")


# ---- glu, prelu ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_glu_and_backward(dtype):
    x = make(dtype, (3, 8, 2), seed=6, specials=False)
    g = make(dtype, (3, 4, 2), seed=7, specials=False)
    tx = t(x).requires_grad_()
    xc = x.clone().requires_grad_()
    with Native():
        r = F.glu(tx, dim=1)
        r.backward(t(g))
        out = torch.empty(0, device=DEV, dtype=dtype)
        torch._C._nn.glu(t(x).transpose(0, 2), 1, out=out)  # non-contiguous input
    e = F.glu(xc, dim=1)
    e.backward(g)
    check(r, e.detach())
    check(tx.grad, xc.grad)
    check(out, torch._C._nn.glu(x.transpose(0, 2), 1))
    same_error(F.glu, [torch.zeros(3)], match="Halving dimension must be even")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_prelu_and_backward(dtype):
    x = make(dtype, (2, 3, 4), seed=8, specials=False)
    w = torch.tensor([0.25, -0.5, 2.0], dtype=dtype)
    tx, tw = t(x).requires_grad_(), t(w).requires_grad_()
    xc, wc = x.clone().requires_grad_(), w.clone().requires_grad_()
    with Native():
        r = F.prelu(tx, tw)
        r.sum().backward()
    e = F.prelu(xc, wc)
    e.sum().backward()
    check(r, e.detach())
    check(tx.grad, xc.grad)
    check(tw.grad, wc.grad, dict(rtol=1e-2, atol=1e-2) if dtype == torch.float16 else None)


# ---- gcd, lcm --------------------------------------------------------------------------


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
    with Native():
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
    same_error(torch.gcd, [torch.zeros(2), torch.zeros(2)], exc=NotImplementedError,
               match="gcd_cpu")


# ---- tril_indices, triu_indices -----------------------------------------------------


@pytest.mark.parametrize("fn", [torch.tril_indices, torch.triu_indices])
def test_tri_indices_match_cpu(fn):
    with Native():
        got = [fn(r, c, off, device=DEV, dtype=dt)
               for r, c, off, dt in [(4, 3, 0, torch.long), (3, 5, 1, torch.int32),
                                     (5, 4, -2, torch.long), (3, 3, 9, torch.long)]]
        empty = fn(0, 3, device=DEV)
    exp = [fn(r, c, off, dtype=dt)
           for r, c, off, dt in [(4, 3, 0, torch.long), (3, 5, 1, torch.int32),
                                 (5, 4, -2, torch.long), (3, 3, 9, torch.long)]]
    for a, e in zip(got, exp):
        assert a.device.type == "tpu"
        assert_bitwise_equal(a.cpu(), e)
    assert empty.shape == fn(0, 3).shape
    same_error(fn, [-1, 3], match="row must be non-negative")
    same_error(lambda r, c: fn(r, c, dtype=torch.float32), [3, 3], exc=NotImplementedError)


# ---- segment_reduce -----------------------------------------------------------------


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
def test_segment_reduce_matches_cpu(reduce):
    x = torch.randn(6, 3)
    x[2, 1] = NAN  # NaN propagates through max/min
    lengths = torch.tensor([2, 0, 3, 1])
    offsets = torch.tensor([[0, 2, 2, 6], [0, 1, 4, 6]])
    x2 = torch.randn(2, 6, 2)
    with Native():
        a = torch._segment_reduce(t(x), reduce, lengths=t(lengths))
        b = torch._segment_reduce(t(x), reduce, lengths=t(lengths), initial=1.5)
        c = torch._segment_reduce(t(x2), reduce, offsets=t(offsets), axis=1, unsafe=True)
        d = torch._segment_reduce(t(x).to(torch.bfloat16), reduce, lengths=t(lengths))
    check(a, torch._segment_reduce(x, reduce, lengths=lengths))
    check(b, torch._segment_reduce(x, reduce, lengths=lengths, initial=1.5))
    check(c, torch._segment_reduce(x2, reduce, offsets=offsets, axis=1, unsafe=True))
    check(d, torch._segment_reduce(x.to(torch.bfloat16), reduce, lengths=lengths))


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

    with Native():
        a = grads(DEV)
        b = grads(DEV, initial=2.0)
    check(a, grads("cpu"))
    check(b, grads("cpu", initial=2.0))


def test_segment_reduce_errors():
    x = torch.randn(3)
    same_error(lambda x, l: torch._segment_reduce(x, "sum", lengths=l),
               [x, torch.tensor([0, 1, 1])], match="sum to data.size")
    same_error(lambda x, l: torch._segment_reduce(x, "sum", lengths=l),
               [x, torch.tensor([-1, 2, 2])], match="negative")
    same_error(lambda x, l: torch._segment_reduce(x, "foo", lengths=l),
               [x, torch.tensor([1, 2])], match="reduce argument")


# ---- _batch_norm_with_update, batch_norm_backward -------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_batch_norm_with_update(dtype):
    def run(dev):
        g = torch.Generator().manual_seed(0)
        x = torch.randn(4, 3, 5, generator=g).to(dtype).to(dev).requires_grad_()
        w = torch.randn(3, generator=g).to(dtype).to(dev).requires_grad_()
        b = torch.randn(3, generator=g).to(dtype).to(dev).requires_grad_()
        rm = torch.zeros(3, dtype=dtype, device=dev)
        rv = torch.ones(3, dtype=dtype, device=dev)
        out = torch.ops.aten._batch_norm_with_update(x, w, b, rm, rv, 0.1, 1e-5)
        out[0].backward(torch.linspace(-1, 1, 60).view(4, 3, 5).to(dtype).to(dev))
        return list(out) + [rm, rv, x.grad, w.grad, b.grad]

    with Native():
        got = run(DEV)
    tol = dict(rtol=2e-2, atol=2e-2) if dtype == torch.bfloat16 else None
    for a, e in zip(got, run("cpu")):
        check(a, e.detach(), tol)


# ---- complex cumsum / cumprod -------------------------------------------------------------


def test_complex_cumsum_cumprod():
    x = make(torch.complex64, (3, 7), seed=10, specials=False) / 100
    with Native():
        s = torch.cumsum(t(x), 1)
        p = torch.cumprod(t(x).t(), 0)  # non-contiguous
        p128 = torch.cumprod(t(x), 1, dtype=torch.complex128)
        s0 = torch.cumsum(t(x[0, 0]), 0)  # 0-d
    check(s, torch.cumsum(x, 1))
    check(p, torch.cumprod(x.t(), 0))
    check(p128, torch.cumprod(x, 1, dtype=torch.complex128), dict(rtol=1e-6, atol=1e-9))
    check(s0, torch.cumsum(x[0, 0], 0))


# ---- bincount -----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8])
def test_bincount_matches_cpu(dtype):
    x = torch.tensor([1, 2, 2, 5, 0, 5, 5], dtype=dtype)
    w = torch.linspace(-1, 2, 7)
    with Native():
        a = torch.bincount(t(x))
        b = torch.bincount(t(x), t(w), minlength=9)
        c = torch.bincount(t(x), t(w.double()))
        e = torch.bincount(t(x[:0]), minlength=3)
    assert_bitwise_equal(a.cpu(), torch.bincount(x))
    check(b, torch.bincount(x, w, minlength=9))
    check(c, torch.bincount(x, w.double()))
    assert_bitwise_equal(e.cpu(), torch.bincount(x[:0], minlength=3))
    same_error(torch.bincount, [torch.tensor([-1, 2])], match="non-negative")
    same_error(torch.bincount, [x, w[:2]], match="same length")


def test_complex_logsumexp():
    x = make(torch.complex64, (3, 5, 2), seed=11, specials=False) / 50
    with Native():
        a = torch.logsumexp(t(x), 1)
        b = torch.logsumexp(t(x), (0, 2), keepdim=True)
    check(a, torch.logsumexp(x, 1))
    check(b, torch.logsumexp(x, (0, 2), keepdim=True))


# ---- matrix_exp -----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64])
def test_matrix_exp_matches_cpu(dtype):
    a = make(dtype, (2, 4, 4), seed=12, specials=False) / 40  # norms from ~1 to ~10
    a[1] *= 4
    with Native():
        r = torch.linalg.matrix_exp(t(a))
    tol = dict(rtol=1e-4, atol=1e-4) if dtype != torch.float64 else dict(rtol=1e-10, atol=1e-10)
    check(r, torch.linalg.matrix_exp(a), tol)


def test_matrix_exp_grad():
    a = torch.randn(3, 3, generator=torch.Generator().manual_seed(3))
    ta = t(a).requires_grad_()
    ca = a.clone().requires_grad_()
    with Native():
        torch.linalg.matrix_exp(ta).sum().backward()
    torch.linalg.matrix_exp(ca).sum().backward()
    check(ta.grad, ca.grad, dict(rtol=1e-4, atol=1e-4))


def test_matrix_exp_half_runs_cpus_kernel():
    # CPU computes in half precision (overflowing to NaN here): its kernel, counted
    a = torch.randn(5, 5, generator=torch.Generator().manual_seed(4)).to(torch.bfloat16) * 4
    torch_pjrt.reset_fallbacks()
    r = torch.linalg.matrix_exp(t(a))
    assert torch_pjrt.fallbacks() == {"aten::linalg_matrix_exp": 1}
    assert_bitwise_equal(r.cpu(), torch.linalg.matrix_exp(a))


# ---- int64 convolution --------------------------------------------------------------


def test_int64_convolution_is_exact():
    g = torch.Generator().manual_seed(0)
    x = torch.randint(-2 ** 40, 2 ** 40, (2, 4, 9, 7), generator=g)
    w = torch.randint(-2 ** 30, 2 ** 30, (6, 2, 3, 2), generator=g)  # products wrap
    b = torch.randint(-100, 100, (6,), generator=g)
    wt = torch.randint(-50, 50, (4, 3, 3, 2), generator=g)
    with Native():
        r = F.conv2d(t(x), t(w), t(b), stride=2, padding=1, groups=2)
        r1 = F.conv1d(t(x[:, :, 0]), t(w[:, :, 0]), groups=2, dilation=2)
        rt = F.conv_transpose2d(t(x), t(wt), t(b[:3]), stride=2, padding=1)
    assert torch.equal(r.cpu(), F.conv2d(x, w, b, stride=2, padding=1, groups=2))
    assert torch.equal(r1.cpu(), F.conv1d(x[:, :, 0], w[:, :, 0], groups=2, dilation=2))
    assert torch.equal(rt.cpu(), F.conv_transpose2d(x, wt, b[:3], stride=2, padding=1))


def test_int_pooling_is_exact():
    g = torch.Generator().manual_seed(1)
    x = torch.randint(-2 ** 62, 2 ** 62, (2, 3, 7, 6), generator=g)  # window sums wrap
    small = torch.randint(-9, 9, (2, 3, 7, 6), generator=g)  # ties and negative quotients
    with Native():
        a = F.avg_pool2d(t(x), 3, stride=2, padding=1)
        b = F.avg_pool2d(t(small), 2, count_include_pad=False, ceil_mode=True)
        c = F.avg_pool2d(t(small), 2, divisor_override=-3)
        m, i = F.max_pool2d(t(small.int()), 3, stride=2, padding=1, return_indices=True)
    assert torch.equal(a.cpu(), F.avg_pool2d(x, 3, stride=2, padding=1))
    assert torch.equal(b.cpu(), F.avg_pool2d(small, 2, count_include_pad=False, ceil_mode=True))
    assert torch.equal(c.cpu(), F.avg_pool2d(small, 2, divisor_override=-3))
    with Native():
        d = F.avg_pool3d(t(x.view(1, 2, 3, 7, 6)), 2, stride=1, padding=1)
        e = F.avg_pool3d(t(small.view(2, 3, 7, 6)), 2, count_include_pad=False, divisor_override=-4)
    assert torch.equal(d.cpu(), F.avg_pool3d(x.view(1, 2, 3, 7, 6), 2, stride=1, padding=1))
    assert torch.equal(e.cpu(), F.avg_pool3d(small.view(2, 3, 7, 6), 2, count_include_pad=False,
                                             divisor_override=-4))
    em, ei = F.max_pool2d(small.int(), 3, stride=2, padding=1, return_indices=True)
    assert torch.equal(m.cpu(), em) and torch.equal(i.cpu(), ei)
