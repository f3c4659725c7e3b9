// Kernel glue for linear algebra (src/ops/linalg.c, linalg_decomp.c):
// matrix products (mm, bmm, addmm, baddbmm, addmv, mv, dot, vdot, addbmm,
// trace, _grouped_mm), linalg_cross, linalg_matrix_exp, and the
// decompositions and solves: Cholesky, triangular solves, LU and what is
// built on it (solve, inv, det, slogdet), QR and eigenvalues of symmetric
// matrices. Decompositions run float32 and float64 on the device; other
// dtypes run CPU's kernel (counted as a fallback), which also raises CPU's
// error for dtypes CPU refuses. Shapes, dtypes and argument checks come from
// the meta functions; errors that depend on the values (singular, not
// positive-definite, bad pivots) are checked on the host as the CPU kernels
// check them. The out= forms are served by outform.cpp (the functional
// kernel, then CPU's out= rules), except _cholesky_solve_helper.out: PyTorch
// gives that one a CompositeExplicitAutograd kernel, which would take the
// call first.
#include <ATen/MetaFunctions.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "ops/copy.h"
#include "ops/fallback.h"
#include "ops/write.h"
#include "tensor.h"
#include "dtype_check.h"
#include "glue.h"
#include <ATen/ExpandUtils.h>
#include <string>
#include "storage_dtypes.h"
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <algorithm>
#include <cmath>
#include <limits>
#include <ATen/ops/_grouped_mm_compositeexplicitautograd_dispatch.h>

extern "C" {
#include "ops/attrs.h"
}

