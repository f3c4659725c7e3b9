"""Serialization of tpu tensors: torch.save/torch.load of tensors, modules and
optimizer state (map_location None, "tpu", "tpu:0", "tpu:1", "cpu", callables
and dicts, weights_only), storage pickling, copy.deepcopy, and safetensors
through the CPU. Values are compared exactly (bit for bit)."""
import copy
import io
import pickle

import pytest
import torch

import torch_pjrt
from conftest import assert_bitwise_equal, make, run_python

pytestmark = pytest.mark.usefixtures("no_leaks", "native_only")

D0 = "tpu:0"


def round_trip(obj, **load_kw):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, **load_kw)


DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.bool, torch.complex64]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("where", [None, "tpu", "tpu:0", "cpu"])
def test_tensor_round_trip(dtype, where):
    src = make(dtype, (3, 5), seed=1)
    x = src.to(D0)
    y = round_trip(x, map_location=where, weights_only=True)
    expect_dev = torch.device("cpu") if where == "cpu" else torch.device(D0)
    assert y.device == expect_dev and y.dtype == dtype and y.shape == (3, 5)
    assert_bitwise_equal(y.cpu(), src)


def test_cpu_tensor_loads_onto_tpu():
    src = make(torch.float32, (4, 4), seed=2)
    y = round_trip(src, map_location="tpu", weights_only=True)
    assert y.device == torch.device(D0)
    assert_bitwise_equal(y.cpu(), src)
    # map_location as a dict and as a callable, as for cuda
    y = round_trip(src, map_location={"cpu": "tpu:0"}, weights_only=True)
    assert y.device == torch.device(D0)
    z = round_trip(src.to(D0), map_location=lambda storage, loc: storage, weights_only=True)
    assert z.device.type == "cpu"
    assert_bitwise_equal(z, src)


def test_views_share_storage_after_load():
    base = torch.arange(12, dtype=torch.float32, device=D0)
    view = base[2:8].view(2, 3).t()  # a non-contiguous view with an offset
    a, b = round_trip([base, view], weights_only=True)
    assert a.device.type == "tpu" and b.device.type == "tpu"
    assert b.stride() == view.stride() and b.storage_offset() == 2
    assert a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    assert torch.equal(b.cpu(), view.cpu())
    a.add_(100)  # the loaded views still alias each other
    assert torch.equal(b.cpu(), (torch.arange(12.)[2:8] + 100).view(2, 3).t())


def test_module_and_state_dict():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2),
                            torch.nn.BatchNorm1d(2)).to(D0)
    sd = {k: v.cpu() for k, v in m.state_dict().items()}
    loaded = round_trip(m, weights_only=False)
    assert all(p.device == torch.device(D0) for p in loaded.parameters())
    for k, v in loaded.state_dict().items():
        assert_bitwise_equal(v.cpu(), sd[k])
    for where in [None, "cpu", "tpu"]:
        sd2 = round_trip(m.state_dict(), map_location=where, weights_only=True)
        for k, v in sd2.items():
            assert v.device.type == ("cpu" if where == "cpu" else "tpu"), k
            assert_bitwise_equal(v.cpu(), sd[k])
    # a CPU module loads a tpu checkpoint through map_location="cpu"
    cpu_m = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2),
                                torch.nn.BatchNorm1d(2))
    cpu_m.load_state_dict(round_trip(m.state_dict(), map_location="cpu", weights_only=True))
    x = torch.randn(5, 6)
    m.eval()
    cpu_m.eval()
    torch.testing.assert_close(m(x.to(D0)).cpu(), cpu_m(x), atol=1e-5, rtol=1e-5)


