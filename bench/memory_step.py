"""Peak live tpu storage of one warm training step of the test LM (d 64,
AdamW), eager against one compiled function holding forward, backward and the
optimizer step. Prints the two peaks and the buffers the compiled step donated.

    .venv/bin/python bench/memory_step.py
"""
import os
import sys

import torch
import torch.nn.functional as F

import torch_pjrt

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
from models import TinyLM  # noqa: E402


def peak_of_step(compiled: bool, NONE: bool = False) -> tuple[int, int]:
    torch.manual_seed(0)
    model = TinyLM(d=64).to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step(x, y):
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=NONE)
        return loss

    f = torch.compile(step, backend="tpu") if compiled else step
    x = torch.randint(0, 64, (4, 16), device="tpu")
    y = torch.randint(0, 64, (4, 16), device="tpu")
    for _ in range(3):
        f(x, y)
    torch.tpu.synchronize()
    torch_pjrt.reset_metrics()
    torch.tpu.reset_peak_memory_stats()
    f(x, y)
    torch.tpu.synchronize()
    return torch.tpu.max_memory_allocated(), torch_pjrt.metrics()["donated_buffers"]


if __name__ == "__main__":
    eager, _ = peak_of_step(False)
    torch._dynamo.reset()
    comp, donated = peak_of_step(True)
    print(f"peak live storage, one warm step: eager {eager / 1e6:.2f} MB, "
          f"compiled {comp / 1e6:.2f} MB (ratio {comp / eager:.2f}); "
          f"compiled step donated {donated} buffers")
