// Automatic mixed precision on tpu: the autocast policy of
// torch.autocast("tpu") and the glue of GradScaler's two kernels.
//
// PyTorch registers no AutocastPrivateUse1 kernels of its own (only the
// fallthrough), so without this every op would run in the input dtype. The
// policy is CUDA's, taken from the op lists PyTorch publishes in
// ATen/autocast_mode.h: matmul/conv/linear/SDPA in the autocast dtype;
// pointwise transcendental ops, norms, losses and reductions in float32;
// mixed-dtype ops promoted to the widest input; binary_cross_entropy refused
// (unsafe in float16, as on CUDA).
//
// _amp_foreach_non_finite_check_and_unscale_ and _amp_update_scale_ are
// lowered in src/ops/amp.c; this file checks their arguments the way the CPU
// kernels do and writes the results back in place.
#include <ATen/autocast_mode.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>

#include "ops/write.h"
#include "tensor.h"

namespace torch_pjrt {
namespace {

using at::Tensor;

// ---- autocast policy --------------------------------------------------------

Tensor binary_cross_entropy_banned(const Tensor&, const Tensor&, const std::optional<Tensor>&,
                                   int64_t) {
  TORCH_CHECK(false,
              "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to "
              "autocast.\nMany models use a sigmoid layer right before the binary cross entropy "
              "layer.\nIn this case, combine the two layers using "
              "torch.nn.functional.binary_cross_entropy_with_logits\nor torch.nn.BCEWithLogitsLoss."
              "  binary_cross_entropy_with_logits and BCEWithLogits are\nsafe to autocast.");
}

// ---- GradScaler kernels -----------------------------------------------------

// One program takes at most this many gradients (the table's output limit,
// less found_inf); longer lists run in chunks that chain found_inf.
constexpr size_t kUnscaleChunk = 7;

void check_one_float(const Tensor& t, const char* name) {
  TORCH_CHECK(t.numel() == 1, name, " must be a 1-element tensor.");
  TORCH_CHECK(t.scalar_type() == at::kFloat, name, " must be a float tensor.");
}

void amp_foreach_non_finite_check_and_unscale_(at::TensorList scaled_grads, Tensor& found_inf,
                                               const Tensor& inv_scale) {
  constexpr const char* kOp = "aten::_amp_foreach_non_finite_check_and_unscale_";
  check_one_float(inv_scale, "inv_scale");
  check_one_float(found_inf, "found_inf");
  TORCH_CHECK(found_inf.device().is_privateuseone(), "found_inf must be a tpu tensor.");
  TORCH_CHECK(inv_scale.device() == found_inf.device(),
              "inv_scale and found_inf must be on the same device.");
  if (scaled_grads.empty()) return;
  std::vector<Tensor> grads;
  for (const Tensor& g : scaled_grads) {
    TORCH_CHECK(g.device() == found_inf.device(),
                "scaled_grads, found_inf and inv_scale must be on the same tpu device.");
    TORCH_CHECK(g.layout() == at::kStrided, "one of scaled_grads was not a strided tensor.");
    TORCH_CHECK(at::isFloatingType(g.scalar_type()),
                "_amp_foreach_non_finite_check_and_unscale_ expects floating-point gradients, "
                "got ", g.scalar_type());
    check_supported(g, kOp);
    if (g.numel() > 0) grads.push_back(g);
  }
  c10::DeviceGuard guard(found_inf.device());
  int dev = found_inf.device().index();
  for (size_t start = 0; start < grads.size(); start += kUnscaleChunk) {
    size_t end = std::min(grads.size(), start + kUnscaleChunk);
    OpArgs a;
    std::vector<Tensor> outs;
    for (size_t i = start; i < end; ++i) {
      add_operand(a, grads[i], dev);
      outs.push_back(at::empty(grads[i].sizes(), grads[i].options()));
    }
    add_operand(a, found_inf, dev);
    add_operand(a, inv_scale, dev);
    outs.push_back(at::empty(found_inf.sizes(), found_inf.options()));
    run_op(kOp, dev, a, {}, outs);
    for (size_t i = start; i < end; ++i) assign_result(grads[i], outs[i - start], kOp);
    assign_result(found_inf, outs.back(), kOp);
  }
}

Tensor& amp_update_scale_(Tensor& current_scale, Tensor& growth_tracker, const Tensor& found_inf,
                          double growth_factor, double backoff_factor, int64_t growth_interval) {
  constexpr const char* kOp = "aten::_amp_update_scale_";
  TORCH_CHECK(current_scale.device().is_privateuseone(), "current_scale must be a tpu tensor.");
  TORCH_CHECK(growth_tracker.device() == current_scale.device() &&
                  found_inf.device() == current_scale.device(),
              "current_scale, growth_tracker and found_inf must be on the same tpu device.");
  TORCH_CHECK(growth_tracker.numel() == 1, "growth_tracker must be a 1-element tensor.");
  TORCH_CHECK(current_scale.numel() == 1, "current_scale must be a 1-element tensor.");
  TORCH_CHECK(found_inf.numel() == 1, "found_inf must be a 1-element tensor.");
  TORCH_CHECK(growth_tracker.scalar_type() == at::kInt, "growth_tracker must be an int tensor.");
  TORCH_CHECK(current_scale.scalar_type() == at::kFloat, "current_scale must be a float tensor.");
  TORCH_CHECK(found_inf.scalar_type() == at::kFloat, "found_inf must be a float tensor.");
  c10::DeviceGuard guard(current_scale.device());
  int dev = current_scale.device().index();
  OpArgs a;
  add_operand(a, current_scale, dev);
  add_operand(a, growth_tracker, dev);
  add_operand(a, found_inf, dev);
  a.scalar(growth_factor, at::kFloat, dev);
  a.scalar(backoff_factor, at::kFloat, dev);
  a.scalar(growth_interval, at::kInt, dev);
  Tensor scale = at::empty(current_scale.sizes(), current_scale.options());
  Tensor tracker = at::empty(growth_tracker.sizes(), growth_tracker.options());
  run_op(kOp, dev, a, {}, {scale, tracker});
  assign_result(current_scale, scale, kOp);
  assign_result(growth_tracker, tracker, kOp);
  return current_scale;
}

#define TPJ_AUTOCAST_LOWER(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define TPJ_AUTOCAST_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define TPJ_AUTOCAST_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define TPJ_AUTOCAST_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)

// The op lists name types unqualified, as inside namespace at.
using at::IntArrayRef;
using at::Scalar;
using at::ScalarType;

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  // The op lists name at:: types unqualified in some releases (torch 2.11:
  // DimnameList), as they are written for ATen's own namespace.
  using namespace at;  // NOLINT(build/namespaces)
  AT_FORALL_LOWER_PRECISION_FP(TPJ_AUTOCAST_LOWER)
  AT_FORALL_FP32(TPJ_AUTOCAST_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(TPJ_AUTOCAST_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  AT_FORALL_PROMOTE(TPJ_AUTOCAST_PROMOTE)
  m.impl("binary_cross_entropy", TORCH_FN(binary_cross_entropy_banned));
}

}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_amp_foreach_non_finite_check_and_unscale_",
         TORCH_FN(torch_pjrt::amp_foreach_non_finite_check_and_unscale_));
  m.impl("_amp_update_scale_", TORCH_FN(torch_pjrt::amp_update_scale_));
}

// Ops outside the lists pass through autocast untouched (PyTorch registers
// this fallthrough for its own backends only).
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }
