// Kernel glue for the nn ops of src/ops/nn2.c and src/ops/margin.c: nll_loss2d,
// the reflection and replication pads' backward, logit, hardshrink,
// softshrink, threshold (with their backward, in-place and out= forms),
// channel_shuffle, the multi / multilabel margin losses (src/ops/margin.c) and
// the cdist / pdist distances (src/ops/dist.c) and bicubic upsampling
// (src/ops/cubic.c). Shapes,
// dtypes and argument errors come from the meta functions.
#include <ATen/MetaFunctions.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cmath>
#include <cstring>

#include "common.h"
#include "dtype_check.h"

namespace torch_pjrt {

at::Tensor to_host(const at::Tensor& src);  // copy.cpp

namespace {

using at::Scalar;
using at::Tensor;

Tensor on_device(const Tensor& t, c10::Device dev) { return t.device() == dev ? t : t.to(dev); }

// Runs op on the tpu tensors ts, then the runtime scalars (rounded to
// scalar_dt, as CPU's kernels read them), into a tensor shaped like meta.
Tensor run_nn2(const char* op, std::initializer_list<const Tensor*> ts, const Tensor& meta,
               std::vector<int64_t> attrs, std::initializer_list<Scalar> scalars = {},
               at::ScalarType scalar_dt = at::kFloat) {
  for (const Tensor* t : ts) check_supported(*t, op);
  c10::Device dev = common_device(op, ts);
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(meta.sizes(), meta.options().device(dev));
  OpArgs a;
  for (const Tensor* t : ts) add_operand(a, *t, dev.index());
  for (const Scalar& s : scalars) a.scalar(s, scalar_dt, dev.index());
  run_op(op, dev.index(), a, attrs, {out});
  return out;
}

int64_t compute_dtype(at::ScalarType t) { return to_tpj_dtype(accumulator(t)); }

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
  run_op(op, dev.index(), a, {compute_dtype(self.scalar_type()), reduction, ig, hw}, {out, total});
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
  run_op(op, dev.index(), a, {compute_dtype(self.scalar_type()), reduction, ig, hw}, {out});
  return out;
}

// ---- pad backward -------------------------------------------------------------

template <Tensor (*Meta)(const Tensor&, const Tensor&, c10::SymIntArrayRef)>
Tensor pad_backward(const char* op, bool reflect, const Tensor& grad, const Tensor& self,
                    c10::SymIntArrayRef pad) {
  Tensor m = Meta(to_meta(grad), to_meta(self), pad);
  check_floating_dtype(grad, op + 6);  // CPU names the op without "aten::"
  auto p = C10_AS_INTARRAYREF_SLOW(pad);
  std::vector<int64_t> attrs{reflect, compute_dtype(grad.scalar_type())};
  attrs.insert(attrs.end(), p.begin(), p.end());
  return run_nn2(op, {&grad}, m, attrs);
}

#define TPJ_PAD_META(name)                                                         \
  Tensor meta_##name(const Tensor& g, const Tensor& x, c10::SymIntArrayRef p) {    \
    return at::name##_symint(g, x, p);                                             \
  }
TPJ_PAD_META(reflection_pad1d_backward)
TPJ_PAD_META(reflection_pad2d_backward)
TPJ_PAD_META(reflection_pad3d_backward)
TPJ_PAD_META(replication_pad1d_backward)
TPJ_PAD_META(replication_pad2d_backward)
TPJ_PAD_META(replication_pad3d_backward)
#undef TPJ_PAD_META

// ---- pointwise ------------------------------------------------------------------

Tensor logit(const Tensor& x, std::optional<double> eps) {
  check_cpu_dtype(!c10::isComplexType(x.scalar_type()), x.scalar_type(), "logit_cpu");
  Tensor m = at::logit(to_meta(x), eps);
  bool he = eps && *eps >= 0;  // CPU: a negative eps means none
  // CPU computes half logit in half (each step rounded), bfloat16 in float
  at::ScalarType cd = m.scalar_type() == at::kHalf ? at::kHalf : accumulator(m.scalar_type());
  std::vector<int64_t> attrs{to_tpj_dtype(cd), he};
  if (he) return run_nn2("aten::logit", {&x}, m, attrs, {*eps}, m.scalar_type());
  return run_nn2("aten::logit", {&x}, m, attrs);
}

