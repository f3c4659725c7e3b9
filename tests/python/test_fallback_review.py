"""Fallback paths after the review clean-up: out= forms that outform.cpp now
serves for several families (CPU's rules, nothing counted), the dense CPU
fallback under autograd, and torch.cholesky's deprecation warning."""
import pytest
import torch
import torch.nn.functional as F

import torch_pjrt
from conftest import run_python

DEV = "tpu"


# ---- out= forms served by outform.cpp ---------------------------------------

def _served_calls(out_dtype=None):
    """(name, call(device, out)) for out= forms whose functional kernel is
    native; out_dtype overrides the out's dtype."""
    g = torch.Generator().manual_seed(0)
    x4 = torch.randn(1, 2, 4, 5, generator=g)
    p5 = torch.randn(1, 2, 4, 4, 4, generator=g)
    a = torch.rand(3, 4, generator=g) + 1
    return [
        ("upsample_nearest2d", lambda d, o: torch._C._nn.upsample_nearest2d(
            x4.to(d), [8, 10], out=o), x4.dtype),
        ("upsample_bilinear2d_aa", lambda d, o: torch.ops.aten._upsample_bilinear2d_aa.out(
            x4.to(d), [3, 3], False, None, None, out=o), x4.dtype),
        ("avg_pool3d", lambda d, o: torch._C._nn.avg_pool3d(p5.to(d), 2, out=o), p5.dtype),
        ("reflection_pad2d_backward", lambda d, o: torch.ops.aten.reflection_pad2d_backward(
            torch.ones(1, 2, 6, 7).to(d), x4.to(d), [1, 1, 1, 1], grad_input=o), x4.dtype),
        ("im2col", lambda d, o: torch.ops.aten.im2col.out(
            x4.to(d), [2, 2], [1, 1], [0, 0], [1, 1], out=o), x4.dtype),
        ("rfft", lambda d, o: torch.fft.rfft(x4.to(d), out=o), torch.complex64),
        ("igamma", lambda d, o: torch.igamma(a.to(d), a.to(d) * 2, out=o), a.dtype),
    ]


@pytest.mark.parametrize("i", range(7), ids=[c[0] for c in _served_calls()])
def test_served_out_form_matches_cpu_without_fallback(i, monkeypatch):
    name, call, dtype = _served_calls()[i]
    expected = call("cpu", torch.empty(0, dtype=dtype))
    monkeypatch.setenv("TORCH_PJRT_FALLBACK", "error")
    torch_pjrt.reset_fallbacks()
    out = torch.empty(0, dtype=dtype, device=DEV)
    call(DEV, out)
    torch.testing.assert_close(out.cpu(), expected, atol=1e-5, rtol=1e-5)
    assert torch_pjrt.fallbacks() == {}


@pytest.mark.parametrize("i", [0, 1, 2, 3], ids=[c[0] for c in _served_calls()[:4]])
def test_out_of_another_dtype_is_refused_as_on_cpu(i):
    # These CPU kernels refuse an out whose dtype is not the result's; the
    # tpu out= form used to cast into it silently.
    _, call, _ = _served_calls()[i]
    with pytest.raises(RuntimeError) as cpu_err:
        call("cpu", torch.empty(0, dtype=torch.float64))
    msg = str(cpu_err.value).splitlines()[0]
    out = torch.empty(0, dtype=torch.float64, device=DEV)
    with pytest.raises(RuntimeError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        call(DEV, out)


def test_linalg_out_view_is_written_in_place_as_on_cpu():
    # An out that is a strided view of a larger buffer: CPU writes through the
    # view's own strides (PyTorch's meta kernel for _linalg_solve_ex would
    # restride it; outform.cpp restrides only an out it resizes).
    a = torch.tensor([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]])
    b = torch.arange(6.0).reshape(3, 2)
    bufs = {}
    for dev in ("cpu", DEV):
        big = torch.zeros(3, 4, device=dev)
        out = big[:, ::2]
        torch_pjrt.reset_fallbacks()
        torch.linalg.solve(a.to(dev), b.to(dev), out=out)
        assert out.stride() == (4, 2)
        bufs[dev] = big.cpu()
    assert torch_pjrt.fallbacks() == {}
    torch.testing.assert_close(bufs[DEV], bufs["cpu"], atol=1e-5, rtol=1e-5)


