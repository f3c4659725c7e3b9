"""Model-level parity: TorchTitan's model classes built directly (no
trainer) on the CPU from a fixed seed and copied to tpu, trained 3 SGD-with-momentum steps on
the same packed batch (two documents per row, so the per-document masks
matter), losses and parameters compared.

The CPU has no kernel for torch_attn::_varlen_attn (its default calls
FlashAttention). For the CPU run only, the test registers one: per-document
causal attention composed of PyTorch ops (einsum, masked softmax), whose
gradient autograd derives. tpu runs its own lowering (src/ops/attention.c)."""
import copy

import pytest
import torch
import torch.nn.functional as F

import torch_pjrt

pytest.importorskip("torchtitan", reason="torchtitan is not installed (make titan)")

pytestmark = pytest.mark.usefixtures("no_leaks")

SEQ, BATCH, STEPS = 32, 2, 3
LOSS_TOL = dict(rtol=1e-4, atol=1e-4)
# measured: at most 3.6e-4 apart (Qwen 3's embedding, whose rows are ~N(0, 1))
PARAM_TOL = dict(rtol=1e-3, atol=1e-3)


def _reference_scores(q, k, cu_q, causal, scale):
    """Scaled scores (heads, Tq, Tk), -inf outside each row's document (and
    above the diagonal when causal); k already has q's heads."""
    tq = q.shape[0]
    rows = torch.arange(tq)
    doc = (rows[:, None] >= cu_q[None, 1:].long()).sum(1)
    pos = rows - cu_q.long()[doc.clamp(max=len(cu_q) - 1)]
    allowed = doc[:, None] == doc[None, :]
    if causal:
        allowed &= pos[None, :] <= pos[:, None]
    s = torch.einsum("qhd,khd->hqk", q, k) * scale
    return s.masked_fill(~allowed, float("-inf"))


def _reference_attention(q, k, v, cu_q, cu_k, causal, scale):
    tq, hq, d = q.shape
    g = hq // k.shape[1]
    k = k.repeat_interleave(g, dim=1)
    v = v.repeat_interleave(g, dim=1)
    scale = d ** -0.5 if scale is None else scale
    s = _reference_scores(q, k, cu_q, causal, scale)
    lse = torch.logsumexp(s, dim=-1)
    out = torch.einsum("hqk,khd->qhd", torch.softmax(s, dim=-1), v)
    return out, lse


@pytest.fixture
def cpu_varlen():
    """A CPU kernel for the varlen ops, for the reference run only."""
    import torch.nn.attention.varlen  # noqa: F401  (defines torch_attn)

    def fwd(q, k, v, cu_q, cu_k, max_q, max_k, is_causal=False, scale=None, window_size=None,
            enable_gqa=False, seqused_k=None, block_table=None, num_splits=None):
        out, lse = _reference_attention(q, k, v, cu_q, cu_q if cu_k is None else cu_k,
                                        is_causal, scale)
        return out, lse.float(), torch.zeros(2, dtype=torch.uint64)

    def bwd(go, q, k, v, out, lse, cu_q, cu_k, max_q, max_k, is_causal, rng, scale=None,
            window_size=None):
        # softmax attention's gradient, written out (a kernel runs below
        # autograd, so it cannot differentiate the reference itself)
        hq, hk = q.shape[1], k.shape[1]
        g = hq // hk
        scale = q.shape[2] ** -0.5 if scale is None else scale
        kk, vv = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
        _, l = _reference_attention(q, k, v, cu_q, cu_k, is_causal, scale)
        s = _reference_scores(q, kk, cu_q, is_causal, scale)
        p = torch.exp(s - l[..., None])
        dv = torch.einsum("hqk,qhd->khd", p, go)
        dp = torch.einsum("qhd,khd->hqk", go, vv)
        ds = p * (dp - (dp * p).sum(-1, keepdim=True)) * scale
        dq = torch.einsum("hqk,khd->qhd", ds, kk)
        dk = torch.einsum("hqk,qhd->khd", ds, q)
        fold = lambda t: t.unflatten(1, (hk, g)).sum(2)
        return dq, fold(dk), fold(dv)

    with torch.library._scoped_library("torch_attn", "IMPL") as lib:
        lib.impl("_varlen_attn", fwd, "CPU")
        lib.impl("_varlen_attn_backward", bwd, "CPU")
        yield


def _build(spec_fn, device):
    torch.manual_seed(0)
    config = spec_fn().model
    with torch.device("meta"):
        model = config.build()
    model.to_empty(device=device)
    torch.manual_seed(0)
    with torch.no_grad():
        model.init_weights(buffer_device=torch.device(device))
    return model


def _batch(vocab):
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, vocab, (BATCH, SEQ + 1), generator=g)
    # two documents per row: positions restart where the second begins
    cut = [SEQ // 3, SEQ // 2]
    positions = torch.stack([torch.cat([torch.arange(c), torch.arange(SEQ - c)]) for c in cut])
    return tokens[:, :-1], tokens[:, 1:], positions


def _train(model, device, vocab):
    inputs, labels, positions = (t.to(device) for t in _batch(vocab))
    # SGD with momentum: its update is linear in the gradient, so parameters
    # stay as close as the gradients are. Adam's m / sqrt(v) turns a gradient
    # of ~1e-9 on either side of zero (an embedding row barely touched) into
    # a full +-lr step, which no tolerance short of 2 * lr would absorb.
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, foreach=False)
    losses = []
    for _ in range(STEPS):
        masks = model.get_attention_masks(positions=positions)
        logits = model(inputs, positions=positions, attention_masks=masks)
        loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten())
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.detach().cpu())
    return torch.stack(losses), {n: p.detach().cpu() for n, p in model.named_parameters()}


def _spec(name):
    if name == "llama3":
        from torchtitan.models.llama3 import model_registry
        return lambda: model_registry("debugmodel", attn_backend="varlen")
    if name == "qwen3_moe":
        from torch_pjrt.titan import qwen3_moe_smallmodel
        return lambda: qwen3_moe_smallmodel().model_spec
    from torchtitan.models.qwen3 import model_registry
    return lambda: model_registry("debugmodel", attn_backend="varlen")


@pytest.mark.parametrize("name", ["llama3", "qwen3", "qwen3_moe"])
def test_model_parity_with_cpu(name, cpu_varlen):
    spec = _spec(name)
    vocab = spec().model.vocab_size
    torch_pjrt.reset_fallbacks()
    cpu_model = _build(spec, "cpu")
    # the same initial weights on both (the tpu generator draws other
    # numbers than the CPU's); RoPE's complex64 buffer moves with them
    tpu_model = copy.deepcopy(cpu_model).to("tpu")
    cpu_losses, cpu_params = _train(cpu_model, "cpu", vocab)
    tpu_losses, tpu_params = _train(tpu_model, "tpu", vocab)
    assert torch_pjrt.fallbacks() == {}
    assert cpu_losses[-1] < cpu_losses[0]
    torch.testing.assert_close(tpu_losses, cpu_losses, **LOSS_TOL)
    assert cpu_params.keys() == tpu_params.keys()
    for n in cpu_params:
        torch.testing.assert_close(tpu_params[n], cpu_params[n], **PARAM_TOL, msg=lambda m: f"{n}: {m}")
