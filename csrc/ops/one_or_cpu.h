// The shape of a one-operand kernel whose lowering covers some dtypes only
// (upsample, antialiased interpolation): run the lowering into a tensor
// shaped like PyTorch's meta result, or CPU's kernel (counted) for the rest.
#pragma once

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>

#include "ops/fallback.h"
#include "tensor.h"

namespace torch_pjrt {

// Runs `op` on x (input or grad_output) into a new tensor shaped like meta
// when native, with attrs() as its attributes; otherwise cpu(x.cpu()), which
// also raises CPU's error for dtypes CPU lacks, comes back to x's device.
template <typename AttrFn, typename CpuFn>
at::Tensor run_one_or_cpu(const char* op, const at::Tensor& x, const at::Tensor& meta,
                          bool native, AttrFn attrs, CpuFn cpu) {
  check_supported(x, op);
  c10::Device dev = x.device();
  if (!native) {
    at::Tensor r = cpu(x.cpu());
    dtype_fallback(op, x.scalar_type());
    return r.to(dev);
  }
  c10::DeviceGuard guard(dev);
  at::Tensor out = at::empty(meta.sizes(), meta.options().device(dev));
  if (out.numel() == 0) return out;
  OpArgs a;
  a.tensor(x);
  run_op(op, dev.index(), a, attrs(), {out});
  return out;
}

}  // namespace torch_pjrt
