"""vLLM start-up on tpu: how long LLM(...) takes to build the engine and
compile every bucket (token buckets, attention's shapes, request buckets),
from an empty program cache and then again from the disk cache it filled, for
the native paged attention and for the gather path
(TORCH_PJRT_VLLM_ATTENTION=gather). The model and engine settings are
bench/vllm_serve.py's. Each start runs in a fresh process with its own
TORCH_PJRT_CACHE_DIR. Not a test.

    .venv/bin/python bench/vllm_startup.py
"""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "python", "vllm"))

CHILD = r"""
import json, os, sys, time
os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
import torch_pjrt
from vllm import LLM
sys.path.insert(0, sys.argv[2])
from vllm_serve import ENGINE
t0 = time.perf_counter()
LLM(model=sys.argv[1], kv_cache_memory_bytes=256 << 20, enforce_eager=False, **ENGINE)
print("ROW " + json.dumps({"startup_s": round(time.perf_counter() - t0, 1),
                           "compiles": torch_pjrt.metrics()["compiles"]}))
"""


def start(model, mode, cache_dir):
    env = dict(os.environ, HF_HUB_OFFLINE="1", TORCH_PJRT_CACHE_DIR=cache_dir,
               TORCH_PJRT_VLLM_ATTENTION=mode)
    r = subprocess.run([sys.executable, "-c", CHILD, model, HERE], env=env, capture_output=True,
                       text=True, timeout=1200)
    for line in r.stdout.splitlines():
        if line.startswith("ROW "):
            return json.loads(line[4:])
    return {"error": (r.stderr or r.stdout).strip().splitlines()[-1:]}


def main():
    import _tiny_models as tiny

    tmp = tempfile.mkdtemp(prefix="vllm-startup-")
    model = tiny.build_llama(os.path.join(tmp, "llama"), hidden_size=256, intermediate_size=512,
                             num_attention_heads=4, num_key_value_heads=2,
                             max_position_embeddings=1024)
    print(f"# vLLM start-up on tpu, bench/vllm_serve.py's model and engine; "
          f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC", flush=True)
    for mode in ("native", "gather"):
        cache = os.path.join(tmp, f"cache-{mode}")
        for run in ("empty program cache", "disk cache from the first start"):
            print(json.dumps({"attention": mode, "run": run, **start(model, mode, cache)}),
                  flush=True)


if __name__ == "__main__":
    main()
