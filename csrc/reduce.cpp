// Kernel glue for reductions and matrix products. Output shape and dtype,
// and every argument check, come from running the op on meta tensors.
#include <ATen/MetaFunctions.h>
#include <ATen/WrapDimUtils.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>

#include "common.h"

namespace torch_pjrt {
namespace {

using at::OptionalIntArrayRef;
using at::Tensor;

Tensor reduce(const char* op, const Tensor& self, const std::vector<int64_t>& dims, bool keepdim,
              const Tensor& meta_out) {
  check_supported(self, op);
  c10::DeviceGuard guard(self.device());
  Tensor out = at::empty(meta_out.sizes(), self.options().dtype(meta_out.scalar_type()));
  OpArgs a;
  a.tensor(self);
  std::vector<int64_t> attrs{to_tpj_dtype(accumulator(out.scalar_type())), keepdim ? 1 : 0,
                             static_cast<int64_t>(dims.size())};
  attrs.insert(attrs.end(), dims.begin(), dims.end());
  run_op(op, self.device().index(), a, attrs, {out});
  return out;
}

Tensor sum_dim(const Tensor& self, OptionalIntArrayRef dim, bool keepdim,
               std::optional<at::ScalarType> dtype) {
  Tensor m = at::meta::sum(to_meta(self), dim, keepdim, dtype);
  return reduce("aten::sum.dim_IntList", self, reduced_dims(self, dim), keepdim, m);
}

Tensor sum_all(const Tensor& self, std::optional<at::ScalarType> dtype) {
  return sum_dim(self, std::nullopt, false, dtype);
}

Tensor mean_dim(const Tensor& self, OptionalIntArrayRef dim, bool keepdim,
                std::optional<at::ScalarType> dtype) {
  // CPU's wording (the meta function names the dtype differently)
  at::ScalarType out_t = dtype ? *dtype : self.scalar_type();
  TORCH_CHECK(at::isFloatingType(out_t) || at::isComplexType(out_t),
              "mean(): could not infer output dtype. ",
              (dtype ? "Optional" : "Input"), " dtype must be either a floating point or complex dtype. ",
              "Got: ", out_t);
  Tensor m = at::meta::mean(to_meta(self), dim, keepdim, dtype);
  return reduce("aten::mean.dim", self, reduced_dims(self, dim), keepdim, m);
}

Tensor prod_dim(const Tensor& self, int64_t dim, bool keepdim,
                std::optional<at::ScalarType> dtype) {
  Tensor m = at::meta::prod(to_meta(self), dim, keepdim, dtype);
  std::vector<int64_t> d{c10::maybe_wrap_dim(dim, self.dim())};
  if (self.dim() == 0) d.clear();
  return reduce("aten::prod.dim_int", self, d, keepdim, m);
}

Tensor prod_all(const Tensor& self, std::optional<at::ScalarType> dtype) {
  Tensor m = at::prod(to_meta(self), dtype);
  return reduce("aten::prod.dim_int", self, reduced_dims(self, std::nullopt), false, m);
}

// CPU's checks for reductions without an identity (amax, amin).
void check_nonempty(const char* name, const Tensor& self, at::IntArrayRef dim) {
  if (self.numel() != 0) return;
  TORCH_CHECK(!dim.empty(), name, "(): Expected reduction dim to be specified for input.numel() "
              "== 0. Specify the reduction dim with the 'dim' argument.");
  for (int64_t d : dim) {
    int64_t w = c10::maybe_wrap_dim(d, self.dim());
    TORCH_CHECK_INDEX(self.dim() == 0 || self.size(w) != 0, name,
                      "(): Expected reduction dim ", w, " to have non-zero size.");
  }
}

Tensor amax(const Tensor& self, at::IntArrayRef dim, bool keepdim) {
  check_nonempty("amax", self, dim);
  Tensor m = at::meta::amax(to_meta(self), dim, keepdim);
  return reduce("aten::amax", self, reduced_dims(self, dim), keepdim, m);
}

Tensor amin(const Tensor& self, at::IntArrayRef dim, bool keepdim) {
  check_nonempty("amin", self, dim);
  Tensor m = at::meta::amin(to_meta(self), dim, keepdim);
  return reduce("aten::amin", self, reduced_dims(self, dim), keepdim, m);
}

Tensor any_dims(const Tensor& self, OptionalIntArrayRef dim, bool keepdim) {
  Tensor m = at::meta::any(to_meta(self), dim, keepdim);
  return reduce("aten::any.dims", self, reduced_dims(self, dim), keepdim, m);
}

Tensor all_dims(const Tensor& self, OptionalIntArrayRef dim, bool keepdim) {
  Tensor m = at::meta::all(to_meta(self), dim, keepdim);
  return reduce("aten::all.dims", self, reduced_dims(self, dim), keepdim, m);
}

// ---- matrix products ------------------------------------------------------

bool is_value(const at::Scalar& s, double v) {
  if (s.isComplex()) return s.toComplexDouble() == c10::complex<double>(v, 0.0);
  if (s.isFloatingPoint()) return s.toDouble() == v;
  if (s.isBoolean()) return s.toBool() == (v != 0);
  return s.toLong() == static_cast<int64_t>(v);
}

Tensor product(const char* op, std::initializer_list<const Tensor*> ts, const Tensor& meta_out,
               const at::Scalar* beta, const at::Scalar* alpha) {
  for (const Tensor* t : ts) check_supported(*t, op);
  c10::Device dev = common_device(op, ts);
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(meta_out.sizes(), meta_out.options().device(dev));
  OpArgs a;
  for (const Tensor* t : ts) add_operand(a, *t, dev.index());
  std::vector<int64_t> attrs{to_tpj_dtype(out.scalar_type())};
  if (beta) {
    bool has_bias = !is_value(*beta, 0.0), has_beta = has_bias && !is_value(*beta, 1.0);
    bool has_alpha = !is_value(*alpha, 1.0);
    attrs.insert(attrs.end(), {has_bias, has_beta, has_alpha});
    if (has_beta) a.scalar(*beta, out.scalar_type(), dev.index());
    if (has_alpha) a.scalar(*alpha, out.scalar_type(), dev.index());
  }
  run_op(op, dev.index(), a, attrs, {out});
  return out;
}

// The checks CPU's kernels make, with their messages (the meta functions
// word them differently or skip the dtype).
void check_matrices(const Tensor& m1, const Tensor& m2) {
  TORCH_CHECK(m1.dim() == 2, "self must be a matrix");
  TORCH_CHECK(m2.dim() == 2, "mat2 must be a matrix");
  TORCH_CHECK(m1.size(1) == m2.size(0), "mat1 and mat2 shapes cannot be multiplied (", m1.size(0),
              "x", m1.size(1), " and ", m2.size(0), "x", m2.size(1), ")");
  TORCH_CHECK(m1.dtype() == m2.dtype(), "expected m1 and m2 to have the same dtype, but got: ",
              m1.dtype(), " != ", m2.dtype());
}

Tensor mm(const Tensor& self, const Tensor& mat2) {
  check_matrices(self, mat2);
  return product("aten::mm", {&self, &mat2}, at::meta::mm(to_meta(self), to_meta(mat2)), nullptr,
                 nullptr);
}

Tensor bmm(const Tensor& self, const Tensor& mat2) {
  TORCH_CHECK(self.dtype() == mat2.dtype(), "expected m1 and m2 to have the same dtype, but got: ",
              self.dtype(), " != ", mat2.dtype());
  return product("aten::bmm", {&self, &mat2}, at::meta::bmm(to_meta(self), to_meta(mat2)), nullptr,
                 nullptr);
}

Tensor addmm(const Tensor& self, const Tensor& m1, const Tensor& m2, const at::Scalar& beta,
             const at::Scalar& alpha) {
  check_matrices(m1, m2);
  TORCH_CHECK(self.scalar_type() == m2.scalar_type(), "self and mat2 must have the same dtype, "
              "but got ", self.scalar_type(), " and ", m2.scalar_type());
  Tensor m = at::meta::addmm(to_meta(self), to_meta(m1), to_meta(m2), beta, alpha);
  return product("aten::addmm", {&self, &m1, &m2}, m, &beta, &alpha);
}

Tensor baddbmm(const Tensor& self, const Tensor& b1, const Tensor& b2, const at::Scalar& beta,
               const at::Scalar& alpha) {
  Tensor m = at::meta::baddbmm(to_meta(self), to_meta(b1), to_meta(b2), beta, alpha);
  return product("aten::baddbmm", {&self, &b1, &b2}, m, &beta, &alpha);
}

Tensor addmv(const Tensor& self, const Tensor& mat, const Tensor& vec, const at::Scalar& beta,
             const at::Scalar& alpha) {
  TORCH_CHECK(mat.dtype() == vec.dtype() && self.dtype() == mat.dtype(),
              "addmv input tensors must have the same dtype, but got ", self.scalar_type(), ", ",
              mat.scalar_type(), ", and ", vec.scalar_type());
  Tensor m = at::meta::addmv(to_meta(self), to_meta(mat), to_meta(vec), beta, alpha);
  return product("aten::addmv", {&self, &mat, &vec}, m, &beta, &alpha);
}

Tensor mv(const Tensor& self, const Tensor& vec) {
  // CPU's mv runs addmv with an output of vec's dtype; so does its message
  TORCH_CHECK(self.dtype() == vec.dtype(), "addmv input tensors must have the same dtype, but "
              "got ", vec.scalar_type(), ", ", self.scalar_type(), ", and ", vec.scalar_type());
  return product("aten::mv", {&self, &vec}, at::mv(to_meta(self), to_meta(vec)), nullptr, nullptr);
}

Tensor dot(const Tensor& self, const Tensor& other) {
  TORCH_CHECK(self.dtype() == other.dtype(), "dot : expected both vectors to have same dtype, but "
              "found ", self.scalar_type(), " and ", other.scalar_type());
  return product("aten::dot", {&self, &other}, at::dot(to_meta(self), to_meta(other)), nullptr,
                 nullptr);
}

}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  m.impl("sum.dim_IntList", TORCH_FN(sum_dim));
  m.impl("sum", TORCH_FN(sum_all));
  m.impl("mean.dim", TORCH_FN(mean_dim));
  m.impl("prod.dim_int", TORCH_FN(prod_dim));
  m.impl("prod", TORCH_FN(prod_all));
  m.impl("amax", TORCH_FN(amax));
  m.impl("amin", TORCH_FN(amin));
  m.impl("any.dims", TORCH_FN(any_dims));
  m.impl("all.dims", TORCH_FN(all_dims));
  m.impl("any", [](const at::Tensor& s) { return any_dims(s, std::nullopt, false); });
  m.impl("all", [](const at::Tensor& s) { return all_dims(s, std::nullopt, false); });
  m.impl("any.dim", [](const at::Tensor& s, int64_t d, bool k) {
    return any_dims(s, at::IntArrayRef(d), k);
  });
  m.impl("all.dim", [](const at::Tensor& s, int64_t d, bool k) {
    return all_dims(s, at::IntArrayRef(d), k);
  });
  m.impl("mm", TORCH_FN(mm));
  m.impl("bmm", TORCH_FN(bmm));
  m.impl("addmm", TORCH_FN(addmm));
  m.impl("baddbmm", TORCH_FN(baddbmm));
  m.impl("addmv", TORCH_FN(addmv));
  m.impl("mv", TORCH_FN(mv));
  m.impl("dot", TORCH_FN(dot));
}