Tensor logit_backward(const Tensor& g, const Tensor& x, std::optional<double> eps) {
  Tensor m = at::meta::logit_backward(to_meta(g), to_meta(x), eps);
  bool he = eps && *eps >= 0;
  std::vector<int64_t> attrs{compute_dtype(m.scalar_type()), he};
  if (he) return run_nn2("aten::logit_backward", {&g, &x}, m, attrs, {*eps}, m.scalar_type());
  return run_nn2("aten::logit_backward", {&g, &x}, m, attrs);
}

Tensor hardshrink(const Tensor& x, const Scalar& l) {
  check_floating_dtype(x, "hardshrink_cpu");
  Tensor m = at::meta::hardshrink(to_meta(x), l);
  return run_nn2("aten::hardshrink", {&x}, m, {compute_dtype(m.scalar_type())}, {l},
                 m.scalar_type());
}

Tensor hardshrink_backward(const Tensor& g, const Tensor& x, const Scalar& l) {
  check_floating_dtype(x, "hardshrink_backward_cpu");
  Tensor m = at::meta::hardshrink_backward(to_meta(g), to_meta(x), l);
  return run_nn2("aten::hardshrink_backward", {&g, &x}, m, {compute_dtype(m.scalar_type())}, {l},
                 m.scalar_type());
}

Tensor softshrink(const Tensor& x, const Scalar& l) {
  check_floating_dtype(x, "softshrink_check");
  Tensor m = at::meta::softshrink(to_meta(x), l);
  // CPU's softshrink reads lambd in the compute type (unlike hardshrink)
  return run_nn2("aten::softshrink", {&x}, m, {compute_dtype(m.scalar_type())}, {l},
                 accumulator(m.scalar_type()));
}

Tensor softshrink_backward(const Tensor& g, const Tensor& x, const Scalar& l) {
  check_floating_dtype(x, "softshrink_backward_cpu");
  Tensor m = at::meta::softshrink_backward(to_meta(g), to_meta(x), l);
  return run_nn2("aten::softshrink_backward", {&g, &x}, m, {compute_dtype(m.scalar_type())}, {l},
                 m.scalar_type());
}

Tensor threshold(const Tensor& x, const Scalar& t, const Scalar& v) {
  check_cpu_dtype(x.scalar_type() != at::kBool, x.scalar_type(), "threshold_cpu");
  Tensor m = at::meta::threshold(to_meta(x), t, v);
  at::ScalarType cd = accumulator(m.scalar_type());
  return run_nn2("aten::threshold", {&x}, m, {to_tpj_dtype(cd)}, {t, v}, cd);
}

Tensor channel_shuffle(const Tensor& x, c10::SymInt groups) {
  Tensor m = at::channel_shuffle_symint(to_meta(x), groups);
  return run_nn2("aten::channel_shuffle", {&x}, m, {groups.expect_int()});
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
  run_op(op, dev.index(), a, {to_tpj_dtype(cd), reduction, p.toLong(), hw}, {out});
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
  run_op(op, dev.index(), a, {to_tpj_dtype(cd), reduction, p.toLong(), hw}, {out});
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
  run_op(op, dev.index(), a, {compute_dtype(x.scalar_type()), reduction}, {out, is_target});
  return {out, is_target};
}

Tensor multilabel_margin_backward(const Tensor& g, const Tensor& x, const Tensor& t,
                                  int64_t reduction, const Tensor& is_target) {
  // no meta kernel: the gradient is shaped like self
  check_margin_dtype(x, "multilabel_margin_loss_backward_out_frame");
  Tensor m = at::empty_like(to_meta(x));
  at::multilabel_margin_loss_forward(to_meta(x), to_meta(t), reduction);
  check_target_range(t, -1, x.dim() == 0 ? 1 : x.size(-1), "argument #2 'target' is out of range");
  return run_nn2("aten::multilabel_margin_loss_backward", {&g, &x, &t, &is_target}, m,
                 {compute_dtype(x.scalar_type()), reduction});
}

