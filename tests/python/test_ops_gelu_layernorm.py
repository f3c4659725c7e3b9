"""gelu and layer_norm, forward and backward, against PyTorch's CPU kernels,
and running natively (no CPU fallback)."""
import copy

import pytest
import torch
import torch.nn.functional as F

import torch_pjrt

pytestmark = pytest.mark.usefixtures("no_leaks")

TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float64: dict(rtol=1e-10, atol=1e-10),
       torch.float16: dict(rtol=1e-2, atol=1e-2), torch.bfloat16: dict(rtol=2e-2, atol=2e-2)}


def _no_fallback(prefix):
    bad = [k for k in torch_pjrt.fallbacks() if k.startswith(prefix)]
    assert not bad, f"{prefix} fell back to the CPU: {bad}"


@pytest.mark.parametrize("dtype", list(TOL), ids=str)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_forward_backward(dtype, approximate):
    torch.manual_seed(0)
    x = (torch.randn(5, 7, dtype=torch.float64) * 3).to(dtype)
    xc = x.clone().requires_grad_()
    xt = x.to("tpu").requires_grad_()
    torch_pjrt.reset_fallbacks()
    yt = F.gelu(xt, approximate=approximate)
    yc = F.gelu(xc, approximate=approximate)
    torch.testing.assert_close(yt.cpu(), yc, **TOL[dtype])
    w = torch.randn(5, 7, dtype=torch.float64).to(dtype)
    (yt * w.to("tpu")).sum().backward()
    (yc * w).sum().backward()
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, **TOL[dtype])
    _no_fallback("aten::gelu")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
@pytest.mark.parametrize("shape,normalized", [((4, 8), (8,)), ((2, 3, 8), (8,)),
                                              ((2, 3, 4, 5), (4, 5)), ((6,), (6,))])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_forward_backward(dtype, shape, normalized, affine):
    torch.manual_seed(1)
    ln = torch.nn.LayerNorm(normalized, elementwise_affine=affine, dtype=dtype)
    if affine:
        with torch.no_grad():
            ln.weight.normal_()
            ln.bias.normal_()
    lt = copy.deepcopy(ln).to("tpu")
    x = torch.randn(shape, dtype=torch.float64).to(dtype) * 2 + 1
    xc = x.clone().requires_grad_()
    xt = x.to("tpu").requires_grad_()
    torch_pjrt.reset_fallbacks()
    yt, yc = lt(xt), ln(xc)
    tol = TOL[dtype] if dtype != torch.float32 else dict(rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(yt.cpu(), yc, **tol)
    g = torch.randn(shape, dtype=torch.float64).to(dtype)
    (yt * g.to("tpu")).sum().backward()
    (yc * g).sum().backward()
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, **tol)
    if affine:
        torch.testing.assert_close(lt.weight.grad.cpu(), ln.weight.grad, **tol)
        torch.testing.assert_close(lt.bias.grad.cpu(), ln.bias.grad, **tol)
    _no_fallback("aten::native_layer_norm")


def test_layer_norm_stats_match_cpu():
    x = torch.randn(3, 4, 5)
    out_t, mean_t, rstd_t = torch.native_layer_norm(x.to("tpu"), (5,), None, None, 1e-5)
    out_c, mean_c, rstd_c = torch.native_layer_norm(x, (5,), None, None, 1e-5)
    for t, c in [(out_t, out_c), (mean_t, mean_c), (rstd_t, rstd_c)]:
        assert t.shape == c.shape and t.dtype == c.dtype
        torch.testing.assert_close(t.cpu(), c, rtol=1e-5, atol=1e-5)


def test_layer_norm_eps_is_a_runtime_value():
    x = torch.randn(4, 8).to("tpu")
    F.layer_norm(x, (8,), eps=1e-5)
    before = torch_pjrt.metrics()["compiles"]
    y = F.layer_norm(x, (8,), eps=1e-3)
    assert torch_pjrt.metrics()["compiles"] == before
    torch.testing.assert_close(y.cpu(), F.layer_norm(x.cpu(), (8,), eps=1e-3), rtol=1e-5, atol=1e-5)


def test_layer_norm_shape_mismatch_raises_like_cpu():
    x = torch.randn(4, 8)
    with pytest.raises(RuntimeError) as cpu:
        F.layer_norm(x, (7,))
    with pytest.raises(RuntimeError) as tpu:
        F.layer_norm(x.to("tpu"), (7,))
    assert str(cpu.value).splitlines()[0] in str(tpu.value)


def test_gelu_refuses_an_unknown_approximation_as_cpu():
    x = torch.randn(3)
    for fn in (lambda t: torch.nn.functional.gelu(t, approximate="asdf"),
               lambda t: torch.ops.aten.gelu_backward(t, t, approximate="asdf")):
        with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
            fn(x)
        with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
            fn(x.to("tpu"))
