// Kernel glue for the pointwise math ops (lowered in src/ops/pointwise.c):
// rounding, sign, the erf family, inverse trig and hyperbolic functions,
// log2/log10/exp2, reciprocal, remainder/fmod, division with a rounding
// mode, hypot, nan_to_num, isnan/isposinf/isneginf, and the bitwise and
// logical ops, each with its in-place and out= forms. Output dtypes come
// from PyTorch's promotion (at::result_type); half inputs compute in float32
// as CPU's kernels do. Apart from pointwise.cpp so that neither file takes
// long to recompile.
#include <cstring>
#include <ATen/AccumulateType.h>
#include <ATen/Dispatch.h>
#include <ATen/ExpandUtils.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <limits>
#include <string>
#include <utility>

#include "common.h"
#include "layout.h"
#include "forms.h"

namespace torch_pjrt {
namespace {

using at::Scalar;
using at::ScalarType;
using at::Tensor;

ScalarType default_float() { return c10::typeMetaToScalarType(c10::get_default_dtype()); }
ScalarType opmath(ScalarType t) {
  return (t == at::kHalf || t == at::kBFloat16) ? at::kFloat : t;
}
bool integral(ScalarType t) { return c10::isIntegralType(t, /*includeBool=*/true); }

[[noreturn]] void not_implemented(const std::string& kernel, ScalarType t) {
  TORCH_CHECK_NOT_IMPLEMENTED(false, "\"", kernel, "\" not implemented for '", t, "'");
  TORCH_INTERNAL_ASSERT(false);
}

// Runs a table op elementwise over the broadcast of ts (tpu tensors or CPU
// 0-d scalars): attrs are {compute dtype, extra...}; scalars are appended as
// 0-d runtime operands of the given dtypes.
Tensor run_ew(const char* op, std::initializer_list<const Tensor*> ts, ScalarType compute,
              ScalarType out_dtype, std::vector<int64_t> extra = {},
              const std::vector<std::pair<Scalar, ScalarType>>& scalars = {}) {
  for (const Tensor* t : ts) check_supported(*t, op);
  c10::Device dev = common_device(op, ts);
  std::vector<int64_t> sizes;
  bool first = true;
  for (const Tensor* t : ts) {
    sizes = first ? t->sizes().vec() : at::infer_size(sizes, t->sizes());
    first = false;
  }
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(sizes, at::TensorOptions().dtype(out_dtype).device(dev));
  OpArgs a;
  for (const Tensor* t : ts) add_operand(a, *t, dev.index());
  for (const auto& s : scalars) a.scalar(s.first, s.second, dev.index());
  std::vector<int64_t> attrs{to_tpj_dtype(compute)};
  attrs.insert(attrs.end(), extra.begin(), extra.end());
  run_pointwise(op, dev.index(), a, attrs, {out});
  return out;
}

// ---- unary ----------------------------------------------------------------

// Math that promotes integers and bool to the default float (erf, tan, ...).
Tensor float_unary(const char* op, const Tensor& x) {
  // CPU's erf family has no complex kernels
  static const std::pair<const char*, const char*> kNoComplex[] = {
      {"aten::erf", "erf_vml_cpu"}, {"aten::erfc", "erfc_vml_cpu"},
      {"aten::erfinv", "erfinv_vml_cpu"}};
  if (x.is_complex())
    for (const auto& k : kNoComplex)
      if (std::strcmp(op, k.first) == 0) not_implemented(k.second, x.scalar_type());
  ScalarType out = integral(x.scalar_type()) ? default_float() : x.scalar_type();
  return run_ew(op, {&x}, opmath(out), out);
}

// floor, ceil, trunc, round, frac: same dtype; CPU refuses bool (and frac
// refuses integers).
Tensor rounding(const char* op, const char* kernel, const Tensor& x, bool ints_ok = true) {
  ScalarType t = x.scalar_type();
  if (t == at::kBool || (!ints_ok && integral(t))) not_implemented(kernel, t);
  if (c10::isComplexType(t)) {
    // floor, ceil and trunc refuse complex by name, round and frac by kernel
    for (const char* name : {"floor", "ceil", "trunc"})
      TORCH_CHECK_NOT_IMPLEMENTED(std::strcmp(op + 6, name) != 0, name,
                                  " is not supported for complex inputs");
    not_implemented(kernel, t);
  }
  return run_ew(op, {&x}, opmath(t), t);
}

Tensor round_decimals(const Tensor& x, int64_t decimals) {
  ScalarType t = x.scalar_type();
  if (integral(t)) not_implemented("round_cpu", t);
  return run_ew("aten::round.decimals", {&x}, opmath(t), t, {decimals});
}

Tensor sign(const Tensor& x) {
  TORCH_CHECK_NOT_IMPLEMENTED(!x.is_complex(), "Unlike NumPy, torch.sign is not intended to support complex "
              "numbers. Please use torch.sgn instead.");
  return run_ew("aten::sign", {&x}, x.scalar_type(), x.scalar_type());
}

Tensor sgn(const Tensor& x) { return run_ew("aten::sgn", {&x}, x.scalar_type(), x.scalar_type()); }

Tensor bitwise_not(const Tensor& x) {
  ScalarType t = x.scalar_type();
  if (!integral(t)) not_implemented("bitwise_not_cpu", t);
  return run_ew("aten::bitwise_not", {&x}, t, t);
}

Tensor logical_not(const Tensor& x) {
  return run_ew("aten::logical_not", {&x}, x.scalar_type(), at::kBool);
}

Tensor isnan(const Tensor& x) { return run_ew("aten::isnan", {&x}, x.scalar_type(), at::kBool); }
Tensor isposinf(const Tensor& x) {
  return run_ew("aten::isposinf", {&x}, x.scalar_type(), at::kBool);
}
Tensor isneginf(const Tensor& x) {
  return run_ew("aten::isneginf", {&x}, x.scalar_type(), at::kBool);
}

// nan_to_num: the replacements are rounded to the dtype on the host (so a
// too-large value becomes inf, as CPU's static_cast does); the defaults are
// the dtype's largest and lowest finite values.
Tensor nan_to_num(const Tensor& x, std::optional<double> nan, std::optional<double> posinf,
                  std::optional<double> neginf) {
  ScalarType t = x.scalar_type();
  // Complex: CPU replaces in the real and imaginary parts alike.
  if (x.is_complex())
    return at::view_as_complex(  // (the parentheses: ours, not at::nan_to_num by ADL)
        (nan_to_num)(at::view_as_real(x.resolve_conj()), nan, posinf, neginf));
  double n = 0, p = 0, m = 0;
  if (c10::isFloatingType(t)) {
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, t, "nan_to_num", [&] {
      n = static_cast<double>(static_cast<scalar_t>(nan.value_or(0.)));
      p = static_cast<double>(static_cast<scalar_t>(
          posinf.value_or(static_cast<double>(std::numeric_limits<scalar_t>::max()))));
      m = static_cast<double>(static_cast<scalar_t>(
          neginf.value_or(static_cast<double>(std::numeric_limits<scalar_t>::lowest()))));
    });
  }
  return run_ew("aten::nan_to_num", {&x}, t, t, {}, {{Scalar(n), t}, {Scalar(p), t}, {Scalar(m), t}});
}

// ---- binary ---------------------------------------------------------------

Tensor bitwise(const char* op, const char* kernel, const Tensor& a, const Tensor& b) {
  ScalarType t = at::result_type(a, b);
  if (!integral(t)) not_implemented(kernel, t);
  return run_ew(op, {&a, &b}, t, t);
}

Tensor logical(const char* op, const Tensor& a, const Tensor& b) {
  return run_ew(op, {&a, &b}, at::kBool, at::kBool);
}

Tensor atan2(const Tensor& a, const Tensor& b) {
  ScalarType t = at::result_type(a, b);
  if (c10::isComplexType(t)) not_implemented("atan2_cpu", t);
  if (integral(t)) t = default_float();
  return run_ew("aten::atan2", {&a, &b}, opmath(t), t);
}

Tensor hypot(const Tensor& a, const Tensor& b) {
  ScalarType t = at::result_type(a, b);
  if (integral(t) || c10::isComplexType(t)) not_implemented("hypot_cpu", t);
  return run_ew("aten::hypot", {&a, &b}, opmath(t), t);
}

// Integer division by zero raises on CPU; XLA would give a silent value.
// This waits for the divisor (like index validation does).
void check_divisor(const Tensor& b) {
  if (tracing() && !b.device().is_cpu()) return;  // a compiled graph cannot wait on values
  bool zero;
  if (b.device().is_cpu()) zero = b.numel() > 0 && (b == 0).any().item<bool>();
  else zero = b.numel() > 0 && (b.cpu() == 0).any().item<bool>();
  TORCH_CHECK(!zero, "ZeroDivisionError");
}

Tensor mod_like(const char* op, const char* kernel, const Tensor& a, const Tensor& b) {
  ScalarType t = at::result_type(a, b);
  // CPU's kernels refuse bool and complex (remainder_cpu, fmod_cpu).
  if (t == at::kBool || c10::isComplexType(t)) not_implemented(kernel, t);
  if (integral(t) && a.numel() > 0) check_divisor(b);  // an empty result divides nothing
  return run_ew(op, {&a, &b}, opmath(t), t);
}

Tensor remainder(const Tensor& a, const Tensor& b) {
  return mod_like("aten::remainder.Tensor", "remainder_cpu", a, b);
}
Tensor fmod(const Tensor& a, const Tensor& b) {
  return mod_like("aten::fmod.Tensor", "fmod_cpu", a, b);
}

Tensor div_mode(const Tensor& a, const Tensor& b, std::optional<c10::string_view> mode) {
  if (!mode.has_value()) return at::div(a, b);
  TORCH_CHECK(*mode == "trunc" || *mode == "floor",
              "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '",
              *mode, "'");
  bool floor = *mode == "floor";
  ScalarType t = at::result_type(a, b);
  if (t == at::kBool) not_implemented(floor ? "div_floor_cpu" : "div_trunc_cpu", t);
  if (integral(t) && a.numel() > 0) check_divisor(b);  // an empty result divides nothing
  return run_ew("aten::div.Tensor_mode", {&a, &b}, opmath(t), t, {floor ? 2 : 1});
}

Tensor floor_divide(const Tensor& a, const Tensor& b) {
  return div_mode(a, b, c10::string_view("floor"));
}
}  // namespace
}  // namespace torch_pjrt
namespace {
namespace tp = torch_pjrt;
using at::Scalar;
using at::Tensor;

#define TPJ_FLOAT_UNARY(aten) \
  TPJ_FORMS_UNARY(aten, [](const Tensor& x) { return tp::float_unary("aten::" aten, x); })

// TensorIterator checks that the common dtype casts to an in-place op's
// self before the kernel looks at the dtype (CPU's "can't be cast" comes
// before its "not implemented for").
void check_inplace_cast(const Tensor& self, const Tensor& other) {
  at::ScalarType common = at::result_type(self, other);
  TORCH_CHECK(c10::canCast(common, self.scalar_type()), "result type ", common,
              " can't be cast to the desired output type ", self.scalar_type());
}

// a binary op with Tensor and Scalar overloads (bitwise_and.Tensor, ...)
#define TPJ_MATH_BINARY_TS(aten, fn)                                                      \
  m.impl(aten ".Tensor", [](const Tensor& a, const Tensor& b) { return fn(a, b); });      \
  m.impl(aten ".Scalar", [](const Tensor& a, const Scalar& b) {                           \
    return fn(a, tp::wrap_scalar(b));                                                     \
  });                                                                                     \
  m.impl(aten "_.Tensor", [](Tensor& a, const Tensor& b) -> Tensor& {                     \
    tp::check_no_overlap(a, {&b});                                                        \
    check_inplace_cast(a, b);                                                             \
    tp::assign_result(a, fn(a, b), "aten::" aten "_");                                    \
    return a;                                                                             \
  });                                                                                     \
  m.impl(aten "_.Scalar", [](Tensor& a, const Scalar& b) -> Tensor& {                     \
    check_inplace_cast(a, tp::wrap_scalar(b));                                            \
    tp::assign_result(a, fn(a, tp::wrap_scalar(b)), "aten::" aten "_");                  \
    return a;                                                                             \
  });                                                                                     \
  m.impl(aten ".Tensor_out", [](const Tensor& a, const Tensor& b, Tensor& o) -> Tensor& { \
    tp::check_no_overlap(o, {&a, &b});                                                    \
    return tp::out_result(o, fn(a, b), "aten::" aten);                                    \
  });                                                                                     \
  m.impl(aten ".Scalar_out", [](const Tensor& a, const Scalar& b, Tensor& o) -> Tensor& { \
    tp::check_no_overlap(o, {&a});                                                        \
    return tp::out_result(o, fn(a, tp::wrap_scalar(b)), "aten::" aten);                  \
  });

// ... plus the Scalar_Tensor overload (a Python number on the left)
#define TPJ_MATH_BINARY_TST(aten, fn)                                                     \
  TPJ_MATH_BINARY_TS(aten, fn)                                                            \
  m.impl(aten ".Scalar_Tensor", [](const Scalar& a, const Tensor& b) {                    \
    return fn(tp::wrap_scalar(a), b);                                                     \
  });                                                                                     \
  m.impl(aten ".Scalar_Tensor_out", [](const Scalar& a, const Tensor& b, Tensor& o)       \
                                        -> Tensor& {                                      \
    tp::check_no_overlap(o, {&b});                                                        \
    return tp::out_result(o, fn(tp::wrap_scalar(a), b), "aten::" aten);                  \
  });

Tensor bitwise_and_fn(const Tensor& a, const Tensor& b) {
  return tp::bitwise("aten::bitwise_and.Tensor", "bitwise_and_cpu", a, b);
}
Tensor bitwise_or_fn(const Tensor& a, const Tensor& b) {
  return tp::bitwise("aten::bitwise_or.Tensor", "bitwise_or_cpu", a, b);
}
Tensor bitwise_xor_fn(const Tensor& a, const Tensor& b) {
  return tp::bitwise("aten::bitwise_xor.Tensor", "bitwise_xor_cpu", a, b);
}
Tensor logical_and_fn(const Tensor& a, const Tensor& b) { return tp::logical("aten::logical_and", a, b); }
Tensor logical_or_fn(const Tensor& a, const Tensor& b) { return tp::logical("aten::logical_or", a, b); }
Tensor logical_xor_fn(const Tensor& a, const Tensor& b) { return tp::logical("aten::logical_xor", a, b); }
Tensor floor_fn(const Tensor& x) { return tp::rounding("aten::floor", "floor_vml_cpu", x); }
Tensor ceil_fn(const Tensor& x) { return tp::rounding("aten::ceil", "ceil_vml_cpu", x); }
Tensor trunc_fn(const Tensor& x) { return tp::rounding("aten::trunc", "trunc_vml_cpu", x); }
Tensor round_fn(const Tensor& x) { return tp::rounding("aten::round", "round_vml_cpu", x); }
Tensor frac_fn(const Tensor& x) { return tp::rounding("aten::frac", "frac_cpu", x, false); }
}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  TPJ_FLOAT_UNARY("erf")
  TPJ_FLOAT_UNARY("erfc")
  TPJ_FLOAT_UNARY("erfinv")
  TPJ_FLOAT_UNARY("tan")
  TPJ_FLOAT_UNARY("asin")
  TPJ_FLOAT_UNARY("acos")
  TPJ_FLOAT_UNARY("atan")
  TPJ_FLOAT_UNARY("sinh")
  TPJ_FLOAT_UNARY("cosh")
  TPJ_FLOAT_UNARY("asinh")
  TPJ_FLOAT_UNARY("acosh")
  TPJ_FLOAT_UNARY("atanh")
  TPJ_FLOAT_UNARY("log2")
  TPJ_FLOAT_UNARY("log10")
  TPJ_FLOAT_UNARY("exp2")
  TPJ_FLOAT_UNARY("reciprocal")
  TPJ_FORMS_UNARY("floor", floor_fn)
  TPJ_FORMS_UNARY("ceil", ceil_fn)
  TPJ_FORMS_UNARY("trunc", trunc_fn)
  TPJ_FORMS_UNARY("round", round_fn)
  TPJ_FORMS_UNARY("frac", frac_fn)
  TPJ_FORMS_UNARY("sign", tp::sign)
  TPJ_FORMS_UNARY("sgn", tp::sgn)
  TPJ_FORMS_UNARY("bitwise_not", tp::bitwise_not)
  TPJ_FORMS_UNARY("logical_not", tp::logical_not)
  m.impl("isnan", TORCH_FN(tp::isnan));
  m.impl("isposinf", TORCH_FN(tp::isposinf));
  m.impl("isneginf", TORCH_FN(tp::isneginf));
  m.impl("isposinf.out", [](const Tensor& a, Tensor& o) -> Tensor& {
    tp::check_no_overlap(o, {&a});
    return tp::out_result(o, tp::isposinf(a), "aten::isposinf");
  });
  m.impl("isneginf.out", [](const Tensor& a, Tensor& o) -> Tensor& {
    tp::check_no_overlap(o, {&a});
    return tp::out_result(o, tp::isneginf(a), "aten::isneginf");
  });
  m.impl("round.decimals", [](const Tensor& a, int64_t d) { return tp::round_decimals(a, d); });
  m.impl("round_.decimals", [](Tensor& a, int64_t d) -> Tensor& {
    tp::assign_result(a, tp::round_decimals(a, d), "aten::round_");
    return a;
  });
  m.impl("round.decimals_out", [](const Tensor& a, int64_t d, Tensor& o) -> Tensor& {
    tp::check_no_overlap(o, {&a});
    return tp::out_result(o, tp::round_decimals(a, d), "aten::round");
  });
  m.impl("nan_to_num", TORCH_FN(tp::nan_to_num));
  m.impl("nan_to_num_", [](Tensor& a, std::optional<double> n, std::optional<double> p,
                           std::optional<double> q) -> Tensor& {
    tp::assign_result(a, tp::nan_to_num(a, n, p, q), "aten::nan_to_num_");
    return a;
  });
  m.impl("nan_to_num.out", [](const Tensor& a, std::optional<double> n, std::optional<double> p,
                              std::optional<double> q, Tensor& o) -> Tensor& {
    tp::check_no_overlap(o, {&a});
    return tp::out_result(o, tp::nan_to_num(a, n, p, q), "aten::nan_to_num");
  });

  TPJ_MATH_BINARY_TST("bitwise_and", bitwise_and_fn)
  TPJ_MATH_BINARY_TST("bitwise_or", bitwise_or_fn)
  TPJ_MATH_BINARY_TST("bitwise_xor", bitwise_xor_fn)
  TPJ_MATH_BINARY_TST("remainder", tp::remainder)
  TPJ_MATH_BINARY_TS("fmod", tp::fmod)
  TPJ_FORMS_BINARY("logical_and", logical_and_fn)
  TPJ_FORMS_BINARY("logical_or", logical_or_fn)
  TPJ_FORMS_BINARY("logical_xor", logical_xor_fn)
  TPJ_FORMS_BINARY("atan2", tp::atan2)
  TPJ_FORMS_BINARY("hypot", tp::hypot)

  m.impl("div.Tensor_mode", TORCH_FN(tp::div_mode));
  m.impl("div.Scalar_mode", [](const Tensor& a, const Scalar& b,
                               std::optional<c10::string_view> mode) {
    return tp::div_mode(a, tp::wrap_scalar(b), mode);
  });
  m.impl("div_.Tensor_mode", [](Tensor& a, const Tensor& b,
                                std::optional<c10::string_view> mode) -> Tensor& {
    tp::check_no_overlap(a, {&b});
    tp::assign_result(a, tp::div_mode(a, b, mode), "aten::div_");
    return a;
  });
  m.impl("div_.Scalar_mode", [](Tensor& a, const Scalar& b,
                                std::optional<c10::string_view> mode) -> Tensor& {
    tp::assign_result(a, tp::div_mode(a, tp::wrap_scalar(b), mode), "aten::div_");
    return a;
  });
  m.impl("div.out_mode", [](const Tensor& a, const Tensor& b,
                            std::optional<c10::string_view> mode, Tensor& o) -> Tensor& {
    tp::check_no_overlap(o, {&a, &b});
    return tp::out_result(o, tp::div_mode(a, b, mode), "aten::div");
  });
  m.impl("floor_divide", TORCH_FN(tp::floor_divide));
  m.impl("floor_divide.Scalar", [](const Tensor& a, const Scalar& b) {
    return tp::floor_divide(a, tp::wrap_scalar(b));
  });
  m.impl("floor_divide_.Tensor", [](Tensor& a, const Tensor& b) -> Tensor& {
    tp::check_no_overlap(a, {&b});
    tp::assign_result(a, tp::floor_divide(a, b), "aten::floor_divide_");
    return a;
  });
  m.impl("floor_divide_.Scalar", [](Tensor& a, const Scalar& b) -> Tensor& {
    tp::assign_result(a, tp::floor_divide(a, tp::wrap_scalar(b)), "aten::floor_divide_");
    return a;
  });
  m.impl("floor_divide.out", [](const Tensor& a, const Tensor& b, Tensor& o) -> Tensor& {
    tp::check_no_overlap(o, {&a, &b});
    return tp::out_result(o, tp::floor_divide(a, b), "aten::floor_divide");
  });
}
