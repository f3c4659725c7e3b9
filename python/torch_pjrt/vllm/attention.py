"""Paged attention on tpu.

The KV cache of a layer is one tensor, [num_blocks, block_size, kv_heads,
2 * head_size] in memory (vLLM's LBNHC layout: keys and values side by side
in the last dim). New keys and values are written in place at their slots
(index_copy_ into the cache). Attention runs prefills and decodes of one
batch together: each query sees the keys of its own request at positions
<= its own. It reads the cache one of two ways:

- native (the default): torch_pjrt::paged_attention, one op lowered in the
  C table (src/ops/attention.c). The step's query rows are laid out in tiles
  of one request each (paged.py); each tile walks its request's blocks a
  chunk at a time with an online softmax, so no context is ever gathered
  whole. Shapes: (token bucket, rows per tile, tile bucket).
- gather (TORCH_PJRT_VLLM_ATTENTION=gather, kept to measure against): each
  query token gathers its request's first nb blocks through the block table,
  one softmax over them. Shapes: (token bucket, power-of-two block bucket).

Either way every shape is a padded count, never the request count or a query
length, so attention has a bounded set of programs, all compiled at
warm-up. The per-step index work is done once per step on the host by the
metadata builder and shared by every layer.
"""
from __future__ import annotations

from dataclasses import dataclass
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

import os

from ..bucketing import bucket_size
from . import paged
from .kernels import whole


def native_attention() -> bool:
    """The native lowering unless TORCH_PJRT_VLLM_ATTENTION=gather."""
    mode = os.environ.get("TORCH_PJRT_VLLM_ATTENTION", "native")
    if mode not in ("native", "gather"):
        raise ValueError(f"TORCH_PJRT_VLLM_ATTENTION must be 'native' or 'gather', got {mode!r}")
    return mode == "native"


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
    # The gather path's (None on the native one):
    # [N] on tpu: each query token's position in its sequence (N is the
    # step's token count, padded; a padding token's is -1: it sees nothing
    # and its output is never read).
    query_pos: torch.Tensor | None
    # [N, nb] on the host: the blocks each query token reads (its request's
    # first nb blocks; padding reads block 0, masked by position).
    blocks: torch.Tensor | None
    slot_mapping: torch.Tensor
    # The native path's tiles, on tpu (None on the gather path).
    tiles: paged.TileLayout | None = None


# The host copy of each of vLLM's device block tables, by the device
# tensor (registered by TpuModelRunner each step before metadata is built).
_HOST_TABLES: dict[int, tuple[torch.Tensor, np.ndarray]] = {}


def register_host_table(device_table: torch.Tensor, host_table: np.ndarray) -> None:
    _HOST_TABLES[id(device_table)] = (device_table, host_table)


def _host_table(device_table: torch.Tensor) -> np.ndarray:
    entry = _HOST_TABLES.get(id(device_table))
    if entry is not None and entry[0] is device_table:
        return entry[1]
    return device_table.cpu().numpy()  # not registered: one wait for a copy


