// Kernel glue for the pointwise math ops (lowered in src/ops/pointwise.c):
// rounding, sign, the erf family, inverse trig and hyperbolic functions,
// log2/log10/exp2, reciprocal, remainder/fmod, division with a rounding
// mode, hypot, nan_to_num, isnan/isposinf/isneginf, and the bitwise and
// logical ops, each with its in-place and out= forms. Most are descriptor rows
// in src/ops/pointwise.c (boxed.cpp serves them): their outputs are the broadcast of the
// operands in PyTorch's promoted dtype (no meta call: these are the
// smallest, most frequent ops), half types compute in float32 as CPU's
// kernels do. Written out here: sign's own complex message, nan_to_num's
// host-rounded replacements, and division with a rounding mode. Apart from
// pointwise.cpp so that neither file takes long to recompile.
#include <ATen/AccumulateType.h>
#include <ATen/Dispatch.h>
#include <ATen/ExpandUtils.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <limits>
#include <string>
#include <utility>

#include "ops/write.h"
#include "tensor.h"
#include "layout.h"
#include "boxed.h"
#include "forms.h"

namespace torch_pjrt {
namespace {

using at::Scalar;
using at::ScalarType;
using at::Tensor;

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

Tensor sign(const Tensor& x) {
  TORCH_CHECK_NOT_IMPLEMENTED(!x.is_complex(), "Unlike NumPy, torch.sign is not intended to support complex "
              "numbers. Please use torch.sgn instead.");
  return run_ew("aten::sign", {&x}, x.scalar_type(), x.scalar_type());
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

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  TPJ_FORMS_UNARY("sign", tp::sign)
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
