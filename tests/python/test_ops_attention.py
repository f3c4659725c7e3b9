"""The fused transformer inference ops (csrc/ops/attention.cpp): the fast
path nn.MultiheadAttention and nn.TransformerEncoderLayer take in eval mode
without autograd. Compared with the same modules on the CPU, which run
PyTorch's own fused kernels; none may fall back (issue 19, item 9)."""
import pytest
import torch
import torch.nn as nn

import torch_pjrt

pytestmark = pytest.mark.usefixtures("no_leaks")

TOL = dict(rtol=1e-5, atol=1e-5)


@pytest.fixture(autouse=True)
def _no_fallbacks():
    torch_pjrt.reset_fallbacks()
    yield
    assert torch_pjrt.fallbacks() == {}


def _mha(embed=16, heads=4):
    torch.manual_seed(0)
    return nn.MultiheadAttention(embed, heads, batch_first=True).eval()


def _pair(module):
    import copy
    return module, copy.deepcopy(module).to("tpu")


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("average", [True, False])
def test_mha_self_attention(need_weights, average):
    cpu, tpu = _pair(_mha())
    x = torch.randn(2, 5, 16)
    xt = x.to("tpu")
    with torch.inference_mode():
        want = cpu(x, x, x, need_weights=need_weights, average_attn_weights=average)
        got = tpu(xt, xt, xt, need_weights=need_weights, average_attn_weights=average)
    torch.testing.assert_close(got[0].cpu(), want[0], **TOL)
    if need_weights:
        torch.testing.assert_close(got[1].cpu(), want[1], **TOL)
    else:
        assert got[1] is None and want[1] is None


def test_mha_fast_path_is_taken():
    # The module's own check decides; the fused op must be the one reached
    # (and, by the fixture, run without a CPU fallback).
    from torch.utils._python_dispatch import TorchDispatchMode

    class Seen(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = set()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.add(func.name())
            return func(*args, **(kwargs or {}))

    cpu, tpu = _pair(_mha())
    xt = torch.randn(2, 5, 16).to("tpu")
    with torch.inference_mode(), Seen() as seen:
        tpu(xt, xt, xt, need_weights=False)
    assert "aten::_native_multi_head_attention" in seen.ops, sorted(seen.ops)


@pytest.mark.parametrize("mask_kind", ["key_padding", "attn_bool", "attn_float", "both"])
def test_mha_masks(mask_kind):
    cpu, tpu = _pair(_mha())
    x = torch.randn(2, 5, 16)
    kpm = torch.tensor([[False, False, False, True, True], [False] * 5])
    causal = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)
    kwargs = {}
    if mask_kind in ("key_padding", "both"):
        kwargs["key_padding_mask"] = kpm
    if mask_kind == "attn_bool" or mask_kind == "both":
        kwargs["attn_mask"] = causal
    if mask_kind == "attn_float":
        kwargs["attn_mask"] = torch.zeros(5, 5).masked_fill(causal, float("-inf"))
    kt = {k: v.to("tpu") for k, v in kwargs.items()}
    xt = x.to("tpu")
    with torch.inference_mode():
        want = cpu(x, x, x, **kwargs)
        got = tpu(xt, xt, xt, **kt)
    torch.testing.assert_close(got[0].cpu(), want[0], **TOL, equal_nan=True)
    torch.testing.assert_close(got[1].cpu(), want[1], **TOL, equal_nan=True)


def test_mha_cross_attention():
    cpu, tpu = _pair(_mha())
    q, kv = torch.randn(2, 5, 16), torch.randn(2, 5, 16)
    with torch.inference_mode():
        want = cpu(q, kv, kv)
        got = tpu(q.to("tpu"), kv.to("tpu"), kv.to("tpu"))
        v2 = torch.randn(2, 5, 16)
        want2 = cpu(q, kv, v2)
        got2 = tpu(q.to("tpu"), kv.to("tpu"), v2.to("tpu"))
    torch.testing.assert_close(got[0].cpu(), want[0], **TOL)
    torch.testing.assert_close(got2[0].cpu(), want2[0], **TOL)


