"""Hugging Face Transformers model classes on tpu: each architecture is built
from a tiny config with random weights, saved with save_pretrained
(safetensors) and loaded with from_pretrained(path, device_map="tpu"). Logits
must equal the CPU's and greedy generation must pick the same tokens, with no
op falling back to the CPU."""
import pytest
import torch

import torch_pjrt

transformers = pytest.importorskip("transformers")

import hf_models as H  # noqa: E402

pytestmark = pytest.mark.usefixtures("no_leaks")


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    d = tmp_path_factory.mktemp("hf")
    return {n: H.save(n, str(d)) for n in H.NAMES}


def _gen_inputs(name, x):
    return {k: v for k, v in x.items() if k != "decoder_input_ids"}


@pytest.mark.parametrize("name", H.NAMES)
def test_float32_logits_and_greedy_tokens_match_cpu(saved, name):
    cpu = H.load(saved[name], device_map="cpu")
    tpu = H.load(saved[name], device_map="tpu")
    assert all(p.device.type == "tpu" for p in tpu.parameters())
    x = H.inputs(name)
    torch_pjrt.reset_metrics()
    with torch.no_grad():
        expect = cpu(**x).logits
        got = tpu(**H.to(x, "tpu")).logits
    assert got.device.type == "tpu"
    torch.testing.assert_close(got.cpu(), expect, atol=1e-4, rtol=1e-4)
    assert torch_pjrt.fallbacks() == {}
    if name in H.DECODERS or name == "t5":
        g = _gen_inputs(name, x)
        kw = dict(max_new_tokens=16, do_sample=False)
        expect_ids = cpu.generate(**g, **kw)
        got_ids = tpu.generate(**H.to(g, "tpu"), **kw)
        assert got_ids.device.type == "tpu"
        assert torch.equal(got_ids.cpu(), expect_ids)
        assert torch_pjrt.fallbacks() == {}


@pytest.mark.parametrize("name", H.NAMES)
def test_bfloat16_logits_as_close_as_cpus(saved, name):
    """bfloat16 keeps 8 significant bits: both devices round every matmul
    and norm output, in a different order, so their logits differ by a few
    bf16 steps. The check: tpu's bf16 logits are as close to the float32
    reference as CPU's bf16 logits are (within 2x), and close to CPU's."""
    ref = H.load(saved[name], device_map="cpu")
    cpu = H.load(saved[name], device_map="cpu", dtype=torch.bfloat16)
    tpu = H.load(saved[name], device_map="tpu", dtype=torch.bfloat16)
    assert all(p.dtype == torch.bfloat16 for p in tpu.parameters())
    x = H.inputs(name)
    torch_pjrt.reset_metrics()
    with torch.no_grad():
        expect = ref(**x).logits
        cpu_bf16 = cpu(**x).logits
        got = tpu(**H.to(x, "tpu")).logits.cpu()
    assert got.dtype == torch.bfloat16
    cpu_err = (cpu_bf16.float() - expect).abs().max().item()
    tpu_err = (got.float() - expect).abs().max().item()
    assert tpu_err <= 2 * cpu_err + 1e-3, (tpu_err, cpu_err)
    torch.testing.assert_close(got.float(), cpu_bf16.float(), atol=0.1, rtol=0.05)
    assert torch_pjrt.fallbacks() == {}


@pytest.mark.parametrize("device_map", ["tpu", "tpu:0", torch.device("tpu", 0), {"": "tpu"}, {"": 0}])
def test_device_map_spellings(saved, device_map):
    m = transformers.LlamaForCausalLM.from_pretrained(saved["llama"], device_map=device_map)
    assert {p.device for p in m.parameters()} == {torch.device("tpu", 0)}
    assert m.device == torch.device("tpu", 0)


def test_load_on_second_device(saved):
    m = transformers.LlamaForCausalLM.from_pretrained(saved["llama"], device_map="tpu:1").eval()
    cpu = transformers.LlamaForCausalLM.from_pretrained(saved["llama"]).eval()
    x = H.inputs("llama")
    with torch.no_grad():
        got = m(**H.to(x, "tpu:1")).logits
    assert got.device == torch.device("tpu", 1)
    torch.testing.assert_close(got.cpu(), cpu(**x).logits, atol=1e-4, rtol=1e-4)


def test_moe_gradients_match_cpu(saved):
    """A training step's backward through the MoE layer (sort, histc,
    _grouped_mm in both layouts) runs on tpu and gives CPU's gradients."""
    grads = {}
    for dev in ("cpu", "tpu"):
        m = H.load(saved["qwen3_moe"], device_map=dev).train()
        x = H.inputs("qwen3_moe")
        torch_pjrt.reset_metrics()
        loss = m(**H.to(x, dev), labels=x["input_ids"].to(dev)).loss
        loss.backward()
        assert torch_pjrt.fallbacks() == {}
        grads[dev] = {n: p.grad.cpu() for n, p in m.named_parameters() if p.grad is not None}
    assert grads["tpu"].keys() == grads["cpu"].keys() and len(grads["cpu"]) > 20
    for n, g in grads["cpu"].items():
        torch.testing.assert_close(grads["tpu"][n], g, atol=1e-5, rtol=1e-4, msg=n)
