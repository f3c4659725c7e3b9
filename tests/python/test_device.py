"""The tpu device itself: registration through autoload, torch.tpu,
torch.accelerator, device selection, plugin discovery and its errors."""
import importlib.util
import os

import pytest
import torch

import torch_pjrt
from conftest import run_python

# Subprocesses start from this environment without the suite's own choices
# of plugin or platform.
_PJRT_VARS = ("TORCH_PJRT_PLUGIN", "TORCH_PJRT_PLATFORM", "TORCH_PJRT_FALLBACK",
              "TORCH_DEVICE_BACKEND_AUTOLOAD")


# ---- registration ----------------------------------------------------------

def test_import_torch_alone_autoloads_tpu():
    r = run_python("import sys, torch\n"
                   "print(torch.ones(2, device='tpu') + 1)\n",
                   drop=_PJRT_VARS)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "tensor([2., 2.], device='tpu:0')"


def test_import_torch_pjrt_before_torch():
    # A user (or `python -m torch_pjrt`) may import the package first; torch's
    # autoload then finds torch_pjrt half-initialised and must still work.
    r = run_python("import torch_pjrt\nimport torch\n"
                   "print(torch.ones(2, device='tpu') * 3)\n",
                   drop=_PJRT_VARS)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "tensor([3., 3.], device='tpu:0')"


def test_autoload_disabled_leaves_tpu_unregistered():
    code = ("import sys, torch\n"
            "assert 'torch_pjrt' not in sys.modules, 'torch_pjrt was imported'\n"
            "try:\n"
            "    torch.ones(2, device='tpu')\n"
            "except RuntimeError as e:\n"
            "    print('RuntimeError:', e)\n"
            "else:\n"
            "    print('NO ERROR')\n")
    r = run_python(code, env_update={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}, drop=_PJRT_VARS)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("RuntimeError:"), r.stdout
    # PyTorch's own message for an unknown device string names it.
    assert "tpu" in r.stdout


def test_device_string_parses():
    d = torch.device("tpu")
    assert d.type == "tpu" and d.index is None
    assert torch.device("tpu:1").index == 1
    assert torch.device("privateuseone:1") == torch.device("tpu:1")


# ---- torch.tpu -------------------------------------------------------------

def test_torch_tpu_basics():
    assert torch.tpu.is_available() is True
    assert torch.tpu.device_count() == 2
    assert torch.tpu.current_device() == 0
    assert torch.tpu.is_initialized()


def test_set_device_changes_default_tensor_device():
    assert torch.tpu.current_device() == 0
    try:
        torch.tpu.set_device(1)
        assert torch.tpu.current_device() == 1
        x = torch.ones(3, device="tpu")
        assert x.device == torch.device("tpu:1")
        assert torch.equal(x.cpu(), torch.ones(3))
        torch.tpu.set_device("tpu:0")
        assert torch.tpu.current_device() == 0
        torch.tpu.set_device(torch.device("tpu", 1))
        assert torch.tpu.current_device() == 1
    finally:
        torch.tpu.set_device(0)
    assert torch.tpu.current_device() == 0
    assert torch.ones(1, device="tpu").device == torch.device("tpu:0")


def test_device_context_manager_nested_restores():
    assert torch.tpu.current_device() == 0
    with torch.tpu.device(1):
        assert torch.tpu.current_device() == 1
        assert torch.empty(1, device="tpu").device.index == 1
        with torch.tpu.device(0):
            assert torch.tpu.current_device() == 0
            assert torch.empty(1, device="tpu").device.index == 0
            with torch.tpu.device("tpu:1"):
                assert torch.tpu.current_device() == 1
            assert torch.tpu.current_device() == 0
        assert torch.tpu.current_device() == 1
    assert torch.tpu.current_device() == 0


def test_device_context_manager_restores_on_exception():
    with pytest.raises(ValueError, match="boom"):
        with torch.tpu.device(1):
            assert torch.tpu.current_device() == 1
            raise ValueError("boom")
    assert torch.tpu.current_device() == 0


def test_torch_device_as_context_manager():
    with torch.device("tpu:1"):
        x = torch.zeros(2)
    assert x.device == torch.device("tpu:1")
    assert torch.equal(x.cpu(), torch.zeros(2))


def test_synchronize():
    x = torch.arange(6, dtype=torch.float32).to("tpu:1") * 2
    torch.tpu.synchronize()
    torch.tpu.synchronize(1)
    torch.tpu.synchronize("tpu:1")
    torch.tpu.synchronize(torch.device("tpu:0"))
    assert torch.equal(x.cpu(), torch.arange(6, dtype=torch.float32) * 2)
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.tpu.synchronize(5)


def test_accelerator():
    assert torch.accelerator.is_available()
    assert torch.accelerator.current_accelerator() == torch.device("tpu")
    assert torch.accelerator.device_count() == 2
    assert torch.accelerator.current_device_index() == 0
    try:
        torch.accelerator.set_device_index(1)
        assert torch.tpu.current_device() == 1
        assert torch.accelerator.current_device_index() == 1
    finally:
        torch.accelerator.set_device_index(0)
    assert torch.tpu.current_device() == 0
    torch.accelerator.synchronize()


