// Kernel glue for the special-function family. Most overloads are
// descriptor rows in src/ops/special.c, served by the generic boxed kernel
// (boxed.cpp). Written out here: the forms a row cannot express (polygamma_,
// whose arguments come in another order; mvlgamma.out) and logit (an
// optional eps).
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "ops/write.h"
#include "tensor.h"
#include "dtype_check.h"
#include "glue.h"

namespace {
namespace tp = torch_pjrt;
using at::Tensor;
}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
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
