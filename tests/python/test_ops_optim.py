"""The elementwise ops optimizers use (addcmul, addcdiv, lerp) against the
CPU, torch.optim steps that run with no CPU fallback at all, and the fused
Adam/AdamW kernels (_fused_adam_, _fused_adamw_)."""
import copy

import pytest
import torch

import torch_pjrt
from test_ops_linalg import _reset  # noqa: F401 (shared helpers)

pytestmark = pytest.mark.usefixtures("no_leaks")


def _data(*shape, seed=0, positive=False):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g)
    return x.abs() + 0.5 if positive else x


@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
@pytest.mark.parametrize("value", [1, 0.5, -2.0])
def test_addc_matches_cpu(op, value):
    s, a, b = _data(3, 4, seed=1), _data(3, 4, seed=2), _data(1, 4, seed=3, positive=True)
    f = getattr(torch, op)
    got = f(s.to("tpu"), a.to("tpu"), b.to("tpu"), value=value).cpu()
    torch.testing.assert_close(got, f(s, a, b, value=value), rtol=1e-6, atol=1e-6)
    # in place, on a view
    base_c, base_t = _data(3, 8, seed=4), _data(3, 8, seed=4).to("tpu")
    getattr(base_c[:, ::2], op + "_")(a, b, value=value)
    getattr(base_t[:, ::2], op + "_")(a.to("tpu"), b.to("tpu"), value=value)
    torch.testing.assert_close(base_t.cpu(), base_c, rtol=1e-6, atol=1e-6)


def test_addcdiv_integer_division_raises_like_cpu():
    i = torch.ones(3, dtype=torch.int64)
    with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
        torch.addcdiv(i, i, i)
    with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
        torch.addcdiv(i.to("tpu"), i.to("tpu"), i.to("tpu"))


@pytest.mark.parametrize("weight", [0.0, 0.1, 0.5, 0.9, 1.0, 1.7, -0.3])
def test_lerp_scalar_matches_cpu_exactly_at_the_ends(weight):
    s, e = _data(5, seed=5), _data(5, seed=6)
    got = torch.lerp(s.to("tpu"), e.to("tpu"), weight).cpu()
    torch.testing.assert_close(got, torch.lerp(s, e, weight), rtol=1e-6, atol=1e-7)
    if weight == 1.0:
        assert torch.equal(got, e)


def test_lerp_tensor_weight_and_inplace():
    s, e, w = _data(2, 3, seed=7), _data(2, 3, seed=8), torch.rand(2, 3)
    torch.testing.assert_close(torch.lerp(s.to("tpu"), e.to("tpu"), w.to("tpu")).cpu(),
                               torch.lerp(s, e, w), rtol=1e-6, atol=1e-7)
    t = s.to("tpu")
    t.lerp_(e.to("tpu"), 0.25)
    torch.testing.assert_close(t.cpu(), s.lerp(e, 0.25), rtol=1e-6, atol=1e-7)
    with pytest.raises(RuntimeError, match="expected dtype"):
        torch.lerp(s.to("tpu"), e.double().to("tpu"), 0.5)


@pytest.mark.parametrize("opt", ["sgd", "adam", "adamw"])
@pytest.mark.parametrize("foreach", [False, True])
def test_optimizer_step_runs_natively_and_matches_cpu(opt, foreach):
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.LayerNorm(32),
                            torch.nn.Linear(32, 4))
    mc, mt = copy.deepcopy(m), copy.deepcopy(m).to("tpu")
    make = {"sgd": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, foreach=foreach),
            "adam": lambda p: torch.optim.Adam(p, lr=1e-2, foreach=foreach),
            "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2, foreach=foreach)}[opt]
    oc, ot = make(mc.parameters()), make(mt.parameters())
    x, y = torch.randn(8, 16), torch.randn(8, 4)
    xt, yt = x.to("tpu"), y.to("tpu")
    torch_pjrt.reset_fallbacks()
    for _ in range(3):
        for model, o, xx, yy in [(mc, oc, x, y), (mt, ot, xt, yt)]:
            o.zero_grad()
            ((model(xx) - yy) ** 2).mean().backward()
            o.step()
    for pc, pt in zip(mc.parameters(), mt.parameters()):
        torch.testing.assert_close(pt.detach().cpu(), pc.detach(), rtol=1e-4, atol=1e-5)
    assert torch_pjrt.fallbacks() == {}, torch_pjrt.fallbacks()