def test_optimizer_state_dict():
    torch.manual_seed(0)
    m = torch.nn.Linear(5, 3).to(D0)
    opt = torch.optim.AdamW(m.parameters(), lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        m(torch.randn(4, 5, device=D0)).pow(2).sum().backward()
        opt.step()
    sd = opt.state_dict()
    loaded = round_trip(sd, weights_only=True)
    for i, st in sd["state"].items():
        for k, v in st.items():
            assert loaded["state"][i][k].device == v.device
            assert_bitwise_equal(loaded["state"][i][k].cpu(), v.cpu())
    # resuming from the checkpoint continues exactly like the original
    m2 = torch.nn.Linear(5, 3).to(D0)
    m2.load_state_dict(round_trip(m.state_dict(), weights_only=True))
    opt2 = torch.optim.AdamW(m2.parameters(), lr=0.1)
    opt2.load_state_dict(loaded)
    x = torch.randn(4, 5, device=D0)
    for mm, oo in ((m, opt), (m2, opt2)):
        oo.zero_grad()
        mm(x).pow(2).sum().backward()
        oo.step()
    assert_bitwise_equal(m2.weight.detach().cpu(), m.weight.detach().cpu())


@pytest.mark.filterwarnings("ignore:TypedStorage is deprecated")
def test_untyped_storage_round_trip():
    x = torch.arange(10, dtype=torch.int32, device=D0)
    s2 = round_trip(x.untyped_storage(), weights_only=False)
    # torch.load gives back a uint8 TypedStorage, as it does for a CPU storage
    cpu = round_trip(x.cpu().untyped_storage(), weights_only=False)
    assert type(s2) is type(cpu) and s2.dtype == cpu.dtype == torch.uint8
    u = s2.untyped()
    assert isinstance(u, torch.UntypedStorage) and u.device == torch.device(D0)
    assert u.nbytes() == 40
    t = torch.empty(0, dtype=torch.int32, device=D0).set_(u)
    assert torch.equal(t.cpu(), torch.arange(10, dtype=torch.int32))
    assert bytes(u.cpu()) == bytes(x.cpu().untyped_storage())
    # plain pickle of a tpu tensor (what multiprocessing and deepcopy use)
    y = pickle.loads(pickle.dumps(x))
    assert y.device == torch.device(D0) and torch.equal(y.cpu(), x.cpu())


def test_deepcopy_module():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Tanh()).to(D0)
    m2 = copy.deepcopy(m)
    for p, q in zip(m.parameters(), m2.parameters()):
        assert q.device == torch.device(D0)
        assert q.untyped_storage().data_ptr() != p.untyped_storage().data_ptr()
        assert torch.equal(p.detach().cpu(), q.detach().cpu())
    with torch.no_grad():
        m2[0].weight.add_(1)
    assert not torch.equal(m[0].weight.detach().cpu(), m2[0].weight.detach().cpu())
    x = torch.randn(2, 3, device=D0, requires_grad=True)
    xc = copy.deepcopy(x)
    assert xc.requires_grad and xc.device == x.device and torch.equal(xc.cpu(), x.cpu())


def test_safetensors_through_cpu(tmp_path):
    st = pytest.importorskip("safetensors.torch")
    src = {"w": make(torch.float32, (4, 3), seed=3), "b": make(torch.bfloat16, (7,), seed=4),
           "i": torch.arange(5)}
    tensors = {k: v.to(D0) for k, v in src.items()}
    path = str(tmp_path / "m.safetensors")
    # save_file needs CPU tensors on every backend but cuda; .cpu() first
    st.save_file({k: v.cpu() for k, v in tensors.items()}, path)
    loaded = {k: v.to(D0) for k, v in st.load_file(path).items()}
    for k, v in loaded.items():
        assert v.device == torch.device(D0)
        assert_bitwise_equal(v.cpu(), src[k])
    # safetensors names its devices itself and does not know "tpu"
    with pytest.raises(Exception, match="device tpu is invalid"):
        st.load_file(path, device="tpu")
    # a state dict round trip into a tpu module
    m = torch.nn.Linear(3, 4).to(D0)
    st.save_file({k: v.detach().cpu() for k, v in m.state_dict().items()}, path)
    m2 = torch.nn.Linear(3, 4).to(D0)
    m2.load_state_dict(st.load_file(path))
    assert m2.weight.device == torch.device(D0)
    assert torch.equal(m2.weight.detach().cpu(), m.weight.detach().cpu())


def test_second_device_in_subprocess(tmp_path):
    path = str(tmp_path / "t.pt")
    code = f"""
import torch
assert torch.tpu.device_count() == 2
x = torch.arange(6, dtype=torch.float32, device="tpu:1").view(2, 3)
torch.save({{"x": x, "y": x.to("tpu:0")}}, {path!r})
d = torch.load({path!r}, weights_only=True)
assert d["x"].device == torch.device("tpu:1") and d["y"].device == torch.device("tpu:0")
d = torch.load({path!r}, map_location="tpu:1", weights_only=True)
assert d["x"].device == torch.device("tpu:1") and d["y"].device == torch.device("tpu:1")
assert torch.equal(d["y"].cpu(), torch.arange(6.).view(2, 3))
d = torch.load({path!r}, map_location={{"tpu:1": "tpu:0"}}, weights_only=True)
assert d["x"].device == torch.device("tpu:0")
assert torch.equal(d["x"].cpu(), torch.arange(6.).view(2, 3))
print("ok")
"""
    r = run_python(code, env_update={"TORCH_PJRT_CPU_DEVICES": "2"})
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-2000:]


def test_load_onto_missing_device_fails():
    buf = io.BytesIO()
    torch.save(torch.ones(2), buf)
    buf.seek(0)
    n = torch.tpu.device_count()
    with pytest.raises(RuntimeError, match=f"Attempting to deserialize object on TPU device {n} "):
        torch.load(buf, map_location=f"tpu:{n}", weights_only=True)
