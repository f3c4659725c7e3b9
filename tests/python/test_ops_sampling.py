"""Sampling ops on tpu against PyTorch's CPU kernels: F.grid_sample
(grid_sampler_2d/3d and their backward), F.affine_grid + grid_sample, and
F.interpolate(..., antialias=True) (_upsample_{bilinear,bicubic}2d_aa)."""
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

AA_CASES = [
    ("bilinear", (16, 19), dict(size=(5, 7))),
    ("bilinear", (8, 9), dict(size=(16, 20), align_corners=True)),
    ("bilinear", (10, 10), dict(scale_factor=0.37)),
    ("bicubic", (7, 30), dict(size=(3, 31), align_corners=True)),
    ("bicubic", (12, 6), dict(size=(12, 4))),  # one axis unchanged
]


@pytest.mark.parametrize("mode,insize,kw", AA_CASES, ids=lambda v: str(v))
def test_interpolate_antialias_matches_cpu(mode, insize, kw, native_only, no_leaks):
    torch.manual_seed(7)
    x = torch.randn(2, 3, *insize)
    xc, xt = x.clone().requires_grad_(), x.to("tpu").requires_grad_()
    yc = F.interpolate(xc, mode=mode, antialias=True, **kw)
    yt = F.interpolate(xt, mode=mode, antialias=True, **kw)
    torch.testing.assert_close(yt.detach().cpu(), yc.detach(), **TOL[torch.float32])
    g = torch.randn(yc.shape)
    yc.backward(g)
    yt.backward(g.to("tpu"))
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, **TOL[torch.float32])


def test_interpolate_antialias_float64_and_views(native_only):
    torch.manual_seed(8)
    x = torch.randn(2, 9, 11, 3, dtype=torch.float64).permute(0, 3, 1, 2)
    yc = F.interpolate(x, size=(4, 5), mode="bicubic", antialias=True)
    yt = F.interpolate(x.to("tpu"), size=(4, 5), mode="bicubic", antialias=True)
    torch.testing.assert_close(yt.cpu(), yc, **TOL[torch.float64])


def test_interpolate_antialias_keeps_inf_local(native_only):
    x = torch.zeros(1, 1, 1, 12)
    x[..., 0] = float("inf")
    yc = F.interpolate(x, size=(1, 3), mode="bilinear", antialias=True)
    yt = F.interpolate(x.to("tpu"), size=(1, 3), mode="bilinear", antialias=True)
    torch.testing.assert_close(yt.cpu(), yc)
    assert torch.isfinite(yt.cpu()[..., 1:]).all()


def test_upsample_aa_out_form(native_only):
    x = torch.randn(1, 2, 10, 8)
    out = torch.empty(0, device="tpu")
    torch.ops.aten._upsample_bilinear2d_aa.out(x.to("tpu"), [4, 3], False, None, None, out=out)
    torch.testing.assert_close(out.cpu(), torch.ops.aten._upsample_bilinear2d_aa(x, [4, 3], False),
                               **TOL[torch.float32])


def test_upsample_aa_uint8_runs_cpu_kernel():
    x = (torch.rand(1, 3, 10, 10) * 255).to(torch.uint8)
    torch_pjrt.reset_fallbacks()
    yt = F.interpolate(x.to("tpu"), size=(4, 4), mode="bilinear", antialias=True)
    assert torch.equal(yt.cpu(), F.interpolate(x, size=(4, 4), mode="bilinear", antialias=True))
    assert "aten::_upsample_bilinear2d_aa" in torch_pjrt.fallbacks()


def test_upsample_aa_half_raises_cpu_error():
    x = torch.randn(1, 1, 8, 8, dtype=torch.bfloat16, device="tpu")
    with pytest.raises(RuntimeError, match="not implemented for 'BFloat16'"):
        F.interpolate(x, size=(4, 4), mode="bilinear", antialias=True)


def test_upsample_aa_bad_size_raises():
    x = torch.randn(1, 1, 8, 8)
    with pytest.raises(RuntimeError, match="should be greater than 0"):
        torch.ops.aten._upsample_bilinear2d_aa(x.to("tpu"), [0, 4], False)


# ---- regularized incomplete gamma ----

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
