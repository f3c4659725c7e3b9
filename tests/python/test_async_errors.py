"""An execution that fails after its launch: the failure surfaces at the next
wait (.cpu(), .item(), synchronize) as a RuntimeError naming the op, once; with
TORCH_PJRT_LAUNCH_BLOCKING=1 at the op itself. The CPU plugin gives no way to
make a launched execution fail, so the runtime's testing hook
(torch_pjrt._C._inject_async_error) makes the next completion of one op report
a failure, as a failed PJRT completion event would."""
import pytest
import torch

from torch_pjrt import _C
from conftest import run_python


@pytest.fixture
def clean_injection():
    torch.tpu.synchronize()
    yield
    _C._inject_async_error("")


@pytest.mark.parametrize("wait", ["cpu", "item", "synchronize"])
def test_failure_surfaces_at_the_next_wait_naming_the_op(wait, clean_injection):
    x = torch.arange(4.0, device="tpu")
    torch.tpu.synchronize()
    _C._inject_async_error("aten::mul.Tensor")
    y = x * 2  # launched; the launch itself does not wait, so no error yet
    z = y + 1  # later work is launched too
    with pytest.raises(RuntimeError, match=r"aten::mul\.Tensor: asynchronous execution failed"):
        if wait == "cpu":
            z.cpu()
        elif wait == "item":
            z[0].item()
        else:
            torch.tpu.synchronize()
    # Reported once: the device keeps working and the next wait is clean.
    torch.testing.assert_close((x + 1).cpu(), torch.arange(4.0) + 1, atol=0, rtol=0)
    torch.tpu.synchronize()


def test_failure_of_an_unrelated_op_is_not_blamed_on_a_later_one(clean_injection):
    x = torch.ones(3, device="tpu")
    _C._inject_async_error("aten::neg")
    torch.neg(x)
    with pytest.raises(RuntimeError) as info:
        torch.tpu.synchronize()
    assert "aten::neg" in str(info.value) and "aten::mul" not in str(info.value)


def test_launch_blocking_raises_at_the_op():
    code = ("import torch\n"
            "from torch_pjrt import _C\n"
            "x = torch.ones(3, device='tpu')\n"
            "torch.tpu.synchronize()\n"
            "_C._inject_async_error('aten::mul.Tensor')\n"
            "try:\n"
            "    y = x * 2\n"
            "except RuntimeError as e:\n"
            "    print('AT OP:', e)\n"
            "else:\n"
            "    print('NO ERROR AT OP')\n")
    r = run_python(code, env_update={"TORCH_PJRT_LAUNCH_BLOCKING": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "AT OP:" in r.stdout and "aten::mul.Tensor" in r.stdout, r.stdout
