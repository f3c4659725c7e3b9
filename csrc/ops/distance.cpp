// Kernel glue for the p-norm distances (src/ops/distance.c):
// _cdist_forward/_cdist_backward (torch.cdist) and _pdist_forward/
// _pdist_backward (F.pdist). Shapes and argument errors come from the meta
// functions; CPU's kernel raises CPU's error where the meta function does
// not check.
#include <ATen/MetaFunctions.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cmath>
#include <cstring>

#include "tensor.h"
#include "dtype_check.h"
#include "glue.h"

extern "C" {
#include "ops/attrs.h"
}

namespace torch_pjrt {
namespace {

using at::Scalar;
using at::Tensor;

// ---- distances ------------------------------------------------------------------

// The norm kind of src/ops/distance.c for p (CPU's dispatch on p).
tpj_dist_kind_t dist_kind(double p) {
  if (p == 0) return TPJ_DIST_ZERO;
  if (p == 1) return TPJ_DIST_ONE;
  if (p == 2) return TPJ_DIST_TWO;
  if (std::isinf(p)) return TPJ_DIST_INF;
  return TPJ_DIST_P;
}

// CPU's kernels take float and double only (and say so this way).
void check_dist_dtype(const Tensor& x, const char* name) {
  at::ScalarType t = x.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(t == at::kFloat || t == at::kDouble, "\"", name,
                              "\" not implemented for '", t, "'");
}

Tensor run_dist(const char* op, std::vector<Tensor> ts, const Tensor& meta, double p) {
  for (const Tensor& t : ts) check_supported(t, op);
  c10::Device dev = ts[0].device();
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(meta.sizes(), meta.options().device(dev));
  OpArgs a;
  for (const Tensor& t : ts) a.tensor(on_device(t, dev));
  tpj_attrs_dist_t attrs{};
  attrs.compute = to_tpj_dtype(ts[0].scalar_type());
  attrs.kind = dist_kind(p);
  if (attrs.kind == TPJ_DIST_P) a.scalar(p, ts[0].scalar_type(), dev.index());
  run_op(op, dev.index(), a, attrs_of(attrs), {out});
  return out;
}

// x1 and x2 with their batch dims broadcast to out's (views).
std::vector<Tensor> batch_expanded(const Tensor& x1, const Tensor& x2, const Tensor& out) {
  auto batch = out.sizes().slice(0, out.dim() - 2);
  auto with = [&](const Tensor& x) {
    std::vector<int64_t> s(batch.begin(), batch.end());
    s.push_back(x.size(-2));
    s.push_back(x.size(-1));
    return x.expand(s);
  };
  return {with(x1), with(x2)};
}

Tensor cdist_forward(const Tensor& x1, const Tensor& x2, double p, std::optional<int64_t> mode) {
  check_dist_dtype(x1, "cdist");
  Tensor m = at::_cdist_forward(to_meta(x1), to_meta(x2), p, mode);
  return run_dist("aten::_cdist_forward", batch_expanded(x1, x2, m), m, p);
}

Tensor cdist_backward(const Tensor& g, const Tensor& x1, const Tensor& x2, double p,
                      const Tensor& dist) {
  check_dist_dtype(x1, "cdist_backward");
  Tensor m = at::_cdist_backward(to_meta(g), to_meta(x1), to_meta(x2), p, to_meta(dist));
  // nothing to sum (an empty batch, or no rows): CPU's zeros of x1's shape
  if (g.numel() == 0 || x1.numel() == 0) return at::zeros(m.sizes(), m.options().device(x1.device()));
  auto xs = batch_expanded(x1, x2, g);
  return run_dist("aten::_cdist_backward", {g, xs[0], xs[1], dist}, m, p);
}

Tensor pdist_forward(const Tensor& x, double p) {
  check_dist_dtype(x, "pdist");
  Tensor m = at::_pdist_forward(to_meta(x), p);
  return run_dist("aten::_pdist_forward", {x}, m, p);
}

Tensor pdist_backward(const Tensor& g, const Tensor& x, double p, const Tensor& dist) {
  check_dist_dtype(x, "pdist_backward");
  Tensor m = at::_pdist_backward(to_meta(g), to_meta(x), p, to_meta(dist));
  return run_dist("aten::_pdist_backward", {g, x, dist}, m, p);
}
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  m.impl("_cdist_forward", TORCH_FN(torch_pjrt::cdist_forward));
  m.impl("_cdist_backward", TORCH_FN(torch_pjrt::cdist_backward));
  m.impl("_pdist_forward", TORCH_FN(torch_pjrt::pdist_forward));
  m.impl("_pdist_backward", TORCH_FN(torch_pjrt::pdist_backward));
}