namespace torch_pjrt {
namespace {

using at::Tensor;
using T2 = std::tuple<Tensor, Tensor>;
using T3 = std::tuple<Tensor, Tensor, Tensor>;
using T4 = std::tuple<Tensor, Tensor, Tensor, Tensor>;

bool native(const Tensor& t) {
  return t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble;
}

Tensor cpu(const Tensor& t) { return t.device().is_cpu() ? t : t.cpu(); }

// Results of CPU's kernel, moved back to dev.
Tensor back(const Tensor& t, c10::Device dev) { return t.to(dev); }
T2 back(const T2& t, c10::Device dev) {
  return {std::get<0>(t).to(dev), std::get<1>(t).to(dev)};
}
T3 back(const T3& t, c10::Device dev) {
  return {std::get<0>(t).to(dev), std::get<1>(t).to(dev), std::get<2>(t).to(dev)};
}
T4 back(const T4& t, c10::Device dev) {
  return {std::get<0>(t).to(dev), std::get<1>(t).to(dev), std::get<2>(t).to(dev),
          std::get<3>(t).to(dev)};
}

// Runs CPU's kernel (f, on CPU copies) for a dtype without a lowering; CPU
// raises its own error for dtypes it refuses, and only a run that succeeds
// is counted.
template <typename F>
auto on_cpu(const char* op, const Tensor& self, c10::Device dev, F f) {
  auto r = f();
  dtype_fallback(op, self.scalar_type());
  return back(r, dev);
}

// Runs table op `op` on the operands into new tensors shaped like metas.
std::vector<Tensor> run(const char* op, c10::Device dev, std::initializer_list<Tensor> ins,
                        std::initializer_list<Tensor> metas, c10::ArrayRef<int64_t> attrs) {
  c10::DeviceGuard guard(dev);
  std::vector<Tensor> outs;
  for (const Tensor& m : metas) outs.push_back(at::empty(m.sizes(), m.options().device(dev)));
  OpArgs a;
  for (const Tensor& t : ins) {
    check_supported(t, op);
    a.tensor(t.device() == dev ? t : t.to(dev));
  }
  run_op(op, dev.index(), a, attrs, outs);
  return outs;
}

c10::Device dev_of(const char* op, std::initializer_list<const Tensor*> ts) {
  return common_device(op, ts);
}

tpj_attrs_cholesky_t cholesky_attrs(bool upper) {
  tpj_attrs_cholesky_t attrs{};
  attrs.upper = upper;
  return attrs;
}

// ---- Cholesky ---------------------------------------------------------------

T2 k_cholesky_ex(const Tensor& A, bool upper, bool check_errors) {
  const char* op = "aten::linalg_cholesky_ex";
  c10::Device dev = A.device();
  if (!native(A))
    return on_cpu(op, A, dev, [&] { return at::linalg_cholesky_ex(cpu(A), upper, check_errors); });
  T2 m = at::meta::linalg_cholesky_ex(to_meta(A), upper, false);
  auto o = run(op, dev, {A}, {std::get<0>(m), std::get<1>(m)}, attrs_of(cholesky_attrs(upper)));
  if (check_errors) at::_linalg_check_errors(o[1], "linalg.cholesky_ex", A.dim() == 2);
  return {o[0], o[1]};
}

Tensor k_cholesky(const Tensor& self, bool upper) {
  TORCH_WARN_ONCE(
      "torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be ",
      "removed in a future PyTorch release.\n",
      "L = torch.cholesky(A)\n",
      "should be replaced with\n",
      "L = torch.linalg.cholesky(A)\n",
      "and\n"
      "U = torch.cholesky(A, upper=True)\n",
      "should be replaced with\n",
      "U = torch.linalg.cholesky(A).mH\n"
      "This transform will produce equivalent results for all valid (symmetric positive definite) inputs.");
  c10::Device dev = self.device();
  if (!native(self))
    return on_cpu("aten::cholesky", self, dev, [&] { return at::cholesky(cpu(self), upper); });
  Tensor m = at::cholesky(to_meta(self), upper);
  T2 mm = at::meta::linalg_cholesky_ex(to_meta(self), upper, false);
  auto o = run("aten::linalg_cholesky_ex", dev, {self}, {m, std::get<1>(mm)},
               attrs_of(cholesky_attrs(upper)));
  at::_linalg_check_errors(o[1], "cholesky", self.dim() == 2);
  return o[0];
}

// ---- triangular solves --------------------------------------------------------

Tensor k_solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool left, bool unit) {
  const char* op = "aten::linalg_solve_triangular";
  c10::Device dev = dev_of(op, {&A, &B});
  Tensor m = at::linalg_solve_triangular(to_meta(A), to_meta(B), upper, left, unit);
  if (!native(m))
    return on_cpu(op, A, dev, [&] {
      return at::linalg_solve_triangular(cpu(A), cpu(B), upper, left, unit);
    });
  if (m.numel() == 0) return at::empty(m.sizes(), m.options().device(dev));
  tpj_attrs_solve_triangular_t attrs{};
  attrs.upper = upper;
  attrs.left = left;
  attrs.unitriangular = unit;
  return run(op, dev, {A, B}, {m}, attrs_of(attrs))[0];
}

T2 k_triangular_solve(const Tensor& self, const Tensor& A, bool upper, bool transpose, bool unit) {
  const char* op = "aten::triangular_solve";
  TORCH_WARN_ONCE(
      "torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangular",
      "and will be removed in a future PyTorch release.\n",
      "torch.linalg.solve_triangular has its arguments reversed and does not return a copy of one of the inputs.\n",
      "X = torch.triangular_solve(B, A).solution\n",
      "should be replaced with\n",
      "X = torch.linalg.solve_triangular(A, B).");
  c10::Device dev = dev_of(op, {&self, &A});
  if (!native(self) || !native(A))
    return on_cpu(op, self, dev, [&] {
      return at::triangular_solve(cpu(self), cpu(A), upper, transpose, unit);
    });
  T2 m = at::meta::triangular_solve(to_meta(self), to_meta(A), upper, transpose, unit);
  if (std::get<0>(m).numel() == 0 || std::get<1>(m).numel() == 0)
    return {at::empty(std::get<0>(m).sizes(), std::get<0>(m).options().device(dev)),
            A.expand(std::get<1>(m).sizes()).clone(at::MemoryFormat::Contiguous)};
  tpj_attrs_triangular_solve_t attrs{};
  attrs.upper = upper;
  attrs.transpose = transpose;
  attrs.unitriangular = unit;
  auto o = run(op, dev, {self, A}, {std::get<0>(m), std::get<1>(m)}, attrs_of(attrs));
  return {o[0], o[1]};
}

Tensor k_cholesky_solve_helper(const Tensor& self, const Tensor& A, bool upper) {
  const char* op = "aten::_cholesky_solve_helper";
  c10::Device dev = dev_of(op, {&self, &A});
  if (!native(self) || !native(A))
    return on_cpu(op, self, dev, [&] { return at::_cholesky_solve_helper(cpu(self), cpu(A), upper); });
  Tensor m = at::_cholesky_solve_helper(to_meta(self), to_meta(A), upper);
  if (m.numel() == 0) return at::empty(m.sizes(), m.options().device(dev));
  return run(op, dev, {self, A}, {m}, attrs_of(cholesky_attrs(upper)))[0];
}

Tensor& k_cholesky_solve_helper_out(const Tensor& self, const Tensor& A, bool upper, Tensor& out) {
  return out_result(out, k_cholesky_solve_helper(self, A, upper),
                    "aten::_cholesky_solve_helper");
}

Tensor k_cholesky_inverse(const Tensor& self, bool upper) {
  const char* op = "aten::cholesky_inverse";
  c10::Device dev = self.device();
  if (!native(self))
    return on_cpu(op, self, dev, [&] { return at::cholesky_inverse(cpu(self), upper); });
  Tensor m = at::cholesky_inverse(to_meta(self), upper);
  if (m.numel() == 0) return at::empty(m.sizes(), m.options().device(dev));
  return run(op, dev, {self}, {m}, attrs_of(cholesky_attrs(upper)))[0];
}

// ---- LU ---------------------------------------------------------------------------

void check_pivot(bool pivot) {
  TORCH_CHECK(pivot, "linalg.lu_factor: LU without pivoting is not implemented on the CPU");
}

T3 k_lu_factor_ex(const Tensor& A, bool pivot, bool check_errors) {
  const char* op = "aten::linalg_lu_factor_ex";
  c10::Device dev = A.device();
  if (!native(A))
    return on_cpu(op, A, dev, [&] { return at::linalg_lu_factor_ex(cpu(A), pivot, check_errors); });
  T3 m = at::meta::linalg_lu_factor_ex(to_meta(A), pivot, false);
  check_pivot(pivot);
  auto o = run(op, dev, {A}, {std::get<0>(m), std::get<1>(m), std::get<2>(m)}, {});
  if (check_errors) at::_linalg_check_errors(o[2], "torch.linalg.lu_factor_ex", A.dim() == 2);
  return {o[0], o[1], o[2]};
}

T3 k_linalg_lu(const Tensor& A, bool pivot) {
  const char* op = "aten::linalg_lu";
  c10::Device dev = A.device();
  if (!native(A)) return on_cpu(op, A, dev, [&] { return at::linalg_lu(cpu(A), pivot); });
  T3 m = at::meta::linalg_lu(to_meta(A), pivot);
  check_pivot(pivot);
  auto o = run(op, dev, {A}, {std::get<0>(m), std::get<1>(m), std::get<2>(m)}, {});
  return {o[0], o[1], o[2]};
}

T3 k_lu_unpack(const Tensor& LU, const Tensor& pivots, bool unpack_data, bool unpack_pivots) {
  const char* op = "aten::lu_unpack";
  c10::Device dev = dev_of(op, {&LU, &pivots});
  if (!native(LU))
    return on_cpu(op, LU, dev, [&] {
      return at::lu_unpack(cpu(LU), cpu(pivots), unpack_data, unpack_pivots);
    });
  T3 m = at::meta::lu_unpack(to_meta(LU), to_meta(pivots), unpack_data, unpack_pivots);
  int64_t lo, hi;
  if (unpack_pivots && index_bounds(pivots, &lo, &hi))
    TORCH_CHECK(lo >= 1 && hi <= LU.size(-2),
                "pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive."
                "Did you properly pass the result of lu_factor?");
  tpj_attrs_lu_unpack_t attrs{};
  attrs.unpack_data = unpack_data;
  attrs.unpack_pivots = unpack_pivots;
  auto o = run(op, dev, {LU, pivots}, {std::get<0>(m), std::get<1>(m), std::get<2>(m)},
               attrs_of(attrs));
  return {o[0], o[1], o[2]};
}

Tensor k_lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left, bool adjoint) {
  const char* op = "aten::linalg_lu_solve";
  c10::Device dev = dev_of(op, {&LU, &pivots, &B});
  if (!native(LU))
    return on_cpu(op, LU, dev, [&] {
      return at::linalg_lu_solve(cpu(LU), cpu(pivots), cpu(B), left, adjoint);
    });
  Tensor m = at::meta::linalg_lu_solve(to_meta(LU), to_meta(pivots), to_meta(B), left, adjoint);
  if (m.numel() == 0) return at::empty(m.sizes(), m.options().device(dev));
  int64_t lo, hi;
  if (index_bounds(pivots, &lo, &hi))
    TORCH_CHECK(lo >= 1 && hi <= LU.size(-2),
                "Pivots given to lu_solve must all be smaller or equal to LU.size(-2). "
                "Did you properly pass the result of lu_factor?");
  tpj_attrs_lu_solve_t attrs{};
  attrs.left = left;
  attrs.adjoint = adjoint;
  return run(op, dev, {LU, pivots, B}, {m}, attrs_of(attrs))[0];
}

