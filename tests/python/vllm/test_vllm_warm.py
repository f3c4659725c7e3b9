"""Zero compiles after warm-up: a compiled engine (token counts and request
counts padded to buckets, every bucket compiled at start-up) serves a mixed
workload without compiling one more program, and gives the tokens and
logprobs that vLLM's own input preparation and sampler give (the
enforce_eager engine, which uses them unpadded)."""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

if importlib.util.find_spec("vllm") is None:
    pytest.skip("vllm is not installed (make vllm)", allow_module_level=True)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _tiny_models as tiny_models  # noqa: E402

# Requests arrive while others decode: one to three every other engine step.
# Prompt lengths from 1 to 70 tokens; greedy, seeded sampling (temperature,
# top_p, top_k), n=2, sampled-token logprobs, prompt logprobs (the 70-token
# prompt's in two chunks), repetition/frequency/presence penalties,
# logit_bias and min_tokens, bad words and allowed token ids, mixed in every
# batch.
WORKLOAD = r"""
import json, os, sys
os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"  # the engine here: its metrics are ours
import torch_pjrt
from vllm import LLM, SamplingParams

llm = LLM(model=sys.argv[1], dtype="float32", max_model_len=128, kv_cache_memory_bytes=8 << 20,
          enforce_eager=sys.argv[2] == "eager", seed=0, max_num_batched_tokens=128,
          max_num_seqs=8)
lens = [1, 5, 37, 17, 4, 70, 9, 23, 2, 50, 12, 3, 64, 8, 29, 6, 44, 15]
prompts = [[3 + (j * 7 + i) % 300 for j in range(n)] for i, n in enumerate(lens)]
# Bad words that change request 14's greedy tokens (read before the metrics
# are reset): a pair of its greedy tokens as one word (the second is banned
# right after the first), and a later greedy token alone (banned everywhere),
# each one that tokenizes back to those tokens.
tok = llm.get_tokenizer()
greedy = list(llm.generate({"prompt_token_ids": prompts[14]},
                           SamplingParams(temperature=0, max_tokens=16, ignore_eos=True),
                           use_tqdm=False)[0].outputs[0].token_ids)


def bad_ids(words):
    params = SamplingParams(bad_words=words)
    params.update_from_tokenizer(tok)
    return params.bad_words_token_ids


j = next(j for j in range(7)  # banned within request 14's 10 tokens
         if greedy[j:j + 2] in bad_ids([tok.decode(greedy[j:j + 2])]))
t = next(t for t in greedy[j + 2:] if t not in greedy[:j + 2] and [t] in bad_ids([tok.decode([t])]))
bad_words = [tok.decode(greedy[j:j + 2]), tok.decode([t])]
kinds = [dict(temperature=0), dict(temperature=0.8, top_p=0.9, top_k=20, seed=1),
         dict(temperature=1.0, n=2, seed=3), dict(temperature=0, logprobs=2),
         dict(temperature=0.7, seed=5, logprobs=1),
         dict(temperature=0.9, top_k=5, seed=9, prompt_logprobs=3),
         dict(temperature=0.6, top_p=0.5, seed=11, n=3, logprobs=3),
         dict(temperature=0, prompt_logprobs=2), dict(temperature=0.5, seed=13, prompt_logprobs=0),
         dict(temperature=0, repetition_penalty=1.3, frequency_penalty=0.4, presence_penalty=0.3),
         dict(temperature=0.8, seed=17, presence_penalty=0.6, repetition_penalty=0.9, logprobs=2),
         dict(temperature=0, logit_bias={5: 4.0, 17: -50.0, 200: 2.5}),
         dict(temperature=0.7, seed=21, min_tokens=5, stop_token_ids=[7, 11],
              logit_bias={9: 3.0}),
         dict(temperature=0, allowed_token_ids=list(range(40, 90))),
         dict(temperature=0, bad_words=bad_words),
         dict(temperature=0.8, seed=25, top_k=30, bad_words=bad_words,
              allowed_token_ids=list(range(20, 200)), logprobs=2)]
torch_pjrt.reset_metrics()
engine = llm.llm_engine
pending, step, outs = list(range(len(lens))), 0, {}
while pending or engine.has_unfinished_requests():
    if pending and step % 2 == 0:
        for _ in range(1 + step % 3):
            if pending:
                i = pending.pop(0)
                params = SamplingParams(max_tokens=6 + i % 5, ignore_eos=True,
                                        **kinds[i % len(kinds)])
                engine.add_request(str(i), {"prompt_token_ids": prompts[i]}, params)
    for out in engine.step():
        if out.finished:
            plp = [None if lp is None else {str(t): v.logprob for t, v in lp.items()}
                   for lp in out.prompt_logprobs] if out.prompt_logprobs else None
            outs[out.request_id] = [
                {"tokens": list(c.token_ids),
                 "logprobs": [{str(t): v.logprob for t, v in lp.items()} for lp in c.logprobs]
                 if c.logprobs else None, "prompt_logprobs": plp} for c in out.outputs]
    step += 1
m = torch_pjrt.metrics()
print("RESULT " + json.dumps({"steps": step, "outputs": outs, "fallbacks": torch_pjrt.fallbacks(),
                              "greedy_14": list(greedy),
                              "bad_words": bad_ids(bad_words), "pair_at": j,
                              **{k: m[k] for k in ("compiles", "cache_misses", "graph_compiles",
                                                   "graph_traces", "graph_runs")}}))
"""


