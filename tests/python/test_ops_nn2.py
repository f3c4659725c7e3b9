"""nn.functional ops lowered in src/ops/nn2.c and src/ops/pool.c, against the
CPU: nll_loss2d (cross_entropy over spatial targets), the reflect/replicate
pads' backward, logit, hardshrink, softshrink, threshold, channel_shuffle, and
3-D / adaptive pooling with indices. Values and gradients, odd shapes,
non-contiguous inputs, out= forms, CPU's errors, and no CPU fallback."""
import pytest
import torch
import torch.nn.functional as F

import torch_pjrt

pytestmark = pytest.mark.usefixtures("no_leaks")

TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float64: dict(rtol=1e-9, atol=1e-9),
       torch.bfloat16: dict(rtol=2e-2, atol=2e-2), torch.float16: dict(rtol=2e-3, atol=2e-3)}


def check(fn, *inputs, dtype=torch.float32, grad=True, tol=None, seed=0):
    """fn on CPU and on tpu (inputs that are float tensors get gradients):
    outputs, then gradients for a random cotangent, compared; no fallback."""
    tol = tol or TOL[dtype]
    cpu = [x.detach().clone().requires_grad_(grad and x.is_floating_point())
           if isinstance(x, torch.Tensor) else x for x in inputs]
    dev = [x.detach().to("tpu").requires_grad_(grad and x.is_floating_point())
           if isinstance(x, torch.Tensor) else x for x in inputs]
    torch.tpu.synchronize()
    torch_pjrt.reset_fallbacks()
    oc, od = fn(*cpu), fn(*dev)
    oc = oc if isinstance(oc, tuple) else (oc,)
    od = od if isinstance(od, tuple) else (od,)
    for a, e in zip(od, oc):
        torch.testing.assert_close(a.cpu(), e, equal_nan=True, **tol)
    if grad:
        g = torch.Generator().manual_seed(seed)
        cot = torch.randn(oc[0].shape, generator=g, dtype=torch.float32).to(oc[0].dtype)
        (oc[0] * cot).sum().backward()
        (od[0] * cot.to("tpu")).sum().backward()
        for xc, xd in zip(cpu, dev):
            if isinstance(xc, torch.Tensor) and xc.requires_grad:
                torch.testing.assert_close(xd.grad.cpu(), xc.grad, equal_nan=True, **tol)
    torch.tpu.synchronize()
    assert torch_pjrt.fallbacks() == {}, torch_pjrt.fallbacks()
    return od


# ---- nll_loss2d ------------------------------------------------------------------

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_spatial(reduction):
    torch.manual_seed(0)
    x = torch.randn(2, 5, 3, 4)
    t = torch.randint(0, 5, (2, 3, 4))
    t[0, 1, 2] = -100
    w = torch.rand(5)
    check(lambda x: F.cross_entropy(x, t.to(x.device), weight=w.to(x.device), reduction=reduction), x)
    t2 = t.clamp(min=0)
    check(lambda x: F.nll_loss(x, t2.to(x.device), reduction=reduction, ignore_index=3), x)


def test_cross_entropy_3d_targets_and_noncontiguous():
    torch.manual_seed(1)
    x = torch.randn(2, 3, 4, 3, 5).transpose(2, 4)  # (N, C, 5, 3, 4), non-contiguous
    t = torch.randint(0, 3, (2, 5, 3, 4))
    check(lambda x: F.cross_entropy(x, t.to(x.device)), x)
    check(lambda x: F.cross_entropy(x, t.to(x.device)), x.double(), dtype=torch.float64)


def test_nll_loss2d_half_and_target_errors():
    torch.manual_seed(2)
    x = torch.randn(2, 4, 3, 3)
    t = torch.randint(0, 4, (2, 3, 3))
    check(lambda x: F.cross_entropy(x, t.to(x.device)), x.bfloat16(), dtype=torch.bfloat16)
    bad = t.clone()
    bad[1, 2, 0] = 4
    for dev in ("cpu", "tpu"):
        with pytest.raises(IndexError, match="Target 4 is out of bounds"):
            F.nll_loss(x.to(dev), bad.to(dev))
    with pytest.raises(RuntimeError, match="only batches of spatial targets supported"):
        torch.ops.aten.nll_loss2d_forward(x.to("tpu"), t[0].to("tpu"), None, 1, -100)


