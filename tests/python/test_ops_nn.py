"""The nn-flavoured native ops against PyTorch's CPU kernels: softmax and
log_softmax (and their backward), threshold_backward (relu's gradient),
clamp / clamp_min / clamp_max / clamp_, masked_fill / masked_fill_, and cat
(with stack on top of it). Dtypes, dims, special values, 0-d and
zero-element inputs, non-contiguous operands and views, in-place forms,
CPU's errors, and that each op ran natively (no CPU fallback recorded for
any overload whose name starts with the op's)."""

import pytest
import torch
import torch.nn.functional as F

import torch_pjrt
from conftest import dtype_id

pytestmark = pytest.mark.usefixtures("no_leaks")

INF = float("inf")
NAN = float("nan")




TOL = {
    torch.float16: dict(rtol=1e-3, atol=1e-3),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
    torch.float32: dict(rtol=1e-5, atol=1e-6),
    torch.float64: dict(rtol=1e-12, atol=1e-12),
    torch.complex64: dict(rtol=1e-5, atol=1e-6),
}
EXACT = dict(rtol=0, atol=0)
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def check(actual, expected, tol=None):
    """actual (tpu) matches expected (cpu): device type, dtype, shape, values."""
    assert actual.device.type == "tpu", actual.device
    assert actual.dtype == expected.dtype, f"{actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{tuple(actual.shape)} != {tuple(expected.shape)}"
    if tol is None:
        tol = TOL.get(expected.dtype, EXACT)
    torch.testing.assert_close(actual.detach().cpu(), expected.detach(), equal_nan=True, **tol)


class Fallbacks:
    """Records the CPU fallbacks taken inside the block whose op name starts
    with one of `prefixes` ("aten::clamp" covers "aten::clamp_min.out")."""

    def __init__(self, *prefixes):
        self.prefixes = prefixes
        self.seen = {}

    def __enter__(self):
        torch.tpu.synchronize()
        torch_pjrt.reset_fallbacks()
        return self

    def __exit__(self, *exc):
        torch.tpu.synchronize()
        self.seen = {k: v for k, v in torch_pjrt.fallbacks().items()
                     if k.startswith(self.prefixes)}
        return False

    def assert_native(self):
        assert not self.seen, f"ran on the CPU fallback (not native): {self.seen}"


def randn(shape, seed=0, dtype=torch.float32, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g, dtype=torch.float64) * scale).to(dtype)


def ints(shape, seed=0, lo=-5, hi=6, dtype=torch.int64):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(lo, hi, shape, generator=g).to(dtype)


def bools(shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 2, shape, generator=g).bool()


def raises_like_cpu(fn, cpu_args, tpu_args, accept=()):
    """fn(*tpu_args) raises the same exception type as fn(*cpu_args), with
    the CPU message (first line) or one of `accept` in its message."""
    with pytest.raises(Exception) as cpu_exc:
        fn(*cpu_args)
    cpu_type = type(cpu_exc.value)
    cpu_msg = str(cpu_exc.value).splitlines()[0]
    cpu_exc.value.__traceback__ = None
    del cpu_exc
    try:
        r = fn(*tpu_args)
        torch.tpu.synchronize()
        del r
    except Exception as e:  # noqa: BLE001 - compared with CPU's below
        tpu_type, msg = type(e), str(e)
        e.__traceback__ = None
        del e
    else:
        pytest.fail(f"tpu did not raise; CPU raised {cpu_type.__name__}: {cpu_msg}")
    del tpu_args, cpu_args
    assert issubclass(tpu_type, cpu_type), (
        f"tpu raised {tpu_type.__name__}: {msg!r}; CPU raised {cpu_type.__name__}: {cpu_msg!r}")
    assert cpu_msg in msg or any(a in msg for a in accept), (
        f"tpu message {msg!r} lacks CPU's {cpu_msg!r}" + (f" or any of {accept}" if accept else ""))


# ---- softmax / log_softmax ---------------------------------------------------------

SOFTMAX_FNS = {
    "torch.softmax": lambda x, d: torch.softmax(x, d),
    "F.softmax": lambda x, d: F.softmax(x, d),
    "F.log_softmax": lambda x, d: F.log_softmax(x, d),
    "tensor.softmax": lambda x, d: x.softmax(d),
    "tensor.log_softmax": lambda x, d: x.log_softmax(d),
}
SOFTMAX_OPS = ("aten::_softmax", "aten::_log_softmax")
SHAPES = [(7,), (3, 5), (2, 3, 4), (2, 3, 2, 5)]


SHAPE_DIMS = [(s, d) for s in SHAPES for d in (0, 1, -1) if d < len(s)]


@pytest.mark.parametrize("fn", list(SOFTMAX_FNS))
@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
@pytest.mark.parametrize("shape,dim", SHAPE_DIMS, ids=[f"{len(s)}d-dim{d}" for s, d in SHAPE_DIMS])
def test_softmax_dims_dtypes(fn, dtype, shape, dim):
    x = randn(shape, seed=1, dtype=dtype, scale=3)
    f = SOFTMAX_FNS[fn]
    with Fallbacks(*SOFTMAX_OPS) as fb:
        r = f(x.to("tpu"), dim)
    check(r, f(x, dim))
    fb.assert_native()


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=dtype_id)
@pytest.mark.parametrize("dim", [0, -1], ids=str)
def test_softmax_dtype_argument_on_half_input(fn, dtype, dim):
    x = randn((4, 6), seed=2, dtype=dtype, scale=3)
    f = getattr(F, fn)
    with Fallbacks(*SOFTMAX_OPS) as fb:
        r = f(x.to("tpu"), dim, dtype=torch.float32)
        r2 = getattr(torch, fn)(x.to("tpu"), dim, dtype=torch.float64)
    e = f(x, dim, dtype=torch.float32)
    assert e.dtype == torch.float32
    check(r, e)
    check(r2, getattr(torch, fn)(x, dim, dtype=torch.float64))
    fb.assert_native()