def _run(path, mode):
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    for k in ("VLLM_ENABLE_V1_MULTIPROCESSING", "VLLM_WORKER_MULTIPROC_METHOD"):
        env.pop(k, None)
    r = subprocess.run([sys.executable, "-c", WORKLOAD, path, mode], env=env,
                       capture_output=True, text=True, timeout=600)
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise AssertionError(f"{mode} run failed:\n{r.stderr[-4000:]}")


def test_mixed_workload_compiles_nothing_after_warm_up(tmp_path):
    path = tiny_models.build_llama(str(tmp_path / "tiny-llama"))
    compiled = _run(path, "compiled")
    # Every step (prefills of 1-70 tokens next to decodes, 1 to 8 requests,
    # greedy next to seeded top-k/top-p, logprobs or not) ran programs that
    # the warm-up had compiled: no compile, no program-cache miss.
    assert compiled["graph_runs"] > 0 and compiled["steps"] > 10
    assert compiled["compiles"] == 0, compiled
    assert compiled["cache_misses"] == 0, compiled
    assert compiled["graph_compiles"] == 0 and compiled["graph_traces"] == 0
    assert compiled["fallbacks"] == {}
    # The same workload on vLLM's own (unpadded) input preparation and
    # sampler: the same tokens for every request (seeded draws included) and
    # the same logprobs.
    eager = _run(path, "eager")
    assert sorted(compiled["outputs"]) == sorted(eager["outputs"])
    n_logprobs = n_prompt = 0
    for rid, want in eager["outputs"].items():
        got = compiled["outputs"][rid]
        assert [c["tokens"] for c in got] == [c["tokens"] for c in want], rid
        for g, w in zip(got, want):
            for key in ("logprobs", "prompt_logprobs"):
                if w[key] is None:
                    assert g[key] is None, (rid, key)
                    continue
                assert len(g[key]) == len(w[key]), (rid, key)
                for lg, lw in zip(g[key], w[key]):
                    if lw is None:  # the first prompt token has none
                        assert lg is None
                        continue
                    assert lg.keys() == lw.keys(), (rid, key)
                    for t in lw:
                        assert abs(lg[t] - lw[t]) < 1e-3, (rid, key, t)
                        n_logprobs += key == "logprobs"
                        n_prompt += key == "prompt_logprobs"
    assert n_logprobs > 50 and n_prompt > 100
    # The constraints were active: request 13's tokens are all allowed ones;
    # request 14 no longer gives its greedy tokens, and in 14 and 15 no bad
    # word is completed (a word's last token right after the rest of it).
    assert all(40 <= t < 90 for t in compiled["outputs"]["13"][0]["tokens"])
    j = compiled["pair_at"]
    assert compiled["outputs"]["14"][0]["tokens"][:j + 2] != compiled["greedy_14"][:j + 2]
    words = compiled["bad_words"]
    for rid in ("14", "15"):
        out = compiled["outputs"][rid][0]["tokens"]
        for j in range(len(out)):
            for w in words:
                assert out[max(0, j + 1 - len(w)): j + 1] != w, (rid, out, w)
    assert all(20 <= t < 200 for t in compiled["outputs"]["15"][0]["tokens"])