T2 k_inv_ex(const Tensor& A, bool check_errors) {
  const char* op = "aten::linalg_inv_ex";
  c10::Device dev = A.device();
  if (!native(A))
    return on_cpu(op, A, dev, [&] { return at::linalg_inv_ex(cpu(A), check_errors); });
  T2 m = at::meta::linalg_inv_ex(to_meta(A), false);
  auto o = run(op, dev, {A}, {std::get<0>(m), std::get<1>(m)}, {});
  if (check_errors) at::_linalg_check_errors(o[1], "linalg.inv_ex", A.dim() == 2);
  return {o[0], o[1]};
}

T4 k_solve_ex(const Tensor& A, const Tensor& B, bool left, bool check_errors) {
  const char* op = "aten::_linalg_solve_ex";
  c10::Device dev = dev_of(op, {&A, &B});
  if (!native(A))
    return on_cpu(op, A, dev, [&] { return at::_linalg_solve_ex(cpu(A), cpu(B), left, check_errors); });
  T4 m = at::meta::_linalg_solve_ex(to_meta(A), to_meta(B), left, false);
  // PyTorch's rule for a vector right-hand side (linalg_solve_is_vector_rhs)
  bool vec = B.dim() == 1 || (A.dim() - 1 == B.dim() && B.sizes() == A.sizes().slice(0, A.dim() - 1));
  tpj_attrs_solve_ex_t attrs{};
  attrs.left = left;
  attrs.vector_case = vec;
  auto o = run(op, dev, {A, B}, {std::get<0>(m), std::get<1>(m), std::get<2>(m), std::get<3>(m)},
               attrs_of(attrs));
  if (check_errors) at::_linalg_check_errors(o[3], "linalg.solve_ex", A.dim() == 2);
  return {o[0], o[1], o[2], o[3]};
}