@pytest.mark.parametrize("op", ["_softmax", "_log_softmax"])
def test_softmax_half_to_float(op):
    # CPU's kernel refuses half_to_float=True ("not supported on CPU"); the
    # tpu kernel supports it as CUDA does. Reference: CPU on the float input.
    x = randn((3, 8), seed=3, dtype=torch.float16, scale=3)
    with Fallbacks(*SOFTMAX_OPS) as fb:
        r = getattr(torch, op)(x.to("tpu"), -1, True)
    check(r, getattr(torch, op)(x.float(), -1, False))
    fb.assert_native()


@pytest.mark.parametrize("fn", list(SOFTMAX_FNS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=dtype_id)
def test_softmax_neg_inf_rows(fn, dtype):
    # Row 0: some -inf (zero probability); row 1: all -inf (NaN, like CPU);
    # row 2: a single finite entry; row 3: +inf (NaN: inf - inf).
    x = torch.tensor([[0.5, -INF, 1.5, -INF, -2.0],
                      [-INF, -INF, -INF, -INF, -INF],
                      [-INF, -INF, 3.0, -INF, -INF],
                      [1.0, INF, 0.0, -1.0, 2.0]], dtype=dtype)
    f = SOFTMAX_FNS[fn]
    with Fallbacks(*SOFTMAX_OPS) as fb:
        r = f(x.to("tpu"), -1)
        r0 = f(x.t().contiguous().to("tpu"), 0)
    e = f(x, -1)
    check(r, e)
    check(r0, f(x.t().contiguous(), 0))
    out = r.cpu()
    assert torch.isnan(out[1]).all(), out[1]
    assert not torch.isnan(out[0]).any() and not torch.isnan(out[2]).any(), out
    fb.assert_native()


@pytest.mark.parametrize("fn", list(SOFTMAX_FNS))
def test_softmax_nan_row(fn):
    x = torch.tensor([[1.0, NAN, 2.0], [0.0, 1.0, 2.0]])
    f = SOFTMAX_FNS[fn]
    with Fallbacks(*SOFTMAX_OPS) as fb:
        r = f(x.to("tpu"), 1)
    check(r, f(x, 1))
    fb.assert_native()


@pytest.mark.parametrize("fn", list(SOFTMAX_FNS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=dtype_id)
def test_softmax_large_values_no_overflow(fn, dtype):
    x = torch.tensor([[1000.0, 1001.0, 999.0, 1000.5],
                      [-1000.0, -1001.0, -999.0, -1000.5],
                      [1000.0, 1000.0, 1000.0, 1000.0],
                      [1e4, -1e4, 0.0, 1e4]], dtype=dtype)
    f = SOFTMAX_FNS[fn]
    with Fallbacks(*SOFTMAX_OPS) as fb:
        r = f(x.to("tpu"), -1)
        r0 = f(x.to("tpu"), 0)
    check(r, f(x, -1))
    check(r0, f(x, 0))
    assert torch.isfinite(r.cpu()).all(), r.cpu()
    fb.assert_native()


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=dtype_id)
def test_softmax_large_values_low_precision(fn, dtype):
    big = 60000.0 if dtype == torch.float16 else 1e30
    x = torch.tensor([[big, big * 0.999, 0.0], [-big, 0.0, big]], dtype=dtype)
    f = getattr(torch, fn)
    with Fallbacks(*SOFTMAX_OPS) as fb:
        r = f(x.to("tpu"), -1)
    check(r, f(x, -1))
    assert torch.isfinite(r.cpu()).all() or fn == "log_softmax", r.cpu()
    fb.assert_native()


@pytest.mark.parametrize("fn", list(SOFTMAX_FNS))
@pytest.mark.parametrize("dim", [0, -1], ids=str)
def test_softmax_zero_dim(fn, dim):
    s = torch.tensor(-2.5)
    f = SOFTMAX_FNS[fn]
    with Fallbacks(*SOFTMAX_OPS) as fb:
        r = f(s.to("tpu"), dim)
    assert r.dim() == 0
    check(r, f(s, dim))   # softmax 1, log_softmax 0
    fb.assert_native()


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,dim", [((0, 3), 1), ((0, 3), 0), ((3, 0), 1), ((2, 0, 4), -1)],
                         ids=["(0,3)d1", "(0,3)d0", "(3,0)d1", "(2,0,4)d-1"])
def test_softmax_zero_elements(fn, shape, dim):
    x = torch.zeros(shape)
    f = getattr(torch, fn)
    r = f(x.to("tpu"), dim)
    check(r, f(x, dim))


