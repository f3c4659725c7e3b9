// Kernel glue for the activation family (src/ops/activation.c): silu,
// hardtanh, leaky_relu, elu (also selu and celu, which call it), softplus,
// hardsigmoid, hardswish, mish, log_sigmoid, gelu, glu, prelu, hardshrink,
// softshrink, threshold, softmax / log_softmax / _safe_softmax, and the
// backward ops autograd emits for them (and for tanh and sigmoid); also
// _fused_sdp_choice, which sends scaled_dot_product_attention to its math
// path (softmax). Shapes and dtypes come from the meta functions; the numeric
// parameters travel as runtime scalars in the compute dtype.
#include <ATen/MetaFunctions.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "common.h"
#include "layout.h"
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

Tensor silu(const Tensor& x) {
  // CPU's silu also takes complex (x / (1 + exp(-x)) holds there too).
  if (!c10::isComplexType(x.scalar_type())) check_floating(x, "silu_cpu");
  return run_act("aten::silu", {&x}, at::meta::silu(to_meta(x)), {});
}
Tensor silu_backward(const Tensor& g, const Tensor& x) {
  check_floating(x, "silu_backward_cpu");
  return run_act("aten::silu_backward", {&g, &x}, at::meta::silu_backward(to_meta(g), to_meta(x)), {});
}

// The output of an elementwise op of a and b (broadcast shape, promoted
// dtype), made without a meta kernel: some of PyTorch's are Python.
Tensor meta_binary_like(const Tensor& a, const Tensor& b) {
  return at::empty(at::infer_size(a.sizes(), b.sizes()),
                   at::TensorOptions().device(c10::kMeta).dtype(at::result_type(a, b)));
}

Tensor hardtanh(const Tensor& x, const Scalar& lo, const Scalar& hi) {
  TORCH_CHECK(x.scalar_type() != at::kBool, "Bool inputs not supported for hardtanh");
  // The output is shaped and typed like x; PyTorch's meta kernel for
  // hardtanh is a Python decomposition costing about 1 ms a call.
  return run_act("aten::hardtanh", {&x}, to_meta(x), {lo, hi});
}
Tensor hardtanh_backward(const Tensor& g, const Tensor& x, const Scalar& lo, const Scalar& hi) {
  return run_act("aten::hardtanh_backward", {&g, &x},
                 meta_binary_like(g, x), {lo, hi});
}

Tensor leaky_relu(const Tensor& x, const Scalar& slope) {
  check_floating(x, "leaky_relu_cpu");
  return run_act("aten::leaky_relu", {&x}, at::meta::leaky_relu(to_meta(x), slope), {slope});
}
Tensor leaky_relu_backward(const Tensor& g, const Tensor& x, const Scalar& slope,
                           bool self_is_result) {
  // CPU's check (the meta function does not make it)
  TORCH_CHECK(!self_is_result || slope.to<double>() >= 0.0,
              "In-place leakyReLu backward calculation is triggered with a negative slope which "
              "is not supported. This is caused by calling in-place forward function with a "
              "negative slope, please call out-of-place version instead. File an issue at "
              "https://github.com/pytorch/pytorch if you do require supporting in-place "
              "leakRelu backward calculation with negative slope");
  check_floating(x, "leaky_relu_backward_cpu");
  return run_act("aten::leaky_relu_backward", {&g, &x},
                 at::meta::leaky_relu_backward(to_meta(g), to_meta(x), slope, self_is_result), {slope});
}

Tensor elu(const Tensor& x, const Scalar& alpha, const Scalar& scale, const Scalar& iscale) {
  check_floating(x, "elu_cpu");
  return run_act("aten::elu", {&x}, at::meta::elu(to_meta(x), alpha, scale, iscale),
                 {alpha, scale, iscale});
}
Tensor elu_backward(const Tensor& g, const Scalar& alpha, const Scalar& scale,
                    const Scalar& iscale, bool is_result, const Tensor& x) {
  TORCH_CHECK(!is_result || alpha.to<double>() >= 0.0,
              "In-place elu backward calculation is triggered with a negative slope which is not "
              "supported. This is caused by calling in-place forward function with a negative "
              "slope, please call out-of-place version instead.");
  check_floating(x, "elu_backward_cpu");
  Tensor m = at::meta::elu_backward(to_meta(g), alpha, scale, iscale, is_result, to_meta(x));
  return run_act("aten::elu_backward", {&g, &x}, m, {alpha, scale, iscale}, {is_result});
}