# ---- tensor.tpu(), is_tpu, module.tpu() --------------------------------------

def test_tensor_tpu_method_and_is_tpu():
    x = torch.arange(5)
    assert x.is_tpu is False
    y = x.tpu()
    assert y.is_tpu is True
    assert y.device == torch.device("tpu:0")
    assert torch.equal(y.cpu(), x)
    z = x.tpu(1)
    assert z.device == torch.device("tpu:1")
    assert torch.equal(z.cpu(), x)
    assert y.cpu().is_tpu is False


def test_module_tpu_moves_parameters_and_buffers():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    ref = {k: v.clone() for k, v in m.state_dict().items()}
    out = m.tpu()
    assert out is m
    for name, p in m.named_parameters():
        assert p.device == torch.device("tpu:0"), name
        assert isinstance(p, torch.nn.Parameter)
        assert torch.equal(p.detach().cpu(), ref[name]), name
    for name, b in m.named_buffers():
        assert b.device == torch.device("tpu:0"), name
        assert torch.equal(b.cpu(), ref[name]), name
    m.to("tpu:1")
    assert all(p.device == torch.device("tpu:1") for p in m.parameters())
    m.cpu()
    for k, v in m.state_dict().items():
        assert torch.equal(v, ref[k]), k


# ---- invalid ordinals --------------------------------------------------------

def test_set_device_invalid_ordinal():
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.tpu.set_device(5)
    assert torch.tpu.current_device() == 0


def test_tensor_on_invalid_ordinal():
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.ones(1, device="tpu:7")
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.ones(1).to("tpu:2")
    assert torch.tpu.current_device() == 0


def test_device_context_invalid_ordinal():
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        with torch.tpu.device(3):
            pass
    assert torch.tpu.current_device() == 0


# ---- python -m torch_pjrt info ---------------------------------------------

