"""Paged attention on tpu in plain torch ops.

The KV cache of a layer is one tensor, [num_blocks, block_size, kv_heads,
2 * head_size] in memory (vLLM's LBNHC layout: keys and values side by side
in the last dim). New keys and values are written in place at their slots
(index_copy_ into the cache); attention reads each request's blocks through
the block table (one gather per layer) and runs prefills and decodes of one
batch together: queries are laid out [requests, longest query], each query
sees the keys at positions <= its own, per request.

The per-batch index work (where each query sits in the padded layout, its
position, which blocks to read) is done once per step on the CPU by the
metadata builder and shared by every layer.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import torch
from vllm.v1.attention.backend import (
    AttentionBackend,
    AttentionImpl,
    AttentionMetadataBuilder,
    AttentionType,
    CommonAttentionMetadata,
    MultipleOf,
)
from vllm.v1.kv_cache_layout import KVCacheLayout


def _pow2(n: int) -> int:
    """The next power of two >= n: pads the request and block counts so a few
    shapes serve every batch (each new shape is an executable to compile)."""
    return 1 << max(0, int(n) - 1).bit_length()


class TpuAttentionBackend(AttentionBackend):
    # The cache write is a separate op (do_kv_cache_update), as on CUDA: it
    # runs once per layer before attention reads the cache.
    forward_includes_kv_cache_update: bool = False
    supported_dtypes: ClassVar[list[torch.dtype]] = [torch.float16, torch.bfloat16, torch.float32]
    supported_kv_cache_dtypes: ClassVar[list] = ["auto", "float16", "bfloat16", "float32"]

    @staticmethod
    def get_name() -> str:
        # vLLM looks backends up by name in its enum; out-of-tree backends
        # take its CUSTOM member (registered in platform.py).
        return "CUSTOM"

    @staticmethod
    def get_impl_cls() -> type["TpuAttentionImpl"]:
        return TpuAttentionImpl

    @staticmethod
    def get_builder_cls() -> type["TpuAttentionMetadataBuilder"]:
        return TpuAttentionMetadataBuilder

    @staticmethod
    def get_supported_kernel_block_sizes(kv_cache_spec=None) -> list:
        return [MultipleOf(1)]

    @classmethod
    def supported_kv_cache_layouts(cls) -> tuple[KVCacheLayout, ...]:
        # [blocks, tokens, heads, 2*head_size]: a block's tokens are rows of a
        # flat [slots, heads, 2*head_size] view, so a slot write is one row.
        return (KVCacheLayout.LBNHC,)

    @classmethod
    def supports_sliding_window(cls) -> bool:
        return True

    @classmethod
    def supports_attn_type(cls, attn_type: str) -> bool:
        return attn_type == AttentionType.DECODER


@dataclass
class TpuAttentionMetadata:
    num_actual_tokens: int
    # [R, Q]: for request r's i-th query, its row in the batch's query tensor
    # (padding repeats a real row; its output is never read back).
    query_index: torch.Tensor
    # [R, Q]: the position in its sequence of each padded query.
    query_pos: torch.Tensor
    # [T]: where each real query's output sits in the flat [R * Q] layout.
    out_index: torch.Tensor
    # [R, nb]: the blocks each request reads (padding reads block 0, masked).
    block_ids: torch.Tensor
    slot_mapping: torch.Tensor
    _rows: dict = field(default_factory=dict)

    def out_rows(self, n: int) -> torch.Tensor:
        """out_index extended to n rows (the step's padded token count);
        made once per step, shared by the layers."""
        real = self.out_index.shape[0]
        if n == real:
            return self.out_index
        if n not in self._rows:
            pad = self.out_index.new_zeros(n - real)
            self._rows[n] = torch.cat([self.out_index, pad])
        return self._rows[n]


class TpuAttentionMetadataBuilder(AttentionMetadataBuilder[TpuAttentionMetadata]):
    def __init__(self, kv_cache_spec, layer_names, vllm_config, device):
        super().__init__(kv_cache_spec, layer_names, vllm_config, device)
        self.block_size = kv_cache_spec.block_size
        self.device = device

    def build(self, common_prefix_len: int, common_attn_metadata: CommonAttentionMetadata,
              fast_build: bool = False) -> TpuAttentionMetadata:
        m = common_attn_metadata
        R = m.num_reqs
        T = m.num_actual_tokens
        qsl = m.query_start_loc_cpu[: R + 1].numpy().astype(np.int64)
        if m.seq_lens_cpu_upper_bound is not None:
            seq = m.seq_lens_cpu_upper_bound[:R].numpy().astype(np.int64)
        else:
            seq = m.seq_lens[:R].cpu().numpy().astype(np.int64)
        qlen = qsl[1:] - qsl[:-1]
        Q = _pow2(max(1, int(qlen.max(initial=1))))
        width = m.block_table_tensor.shape[1]
        nb = min(_pow2(max(1, -(-int(seq.max(initial=1)) // self.block_size))), width)

        i = np.arange(Q, dtype=np.int64)
        query_index = np.minimum(qsl[:-1, None] + i[None, :], max(T - 1, 0))
        query_pos = (seq - qlen)[:, None] + i[None, :]
        req = np.repeat(np.arange(R, dtype=np.int64), qlen)
        tok = np.arange(len(req), dtype=np.int64)
        out_index = req * Q + (tok - qsl[:-1][req])

        # One host-to-device copy for the three index tensors.
        packed = torch.from_numpy(np.concatenate([query_index.ravel(), query_pos.ravel(), out_index]))
        packed = packed.to(self.device)
        n = R * Q
        return TpuAttentionMetadata(
            num_actual_tokens=T,
            query_index=packed[:n].view(R, Q),
            query_pos=packed[n:2 * n].view(R, Q),
            out_index=packed[2 * n:],
            block_ids=m.block_table_tensor[:R, :nb].to(torch.int64),
            slot_mapping=m.slot_mapping,
        )


class TpuAttentionImpl(AttentionImpl):
    def __init__(self, num_heads: int, head_size: int, scale: float, num_kv_heads: int | None = None,
                 alibi_slopes=None, sliding_window: int | None = None, kv_cache_dtype: str = "auto",
                 logits_soft_cap: float | None = None, attn_type: str = AttentionType.DECODER,
                 kv_sharing_target_layer_name: str | None = None, sinks=None, **kwargs) -> None:
        if alibi_slopes is not None:
            raise NotImplementedError("ALiBi attention is not supported on tpu yet")
        if sinks is not None:
            raise NotImplementedError("attention sinks are not supported on tpu yet")
        if attn_type != AttentionType.DECODER:
            raise NotImplementedError(f"{attn_type} attention is not supported on tpu yet")
        self.num_heads = num_heads
        self.head_size = head_size
        self.scale = float(scale)
        self.num_kv_heads = num_kv_heads or num_heads
        self.sliding_window = sliding_window
        self.kv_cache_dtype = kv_cache_dtype
        self.logits_soft_cap = logits_soft_cap
        self.attn_type = attn_type
        self.kv_sharing_target_layer_name = kv_sharing_target_layer_name

    def _slots(self, kv_cache: torch.Tensor) -> torch.Tensor:
        # The cache arrives as the logical [blocks, heads, tokens, 2*D] view of
        # LBNHC memory; swapping back gives the memory order, where one
        # (block, token) is one row.
        kv = kv_cache.transpose(1, 2)
        return kv.reshape(-1, self.num_kv_heads, 2 * self.head_size)

    def do_kv_cache_update(self, layer, key, value, kv_cache, slot_mapping) -> None:
        if self.kv_sharing_target_layer_name is not None:
            return
        n = min(key.shape[0], slot_mapping.shape[0])
        # Padding tokens have slot -1; they land in slot 0 of block 0, which
        # vLLM's block pool keeps as the null block and never hands out.
        slots = slot_mapping[:n].clamp(min=0)
        rows = torch.cat([key[:n], value[:n]], dim=-1).to(kv_cache.dtype)
        self._slots(kv_cache).index_copy_(0, slots, rows)

    def forward(self, layer, query, key, value, kv_cache, attn_metadata, output,
                output_scale=None, output_block_scale=None) -> torch.Tensor:
        if output_scale is not None or output_block_scale is not None:
            raise NotImplementedError("fused output quantization is not supported on tpu")
        if attn_metadata is None:  # profiling run: no cache yet
            return output
        md: TpuAttentionMetadata = attn_metadata
        T = md.num_actual_tokens
        R, Q = md.query_index.shape
        H, D = self.num_kv_heads, self.head_size
        G = self.num_heads // H

        # [R, nb, block, H, 2D] -> [R, S, H, 2D]: each request's keys and
        # values in sequence order (position s is at block s // B, row s % B).
        kv = kv_cache.transpose(1, 2)[md.block_ids]
        S = kv.shape[1] * kv.shape[2]
        kv = kv.reshape(R, S, H, 2 * D).float()
        k, v = kv[..., :D], kv[..., D:]

        q = query[:T].reshape(T, H, G, D).float()[md.query_index]  # [R, Q, H, G, D]
        scores = torch.einsum("rqhgd,rshd->rhgqs", q, k) * self.scale
        if self.logits_soft_cap:
            scores = torch.tanh(scores / self.logits_soft_cap) * self.logits_soft_cap
        kpos = torch.arange(S, device=query.device)
        qpos = md.query_pos.unsqueeze(-1)
        visible = kpos <= qpos  # [R, Q, S]
        if self.sliding_window is not None:
            visible = visible & (kpos > qpos - self.sliding_window)
        # A finite minimum, not -inf: padded queries may see no key at all,
        # and their softmax must stay finite (their rows are dropped below).
        scores = scores.masked_fill(~visible[:, None, None], torch.finfo(scores.dtype).min)
        probs = torch.softmax(scores, dim=-1)
        out = torch.einsum("rhgqs,rshd->rqhgd", probs, v)
        # The whole output is written, padding rows included (they repeat a
        # real row): a compiled graph that reads this tensor then always sees
        # it the same way, whether or not the step was padded.
        out = out.reshape(R * Q, self.num_heads * D)[md.out_rows(output.shape[0])]
        output.copy_(out.reshape(output.shape).to(output.dtype))
        return output
