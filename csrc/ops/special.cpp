// Kernel glue for the special-function family (src/ops/special.c,
// special_orthopoly.c, special_igamma.c): lgamma, digamma, polygamma,
// mvlgamma.out, special_zeta, nextafter, special_xlog1py, special_entr, i0,
// special_i0e/i1/i1e, sinc, logit, special_ndtri, special_erfcx,
// special_log_ndtr, the Bessel functions (special_bessel_*,
// special_modified_bessel_*, scaled_modified_bessel_k*,
// spherical_bessel_j0), special_airy_ai (float64) and the orthogonal
// polynomials, each with its in-place and out= forms where PyTorch has them.
// Output sizes and dtype (and PyTorch's own argument errors) come from
// running the op on meta tensors; half inputs compute in float32 as CPU's
// kernels do, and where CPU refuses half types so do we. Complex sinc and
// float32 airy_ai run CPU's kernel (counted). igamma / igammac: functional
// and in-place, for floating results (half types compute in float32, as CPU
// does).
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <functional>
#include <vector>

#include "common.h"
#include "layout.h"
#include "forms.h"
#include "glue.h"
#include <ATen/MetaFunctions.h>
#include <cmath>
#include <cstring>
#include "dtype_check.h"
#include <ATen/ATen.h>
#include "one_or_cpu.h"

