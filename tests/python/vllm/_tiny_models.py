"""Tiny random-weight models and a tokenizer built here, saved to a folder
that vLLM and Hugging Face both load from disk (no hub)."""
from __future__ import annotations

import json
import os

import torch

CORPUS = [
    "the quick brown fox jumps over the lazy dog",
    "a paged cache keeps keys and values in blocks",
    "serving many requests at once needs continuous batching",
    "tokens are written by slot and read through the block table",
    "hello world, this is a tiny tokenizer for tests",
]


def build_tokenizer(path: str, vocab_size: int = 320):
    """A byte-level BPE trained on CORPUS (every byte is a token, so any text
    encodes), saved as a PreTrainedTokenizerFast."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<s>", "</s>", "<pad>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   pad_token="<pad>")
    # A chat template, so the server's /v1/chat/completions has one to apply.
    fast.chat_template = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n"
                          "{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}")
    fast.save_pretrained(path)
    return fast


def build_llama(path: str, seed: int = 0, **overrides) -> str:
    """A 2-layer Llama (GQA: 4 query heads over 2 KV heads) with random
    weights drawn at a large scale, so that greedy picks are far from ties
    and the comparison with Hugging Face is not at the mercy of rounding."""
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    os.makedirs(path, exist_ok=True)
    tok = build_tokenizer(path)
    cfg = dict(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
               initializer_range=0.3, tie_word_embeddings=False, bos_token_id=tok.bos_token_id,
               eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    cfg.update(overrides)
    config = LlamaConfig(**cfg)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).to(torch.float32).eval()
    model.save_pretrained(path)
    GenerationConfig(bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                     pad_token_id=tok.pad_token_id).save_pretrained(path)
    return path


def build_qwen3(path: str, seed: int = 0, **overrides) -> str:
    """A 2-layer Qwen3 (per-head RMSNorm of queries and keys, GQA 4 over 2,
    head_dim set apart from hidden_size / heads)."""
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    os.makedirs(path, exist_ok=True)
    tok = build_tokenizer(path)
    cfg = dict(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, head_dim=32,
               max_position_embeddings=512, initializer_range=0.3, tie_word_embeddings=False,
               bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
               pad_token_id=tok.pad_token_id)
    cfg.update(overrides)
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(Qwen3Config(**cfg)).to(torch.float32).eval()
    model.save_pretrained(path)
    GenerationConfig(bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                     pad_token_id=tok.pad_token_id).save_pretrained(path)
    return path


def build_qwen3_moe(path: str, seed: int = 0, **overrides) -> str:
    """A 2-layer Qwen3-MoE: 8 experts, 2 picked per token (renormalized),
    every layer sparse."""
    from transformers import GenerationConfig, Qwen3MoeConfig, Qwen3MoeForCausalLM

    os.makedirs(path, exist_ok=True)
    tok = build_tokenizer(path)
    cfg = dict(vocab_size=len(tok), hidden_size=64, intermediate_size=128,
               moe_intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
               num_key_value_heads=2, head_dim=16, num_experts=8, num_experts_per_tok=2,
               decoder_sparse_step=1, norm_topk_prob=True, max_position_embeddings=512,
               initializer_range=0.3, tie_word_embeddings=False, bos_token_id=tok.bos_token_id,
               eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    cfg.update(overrides)
    torch.manual_seed(seed)
    model = Qwen3MoeForCausalLM(Qwen3MoeConfig(**cfg)).to(torch.float32).eval()
    model.save_pretrained(path)
    GenerationConfig(bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                     pad_token_id=tok.pad_token_id).save_pretrained(path)
    return path


def hf_greedy(model, prompts, max_tokens: int) -> list[list[int]]:
    """Hugging Face greedy continuations on the CPU, one prompt at a time,
    exactly max_tokens each (the reference for vLLM's ignore_eos=True)."""
    outs = []
    for p in prompts:
        gen = model.generate(torch.tensor([p]), max_new_tokens=max_tokens,
                             min_new_tokens=max_tokens, do_sample=False,
                             pad_token_id=model.config.pad_token_id)
        outs.append(gen[0, len(p):].tolist())
    return outs


QUANTIZED_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                         "down_proj")