class TpuAttentionMetadataBuilder(AttentionMetadataBuilder[TpuAttentionMetadata]):
    """Per-step metadata, worked out on the host once per step and shared by
    every layer.

    Native path: the tiles of torch_pjrt::paged_attention (paged.layout),
    uploaded once for all layers; shapes depend on the step's token bucket
    and tile shape, all compiled at warm-up (TpuWorker.compile_or_warm_up_model).
    Gather path: each token's position (uploaded) and blocks (kept on the
    host: an index op checks its indices before it launches, and a device
    index would make the host wait for everything queued before it); shapes
    depend on the token bucket and a power-of-two block count."""

    # Set by the worker's warm-up: the block count every step reads, so that
    # a dummy step compiles the programs of that block bucket.
    warm_blocks: ClassVar[int | None] = None

    def __init__(self, kv_cache_spec, layer_names, vllm_config, device):
        super().__init__(kv_cache_spec, layer_names, vllm_config, device)
        self.block_size = kv_cache_spec.block_size
        self.device = device
        self.eager = vllm_config.model_config.enforce_eager
        self.max_tokens = vllm_config.scheduler_config.max_num_batched_tokens
        self.native = native_attention()

    def build(self, common_prefix_len: int, common_attn_metadata: CommonAttentionMetadata,
              fast_build: bool = False) -> TpuAttentionMetadata:
        m = common_attn_metadata
        R = m.num_reqs
        T = m.num_actual_tokens
        B = self.block_size
        # The model runs on the step's token bucket (TpuModelRunner pads the
        # batch); the metadata is laid out for that many query rows.
        N = T if self.eager else min(bucket_size(T), self.max_tokens)
        qsl = m.query_start_loc_cpu[: R + 1].numpy().astype(np.int64)
        if m.seq_lens_cpu_upper_bound is not None:
            seq = m.seq_lens_cpu_upper_bound[:R].numpy().astype(np.int64)
        else:
            seq = m.seq_lens[:R].cpu().numpy().astype(np.int64)
        qlen = qsl[1:] - qsl[:-1]
        table = _host_table(whole(m.block_table_tensor))
        if self.native:
            tiles = paged.layout(qsl, seq, table, N, B).to(self.device)
            return TpuAttentionMetadata(num_actual_tokens=N, query_pos=None, blocks=None,
                                        slot_mapping=m.slot_mapping, tiles=tiles)
        nb = block_bucket(int(seq.max(initial=1)), B, table.shape[1])
        if TpuAttentionMetadataBuilder.warm_blocks is not None:
            nb = min(TpuAttentionMetadataBuilder.warm_blocks, table.shape[1])

        req = np.repeat(np.arange(R, dtype=np.int64), qlen)[:N]
        tok = np.arange(len(req), dtype=np.int64)
        real_pos = (seq - qlen)[req] + (tok - qsl[:-1][req])
        pos = np.full(N, -1, dtype=np.int64)
        pos[: len(req)] = real_pos
        blocks = np.zeros((N, nb), dtype=np.int64)
        blocks[: len(req)] = table[req, :nb]
        return TpuAttentionMetadata(
            num_actual_tokens=N,
            query_pos=torch.from_numpy(pos).to(self.device),
            blocks=torch.from_numpy(blocks),
            slot_mapping=m.slot_mapping,
        )


