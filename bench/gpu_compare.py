"""Our `tpu` device side by side with a reference device in one process:
bf16 matmul throughput, the small LM's compiled training step, small eager
op latency, Hugging Face Llama greedy generation and the bf16 MFU of a
larger LM step. Written for one short run on an NVIDIA GPU (reference
"cuda", PyTorch's own backend; tpu runs on the XLA CUDA PJRT plugin there),
dry-run on the CPU with --ref cpu --quick. Each section and each variant
records its error and the run goes on; results are rewritten after every
section so a run cut short still leaves what it measured. The reference
device's training steps run in a child process without torch_pjrt
(train_step_child says why). Not a test.

    python bench/gpu_compare.py [--ref cuda|cpu] [--quick] [--only a,b] [--json P] [--md P]

For a CPU reference set OMP_WAIT_POLICY=passive: with the CPU plugin open,
PyTorch's spinning OpenMP threads make its CPU ops 10-100x slower.
"""
import argparse
import copy
import gc
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))

import torch  # noqa: E402

import models  # noqa: E402
# A reference training step runs in a child process without torch_pjrt
# (see train_step_child); everything else imports it.
CHILD = "--child-train" in sys.argv
if not CHILD:
    import torch_pjrt  # noqa: E402
from compile_step import SIZES as LM_STEP  # noqa: E402  (its "small" and "large" LMs)

T0 = time.perf_counter()
# Seconds of timed repeats a section may spend (split among its variants);
# warm-up and compiling are not limited, they are what they are.
SECTION_BUDGET = 40.0
SYNC = {"tpu": lambda: torch.tpu.synchronize(), "cpu": lambda: None,
        "cuda": lambda: torch.cuda.synchronize()}

# The MFU model: GPT-2-medium width on 8 layers (109M matmul parameters),
# sequences long enough that attention matters, a batch that keeps a GPU busy.
MFU = {"quick": dict(model=dict(vocab=256, d=64, heads=4, layers=2, seq=64), batch=4),
       "full": dict(model=dict(vocab=8192, d=1024, heads=16, layers=8, seq=1024), batch=16)}
# The tiny Llama of tests/python/hf_models.py (hidden 64, 2 layers), and
# for the GPU one 8x wider and twice as deep (about 17M parameters).
HF_FULL = dict(vocab_size=4096, hidden_size=512, intermediate_size=1536, num_hidden_layers=4,
               num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=256)


def log(msg):
    print(f"[{time.perf_counter() - T0:7.1f}s] {msg}", flush=True)


def err(e):
    return f"{type(e).__name__}: {e}".strip()[:600]


def measure(fn, sync, iters, repeats, warmup, budget):
    """Seconds per call of fn: the median of up to `repeats` runs of `iters`
    calls, each run closed by one sync, after `warmup` synced calls (the
    first pays for compiling: first_s). Iterations and repeats shrink to
    keep the timed part near `budget` seconds, so a slow device still
    gives a number (a noisier one, with its iters/runs recorded)."""
    t0 = time.perf_counter()
    fn()
    sync()
    first = est = time.perf_counter() - t0
    for _ in range(warmup - 1):
        t = time.perf_counter()
        fn()
        sync()
        est = time.perf_counter() - t
        if time.perf_counter() - t0 - first > budget / 4:
            break
    iters = max(1, min(iters, int(budget / repeats / max(est, 1e-9))))
    runs, start = [], time.perf_counter()
    while len(runs) < repeats and (not runs or time.perf_counter() - start < budget):
        t = time.perf_counter()
        for _ in range(iters):
            fn()
        sync()
        runs.append((time.perf_counter() - t) / iters)
    return {"s": statistics.median(runs), "iters": iters, "runs": len(runs),
            "warmup_s": round(first, 3)}


def variant(label, fn):
    """One row: fn()'s numbers, or its error; the section goes on either way."""
    t0 = time.perf_counter()
    try:
        row = {"variant": label, **fn()}
    except Exception as e:  # noqa: BLE001 - a bench records every failure
        traceback.print_exc()
        row = {"variant": label, "error": err(e)}
    log(f"  {label}: {json.dumps(row)[:300]} ({time.perf_counter() - t0:.1f} s)")
    return row


