"""The native special functions against PyTorch's CPU kernels: lgamma,
digamma, polygamma (and mvlgamma on top of lgamma), special.zeta, nextafter,
special.xlog1py, special.entr, i0 / special.i0e / i1 / i1e, sinc, special.ndtri,
special.erfcx, special.log_ndtr,
the Bessel functions special.bessel_j0/j1/y0/y1, modified_bessel_i0/i1/k0/k1,
scaled_modified_bessel_k0/k1, spherical_bessel_j0, special.airy_ai and the
orthogonal polynomials (Chebyshev, shifted Chebyshev, Hermite, Laguerre,
Legendre), logit, igamma/igammac. Values
over wide ranges with poles, negative integers, huge arguments and inf/NaN;
float32, float64 and the half types (computed in float32 like CPU); integer
inputs (promoted); in-place and out= forms; gradients; CPU's errors; and that
every call ran natively."""

import pytest
import torch

import torch_pjrt
import torch.nn.functional as F
from test_ops_distance import check as check_grads  # noqa: F401 (shared helpers)

pytestmark = pytest.mark.usefixtures("no_leaks")

INF = float("inf")
NAN = float("nan")

TOL = {
    torch.float32: dict(rtol=2e-5, atol=1e-5),
    torch.float64: dict(rtol=1e-10, atol=1e-10),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
    torch.float16: dict(rtol=1e-3, atol=1e-3),
}
DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


def grid(dtype):
    """CPU points: a dense sweep over [-30, 30] (hits the poles at the
    negative integers), wide random values, and special values."""
    g = torch.Generator().manual_seed(0)
    specials = torch.tensor([0.0, -0.0, 1, 2, -1, -2, -3.5, 0.5, 1e-30, -1e-30, 1e10, -1e10,
                             1e30, 100, 700, -700, 1e-8, 8.0, -8.0, 7.99999, 8.00001, 35,
                             INF, -INF, NAN], dtype=torch.float64)
    x = torch.cat([torch.linspace(-30, 30, 1201, dtype=torch.float64), specials,
                   torch.randn(400, generator=g, dtype=torch.float64) * 1000])
    return x.to(dtype)


def check(actual, expected, tol=None):
    assert actual.device.type == "tpu", actual.device
    assert actual.dtype == expected.dtype, f"{actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape
    tol = tol or TOL[expected.dtype]
    torch.testing.assert_close(actual.detach().cpu(), expected.detach(), equal_nan=True, **tol)


UNARY = {
    "lgamma": torch.lgamma,
    "digamma": torch.digamma,
    "polygamma1": lambda x: torch.polygamma(1, x),
    "polygamma2": lambda x: torch.polygamma(2, x),
    "polygamma3": lambda x: torch.special.polygamma(3, x),
    "entr": torch.special.entr,
    "i0": torch.i0,
    "i0e": torch.special.i0e,
    "i1": torch.special.i1,
    "i1e": torch.special.i1e,
    "sinc": torch.sinc,
    # probabilities made on the CPU (the device's sigmoid flushes subnormals)
    "ndtri": lambda x: torch.special.ndtri(torch.sigmoid(x.cpu() / 8).to(x.device)),
    "erfcx": torch.special.erfcx,
    "log_ndtr": torch.special.log_ndtr,
}
for _name in ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
              "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
              "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0"):
    UNARY[_name] = getattr(torch.special, _name)

