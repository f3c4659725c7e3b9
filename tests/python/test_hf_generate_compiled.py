"""generate() with a static cache on tpu: Transformers 5.x compiles the
decode step itself when the model's device type is "tpu" (its default
CompileConfig for tpu is backend="tpu", dynamic=False), and the step must
compile once: after the first generate, graph_compiles stops growing."""
import pytest
import torch

import torch_pjrt

transformers = pytest.importorskip("transformers")

import hf_models as H  # noqa: E402

pytestmark = pytest.mark.usefixtures("no_leaks")

KW = dict(max_new_tokens=16, do_sample=False, cache_implementation="static")


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    d = tmp_path_factory.mktemp("hfc")
    return {n: H.save(n, str(d)) for n in ("llama", "qwen3_moe", "gpt2", "t5")}


def _prompt(name, seed):
    x = H.inputs(name, seed=seed)
    x.pop("decoder_input_ids", None)
    return x


@pytest.mark.parametrize("name", ["llama", "qwen3_moe", "gpt2", "t5"])
def test_static_cache_generate_compiles_the_decode_step_once(saved, name):
    cpu = H.load(saved[name], device_map="cpu")
    tpu = H.load(saved[name], device_map="tpu")
    torch._dynamo.reset()
    torch_pjrt.reset_metrics()
    x = _prompt(name, 1)
    got = tpu.generate(**H.to(x, "tpu"), **KW)
    assert torch.equal(got.cpu(), cpu.generate(**x, max_new_tokens=16, do_sample=False))
    first = torch_pjrt.metrics()
    # The decode step ran as a compiled graph (15 steps after the eager
    # prefill), from one compiled executable.
    # (graph_compiles counts XLA compiles: 0 when an earlier run left the
    # executable in the cache; graph_traces counts captured signatures.)
    assert first["graph_runs"] >= 15
    assert 1 <= first["graph_traces"] <= 2 and first["graph_compiles"] <= first["graph_traces"]
    assert first["graph_splits"] == 0 and first["graph_eager"] == 0
    # A new prompt of the same shape: same tokens as CPU, nothing compiles.
    y = _prompt(name, 2)
    got = tpu.generate(**H.to(y, "tpu"), **KW)
    assert torch.equal(got.cpu(), cpu.generate(**y, max_new_tokens=16, do_sample=False))
    after = torch_pjrt.metrics()
    assert after["graph_compiles"] == first["graph_compiles"]
    assert after["graph_traces"] == first["graph_traces"]
    assert after["graph_runs"] >= first["graph_runs"] + 15
    assert torch_pjrt.fallbacks() == {}
    del tpu._compiled_call
    torch._dynamo.reset()


def test_explicit_compile_config_fullgraph(saved):
    """The user's spelling: a CompileConfig naming the tpu backend with
    fullgraph=True (a graph break would raise)."""
    cpu = H.load(saved["llama"], device_map="cpu")
    tpu = H.load(saved["llama"], device_map="tpu")
    torch._dynamo.reset()
    torch_pjrt.reset_metrics()
    cfg = transformers.CompileConfig(backend="tpu", fullgraph=True, dynamic=False, mode="default")
    x = _prompt("llama", 3)
    got = tpu.generate(**H.to(x, "tpu"), compile_config=cfg, **KW)
    assert torch.equal(got.cpu(), cpu.generate(**x, max_new_tokens=16, do_sample=False))
    m = torch_pjrt.metrics()
    assert m["graph_runs"] >= 15 and 1 <= m["graph_traces"] <= 2
    assert torch_pjrt.fallbacks() == {}
    del tpu._compiled_call
    torch._dynamo.reset()
