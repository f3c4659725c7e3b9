"""Sorting, selection and scans against PyTorch's CPU kernels: sort/argsort/
msort, topk, kthvalue, median, argmax/argmin, max/min (with and without dim),
cumsum/cumprod/logcumsumexp. Covers dtypes, NaN order (NaN is the largest
value; max/argmax pick the first NaN), ties (stable order, first index),
0-d, empty and non-contiguous inputs, out=/in-place forms, autograd, errors
with CPU's type and message, and that each op ran natively."""
import pytest
import torch

import torch_pjrt
from conftest import dtype_id, make

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