T3 k_det(const Tensor& A) {
  const char* op = "aten::_linalg_det";
  c10::Device dev = A.device();
  if (!native(A)) return on_cpu(op, A, dev, [&] { return at::_linalg_det(cpu(A)); });
  T3 m = at::meta::_linalg_det(to_meta(A));
  // CPU factors A^T when A is contiguous; the backward relies on it
  tpj_attrs_det_t attrs{};
  attrs.transposed = A.is_contiguous();
  auto o = run(op, dev, {A}, {std::get<0>(m), std::get<1>(m), std::get<2>(m)}, attrs_of(attrs));
  return {o[0], o[1], o[2]};
}

T4 k_slogdet(const Tensor& A) {
  const char* op = "aten::_linalg_slogdet";
  c10::Device dev = A.device();
  if (!native(A)) return on_cpu(op, A, dev, [&] { return at::_linalg_slogdet(cpu(A)); });
  T4 m = at::meta::_linalg_slogdet(to_meta(A));
  tpj_attrs_det_t attrs{};
  attrs.transposed = A.is_contiguous();
  auto o = run(op, dev, {A}, {std::get<0>(m), std::get<1>(m), std::get<2>(m), std::get<3>(m)},
               attrs_of(attrs));
  return {o[0], o[1], o[2], o[3]};
}

// ---- QR, eigenvalues -------------------------------------------------------------

T2 k_geqrf(const Tensor& self) {
  const char* op = "aten::geqrf";
  c10::Device dev = self.device();
  if (!native(self)) return on_cpu(op, self, dev, [&] { return at::geqrf(cpu(self)); });
  // geqrf has no meta function: CPU's check, then a = self's shape and tau
  // (*, min(m, n)).
  TORCH_CHECK(self.dim() >= 2, "torch.geqrf: input must have at least 2 dimensions.");
  std::vector<int64_t> ts(self.sizes().begin(), self.sizes().end() - 2);
  ts.push_back(std::min(self.size(-2), self.size(-1)));
  T2 m = {at::empty(self.sizes(), self.options().device(at::kMeta)),
          at::empty(ts, self.options().device(at::kMeta))};
  if (self.numel() == 0)
    return {at::empty(std::get<0>(m).sizes(), std::get<0>(m).options().device(dev)),
            at::zeros(std::get<1>(m).sizes(), std::get<1>(m).options().device(dev))};
  auto o = run(op, dev, {self}, {std::get<0>(m), std::get<1>(m)}, {});
  return {o[0], o[1]};
}

Tensor k_householder_product(const Tensor& input, const Tensor& tau) {
  const char* op = "aten::linalg_householder_product";
  c10::Device dev = dev_of(op, {&input, &tau});
  if (!native(input))
    return on_cpu(op, input, dev, [&] { return at::linalg_householder_product(cpu(input), cpu(tau)); });
  Tensor m = at::linalg_householder_product(to_meta(input), to_meta(tau));
  if (m.numel() == 0) return at::empty(m.sizes(), m.options().device(dev));
  return run(op, dev, {input, tau}, {m}, {})[0];
}

