"""vLLM's offline LLM on the tpu device, compared with Hugging Face generate
on the CPU (the same saved weights), token for token."""
import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest

# vLLM is imported when the first of these tests runs, not when pytest
# collects the suite: its import patches torch internals (Inductor), which
# the rest of the suite, collected and run first, should not see.
if importlib.util.find_spec("vllm") is None:
    pytest.skip("vllm is not installed (make vllm)", allow_module_level=True)

import torch  # noqa: E402

import torch_pjrt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _tiny_models as tiny_models  # noqa: E402

vllm = None

# The engine core runs in this process (the test's own device state is then
# the engine's); test_default_engine_process covers vLLM's usual child process.
ENV = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "HF_HUB_OFFLINE": "1"}


@pytest.fixture(scope="module", autouse=True)
def _import_vllm():
    global vllm
    saved = {k: os.environ.get(k) for k in (*ENV, "VLLM_WORKER_MULTIPROC_METHOD")}
    os.environ.update(ENV)
    vllm = pytest.importorskip("vllm")
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v

# Mixed lengths: one token, a few, a long one that spans several KV blocks
# (block size 16), so one batch holds short and long prefills, and then
# decodes of different lengths.
PROMPTS = [
    [7],
    [1, 5, 9, 30, 40],
    list(range(3, 40)),
    [11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27],
    [200, 3, 77, 90],
    list(range(100, 170)),
]
MAX_TOKENS = 12
ENGINE_ARGS = dict(dtype="float32", max_model_len=256, kv_cache_memory_bytes=8 << 20,
                   enforce_eager=True, seed=0, max_num_seqs=16, max_num_batched_tokens=256)


@pytest.fixture(scope="module")
def llama_path(tmp_path_factory):
    return tiny_models.build_llama(str(tmp_path_factory.mktemp("tiny-llama")))


@pytest.fixture(scope="module")
def hf_greedy(hf_model):
    """Hugging Face greedy continuations on the CPU, one prompt at a time."""
    return tiny_models.hf_greedy(hf_model, PROMPTS, MAX_TOKENS)


@pytest.fixture(scope="module")
def hf_model(llama_path):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(llama_path, dtype=torch.float32).eval()


@pytest.fixture(scope="module")
def llm(llama_path):
    engine = vllm.LLM(model=llama_path, **ENGINE_ARGS)
    yield engine
    del engine


def _greedy(llm, prompts=PROMPTS):
    params = vllm.SamplingParams(temperature=0, max_tokens=MAX_TOKENS, ignore_eos=True)
    outs = llm.generate([{"prompt_token_ids": p} for p in prompts], params, use_tqdm=False)
    return [list(o.outputs[0].token_ids) for o in outs]


def test_platform_is_tpu():
    from vllm.platforms import current_platform

    import torch_pjrt.vllm as plugin

    assert plugin.register() == "torch_pjrt.vllm.platform.TpuPlatform"
    assert type(current_platform).__name__ == "TpuPlatform"
    assert current_platform.device_type == "tpu"
    assert current_platform.dispatch_key == "PrivateUse1"
    assert current_platform.is_out_of_tree()


def test_weights_and_cache_on_tpu(llm):
    runner = llm.llm_engine.model_executor.driver_worker.worker.model_runner
    assert {p.device.type for p in runner.model.parameters()} == {"tpu"}
    assert runner.kv_caches and all(kv.device.type == "tpu" for kv in runner.kv_caches)


def test_greedy_batch_matches_hf(llm, hf_greedy):
    torch_pjrt.reset_fallbacks()
    got = _greedy(llm)
    assert got == hf_greedy
    # Every op of the forward pass, the cache writes and the sampler ran on tpu.
    assert torch_pjrt.fallbacks() == {}


def test_one_at_a_time_matches_batch(llm, hf_greedy):
    # A prompt alone (a batch of one) and a prompt among others give the same
    # tokens: nothing leaks across requests through padding or the cache.
    for p, want in zip(PROMPTS[:3], hf_greedy[:3]):
        assert _greedy(llm, [p]) == [want]


