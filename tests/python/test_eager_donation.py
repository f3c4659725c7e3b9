"""Eager in-place writes into a view (slice assignment, copy_ into a slice,
in-place ops on a view) donate the storage's old buffer to the new one when
the storage's box is its only holder, so XLA updates it in place instead of
copying the whole storage per write. These tests pin what must not change:
values equal CPU's, a clone keeps the old values, views of the same storage
see the new ones, a launch still reading the old buffer reads the old values,
asynchronous failures surface at the next wait, and the device holds one
storage's bytes, not two, during a loop of writes."""
import pytest
import torch

import torch_pjrt
from torch_pjrt import _C
from conftest import run_python

pytestmark = pytest.mark.usefixtures("no_leaks", "native_only")


@pytest.fixture(autouse=True)
def donate_every_size():
    # Whole-storage in-place ops donate only storages of 1 MiB and more (a
    # smaller one is cheaper to copy on the CPU plugin); these tests use
    # small tensors, so they lower the bar and restore it.
    old = _C._set_in_place_min_bytes(0)
    yield
    _C._set_in_place_min_bytes(old)


def test_small_whole_storages_compute_into_a_fresh_buffer():
    _C._set_in_place_min_bytes(1 << 20)
    small, big = torch.zeros(64, 64, device="tpu"), torch.zeros(512, 512, device="tpu")
    before = donated()
    small.add_(1)
    assert donated() == before
    big.add_(1)
    assert donated() == before + 1
    torch.testing.assert_close(small.cpu(), torch.ones(64, 64), atol=0, rtol=0)
    torch.testing.assert_close(big.cpu(), torch.ones(512, 512), atol=0, rtol=0)


def donated() -> int:
    return torch_pjrt.metrics()["donated_buffers"]


def test_many_slice_writes_match_cpu_and_donate():
    torch.manual_seed(0)
    x_cpu = torch.randn(64, 48)
    x = x_cpu.to("tpu")
    before = donated()
    for i in range(40):
        v_cpu = torch.randn(64, 1)
        x_cpu[:, i:i + 1] = v_cpu
        x[:, i:i + 1] = v_cpu.to("tpu")
    # strided, transposed and scalar writes, and in-place ops on views
    x_cpu[::3, 1::2] = 2.5
    x[::3, 1::2] = 2.5
    x_cpu.t()[5:9, 10:20].copy_(torch.arange(40.0).reshape(4, 10))
    x.t()[5:9, 10:20].copy_(torch.arange(40.0).reshape(4, 10).to("tpu"))
    x_cpu[:, 7:11].add_(1.5)
    x[:, 7:11].add_(1.5)
    x_cpu[3:5].mul_(-2)
    x[3:5].mul_(-2)
    mask = torch.rand(64, 4) > 0.5
    x_cpu[:, 20:24].masked_fill_(mask, -7.0)
    x[:, 20:24].masked_fill_(mask.to("tpu"), -7.0)
    torch.testing.assert_close(x.cpu(), x_cpu, atol=0, rtol=0)
    # every one of these writes had x's box as its buffer's sole holder
    assert donated() - before >= 40


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.int32, torch.bool, torch.float64])
def test_slice_writes_of_other_dtypes(dtype):
    x_cpu = torch.zeros(8, 16, dtype=dtype)
    x = x_cpu.to("tpu")
    before = donated()
    for i in range(6):
        v_cpu = (torch.arange(8).reshape(8, 1) * (i + 1) % 3).to(dtype)
        x_cpu[:, 2 * i:2 * i + 2] = v_cpu
        x[:, 2 * i:2 * i + 2] = v_cpu.to("tpu")
    torch.testing.assert_close(x.cpu(), x_cpu, atol=0, rtol=0)
    assert donated() - before == 6