# Where the function is huge (lgamma of 1e30, polygamma next to a pole) the
# two computations agree in relative terms only: compare those with rtol.
LOOSE = {
    torch.float32: dict(rtol=1e-4, atol=1e-5),
    torch.float64: dict(rtol=1e-9, atol=1e-10),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_unary_values(name, dtype, native_only):
    fn = UNARY[name]
    x = grid(dtype)
    tol = None
    if name.startswith("polygamma") and dtype in LOOSE:
        tol = LOOSE[dtype]
    try:
        expected = fn(x)
    except NotImplementedError as e:  # CPU refuses half types for some: so do we
        with pytest.raises(NotImplementedError, match=str(e).replace("(", "\\(")):
            fn(x.to("tpu"))
        return
    check(fn(x.to("tpu")), expected, tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_polygamma_near_poles(dtype, native_only):
    # relative agreement where trigamma and n >= 2 are huge
    x = torch.tensor([-1e-3, -0.999, -1.001, -5.5, 1e-4, -2.25], dtype=dtype)
    for n in range(0, 5):
        check(torch.polygamma(n, x.to("tpu")), torch.polygamma(n, x), LOOSE[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_lgamma_near_its_zeros(dtype, native_only):
    # lgamma vanishes at 1 and 2: relative accuracy there, exact zeros
    h = torch.tensor([0.0, 1e-6, -1e-6, 1e-4, -1e-4, 1e-2], dtype=dtype)
    x = torch.cat([1 + h, 2 + h, torch.tensor([True, False]).to(dtype)])
    check(torch.lgamma(x.to("tpu")), torch.lgamma(x), dict(rtol=1e-5, atol=1e-12))
    check(torch.lgamma(torch.tensor([True, True, False], device="tpu")),
          torch.lgamma(torch.tensor([True, True, False])), dict(rtol=0, atol=0))


def test_digamma_signed_zero_and_poles(native_only):
    x = torch.tensor([0.0, -0.0, -1.0, -7.0, -INF, INF, NAN])
    out = torch.digamma(x.to("tpu")).cpu()
    torch.testing.assert_close(out, torch.digamma(x), equal_nan=True)
    assert out[0] == -INF and out[1] == INF


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_zeta(dtype, native_only):
    g = torch.Generator().manual_seed(1)
    x = torch.cat([torch.tensor([1.0, 0.5, 2.0, 3.0, 2.5, 4.0, 1.5, 30.0, INF, NAN]),
                   torch.rand(200, generator=g) * 20 + 1]).to(dtype)
    q = torch.cat([torch.tensor([2.0, 1.0, 0.0, -1.0, -1.5, -2.5, 0.5, 1e-3, 1.0, 1.0]),
                   torch.rand(200, generator=g) * 50]).to(dtype)
    check(torch.special.zeta(x.to("tpu"), q.to("tpu")), torch.special.zeta(x, q), LOOSE[dtype])
    # Scalar overloads
    check(torch.special.zeta(2.0, q.to("tpu")), torch.special.zeta(2.0, q), LOOSE[dtype])
    check(torch.special.zeta(x.to("tpu"), 3.0), torch.special.zeta(x, 3.0), LOOSE[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
def test_binary(dtype, native_only):
    x = grid(dtype)
    y = x.flip(0)
    check(torch.special.xlog1py(x.to("tpu"), y.to("tpu")), torch.special.xlog1py(x, y))
    check(torch.special.xlog1py(x.to("tpu"), 2.0), torch.special.xlog1py(x, 2.0))
    check(torch.special.xlog1py(3.0, y.to("tpu")), torch.special.xlog1py(3.0, y))
    a = torch.nextafter(x.to("tpu"), y.to("tpu")).cpu()
    assert torch.equal(a.isnan(), torch.nextafter(x, y).isnan())
    e = torch.nextafter(x, y)
    torch.testing.assert_close(a, e, rtol=0, atol=0, equal_nan=True)


def test_nextafter_bits(native_only):
    x = torch.tensor([1.0, 1.0, -1.0, 0.0, INF, 3.0])
    y = torch.tensor([2.0, 0.0, -2.0, 0.0, 0.0, 3.0])
    out = torch.nextafter(x.to("tpu"), y.to("tpu")).cpu()
    assert torch.equal(out.view(torch.int32), torch.nextafter(x, y).view(torch.int32))


def test_integer_inputs_promote(native_only):
    x = torch.arange(-5, 20, dtype=torch.int64)
    for fn in (torch.lgamma, torch.digamma, torch.i0, torch.special.i1e, torch.sinc,
               torch.special.entr):
        check(fn(x.to("tpu")), fn(x), LOOSE[torch.float32])
    check(torch.polygamma(2, x.to("tpu")), torch.polygamma(2, x), LOOSE[torch.float32])


def test_mvlgamma(native_only):
    x = torch.linspace(2.0, 30.0, 50)
    for p in (1, 3, 5):
        check(torch.mvlgamma(x.to("tpu"), p), torch.mvlgamma(x, p), LOOSE[torch.float32])
    o = torch.empty(0, device="tpu")
    torch.mvlgamma(x.to("tpu"), 2, out=o)
    check(o, torch.mvlgamma(x, 2), LOOSE[torch.float32])


def test_inplace_out_and_views(native_only):
    base = torch.linspace(0.1, 12.0, 48).reshape(6, 8)
    t = base.to("tpu")
    v = t[:, ::2].t()  # a non-contiguous view
    v.lgamma_()
    ref = base.clone()
    ref[:, ::2].t().lgamma_()
    check(t, ref)
    t2 = base.to("tpu")
    t2.digamma_()
    check(t2, base.digamma())
    t3 = base.to("tpu")
    t3.polygamma_(2)
    check(t3, base.polygamma(2), LOOSE[torch.float32])
    t4 = base.to("tpu")
    t4.i0_()
    check(t4, base.i0())
    t5 = base.to("tpu")
    t5.sinc_()
    check(t5, base.sinc())
    t6 = base.to("tpu")
    t6.nextafter_(torch.zeros(8, device="tpu"))
    check(t6, base.nextafter(torch.zeros(8)), dict(rtol=0, atol=0))
    for fn in (torch.lgamma, torch.digamma, torch.i0, torch.special.i0e, torch.special.i1,
               torch.special.i1e, torch.special.entr, torch.sinc):
        o = torch.empty(0, device="tpu")
        r = fn(base.to("tpu"), out=o)
        assert r is o
        check(o, fn(base))
    o = torch.empty(0, device="tpu", dtype=torch.float64)
    torch.polygamma(1, base.to("tpu"), out=o)
    check(o, torch.polygamma(1, base).double(), LOOSE[torch.float32])
    o = torch.empty(0, device="tpu")
    torch.special.zeta(base.to("tpu") + 1, 2.0, out=o)
    check(o, torch.special.zeta(base + 1, 2.0), LOOSE[torch.float32])
    o = torch.empty(0, device="tpu")
    torch.special.xlog1py(base.to("tpu"), base.to("tpu"), out=o)
    check(o, torch.special.xlog1py(base, base))


def test_grads(native_only):
    x = torch.linspace(0.2, 9.0, 30, dtype=torch.float64)
    fns = [torch.lgamma, torch.digamma, lambda a: torch.polygamma(2, a), torch.i0,
           torch.special.i0e, torch.special.i1, torch.special.i1e, torch.special.entr, torch.sinc,
           lambda a: torch.special.xlog1py(a, a * 2),
           lambda a: torch.special.zeta(3.0, a), lambda a: torch.mvlgamma(a + 2, 2)]
    for fn in fns:
        xc = x.clone().requires_grad_()
        xt = x.to("tpu").requires_grad_()
        (gc,) = torch.autograd.grad(fn(xc).sum(), xc)
        (gt,) = torch.autograd.grad(fn(xt).sum(), xt)
        check(gt, gc, LOOSE[torch.float64])


def test_errors():
    x = torch.ones(3, device="tpu")
    with pytest.raises(RuntimeError, match="polygamma\\(n, x\\) does not support negative n"):
        torch.polygamma(-1, x)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        torch.arange(3, device="tpu").lgamma_()
    with pytest.raises(NotImplementedError, match="\"nextafter_cpu\" not implemented for 'Long'"):
        torch.nextafter(torch.arange(3, device="tpu"), torch.arange(3, device="tpu"))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.special.zeta(x, torch.ones(3))
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        torch.special.i0e(x, out=torch.empty(3, device="tpu", dtype=torch.int64))


def test_ndtri_subnormal_and_edges(native_only):
    for dtype, tiny in ((torch.float32, 1e-40), (torch.float64, 1e-310)):
        y = torch.tensor([tiny, -tiny, 0.0, -0.0, 1.0, 1.5, -0.5, NAN, 0.5], dtype=dtype)
        check(torch.special.ndtri(y.to("tpu")), torch.special.ndtri(y))


POLYS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
         "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
         "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
         "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
         "laguerre_polynomial_l", "legendre_polynomial_p"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_orthogonal_polynomials(dtype, native_only):
    # the ends of the interval, the trigonometric forms (n > 6), Hermite's
    # degree limit (n > 128 / 512 -> NaN), negative, fractional and NaN n
    # (no NaN x: CPU's kernels return an uninitialized value for NaN x and
    # n >= 2 in U, V, W, L and P; we return NaN)
    g = torch.Generator().manual_seed(2)
    x = torch.cat([torch.tensor([-1.0, 1.0, 0.0, 0.5, -0.5, 2.0, -2.0, 1e-9, INF]),
                   torch.rand(30, generator=g) * 4 - 2]).to(dtype)
    n = torch.tensor([-2.0, 0, 1, 2, 3, 5, 7, 9, 12, 20, 50, 129, 600, 2.7, -0.5, NAN], dtype=dtype)
    xx, nn = x[:, None].expand(-1, len(n)), n[None, :].expand(len(x), -1)
    for name in POLYS:
        fn = getattr(torch.special, name)
        # large degrees inside (-1, 1) take cos(n acos x): compare absolutely there
        check(fn(xx.to("tpu"), nn.to("tpu")), fn(xx, nn), dict(rtol=1e-5, atol=1e-3))
    # the Scalar overloads (x_scalar, n_scalar) wrap the number as a 0-d operand
    for name in ("chebyshev_polynomial_t", "legendre_polynomial_p"):
        fn = getattr(torch.special, name)
        check(fn(x.to("tpu"), 3), fn(x, 3), TOL[dtype])
        check(fn(0.25, n.to("tpu")), fn(0.25, n), dict(rtol=1e-5, atol=1e-3))


def test_orthogonal_polynomials_out_int_and_errors(native_only):
    x = torch.arange(-3, 4)
    n = torch.arange(0, 7)
    o = torch.empty(0, device="tpu")
    torch.special.legendre_polynomial_p(x.to("tpu"), n.to("tpu"), out=o)
    check(o, torch.special.legendre_polynomial_p(x, n), TOL[torch.float32])
    with pytest.raises(NotImplementedError, match="\"hermite_polynomial_h_cpu\" not implemented "
                                                  "for 'Half'"):
        torch.special.hermite_polynomial_h(x.half().to("tpu"), n.half().to("tpu"))


def test_airy_ai(native_only):
    x = grid(torch.float64)
    check(torch.special.airy_ai(x.to("tpu")), torch.special.airy_ai(x))


def test_airy_ai_float32_runs_on_cpu_counted():
    # float32's Ai far left hangs on the last bit of a huge phase: CPU's kernel
    x = grid(torch.float32)
    torch_pjrt.reset_fallbacks()
    out = torch.special.airy_ai(x.to("tpu"))
    torch.tpu.synchronize()
    torch.testing.assert_close(out.cpu(), torch.special.airy_ai(x), equal_nan=True, rtol=0, atol=0)
    assert "aten::special_airy_ai" in torch_pjrt.fallbacks()


def test_sinc_complex_runs_on_cpu_counted():
    z = torch.tensor([0.5 + 1j, 0j, -2 + 0.25j])
    torch_pjrt.reset_fallbacks()
    out = torch.sinc(z.to("tpu"))
    torch.tpu.synchronize()
    torch.testing.assert_close(out.cpu(), torch.sinc(z))
    assert "aten::sinc" in torch_pjrt.fallbacks()


GRAD_TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float64: dict(rtol=1e-9, atol=1e-9),
       torch.bfloat16: dict(rtol=2e-2, atol=2e-2), torch.float16: dict(rtol=2e-3, atol=2e-3)}


def test_logit_with_and_without_eps():
    x = torch.tensor([-0.5, 0.0, 0.05, 0.3, 0.5, 0.97, 1.0, 1.5, float("nan")])
    check_grads(lambda x: torch.logit(x), x)
    check_grads(lambda x: torch.logit(x, eps=0.1), x)
    check_grads(lambda x: torch.logit(x, eps=0.1), x.double(), dtype=torch.float64)
    check_grads(lambda x: torch.logit(x, 1e-2), torch.rand(4, 5).bfloat16(), dtype=torch.bfloat16)
    # integer input gives float, as on CPU
    torch.testing.assert_close(torch.logit(torch.tensor([0, 1, 2], device="tpu")).cpu(),
                               torch.logit(torch.tensor([0, 1, 2])), equal_nan=True)
    y = torch.rand(3, 4, device="tpu")
    e = torch.logit(y.cpu(), 0.2)
    y.logit_(0.2)
    torch.testing.assert_close(y.cpu(), e)


def _igamma_inputs(dtype):
    """Every regime of CPU's algorithm: the power series, both complements,
    the continued fraction, Temme's expansion (a > 20 with x near a, and
    a > 200), and the boundary values."""
    g = torch.Generator().manual_seed(9)
    a = torch.cat([torch.rand(60, generator=g) * 5, torch.rand(60, generator=g) * 50,
                   100 + torch.rand(30, generator=g) * 300])
    x = torch.cat([torch.rand(60, generator=g) * 5, torch.rand(60, generator=g) * 60,
                   a[120:] * (0.9 + 0.2 * torch.rand(30, generator=g))])
    inf, nan = float("inf"), float("nan")
    sa = torch.tensor([0.0, 0.0, 1.0, inf, inf, 2.0, nan, -1.0, 3.0, 0.5, 25.0, 250.0, inf])
    sx = torch.tensor([0.0, 1.0, 0.0, 5.0, inf, inf, 1.0, 1.0, -1.0, 0.6, 24.0, 260.0, nan])
    return torch.cat([a, sa]).to(dtype), torch.cat([x, sx]).to(dtype)


# each igamma program takes seconds to compile: a few combinations only
@pytest.mark.parametrize("fn,dtype", [(torch.igamma, torch.float32), (torch.igammac, torch.float32),
                                      (torch.igammac, torch.float64)],
                         ids=["igamma-float32", "igammac-float32", "igammac-float64"])
def test_igamma_matches_cpu(fn, dtype, native_only, no_leaks):
    a, x = _igamma_inputs(dtype)
    tol = {torch.float32: dict(atol=1e-6, rtol=1e-5), torch.float64: dict(atol=1e-13, rtol=1e-12)}
    torch.testing.assert_close(fn(a.to("tpu"), x.to("tpu")).cpu(), fn(a, x), equal_nan=True,
                               **tol[dtype])


def test_igammac_out_inplace_broadcast_view(native_only):
    a, x = torch.rand(3, 2) * 4, torch.rand(4) * 4
    xv = x.to("tpu")[::2]  # a strided view, broadcast over rows
    expected = torch.igammac(a, x[::2])
    out = torch.empty(0, device="tpu")
    torch.igammac(a.to("tpu"), xv, out=out)
    torch.testing.assert_close(out.cpu(), expected, atol=1e-6, rtol=1e-5)
    t = a.to("tpu")
    t.igammac_(xv)
    torch.testing.assert_close(t.cpu(), expected, atol=1e-6, rtol=1e-5)


def test_igamma_integer_raises_cpu_error():
    i = torch.ones(3, dtype=torch.long)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        torch.igamma(i.to("tpu"), i.to("tpu"))