def test_prefix_cache_hits_give_same_tokens(llm, hf_greedy):
    # The same prompts again: their full blocks are now in the prefix cache,
    # so the prefill starts part-way through (a query shorter than its
    # sequence, reading cached blocks written by another request). The
    # tokens must not change.
    params = vllm.SamplingParams(temperature=0, max_tokens=MAX_TOKENS, ignore_eos=True)
    outs = llm.generate([{"prompt_token_ids": p} for p in PROMPTS], params, use_tqdm=False)
    assert [list(o.outputs[0].token_ids) for o in outs] == hf_greedy
    # vLLM's own count: the 70-token prompt reused its 4 full blocks of 16.
    assert outs[-1].num_cached_tokens == 64


def test_seeded_sampling_reproduces(llm):
    # temperature, top_p and top_k go through vLLM's sampler on tpu; a
    # request's seed fixes its draws whatever else is in the batch.
    def draw(seed, prompts=PROMPTS[:3]):
        params = vllm.SamplingParams(temperature=0.8, top_p=0.9, top_k=20, max_tokens=10,
                                     seed=seed, ignore_eos=True)
        outs = llm.generate([{"prompt_token_ids": p} for p in prompts], params, use_tqdm=False)
        return [list(o.outputs[0].token_ids) for o in outs]

    torch_pjrt.reset_fallbacks()
    first = draw(123)
    assert draw(123) == first
    assert draw(123, PROMPTS[:1]) == first[:1]
    assert draw(124) != first
    assert torch_pjrt.fallbacks() == {}


def test_n_and_logprobs_match_hf(llm, hf_model):
    prompt = PROMPTS[1]
    params = vllm.SamplingParams(temperature=1.0, n=3, max_tokens=6, seed=7, logprobs=2,
                                 prompt_logprobs=1, ignore_eos=True)
    out = llm.generate([{"prompt_token_ids": prompt}], params, use_tqdm=False)[0]
    assert len(out.outputs) == 3
    for c in out.outputs:
        ids = torch.tensor([prompt + list(c.token_ids)])
        with torch.no_grad():
            ref = torch.log_softmax(hf_model(ids).logits[0].double(), -1)
        assert len(c.token_ids) == 6 and len(c.logprobs) == 6
        for i, (tok, lp) in enumerate(zip(c.token_ids, c.logprobs)):
            # The sampled token and the top 2, each with the log-probability
            # of the raw distribution (vLLM's default logprobs mode).
            assert tok in lp and len(lp) >= 2
            row = ref[len(prompt) - 1 + i]
            for t, v in lp.items():
                assert abs(v.logprob - row[t].item()) < 1e-3, (i, t)
    # prompt_logprobs: none for the first token, then each prompt token's.
    assert out.prompt_logprobs[0] is None
    ids = torch.tensor([prompt])
    with torch.no_grad():
        ref = torch.log_softmax(hf_model(ids).logits[0].double(), -1)
    for i in range(1, len(prompt)):
        got = out.prompt_logprobs[i][prompt[i]].logprob
        assert abs(got - ref[i - 1, prompt[i]].item()) < 1e-3


KV_SCRIPT = r"""
import os, sys
os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
from vllm import LLM
for size in (4096, 32768):  # none of a block; less than one 256-token request
    try:
        LLM(model=sys.argv[1], dtype="float32", max_model_len=256, kv_cache_memory_bytes=size,
            enforce_eager=True)
        print("NO ERROR", size)
    except ValueError as e:
        print("ERROR", size, str(e).splitlines()[0])
"""


def test_kv_cache_too_small_gets_vllms_error(llama_path):
    env = {k: v for k, v in os.environ.items() if k != "VLLM_WORKER_MULTIPROC_METHOD"}
    r = subprocess.run([sys.executable, "-c", KV_SCRIPT, llama_path], env=env,
                       capture_output=True, text=True, timeout=300)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith(("ERROR", "NO ERROR"))]
    assert len(lines) == 2, r.stdout[-2000:] + r.stderr[-2000:]
    assert lines[0].startswith("ERROR 4096 No available memory for the cache blocks")
    assert lines[1].startswith("ERROR 32768 To serve at least one request with the model's "
                               "max seq len (256)")


