// Kernel glue for the activation family (src/ops/activation.c): silu,
// hardtanh, leaky_relu, elu (also selu and celu, which call it), softplus,
// hardsigmoid, hardswish, mish, log_sigmoid, gelu, glu, prelu, hardshrink,
// softshrink, threshold, softmax / log_softmax / _safe_softmax, and the
// backward ops autograd emits for them (and for tanh and sigmoid); also
// _fused_sdp_choice, which sends scaled_dot_product_attention to its math
// path (softmax). The elementwise ops and their backward, and softmax, are
// rows of the boxed tables below (boxed.h); what is written out has rules
// of its own (gelu's approximate string, glu's layout, several outputs). Shapes and
// dtypes come from the meta functions; the numeric parameters travel as
// runtime scalars in the compute dtype.
#include <ATen/MetaFunctions.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "common.h"
#include "layout.h"
#include "boxed.h"
#include "glue.h"
#include <ATen/WrapDimUtils.h>
#include <algorithm>
#include <cmath>
#include <limits>
#include <ATen/native/Gelu.h>
#include <sstream>
#include "inplace.h"
#include <cstring>
#include "dtype_check.h"

namespace torch_pjrt {

void assign_result(const at::Tensor& dst, const at::Tensor& result, const char* op);

namespace {

using at::Scalar;
using at::Tensor;

// CPU's kernels for these ops take floating types only and say so this way.
void check_floating(const Tensor& t, const char* cpu_name) {
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(t.scalar_type()), "\"", cpu_name,
                              "\" not implemented for '", t.scalar_type(), "'");
}

// Runs op on the tensors ts (tpu) and the runtime scalars into a tensor
// shaped like meta; attrs[0] is the compute dtype, then `extra`.
Tensor run_act(const char* op, std::initializer_list<const Tensor*> ts, const Tensor& meta,
               std::initializer_list<Scalar> scalars, std::vector<int64_t> extra = {}) {
  for (const Tensor* t : ts) check_supported(*t, op);
  c10::Device dev = common_device(op, ts);
  c10::DeviceGuard guard(dev);
  at::ScalarType cd = accumulator(meta.scalar_type());
  Tensor out = at::empty(meta.sizes(), meta.options().device(dev));
  OpArgs a;
  for (const Tensor* t : ts) add_operand(a, *t, dev.index());
  for (const Scalar& s : scalars) a.scalar(s, cd, dev.index());
  std::vector<int64_t> attrs{to_tpj_dtype(cd)};
  attrs.insert(attrs.end(), extra.begin(), extra.end());
  run_pointwise(op, dev.index(), a, attrs, {out});
  return out;
}

// CPU's checks in CPU's words (the meta functions do not make them).
void check_hardtanh(const c10::IValue* v) {
  TORCH_CHECK(v[0].toTensor().scalar_type() != at::kBool, "Bool inputs not supported for hardtanh");
}
void check_leaky_relu_backward(const c10::IValue* v) {
  TORCH_CHECK(!v[3].toBool() || v[2].toScalar().to<double>() >= 0.0,
              "In-place leakyReLu backward calculation is triggered with a negative slope which "
              "is not supported. This is caused by calling in-place forward function with a "
              "negative slope, please call out-of-place version instead. File an issue at "
              "https://github.com/pytorch/pytorch if you do require supporting in-place "
              "leakRelu backward calculation with negative slope");
}
void check_elu_backward(const c10::IValue* v) {
  TORCH_CHECK(!v[4].toBool() || v[1].toScalar().to<double>() >= 0.0,
              "In-place elu backward calculation is triggered with a negative slope which is not "
              "supported. This is caused by calling in-place forward function with a negative "
              "slope, please call out-of-place version instead.");
}

std::tuple<Tensor, Tensor> log_sigmoid_forward(const Tensor& x) {
  const char* op = "aten::log_sigmoid_forward";
  check_floating(x, "log_sigmoid_cpu");
  check_supported(x, op);
  c10::DeviceGuard guard(x.device());
  at::ScalarType cd = accumulator(x.scalar_type());
  Tensor out = at::empty(x.sizes(), x.options());
  Tensor buffer = at::empty(x.sizes(), x.options());
  OpArgs a;
  a.tensor(x);
  run_pointwise(op, x.device().index(), a, {to_tpj_dtype(cd)}, {out, buffer});
  return {out, buffer};
}
Tensor log_sigmoid_backward(const Tensor& g, const Tensor& x, const Tensor& buffer) {
  (void)buffer;  // the lowering recomputes exp(-|x|) instead of reading it
  check_floating(x, "log_sigmoid_backward_cpu");
  return run_act("aten::log_sigmoid_backward", {&g, &x}, at::empty_like(to_meta(x)), {});
}

// The rows of the boxed table (boxed.h). Numeric parameters are runtime
// scalars in the compute dtype (kRuntimeScalars); CPU's kernels take
// floating inputs only and say so (kFloatingInput with CPU's kernel name).
// The .out/.grad_input forms not registered here are served by outform.cpp
// (the functional kernel, then CPU's out= rules); hardshrink, softshrink and
// threshold register theirs: their CPU kernels (TensorIterator) check the
// out against every input for overlap, which outform.cpp does only for ops
// tagged pointwise, and these are not.
constexpr uint32_t kAct = kFloatingInput | kRuntimeScalars;
const BoxedOp kActivationOps[] = {
    // CPU's silu also takes complex (x / (1 + exp(-x)) holds there too)
    TPJ_BOXED(silu, kForms | kFloatingInput | kComplexInputOk, "silu_cpu", -1),
    TPJ_BOXED(silu_backward, kFloatingInput, "silu_backward_cpu", -1),
    // broadcast / like the input, without a meta call: PyTorch's meta kernel
    // for these is a Python decomposition costing about 1 ms a call
    {"hardtanh_backward", "aten::hardtanh_backward", kBroadcast | kRuntimeScalars, nullptr, -1},
    {"hardswish", "aten::hardswish", kInplace | kFloatingInput | kLikeInput, "hardswish_cpu", -1},
    {"hardswish_backward", "aten::hardswish_backward", kFloatingInput | kLikeInput,
     "hardswish_backward_cpu", -1},
    {"mish_backward", "aten::mish_backward", kFloatingInput | kLikeInput, "mish_backward_cpu", -1},
    {"hardtanh", "aten::hardtanh", kForms | kLikeInput | kRuntimeScalars, nullptr, -1, nullptr,
     &check_hardtanh},
    {"leaky_relu_backward", "aten::leaky_relu_backward", kAct, "leaky_relu_backward_cpu", -1,
     TPJ_META(leaky_relu_backward), &check_leaky_relu_backward},
    {"elu_backward", "aten::elu_backward", kAct, "elu_backward_cpu", -1, TPJ_META(elu_backward),
     &check_elu_backward},
    TPJ_BOXED(leaky_relu, kForms | kAct, "leaky_relu_cpu", -1),
    TPJ_BOXED(elu, kForms | kAct, "elu_cpu", -1),
    TPJ_BOXED(softplus, kOut | kAct, "softplus_cpu", -1),
    TPJ_BOXED(softplus_backward, kAct, "softplus_backward_cpu", -1),
    TPJ_BOXED(hardsigmoid, kInplace | kFloatingInput, "hardsigmoid_cpu", -1),
    TPJ_BOXED(hardsigmoid_backward, kFloatingInput, "hardsigmoid_backward_cpu", -1),
    TPJ_BOXED(mish, kInplace | kFloatingInput, "mish_cpu", -1),
    TPJ_BOXED(tanh_backward, 0, nullptr, -1),
    TPJ_BOXED(sigmoid_backward, 0, nullptr, -1),
    // half types compare in float against the unrounded threshold, as CPU's
    // kernel does (bf16(0.3) <= 0.3 is false there, true in bf16)
    TPJ_BOXED(threshold_backward, kRuntimeScalars, nullptr, -1),
    TPJ_BOXED(threshold, kForms | kRuntimeScalars | kNoBool, "threshold_cpu", -1),
    // CPU's hardshrink reads lambd in the output dtype, softshrink in the
    // compute dtype
    TPJ_BOXED(hardshrink, kOut | kAct | kScalarsAsOutput, "hardshrink_cpu", -1),
    TPJ_BOXED(hardshrink_backward, kOut | kGradInputOut | kAct | kScalarsAsOutput,
              "hardshrink_backward_cpu", -1),
    TPJ_BOXED(softshrink, kOut | kAct, "softshrink_check", -1),
    TPJ_BOXED(softshrink_backward, kOut | kGradInputOut | kAct | kScalarsAsOutput,
              "softshrink_backward_cpu", -1),
};

}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  using at::Scalar;
  using at::Tensor;
  register_boxed(m, kActivationOps);
  m.impl("log_sigmoid_forward", TORCH_FN(log_sigmoid_forward));
  m.impl("log_sigmoid_backward", TORCH_FN(log_sigmoid_backward));
}