@pytest.mark.parametrize("fn", list(SOFTMAX_FNS))
def test_softmax_noncontiguous(fn):
    x = randn((6, 8), seed=4, scale=2)
    x3 = randn((3, 4, 5), seed=5, scale=2)
    t, t3 = x.to("tpu"), x3.to("tpu")
    f = SOFTMAX_FNS[fn]
    with Fallbacks(*SOFTMAX_OPS) as fb:
        rs = [
            (f(t.t(), -1), f(x.t(), -1)),
            (f(t.t(), 0), f(x.t(), 0)),
            (f(t[::2, 1::3], 1), f(x[::2, 1::3], 1)),
            (f(t[:, 3], 0), f(x[:, 3], 0)),
            (f(t[:1].expand(4, 8), -1), f(x[:1].expand(4, 8), -1)),
            (f(t3.permute(2, 0, 1), 1), f(x3.permute(2, 0, 1), 1)),
            (f(t3.transpose(0, 2), -1), f(x3.transpose(0, 2), -1)),
        ]
    for r, e in rs:
        check(r, e)
    fb.assert_native()


def test_softmax_on_second_device():
    x = randn((3, 5), seed=6)
    with Fallbacks(*SOFTMAX_OPS) as fb:
        r = torch.softmax(x.to("tpu:1"), 1)
        r2 = F.log_softmax(x.to("tpu:1"), 0)
    assert r.device == torch.device("tpu:1") and r2.device == torch.device("tpu:1")
    check(r, torch.softmax(x, 1))
    check(r2, F.log_softmax(x, 0))
    fb.assert_native()


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_sums(fn):
    # Rows of softmax sum to 1 (as on CPU); logsumexp of log_softmax is 0.
    x = randn((5, 33), seed=7, scale=4)
    r = getattr(torch, fn)(x.to("tpu"), -1).cpu()
    e = getattr(torch, fn)(x, -1)
    red = (lambda a: a.sum(-1)) if fn == "softmax" else (lambda a: a.logsumexp(-1))
    torch.testing.assert_close(red(r), red(e), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, -1], ids=str)
def test_softmax_int_input_raises_like_cpu(fn, dim):
    # CPU: NotImplementedError "softmax_lastdim_kernel_impl" not implemented for 'Long'.
    x = torch.arange(6).view(2, 3)
    f = lambda a: getattr(torch, fn)(a, dim)  # noqa: E731
    raises_like_cpu(f, (x,), (x.to("tpu"),), accept=("not implemented for 'Long'",))


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_dim_out_of_range_raises_like_cpu(fn):
    x = torch.zeros(2, 3)
    raises_like_cpu(lambda a: getattr(torch, fn)(a, 2), (x,), (x.to("tpu"),))


# ---- _safe_softmax (scaled_dot_product_attention's math path) -----------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=dtype_id)
@pytest.mark.parametrize("dim", [0, 1, -1], ids=str)
def test_safe_softmax_masked_rows(dtype, dim):
    # An all -inf row (or column) gives zeros, not NaN; NaN and +inf still
    # give NaN, as in PyTorch's composite on the CPU.
    x = torch.tensor([[1.0, 2.0, 3.0], [-INF, -INF, -INF], [NAN, -INF, -INF],
                      [INF, 0.0, -INF], [-INF, 0.0, -INF], [1e30, -1e30, 0.0]], dtype=dtype)
    with Fallbacks("aten::_safe_softmax") as fb:
        r = torch.ops.aten._safe_softmax(x.to("tpu"), dim)
    check(r, torch.ops.aten._safe_softmax(x, dim))
    if dim != 0:
        assert (r.cpu()[1] == 0).all()
    fb.assert_native()


def test_safe_softmax_dtype_argument():
    x = torch.randn(4, 5).half()
    r = torch.ops.aten._safe_softmax(x.to("tpu"), 1, torch.float32)
    assert r.dtype == torch.float32
    check(r, torch.ops.aten._safe_softmax(x, 1, torch.float32))
    check(torch.ops.aten._safe_softmax(x.to("tpu"), 1), torch.ops.aten._safe_softmax(x, 1))


def test_safe_softmax_bad_input_raises_like_cpu():
    x = torch.arange(6).view(2, 3)
    raises_like_cpu(lambda a: torch.ops.aten._safe_softmax(a, 1), (x,), (x.to("tpu"),),
                    accept=("not implemented for 'Long'",))
    y = torch.zeros(2, 3)
    raises_like_cpu(lambda a: torch.ops.aten._safe_softmax(a, 2), (y,), (y.to("tpu"),))


def test_sdpa_fully_masked_row_forward_and_backward():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 2, 4, 8, requires_grad=True) for _ in range(3))
    mask = torch.ones(4, 4, dtype=torch.bool).tril()
    mask[1] = False  # query 1 sees nothing: its output is 0
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    out.sum().backward()
    qt, kt, vt = (t.detach().to("tpu").requires_grad_() for t in (q, k, v))
    with Fallbacks("aten::_safe_softmax") as fb:
        ot = F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask.to("tpu"))
        ot.sum().backward()
    check(ot, out)
    assert (ot.detach().cpu()[:, :, 1] == 0).all()
    for a, b in ((q, qt), (k, kt), (v, vt)):
        check(b.grad, a.grad)
    fb.assert_native()


# ---- softmax / log_softmax backward ------------------------------------------------

BACKWARD_OPS = ("aten::_softmax_backward_data", "aten::_log_softmax_backward_data")


