"""Sorting, selection and scans against PyTorch's CPU kernels: sort/argsort/
msort, topk, kthvalue, median, argmax/argmin, max/min (with and without dim),
cumsum/cumprod/logcumsumexp (and complex), cummax/cummin, nanmedian, mode,
unique_consecutive, isin, searchsorted/bucketize. Covers dtypes, NaN order (NaN is the largest
value; max/argmax pick the first NaN), ties (stable order, first index),
0-d, empty and non-contiguous inputs, out=/in-place forms, autograd, errors
with CPU's type and message, and that each op ran natively."""
import pytest
import torch

import torch_pjrt
from conftest import dtype_id, make
from conftest import make
from _op_check import CHECK_TOL, NativeOnly, check_close  # noqa: F401 (shared helpers)
import torch.nn.functional as F
from conftest import assert_bitwise_equal, make
from _op_check import NativeOnly, check_close, same_as_cpu
from test_ops_activation import same_error as same_error_meta  # noqa: F401 (shared helpers)
from test_ops_index import same_error  # noqa: F401 (shared helpers)
from test_ops_linalg import _reset  # noqa: F401 (shared helpers)

pytestmark = pytest.mark.usefixtures("no_leaks")

NAN = float("nan")
INF = float("inf")


def check(actual, expected, **tol):
    assert actual.device.type == "tpu", actual.device
    assert actual.dtype == expected.dtype, f"{actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{tuple(actual.shape)} != {tuple(expected.shape)}"
    tol = tol or dict(rtol=0, atol=0)
    torch.testing.assert_close(actual.detach().cpu(), expected.detach(), equal_nan=True, **tol)


def selects(x, dim, idx, expected):
    """The tpu indices idx pick `expected` out of the CPU tensor x (ties
    may be broken either way)."""
    assert idx.device.type == "tpu" and idx.dtype == torch.int64
    torch.testing.assert_close(torch.gather(x, dim, idx.cpu()), expected, equal_nan=True,
                               rtol=0, atol=0)


class Native:
    """Asserts no op at all fell back to the CPU inside the block."""

    def __enter__(self):
        torch.tpu.synchronize()
        torch_pjrt.reset_fallbacks()
        return self

    def __exit__(self, *exc):
        torch.tpu.synchronize()
        if exc[0] is None:
            assert torch_pjrt.fallbacks() == {}, torch_pjrt.fallbacks()
        return False


