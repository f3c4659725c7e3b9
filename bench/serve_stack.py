"""The serving stack on tpu: vLLM replicas behind vllm-router, all on
127.0.0.1 (docs/PERFORMANCE.md, "Serving stack").

    .venv/bin/python bench/serve_stack.py [--part routing|pd|all]

- routing: a multi-tenant shared-prefix workload (--tenants system prompts of
  --prefix-tokens tokens, --questions short questions each, sent in a seeded
  shuffled order, --concurrency at a time) through two replicas behind the
  router, with its cache_aware policy (a prefix tree of what it routed), its
  kv_aware policy (an index of the replicas' own KV-cache events, through
  a ZMQ forwarder on 127.0.0.1) and round_robin. Each replica's
  KV cache holds about --cache-prompts system prompts: more than half the
  tenants, fewer than all of them, so that where a prompt is sent decides
  whether it is found. Reports output tokens/s, TTFT p50/p99 (streamed) and
  the prefix-cache hit rate (hits / queries over both replicas' counters).
- pd: long prompts (--long-prompt tokens, 8 output tokens) mixed with long
  decodes (16-token prompts, --long-decode output tokens), all at once, through
  the router: P/D (a prefill and a decode instance, TpuKVConnector, the
  router's P/D mode) against colocated serving (two replicas, round_robin).
  Reports TTFT and inter-token latency p50/p99, each kind of request apart.

The model is a random-weight Llama built here (4 layers, hidden 512, GQA
8 over 4, float32), large enough that a 512-token prefill costs more than a
handful of decode steps on the CPU PJRT plugin. The engines are compiled
(vLLM's default; every token bucket is compiled at start-up, so the timed
load compiles nothing), with TORCH_PJRT_FALLBACK=warn: with =error the tpu
compile backend refuses the graph split at vLLM's unified_kv_cache_update
(the tests run eager, where it is =error). Every engine uses one
max_model_len (MAX_LEN), so both parts share the compiled programs in the
disk cache. Each request loop is bounded in count and time.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "python", "serving"))

import _serving  # noqa: E402

BLOCK = 16
MAX_LEN = 560
ENGINE = dict(max_model_len=MAX_LEN, eager=False, env={"TORCH_PJRT_FALLBACK": "warn"})
REQUEST_TIMEOUT_S = 300


def build_model(path: str) -> str:
    if not os.path.exists(os.path.join(path, "config.json")):
        _serving.tiny_models.build_llama(path, hidden_size=512, intermediate_size=1024,
                                         num_hidden_layers=4, num_attention_heads=8,
                                         num_key_value_heads=4, max_position_embeddings=2048,
                                         initializer_range=0.05)
    return path


def kv_bytes_per_token() -> int:
    return 4 * 2 * 4 * 64 * 4  # layers * (k, v) * kv heads * head dim * float32


def stream(base: str, model: str, prompt, max_tokens: int) -> dict:
    """One streamed completion: its TTFT, the gaps between later chunks and
    how many tokens came."""
    body = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
            "ignore_eos": True, "stream": True}
    req = urllib.request.Request(base + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    times = []
    with urllib.request.urlopen(req, timeout=REQUEST_TIMEOUT_S) as r:
        for line in r:
            line = line.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("choices") and chunk["choices"][0].get("text") is not None:
                times.append(time.perf_counter())
    return {"ttft": times[0] - t0 if times else None,
            "itl": [b - a for a, b in zip(times, times[1:])], "tokens": len(times),
            "end": times[-1] if times else time.perf_counter()}


def pct(xs, q):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    return xs[min(len(xs) - 1, int(round(q / 100 * (len(xs) - 1))))]


def run_load(base, model, jobs, concurrency, deadline_s):
    """jobs: [(prompt, max_tokens, kind)]; at most `concurrency` in flight,
    none started after deadline_s."""
    start = time.perf_counter()
    stop_at = start + deadline_s
    results = []
    lock = threading.Lock()

    def one(job):
        if time.perf_counter() > stop_at:
            return
        prompt, max_tokens, kind = job
        try:
            r = stream(base, model, prompt, max_tokens)
            r["kind"] = kind
        except Exception as e:  # counted, not hidden
            r = {"kind": kind, "error": repr(e), "tokens": 0, "ttft": None, "itl": [],
                 "end": time.perf_counter()}
        with lock:
            results.append(r)

    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, jobs))
    wall = max((r["end"] for r in results), default=start) - start
    return results, wall


def summarize(results, wall):
    ok = [r for r in results if "error" not in r]
    itl = [g for r in ok for g in r["itl"]]
    ms = lambda x: None if x is None else round(1000 * x, 1)  # noqa: E731
    return {"requests": len(results), "errors": len(results) - len(ok),
            "out_tok_s": round(sum(r["tokens"] for r in ok) / wall, 1) if wall else None,
            "ttft_p50_ms": ms(pct([r["ttft"] for r in ok], 50)),
            "ttft_p99_ms": ms(pct([r["ttft"] for r in ok], 99)),
            "itl_p50_ms": ms(pct(itl, 50)), "itl_p99_ms": ms(pct(itl, 99)),
            "wall_s": round(wall, 1)}


def start_all(procs, timeout=900):
    for p in procs:
        p.wait_ready(timeout)


def routing(args, model, logs):
    rng = random.Random(0)
    systems = [[rng.randrange(3, 300) for _ in range(args.prefix_tokens)]
               for _ in range(args.tenants)]
    jobs = [(systems[t] + [rng.randrange(3, 300) for _ in range(8)], args.out_tokens, f"t{t}")
            for t in range(args.tenants) for _ in range(args.questions)]
    rng.shuffle(jobs)
    assert args.prefix_tokens + 8 + args.out_tokens <= MAX_LEN
    kv = args.cache_prompts * (args.prefix_tokens + 2 * BLOCK) * kv_bytes_per_token()
    rows = []
    for policy in ("cache_aware", "kv_aware", "round_robin"):
        procs, bridges, extra = [], [], []
        try:
            ipc = [f"ipc://{logs}/{policy}-events{i}.ipc" for i in range(2)]
            replicas = [_serving.vllm_serve(
                f"{policy}-replica{i}", model, logs, "--kv-events-config",
                json.dumps({"enable_kv_cache_events": True, "publisher": "zmq",
                            "endpoint": ipc[i]}), kv_bytes=kv, **ENGINE)
                        for i in range(2)]
            procs += replicas
            start_all(replicas)
            if policy == "kv_aware":  # the replicas' events, through a forwarder
                bridges = [_serving.KVEventsBridge(e) for e in ipc]
                for r, b in zip(replicas, bridges):
                    extra += ["--kv-event-source", f"{r.url}={b.endpoint}"]
                extra += ["--kv-event-block-size", str(BLOCK), "--kv-event-model", model]
            router = _serving.vllm_router(logs, "--worker-urls", *[r.url for r in replicas],
                                          "--policy", policy, *extra, name=f"{policy}-router")
            procs.append(router)
            router.wait_ready(60)
            # One request of each length first, straight to each replica: the
            # programs of the shapes the load uses are compiled before timing.
            for r in replicas:
                stream(r.url, model, [5] * (args.prefix_tokens + 8), 2)
            q0 = [_serving.metric(r.url, "vllm:prefix_cache_queries_total") for r in replicas]
            h0 = [_serving.metric(r.url, "vllm:prefix_cache_hits_total") for r in replicas]
            results, wall = run_load(router.url, model, jobs, args.concurrency, args.deadline)
            q = sum(_serving.metric(r.url, "vllm:prefix_cache_queries_total") for r in replicas)
            h = sum(_serving.metric(r.url, "vllm:prefix_cache_hits_total") for r in replicas)
            row = {"part": "routing", "policy": policy, **summarize(results, wall),
                   "prefix_hit_rate": round((h - sum(h0)) / max(1.0, q - sum(q0)), 3)}
        finally:
            for p in reversed(procs):
                p.stop()
            for b in bridges:
                b.close()
        print("ROW " + json.dumps(row), flush=True)
        rows.append(row)
    return rows


def pd(args, model, logs):
    rng = random.Random(1)
    jobs = []
    for i in range(args.pd_requests):
        if i % 2 == 0:
            jobs.append(([rng.randrange(3, 300) for _ in range(args.long_prompt)], 8, "long_prompt"))
        else:
            jobs.append(([rng.randrange(3, 300) for _ in range(16)], args.long_decode,
                         "long_decode"))
    assert max(args.long_prompt + 8, 16 + args.long_decode) <= MAX_LEN
    kv = 64 << 20
    rows = []
    for mode in ("colocated", "pd"):
        procs = []
        try:
            if mode == "pd":
                port = _serving.free_port()
                cfg = {"kv_connector": "TpuKVConnector",
                       "kv_connector_module_path": "torch_pjrt.vllm.kv_connector",
                       "kv_role": "kv_both"}
                prefill = _serving.vllm_serve(
                    "pd-prefill", model, logs, "--kv-transfer-config",
                    json.dumps(dict(cfg, kv_connector_extra_config={"port": port})),
                    kv_bytes=kv, **ENGINE)
                decode = _serving.vllm_serve("pd-decode", model, logs, "--kv-transfer-config",
                                             json.dumps(cfg), kv_bytes=kv, **ENGINE)
                engines = [prefill, decode]
                procs += engines
                start_all(engines)
                router_args = ["--vllm-pd-disaggregation", "--prefill", prefill.url, "--decode",
                               decode.url, "--policy", "round_robin"]
            else:
                engines = [_serving.vllm_serve(f"colocated{i}", model, logs, kv_bytes=kv,
                                               **ENGINE)
                           for i in range(2)]
                procs += engines
                start_all(engines)
                router_args = ["--worker-urls", *[e.url for e in engines], "--policy",
                               "round_robin"]
            router = _serving.vllm_router(logs, *router_args, name=f"{mode}-router")
            procs.append(router)
            router.wait_ready(60)
            for e in engines:  # compile the shapes first (see routing)
                stream(e.url, model, [5] * args.long_prompt, 2)
            results, wall = run_load(router.url, model, jobs, len(jobs), args.deadline)
        finally:
            for p in reversed(procs):
                p.stop()
        for kind in ("long_prompt", "long_decode"):
            row = {"part": "pd", "mode": mode, "kind": kind,
                   **summarize([r for r in results if r["kind"] == kind], wall)}
            print("ROW " + json.dumps(row), flush=True)
            rows.append(row)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", default="all", choices=["routing", "pd", "all"])
    ap.add_argument("--tenants", type=int, default=16)
    ap.add_argument("--prefix-tokens", type=int, default=512)
    ap.add_argument("--questions", type=int, default=6)
    ap.add_argument("--out-tokens", type=int, default=16)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--cache-prompts", type=int, default=10,
                    help="system prompts each replica's KV cache holds")
    ap.add_argument("--pd-requests", type=int, default=16)
    ap.add_argument("--long-prompt", type=int, default=512)
    ap.add_argument("--long-decode", type=int, default=128)
    ap.add_argument("--deadline", type=float, default=600,
                    help="no request starts later than this many seconds into a run")
    ap.add_argument("--model", default=os.path.join(ROOT, "build", "serve-stack-model"))
    args = ap.parse_args()
    model = build_model(args.model)
    logs = os.path.join(ROOT, "build", "serve-stack-logs")
    os.makedirs(logs, exist_ok=True)
    rows = []
    if args.part in ("routing", "all"):
        rows += routing(args, model, logs)
    if args.part in ("pd", "all"):
        rows += pd(args, model, logs)
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
