"""End-to-end training on tpu against the same run on PyTorch's CPU: a small
MLP trained with SGD (momentum) and AdamW (foreach off and on) on an MSE and
a cross-entropy loss, a tiny causal self-attention block (forward and
backward), and that the PJRT buffers a training run held are all released
once the model and optimizer are gone. Same seed, same initial weights
(copy.deepcopy(model).to("tpu")), and every parameter, gradient and loss is
compared. Ops may fall back to the CPU here; only values are checked."""
import copy
import gc
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_pjrt
from conftest import live_buffers, run_python

pytestmark = pytest.mark.usefixtures("no_leaks")

PARAM_TOL = dict(rtol=1e-4, atol=1e-5)
LOSS_TOL = dict(rtol=1e-5, atol=1e-6)
STEPS = 5



class MLP(nn.Module):
    def __init__(self, d_in=8, d_hidden=16, d_out=4):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class CausalSelfAttention(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.d = d
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d)
        n = x.shape[-2]
        causal = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(1)
        scores = scores.masked_fill(causal, float("-inf"))
        attn = torch.softmax(scores, dim=-1)
        return self.out(attn @ v)


def mse(y, t):
    return ((y - t) ** 2).mean()


def xent(y, t):
    return F.cross_entropy(y, t)


def make_data(loss, seed=0, n=32, d_in=8, d_out=4):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d_in, generator=g)
    if loss == "mse":
        t = torch.randn(n, d_out, generator=g)
    else:
        t = torch.randint(0, d_out, (n,), generator=g)
    return x, t


def make_optimizer(name, params, foreach):
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.1, momentum=0.9, foreach=foreach)
    return torch.optim.AdamW(params, lr=1e-2, weight_decay=0.01, foreach=foreach)


def train(model, opt, x, t, loss_fn, steps=STEPS):
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(model(x), t)
        loss.backward()
        opt.step()
        losses.append(loss.detach().to("cpu"))
    return torch.stack(losses)


def assert_same_params(tpu_model, cpu_model, tol=PARAM_TOL):
    tpu_params = dict(tpu_model.named_parameters())
    cpu_params = dict(cpu_model.named_parameters())
    assert tpu_params.keys() == cpu_params.keys()
    for name, p in cpu_params.items():
        q = tpu_params[name]
        assert q.device.type == "tpu", (name, q.device)
        torch.testing.assert_close(q.detach().cpu(), p.detach(), msg=lambda m: f"{name}: {m}",
                                   **tol)


def assert_same_grads(tpu_model, cpu_model, tol=PARAM_TOL):
    tpu_params = dict(tpu_model.named_parameters())
    for name, p in cpu_model.named_parameters():
        q = tpu_params[name]
        assert p.grad is not None and q.grad is not None, name
        assert q.grad.device.type == "tpu", (name, q.grad.device)
        torch.testing.assert_close(q.grad.cpu(), p.grad, msg=lambda m: f"{name}.grad: {m}", **tol)


def _run_both(opt_name, foreach, loss, seed):
    torch.manual_seed(seed)
    cpu_model = MLP()
    tpu_model = copy.deepcopy(cpu_model).to("tpu")
    assert_same_params(tpu_model, cpu_model, dict(rtol=0, atol=0))
    x, t = make_data(loss, seed=seed + 1)
    loss_fn = mse if loss == "mse" else xent
    cpu_opt = make_optimizer(opt_name, cpu_model.parameters(), foreach)
    tpu_opt = make_optimizer(opt_name, tpu_model.parameters(), foreach)
    cpu_losses = train(cpu_model, cpu_opt, x, t, loss_fn)
    tpu_losses = train(tpu_model, tpu_opt, x.to("tpu"), t.to("tpu"), loss_fn)
    return cpu_model, tpu_model, cpu_opt, tpu_opt, cpu_losses, tpu_losses


@pytest.mark.parametrize("loss", ["mse", "cross_entropy"])
@pytest.mark.parametrize("foreach", [False, True], ids=["foreach=False", "foreach=True"])
@pytest.mark.parametrize("opt_name", ["sgd", "adamw"])
def test_mlp_training_matches_cpu(opt_name, foreach, loss):
    cpu_model, tpu_model, cpu_opt, tpu_opt, cpu_losses, tpu_losses = _run_both(
        opt_name, foreach, loss, seed=10)
    torch.testing.assert_close(tpu_losses, cpu_losses, **LOSS_TOL)
    assert tpu_losses[-1] < tpu_losses[0], tpu_losses    # it actually trained
    assert_same_params(tpu_model, cpu_model)
    assert_same_grads(tpu_model, cpu_model)
    # The optimizer state (momentum buffers, Adam moments) lives on tpu and matches.
    for p_cpu, p_tpu in zip(cpu_model.parameters(), tpu_model.parameters()):
        s_cpu, s_tpu = cpu_opt.state[p_cpu], tpu_opt.state[p_tpu]
        assert s_cpu.keys() == s_tpu.keys()
        for k, v in s_cpu.items():
            w = s_tpu[k]
            if isinstance(v, torch.Tensor) and v.dim() > 0:
                assert w.device.type == "tpu", (k, w.device)
            if isinstance(v, torch.Tensor):
                torch.testing.assert_close(w.cpu(), v, msg=lambda m: f"state {k}: {m}",
                                           **PARAM_TOL)
            else:
                assert w == v, (k, w, v)


