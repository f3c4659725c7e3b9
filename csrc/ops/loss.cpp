// Kernel glue for the losses (src/ops/loss.c, loss_pointwise.c,
// loss_margin.c): nll_loss and nll_loss2d, mse_loss, smooth_l1_loss,
// huber_loss, binary_cross_entropy, multi_margin_loss and
// multilabel_margin_loss, forward and backward. Targets are checked on the
// host first ("Target N is out of bounds"): XLA would give a silent wrong
// answer where CPU raises. Shapes, dtypes and argument checks come from the
// meta functions.
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/MetaFunctions.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Gelu.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>

#include "graph.h"
#include "ops/copy.h"
#include "tensor.h"
#include "dtype_check.h"
#include "glue.h"
#include "inplace.h"
#include "storage_dtypes.h"

extern "C" {
#include "ops/attrs.h"
}

namespace torch_pjrt {

namespace {

using at::Scalar;
using at::Tensor;

// ---- nll_loss2d ---------------------------------------------------------------

// Every target is a class or ignore_index, as CPU's kernel insists (XLA would
// pick nothing for an out-of-range class: a silent wrong loss).
void check_classes(const Tensor& target, int64_t classes, int64_t ignore_index) {
  if (tracing() && !target.device().is_cpu()) return;  // a compiled graph cannot wait
  Tensor h = (target.device().is_cpu() ? target : to_host(target)).reshape(-1).to(at::kLong);
  h = h.masked_select(h != ignore_index);
  if (h.numel() == 0) return;
  int64_t lo = h.min().item<int64_t>(), hi = h.max().item<int64_t>();
  int64_t bad = lo < 0 ? lo : hi;
  TORCH_CHECK_INDEX(lo >= 0 && hi < classes, "Target ", bad, " is out of bounds.");
}

// CPU's checks and wording (the meta function words them differently).
void check_nll2d(const Tensor& self, const Tensor& target) {
  TORCH_CHECK(target.dim() == 3, "only batches of spatial targets supported (3D tensors) but got "
              "targets of dimension: ", target.dim());
  TORCH_CHECK(self.dim() == 4, "only batches of spatial inputs supported (4D tensors), but got "
              "input of dimension: ", self.dim());
  TORCH_CHECK(self.size(0) == target.size(0) && self.size(2) == target.size(1) &&
              self.size(3) == target.size(2), "input and target batch or spatial sizes don't "
              "match: target ", target.sizes(), ", input ", self.sizes());
}

tpj_attrs_nll_loss_t nll_attrs(int64_t compute, int64_t reduction, int64_t ignore_index,
                               bool has_weight) {
  tpj_attrs_nll_loss_t attrs{};
  attrs.compute = compute;
  attrs.reduction = reduction;
  attrs.ignore_index = ignore_index;
  attrs.has_weight = has_weight;
  return attrs;
}

std::tuple<Tensor, Tensor> nll_loss2d_forward(const Tensor& self, const Tensor& target,
                                              const std::optional<Tensor>& weight,
                                              int64_t reduction, c10::SymInt ignore_index) {
  const char* op = "aten::nll_loss2d_forward";
  int64_t ig = ignore_index.expect_int();
  bool hw = weight && weight->defined();
  check_nll2d(self, target);
  auto [m0, m1] = at::nll_loss2d_forward_symint(to_meta(self), to_meta(target),
                                                hw ? to_meta(*weight) : Tensor(), reduction, ig);
  check_supported(self, op);
  check_classes(target, self.size(1), ig);
  c10::Device dev = self.device();
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(m0.sizes(), m0.options().device(dev));
  Tensor total = at::empty(m1.sizes(), m1.options().device(dev));
  OpArgs a;
  a.tensor(self);
  a.tensor(on_device(target, dev));
  if (hw) a.tensor(on_device(*weight, dev));
  run_op(op, dev.index(), a, attrs_of(nll_attrs(acc_dtype(self.scalar_type()), reduction, ig, hw)),
         {out, total});
  return {out, total};
}

Tensor nll_loss2d_backward(const Tensor& grad, const Tensor& self, const Tensor& target,
                           const std::optional<Tensor>& weight, int64_t reduction,
                           c10::SymInt ignore_index, const Tensor& total_weight) {
  const char* op = "aten::nll_loss2d_backward";
  int64_t ig = ignore_index.expect_int();
  bool hw = weight && weight->defined();
  Tensor m = at::nll_loss2d_backward_symint(to_meta(grad), to_meta(self), to_meta(target),
                                            hw ? to_meta(*weight) : Tensor(), reduction, ig,
                                            to_meta(total_weight));
  check_supported(self, op);
  c10::Device dev = self.device();
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(m.sizes(), m.options().device(dev));
  OpArgs a;
  a.tensor(on_device(grad, dev));
  a.tensor(self);
  a.tensor(on_device(target, dev));
  a.tensor(on_device(total_weight, dev));
  if (hw) a.tensor(on_device(*weight, dev));
  run_op(op, dev.index(), a, attrs_of(nll_attrs(acc_dtype(self.scalar_type()), reduction, ig, hw)),
         {out});
  return out;
}

// ---- margin losses --------------------------------------------------------------

// All targets within [lo, classes), read on the host (XLA would match no class).
void check_target_range(const Tensor& target, int64_t lo, int64_t classes, const char* msg) {
  if (tracing() && !target.device().is_cpu()) return;
  int64_t mn = 0, mx = 0;
  if (!index_bounds(target, &mn, &mx)) return;
  TORCH_CHECK(mn >= lo && mx < classes, msg);
}

void check_margin_dtype(const Tensor& x, const char* name) {
  at::ScalarType t = x.scalar_type();
  check_cpu_dtype(t == at::kFloat || t == at::kDouble, t, name);
  // CPU's shape check and wording (the meta function prints a torch.Size)
  int64_t nd = x.dim();
  TORCH_CHECK((nd == 2 && x.size(1) != 0) || (nd == 1 && x.size(0) != 0) || nd == 0,
              "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ",
              x.sizes());
}

// A meta function that refuses the call words its error differently from
// CPU (it prints a torch.Size): rerun the refused call on zero-filled CPU
// tensors of the same shapes so the error the user sees is CPU's own.
template <class Meta, class Cpu>
auto meta_or_cpu_error(Meta meta, Cpu cpu) -> decltype(meta()) {
  try {
    return meta();
  } catch (const std::exception&) {  // c10::Error, or a Python meta function's error
    cpu();  // throws CPU's error; where CPU accepts, the meta error stands
    throw;
  }
}

Tensor zeros_cpu(const Tensor& t) { return at::zeros(t.sizes(), t.options().device(at::kCPU)); }

// CPU gives a 0-d loss for a 1-D input without reduction (the meta function (1,)).
Tensor margin_loss_shape(const Tensor& x, int64_t reduction, const Tensor& meta) {
  return x.dim() <= 1 && reduction == 0 ? at::empty({}, meta.options()) : meta;
}

tpj_attrs_multi_margin_t multi_margin_attrs(at::ScalarType cd, int64_t reduction,
                                            const Scalar& p, bool has_weight) {
  tpj_attrs_multi_margin_t attrs{};
  attrs.compute = to_tpj_dtype(cd);
  attrs.reduction = reduction;
  attrs.p = p.toLong();
  attrs.has_weight = has_weight;
  return attrs;
}

tpj_attrs_multilabel_margin_t multilabel_attrs(const Tensor& x, int64_t reduction) {
  tpj_attrs_multilabel_margin_t attrs{};
  attrs.compute = acc_dtype(x.scalar_type());
  attrs.reduction = reduction;
  return attrs;
}

Tensor multi_margin(const Tensor& x, const Tensor& t, const Scalar& p, const Scalar& margin,
                    const std::optional<Tensor>& w, int64_t reduction) {
  const char* op = "aten::multi_margin_loss";
  bool hw = w && w->defined();
  check_margin_dtype(x, "multi_margin_loss_cpu_kernel");
  // CPU's unreduced result for one sample is shaped like the target: () for a
  // 0-d target, (1,) for a (1,) one (the meta function says (1,) for both).
  Tensor m = margin_loss_shape(x, t.dim() == 0 ? reduction : -1, meta_or_cpu_error(
      [&] { return at::multi_margin_loss(to_meta(x), to_meta(t), p, margin,
                                         hw ? to_meta(*w) : Tensor(), reduction); },
      [&] { at::multi_margin_loss(zeros_cpu(x), zeros_cpu(t), p, margin,
                                  hw ? zeros_cpu(*w) : Tensor(), reduction); }));
  check_supported(x, op);
  check_target_range(t, 0, x.dim() == 0 ? 1 : x.size(-1), "target out of range");
  c10::Device dev = x.device();
  c10::DeviceGuard guard(dev);
  at::ScalarType cd = accumulator(x.scalar_type());
  Tensor out = at::empty(m.sizes(), m.options().device(dev));
  OpArgs a;
  a.tensor(x);
  a.tensor(on_device(t, dev));
  if (hw) a.tensor(on_device(*w, dev));
  a.scalar(margin, x.scalar_type(), dev.index());
  run_op(op, dev.index(), a, attrs_of(multi_margin_attrs(cd, reduction, p, hw)), {out});
  return out;
}

Tensor multi_margin_backward(const Tensor& g, const Tensor& x, const Tensor& t, const Scalar& p,
                             const Scalar& margin, const std::optional<Tensor>& w,
                             int64_t reduction) {
  const char* op = "aten::multi_margin_loss_backward";
  bool hw = w && w->defined();
  // no meta kernel: the gradient is shaped like self; CPU's checks are the forward's
  check_margin_dtype(x, "multi_margin_loss_backward_cpu_kernel");
  Tensor m = at::empty_like(to_meta(x));
  at::multi_margin_loss(to_meta(x), to_meta(t), p, margin, hw ? to_meta(*w) : Tensor(), reduction);
  check_supported(x, op);
  check_target_range(t, 0, x.dim() == 0 ? 1 : x.size(-1), "target out of range");
  c10::Device dev = x.device();
  c10::DeviceGuard guard(dev);
  at::ScalarType cd = accumulator(x.scalar_type());
  Tensor out = at::empty(m.sizes(), m.options().device(dev));
  OpArgs a;
  a.tensor(on_device(g, dev));
  a.tensor(x);
  a.tensor(on_device(t, dev));
  if (hw) a.tensor(on_device(*w, dev));
  a.scalar(margin, x.scalar_type(), dev.index());
  run_op(op, dev.index(), a, attrs_of(multi_margin_attrs(cd, reduction, p, hw)), {out});
  return out;
}

std::tuple<Tensor, Tensor> multilabel_margin(const Tensor& x, const Tensor& t, int64_t reduction) {
  const char* op = "aten::multilabel_margin_loss_forward";
  check_margin_dtype(x, "multilabel_margin_loss_forward_out_frame");
  auto [m0_, m1] = meta_or_cpu_error(
      [&] { return at::multilabel_margin_loss_forward(to_meta(x), to_meta(t), reduction); },
      [&] { at::multilabel_margin_loss_forward(zeros_cpu(x), zeros_cpu(t), reduction); });
  Tensor m0 = margin_loss_shape(x, reduction, m0_);
  check_supported(x, op);
  check_target_range(t, -1, x.dim() == 0 ? 1 : x.size(-1), "argument #2 'target' is out of range");
  c10::Device dev = x.device();
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(m0.sizes(), m0.options().device(dev));
  Tensor is_target = at::empty(m1.sizes(), m1.options().device(dev));
  OpArgs a;
  a.tensor(x);
  a.tensor(on_device(t, dev));
  run_op(op, dev.index(), a, attrs_of(multilabel_attrs(x, reduction)), {out, is_target});
  return {out, is_target};
}

Tensor multilabel_margin_backward(const Tensor& g, const Tensor& x, const Tensor& t,
                                  int64_t reduction, const Tensor& is_target) {
  // no meta kernel: the gradient is shaped like self
  check_margin_dtype(x, "multilabel_margin_loss_backward_out_frame");
  Tensor m = at::empty_like(to_meta(x));
  at::multilabel_margin_loss_forward(to_meta(x), to_meta(t), reduction);
  check_target_range(t, -1, x.dim() == 0 ? 1 : x.size(-1), "argument #2 'target' is out of range");
  return run_meta("aten::multilabel_margin_loss_backward", {&g, &x, &t, &is_target}, m,
                  attrs_of(multilabel_attrs(x, reduction)));
}
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  m.impl("nll_loss2d_forward", TORCH_FN(torch_pjrt::nll_loss2d_forward));
  m.impl("nll_loss2d_backward", TORCH_FN(torch_pjrt::nll_loss2d_backward));
  m.impl("multi_margin_loss", TORCH_FN(torch_pjrt::multi_margin));
  m.impl("multi_margin_loss_backward", TORCH_FN(torch_pjrt::multi_margin_backward));
  m.impl("multilabel_margin_loss_forward", TORCH_FN(torch_pjrt::multilabel_margin));
  m.impl("multilabel_margin_loss_backward", TORCH_FN(torch_pjrt::multilabel_margin_backward));
}


// ---- nll_loss ------------------------------------------------------------------

namespace torch_pjrt {

namespace {

using at::Tensor;

// Every target is a class or ignore_index, as CPU's kernel insists.
void check_targets(const Tensor& target, int64_t classes, int64_t ignore_index) {
  if (tracing() && !target.device().is_cpu()) return;  // a compiled graph cannot wait on values
  Tensor h = (target.device().is_cpu() ? target : to_host(target)).reshape(-1);
  auto acc = h.to(at::kLong).contiguous();
  const int64_t* p = acc.data_ptr<int64_t>();
  for (int64_t i = 0; i < acc.numel(); ++i)
    TORCH_CHECK_INDEX(p[i] == ignore_index || (p[i] >= 0 && p[i] < classes), "Target ", p[i],
                      " is out of bounds.");
}

std::tuple<Tensor, Tensor> nll_loss_forward(const Tensor& self, const Tensor& target,
                                            const std::optional<Tensor>& weight, int64_t reduction,
                                            c10::SymInt ignore_index) {
  const char* op = "aten::nll_loss_forward";
  int64_t ig = ignore_index.expect_int();
  bool hw = weight && weight->defined();
  auto [m0, m1] = at::meta::nll_loss_forward_symint(to_meta(self), to_meta(target),
                                              hw ? to_meta(*weight) : Tensor(), reduction, ig);
  check_supported(self, op);
  check_targets(target, self.size(-1), ig);
  c10::DeviceGuard guard(self.device());
  Tensor out = at::empty(m0.sizes(), m0.options().device(self.device()));
  Tensor total = at::empty(m1.sizes(), m1.options().device(self.device()));
  at::ScalarType cd = (self.scalar_type() == at::kHalf || self.scalar_type() == at::kBFloat16)
                          ? at::kFloat
                          : self.scalar_type();
  OpArgs a;
  a.tensor(self);
  a.tensor(on_device(target, self.device()));
  if (hw) a.tensor(on_device(*weight, self.device()));
  run_op(op, self.device().index(), a, attrs_of(nll_attrs(to_tpj_dtype(cd), reduction, ig, hw)),
         {out, total});
  return {out, total};
}

Tensor nll_loss_backward(const Tensor& grad, const Tensor& self, const Tensor& target,
                         const std::optional<Tensor>& weight, int64_t reduction,
                         c10::SymInt ignore_index, const Tensor& total_weight) {
  const char* op = "aten::nll_loss_backward";
  int64_t ig = ignore_index.expect_int();
  bool hw = weight && weight->defined();
  Tensor m = at::meta::nll_loss_backward_symint(to_meta(grad), to_meta(self), to_meta(target),
                                          hw ? to_meta(*weight) : Tensor(), reduction, ig,
                                          to_meta(total_weight));
  check_supported(self, op);
  c10::DeviceGuard guard(self.device());
  Tensor out = at::empty(m.sizes(), m.options().device(self.device()));
  at::ScalarType cd = (self.scalar_type() == at::kHalf || self.scalar_type() == at::kBFloat16)
                          ? at::kFloat
                          : self.scalar_type();
  OpArgs a;
  a.tensor(grad);
  a.tensor(self);
  a.tensor(on_device(target, self.device()));
  a.tensor(total_weight);
  if (hw) a.tensor(on_device(*weight, self.device()));
  run_op(op, self.device().index(), a, attrs_of(nll_attrs(to_tpj_dtype(cd), reduction, ig, hw)),
         {out});
  return out;
}
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("nll_loss_forward", TORCH_FN(torch_pjrt::nll_loss_forward));
  m.impl("nll_loss_backward", TORCH_FN(torch_pjrt::nll_loss_backward));
}
