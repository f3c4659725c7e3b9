"""End-to-end training on tpu against the CPU: the small transformer LM
(embedding, causal SDPA, LayerNorm, GELU, dropout, cross-entropy, AdamW) and
the CNN (conv, batch norm, max pool, ReLU, SGD with momentum), eager and
compiled; every op native; buffers flat across steps."""
import gc

import pytest
import torch
import torch.nn.functional as F

import models
import torch_pjrt
from conftest import live_buffers

STEPS = 20


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()
    gc.collect()


def _train_lm(device, steps=STEPS, dropout=0.0, compiled=False):
    model = models.TinyLM(dropout=dropout).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    fwd = torch.compile(model, backend="tpu") if compiled else model
    losses = []
    for x, y in models.lm_batches(steps):
        loss = models.lm_loss(fwd, x.to(device), y.to(device))
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return model, losses


def _train_cnn(device, steps=STEPS, compiled=False, whole_step=False, compiles=None):
    """compiled: torch.compile the model; whole_step: torch.compile the
    step (forward, backward, SGD); compiles, a list: gets graph_compiles
    after each step."""
    model = models.SmallCNN().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    fwd = torch.compile(model, backend="tpu") if compiled else model

    def step(x, y):
        loss = F.cross_entropy(fwd(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    run = torch.compile(step, backend="tpu") if whole_step else step
    losses = []
    for x, y in models.cnn_batches(steps):
        losses.append(run(x.to(device), y.to(device)).item())
        if compiles is not None:
            compiles.append(torch_pjrt.metrics()["graph_compiles"])
    return model, losses


def _same_params(a, b, tol):
    for (n, p), q in zip(a.named_parameters(), b.parameters()):
        torch.testing.assert_close(p.detach().cpu(), q.detach(), atol=tol, rtol=tol, msg=n)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_transformer_lm_trains_like_cpu(compiled):
    torch._dynamo.reset()
    ref, want = _train_lm("cpu")
    torch_pjrt.reset_metrics()
    got_model, got = _train_lm("tpu", compiled=compiled)
    torch.testing.assert_close(torch.tensor(got), torch.tensor(want), atol=2e-4, rtol=2e-4)
    assert got[-1] < got[0]
    _same_params(got_model, ref, 2e-3)
    assert torch_pjrt.fallbacks() == {}


def test_transformer_lm_with_dropout_trains_natively():
    torch_pjrt.reset_metrics()
    _, losses = _train_lm("tpu", steps=12, dropout=0.1)
    assert sum(losses[-3:]) < sum(losses[:3])
    assert torch_pjrt.fallbacks() == {}


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_cnn_trains_like_cpu(compiled):
    torch._dynamo.reset()
    ref, want = _train_cnn("cpu")
    torch_pjrt.reset_metrics()
    got_model, got = _train_cnn("tpu", compiled=compiled)
    torch.testing.assert_close(torch.tensor(got), torch.tensor(want), atol=1e-3, rtol=1e-3)
    _same_params(got_model, ref, 5e-3)
    for (n, b), rb in zip(got_model.named_buffers(), ref.buffers()):
        torch.testing.assert_close(b.cpu(), rb, atol=5e-3, rtol=5e-3, msg=n)
    assert torch_pjrt.fallbacks() == {}


def test_live_buffers_flat_across_training_steps():
    model = models.TinyLM().to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    counts = []
    for x, y in models.lm_batches(6):
        loss = models.lm_loss(model, x.to("tpu"), y.to("tpu"))
        loss.backward()
        opt.step()
        opt.zero_grad()
        del loss
        counts.append(live_buffers())
    assert counts[-1] == counts[2], counts


def test_transformer_lm_compiled_step_with_adamw_inside():
    torch._dynamo.reset()

    def run(device, compiled):
        model = models.TinyLM().to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)

        def step(x, y):
            loss = models.lm_loss(model, x, y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        fn = torch.compile(step, backend="tpu") if compiled else step
        return [fn(x.to(device), y.to(device)).item() for x, y in models.lm_batches(5)]

    want = run("cpu", False)
    torch_pjrt.reset_metrics()
    got = run("tpu", True)
    torch.testing.assert_close(torch.tensor(got), torch.tensor(want), atol=2e-4, rtol=2e-4)
    assert torch_pjrt.fallbacks() == {}


def test_transformer_lm_compiled_inference_matches_cpu():
    torch._dynamo.reset()
    model = models.TinyLM().eval()
    x, _ = models.lm_batches(1)[0]
    with torch.no_grad():
        want = model(x)
        cm = torch.compile(models.TinyLM().eval().to("tpu"), backend="tpu")
        got = cm(x.to("tpu"))
    torch.testing.assert_close(got.cpu(), want, atol=1e-4, rtol=1e-4)


def test_cnn_compiled_step_with_sgd_inside_compiles_once():
    # the whole training step -- forward, backward, SGD with momentum, the
    # batch-norm running stats -- as one compiled function; after the first
    # step (and the second, where momentum buffers exist) nothing recompiles
    torch._dynamo.reset()
    ref, want = _train_cnn("cpu", steps=6)
    torch_pjrt.reset_metrics()
    compiles = []
    got_model, got = _train_cnn("tpu", steps=6, whole_step=True, compiles=compiles)
    torch.testing.assert_close(torch.tensor(got), torch.tensor(want), atol=1e-3, rtol=1e-3)
    _same_params(got_model, ref, 5e-3)
    for (n, b), rb in zip(got_model.named_buffers(), ref.buffers()):
        torch.testing.assert_close(b.cpu(), rb, atol=5e-3, rtol=5e-3, msg=n)
    assert compiles[0] > 0
    assert compiles[2:] == [compiles[2]] * 4, compiles
    assert torch_pjrt.fallbacks() == {}


def test_cnn_compiled_inference_matches_cpu_and_compiles_once():
    torch._dynamo.reset()
    ref = models.SmallCNN().eval()
    model = torch.compile(models.SmallCNN().eval().to("tpu"), backend="tpu")
    torch_pjrt.reset_metrics()
    with torch.no_grad():
        for i, (x, _) in enumerate(models.cnn_batches(3)):
            torch.testing.assert_close(model(x.to("tpu")).cpu(), ref(x), atol=1e-4, rtol=1e-4)
            if i == 0:
                first = torch_pjrt.metrics()["graph_compiles"]
    assert first > 0 and torch_pjrt.metrics()["graph_compiles"] == first
    assert torch_pjrt.fallbacks() == {}
