"""vLLM on the tpu device: the `vllm.platform_plugins` entry point.

vLLM calls register() in every process it starts (the front end, the engine
core, each worker) before it picks a platform. It must be cheap and must not
open the PJRT client: the front end forks or spawns the engine core after
this runs, and a client opened before a fork is unusable in the child.
"""
from __future__ import annotations


def register() -> str | None:
    """The platform class path when a tpu device can be opened, else None
    (vLLM then falls back to its own platforms)."""
    try:
        import torch_pjrt
    except Exception:  # a broken install leaves vLLM to its own platforms
        return None
    found = torch_pjrt.plugin()
    if not found["path"] or found["error"]:
        return None
    return "torch_pjrt.vllm.platform.TpuPlatform"
