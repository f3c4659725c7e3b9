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
