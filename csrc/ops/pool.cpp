// Kernel glue for pooling: max_pool2d/3d_with_indices, avg_pool2d/3d,
// adaptive_max_pool2d/3d and _adaptive_avg_pool2d/3d, with their backward
// (the 3-D and adaptive-max lowerings are in src/ops/pool.c, the 2-D ones,
// built on the convolution emitters, in src/ops/conv.c). Output shapes and
// argument errors come from the meta functions; dtype errors are worded as
// CPU's kernels word them. Out= forms other than avg_pool2d.out are served
// by outform.cpp.
#include <ATen/MetaFunctions.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "ops/fallback.h"
#include "ops/write.h"
#include "tensor.h"
#include "layout.h"
#include "dtype_check.h"
#include <ATen/native/Resize.h>
#include <cstdlib>
#include <sstream>
#include "glue.h"

extern "C" {
#include "ops/attrs.h"
}

namespace torch_pjrt {
namespace {

using at::IntArrayRef;
using at::Tensor;

// An int list of 1 or n values as n values; `dflt` when empty.
std::vector<int64_t> expand(IntArrayRef v, IntArrayRef dflt, size_t n) {
  if (v.empty()) v = dflt;
  std::vector<int64_t> r(n);
  for (size_t i = 0; i < n; ++i) r[i] = v.size() == 1 ? v[0] : v[i];
  return r;
}

// Runs op on the tpu tensors ts into new tensors shaped like metas, laid
// out in self's memory format (channels_last stays channels_last), as CPU's
// pooling kernels and their backward lay out theirs.
std::vector<Tensor> run_pool(const char* op, std::initializer_list<const Tensor*> ts,
                             std::initializer_list<const Tensor*> metas,
                             c10::ArrayRef<int64_t> attrs, const Tensor& self) {
  for (const Tensor* t : ts) check_supported(*t, op);
  c10::Device dev = common_device(op, ts);
  c10::DeviceGuard guard(dev);
  std::vector<Tensor> outs;
  for (const Tensor* m : metas) outs.push_back(at::empty(m->sizes(), m->options().device(dev)));
  OpArgs a;
  for (const Tensor* t : ts) a.tensor(*t);
  run_op_laid_out(op, dev.index(), a, attrs, outs, format_of(self), ~0u);
  return outs;
}

int64_t cdtype(const Tensor& t) { return to_tpj_dtype(accumulator(t.scalar_type())); }

tpj_attrs_pool_planes_t planes_attrs(const Tensor& self, int64_t nsp) {
  tpj_attrs_pool_planes_t attrs{};
  attrs.compute = cdtype(self);
  attrs.nsp = nsp;
  return attrs;
}

// ---- max_pool3d -------------------------------------------------------------------

std::vector<int64_t> max_attrs(IntArrayRef k, IntArrayRef s, IntArrayRef p, IntArrayRef d) {
  tpj_attrs_max_pool_t head{};
  head.nsp = 3;
  std::vector<int64_t> windows;
  for (auto v : {expand(k, k, 3), expand(s, k, 3), expand(p, {0}, 3), expand(d, {1}, 3)})
    windows.insert(windows.end(), v.begin(), v.end());
  return attrs_with_tail(head, windows);
}

std::tuple<Tensor, Tensor> max_pool3d_tpu(const Tensor& self, IntArrayRef k, IntArrayRef s,
                                      IntArrayRef p, IntArrayRef d, bool ceil_mode) {
  auto [m0, m1] = at::max_pool3d_with_indices(to_meta(self), k, s, p, d, ceil_mode);
  at::ScalarType t = self.scalar_type();
  check_cpu_dtype(t != at::kBool && !c10::isComplexType(t), t, "max_pool3d");
  auto r = run_pool("aten::max_pool3d_with_indices", {&self}, {&m0, &m1}, max_attrs(k, s, p, d), self);
  return {r[0], r[1]};
}

Tensor max_pool_backward(const char* op, const Tensor& grad, const Tensor& self,
                         const Tensor& indices, int64_t nsp) {
  auto r = run_pool(op, {&grad, &indices}, {&self}, attrs_of(planes_attrs(self, nsp)), self);
  return r[0];
}

Tensor max_pool3d_backward(const Tensor& grad, const Tensor& self, IntArrayRef k, IntArrayRef s,
                           IntArrayRef p, IntArrayRef d, bool ceil_mode, const Tensor& indices) {
  Tensor m = at::max_pool3d_with_indices_backward(to_meta(grad), to_meta(self), k, s, p, d,
                                                  ceil_mode, to_meta(indices));
  check_floating_dtype(self, "max_pool3d_backward");
  (void)m;
  return max_pool_backward("aten::max_pool3d_with_indices_backward", grad, self, indices, 3);
}

// ---- avg_pool3d -------------------------------------------------------------------

std::vector<int64_t> avg_attrs(const Tensor& self, IntArrayRef k, IntArrayRef s, IntArrayRef p,
                               bool cip, std::optional<int64_t> div) {
  tpj_attrs_avg_pool_t head{};
  head.nsp = 3;
  tpj_attrs_avg_pool_end_t end{};
  end.count_include_pad = cip;
  end.divisor_override = div ? *div : 0;
  end.compute = cdtype(self);
  std::vector<int64_t> tail;
  for (auto v : {expand(k, k, 3), expand(s, k, 3), expand(p, {0}, 3)})
    tail.insert(tail.end(), v.begin(), v.end());
  tail.insert(tail.end(), attrs_of(end).begin(), attrs_of(end).end());
  return attrs_with_tail(head, tail);
}

// CPU's avg_pool3d takes float, double and integers (no half, bool or complex).
void check_avg3d_dtype(const Tensor& x, const char* name) {
  at::ScalarType t = x.scalar_type();
  check_cpu_dtype(t == at::kFloat || t == at::kDouble || c10::isIntegralType(t, false), t, name);
}

Tensor avg_pool3d_tpu(const Tensor& self, IntArrayRef k, IntArrayRef s, IntArrayRef p, bool ceil_mode,
                  bool cip, std::optional<int64_t> div) {
  const char* op = "aten::avg_pool3d";
  Tensor m = at::meta::avg_pool3d(to_meta(self), k, s, p, ceil_mode, cip, div);
  check_avg3d_dtype(self, "avg_pool3d_out_frame");
  // int64 is lowered exactly (its compute dtype is int64: wrapping sums, a
  // truncating division, as CPU's kernel does); other integers are not.
  if (!c10::isFloatingType(self.scalar_type()) && self.scalar_type() != at::kLong) {
    // CPU sums integers in their own type (wrapping); not lowered: CPU's kernel, counted.
    dtype_fallback(op, self.scalar_type());
    return at::avg_pool3d(self.cpu(), k, s, p, ceil_mode, cip, div).to(self.device());
  }
  return run_pool(op, {&self}, {&m}, avg_attrs(self, k, s, p, cip, div), self)[0];
}

Tensor avg_pool3d_backward_tpu(const Tensor& grad, const Tensor& self, IntArrayRef k, IntArrayRef s,
                           IntArrayRef p, bool ceil_mode, bool cip, std::optional<int64_t> div) {
  const char* op = "aten::avg_pool3d_backward";
  Tensor m = at::meta::avg_pool3d_backward(to_meta(grad), to_meta(self), k, s, p, ceil_mode, cip, div);
  check_avg3d_dtype(self, "avg_pool3d_backward_out_frame");
  if (!c10::isFloatingType(self.scalar_type())) {
    dtype_fallback(op, self.scalar_type());
    return at::avg_pool3d_backward(grad.cpu(), self.cpu(), k, s, p, ceil_mode, cip, div)
        .to(self.device());
  }
  return run_pool(op, {&grad}, {&m}, avg_attrs(self, k, s, p, cip, div), self)[0];
}

// ---- adaptive pooling -----------------------------------------------------------

std::tuple<Tensor, Tensor> adaptive_max2d(const Tensor& self, IntArrayRef size) {
  check_floating_dtype(self, "adaptive_max_pool2d");
  auto [m0, m1] = at::meta::adaptive_max_pool2d(to_meta(self), size);
  tpj_attrs_adaptive_max_pool_t attrs{};
  attrs.nsp = 2;
  auto r = run_pool("aten::adaptive_max_pool2d", {&self}, {&m0, &m1}, attrs_of(attrs), self);
  return {r[0], r[1]};
}

std::tuple<Tensor, Tensor> adaptive_max3d(const Tensor& self, IntArrayRef size) {
  check_floating_dtype(self, "adaptive_max_pool3d_cpu");
  auto [m0, m1] = at::meta::adaptive_max_pool3d(to_meta(self), size);
  tpj_attrs_adaptive_max_pool_t attrs{};
  attrs.nsp = 3;
  auto r = run_pool("aten::adaptive_max_pool3d", {&self}, {&m0, &m1}, attrs_of(attrs), self);
  return {r[0], r[1]};
}

Tensor adaptive_max2d_backward(const Tensor& grad, const Tensor& self, const Tensor& indices) {
  at::meta::adaptive_max_pool2d_backward(to_meta(grad), to_meta(self), to_meta(indices));
  check_floating_dtype(self, "adaptive_max_pool2d_backward");
  return max_pool_backward("aten::adaptive_max_pool2d_backward", grad, self, indices, 2);
}

Tensor adaptive_max3d_backward(const Tensor& grad, const Tensor& self, const Tensor& indices) {
  at::meta::adaptive_max_pool3d_backward(to_meta(grad), to_meta(self), to_meta(indices));
  check_floating_dtype(self, "adaptive_max_pool3d_backward_cpu");
  return max_pool_backward("aten::adaptive_max_pool3d_backward", grad, self, indices, 3);
}

Tensor adaptive_avg3d(const Tensor& self, c10::SymIntArrayRef size) {
  check_floating_dtype(self, "adaptive_avg_pool3d_cpu");
  Tensor m = at::_adaptive_avg_pool3d_symint(to_meta(self), size);
  return run_pool("aten::_adaptive_avg_pool3d", {&self}, {&m}, attrs_of(planes_attrs(self, 3)),
                  self)[0];
}

Tensor adaptive_avg3d_backward(const Tensor& grad, const Tensor& self) {
  check_floating_dtype(self, "adaptive_avg_pool3d_backward_cpu");
  Tensor m = at::_adaptive_avg_pool3d_backward(to_meta(grad), to_meta(self));
  return run_pool("aten::_adaptive_avg_pool3d_backward", {&grad}, {&m},
                  attrs_of(planes_attrs(self, 3)), self)[0];
}

}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  m.impl("max_pool3d_with_indices", TORCH_FN(max_pool3d_tpu));
  m.impl("max_pool3d_with_indices_backward", TORCH_FN(max_pool3d_backward));
  m.impl("avg_pool3d", TORCH_FN(avg_pool3d_tpu));
  m.impl("avg_pool3d_backward", TORCH_FN(avg_pool3d_backward_tpu));
  m.impl("adaptive_max_pool2d", TORCH_FN(adaptive_max2d));
  m.impl("adaptive_max_pool3d", TORCH_FN(adaptive_max3d));
  m.impl("adaptive_max_pool2d_backward", TORCH_FN(adaptive_max2d_backward));
  m.impl("adaptive_max_pool3d_backward", TORCH_FN(adaptive_max3d_backward));
  m.impl("_adaptive_avg_pool3d", TORCH_FN(adaptive_avg3d));
  m.impl("_adaptive_avg_pool3d_backward", TORCH_FN(adaptive_avg3d_backward));
}

