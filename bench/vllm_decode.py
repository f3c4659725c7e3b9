"""Decode steps of vLLM on tpu, with the step's index checks deferred to the
device (the default) and on the host (TORCH_PJRT_VLLM_INDEX_CHECKS=host),
alternated in fresh processes so that both see the same machine. 16
requests of 16-token prompts, 64 greedy output tokens each (a batch that
decodes from its second step on), on the bench model of vllm_serve.py. Per
run: the wall time of one generate call after a warm-up call. Not a test.

    .venv/bin/python bench/vllm_decode.py [--rounds 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "python", "vllm"))

CHILD = r"""
import json, os, sys, time
os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
from vllm import LLM, SamplingParams
llm = LLM(model=sys.argv[1], dtype="float32", max_model_len=512, seed=0, max_num_seqs=64,
          max_num_batched_tokens=512, kv_cache_memory_bytes=256 << 20)
params = SamplingParams(temperature=0, max_tokens=64, ignore_eos=True)
prompts = [{"prompt_token_ids": [5 + i] * 16} for i in range(16)]
llm.generate(prompts, params, use_tqdm=False)
t0 = time.perf_counter()
outs = llm.generate(prompts, params, use_tqdm=False)
print("ROW " + json.dumps({"s": time.perf_counter() - t0,
                           "tokens": [list(o.outputs[0].token_ids) for o in outs]}))
"""


def run(model, mode):
    env = dict(os.environ, HF_HUB_OFFLINE="1", TORCH_PJRT_VLLM_INDEX_CHECKS=mode)
    r = subprocess.run([sys.executable, "-c", CHILD, model], env=env, capture_output=True,
                       text=True, timeout=600)
    for line in r.stdout.splitlines():
        if line.startswith("ROW "):
            return json.loads(line[4:])
    raise RuntimeError(r.stderr[-3000:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    import _tiny_models as tiny

    model = tiny.build_llama(os.path.join(tempfile.mkdtemp(prefix="vllm-decode-"), "llama"),
                             hidden_size=256, intermediate_size=512, num_attention_heads=4,
                             num_key_value_heads=2, max_position_embeddings=1024)
    print(f"# 16 requests, 16-token prompts, 64 greedy tokens; "
          f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC", flush=True)
    times = {"host": [], "device": []}
    tokens = {}
    for _ in range(args.rounds):
        for mode in ("host", "device"):
            row = run(model, mode)
            times[mode].append(row["s"])
            tokens.setdefault(mode, row["tokens"])
            print(json.dumps({"index_checks": mode, "generate_s": round(row["s"], 3),
                              "ms_per_step": round(1e3 * row["s"] / 64, 2)}), flush=True)
    host, dev = statistics.median(times["host"]), statistics.median(times["device"])
    print(f"# median generate: host checks {host:.3f} s, device checks {dev:.3f} s: "
          f"{host / dev:.2f}x; tokens equal: {tokens['host'] == tokens['device']}")


if __name__ == "__main__":
    main()