def block_bucket(max_seq_len: int, block_size: int, width: int) -> int:
    """How many blocks of the block table a step reads: enough for its
    longest sequence, rounded up to a power of two, at most the table's width."""
    return min(_pow2(max(1, -(-int(max_seq_len) // block_size))), width)


def block_buckets(width: int) -> list[int]:
    """Every value block_bucket can take for a table this wide."""
    out, b = [], 1
    while b < width:
        out.append(b)
        b *= 2
    return out + [width]


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
        # One (block, token) is one row of the memory-order cache.
        return _memory_order(kv_cache).view(-1, self.num_kv_heads, 2 * self.head_size)

    def do_kv_cache_update(self, layer, key, value, kv_cache, slot_mapping) -> None:
        if self.kv_sharing_target_layer_name is not None:
            return
        # vLLM's device slot mapping (its index check waits for the queue).
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
        N = query.shape[0]
        if md.tiles is not None:
            out = self.native(query, kv_cache, md.tiles)
            output.copy_(out.reshape(output.shape))
            return output
        H, D = self.num_kv_heads, self.head_size
        G = self.num_heads // H
        blocks, qpos = md.blocks, md.query_pos
        if blocks.shape[0] != N:  # a caller that did not pad as the runner does
            blocks, qpos = _fit(blocks, N), _fit(qpos, N, -1)

        # [N, nb, block, H, 2D] -> [N, S, H, 2D]: each token's request's keys
        # and values in sequence order (position s is block s // B, row s % B).
        kv = _memory_order(kv_cache)[blocks]
        S = kv.shape[1] * kv.shape[2]
        kv = kv.reshape(N, S, H, 2 * D).float()
        k, v = kv[..., :D], kv[..., D:]

        q = query.reshape(N, H, G, D).float()
        scores = torch.einsum("nhgd,nshd->nhgs", q, k) * self.scale
        if self.logits_soft_cap:
            scores = torch.tanh(scores / self.logits_soft_cap) * self.logits_soft_cap
        kpos = torch.arange(S, device=query.device)
        qpos = qpos.to(torch.int64).unsqueeze(-1)
        visible = kpos <= qpos  # [N, S]: causal, within the token's own request
        if self.sliding_window is not None:
            visible = visible & (kpos > qpos - self.sliding_window)
        # A finite minimum, not -inf: padding tokens may see no key at all,
        # and their softmax must stay finite (their rows are never read).
        scores = scores.masked_fill(~visible[:, None, None], torch.finfo(scores.dtype).min)
        probs = torch.softmax(scores, dim=-1)
        out = torch.einsum("nhgs,nshd->nhgd", probs, v)
        output.copy_(out.reshape(output.shape).to(output.dtype))
        return output


    def native(self, query: torch.Tensor, kv_cache: torch.Tensor,
               tiles: paged.TileLayout) -> torch.Tensor:
        """torch_pjrt::paged_attention over this layer's cache: [N, Hq, D]."""
        n = query.shape[0]
        tiles = _fit_tiles(tiles, n)
        q = query.reshape(n, self.num_heads, self.head_size)
        return paged.paged_attention(q, _memory_order(kv_cache), tiles, self.scale,
                                     self.logits_soft_cap or None, self.sliding_window)

    def warm_up(self, kv_cache: torch.Tensor, dtype: torch.dtype, n_rows: int, table_width: int,
                shapes: list[tuple[int, int]]) -> None:
        """Compiles the native op for n_rows query rows at each (T, P) in
        shapes, for a block table table_width wide: every row padding, the
        same programs serving looks up (a program depends on shapes, not
        values)."""
        cache = _memory_order(kv_cache)
        q = torch.zeros(n_rows, self.num_heads, self.head_size, dtype=dtype, device=cache.device)
        c = paged.chunk_blocks(cache.shape[1])
        for t, p in shapes:
            tiles = paged.TileLayout(
                torch.zeros(p, paged.padded_width(table_width, c), dtype=torch.int32),
                torch.zeros(p * t, dtype=torch.int32), torch.full((p * t,), -1, dtype=torch.int32),
                torch.zeros(n_rows, dtype=torch.int32), c).to(cache.device)
            paged.paged_attention(q, cache, tiles, self.scale, self.logits_soft_cap or None,
                                  self.sliding_window)


def _fit_tiles(tiles: paged.TileLayout, n: int) -> paged.TileLayout:
    """tiles for n query rows (a caller that did not pad as the runner does):
    extra rows read row 0, which is never read back."""
    if tiles.token_row.shape[0] == n:
        return tiles
    return paged.TileLayout(tiles.tile_blocks, tiles.row_token, tiles.row_pos,
                            _fit(tiles.token_row, n), tiles.chunk_blocks)


def _memory_order(kv_cache: torch.Tensor) -> torch.Tensor:
    """The cache as [blocks, block_size, heads, 2 * head_size] in memory order.

    vLLM hands each layer a permuted view of the LBNHC memory; permuting it
    back gives the memory order, but as a view of a view whose programs
    transpose the whole cache on every read and write (an index_copy_ into
    it took 35-50 ms on a 128 MiB cache, against 1 ms into a plain view,
    bench of 2026-12-05). A fresh view with the same strides is read as the
    contiguous buffer it is, and a write through it updates the cache in
    place."""
    kv = kv_cache.transpose(1, 2)
    if not kv.is_contiguous():
        return kv
    return kv.as_strided(kv.shape, kv.stride(), kv.storage_offset())


def _fit(t: torch.Tensor, n: int, fill: int = 0) -> torch.Tensor:
    """t cut or padded with `fill` to n rows."""
    if t.shape[0] >= n:
        return t[:n]
    return torch.cat([t, t.new_full((n - t.shape[0], *t.shape[1:]), fill)])
