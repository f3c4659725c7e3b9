"""The host side of torch_pjrt::paged_attention: how a step's query tokens
are laid out in tiles for the native lowering (src/ops/attention.c).

A tile is T query rows of one request; it reads that request's blocks of the
KV cache a chunk at a time, so one gathered block serves T queries. Decode
steps (every request one new token) use T = 1 and one tile per token row;
steps with a prefill use T = PREFILL_TILE, a request of q new tokens taking
ceil(q / T) tiles, and the tile count padded to a power of two (steps of
at most SMALL_STEP_ROWS rows keep T = 1). Shapes then
depend only on the step's token bucket and that tile bucket, a short list
the worker compiles at warm-up (tile_shapes).

Nothing here imports vLLM: the layout is plain numpy over vLLM's host
arrays (query start offsets, sequence lengths, the block table).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

# Query rows per tile when the step has a prefill, and the keys one loop
# step of the lowering reads per tile (in blocks: KEYS_PER_STEP // block).
PREFILL_TILE = 16
KEYS_PER_STEP = 64
# Steps of at most this many rows use one row per tile whatever they hold:
# they cost at most what as many decodes cost, and their token buckets then
# need one program each instead of one per tile count (fewer to compile at
# start-up).
SMALL_STEP_ROWS = 32


def _pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def chunk_blocks(block_size: int) -> int:
    """Blocks each loop step of the lowering reads."""
    return max(1, KEYS_PER_STEP // int(block_size))


def padded_width(width: int, chunk: int) -> int:
    """The block table's width rounded up to whole chunks."""
    return -(-int(width) // chunk) * chunk


@dataclass
class TileLayout:
    """torch_pjrt::paged_attention's index operands for one step."""
    tile_blocks: torch.Tensor  # [P, W] int32: each tile's request's blocks
    row_token: torch.Tensor    # [P*T] int32: the query token of each row
    row_pos: torch.Tensor      # [P*T] int32: its position (-1: padding row)
    token_row: torch.Tensor    # [N] int32: each query token's row
    chunk_blocks: int

    def to(self, device) -> "TileLayout":
        return TileLayout(*(t.to(device) for t in (self.tile_blocks, self.row_token,
                                                    self.row_pos, self.token_row)),
                          self.chunk_blocks)


def tile_rows(max_query_len: int, n_rows: int) -> int:
    """T for a step of n_rows padded rows whose longest query is
    max_query_len tokens."""
    return 1 if max_query_len <= 1 or n_rows <= SMALL_STEP_ROWS else PREFILL_TILE


def tile_count(n_rows: int, tiles_needed: int, rows_per_tile: int) -> int:
    """P: one tile per row for decode steps, else the tiles the requests
    need padded to a power of two."""
    if rows_per_tile == 1:
        return n_rows
    return _pow2(max(1, tiles_needed))


def tile_shapes(n_rows: int, prev_rows: int, max_reqs: int) -> list[tuple[int, int]]:
    """Every (T, P) a step of n_rows padded rows can take, when the next
    smaller token bucket is prev_rows (0 for none) and at most max_reqs
    requests run: what the warm-up compiles."""
    out = [(1, n_rows)]
    if n_rows <= SMALL_STEP_ROWS:
        return out
    t = PREFILL_TILE
    # more than prev_rows real tokens, so at least ceil((prev_rows+1)/T)
    # tiles; at most every request's partial tile on top of the full ones
    lo = _pow2(-(-(prev_rows + 1) // t))
    hi = _pow2(-(-n_rows // t) + min(n_rows, max_reqs) - 1)
    p = lo
    while p <= hi:
        out.append((t, p))
        p *= 2
    return out


def layout(query_start: np.ndarray, seq_lens: np.ndarray, table: np.ndarray, n_rows: int,
           block_size: int, shape: tuple[int, int] | None = None) -> TileLayout:
    """The tiles of one step, on the host.

    query_start: R + 1 offsets of each request's new tokens; seq_lens: each
    request's length including them; table: [>= R, W] block ids; n_rows: the
    step's padded token count (tokens past the last offset are padding).
    shape: (T, P) to use instead of the step's own (the warm-up's)."""
    qsl = np.asarray(query_start, dtype=np.int64)
    seq = np.asarray(seq_lens, dtype=np.int64)
    r = len(qsl) - 1
    qlen = qsl[1:] - qsl[:-1]
    n_real = int(qsl[-1]) if r > 0 else 0
    if n_real > n_rows:
        raise ValueError(f"paged attention: {n_real} query tokens do not fit {n_rows} rows")
    t = tile_rows(int(qlen.max(initial=0)), n_rows)
    ntiles_req = -(-qlen // t)
    first_tile = np.concatenate([[0], np.cumsum(ntiles_req)])
    p = tile_count(n_rows, int(first_tile[-1]), t)
    if shape is not None:
        t_w, p_w = shape
        if -(-qlen // t_w).sum() > p_w:
            raise ValueError(f"paged attention: the step needs more than {p_w} tiles of {t_w}")
        t, p = t_w, p_w
        ntiles_req = -(-qlen // t)
        first_tile = np.concatenate([[0], np.cumsum(ntiles_req)])
    c = chunk_blocks(block_size)
    w = table.shape[1]
    w_pad = padded_width(w, c)

    req = np.repeat(np.arange(r, dtype=np.int64), qlen)
    j = np.arange(n_real, dtype=np.int64) - qsl[:-1][req]  # index within the request
    rows = first_tile[:-1][req] * t + j
    row_token = np.zeros(p * t, dtype=np.int32)
    row_pos = np.full(p * t, -1, dtype=np.int32)
    row_token[rows] = np.arange(n_real)
    row_pos[rows] = (seq - qlen)[req] + j
    token_row = np.zeros(n_rows, dtype=np.int32)
    token_row[:n_real] = rows
    tile_blocks = np.zeros((p, w_pad), dtype=np.int32)
    tile_req = np.repeat(np.arange(r, dtype=np.int64), ntiles_req)
    tile_blocks[: len(tile_req), :w] = table[tile_req]
    return TileLayout(torch.from_numpy(tile_blocks), torch.from_numpy(row_token),
                      torch.from_numpy(row_pos), torch.from_numpy(token_row), c)


def paged_attention(query: torch.Tensor, kv_cache: torch.Tensor, tiles: TileLayout, scale: float,
                    soft_cap: float | None = None, window: int | None = None) -> torch.Tensor:
    """query [N, Hq, D] against the cache [blocks, block, Hk, 2D] (memory
    order): [N, Hq, D] in query's dtype."""
    return torch.ops.torch_pjrt.paged_attention(
        query, kv_cache, tiles.tile_blocks, tiles.row_token, tiles.row_pos, tiles.token_row,
        scale, soft_cap, window, tiles.chunk_blocks)
