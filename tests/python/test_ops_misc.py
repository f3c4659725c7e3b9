"""Pointwise stragglers (copysign, signbit, fmax/fmin, heaviside, logaddexp,
logaddexp2, xlogy, angle, complex, polar, rsub, frexp, conj_physical,
pow with a scalar base) and small reductions and composites (equal, nansum,
count_nonzero over dims, trace, vdot, aminmax, renorm, addbmm, clamp with
tensor bounds, fill_ with a tensor, cummax/cummin, index_reduce, put_,
logspace, repeat_interleave, searchsorted/bucketize) against
PyTorch's CPU kernels: float32 plus half, integer and bool inputs where the
op takes them, NaN/inf/-0.0 specials, non-contiguous inputs, in-place and
out= forms, autograd, CPU's errors, and that each ran natively."""
import pytest
import torch

import torch_pjrt
from conftest import make
from test_ops_stats import TOL, Native, check  # noqa: F401 (shared helpers)

pytestmark = pytest.mark.usefixtures("no_leaks")

DEV = "tpu"
NAN, INF = float("nan"), float("inf")


def t(x):
    return x.to(DEV)


def same_error(fn, cpu_args, exc=RuntimeError):
    """fn raises the same type and first line on tpu as on CPU."""
    with pytest.raises(exc) as cpu:
        fn(*cpu_args)
    with pytest.raises(exc) as tpu:
        fn(*[t(a) if isinstance(a, torch.Tensor) else a for a in cpu_args])
    assert str(tpu.value).split("\n")[0] == str(cpu.value).split("\n")[0]


SPECIAL = torch.tensor([NAN, INF, -INF, -0.0, 0.0, 1.5, -2.5, 3.0, -NAN, 1e-3, 7.0, -1.0])


def pair(dtype, seed=0):
    a = make(dtype, (4, 6), seed=seed)
    b = make(dtype, (4, 6), seed=seed + 1)
    if dtype.is_floating_point:
        # specials on both sides, including equal infinities and zeros
        a.view(-1)[:12] = SPECIAL.to(dtype)
        b.view(-1)[:12] = SPECIAL.flip(0).to(dtype)
        b.view(-1)[12:15] = a.view(-1)[:3]
    return a, b


BINARY = {
    "copysign": torch.copysign,
    "fmax": torch.fmax,
    "fmin": torch.fmin,
    "logaddexp": torch.logaddexp,
    "logaddexp2": torch.logaddexp2,
    "xlogy": torch.xlogy,
    "heaviside": torch.heaviside,
}
FLOATS = [torch.float32, torch.float16, torch.bfloat16, torch.float64]


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_binary_float(name, dtype):
    fn = BINARY[name]
    a, b = pair(dtype)
    with Native():
        check(fn(t(a), t(b)), fn(a, b))
        # non-contiguous and broadcast operands
        check(fn(t(a).t(), t(b)[:1].t()), fn(a.t(), b[:1].t()))


@pytest.mark.parametrize("name", ["copysign", "fmax", "fmin", "xlogy", "heaviside"])
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8, torch.bool], ids=str)
def test_binary_integer(name, dtype):
    fn = BINARY[name]
    a, b = make(dtype, (3, 5)), make(dtype, (3, 5), seed=3)
    if dtype != torch.bool:
        a, b = a % 7 - (3 if dtype != torch.uint8 else 0), b % 5
    with Native():
        check(fn(t(a), t(b)), fn(a, b), tol=dict(rtol=1e-6, atol=1e-6))


def test_binary_scalars_and_promotion():
    a = make(torch.float16, (3, 4))
    i = torch.arange(12).reshape(3, 4) - 5
    with Native():
        check(torch.copysign(t(a), -1.0), torch.copysign(a, -1.0))
        check(torch.copysign(t(i), t(a)), torch.copysign(i, a), TOL[torch.float16])
        check(torch.xlogy(t(a).float(), 2.0), torch.xlogy(a.float(), 2.0))
        check(torch.xlogy(3, t(a).float().abs()), torch.xlogy(3, a.float().abs()))
        check(torch.fmax(t(i), t(a)), torch.fmax(i, a), TOL[torch.float16])
        check(torch.logaddexp(t(a), t(a.double())), torch.logaddexp(a, a.double()))