// ---- distances ------------------------------------------------------------------

// The norm kind of src/ops/dist.c for p (CPU's dispatch on p).
int64_t dist_kind(double p) {
  if (p == 0) return 0;
  if (p == 1) return 1;
  if (p == 2) return 2;
  if (std::isinf(p)) return 3;
  return 4;
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
  int64_t kind = dist_kind(p);
  if (kind == 4) a.scalar(p, ts[0].scalar_type(), dev.index());
  run_op(op, dev.index(), a, {to_tpj_dtype(ts[0].scalar_type()), kind}, {out});
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

// ---- bicubic upsampling ----------------------------------------------------------

// attrs of src/ops/cubic.c: compute dtype, align_corners, then per dim
// has_scale and the scale's bits.
std::vector<int64_t> cubic_attrs(const Tensor& x, bool align, std::optional<double> sh,
                                 std::optional<double> sw) {
  std::vector<int64_t> a{compute_dtype(x.scalar_type()), align};
  for (const auto& s : {sh, sw}) {
    int64_t bits = 0;
    if (s) std::memcpy(&bits, &*s, sizeof bits);
    a.push_back(s.has_value());
    a.push_back(bits);
  }
  return a;
}

// Floating inputs run natively; others (uint8) run CPU's kernel, counted,
// which also raises CPU's error for dtypes CPU lacks.
template <typename F>
Tensor run_cubic(const char* op, const Tensor& x, const std::vector<int64_t>& attrs, F f) {
  Tensor m = f(to_meta(x));
  if (!c10::isFloatingType(x.scalar_type())) {
    Tensor r = f(to_host(x));
    dtype_fallback(op, x.scalar_type());
    return r.to(x.device());
  }
  check_supported(x, op);
  c10::DeviceGuard guard(x.device());
  Tensor out = at::empty(m.sizes(), m.options().device(x.device()));
  if (out.numel() == 0) return out;
  OpArgs a;
  a.tensor(x);
  run_op(op, x.device().index(), a, attrs, {out});
  return out;
}

Tensor bicubic(const Tensor& x, c10::SymIntArrayRef size, bool align, std::optional<double> sh,
               std::optional<double> sw) {
  return run_cubic("aten::upsample_bicubic2d", x, cubic_attrs(x, align, sh, sw),
                   [&](const Tensor& in) { return at::upsample_bicubic2d_symint(in, size, align, sh, sw); });
}

Tensor bicubic_backward(const Tensor& g, c10::SymIntArrayRef out_size, c10::SymIntArrayRef in_size,
                        bool align, std::optional<double> sh, std::optional<double> sw) {
  return run_cubic("aten::upsample_bicubic2d_backward", g, cubic_attrs(g, align, sh, sw),
                   [&](const Tensor& in) {
                     return at::upsample_bicubic2d_backward_symint(in, out_size, in_size, align, sh, sw);
                   });
}

Tensor& out_of(Tensor& out, const Tensor& r, const char* op, const Tensor& in) {
  check_no_overlap(out, {&in});
  return out_result(out, r, op);
}

}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  using at::Scalar;
  using at::Tensor;
  using SymArr = c10::SymIntArrayRef;
  m.impl("nll_loss2d_forward", TORCH_FN(torch_pjrt::nll_loss2d_forward));
  m.impl("nll_loss2d_backward", TORCH_FN(torch_pjrt::nll_loss2d_backward));

  // The .out/.grad_input forms not registered here are served by
  // outform.cpp (the functional kernel, then CPU's out= rules). hardshrink,
  // softshrink and threshold keep theirs: their CPU kernels (TensorIterator)
  // check the out against every input for overlap, which outform.cpp does
  // only for ops tagged pointwise, and these are not.
