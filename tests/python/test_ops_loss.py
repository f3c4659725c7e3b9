"""The losses against the CPU, forward and backward, natively: nll_loss (and
so cross_entropy, also over spatial targets: nll_loss2d) with CPU's error
for an out-of-range target; mse, smooth_l1, huber, binary_cross_entropy
(with logits too); the multi and multilabel margin losses."""
import pytest
import torch
import torch.nn.functional as F

import torch_pjrt
import copy
from conftest import assert_bitwise_equal, make
from _op_check import NativeOnly, check_close
from test_ops_activation import _pair  # noqa: F401 (shared helpers)
from test_ops_distance import check  # noqa: F401 (shared helpers)

pytestmark = pytest.mark.usefixtures("no_leaks")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_cross_entropy_matches_cpu(reduction, weighted, dtype):
    torch.manual_seed(0)
    x = torch.randn(7, 5, dtype=dtype)
    t = torch.tensor([0, 4, 2, -100, 1, 4, 3])
    w = torch.rand(5, dtype=dtype) if weighted else None
    xc, xt = x.clone().requires_grad_(), x.to("tpu").requires_grad_()
    torch_pjrt.reset_fallbacks()
    lt = F.cross_entropy(xt, t.to("tpu"), weight=None if w is None else w.to("tpu"),
                         reduction=reduction)
    lc = F.cross_entropy(xc, t, weight=w, reduction=reduction)
    tol = dict(rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(lt.cpu(), lc, **tol)
    g = torch.randn(lc.shape, dtype=dtype)
    (lt * g.to("tpu")).sum().backward()
    (lc * g).sum().backward()
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, **tol)
    assert torch_pjrt.fallbacks() == {}, torch_pjrt.fallbacks()


def test_nll_loss_single_sample_and_ignore_index():
    x = torch.randn(4).log_softmax(0)
    for target in (torch.tensor(2), torch.tensor(-100)):
        torch.testing.assert_close(F.nll_loss(x.to("tpu"), target.to("tpu")).cpu(),
                                   F.nll_loss(x, target), rtol=1e-6, atol=1e-6, equal_nan=True)
    x = torch.randn(3, 4).log_softmax(1)
    t = torch.tensor([1, 2, 1])
    torch.testing.assert_close(F.nll_loss(x.to("tpu"), t.to("tpu"), ignore_index=1).cpu(),
                               F.nll_loss(x, t, ignore_index=1), rtol=1e-6, atol=1e-6)


def test_nll_loss_target_out_of_range_raises_like_cpu():
    x = torch.randn(3, 4)
    t = torch.tensor([0, 4, 1])
    with pytest.raises(IndexError, match="Target 4 is out of bounds"):
        F.cross_entropy(x, t)
    with pytest.raises(IndexError, match="Target 4 is out of bounds"):
        F.cross_entropy(x.to("tpu"), t.to("tpu"))


TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float64: dict(rtol=1e-9, atol=1e-9),
       torch.bfloat16: dict(rtol=2e-2, atol=2e-2), torch.float16: dict(rtol=2e-3, atol=2e-3)}


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


TOL_norm = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float64: dict(rtol=1e-10, atol=1e-10),
       torch.float16: dict(rtol=1e-2, atol=1e-2), torch.bfloat16: dict(rtol=2e-2, atol=2e-2)}


def _native():
    assert torch_pjrt.fallbacks() == {}, f"fell back to the CPU: {torch_pjrt.fallbacks()}"


