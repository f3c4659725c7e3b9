"""F.interpolate on tpu: nearest, nearest-exact, linear, bilinear,
trilinear and bicubic, and antialiased bilinear/bicubic
(_upsample_{bilinear,bicubic}2d_aa), forward and backward, against
PyTorch's CPU kernels."""
import pytest
import torch
import torch.nn.functional as F

import torch_pjrt
from test_ops_distance import check  # noqa: F401 (shared helpers)


def _compare(x_cpu, kwargs, dtype=torch.float32, atol=1e-5, rtol=1e-5, grad=True):
    x_cpu = x_cpu.to(dtype)
    xc = x_cpu.clone().requires_grad_(grad)
    xt = x_cpu.to("tpu").requires_grad_(grad)
    yc = F.interpolate(xc, **kwargs)
    yt = F.interpolate(xt, **kwargs)
    assert yt.device.type == "tpu" and yt.dtype == yc.dtype and yt.shape == yc.shape
    torch.testing.assert_close(yt.cpu(), yc.detach(), atol=atol, rtol=rtol)
    if grad:
        g = torch.randn(yc.shape).to(dtype)
        yc.backward(g)
        yt.backward(g.to("tpu"))
        torch.testing.assert_close(xt.grad.cpu(), xc.grad, atol=atol * 10, rtol=rtol * 10)


CASES_2D = [
    dict(scale_factor=2, mode="nearest"),
    dict(size=(7, 3), mode="nearest"),
    dict(scale_factor=1.7, mode="nearest"),
    dict(size=(9, 11), mode="nearest-exact"),
    dict(scale_factor=0.5, mode="nearest-exact"),
    dict(scale_factor=2, mode="bilinear", align_corners=False),
    dict(scale_factor=2, mode="bilinear", align_corners=True),
    dict(size=(3, 13), mode="bilinear", align_corners=False),
    dict(size=(1, 13), mode="bilinear", align_corners=True),
    dict(scale_factor=(0.6, 1.3), mode="bilinear", align_corners=False),
    dict(scale_factor=2.5, mode="bilinear", align_corners=False, recompute_scale_factor=True),
]


@pytest.mark.parametrize("kwargs", CASES_2D, ids=lambda k: "-".join(f"{v}" for v in k.values()))
def test_interpolate_2d_matches_cpu(kwargs):
    torch_pjrt.reset_metrics()
    _compare(torch.randn(2, 3, 5, 6), kwargs)
    assert torch_pjrt.fallbacks() == {}


@pytest.mark.parametrize("kwargs", [
    dict(scale_factor=3, mode="nearest"),
    dict(size=8, mode="nearest-exact"),
    dict(size=11, mode="linear", align_corners=False),
    dict(scale_factor=0.7, mode="linear", align_corners=True),
])
def test_interpolate_1d_matches_cpu(kwargs):
    torch_pjrt.reset_metrics()
    _compare(torch.randn(2, 3, 6), kwargs)
    assert torch_pjrt.fallbacks() == {}


@pytest.mark.parametrize("kwargs", [
    dict(scale_factor=2, mode="nearest"),
    dict(size=(3, 5, 4), mode="nearest-exact"),
    dict(size=(5, 4, 7), mode="trilinear", align_corners=False),
    dict(scale_factor=1.5, mode="trilinear", align_corners=True),
])
def test_interpolate_3d_matches_cpu(kwargs):
    torch_pjrt.reset_metrics()
    _compare(torch.randn(1, 2, 3, 4, 5), kwargs)
    assert torch_pjrt.fallbacks() == {}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float64])
def test_bilinear_other_float_dtypes(dtype):
    tol = {torch.bfloat16: 2e-2, torch.float16: 2e-3, torch.float64: 1e-12}[dtype]
    _compare(torch.randn(1, 2, 4, 5), dict(scale_factor=2, mode="bilinear"), dtype=dtype,
             atol=tol, rtol=tol)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_nearest_uint8_runs_natively(mode):
    torch_pjrt.reset_metrics()
    x = torch.randint(0, 255, (1, 2, 3, 4), dtype=torch.uint8)
    y = F.interpolate(x.to("tpu"), size=(7, 5), mode=mode)
    assert torch.equal(y.cpu(), F.interpolate(x, size=(7, 5), mode=mode))
    assert torch_pjrt.fallbacks() == {}


def test_nearest_int64_raises_like_cpu():
    x = torch.zeros(1, 1, 2, 2, dtype=torch.int64)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.interpolate(x, scale_factor=2, mode="nearest")
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.interpolate(x.to("tpu"), scale_factor=2, mode="nearest")


def test_bilinear_uint8_falls_back_correctly():
    torch_pjrt.reset_metrics()
    x = torch.randint(0, 255, (1, 3, 4, 5), dtype=torch.uint8)
    y = F.interpolate(x.to("tpu"), scale_factor=2, mode="bilinear")
    assert torch.equal(y.cpu(), F.interpolate(x, scale_factor=2, mode="bilinear"))
    assert torch_pjrt.fallbacks() == {"aten::upsample_bilinear2d": 1}


