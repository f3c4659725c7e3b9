"""Mixture-of-experts layers on tpu: vLLM's unquantized MoE method, with the
experts computed in plain torch ops.

vLLM picks no MoE kernel for an out-of-tree platform (its oracle returns
backend OOT and no experts class) and expects the platform to supply the
method; without one, its method has no kernel and fails at the first MoE
layer. The method here keeps vLLM's weights, loading and routing (the
router's top-k runs in torch), and replaces only the expert computation.

Every expert runs on every token and a [tokens, experts] matrix of router
weights (zero where an expert was not picked) combines them: experts/top_k
times the FLOPs of a routed kernel, but no shape depends on the routing, so
one program serves every batch of a token bucket, compiled or eager. A
grouped, routed lowering is the next step for models where this matters.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
import torch.library
from vllm.model_executor.custom_op import CustomOp
from vllm.model_executor.layers.fused_moe.activation import MoEActivation
from vllm.model_executor.layers.fused_moe.unquantized_fused_moe_method import (
    UnquantizedFusedMoEMethod,
)

# The gated activations (w13 = [gate; up], packed) computed here.
_GATED = {
    MoEActivation.SILU: F.silu,
    MoEActivation.GELU: F.gelu,
    MoEActivation.GELU_TANH: lambda g: F.gelu(g, approximate="tanh"),
}


def dense_experts(x: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor, topk_weights: torch.Tensor,
                  topk_ids: torch.Tensor, activation=MoEActivation.SILU,
                  w13_bias: torch.Tensor | None = None,
                  w2_bias: torch.Tensor | None = None) -> torch.Tensor:
    """sum over the picked experts e of weight(t, e) * w2[e] @ act(w13[e] @ x[t]).

    x [T, H]; w13 [E, 2I, H]; w2 [E, H, I]; topk_weights, topk_ids [T, k]."""
    act = _GATED.get(activation)
    if act is None:
        raise NotImplementedError(f"MoE activation {activation} is not supported on tpu yet")
    h = torch.einsum("th,eih->tei", x, w13)
    if w13_bias is not None:
        h = h + w13_bias
    gate, up = h.chunk(2, dim=-1)
    y = torch.einsum("tei,ehi->teh", act(gate) * up, w2)
    if w2_bias is not None:
        y = y + w2_bias
    combine = torch.zeros(x.shape[0], w13.shape[0], dtype=y.dtype, device=x.device)
    combine = combine.scatter_add(1, topk_ids.to(torch.int64), topk_weights.to(y.dtype))
    return torch.einsum("te,teh->th", combine, y).to(x.dtype)


def _topk(topk_weights, topk_ids, token_expert_indices, gating_output, renormalize, bias,
          scores) -> None:
    """Picks top_k experts per token by scores (+ a correction bias, which
    changes the pick but not the weights) and writes the three outputs."""
    k = topk_ids.shape[-1]
    ranked = scores if bias is None else scores + bias.to(scores.dtype)
    ids = torch.topk(ranked, k, dim=-1).indices
    w = scores.gather(-1, ids)
    if renormalize:
        w = w / w.sum(dim=-1, keepdim=True)
    topk_weights.copy_(w)
    topk_ids.copy_(ids)
    # vLLM's kernel numbers each (token, pick) pair pick-major.
    T = ids.shape[0]
    rows = torch.arange(T, device=ids.device, dtype=torch.int64).unsqueeze(1)
    cols = torch.arange(k, device=ids.device, dtype=torch.int64).unsqueeze(0)
    token_expert_indices.copy_(cols * T + rows)


def _topk_softmax(topk_weights, topk_ids, token_expert_indices, gating_output, renormalize,
                  bias=None, is_padding=None) -> None:
    scores = torch.softmax(gating_output.float(), dim=-1)
    _topk(topk_weights, topk_ids, token_expert_indices, gating_output, renormalize, bias, scores)


def _topk_sigmoid(topk_weights, topk_ids, token_expert_indices, gating_output, renormalize,
                  bias=None, routed_scaling_factor=1.0, is_padding=None) -> None:
    scores = torch.sigmoid(gating_output.float())
    _topk(topk_weights, topk_ids, token_expert_indices, gating_output, renormalize, bias, scores)
    if routed_scaling_factor != 1.0:
        topk_weights.mul_(routed_scaling_factor)


def _define_router_ops() -> None:
    """vLLM's MoE router calls torch.ops._moe_C.topk_softmax / topk_sigmoid,
    CUDA kernels of its compiled _moe_C, which is not loaded on tpu. The same
    ops are defined here in torch (composite: a compiled graph sees the torch
    ops they are made of); where _moe_C is loaded they are left alone."""
    if hasattr(torch.ops._moe_C, "topk_softmax"):
        return
    lib = torch.library.Library("_moe_C", "DEF")
    lib.define("topk_softmax(Tensor(a!) topk_weights, Tensor(b!) topk_indices, "
               "Tensor(c!) token_expert_indices, Tensor gating_output, bool renormalize, "
               "Tensor? bias=None, Tensor? is_padding=None) -> ()")
    lib.define("topk_sigmoid(Tensor(a!) topk_weights, Tensor(b!) topk_indices, "
               "Tensor(c!) token_expert_indices, Tensor gating_output, bool renormalize, "
               "Tensor? bias=None, float routed_scaling_factor=1.0, "
               "Tensor? is_padding=None) -> ()")
    lib.impl("topk_softmax", _topk_softmax, "CompositeImplicitAutograd")
    lib.impl("topk_sigmoid", _topk_sigmoid, "CompositeImplicitAutograd")
    _LIBS.append(lib)


_LIBS: list = []  # keeps the library (and its ops) alive
_define_router_ops()


@CustomOp.register_oot(name="UnquantizedFusedMoEMethod")
class TpuUnquantizedFusedMoEMethod(UnquantizedFusedMoEMethod):
    """vLLM instantiates this in place of UnquantizedFusedMoEMethod on tpu."""

    @property
    def is_monolithic(self) -> bool:
        # Routing happens before apply (vLLM's router), not inside a kernel.
        return False

    def _check(self, layer) -> None:
        if layer.expert_map is not None:
            raise NotImplementedError("expert parallelism is not supported on tpu yet")
        if layer.apply_router_weight_on_input:
            raise NotImplementedError(
                "MoE with apply_router_weight_on_input is not supported on tpu yet")

    def forward_oot(self, layer, x, topk_weights, topk_ids, shared_experts=None,
                    shared_experts_input=None):
        self._check(layer)
        out = dense_experts(x, layer.w13_weight, layer.w2_weight, topk_weights, topk_ids,
                            layer.activation, getattr(layer, "w13_bias", None),
                            getattr(layer, "w2_bias", None))
        if shared_experts is not None:
            out = out + shared_experts(x if shared_experts_input is None else shared_experts_input)
        return out

    # Whichever of its forwards vLLM's CustomOp dispatch picks.
    forward_native = forward_oot
    forward_cuda = forward_oot