LOSSES = [
    ("mse", lambda x, t, r: F.mse_loss(x, t, reduction=r)),
    ("smooth_l1", lambda x, t, r: F.smooth_l1_loss(x, t, reduction=r, beta=0.7)),
    ("smooth_l1_beta0", lambda x, t, r: F.smooth_l1_loss(x, t, reduction=r, beta=0.0)),
    ("huber", lambda x, t, r: F.huber_loss(x, t, reduction=r, delta=0.6)),
]


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("name,fn", LOSSES, ids=[n for n, _ in LOSSES])
def test_regression_losses(name, fn, reduction):
    torch.manual_seed(5)
    x = torch.randn(4, 5)
    t = torch.randn(4, 5)
    t[0, :2] = x[0, :2] + torch.tensor([0.7, -0.6])  # the branch points
    xc, xt = _pair(x)
    torch_pjrt.reset_fallbacks()
    lc, lt = fn(xc, t, reduction), fn(xt, t.to("tpu"), reduction)
    assert lt.shape == lc.shape
    torch.testing.assert_close(lt.cpu(), lc, **TOL_norm[torch.float32])
    g = torch.randn(lc.shape)
    (lc * g).sum().backward()
    (lt * g.to("tpu")).sum().backward()
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, **TOL_norm[torch.float32])
    if name == "smooth_l1_beta0":
        # beta == 0 is l1_loss, which PyTorch decomposes into abs, sub and
        # mean, and its gradient into sgn (not yet native: elementwise family)
        assert set(torch_pjrt.fallbacks()) <= {"aten::sgn.out"}
    else:
        _native()


def test_mse_loss_bf16_and_target_grad():
    x = torch.randn(3, 7, dtype=torch.bfloat16)
    t = torch.randn(3, 7, dtype=torch.bfloat16)
    xc, xt = _pair(x)
    tc, tt = _pair(t)
    torch_pjrt.reset_fallbacks()
    lc, lt = F.mse_loss(xc, tc), F.mse_loss(xt, tt)
    torch.testing.assert_close(lt.cpu(), lc, **TOL_norm[torch.bfloat16])
    lc.backward()
    lt.backward()
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, **TOL_norm[torch.bfloat16])
    torch.testing.assert_close(tt.grad.cpu(), tc.grad, **TOL_norm[torch.bfloat16])
    _native()


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy(reduction, weighted):
    torch.manual_seed(6)
    x = torch.rand(4, 5)
    x[0, 0], x[0, 1] = 0.0, 1.0  # log clamped at -100 on CPU
    t = torch.rand(4, 5)
    w = torch.rand(4, 5) if weighted else None
    xc, xt = _pair(x)
    torch_pjrt.reset_fallbacks()
    lc = F.binary_cross_entropy(xc, t, w, reduction=reduction)
    lt = F.binary_cross_entropy(xt, t.to("tpu"), None if w is None else w.to("tpu"),
                                reduction=reduction)
    torch.testing.assert_close(lt.cpu(), lc, **TOL_norm[torch.float32])
    g = torch.randn(lc.shape)
    (lc * g).sum().backward()
    (lt * g.to("tpu")).sum().backward()
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, rtol=1e-5, atol=1e-3)
    _native()


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_binary_cross_entropy_with_logits(reduction):
    torch.manual_seed(9)
    x = torch.randn(4, 5) * 5
    t = torch.rand(4, 5)
    w, pw = torch.rand(4, 5), torch.rand(5) + 0.5
    for kw in ({}, {"weight": w, "pos_weight": pw}):
        xc, xt = _pair(x)
        torch_pjrt.reset_fallbacks()
        lc = F.binary_cross_entropy_with_logits(xc, t, reduction=reduction, **kw)
        lt = F.binary_cross_entropy_with_logits(xt, t.to("tpu"), reduction=reduction,
                                                **{k: v.to("tpu") for k, v in kw.items()})
        torch.testing.assert_close(lt.cpu(), lc, **TOL_norm[torch.float32])
        g = torch.randn(lc.shape)
        (lc * g).sum().backward()
        (lt * g.to("tpu")).sum().backward()
        torch.testing.assert_close(xt.grad.cpu(), xc.grad, **TOL_norm[torch.float32])
        _native()


def test_loss_errors_match_cpu():
    x, t = torch.rand(3), torch.rand(3)
    for dev in ("cpu", "tpu"):
        xd, td = x.to(dev), t.to(dev)
        with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
            F.binary_cross_entropy(xd * 2 + 1, td)
        with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
            F.binary_cross_entropy(torch.full_like(xd, float("nan")), td)
        with pytest.raises(RuntimeError, match="huber_loss does not support non-positive"):
            F.huber_loss(xd, td, delta=0.0)
        with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative"):
            F.smooth_l1_loss(xd, td, beta=-1.0)
        with pytest.raises(RuntimeError, match="The size of tensor a"):
            torch.ops.aten.mse_loss(xd, torch.rand(4).to(dev), 1)
