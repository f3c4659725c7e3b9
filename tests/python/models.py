"""Small reference models shared by the tests and bench/: a GPT-style
transformer language model and a CNN. Built with random weights from a seed;
nothing is downloaded."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, heads, dropout):
        super().__init__()
        self.heads = heads
        self.dropout = dropout
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d),
                                 nn.Dropout(dropout))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           dropout_p=self.dropout if self.training else 0.0)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    """Embedding + positional embedding, causal SDPA blocks, LayerNorm, GELU,
    dropout, tied-free LM head; forward(idx) -> logits (B, T, vocab)."""

    def __init__(self, vocab=64, d=32, heads=2, layers=2, seq=16, dropout=0.0, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(Block(d, heads, dropout) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.drop(self.tok(idx) + self.pos.weight[:t])
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def lm_loss(model, idx, target):
    logits = model(idx)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))


def lm_batches(n, batch=4, seq=16, vocab=64, seed=1):
    """Learnable token streams: each row counts up by a per-row stride from
    a random start (mod vocab), so the loss can really fall."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        start = torch.randint(0, vocab, (batch, 1), generator=g)
        stride = torch.randint(1, 4, (batch, 1), generator=g)
        data = (start + stride * torch.arange(seq + 1)) % vocab
        out.append((data[:, :-1].contiguous(), data[:, 1:].contiguous()))
    return out


class SmallCNN(nn.Module):
    def __init__(self, classes=10, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(16, classes)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))


def cnn_batches(n, batch=8, size=16, classes=10, seed=1):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(batch, 3, size, size, generator=g),
             torch.randint(0, classes, (batch,), generator=g)) for _ in range(n)]
