"""Weight-only integer quantization on tpu: vLLM's mixed-precision linear
layers ("WNA16": int2/4/8 weights in groups, activations in the model's
dtype), as compressed-tensors' pack-quantized checkpoints describe them.

vLLM picks a kernel for such a layer from a list per platform
(kernels.linear._POSSIBLE_KERNELS); an out-of-tree platform has none, and
every one of CUDA's and the CPU's calls a compiled kernel of vLLM's _C.
The kernel here keeps vLLM's scheme (its parameters, loading and sharding)
and replaces only the two steps a kernel owns:
- after loading, the packed int32 words are unpacked once, on the host, to
  one int8 code per weight with its zero point or bias already taken off
  ([out, groups, group_size]), and the scales laid out [out, groups];
- each forward dequantizes (codes * scales) and multiplies in float32 (see
  apply_weights), the result cast back to the model's dtype: a few tpu ops,
  which torch.compile fuses into the layer's graph.

The codes stay int8 on the device: a quarter of float32's bytes, twice the
packed form's for 4-bit weights (there is no 4-bit device type, and
unpacking the words on every forward would cost shifts that the tpu op
table does not lower).
"""
from __future__ import annotations

import torch
from vllm.model_executor.kernels import linear as _linear
from vllm.model_executor.kernels.linear import MPLinearKernel, MPLinearLayerConfig
from vllm.model_executor.layers.quantization.utils.quant_utils import (
    unpack_quantized_values_into_int32,
)
from vllm.platforms import PlatformEnum, current_platform


class TpuWNA16LinearKernel(MPLinearKernel):
    """Grouped or per-channel integer weights, dequantized in torch."""

    @classmethod
    def get_min_capability(cls) -> int:
        return -1  # no CUDA capability: the platform reports none

    @classmethod
    def can_implement(cls, c: MPLinearLayerConfig) -> tuple[bool, str | None]:
        if current_platform.device_type != "tpu":
            return False, "TpuWNA16 runs on the tpu device only"
        bits = c.weight_type.size_bits
        if bits not in (2, 4, 8) or c.weight_type.is_signed():
            return False, f"weight type {c.weight_type} is not supported on tpu"
        k = c.partition_weight_shape[0]
        if c.group_size not in (-1, 0) and k % c.group_size:
            return False, f"group size {c.group_size} does not divide the input size {k}"
        return True, None

    def process_weights_after_loading(self, layer: torch.nn.Module) -> None:
        wtype = self.config.weight_type
        k, n = self.config.partition_weight_shape  # input, output
        group = k if self.config.group_size in (-1, 0) else self.config.group_size
        w_q, w_s, w_zp = self._get_weight_params(layer)
        device = w_q.device

        codes = _unpack(w_q, wtype)
        if w_q.output_dim != 0:  # GPTQ-style [in, out]: make it [out, in]
            codes = codes.t()
        codes = codes[:n, :k].reshape(n, k // group, group)
        scales = w_s.data.cpu()
        if w_s.output_dim != 0:
            scales = scales.t()
        scales = scales.reshape(n, -1)
        if scales.shape[1] != k // group:
            raise ValueError(f"tpu: {scales.shape[1]} weight scales per output row, expected "
                             f"{k // group} for input size {k} and group size {group}")
        if self.config.zero_points:
            zp = _unpack(w_zp, wtype)
            if w_zp.output_dim != 0:
                zp = zp.t()
            centre = zp[:n].reshape(n, -1, 1)
        else:
            centre = torch.tensor(wtype.bias, dtype=torch.int32)
        codes = codes - centre
        # int8 holds every code of a biased type and 7-bit zero points; 8-bit
        # codes less an 8-bit zero point span -255..255.
        small = codes.min() >= -128 and codes.max() <= 127
        codes = codes.to(torch.int8 if small else torch.int16)

        setattr(layer, self.w_q_name,
                torch.nn.Parameter(codes.contiguous().to(device), requires_grad=False))
        setattr(layer, self.w_s_name,
                torch.nn.Parameter(scales.contiguous().to(device), requires_grad=False))
        if self.w_zp_name is not None and getattr(layer, self.w_zp_name, None) is not None:
            setattr(layer, self.w_zp_name, None)

    def apply_weights(self, layer: torch.nn.Module, x: torch.Tensor,
                      bias: torch.Tensor | None = None) -> torch.Tensor:
        codes = getattr(layer, self.w_q_name)
        scales = getattr(layer, self.w_s_name)
        n = codes.shape[0]
        # In float32 whatever the model's dtype: a 4-bit code times a 16-bit
        # scale needs more mantissa than bfloat16 has, and vLLM's CPU kernel
        # also dequantizes and accumulates in float32.
        w = (codes.float() * scales.float().unsqueeze(-1)).reshape(n, -1)
        y = torch.nn.functional.linear(x.float(), w, None if bias is None else bias.float())
        return y.to(x.dtype)


def _unpack(param: torch.Tensor, wtype) -> torch.Tensor:
    """The int32 codes of a packed parameter, unpacked on the host along its
    packed dim (a parameter without one is already one code per element)."""
    data = param.data.cpu()
    packed_dim = getattr(param, "packed_dim", None)
    if packed_dim is None:
        return data.to(torch.int32)
    return unpack_quantized_values_into_int32(data, wtype, packed_dim)


def register() -> None:
    """Offers the kernel to vLLM's mixed-precision kernel choice on an
    out-of-tree platform (first, as no other can run here)."""
    kernels = _linear._POSSIBLE_KERNELS.setdefault(PlatformEnum.OOT, [])
    if TpuWNA16LinearKernel not in kernels:
        kernels.insert(0, TpuWNA16LinearKernel)


register()