#define TPJ_PAD_BWD(name, reflect)                                                          \
  m.impl(#name, [](const Tensor& g, const Tensor& x, SymArr p) {                            \
    return pad_backward<meta_##name>("aten::" #name, reflect, g, x, p);                     \
  });
  TPJ_PAD_BWD(reflection_pad1d_backward, true)
  TPJ_PAD_BWD(reflection_pad2d_backward, true)
  TPJ_PAD_BWD(reflection_pad3d_backward, true)
  TPJ_PAD_BWD(replication_pad1d_backward, false)
  TPJ_PAD_BWD(replication_pad2d_backward, false)
  TPJ_PAD_BWD(replication_pad3d_backward, false)
#undef TPJ_PAD_BWD

  m.impl("logit", TORCH_FN(torch_pjrt::logit));
  m.impl("logit_", [](Tensor& x, std::optional<double> eps) -> Tensor& {
    assign_result(x, torch_pjrt::logit(x, eps), "aten::logit_");
    return x;
  });
  m.impl("logit_backward", TORCH_FN(torch_pjrt::logit_backward));
  m.impl("hardshrink", TORCH_FN(torch_pjrt::hardshrink));
  m.impl("hardshrink.out", [](const Tensor& x, const Scalar& l, Tensor& o) -> Tensor& {
    return out_of(o, torch_pjrt::hardshrink(x, l), "aten::hardshrink.out", x);
  });
  m.impl("hardshrink_backward", TORCH_FN(torch_pjrt::hardshrink_backward));
  m.impl("hardshrink_backward.grad_input", [](const Tensor& g, const Tensor& x, const Scalar& l,
                                              Tensor& o) -> Tensor& {
    return out_of(o, torch_pjrt::hardshrink_backward(g, x, l),
                  "aten::hardshrink_backward.grad_input", g);
  });
  m.impl("softshrink", TORCH_FN(torch_pjrt::softshrink));
  m.impl("softshrink.out", [](const Tensor& x, const Scalar& l, Tensor& o) -> Tensor& {
    return out_of(o, torch_pjrt::softshrink(x, l), "aten::softshrink.out", x);
  });
  m.impl("softshrink_backward", TORCH_FN(torch_pjrt::softshrink_backward));
  m.impl("softshrink_backward.grad_input", [](const Tensor& g, const Tensor& x, const Scalar& l,
                                              Tensor& o) -> Tensor& {
    return out_of(o, torch_pjrt::softshrink_backward(g, x, l),
                  "aten::softshrink_backward.grad_input", g);
  });
  m.impl("threshold", TORCH_FN(torch_pjrt::threshold));
  m.impl("threshold_", [](Tensor& x, const Scalar& t, const Scalar& v) -> Tensor& {
    assign_result(x, torch_pjrt::threshold(x, t, v), "aten::threshold_");
    return x;
  });
  m.impl("threshold.out", [](const Tensor& x, const Scalar& t, const Scalar& v,
                             Tensor& o) -> Tensor& {
    return out_of(o, torch_pjrt::threshold(x, t, v), "aten::threshold.out", x);
  });
  m.impl("channel_shuffle", TORCH_FN(torch_pjrt::channel_shuffle));
  m.impl("multi_margin_loss", TORCH_FN(torch_pjrt::multi_margin));
  m.impl("multi_margin_loss_backward", TORCH_FN(torch_pjrt::multi_margin_backward));
  m.impl("multilabel_margin_loss_forward", TORCH_FN(torch_pjrt::multilabel_margin));
  m.impl("multilabel_margin_loss_backward", TORCH_FN(torch_pjrt::multilabel_margin_backward));
  m.impl("_cdist_forward", TORCH_FN(torch_pjrt::cdist_forward));
  m.impl("_cdist_backward", TORCH_FN(torch_pjrt::cdist_backward));
  m.impl("_pdist_forward", TORCH_FN(torch_pjrt::pdist_forward));
  m.impl("_pdist_backward", TORCH_FN(torch_pjrt::pdist_backward));
  m.impl("upsample_bicubic2d", TORCH_FN(torch_pjrt::bicubic));
  m.impl("upsample_bicubic2d_backward", TORCH_FN(torch_pjrt::bicubic_backward));
}
