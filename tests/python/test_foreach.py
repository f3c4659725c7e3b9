"""Eager foreach ops on tpu: one launch per op over the whole list, values as
on the CPU (python/torch_pjrt/_foreach.py)."""
import pytest
import torch

import torch_pjrt

N = 5


def _lists(k, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [[torch.randn(3, 4, generator=g) for _ in range(N)] for _ in range(k)]


CASES = {
    "mul_.Scalar": (1, lambda L: torch._foreach_mul_(L[0], 0.9)),
    "mul_.List": (2, lambda L: torch._foreach_mul_(L[0], L[1])),
    "mul_.Tensor": (1, lambda L: torch._foreach_mul_(L[0], torch.tensor(0.5))),
    "div_.Scalar": (1, lambda L: torch._foreach_div_(L[0], 3.0)),
    "div_.ScalarList": (1, lambda L: torch._foreach_div_(L[0], [1.0, 2.0, 3.0, 4.0, 5.0])),
    # repeated values share one argument; 0.0 and -0.0 must not
    "div_.ScalarList repeats, signed zeros": (1, lambda L: torch._foreach_div_(
        L[0], [2.0, 2, -0.0, 0.0, 2.0])),
    "add_.Scalar": (1, lambda L: torch._foreach_add_(L[0], 1e-3)),
    "add_.List alpha": (2, lambda L: torch._foreach_add_(L[0], L[1], alpha=-0.1)),
    "add_.List": (2, lambda L: torch._foreach_add_(L[0], L[1])),
    "lerp_.Scalar": (2, lambda L: torch._foreach_lerp_(L[0], L[1], 0.1)),
    "addcmul_.Scalar": (3, lambda L: torch._foreach_addcmul_(L[0], L[1], L[2], value=0.001)),
    "addcdiv_.Scalar": (3, lambda L: torch._foreach_addcdiv_(L[0], L[1], L[2], value=0.5)),
    "addcdiv_.ScalarList": (3, lambda L: torch._foreach_addcdiv_(
        L[0], L[1], L[2], [-0.1, -0.2, -0.3, -0.4, -0.5])),
    "sqrt": (1, lambda L: torch._foreach_sqrt(L[0])),
    "add.List alpha": (2, lambda L: torch._foreach_add(L[0], L[1], alpha=0.1)),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("case", list(CASES))
def test_foreach_op_is_one_launch_and_matches_cpu(case, dtype, no_leaks):
    k, f = CASES[case]
    cpu = [[t.to(dtype).abs() + 0.5 for t in lst] for lst in _lists(k)]
    tpu = [[t.to("tpu") for t in lst] for lst in cpu]
    f([[t.to("tpu") for t in lst] for lst in cpu])  # the first call traces and compiles
    torch.tpu.synchronize()
    before = torch_pjrt.metrics()["executions"]
    got = f(tpu)
    torch.tpu.synchronize()
    assert torch_pjrt.metrics()["executions"] - before == 1
    expected = f(cpu)
    tol = dict(rtol=1e-6, atol=1e-7) if dtype == torch.float32 else dict(rtol=1e-12, atol=1e-14)
    for a, b in zip(cpu[0], tpu[0]):
        torch.testing.assert_close(b.cpu(), a, **tol)
    if expected is not None:
        for a, b in zip(expected, got):
            torch.testing.assert_close(b.cpu(), a, **tol)
    assert torch_pjrt.fallbacks() == {}


def test_changing_scalars_do_not_recompile():
    # An optimizer's step sizes change every step: runtime arguments.
    xs = [torch.ones(4, device="tpu") for _ in range(N)]
    torch._foreach_div_(xs, [1.0] * N)
    compiles = torch_pjrt.metrics()["graph_compiles"]
    for s in range(2, 5):
        torch._foreach_div_(xs, [float(s)] * N)
    assert torch_pjrt.metrics()["graph_compiles"] == compiles
    expected = 1.0 / (2 * 3 * 4)
    for x in xs:
        torch.testing.assert_close(x.cpu(), torch.full((4,), expected))


def test_lists_outside_the_fast_path_run_per_tensor():
    # bfloat16, and a mixed-device scalar, keep PyTorch's per-tensor loop.
    xs = [torch.ones(3, dtype=torch.bfloat16, device="tpu") for _ in range(N)]
    torch._foreach_mul_(xs, 2.0)
    for x in xs:
        assert x.cpu().tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(RuntimeError):
        torch._foreach_mul_([torch.ones(3, device="tpu"), torch.ones(3, device="tpu")],
                            torch.ones(3))


@pytest.mark.parametrize("name", ["adamw", "adam_wd", "sgd_momentum"])
def test_eager_optimizer_step_matches_cpu_with_few_launches(name):
    make = {
        "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2),
        "adam_wd": lambda p: torch.optim.Adam(p, lr=1e-2, weight_decay=0.1),
        "sgd_momentum": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01),
    }[name]
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    model.load_state_dict(ref.state_dict())
    model.to("tpu")
    opt_ref, opt = make(ref.parameters()), make(model.parameters())
    x, y = torch.randn(5, 8), torch.randn(5, 4)
    launches = []
    for _ in range(4):
        for m, o, dev in ((ref, opt_ref, "cpu"), (model, opt, "tpu")):
            torch.nn.functional.mse_loss(m(x.to(dev)), y.to(dev)).backward()
            torch.tpu.synchronize()
            before = torch_pjrt.metrics()["executions"]
            o.step()
            torch.tpu.synchronize()
            if dev == "tpu":
                launches.append(torch_pjrt.metrics()["executions"] - before)
            o.zero_grad()
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.detach().cpu(), q.detach(), rtol=1e-5, atol=1e-6)
    # one launch per foreach op, not one per parameter (4 parameters)
    assert launches[-1] <= 9, launches
    assert torch_pjrt.fallbacks() == {}