def ties(dtype, shape, seed=0):
    """Few distinct values, so ties are everywhere; floats add NaN (both
    signs), +-inf and +-0.0."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-3, 4, shape, generator=g)
    if dtype == torch.bool:
        return x > 0
    x = x.to(dtype)
    if dtype.is_floating_point:
        flat = x.view(-1)
        n = flat.numel()
        specials = torch.tensor([NAN, -NAN, INF, -INF, -0.0, 0.0], dtype=dtype)
        pos = torch.randperm(n, generator=g)[:min(n, 6)]
        flat[pos] = specials[:len(pos)]
    return x


SORT_DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.int32,
               torch.uint8, torch.bool]


# ---- sort / argsort / msort ---------------------------------------------------------

@pytest.mark.parametrize("dtype", SORT_DTYPES, ids=dtype_id)
def test_sort_stable_matches_cpu_exactly(dtype):
    x = ties(dtype, (4, 9), seed=1)
    t = x.to("tpu")
    with Native():
        rs = [(torch.sort(t, dim=d, descending=desc, stable=True),
               torch.sort(x, dim=d, descending=desc, stable=True))
              for d in (0, 1, -1) for desc in (False, True)]
    for (v, i), (ev, ei) in rs:
        check(v, ev)
        check(i, ei)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=dtype_id)
def test_sort_default_argsort_msort(dtype):
    x = make(dtype, (5, 7), seed=2)
    t = x.to("tpu")
    with Native():
        v, i = t.sort()
        vd, idd = torch.sort(t, 0, True)
        a = torch.argsort(t, dim=1, descending=True)
        m = torch.msort(t)
    check(v, x.sort().values)
    check(vd, torch.sort(x, 0, True).values)
    # unstable sorts: the indices must select the values
    selects(x, 1, i, x.sort().values)
    selects(x, 0, idd, torch.sort(x, 0, True).values)
    selects(x, 1, a, torch.sort(x, 1, True).values)
    check(m, torch.msort(x))


def test_sort_nan_is_largest_either_sign():
    x = torch.tensor([1.0, -NAN, -INF, NAN, 0.0, -0.0, INF, 2.0])
    t = x.to("tpu")
    with Native():
        v, i = torch.sort(t, stable=True)
        vd, idd = torch.sort(t, stable=True, descending=True)
    assert torch.equal(i.cpu(), torch.sort(x, stable=True).indices)
    assert torch.equal(idd.cpu(), torch.sort(x, stable=True, descending=True).indices)
    assert v.cpu()[-2:].isnan().all() and vd.cpu()[:2].isnan().all()


def test_sort_noncontiguous_zero_dim_and_empty():
    x = make(torch.float32, (6, 5), seed=3)
    t = x.to("tpu")
    z = torch.tensor(3.5)
    e = torch.empty(0, 4)
    with Native():
        v, i = torch.sort(t.t(), dim=1, stable=True)
        v2, i2 = torch.sort(t[::2, 1:], dim=0, descending=True, stable=True)
        vz, iz = torch.sort(z.to("tpu"))
        ve, ie = torch.sort(e.to("tpu"), dim=0)
    check(v, torch.sort(x.t(), dim=1, stable=True).values)
    check(i, torch.sort(x.t(), dim=1, stable=True).indices)
    check(v2, torch.sort(x[::2, 1:], dim=0, descending=True, stable=True).values)
    check(i2, torch.sort(x[::2, 1:], dim=0, descending=True, stable=True).indices)
    check(vz, z)
    check(iz, torch.tensor(0))
    check(ve, e)
    check(ie, torch.empty(0, 4, dtype=torch.int64))


def test_sort_out_form_and_errors():
    x = make(torch.float32, (3, 4), seed=4)
    t = x.to("tpu")
    v = torch.empty(0, device="tpu")
    i = torch.empty(0, device="tpu", dtype=torch.int64)
    with Native():
        torch.sort(t, dim=1, stable=True, out=(v, i))
    check(v, torch.sort(x, dim=1, stable=True).values)
    check(i, torch.sort(x, dim=1, stable=True).indices)
    with pytest.raises(RuntimeError, match="Sort does not support complex dtypes on CPU"):
        torch.sort(torch.ones(3, dtype=torch.complex64, device="tpu"))
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.sort(t, 2)


def test_sort_autograd():
    x = make(torch.float32, (4, 6), seed=5, specials=False)
    xc = x.clone().requires_grad_()
    xt = x.to("tpu").requires_grad_()
    g = make(torch.float32, (4, 6), seed=6, specials=False)
    torch.sort(xc, dim=1, stable=True)[0].backward(g)
    torch.sort(xt, dim=1, stable=True)[0].backward(g.to("tpu"))
    check(xt.grad, xc.grad)


# ---- topk / kthvalue / median ---------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int64],
                         ids=dtype_id)
def test_topk(dtype):
    x = make(dtype, (5, 8), seed=7)
    t = x.to("tpu")
    with Native():
        rs = [(torch.topk(t, k, dim=d, largest=lg), (x, k, d, lg))
              for k, d in ((3, 1), (1, 0), (8, -1), (0, 1)) for lg in (True, False)]
    for (v, i), (xx, k, d, lg) in rs:
        ev, _ = torch.topk(xx, k, dim=d, largest=lg)
        check(v, ev)
        selects(xx, d, i, ev)


def test_topk_nan_out_form_and_errors():
    x = torch.tensor([[1.0, NAN, 3.0, -INF], [2.0, 2.0, 0.0, INF]])
    t = x.to("tpu")
    v = torch.empty(0, device="tpu")
    i = torch.empty(0, device="tpu", dtype=torch.int64)
    with Native():
        torch.topk(t, 2, out=(v, i))
        s = torch.topk(t, 2, largest=False)
    ev, _ = torch.topk(x, 2)
    check(v, ev)
    selects(x, 1, i, ev)
    check(s.values, torch.topk(x, 2, largest=False).values)
    for k in (5, -1):
        with pytest.raises(RuntimeError, match="selected index k out of range"):
            torch.topk(t, k)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        torch.topk(torch.empty(0, 3, device="tpu"), 1, 0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64], ids=dtype_id)
def test_kthvalue_and_median_distinct(dtype):
    g = torch.Generator().manual_seed(8)
    x = torch.randperm(35, generator=g).view(5, 7).to(dtype)
    t = x.to("tpu")
    with Native():
        rs = [(torch.kthvalue(t, 3, 1), torch.kthvalue(x, 3, 1)),
              (torch.kthvalue(t, 5, 0, keepdim=True), torch.kthvalue(x, 5, 0, keepdim=True)),
              (torch.median(t, 1), torch.median(x, 1)),
              (torch.median(t, 0, keepdim=True), torch.median(x, 0, keepdim=True))]
        m = torch.median(t)
        mt = torch.median(t.t()[1:])
    for (v, i), (ev, ei) in rs:
        check(v, ev)
        check(i, ei)
    check(m, torch.median(x))
    check(mt, torch.median(x.t()[1:]))


def test_median_nan_empty_and_errors():
    x = torch.tensor([[1.0, NAN, 3.0, NAN], [4.0, 2.0, 0.0, 5.0]])
    t = x.to("tpu")
    with Native():
        v, i = torch.median(t, 1)
        m = torch.median(t)
        e = torch.median(torch.empty(0, device="tpu"))
    ev, ei = torch.median(x, 1)
    check(v, ev)
    check(i, ei)
    check(m, torch.median(x))
    check(e, torch.median(torch.empty(0)))
    with pytest.raises(IndexError, match=r"median\(\): Expected reduction dim 0 to have non-zero"):
        torch.median(torch.empty(0, 3, device="tpu"), 0)
    with pytest.raises(RuntimeError, match="kthvalue\\(\\): selected number k out of range"):
        torch.kthvalue(t, 5)


# ---- max / min / argmax / argmin -----------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int64,
                                   torch.uint8, torch.bool], ids=dtype_id)
def test_max_min_argmax_with_ties_and_nan(dtype):
    x = ties(dtype, (5, 6), seed=9)
    x2 = ties(dtype, (5, 6), seed=10)
    if dtype.is_floating_point:
        x2[x2 != x2] = 1  # one operand without NaN, so ties decide
    t, t2 = x.to("tpu"), x2.to("tpu")
    with Native():
        rs = []
        for xx, tt in ((x, t), (x2, t2)):
            for d in (0, 1, -1):
                for k in (False, True):
                    rs.append((torch.max(tt, d, k), torch.max(xx, d, k)))
                    rs.append((torch.min(tt, d, k), torch.min(xx, d, k)))
        flat = [(tt.max(), xx.max()) for xx, tt in ((x, t), (x2, t2))]
        flat += [(tt.min(), xx.min()) for xx, tt in ((x, t), (x2, t2))]
        if dtype != torch.bool:
            for xx, tt in ((x, t), (x2, t2)):
                flat += [(torch.argmax(tt), torch.argmax(xx)), (torch.argmin(tt), torch.argmin(xx)),
                         (torch.argmax(tt, 1), torch.argmax(xx, 1)),
                         (torch.argmin(tt, 0, keepdim=True), torch.argmin(xx, 0, keepdim=True)),
                         (torch.argmax(tt, keepdim=True), torch.argmax(xx, keepdim=True))]
    for (v, i), (ev, ei) in rs:
        check(v, ev)
        check(i, ei)
    for r, e in flat:
        check(r, e)


def test_max_min_noncontiguous_zero_dim_empty_and_out():
    x = make(torch.float32, (6, 5), seed=11, specials=False)
    t = x.to("tpu")
    z = torch.tensor(-2.5)
    v = torch.empty(0, device="tpu")
    i = torch.empty(0, device="tpu", dtype=torch.int64)
    o = torch.empty(0, device="tpu", dtype=torch.int64)
    with Native():
        a = torch.max(t.t()[1:, ::2], 1)
        b = t[:, 1].argmin()
        c = torch.max(z.to("tpu"), 0)
        d = torch.argmax(z.to("tpu"))
        e = torch.max(torch.empty(0, 3, device="tpu"), 1)
        torch.max(t, 0, out=(v, i))
        torch.argmax(t, 1, out=o)
        w = t.t().min()
    check(a.values, torch.max(x.t()[1:, ::2], 1).values)
    check(a.indices, torch.max(x.t()[1:, ::2], 1).indices)
    check(b, x[:, 1].argmin())
    check(c.values, z)
    check(c.indices, torch.tensor(0))
    check(d, torch.tensor(0))
    check(e.values, torch.empty(0))
    check(v, torch.max(x, 0).values)
    check(i, torch.max(x, 0).indices)
    check(o, torch.argmax(x, 1))
    check(w, x.min())


def test_max_min_errors_like_cpu():
    e = torch.empty(0, 3, device="tpu")
    with pytest.raises(RuntimeError, match=r"max\(\): Expected reduction dim to be specified for "
                                           r"input.numel\(\) == 0"):
        e.max()
    with pytest.raises(RuntimeError, match=r"min\(\): Expected reduction dim to be specified"):
        e.min()
    with pytest.raises(IndexError, match=r"max\(\): Expected reduction dim 0 to have non-zero"):
        torch.max(e, 0)
    with pytest.raises(IndexError, match=r"min\(\): Expected reduction dim 0 to have non-zero"):
        torch.min(e, 0)
    with pytest.raises(IndexError, match=r"argmax\(\): Expected reduction dim to be specified"):
        torch.argmax(e)
    with pytest.raises(IndexError, match=r"argmin\(\): Expected reduction dim 0 to have non-zero"):
        torch.argmin(e, 0)
    with pytest.raises(NotImplementedError, match="\"max_all\" not implemented for 'ComplexFloat'"):
        torch.ones(2, dtype=torch.complex64, device="tpu").max()


def test_printing_runs_max_min_natively():
    t = torch.tensor([1.5, -2.0, 3.25]).to("tpu")
    torch.tpu.synchronize()
    torch_pjrt.reset_fallbacks()
    s = str(t)
    assert "3.2500" in s
    assert not {k for k in torch_pjrt.fallbacks() if k.split(".")[0] in ("aten::max", "aten::min")}


def test_max_dim_autograd_and_maximum():
    x = make(torch.float32, (4, 5), seed=12, specials=False)
    y = make(torch.float32, (4, 5), seed=13, specials=False)
    xc, xt = x.clone().requires_grad_(), x.to("tpu").requires_grad_()
    torch.max(xc, 1)[0].sum().backward()
    torch.max(xt, 1)[0].sum().backward()
    check(xt.grad, xc.grad)
    with Native():
        r = torch.max(x.to("tpu"), y.to("tpu"))
        r2 = torch.min(x.to("tpu"), y.to("tpu"))
    check(r, torch.max(x, y))
    check(r2, torch.min(x, y))


# ---- cumsum / cumprod / logcumsumexp ---------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int64,
                                   torch.int32, torch.uint8, torch.bool], ids=dtype_id)
def test_cumsum_cumprod_dtypes(dtype):
    g = torch.Generator().manual_seed(14)
    if dtype == torch.bool:
        x = torch.randint(0, 2, (4, 6), generator=g).bool()
    elif dtype.is_floating_point:
        x = (torch.randint(-8, 9, (4, 6), generator=g) / 4).to(dtype)
    else:
        x = torch.randint(0, 5, (4, 6), generator=g).to(dtype)
    t = x.to("tpu")
    tol = dict(rtol=1e-2, atol=1e-2) if dtype in (torch.float16, torch.bfloat16) else {}
    with Native():
        rs = [(torch.cumsum(t, d), torch.cumsum(x, d)) for d in (0, 1, -1)]
        rs += [(torch.cumprod(t, d), torch.cumprod(x, d)) for d in (0, 1)]
        rs += [(torch.cumsum(t, 1, dtype=torch.float32), torch.cumsum(x, 1, dtype=torch.float32)),
               (t.cumprod(0, dtype=torch.int64), x.cumprod(0, dtype=torch.int64))]
    for r, e in rs:
        check(r, e, **tol)


def test_cumsum_half_accumulates_in_float():
    x = torch.full((2048,), 0.1, dtype=torch.float16)
    with Native():
        r = torch.cumsum(x.to("tpu"), 0)
    check(r, torch.cumsum(x, 0), rtol=2e-3, atol=0)


def test_cumsum_views_zero_dim_empty_out_inplace():
    x = make(torch.float32, (5, 6), seed=15, specials=False)
    t = x.to("tpu")
    z = torch.tensor(2.5)
    o = torch.empty(0, device="tpu")
    tol = dict(rtol=1e-5, atol=1e-3)
    with Native():
        a = torch.cumsum(t.t()[:, 1::2], 1)
        b = torch.cumsum(z.to("tpu"), 0)
        c = torch.cumprod(torch.empty(0, 3, device="tpu"), 0)
        torch.cumsum(t, 0, out=o)
        u = t.clone()
        u.cumsum_(1)
        w = t.clone()
        w[1:].cumprod_(0)
    check(a, torch.cumsum(x.t()[:, 1::2], 1), **tol)
    check(b, z)
    check(c, torch.empty(0, 3))
    check(o, torch.cumsum(x, 0), **tol)
    check(u, torch.cumsum(x, 1), **tol)
    ew = x.clone()
    ew[1:].cumprod_(0)
    check(w, ew, rtol=1e-5, atol=1e-2)


def test_logcumsumexp():
    x = make(torch.float32, (4, 7), seed=16, specials=False) / 10
    x[0, 2] = -INF
    x[1] = -INF
    x[2, 3] = INF
    x[3, 4] = NAN
    t = x.to("tpu")
    h = x.to(torch.bfloat16)
    with Native():
        rs = [(torch.logcumsumexp(t, d), torch.logcumsumexp(x, d)) for d in (0, 1)]
        rs.append((torch.logcumsumexp(h.to("tpu"), 1), torch.logcumsumexp(h, 1)))
    for r, e in rs:
        check(r, e, rtol=1e-2 if e.dtype == torch.bfloat16 else 1e-5, atol=1e-5)
    with pytest.raises(NotImplementedError, match="\"logcumsumexp_out_cpu\" not implemented for"):
        torch.logcumsumexp(torch.ones(3, dtype=torch.int64, device="tpu"), 0)


def test_cumsum_cumprod_autograd():
    x = make(torch.float32, (3, 5), seed=17, specials=False) / 50
    g = make(torch.float32, (3, 5), seed=18, specials=False)
    for fn in (lambda v: torch.cumsum(v, 1), lambda v: torch.cumprod(v, 0),
               lambda v: torch.logcumsumexp(v, 1)):
        xc, xt = x.clone().requires_grad_(), x.to("tpu").requires_grad_()
        fn(xc).backward(g)
        fn(xt).backward(g.to("tpu"))
        check(xt.grad, xc.grad, rtol=1e-4, atol=1e-4)


def test_complex_scans_and_logsumexp_run_cpu_kernels_and_count_them():
    # Complex cumsum/cumprod (misc2.c) and logsumexp are native now; complex
    # logcumsumexp has no lowering: CPU's answer (not an error), counted.
    x = torch.randn(3, 5, dtype=torch.complex64)
    xt = x.to("tpu")
    torch_pjrt.reset_metrics()
    torch.testing.assert_close(torch.cumsum(xt, 1).cpu(), torch.cumsum(x, 1))
    torch.testing.assert_close(torch.cumprod(xt, 0).cpu(), torch.cumprod(x, 0))
    torch.testing.assert_close(torch.logcumsumexp(xt, 1).cpu(), torch.logcumsumexp(x, 1))
    torch.testing.assert_close(torch.logsumexp(xt, 1).cpu(), torch.logsumexp(x, 1))
    assert torch.cumsum(xt, 1).device.type == "tpu"
    fb = torch_pjrt.fallbacks()
    assert set(fb) == {"aten::_logcumsumexp"}


DEV = "tpu"


NAN, INF = float("nan"), float("inf")


def t(x):
    return x.to(DEV)


def test_cummax_cummin():
    x = make(torch.float32, (4, 6))
    with NativeOnly():
        for fn in (torch.cummax, torch.cummin):
            for d in (0, 1):
                v, i = fn(t(x), d)
                ev, ei = fn(x, d)
                check_close(v, ev)
                check_close(i, ei)


def test_searchsorted_and_bucketize():
    seq = torch.tensor([-INF, -1.0, 0.0, 0.0, 2.5, 3.0, INF, NAN])
    vals = torch.tensor([[-5.0, 0.0, 2.5, NAN], [INF, -INF, 1.0, 3.0]])
    seq2 = torch.sort(make(torch.float32, (2, 9), specials=False), dim=1).values
    vals2 = make(torch.float32, (2, 5), seed=4, specials=False)
    vals2[0, 0] = seq2[0, 3]
    ints = torch.tensor([1, 3, 3, 5, 8])
    with NativeOnly():
        for kw in [dict(), dict(right=True), dict(side="right"), dict(out_int32=True)]:
            check_close(torch.searchsorted(t(seq), t(vals), **kw), torch.searchsorted(seq, vals, **kw))
            check_close(torch.searchsorted(t(seq2), t(vals2), **kw), torch.searchsorted(seq2, vals2, **kw))
            check_close(torch.searchsorted(t(ints), t(torch.arange(10)), **kw),
                  torch.searchsorted(ints, torch.arange(10), **kw))
            check_close(torch.searchsorted(t(ints), 3, **kw), torch.searchsorted(ints, 3, **kw))
            check_close(torch.searchsorted(t(ints), 2.5, **kw), torch.searchsorted(ints, 2.5, **kw))
        perm = torch.tensor([4, 0, 2, 1, 3])
        unsorted = ints[torch.argsort(perm)]
        sorter = torch.argsort(unsorted)
        check_close(torch.searchsorted(t(unsorted), t(torch.arange(10)), sorter=t(sorter)),
              torch.searchsorted(unsorted, torch.arange(10), sorter=sorter))
        check_close(torch.bucketize(t(vals), t(seq[:-1])), torch.bucketize(vals, seq[:-1]))
        check_close(torch.bucketize(t(vals), t(seq[:-1]), right=True, out_int32=True),
              torch.bucketize(vals, seq[:-1], right=True, out_int32=True))
        check_close(torch.searchsorted(t(torch.zeros(0)), t(vals)), torch.searchsorted(torch.zeros(0), vals))
        e = torch.zeros(0, dtype=torch.long)
        check_close(torch.searchsorted(t(torch.zeros(0)), t(torch.zeros(0)), sorter=t(e)),
              torch.searchsorted(torch.zeros(0), torch.zeros(0), sorter=e))
    same_error(torch.searchsorted, (seq2, vals2[:1]))
    same_error(lambda a, b: torch.searchsorted(a, b, side="left", right=True), (seq, vals))
    same_error(torch.bucketize, (vals, seq2))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32])
def test_nanmedian_matches_cpu(dtype):
    x = make(dtype, (5, 7), seed=3)
    if dtype.is_floating_point:
        x[1] = NAN  # an all-NaN row: its first NaN
        x[2, :5] = NAN  # more NaN than numbers
    with NativeOnly():
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
    with NativeOnly():
        v, i = torch.nanmedian(tx, 1)
        v.sum().backward()
        ov, oi = torch.empty(0, device=DEV), torch.empty(0, device=DEV, dtype=torch.long)
        torch.nanmedian(tx.detach(), 1, out=(ov, oi))
        empty = torch.nanmedian(torch.empty(0, device=DEV))
    ev, _ = torch.nanmedian(xc, 1)
    ev.sum().backward()
    check_close(v, ev.detach())
    check_close(ov, ev.detach())
    check_close(tx.grad, xc.grad)
    assert torch.isnan(empty.cpu())
    same_error_meta(torch.nanmedian, [torch.zeros(2, 0), 1], exc=IndexError,
               match="non-zero size")


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_mode_matches_cpu(dtype):
    g = torch.Generator().manual_seed(4)
    x = torch.randint(0, 4, (6, 9), generator=g).to(dtype)  # many ties
    with NativeOnly():
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
    with NativeOnly():
        v, i = torch.mode(t(y), 1)
    ev, ei = torch.mode(y, 1)
    assert torch.equal(v.cpu(), ev) and torch.equal(i.cpu(), ei)


def test_mode_specials_grad_and_errors():
    x = torch.tensor([[-0.0, 0.0, 2.0, 2.0, 1e-40], [3.0, 1.0, 3.0, 1.0, 5.0]])
    tx = t(x).requires_grad_()
    xc = x.clone().requires_grad_()
    with NativeOnly():
        v, i = torch.mode(tx, 1)
        v.sum().backward()
    ev, ei = torch.mode(xc, 1)
    ev.sum().backward()
    check_close(v, ev.detach())
    assert torch.equal(i.cpu(), ei)
    check_close(tx.grad, xc.grad)
    same_error_meta(torch.mode, [torch.zeros(2, 0), 1], exc=IndexError, match="non-zero size")
    same_error_meta(torch.mode, [torch.zeros(3, dtype=torch.complex64), 0], exc=NotImplementedError)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.bool])
def test_unique_consecutive_matches_cpu(dtype):
    g = torch.Generator().manual_seed(5)
    x = torch.randint(0, 3, (4, 10), generator=g).to(dtype)
    if dtype.is_floating_point:
        x[0, :4] = torch.tensor([NAN, NAN, -0.0, 0.0])  # NaNs differ; zeros do not
    with NativeOnly():
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
        with NativeOnly():
            got = torch.ops.aten.unique_consecutive(t(args[0]), True, True, dim)
        for a, e in zip(got, torch.ops.aten.unique_consecutive(args[0], True, True, dim)):
            assert a.shape == e.shape and a.dtype == e.dtype
    same_error_meta(lambda x: torch.unique_consecutive(x, dim=0), [torch.zeros(2, 0)],
               match="0 sized dimensions")


def test_complex_cumsum_cumprod():
    x = make(torch.complex64, (3, 7), seed=10, specials=False) / 100
    with NativeOnly():
        s = torch.cumsum(t(x), 1)
        p = torch.cumprod(t(x).t(), 0)  # non-contiguous
        p128 = torch.cumprod(t(x), 1, dtype=torch.complex128)
        s0 = torch.cumsum(t(x[0, 0]), 0)  # 0-d
    check_close(s, torch.cumsum(x, 1))
    check_close(p, torch.cumprod(x.t(), 0))
    check_close(p128, torch.cumprod(x, 1, dtype=torch.complex128), dict(rtol=1e-6, atol=1e-9))
    check_close(s0, torch.cumsum(x[0, 0], 0))


def no_fallbacks():
    assert torch_pjrt.fallbacks() == {}


@pytest.mark.usefixtures("_reset")
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32, torch.bfloat16])
def test_isin_matches_cpu(dtype):
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 12, (3, 5), generator=g).to(dtype)
    t = torch.tensor([2, 7, 7, 11]).to(dtype)
    for invert in (False, True):
        got = torch.isin(x.to("tpu"), t.to("tpu"), invert=invert)
        assert got.dtype == torch.bool and got.device.type == "tpu"
        assert torch.equal(got.cpu(), torch.isin(x, t, invert=invert))
    no_fallbacks()


@pytest.mark.usefixtures("_reset")
def test_isin_promotes_and_nan_and_views():
    x = torch.tensor([1, 2, 3, 4])
    t = torch.tensor([1.5, 2.0, 4.0])
    assert torch.equal(torch.isin(x.to("tpu"), t.to("tpu")).cpu(), torch.isin(x, t))
    f = torch.tensor([float("nan"), 1.0, -0.0])
    tf = torch.tensor([float("nan"), 0.0])
    assert torch.equal(torch.isin(f.to("tpu"), tf.to("tpu")).cpu(), torch.isin(f, tf))
    big = torch.arange(24).view(4, 6)
    v = big.to("tpu").t()[1:, ::2]  # a non-contiguous view
    assert torch.equal(torch.isin(v, torch.tensor([3, 8, 13], device="tpu")).cpu(),
                       torch.isin(big.t()[1:, ::2], torch.tensor([3, 8, 13])))
    no_fallbacks()


@pytest.mark.usefixtures("_reset")
def test_isin_scalar_forms_out_and_empty():
    x = torch.tensor([[1, 2], [3, 2]])
    xt = x.to("tpu")
    assert torch.equal(torch.isin(xt, 2).cpu(), torch.isin(x, 2))
    assert torch.equal(torch.isin(xt, 2.5).cpu(), torch.isin(x, 2.5))
    assert torch.isin(3, torch.tensor([1, 3], device="tpu")).item() is True
    out = torch.empty(0, dtype=torch.bool, device="tpu")
    torch.isin(xt, torch.tensor([3], device="tpu"), out=out)
    assert torch.equal(out.cpu(), torch.isin(x, torch.tensor([3])))
    empty = torch.tensor([], dtype=torch.long, device="tpu")
    assert torch.equal(torch.isin(xt, empty).cpu(), torch.zeros(2, 2, dtype=torch.bool))
    assert torch.equal(torch.isin(xt, empty, invert=True).cpu(), torch.ones(2, 2, dtype=torch.bool))
    assert torch.isin(empty, xt).shape == (0,)
    no_fallbacks()


@pytest.mark.usefixtures("_reset")
def test_isin_errors():
    c = torch.tensor([1 + 1j])
    with pytest.raises(RuntimeError, match="Unsupported input type encountered for isin"):
        torch.isin(c.to("tpu"), c.to("tpu"))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.isin(torch.tensor([1, 2], device="tpu"), torch.tensor([1, 2]))


# ---- issue 19 item 8: topk of a 0-d tensor ----


@pytest.mark.parametrize("k", [0, 1])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_of_a_zero_dim_tensor_like_cpu(k, largest):
    # CPU returns the element and index 0 for k = 0 too (0-d output); the
    # lowering took k = 0 elements and failed to reshape
    same_as_cpu(lambda d: list(torch.topk(torch.tensor(2.5, device=d), k, largest=largest)))

    def f(d):
        x = torch.tensor(2.5, device=d, requires_grad=True)
        torch.topk(x, k).values.backward()
        return x.grad
    same_as_cpu(f)
    same_as_cpu(lambda d: list(torch.topk(torch.tensor(2.5, device=d), 2)))  # CPU's error


def test_argmax_argmin_refuse_bool_before_the_empty_dim_check():
    x = torch.empty((2, 0, 1, 3, 3), dtype=torch.bool)
    for f in (lambda t: torch.argmin(t, 1, keepdim=True), lambda t: torch.argmax(t, 1),
              lambda t: torch.argmin(t)):
        with pytest.raises(RuntimeError) as cpu:
            f(x)
        with pytest.raises(RuntimeError) as tpu:
            f(x.to("tpu"))
        assert str(tpu.value).splitlines()[0] == str(cpu.value).splitlines()[0]


def test_scan_out_runs_in_the_out_dtype():
    # with out= and no dtype, CPU's cumsum/cumprod cast self to out's dtype
    for op in (torch.cumsum, torch.cumprod):
        for x, o in ((torch.tensor(-2.0), torch.tensor([-1], dtype=torch.int32)),
                     (torch.tensor([1.5, 2.5, -3.7]), torch.empty(3, dtype=torch.int64)),
                     (torch.tensor([1, 2, 3]), torch.empty(3, dtype=torch.float64)),
                     (torch.tensor(-0.5), torch.tensor([False]))):
            want = op(x, -1, out=o.clone())
            got = op(x.to("tpu"), -1, out=o.to("tpu"))
            assert got.dtype == want.dtype and got.shape == want.shape
            torch.testing.assert_close(got.cpu(), want)


def test_complex_cumprod_through_an_infinity_pinned():
    # The first element of a cumprod is the first input. CPU multiplies it by
    # 1 + 0i first, naively: (1 + 0i)(1 + inf i) is NaN + inf i. tpu's scan
    # gives NaN + NaN i from the first non-finite element on; C99's Annex G
    # would keep infinities. Neither side is C99: tpu's is pinned here.
    z = torch.complex(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([float("inf"), 1.0, 0.0]))
    got = torch.cumprod(z.to("tpu"), 0).cpu()
    assert got.real.isnan().all() and got.imag.isnan().all()
    # finite inputs agree with CPU
    w = torch.complex(torch.randn(6), torch.randn(6))
    torch.testing.assert_close(torch.cumprod(w.to("tpu"), 0).cpu(), torch.cumprod(w, 0),
                               rtol=1e-5, atol=1e-5)