def test_mlp_forward_backward_single_step_matches_cpu():
    # One step, no optimizer: outputs and gradients of every parameter.
    torch.manual_seed(11)
    cpu_model = MLP()
    tpu_model = copy.deepcopy(cpu_model).to("tpu")
    x, t = make_data("mse", seed=12)
    y_cpu = cpu_model(x)
    y_tpu = tpu_model(x.to("tpu"))
    torch.testing.assert_close(y_tpu.detach().cpu(), y_cpu.detach(), rtol=1e-5, atol=1e-6)
    mse(y_cpu, t).backward()
    mse(y_tpu, t.to("tpu")).backward()
    assert_same_grads(tpu_model, cpu_model, dict(rtol=1e-5, atol=1e-6))


def test_mlp_eval_no_grad_matches_cpu():
    torch.manual_seed(13)
    cpu_model = MLP()
    tpu_model = copy.deepcopy(cpu_model).to("tpu")
    x, _ = make_data("mse", seed=14)
    with torch.no_grad():
        y_cpu = cpu_model(x)
        y_tpu = tpu_model(x.to("tpu"))
    assert not y_tpu.requires_grad
    torch.testing.assert_close(y_tpu.cpu(), y_cpu, rtol=1e-5, atol=1e-6)


def test_cross_entropy_forward_backward_matches_cpu():
    g = torch.Generator().manual_seed(15)
    logits = torch.randn(6, 5, generator=g)
    target = torch.randint(0, 5, (6,), generator=g)
    a = logits.clone().requires_grad_()
    b = logits.to("tpu").requires_grad_()
    la = F.cross_entropy(a, target)
    lb = F.cross_entropy(b, target.to("tpu"))
    la.backward()
    lb.backward()
    torch.testing.assert_close(lb.detach().cpu(), la.detach(), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(b.grad.cpu(), a.grad, rtol=1e-6, atol=1e-7)


def _attention_forward_backward(model, x, w):
    x = x.detach().clone().requires_grad_()
    y = model(x)
    (y * w).sum().backward()
    return y.detach(), x.grad


@pytest.mark.parametrize("batch_shape", [(), (2,), (2, 3)], ids=["unbatched", "b2", "b2x3"])
def test_attention_block_matches_cpu(batch_shape):
    torch.manual_seed(20)
    cpu_model = CausalSelfAttention(d=8)
    tpu_model = copy.deepcopy(cpu_model).to("tpu")
    g = torch.Generator().manual_seed(21)
    x = torch.randn(*batch_shape, 5, 8, generator=g)
    w = torch.randn(*batch_shape, 5, 8, generator=g)
    y_cpu, gx_cpu = _attention_forward_backward(cpu_model, x, w)
    y_tpu, gx_tpu = _attention_forward_backward(tpu_model, x.to("tpu"), w.to("tpu"))
    assert y_tpu.device.type == "tpu" and gx_tpu.device.type == "tpu"
    torch.testing.assert_close(y_tpu.cpu(), y_cpu, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(gx_tpu.cpu(), gx_cpu, rtol=1e-5, atol=1e-5)
    assert_same_grads(tpu_model, cpu_model, dict(rtol=1e-5, atol=1e-5))


def test_attention_block_is_causal():
    # Changing a later token leaves earlier outputs unchanged (as on CPU).
    torch.manual_seed(22)
    cpu_model = CausalSelfAttention(d=8)
    tpu_model = copy.deepcopy(cpu_model).to("tpu")
    g = torch.Generator().manual_seed(23)
    x = torch.randn(2, 6, 8, generator=g)
    x2 = x.clone()
    x2[:, -1] += 10.0
    with torch.no_grad():
        a = tpu_model(x.to("tpu")).cpu()
        b = tpu_model(x2.to("tpu")).cpu()
        e = cpu_model(x)
    torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(b[:, :-1], a[:, :-1], rtol=1e-5, atol=1e-6)


def test_attention_block_training_matches_cpu():
    torch.manual_seed(24)
    cpu_model = CausalSelfAttention(d=8)
    tpu_model = copy.deepcopy(cpu_model).to("tpu")
    g = torch.Generator().manual_seed(25)
    x = torch.randn(4, 5, 8, generator=g)
    t = torch.randn(4, 5, 8, generator=g)
    # SGD, not Adam: k.bias's true gradient is 0 (a per-row constant added to
    # the scores, which softmax ignores), so both devices hold rounding noise
    # there, which Adam would normalise into updates of full size.
    cpu_opt = torch.optim.SGD(cpu_model.parameters(), lr=0.1, momentum=0.9)
    tpu_opt = torch.optim.SGD(tpu_model.parameters(), lr=0.1, momentum=0.9)
    cpu_losses = train(cpu_model, cpu_opt, x, t, mse)
    tpu_losses = train(tpu_model, tpu_opt, x.to("tpu"), t.to("tpu"), mse)
    torch.testing.assert_close(tpu_losses, cpu_losses, **LOSS_TOL)
    assert_same_params(tpu_model, cpu_model)


@pytest.mark.parametrize("opt_name,foreach", [("sgd", False), ("adamw", False),
                                              ("adamw", True)],
                         ids=["sgd", "adamw", "adamw-foreach"])
def test_training_releases_buffers(opt_name, foreach):
    start = live_buffers()
    torch.manual_seed(30)
    cpu_model = MLP()
    model = copy.deepcopy(cpu_model).to("tpu")
    opt = make_optimizer(opt_name, model.parameters(), foreach)
    x, t = make_data("mse", seed=31)
    xt, tt = x.to("tpu"), t.to("tpu")
    losses = train(model, opt, xt, tt, mse)
    cpu_losses = train(cpu_model, make_optimizer(opt_name, cpu_model.parameters(), foreach),
                       x, t, mse)
    torch.testing.assert_close(losses, cpu_losses, **LOSS_TOL)
    torch.tpu.synchronize()
    assert live_buffers() > start       # parameters, grads and state are on the device
    del model, opt, xt, tt, losses
    gc.collect()
    torch.tpu.synchronize()
    assert torch_pjrt._C._live_buffers() == start


_BACKWARD_THEN_EXIT = """
import torch
x = torch.randn(64, device="tpu", requires_grad=True)
(x * 2).sum().backward()
torch.tpu.synchronize()
print(float(x.grad.sum().cpu()))
"""


def test_script_that_ran_backward_exits_cleanly():
    # The tpu autograd worker used to release the last GraphTask (which holds
    # the caller's Python contextvars) during interpreter shutdown, aborting
    # the process ("terminate called without an active exception", status
    # 134) in roughly a third to all of the runs. Five runs catch that.
    for _ in range(5):
        proc = run_python(_BACKWARD_THEN_EXIT)
        assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
        assert float(proc.stdout.strip().splitlines()[-1]) == 128.0


class _TiedLM(nn.Module):
    """nanoGPT's tying: the output layer's weight is the embedding's."""

    def __init__(self, vocab=32, d=16):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.ln = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, x):
        return self.lm_head(self.ln(self.wte(x)))


def test_module_to_tpu_keeps_tied_weights_and_identity():
    """model.to("tpu") keeps each Parameter object (as CUDA does), so tied
    weights stay one Parameter and an optimizer made before the move still
    holds the model's parameters."""
    torch.manual_seed(0)
    m = _TiedLM()
    params = list(m.parameters())
    m.to("tpu")
    assert m.lm_head.weight is m.wte.weight
    assert all(a is b for a, b in zip(params, m.parameters()))
    assert m.wte.weight.device.type == "tpu"
    m.cpu()
    assert m.lm_head.weight is m.wte.weight and m.wte.weight.device.type == "cpu"
    m.tpu()
    assert m.lm_head.weight is m.wte.weight and m.wte.weight.device.type == "tpu"
    m.to(torch.float64)  # same device: PyTorch's own path, still tied
    assert m.lm_head.weight is m.wte.weight and m.wte.weight.dtype == torch.float64
    assert not torch.__future__.get_swap_module_params_on_conversion()


def test_tied_lm_trains_like_cpu_after_to_tpu():
    """Before the fix the head and the embedding came apart on tpu and the
    losses left CPU's from the second step."""
    torch.manual_seed(0)
    ref = _TiedLM()
    dev = copy.deepcopy(ref)
    opts = {}
    for name, m in (("cpu", ref), ("tpu", dev)):
        opts[name] = torch.optim.AdamW(m.parameters(), lr=1e-2)  # made before the move
    dev.to("tpu")
    g = torch.Generator().manual_seed(1)
    for step in range(4):
        x = torch.randint(0, 32, (4, 8), generator=g)
        y = torch.randint(0, 32, (4, 8), generator=g)
        losses = {}
        for name, m in (("cpu", ref), ("tpu", dev)):
            d = "tpu" if name == "tpu" else "cpu"
            loss = F.cross_entropy(m(x.to(d)).flatten(0, 1), y.to(d).flatten())
            loss.backward()
            opts[name].step()
            opts[name].zero_grad()
            losses[name] = loss.item()
        assert losses["tpu"] == pytest.approx(losses["cpu"], rel=1e-5, abs=1e-6), step
    torch.testing.assert_close(dev.wte.weight.cpu(), ref.wte.weight, rtol=1e-5, atol=1e-6)
    assert dev.lm_head.weight is dev.wte.weight