namespace torch_pjrt {

namespace {

using at::IntArrayRef;
using at::Tensor;

// ---- pooling -------------------------------------------------------------------

// kernel_size, stride (empty: the kernel), padding, dilation as two values
// each, the way PyTorch's pooling kernels read their int lists.
std::vector<int64_t> pair(IntArrayRef v, IntArrayRef dflt) {
  if (v.empty()) v = dflt;
  return {v[0], v.size() == 1 ? v[0] : v[1]};
}

// The one attribute of a 2-D pool's backward and of adaptive_avg_pool2d:
// the compute dtype.
tpj_attrs_compute_t compute_attrs(const Tensor& self) {
  tpj_attrs_compute_t attrs{};
  attrs.compute = to_tpj_dtype(accumulator(self.scalar_type()));
  return attrs;
}

void check_pool_dtype(const Tensor& self, const char* name) {
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(self.scalar_type()), "\"", name,
                              "\" not implemented for '", self.scalar_type(), "'");
}

std::tuple<Tensor, Tensor> max_pool2d_with_indices_tpu(const Tensor& self, IntArrayRef kernel_size,
                                                   IntArrayRef stride, IntArrayRef padding,
                                                   IntArrayRef dilation, bool ceil_mode) {
  const char* op = "aten::max_pool2d_with_indices";
  auto [m0, m1] = at::meta::max_pool2d_with_indices(to_meta(self), kernel_size, stride, padding,
                                              dilation, ceil_mode);
  check_supported(self, op);
  c10::Device dev = self.device();
  // int64/int32 maxima are exact (the lowering's order of taps is CPU's).
  bool int_ok = self.scalar_type() == at::kLong || self.scalar_type() == at::kInt;
  if (!native_dtype(self.scalar_type()) && !int_ok) {
    dtype_fallback(op, self.scalar_type());
    auto [v, i] = at::max_pool2d_with_indices(self.cpu(), kernel_size, stride, padding, dilation,
                                              ceil_mode);
    return {v.to(dev), i.to(dev)};
  }
  c10::DeviceGuard guard(dev);
  Tensor v = at::empty(m0.sizes(), m0.options().device(dev));
  Tensor idx = at::empty(m1.sizes(), m1.options().device(dev));
  auto k = pair(kernel_size, kernel_size), s = pair(stride, kernel_size), p = pair(padding, {0}),
       d = pair(dilation, {1});
  tpj_attrs_max_pool2d_t attrs{};
  for (int i = 0; i < 2; ++i) {
    attrs.kernel[i] = k[i];
    attrs.stride[i] = s[i];
    attrs.padding[i] = p[i];
    attrs.dilation[i] = d[i];
  }
  OpArgs a;
  a.tensor(self);
  run_op_laid_out(op, dev.index(), a, attrs_of(attrs), {v, idx}, format_of(self), ~0u);
  return {v, idx};
}

Tensor max_pool2d_with_indices_backward_tpu(const Tensor& grad, const Tensor& self,
                                        IntArrayRef kernel_size, IntArrayRef stride,
                                        IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                                        const Tensor& indices) {
  const char* op = "aten::max_pool2d_with_indices_backward";
  Tensor m = at::meta::max_pool2d_with_indices_backward(to_meta(grad), to_meta(self), kernel_size,
                                                  stride, padding, dilation, ceil_mode,
                                                  to_meta(indices));
  check_devices(op, {&grad, &self, &indices});
  c10::Device dev = self.device();
  if (!native_dtype(self.scalar_type())) {
    dtype_fallback(op, self.scalar_type());
    return at::max_pool2d_with_indices_backward(grad.cpu(), self.cpu(), kernel_size, stride,
                                                padding, dilation, ceil_mode, indices.cpu())
        .to(dev);
  }
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(m.sizes(), m.options().device(dev));
  OpArgs a;
  a.tensor(grad);
  a.tensor(indices);
  run_op_laid_out(op, dev.index(), a, attrs_of(compute_attrs(self)), {out}, format_of(self), 1);
  return out;
}

tpj_attrs_avg_pool2d_t avg2d_attrs(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                   IntArrayRef padding, bool count_include_pad,
                                   std::optional<int64_t> divisor_override) {
  auto k = pair(kernel_size, kernel_size), s = pair(stride, kernel_size), p = pair(padding, {0});
  tpj_attrs_avg_pool2d_t attrs{};
  for (int i = 0; i < 2; ++i) {
    attrs.kernel[i] = k[i];
    attrs.stride[i] = s[i];
    attrs.padding[i] = p[i];
  }
  attrs.count_include_pad = count_include_pad;
  attrs.divisor_override = divisor_override ? *divisor_override : 0;
  attrs.compute = to_tpj_dtype(accumulator(self.scalar_type()));
  return attrs;
}

Tensor avg_pool2d_tpu(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  const char* op = "aten::avg_pool2d";
  Tensor m = at::meta::avg_pool2d(to_meta(self), kernel_size, stride, padding, ceil_mode,
                            count_include_pad, divisor_override);
  check_supported(self, op);
  c10::Device dev = self.device();
  // int64 (the one integer type CPU takes): sums wrap and the division
  // truncates toward zero, in int64, as CPU's kernel does.
  if (!native_dtype(self.scalar_type()) && self.scalar_type() != at::kLong) {
    dtype_fallback(op, self.scalar_type());
    return at::avg_pool2d(self.cpu(), kernel_size, stride, padding, ceil_mode, count_include_pad,
                          divisor_override)
        .to(dev);
  }
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(m.sizes(), m.options().device(dev));
  OpArgs a;
  a.tensor(self);
  tpj_attrs_avg_pool2d_t attrs =
      avg2d_attrs(self, kernel_size, stride, padding, count_include_pad, divisor_override);
  run_op_laid_out(op, dev.index(), a, attrs_of(attrs), {out}, format_of(self), 1);
  return out;
}

Tensor avg_pool2d_backward_tpu(const Tensor& grad, const Tensor& self, IntArrayRef kernel_size,
                           IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                           bool count_include_pad, std::optional<int64_t> divisor_override) {
  const char* op = "aten::avg_pool2d_backward";
  Tensor m = at::meta::avg_pool2d_backward(to_meta(grad), to_meta(self), kernel_size, stride, padding,
                                     ceil_mode, count_include_pad, divisor_override);
  check_devices(op, {&grad, &self});
  c10::Device dev = self.device();
  if (!native_dtype(self.scalar_type())) {
    dtype_fallback(op, self.scalar_type());
    return at::avg_pool2d_backward(grad.cpu(), self.cpu(), kernel_size, stride, padding,
                                   ceil_mode, count_include_pad, divisor_override)
        .to(dev);
  }
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(m.sizes(), m.options().device(dev));
  OpArgs a;
  a.tensor(grad);
  tpj_attrs_avg_pool2d_t attrs =
      avg2d_attrs(self, kernel_size, stride, padding, count_include_pad, divisor_override);
  run_op_laid_out(op, dev.index(), a, attrs_of(attrs), {out}, format_of(self), 1);
  return out;
}

Tensor adaptive_avg_pool2d_tpu(const Tensor& self, c10::SymIntArrayRef output_size) {
  const char* op = "aten::_adaptive_avg_pool2d";
  check_pool_dtype(self, "adaptive_avg_pool2d");
  Tensor m = at::_adaptive_avg_pool2d_symint(to_meta(self), output_size);
  check_supported(self, op);
  c10::Device dev = self.device();
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(m.sizes(), m.options().device(dev));
  OpArgs a;
  a.tensor(self);
  run_op_laid_out(op, dev.index(), a, attrs_of(compute_attrs(self)), {out}, format_of(self), 1);
  return out;
}

Tensor adaptive_avg_pool2d_backward_tpu(const Tensor& grad, const Tensor& self) {
  const char* op = "aten::_adaptive_avg_pool2d_backward";
  check_pool_dtype(self, "adaptive_avg_pool2d_backward_cpu");
  check_devices(op, {&grad, &self});
  TORCH_CHECK(grad.dim() == self.dim(), "adaptive_avg_pool2d_backward: grad_output and input "
              "must have the same number of dimensions");
  c10::Device dev = self.device();
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(self.sizes(), grad.options());
  OpArgs a;
  a.tensor(grad);
  run_op_laid_out(op, dev.index(), a, attrs_of(compute_attrs(self)), {out}, format_of(self), 1);
  return out;
}
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  m.impl("max_pool2d_with_indices", TORCH_FN(max_pool2d_with_indices_tpu));
  m.impl("max_pool2d_with_indices_backward", TORCH_FN(max_pool2d_with_indices_backward_tpu));
  m.impl("avg_pool2d", TORCH_FN(avg_pool2d_tpu));
  m.impl("avg_pool2d.out", [](const at::Tensor& self, IntArrayRef k, IntArrayRef s,
                              IntArrayRef p, bool ceil_mode, bool cip,
                              std::optional<int64_t> div, at::Tensor& out) -> at::Tensor& {
    at::Tensor r = avg_pool2d_tpu(self, k, s, p, ceil_mode, cip, div);
    at::native::resize_output(out, r.sizes());
    assign_result(out, r, "aten::avg_pool2d.out");
    return out;
  });
  m.impl("avg_pool2d_backward", TORCH_FN(avg_pool2d_backward_tpu));
  m.impl("_adaptive_avg_pool2d", TORCH_FN(adaptive_avg_pool2d_tpu));
  m.impl("_adaptive_avg_pool2d_backward", TORCH_FN(adaptive_avg_pool2d_backward_tpu));
}