def test_masked_softmax_matches_cpu():
    x = torch.randn(2, 2, 4, 4)
    m = torch.tensor([[True, True, True, True], [False, True, False, False],
                      [False] * 4, [False] * 4])
    km = torch.tensor([[True, False, False, False], [False, False, False, True]])
    for mask, kind in ((m, 0), (km, 1)):
        want = torch._masked_softmax(x, mask, 3, kind)
        got = torch._masked_softmax(x.to("tpu"), mask.to("tpu"), 3, kind).cpu()
        torch.testing.assert_close(got, want, **TOL, equal_nan=True)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_encoder_layer_fast_path(norm_first, activation):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=True,
                                       norm_first=norm_first, activation=activation).eval()
    cpu, tpu = _pair(layer)
    x = torch.randn(2, 6, 16)
    kpm = torch.tensor([[False] * 4 + [True] * 2, [False] * 6])
    with torch.inference_mode():
        want = cpu(x)
        got = tpu(x.to("tpu"))
        want_m = cpu(x, src_key_padding_mask=kpm)
        got_m = tpu(x.to("tpu"), src_key_padding_mask=kpm.to("tpu"))
    torch.testing.assert_close(got.cpu(), want, **TOL)
    torch.testing.assert_close(got_m.cpu(), want_m, **TOL)


def test_transformer_encoder_stack():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=True)
    enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    cpu, tpu = _pair(enc)
    x = torch.randn(3, 7, 16)
    with torch.inference_mode():
        torch.testing.assert_close(tpu(x.to("tpu")).cpu(), cpu(x), **TOL)


def test_mha_shape_error_matches_cpu():
    q = torch.randn(2, 5, 16)
    k = torch.randn(2, 4, 16)
    w, b = torch.randn(48, 16), torch.randn(48)
    p, pb = torch.randn(16, 16), torch.randn(16)
    args = (16, 4, w, b, p, pb, None, False, True, None)
    with pytest.raises(RuntimeError) as cpu:
        torch._native_multi_head_attention(q, k, k, *args)
    t = lambda a: a.to("tpu") if isinstance(a, torch.Tensor) else a  # noqa: E731
    with pytest.raises(RuntimeError) as tpu:
        torch._native_multi_head_attention(t(q), t(k), t(k), *[t(a) for a in args])
    assert str(tpu.value) == str(cpu.value)


def test_nested_encoder_path_is_refused_clearly():
    torch_pjrt.reset_fallbacks()
    layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=True)
    enc = nn.TransformerEncoder(layer, 2).eval().to("tpu")  # enable_nested_tensor=True
    kpm = torch.zeros(3, 7, dtype=torch.bool, device="tpu")
    kpm[0, 5:] = True
    with torch.inference_mode(), pytest.raises(NotImplementedError,
                                               match="enable_nested_tensor=False"):
        enc(torch.randn(3, 7, 16, device="tpu"), src_key_padding_mask=kpm)


def test_nested_mask_left_aligned_matches_cpu():
    x = torch.randn(3, 4, 2)
    for rows in ([[1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]], [[1, 0, 1, 0], [1, 1, 1, 1], [0, 0, 0, 0]],
                 [[0, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 0]]):
        m = torch.tensor(rows, dtype=torch.bool)
        assert (torch._nested_tensor_from_mask_left_aligned(x.to("tpu"), m.to("tpu"))
                == torch._nested_tensor_from_mask_left_aligned(x, m))


# --- torch.nn.attention.varlen (TorchTitan's varlen attention) ------------

def _varlen_reference(q, k, v, cu_q, cu_k, causal, scale, window=(-1, -1)):
    """Per-document attention in float64 on the CPU: each document's rows
    attend to that document's keys through SDPA's math with an explicit
    mask (bottom-right aligned, FlashAttention's convention), and the
    log-sum-exp of its scaled scores. Rows past the last offset: 0 and +inf."""
    q, k, v = (t.double() for t in (q, k, v))
    tq, hq, d = q.shape
    g = hq // k.shape[1]
    k = k.repeat_interleave(g, dim=1)
    v = v.repeat_interleave(g, dim=1)
    out = torch.zeros_like(q)
    lse = torch.full((hq, tq), float("inf"), dtype=torch.float64)
    scale = d ** -0.5 if scale is None else scale
    left, right = window
    if causal:
        right = 0
    for i in range(len(cu_q) - 1):
        q0, q1, k0, k1 = int(cu_q[i]), int(cu_q[i + 1]), int(cu_k[i]), int(cu_k[i + 1])
        lq, lk = q1 - q0, k1 - k0
        if lq == 0:
            continue
        s = torch.einsum("qhd,khd->hqk", q[q0:q1], k[k0:k1]) * scale
        qi = torch.arange(lq)[:, None] + (lk - lq)
        kj = torch.arange(lk)[None, :]
        allowed = torch.ones(lq, lk, dtype=torch.bool)
        if right >= 0:
            allowed &= kj <= qi + right
        if left >= 0:
            allowed &= kj >= qi - left
        s = s.masked_fill(~allowed, float("-inf"))
        l = torch.logsumexp(s, dim=-1)
        p = torch.exp(s - l[..., None]).nan_to_num(0.0)
        out[q0:q1] = torch.einsum("hqk,khd->qhd", p, v[k0:k1])
        lse[:, q0:q1] = l
    return out, lse