def _grad_of(fn, x, w, dim, dtype=None):
    a = x.detach().clone().requires_grad_()
    kw = {} if dtype is None else dict(dtype=dtype)
    y = getattr(F, fn)(a, dim, **kw)
    y.mul(w).sum().backward()
    return y.detach(), a.grad


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
@pytest.mark.parametrize("shape,dim", [((7,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 3, 4), -1),
                                       ((2, 3, 4), 1), ((2, 3, 2, 5), 2)],
                         ids=["1d-0", "2d-1", "2d-0", "3d-1", "3d1", "4d2"])
def test_softmax_backward(fn, dtype, shape, dim):
    x = randn(shape, seed=8, dtype=dtype, scale=2)
    w = randn(shape, seed=9, dtype=dtype)
    with Fallbacks(*BACKWARD_OPS, *SOFTMAX_OPS) as fb:
        y, g = _grad_of(fn, x.to("tpu"), w.to("tpu"), dim)
    ey, eg = _grad_of(fn, x, w, dim)
    check(y, ey)
    tol = dict(rtol=2e-2, atol=2e-2) if dtype == torch.bfloat16 else (
        dict(rtol=2e-3, atol=2e-3) if dtype == torch.float16 else
        dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else None)
    check(g, eg, tol)
    fb.assert_native()


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_backward_float32_from_half(fn):
    # F.softmax(x_half, dtype=float32): a float32 output, a half gradient.
    x = randn((4, 6), seed=10, dtype=torch.float16, scale=2)
    w = randn((4, 6), seed=11)
    with Fallbacks(*BACKWARD_OPS, *SOFTMAX_OPS) as fb:
        y, g = _grad_of(fn, x.to("tpu"), w.to("tpu"), -1, dtype=torch.float32)
    ey, eg = _grad_of(fn, x, w, -1, dtype=torch.float32)
    check(y, ey)
    assert eg.dtype == torch.float16
    check(g, eg, dict(rtol=2e-3, atol=2e-3))
    fb.assert_native()


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_backward_noncontiguous_and_masked(fn):
    # Transposed input, a non-contiguous upstream gradient, and rows with -inf
    # (their gradient is 0 where the probability is 0).
    x = randn((5, 6), seed=12, scale=2)
    x[0, :3] = -INF
    w = randn((6, 5), seed=13).t()
    with Fallbacks(*BACKWARD_OPS, *SOFTMAX_OPS) as fb:
        y, g = _grad_of(fn, x.t().to("tpu").t(), w.to("tpu"), 1)
    ey, eg = _grad_of(fn, x, w, 1)
    check(y, ey)
    check(g, eg, dict(rtol=1e-5, atol=1e-5))
    fb.assert_native()


@pytest.mark.parametrize("op,fwd", [("_softmax_backward_data", torch.softmax),
                                    ("_log_softmax_backward_data", torch.log_softmax)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=dtype_id)
def test_softmax_backward_data_direct(op, fwd, dtype):
    x = randn((3, 4, 5), seed=14, dtype=dtype)
    grad = randn((3, 4, 5), seed=15, dtype=dtype)
    out = fwd(x, 1)
    f = getattr(torch.ops.aten, op)
    with Fallbacks(*BACKWARD_OPS) as fb:
        r = f(grad.to("tpu"), out.to("tpu"), 1, dtype)
        r2 = f(grad.to("tpu").transpose(0, 2), out.to("tpu").transpose(0, 2), -1, dtype)
    check(r, f(grad, out, 1, dtype), dict(rtol=1e-5, atol=1e-6) if dtype == torch.float32 else None)
    check(r2, f(grad.transpose(0, 2), out.transpose(0, 2), -1, dtype),
          dict(rtol=1e-5, atol=1e-6) if dtype == torch.float32 else None)
    fb.assert_native()


# ---- threshold_backward (relu's gradient) ---------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
def test_relu_backward(dtype):
    x = randn((4, 7), seed=16, dtype=dtype)
    x[0, :3] = torch.tensor([0.0, -0.0, 1e-30], dtype=torch.float64).to(dtype)  # grad 0 at 0
    w = randn((4, 7), seed=17, dtype=dtype)

    def grad(a, w):
        a = a.detach().clone().requires_grad_()
        torch.relu(a).mul(w).sum().backward()
        return a.grad

    with Fallbacks("aten::threshold_backward", "aten::relu") as fb:
        g = grad(x.to("tpu"), w.to("tpu"))
        gn = grad(x.to("tpu").t(), w.to("tpu").t())     # non-contiguous
        a = x.to("tpu").requires_grad_()
        F.relu(a).sum().backward()                      # a leaf: the grad lands in .grad
    check(g, grad(x, w), EXACT)
    check(gn, grad(x.t(), w.t()), EXACT)
    b = x.clone().requires_grad_()
    F.relu(b).sum().backward()
    check(a.grad, b.grad, EXACT)
    fb.assert_native()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int64,
                                   torch.int32], ids=dtype_id)