T2 k_linalg_qr(const Tensor& A, c10::string_view mode) {
  const char* op = "aten::linalg_qr";
  c10::Device dev = A.device();
  if (!native(A)) return on_cpu(op, A, dev, [&] { return at::linalg_qr(cpu(A), mode); });
  T2 m = at::meta::linalg_qr(to_meta(A), mode);
  int64_t md = mode == "complete" ? 1 : mode == "r" ? 2 : 0;
  if (A.numel() == 0) {
    // no matrix to factor: Q is (part of) the identity, R is empty/zero
    Tensor Q = at::zeros(std::get<0>(m).sizes(), std::get<0>(m).options().device(dev));
    if (Q.numel()) Q.diagonal(0, -2, -1).fill_(1);
    return {Q, at::zeros(std::get<1>(m).sizes(), std::get<1>(m).options().device(dev))};
  }
  tpj_attrs_qr_t attrs{};
  attrs.mode = md;
  auto o = run(op, dev, {A}, {std::get<0>(m), std::get<1>(m)}, attrs_of(attrs));
  return {o[0], o[1]};
}

// Eigenvalues only: eigenvectors are defined up to sign (and rotation for
// repeated eigenvalues), so a different algorithm than CPU's would give
// different vectors; those stay on CPU's kernel.
T2 k_linalg_eigh(const Tensor& A, c10::string_view uplo, bool compute_v) {
  const char* op = "aten::_linalg_eigh";
  c10::Device dev = A.device();
  if (!native(A) || compute_v)
    return on_cpu(op, A, dev, [&] { return at::_linalg_eigh(cpu(A), uplo, compute_v); });
  T2 m = at::meta::_linalg_eigh(to_meta(A), uplo, compute_v);
  if (A.numel() == 0)
    return {at::empty(std::get<0>(m).sizes(), std::get<0>(m).options().device(dev)),
            at::empty(std::get<1>(m).sizes(), std::get<1>(m).options().device(dev))};
  tpj_attrs_eigh_t attrs{};
  attrs.lower = uplo == "L" || uplo == "l";
  auto o = run(op, dev, {A}, {std::get<0>(m), std::get<1>(m)}, attrs_of(attrs));
  return {o[0], o[1]};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("linalg_cholesky_ex", k_cholesky_ex);
  m.impl("cholesky", k_cholesky);
  m.impl("linalg_solve_triangular", k_solve_triangular);
  m.impl("triangular_solve", k_triangular_solve);
  m.impl("_cholesky_solve_helper", k_cholesky_solve_helper);
  m.impl("_cholesky_solve_helper.out", k_cholesky_solve_helper_out);
  m.impl("cholesky_inverse", k_cholesky_inverse);
  m.impl("linalg_lu_factor_ex", k_lu_factor_ex);
  m.impl("linalg_lu", k_linalg_lu);
  m.impl("lu_unpack", k_lu_unpack);
  m.impl("linalg_lu_solve", k_lu_solve);
  m.impl("linalg_inv_ex", k_inv_ex);
  m.impl("_linalg_solve_ex", k_solve_ex);
  m.impl("_linalg_det", k_det);
  m.impl("_linalg_slogdet", k_slogdet);
  m.impl("geqrf", k_geqrf);
  m.impl("linalg_householder_product", k_householder_product);
  m.impl("linalg_qr", k_linalg_qr);
  m.impl("_linalg_eigh", k_linalg_eigh);
}

}  // namespace torch_pjrt

namespace torch_pjrt {
namespace {

using at::Scalar;
using at::ScalarType;
using at::Tensor;

Tensor trace(const Tensor& self) {
  TORCH_CHECK(self.dim() == 2, "trace: expected a matrix, but got tensor with dim ", self.dim());
  return at::sum(at::diagonal(self));
}

Tensor vdot(const Tensor& a, const Tensor& b) {
  TORCH_CHECK(a.dim() == 1 && b.dim() == 1, "1D tensors expected, but got ", a.dim(), "D and ",
              b.dim(), "D tensors");
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "dot : expected both vectors to have same dtype, "
              "but found ", a.scalar_type(), " and ", b.scalar_type());
  TORCH_CHECK(a.numel() == b.numel(), "inconsistent tensor size, expected tensor [", a.numel(),
              "] and src [", b.numel(), "] to have the same number of elements, but got ",
              a.numel(), " and ", b.numel(), " elements respectively");
  common_device("aten::vdot", {&a, &b});
  ScalarType t = a.scalar_type();
  if (c10::isComplexType(t)) return at::sum(at::mul(torch_pjrt::conj_physical(a), b));  // conj(a) . b
  TORCH_CHECK_NOT_IMPLEMENTED(t != at::kBool, "\"dot\" not implemented for 'Bool'");
  // Products and their sum in the accumulator (float for half), as CPU's dot.
  ScalarType acc = accumulator(t);
  return at::sum(at::mul(a.to(acc), b.to(acc)), at::OptionalIntArrayRef{}, false, acc).to(t);
}

Tensor addbmm(const Tensor& self, const Tensor& b1, const Tensor& b2, const Scalar& beta,
              const Scalar& alpha) {
  checked_like_cpu(
      [&] {
        TORCH_CHECK(b1.dim() == 3 && b2.dim() == 3 && b1.size(0) == b2.size(0) &&
                        b1.size(2) == b2.size(1),
                    "addbmm: bad shapes");
        self.expand({b1.size(1), b2.size(2)});
      },
      [&] { at::addbmm(self.cpu(), b1.cpu(), b2.cpu(), beta, alpha); });
  int64_t n = b1.size(1), k = b1.size(0) * b1.size(2), p = b2.size(2);
  // sum_b b1[b] @ b2[b] is one matrix product over the joined (b, m) dim.
  Tensor x = b1.transpose(0, 1).reshape({n, k});
  Tensor y = b2.reshape({k, p});
  return at::addmm(self.expand({n, p}), x, y, beta, alpha);
}
}  // namespace
}  // namespace torch_pjrt
namespace {
namespace tp = torch_pjrt;
using at::Scalar;
using at::Tensor;
}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("trace", TORCH_FN(tp::trace));
  m.impl("vdot", TORCH_FN(tp::vdot));
  m.impl("addbmm", TORCH_FN(tp::addbmm));
  m.impl("addbmm_", [](Tensor& s, const Tensor& b1, const Tensor& b2, const Scalar& beta,
                       const Scalar& alpha) -> Tensor& {
    tp::assign_result(s, tp::addbmm(s, b1, b2, beta, alpha), "aten::addbmm_");
    return s;
  });
}

