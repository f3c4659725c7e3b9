"""TORCH_PJRT_VISIBLE_DEVICES, as CUDA_VISIBLE_DEVICES: the plugin's devices a
process sees, renumbered tpu:0.. in the order named. Each case runs in a
fresh interpreter (the setting is read when torch_pjrt loads) on the CPU
plugin with four devices, whose descriptions name the plugin's index
(TFRT_CPU_<n>)."""
import json

import pytest

import torch_pjrt
from conftest import run_python

pytestmark = pytest.mark.skipif(torch_pjrt.plugin()["platform"] != "cpu",
                                reason="the CPU plugin's device count is set by the test")

SHOW = """
import json, torch, torch_pjrt
devs = torch_pjrt._C._info()["devices"]
x = torch.arange(6.0, device=f"tpu:{torch.tpu.device_count() - 1}") * 2
print(json.dumps({"count": torch.tpu.device_count(), "current": torch.tpu.current_device(),
                  "names": [d["description"] for d in devs], "sum": x.sum().item()}))
"""


def _run(value, code=SHOW):
    env = {"TORCH_PJRT_CPU_DEVICES": "4"}
    drop = ()
    if value is None:
        drop = ("TORCH_PJRT_VISIBLE_DEVICES",)
    else:
        env["TORCH_PJRT_VISIBLE_DEVICES"] = value
    return run_python(code, env_update=env, drop=drop)


@pytest.mark.parametrize("value, names", [
    (None, ["TFRT_CPU_0", "TFRT_CPU_1", "TFRT_CPU_2", "TFRT_CPU_3"]),
    ("2,3", ["TFRT_CPU_2", "TFRT_CPU_3"]),
    ("3, 1", ["TFRT_CPU_3", "TFRT_CPU_1"]),
    ("1", ["TFRT_CPU_1"]),
])
def test_the_named_devices_become_tpu_0_onwards(value, names):
    r = _run(value)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got == {"count": len(names), "current": 0, "names": names, "sum": 30.0}


def test_an_empty_list_hides_every_device():
    r = _run("", "import torch, torch_pjrt; print(torch.tpu.device_count(), torch.tpu.is_available())")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["0", "False"]


@pytest.mark.parametrize("value, message", [
    ("0,a", "TORCH_PJRT_VISIBLE_DEVICES='0,a' is not a comma-separated list of device indices"),
    ("1,1", "TORCH_PJRT_VISIBLE_DEVICES='1,1' names device 1 twice"),
    ("2,7", "TORCH_PJRT_VISIBLE_DEVICES=2,7: device 7 does not exist: the plugin has 4 devices (0-3)"),
])
def test_a_bad_setting_fails_the_first_tpu_use_not_the_import(value, message):
    # as any bad TORCH_PJRT_* setting: `import torch` works, the first tpu
    # use raises RuntimeError (device_count() is then 0, as CUDA's is)
    code = ("import torch, torch_pjrt\n"
            "try:\n"
            "    torch.ones(1, device='tpu')\n"
            "except Exception as e:\n"
            "    print(type(e).__name__, '|', e)\n"
            "print(torch.tpu.device_count())\n")
    r = _run(value, code)
    assert r.returncode == 0, r.stderr
    first, count = r.stdout.strip().splitlines()
    kind, _, text = first.partition(" | ")
    assert kind == "RuntimeError" and message in text
    assert count == "0"