Tensor softplus(const Tensor& x, const Scalar& beta, const Scalar& threshold) {
  check_floating(x, "softplus_cpu");
  return run_act("aten::softplus", {&x}, at::meta::softplus(to_meta(x), beta, threshold),
                 {beta, threshold});
}
Tensor softplus_backward(const Tensor& g, const Tensor& x, const Scalar& beta,
                         const Scalar& threshold) {
  check_floating(x, "softplus_backward_cpu");
  return run_act("aten::softplus_backward", {&g, &x},
                 at::meta::softplus_backward(to_meta(g), to_meta(x), beta, threshold), {beta, threshold});
}

Tensor hardsigmoid(const Tensor& x) {
  check_floating(x, "hardsigmoid_cpu");
  return run_act("aten::hardsigmoid", {&x}, at::meta::hardsigmoid(to_meta(x)), {});
}
Tensor hardsigmoid_backward(const Tensor& g, const Tensor& x) {
  check_floating(x, "hardsigmoid_backward_cpu");
  return run_act("aten::hardsigmoid_backward", {&g, &x},
                 at::meta::hardsigmoid_backward(to_meta(g), to_meta(x)), {});
}

Tensor hardswish(const Tensor& x) {
  check_floating(x, "hardswish_cpu");
  return run_act("aten::hardswish", {&x}, at::empty_like(to_meta(x)), {});
}
Tensor hardswish_backward(const Tensor& g, const Tensor& x) {
  check_floating(x, "hardswish_backward_cpu");
  return run_act("aten::hardswish_backward", {&g, &x}, at::empty_like(to_meta(x)), {});
}

Tensor mish(const Tensor& x) {
  check_floating(x, "mish_cpu");
  return run_act("aten::mish", {&x}, at::meta::mish(to_meta(x)), {});
}
Tensor mish_backward(const Tensor& g, const Tensor& x) {
  check_floating(x, "mish_backward_cpu");
  return run_act("aten::mish_backward", {&g, &x}, at::empty_like(to_meta(x)), {});
}