namespace torch_pjrt {

namespace {

using at::Tensor;
using Pair = std::tuple<Tensor, Tensor>;
using PairRef = std::tuple<Tensor&, Tensor&>;

// ---- linalg_cross -------------------------------------------------------------

Tensor linalg_cross(const Tensor& self, const Tensor& other, int64_t dim) {
  // The meta function promotes mixed dtypes; CPU's kernel refuses them.
  if (self.scalar_type() != other.scalar_type())
    at::linalg_cross(self.cpu(), other.cpu(), dim);
  Tensor m = meta_or_cpu([&] { return at::meta::linalg_cross(to_meta(self), to_meta(other), dim); },
                         [&] { at::linalg_cross(self.cpu(), other.cpu(), dim); });
  tpj_attrs_linalg_cross_t attrs{};
  attrs.dim = c10::maybe_wrap_dim(dim, m.dim());
  return run_outs("aten::linalg_cross", {&self, &other}, {m}, attrs_of(attrs))[0];
}

// ---- linalg_matrix_exp ------------------------------------------------------------

// The number of squarings depends on the data: the largest 1-norm of the
// batch is read on the host (one wait).
Tensor matrix_exp(const Tensor& self) {
  const char* op = "aten::linalg_matrix_exp";
  Tensor m = meta_or_cpu([&] { return at::linalg_matrix_exp(to_meta(self)); },
                         [&] { at::linalg_matrix_exp(self.cpu()); });
  check_supported(self, op);
  // CPU computes half types in half precision, where its series overflows
  // to NaN on matrices this computes finitely: CPU's kernel, counted.
  if (self.scalar_type() == at::kHalf || self.scalar_type() == at::kBFloat16) {
    Tensor r = at::linalg_matrix_exp(self.cpu());
    dtype_fallback(op, self.scalar_type());
    return r.to(self.device());
  }
  c10::DeviceGuard guard(self.device());
  Tensor out = at::empty(m.sizes(), m.options().device(self.device()));
  if (out.numel() == 0) return out;
  double norm = to_host(at::amax(at::sum(at::abs(self), -2))).to(at::kDouble).item<double>();
  int64_t s = 0;
  if (std::isfinite(norm) && norm > 1) s = std::min<int64_t>(1100, std::ceil(std::log2(norm)));
  OpArgs a;
  a.tensor(self);
  tpj_attrs_matrix_exp_t attrs{};
  attrs.squarings = s;
  attrs.compute = to_tpj_dtype(self.scalar_type());
  run_op(op, self.device().index(), a, attrs_of(attrs), {out});
  return out;
}
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  namespace tp = torch_pjrt;
  m.impl("linalg_cross", TORCH_FN(tp::linalg_cross));
  m.impl("linalg_matrix_exp", TORCH_FN(tp::matrix_exp));
}

namespace torch_pjrt {
namespace {

using at::Tensor;

// ---- _grouped_mm ----------------------------------------------------------------

Tensor k_grouped_mm(const Tensor& self, const Tensor& mat2, const std::optional<Tensor>& offs,
                    const std::optional<Tensor>& bias, std::optional<at::ScalarType> out_dtype) {
  const char* op = "aten::_grouped_mm";
  bool has_offs = offs.has_value() && offs->defined();
  bool has_bias = bias.has_value() && bias->defined();
  int layout = -1;
  if (self.dim() == 2 && mat2.dim() == 3 && has_offs) layout = 0;
  if (self.dim() == 3 && mat2.dim() == 3 && !has_offs) layout = 1;
  if (self.dim() == 2 && mat2.dim() == 2 && has_offs && !has_bias) layout = 2;
  if (layout < 0) {
    // The other layouts (3-D x 2-D, jagged n): PyTorch's composite kernel,
    // which works on any device (one mm per group).
    return at::compositeexplicitautograd::_grouped_mm(self, mat2, offs, bias, out_dtype);
  }
  TORCH_CHECK(self.scalar_type() == mat2.scalar_type(),
              "Expected mat_a and mat_b to have the same dtype, but got ", self.scalar_type(),
              " and ", mat2.scalar_type());
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), "grouped_mm: expected floating inputs, got ",
              self.scalar_type());
  int64_t g = layout == 2 ? offs->size(0) : mat2.size(0);
  int64_t k = mat2.size(-2), n = mat2.size(-1);
  TORCH_CHECK(self.size(-1) == k, "contraction dimension of mat_a and mat_b must match, got ",
              self.size(-1), " and ", k);
  std::vector<int64_t> sizes;
  if (layout == 2) {
    TORCH_CHECK(offs->scalar_type() == at::kInt, "offs has to be int32");
    TORCH_CHECK(offs->dim() == 1, "offs must be a 1D tensor, got sizes ", offs->sizes());
    sizes = {g, self.size(0), n};
  } else if (layout == 0) {
    TORCH_CHECK(offs->scalar_type() == at::kInt, "offs has to be int32");
    TORCH_CHECK(offs->dim() == 1 && offs->size(0) == g,
                "offs must be a 1D tensor with one entry per group (", g, "), got sizes ",
                offs->sizes());
    sizes = {self.size(0), n};
  } else {
    TORCH_CHECK(self.size(0) == g, "batch dimension of mat_a and mat_b must match, got ",
                self.size(0), " and ", g);
    sizes = {g, self.size(1), n};
  }
  if (has_bias) {
    TORCH_CHECK(bias->dim() == 2 && bias->size(0) == g && bias->size(1) == n,
                "bias must have sizes [", g, ", ", n, "], got ", bias->sizes());
  }
  at::ScalarType od = out_dtype.value_or(self.scalar_type());
  std::vector<const Tensor*> ts = {&self, &mat2};
  if (has_offs) ts.push_back(&*offs);
  if (has_bias) ts.push_back(&*bias);
  c10::Device dev = self.device();
  for (const Tensor* t : ts) {
    TORCH_CHECK(t->device() == dev, "Expected all tensors to be on the same device, but found at "
                "least two devices, ", dev, " and ", t->device(), "!");
    check_supported(*t, op);
  }
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(sizes, self.options().dtype(od));
  if (out.numel() == 0) return out;
  OpArgs a;
  a.tensor(self);
  a.tensor(mat2);
  if (has_offs) a.tensor(*offs);
  if (has_bias) a.tensor(*bias);
  tpj_attrs_grouped_mm_t attrs{};
  attrs.layout = layout;
  attrs.has_bias = has_bias;
  attrs.compute = to_tpj_dtype(accumulator(self.scalar_type()));
  run_op(op, dev.index(), a, attrs_of(attrs), {out});
  return out;
}
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  m.impl("_grouped_mm", TORCH_FN(k_grouped_mm));
}