def test_unsupported_architecture_gets_vllms_error(llama_path, tmp_path):
    # The tiny Llama's weights under an architecture vLLM has no model for.
    path = tmp_path / "unknown-arch"
    shutil.copytree(llama_path, path)
    cfg = json.loads((path / "config.json").read_text())
    cfg["architectures"] = ["TinyUnknownForCausalLM"]
    (path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=r"Model architectures \['TinyUnknownForCausalLM'\] "
                                         r"are not supported for now"):
        vllm.LLM(model=str(path), **ENGINE_ARGS)


def test_unsupported_quantization_gets_vllms_error(llama_path):
    with pytest.raises(ValueError, match="fp8 quantization is currently not supported in tpu"):
        vllm.LLM(model=llama_path, quantization="fp8", **ENGINE_ARGS)


def test_engine_still_serves_after_refused_engines(llm, hf_greedy):
    # The refused engines above left nothing behind in this process.
    assert _greedy(llm, PROMPTS[:2]) == hf_greedy[:2]


def test_pipeline_parallel_is_a_clear_error(llama_path):
    with pytest.raises(Exception, match="pipeline_parallel_size > 1 is not supported on tpu"):
        vllm.LLM(model=llama_path, pipeline_parallel_size=2, **ENGINE_ARGS)


def test_tensor_parallel_heads_not_divisible_gets_vllms_error(llama_path):
    # 4 query heads over 3 ranks: vLLM's own check, before any worker starts
    with pytest.raises(Exception, match=r"divisible by tensor parallel size \(3\)"):
        vllm.LLM(model=llama_path, tensor_parallel_size=3, **ENGINE_ARGS)


SCRIPT = r"""
import json, os, sys
path, prompts, max_tokens, eager = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
tp = int(sys.argv[5])
if eager != "eager":  # the engine in this process, so its metrics are ours to read
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
import torch_pjrt
from vllm import LLM, SamplingParams
# 128 tokens: the longest prompt (70) and its continuation fit, and the
# compiled engine's warm-up has 5 token buckets to compile.
llm = LLM(model=path, dtype="float32", max_model_len=128, kv_cache_memory_bytes=8 << 20,
          enforce_eager=eager == "eager", seed=0, max_num_batched_tokens=128, max_num_seqs=16,
          tensor_parallel_size=tp)


def worker_reset(worker):
    torch_pjrt.reset_metrics()


def worker_metrics(worker):
    m = torch_pjrt.metrics()
    return {"fallbacks": torch_pjrt.fallbacks(),
            **{k: m[k] for k in ("compiles", "cache_misses", "graph_traces", "graph_runs",
                                 "graph_collectives")}}


inner = {"attention": 0, "slot_mapping": 0}
if eager != "eager" and tp == 1:
    # Program-cache misses inside attention and the slot-mapping kernel:
    # both are shaped by token and block buckets, all warmed up at start-up.
    import vllm.v1.worker.block_table as block_table
    from torch_pjrt.vllm.attention import TpuAttentionImpl

    def counted(name, f):
        def run(*a, **k):
            before = torch_pjrt.metrics()["cache_misses"]
            try:
                return f(*a, **k)
            finally:
                inner[name] += torch_pjrt.metrics()["cache_misses"] - before
        return run

    TpuAttentionImpl.forward = counted("attention", TpuAttentionImpl.forward)
    block_table.BlockTable.compute_slot_mapping = counted(
        "slot_mapping", block_table.BlockTable.compute_slot_mapping)
torch_pjrt.reset_metrics()
if tp > 1:  # each rank is a worker process of its own
    llm.collective_rpc(worker_reset)
params = SamplingParams(temperature=0, max_tokens=max_tokens, ignore_eos=True)
runs = []
for batch in (prompts, prompts[::-1][:3]):
    out = llm.generate([{"prompt_token_ids": p} for p in batch], params, use_tqdm=False)
    runs.append([list(o.outputs[0].token_ids) for o in out])
m = torch_pjrt.metrics()
keys = ("graph_traces", "graph_compiles", "graph_runs", "cache_misses")
print("METRICS", json.dumps({**{k: m[k] for k in keys}, **inner}))
print("TOKENS", json.dumps(runs))
if tp > 1:
    print("WORKERS", json.dumps(llm.collective_rpc(worker_metrics)))
"""