def ratio(rows, key, num, den):
    a = next((r.get(key) for r in rows if r["variant"] == num), None)
    b = next((r.get(key) for r in rows if r["variant"] == den), None)
    return a / b if a and b else None


def sec_matmul(ref, quick):
    n = 1024 if quick else 8192

    def run(dev):
        a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
        b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
        m = measure(lambda: a @ b, SYNC[dev], iters=10, repeats=3, warmup=3,
                    budget=SECTION_BUDGET / 2)
        s = m.pop("s")
        return {"ms": round(s * 1e3, 3), "tflops": 2 * n**3 / s / 1e12, **m}

    rows = [variant(dev, lambda: run(dev)) for dev in ("tpu", ref)]
    return {"config": {"n": n, "dtype": "bfloat16", "products_per_run": 10}, "rows": rows,
            "ratios": {"tpu/ref tflops": ratio(rows, "tflops", "tpu", ref)}}


def train_step(dev, backend, cfg, dtype, iters, budget):
    """compile_step.py's step: forward, backward, AdamW and zero_grad in one
    function, compiled whole with `backend` (None: eager)."""
    torch._dynamo.reset()  # the step's code object is shared by every variant
    mc = cfg["model"]
    model = models.TinyLM(**mc).to(device=dev, dtype=dtype)
    data = [(x.to(dev), y.to(dev))
            for x, y in models.lm_batches(4, batch=cfg["batch"], seq=mc["seq"], vocab=mc["vocab"])]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step(x, y):
        models.lm_loss(model, x, y).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    fn = step if backend is None else torch.compile(step, backend=backend)
    batches = itertools.cycle(data)
    m = measure(lambda: fn(*next(batches)), SYNC[dev], iters=iters, repeats=5, warmup=4,
                budget=budget)
    s = m.pop("s")
    return {"ms_per_step": round(s * 1e3, 3), "tokens_per_s": cfg["batch"] * mc["seq"] / s, **m}


def train_step_child(dev, backend, cfg, dtype, iters, budget):
    """train_step on the reference device, in a child process that does not
    load torch_pjrt (TORCH_DEVICE_BACKEND_AUTOLOAD=0). A CUDA backward cannot
    run in a process where tpu is registered: autograd takes a node's stream
    for the device type at::getAccelerator() names, PyTorch names a
    registered PrivateUse1 backend first, so CUDA nodes get no stream and the
    engine asserts (`opt_ready_stream && opt_parent_stream`, engine.cpp). On
    the CPU it also keeps PyTorch's OpenMP threads from spinning against
    XLA's."""
    if dev == "tpu":
        return train_step(dev, backend, cfg, dtype, iters, budget)
    job = {"dev": dev, "backend": backend, "cfg": cfg, "dtype": str(dtype).split(".")[-1],
           "iters": iters, "budget": budget}
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--child-train", json.dumps(job)],
                       capture_output=True, text=True, env=env, timeout=900)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if r.returncode != 0 or not lines:
        raise RuntimeError(f"child exited {r.returncode}: {r.stderr.strip()[-500:]}")
    return json.loads(lines[-1])


def child_main():
    job = json.loads(sys.argv[sys.argv.index("--child-train") + 1])
    out = train_step(job["dev"], job["backend"], job["cfg"], getattr(torch, job["dtype"]),
                     job["iters"], job["budget"])
    print(json.dumps(out), flush=True)


def sec_lm_step(ref, quick):
    size = "small" if quick else "large"
    cfg = LM_STEP[size]
    variants = [("tpu compiled", "tpu", "tpu"), (f"{ref} eager", ref, None),
                (f"{ref} inductor", ref, "inductor")]
    rows = [variant(label, lambda: train_step_child(dev, be, cfg, torch.float32, 50,
                                              SECTION_BUDGET / len(variants)))
            for label, dev, be in variants]
    return {"config": {"size": size, **cfg, "dtype": "float32", "optimizer": "AdamW"},
            "rows": rows,
            "ratios": {"tpu/inductor time": ratio(rows, "ms_per_step", "tpu compiled",
                                                  f"{ref} inductor"),
                       "tpu/ref-eager time": ratio(rows, "ms_per_step", "tpu compiled",
                                                   f"{ref} eager")}}


