"""Mixed precision on tpu: what torch.autocast("tpu") and torch.amp.GradScaler
ask of the device module. The autocast policy itself (which ops run in the
low-precision dtype, which in float32) is registered in csrc/device/autocast.cpp;
GradScaler's kernels are lowered in src/ops/amp.c."""
from __future__ import annotations

import torch


def get_amp_supported_dtype() -> list[torch.dtype]:
    """The dtypes torch.autocast("tpu", dtype=...) accepts. float32 too, as
    CUDA accepts it: a float32 region runs the autocast-dtype ops (matmul,
    linear, ...) in float32 on low-precision inputs. TorchTitan's MoE router
    computes its gate that way under FSDP's bfloat16 parameters; refused, the
    region would warn and run the gate in bfloat16."""
    return [torch.float16, torch.bfloat16, torch.float32]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """bfloat16 is native on tpu (XLA computes it, accumulating in float32)."""
    return True
