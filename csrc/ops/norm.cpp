// Kernel glue for the normalizations (src/ops/norm.c): batch norm (with
// _batch_norm_with_update and batch_norm_backward), group norm and layer
// norm, forward and backward. Output shapes, dtypes and argument checks come
// from the meta functions; batch norm's running statistics come back from
// the program and are written into the running buffers here, as CPU's
// kernel updates them in place.
#include <ATen/MetaFunctions.h>
#include <ATen/ExpandUtils.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>
#include "ops/write.h"
#include "tensor.h"
#include "layout.h"
#include "dtype_check.h"
#include "glue.h"
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <algorithm>
#include <cmath>
#include <limits>
#include <ATen/native/Gelu.h>
#include <sstream>
#include "inplace.h"

extern "C" {
#include "ops/attrs.h"
}

namespace torch_pjrt {

namespace {

using at::Tensor;
using OptTensor = std::optional<Tensor>;




// ---- batch norm -------------------------------------------------------------

// The dtype of the saved statistics on CPU: the input's, or float when a
// half-type input comes with float parameters ("mixed type"). The meta
// functions say float for every half input.
at::ScalarType stat_dtype(const Tensor& input, std::initializer_list<const OptTensor*> params) {
  at::ScalarType t = input.scalar_type();
  if (t != at::kHalf && t != at::kBFloat16) return t;
  for (const OptTensor* p : params)
    if (has_tensor(*p) && (*p)->scalar_type() == at::kFloat) return at::kFloat;
  return t;
}

std::tuple<Tensor, Tensor, Tensor> batch_norm(const Tensor& input, const OptTensor& weight,
                                              const OptTensor& bias, const OptTensor& running_mean,
                                              const OptTensor& running_var, bool training,
                                              double momentum, double eps) {
  const char* op = "aten::native_batch_norm";
  check_floating_dtype(input, "batch_norm");  // CPU's kernels are floating only
  bool hr = has_tensor(running_mean) && has_tensor(running_var);
  TORCH_CHECK(training || hr, "running_mean must be defined in evaluation mode");
  TORCH_CHECK(input.dim() >= 2, "batch_norm: expected an input with at least 2 dims, got ",
              input.dim());
  // Shapes computed here rather than by PyTorch's meta kernel, which is a
  // Python decomposition costing milliseconds a call: y like input in its
  // suggested memory format, the saved statistics (C,).
  int64_t channels = input.size(1);
  auto check_c = [&](const OptTensor& t, const char* name) {
    TORCH_CHECK(!has_tensor(t) || t->numel() == channels, name, " should contain ", channels,
                " elements not ", has_tensor(t) ? t->numel() : 0);
  };
  check_c(weight, "weight");
  check_c(bias, "bias");
  check_c(running_mean, "running_mean");
  check_c(running_var, "running_var");
  auto mo = at::TensorOptions().device(c10::kMeta).dtype(input.scalar_type());
  Tensor m0 = at::empty(input.sizes(), mo.memory_format(input.suggest_memory_format()));
  Tensor m1 = at::empty({channels}, mo);
  Tensor m2 = m1;
  bool hw = has_tensor(weight), hb = has_tensor(bias);
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
  // y in the input's memory format (channels_last stays so), as on CPU.
  tpj_attrs_batch_norm_t attrs{};
  attrs.compute = to_tpj_dtype(cd);
  attrs.training = training;
  attrs.has_weight = hw;
  attrs.has_bias = hb;
  attrs.has_running = hr;
  run_op_laid_out(op, dev.index(), a, attrs_of(attrs), outs, format_of(input), 1);
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
  TORCH_CHECK(has_tensor(mean) && has_tensor(var), "native_batch_norm_backward: ",
              train ? "save_mean and save_invstd" : "running_mean and running_var",
              " must be defined");
  bool hw = has_tensor(weight);
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
  tpj_attrs_batch_norm_backward_t attrs{};
  attrs.compute = to_tpj_dtype(cd);
  attrs.training = train;
  attrs.has_weight = hw;
  for (int i = 0; i < 3; ++i) attrs.mask[i] = mask[i];
  run_op_laid_out(op, dev.index(), a, attrs_of(attrs), outs, format_of(input), mask[0] ? 1 : 0);
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
  check_floating_dtype(input, "GroupNormKernelImpl");
  // Shapes computed here (PyTorch's meta kernel is a Python decomposition,
  // about 0.7 ms a call; aten::group_norm checked the arguments already):
  // y like input, the statistics (N, group) in CPU's statistics dtype.
  auto mo = at::TensorOptions().device(c10::kMeta).dtype(input.scalar_type());
  Tensor m0 = at::empty(input.sizes(), mo);
  Tensor m1 = at::empty({N.expect_int(), group}, mo.dtype(stat_dtype(input, {&weight, &bias}))),
         m2 = m1;
  bool hw = has_tensor(weight), hb = has_tensor(bias);
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
  tpj_attrs_group_norm_t attrs{};
  attrs.compute = to_tpj_dtype(cd);
  attrs.n = N.expect_int();
  attrs.c = C.expect_int();
  attrs.hxw = HxW.expect_int();
  attrs.group = group;
  attrs.has_weight = hw;
  attrs.has_bias = hb;
  run_op_laid_out(op, dev.index(), a, attrs_of(attrs), {y, mean, rstd}, format_of(input), 1);
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
  bool hw = has_tensor(weight);
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
  tpj_attrs_group_norm_backward_t attrs{};
  attrs.compute = to_tpj_dtype(accumulator(input.scalar_type()));
  attrs.n = N.expect_int();
  attrs.c = C.expect_int();
  attrs.hxw = HxW.expect_int();
  attrs.group = group;
  attrs.has_weight = hw;
  for (int i = 0; i < 3; ++i) attrs.mask[i] = r[i].defined();
  run_op_laid_out(op, dev.index(), a, attrs_of(attrs), outs, format_of(input),
                  r[0].defined() ? 1 : 0);
  return {r[0], r[1], r[2]};
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
}
namespace torch_pjrt {
namespace {

using at::Tensor;
using Pair = std::tuple<Tensor, Tensor>;
using PairRef = std::tuple<Tensor&, Tensor&>;

// ---- _batch_norm_with_update, batch_norm_backward ------------------------------

// What CPU's kernels are: native_batch_norm in training mode (which updates
// the running statistics in place) with an empty reserve, and
// native_batch_norm_backward. Both are native here.
std::tuple<Tensor, Tensor, Tensor, Tensor> bn_with_update(
    const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
    Tensor& running_mean, Tensor& running_var, double momentum, double eps) {
  auto [out, mean, invstd] = at::native_batch_norm(input, weight, bias, running_mean, running_var,
                                                   /*training=*/true, momentum, eps);
  Tensor reserve = at::empty({0}, input.options().dtype(at::kByte));
  return {out, mean, invstd, reserve};
}

std::tuple<Tensor, Tensor, Tensor> bn_backward(
    const Tensor& grad, const Tensor& input, const Tensor& weight,
    const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
    const std::optional<Tensor>& save_mean, const std::optional<Tensor>& save_var, bool update,
    double eps, std::array<bool, 3> mask, const Tensor&) {
  std::optional<Tensor> w = weight.defined() ? std::optional<Tensor>(weight) : std::nullopt;
  return at::native_batch_norm_backward(grad, input, w, running_mean, running_var, save_mean,
                                        save_var, update, eps, mask);
}
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  namespace tp = torch_pjrt;
  m.impl("_batch_norm_with_update", TORCH_FN(tp::bn_with_update));
  m.impl("batch_norm_backward", TORCH_FN(tp::bn_backward));
}
namespace torch_pjrt {
namespace {

using at::Scalar;
using at::Tensor;


std::tuple<Tensor, Tensor, Tensor> layer_norm(const Tensor& input, c10::SymIntArrayRef shape,
                                              const std::optional<Tensor>& weight,
                                              const std::optional<Tensor>& bias, double eps) {
  const char* op = "aten::native_layer_norm";
  check_floating_dtype(input, "LayerNormKernelImpl");
  // CPU's check and wording (the meta function words it differently)
  auto ns = C10_AS_INTARRAYREF_SLOW(shape);
  int64_t nd = static_cast<int64_t>(ns.size()), id = input.dim();
  bool fits = nd >= 1 && id >= nd && input.sizes().slice(id - nd).equals(ns);
  if (nd >= 1 && !fits) {
    std::ostringstream ss;
    ss << "Given normalized_shape=" << ns << ", expected input with shape [*";
    for (int64_t v : ns) ss << ", " << v;
    ss << "], but got input of size" << input.sizes();
    TORCH_CHECK(false, ss.str());
  }
  TORCH_CHECK(nd >= 1, "Expected normalized_shape to be at least 1-dimensional, i.e., containing "
              "at least one element, but got normalized_shape = ", ns);
  for (const auto* p : {&weight, &bias}) {
    TORCH_CHECK(!(*p && (*p)->defined()) || (*p)->sizes().equals(ns), "Expected ",
                p == &weight ? "weight" : "bias", " to be of same shape as normalized_shape, but "
                "got ", p == &weight ? "weight" : "bias", " of shape ", (*p)->sizes(),
                " and normalized_shape = ", ns);
  }
  // Shapes computed here: PyTorch's meta kernel for native_layer_norm is a
  // Python decomposition (about 0.8 ms a call). y is like input, the
  // statistics keep input's leading dims and 1 for each normalized one.
  std::vector<int64_t> stat_shape(input.sizes().begin(), input.sizes().end() - nd);
  stat_shape.resize(id, 1);
  auto mo = at::TensorOptions().device(c10::kMeta).dtype(input.scalar_type());
  Tensor m0 = at::empty(input.sizes(), mo), m1 = at::empty(stat_shape, mo), m2 = m1;
  bool hw = weight && weight->defined(), hb = bias && bias->defined();
  std::vector<const Tensor*> ts{&input};
  if (hw) ts.push_back(&*weight);
  if (hb) ts.push_back(&*bias);
  for (const Tensor* t : ts) check_supported(*t, op);
  c10::Device dev = input.device();
  for (const Tensor* t : ts)
    TORCH_CHECK(t->device() == dev, "Expected all tensors to be on the same device, but found at "
                "least two devices, ", dev, " and ", t->device(), "!");
  c10::DeviceGuard guard(dev);
  at::ScalarType cd = accumulator(input.scalar_type());
  Tensor y = at::empty(m0.sizes(), m0.options().device(dev));
  // CPU's statistics dtype: the input's, or float for a half-type input with
  // float weight or bias (the meta function says float for every half input)
  at::ScalarType st = input.scalar_type();
  if ((st == at::kHalf || st == at::kBFloat16) &&
      ((hw && weight->scalar_type() == at::kFloat) || (hb && bias->scalar_type() == at::kFloat)))
    st = at::kFloat;
  Tensor mean = at::empty(m1.sizes(), m1.options().device(dev).dtype(st));
  Tensor rstd = at::empty(m2.sizes(), m2.options().device(dev).dtype(st));
  OpArgs a;
  for (const Tensor* t : ts) a.tensor(*t);
  a.scalar(eps, cd, dev.index());
  int64_t axis = input.dim() - static_cast<int64_t>(shape.size());
  tpj_attrs_layer_norm_t attrs{};
  attrs.compute = to_tpj_dtype(cd);
  attrs.axis = axis;
  attrs.has_weight = hw;
  attrs.has_bias = hb;
  run_op(op, dev.index(), a, attrs_of(attrs), {y, mean, rstd});
  return {y, mean, rstd};
}

std::tuple<Tensor, Tensor, Tensor> layer_norm_backward(
    const Tensor& grad_out, const Tensor& input, c10::SymIntArrayRef shape, const Tensor& mean,
    const Tensor& rstd, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
    std::array<bool, 3> mask) {
  const char* op = "aten::native_layer_norm_backward";
  // Shapes computed here (PyTorch's meta kernel is a Python decomposition):
  // the input's gradient like input, the parameters' like the parameters.
  Tensor m0 = to_meta(input), m1 = meta_or_undefined(weight), m2 = meta_or_undefined(bias);
  bool hw = weight && weight->defined();
  c10::Device dev = input.device();
  c10::DeviceGuard guard(dev);
  std::vector<Tensor> outs;
  Tensor r[3];
  const Tensor* metas[3] = {&m0, &m1, &m2};
  for (int i = 0; i < 3; ++i) {
    if (!mask[i] || !metas[i]->defined()) continue;
    r[i] = at::empty(metas[i]->sizes(), metas[i]->options().device(dev));
    outs.push_back(r[i]);
  }
  if (outs.empty()) return {r[0], r[1], r[2]};
  OpArgs a;
  a.tensor(grad_out);
  a.tensor(input);
  a.tensor(mean);
  a.tensor(rstd);
  if (hw) a.tensor(*weight);
  int64_t axis = input.dim() - static_cast<int64_t>(shape.size());
  tpj_attrs_layer_norm_backward_t attrs{};
  attrs.compute = to_tpj_dtype(accumulator(input.scalar_type()));
  attrs.axis = axis;
  attrs.has_weight = hw;
  for (int i = 0; i < 3; ++i) attrs.mask[i] = r[i].defined();
  run_op(op, dev.index(), a, attrs_of(attrs), outs);
  return {r[0], r[1], r[2]};
}
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  m.impl("native_layer_norm", TORCH_FN(layer_norm));
  m.impl("native_layer_norm_backward", TORCH_FN(layer_norm_backward));
}