def test_binary_inplace_and_out():
    a, b = pair(torch.float32)
    with Native():
        for name in ["copysign", "xlogy", "heaviside"]:
            x, y = a.clone(), t(a.clone())
            getattr(x, name + "_")(b)
            getattr(y, name + "_")(t(b))
            check(y, x)
        for name, fn in BINARY.items():
            out = torch.empty(4, 6, device=DEV)
            r = fn(t(a), t(b), out=out)
            assert r is out
            check(out, fn(a, b))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64, torch.int32,
                                   torch.int8, torch.uint8, torch.bool], ids=str)
def test_signbit(dtype):
    x = make(dtype, (4, 6)) if not dtype.is_floating_point else SPECIAL.to(dtype).view(3, 4)
    with Native():
        check(torch.signbit(t(x)), torch.signbit(x))
        out = torch.empty(0, dtype=torch.bool, device=DEV)
        torch.signbit(t(x), out=out)
        check(out, torch.signbit(x))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool,
                                   torch.complex64], ids=str)
def test_angle(dtype):
    x = SPECIAL.to(dtype) if dtype.is_floating_point else make(dtype, (12,))
    if dtype.is_complex:
        x = torch.complex(SPECIAL, SPECIAL.flip(0))
    with Native():
        check(torch.angle(t(x)), torch.angle(x))


def test_complex_and_polar():
    re, im = make(torch.float32, (3, 4), specials=False), make(torch.float32, (4,), seed=2,
                                                              specials=False)
    with Native():
        check(torch.complex(t(re), t(im)), torch.complex(re, im))
        check(torch.complex(t(re.double()), t(im.double())), torch.complex(re.double(), im.double()))
        check(torch.polar(t(re.abs()), t(im)), torch.polar(re.abs(), im), dict(rtol=1e-5, atol=1e-4))
        out = torch.empty(3, 4, dtype=torch.complex64, device=DEV)
        torch.complex(t(re), t(im), out=out)
        check(out, torch.complex(re, im))
    # complex32 is held on tpu but computed by CPU's kernel (test_dtypes_storage.py)
    h = re.half()
    c = torch.complex(t(h), t(h))
    assert c.dtype == torch.complex32 and c.device.type == DEV
    assert torch.equal(c.cpu().view(torch.int32), torch.complex(h, h).view(torch.int32))
    same_error(torch.polar, (h, h), NotImplementedError)


def test_rsub():
    a, b = pair(torch.float32)
    i = torch.arange(6)
    with Native():
        check(torch.rsub(t(a), t(b), alpha=2), torch.rsub(a, b, alpha=2))
        check(torch.rsub(t(i), t(i * 3)), torch.rsub(i, i * 3))
        check(3 - t(i), 3 - i)
        check(2.5 - t(a), 2.5 - a)


def test_pointwise_autograd():
    a, b = make(torch.float32, (3, 4), specials=False), make(torch.float32, (3, 4), seed=1,
                                                             specials=False)
    for fn in [torch.logaddexp, torch.logaddexp2, torch.fmax, torch.fmin, torch.copysign,
               lambda x, y: torch.xlogy(x, y.abs()), lambda x, y: torch.rsub(x, y, alpha=3)]:
        ac, bc = a.clone().requires_grad_(), b.clone().requires_grad_()
        at, bt = t(a).requires_grad_(), t(b).requires_grad_()
        with Native():
            fn(at, bt).sum().backward()
        fn(ac, bc).sum().backward()
        check(at.grad, ac.grad)
        check(bt.grad, bc.grad)


def test_pointwise_errors():
    i = torch.arange(4)
    c = torch.complex(torch.ones(2), torch.ones(2))
    f = torch.ones(4)
    same_error(torch.logaddexp, (i, i), NotImplementedError)
    same_error(torch.logaddexp2, (c, c), NotImplementedError)
    same_error(torch.copysign, (c, c), NotImplementedError)
    same_error(torch.xlogy, (c, c), NotImplementedError)
    same_error(torch.signbit, (c,), NotImplementedError)
    same_error(torch.fmax, (c, c))
    same_error(torch.heaviside, (f, f.double()))
    same_error(torch.heaviside, (c, c))
    same_error(torch.complex, (i, i))
    same_error(torch.complex, (f, f.double()))
    same_error(torch.polar, (f, f.double()))
    same_error(torch.rsub, (i.bool(), i.bool()))


