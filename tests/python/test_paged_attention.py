"""torch_pjrt::paged_attention (src/ops/attention.c) and its host layout
(torch_pjrt/vllm/paged.py), against attention computed per token in float64
on the CPU from the same cache and block table. vLLM is not needed."""
import numpy as np
import pytest
import torch

import torch_pjrt
from torch_pjrt.vllm import paged

DEV = "tpu"


def reference(q, cache, qsl, seq, table, scale, soft_cap=None, window=None):
    """Each query token of request r, at position seq[r] - qlen + i, against
    the keys of r at positions <= its own (and > pos - window)."""
    n, hq, d = q.shape
    bs, hk = cache.shape[1], cache.shape[2]
    g = hq // hk
    out = torch.zeros(n, hq, d, dtype=torch.float64)
    for r in range(len(qsl) - 1):
        length = int(seq[r])
        nb = -(-length // bs)
        kv = cache[torch.as_tensor(table[r, :nb])].reshape(nb * bs, hk, 2 * d)[:length].double()
        k, v = kv[..., :d], kv[..., d:]
        qlen = int(qsl[r + 1] - qsl[r])
        for i in range(int(qsl[r]), int(qsl[r + 1])):
            pos = length - qlen + (i - int(qsl[r]))
            s = torch.einsum("hgd,shd->hgs", q[i].double().view(hk, g, d), k) * scale
            if soft_cap:
                s = torch.tanh(s / soft_cap) * soft_cap
            kpos = torch.arange(length)
            vis = kpos <= pos
            if window:
                vis &= kpos > pos - window
            p = torch.softmax(s.masked_fill(~vis, float("-inf")), -1)
            out[i] = torch.einsum("hgs,shd->hgd", p, v).reshape(hq, d)
    return out


def make_step(qlens, seqs, *, hq=8, hk=2, d=16, bs=4, width=12, pad=3, dtype=torch.float32,
              seed=0):
    g = torch.Generator().manual_seed(seed)
    qlens, seqs = np.array(qlens), np.array(seqs)
    r = len(qlens)
    nblocks = r * width + 1
    cache = torch.randn(nblocks, bs, hk, 2 * d, generator=g).to(dtype)
    # request r owns a shuffled set of blocks; block 0 is never handed out
    table = (torch.randperm(nblocks - 1, generator=g) + 1)[: r * width].view(r, width).numpy()
    qsl = np.concatenate([[0], np.cumsum(qlens)])
    n = int(qsl[-1]) + pad
    q = torch.randn(n, hq, d, generator=g).to(dtype)
    return q, cache, qsl, seqs, table, n


def run(q, cache, qsl, seq, table, n, scale, **kw):
    tiles = paged.layout(qsl, seq, table, n, cache.shape[1])
    out = paged.paged_attention(q.to(DEV), cache.to(DEV), tiles.to(DEV), scale, **kw)
    return out.cpu(), tiles


CASES = {
    # every request decodes one token: one tile per row
    "decode": ([1, 1, 1, 1], [5, 17, 33, 48]),
    # chunked prefill beside decodes and a prefix-cached continuation
    "mixed": ([7, 1, 3, 20], [7, 30, 11, 41]),
    # one long prompt, many loop steps and several tiles
    "prefill": ([45], [45]),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("opts", [{}, {"soft_cap": 4.0}, {"window": 6}],
                         ids=["plain", "soft_cap", "window"])
def test_matches_cpu_reference(case, opts):
    q, cache, qsl, seq, table, n = make_step(*CASES[case])
    out, tiles = run(q, cache, qsl, seq, table, n, 0.3, **opts)
    ref = reference(q, cache, qsl, seq, table, 0.3, **opts)
    real = int(qsl[-1])
    torch.testing.assert_close(out[:real].double(), ref[:real], atol=2e-5, rtol=1e-5)
    # padding rows see no key: finite output (0), never read by vLLM
    assert torch.isfinite(out).all()
    t = tiles.row_token.numel() // tiles.tile_blocks.shape[0]
    assert t == (1 if case == "decode" else paged.PREFILL_TILE)


@pytest.mark.parametrize("dtype,tol", [(torch.float16, 2e-3), (torch.bfloat16, 1.6e-2)])
def test_half_precision_cache(dtype, tol):
    q, cache, qsl, seq, table, n = make_step(*CASES["mixed"], dtype=dtype)
    out, _ = run(q, cache, qsl, seq, table, n, 0.25)
    assert out.dtype == dtype
    ref = reference(q, cache, qsl, seq, table, 0.25)
    real = int(qsl[-1])
    torch.testing.assert_close(out[:real].double(), ref[:real], atol=tol, rtol=tol)


def test_multi_query_heads_and_block_size_one():
    # MQA (one kv head), block size 1: a chunk of many blocks per loop step
    q, cache, qsl, seq, table, n = make_step([3, 1], [9, 14], hq=4, hk=1, bs=1, width=16)
    out, _ = run(q, cache, qsl, seq, table, n, 0.5)
    ref = reference(q, cache, qsl, seq, table, 0.5)
    torch.testing.assert_close(out[:4].double(), ref[:4], atol=2e-5, rtol=1e-5)


def test_forced_tile_shapes_give_the_same_values():
    # the warm-up's shapes (T, P) must compute what the step's own shape does
    q, cache, qsl, seq, table, n = make_step(*CASES["mixed"])
    base, _ = run(q, cache, qsl, seq, table, n, 0.3)
    for shape in [(1, n), (paged.PREFILL_TILE, 8)]:
        tiles = paged.layout(qsl, seq, table, n, cache.shape[1], shape=shape)
        out = paged.paged_attention(q.to(DEV), cache.to(DEV), tiles.to(DEV), 0.3).cpu()
        torch.testing.assert_close(out[: int(qsl[-1])], base[: int(qsl[-1])], atol=1e-6, rtol=1e-6)
    with pytest.raises(ValueError, match="needs more than 1 tiles of 16"):
        paged.layout(qsl, seq, table, n, cache.shape[1], shape=(paged.PREFILL_TILE, 1))


def test_tile_shapes_cover_every_step():
    # what the worker compiles at warm-up is every shape a step can take
    rng = np.random.default_rng(0)
    buckets, max_reqs = [8, 16, 32, 64, 128], 12
    for _ in range(300):
        r = int(rng.integers(1, max_reqs + 1))
        qlens = rng.integers(1, 40, size=r) if rng.random() < 0.5 else np.ones(r, dtype=np.int64)
        total = int(qlens.sum())
        if total > buckets[-1]:
            continue
        n = next(b for b in buckets if b >= total)
        prev = max([b for b in buckets if b < n], default=0)
        seqs = qlens + rng.integers(0, 30, size=r)
        qsl = np.concatenate([[0], np.cumsum(qlens)])
        tiles = paged.layout(qsl, seqs, np.zeros((r, 20), dtype=np.int32), n, 16)
        p = tiles.tile_blocks.shape[0]
        shape = (tiles.row_token.numel() // p, p)
        assert shape in paged.tile_shapes(n, prev, max_reqs), (qlens, n, shape)


def test_no_fallback_and_one_program_per_shape():
    q, cache, qsl, seq, table, n = make_step(*CASES["mixed"])
    run(q, cache, qsl, seq, table, n, 0.3)
    before = torch_pjrt.metrics()["compiles"]
    # other values, same shapes: no new program
    q2, cache2, qsl2, seq2, table2, _ = make_step([5, 2, 3, 21], [9, 30, 12, 40], seed=1)
    run(q2, cache2, qsl2, seq2, table2, n, 0.7)
    assert torch_pjrt.metrics()["compiles"] == before
    assert not any("paged_attention" in k for k in torch_pjrt.fallbacks())


def _args():
    q, cache, qsl, seq, table, n = make_step([2, 1], [4, 6])
    tiles = paged.layout(qsl, seq, table, n, cache.shape[1])
    return [q.to(DEV), cache.to(DEV), tiles.tile_blocks, tiles.row_token, tiles.row_pos,
            tiles.token_row]


def test_bad_input_raises():
    op = torch.ops.torch_pjrt.paged_attention
    a = _args()
    with pytest.raises(RuntimeError, match=r"query must be \(tokens, heads, head_size\)"):
        op(a[0].flatten(1), *a[1:], 0.5)
    with pytest.raises(RuntimeError, match=r"must be twice the head size"):
        op(a[0][..., :8], *a[1:], 0.5)
    with pytest.raises(RuntimeError, match=r"query heads \(8\) must be a multiple of the kv heads \(3\)"):
        op(a[0], a[1].new_zeros(a[1].shape[0], 4, 3, 32), *a[2:], 0.5)
    bad = a[2].clone()
    bad[0, 0] = a[1].shape[0]  # one past the last block
    with pytest.raises(IndexError, match=r"tile_blocks has values in \[.*\], outside \[0, 25\)"):
        op(a[0], a[1], bad, *a[3:], 0.5)
    with pytest.raises(RuntimeError, match=r"token_row must have one entry per query token"):
        op(*a[:5], a[5][:-1], 0.5)
    with pytest.raises(RuntimeError, match=r"must be int32 or int64, got Float"):
        op(*a[:3], a[3].float(), *a[4:], 0.5)
    with pytest.raises(RuntimeError, match=r"Expected all tensors to be on the same device"):
        op(a[0], a[1].cpu(), *a[2:], 0.5)
    with pytest.raises(RuntimeError, match=r"width a multiple of chunk_blocks \(3\)"):
        op(*a, 0.5, chunk_blocks=3)


def test_meta_shape():
    a = _args()
    out = torch.ops.torch_pjrt.paged_attention(a[0].to("meta"), a[1].to("meta"), *a[2:], 0.5)
    assert out.shape == a[0].shape and out.device.type == "meta"