def test_linalg_out_of_another_dtype_is_refused_as_on_cpu():
    a = torch.eye(3) * 2
    with pytest.raises(RuntimeError) as cpu_err:
        torch.linalg.inv(a, out=torch.empty(0, dtype=torch.float64))
    with pytest.raises(RuntimeError, match=str(cpu_err.value).splitlines()[0]):
        torch.linalg.inv(a.to(DEV), out=torch.empty(0, dtype=torch.float64, device=DEV))


# ---- the dense CPU fallback under autograd ---------------------------------

def _grads(f, inputs, device):
    xs = [t.detach().to(device).requires_grad_() for t in inputs]
    out = f(*xs)
    cot = torch.linspace(-1, 1, out.numel()).reshape(out.shape).to(device)
    return out.detach().cpu(), [g.cpu() for g in torch.autograd.grad(out, xs, cot)]


@pytest.mark.parametrize("case", ["embedding_bag_max", "svdvals", "ctc_loss"])
def test_dense_fallback_backward_matches_cpu(case, monkeypatch):
    # Autograd records these ops on the tpu tensors; only the forward (and
    # the backward op, where it has no tpu kernel either) runs on CPU copies.
    monkeypatch.setenv("TORCH_PJRT_FALLBACK", "allow")
    g = torch.Generator().manual_seed(1)
    if case == "embedding_bag_max":
        idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
        off = torch.tensor([0, 4])
        f = lambda w: F.embedding_bag(idx.to(w.device), w, off.to(w.device), mode="max")
        inputs, fallback = [torch.randn(10, 3, generator=g)], "aten::_embedding_bag"
    elif case == "svdvals":
        f, inputs, fallback = torch.linalg.svdvals, [torch.randn(5, 4, generator=g)], \
            "aten::_linalg_svd.U"
    else:
        tg = torch.tensor([[1, 2], [3, 3]])
        f = lambda lp: F.ctc_loss(lp.log_softmax(2), tg.to(lp.device), torch.tensor([6, 5]),
                                  torch.tensor([2, 2]), reduction="none")
        inputs, fallback = [torch.randn(6, 2, 5, generator=g)], "aten::_ctc_loss"
    out_c, grads_c = _grads(f, inputs, "cpu")
    torch_pjrt.reset_fallbacks()
    out_t, grads_t = _grads(f, inputs, DEV)
    assert fallback in torch_pjrt.fallbacks()  # the path under test was taken
    torch.testing.assert_close(out_t, out_c, atol=1e-5, rtol=1e-5)
    for gt, gc in zip(grads_t, grads_c):
        torch.testing.assert_close(gt, gc, atol=1e-5, rtol=1e-5)


# ---- torch.cholesky's deprecation warning ------------------------------------

CHOLESKY_WARNING = """
import warnings, torch, torch_pjrt
a = torch.tensor([[4.0, 1.0], [1.0, 3.0]])
msgs = []
for dev in ("cpu", "tpu"):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        torch.cholesky(a.to(dev))
    msgs.append([str(m.message).split(" (Triggered internally")[0] for m in w
                 if "deprecated" in str(m.message)])
assert len(msgs[0]) == 1 and msgs[0] == msgs[1], msgs
print("ok")
"""


def test_cholesky_deprecation_warning_reads_as_cpus():
    r = run_python(CHOLESKY_WARNING)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "ok"


# ---- ops PyTorch has no CPU kernel for --------------------------------------

def test_op_without_a_cpu_kernel_is_refused_naming_it():
    # _fused_dropout is CUDA-only in PyTorch: nothing to fall back to, and
    # nothing is counted (the dispatcher's own error would blame 'CPU').
    torch_pjrt.reset_fallbacks()
    with pytest.raises(NotImplementedError,
                       match=r"aten::_fused_dropout has no tpu lowering, and PyTorch has no CPU "
                             r"kernel for it to fall back to"):
        torch.ops.aten._fused_dropout(torch.ones(4, device=DEV), 0.5)
    assert torch_pjrt.fallbacks() == {}


WARN_ONCE_ACROSS_RESET = """
import warnings, torch, torch_pjrt
x = torch.randn(4, 3).to("tpu")
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    torch.linalg.svdvals(x)
    torch_pjrt.reset_fallbacks()
    torch.linalg.svdvals(x)
n = len([m for m in w if "aten::_linalg_svd.U has no tpu lowering" in str(m.message)])
print(n, torch_pjrt.fallbacks().get("aten::_linalg_svd.U"))
"""


def test_fallback_warning_stays_once_per_process_across_a_reset():
    r = run_python(WARN_ONCE_ACROSS_RESET, drop=("TORCH_PJRT_FALLBACK",))
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["1", "1"]  # warned once; counted again after the reset
