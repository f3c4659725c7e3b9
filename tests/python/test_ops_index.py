"""index_select and embedding (forward and backward) against the CPU, run
natively, with PyTorch's errors for bad indices."""
import copy

import pytest
import torch

import torch_pjrt

pytestmark = pytest.mark.usefixtures("no_leaks")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool,
                                   torch.complex64], ids=str)
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32], ids=str)
def test_index_select_matches_cpu(dtype, dim, index_dtype):
    x = (torch.randn(4, 5, 3) * 10).to(dtype)
    idx = torch.tensor([2, 0, 2, 1], dtype=index_dtype)
    torch_pjrt.reset_fallbacks()
    got = x.to("tpu").index_select(dim, idx.to("tpu")).cpu()
    assert torch.equal(got, x.index_select(dim, idx))
    assert not [k for k in torch_pjrt.fallbacks() if k.startswith("aten::index_select")]


def test_index_select_views_scalars_and_empty():
    x = torch.randn(6, 4)
    idx = torch.tensor([3, 1])
    assert torch.equal(x.t().to("tpu").t().index_select(0, idx.to("tpu")).cpu(),
                       x.index_select(0, idx))
    assert torch.equal(x.to("tpu")[::2].index_select(1, idx.to("tpu")).cpu(),
                       x[::2].index_select(1, idx))
    assert torch.equal(x.to("tpu").index_select(0, torch.tensor(4).to("tpu")).cpu(),
                       x.index_select(0, torch.tensor(4)))
    e = torch.tensor([], dtype=torch.int64)
    assert x.to("tpu").index_select(0, e.to("tpu")).shape == x.index_select(0, e).shape


def test_index_select_out_of_range_raises_like_cpu():
    x = torch.randn(3, 2)
    for bad in ([3], [-1]):
        with pytest.raises(IndexError, match="index out of range in self"):
            x.index_select(0, torch.tensor(bad))
        with pytest.raises(IndexError, match="index out of range in self"):
            x.to("tpu").index_select(0, torch.tensor(bad).to("tpu"))
    with pytest.raises(RuntimeError, match="int32 or int64"):
        x.to("tpu").index_select(0, torch.tensor([0.0]).to("tpu"))


@pytest.mark.parametrize("padding_idx", [None, 1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_embedding_forward_backward(padding_idx, dtype):
    torch.manual_seed(0)
    e = torch.nn.Embedding(10, 6, padding_idx=padding_idx, dtype=dtype)
    et = copy.deepcopy(e).to("tpu")
    idx = torch.tensor([[0, 1, 3, 3], [9, 1, 3, 0]])
    g = torch.randn(2, 4, 6, dtype=dtype)
    torch_pjrt.reset_fallbacks()
    yt = et(idx.to("tpu"))
    yc = e(idx)
    torch.testing.assert_close(yt.cpu(), yc, rtol=0, atol=0)
    (yt * g.to("tpu")).sum().backward()
    (yc * g).sum().backward()
    torch.testing.assert_close(et.weight.grad.cpu(), e.weight.grad, rtol=1e-6, atol=1e-6)
    assert torch_pjrt.fallbacks() == {}, torch_pjrt.fallbacks()


def test_embedding_scale_grad_by_freq_is_correct_and_reported():
    e = torch.nn.Embedding(5, 3, scale_grad_by_freq=True)
    et = copy.deepcopy(e).to("tpu")
    idx = torch.tensor([0, 0, 2, 4, 4, 4])
    e(idx).sum().backward()
    torch_pjrt.reset_fallbacks()
    et(idx.to("tpu")).sum().backward()
    torch.testing.assert_close(et.weight.grad.cpu(), e.weight.grad)
    assert torch_pjrt.fallbacks().get("aten::embedding_dense_backward") == 1


def test_embedding_out_of_range_raises_like_cpu():
    e = torch.nn.Embedding(4, 2).to("tpu")
    with pytest.raises(IndexError, match="index out of range in self"):
        e(torch.tensor([4]).to("tpu"))