# ---- pad backward -------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_pad_backward(mode):
    torch.manual_seed(0)
    check(lambda x: F.pad(x, (2, 1), mode=mode), torch.randn(2, 3, 5))
    check(lambda x: F.pad(x, (1, 3, 2, 0), mode=mode), torch.randn(2, 4, 5).transpose(1, 2))
    check(lambda x: F.pad(x, (1, 2, 0, 1, 2, 1), mode=mode), torch.randn(1, 2, 3, 4, 5))
    check(lambda x: F.pad(x, (2, 2), mode=mode), torch.randn(3, 6).bfloat16(), dtype=torch.bfloat16)


def test_replicate_negative_pad_backward_and_grad_input_out():
    torch.manual_seed(1)
    check(lambda x: F.pad(x, (-1, 2, 3, -2), mode="replicate"), torch.randn(2, 5, 6))
    g, x = torch.randn(2, 3, 8), torch.randn(2, 3, 5)
    exp = torch.ops.aten.reflection_pad1d_backward(g, x, [2, 1])
    out = torch.empty(0, device="tpu")
    torch_pjrt.reset_fallbacks()
    r = torch.ops.aten.reflection_pad1d_backward.grad_input(g.to("tpu"), x.to("tpu"), [2, 1],
                                                             grad_input=out)
    assert r is out
    torch.testing.assert_close(out.cpu(), exp)
    assert torch_pjrt.fallbacks() == {}


# ---- pointwise ------------------------------------------------------------------------

def test_logit_with_and_without_eps():
    x = torch.tensor([-0.5, 0.0, 0.05, 0.3, 0.5, 0.97, 1.0, 1.5, float("nan")])
    check(lambda x: torch.logit(x), x)
    check(lambda x: torch.logit(x, eps=0.1), x)
    check(lambda x: torch.logit(x, eps=0.1), x.double(), dtype=torch.float64)
    check(lambda x: torch.logit(x, 1e-2), torch.rand(4, 5).bfloat16(), dtype=torch.bfloat16)
    # integer input gives float, as on CPU
    torch.testing.assert_close(torch.logit(torch.tensor([0, 1, 2], device="tpu")).cpu(),
                               torch.logit(torch.tensor([0, 1, 2])), equal_nan=True)
    y = torch.rand(3, 4, device="tpu")
    e = torch.logit(y.cpu(), 0.2)
    y.logit_(0.2)
    torch.testing.assert_close(y.cpu(), e)


