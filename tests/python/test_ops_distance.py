"""torch.cdist and F.pdist (p-norm distances) against PyTorch's CPU
kernels, forward and backward, with CPU's dtype errors."""
import pytest
import torch
import torch.nn.functional as F
import torch_pjrt

pytestmark = pytest.mark.usefixtures("no_leaks")


TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float64: dict(rtol=1e-9, atol=1e-9),
       torch.bfloat16: dict(rtol=2e-2, atol=2e-2), torch.float16: dict(rtol=2e-3, atol=2e-3)}


def check(fn, *inputs, dtype=torch.float32, grad=True, tol=None, seed=0):
    """fn on CPU and on tpu (inputs that are float tensors get gradients):
    outputs, then gradients for a random cotangent, compared; no fallback."""
    tol = tol or TOL[dtype]
    cpu = [x.detach().clone().requires_grad_(grad and x.is_floating_point())
           if isinstance(x, torch.Tensor) else x for x in inputs]
    dev = [x.detach().to("tpu").requires_grad_(grad and x.is_floating_point())
           if isinstance(x, torch.Tensor) else x for x in inputs]
    torch.tpu.synchronize()
    torch_pjrt.reset_fallbacks()
    oc, od = fn(*cpu), fn(*dev)
    oc = oc if isinstance(oc, tuple) else (oc,)
    od = od if isinstance(od, tuple) else (od,)
    for a, e in zip(od, oc):
        torch.testing.assert_close(a.cpu(), e, equal_nan=True, **tol)
    if grad:
        g = torch.Generator().manual_seed(seed)
        cot = torch.randn(oc[0].shape, generator=g, dtype=torch.float32).to(oc[0].dtype)
        (oc[0] * cot).sum().backward()
        (od[0] * cot.to("tpu")).sum().backward()
        for xc, xd in zip(cpu, dev):
            if isinstance(xc, torch.Tensor) and xc.requires_grad:
                torch.testing.assert_close(xd.grad.cpu(), xc.grad, equal_nan=True, **tol)
    torch.tpu.synchronize()
    assert torch_pjrt.fallbacks() == {}, torch_pjrt.fallbacks()
    return od


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 0.5, 3.0, float("inf")])
def test_cdist_pdist(p):
    torch.manual_seed(8)
    x1, x2 = torch.randn(2, 1, 4, 3), torch.randn(3, 5, 3)
    x1[0, 0, 1] = x2[0, 2]  # a zero distance
    check(lambda a, b: torch.cdist(a, b, p=p), x1, x2)
    x = torch.randn(6, 4)
    x[3] = x[1]
    check(lambda x: F.pdist(x, p=p), x)
    if p in (0.5, 2.0):
        check(lambda a, b: torch.cdist(a, b, p=p), x1.double(), x2.double(), dtype=torch.float64)


def test_distance_dtype_errors():
    for dev in ("cpu", "tpu"):
        with pytest.raises(NotImplementedError, match="\"cdist\" not implemented for 'Half'"):
            torch.cdist(torch.ones(2, 3, dtype=torch.half, device=dev), torch.ones(2, 3, dtype=torch.half, device=dev))


def test_cdist_empty_rows():
    x1, x2 = torch.randn(1, 3, 5), torch.randn(0, 4, 5)
    check(lambda a, b: torch.cdist(a, b), x1, x2)