@pytest.mark.parametrize("threshold", [0, 0.5, -1], ids=str)
def test_threshold_backward_direct(dtype, threshold):
    if dtype.is_floating_point:
        x = torch.tensor([[0.5, NAN, 1.0, 0.0, -1.0, -0.5, 2.0, -INF, INF]], dtype=dtype)
        grad = randn((3, 9), seed=18, dtype=dtype)
    else:
        x = ints((1, 9), seed=19, dtype=dtype)
        grad = ints((3, 9), seed=20, dtype=dtype)
    self_ = x.expand(3, 9)
    f = torch.ops.aten.threshold_backward
    with Fallbacks("aten::threshold_backward") as fb:
        r = f(grad.to("tpu"), self_.to("tpu"), threshold)
        r2 = f(grad.to("tpu").t(), self_.to("tpu").t(), threshold)
    check(r, f(grad, self_, threshold), EXACT)
    check(r2, f(grad.t(), self_.t(), threshold), EXACT)
    fb.assert_native()


def test_threshold_backward_broadcast_and_zero_dim():
    f = torch.ops.aten.threshold_backward
    g, s = randn((3, 4), seed=21), randn((4,), seed=22)
    g0, s0 = torch.tensor(1.5), torch.tensor(0.25)
    with Fallbacks("aten::threshold_backward") as fb:
        r = f(g.to("tpu"), s.to("tpu"), 0)
        r0 = f(g0.to("tpu"), s0.to("tpu"), 0.5)
    check(r, f(g, s, 0), EXACT)
    check(r0, f(g0, s0, 0.5), EXACT)
    fb.assert_native()


# ---- clamp ------------------------------------------------------------------------

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
        check(r, e, EXACT)
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
        check(r, e, EXACT)
    fb.assert_native()


def test_clamp_nan_input_stays_nan():
    x = torch.tensor([[NAN, 1.0, -INF, INF], [-0.5, NAN, 0.5, 3.0]])
    t = x.to("tpu")
    with Fallbacks("aten::clamp") as fb:
        rs = [(t.clamp(0, 1), x.clamp(0, 1)), (t.clamp(min=0), x.clamp(min=0)),
              (t.clamp(max=0), x.clamp(max=0)), (t.clamp_min(2), x.clamp_min(2)),
              (t.clamp_max(-2), x.clamp_max(-2)), (t.clamp(-INF, INF), x.clamp(-INF, INF))]
    for r, e in rs:
        check(r, e, EXACT)
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
    check(r, x.clamp(**kw), EXACT)
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
        check(r, e, EXACT)
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
        check(r, e, EXACT)
    fb.assert_native()


def test_clamp_noncontiguous():
    x = randn((6, 8), seed=27, scale=2)
    t = x.to("tpu")
    with Fallbacks("aten::clamp") as fb:
        rs = [(t.t().clamp(-1, 1), x.t().clamp(-1, 1)),
              (t[::2, 1::3].clamp(min=0), x[::2, 1::3].clamp(min=0)),
              (t[:1].expand(3, 8).clamp(max=0), x[:1].expand(3, 8).clamp(max=0))]
    for r, e in rs:
        check(r, e, EXACT)
    fb.assert_native()


def test_clamp_out_of_range_bound_raises_like_cpu():
    x = torch.tensor([1, -5, 100], dtype=torch.int8)
    raises_like_cpu(lambda a: a.clamp(min=-1000), (x,), (x.to("tpu"),))


def test_clamp_no_bounds_raises_like_cpu():
    x = torch.zeros(3)
    raises_like_cpu(lambda a: a.clamp(), (x,), (x.to("tpu"),))


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
    check(t, e, EXACT)
    check(t2, x.clone().clamp_(min=-1), EXACT)
    check(t3, x.clone().clamp_(max=2), EXACT)
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
    check(t, e, EXACT)
    check(v, e[:, 1:], EXACT)
    fb.assert_native()


