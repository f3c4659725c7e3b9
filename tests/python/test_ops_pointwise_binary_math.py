"""The binary math ops and composites against PyTorch's CPU kernels:
copysign, signbit, fmax/fmin, heaviside, logaddexp, xlogy, angle,
complex/polar, rsub, frexp, conj_physical, pow with a scalar base, fill_
with a tensor value, gcd/lcm."""
import re

import pytest
import torch
import torch_pjrt

from conftest import make
from _op_check import CHECK_TOL, NativeOnly, check_close
from test_ops_activation import same_error as same_error_meta
from test_ops_index import same_error

pytestmark = pytest.mark.usefixtures("no_leaks")


DEV = "tpu"


NAN, INF = float("nan"), float("inf")


def t(x):
    return x.to(DEV)


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


FLOATS_ALL = [torch.float32, torch.float16, torch.bfloat16, torch.float64]


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("dtype", FLOATS_ALL, ids=str)
def test_binary_float(name, dtype):
    fn = BINARY[name]
    a, b = pair(dtype)
    with NativeOnly():
        check_close(fn(t(a), t(b)), fn(a, b))
        # non-contiguous and broadcast operands
        check_close(fn(t(a).t(), t(b)[:1].t()), fn(a.t(), b[:1].t()))


@pytest.mark.parametrize("name", ["copysign", "fmax", "fmin", "xlogy", "heaviside"])
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8, torch.bool], ids=str)
def test_binary_integer(name, dtype):
    fn = BINARY[name]
    a, b = make(dtype, (3, 5)), make(dtype, (3, 5), seed=3)
    if dtype != torch.bool:
        a, b = a % 7 - (3 if dtype != torch.uint8 else 0), b % 5
    with NativeOnly():
        check_close(fn(t(a), t(b)), fn(a, b), tol=dict(rtol=1e-6, atol=1e-6))


def test_binary_scalars_and_promotion():
    a = make(torch.float16, (3, 4))
    i = torch.arange(12).reshape(3, 4) - 5
    with NativeOnly():
        check_close(torch.copysign(t(a), -1.0), torch.copysign(a, -1.0))
        check_close(torch.copysign(t(i), t(a)), torch.copysign(i, a), CHECK_TOL[torch.float16])
        check_close(torch.xlogy(t(a).float(), 2.0), torch.xlogy(a.float(), 2.0))
        check_close(torch.xlogy(3, t(a).float().abs()), torch.xlogy(3, a.float().abs()))
        check_close(torch.fmax(t(i), t(a)), torch.fmax(i, a), CHECK_TOL[torch.float16])
        check_close(torch.logaddexp(t(a), t(a.double())), torch.logaddexp(a, a.double()))


def test_binary_inplace_and_out():
    a, b = pair(torch.float32)
    with NativeOnly():
        for name in ["copysign", "xlogy", "heaviside"]:
            x, y = a.clone(), t(a.clone())
            getattr(x, name + "_")(b)
            getattr(y, name + "_")(t(b))
            check_close(y, x)
        for name, fn in BINARY.items():
            out = torch.empty(4, 6, device=DEV)
            r = fn(t(a), t(b), out=out)
            assert r is out
            check_close(out, fn(a, b))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64, torch.int32,
                                   torch.int8, torch.uint8, torch.bool], ids=str)
def test_signbit(dtype):
    x = make(dtype, (4, 6)) if not dtype.is_floating_point else SPECIAL.to(dtype).view(3, 4)
    with NativeOnly():
        check_close(torch.signbit(t(x)), torch.signbit(x))
        out = torch.empty(0, dtype=torch.bool, device=DEV)
        torch.signbit(t(x), out=out)
        check_close(out, torch.signbit(x))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool,
                                   torch.complex64], ids=str)
def test_angle(dtype):
    x = SPECIAL.to(dtype) if dtype.is_floating_point else make(dtype, (12,))
    if dtype.is_complex:
        x = torch.complex(SPECIAL, SPECIAL.flip(0))
    with NativeOnly():
        check_close(torch.angle(t(x)), torch.angle(x))


