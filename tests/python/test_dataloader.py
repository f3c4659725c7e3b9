"""Pinned host memory and data loading for tpu: tensor.pin_memory() and
is_pinned(), DataLoader(pin_memory=True) (in-process and with forked
workers, after the parent used tpu) feeding a tpu model, and non_blocking
host-to-device copies that give the right values."""
import pytest
import torch
from torch.utils.data import DataLoader, Dataset, TensorDataset

import torch_pjrt
from conftest import assert_bitwise_equal, make

pytestmark = pytest.mark.usefixtures("no_leaks", "native_only")

D0 = "tpu:0"


def test_pin_memory_and_is_pinned():
    x = make(torch.float32, (7, 5), seed=1, specials=False)
    assert not x.is_pinned()
    p = x.pin_memory()
    assert p.is_pinned() and p.device.type == "cpu"
    assert p.data_ptr() != x.data_ptr() and torch.equal(p, x)
    assert p.pin_memory() is p  # already pinned: no copy
    # views of pinned memory are pinned; a copy of it is not
    assert p[2:].is_pinned() and p.t().is_pinned()
    assert not p.clone().is_pinned()
    # pinned allocation at creation, and of every dtype
    e = torch.empty(3, 4, pin_memory=True)
    assert e.is_pinned()
    for dt in (torch.bfloat16, torch.int8, torch.bool, torch.complex64):
        assert torch.zeros(5, dtype=dt).pin_memory().is_pinned()
    # a zero-size tensor pins too
    assert torch.empty(0).pin_memory().numel() == 0
    # tpu tensors cannot be pinned, as cuda tensors cannot
    with pytest.raises(RuntimeError, match="only CPU tensors can be pinned|cannot be pinned"):
        torch.empty(3, device=D0, pin_memory=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool],
                         ids=str)
def test_non_blocking_copies_are_correct(dtype):
    src = make(dtype, (33, 17), seed=2).pin_memory()
    d = src.to(D0, non_blocking=True)
    d2 = src[:, 3:9].to(D0, non_blocking=True)  # a strided source
    dst = torch.zeros(33, 17, dtype=dtype, device=D0)
    dst[1:4].copy_(src[10:13], non_blocking=True)  # into a view of a tpu tensor
    torch.tpu.synchronize()
    assert_bitwise_equal(d.cpu(), src)
    assert_bitwise_equal(d2.cpu(), src[:, 3:9].contiguous())
    exp = torch.zeros(33, 17, dtype=dtype)
    exp[1:4] = src[10:13]
    assert_bitwise_equal(dst.cpu(), exp)
    # device to host into pinned memory, non_blocking, read after a sync
    back = torch.empty(33, 17, dtype=dtype, pin_memory=True)
    back.copy_(d, non_blocking=True)
    torch.tpu.synchronize()
    assert_bitwise_equal(back, src)
    # an unpinned source with non_blocking=True is also fine
    assert_bitwise_equal(make(dtype, (4,), seed=3).to(D0, non_blocking=True).cpu(),
                         make(dtype, (4,), seed=3))


def test_non_blocking_source_freed_before_the_copy_finishes():
    # the pinned source is a temporary, gone as soon as .to() returns: the
    # upload keeps it alive until the device has read it
    n = 1 << 20
    outs = [torch.arange(n, dtype=torch.float32).add_(i).pin_memory().to(D0, non_blocking=True)
            for i in range(4)]
    junk = [torch.full((n,), -1.0).pin_memory() for _ in range(4)]  # reuse the freed blocks
    torch.tpu.synchronize()
    for i, o in enumerate(outs):
        assert torch.equal(o.cpu(), torch.arange(n, dtype=torch.float32) + i)
    del junk


def _train(loader, steps_expected):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                torch.nn.Linear(16, 3)).to(D0)
    opt = torch.optim.SGD(model.parameters(), lr=0.5, foreach=False)
    losses, steps = [], 0
    for epoch in range(4):
        total = 0.0
        for x, y in loader:
            assert x.is_pinned() and y.is_pinned()
            x = x.to(D0, non_blocking=True)
            y = y.to(D0, non_blocking=True)
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            total += loss.item()
            steps += 1
        losses.append(total)
    assert steps == steps_expected
    assert losses[-1] < 0.7 * losses[0], losses
    return model


def _dataset():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(96, 8, generator=g)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 1).long()
    return TensorDataset(x, y)


def test_dataloader_pinned_in_process():
    loader = DataLoader(_dataset(), batch_size=16, shuffle=True, pin_memory=True)
    _train(loader, steps_expected=4 * 6)


class _Squares(Dataset):
    """Builds its samples in the worker (CPU only)."""

    def __len__(self):
        return 40

    def __getitem__(self, i):
        return torch.full((4,), float(i)), torch.tensor(i * i)


def test_dataloader_forked_workers_after_tpu_use():
    # the parent has used tpu; forked workers only make CPU tensors, and
    # their torch.manual_seed must not touch tpu
    anchor = torch.ones(2, device=D0)
    loader = DataLoader(_Squares(), batch_size=8, num_workers=2, pin_memory=True,
                        multiprocessing_context="fork")
    seen = []
    for x, y in loader:
        assert x.is_pinned() and y.is_pinned()
        xt = x.to(D0, non_blocking=True)
        seen.append((xt[:, 0].cpu(), y.to(D0).cpu()))
    xs = torch.cat([s[0] for s in seen])
    ys = torch.cat([s[1] for s in seen])
    assert torch.equal(xs, torch.arange(40.0)) and torch.equal(ys, torch.arange(40) ** 2)
    assert torch.equal(anchor.cpu(), torch.ones(2))


def test_dataloader_training_with_workers():
    loader = DataLoader(_dataset(), batch_size=32, num_workers=2, pin_memory=True,
                        multiprocessing_context="fork", persistent_workers=True)
    _train(loader, steps_expected=4 * 3)
