"""TorchTitan configs for tpu: `--module torch_pjrt.titan --config NAME`.

TorchTitan 0.3.0 (`make titan`) runs on tpu with its own configs where they
fit (`--module llama3 --config llama3_debugmodel_varlen_attn` trains on one
process unchanged). This module holds what its registry lacks or what needs a
different default here; each config is TorchTitan's own with the changes
named below, and the command line overrides any of it as usual.

- Varlen attention everywhere: TorchTitan refuses SDPA for language models,
  and flex attention needs inductor, which tpu does not use. Its Qwen 3
  configs default to flex, so they are rebuilt here with attn_backend="varlen"
  (torch_attn::_varlen_attn, lowered natively: src/ops/attention.c).
- parallelism.spmd_backend = "partial_dtensor": the 0.3.0 default,
  "spmd_types", passes `dp_mesh_dims` to fully_shard, which torch 2.13's
  FSDP2 does not accept together with plain parameters ("all parameters must
  be DTensors on the full SPMD mesh"); that is a TorchTitan/torch version
  gap, not a device one. partial_dtensor is TorchTitan's DTensor path for the
  model-parallel axes with classic FSDP2 for data parallelism.
"""
from __future__ import annotations

from torchtitan.components.loss import ChunkedLossWrapper, CrossEntropyLoss
from torchtitan.models.common.config_utils import decoder_vocab_size

__all__ = ["llama3_debugmodel", "qwen3_debugmodel", "qwen3_moe_debugmodel",
           "qwen3_moe_smallmodel"]


def _for_tpu(config, model_spec=None):
    if model_spec is not None:
        config.model_spec = model_spec
        config.loss = ChunkedLossWrapper.Config(
            loss_fn=CrossEntropyLoss.Config(global_vocab_size=decoder_vocab_size(model_spec)))
    config.parallelism.spmd_backend = "partial_dtensor"
    return config


def llama3_debugmodel():
    """TorchTitan's llama3_debugmodel_varlen_attn."""
    from torchtitan.models.llama3.config_registry import llama3_debugmodel_varlen_attn
    return _for_tpu(llama3_debugmodel_varlen_attn())


def qwen3_debugmodel():
    """TorchTitan's qwen3_debugmodel with varlen attention."""
    from torchtitan.models.qwen3 import model_registry
    from torchtitan.models.qwen3.config_registry import qwen3_debugmodel as base
    return _for_tpu(base(), model_registry("debugmodel", attn_backend="varlen"))


def qwen3_moe_debugmodel():
    """TorchTitan's qwen3_debugmodel on its "debugmodel_moe" flavor (Qwen 3
    MoE: 8 routed experts, top-k routing, grouped GEMMs) with varlen
    attention."""
    from torchtitan.models.qwen3 import model_registry
    from torchtitan.models.qwen3.config_registry import qwen3_debugmodel as base
    return _for_tpu(base(), model_registry("debugmodel_moe", attn_backend="varlen"))


def qwen3_moe_smallmodel():
    """qwen3_moe_debugmodel with 8 experts (top 2) in 2 layers instead of 64
    (top 8) in 8: the same classes and code paths (router, token dispatcher,
    grouped GEMMs, scatter-add combine) at 9.4M expert parameters instead of
    302M, whose AdamW step alone takes seconds on the CPU plugin."""
    from torchtitan.models.common.rope import CosSinRoPE
    from torchtitan.models.qwen3 import _build_qwen3_moe_layers, model_registry
    from torchtitan.models.qwen3.config_registry import qwen3_debugmodel as base
    spec = model_registry("debugmodel_moe", attn_backend="varlen")
    spec.flavor = "smallmodel_moe"
    spec.model.layers = _build_qwen3_moe_layers(
        n_layers=2, dim=256, n_heads=16, n_kv_heads=8, head_dim=128, moe_hidden_dim=768,
        num_experts=8, top_k=2, attn_backend="varlen", moe_comm_backend="standard",
        rope=CosSinRoPE.Config(dim=128, max_seq_len=4096, theta=1000000.0))
    return _for_tpu(base(), spec)