def test_clamp_inplace_int_with_float_bound_raises_like_cpu():
    # CPU says "... desired output type long int", the tpu "... Long".
    x = torch.arange(4)
    raises_like_cpu(lambda a: a.clamp_(0.5, 1), (x.clone(),), (x.to("tpu"),),
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
    check(t1, x.clone().clamp_min_(0), EXACT)
    check(t2, x.clone().clamp_max_(1), EXACT)
    e = x.clone()
    e[:, ::2].clamp_min_(2)
    check(v, e, EXACT)
    fb.assert_native()


def test_clamp_tensor_bounds_values():
    # clamp with tensor bounds (aten::clamp.Tensor): values only.
    x = randn((3, 4), seed=31, scale=2)
    lo, hi = randn((4,), seed=32) - 1, randn((3, 1), seed=33) + 1
    r = torch.clamp(x.to("tpu"), min=lo.to("tpu"), max=hi.to("tpu"))
    check(r, torch.clamp(x, min=lo, max=hi), EXACT)


# ---- masked_fill ----------------------------------------------------------------------

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
    check(r, e, EXACT)
    check(r2, e, EXACT)
    fb.assert_native()


@pytest.mark.parametrize("value", [NAN, INF, -INF, -0.0, 1e30], ids=str)
def test_masked_fill_special_values(value):
    x = randn((3, 4), seed=36)
    m = bools((3, 4), seed=37)
    with Fallbacks(*MF_OPS) as fb:
        r = x.to("tpu").masked_fill(m.to("tpu"), value)
    check(r, x.masked_fill(m, value), EXACT)
    fb.assert_native()


@pytest.mark.parametrize("mask_shape", [(5,), (4, 1), (1, 5), (), (1, 1)], ids=str)
def test_masked_fill_broadcast_mask(mask_shape):
    x = randn((4, 5), seed=38)
    m = bools(mask_shape, seed=39) if mask_shape else torch.tensor(True)
    with Fallbacks(*MF_OPS) as fb:
        r = x.to("tpu").masked_fill(m.to("tpu"), -1.5)
        t = x.to("tpu")
        t.masked_fill_(m.to("tpu"), 7)
    check(r, x.masked_fill(m, -1.5), EXACT)
    check(t, x.clone().masked_fill_(m, 7), EXACT)
    fb.assert_native()


def test_masked_fill_mask_larger_than_self():
    # Out of place broadcasts self up to the mask; in place raises like CPU.
    x = randn((3,), seed=40)
    m = bools((2, 3), seed=41)
    with Fallbacks(*MF_OPS) as fb:
        r = x.to("tpu").masked_fill(m.to("tpu"), 1.0)
    check(r, x.masked_fill(m, 1.0), EXACT)
    fb.assert_native()
    raises_like_cpu(lambda a, b: a.masked_fill_(b, 1.0), (x.clone(), m),
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
    check(r, x.masked_fill(m, v), EXACT)
    check(t, x.clone().masked_fill_(m, v), EXACT)
    fb.assert_native()


def test_masked_fill_inplace():
    x = randn((4, 5), seed=44)
    m = bools((4, 5), seed=45)
    t = x.to("tpu")
    with Fallbacks(*MF_OPS) as fb:
        r = t.masked_fill_(m.to("tpu"), 3.0)
    assert r is t
    check(t, x.clone().masked_fill_(m, 3.0), EXACT)
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
    check(t, e, EXACT)
    fb.assert_native()


def test_masked_fill_noncontiguous_operands():
    x = randn((6, 8), seed=48)
    m = bools((8, 6), seed=49)
    with Fallbacks(*MF_OPS) as fb:
        r = x.to("tpu").masked_fill(m.to("tpu").t(), 1.0)
        r2 = x.to("tpu")[::2, 1::2].masked_fill(m.to("tpu").t()[::2, 1::2], -1.0)
    check(r, x.masked_fill(m.t(), 1.0), EXACT)
    check(r2, x[::2, 1::2].masked_fill(m.t()[::2, 1::2], -1.0), EXACT)
    fb.assert_native()


def test_masked_fill_attention_mask():
    # The causal-attention idiom: -inf above the diagonal, then softmax.
    scores = randn((2, 3, 5, 5), seed=50)
    causal = torch.ones(5, 5, dtype=torch.bool).triu(1)
    with Fallbacks(*MF_OPS, *SOFTMAX_OPS) as fb:
        s = scores.to("tpu").masked_fill(causal.to("tpu"), -INF)
        p = s.softmax(-1)
    es = scores.masked_fill(causal, -INF)
    check(s, es, EXACT)
    check(p, es.softmax(-1))
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
    check(r, z.masked_fill(mz, 1.0), EXACT)
    check(r0, s.masked_fill(torch.tensor(True), -2.0), EXACT)
    check(r1, s.masked_fill(torch.tensor(False), -2.0), EXACT)
    fb.assert_native()


@pytest.mark.parametrize("mask_dtype", [torch.int32, torch.uint8, torch.float32], ids=dtype_id)
def test_masked_fill_non_bool_mask_raises_like_cpu(mask_dtype):
    # CPU: "masked_fill_ only supports boolean masks, but got mask with dtype int".
    x = torch.zeros(3, 4)
    m = bools((3, 4), seed=51).to(mask_dtype)
    raises_like_cpu(lambda a, b: a.masked_fill(b, 1.0), (x, m), (x.to("tpu"), m.to("tpu")))
    raises_like_cpu(lambda a, b: a.masked_fill_(b, 1.0), (x.clone(), m),
                    (x.to("tpu"), m.to("tpu")))


def test_masked_fill_value_errors_raise_like_cpu():
    x = torch.zeros(3)
    m = torch.tensor([True, False, True])
    # A 1-D value tensor.
    raises_like_cpu(lambda a, b: a.masked_fill(b, torch.tensor([1.0, 2.0])), (x, m),
                    (x.to("tpu"), m.to("tpu")))
    # A value that overflows the tensor's dtype.
    i8 = torch.zeros(3, dtype=torch.int8)
    raises_like_cpu(lambda a, b: a.masked_fill(b, 1000), (i8, m), (i8.to("tpu"), m.to("tpu")))


def test_masked_fill_complex_value_on_real_raises_like_cpu():
    # CPU: "value cannot be converted to type float without overflow".
    x = torch.zeros(3)
    m = torch.tensor([True, False, True])
    raises_like_cpu(lambda a, b: a.masked_fill(b, 1 + 2j), (x, m), (x.to("tpu"), m.to("tpu")))


def test_masked_fill_mask_on_cpu_raises():
    t = torch.zeros(3, device="tpu")
    with pytest.raises(RuntimeError, match="same device"):
        t.masked_fill(torch.tensor([True, False, True]), 1.0)
        torch.tpu.synchronize()


# ---- cat / stack ----------------------------------------------------------------------

CAT_OPS = ("aten::cat",)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                                   torch.int32, torch.int64, torch.int8, torch.uint8,
                                   torch.bool, torch.complex64], ids=dtype_id)
