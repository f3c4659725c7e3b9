"""Paged attention on tpu at longer contexts, three ways over the same cache:
- native: torch_pjrt::paged_attention (src/ops/attention.c), the plugin's
  default: query rows in tiles, each tile walking its request's blocks a
  chunk at a time with an online softmax;
- gather: the earlier path, kept behind TORCH_PJRT_VLLM_ATTENTION=gather
  (each query token gathers its request's blocks, [tokens, context,
  kv_heads, 2*head_size], then one softmax);
- dense: the same attention on keys and values already contiguous per
  request (scaled_dot_product_attention over [requests, heads, context,
  head_size]), the floor without any paging.
Not a test.

Per (case, context): median time of one layer's attention call (after a
warm-up call compiles its programs), the peak device memory the call
allocated beyond its inputs, and the gather path's gathered tensor's size.

    .venv/bin/python bench/vllm_attention.py [--decode 256,...,4096]
        [--prefill 128,256,512,1024]

Cases: decode (16 requests, one new token each, every request at the
context length) and prefill (one request whose whole prompt is the context:
the gathered tensor grows with the square of the context, 1 GiB at 1024).
Model shape: 8 query heads over 2 KV heads of 64, block size 16, float32.
"""
import argparse
import json
import statistics
import time

import torch

import torch_pjrt  # noqa: F401

HQ, HKV, D, B = 8, 2, 64, 16


def _time(fn, reps):
    fn()  # compile
    torch.tpu.synchronize()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        torch.tpu.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _peak(fn):
    torch.tpu.synchronize()
    torch.tpu.reset_peak_memory_stats()
    base = torch.tpu.memory_allocated()
    fn()
    torch.tpu.synchronize()
    return torch.tpu.max_memory_allocated() - base


def case(kind, ctx, reps):
    from torch_pjrt.vllm import paged
    from torch_pjrt.vllm.attention import TpuAttentionImpl, TpuAttentionMetadata

    dev = torch.device("tpu")
    reqs, q_per_req = (16, 1) if kind == "decode" else (1, ctx)
    nb = ctx // B
    n = reqs * q_per_req
    blocks_total = reqs * nb + 1
    g = torch.Generator().manual_seed(0)
    cache = torch.randn(blocks_total, B, HKV, 2 * D, generator=g).to(dev).transpose(1, 2)
    query = torch.randn(n, HQ * D, generator=g).to(dev)
    out = torch.empty(n, HQ * D, device=dev)
    # Request r owns blocks 1 + r*nb ... (block 0 is vLLM's null block).
    table = torch.arange(1, blocks_total).view(reqs, nb)
    req = torch.arange(reqs).repeat_interleave(q_per_req)
    pos = (torch.arange(q_per_req).repeat(reqs) + (ctx - q_per_req))
    md = TpuAttentionMetadata(num_actual_tokens=n, query_pos=pos.to(dev), blocks=table[req],
                              slot_mapping=None, tiles=None)
    qsl = torch.arange(reqs + 1).numpy() * q_per_req
    seq = torch.full((reqs,), ctx).numpy()
    tiles = paged.layout(qsl, seq, table.numpy(), n, B).to(dev)
    md_native = TpuAttentionMetadata(num_actual_tokens=n, query_pos=None, blocks=None,
                                     slot_mapping=None, tiles=tiles)
    impl = TpuAttentionImpl(HQ, D, D ** -0.5, HKV)

    def gather():
        impl.forward(None, query, None, None, cache, md, out)

    def native():
        impl.forward(None, query, None, None, cache, md_native, out)

    # The same keys and values, contiguous per request, and the same causal
    # attention through SDPA (the GQA heads repeated as the gather path does).
    kv = cache.transpose(1, 2).reshape(blocks_total * B, HKV, 2 * D)
    rows = (table.view(-1, 1) * B + torch.arange(B)).view(reqs, ctx).to(dev)
    kv = kv[rows].view(reqs, ctx, HKV, 2 * D)
    k = kv[..., :D].permute(0, 2, 1, 3).repeat_interleave(HQ // HKV, 1).contiguous()
    v = kv[..., D:].permute(0, 2, 1, 3).repeat_interleave(HQ // HKV, 1).contiguous()
    q = query.view(reqs, q_per_req, HQ, D).permute(0, 2, 1, 3).contiguous()
    mask = (torch.arange(ctx)[None] <= pos[:q_per_req, None]).to(dev)

    def dense():
        torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    gathered = n * nb * B * HKV * 2 * D * 4
    row = {"case": kind, "context": ctx, "query_tokens": n,
           "native_ms": round(1e3 * _time(native, reps), 2),
           "gather_ms": round(1e3 * _time(gather, reps), 2),
           "dense_ms": round(1e3 * _time(dense, reps), 2),
           "native_peak_mib": round(_peak(native) / 2**20, 1),
           "gather_peak_mib": round(_peak(gather) / 2**20, 1),
           "dense_peak_mib": round(_peak(dense) / 2**20, 1),
           "gathered_kv_mib": round(gathered / 2**20, 1)}
    row["native_vs_gather"] = round(row["native_ms"] / row["gather_ms"], 3)
    row["native_vs_dense"] = round(row["native_ms"] / row["dense_ms"], 2)
    row["gather_vs_dense"] = round(row["gather_ms"] / row["dense_ms"], 2)
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--decode", default="256,512,1024,2048,4096")
    ap.add_argument("--prefill", default="128,256,512,1024")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    print(f"# {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, "
          f"{torch.tpu.get_device_name()}", flush=True)
    for kind in ("decode", "prefill"):
        for ctx in (int(c) for c in getattr(args, kind).split(",") if c):
            try:
                print(json.dumps(case(kind, ctx, args.reps)), flush=True)
            except Exception as e:  # e.g. out of memory at the longest contexts
                print(json.dumps({"case": kind, "context": ctx,
                                  "error": str(e).splitlines()[0][:200]}), flush=True)


if __name__ == "__main__":
    main()