def test_complex_and_polar():
    re, im = make(torch.float32, (3, 4), specials=False), make(torch.float32, (4,), seed=2,
                                                              specials=False)
    with NativeOnly():
        check_close(torch.complex(t(re), t(im)), torch.complex(re, im))
        check_close(torch.complex(t(re.double()), t(im.double())), torch.complex(re.double(), im.double()))
        check_close(torch.polar(t(re.abs()), t(im)), torch.polar(re.abs(), im), dict(rtol=1e-5, atol=1e-4))
        out = torch.empty(3, 4, dtype=torch.complex64, device=DEV)
        torch.complex(t(re), t(im), out=out)
        check_close(out, torch.complex(re, im))
    # complex32 is held on tpu but computed by CPU's kernel (test_dtypes_storage.py)
    h = re.half()
    c = torch.complex(t(h), t(h))
    assert c.dtype == torch.complex32 and c.device.type == DEV
    assert torch.equal(c.cpu().view(torch.int32), torch.complex(h, h).view(torch.int32))
    same_error(torch.polar, (h, h), NotImplementedError)


def test_rsub():
    a, b = pair(torch.float32)
    i = torch.arange(6)
    with NativeOnly():
        check_close(torch.rsub(t(a), t(b), alpha=2), torch.rsub(a, b, alpha=2))
        check_close(torch.rsub(t(i), t(i * 3)), torch.rsub(i, i * 3))
        check_close(3 - t(i), 3 - i)
        check_close(2.5 - t(a), 2.5 - a)


def test_pointwise_autograd():
    a, b = make(torch.float32, (3, 4), specials=False), make(torch.float32, (3, 4), seed=1,
                                                             specials=False)
    for fn in [torch.logaddexp, torch.logaddexp2, torch.fmax, torch.fmin, torch.copysign,
               lambda x, y: torch.xlogy(x, y.abs()), lambda x, y: torch.rsub(x, y, alpha=3)]:
        ac, bc = a.clone().requires_grad_(), b.clone().requires_grad_()
        at, bt = t(a).requires_grad_(), t(b).requires_grad_()
        with NativeOnly():
            fn(at, bt).sum().backward()
        fn(ac, bc).sum().backward()
        check_close(at.grad, ac.grad)
        check_close(bt.grad, bc.grad)


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
    check_close(torch.logaddexp(t(c), t(c)), torch.logaddexp(c, c))
    assert "aten::logaddexp" in torch_pjrt.fallbacks()


def test_clamp_tensor_bounds():
    x = make(torch.float32, (4, 6))
    lo = make(torch.float32, (6,), seed=1, specials=False) - 20
    hi = lo + 40
    hi[2] = NAN
    with NativeOnly():
        check_close(torch.clamp(t(x), t(lo), t(hi)), torch.clamp(x, lo, hi))
        check_close(torch.clamp(t(x), min=t(lo)), torch.clamp(x, min=lo))
        check_close(torch.clamp(t(x), max=t(hi)), torch.clamp(x, max=hi))
        check_close(torch.clamp_min(t(x), t(lo)), torch.clamp_min(x, lo))
        check_close(torch.clamp_max(t(x), t(hi)), torch.clamp_max(x, hi))
        i = torch.arange(12).reshape(2, 6)
        check_close(torch.clamp(t(i), t(lo), t(hi)), torch.clamp(i, lo, hi))
        out = torch.empty(4, 6, device=DEV)
        torch.clamp_min(t(x), t(lo), out=out)
        check_close(out, torch.clamp_min(x, lo))
        a = make(torch.float32, (6,), specials=False).requires_grad_()
        at = t(a.detach()).requires_grad_()
        torch.clamp(at, t(lo), t(hi).nan_to_num()).sum().backward()
    torch.clamp(a, lo, hi.nan_to_num()).sum().backward()
    check_close(at.grad, a.grad)