@pytest.mark.parametrize("dim", [0, 1, -1], ids=str)
def test_cat(dtype, dim):
    shapes = [(2, 3, 4), (2, 3, 4), (2, 3, 4)]
    shapes = [tuple(s if i != (dim % 3) else n for i, s in enumerate(sh))
              for sh, n in zip(shapes, (1, 2, 3))]
    xs = [_mf_data(dtype, s, seed=52 + i) for i, s in enumerate(shapes)]
    with Fallbacks(*CAT_OPS) as fb:
        r = torch.cat([x.to("tpu") for x in xs], dim)
        r2 = torch.concat([x.to("tpu") for x in xs], dim=dim)
    check(r, torch.cat(xs, dim), EXACT)
    check(r2, torch.cat(xs, dim), EXACT)
    fb.assert_native()


@pytest.mark.parametrize("dtypes", [(torch.int32, torch.float32), (torch.float32, torch.float64),
                                    (torch.float16, torch.bfloat16), (torch.bool, torch.uint8),
                                    (torch.int8, torch.uint8), (torch.int64, torch.bool),
                                    (torch.complex64, torch.float64),
                                    (torch.int32, torch.float16, torch.int64)],
                         ids=lambda ds: "+".join(dtype_id(d) for d in ds))
def test_cat_mixed_dtypes_promote(dtypes):
    xs = [_mf_data(d, (2, 3), seed=60 + i) for i, d in enumerate(dtypes)]
    with Fallbacks(*CAT_OPS) as fb:
        r = torch.cat([x.to("tpu") for x in xs], 0)
        r1 = torch.cat([x.to("tpu") for x in xs], 1)
    e = torch.cat(xs, 0)
    assert e.dtype == torch.result_type(xs[0], xs[1]) or len(xs) > 2
    check(r, e, EXACT)
    check(r1, torch.cat(xs, 1), EXACT)
    fb.assert_native()


def test_cat_legacy_empty_tensor():
    # A (0,) tensor is skipped whatever the other tensors' shapes (legacy);
    # it still takes part in type promotion, like CPU.
    x = randn((2, 3), seed=70)
    e0 = torch.empty(0)
    e64 = torch.empty(0, dtype=torch.float64)
    i = ints((3,), seed=71)
    with Fallbacks(*CAT_OPS) as fb:
        rs = [
            (torch.cat([x.to("tpu"), e0.to("tpu")], 0), torch.cat([x, e0], 0)),
            (torch.cat([e0.to("tpu"), x.to("tpu"), e0.to("tpu")], 1), torch.cat([e0, x, e0], 1)),
            (torch.cat([x.to("tpu"), e64.to("tpu")], 0), torch.cat([x, e64], 0)),
            (torch.cat([i.to("tpu"), e64.to("tpu")]), torch.cat([i, e64])),
            (torch.cat([e0.to("tpu"), e0.to("tpu")]), torch.cat([e0, e0])),
        ]
    assert rs[2][1].dtype == torch.float64
    for r, e in rs:
        check(r, e, EXACT)
    fb.assert_native()


def test_cat_zero_size_along_dim():
    x = randn((3, 4), seed=72)
    z0, z1 = torch.zeros((0, 4)), torch.zeros((3, 0))
    with Fallbacks(*CAT_OPS) as fb:
        rs = [
            (torch.cat([x.to("tpu"), z0.to("tpu")], 0), torch.cat([x, z0], 0)),
            (torch.cat([z0.to("tpu"), x.to("tpu"), z0.to("tpu")], 0), torch.cat([z0, x, z0], 0)),
            (torch.cat([z1.to("tpu"), x.to("tpu")], 1), torch.cat([z1, x], 1)),
            (torch.cat([z0.to("tpu"), z0.to("tpu")], 0), torch.cat([z0, z0], 0)),
            (torch.cat([z1.to("tpu"), z1.to("tpu")], 0), torch.cat([z1, z1], 0)),  # (6, 0)
        ]
    for r, e in rs:
        check(r, e, EXACT)
    fb.assert_native()


@pytest.mark.parametrize("n", [1, 63, 64, 65, 100, 200], ids=str)
def test_cat_many_tensors(n):
    xs = [torch.full((2, 1 + i % 3), float(i)) for i in range(n)]
    with Fallbacks(*CAT_OPS) as fb:
        r = torch.cat([x.to("tpu") for x in xs], 1)
        r0 = torch.cat([x.to("tpu").t() for x in xs], 0)
    check(r, torch.cat(xs, 1), EXACT)
    check(r0, torch.cat([x.t() for x in xs], 0), EXACT)
    fb.assert_native()


def test_cat_100_pieces_of_a_split():
    x = randn((100, 7), seed=73)
    t = x.to("tpu")
    with Fallbacks(*CAT_OPS) as fb:
        r = torch.cat(list(t.split(1, 0)), 0)
        r1 = torch.cat(list(t.t().split(1, 1)), 1)
    check(r, x, EXACT)
    check(r1, x.t(), EXACT)
    fb.assert_native()


def test_cat_noncontiguous_pieces():
    a, b = randn((4, 6), seed=74), randn((6, 4), seed=75)
    c = randn((3, 1), seed=76)
    ta, tb, tc = a.to("tpu"), b.to("tpu"), c.to("tpu")
    with Fallbacks(*CAT_OPS) as fb:
        rs = [
            (torch.cat([ta, tb.t()], 0), torch.cat([a, b.t()], 0)),
            (torch.cat([ta[::2], tb.t()[1::2]], 1), torch.cat([a[::2], b.t()[1::2]], 1)),
            (torch.cat([ta[:3, ::2], tc.expand(3, 5)], -1),
             torch.cat([a[:3, ::2], c.expand(3, 5)], -1)),
            (torch.cat([ta[:, 1], tb[2]], 0), torch.cat([a[:, 1], b[2]], 0)),
            (torch.cat([ta, ta], 0), torch.cat([a, a], 0)),   # the same tensor twice
        ]
    for r, e in rs:
        check(r, e, EXACT)
    fb.assert_native()


