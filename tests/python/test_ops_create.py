"""Creation against PyTorch's CPU results: arange, linspace, logspace, eye,
full/zeros/ones and the *_like forms, tril_indices/triu_indices, and
composites (repeat, stack/hstack/vstack, where with Python numbers,
clone/contiguous of views). Each checks dtype, shape, values,
CPU's errors, and that nothing fell back to the CPU."""
import re
import warnings

import pytest
import torch
import torch.nn.functional as F

import torch_pjrt
from conftest import dtype_id
from conftest import make
from _op_check import CHECK_TOL, NativeOnly, check_close  # noqa: F401 (shared helpers)
from conftest import assert_bitwise_equal, make
from _op_check import NativeOnly, check_close
from test_ops_activation import same_error  # noqa: F401 (shared helpers)

pytestmark = pytest.mark.usefixtures("no_leaks")

TOL = {
    torch.float16: dict(rtol=1e-3, atol=1e-3),
    torch.bfloat16: dict(rtol=8e-3, atol=8e-3),
    torch.float32: dict(rtol=1.3e-6, atol=1e-5),
    torch.float64: dict(rtol=1e-12, atol=1e-12),
}


def check(actual, expected, tol=TOL):
    assert actual.device.type == "tpu", actual.device
    assert actual.dtype == expected.dtype, f"{actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{tuple(actual.shape)} != {tuple(expected.shape)}"
    t = tol.get(expected.dtype, dict(rtol=0, atol=0))
    torch.testing.assert_close(actual.cpu(), expected, equal_nan=True, **t)


def native(f, *args, tol=TOL):
    """f(*args, device) on tpu matches f(*args, 'cpu'), with no fallback."""
    expected = f(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args], "cpu")
    targs = [a.to("tpu") if isinstance(a, torch.Tensor) else a for a in args]
    torch_pjrt.reset_fallbacks()
    actual = f(*targs, "tpu")
    fb = torch_pjrt.fallbacks()
    check(actual, expected, tol)
    assert fb == {}, f"ran on the CPU (fallback): {fb}"
    return actual


def raises_like_cpu(f, *args):
    with pytest.raises(Exception) as cpu_err:
        f(*args, "cpu")
    with pytest.raises(type(cpu_err.value)) as tpu_err:
        r = f(*[a.to("tpu") if isinstance(a, torch.Tensor) else a for a in args], "tpu")
        if isinstance(r, torch.Tensor):
            r.cpu()
    first = str(cpu_err.value).splitlines()[0]
    assert re.search(re.escape(first), str(tpu_err.value)), (str(tpu_err.value), first)


def rand(shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if not dtype.is_floating_point:
        return torch.randint(-50, 50, shape, generator=g).to(dtype)
    return torch.randn(shape, generator=g).to(dtype)


# ---- arange / linspace ------------------------------------------------------------

ARANGE = [
    (5,), (2, 9), (10, 2, -3), (0.0, 1.0, 0.1), (-1.5, 2.25, 0.25), (0, 1e-3, 1e-4),
    (1, 2.5), (3, 3), (7, 0, -1.5), (0, 100000, 7),
]


@pytest.mark.parametrize("args", ARANGE, ids=[str(a) for a in ARANGE])
@pytest.mark.parametrize("dtype", [None, torch.float32, torch.bfloat16, torch.int64, torch.int32],
                         ids=lambda d: dtype_id(d) if d else "default")
def test_arange(args, dtype):
    f = lambda dev: torch.arange(*args, dtype=dtype, device=dev)  # noqa: E731
    try:
        f("cpu")
    except Exception:  # e.g. int64 with a step that truncates to 0
        raises_like_cpu(f)
        return
    native(f)


def test_arange_out_and_errors():
    native(lambda o, dev: torch.arange(0, 10, 3, out=o), torch.empty(0))
    native(lambda o, dev: torch.arange(2.0, 4.0, 0.5, out=o), torch.empty(4))
    native(lambda o, dev: (torch.arange(6, out=o[::2]), o)[1], torch.zeros(12))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        native(lambda o, dev: torch.arange(5, out=o), torch.empty(3, dtype=torch.int64))
    assert any("does not match the computed number of elements" in str(x.message) for x in w)
    for args in ((0, 1, 0), (0, -1, 1), (5, 0, 1), (0, float("inf")), (float("nan"), 3)):
        raises_like_cpu(lambda dev: torch.arange(*args, device=dev))
    raises_like_cpu(lambda dev: torch.arange(10, dtype=torch.bool, device=dev))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.float64],
                         ids=dtype_id)