def test_fill_tensor_value():
    with NativeOnly():
        x, xt = torch.zeros(3, 4), torch.zeros(3, 4, device=DEV)
        v = torch.tensor(2.5)
        x[:, 1].fill_(v)
        xt[:, 1].fill_(t(v))
        check_close(xt, x)
        xt.fill_(v)  # a CPU 0-d value
        check_close(xt, torch.full((3, 4), 2.5))
        it = torch.zeros(5, dtype=torch.int32, device=DEV)
        it.fill_(t(torch.tensor(7.9)))
        check_close(it, torch.zeros(5, dtype=torch.int32).fill_(torch.tensor(7.9)))
    same_error(lambda a, b: a.fill_(b), (torch.zeros(3), torch.ones(2)))


def test_pow_scalar_base_and_ldexp():
    e = torch.tensor([-2.0, 0.5, NAN, 3.0, INF])
    i = torch.arange(5)
    with NativeOnly():
        check_close(torch.pow(2.0, t(e)), torch.pow(2.0, e))
        check_close(torch.pow(1, t(e)), torch.pow(1, e))
        check_close(torch.pow(3, t(i)), torch.pow(3, i))
        check_close(torch.ldexp(t(e), t(i)), torch.ldexp(e, i))
        out = torch.empty(5, device=DEV)
        torch.pow(2.0, t(e), out=out)
        check_close(out, torch.pow(2.0, e))


def test_sgn_grad_zero_tensor():
    x = make(torch.float32, (3, 4), specials=False)
    xc, xt = x.clone().requires_grad_(), t(x).requires_grad_()
    torch.sgn(xc).sum().backward()
    with NativeOnly():
        torch.sgn(xt).sum().backward()
    check_close(xt.grad, xc.grad)


def test_conj_physical():
    c = torch.complex(make(torch.float32, (3, 4), specials=False), make(torch.float32, (3, 4), 1,
                                                                      specials=False))
    with NativeOnly():
        check_close(torch.conj_physical(t(c)), torch.conj_physical(c))
        check_close(torch.conj_physical(t(c).conj()), torch.conj_physical(c.conj()))
        out = torch.empty(3, 4, dtype=torch.complex64, device=DEV)
        torch.conj_physical(t(c), out=out)
        check_close(out, torch.conj_physical(c))
        x = make(torch.float32, (5,))
        out = torch.empty(5, device=DEV)
        torch.conj_physical(t(x), out=out)
        check_close(out, x)


@pytest.mark.parametrize("dtype", FLOATS_ALL, ids=str)
def test_frexp(dtype):
    x = make(dtype, (4, 6))
    x.view(-1)[:4] = torch.tensor([-0.0, 1.0, -3.0, 0.75], dtype=dtype)
    tiny = torch.finfo(dtype).tiny
    x.view(-1)[4:7] = torch.tensor([tiny / 2, -tiny / 8, tiny], dtype=torch.float64).to(dtype)
    with NativeOnly():
        m, e = torch.frexp(t(x))
        em, ee = torch.frexp(x)
        check_close(m, em)
        check_close(e, ee)
        m2, e2 = torch.frexp(t(x).t())
        check_close(m2, em.t())
        outs = (torch.empty(0, dtype=dtype, device=DEV), torch.empty(0, dtype=torch.int32, device=DEV))
        torch.frexp(t(x), out=outs)
        check_close(outs[0], em)
        check_close(outs[1], ee)
    same_error(torch.frexp, (torch.arange(3),))
    same_error(lambda a: torch.frexp(a, out=(torch.empty(3, dtype=torch.float64),
                                             torch.empty(3, dtype=torch.int32))), (torch.ones(3),))


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
    with NativeOnly():
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
    same_error_meta(torch.gcd, [torch.zeros(2), torch.zeros(2)], exc=NotImplementedError,
               match="gcd_cpu")
