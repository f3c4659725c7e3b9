"""Sliding blocks against PyTorch's CPU kernels: F.unfold / F.fold,
Tensor.unfold's backward and max_unpool2d/3d."""
import pytest
import torch
import torch.nn.functional as F
import torch_pjrt
from test_ops_distance import check  # noqa: F401 (shared helpers)

pytestmark = pytest.mark.usefixtures("no_leaks")


TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float64: dict(rtol=1e-9, atol=1e-9),
       torch.bfloat16: dict(rtol=2e-2, atol=2e-2), torch.float16: dict(rtol=2e-3, atol=2e-3)}


def ties(shape, dtype=torch.float32):
    """Values with many equal maxima, so indices test CPU's first-max rule."""
    g = torch.Generator().manual_seed(3)
    return torch.randint(0, 3, shape, generator=g).to(dtype)


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
