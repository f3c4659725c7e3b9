"""Greedy generation with Hugging Face Transformers' LlamaForCausalLM (the
tiny config of tests/python/hf_models.py, random weights), side by side in
one run: tpu eager, tpu compiled (Transformers compiles the decode step with
the "tpu" backend), PyTorch CPU eager and CPU inductor. Every variant uses a
static KV cache (fixed shapes: one compiled program per step kind); eager
variants pass disable_compile=True. Per variant: time to first token (a
generate of 1 new token: prefill plus one sample) and decode tokens/s
(N new tokens, minus the first token's time), after a warm-up call that
pays for compiling. Not a test.

    .venv/bin/python bench/hf_generate.py [--new 64] [--batch 1] [--prompt 32] [--no-inductor]
"""
import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))

import torch  # noqa: E402
import transformers  # noqa: E402

import hf_models  # noqa: E402
import torch_pjrt  # noqa: E402


def generate(model, ids, new, compile_config=None, disable_compile=False):
    kw = dict(max_new_tokens=new, min_new_tokens=new, do_sample=False,
              cache_implementation="static", disable_compile=disable_compile)
    if compile_config is not None:
        kw["compile_config"] = compile_config
    t0 = time.perf_counter()
    out = model.generate(ids, **kw).cpu()  # .cpu() waits for the device
    return out, time.perf_counter() - t0


def run(label, model, ids, new, repeats, **kw):
    torch._dynamo.reset()
    t0 = time.perf_counter()
    # Warm-up at both lengths: the static cache is sized by the total length.
    generate(model, ids, 1, **kw)
    ref, _ = generate(model, ids, new, **kw)
    warm = time.perf_counter() - t0
    ttft = min(generate(model, ids, 1, **kw)[1] for _ in range(repeats))
    total = min(generate(model, ids, new, **kw)[1] for _ in range(repeats))
    decode = (new - 1) * ids.shape[0] / max(total - ttft, 1e-9)
    row = {"variant": label, "ttft_ms": round(ttft * 1e3, 2), "decode_tokens_per_s": round(decode, 1),
           "end_to_end_tokens_per_s": round(new * ids.shape[0] / total, 1),
           "warmup_s": round(warm, 2)}
    print(json.dumps(row), flush=True)
    return row, ref


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--new", type=int, default=64)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--prompt", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-inductor", action="store_true")
    a = ap.parse_args()
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    d = tempfile.mkdtemp()
    path = hf_models.save("llama", d)
    ids = torch.randint(3, hf_models.VOCAB, (a.batch, a.prompt),
                        generator=torch.Generator().manual_seed(0))
    cpu = hf_models.load(path, device_map="cpu")
    tpu = hf_models.load(path, device_map="tpu")
    print(f"# LlamaForCausalLM {sum(p.numel() for p in cpu.parameters()) / 1e6:.2f}M params, "
          f"batch {a.batch}, prompt {a.prompt}, {a.new} new tokens, static cache, "
          f"torch {torch.__version__}, transformers {transformers.__version__}, "
          f"{os.cpu_count()} CPUs, torch threads {torch.get_num_threads()}", flush=True)
    rows, outs = [], {}
    tpu_ids = ids.to("tpu")
    r, outs["tpu eager"] = run("tpu eager", tpu, tpu_ids, a.new, a.repeats, disable_compile=True)
    rows.append(r)
    r, outs["tpu compiled"] = run("tpu compiled", tpu, tpu_ids, a.new, a.repeats)
    rows.append(r)
    r, outs["cpu eager"] = run("cpu eager", cpu, ids, a.new, a.repeats, disable_compile=True)
    rows.append(r)
    if not a.no_inductor:
        cfg = transformers.CompileConfig(backend="inductor", mode="default", dynamic=False)
        cfg._compile_all_devices = True  # Transformers compiles on the CPU only when asked so
        r, outs["cpu inductor"] = run("cpu inductor", cpu, ids, a.new, a.repeats, compile_config=cfg)
        rows.append(r)
    same = all(torch.equal(o, outs["cpu eager"]) for o in outs.values())
    print(f"# same tokens in every variant: {same}; CPU fallbacks on tpu: "
          f"{torch_pjrt.fallbacks() or 'none'}")
    print("| variant | time to first token (ms) | decode tokens/s | end-to-end tokens/s | warm-up (s) |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['variant']} | {r['ttft_ms']} | {r['decode_tokens_per_s']} | "
              f"{r['end_to_end_tokens_per_s']} | {r['warmup_s']} |")


if __name__ == "__main__":
    main()
