"""Several tpu devices: TORCH_PJRT_CPU_DEVICES=N gives tpu:0..N-1 (the suite
runs with 2; one test starts an interpreter with 3)."""
import pytest
import torch

from conftest import run_python


def test_env_var_sets_device_count():
    code = ("import torch\n"
            "print(torch.tpu.device_count(), torch.accelerator.device_count())\n"
            "with torch.tpu.device(2):\n"
            "    x = torch.arange(4.0, device='tpu') + 1\n"
            "print(x.device, x.cpu().tolist())\n"
            "print(torch.ones(1, device='tpu:2').to('tpu:0').device)\n")
    r = run_python(code, env_update={"TORCH_PJRT_CPU_DEVICES": "3"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split("\n")[:3] == ["3 3", "tpu:2 [1.0, 2.0, 3.0, 4.0]", "tpu:0"]


def test_device_context_creates_on_current_device(no_leaks):
    with torch.tpu.device(1):
        assert torch.tpu.current_device() == 1
        a = torch.ones(3, device="tpu")
        b = torch.randn(3, device="tpu")
        c = torch.zeros(2, 2).to("tpu")
        d = a + 1
    assert torch.tpu.current_device() == 0
    for t in (a, b, c, d):
        assert t.device == torch.device("tpu:1")
    assert torch.ones(1, device="tpu").device == torch.device("tpu:0")
    assert torch.equal(d.cpu(), torch.full((3,), 2.0))


def test_copies_between_devices(no_leaks):
    cpu = torch.randn(5, 7)
    x0 = cpu.to("tpu:0")
    x1 = x0.to("tpu:1")
    assert x1.device == torch.device("tpu:1")
    back = x1.to("tpu:0")
    torch.testing.assert_close(back.cpu(), cpu, atol=0, rtol=0)
    # copy_ into a view on the other device, and a non-contiguous source
    dst = torch.zeros(7, 5, device="tpu:1")
    dst[1:4].copy_(x0.t()[1:4])
    expected = torch.zeros(7, 5)
    expected[1:4] = cpu.t()[1:4]
    torch.testing.assert_close(dst.cpu(), expected, atol=0, rtol=0)
    # ops run on the operands' device, whatever the current device is
    with torch.tpu.device(0):
        y = x1 * 2
    assert y.device == torch.device("tpu:1")
    torch.testing.assert_close(y.cpu(), cpu * 2, atol=0, rtol=0)


def test_mixing_devices_raises(no_leaks):
    a = torch.ones(3, device="tpu:0")
    b = torch.ones(3, device="tpu:1")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        a + b
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.mm(a.view(3, 1), b.view(1, 3))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        a + torch.ones(3)


def test_per_device_synchronize_and_streams(no_leaks):
    x1 = torch.randn(64, 64, device="tpu:1")
    y1 = x1 @ x1
    s1 = torch.tpu.current_stream(1)
    assert s1.device_index == 1
    s1.synchronize()
    assert s1.query()
    torch.tpu.synchronize(1)
    torch.testing.assert_close(y1.cpu(), x1.cpu() @ x1.cpu(), atol=1e-4, rtol=1e-4)


def test_module_to_other_device(no_leaks):
    torch.manual_seed(0)
    m = torch.nn.Linear(4, 3)
    inp = torch.randn(2, 4)
    ref = m(inp)
    m1 = m.to("tpu:1")
    assert all(p.device == torch.device("tpu:1") for p in m1.parameters())
    out = m1(inp.to("tpu:1"))
    assert out.device == torch.device("tpu:1")
    torch.testing.assert_close(out.cpu(), ref, atol=1e-5, rtol=1e-5)


SAME_DEVICE = "Expected all tensors to be on the same device"


@pytest.mark.parametrize("case", ["index_select", "embedding", "index_put", "gather", "index"])
def test_index_on_another_device_raises(case):
    # Issue 19, item 6: indices on tpu:1 for data on tpu:0 raise CUDA's
    # same-device error instead of being copied over silently.
    data = torch.arange(10.0).reshape(5, 2).to("tpu:0")
    idx = torch.tensor([1, 3], device="tpu:1")
    fns = {
        "index_select": lambda: data.index_select(0, idx),
        "embedding": lambda: torch.nn.functional.embedding(idx, data),
        "index_put": lambda: data.index_put_((idx,), torch.zeros(2, 2, device="tpu:0")),
        "gather": lambda: data.gather(0, idx.view(2, 1).expand(2, 2)),
        "index": lambda: data[idx],
    }
    with pytest.raises(RuntimeError, match=SAME_DEVICE):
        fns[case]()
    # CPU indices stay accepted, as on CUDA
    torch.testing.assert_close(data.index_select(0, idx.cpu()).cpu(),
                               data.cpu().index_select(0, idx.cpu()))
