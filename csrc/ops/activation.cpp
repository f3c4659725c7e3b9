// Kernel glue for the activation family (src/ops/activation.c): silu,
// hardtanh, leaky_relu, elu (also selu and celu, which call it), softplus,
// hardsigmoid, hardswish, mish, log_sigmoid, gelu, glu, prelu, hardshrink,
// softshrink, threshold, softmax / log_softmax / _safe_softmax, and the
// backward ops autograd emits for them (and for tanh and sigmoid); also
// _fused_sdp_choice, which sends scaled_dot_product_attention to its math
// path (softmax). The elementwise ops and their backward, and softmax, are
// descriptor rows in src/ops/activation.c (boxed.cpp serves them); what is written out has rules
// of its own (gelu's approximate string, glu's layout, several outputs). Shapes and
// dtypes come from the meta functions; the numeric parameters travel as
// runtime scalars in the compute dtype.
#include <ATen/MetaFunctions.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "ops/write.h"
#include "tensor.h"
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


}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  using at::Scalar;
  using at::Tensor;
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
  m.impl("_safe_softmax", TORCH_FN(safe_softmax));
  m.impl("_fused_sdp_choice", TORCH_FN(fused_sdp_choice));
  m.impl("gelu", TORCH_FN(gelu));
  m.impl("gelu_backward", TORCH_FN(gelu_backward));
}
