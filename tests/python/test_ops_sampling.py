"""F.grid_sample on tpu against PyTorch's CPU kernels (grid_sampler_2d/3d
and their backward), and F.affine_grid + grid_sample."""
import pytest
import torch
import torch.nn.functional as F

import torch_pjrt

TOL = {torch.float32: dict(atol=2e-5, rtol=1e-5), torch.float64: dict(atol=1e-12, rtol=1e-12)}


def _grid_sample_both(x, grid, **kw):
    """Forward and both gradients on CPU and on tpu."""
    xc, gc = x.clone().requires_grad_(), grid.clone().requires_grad_()
    xt, gt = x.to("tpu").requires_grad_(), grid.to("tpu").requires_grad_()
    yc = F.grid_sample(xc, gc, **kw)
    yt = F.grid_sample(xt, gt, **kw)
    go = torch.randn(yc.shape, dtype=x.dtype)
    yc.backward(go)
    yt.backward(go.to("tpu"))
    return (yc.detach(), xc.grad, gc.grad), (yt.detach().cpu(), xt.grad.cpu(), gt.grad.cpu())


# every mode, padding and align_corners appears; not all combinations (compile time)
CASES_2D = [("bilinear", "zeros", False), ("bilinear", "reflection", True),
            ("bilinear", "border", False), ("nearest", "reflection", False),
            ("nearest", "zeros", True), ("bicubic", "zeros", False), ("bicubic", "border", True),
            ("bicubic", "reflection", False)]


@pytest.mark.parametrize("mode,pad,ac", CASES_2D, ids=lambda v: str(v))
def test_grid_sample_2d_matches_cpu(mode, pad, ac, native_only, no_leaks):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 5, 6)
    # beyond [-1, 1] so that padding matters
    grid = torch.rand(2, 4, 7, 2) * 3 - 1.5
    cpu, tpu = _grid_sample_both(x, grid, mode=mode, padding_mode=pad, align_corners=ac)
    for a, e in zip(tpu, cpu):
        torch.testing.assert_close(a, e, **TOL[torch.float32])


@pytest.mark.parametrize("mode,pad,ac", [("bilinear", "zeros", False), ("bilinear", "reflection", True),
                                         ("nearest", "border", False)])
def test_grid_sample_3d_matches_cpu(mode, pad, ac, native_only, no_leaks):
    torch.manual_seed(1)
    x = torch.randn(2, 2, 4, 5, 3)
    grid = torch.rand(2, 3, 2, 4, 3) * 3 - 1.5
    cpu, tpu = _grid_sample_both(x, grid, mode=mode, padding_mode=pad, align_corners=ac)
    for a, e in zip(tpu, cpu):
        torch.testing.assert_close(a, e, **TOL[torch.float32])


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_grid_sample_float64(mode, native_only):
    torch.manual_seed(2)
    x = torch.randn(1, 2, 6, 4, dtype=torch.float64)
    grid = torch.rand(1, 3, 5, 2, dtype=torch.float64) * 2.4 - 1.2
    cpu, tpu = _grid_sample_both(x, grid, mode=mode, padding_mode="reflection", align_corners=False)
    for a, e in zip(tpu, cpu):
        torch.testing.assert_close(a, e, **TOL[torch.float64])