def test_kv_cache_writes_match_cpu():
    torch.manual_seed(1)
    cache_cpu = torch.zeros(1, 4, 32, 8)
    cache = cache_cpu.to("tpu")
    before = donated()
    for p in range(32):
        k_cpu = torch.randn(1, 4, 1, 8)
        cache_cpu[:, :, p:p + 1] = k_cpu
        cache[:, :, p:p + 1] = k_cpu.to("tpu")
        if p % 8 == 7:  # a read in between: attention over the cache so far
            s_cpu = cache_cpu[:, :, :p + 1].sum(2)
            torch.testing.assert_close(cache[:, :, :p + 1].sum(2).cpu(), s_cpu,
                                       atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(cache.cpu(), cache_cpu, atol=0, rtol=0)
    assert donated() - before == 32


def test_block_writes_at_new_positions_do_not_compile():
    cache_cpu = torch.zeros(2, 3, 40, 5)
    cache = cache_cpu.to("tpu")
    k = torch.arange(30.0).reshape(2, 3, 1, 5)
    cache[:, :, 0:1] = k.to("tpu")
    cache_cpu[:, :, 0:1] = k
    torch.tpu.synchronize()
    misses = torch_pjrt.metrics()["cache_misses"]
    for p in range(1, 40):  # the position is a run-time operand
        cache[:, :, p:p + 1] = (k + p).to("tpu")
        cache_cpu[:, :, p:p + 1] = k + p
    assert torch_pjrt.metrics()["cache_misses"] == misses
    torch.testing.assert_close(cache.cpu(), cache_cpu, atol=0, rtol=0)


def test_a_clone_keeps_the_old_values():
    x_cpu = torch.arange(48.0).reshape(6, 8)
    x = x_cpu.to("tpu")
    y = x.clone()  # shares x's buffer (buffers are immutable): no donation
    before = donated()
    x[:, 1:3] = 5.0
    assert donated() == before
    x[:, 4:6] = -1.0  # x's box now holds its own buffer
    assert donated() == before + 1
    x_cpu2 = x_cpu.clone()
    x_cpu2[:, 1:3] = 5.0
    x_cpu2[:, 4:6] = -1.0
    torch.testing.assert_close(y.cpu(), x_cpu, atol=0, rtol=0)
    torch.testing.assert_close(x.cpu(), x_cpu2, atol=0, rtol=0)


def test_views_of_the_same_storage_see_the_write():
    x_cpu = torch.arange(48.0).reshape(6, 8)
    x = x_cpu.to("tpu")
    old = x[:, 0]
    row = x[2]
    x[:, 0] = 7.0
    x_cpu[:, 0] = 7.0
    row[3:5] = torch.tensor([-1.0, -2.0], device="tpu")
    x_cpu[2, 3:5] = torch.tensor([-1.0, -2.0])
    torch.testing.assert_close(old.cpu(), x_cpu[:, 0], atol=0, rtol=0)
    torch.testing.assert_close(x.cpu(), x_cpu, atol=0, rtol=0)
    assert x._version == old._version >= 2


def test_a_write_while_a_launch_still_reads_the_storage():
    torch.manual_seed(2)
    x_cpu = torch.randn(512, 512)
    x = x_cpu.to("tpu")
    torch.tpu.synchronize()
    before = donated()
    # Launched and not waited for: these read x's buffer while the writes
    # below donate it; PJRT must run the donating writes after them.
    y = x @ x
    z = torch.tanh(x @ x.t()).sum(0)
    for i in range(8):
        x[:, i:i + 1] = float(i)
    assert donated() - before == 8  # the buffer was donated while being read
    x_new = x_cpu.clone()
    for i in range(8):
        x_new[:, i:i + 1] = float(i)
    torch.testing.assert_close(y.cpu(), x_cpu @ x_cpu, atol=1e-3, rtol=1e-4)
    torch.testing.assert_close(z.cpu(), torch.tanh(x_cpu @ x_cpu.t()).sum(0), atol=1e-3,
                               rtol=1e-4)
    torch.testing.assert_close(x.cpu(), x_new, atol=0, rtol=0)


def test_an_asynchronous_failure_surfaces_at_the_next_wait():
    x = torch.zeros(4, 4, device="tpu")
    x[:, 0] = 1.0
    torch.tpu.synchronize()
    _C._inject_async_error("tpj::write_block")
    try:
        before = donated()
        x[:, 1] = 2.0  # donated, launched; the failure comes at the wait
        assert donated() == before + 1
        with pytest.raises(RuntimeError, match=r"tpj::write_block: asynchronous execution failed"):
            torch.tpu.synchronize()
    finally:
        _C._inject_async_error("")
    expected = torch.zeros(4, 4)
    expected[:, 0] = 1.0
    expected[:, 1] = 2.0
    torch.testing.assert_close(x.cpu(), expected, atol=0, rtol=0)


def test_a_loop_of_writes_holds_one_storage():
    n = 1 << 20  # 4 MiB of float32
    x = torch.zeros(1024, 1024, device="tpu")
    v = torch.ones(1024, 1, device="tpu")
    x[:, 0:1] = v
    torch.tpu.synchronize()
    torch.tpu.reset_peak_memory_stats()
    allocated = torch.tpu.memory_allocated()
    reserved = torch.tpu.memory_reserved()
    before = donated()
    for i in range(1, 21):
        x[:, i:i + 1] = v
    torch.tpu.synchronize()
    assert donated() - before == 20
    # storages: no new one; device buffers: the new storage buffer takes the
    # old one's memory (without donation each write held two at its peak)
    assert torch.tpu.max_memory_allocated() == allocated
    assert torch.tpu.max_memory_reserved() - reserved < 4 * n // 2
    assert x[:, :21].sum().item() == 1024 * 21


def test_a_compiled_graph_that_writes_a_slice():
    def f(cache, k, y, p):
        cache[:, p:p + 1] = k
        return (cache * y).sum()

    g = torch.compile(f, backend="tpu", dynamic=False)
    c_cpu = torch.zeros(3, 5)
    c = c_cpu.to("tpu")
    y = torch.full((3, 5), 2.0, device="tpu")
    for p in [2, 4, 0]:  # graphs that differ only in the position share a program
        k_cpu = torch.full((3, 1), float(p + 1))
        r = g(c, k_cpu.to("tpu"), y, p)
        c_cpu[:, p:p + 1] = k_cpu
        torch.testing.assert_close(r.cpu(), (c_cpu * 2).sum(), atol=0, rtol=0)
        torch.testing.assert_close(c.cpu(), c_cpu, atol=0, rtol=0)
    # the graphs keep the block's start positions as constants: drop them
    del g
    torch._dynamo.reset()


def test_index_copy_and_index_put_update_the_storage_in_place():
    torch.manual_seed(3)
    cache_cpu = torch.zeros(1, 4, 16, 8)
    cache = cache_cpu.to("tpu")
    before = donated()
    for p in [3, 0, 15, 7]:
        k_cpu = torch.randn(1, 4, 1, 8)
        pos_cpu = torch.tensor([p])
        cache_cpu.index_copy_(2, pos_cpu, k_cpu)
        cache.index_copy_(2, pos_cpu.to("tpu"), k_cpu.to("tpu"))
    for p in [1, 9]:  # x[:, :, pos] = k: index_put_
        k_cpu = torch.randn(1, 4, 1, 8)
        pos_cpu = torch.tensor([p])
        cache_cpu[:, :, pos_cpu] = k_cpu
        cache[:, :, pos_cpu.to("tpu")] = k_cpu.to("tpu")
    idx = torch.tensor([2, 2, 5])  # duplicates accumulate
    src = torch.randn(1, 4, 3, 8)
    cache_cpu.index_add_(2, idx, src, alpha=0.5)
    cache.index_add_(2, idx.to("tpu"), src.to("tpu"), alpha=0.5)
    cache_cpu.index_put_((torch.tensor([0]), torch.tensor([1])), torch.tensor(4.0),
                         accumulate=True)
    cache.index_put_((torch.tensor([0], device="tpu"), torch.tensor([1], device="tpu")),
                     torch.tensor(4.0), accumulate=True)
    torch.testing.assert_close(cache.cpu(), cache_cpu, atol=1e-6, rtol=1e-6)
    assert donated() - before == 8


def test_index_ops_in_place_on_a_view_or_a_shared_buffer():
    x_cpu = torch.arange(24.0).reshape(4, 6)
    x = x_cpu.to("tpu")
    y = x.clone()  # shares the buffer: x's write must leave y alone
    before = donated()
    x.index_copy_(1, torch.tensor([4], device="tpu"), torch.full((4, 1), -1.0, device="tpu"))
    x_cpu2 = x_cpu.clone()
    x_cpu2.index_copy_(1, torch.tensor([4]), torch.full((4, 1), -1.0))
    assert donated() == before
    # a view of part of the storage is not its natural tensor: the functional path
    x[1:].index_fill_(1, torch.tensor([0], device="tpu"), 9.0)
    x_cpu2[1:].index_fill_(1, torch.tensor([0]), 9.0)
    x[:, 1:3].index_put_((torch.tensor([3], device="tpu"),), torch.tensor([7.0, 8.0],
                                                                          device="tpu"))
    x_cpu2[:, 1:3].index_put_((torch.tensor([3]),), torch.tensor([7.0, 8.0]))
    # self read as its own source: shared, not donated
    x.index_copy_(0, torch.tensor([0], device="tpu"), x[3:4].clone())
    x_cpu2.index_copy_(0, torch.tensor([0]), x_cpu2[3:4].clone())
    torch.testing.assert_close(y.cpu(), x_cpu, atol=0, rtol=0)
    torch.testing.assert_close(x.cpu(), x_cpu2, atol=0, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_scatter_in_place_updates_the_storage(dtype):
    torch.manual_seed(4)
    x_cpu = torch.randint(-5, 5, (6, 10)).to(dtype)
    x = x_cpu.to("tpu")
    index = torch.tensor([[0, 3, 9], [1, 1, 2]])
    src = torch.randint(-9, 9, (2, 3)).to(dtype)
    before = donated()
    x_cpu.scatter_(1, index, src)
    x.scatter_(1, index.to("tpu"), src.to("tpu"))
    x_cpu.scatter_(0, index[:, :2].t().contiguous(), 7)
    x.scatter_(0, index[:, :2].t().contiguous().to("tpu"), 7)
    x_cpu.scatter_add_(1, index, src)
    x.scatter_add_(1, index.to("tpu"), src.to("tpu"))
    torch.testing.assert_close(x.cpu(), x_cpu, atol=0, rtol=0)
    assert donated() - before == 3
    # a transposed (non-natural) self: the functional result, written back
    # into the storage as a view write (which donates)
    x.t().scatter_(0, index.to("tpu"), src.to("tpu"))
    x_cpu.t().scatter_(0, index, src)
    torch.testing.assert_close(x.cpu(), x_cpu, atol=0, rtol=0)
    assert donated() - before == 4


def test_launch_blocking_failure_leaves_the_storage_readable():
    code = ("import torch\n"
            "from torch_pjrt import _C\n"
            "x = torch.zeros(4, 4, device='tpu')\n"
            "x[:, 0] = 1.0\n"
            "_C._inject_async_error('tpj::write_block')\n"
            "try:\n"
            "    x[:, 1] = 2.0\n"
            "except RuntimeError as e:\n"
            "    print('AT OP:', e)\n"
            "print('SUM', x.sum().item())\n")
    r = run_python(code, env_update={"TORCH_PJRT_LAUNCH_BLOCKING": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "AT OP:" in r.stdout and "tpj::write_block" in r.stdout, r.stdout
    # the old buffer was donated: the storage holds the (injected-failure)
    # result, not a buffer that can no longer be read
    assert "SUM 12.0" in r.stdout, r.stdout


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32])
def test_masked_fill_in_place_updates_the_storage(dtype):
    torch.manual_seed(5)
    x_cpu = torch.randint(-9, 9, (6, 7)).to(dtype)
    x = x_cpu.to("tpu")
    mask = torch.rand(6, 7) > 0.5
    row_mask = torch.tensor([True, False, False, True, False, True, False])
    before = donated()
    x_cpu.masked_fill_(mask, 3)
    x.masked_fill_(mask.to("tpu"), 3)
    x_cpu.masked_fill_(row_mask, -2)  # a mask that broadcasts
    x.masked_fill_(row_mask.to("tpu"), -2)
    torch.testing.assert_close(x.cpu(), x_cpu, atol=0, rtol=0)
    assert donated() - before == 2
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        x[:1].masked_fill_(torch.ones(6, 7, dtype=torch.bool, device="tpu"), 0)
    torch.testing.assert_close(x.cpu(), x_cpu, atol=0, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
def test_elementwise_in_place_updates_the_storage(dtype):
    torch.manual_seed(6)
    x_cpu = torch.randint(-9, 9, (5, 6)).to(dtype)
    y_cpu = torch.randint(1, 9, (5, 6)).to(dtype)
    x, y = x_cpu.to("tpu"), y_cpu.to("tpu")
    before = donated()
    x_cpu.add_(y_cpu, alpha=2)
    x.add_(y, alpha=2)
    x_cpu.mul_(y_cpu[0])  # other broadcasts to self
    x.mul_(y[0])
    x_cpu.sub_(3)
    x.sub_(3)
    torch.testing.assert_close(x.cpu(), x_cpu, atol=0, rtol=0)
    assert donated() - before == 3
    x_cpu.add_(x_cpu)  # self as the other operand: read, not donated
    x.add_(x)
    assert donated() - before == 3
    torch.testing.assert_close(x.cpu(), x_cpu, atol=0, rtol=0)
    if dtype == torch.int64:
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                               "output type Long"):
            x.div_(y)
    else:
        x_cpu.div_(y_cpu)
        x.div_(y)
        torch.testing.assert_close(x.cpu(), x_cpu, atol=0, rtol=0)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        x[0].add_(y)
    torch.testing.assert_close(x.cpu(), x_cpu, atol=0, rtol=0)


def test_unary_in_place_updates_the_storage():
    x_cpu = torch.linspace(-2, 2, 24).reshape(4, 6)
    x = x_cpu.to("tpu")
    i_cpu = torch.arange(-5, 7).reshape(3, 4)
    i = i_cpu.to("tpu")
    before = donated()
    for name in ["exp_", "neg_", "sigmoid_", "tanh_"]:
        getattr(x_cpu, name)()
        getattr(x, name)()
    i_cpu.neg_()
    i.neg_()
    assert donated() - before == 5
    torch.testing.assert_close(x.cpu(), x_cpu, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(i.cpu(), i_cpu, atol=0, rtol=0)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        i.exp_()
    torch.testing.assert_close(i.cpu(), i_cpu, atol=0, rtol=0)


def test_a_loop_of_whole_tensor_updates_holds_one_storage():
    x = torch.zeros(1024, 1024, device="tpu")
    x.add_(1)
    torch.tpu.synchronize()
    torch.tpu.reset_peak_memory_stats()
    reserved = torch.tpu.memory_reserved()
    for _ in range(10):
        x.mul_(2).add_(1)
    torch.tpu.synchronize()
    assert torch.tpu.max_memory_reserved() - reserved < 4 * (1 << 20) // 2
    assert x[0, 0].item() == 2047.0


@pytest.mark.parametrize("update", ["add_", "mul_", "copy_"])
def test_a_matmul_after_an_in_place_update_reads_the_new_values(update):
    # A donated in-place write leaves the new values at the old address. The
    # CPU plugin's XNNPACK dots kept what they had packed from an argument
    # while its address stayed the same, so the second product used the
    # weight before the update (rows >= 32; the optimizer step then the
    # backward of a linear layer). Our compile options turn XNNPACK off.
    g = torch.Generator().manual_seed(0)
    w_cpu, x_cpu = torch.randn(2048, 256, generator=g), torch.randn(64, 2048, generator=g)
    w, x = w_cpu.to("tpu"), x_cpu.to("tpu")
    first = torch.mm(x, w).cpu()
    before = donated()
    if update == "add_":
        w.add_(torch.ones(2048, 256, device="tpu"))
        w_cpu.add_(1)
    elif update == "mul_":
        w.mul_(2)
        w_cpu.mul_(2)
    else:
        w.copy_(w * 3)
        w_cpu.copy_(w_cpu * 3)
    if update != "copy_":
        assert donated() == before + 1  # the case this test is about
    second = torch.mm(x, w).cpu()
    torch.testing.assert_close(second, x_cpu @ w_cpu, rtol=1e-4, atol=1e-3)
    assert not torch.equal(first, second)