namespace torch_pjrt {
namespace {

using at::OptionalIntArrayRef;
using at::Tensor;

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
  if (!beta) {  // mm, bmm, mv, dot
    tpj_attrs_compute_t attrs{};
    attrs.compute = to_tpj_dtype(out.scalar_type());
    run_op(op, dev.index(), a, attrs_of(attrs), {out});
    return out;
  }
  tpj_attrs_addmm_t attrs{};
  attrs.compute = to_tpj_dtype(out.scalar_type());
  attrs.has_bias = !is_value(*beta, 0.0);
  attrs.has_beta = attrs.has_bias && !is_value(*beta, 1.0);
  attrs.has_alpha = !is_value(*alpha, 1.0);
  if (attrs.has_beta) a.scalar(*beta, out.scalar_type(), dev.index());
  if (attrs.has_alpha) a.scalar(*alpha, out.scalar_type(), dev.index());
  run_op(op, dev.index(), a, attrs_of(attrs), {out});
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

// CPU's matrix products refuse bool (XLA would compute it), except where an
// operand is empty: CPU returns before its typed kernel (zeros, or nothing).
void check_not_bool(const Tensor& t, const char* cpu_name,
                    std::initializer_list<const Tensor*> operands = {}) {
  for (const Tensor* o : operands)
    if (o->numel() == 0) return;
  check_cpu_dtype(t.scalar_type() != at::kBool, t.scalar_type(), cpu_name);
}

Tensor mm(const Tensor& self, const Tensor& mat2) {
  check_matrices(self, mat2);
  check_not_bool(self, "addmm_impl_cpu_", {&self, &mat2});
  return product("aten::mm", {&self, &mat2}, at::meta::mm(to_meta(self), to_meta(mat2)), nullptr,
                 nullptr);
}

Tensor bmm(const Tensor& self, const Tensor& mat2) {
  TORCH_CHECK(self.dtype() == mat2.dtype(), "expected m1 and m2 to have the same dtype, but got: ",
              self.dtype(), " != ", mat2.dtype());
  check_not_bool(self, "bmm", {&self, &mat2});
  return product("aten::bmm", {&self, &mat2}, at::meta::bmm(to_meta(self), to_meta(mat2)), nullptr,
                 nullptr);
}

Tensor addmm(const Tensor& self, const Tensor& m1, const Tensor& m2, const at::Scalar& beta,
             const at::Scalar& alpha) {
  check_matrices(m1, m2);
  TORCH_CHECK(self.scalar_type() == m2.scalar_type(), "self and mat2 must have the same dtype, "
              "but got ", self.scalar_type(), " and ", m2.scalar_type());
  check_not_bool(self, "addmm_impl_cpu_", {&m1, &m2});
  self.expand({m1.size(0), m2.size(1)});  // CPU's message for a bias that cannot broadcast
  Tensor m = at::meta::addmm(to_meta(self), to_meta(m1), to_meta(m2), beta, alpha);
  return product("aten::addmm", {&self, &m1, &m2}, m, &beta, &alpha);
}

Tensor baddbmm(const Tensor& self, const Tensor& b1, const Tensor& b2, const at::Scalar& beta,
               const at::Scalar& alpha) {
  Tensor m = at::meta::baddbmm(to_meta(self), to_meta(b1), to_meta(b2), beta, alpha);
  check_not_bool(self, "baddbmm", {&b1, &b2});
  return product("aten::baddbmm", {&self, &b1, &b2}, m, &beta, &alpha);
}

Tensor addmv(const Tensor& self, const Tensor& mat, const Tensor& vec, const at::Scalar& beta,
             const at::Scalar& alpha) {
  TORCH_CHECK(mat.dtype() == vec.dtype() && self.dtype() == mat.dtype(),
              "addmv input tensors must have the same dtype, but got ", self.scalar_type(), ", ",
              mat.scalar_type(), ", and ", vec.scalar_type());
  Tensor m = at::meta::addmv(to_meta(self), to_meta(mat), to_meta(vec), beta, alpha);
  check_not_bool(self, "addmv_impl_cpu", {&mat, &vec});
  return product("aten::addmv", {&self, &mat, &vec}, m, &beta, &alpha);
}

Tensor mv(const Tensor& self, const Tensor& vec) {
  // CPU's mv runs addmv with an output of vec's dtype; so does its message
  TORCH_CHECK(self.dtype() == vec.dtype(), "addmv input tensors must have the same dtype, but "
              "got ", vec.scalar_type(), ", ", self.scalar_type(), ", and ", vec.scalar_type());
  check_not_bool(self, "addmv_impl_cpu", {&self, &vec});
  return product("aten::mv", {&self, &vec}, at::mv(to_meta(self), to_meta(vec)), nullptr, nullptr);
}

Tensor dot(const Tensor& self, const Tensor& other) {
  TORCH_CHECK(self.dtype() == other.dtype(), "dot : expected both vectors to have same dtype, but "
              "found ", self.scalar_type(), " and ", other.scalar_type());
  check_not_bool(self, "dot");
  return product("aten::dot", {&self, &other}, at::dot(to_meta(self), to_meta(other)), nullptr,
                 nullptr);
}

// addr.out: PyTorch's composite kernel would copy a tpu result into an out
// on another device; CUDA's kernel refuses the mix, and so does this one.
Tensor& addr_out(const Tensor& self, const Tensor& vec1, const Tensor& vec2, const at::Scalar& beta,
                 const at::Scalar& alpha, Tensor& out) {
  common_device("aten::addr.out", {&self, &vec1, &vec2, &out});
  return out_result(out, at::addr(self, vec1, vec2, beta, alpha), "aten::addr.out");
}
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  m.impl("mm", TORCH_FN(mm));
  m.impl("bmm", TORCH_FN(bmm));
  m.impl("addmm", TORCH_FN(addmm));
  m.impl("baddbmm", TORCH_FN(baddbmm));
  m.impl("addmv", TORCH_FN(addmv));
  m.impl("mv", TORCH_FN(mv));
  m.impl("dot", TORCH_FN(dot));
  m.impl("addr.out", TORCH_FN(addr_out));
}