def test_affine_grid_then_grid_sample(native_only):
    torch.manual_seed(3)
    x = torch.randn(2, 3, 8, 8)
    theta = torch.tensor([[[0.9, -0.3, 0.1], [0.2, 1.1, -0.2]],
                          [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    gc = F.affine_grid(theta, [2, 3, 6, 7], align_corners=False)
    gt = F.affine_grid(theta.to("tpu"), [2, 3, 6, 7], align_corners=False)
    torch.testing.assert_close(gt.cpu(), gc, **TOL[torch.float32])
    yc = F.grid_sample(x, gc, align_corners=False)
    yt = F.grid_sample(x.to("tpu"), gt, align_corners=False)
    torch.testing.assert_close(yt.cpu(), yc, **TOL[torch.float32])


def test_grid_sample_non_contiguous_inputs(native_only):
    torch.manual_seed(4)
    x = torch.randn(2, 6, 3, 5).permute(0, 3, 2, 1)  # (2, 5, 3, 6), channels-last-like
    grid = (torch.rand(2, 4, 2, 3) * 2 - 1)[..., 1:]  # last dim sliced
    grid = grid.transpose(1, 2)
    assert not x.is_contiguous() and not grid.is_contiguous()
    yc = F.grid_sample(x, grid, align_corners=True)
    yt = F.grid_sample(x.to("tpu"), grid.to("tpu"), align_corners=True)
    torch.testing.assert_close(yt.cpu(), yc, **TOL[torch.float32])


def test_grid_sample_inf_outside_stays_out(native_only):
    """A neighbour outside the input contributes nothing (no 0 * inf)."""
    x = torch.full((1, 1, 3, 3), float("inf"))
    x[..., 1, 1] = 2.0
    # one point outside (its clamped neighbour would be the inf corner), one at the centre
    grid = torch.tensor([[[[-2.0, -2.0], [0.0, 0.0]]]])
    yc = F.grid_sample(x, grid, mode="nearest", align_corners=True)
    yt = F.grid_sample(x.to("tpu"), grid.to("tpu"), mode="nearest", align_corners=True)
    torch.testing.assert_close(yt.cpu(), yc)
    assert yt.cpu().flatten().tolist() == [0.0, 2.0]


def test_grid_sample_half_types_run_cpu_kernel():
    torch.manual_seed(5)
    x = torch.randn(1, 2, 4, 4, dtype=torch.bfloat16)
    grid = (torch.rand(1, 3, 3, 2) * 2 - 1).to(torch.bfloat16)
    torch_pjrt.reset_fallbacks()
    yt = F.grid_sample(x.to("tpu"), grid.to("tpu"), align_corners=False)
    torch.testing.assert_close(yt.cpu(), F.grid_sample(x, grid, align_corners=False), atol=0, rtol=0)
    assert "aten::grid_sampler_2d" in torch_pjrt.fallbacks()


@pytest.mark.parametrize("x_shape,g_shape,fn,msg", [
    ((1, 2, 3, 3), (1, 2, 2, 3), "2d", "expected grid to have size 2 in last dimension"),
    ((1, 2, 3, 3), (2, 2, 2, 2), "2d", "expected grid and input to have same batch size"),
    ((1, 2, 0, 3), (1, 2, 2, 2), "2d", "expected input to have non-empty spatial dimensions"),
    ((1, 2, 3, 3), (1, 2, 2, 2, 2), "2d", "expected 4D input and grid with same number of dimensions"),
    ((1, 2, 3, 3, 3), (1, 2, 2, 2, 3), "3d-bicubic", "bicubic interpolation only supports 4D input"),
])
def test_grid_sampler_errors_match_cpu(x_shape, g_shape, fn, msg):
    x, g = torch.rand(x_shape), torch.rand(g_shape)
    if fn == "2d":
        call = lambda a, b: torch.grid_sampler_2d(a, b, 0, 0, False)
    else:
        call = lambda a, b: torch.grid_sampler_3d(a, b, 2, 0, False)
    with pytest.raises(RuntimeError, match=msg):
        call(x, g)
    with pytest.raises(RuntimeError, match=msg):
        call(x.to("tpu"), g.to("tpu"))


def test_grid_sampler_dtype_mismatch_raises():
    x, g = torch.rand(1, 1, 3, 3), torch.rand(1, 2, 2, 2, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        F.grid_sample(x.to("tpu"), g.to("tpu"), align_corners=False)


def test_grid_sampler_empty_output(native_only):
    x = torch.randn(1, 2, 3, 3, device="tpu")
    y = F.grid_sample(x, torch.empty(1, 0, 4, 2, device="tpu"), align_corners=False)
    assert y.shape == (1, 2, 0, 4)


def test_grid_sampler_backward_without_input_grad(native_only):
    torch.manual_seed(6)
    x = torch.randn(1, 2, 4, 4)
    grid = torch.rand(1, 3, 3, 2) * 2 - 1
    gc, gt = grid.clone().requires_grad_(), grid.to("tpu").requires_grad_()
    F.grid_sample(x, gc, align_corners=False).sum().backward()
    F.grid_sample(x.to("tpu"), gt, align_corners=False).sum().backward()
    torch.testing.assert_close(gt.grad.cpu(), gc.grad, **TOL[torch.float32])


# ---- antialiased interpolation ----


# ---- regularized incomplete gamma ----


