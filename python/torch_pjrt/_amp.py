"""Mixed precision on tpu: what torch.autocast("tpu") and torch.amp.GradScaler
ask of the device module. The autocast policy itself (which ops run in the
low-precision dtype, which in float32) is registered in csrc/device/autocast.cpp;
GradScaler's kernels are lowered in src/ops/amp.c."""
from __future__ import annotations

import torch


def get_amp_supported_dtype() -> list[torch.dtype]:
    """The dtypes torch.autocast("tpu", dtype=...) accepts."""
    return [torch.float16, torch.bfloat16]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """bfloat16 is native on tpu (XLA computes it, accumulating in float32)."""
    return True
