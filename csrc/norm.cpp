// Kernel glue for batch norm, group norm (src/ops/norm.c) and the pointwise
// losses mse_loss, smooth_l1_loss, huber_loss and binary_cross_entropy
// (src/ops/pointwise_loss.c), forward and backward. Output shapes, dtypes
// and argument checks come from the meta functions; batch norm's running
// statistics come back from the program and are written into the running
// buffers here, as CPU's kernel updates them in place.
#include <ATen/MetaFunctions.h>
#include <ATen/ExpandUtils.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "common.h"

namespace torch_pjrt {

void assign_result(const at::Tensor& dst, const at::Tensor& result, const char* op);

namespace {

using at::Tensor;
using OptTensor = std::optional<Tensor>;

bool has(const OptTensor& t) { return t && t->defined(); }
Tensor meta_or_undefined(const OptTensor& t) { return has(t) ? to_meta(*t) : Tensor(); }

// Every tensor operand on one tpu device (PyTorch's message otherwise).
c10::Device device_of(const char* op, const std::vector<const Tensor*>& ts) {
  for (const Tensor* t : ts) check_supported(*t, op);
  c10::Device dev = ts[0]->device();
  for (const Tensor* t : ts)
    TORCH_CHECK(t->device() == dev, "Expected all tensors to be on the same device, but found at "
                "least two devices, ", dev, " and ", t->device(), "!");
  return dev;
}

Tensor empty_like_meta(const Tensor& meta, c10::Device dev) {
  return at::empty(meta.sizes(), meta.options().device(dev));
}

// ---- batch norm -------------------------------------------------------------

// The dtype of the saved statistics on CPU: the input's, or float when a
// half-type input comes with float parameters ("mixed type"). The meta
// functions say float for every half input.
at::ScalarType stat_dtype(const Tensor& input, std::initializer_list<const OptTensor*> params) {
  at::ScalarType t = input.scalar_type();
  if (t != at::kHalf && t != at::kBFloat16) return t;
  for (const OptTensor* p : params)
    if (has(*p) && (*p)->scalar_type() == at::kFloat) return at::kFloat;
  return t;
}

std::tuple<Tensor, Tensor, Tensor> batch_norm(const Tensor& input, const OptTensor& weight,
                                              const OptTensor& bias, const OptTensor& running_mean,
                                              const OptTensor& running_var, bool training,
                                              double momentum, double eps) {
  const char* op = "aten::native_batch_norm";
  bool hr = has(running_mean) && has(running_var);
  TORCH_CHECK(training || hr, "running_mean must be defined in evaluation mode");
  TORCH_CHECK(input.dim() >= 2, "batch_norm: expected an input with at least 2 dims, got ",
              input.dim());
  // Shapes computed here rather than by PyTorch's meta kernel, which is a
  // Python decomposition costing milliseconds a call: y like input in its
  // suggested memory format, the saved statistics (C,).
  int64_t channels = input.size(1);
  auto check_c = [&](const OptTensor& t, const char* name) {
    TORCH_CHECK(!has(t) || t->numel() == channels, name, " should contain ", channels,
                " elements not ", has(t) ? t->numel() : 0);
  };
  check_c(weight, "weight");
  check_c(bias, "bias");
  check_c(running_mean, "running_mean");
  check_c(running_var, "running_var");
  auto mo = at::TensorOptions().device(c10::kMeta).dtype(input.scalar_type());
  Tensor m0 = at::empty(input.sizes(), mo.memory_format(input.suggest_memory_format()));
  Tensor m1 = at::empty({channels}, mo);
  Tensor m2 = m1;
  bool hw = has(weight), hb = has(bias);
  std::vector<const Tensor*> ts{&input};
  if (hw) ts.push_back(&*weight);
  if (hb) ts.push_back(&*bias);
  if (hr) {
    ts.push_back(&*running_mean);
    ts.push_back(&*running_var);
  }
  c10::Device dev = device_of(op, ts);
  c10::DeviceGuard guard(dev);
  at::ScalarType cd = accumulator(input.scalar_type());
  Tensor y = empty_like_meta(m0, dev);
  // CPU returns empty saved statistics in eval mode (the meta function
  // sizes them (C,)); follow CPU, whose backward never reads them.
  auto st = m1.options().device(dev).dtype(
      stat_dtype(input, {&weight, &bias, &running_mean, &running_var}));
  Tensor save_mean = at::empty(training ? m1.sizes() : at::IntArrayRef{0}, st);
  Tensor save_invstd = at::empty(training ? m2.sizes() : at::IntArrayRef{0}, st);
  std::vector<Tensor> outs{y};
  if (training) {
    outs.push_back(save_mean);
    outs.push_back(save_invstd);
  }
  Tensor new_mean, new_var;
  if (training && hr) {
    new_mean = at::empty(running_mean->sizes(), running_mean->options());
    new_var = at::empty(running_var->sizes(), running_var->options());
    outs.push_back(new_mean);
    outs.push_back(new_var);
  }
  if (input.numel() == 0) return {y, save_mean, save_invstd};
  OpArgs a;
  for (const Tensor* t : ts) a.tensor(*t);
  a.scalar(momentum, cd, dev.index());
  a.scalar(eps, cd, dev.index());
  run_op(op, dev.index(), a, {to_tpj_dtype(cd), training, hw, hb, hr}, outs);
  if (training && hr) {
    assign_result(*running_mean, new_mean, op);
    assign_result(*running_var, new_var, op);
  }
  return {y, save_mean, save_invstd};
}

std::tuple<Tensor, Tensor, Tensor> batch_norm_backward(
    const Tensor& grad_out, const Tensor& input, const OptTensor& weight,
    const OptTensor& running_mean, const OptTensor& running_var, const OptTensor& save_mean,
    const OptTensor& save_invstd, bool train, double eps, std::array<bool, 3> mask) {
  const char* op = "aten::native_batch_norm_backward";
  const OptTensor& mean = train ? save_mean : running_mean;
  const OptTensor& var = train ? save_invstd : running_var;
  TORCH_CHECK(has(mean) && has(var), "native_batch_norm_backward: ",
              train ? "save_mean and save_invstd" : "running_mean and running_var",
              " must be defined");
  bool hw = has(weight);
  Tensor r[3];
  std::vector<Tensor> outs;
  c10::Device dev = device_of(op, {&grad_out, &input, &*mean, &*var});
  c10::DeviceGuard guard(dev);
  int64_t c = input.size(1);
  for (int i = 0; i < 3; ++i) {
    if (!mask[i]) continue;
    r[i] = i == 0 ? at::empty(input.sizes(), input.options())
                  : at::empty({c}, (hw ? weight->options() : input.options()));
    outs.push_back(r[i]);
  }
  if (outs.empty() || input.numel() == 0) {
    for (int i = 1; i < 3; ++i)
      if (r[i].defined()) r[i].zero_();
    return {r[0], r[1], r[2]};
  }
  OpArgs a;
  a.tensor(grad_out);
  a.tensor(input);
  if (hw) a.tensor(*weight);
  a.tensor(*mean);
  a.tensor(*var);
  at::ScalarType cd = accumulator(input.scalar_type());
  a.scalar(eps, cd, dev.index());
  run_op(op, dev.index(), a, {to_tpj_dtype(cd), train, hw, mask[0], mask[1], mask[2]}, outs);
  return {r[0], r[1], r[2]};
}

// The _native_batch_norm_legit family (what torch.compile's decompositions
// and functionalization call): the same kernel, with or without stats.
std::tuple<Tensor, Tensor, Tensor> bn_legit(const Tensor& input, const OptTensor& weight,
                                            const OptTensor& bias, Tensor& rm, Tensor& rv,
                                            bool training, double momentum, double eps) {
  return batch_norm(input, weight, bias, rm, rv, training, momentum, eps);
}
std::tuple<Tensor, Tensor, Tensor> bn_legit_no_stats(const Tensor& input, const OptTensor& weight,
                                                     const OptTensor& bias, bool training,
                                                     double momentum, double eps) {
  return batch_norm(input, weight, bias, std::nullopt, std::nullopt, training, momentum, eps);
}
std::tuple<Tensor, Tensor, Tensor> bn_legit_no_training(const Tensor& input,
                                                        const OptTensor& weight,
                                                        const OptTensor& bias, const Tensor& rm,
                                                        const Tensor& rv, double momentum,
                                                        double eps) {
  return batch_norm(input, weight, bias, rm, rv, false, momentum, eps);
}

// ---- group norm -------------------------------------------------------------

std::tuple<Tensor, Tensor, Tensor> group_norm(const Tensor& input, const OptTensor& weight,
                                              const OptTensor& bias, c10::SymInt N, c10::SymInt C,
                                              c10::SymInt HxW, int64_t group, double eps) {
  const char* op = "aten::native_group_norm";
  // Shapes computed here (PyTorch's meta kernel is a Python decomposition,
  // about 0.7 ms a call; aten::group_norm checked the arguments already):
  // y like input, the statistics (N, group) in CPU's statistics dtype.
  auto mo = at::TensorOptions().device(c10::kMeta).dtype(input.scalar_type());
  Tensor m0 = at::empty(input.sizes(), mo);
  Tensor m1 = at::empty({N.expect_int(), group}, mo.dtype(stat_dtype(input, {&weight, &bias}))),
         m2 = m1;
  bool hw = has(weight), hb = has(bias);
  std::vector<const Tensor*> ts{&input};
  if (hw) ts.push_back(&*weight);
  if (hb) ts.push_back(&*bias);
  c10::Device dev = device_of(op, ts);
  c10::DeviceGuard guard(dev);
  Tensor y = empty_like_meta(m0, dev), mean = empty_like_meta(m1, dev),
         rstd = empty_like_meta(m2, dev);
  if (input.numel() == 0) return {y, mean, rstd};
  at::ScalarType cd = accumulator(input.scalar_type());
  OpArgs a;
  for (const Tensor* t : ts) a.tensor(*t);
  a.scalar(eps, cd, dev.index());
  run_op(op, dev.index(), a,
         {to_tpj_dtype(cd), N.expect_int(), C.expect_int(), HxW.expect_int(), group, hw, hb},
         {y, mean, rstd});
  return {y, mean, rstd};
}

std::tuple<Tensor, Tensor, Tensor> group_norm_backward(
    const Tensor& grad_out, const Tensor& input, const Tensor& mean, const Tensor& rstd,
    const OptTensor& weight, c10::SymInt N, c10::SymInt C, c10::SymInt HxW, int64_t group,
    std::array<bool, 3> mask) {
  const char* op = "aten::native_group_norm_backward";
  auto [m0, m1, m2] = at::native_group_norm_backward_symint(
      to_meta(grad_out), to_meta(input), to_meta(mean), to_meta(rstd), meta_or_undefined(weight),
      N, C, HxW, group, mask);
  bool hw = has(weight);
  std::vector<const Tensor*> ts{&grad_out, &input, &mean, &rstd};
  if (hw) ts.push_back(&*weight);
  c10::Device dev = device_of(op, ts);
  c10::DeviceGuard guard(dev);
  Tensor r[3];
  const Tensor* metas[3] = {&m0, &m1, &m2};
  std::vector<Tensor> outs;
  for (int i = 0; i < 3; ++i) {
    if (!mask[i] || !metas[i]->defined()) continue;
    r[i] = empty_like_meta(*metas[i], dev);
    outs.push_back(r[i]);
  }
  if (outs.empty()) return {r[0], r[1], r[2]};
  if (input.numel() == 0) {
    for (int i = 1; i < 3; ++i)
      if (r[i].defined()) r[i].zero_();
    return {r[0], r[1], r[2]};
  }
  OpArgs a;
  for (const Tensor* t : ts) a.tensor(*t);
  run_op(op, dev.index(), a,
         {to_tpj_dtype(accumulator(input.scalar_type())), N.expect_int(), C.expect_int(),
          HxW.expect_int(), group, hw, r[0].defined(), r[1].defined(), r[2].defined()},
         outs);
  return {r[0], r[1], r[2]};
}

// ---- pointwise losses -------------------------------------------------------

// Runs a loss (or its backward) over ts with an optional 0-d parameter.
Tensor run_loss(const char* op, const std::vector<const Tensor*>& ts, const Tensor& meta,
                int64_t reduction, bool has_weight, const std::optional<double>& param) {
  TORCH_CHECK(reduction >= 0 && reduction <= 2, op, ": ", reduction,
              " is not a valid value for reduction");
  c10::Device dev = device_of(op, ts);
  c10::DeviceGuard guard(dev);
  Tensor out = empty_like_meta(meta, dev);
  if (out.numel() == 0) return out;
  at::ScalarType cd = accumulator(meta.scalar_type());
  OpArgs a;
  for (const Tensor* t : ts) a.tensor(*t);
  if (param) a.scalar(*param, cd, dev.index());
  run_op(op, dev.index(), a, {to_tpj_dtype(cd), reduction, has_weight}, {out});
  return out;
}

// CPU's TensorIterator wording for self and target that do not broadcast
// (the meta functions word it differently).
void check_broadcast(const Tensor& self, const Tensor& target) {
  (void)at::infer_size(self.sizes(), target.sizes());
}

Tensor mse_loss(const Tensor& self, const Tensor& target, int64_t reduction) {
  check_broadcast(self, target);
  Tensor m = at::meta::mse_loss(to_meta(self), to_meta(target), reduction);
  return run_loss("aten::mse_loss", {&self, &target}, m, reduction, false, std::nullopt);
}
Tensor mse_loss_backward(const Tensor& g, const Tensor& self, const Tensor& target,
                         int64_t reduction) {
  Tensor m = at::mse_loss_backward(to_meta(g), to_meta(self), to_meta(target), reduction);
  return run_loss("aten::mse_loss_backward", {&g, &self, &target}, m, reduction, false,
                  std::nullopt);
}

void check_beta(double beta) {
  TORCH_CHECK(beta >= 0, "smooth_l1_loss does not support negative values for beta.");
}
Tensor smooth_l1_loss(const Tensor& self, const Tensor& target, int64_t reduction, double beta) {
  check_beta(beta);
  check_broadcast(self, target);
  Tensor m = at::meta::smooth_l1_loss(to_meta(self), to_meta(target), reduction, beta);
  return run_loss("aten::smooth_l1_loss", {&self, &target}, m, reduction, false, beta);
}
Tensor smooth_l1_loss_backward(const Tensor& g, const Tensor& self, const Tensor& target,
                               int64_t reduction, double beta) {
  check_beta(beta);
  Tensor m = at::smooth_l1_loss_backward(to_meta(g), to_meta(self), to_meta(target), reduction, beta);
  return run_loss("aten::smooth_l1_loss_backward", {&g, &self, &target}, m, reduction, false, beta);
}

void check_delta(double delta) {
  TORCH_CHECK(delta > 0, "huber_loss does not support non-positive values for delta.");
}
Tensor huber_loss(const Tensor& self, const Tensor& target, int64_t reduction, double delta) {
  check_delta(delta);
  check_broadcast(self, target);
  Tensor m = at::huber_loss(to_meta(self), to_meta(target), reduction, delta);
  return run_loss("aten::huber_loss", {&self, &target}, m, reduction, false, delta);
}
Tensor huber_loss_backward(const Tensor& g, const Tensor& self, const Tensor& target,
                           int64_t reduction, double delta) {
  check_delta(delta);
  Tensor m = at::huber_loss_backward(to_meta(g), to_meta(self), to_meta(target), reduction, delta);
  return run_loss("aten::huber_loss_backward", {&g, &self, &target}, m, reduction, false, delta);
}

// CPU's kernel raises when an input lies outside [0, 1] (NaN included);
// XLA cannot raise, so the glue checks min and max on the host: one wait.
void check_probabilities(const Tensor& self) {
  if (self.numel() == 0 || tracing()) return;  // a compiled graph cannot wait on values
  Tensor lim = at::stack({at::amin(self), at::amax(self)}).to(at::kCPU, at::kDouble);
  double lo = lim[0].item<double>(), hi = lim[1].item<double>();
  TORCH_CHECK(lo >= 0 && hi <= 1, "all elements of input should be between 0 and 1");
}

Tensor bce(const Tensor& self, const Tensor& target, const OptTensor& weight, int64_t reduction) {
  Tensor m = at::binary_cross_entropy(to_meta(self), to_meta(target), meta_or_undefined(weight),
                                      reduction);
  TORCH_CHECK(self.scalar_type() == target.scalar_type(), "Found dtype ", target.scalar_type(),
              " but expected ", self.scalar_type());
  check_probabilities(self);
  std::vector<const Tensor*> ts{&self, &target};
  if (has(weight)) ts.push_back(&*weight);
  return run_loss("aten::binary_cross_entropy", ts, m, reduction, has(weight), std::nullopt);
}
Tensor bce_backward(const Tensor& g, const Tensor& self, const Tensor& target,
                    const OptTensor& weight, int64_t reduction) {
  Tensor m = at::binary_cross_entropy_backward(to_meta(g), to_meta(self), to_meta(target),
                                               meta_or_undefined(weight), reduction);
  std::vector<const Tensor*> ts{&g, &self, &target};
  if (has(weight)) ts.push_back(&*weight);
  return run_loss("aten::binary_cross_entropy_backward", ts, m, reduction, has(weight),
                  std::nullopt);
}

}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  m.impl("native_batch_norm", TORCH_FN(batch_norm));
  m.impl("native_batch_norm_backward", TORCH_FN(batch_norm_backward));
  m.impl("_native_batch_norm_legit", TORCH_FN(bn_legit));
  m.impl("_native_batch_norm_legit.no_stats", TORCH_FN(bn_legit_no_stats));
  m.impl("_native_batch_norm_legit_no_training", TORCH_FN(bn_legit_no_training));
  m.impl("native_group_norm", TORCH_FN(group_norm));
  m.impl("native_group_norm_backward", TORCH_FN(group_norm_backward));
  m.impl("mse_loss", TORCH_FN(mse_loss));
  m.impl("mse_loss_backward", TORCH_FN(mse_loss_backward));
  m.impl("smooth_l1_loss", TORCH_FN(smooth_l1_loss));
  m.impl("smooth_l1_loss_backward", TORCH_FN(smooth_l1_loss_backward));
  m.impl("huber_loss", TORCH_FN(huber_loss));
  m.impl("huber_loss_backward", TORCH_FN(huber_loss_backward));
  m.impl("binary_cross_entropy", TORCH_FN(bce));
  m.impl("binary_cross_entropy_backward", TORCH_FN(bce_backward));
}
