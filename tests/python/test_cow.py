"""Copy-on-write storages (torch._lazy_clone, PyTorch's COW): a lazy clone
shares its source's box until one of them is written; the write gives the
written tensor a box of its own (csrc box_for_write), so the other keeps its
values, and reads never materialise (issue 19, item 13)."""
import pytest
import torch

from torch._C import _is_cow_tensor as is_cow

pytestmark = pytest.mark.usefixtures("no_leaks")


def _pair():
    x = torch.arange(6.0, device="tpu")
    return x, torch._lazy_clone(x)


WRITES = {
    "add_": lambda t: t.add_(1),
    "mul_ (small, computed fresh)": lambda t: t.mul_(3),
    "slice fill_": lambda t: t[2:4].fill_(-1),
    "copy_ from the device": lambda t: t.copy_(torch.full((6,), 7.0, device=t.device)),
    "copy_ from cpu": lambda t: t.copy_(torch.full((6,), 8.0)),
    "index_put_": lambda t: t.index_put_((torch.tensor([0], device=t.device),),
                                         torch.tensor([9.0], device=t.device)),
    "zero_": lambda t: t.zero_(),
}


@pytest.mark.parametrize("which", ["clone", "source"])
@pytest.mark.parametrize("write", sorted(WRITES))
def test_writing_one_side_leaves_the_other(write, which):
    x, y = _pair()
    ref = torch.arange(6.0)
    written, other = (y, x) if which == "clone" else (x, y)
    expected = ref.clone()
    WRITES[write](expected)
    WRITES[write](written)
    torch.testing.assert_close(written.cpu(), expected)
    torch.testing.assert_close(other.cpu(), ref)
    assert not is_cow(written)


def test_reads_do_not_materialise():
    x, y = _pair()
    assert is_cow(x) and is_cow(y)
    (y * 2).sum().item()
    y.cpu()
    assert is_cow(x) and is_cow(y)


def test_batch_norm_running_stats_of_a_lazy_clone():
    # The COW check in PyTorch's test_ops (batch_norm_with_update): the
    # running statistics are written, so they materialise; the source keeps
    # its values.
    rm, rv = torch.zeros(3, device="tpu"), torch.ones(3, device="tpu")
    rmc, rvc = torch._lazy_clone(rm), torch._lazy_clone(rv)
    inp = torch.randn(4, 3)
    torch.ops.aten._batch_norm_with_update(inp.to("tpu"), None, None, rmc, rvc, 0.1, 1e-5)
    want_m, want_v = torch.zeros(3), torch.ones(3)
    torch.ops.aten._batch_norm_with_update(inp, None, None, want_m, want_v, 0.1, 1e-5)
    torch.testing.assert_close(rmc.cpu(), want_m, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(rvc.cpu(), want_v, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(rm.cpu(), torch.zeros(3))
    torch.testing.assert_close(rv.cpu(), torch.ones(3))
