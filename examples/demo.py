"""A small Llama generating on `tpu`: Hugging Face Transformers' own
LlamaForCausalLM, built from a tiny config with random weights (nothing is
downloaded), saved with save_pretrained and loaded with
from_pretrained(..., device_map="tpu"). It generates greedily with a static
KV cache, eagerly (op by op; the fixed cache shape lets every decode step
reuse the same compiled ops) and compiled (Transformers compiles the decode
step with the "tpu" torch.compile backend when the model is on tpu), checks
the tokens against the CPU's, and prints tokens/s and the CPU-fallback
report.

    python examples/demo.py
"""
import tempfile
import time

import torch
import transformers

import torch_pjrt

NEW = 32


def timed_generate(model, ids, **kw):
    t0 = time.perf_counter()
    out = model.generate(ids, max_new_tokens=NEW, do_sample=False, **kw)
    out = out.cpu()  # waits for the device
    return out, time.perf_counter() - t0


def main():
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        bos_token_id=1, eos_token_id=2, pad_token_id=0)
    with tempfile.TemporaryDirectory() as d:
        transformers.LlamaForCausalLM(config).save_pretrained(d)
        cpu = transformers.LlamaForCausalLM.from_pretrained(d).eval()
        model = transformers.LlamaForCausalLM.from_pretrained(d, device_map="tpu").eval()
    print(f"model: LlamaForCausalLM, {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M "
          f"parameters on {model.device} ({torch.tpu.get_device_name()})")

    ids = torch.randint(3, config.vocab_size, (1, 8), generator=torch.Generator().manual_seed(1))
    timed_generate(cpu, ids)  # warm-up
    expect, t_cpu = timed_generate(cpu, ids)
    torch_pjrt.reset_metrics()
    static = {"cache_implementation": "static"}
    for label, kw in [("eager", dict(static, disable_compile=True)), ("compiled", static)]:
        compiles0 = torch_pjrt.metrics()["graph_compiles"]
        out, t_first = timed_generate(model, ids.to("tpu"), **kw)
        out2, t_warm = timed_generate(model, ids.to("tpu"), **kw)
        same = torch.equal(out, expect) and torch.equal(out2, expect)
        graphs = torch_pjrt.metrics()["graph_compiles"] - compiles0
        print(f"tpu {label:9s} {NEW / t_warm:7.1f} tokens/s (first call {t_first:5.2f} s, with "
              f"compiling) | same tokens as CPU: {same}"
              + ("" if "disable_compile" in kw else f" | decode graphs compiled: {graphs}"))
    print(f"cpu eager {NEW / t_cpu:7.1f} tokens/s")
    print("generated ids:", out[0, ids.shape[1]:].tolist())
    m = torch_pjrt.metrics()
    print(f"metrics: {m['compiles']} XLA compiles, {m['executions']} executions, "
          f"{m['graph_runs']} compiled-graph runs")
    print("CPU fallbacks:", torch_pjrt.fallbacks() or "none")


if __name__ == "__main__":
    main()