def no_fallbacks():
    assert torch_pjrt.fallbacks() == {}


def _params(seed=4, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(5, 3, generator=g).to(dtype), torch.randn(7, generator=g).to(dtype)]


def _run_fused(cls, device, steps=3, dtype=torch.float32, lr=1e-2, **kw):
    ps = [p.to(device).requires_grad_() for p in _params(dtype=dtype)]
    opt = cls(ps, lr=lr, fused=True, **kw)
    g = torch.Generator().manual_seed(5)
    for _ in range(steps):
        for p in ps:
            p.grad = torch.randn(p.shape, generator=g).to(dtype).to(device)
        opt.step()
    state = [opt.state[p] for p in ps]
    return [p.detach().cpu() for p in ps], state


@pytest.mark.parametrize("cls,kw", [
    (torch.optim.AdamW, dict(weight_decay=0.1)),
    (torch.optim.AdamW, dict(weight_decay=0.0, amsgrad=True, maximize=True)),
    (torch.optim.Adam, dict(weight_decay=0.05, betas=(0.8, 0.95), eps=1e-6)),
])
@pytest.mark.usefixtures("_reset")
def test_fused_adam_matches_cpu(cls, kw):
    expect, es = _run_fused(cls, "cpu", **kw)
    got, gs = _run_fused(cls, "tpu", **kw)
    for a, b in zip(got, expect):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)
    for a, b in zip(gs, es):
        for k in b:
            torch.testing.assert_close(a[k].cpu(), b[k], atol=1e-6, rtol=1e-5)
    no_fallbacks()


@pytest.mark.usefixtures("_reset")
def test_fused_adamw_bf16_tensor_lr_and_scheduler():
    expect, _ = _run_fused(torch.optim.AdamW, "cpu", dtype=torch.bfloat16)
    got, _ = _run_fused(torch.optim.AdamW, "tpu", dtype=torch.bfloat16)
    for a, b in zip(got, expect):
        assert a.dtype == torch.bfloat16
        torch.testing.assert_close(a, b, atol=1e-2, rtol=1e-2)
    expect, _ = _run_fused(torch.optim.AdamW, "cpu", lr=torch.tensor(0.02))
    got, _ = _run_fused(torch.optim.AdamW, "tpu", lr=torch.tensor(0.02))
    for a, b in zip(got, expect):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)
    no_fallbacks()


@pytest.mark.usefixtures("_reset")
def test_fused_adamw_grad_scale_and_found_inf():
    """What GradScaler passes: grads are unscaled in place; found_inf == 1
    leaves parameters and moments untouched."""
    for inf in (0.0, 1.0):
        res = {}
        for dev in ("cpu", "tpu"):
            ps = [p.to(dev) for p in _params()]
            gs = [torch.full_like(p, 4.0) for p in ps]
            m = [torch.zeros_like(p) for p in ps]
            v = [torch.zeros_like(p) for p in ps]
            steps = [torch.tensor(1.0, device=dev) for _ in ps]
            torch._fused_adamw_(ps, gs, m, v, [], steps, lr=0.1, beta1=0.9, beta2=0.999,
                                weight_decay=0.01, eps=1e-8, amsgrad=False, maximize=False,
                                grad_scale=torch.tensor(2.0, device=dev),
                                found_inf=torch.tensor(inf, device=dev))
            res[dev] = [t.cpu() for t in ps + gs + m + v]
        for a, b in zip(res["tpu"], res["cpu"]):
            torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)
        if inf:
            assert torch.equal(res["tpu"][0], _params()[0])
    no_fallbacks()


@pytest.mark.usefixtures("_reset")
def test_fused_adamw_errors():
    p = torch.zeros(3, device="tpu")
    with pytest.raises(RuntimeError, match="same number of params"):
        torch._fused_adamw_([p], [], [p], [p], [], [torch.tensor(1.0, device="tpu")], lr=0.1,
                            beta1=0.9, beta2=0.99, weight_decay=0.0, eps=1e-8, amsgrad=False,
                            maximize=False)
    with pytest.raises(RuntimeError, match="parameter's sizes"):
        torch._fused_adamw_([p], [torch.zeros(4, device="tpu")], [p.clone()], [p.clone()], [],
                            [torch.tensor(1.0, device="tpu")], lr=0.1, beta1=0.9, beta2=0.99,
                            weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)