def test_complex_logaddexp_runs_cpus_kernel():
    c = torch.complex(torch.randn(5), torch.randn(5))
    torch_pjrt.reset_fallbacks()
    check(torch.logaddexp(t(c), t(c)), torch.logaddexp(c, c))
    assert "aten::logaddexp" in torch_pjrt.fallbacks()


# ---- reductions and composites -------------------------------------------------


def test_equal():
    a = make(torch.float32, (3, 4), specials=False)
    with Native():
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
    with Native():
        check(torch.nansum(t(x)), torch.nansum(x), dict(rtol=2e-3, atol=2e-2))
        check(torch.nansum(t(x), 1, keepdim=True), torch.nansum(x, 1, keepdim=True),
              dict(rtol=2e-3, atol=2e-2))
        if dtype.is_floating_point:
            check(torch.nanmean(t(x), 0), torch.nanmean(x, 0), dict(rtol=2e-3, atol=2e-2))
            check(torch.nansum(t(x), dtype=torch.float64), torch.nansum(x, dtype=torch.float64))
    same_error(torch.nansum, (torch.complex(torch.ones(2), torch.ones(2)),))


def test_nansum_grad():
    x = make(torch.float32, (3, 4), specials=False)
    x[1, 1] = NAN
    xc, xt = x.clone().requires_grad_(), t(x).requires_grad_()
    torch.nansum(xc).backward()
    with Native():
        torch.nansum(xt).backward()
    check(xt.grad, xc.grad)


def test_count_nonzero_trace_vdot():
    x = make(torch.float32, (4, 5))
    x[x.abs() < 50] = 0
    i = torch.randint(-3, 3, (4, 5), dtype=torch.int32)
    with Native():
        check(torch.count_nonzero(t(x), dim=1), torch.count_nonzero(x, dim=1))
        check(torch.count_nonzero(t(i), dim=(0, 1)), torch.count_nonzero(i, dim=(0, 1)))
        y = make(torch.float32, (4, 5), specials=False)
        check(torch.trace(t(y)), torch.trace(y))
        check(torch.trace(t(y).t()), torch.trace(y.t()))
        check(torch.trace(t(i)), torch.trace(i))
        v, w = y[0], y[1]
        check(torch.vdot(t(v), t(w)), torch.vdot(v, w))
        check(torch.vdot(t(v.half()), t(w.half())), torch.vdot(v.half(), w.half()),
              dict(rtol=1e-2, atol=1e-1))
        check(torch.vdot(t(i[0]), t(i[1])), torch.vdot(i[0], i[1]))
        check(torch.vdot(t(y)[:, 0], t(y)[:, 1]), torch.vdot(y[:, 0], y[:, 1]))
    same_error(torch.trace, (torch.ones(2, 2, 2),))
    same_error(torch.vdot, (torch.ones(3), torch.ones(3).double()))
    same_error(torch.vdot, (torch.ones(2), torch.ones(3)))
    same_error(torch.vdot, (torch.ones(2, 2), torch.ones(3)))


def test_trace_and_vdot_grad():
    y = make(torch.float32, (4, 4), specials=False)
    yc, yt = y.clone().requires_grad_(), t(y).requires_grad_()
    torch.trace(yc).backward()
    with Native():
        torch.trace(yt).backward()
    check(yt.grad, yc.grad)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool], ids=str)
def test_aminmax(dtype):
    x = make(dtype, (4, 5), specials=False)
    with Native():
        for kw in [dict(), dict(dim=1), dict(dim=0, keepdim=True), dict(keepdim=True)]:
            lo, hi = torch.aminmax(t(x), **kw)
            elo, ehi = torch.aminmax(x, **kw)
            check(lo, elo)
            check(hi, ehi)
        lo, hi = torch.aminmax(t(x).t(), dim=-1)
        check(lo, torch.aminmax(x.t(), dim=-1)[0])
    same_error(lambda a: torch.aminmax(a, dim=0), (torch.empty(0, 3),), IndexError)