namespace torch_pjrt {
namespace {

using at::Scalar;
using at::ScalarType;
using at::Tensor;

// A meta stand-in for t. A CPU 0-d operand (a wrapped Python number) stays
// as it is: meta kernels take CPU scalars, and it stays weak in promotion.
Tensor meta_like(const Tensor& t) {
  if (t.device().is_cpu() && t.dim() == 0) return t;
  return to_meta(t);
}

// Runs table op `op` elementwise over ts (tpu tensors or CPU 0-d scalars);
// `meta` is the op's result on meta tensors. attrs: {compute dtype, extra...};
// the compute dtype is float32 for half outputs unless `exact_dtype`.
Tensor run_special(const char* op, const Tensor& meta, std::initializer_list<const Tensor*> ts,
                   std::vector<int64_t> extra = {}, bool exact_dtype = false) {
  for (const Tensor* t : ts) check_supported(*t, op);
  c10::Device dev = common_device(op, ts);
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(meta.sizes(), meta.options().device(dev));
  if (out.numel() == 0) return out;
  OpArgs a;
  for (const Tensor* t : ts) add_operand(a, *t, dev.index());
  ScalarType t = meta.scalar_type();
  std::vector<int64_t> attrs{to_tpj_dtype(exact_dtype ? t : accumulator(t))};
  attrs.insert(attrs.end(), extra.begin(), extra.end());
  run_pointwise(op, dev.index(), a, attrs, {out});
  return out;
}

// CPU's kernels for these take float32 and float64 only: its error for half.
const Tensor& no_half(const Tensor& meta, const char* kernel) {
  ScalarType t = meta.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(t != at::kHalf && t != at::kBFloat16, "\"", kernel,
                              "\" not implemented for '", t, "'");
  return meta;
}

// The CPU kernel for dtypes the lowerings do not take (complex): counted.
Tensor on_cpu(const char* op, const Tensor& x, const std::function<Tensor(const Tensor&)>& fn) {
  dtype_fallback(op, x.scalar_type());
  return fn(x.cpu()).to(x.device());
}

// A unary op computed as aten_fn on meta tensors gives it; half_kernel names
// CPU's kernel where CPU refuses half types (its error is raised).
#define TPJ_SPECIAL_FN(name, aten_fn, half_kernel)                                     \
  Tensor name(const Tensor& x) {                                                        \
    Tensor meta = at::aten_fn(meta_like(x));                                            \
    if (half_kernel != nullptr) no_half(meta, half_kernel);                             \
    return run_special("aten::" #aten_fn, meta, {&x});                                  \
  }

TPJ_SPECIAL_FN(lgamma, lgamma, nullptr)
TPJ_SPECIAL_FN(digamma, digamma, nullptr)
TPJ_SPECIAL_FN(entr, special_entr, nullptr)
TPJ_SPECIAL_FN(i0, i0, nullptr)
TPJ_SPECIAL_FN(i0e, special_i0e, nullptr)
TPJ_SPECIAL_FN(i1, special_i1, nullptr)
TPJ_SPECIAL_FN(i1e, special_i1e, nullptr)
TPJ_SPECIAL_FN(ndtri, special_ndtri, "ndtri_cpu")
TPJ_SPECIAL_FN(erfcx, special_erfcx, "erfcx_cpu")
TPJ_SPECIAL_FN(log_ndtr, special_log_ndtr, "log_ndtr_cpu")
TPJ_SPECIAL_FN(bessel_j0, special_bessel_j0, "bessel_j0_cpu")
TPJ_SPECIAL_FN(bessel_j1, special_bessel_j1, "bessel_j1_cpu")
TPJ_SPECIAL_FN(bessel_y0, special_bessel_y0, "bessel_y0_cpu")
TPJ_SPECIAL_FN(bessel_y1, special_bessel_y1, "bessel_y1_cpu")
TPJ_SPECIAL_FN(mbi0, special_modified_bessel_i0, "modified_bessel_i0_cpu")
TPJ_SPECIAL_FN(mbi1, special_modified_bessel_i1, "modified_bessel_i1_cpu")
TPJ_SPECIAL_FN(modified_bessel_k0, special_modified_bessel_k0, "modified_bessel_k0_cpu")
TPJ_SPECIAL_FN(modified_bessel_k1, special_modified_bessel_k1, "modified_bessel_k1_cpu")
TPJ_SPECIAL_FN(scaled_modified_bessel_k0, special_scaled_modified_bessel_k0,
               "scaled_modified_bessel_k0_cpu")
TPJ_SPECIAL_FN(scaled_modified_bessel_k1, special_scaled_modified_bessel_k1,
               "scaled_modified_bessel_k1_cpu")
TPJ_SPECIAL_FN(spherical_bessel_j0, special_spherical_bessel_j0, "spherical_bessel_j0_cpu")

Tensor polygamma(int64_t n, const Tensor& x) {
  Tensor meta = at::polygamma(n, meta_like(x));  // raises CPU's error for n < 0
  return run_special("aten::polygamma", meta, {&x}, {n});
}
Tensor zeta(const Tensor& x, const Tensor& q) {
  Tensor meta = no_half(at::special_zeta(meta_like(x), meta_like(q)), "zeta_cpu");
  return run_special("aten::special_zeta", meta, {&x, &q});
}
Tensor nextafter(const Tensor& a, const Tensor& b) {
  Tensor meta = at::nextafter(meta_like(a), meta_like(b));
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(meta.scalar_type()),
                              "\"nextafter_cpu\" not implemented for '", meta.scalar_type(), "'");
  // steps to the neighbour in the output's own dtype (bf16's, not float32's)
  return run_special("aten::nextafter", meta, {&a, &b}, {}, /*exact_dtype=*/true);
}
Tensor xlog1py(const Tensor& x, const Tensor& y) {
  return run_special("aten::special_xlog1py", at::special_xlog1py(meta_like(x), meta_like(y)),
                     {&x, &y});
}
// The orthogonal polynomials of x and a degree tensor n: attrs[1] is the
// polynomial, in src/ops/special_orthopoly.c's order.
Tensor orthopoly(const char* op, const char* kernel, int64_t kind, const Tensor& meta,
                 const Tensor& x, const Tensor& n) {
  no_half(meta, kernel);
  return run_special(op, meta, {&x, &n}, {kind});
}

#define TPJ_POLY_FN(name, kind)                                                         \
  Tensor name(const Tensor& x, const Tensor& n) {                                       \
    return orthopoly("aten::special_" #name, #name "_cpu", kind,                        \
                     at::special_##name(meta_like(x), meta_like(n)), x, n);              \
  }

TPJ_POLY_FN(chebyshev_polynomial_t, 0)
TPJ_POLY_FN(chebyshev_polynomial_u, 1)
TPJ_POLY_FN(chebyshev_polynomial_v, 2)
TPJ_POLY_FN(chebyshev_polynomial_w, 3)
TPJ_POLY_FN(shifted_chebyshev_polynomial_t, 4)
TPJ_POLY_FN(shifted_chebyshev_polynomial_u, 5)
TPJ_POLY_FN(shifted_chebyshev_polynomial_v, 6)
TPJ_POLY_FN(shifted_chebyshev_polynomial_w, 7)
TPJ_POLY_FN(hermite_polynomial_h, 8)
TPJ_POLY_FN(hermite_polynomial_he, 9)
TPJ_POLY_FN(laguerre_polynomial_l, 10)
TPJ_POLY_FN(legendre_polynomial_p, 11)

// Only float64 is native: below x = -1e5 or so, float32's Ai depends on the
// last bit of its huge phase 2/3 (-x)^(3/2), and the fused XLA program does
// not reproduce CPU's bits there.
Tensor airy_ai(const Tensor& x) {
  Tensor meta = at::special_airy_ai(meta_like(x));
  if (meta.scalar_type() != at::kDouble)
    return on_cpu("aten::special_airy_ai", x,
                  [](const Tensor& c) { return at::special_airy_ai(c); });
  return run_special("aten::special_airy_ai", meta, {&x});
}
Tensor sinc(const Tensor& x) {
  if (x.is_complex()) return on_cpu("aten::sinc", x, [](const Tensor& c) { return at::sinc(c); });
  return run_special("aten::sinc", at::sinc(meta_like(x)), {&x});
}

}  // namespace
}  // namespace torch_pjrt

namespace {
namespace tp = torch_pjrt;
using at::Scalar;
using at::Tensor;

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  TPJ_FORMS_UNARY("lgamma", tp::lgamma)
  TPJ_FORMS_UNARY("digamma", tp::digamma)
  TPJ_FORMS_UNARY("i0", tp::i0)
  TPJ_FORMS_UNARY("sinc", tp::sinc)
  TPJ_FORMS_UNARY_OUT("special_entr", tp::entr)
  m.impl("special_entr", TORCH_FN(tp::entr));
  TPJ_FORMS_UNARY_OUT("special_i0e", tp::i0e)
  m.impl("special_i0e", TORCH_FN(tp::i0e));
  TPJ_FORMS_UNARY_OUT("special_i1", tp::i1)
  m.impl("special_i1", TORCH_FN(tp::i1));
  TPJ_FORMS_UNARY_OUT("special_modified_bessel_i0", tp::mbi0)
  m.impl("special_modified_bessel_i0", TORCH_FN(tp::mbi0));
  TPJ_FORMS_UNARY_OUT("special_modified_bessel_i1", tp::mbi1)
  m.impl("special_modified_bessel_i1", TORCH_FN(tp::mbi1));
  TPJ_FORMS_UNARY_OUT("special_ndtri", tp::ndtri)
  m.impl("special_ndtri", TORCH_FN(tp::ndtri));
  TPJ_FORMS_UNARY_OUT("special_bessel_j0", tp::bessel_j0)
  m.impl("special_bessel_j0", TORCH_FN(tp::bessel_j0));
  TPJ_FORMS_UNARY_OUT("special_bessel_j1", tp::bessel_j1)
  m.impl("special_bessel_j1", TORCH_FN(tp::bessel_j1));
  TPJ_FORMS_UNARY_OUT("special_bessel_y0", tp::bessel_y0)
  m.impl("special_bessel_y0", TORCH_FN(tp::bessel_y0));
  TPJ_FORMS_UNARY_OUT("special_bessel_y1", tp::bessel_y1)
  m.impl("special_bessel_y1", TORCH_FN(tp::bessel_y1));
  TPJ_FORMS_UNARY_OUT("special_spherical_bessel_j0", tp::spherical_bessel_j0)
  m.impl("special_spherical_bessel_j0", TORCH_FN(tp::spherical_bessel_j0));
  TPJ_FORMS_UNARY_OUT("special_modified_bessel_k0", tp::modified_bessel_k0)
  m.impl("special_modified_bessel_k0", TORCH_FN(tp::modified_bessel_k0));
  TPJ_FORMS_UNARY_OUT("special_modified_bessel_k1", tp::modified_bessel_k1)
  m.impl("special_modified_bessel_k1", TORCH_FN(tp::modified_bessel_k1));
  TPJ_FORMS_UNARY_OUT("special_scaled_modified_bessel_k0", tp::scaled_modified_bessel_k0)
  m.impl("special_scaled_modified_bessel_k0", TORCH_FN(tp::scaled_modified_bessel_k0));
  TPJ_FORMS_UNARY_OUT("special_scaled_modified_bessel_k1", tp::scaled_modified_bessel_k1)
  m.impl("special_scaled_modified_bessel_k1", TORCH_FN(tp::scaled_modified_bessel_k1));
  TPJ_FORMS_UNARY_OUT("special_airy_ai", tp::airy_ai)
  m.impl("special_airy_ai", TORCH_FN(tp::airy_ai));
  TPJ_FORMS_UNARY_OUT("special_erfcx", tp::erfcx)
  m.impl("special_erfcx", TORCH_FN(tp::erfcx));
  TPJ_FORMS_UNARY_OUT("special_log_ndtr", tp::log_ndtr)
  m.impl("special_log_ndtr", TORCH_FN(tp::log_ndtr));
  TPJ_FORMS_UNARY_OUT("special_i1e", tp::i1e)
  m.impl("special_i1e", TORCH_FN(tp::i1e));
  m.impl("polygamma", TORCH_FN(tp::polygamma));
  m.impl("polygamma.out", [](int64_t n, const Tensor& a, Tensor& o) -> Tensor& {
    tp::check_no_overlap(o, {&a});
    return tp::out_result(o, tp::polygamma(n, a), "aten::polygamma");
  });
  m.impl("polygamma_", [](Tensor& a, int64_t n) -> Tensor& {
    tp::check_no_overlap(a, {});
    tp::assign_result(a, tp::polygamma(n, a), "aten::polygamma_");
    return a;
  });
  m.impl("mvlgamma.out", [](const Tensor& a, int64_t p, Tensor& o) -> Tensor& {
    tp::check_no_overlap(o, {&a});
    return tp::out_result(o, at::mvlgamma(a, p), "aten::mvlgamma");
  });
  TPJ_FORMS_BINARY_NO_INPLACE("special_chebyshev_polynomial_t", tp::chebyshev_polynomial_t)
  TPJ_FORMS_BINARY_NO_INPLACE("special_chebyshev_polynomial_u", tp::chebyshev_polynomial_u)
  TPJ_FORMS_BINARY_NO_INPLACE("special_chebyshev_polynomial_v", tp::chebyshev_polynomial_v)
  TPJ_FORMS_BINARY_NO_INPLACE("special_chebyshev_polynomial_w", tp::chebyshev_polynomial_w)
  TPJ_FORMS_BINARY_NO_INPLACE("special_shifted_chebyshev_polynomial_t", tp::shifted_chebyshev_polynomial_t)
  TPJ_FORMS_BINARY_NO_INPLACE("special_shifted_chebyshev_polynomial_u", tp::shifted_chebyshev_polynomial_u)
  TPJ_FORMS_BINARY_NO_INPLACE("special_shifted_chebyshev_polynomial_v", tp::shifted_chebyshev_polynomial_v)
  TPJ_FORMS_BINARY_NO_INPLACE("special_shifted_chebyshev_polynomial_w", tp::shifted_chebyshev_polynomial_w)
  TPJ_FORMS_BINARY_NO_INPLACE("special_hermite_polynomial_h", tp::hermite_polynomial_h)
  TPJ_FORMS_BINARY_NO_INPLACE("special_hermite_polynomial_he", tp::hermite_polynomial_he)
  TPJ_FORMS_BINARY_NO_INPLACE("special_laguerre_polynomial_l", tp::laguerre_polynomial_l)
  TPJ_FORMS_BINARY_NO_INPLACE("special_legendre_polynomial_p", tp::legendre_polynomial_p)
  TPJ_FORMS_BINARY_NO_INPLACE("special_zeta", tp::zeta)
  TPJ_FORMS_BINARY_NO_INPLACE("special_xlog1py", tp::xlog1py)
  TPJ_FORMS_BINARY_NO_INPLACE("nextafter", tp::nextafter)
  m.impl("nextafter_", [](Tensor& a, const Tensor& b) -> Tensor& {
    tp::check_no_overlap(a, {&b});
    tp::assign_result(a, tp::nextafter(a, b), "aten::nextafter_");
    return a;
  });
}

namespace torch_pjrt {
namespace {

using at::Scalar;
using at::Tensor;


// ---- pointwise ------------------------------------------------------------------

Tensor logit(const Tensor& x, std::optional<double> eps) {
  check_cpu_dtype(!c10::isComplexType(x.scalar_type()), x.scalar_type(), "logit_cpu");
  Tensor m = at::logit(to_meta(x), eps);
  bool he = eps && *eps >= 0;  // CPU: a negative eps means none
  // CPU computes half logit in half (each step rounded), bfloat16 in float
  at::ScalarType cd = m.scalar_type() == at::kHalf ? at::kHalf : accumulator(m.scalar_type());
  std::vector<int64_t> attrs{to_tpj_dtype(cd), he};
  if (he) return run_meta("aten::logit", {&x}, m, attrs, {*eps}, m.scalar_type(), true);
  return run_meta("aten::logit", {&x}, m, attrs, {}, at::kFloat, true);
}

Tensor logit_backward(const Tensor& g, const Tensor& x, std::optional<double> eps) {
  Tensor m = at::meta::logit_backward(to_meta(g), to_meta(x), eps);
  bool he = eps && *eps >= 0;
  std::vector<int64_t> attrs{acc_dtype(m.scalar_type()), he};
  if (he) return run_meta("aten::logit_backward", {&g, &x}, m, attrs, {*eps}, m.scalar_type(), true);
  return run_meta("aten::logit_backward", {&g, &x}, m, attrs, {}, at::kFloat, true);
}
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  using at::Tensor;


