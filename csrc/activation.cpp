// Kernel glue for the pointwise activations (src/ops/activation.c): silu,
// hardtanh, leaky_relu, elu (also selu and celu, which call it), softplus,
// hardsigmoid, hardswish, mish, log_sigmoid, and the backward ops autograd
// emits for them and for tanh and sigmoid. Shapes and dtypes come from the
// meta functions; the numeric parameters travel as runtime scalars in the
// compute dtype.
#include <ATen/MetaFunctions.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "common.h"

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
  run_op(op, dev.index(), a, attrs, {out});
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
  run_op(op, x.device().index(), a, {to_tpj_dtype(cd)}, {out, buffer});
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
