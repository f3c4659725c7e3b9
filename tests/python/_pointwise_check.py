"""Helpers the test_ops_pointwise_*.py files share: comparison against
CPU's kernels (check, same, native), CPU's errors (raises_like_cpu), and
seeded data (fdata, idata, cdata, fdata_math, idata_math)."""
import re

import pytest
import torch
import torch_pjrt

from test_ops_basic import TOL
from test_ops_create import check as check_math


NAN, INF = float("nan"), float("inf")

# Transcendental functions: half types get two ulps.
MATH_TOL = dict(TOL)
MATH_TOL[torch.float16] = dict(rtol=2e-3, atol=2e-3)
MATH_TOL[torch.bfloat16] = dict(rtol=1.6e-2, atol=1.6e-2)


def check(actual, expected, tol=TOL):
    """actual (tpu) matches expected (cpu): device type, dtype, shape, values, NaNs."""
    assert isinstance(actual, torch.Tensor), type(actual)
    assert actual.device.type == "tpu", actual.device
    assert actual.dtype == expected.dtype, f"{actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{tuple(actual.shape)} != {tuple(expected.shape)}"
    t = tol.get(expected.dtype, dict(rtol=0, atol=0))
    torch.testing.assert_close(actual.cpu(), expected, equal_nan=True, **t)


def cpu_fallbacks_of(names):
    """The recorded fallbacks whose op (before the overload) is one of names
    or its in-place variant: aten::exp matches aten::exp.out, aten::exp_,
    not aten::expm1."""
    want = set(names) | {n + "_" for n in names}
    return {k: v for k, v in torch_pjrt.fallbacks().items() if k.split(".")[0] in want}


def to_tpu(x, device="tpu"):
    return x.to(device) if isinstance(x, torch.Tensor) else x


def same(names, f, *args, tol=TOL, device="tpu"):
    """f on the tpu copies of args matches f on the CPU args, and none of the
    aten ops in names ran on the CPU."""
    if isinstance(names, str):
        names = (names,)
    targs = [to_tpu(a, device) for a in args]
    # f may write into its arguments (in-place, out=): give each side its own copy.
    expected = f(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
    torch_pjrt.reset_fallbacks()
    actual = f(*targs)
    fb = cpu_fallbacks_of(names)
    check(actual, expected, tol)
    assert not fb, f"ran on the CPU (fallback), not natively: {fb}"
    return actual


def raises_like_cpu(f, *args, match=None):
    """f raises on CPU; on tpu it raises the same exception type (and the
    message matches `match`, or CPU's first line when match is None)."""
    with pytest.raises(Exception) as cpu_err:
        f(*args)
    targs = [to_tpu(a) for a in args]
    with pytest.raises(type(cpu_err.value)) as tpu_err:
        r = f(*targs)
        if isinstance(r, torch.Tensor):
            r.cpu()
    msg = str(tpu_err.value)
    if match is None:
        match = re.escape(str(cpu_err.value).splitlines()[0])
    assert re.search(match, msg), f"tpu message {msg!r} does not match {match!r} (CPU: {cpu_err.value})"


# ---- data ----------------------------------------------------------------------

def _gen(seed):
    return torch.Generator().manual_seed(seed)


def fdata(dtype, shape, lo, hi, seed=0, specials=()):
    """Uniform floats in [lo, hi) of dtype; specials scattered in when there is room."""
    g = _gen(seed)
    x = torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo
    n = x.numel()
    if specials and n >= len(specials) + 2:
        flat = x.reshape(-1).clone()
        idx = torch.randperm(n, generator=g)[:len(specials)]
        flat[idx] = torch.tensor(specials, dtype=torch.float64)
        x = flat.view(shape)
    return x.to(dtype)


def idata(dtype, shape, lo, hi, seed=0):
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=_gen(seed)).bool()
    return torch.randint(lo, hi, shape, generator=_gen(seed)).to(dtype)


def cdata(dtype, shape, lo, hi, seed=0):
    real = torch.float32 if dtype == torch.complex64 else torch.float64
    return torch.complex(fdata(real, shape, lo, hi, seed), fdata(real, shape, lo, hi, seed + 1))


def bdata(dtype, shape, seed=0, zeros=True, nans=True):
    """Moderate operands; floats carry NaN/inf/0 when there is room."""
    if dtype == torch.bool:
        return idata(dtype, shape, 0, 2, seed)
    if dtype.is_complex:
        return cdata(dtype, shape, -5, 5, seed)
    if dtype.is_floating_point:
        sp = ((NAN, INF, -INF) if nans else ()) + ((0.0, -0.0) if zeros else ())
        return fdata(dtype, shape, -10, 10, seed, sp)
    lo = 0 if dtype == torch.uint8 else -11
    return idata(dtype, shape, lo, 12, seed)


NAN, INF = float("nan"), float("inf")


TOL_math = {
    torch.float16: dict(rtol=2e-3, atol=2e-3),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1.6e-2),
    torch.float32: dict(rtol=1e-5, atol=1e-5),
    torch.float64: dict(rtol=1e-12, atol=1e-12),
}


EXACT_math = {}


def to_tpu_math(a):
    return a.to("tpu") if isinstance(a, torch.Tensor) else a


def native(f, *args, tol=TOL_math):
    """f on tpu copies of args matches f on CPU, with no CPU fallback at all."""
    expected = f(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
    targs = [to_tpu_math(a) for a in args]
    torch_pjrt.reset_fallbacks()
    actual = f(*targs)
    fb = torch_pjrt.fallbacks()
    check_math(actual, expected, tol)
    assert fb == {}, f"ran on the CPU (fallback): {fb}"
    return actual


def raises_like_cpu_math(f, *args, match=None):
    with pytest.raises(Exception) as cpu_err:
        f(*args)
    with pytest.raises(type(cpu_err.value)) as tpu_err:
        r = f(*[to_tpu_math(a) for a in args])
        if isinstance(r, torch.Tensor):
            r.cpu()
    if match is None:
        match = re.escape(str(cpu_err.value).splitlines()[0])
    assert re.search(match, str(tpu_err.value)), (str(tpu_err.value), str(cpu_err.value))


def fdata_math(dtype, shape, lo, hi, seed=0, specials=()):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo
    flat = x.reshape(-1)
    for i, v in enumerate(specials):
        flat[(i * 7 + 3) % flat.numel()] = v
    return x.to(dtype)


def idata_math(dtype, shape, lo=-20, hi=20, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    return torch.randint(lo, hi, shape, generator=g).to(dtype)
