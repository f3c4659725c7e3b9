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