# Small cached ops as in bench/eager_ops.py: dispatch and launch cost.
SMALL_OPS = [
    ("add (256,256)", lambda t: t["a"] + t["b"]),
    ("mul by scalar (256,256)", lambda t: t["a"] * 2.0),
    ("relu (256,256)", lambda t: t["a"].relu()),
    ("sum dim (256,256)", lambda t: t["a"].sum(-1)),
    ("mm (64,64)", lambda t: t["x"] @ t["x"]),
    ("softmax (64,64)", lambda t: t["x"].softmax(-1)),
    ("index a[idx] (64 rows)", lambda t: t["a"][t["idx"]]),
    ("cat 2x(64,64)", lambda t: torch.cat([t["x"], t["x"]])),
]


def sec_small_ops(ref, quick):
    g = torch.Generator().manual_seed(0)
    host = {"a": torch.randn(256, 256, generator=g), "b": torch.randn(256, 256, generator=g),
            "x": torch.randn(64, 64, generator=g), "idx": torch.randint(0, 256, (64,), generator=g)}
    iters, budget = (200 if quick else 1000), SECTION_BUDGET / (2 * len(SMALL_OPS))
    rows = []
    for name, op in SMALL_OPS:
        row = {"variant": name}
        for dev, key in (("tpu", "tpu_us"), (ref, "ref_us")):
            try:
                t = {k: v.to(dev) for k, v in host.items()}
                m = measure(lambda: op(t), SYNC[dev], iters=iters, repeats=5, warmup=20,
                            budget=budget)
                row[key] = round(m["s"] * 1e6, 2)
            except Exception as e:  # noqa: BLE001
                row[f"{key}_error"] = err(e)
        if row.get("tpu_us") and row.get("ref_us"):
            row["tpu/ref"] = round(row["tpu_us"] / row["ref_us"], 2)
        log(f"  {json.dumps(row)}")
        rows.append(row)
    ratios = [r["tpu/ref"] for r in rows if "tpu/ref" in r]
    return {"config": {"iters_per_run": iters, "runs": 5, "dtype": "float32"}, "rows": rows,
            "ratios": {"median tpu/ref": statistics.median(ratios) if ratios else None}}


def sec_hf_generate(ref, quick):
    import transformers

    import hf_models

    transformers.logging.set_verbosity_error()
    over = {} if quick else HF_FULL
    prompt, new, repeats = (16, 8, 2) if quick else (32, 64, 2)
    base = hf_models.build("llama", **over)
    vocab = base.config.vocab_size
    ids = torch.randint(3, vocab, (1, prompt), generator=torch.Generator().manual_seed(1))
    # Explicit, so that a Transformers without its own "tpu" default (older
    # than 5.23) compiles the decode step with our backend all the same.
    cc = transformers.CompileConfig(backend="tpu", dynamic=False, mode="default")
    cc._compile_all_devices = True
    on = {"tpu": copy.deepcopy(base).to("tpu"), ref: copy.deepcopy(base).to(ref)}
    outs = {}

    def gen(model, dev, n, kw):
        t0 = time.perf_counter()
        out = model.generate(ids.to(dev), max_new_tokens=n, min_new_tokens=n, do_sample=False,
                             cache_implementation="static", **kw).cpu()  # .cpu() waits
        return out, time.perf_counter() - t0

    def run(label, dev, kw):
        torch._dynamo.reset()
        runs0 = torch_pjrt.metrics()["graph_runs"]
        t0 = time.perf_counter()
        gen(on[dev], dev, 1, kw)  # the static cache's length differs: warm both
        outs[label], _ = gen(on[dev], dev, new, kw)
        warm = time.perf_counter() - t0
        ttft = min(gen(on[dev], dev, 1, kw)[1] for _ in range(repeats))
        total = min(gen(on[dev], dev, new, kw)[1] for _ in range(repeats))
        return {"tokens_per_s": round(new / total, 1),
                "decode_tokens_per_s": round((new - 1) / max(total - ttft, 1e-9), 1),
                "ttft_ms": round(ttft * 1e3, 2), "warmup_s": round(warm, 2),
                "tpu_graph_runs": torch_pjrt.metrics()["graph_runs"] - runs0}

    variants = [("tpu eager", "tpu", dict(disable_compile=True)),
                ("tpu compiled", "tpu", dict(compile_config=cc)),
                (f"{ref} eager", ref, dict(disable_compile=True))]
    rows = [variant(label, lambda: run(label, dev, kw)) for label, dev, kw in variants]
    want = outs.get(f"{ref} eager")
    for r in rows:
        got = outs.get(r["variant"])
        if got is not None and want is not None and r["variant"].startswith("tpu"):
            same = (got == want)[0].tolist()
            r["same_tokens"] = all(same)
            # how many generated tokens agree before the first difference
            r["matching_new_tokens"] = next((i for i, s in enumerate(same) if not s),
                                            len(same)) - prompt
    return {"config": {"model": "LlamaForCausalLM", "params_M": round(
                sum(p.numel() for p in base.parameters()) / 1e6, 2),
                       "config": over or "tests/python/hf_models.py tiny", "batch": 1,
                       "prompt": prompt, "new_tokens": new, "dtype": "float32",
                       "cache": "static", "transformers": transformers.__version__},
            "rows": rows,
            "ratios": {"tpu compiled/ref eager tokens/s": ratio(rows, "tokens_per_s",
                                                                "tpu compiled", f"{ref} eager"),
                       "tpu eager/ref eager tokens/s": ratio(rows, "tokens_per_s", "tpu eager",
                                                             f"{ref} eager")}}


