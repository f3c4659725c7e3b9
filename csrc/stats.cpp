// Kernel glue for statistical reductions: var, std, var_mean, std_mean,
// linalg_vector_norm and logsumexp. Output shapes and dtypes come from the
// meta functions; the compute dtype is float32 for half types, as CPU's
// kernels accumulate.
#include <ATen/MetaFunctions.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>

#include "common.h"

extern "C" {
#include "ops/ops.h"
}

namespace torch_pjrt {

void assign_result(const at::Tensor& dst, const at::Tensor& result, const char* op);

namespace {

using at::OptionalIntArrayRef;
using at::Tensor;

// attrs: compute dtype, flag, ndims, dims...; `scalar` (if any) is a 0-d
// runtime operand of dtype scalar_dt.
std::vector<Tensor> run(const char* op, const Tensor& self, std::initializer_list<Tensor> metas,
                        at::ScalarType compute, int64_t flag, const std::vector<int64_t>& dims,
                        const at::Scalar* scalar = nullptr,
                        at::ScalarType scalar_dt = at::kFloat) {
  check_supported(self, op);
  c10::DeviceGuard guard(self.device());
  std::vector<Tensor> outs;
  for (const Tensor& m : metas)
    outs.push_back(at::empty(m.sizes(), m.options().device(self.device())));
  OpArgs a;
  a.tensor(self);
  if (scalar) a.scalar(*scalar, scalar_dt, self.device().index());
  std::vector<int64_t> attrs{to_tpj_dtype(compute), flag, static_cast<int64_t>(dims.size())};
  attrs.insert(attrs.end(), dims.begin(), dims.end());
  run_op(op, self.device().index(), a, attrs, outs);
  return outs;
}

Tensor& put(Tensor& out, const Tensor& result, const char* op) {
  at::native::resize_output(out, result.sizes());
  assign_result(out, result, op);
  return out;
}

// ---- var / std ---------------------------------------------------------------

// var, std, var_mean and std_mean share one lowering: flag 1 is std.
std::vector<Tensor> var_like(const char* name, const char* op, bool is_std, bool with_mean,
                             const Tensor& self, OptionalIntArrayRef dim,
                             const std::optional<at::Scalar>& correction, bool keepdim) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()) || at::isComplexType(self.scalar_type()),
              "std and var only support floating point and complex dtypes");
  std::vector<int64_t> dims = reduced_dims(self, dim);
  // The result shapes, computed here: PyTorch's meta kernels for var and
  // var_mean are Python (tens of microseconds a call). var is real, the
  // mean keeps self's dtype.
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < self.dim(); ++d) {
    bool reduced = std::find(dims.begin(), dims.end(), d) != dims.end();
    if (!reduced) shape.push_back(self.size(d));
    else if (keepdim) shape.push_back(1);
  }
  auto mo = at::TensorOptions().device(c10::kMeta);
  std::vector<Tensor> metas{at::empty(shape, mo.dtype(c10::toRealValueType(self.scalar_type())))};
  if (with_mean) metas.push_back(at::empty(shape, mo.dtype(self.scalar_type())));
  int64_t n = 1;
  for (int64_t d : dims) n *= self.size(d);
  double dof = static_cast<double>(n) - (correction ? correction->toDouble() : 1.0);
  if (dof <= 0) {
    TORCH_WARN(name, "(): degrees of freedom is <= 0. Correction should be strictly less than "
               "the reduction factor (input numel divided by output numel).");
  }
  at::Scalar divisor(std::max(0.0, dof));
  at::ScalarType compute = accumulator(self.scalar_type());
  at::ScalarType real = c10::toRealValueType(compute);
  if (with_mean)
    return run(op, self, {metas[0], metas[1]}, compute, is_std, dims, &divisor, real);
  return run(op, self, {metas[0]}, compute, is_std, dims, &divisor, real);
}

Tensor k_var(const Tensor& self, OptionalIntArrayRef dim, const std::optional<at::Scalar>& c,
           bool keepdim) {
  return var_like("var", "aten::var.correction", false, false, self, dim, c, keepdim)[0];
}

Tensor k_std_(const Tensor& self, OptionalIntArrayRef dim, const std::optional<at::Scalar>& c,
            bool keepdim) {
  return var_like("std", "aten::std.correction", true, false, self, dim, c, keepdim)[0];
}

std::tuple<Tensor, Tensor> k_var_mean(const Tensor& self, OptionalIntArrayRef dim,
                                    const std::optional<at::Scalar>& c, bool keepdim) {
  auto r = var_like("var_mean", "aten::var_mean.correction", false, true, self, dim, c, keepdim);
  return {r[0], r[1]};
}