def test_non_contiguous_input_and_out_form():
    x = torch.randn(2, 6, 5, 3).permute(0, 3, 1, 2)  # channels-last-like view
    torch.testing.assert_close(F.interpolate(x.to("tpu"), scale_factor=2, mode="bilinear").cpu(),
                               F.interpolate(x, scale_factor=2, mode="bilinear"),
                               atol=1e-5, rtol=1e-5)
    out = torch.empty(2, 3, 12, 10, device="tpu")
    torch._C._nn.upsample_nearest2d(x.to("tpu"), [12, 10], out=out)
    torch.testing.assert_close(out.cpu(), torch._C._nn.upsample_nearest2d(x, [12, 10]))


def test_inf_and_nan_stay_where_cpu_puts_them():
    x = torch.randn(1, 1, 4, 4)
    x[0, 0, 1, 2] = float("inf")
    x[0, 0, 3, 0] = float("nan")
    for mode in ("nearest", "bilinear"):
        yc = F.interpolate(x, scale_factor=2, mode=mode)
        yt = F.interpolate(x.to("tpu"), scale_factor=2, mode=mode).cpu()
        torch.testing.assert_close(yt, yc, equal_nan=True)


def test_bad_arguments_raise_like_cpu():
    x = torch.randn(1, 1, 4, 4, device="tpu")
    with pytest.raises(ValueError, match="either size or scale_factor"):
        F.interpolate(x, mode="nearest")
    with pytest.raises(RuntimeError, match="Input and output sizes should be greater than 0"):
        torch._C._nn.upsample_nearest2d(x, [0, 3])


def test_upsample_module_in_a_training_step():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3, padding=1),
                              torch.nn.Upsample(scale_factor=2, mode="bilinear"),
                              torch.nn.Conv2d(4, 1, 3, padding=1))
    x = torch.randn(2, 2, 6, 6)
    ref = [p.detach().clone() for p in net.parameters()]
    net_t = net.to("tpu")
    torch_pjrt.reset_metrics()
    loss_t = net_t(x.to("tpu")).square().mean()
    loss_t.backward()
    net_c = torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3, padding=1),
                                torch.nn.Upsample(scale_factor=2, mode="bilinear"),
                                torch.nn.Conv2d(4, 1, 3, padding=1))
    with torch.no_grad():
        for p, r in zip(net_c.parameters(), ref):
            p.copy_(r)
    loss_c = net_c(x).square().mean()
    loss_c.backward()
    torch.testing.assert_close(loss_t.cpu(), loss_c.detach(), atol=1e-5, rtol=1e-5)
    for pt, pc in zip(net_t.parameters(), net_c.parameters()):
        torch.testing.assert_close(pt.grad.cpu(), pc.grad, atol=1e-4, rtol=1e-4)
    assert torch_pjrt.fallbacks() == {}


TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float64: dict(rtol=1e-9, atol=1e-9),
       torch.bfloat16: dict(rtol=2e-2, atol=2e-2), torch.float16: dict(rtol=2e-3, atol=2e-3)}


def test_interpolate_bicubic():
    torch.manual_seed(9)
    x = torch.randn(2, 3, 5, 7)
    check(lambda x: F.interpolate(x, size=(8, 11), mode="bicubic"), x)
    check(lambda x: F.interpolate(x, size=(3, 4), mode="bicubic", align_corners=True), x)
    check(lambda x: F.interpolate(x, scale_factor=(1.7, 0.6), mode="bicubic"), x.transpose(2, 3))
    check(lambda x: F.interpolate(x, scale_factor=2, mode="bicubic", align_corners=False), x[:1].double(),
          dtype=torch.float64)
    check(lambda x: F.interpolate(x, size=(9, 4), mode="bicubic"), x.bfloat16(), dtype=torch.bfloat16)
    # uint8 runs CPU's kernel (counted)
    xu = torch.randint(0, 255, (1, 2, 4, 4), dtype=torch.uint8)
    torch.testing.assert_close(F.interpolate(xu.to("tpu"), size=(6, 6), mode="bicubic").cpu(),
                               F.interpolate(xu, size=(6, 6), mode="bicubic"))


TOL_sampling = {torch.float32: dict(atol=2e-5, rtol=1e-5), torch.float64: dict(atol=1e-12, rtol=1e-12)}


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
    torch.testing.assert_close(yt.detach().cpu(), yc.detach(), **TOL_sampling[torch.float32])
    g = torch.randn(yc.shape)
    yc.backward(g)
    yt.backward(g.to("tpu"))
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, **TOL_sampling[torch.float32])


def test_interpolate_antialias_float64_and_views(native_only):
    torch.manual_seed(8)
    x = torch.randn(2, 9, 11, 3, dtype=torch.float64).permute(0, 3, 1, 2)
    yc = F.interpolate(x, size=(4, 5), mode="bicubic", antialias=True)
    yt = F.interpolate(x.to("tpu"), size=(4, 5), mode="bicubic", antialias=True)
    torch.testing.assert_close(yt.cpu(), yc, **TOL_sampling[torch.float64])


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
                               **TOL_sampling[torch.float32])


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