def sec_mfu(ref, quick, peak):
    cfg = MFU["quick" if quick else "full"]
    mc = cfg["model"]
    with torch.device("meta"):  # only counted: no memory, no initialisation
        lm = models.TinyLM(**mc)
    # Matmul parameters: the embedding tables are lookups, not FLOPs.
    n = sum(p.numel() for name, p in lm.named_parameters() if not name.startswith(("tok", "pos")))
    # 6N per token (forward 2N, backward 4N); PaLM's count adds attention's
    # 12 * layers * d * seq (scores and values, forward and backward).
    flop_tok = 6 * n
    flop_tok_attn = flop_tok + 12 * mc["layers"] * mc["d"] * mc["seq"]
    variants = [("tpu compiled", "tpu", "tpu"), (f"{ref} inductor", ref, "inductor")]
    rows = []
    for label, dev, be in variants:
        r = variant(label, lambda: train_step_child(dev, be, cfg, torch.bfloat16, 10,
                                              SECTION_BUDGET / len(variants)))
        if "tokens_per_s" in r:
            r["tflops"] = r["tokens_per_s"] * flop_tok / 1e12
            if peak:
                r["mfu"] = r["tokens_per_s"] * flop_tok / peak
                r["mfu_with_attn"] = r["tokens_per_s"] * flop_tok_attn / peak
        rows.append(r)
        gc.collect()
        if dev == "cuda":
            torch.cuda.empty_cache()
    return {"config": {**cfg, "dtype": "bfloat16 params, AdamW", "matmul_params_M": round(n / 1e6, 2),
                       "peak_tflops": peak / 1e12 if peak else "n/a"},
            "rows": rows,
            "ratios": {"tpu/inductor tokens/s": ratio(rows, "tokens_per_s", "tpu compiled",
                                                      f"{ref} inductor")}}


# Cheapest and most asked-for first: a run cut short keeps those.
SECTIONS = ["matmul", "small_ops", "lm_step", "mfu", "hf_generate"]


def fmt(v):
    if isinstance(v, float):
        return f"{v:.4g}"
    return "n/a" if v is None else str(v)