Tensor tanh_backward(const Tensor& g, const Tensor& y) {
  return run_act("aten::tanh_backward", {&g, &y}, at::meta::tanh_backward(to_meta(g), to_meta(y)), {});
}
Tensor sigmoid_backward(const Tensor& g, const Tensor& y) {
  return run_act("aten::sigmoid_backward", {&g, &y}, at::meta::sigmoid_backward(to_meta(g), to_meta(y)),
                 {});
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

// In-place: compute, then write into self (shares the buffer when self is a
// whole storage). out=: resize like CPU, then write.
template <typename F>
Tensor& in_place(Tensor& self, const char* op, F&& f) {
  assign_result(self, f(self), op);
  return self;
}
Tensor& out_of(Tensor& out, const Tensor& r, const char* op) {
  at::native::resize_output(out, r.sizes());
  assign_result(out, r, op);
  return out;
}

}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  using at::Scalar;
  using at::Tensor;
  m.impl("silu", TORCH_FN(silu));
  m.impl("silu_", [](Tensor& s) -> Tensor& {
    return in_place(s, "aten::silu_", [](const Tensor& x) { return torch_pjrt::silu(x); });
  });
  m.impl("silu.out", [](const Tensor& s, Tensor& o) -> Tensor& { return out_of(o, torch_pjrt::silu(s), "silu"); });
  m.impl("silu_backward", TORCH_FN(silu_backward));
  m.impl("hardtanh", TORCH_FN(hardtanh));
  m.impl("hardtanh_", [](Tensor& s, const Scalar& lo, const Scalar& hi) -> Tensor& {
    return in_place(s, "aten::hardtanh_", [&](const Tensor& x) { return torch_pjrt::hardtanh(x, lo, hi); });
  });
  m.impl("hardtanh.out", [](const Tensor& s, const Scalar& lo, const Scalar& hi, Tensor& o)
                             -> Tensor& { return out_of(o, torch_pjrt::hardtanh(s, lo, hi), "hardtanh"); });
  m.impl("hardtanh_backward", TORCH_FN(hardtanh_backward));
  m.impl("leaky_relu", TORCH_FN(leaky_relu));
  m.impl("leaky_relu_", [](Tensor& s, const Scalar& slope) -> Tensor& {
    return in_place(s, "aten::leaky_relu_", [&](const Tensor& x) { return torch_pjrt::leaky_relu(x, slope); });
  });
  m.impl("leaky_relu.out", [](const Tensor& s, const Scalar& slope, Tensor& o) -> Tensor& {
    return out_of(o, torch_pjrt::leaky_relu(s, slope), "leaky_relu");
  });
  m.impl("leaky_relu_backward", TORCH_FN(leaky_relu_backward));
  m.impl("elu", TORCH_FN(elu));
  m.impl("elu_", [](Tensor& s, const Scalar& a, const Scalar& sc, const Scalar& is) -> Tensor& {
    return in_place(s, "aten::elu_", [&](const Tensor& x) { return torch_pjrt::elu(x, a, sc, is); });
  });
  m.impl("elu.out", [](const Tensor& s, const Scalar& a, const Scalar& sc, const Scalar& is,
                       Tensor& o) -> Tensor& { return out_of(o, torch_pjrt::elu(s, a, sc, is), "elu"); });
  m.impl("elu_backward", TORCH_FN(elu_backward));
  m.impl("softplus", TORCH_FN(softplus));
  m.impl("softplus.out", [](const Tensor& s, const Scalar& b, const Scalar& t, Tensor& o)
                             -> Tensor& { return out_of(o, torch_pjrt::softplus(s, b, t), "softplus"); });
  m.impl("softplus_backward", TORCH_FN(softplus_backward));
  m.impl("hardsigmoid", TORCH_FN(hardsigmoid));
  m.impl("hardsigmoid_", [](Tensor& s) -> Tensor& {
    return in_place(s, "aten::hardsigmoid_", [](const Tensor& x) { return torch_pjrt::hardsigmoid(x); });
  });
  m.impl("hardsigmoid_backward", TORCH_FN(hardsigmoid_backward));
  m.impl("hardswish", TORCH_FN(hardswish));
  m.impl("hardswish_", [](Tensor& s) -> Tensor& {
    return in_place(s, "aten::hardswish_", [](const Tensor& x) { return torch_pjrt::hardswish(x); });
  });
  m.impl("hardswish_backward", TORCH_FN(hardswish_backward));
  m.impl("mish", TORCH_FN(mish));
  m.impl("mish_", [](Tensor& s) -> Tensor& {
    return in_place(s, "aten::mish_", [](const Tensor& x) { return torch_pjrt::mish(x); });
  });
  m.impl("mish_backward", TORCH_FN(mish_backward));
  m.impl("tanh_backward", TORCH_FN(tanh_backward));
  m.impl("sigmoid_backward", TORCH_FN(sigmoid_backward));
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
  return run_outs("aten::glu", {&self}, {m},
             {to_tpj_dtype(accumulator(self.scalar_type())), wrap_dim0(dim, self)})[0];
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
  auto o = run_outs("aten::_prelu_kernel_backward", {&grad, &self, &weight},
               {std::get<0>(m), std::get<1>(m)}, {});
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
// return first), so the callers return an empty result for it.
void check_softmax_input(const Tensor& self, int64_t dim, const char* name) {
  int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  bool last = self.dim() == 0 || d == self.dim() - 1;
  TORCH_CHECK_NOT_IMPLEMENTED(self.numel() == 0 || c10::isFloatingType(self.scalar_type()), "\"", name,
                              last ? "_lastdim_kernel_impl" : "_kernel_impl",
                              "\" not implemented for '", self.scalar_type(), "'");
}