_VARLEN_CASES = [
    # (doc lengths q, doc lengths k, hq, hk, causal, window, padding rows)
    ([5, 3, 8], None, 4, 4, True, (-1, -1), 0),
    ([5, 3, 8], None, 4, 2, True, (-1, -1), 0),
    ([4, 6], None, 2, 2, False, (-1, -1), 0),
    ([7, 1, 4], None, 4, 1, False, (2, 1), 0),
    ([6, 6], None, 2, 2, True, (3, -1), 0),
    ([3, 5], [6, 5], 2, 2, True, (-1, -1), 0),
    ([3, 5], None, 2, 2, True, (-1, -1), 3),
]


@pytest.mark.parametrize("case", range(len(_VARLEN_CASES)))
def test_varlen_attn_matches_reference(case):
    from torch.nn.attention.varlen import varlen_attn, AuxRequest
    lq, lk, hq, hk, causal, window, pad = _VARLEN_CASES[case]
    lk = lk or lq
    torch.manual_seed(case)
    d = 8
    cu_q = torch.tensor([0] + list(torch.tensor(lq).cumsum(0)), dtype=torch.int32)
    cu_k = torch.tensor([0] + list(torch.tensor(lk).cumsum(0)), dtype=torch.int32)
    q = torch.randn(sum(lq) + pad, hq, d, requires_grad=True)
    k = torch.randn(sum(lk) + pad, hk, d, requires_grad=True)
    v = torch.randn(sum(lk) + pad, hk, d, requires_grad=True)
    win = (-1, 0) if causal and window == (-1, -1) else window
    if causal and window != (-1, -1):
        win = (window[0], 0)
    qt, kt, vt = (t.detach().to("tpu").requires_grad_() for t in (q, k, v))
    out, lse = varlen_attn(qt, kt, vt, cu_q.to("tpu"), cu_k.to("tpu"), max(lq), max(lk),
                           return_aux=AuxRequest(lse=True), window_size=win,
                           enable_gqa=hq != hk)
    want, want_lse = _varlen_reference(q, k, v, cu_q, cu_k, win[1] == 0, None, win)
    torch.testing.assert_close(out.cpu().double(), want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(lse.cpu().double(), want_lse, rtol=1e-5, atol=1e-5)
    go = torch.randn_like(q)
    want.backward(go.double())
    out.backward(go.to("tpu"))
    for got, ref in ((qt, q), (kt, k), (vt, v)):
        torch.testing.assert_close(got.grad.cpu().double(), ref.grad.double(),
                                   rtol=1e-4, atol=1e-5)


def test_varlen_attn_bfloat16_close_to_float32():
    from torch.nn.attention.varlen import varlen_attn
    torch.manual_seed(0)
    q, k, v = (torch.randn(16, 4, 16) for _ in range(3))
    cu = torch.tensor([0, 9, 16], dtype=torch.int32)
    want, _ = _varlen_reference(q, k, v, cu, cu, True, None)
    got = varlen_attn(*(t.to("tpu", torch.bfloat16) for t in (q, k, v)), cu.to("tpu"),
                      cu.to("tpu"), 9, 9, window_size=(-1, 0))
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.cpu().double(), want, rtol=2e-2, atol=2e-2)


def test_varlen_attn_errors():
    from torch.nn.attention.varlen import varlen_attn
    q = torch.randn(8, 4, 8, device="tpu")
    k = torch.randn(8, 2, 8, device="tpu")
    cu = torch.tensor([0, 8], dtype=torch.int32, device="tpu")
    with pytest.raises(ValueError, match="enable_gqa=True"):
        varlen_attn(q, k, k, cu, cu, 8, 8)
    with pytest.raises(RuntimeError, match="cu_seq_q and cu_seq_k must be 1-D"):
        varlen_attn(q, q, q, cu[:1], cu[:1], 8, 8)
    with pytest.raises(RuntimeError, match="must be int32 or int64"):
        varlen_attn(q, q, q, cu.float(), cu.float(), 8, 8)
    with pytest.raises(NotImplementedError, match="paged KV"):
        varlen_attn(q, q, q, cu, cu, 8, 8, seqused_k=torch.tensor([8], device="tpu",
                                                                  dtype=torch.int32))


def test_assert_async_checks_on_the_device():
    ok = torch.tensor(True, device="tpu")
    torch._assert_async(ok, "never")
    torch.tpu.synchronize()
    bad = torch.tensor([3.0], device="tpu") > 5
    torch._assert_async(bad, "positions out of range")
    with pytest.raises(Exception, match="positions out of range"):
        torch.tpu.synchronize()
    with pytest.raises(RuntimeError, match="more than one value"):
        torch._assert_async(torch.ones(2, device="tpu"))
