"""Shape bucketing for compiled inference: torch.compile(backend="tpu")
compiles one executable per input shape, so a serving loop that sees every
batch size and sequence length from 1 to N would compile N programs. Padding
each dimension up to the next of a few bucket sizes bounds that to the
number of buckets; the caller slices the result back (and masks padded
positions where they could leak into real ones, e.g. attention)."""
from __future__ import annotations

from typing import Sequence

import torch

DEFAULT_BUCKETS = (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)


def bucket_size(n: int, buckets: Sequence[int] = DEFAULT_BUCKETS) -> int:
    """The smallest bucket >= n (buckets ascending); n itself past the last."""
    if n < 0:
        raise ValueError(f"bucket_size: n must be non-negative, got {n}")
    for b in buckets:
        if b >= n:
            return b
    return n


def pad_to_bucket(t: torch.Tensor, dim: int, buckets: Sequence[int] = DEFAULT_BUCKETS,
                  value: float = 0) -> tuple[torch.Tensor, int]:
    """Pads t along dim with `value` up to bucket_size(t.shape[dim]); returns
    (padded, original length). Runs on t's device (cat of a full tensor)."""
    dim = dim % t.dim()
    n = t.shape[dim]
    size = bucket_size(n, buckets)
    if size == n:
        return t, n
    shape = list(t.shape)
    shape[dim] = size - n
    return torch.cat([t, t.new_full(shape, value)], dim=dim), n
