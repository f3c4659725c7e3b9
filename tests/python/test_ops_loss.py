"""nll_loss (and so cross_entropy) forward and backward against the CPU,
natively, with CPU's error for an out-of-range target."""
import pytest
import torch
import torch.nn.functional as F

import torch_pjrt

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
