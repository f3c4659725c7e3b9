// log_normal_, cauchy_ and geometric_ on tpu: each is a transform of a
// native draw (normal_ or uniform_, from the same per-device generator, so
// torch.manual_seed reproduces them) by native elementwise ops. Composite
// glue, like PyTorch's CompositeImplicit kernels: no op semantics of its own
// beyond the inverse-CDF formula, and no new lowering. Argument checks and
// their messages are CPU's.
#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cmath>

namespace {

using at::Tensor;
using Gen = std::optional<at::Generator>;

// The dtype the draw is made in: float32 for the half types (as CPU's
// kernels compute in float), the tensor's own otherwise.
at::ScalarType draw_dtype(at::ScalarType t) {
  return (t == at::kHalf || t == at::kBFloat16) ? at::kFloat : t;
}

Tensor& log_normal_tpu(Tensor& self, double mean, double std, Gen gen) {
  TORCH_CHECK(std > 0.0, "log_normal_ expects std > 0.0, but found std=", std);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "\"log_normal_cpu\" not "
                              "implemented for '", self.scalar_type(), "'");
  c10::DeviceGuard guard(self.device());
  Tensor z = at::empty(self.sizes(), self.options().dtype(draw_dtype(self.scalar_type())));
  z.normal_(mean, std, gen);
  self.copy_(z.exp_());
  return self;
}

Tensor& cauchy_tpu(Tensor& self, double median, double sigma, Gen gen) {
  TORCH_CHECK(sigma > 0.0, "cauchy_ expects sigma > 0.0, but found sigma=", sigma);
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "Cauchy distribution is a continuous probability distribution. dtype must be a "
              "floating point but you specified ", self.scalar_type());
  c10::DeviceGuard guard(self.device());
  // inverse CDF: median + sigma * tan(pi * (u - 1/2)), u uniform in [0, 1)
  Tensor u = at::empty(self.sizes(), self.options().dtype(draw_dtype(self.scalar_type())));
  u.uniform_(0.0, 1.0, gen);
  self.copy_(u.sub_(0.5).mul_(M_PI).tan_().mul_(sigma).add_(median));
  return self;
}

Tensor& geometric_tpu(Tensor& self, double p, Gen gen) {
  TORCH_CHECK(0 < p && p < 1, "geometric_ expects p to be in (0, 1), but got p=", p);
  TORCH_CHECK(self.scalar_type() != at::kBool && !self.is_complex(),
              "\"geometric_cpu\" not implemented for '", self.scalar_type(), "'");
  c10::DeviceGuard guard(self.device());
  // number of Bernoulli(p) trials to the first success: ceil(log(u) / log(1 - p)),
  // u uniform in (0, 1) -- 1 - uniform[0, 1) keeps log finite
  at::ScalarType d = self.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  Tensor u = at::empty(self.sizes(), self.options().dtype(d));
  u.uniform_(0.0, 1.0, gen);
  Tensor k = u.neg_().add_(1.0).log_().div_(std::log1p(-p)).ceil_().clamp_min_(1.0);
  self.copy_(k);
  return self;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("log_normal_", TORCH_FN(log_normal_tpu));
  m.impl("cauchy_", TORCH_FN(cauchy_tpu));
  m.impl("geometric_", TORCH_FN(geometric_tpu));
}