def markdown(res):
    m = res["meta"]
    out = [f"# tpu vs {m['ref']} ({m['ref_device']}; tpu: {m['tpu_device']})", "",
           f"torch {m['torch']}, python {m['python']}, quick={m['quick']}, "
           f"total {m.get('total_s', '?')} s", ""]
    for name, s in res["sections"].items():
        out += [f"## {name} ({s.get('elapsed_s', '?')} s)", ""]
        if s.get("error"):
            out += [f"**error**: {s['error']}", ""]
        if s.get("config"):
            out += ["config: `" + json.dumps(s["config"]) + "`", ""]
        rows = s.get("rows") or []
        cols = list(dict.fromkeys(k for r in rows for k in r))
        if rows:
            out += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
            out += ["| " + " | ".join(fmt(r[c]) if c in r else "" for c in cols) + " |"
                    for r in rows]
            out.append("")
        if s.get("ratios"):
            out += ["ratios: " + ", ".join(f"{k} **{fmt(v)}**" for k, v in s["ratios"].items()), ""]
    out += [f"CPU fallbacks on tpu: `{json.dumps(res.get('fallbacks'))}`", ""]
    return "\n".join(out)


def write(res, args):
    with open(args.json, "w") as f:
        json.dump(res, f, indent=1, default=str)
    with open(args.md, "w") as f:
        f.write(markdown(res))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ref", choices=["cuda", "cpu"],
                    default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--quick", action="store_true", help="small sizes (the CPU dry run)")
    ap.add_argument("--only", default=",".join(SECTIONS))
    ap.add_argument("--json", default="gpu_compare.json")
    ap.add_argument("--md", default="gpu_compare.md")
    ap.add_argument("--peak", type=float, default=None,
                    help="peak dense bf16 TFLOP/s for MFU (default: 989, H200, with --ref cuda)")
    args = ap.parse_args()
    only = [s for s in args.only.split(",") if s]
    unknown = set(only) - set(SECTIONS)
    if unknown:
        ap.error(f"unknown sections {sorted(unknown)}; choose from {SECTIONS}")
    peak = (args.peak or (989.0 if args.ref == "cuda" else 0)) * 1e12 or None
    ref = args.ref

    # The tpu client opens first, before the reference allocates anything:
    # the XLA GPU plugin reserves a fraction of the memory it finds free.
    torch.ones(1, device="tpu").cpu()
    try:
        import transformers
        tf_version = transformers.__version__
    except ImportError:
        tf_version = None
    res = {"meta": {"ref": ref, "quick": args.quick, "torch": torch.__version__,
                    "transformers": tf_version, "python": platform.python_version(),
                    "tpu_device": torch.tpu.get_device_name(),
                    "ref_device": torch.cuda.get_device_name() if ref == "cuda"
                    else platform.processor() or "cpu",
                    "plugin": torch_pjrt.info().get("plugin_path"),
                    "section_budget_s": SECTION_BUDGET,
                    # With the CPU plugin open, PyTorch's OpenMP threads spin
                    # against XLA's on a small host: OMP_WAIT_POLICY=passive.
                    "torch_threads": torch.get_num_threads(),
                    "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY")},
           "sections": {}}
    log(f"tpu = {res['meta']['tpu_device']}, ref = {ref} ({res['meta']['ref_device']})")
    for name in only:
        log(f"{name} ...")
        t0 = time.perf_counter()
        m0 = torch_pjrt.metrics()
        try:
            fn = globals()[f"sec_{name}"]
            s = fn(ref, args.quick, peak) if name == "mfu" else fn(ref, args.quick)
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            s = {"error": err(e)}
        m1 = torch_pjrt.metrics()
        s["tpu_metrics"] = {k: round(m1[k] - m0[k], 3) for k in
                            ("compiles", "compile_seconds", "graph_compiles", "graph_splits")}
        s["elapsed_s"] = round(time.perf_counter() - t0, 1)
        res["sections"][name] = s
        log(f"{name} done in {s['elapsed_s']} s")
        torch._dynamo.reset()
        gc.collect()
        if ref == "cuda":
            torch.cuda.empty_cache()
        res["fallbacks"] = torch_pjrt.fallbacks()
        res["meta"]["total_s"] = round(time.perf_counter() - T0, 1)
        write(res, args)
    res["tpu_metrics_total"] = torch_pjrt.metrics()
    write(res, args)
    print(markdown(res), flush=True)


if __name__ == "__main__" and CHILD:
    child_main()
elif __name__ == "__main__":
    main()
