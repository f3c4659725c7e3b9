"""What TorchTitan's wheel does not ship and its debug configs read: a
tokenizer (hf_assets_path) and a text dataset (c4_test's loader: a folder of
JSON lines with a "text" field). Both are made here, small and
deterministic: a byte-level BPE trained with the `tokenizers` library on a
corpus drawn from a fixed vocabulary with a fixed seed.

The dataset is the same documents written `copies` times. TorchTitan gives
each data-parallel rank a contiguous shard, so with copies == ranks every rank
reads what a single process reads: N ranks with local batch 1 train on N
identical rows, whose mean loss and gradient are one row's, and their losses
must match a single process's with local batch 1."""
import json
import os
import random

WORDS = ("the cat dog sat on a mat ran to house big small red blue tree and then it was "
         "happy sun moon star river hill old new fast slow green bird fish ate slept under "
         "over near far").split()


def build(root, docs=150, vocab=512, copies=4):
    """Writes root/tokenizer/{tokenizer.json,tokenizer_config.json} and
    root/data/train.json; returns (tokenizer dir, data dir)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok_dir, data_dir = os.path.join(root, "tokenizer"), os.path.join(root, "data")
    os.makedirs(tok_dir, exist_ok=True)
    os.makedirs(data_dir, exist_ok=True)
    rng = random.Random(0)
    texts = []
    for _ in range(docs):
        # a little structure (each word tends to follow the previous one's
        # neighbour) so that the loss has something to learn
        w = rng.randrange(len(WORDS))
        out = []
        for _ in range(rng.randint(20, 120)):
            w = (w + rng.choice((1, 1, 2, 3))) % len(WORDS)
            out.append(WORDS[w])
        texts.append(" ".join(out) + ".")
    with open(os.path.join(data_dir, "train.json"), "w") as f:
        for t in texts * copies:
            f.write(json.dumps({"text": t}) + "\n")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab,
                                  special_tokens=["<|begin_of_text|>", "<|end_of_text|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer)
    tok.save(os.path.join(tok_dir, "tokenizer.json"))
    with open(os.path.join(tok_dir, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"}, f)
    return tok_dir, data_dir