def quantize_w4a16(src: str, dst: str, group_size: int = 32, symmetric: bool = True) -> str:
    """A compressed-tensors pack-quantized copy of the model at src: every
    decoder projection's weight as 4-bit integers in groups of group_size
    along the input dim, one scale per group (and a zero point when not
    symmetric), 8 codes per int32 word (code i of a word in bits 4i..4i+3),
    as llm-compressor saves W4A16. Embeddings, norms and lm_head stay float.

    Symmetric: q = clamp(round(w / s), -8, 7), s = max|w| / 7, stored as q + 8.
    Asymmetric: q = clamp(round(w / s) + z, 0, 15), s = (max - min) / 15,
    z = round(-min / s), zero points packed along the output dim.
    Returns dst; the float weights vLLM's kernels should reproduce are
    dequantize_w4a16(dst)."""
    import shutil

    from safetensors.torch import load_file, save_file

    os.makedirs(dst, exist_ok=True)
    for name in os.listdir(src):
        if name != "model.safetensors":
            shutil.copy(os.path.join(src, name), os.path.join(dst, name))
    tensors = load_file(os.path.join(src, "model.safetensors"))
    out = {}
    for key, w in tensors.items():
        layer = key.rsplit(".", 2)
        if not (key.endswith(".weight") and layer[-2] in QUANTIZED_PROJECTIONS):
            out[key] = w
            continue
        n, k = w.shape
        g = w.float().reshape(n, k // group_size, group_size)
        if symmetric:
            scale = g.abs().amax(-1) / 7
            q = torch.clamp(torch.round(g / scale[..., None]), -8, 7) + 8
        else:
            lo, hi = g.amin(-1).clamp(max=0), g.amax(-1).clamp(min=0)
            scale = (hi - lo) / 15
            zero = torch.round(-lo / scale)
            q = torch.clamp(torch.round(g / scale[..., None]) + zero[..., None], 0, 15)
            out[key[: -len("weight")] + "weight_zero_point"] = _pack4(zero.to(torch.int32).t()).t()
        base = key[: -len("weight")]
        out[base + "weight_packed"] = _pack4(q.to(torch.int32).reshape(n, k))
        out[base + "weight_scale"] = scale.to(w.dtype).contiguous()
        out[base + "weight_shape"] = torch.tensor([n, k], dtype=torch.int64)
    save_file({k: v.contiguous() for k, v in out.items()}, os.path.join(dst, "model.safetensors"),
              metadata={"format": "pt"})
    with open(os.path.join(dst, "config.json")) as f:
        cfg = json.load(f)
    cfg["quantization_config"] = {
        "quant_method": "compressed-tensors",
        "format": "pack-quantized",
        "quantization_status": "compressed",
        "ignore": ["lm_head"],
        "config_groups": {"group_0": {
            "targets": ["Linear"],
            "weights": {"num_bits": 4, "type": "int", "symmetric": symmetric,
                        "strategy": "group", "group_size": group_size, "dynamic": False,
                        "actorder": None, "observer": "minmax"},
            "input_activations": None, "output_activations": None,
            "format": "pack-quantized"}},
    }
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    return dst


def _pack4(q: torch.Tensor) -> torch.Tensor:
    """[rows, cols] codes 0..15 -> [rows, cols / 8] int32, code i of each
    word in bits 4i..4i+3."""
    rows, cols = q.shape
    q = q.reshape(rows, cols // 8, 8).to(torch.int64)
    word = sum(q[..., i] << (4 * i) for i in range(8))
    # The top code's high bit is the int32 sign bit.
    return torch.where(word >= 1 << 31, word - (1 << 32), word).to(torch.int32)


def dequantize_w4a16(path: str) -> dict[str, torch.Tensor]:
    """The float weights of a checkpoint from quantize_w4a16, by the
    dequantization rule alone (s * (q - 8), or s * (q - z)): what a correct
    kernel multiplies by, for a Hugging Face model loaded with them."""
    from safetensors.torch import load_file

    tensors = load_file(os.path.join(path, "model.safetensors"))
    out = {}
    for key, t in tensors.items():
        if key.endswith((".weight_scale", ".weight_shape", ".weight_zero_point")):
            continue
        if not key.endswith(".weight_packed"):
            out[key] = t
            continue
        base = key[: -len("weight_packed")]
        n, k = tensors[base + "weight_shape"].tolist()
        scale = tensors[base + "weight_scale"].float()
        words = t.to(torch.int64) & 0xFFFFFFFF
        q = torch.stack([(words >> (4 * i)) & 15 for i in range(8)], -1).reshape(n, k)
        zp = tensors.get(base + "weight_zero_point")
        if zp is None:
            centre = torch.full_like(scale, 8.0)
        else:
            zw = zp.t().to(torch.int64) & 0xFFFFFFFF
            centre = torch.stack([(zw >> (4 * i)) & 15 for i in range(8)], -1)
            centre = centre.reshape(zw.shape[0], -1)[:, :n].t().float()
        g = q.reshape(n, scale.shape[1], -1).float() - centre[..., None]
        out[base + "weight"] = (g * scale[..., None]).reshape(n, k)
    return out