def test_aminmax_nan():
    x = torch.tensor([[1.0, NAN, 3.0], [2.0, -1.0, 0.5]])
    with Native():
        lo, hi = torch.aminmax(t(x), dim=1)
    check(lo, torch.aminmax(x, dim=1)[0])
    check(hi, torch.aminmax(x, dim=1)[1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
def test_renorm(dtype):
    x = make(dtype, (3, 4, 5), specials=False) / 50
    with Native():
        for p, dim, maxnorm in [(2, 0, 1.0), (1, 1, 0.5), (3.5, -1, 2.0), (float("inf"), 2, 0.3)]:
            check(torch.renorm(t(x), p, dim, maxnorm), torch.renorm(x, p, dim, maxnorm),
                  TOL[dtype])
        y, yt = x.clone(), t(x)
        y.renorm_(2, 1, 0.7)
        yt.renorm_(2, 1, 0.7)
        check(yt, y, TOL[dtype])
    same_error(torch.renorm, (x, 2, 0, -1.0))
    same_error(torch.renorm, (x, -1, 0, 1.0))


def test_renorm_grad():
    x = make(torch.float32, (3, 4), specials=False) / 50
    xc, xt = x.clone().requires_grad_(), t(x).requires_grad_()
    torch.renorm(xc, 2, 0, 1.0).sum().backward()
    with Native():
        torch.renorm(xt, 2, 0, 1.0).sum().backward()
    check(xt.grad, xc.grad)


def test_addbmm():
    m = make(torch.float32, (3, 5), specials=False)
    b1 = make(torch.float32, (2, 3, 4), seed=1, specials=False) / 100
    b2 = make(torch.float32, (2, 4, 5), seed=2, specials=False) / 100
    with Native():
        check(torch.addbmm(t(m), t(b1), t(b2)), torch.addbmm(m, b1, b2), dict(rtol=1e-4, atol=1e-3))
        check(torch.addbmm(t(m[0]), t(b1), t(b2), beta=0.5, alpha=2),
              torch.addbmm(m[0], b1, b2, beta=0.5, alpha=2), dict(rtol=1e-4, atol=1e-3))
        check(torch.addbmm(t(m), t(b1).transpose(1, 2).contiguous().transpose(1, 2), t(b2)),
              torch.addbmm(m, b1, b2), dict(rtol=1e-4, atol=1e-3))
        x, xt = m.clone(), t(m)
        x.addbmm_(b1, b2)
        xt.addbmm_(t(b1), t(b2))
        check(xt, x, dict(rtol=1e-4, atol=1e-3))
        mc, b1c, b2c = (v.clone().requires_grad_() for v in (m, b1, b2))
        mt, b1t, b2t = (t(v).requires_grad_() for v in (m, b1, b2))
        torch.addbmm(mt, b1t, b2t).sum().backward()
    torch.addbmm(mc, b1c, b2c).sum().backward()
    for a, e in [(mt, mc), (b1t, b1c), (b2t, b2c)]:
        check(a.grad, e.grad, dict(rtol=1e-4, atol=1e-3))
    same_error(torch.addbmm, (m, b1[0], b2))
    same_error(torch.addbmm, (m, b1, b2[:1]))
    same_error(torch.addbmm, (m, b1, b2.transpose(1, 2)))


def test_clamp_tensor_bounds():
    x = make(torch.float32, (4, 6))
    lo = make(torch.float32, (6,), seed=1, specials=False) - 20
    hi = lo + 40
    hi[2] = NAN
    with Native():
        check(torch.clamp(t(x), t(lo), t(hi)), torch.clamp(x, lo, hi))
        check(torch.clamp(t(x), min=t(lo)), torch.clamp(x, min=lo))
        check(torch.clamp(t(x), max=t(hi)), torch.clamp(x, max=hi))
        check(torch.clamp_min(t(x), t(lo)), torch.clamp_min(x, lo))
        check(torch.clamp_max(t(x), t(hi)), torch.clamp_max(x, hi))
        i = torch.arange(12).reshape(2, 6)
        check(torch.clamp(t(i), t(lo), t(hi)), torch.clamp(i, lo, hi))
        out = torch.empty(4, 6, device=DEV)
        torch.clamp_min(t(x), t(lo), out=out)
        check(out, torch.clamp_min(x, lo))
        a = make(torch.float32, (6,), specials=False).requires_grad_()
        at = t(a.detach()).requires_grad_()
        torch.clamp(at, t(lo), t(hi).nan_to_num()).sum().backward()
    torch.clamp(a, lo, hi.nan_to_num()).sum().backward()
    check(at.grad, a.grad)


def test_fill_tensor_value():
    with Native():
        x, xt = torch.zeros(3, 4), torch.zeros(3, 4, device=DEV)
        v = torch.tensor(2.5)
        x[:, 1].fill_(v)
        xt[:, 1].fill_(t(v))
        check(xt, x)
        xt.fill_(v)  # a CPU 0-d value
        check(xt, torch.full((3, 4), 2.5))
        it = torch.zeros(5, dtype=torch.int32, device=DEV)
        it.fill_(t(torch.tensor(7.9)))
        check(it, torch.zeros(5, dtype=torch.int32).fill_(torch.tensor(7.9)))
    same_error(lambda a, b: a.fill_(b), (torch.zeros(3), torch.ones(2)))


def test_cummax_cummin():
    x = make(torch.float32, (4, 6))
    with Native():
        for fn in (torch.cummax, torch.cummin):
            for d in (0, 1):
                v, i = fn(t(x), d)
                ev, ei = fn(x, d)
                check(v, ev)
                check(i, ei)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(reduce, include_self):
    x = make(torch.float32, (5, 3), specials=False) / 50
    src = make(torch.float32, (4, 3), seed=1, specials=False) / 50
    idx = torch.tensor([0, 4, 0, 2])
    with Native():
        check(torch.index_reduce(t(x), 0, t(idx), t(src), reduce, include_self=include_self),
              x.index_reduce(0, idx, src, reduce, include_self=include_self))
        xi = torch.arange(15, dtype=torch.int64).reshape(3, 5)
        si = torch.arange(6, dtype=torch.int64).reshape(3, 2) * 3 - 4
        ii = torch.tensor([1, 1])
        check(t(xi).index_reduce(1, t(ii), t(si), reduce, include_self=include_self),
              xi.index_reduce(1, ii, si, reduce, include_self=include_self))
        y, yt = x.clone(), t(x)
        y.index_reduce_(0, idx, src, reduce, include_self=include_self)
        yt.index_reduce_(0, t(idx), t(src), reduce, include_self=include_self)
        check(yt, y)


def test_index_reduce_errors():
    x, src = torch.zeros(5, 3), torch.ones(4, 3)
    same_error(lambda a, i, s: a.index_reduce(0, i, s, "sum"), (x, torch.tensor([0, 1, 2, 3]), src))
    same_error(lambda a, i, s: a.index_reduce(0, i, s, "prod"), (x, torch.tensor([0, 1]), src))
    with pytest.raises((RuntimeError, IndexError)):
        t(x).index_reduce(0, t(torch.tensor([0, 1, 9, 2])), t(src), "amax")


def test_pow_scalar_base_and_ldexp():
    e = torch.tensor([-2.0, 0.5, NAN, 3.0, INF])
    i = torch.arange(5)
    with Native():
        check(torch.pow(2.0, t(e)), torch.pow(2.0, e))
        check(torch.pow(1, t(e)), torch.pow(1, e))
        check(torch.pow(3, t(i)), torch.pow(3, i))
        check(torch.ldexp(t(e), t(i)), torch.ldexp(e, i))
        out = torch.empty(5, device=DEV)
        torch.pow(2.0, t(e), out=out)
        check(out, torch.pow(2.0, e))


def test_put_and_take_grad():
    x = make(torch.float32, (3, 4), specials=False)
    idx = torch.tensor([[0, -1], [5, 7]])
    src = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    with Native():
        for acc in (False, True):
            y, yt = x.clone(), t(x)
            y.put_(idx, src, accumulate=acc)
            yt.put_(t(idx), t(src), accumulate=acc)
            check(yt, y)
        yt = t(x).t()  # non-contiguous self
        y = x.t().clone()
        y.put_(idx, src, accumulate=True)
        yt.put_(t(idx), t(src), accumulate=True)
        check(yt, y)
        a = x.clone().requires_grad_()
        at_ = t(x).requires_grad_()
        torch.take(at_, t(idx)).sum().backward()
    torch.take(a, idx).sum().backward()
    check(at_.grad, a.grad)
    # repeated indices without accumulate: CPU's kernel (last write wins)
    dup = torch.tensor([1, 1, 2])
    torch_pjrt.reset_fallbacks()
    y, yt = x.clone(), t(x)
    y.put_(dup, torch.tensor([5.0, 6.0, 7.0]))
    yt.put_(t(dup), t(torch.tensor([5.0, 6.0, 7.0])))
    check(yt, y)
    assert "aten::put_" in torch_pjrt.fallbacks()
    same_error(lambda a, i, s: a.put_(i, s), (x.clone(), torch.tensor([12]), torch.ones(1)),
               IndexError)


def test_logspace():
    with Native():
        for dtype in (torch.float32, torch.float64):
            for start, end, steps, base in [(0, 3, 7, 10.0), (-2.0, 2.0, 5, 2.0), (1, 1, 1, 3.0),
                                            (0, 1, 0, 10.0)]:
                check(torch.logspace(start, end, steps, base, dtype=dtype, device=DEV),
                      torch.logspace(start, end, steps, base, dtype=dtype),
                      dict(rtol=1e-5, atol=1e-5))


def test_sgn_grad_zero_tensor():
    x = make(torch.float32, (3, 4), specials=False)
    xc, xt = x.clone().requires_grad_(), t(x).requires_grad_()
    torch.sgn(xc).sum().backward()
    with Native():
        torch.sgn(xt).sum().backward()
    check(xt.grad, xc.grad)


def test_repeat_interleave():
    x = make(torch.float32, (3, 4), specials=False)
    r = torch.tensor([2, 0, 3])
    with Native():
        check(torch.repeat_interleave(t(r)), torch.repeat_interleave(r))
        r32 = r.int()
        check(torch.repeat_interleave(t(r32), output_size=5), torch.repeat_interleave(r32))
        check(torch.repeat_interleave(t(x), t(r), dim=0), torch.repeat_interleave(x, r, dim=0))
        check(torch.repeat_interleave(t(x), 2, dim=1), torch.repeat_interleave(x, 2, dim=1))
        check(torch.repeat_interleave(t(torch.zeros(0, dtype=torch.long))),
              torch.repeat_interleave(torch.zeros(0, dtype=torch.long)))
    same_error(torch.repeat_interleave, (torch.tensor([1, -1]),))
    same_error(torch.repeat_interleave, (torch.tensor([1.0, 2.0]),), NotImplementedError)
    same_error(torch.repeat_interleave, (torch.tensor([[1, 2]]),))
    same_error(lambda a: torch.repeat_interleave(a, output_size=5), (torch.tensor([1, 2]),))


def test_conj_physical():
    c = torch.complex(make(torch.float32, (3, 4), specials=False), make(torch.float32, (3, 4), 1,
                                                                      specials=False))
    with Native():
        check(torch.conj_physical(t(c)), torch.conj_physical(c))
        check(torch.conj_physical(t(c).conj()), torch.conj_physical(c.conj()))
        out = torch.empty(3, 4, dtype=torch.complex64, device=DEV)
        torch.conj_physical(t(c), out=out)
        check(out, torch.conj_physical(c))
        x = make(torch.float32, (5,))
        out = torch.empty(5, device=DEV)
        torch.conj_physical(t(x), out=out)
        check(out, x)


def test_searchsorted_and_bucketize():
    seq = torch.tensor([-INF, -1.0, 0.0, 0.0, 2.5, 3.0, INF, NAN])
    vals = torch.tensor([[-5.0, 0.0, 2.5, NAN], [INF, -INF, 1.0, 3.0]])
    seq2 = torch.sort(make(torch.float32, (2, 9), specials=False), dim=1).values
    vals2 = make(torch.float32, (2, 5), seed=4, specials=False)
    vals2[0, 0] = seq2[0, 3]
    ints = torch.tensor([1, 3, 3, 5, 8])
    with Native():
        for kw in [dict(), dict(right=True), dict(side="right"), dict(out_int32=True)]:
            check(torch.searchsorted(t(seq), t(vals), **kw), torch.searchsorted(seq, vals, **kw))
            check(torch.searchsorted(t(seq2), t(vals2), **kw), torch.searchsorted(seq2, vals2, **kw))
            check(torch.searchsorted(t(ints), t(torch.arange(10)), **kw),
                  torch.searchsorted(ints, torch.arange(10), **kw))
            check(torch.searchsorted(t(ints), 3, **kw), torch.searchsorted(ints, 3, **kw))
            check(torch.searchsorted(t(ints), 2.5, **kw), torch.searchsorted(ints, 2.5, **kw))
        perm = torch.tensor([4, 0, 2, 1, 3])
        unsorted = ints[torch.argsort(perm)]
        sorter = torch.argsort(unsorted)
        check(torch.searchsorted(t(unsorted), t(torch.arange(10)), sorter=t(sorter)),
              torch.searchsorted(unsorted, torch.arange(10), sorter=sorter))
        check(torch.bucketize(t(vals), t(seq[:-1])), torch.bucketize(vals, seq[:-1]))
        check(torch.bucketize(t(vals), t(seq[:-1]), right=True, out_int32=True),
              torch.bucketize(vals, seq[:-1], right=True, out_int32=True))
        check(torch.searchsorted(t(torch.zeros(0)), t(vals)), torch.searchsorted(torch.zeros(0), vals))
        e = torch.zeros(0, dtype=torch.long)
        check(torch.searchsorted(t(torch.zeros(0)), t(torch.zeros(0)), sorter=t(e)),
              torch.searchsorted(torch.zeros(0), torch.zeros(0), sorter=e))
    same_error(torch.searchsorted, (seq2, vals2[:1]))
    same_error(lambda a, b: torch.searchsorted(a, b, side="left", right=True), (seq, vals))
    same_error(torch.bucketize, (vals, seq2))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_frexp(dtype):
    x = make(dtype, (4, 6))
    x.view(-1)[:4] = torch.tensor([-0.0, 1.0, -3.0, 0.75], dtype=dtype)
    tiny = torch.finfo(dtype).tiny
    x.view(-1)[4:7] = torch.tensor([tiny / 2, -tiny / 8, tiny], dtype=torch.float64).to(dtype)
    with Native():
        m, e = torch.frexp(t(x))
        em, ee = torch.frexp(x)
        check(m, em)
        check(e, ee)
        m2, e2 = torch.frexp(t(x).t())
        check(m2, em.t())
        outs = (torch.empty(0, dtype=dtype, device=DEV), torch.empty(0, dtype=torch.int32, device=DEV))
        torch.frexp(t(x), out=outs)
        check(outs[0], em)
        check(outs[1], ee)
    same_error(torch.frexp, (torch.arange(3),))
    same_error(lambda a: torch.frexp(a, out=(torch.empty(3, dtype=torch.float64),
                                             torch.empty(3, dtype=torch.int32))), (torch.ones(3),))


def test_vdot_complex():
    a = torch.complex(make(torch.float32, (6,), specials=False), make(torch.float32, (6,), 1,
                                                                    specials=False))
    b = torch.complex(make(torch.float32, (6,), 2, specials=False), make(torch.float32, (6,), 3,
                                                                       specials=False))
    tol = dict(rtol=1e-4, atol=1e-2)
    with Native():
        check(torch.vdot(t(a), t(b)), torch.vdot(a, b), tol)
        check(torch.vdot(t(a).conj(), t(b)), torch.vdot(a.conj(), b), tol)
        check(torch.vdot(t(a), t(b).conj()), torch.vdot(a, b.conj()), tol)
        check(torch.linalg.vecdot(t(a), t(b)), torch.linalg.vecdot(a, b), tol)