Tensor softmax(const Tensor& self, int64_t dim, bool half_to_float) {
  check_softmax_input(self, dim, "softmax");
  Tensor m = at::meta::_softmax(to_meta(self), dim, half_to_float);
  if (self.numel() == 0) return at::empty(m.sizes(), m.options().device(self.device()));
  int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  return run_like("aten::_softmax", {&self}, m, {to_tpj_dtype(accumulator(self.scalar_type())), d});
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

Tensor log_softmax(const Tensor& self, int64_t dim, bool half_to_float) {
  check_softmax_input(self, dim, "log_softmax");
  Tensor m = at::meta::_log_softmax(to_meta(self), dim, half_to_float);
  if (self.numel() == 0) return at::empty(m.sizes(), m.options().device(self.device()));
  int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  return run_like("aten::_log_softmax", {&self}, m,
                  {to_tpj_dtype(accumulator(self.scalar_type())), d});
}

Tensor softmax_backward(const Tensor& grad, const Tensor& output, int64_t dim,
                        at::ScalarType input_dtype) {
  Tensor m = at::meta::_softmax_backward_data(to_meta(grad), to_meta(output), dim, input_dtype);
  int64_t d = c10::maybe_wrap_dim(dim, grad.dim());
  return run_like("aten::_softmax_backward_data", {&grad, &output}, m,
                  {to_tpj_dtype(accumulator(grad.scalar_type())), d});
}

Tensor log_softmax_backward(const Tensor& grad, const Tensor& output, int64_t dim,
                            at::ScalarType input_dtype) {
  Tensor m = at::meta::_log_softmax_backward_data(to_meta(grad), to_meta(output), dim, input_dtype);
  int64_t d = c10::maybe_wrap_dim(dim, grad.dim());
  return run_like("aten::_log_softmax_backward_data", {&grad, &output}, m,
                  {to_tpj_dtype(accumulator(grad.scalar_type())), d});
}

Tensor threshold_backward(const Tensor& grad, const Tensor& self, const Scalar& threshold) {
  Tensor m = at::meta::threshold_backward(to_meta(grad), to_meta(self), threshold);
  // Half types compare in float against the unrounded threshold, as CPU's
  // kernel does (bf16(0.3) <= 0.3 is false there, true in bf16).
  at::ScalarType t = m.scalar_type();
  at::ScalarType cd = (t == at::kHalf || t == at::kBFloat16) ? at::kFloat : t;
  const char* op = "aten::threshold_backward";
  check_supported(grad, op);
  check_supported(self, op);
  c10::Device dev = common_device(op, {&grad, &self});
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(m.sizes(), m.options().device(dev));
  OpArgs a;
  add_operand(a, grad, dev.index());
  add_operand(a, self, dev.index());
  a.scalar(threshold, cd, dev.index());
  run_pointwise(op, dev.index(), a, {to_tpj_dtype(cd)}, {out});
  return out;
}

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
  m.impl("_softmax", TORCH_FN(softmax));
  m.impl("_safe_softmax", TORCH_FN(safe_softmax));
  m.impl("_log_softmax", TORCH_FN(log_softmax));
  m.impl("_softmax_backward_data", TORCH_FN(softmax_backward));
  m.impl("_log_softmax_backward_data", TORCH_FN(log_softmax_backward));
  m.impl("threshold_backward", TORCH_FN(threshold_backward));
  m.impl("_fused_sdp_choice", TORCH_FN(fused_sdp_choice));
  m.impl("gelu", TORCH_FN(gelu));
  m.impl("gelu_backward", TORCH_FN(gelu_backward));
}