def test_cat_on_second_device():
    xs = [randn((2, 3), seed=77 + i) for i in range(3)]
    with Fallbacks(*CAT_OPS) as fb:
        r = torch.cat([x.to("tpu:1") for x in xs], 1)
        s = torch.stack([x.to("tpu:1") for x in xs])
    assert r.device == torch.device("tpu:1") and s.device == torch.device("tpu:1")
    check(r, torch.cat(xs, 1), EXACT)
    check(s, torch.stack(xs), EXACT)
    fb.assert_native()


def test_cat_feeds_autograd():
    a, b = randn((2, 3), seed=80), randn((4, 3), seed=81)
    w = randn((6, 3), seed=82)

    def grads(a, b, w):
        a = a.detach().clone().requires_grad_()
        b = b.detach().clone().requires_grad_()
        torch.cat([a, b], 0).mul(w).sum().backward()
        return a.grad, b.grad

    with Fallbacks(*CAT_OPS) as fb:
        ga, gb = grads(a.to("tpu"), b.to("tpu"), w.to("tpu"))
    ea, eb = grads(a, b, w)
    check(ga, ea, EXACT)
    check(gb, eb, EXACT)
    fb.assert_native()


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3], ids=str)
def test_stack(dim):
    xs = [randn((2, 3), seed=83 + i) for i in range(4)]
    with Fallbacks(*CAT_OPS) as fb:
        r = torch.stack([x.to("tpu") for x in xs], dim)
        r2 = torch.stack([x.to("tpu").t().t() for x in xs], dim=dim)
    check(r, torch.stack(xs, dim), EXACT)
    check(r2, torch.stack(xs, dim), EXACT)
    fb.assert_native()


def test_stack_variants():
    xs = [randn((3,), seed=90 + i) for i in range(3)]
    ts = [x.to("tpu") for x in xs]
    ss = [torch.tensor(float(i)) for i in range(5)]
    mixed = [ints((3,), seed=95), randn((3,), seed=96, dtype=torch.float64)]
    with Fallbacks(*CAT_OPS) as fb:
        rs = [
            (torch.stack(ts), torch.stack(xs)),
            (torch.stack([s.to("tpu") for s in ss]), torch.stack(ss)),     # 0-d -> 1-d
            (torch.stack([m.to("tpu") for m in mixed], 1), torch.stack(mixed, 1)),
            (torch.vstack(ts), torch.vstack(xs)),
            (torch.hstack(ts), torch.hstack(xs)),
            (torch.stack([t[::2] for t in ts]), torch.stack([x[::2] for x in xs])),
        ]
    for r, e in rs:
        check(r, e, EXACT)
    fb.assert_native()


def test_cat_mismatched_shapes_raise_like_cpu():
    a, b = torch.zeros(2, 4), torch.zeros(3, 3)
    raises_like_cpu(lambda x, y: torch.cat([x, y], 0), (a, b), (a.to("tpu"), b.to("tpu")))


def test_cat_mismatched_ndim_raises_like_cpu():
    a, b = torch.zeros(2, 3), torch.zeros(2, 3, 4)
    raises_like_cpu(lambda x, y: torch.cat([x, y], 0), (a, b), (a.to("tpu"), b.to("tpu")))


def test_cat_zero_dim_raises_like_cpu():
    s = torch.tensor(1.0)
    raises_like_cpu(lambda x: torch.cat([x, x]), (s,), (s.to("tpu"),))


def test_cat_bad_dim_and_empty_list_raise_like_cpu():
    a = torch.zeros(2, 3)
    raises_like_cpu(lambda x: torch.cat([x, x], 2), (a,), (a.to("tpu"),))
    raises_like_cpu(lambda x: torch.cat([x, x], -3), (a,), (a.to("tpu"),))
    raises_like_cpu(lambda x: torch.cat([], 0), (a,), (a.to("tpu"),))


def test_stack_mismatched_shapes_raise_like_cpu():
    a, b = torch.zeros(2, 3), torch.zeros(1, 3)
    raises_like_cpu(lambda x, y: torch.stack([x, y]), (a, b), (a.to("tpu"), b.to("tpu")))
    raises_like_cpu(lambda x, y: torch.stack([x, x], 3), (a, b), (a.to("tpu"), b.to("tpu")))


@pytest.mark.parametrize("devs", [("tpu:0", "tpu:1"), ("tpu:1", "tpu:0"),
                                  ("tpu:0", "tpu:0", "tpu:1")], ids=lambda d: "+".join(d))
def test_cat_across_devices_raises(devs):
    xs = [torch.ones(2, 3, device=d) for d in devs]
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.cat(xs, 0)
        torch.tpu.synchronize()
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.stack(xs, 0)
        torch.tpu.synchronize()


def test_cat_tpu_and_cpu_raises():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.cat([torch.ones(2, 3, device="tpu"), torch.ones(2, 3)], 0)
        torch.tpu.synchronize()