  m.impl("logit", TORCH_FN(torch_pjrt::logit));
  m.impl("logit_", [](Tensor& x, std::optional<double> eps) -> Tensor& {
    assign_result(x, torch_pjrt::logit(x, eps), "aten::logit_");
    return x;
  });
  m.impl("logit_backward", TORCH_FN(torch_pjrt::logit_backward));
}

namespace torch_pjrt {
namespace {

using at::Tensor;
using D = std::optional<double>;
using L = at::IntArrayRef;

Tensor igamma_impl(const Tensor& a, const Tensor& x, bool upper) {
  const char* op = upper ? "aten::igammac" : "aten::igamma";
  c10::Device dev = common_device(op, {&a, &x});
  Tensor m = upper ? at::meta::igammac(to_meta(a), to_meta(x)) : at::meta::igamma(to_meta(a), to_meta(x));
  at::ScalarType t = m.scalar_type();
  // The meta function promotes integers to float, but CPU's kernel runs in
  // the inputs' common dtype and refuses integers (with its own error).
  if (!c10::isFloatingType(t) || !c10::isFloatingType(at::result_type(a, x))) {
    Tensor r = upper ? at::igammac(a.cpu(), x.cpu()) : at::igamma(a.cpu(), x.cpu());
    dtype_fallback(op, t);
    return r.to(dev);
  }
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(m.sizes(), m.options().device(dev));
  if (out.numel() == 0) return out;
  OpArgs args;
  add_operand(args, a, dev.index());
  add_operand(args, x, dev.index());
  run_pointwise(op, dev.index(), args, {to_tpj_dtype(accumulator(t)), upper ? 1 : 0}, {out});
  return out;
}

Tensor igamma_tpu(const Tensor& a, const Tensor& x) { return igamma_impl(a, x, false); }
Tensor igammac_tpu(const Tensor& a, const Tensor& x) { return igamma_impl(a, x, true); }
Tensor& igamma_inplace(Tensor& self, const Tensor& x) {
  assign_result(self, igamma_impl(self, x, false), "aten::igamma_");
  return self;
}
Tensor& igammac_inplace(Tensor& self, const Tensor& x) {
  assign_result(self, igamma_impl(self, x, true), "aten::igammac_");
  return self;
}
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  m.impl("igamma", TORCH_FN(igamma_tpu));
  m.impl("igammac", TORCH_FN(igammac_tpu));
  m.impl("igamma_", TORCH_FN(igamma_inplace));
  m.impl("igammac_", TORCH_FN(igammac_inplace));
}