namespace torch_pjrt {
namespace {

using at::Tensor;
using Pair = std::tuple<Tensor, Tensor>;
using PairRef = std::tuple<Tensor&, Tensor&>;

// ---- glu, prelu ---------------------------------------------------------------------

Tensor glu(const Tensor& self, int64_t dim) {
  Tensor m = meta_or_cpu([&] { return at::meta::glu(to_meta(self), dim); },
                         [&] { at::glu(self.cpu(), dim); });
  // CPU's glu is a TensorIterator over the two halves: its result keeps
  // self's memory order (channels_last, permuted). Computed on self permuted
  // into that order, and viewed back: no copy.
  InLayout lay(m);
  int64_t d = lay.dim(wrap_dim0(dim, self));
  Tensor xp = lay.in(self);
  at::DimVector sizes(xp.sizes());
  if (!sizes.empty()) sizes[d] /= 2;
  Tensor mp = at::empty(sizes, m.options());
  return lay.out(run_outs("aten::glu", {&xp}, {mp},
                          {to_tpj_dtype(accumulator(self.scalar_type())), d})[0]);
}

Tensor glu_backward(const Tensor& grad, const Tensor& self, int64_t dim) {
  Tensor m = meta_or_cpu([&] { return at::glu_backward(to_meta(grad), to_meta(self), dim); },
                         [&] { at::glu_backward(grad.cpu(), self.cpu(), dim); });
  return run_outs("aten::glu_backward", {&grad, &self}, {m},
             {to_tpj_dtype(accumulator(self.scalar_type())), wrap_dim0(dim, self)})[0];
}

Tensor prelu(const Tensor& self, const Tensor& weight) {
  Tensor m = meta_or_cpu([&] { return at::_prelu_kernel(to_meta(self), to_meta(weight)); },
                         [&] { at::_prelu_kernel(self.cpu(), weight.cpu()); });
  return run_outs("aten::_prelu_kernel", {&self, &weight}, {m}, {}, /*pointwise=*/true)[0];
}

Pair prelu_backward(const Tensor& grad, const Tensor& self, const Tensor& weight) {
  Pair m = meta_or_cpu(
      [&] { return at::_prelu_kernel_backward(to_meta(grad), to_meta(self), to_meta(weight)); },
      [&] { at::_prelu_kernel_backward(grad.cpu(), self.cpu(), weight.cpu()); });
  // CPU's kernel is a TensorIterator whose first operand is self: both
  // results come out in self's memory order (channels_last, permuted).
  // Computed on the operands permuted into that order, and viewed back.
  const Tensor& gi = std::get<0>(m);
  const Tensor& gw = std::get<1>(m);
  InLayout lay(at::empty_like(to_meta(self)));
  if (lay.active && grad.dim() == self.dim() && weight.dim() == self.dim() &&
      gi.sizes() == self.sizes() && gw.sizes() == self.sizes()) {
    Tensor g = lay.in(grad), x = lay.in(self), w = lay.in(weight);
    Tensor mp = at::empty(x.sizes(), gi.options());
    auto o = run_outs("aten::_prelu_kernel_backward", {&g, &x, &w}, {mp, mp}, {});
    return {lay.out(o[0]), lay.out(o[1])};
  }
  auto o = run_outs("aten::_prelu_kernel_backward", {&grad, &self, &weight}, {gi, gw}, {});
  return {o[0], o[1]};
}
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  namespace tp = torch_pjrt;
  using at::Tensor;
  m.impl("glu", TORCH_FN(tp::glu));
  m.impl("glu_backward", TORCH_FN(tp::glu_backward));
  m.impl("glu_backward.grad_input", [](const Tensor& g, const Tensor& s, int64_t dim,
                                       Tensor& out) -> Tensor& {
    return tp::out_result(out, tp::glu_backward(g, s, dim), "aten::glu_backward");
  });
  m.impl("_prelu_kernel", TORCH_FN(tp::prelu));
  m.impl("_prelu_kernel_backward", TORCH_FN(tp::prelu_backward));
}

namespace torch_pjrt {
namespace {

using at::Scalar;
using at::Tensor;

// CPU's kernels take floating inputs only; say so the way they do. An
// empty input of any dtype is returned before that check (CPU's kernels
// return first).
void check_softmax_input(const Tensor& self, int64_t dim, const char* name) {
  int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  bool last = self.dim() == 0 || d == self.dim() - 1;
  TORCH_CHECK_NOT_IMPLEMENTED(self.numel() == 0 || c10::isFloatingType(self.scalar_type()), "\"", name,
                              last ? "_lastdim_kernel_impl" : "_kernel_impl",
                              "\" not implemented for '", self.scalar_type(), "'");
}
template <bool kLog>
void check_softmax(const c10::IValue* v) {
  check_softmax_input(v[0].toTensor(), v[1].toInt(), kLog ? "log_softmax" : "softmax");
}

// scaled_dot_product_attention's math path: softmax with all -inf rows
// giving zeros. PyTorch's composite (softmax, an all() over eq(-inf), where)
// would be three ops and a second reduction; this is one.
Tensor safe_softmax(const Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  Tensor m = at::empty(self.sizes(), self.options().dtype(dtype.value_or(self.scalar_type()))
                                         .device(at::kMeta));
  check_softmax_input(m, dim, "softmax");
  if (self.numel() == 0) return at::empty(m.sizes(), m.options().device(self.device()));
  int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  at::ScalarType out_dtype = m.scalar_type();
  return run_like("aten::_safe_softmax", {&self}, m, {to_tpj_dtype(accumulator(out_dtype)), d});
}

// softmax and log_softmax over one dim (kDim), their backward too: the
// compute dtype is the output's accumulator (that of the input, too).
const BoxedOp kSoftmaxOps[] = {
    {"_softmax", "aten::_softmax", kDim | kSkipEmpty, nullptr, -1, TPJ_META(_softmax),
     &check_softmax<false>},
    {"_log_softmax", "aten::_log_softmax", kDim | kSkipEmpty, nullptr, -1, TPJ_META(_log_softmax),
     &check_softmax<true>},
    {"_softmax_backward_data", "aten::_softmax_backward_data", kDim, nullptr, -1,
     TPJ_META(_softmax_backward_data)},
    {"_log_softmax_backward_data", "aten::_log_softmax_backward_data", kDim, nullptr, -1,
     TPJ_META(_log_softmax_backward_data)},
};

// CPU's kernel refuses an unknown `approximate` (the C++ meta function does
// not look at it).
Tensor gelu(const Tensor& self, c10::string_view approximate) {
  at::native::get_gelutype_enum(approximate);
  Tensor m = at::meta::gelu(to_meta(self), approximate);
  return run_like("aten::gelu", {&self}, m,
                  {to_tpj_dtype(accumulator(self.scalar_type())), approximate == "tanh"}, {},
                  nullptr, /*pointwise=*/true);
}

Tensor gelu_backward(const Tensor& grad, const Tensor& self, c10::string_view approximate) {
  at::native::get_gelutype_enum(approximate);
  Tensor m = at::meta::gelu_backward(to_meta(grad), to_meta(self), approximate);
  return run_like("aten::gelu_backward", {&grad, &self}, m,
                  {to_tpj_dtype(accumulator(m.scalar_type())), approximate == "tanh"}, {},
                  nullptr, /*pointwise=*/true);
}

// scaled_dot_product_attention asks each device which fused kernel to use;
// we have none, so the answer is the math path (sdp::SDPBackend::math == 0),
// which PyTorch composes from matmul, softmax, masked_fill and dropout, all
// native here. Without this the query would fall back to the CPU's answer
// and pick a CPU-only flash kernel.
int64_t fused_sdp_choice(const Tensor&, const Tensor&, const Tensor&,
                         const std::optional<Tensor>&, double, bool, std::optional<double>, bool) {
  return 0;
}
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  register_boxed(m, kSoftmaxOps);
  m.impl("_safe_softmax", TORCH_FN(safe_softmax));
  m.impl("_fused_sdp_choice", TORCH_FN(fused_sdp_choice));
  m.impl("gelu", TORCH_FN(gelu));
  m.impl("gelu_backward", TORCH_FN(gelu_backward));
}
