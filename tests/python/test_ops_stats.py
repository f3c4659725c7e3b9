"""Statistical reductions against PyTorch's CPU kernels: var, std, var_mean,
std_mean (dims, correction, keepdim), linalg_vector_norm / norm (ord 2, 1,
inf, -inf, 0, other p; dtype=), logsumexp (stable with infinities). Covers
float32/bfloat16/float16/float64/complex, 0-d, empty and non-contiguous
inputs, out= forms, autograd, CPU's errors and warnings, and that each op
ran natively."""
import warnings

import pytest
import torch

import torch_pjrt
from conftest import dtype_id

pytestmark = pytest.mark.usefixtures("no_leaks")

NAN = float("nan")
INF = float("inf")
TOL = {
    torch.float32: dict(rtol=1e-5, atol=1e-5),
    torch.float64: dict(rtol=1e-12, atol=1e-12),
    torch.float16: dict(rtol=1e-2, atol=1e-2),
    torch.bfloat16: dict(rtol=2e-2, atol=2e-2),
    torch.complex64: dict(rtol=1e-5, atol=1e-5),
}


def check(actual, expected, tol=None):
    assert actual.device.type == "tpu", actual.device
    assert actual.dtype == expected.dtype, f"{actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{tuple(actual.shape)} != {tuple(expected.shape)}"
    tol = tol or TOL.get(expected.dtype, dict(rtol=0, atol=0))
    torch.testing.assert_close(actual.detach().cpu(), expected.detach(), equal_nan=True, **tol)


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


def rand(shape, dtype=torch.float32, seed=0, scale=1.0, shift=0.0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_complex:
        return torch.complex(rand(shape, torch.float32, seed), rand(shape, torch.float32, seed + 1))
    return (torch.randn(shape, generator=g, dtype=torch.float64) * scale + shift).to(dtype)


FLOATS = [torch.float32, torch.bfloat16, torch.float16, torch.float64]


# ---- var / std ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS + [torch.complex64], ids=dtype_id)
def test_var_std_dims_correction_keepdim(dtype):
    x = rand((4, 5, 6), dtype, seed=1, scale=3.0, shift=10.0)
    t = x.to("tpu")
    cases = [dict(), dict(dim=1), dict(dim=(0, 2), keepdim=True), dict(dim=-1, correction=0),
             dict(dim=(1,), correction=2), dict(unbiased=False)]
    with Native():
        rs = []
        for kw in cases:
            for fn in (torch.var, torch.std):
                rs.append((fn(t, **kw), fn(x, **kw)))
            for fn in (torch.var_mean, torch.std_mean):
                (a, b), (ea, eb) = fn(t, **kw), fn(x, **kw)
                rs += [(a, ea), (b, eb)]
    for r, e in rs:
        check(r, e)


def test_var_large_mean_is_precise():
    x = rand((1000,), seed=2, shift=1e4)
    with Native():
        r = torch.var(x.to("tpu"))
    check(r, torch.var(x), dict(rtol=1e-4, atol=0))


def test_var_views_zero_dim_empty_and_dof_warning():
    x = rand((6, 5), seed=3)
    t = x.to("tpu")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with Native():
            rs = [(torch.var(t.t()[::2], 1), torch.var(x.t()[::2], 1)),
                  (torch.std(t[:, 2]), torch.std(x[:, 2])),
                  (torch.var(torch.tensor(2.0, device="tpu")), torch.var(torch.tensor(2.0))),
                  (torch.var(torch.tensor(2.0, device="tpu"), correction=0),
                   torch.var(torch.tensor(2.0), correction=0)),
                  (torch.var(torch.empty(0, 3, device="tpu"), 0), torch.var(torch.empty(0, 3), 0)),
                  (torch.std(t, 0, correction=6), torch.std(x, 0, correction=6))]
    assert any("degrees of freedom is <= 0" in str(m.message) for m in w)
    for r, e in rs:
        check(r, e)


def test_var_out_errors_and_autograd():
    x = rand((3, 4), seed=4)
    t = x.to("tpu")
    o = torch.empty(0, device="tpu")
    with Native():
        torch.var(t, 1, out=o)
    check(o, torch.var(x, 1))
    with pytest.raises(RuntimeError, match="std and var only support floating point and complex"):
        torch.var(torch.ones(3, dtype=torch.int64, device="tpu"))
    for fn in (lambda v: torch.var(v, 1), lambda v: torch.std(v, 0, correction=0),
               lambda v: torch.std_mean(v, 1)[0]):
        xc, xt = x.clone().requires_grad_(), t.clone().requires_grad_()
        fn(xc).sum().backward()
        fn(xt).sum().backward()
        check(xt.grad, xc.grad)


# ---- linalg_vector_norm / norm ------------------------------------------------------------

ORDS = [2, 1, INF, -INF, 0, 3, 0.5, -1.5]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16,
                                   torch.complex64], ids=dtype_id)
def test_vector_norm_ords(dtype):
    x = rand((4, 6), dtype, seed=5)
    x[1, 2] = 0
    t = x.to("tpu")
    with Native():
        rs = [(torch.linalg.vector_norm(t, o, dim=d, keepdim=k),
               torch.linalg.vector_norm(x, o, dim=d, keepdim=k))
              for o in ORDS for d, k in ((None, False), (1, False), ((0, 1), True))]
    for r, e in rs:
        check(r, e)


def test_norm_entry_points_dtype_views_and_out():
    x = rand((5, 4), seed=6)
    t = x.to("tpu")
    h = x.to(torch.float16)
    o = torch.empty(0, device="tpu")
    with Native():
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
        check(r, e)


def test_norm_nan_errors_and_autograd():
    x = torch.tensor([[1.0, NAN, -3.0], [2.0, -2.0, 0.5]])
    t = x.to("tpu")
    with Native():
        rs = [(torch.linalg.vector_norm(t, o, dim=1), torch.linalg.vector_norm(x, o, dim=1))
              for o in (INF, -INF, 2)]
    for r, e in rs:
        check(r, e)
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
        check(yt.grad, yc.grad)


# ---- logsumexp ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
def test_logsumexp(dtype):
    x = rand((4, 6), dtype, seed=8, scale=30.0)
    t = x.to("tpu")
    with Native():
        rs = [(torch.logsumexp(t, d, keepdim=k), torch.logsumexp(x, d, keepdim=k))
              for d in (0, 1, (0, 1)) for k in (False, True)]
    for r, e in rs:
        check(r, e)


def test_logsumexp_infinities_ints_views_empty_out():
    x = torch.tensor([[1e4, 1e4 - 1, 0.0], [-INF, -INF, -INF], [INF, 1.0, 2.0], [NAN, 1.0, 0.0],
                      [INF, -INF, 0.0]])
    t = x.to("tpu")
    i = torch.arange(6).view(2, 3)
    y = rand((5, 4), seed=9)
    o = torch.empty(0, device="tpu")
    with Native():
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
        check(r, e)


def test_logsumexp_autograd():
    x = rand((3, 5), seed=10, scale=5.0)
    xc, xt = x.clone().requires_grad_(), x.to("tpu").requires_grad_()
    torch.logsumexp(xc, 1).sum().backward()
    torch.logsumexp(xt, 1).sum().backward()
    check(xt.grad, xc.grad)