def test_shrinks_and_threshold():
    x = torch.randn(5, 7) * 2
    x[0, :4] = torch.tensor([0.5, -0.5, 0.3, -0.0])
    for f in (lambda x: F.hardshrink(x, 0.5), lambda x: F.softshrink(x, 0.5),
              lambda x: F.threshold(x, 0.25, -2.0)):
        # NaN in the forward only: CPU's own gradient at NaN depends on the
        # input's layout (0 when contiguous, the gradient when strided)
        xn = x.clone()
        xn[0, 2] = float("nan")
        check(f, xn, grad=False)
        check(f, x)
        check(f, x.t())                                        # non-contiguous
        check(f, x.bfloat16(), dtype=torch.bfloat16)
        check(f, x.half(), dtype=torch.float16)
    # softshrink gives +0.0 in the middle (also for -0.0) and keeps NaN
    r = F.softshrink(xn.to("tpu"), 0.5).cpu()
    assert torch.equal(r.view(torch.int32), F.softshrink(xn, 0.5).view(torch.int32))
    # integer threshold, in-place and out= forms
    xi = torch.arange(-5, 6)
    torch.testing.assert_close(F.threshold(xi.to("tpu"), 1, 7).cpu(), F.threshold(xi, 1, 7))
    xt = x.to("tpu")
    F.threshold_(xt, 0.0, 9.0)
    torch.testing.assert_close(xt.cpu(), F.threshold(x, 0.0, 9.0), equal_nan=True)
    out = torch.empty(0, device="tpu")
    torch.nn.functional.hardshrink(x.to("tpu"), 0.5)
    torch.hardshrink(x.to("tpu"), 0.5, out=out)
    torch.testing.assert_close(out.cpu(), F.hardshrink(x, 0.5), equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_half_scalars_round_like_cpu(dtype):
    # CPU rounds hardshrink's lambd to the input's dtype, but compares
    # softshrink's and threshold's in float: values at the rounding edge
    x = torch.tensor([0.3, -0.3, 0.30078125, 0.2998046875, 1.0]).to(dtype)
    for f in (lambda x: F.hardshrink(x, 0.3), lambda x: F.softshrink(x, 0.3),
              lambda x: torch.logit(x, 0.3)):
        check(f, x, dtype=dtype, tol=dict(rtol=0, atol=0), grad=False)
        check(f, x, dtype=dtype)
    check(lambda x: F.threshold(x, 0.3, -2.0), x, dtype=dtype, tol=dict(rtol=0, atol=0), grad=False)
    # threshold's gradient (threshold_backward) compares in float too
    check(lambda x: F.threshold(x, 0.3, -2.0), x, dtype=dtype, tol=dict(rtol=0, atol=0))


def test_shrink_errors_like_cpu():
    xi = torch.arange(4)
    for dev in ("cpu", "tpu"):
        with pytest.raises(NotImplementedError, match="\"hardshrink_cpu\" not implemented for 'Long'"):
            F.hardshrink(xi.to(dev))
        with pytest.raises(RuntimeError, match="lambda must be in range"):
            F.softshrink(torch.randn(3, device=dev), -1.0)


def test_channel_shuffle():
    x = torch.arange(2 * 6 * 3 * 2, dtype=torch.float32).view(2, 6, 3, 2)
    check(lambda x: F.channel_shuffle(x, 3), x)
    check(lambda x: F.channel_shuffle(x, 2), x.transpose(2, 3))
    xi = torch.arange(24).view(1, 12, 2)
    torch.testing.assert_close(F.channel_shuffle(xi.to("tpu"), 4).cpu(), F.channel_shuffle(xi, 4))


# ---- pooling ------------------------------------------------------------------------------

def ties(shape, dtype=torch.float32):
    """Values with many equal maxima, so indices test CPU's first-max rule."""
    g = torch.Generator().manual_seed(3)
    return torch.randint(0, 3, shape, generator=g).to(dtype)


def test_max_pool3d_values_indices_grads():
    torch.manual_seed(0)
    check(lambda x: F.max_pool3d(x, 2, return_indices=True), torch.randn(2, 3, 4, 5, 6))
    check(lambda x: F.max_pool3d(x, (3, 2, 2), stride=(2, 1, 2), padding=1, dilation=(1, 2, 1),
                                 ceil_mode=True, return_indices=True), torch.randn(1, 2, 7, 6, 5))
    check(lambda x: F.max_pool3d(x, 2, stride=1, return_indices=True), ties((2, 4, 4, 4)))
    x = torch.randn(2, 5, 4, 6, 3).transpose(1, 4)  # non-contiguous
    x[0, 0, 0, 0, :2] = float("nan")
    check(lambda x: F.max_pool3d(x, 2, return_indices=True), x)
    check(lambda x: F.max_pool3d(x, 2, return_indices=True), torch.randn(1, 2, 4, 4, 4).bfloat16(),
          dtype=torch.bfloat16)
    xi = torch.randint(-50, 50, (1, 2, 4, 4, 4))
    v, i = F.max_pool3d(xi.to("tpu"), 2, return_indices=True)
    ve, ie = F.max_pool3d(xi, 2, return_indices=True)
    assert torch.equal(v.cpu(), ve) and torch.equal(i.cpu(), ie)


def test_avg_pool3d():
    torch.manual_seed(1)
    x = torch.randn(2, 3, 5, 6, 7)
    check(lambda x: F.avg_pool3d(x, 2), x)
    check(lambda x: F.avg_pool3d(x, 3, stride=2, padding=1, ceil_mode=True), x)
    check(lambda x: F.avg_pool3d(x, (3, 2, 3), stride=(1, 2, 2), padding=(1, 0, 1),
                                 count_include_pad=False), x.transpose(2, 4))
    check(lambda x: F.avg_pool3d(x, 2, divisor_override=3), x[0])
    check(lambda x: F.avg_pool3d(x, 2), x.double(), dtype=torch.float64)
    for dev in ("cpu", "tpu"):  # CPU has no half kernel
        with pytest.raises(NotImplementedError, match="\"avg_pool3d_out_frame\" not implemented for 'Half'"):
            F.avg_pool3d(x.half().to(dev), 2)
    out = torch.empty(0, device="tpu")
    torch._C._nn.avg_pool3d(x.to("tpu"), 2, out=out)
    torch.testing.assert_close(out.cpu(), F.avg_pool3d(x, 2))


def test_adaptive_max_pool():
    torch.manual_seed(2)
    check(lambda x: F.adaptive_max_pool1d(x, 3, return_indices=True), torch.randn(2, 3, 8))
    check(lambda x: F.adaptive_max_pool2d(x, (3, 4), return_indices=True), torch.randn(2, 3, 7, 9))
    check(lambda x: F.adaptive_max_pool2d(x, (5, 2), return_indices=True), ties((2, 3, 6, 5)))
    check(lambda x: F.adaptive_max_pool2d(x, (9, 11), return_indices=True), torch.randn(1, 5, 7))
    check(lambda x: F.adaptive_max_pool3d(x, (2, 3, 2), return_indices=True),
          torch.randn(1, 2, 5, 7, 4).transpose(2, 3))
    check(lambda x: F.adaptive_max_pool2d(x, 2, return_indices=True),
          torch.randn(1, 2, 5, 5).bfloat16(), dtype=torch.bfloat16)
    for dev in ("cpu", "tpu"):
        with pytest.raises(NotImplementedError, match="\"adaptive_max_pool2d\" not implemented for 'Long'"):
            F.adaptive_max_pool2d(torch.ones(1, 4, 4, dtype=torch.long, device=dev), 2)


def test_adaptive_avg_pool3d_and_area_interpolate():
    torch.manual_seed(3)
    check(lambda x: F.adaptive_avg_pool3d(x, (2, 3, 4)), torch.randn(2, 3, 5, 7, 9))
    check(lambda x: F.adaptive_avg_pool3d(x, (6, 1, 5)), torch.randn(2, 4, 3, 6).transpose(1, 3))
    check(lambda x: F.interpolate(x, size=(3, 2, 5), mode="area"), torch.randn(1, 2, 7, 5, 8))
    check(lambda x: F.adaptive_avg_pool3d(x, 2), torch.randn(1, 2, 5, 5, 5).bfloat16(),
          dtype=torch.bfloat16)
    x = torch.zeros(1, 1, 4, 4, 4)
    x[0, 0, 0, 0, 0] = float("inf")  # an inf stays in its own cell
    check(lambda x: F.adaptive_avg_pool3d(x, 2), x, grad=False)


# ---- fold / unfold / unpool --------------------------------------------------------------

def test_unfold_fold():
    torch.manual_seed(4)
    x = torch.randn(2, 3, 6, 7)
    check(lambda x: F.unfold(x, (2, 3)), x)
    check(lambda x: F.unfold(x, 3, dilation=(1, 2), padding=1, stride=2), x.transpose(2, 3))
    check(lambda x: F.unfold(x, 2), x[0])
    cols = torch.randn(2, 3 * 2 * 2, 12)
    check(lambda c: F.fold(c, (4, 5), 2), cols)
    check(lambda c: F.fold(c, (5, 7), (2, 3), dilation=(2, 1), padding=1, stride=(2, 2)),
          torch.randn(3 * 6, 12))
    check(lambda x: F.unfold(x, 2), x.half(), dtype=torch.float16)
    xb = torch.arange(2 * 4 * 4).view(1, 2, 4, 4) % 3 == 0
    torch.testing.assert_close(F.unfold(xb.to("tpu"), 2).cpu(), F.unfold(xb, 2))
    for dev in ("cpu", "tpu"):
        with pytest.raises(NotImplementedError, match="\"im2col_out_cpu\" not implemented for 'Long'"):
            F.unfold(torch.ones(1, 2, 4, 4, dtype=torch.long, device=dev), 2)


def test_tensor_unfold_backward():
    torch.manual_seed(5)
    x = torch.randn(4, 9, 3)
    check(lambda x: x.unfold(1, 3, 2), x)
    check(lambda x: x.unfold(0, 2, 1), x)
    check(lambda x: x.unfold(-1, 3, 3) * 2, x.transpose(0, 2))
    check(lambda x: x.unfold(0, 1, 1), torch.tensor(3.0))


def test_max_unpool():
    torch.manual_seed(6)
    x = torch.randn(2, 3, 6, 8)
    v, i = F.max_pool2d(x, 2, stride=2, return_indices=True)
    check(lambda v: F.max_unpool2d(v, i.to(v.device), 2), v)
    check(lambda v: F.max_unpool2d(v, i.to(v.device), 2, output_size=(7, 9)), v)
    v1, i1 = F.max_pool1d(x[0], 3, stride=2, return_indices=True)
    check(lambda v: F.max_unpool1d(v, i1.to(v.device), 3, stride=2), v1)
    x3 = torch.randn(1, 2, 4, 4, 6)
    v3, i3 = F.max_pool3d(x3, 2, return_indices=True)
    check(lambda v: F.max_unpool3d(v, i3.to(v.device), 2), v3)
    # overlapping windows write one value twice: native
    tv, ti = F.max_pool2d(ties((1, 2, 5, 5)), 3, stride=1, return_indices=True)
    check(lambda v: F.max_unpool2d(v, ti.to(v.device), 3, stride=1), tv)
    # different values for one slot: which one CPU keeps varies from run to
    # run, so CPU's kernel decides (a counted fallback)
    vals = torch.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
    dup = torch.tensor([[[[5, 5], [0, 5]]]])
    torch_pjrt.reset_fallbacks()
    r = F.max_unpool2d(vals.to("tpu"), dup.to("tpu"), 2).cpu().view(-1)
    assert r[0] == 3 and r[5] in (1, 2, 4) and r.count_nonzero() == 2
    assert torch_pjrt.fallbacks() == {"aten::max_unpool2d": 1}
    bad = i.clone()
    bad[1, 2, 0, 1] = 48
    for dev in ("cpu", "tpu"):
        with pytest.raises(RuntimeError, match=r"Found an invalid max index: 48 \(output volumes are of size 6x8"):
            F.max_unpool2d(v.to(dev), bad.to(dev), 2)


# ---- margin losses and distances ------------------------------------------------------------

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_margin_losses(reduction):
    torch.manual_seed(7)
    x = torch.randn(5, 4)
    t = torch.tensor([0, 3, 1, 1, 2])
    w = torch.rand(4)
    check(lambda x: F.multi_margin_loss(x, t.to(x.device), reduction=reduction), x)
    check(lambda x: F.multi_margin_loss(x, t.to(x.device), p=2, margin=0.7, weight=w.to(x.device),
                                        reduction=reduction), x)
    # one sample: CPU's unreduced multi-margin loss is shaped like the target, () or (1,)
    for one in (t[1], t[1:2]):
        check(lambda x: F.multi_margin_loss(x, one.to(x.device), reduction=reduction), x[1])
    lt = torch.tensor([[0, 3, -1, 1], [1, 1, 2, -1], [3, 2, 1, 0], [-1, 0, 0, 0], [2, -1, 3, 3]])
    check(lambda x: F.multilabel_margin_loss(x, lt.to(x.device), reduction=reduction), x)
    check(lambda x: F.multilabel_margin_loss(x, lt[1].to(x.device), reduction=reduction), x[1])


def test_margin_loss_target_errors():
    x = torch.randn(3, 4)
    for dev in ("cpu", "tpu"):
        with pytest.raises(RuntimeError, match="target out of range"):
            F.multi_margin_loss(x.to(dev), torch.tensor([0, 4, 1], device=dev))
        with pytest.raises(RuntimeError, match="argument #2 'target' is out of range"):
            F.multilabel_margin_loss(x.to(dev), torch.tensor([[0, 5, -1, 0]] * 3, device=dev))


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 0.5, 3.0, float("inf")])
def test_cdist_pdist(p):
    torch.manual_seed(8)
    x1, x2 = torch.randn(2, 1, 4, 3), torch.randn(3, 5, 3)
    x1[0, 0, 1] = x2[0, 2]  # a zero distance
    check(lambda a, b: torch.cdist(a, b, p=p), x1, x2)
    x = torch.randn(6, 4)
    x[3] = x[1]
    check(lambda x: F.pdist(x, p=p), x)
    if p in (0.5, 2.0):
        check(lambda a, b: torch.cdist(a, b, p=p), x1.double(), x2.double(), dtype=torch.float64)


def test_distance_dtype_errors():
    for dev in ("cpu", "tpu"):
        with pytest.raises(NotImplementedError, match="\"cdist\" not implemented for 'Half'"):
            torch.cdist(torch.ones(2, 3, dtype=torch.half, device=dev), torch.ones(2, 3, dtype=torch.half, device=dev))


# ---- bicubic upsampling -----------------------------------------------------------------

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


def test_cdist_empty_rows():
    x1, x2 = torch.randn(1, 3, 5), torch.randn(0, 4, 5)
    check(lambda a, b: torch.cdist(a, b), x1, x2)