def _greedy_in_child(path, prompts, eager=True, tp=1):
    """Greedy tokens from LLM(...) as a user runs it: a fresh process,
    vLLM's engine core in a child process of its own. Two batches: the
    prompts, then the last three in reverse order. With tp > 1 the metrics
    are each worker's (a list, by rank)."""
    env = dict(os.environ)
    env.pop("VLLM_ENABLE_V1_MULTIPROCESSING", None)
    # An engine in this process may have set it (spawn, as its client is
    # open); a fresh process forks its engine core, as a user's would.
    env.pop("VLLM_WORKER_MULTIPROC_METHOD", None)
    args = [path, json.dumps(prompts), str(MAX_TOKENS), "eager" if eager else "compiled", str(tp)]
    r = subprocess.run([sys.executable, "-c", SCRIPT, *args], env=env, capture_output=True,
                       text=True, timeout=400)
    assert r.returncode == 0, r.stderr[-3000:]
    found = {}
    for ln in r.stdout.splitlines():
        key, _, rest = ln.partition(" ")
        if key in ("TOKENS", "METRICS", "WORKERS"):
            found[key] = json.loads(rest)
    assert "TOKENS" in found, r.stdout[-2000:] + r.stderr[-2000:]
    return found["TOKENS"], found["WORKERS" if tp > 1 else "METRICS"]


def test_default_engine_process(llama_path, hf_greedy):
    (first, second), _ = _greedy_in_child(llama_path, PROMPTS[:3])
    assert first == hf_greedy[:3]
    assert second == hf_greedy[:3][::-1]


def test_compiled_greedy_matches_hf(llama_path, hf_greedy):
    # enforce_eager=False: the model runs through torch.compile(backend="tpu"),
    # token counts padded to buckets compiled at start-up, attention eager
    # between the captured graphs.
    (first, second), metrics = _greedy_in_child(llama_path, PROMPTS, eager=False)
    assert first == hf_greedy
    assert second == hf_greedy[::-1][:3]
    # Every bucket's graphs were captured and compiled at start-up: the mixed
    # workload (prefills of 1 to 70 tokens, then decodes) only runs them.
    assert metrics["graph_runs"] > 0
    assert metrics["graph_traces"] == 0 and metrics["graph_compiles"] == 0
    # Nor do the eager ops of attention (shaped by the token bucket and the
    # tile shape) and of the slot mapping (whole buffers): their programs
    # were all compiled by the warm-up.
    assert metrics["attention"] == 0 and metrics["slot_mapping"] == 0


def test_tensor_parallel_matches_hf(llama_path, hf_greedy):
    # LLM(..., tensor_parallel_size=2) as a user writes it: vLLM starts a
    # worker process per rank, each on its tpu device, its parallel groups
    # over the "pjrt" process group (gloo for the CPU ones). The tiny Llama
    # has 2 KV heads: one per rank. Compiled: the layers' all_reduces run in
    # the captured graphs as functional collectives.
    (first, second), workers = _greedy_in_child(llama_path, PROMPTS, eager=False, tp=2)
    assert first == hf_greedy
    assert second == hf_greedy[::-1][:3]
    assert len(workers) == 2
    for w in workers:
        assert w["fallbacks"] == {}
        assert w["graph_collectives"] > 0 and w["graph_runs"] > 0
        assert w["compiles"] == 0 and w["cache_misses"] == 0 and w["graph_traces"] == 0


def test_qwen3_greedy_matches_hf(tmp_path):
    from transformers import AutoModelForCausalLM

    path = tiny_models.build_qwen3(str(tmp_path / "tiny-qwen3"))
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    want = tiny_models.hf_greedy(model, PROMPTS, MAX_TOKENS)
    (first, second), _ = _greedy_in_child(path, PROMPTS)
    assert first == want and second == want[::-1][:3]


def test_qwen3_moe_greedy_matches_hf(tmp_path):
    # vLLM's MoE layer on tpu: its router's top-k and the experts in torch
    # (python/torch_pjrt/vllm/moe.py); 8 experts, 2 per token.
    from transformers import AutoModelForCausalLM

    path = tiny_models.build_qwen3_moe(str(tmp_path / "tiny-qwen3-moe"))
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    want = tiny_models.hf_greedy(model, PROMPTS, MAX_TOKENS)
    (first, second), _ = _greedy_in_child(path, PROMPTS)
    assert first == want and second == want[::-1][:3]
