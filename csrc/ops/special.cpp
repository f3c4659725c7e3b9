// Kernel glue for the special-function family (src/ops/special.c,
// special_orthopoly.c, special_igamma.c). Most overloads are rows of the
// boxed table below (boxed.h): lgamma, digamma, polygamma, special_zeta,
// nextafter, special_xlog1py, special_entr, i0, special_i0e/i1/i1e, sinc,
// special_ndtri, special_erfcx, special_log_ndtr, the Bessel functions,
// special_airy_ai (float64; other dtypes run CPU's kernel, counted), the
// orthogonal polynomials and igamma/igammac, with their in-place and out= forms where PyTorch
// has them. Output sizes and dtype (and PyTorch's own argument errors) come
// from the meta functions; half types compute in float32 as CPU's kernels
// do, and where CPU refuses half types so do we. Written out here: the
// forms the table cannot express (polygamma_, whose arguments come in
// another order; mvlgamma.out) and logit (an optional eps). igamma and
// igammac run CPU's kernel (counted) for other than floating types.
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "boxed.h"
#include "common.h"
#include "dtype_check.h"
#include "glue.h"

namespace {
namespace tp = torch_pjrt;
using at::Tensor;

// A special function's empty result runs no program.
constexpr uint32_t kSF = tp::kForms | tp::kSkipEmpty;
constexpr uint32_t kSO = tp::kOut | tp::kSkipEmpty;
// Half types refuse with CPU's kernel name (kNoHalf); the polynomials'
// attribute is their index in src/ops/special_orthopoly.c.
#define TPJ_HALFLESS(fn, kernel) TPJ_BOXED(fn, kSO | tp::kNoHalf, kernel, -1)
#define TPJ_POLY(p, kind) TPJ_BOXED(special_##p, kSO | tp::kNoHalf, #p "_cpu", kind)

const tp::BoxedOp kSpecialOps[] = {
    TPJ_BOXED(lgamma, kSF, nullptr, -1),
    TPJ_BOXED(digamma, kSF, nullptr, -1),
    TPJ_BOXED(i0, kSF, nullptr, -1),
    TPJ_BOXED(sinc, kSF | tp::kComplexOnCpu, nullptr, -1),
    TPJ_BOXED(special_entr, kSO, nullptr, -1),
    TPJ_BOXED(special_i0e, kSO, nullptr, -1),
    TPJ_BOXED(special_i1, kSO, nullptr, -1),
    TPJ_BOXED(special_i1e, kSO, nullptr, -1),
    // only float64 is native: below x = -1e5 or so, float32's Ai depends on
    // the last bit of its huge phase 2/3 (-x)^(3/2), and the fused XLA
    // program does not reproduce CPU's bits there
    TPJ_BOXED(special_airy_ai, kSO | tp::kDoubleOnly, nullptr, -1),
    TPJ_BOXED(polygamma, kSO, nullptr, -1),  // n < 0: the meta function's error
    TPJ_BOXED(special_xlog1py, kSO, nullptr, -1),
    // steps to the neighbour in the output's own dtype (bf16's, not float32's)
    TPJ_BOXED(nextafter, kSF | tp::kExactCompute | tp::kFloatingOnly, "nextafter_cpu", -1),
    TPJ_HALFLESS(special_ndtri, "ndtri_cpu"),
    TPJ_HALFLESS(special_erfcx, "erfcx_cpu"),
    TPJ_HALFLESS(special_log_ndtr, "log_ndtr_cpu"),
    TPJ_HALFLESS(special_bessel_j0, "bessel_j0_cpu"),
    TPJ_HALFLESS(special_bessel_j1, "bessel_j1_cpu"),
    TPJ_HALFLESS(special_bessel_y0, "bessel_y0_cpu"),
    TPJ_HALFLESS(special_bessel_y1, "bessel_y1_cpu"),
    TPJ_HALFLESS(special_modified_bessel_i0, "modified_bessel_i0_cpu"),
    TPJ_HALFLESS(special_modified_bessel_i1, "modified_bessel_i1_cpu"),
    TPJ_HALFLESS(special_modified_bessel_k0, "modified_bessel_k0_cpu"),
    TPJ_HALFLESS(special_modified_bessel_k1, "modified_bessel_k1_cpu"),
    TPJ_HALFLESS(special_scaled_modified_bessel_k0, "scaled_modified_bessel_k0_cpu"),
    TPJ_HALFLESS(special_scaled_modified_bessel_k1, "scaled_modified_bessel_k1_cpu"),
    TPJ_HALFLESS(special_spherical_bessel_j0, "spherical_bessel_j0_cpu"),
    TPJ_HALFLESS(special_zeta, "zeta_cpu"),
    TPJ_POLY(chebyshev_polynomial_t, 0),
    TPJ_POLY(chebyshev_polynomial_u, 1),
    TPJ_POLY(chebyshev_polynomial_v, 2),
    TPJ_POLY(chebyshev_polynomial_w, 3),
    TPJ_POLY(shifted_chebyshev_polynomial_t, 4),
    TPJ_POLY(shifted_chebyshev_polynomial_u, 5),
    TPJ_POLY(shifted_chebyshev_polynomial_v, 6),
    TPJ_POLY(shifted_chebyshev_polynomial_w, 7),
    TPJ_POLY(hermite_polynomial_h, 8),
    TPJ_POLY(hermite_polynomial_he, 9),
    TPJ_POLY(laguerre_polynomial_l, 10),
    TPJ_POLY(legendre_polynomial_p, 11),
    // the attribute: 1 for the upper function
    {"igamma", "aten::igamma", (kSF & ~tp::kOut) | tp::kNonFloatingOnCpu, nullptr, 0,
     TPJ_META(igamma)},
    {"igammac", "aten::igammac", (kSF & ~tp::kOut) | tp::kNonFloatingOnCpu, nullptr, 1,
     TPJ_META(igammac)},
};

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  tp::register_boxed(m, kSpecialOps);
  m.impl("polygamma_", [](Tensor& a, int64_t n) -> Tensor& {
    tp::check_no_overlap(a, {});
    tp::assign_result(a, at::polygamma(n, a), "aten::polygamma_");
    return a;
  });
  m.impl("mvlgamma.out", [](const Tensor& a, int64_t p, Tensor& o) -> Tensor& {
    tp::check_no_overlap(o, {&a});
    return tp::out_result(o, at::mvlgamma(a, p), "aten::mvlgamma");
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