namespace torch_pjrt {
namespace {

using at::Scalar;
using at::Tensor;

Tensor hardshrink(const Tensor& x, const Scalar& l) {
  check_floating_dtype(x, "hardshrink_cpu");
  Tensor m = at::meta::hardshrink(to_meta(x), l);
  return run_meta("aten::hardshrink", {&x}, m, {acc_dtype(m.scalar_type())}, {l},
                 m.scalar_type(), /*pointwise=*/true);
}

Tensor hardshrink_backward(const Tensor& g, const Tensor& x, const Scalar& l) {
  check_floating_dtype(x, "hardshrink_backward_cpu");
  Tensor m = at::meta::hardshrink_backward(to_meta(g), to_meta(x), l);
  return run_meta("aten::hardshrink_backward", {&g, &x}, m, {acc_dtype(m.scalar_type())}, {l},
                 m.scalar_type(), /*pointwise=*/true);
}

Tensor softshrink(const Tensor& x, const Scalar& l) {
  check_floating_dtype(x, "softshrink_check");
  Tensor m = at::meta::softshrink(to_meta(x), l);
  // CPU's softshrink reads lambd in the compute type (unlike hardshrink)
  return run_meta("aten::softshrink", {&x}, m, {acc_dtype(m.scalar_type())}, {l},
                 accumulator(m.scalar_type()), /*pointwise=*/true);
}

Tensor softshrink_backward(const Tensor& g, const Tensor& x, const Scalar& l) {
  check_floating_dtype(x, "softshrink_backward_cpu");
  Tensor m = at::meta::softshrink_backward(to_meta(g), to_meta(x), l);
  return run_meta("aten::softshrink_backward", {&g, &x}, m, {acc_dtype(m.scalar_type())}, {l},
                 m.scalar_type(), /*pointwise=*/true);
}

Tensor threshold(const Tensor& x, const Scalar& t, const Scalar& v) {
  check_cpu_dtype(x.scalar_type() != at::kBool, x.scalar_type(), "threshold_cpu");
  Tensor m = at::meta::threshold(to_meta(x), t, v);
  at::ScalarType cd = accumulator(m.scalar_type());
  return run_meta("aten::threshold", {&x}, m, {to_tpj_dtype(cd)}, {t, v}, cd, /*pointwise=*/true);
}

Tensor& out_of(Tensor& out, const Tensor& r, const char* op, const Tensor& in) {
  check_no_overlap(out, {&in});
  return out_result(out, r, op);
}
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  using at::Scalar;
  using at::Tensor;
  // The .out/.grad_input forms not registered here are served by
  // outform.cpp (the functional kernel, then CPU's out= rules). hardshrink,
  // softshrink and threshold keep theirs: their CPU kernels (TensorIterator)
  // check the out against every input for overlap, which outform.cpp does
  // only for ops tagged pointwise, and these are not.
  m.impl("hardshrink", TORCH_FN(torch_pjrt::hardshrink));
  m.impl("hardshrink.out", [](const Tensor& x, const Scalar& l, Tensor& o) -> Tensor& {
    return out_of(o, torch_pjrt::hardshrink(x, l), "aten::hardshrink.out", x);
  });
  m.impl("hardshrink_backward", TORCH_FN(torch_pjrt::hardshrink_backward));
  m.impl("hardshrink_backward.grad_input", [](const Tensor& g, const Tensor& x, const Scalar& l,
                                              Tensor& o) -> Tensor& {
    return out_of(o, torch_pjrt::hardshrink_backward(g, x, l),
                  "aten::hardshrink_backward.grad_input", g);
  });
  m.impl("softshrink", TORCH_FN(torch_pjrt::softshrink));
  m.impl("softshrink.out", [](const Tensor& x, const Scalar& l, Tensor& o) -> Tensor& {
    return out_of(o, torch_pjrt::softshrink(x, l), "aten::softshrink.out", x);
  });
  m.impl("softshrink_backward", TORCH_FN(torch_pjrt::softshrink_backward));
  m.impl("softshrink_backward.grad_input", [](const Tensor& g, const Tensor& x, const Scalar& l,
                                              Tensor& o) -> Tensor& {
    return out_of(o, torch_pjrt::softshrink_backward(g, x, l),
                  "aten::softshrink_backward.grad_input", g);
  });
  m.impl("threshold", TORCH_FN(torch_pjrt::threshold));
  m.impl("threshold_", [](Tensor& x, const Scalar& t, const Scalar& v) -> Tensor& {
    assign_result(x, torch_pjrt::threshold(x, t, v), "aten::threshold_");
    return x;
  });
  m.impl("threshold.out", [](const Tensor& x, const Scalar& t, const Scalar& v,
                             Tensor& o) -> Tensor& {
    return out_of(o, torch_pjrt::threshold(x, t, v), "aten::threshold.out", x);
  });
}