def test_cli_info(tmp_path):
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in _PJRT_VARS}
    env["TORCH_PJRT_CPU_DEVICES"] = "2"
    env["TORCH_PJRT_CACHE_DIR"] = str(tmp_path / "cachedir")
    r = subprocess.run([sys.executable, "-m", "torch_pjrt", "info"], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout
    plugin = torch_pjrt.plugin()["path"]
    assert plugin and plugin in out
    assert os.path.isfile(plugin)
    lines = {ln.split(None, 1)[0]: ln for ln in out.splitlines() if ln.strip()}
    assert lines["platform"].split()[1] == "cpu", out
    info = torch_pjrt.info()
    major, minor = info["pjrt_api_version"]
    assert "PJRT C API" in out and f"{major}.{minor}" in out
    assert lines["devices"].split()[-1] == "2", out
    assert "tpu:0" in out and "tpu:1" in out
    assert torch.__version__ in out
    assert "client options   cpu_device_count=2" in out, out
    assert str(tmp_path / "cachedir") in out


def test_info_dict():
    d = torch_pjrt.info()
    assert d["platform"] == "cpu"
    assert d["plugin_path"] == torch_pjrt.plugin()["path"]
    assert [dev["index"] for dev in d["devices"]] == [0, 1]
    assert d["torch_version"] == torch.__version__
    assert len(d["pjrt_api_version"]) == 2 and d["pjrt_api_version"][0] >= 0


# ---- plugin discovery errors ---------------------------------------------------

def test_missing_plugin_path_errors_at_first_use():
    code = ("import torch\n"
            "print('imported')\n"
            "print('available', torch.tpu.is_available(), torch.tpu.device_count())\n"
            "try:\n"
            "    torch.ones(2, device='tpu')\n"
            "except RuntimeError as e:\n"
            "    print('RuntimeError:', e)\n"
            "else:\n"
            "    print('NO ERROR')\n")
    r = run_python(code, env_update={"TORCH_PJRT_PLUGIN": "/nonexistent"}, drop=_PJRT_VARS)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.splitlines()
    assert lines[0] == "imported"
    assert lines[1] == "available False 0"
    assert lines[2].startswith("RuntimeError:"), r.stdout
    assert "TORCH_PJRT_PLUGIN" in lines[2] and "/nonexistent" in lines[2]
    assert "does not exist" in lines[2]


@pytest.mark.skipif(importlib.util.find_spec("libtpu") is not None,
                    reason="libtpu is installed here")
def test_platform_tpu_without_libtpu_says_how_to_fix():
    code = ("import torch\n"
            "print('imported')\n"
            "try:\n"
            "    torch.ones(2, device='tpu')\n"
            "except RuntimeError as e:\n"
            "    print('RuntimeError:', e)\n"
            "else:\n"
            "    print('NO ERROR')\n")
    r = run_python(code, env_update={"TORCH_PJRT_PLATFORM": "tpu"}, drop=_PJRT_VARS)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.splitlines()
    assert lines[0] == "imported"
    assert lines[1].startswith("RuntimeError:"), r.stdout
    assert "pip install libtpu" in lines[1]


# ---- a quiet terminal; settings that fail at first use, not at import ----------

_QUIET = """
import torch
x = torch.arange(6.0, device="tpu").reshape(2, 3)
f = torch.compile(lambda a: (a.sin() + 1).sum(), backend="tpu")
print(float((x * 2).sum()), float(f(x)))
# An optimizer step inside a compiled function enters record_function,
# which Dynamo announces it ignores.
m = torch.nn.Linear(3, 3).to("tpu")
opt = torch.optim.AdamW(m.parameters())
@torch.compile(backend="tpu")
def step(a):
    m(a).sum().backward()
    opt.step()
    opt.zero_grad()
step(x)
torch.tpu.synchronize()
"""


def test_stderr_is_quiet(tmp_path):
    """A small op, a compiled function and a compiled optimizer step print
    nothing to stderr: the plugin's absl log lines (client creation) are off
    by default, and so is Dynamo's notice that it ignores record_function."""
    r = run_python(_QUIET, env_update={"TORCH_PJRT_CACHE_DIR": str(tmp_path)},
                   drop=("TF_CPP_MIN_LOG_LEVEL", "TORCH_PJRT_PLUGIN_LOG"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.startswith("30.0 "), r.stdout
    assert r.stderr == ""


def test_plugin_log_env_turns_plugin_logging_on(tmp_path):
    r = run_python(_QUIET, env_update={"TORCH_PJRT_CACHE_DIR": str(tmp_path),
                                       "TORCH_PJRT_PLUGIN_LOG": "1"},
                   drop=("TF_CPP_MIN_LOG_LEVEL",))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "cpu_device_count" in r.stderr  # the CPU plugin's own INFO line


@pytest.mark.parametrize("var,value,message", [
    ("TORCH_PJRT_CPU_DEVICES", "16000", "TORCH_PJRT_CPU_DEVICES=16000 must be between 1 and 256"),
    ("TORCH_PJRT_CPU_DEVICES", "0", "TORCH_PJRT_CPU_DEVICES=0 must be between 1 and 256"),
    ("TORCH_PJRT_CPU_DEVICES", "abc", "TORCH_PJRT_CPU_DEVICES='abc' is not an integer"),
    ("TORCH_PJRT_CACHE_SIZE", "0", "TORCH_PJRT_CACHE_SIZE=0 must be between 1 and"),
    ("TORCH_PJRT_CACHE_SIZE", "-1", "TORCH_PJRT_CACHE_SIZE=-1 must be between 1 and"),
    ("TORCH_PJRT_CACHE_SIZE", "abc", "TORCH_PJRT_CACHE_SIZE='abc' is not an integer"),
])
def test_bad_setting_fails_first_use_not_import(var, value, message):
    code = ("import torch\n"
            "print(torch.ones(2).sum().item())\n"  # CPU-only code is unaffected
            "print(torch.tpu.is_available())\n"
            "try:\n"
            "    torch.ones(1, device='tpu')\n"
            "except RuntimeError as e:\n"
            "    print('ERR', e)\n")
    r = run_python(code, env_update={var: value})
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.splitlines()
    assert lines[0] == "2.0" and lines[1] == "False", r.stdout
    assert lines[2].startswith("ERR") and message in lines[2], r.stdout


def test_gpu_client_options(monkeypatch):
    """The XLA CUDA plugin's create options (checked here without a GPU):
    grow on demand by default, the fraction and allocator from the env."""
    from torch_pjrt import _plugin

    for v in ("TORCH_PJRT_GPU_MEMORY_FRACTION", "TORCH_PJRT_GPU_PREALLOCATE",
              "TORCH_PJRT_GPU_ALLOCATOR"):
        monkeypatch.delenv(v, raising=False)
    assert _plugin.create_options("cuda") == [
        ("allocator", "bfc"), ("memory_fraction", 0.9), ("preallocate", False)]
    monkeypatch.setenv("TORCH_PJRT_GPU_MEMORY_FRACTION", "0.5")
    monkeypatch.setenv("TORCH_PJRT_GPU_PREALLOCATE", "1")
    monkeypatch.setenv("TORCH_PJRT_GPU_ALLOCATOR", "platform")
    assert _plugin.create_options("cuda") == [
        ("allocator", "platform"), ("memory_fraction", 0.5), ("preallocate", True)]
    monkeypatch.setenv("TORCH_PJRT_GPU_MEMORY_FRACTION", "1.5")
    with pytest.raises(ValueError, match=r"TORCH_PJRT_GPU_MEMORY_FRACTION=1.5 must be between"):
        _plugin.create_options("cuda")
    monkeypatch.setenv("TORCH_PJRT_GPU_MEMORY_FRACTION", "0.5")
    monkeypatch.setenv("TORCH_PJRT_GPU_ALLOCATOR", "magic")
    with pytest.raises(ValueError, match="TORCH_PJRT_GPU_ALLOCATOR='magic' is not one of"):
        _plugin.create_options("cuda")
    assert _plugin.create_options("tpu") == []
