"""Small Hugging Face Transformers models for the tests, the demo and bench/:
real model classes built from tiny configs (hidden 64, 2 layers, vocab 256)
with random weights from a seed, saved with save_pretrained (safetensors) so
that from_pretrained(path, device_map="tpu") is the path under test. Nothing
is downloaded."""
from __future__ import annotations

import os

import torch

VOCAB = 256


def _configs():
    import transformers as tf

    common = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                  pad_token_id=0, bos_token_id=1, eos_token_id=2)
    return {
        "llama": (tf.LlamaConfig, tf.LlamaForCausalLM, dict(common)),
        "qwen3": (tf.Qwen3Config, tf.Qwen3ForCausalLM, dict(common, head_dim=16)),
        "qwen3_moe": (tf.Qwen3MoeConfig, tf.Qwen3MoeForCausalLM,
                      dict(common, head_dim=16, num_experts=4, num_experts_per_tok=2,
                           moe_intermediate_size=32, decoder_sparse_step=1, norm_topk_prob=True)),
        "gpt2": (tf.GPT2Config, tf.GPT2LMHeadModel,
                 dict(vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4, n_positions=128,
                      bos_token_id=1, eos_token_id=2)),
        "bert": (tf.BertConfig, tf.BertForMaskedLM,
                 dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2,
                      num_attention_heads=4, intermediate_size=128,
                      max_position_embeddings=128, pad_token_id=0)),
        "t5": (tf.T5Config, tf.T5ForConditionalGeneration,
               dict(vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=2,
                    num_decoder_layers=2, num_heads=4, decoder_start_token_id=0,
                    pad_token_id=0, eos_token_id=2)),
        "vit": (tf.ViTConfig, tf.ViTForImageClassification,
                dict(image_size=32, patch_size=8, num_channels=3, hidden_size=64,
                     num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                     num_labels=10)),
    }


NAMES = ["llama", "qwen3", "qwen3_moe", "gpt2", "bert", "t5", "vit"]
DECODERS = ["llama", "qwen3", "qwen3_moe", "gpt2"]


def build(name: str, seed: int = 0, **overrides):
    """A randomly initialised model of the named family (float32, CPU, eval)."""
    config_cls, model_cls, kw = _configs()[name]
    kw = dict(kw, **overrides)
    torch.manual_seed(seed)
    model = model_cls(config_cls(**kw))
    # A real checkpoint has no exact-zero biases or unit norms; random ones
    # make a wrong bias or norm weight visible in the logits.
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n.endswith("bias") or "norm" in n.lower():
                p.add_(torch.randn_like(p) * 0.1)
    return model.eval()


def save(name: str, directory: str, seed: int = 0, **overrides) -> str:
    """Builds the model and writes it with save_pretrained (safetensors)."""
    path = os.path.join(directory, name)
    build(name, seed, **overrides).save_pretrained(path, safe_serialization=True)
    return path


def load(path: str, device_map="tpu", dtype=torch.float32):
    """from_pretrained onto device_map, in eval mode."""
    name = os.path.basename(path.rstrip("/"))
    model_cls = _configs()[name][1]
    return model_cls.from_pretrained(path, device_map=device_map, dtype=dtype).eval()


def inputs(name: str, batch: int = 2, seq: int = 8, seed: int = 1) -> dict:
    """CPU model inputs for one forward pass."""
    g = torch.Generator().manual_seed(seed)
    if name == "vit":
        return {"pixel_values": torch.randn(batch, 3, 32, 32, generator=g)}
    ids = torch.randint(3, VOCAB, (batch, seq), generator=g)
    mask = torch.ones(batch, seq, dtype=torch.long)
    mask[0, :2] = 0  # left padding on one row: the attention mask matters
    out = {"input_ids": ids, "attention_mask": mask}
    if name == "t5":
        out["decoder_input_ids"] = torch.randint(3, VOCAB, (batch, seq // 2), generator=g)
    return out


def to(batch: dict, device) -> dict:
    return {k: v.to(device) for k, v in batch.items()}