def test_linspace(dtype):
    for start, end, steps in ((0, 1, 5), (-3.5, 7.25, 11), (10, -10, 7), (2, 2, 4), (0, 1, 1),
                              (0, 1, 0), (-7, 9, 100)):
        native(lambda dev: torch.linspace(start, end, steps, dtype=dtype, device=dev))
    native(lambda o, dev: torch.linspace(0, 3, 4, out=o), torch.empty(0, dtype=dtype))
    raises_like_cpu(lambda dev: torch.linspace(0, 1, -1, device=dev))


# ---- factory functions that must stay native -----------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool],
                         ids=dtype_id)
def test_factories(dtype):
    x = rand((3, 4), dtype)
    native(lambda dev: torch.eye(3, dtype=dtype, device=dev))
    native(lambda dev: torch.eye(2, 5, dtype=dtype, device=dev))
    native(lambda dev: torch.full((2, 3), 1, dtype=dtype, device=dev))
    native(lambda dev: torch.zeros(4, 2, dtype=dtype, device=dev))
    native(lambda dev: torch.ones(5, dtype=dtype, device=dev))
    native(lambda a, dev: torch.zeros_like(a), x)
    native(lambda a, dev: torch.ones_like(a), x)
    native(lambda a, dev: torch.full_like(a, 1), x)
    native(lambda a, dev: torch.empty_like(a).fill_(0), x)
    native(lambda a, dev: torch.zeros_like(a.t()), x)
    raises_like_cpu(lambda dev: torch.eye(-1, device=dev))


# ---- tril / triu -------------------------------------------------------------------


# ---- flip / roll ---------------------------------------------------------------------


# ---- padding --------------------------------------------------------------------------


# ---- compositions that must stay native --------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool], ids=dtype_id)
def test_composites(dtype):
    x, y = rand((3, 4), dtype), rand((3, 4), dtype, seed=1)
    c = rand((3, 4), torch.bool, seed=2)
    native(lambda a, dev: a.repeat(2, 3), x)
    native(lambda a, dev: a.t().repeat(1, 2, 1), x)
    native(lambda a, b, dev: torch.stack([a, b]), x, y)
    native(lambda a, b, dev: torch.stack([a, b], dim=2), x, y)
    native(lambda a, b, dev: torch.hstack([a, b]), x, y)
    native(lambda a, b, dev: torch.vstack([a, b]), x, y)
    native(lambda a, dev: a.t().clone(), x)
    native(lambda a, dev: a.t().contiguous(), x)
    native(lambda a, dev: a[:, ::2].contiguous(), x)
    native(lambda a, dev: a.expand(2, 3, 4).clone(), x)
    native(lambda m, a, dev: torch.where(m, a, 1), c, x)
    native(lambda m, a, dev: torch.where(m, 0, a), c, x)
    native(lambda m, dev: torch.where(m, 1.5, -2.0), c)


DEV = "tpu"


def test_logspace():
    with NativeOnly():
        for dtype in (torch.float32, torch.float64):
            for start, end, steps, base in [(0, 3, 7, 10.0), (-2.0, 2.0, 5, 2.0), (1, 1, 1, 3.0),
                                            (0, 1, 0, 10.0)]:
                check_close(torch.logspace(start, end, steps, base, dtype=dtype, device=DEV),
                      torch.logspace(start, end, steps, base, dtype=dtype),
                      dict(rtol=1e-5, atol=1e-5))


def t(x):
    return x.to(DEV)


@pytest.mark.parametrize("fn", [torch.tril_indices, torch.triu_indices])
def test_tri_indices_match_cpu(fn):
    with NativeOnly():
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