std::tuple<Tensor, Tensor> k_std_mean(const Tensor& self, OptionalIntArrayRef dim,
                                    const std::optional<at::Scalar>& c, bool keepdim) {
  auto r = var_like("std_mean", "aten::std_mean.correction", true, true, self, dim, c, keepdim);
  return {r[0], r[1]};
}

// ---- logsumexp, linalg_vector_norm -------------------------------------------

Tensor k_logsumexp(const Tensor& self, at::IntArrayRef dim, bool keepdim) {
  if (at::isComplexType(self.scalar_type()) && self.numel() > 0) {
    // CPU's formula for complex input, of ops native here: shift by the
    // largest real part (an infinite one by 0).
    check_supported(self, "aten::logsumexp");
    std::vector<int64_t> dims = reduced_dims(self, dim);
    Tensor maxes = at::amax(at::real(self), dims, true);
    maxes = at::where(at::eq(at::abs(maxes), INFINITY), at::zeros_like(maxes), maxes);
    Tensor sum = at::sum(at::exp(at::sub(self, maxes)), dims, keepdim);
    return at::add(at::log(sum), keepdim ? maxes : maxes.squeeze(dims));
  }
  if (at::isComplexType(self.scalar_type())) {  // empty: CPU's kernel, counted
    check_supported(self, "aten::logsumexp");
    dtype_fallback("aten::logsumexp", self.scalar_type());
    return at::logsumexp(self.cpu(), dim, keepdim).to(self.device());
  }
  Tensor m = at::logsumexp(to_meta(self), dim, keepdim);
  return run("aten::logsumexp", self, {m}, accumulator(m.scalar_type()), 0,
             reduced_dims(self, dim))[0];
}

Tensor k_vector_norm(const Tensor& self, const at::Scalar& ord, OptionalIntArrayRef dim,
                   bool keepdim, std::optional<at::ScalarType> dtype) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()) || at::isComplexType(self.scalar_type()),
              "linalg.vector_norm: Expected a floating point or complex tensor as input. Got ",
              self.scalar_type());
  Tensor m = at::meta::linalg_vector_norm(to_meta(self), ord, dim, keepdim, dtype);
  at::ScalarType compute = accumulator(m.scalar_type());
  double p = ord.toDouble();
  int64_t kind = p == 0 ? TPJ_NORM_ZERO : p == 1 ? TPJ_NORM_ONE : p == 2 ? TPJ_NORM_TWO
                 : p == INFINITY ? TPJ_NORM_INF : p == -INFINITY ? TPJ_NORM_NEG_INF : TPJ_NORM_P;
  std::vector<int64_t> dims = reduced_dims(self, dim);
  if (kind == TPJ_NORM_P)
    return run("aten::linalg_vector_norm", self, {m}, compute, kind, dims, &ord, compute)[0];
  return run("aten::linalg_vector_norm", self, {m}, compute, kind, dims)[0];
}

}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  using at::Tensor;
  using OptScalar = std::optional<at::Scalar>;
  m.impl("var.correction", TORCH_FN(k_var));
  m.impl("std.correction", TORCH_FN(k_std_));
  m.impl("var_mean.correction", TORCH_FN(k_var_mean));
  m.impl("std_mean.correction", TORCH_FN(k_std_mean));
  m.impl("var.correction_out", [](const Tensor& s, at::OptionalIntArrayRef d, const OptScalar& c,
                                  bool k, Tensor& o) -> Tensor& {
    return put(o, k_var(s, d, c, k), "aten::var");
  });
  m.impl("std.correction_out", [](const Tensor& s, at::OptionalIntArrayRef d, const OptScalar& c,
                                  bool k, Tensor& o) -> Tensor& {
    return put(o, k_std_(s, d, c, k), "aten::std");
  });
  m.impl("logsumexp", TORCH_FN(k_logsumexp));
  m.impl("logsumexp.out", [](const Tensor& s, at::IntArrayRef d, bool k, Tensor& o) -> Tensor& {
    return put(o, k_logsumexp(s, d, k), "aten::logsumexp");
  });
  m.impl("linalg_vector_norm", TORCH_FN(k_vector_norm));
  m.impl("linalg_vector_norm.out",
         [](const Tensor& s, const at::Scalar& ord, at::OptionalIntArrayRef d, bool k,
            std::optional<at::ScalarType> dt, Tensor& o) -> Tensor& {
           return put(o, k_vector_norm(s, ord, d, k, dt), "aten::linalg_vector_norm");
         });
}
