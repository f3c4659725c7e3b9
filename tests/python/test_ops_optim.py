"""The elementwise ops optimizers use (addcmul, addcdiv, lerp) against the
CPU, and torch.optim steps that run with no CPU fallback at all."""
import copy

import pytest
import torch

import torch_pjrt

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
