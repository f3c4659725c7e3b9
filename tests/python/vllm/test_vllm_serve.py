"""`vllm serve` on the tpu device: the OpenAI-compatible server on 127.0.0.1
answers /v1/completions and /v1/chat/completions, streaming and not, for
16 concurrent requests; greedy completions equal Hugging Face generate."""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import importlib.util

import pytest

# Not imported here: the server is a process of its own (see test_vllm_llm.py
# for why this suite does not import vLLM at collection).
if importlib.util.find_spec("vllm") is None:
    pytest.skip("vllm is not installed (make vllm)", allow_module_level=True)

import torch  # noqa: E402

import _tiny_models as tiny_models  # noqa: E402

MAX_TOKENS = 8
PROMPTS = [[7], [1, 5, 9, 30, 40], list(range(3, 40)), [200, 3, 77, 90],
           list(range(100, 150)), [11, 12, 13], [42] * 20, [5, 6]]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(url, body, stream=False):
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        if not stream:
            return json.loads(r.read())
        chunks = []
        for line in r:
            line = line.decode().strip()
            if not line.startswith("data: "):
                continue
            data = line[len("data: "):]
            if data == "[DONE]":
                break
            chunks.append(json.loads(data))
        return chunks


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    path = tiny_models.build_llama(str(tmp_path_factory.mktemp("tiny-llama-serve")))
    port = _free_port()
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.pop("VLLM_ENABLE_V1_MULTIPROCESSING", None)
    # An engine in this process may have set it (spawn, as its client is
    # open); a fresh process forks its engine core, as a user's would.
    env.pop("VLLM_WORKER_MULTIPROC_METHOD", None)
    vllm_cli = os.path.join(os.path.dirname(sys.executable), "vllm")
    log = open(tmp_path_factory.mktemp("serve-log") / "serve.log", "w+")
    proc = subprocess.Popen(
        [vllm_cli, "serve", path, "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32",
         "--max-model-len", "256", "--kv-cache-memory-bytes", str(8 << 20), "--enforce-eager",
         "--max-num-seqs", "16", "--max-num-batched-tokens", "256", "--seed", "0"],
        env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 240
        while True:
            try:
                urllib.request.urlopen(base + "/health", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    log.seek(0)
                    pytest.fail("vllm serve did not start:\n" + log.read()[-4000:])
                time.sleep(1)
        yield base, path
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def hf_greedy(server):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(server[1], dtype=torch.float32).eval()
    return tiny_models.hf_greedy(model, PROMPTS, MAX_TOKENS)


def test_completions_concurrent_match_hf(server, hf_greedy):
    base, path = server

    def one(i):
        body = {"model": path, "prompt": PROMPTS[i % len(PROMPTS)], "max_tokens": MAX_TOKENS,
                "temperature": 0, "ignore_eos": True, "return_token_ids": True}
        return _post(base + "/v1/completions", body)

    # 16 requests at once: vLLM batches them (continuous batching).
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(one, range(16)))
    for i, r in enumerate(results):
        choice = r["choices"][0]
        assert choice["token_ids"] == hf_greedy[i % len(PROMPTS)]
        assert r["usage"]["completion_tokens"] == MAX_TOKENS


def test_streaming_equals_non_streaming(server):
    base, path = server

    def both(i):
        body = {"model": path, "prompt": "the quick brown fox " * (i % 4 + 1),
                "max_tokens": MAX_TOKENS, "temperature": 0, "ignore_eos": True}
        whole = _post(base + "/v1/completions", body)["choices"][0]["text"]
        chunks = _post(base + "/v1/completions", dict(body, stream=True), stream=True)
        return whole, "".join(c["choices"][0]["text"] for c in chunks if c["choices"])

    with ThreadPoolExecutor(16) as pool:
        for whole, streamed in pool.map(both, range(16)):
            assert streamed == whole and whole


def test_chat_completions(server):
    base, path = server

    def both(i):
        body = {"model": path, "messages": [{"role": "user", "content": f"hello world {i}"}],
                "max_tokens": MAX_TOKENS, "temperature": 0, "ignore_eos": True}
        whole = _post(base + "/v1/chat/completions", body)
        chunks = _post(base + "/v1/chat/completions", dict(body, stream=True), stream=True)
        streamed = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks
                           if c["choices"])
        return whole, streamed

    with ThreadPoolExecutor(16) as pool:
        for whole, streamed in pool.map(both, range(16)):
            msg = whole["choices"][0]["message"]
            assert msg["role"] == "assistant"
            assert whole["usage"]["completion_tokens"] == MAX_TOKENS
            assert streamed == msg["content"]


def test_prompt_too_long_is_refused_and_server_keeps_serving(server, hf_greedy):
    base, path = server
    body = {"model": path, "prompt": list(range(3, 300)), "max_tokens": 4}
    with pytest.raises(urllib.error.HTTPError) as e:
        _post(base + "/v1/completions", body)
    assert e.value.code == 400
    ok = _post(base + "/v1/completions", {"model": path, "prompt": PROMPTS[1], "temperature": 0,
                                          "max_tokens": MAX_TOKENS, "ignore_eos": True,
                                          "return_token_ids": True})
    assert ok["choices"][0]["token_ids"] == hf_greedy[1]
