// Kernel glue for convolution (plain and transposed, 1-3 spatial dims) with
// its backward, and 2-D max / avg / adaptive-avg pooling with their backward.
// Convolution's argument checks repeat CPU's (Convolution.cpp) with its
// wording, because the meta kernel words them differently; pooling shapes and
// checks come from the meta functions. The lowerings are in src/ops/conv.c.
#include <ATen/MetaFunctions.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cstdlib>
#include <sstream>

#include "common.h"

namespace torch_pjrt {

void assign_result(const at::Tensor& dst, const at::Tensor& result, const char* op);

namespace {

using at::IntArrayRef;
using at::Tensor;

// ---- convolution -------------------------------------------------------------

struct ConvArgs {
  int64_t nsp = 0;
  std::vector<int64_t> stride, padding, dilation, output_padding;
  bool transposed = false;
  int64_t groups = 1;
};

std::vector<int64_t> expand_param(IntArrayRef p, const char* name, int64_t dim) {
  if (p.size() == 1) return std::vector<int64_t>(dim, p[0]);
  TORCH_CHECK(static_cast<int64_t>(p.size()) == dim, "expected ", name,
              " to be a single integer value or a list of ", dim,
              " values to match the convolution dimensions, but got ", name, "=", p);
  return p.vec();
}

bool any_of(const std::vector<int64_t>& v, bool (*f)(int64_t)) {
  for (int64_t x : v)
    if (f(x)) return true;
  return false;
}

// CPU's checks, in CPU's order and words.
ConvArgs check_conv(const Tensor& input, const Tensor& weight, const Tensor* bias,
                    IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                    IntArrayRef output_padding, int64_t groups) {
  if (bias)
    TORCH_CHECK(bias->dtype() == input.dtype(), "Input type (", input.dtype().name(),
                ") and bias type (", bias->dtype().name(), ") should be the same");
  int64_t k = weight.dim();
  TORCH_CHECK(k - 2 > 0, "weight should have at least three dimensions");
  TORCH_CHECK(groups > 0, "non-positive groups is not supported");
  ConvArgs a;
  a.nsp = k - 2;
  a.stride = expand_param(stride, "stride", a.nsp);
  a.padding = expand_param(padding, "padding", a.nsp);
  a.dilation = expand_param(dilation, "dilation", a.nsp);
  a.output_padding = expand_param(output_padding, "output_padding", a.nsp);
  a.transposed = transposed;
  a.groups = groups;
  TORCH_CHECK(!any_of(a.padding, [](int64_t v) { return v < 0; }),
              "negative padding is not supported");
  TORCH_CHECK(!any_of(a.output_padding, [](int64_t v) { return v < 0; }),
              "negative output_padding is not supported");
  TORCH_CHECK(!any_of(a.stride, [](int64_t v) { return v <= 0; }),
              "non-positive stride is not supported");
  TORCH_CHECK(!any_of(a.dilation, [](int64_t v) { return v <= 0; }),
              "dilation should be greater than zero, but got ", IntArrayRef(a.dilation));
  auto ws = weight.sizes();
  TORCH_CHECK(input.dim() == k, "Expected ", k, "-dimensional input for ", k,
              "-dimensional weight ", ws, ", but got ", input.dim(),
              "-dimensional input of size ", input.sizes(), " instead");
  TORCH_CHECK(ws[0] >= groups, "Given groups=", groups, ", expected weight to be at least ",
              groups, " at dimension 0, but got weight of size ", ws, " instead");
  TORCH_CHECK(ws[0] % groups == 0, "Given groups=", groups,
              ", expected weight to be divisible by ", groups,
              " at dimension 0, but got weight of size [", ws, "] instead");
  if (!transposed) {
    TORCH_CHECK(input.size(1) == ws[1] * groups, "Given groups=", groups, ", weight of size ", ws,
                ", expected input", input.sizes(), " to have ", ws[1] * groups,
                " channels, but got ", input.size(1), " channels instead");
    TORCH_CHECK(!bias || (bias->dim() == 1 && bias->size(0) == ws[0]), "Given weight of size ",
                ws, ", expected bias to be 1-dimensional with ", ws[0],
                " elements, but got bias of size ", bias->sizes(), " instead");
    std::ostringstream in_ss, k_ss;
    bool fits = true;
    for (int64_t i = 0; i < a.nsp; ++i) {
      int64_t padded = input.size(2 + i) + 2 * a.padding[i];
      int64_t ext = a.dilation[i] * (ws[2 + i] - 1) + 1;
      fits = fits && padded >= ext;
      in_ss << (i ? " x " : "") << padded;
      k_ss << (i ? " x " : "") << ext;
    }
    TORCH_CHECK(fits, "Calculated padded input size per channel: (", in_ss.str(),
                "). Kernel size: (", k_ss.str(),
                "). Kernel size can't be greater than actual input size");
  } else {
    TORCH_CHECK(input.size(1) == ws[0], "Given transposed=", transposed, ", weight of size ", ws,
                ", expected input", input.sizes(), " to have ", ws[0], " channels, but got ",
                input.size(1), " channels instead");
    TORCH_CHECK(!bias || (bias->dim() == 1 && bias->size(0) == ws[1] * groups),
                "Given transposed=", transposed, ", weight of size ", ws,
                ", expected bias to be 1-dimensional with ", ws[1] * groups,
                " elements, but got bias of size ", bias->sizes(), " instead");
    for (int64_t i = 0; i < a.nsp; ++i) {
      if (a.output_padding[i] < a.stride[i] || a.output_padding[i] < a.dilation[i]) continue;
      std::ostringstream ss;
      ss << "output padding must be smaller than either stride or dilation, but got";
      if (a.nsp == 2) {
        ss << " output_padding_height: " << a.output_padding[0]
           << " output_padding_width: " << a.output_padding[1]
           << " stride_height: " << a.stride[0] << " stride_width: " << a.stride[1]
           << " dilation_height: " << a.dilation[0] << " dilation_width: " << a.dilation[1];
      } else {
        ss << " output_padding=" << IntArrayRef(a.output_padding)
           << ", stride=" << IntArrayRef(a.stride) << ", dilation=" << IntArrayRef(a.dilation);
      }
      TORCH_CHECK(false, ss.str());
    }
  }
  TORCH_CHECK(input.scalar_type() == weight.scalar_type(), "expected scalar type ",
              input.scalar_type(), " but found ", weight.scalar_type());
  return a;
}

std::vector<int64_t> conv_output_sizes(const Tensor& input, const Tensor& weight,
                                       const ConvArgs& a) {
  std::vector<int64_t> out{input.size(0),
                           a.transposed ? weight.size(1) * a.groups : weight.size(0)};
  for (int64_t i = 0; i < a.nsp; ++i) {
    int64_t in = input.size(2 + i), ext = a.dilation[i] * (weight.size(2 + i) - 1);
    out.push_back(a.transposed
                      ? (in - 1) * a.stride[i] - 2 * a.padding[i] + ext + a.output_padding[i] + 1
                      : (in + 2 * a.padding[i] - ext - 1) / a.stride[i] + 1);
  }
  return out;
}

std::vector<int64_t> conv_attrs(at::ScalarType dt, const ConvArgs& a, bool f0, bool f1, bool f2) {
  std::vector<int64_t> attrs{to_tpj_dtype(accumulator(dt)), a.transposed, a.groups, a.nsp};
  for (const auto* v : {&a.stride, &a.padding, &a.dilation, &a.output_padding})
    attrs.insert(attrs.end(), v->begin(), v->end());
  attrs.push_back(f0);
  attrs.push_back(f1);
  attrs.push_back(f2);
  return attrs;
}

bool native_dtype(at::ScalarType t) { return c10::isFloatingType(t); }

// Integer and complex convolutions run on the CPU, reported like any other
// fallback (XLA's convolution is for floating types): dtype_fallback.
Tensor opt_cpu(const std::optional<Tensor>& t) {
  return t && t->defined() ? t->cpu() : Tensor();
}

void check_devices(const char* op, std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts) check_supported(*t, op);
  common_device(op, ts);
}

Tensor convolution_tpu(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                   IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                   IntArrayRef output_padding, int64_t groups) {
  const char* op = "aten::convolution";
  bool hb = bias && bias->defined();
  ConvArgs a = check_conv(input, weight, hb ? &*bias : nullptr, stride, padding, dilation,
                          transposed, output_padding, groups);
  if (hb) check_devices(op, {&input, &weight, &*bias});
  else check_devices(op, {&input, &weight});
  c10::Device dev = input.device();
  // Integer convolutions (forward only: integers have no gradients) are
  // exact on the device: sums of products wrap modulo 2^bits, as CPU's
  // integer kernels do, in any order.
  // Only int64: the dtype CPU takes on every path (int32 transposed it refuses).
  bool int_conv = input.scalar_type() == at::kLong;
  if (!native_dtype(input.scalar_type()) && !int_conv) {
    dtype_fallback(op, input.scalar_type());
    return at::convolution(input.cpu(), weight.cpu(), opt_cpu(bias), stride, padding, dilation,
                           transposed, output_padding, groups)
        .to(dev);
  }
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(conv_output_sizes(input, weight, a), input.options());
  OpArgs args;
  args.tensor(input);
  args.tensor(weight);
  if (hb) args.tensor(*bias);
  run_op(op, dev.index(), args, conv_attrs(input.scalar_type(), a, hb, false, false), {out});
  return out;
}

std::tuple<Tensor, Tensor, Tensor> convolution_backward_tpu(
    const Tensor& grad_out, const Tensor& input, const Tensor& weight,
    at::OptionalIntArrayRef bias_sizes, IntArrayRef stride, IntArrayRef padding,
    IntArrayRef dilation, bool transposed, IntArrayRef output_padding, int64_t groups,
    std::array<bool, 3> mask) {
  const char* op = "aten::convolution_backward";
  ConvArgs a = check_conv(input, weight, nullptr, stride, padding, dilation, transposed,
                          output_padding, groups);
  check_devices(op, {&grad_out, &input, &weight});
  c10::Device dev = input.device();
  if (!native_dtype(input.scalar_type())) {
    dtype_fallback(op, input.scalar_type());
    auto [gi, gw, gb] = at::convolution_backward(grad_out.cpu(), input.cpu(), weight.cpu(),
                                                 bias_sizes, stride, padding, dilation,
                                                 transposed, output_padding, groups, mask);
    auto back = [&](const Tensor& t) { return t.defined() ? t.to(dev) : t; };
    return {back(gi), back(gw), back(gb)};
  }
  auto want = conv_output_sizes(input, weight, a);
  TORCH_CHECK(grad_out.sizes().equals(want), "convolution_backward: grad_output of size ",
              grad_out.sizes(), " does not match the convolution's output size ", IntArrayRef(want));
  c10::DeviceGuard guard(dev);
  Tensor r[3];
  std::vector<Tensor> outs;
  if (mask[0]) outs.push_back(r[0] = at::empty(input.sizes(), grad_out.options()));
  if (mask[1]) outs.push_back(r[1] = at::empty(weight.sizes(), grad_out.options()));
  if (mask[2]) {
    std::vector<int64_t> bs{grad_out.size(1)};
    if (bias_sizes) bs = bias_sizes->vec();
    outs.push_back(r[2] = at::empty(bs, grad_out.options()));
  }
  if (outs.empty()) return {r[0], r[1], r[2]};
  OpArgs args;
  args.tensor(grad_out);
  args.tensor(input);
  args.tensor(weight);
  run_op(op, dev.index(), args, conv_attrs(input.scalar_type(), a, mask[0], mask[1], mask[2]),
         outs);
  return {r[0], r[1], r[2]};
}

// ---- pooling -------------------------------------------------------------------

// kernel_size, stride (empty: the kernel), padding, dilation as two values
// each, the way PyTorch's pooling kernels read their int lists.
std::vector<int64_t> pair(IntArrayRef v, IntArrayRef dflt) {
  if (v.empty()) v = dflt;
  return {v[0], v.size() == 1 ? v[0] : v[1]};
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
  OpArgs a;
  a.tensor(self);
  run_op(op, dev.index(), a, {k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1]}, {v, idx});
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
  run_op(op, dev.index(), a, {to_tpj_dtype(accumulator(self.scalar_type()))}, {out});
  return out;
}

std::vector<int64_t> avg_attrs(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                               IntArrayRef padding, bool count_include_pad,
                               std::optional<int64_t> divisor_override) {
  auto k = pair(kernel_size, kernel_size), s = pair(stride, kernel_size), p = pair(padding, {0});
  return {k[0], k[1], s[0], s[1], p[0], p[1], count_include_pad,
          divisor_override ? *divisor_override : 0, to_tpj_dtype(accumulator(self.scalar_type()))};
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
  run_op(op, dev.index(), a,
         avg_attrs(self, kernel_size, stride, padding, count_include_pad, divisor_override), {out});
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
  run_op(op, dev.index(), a,
         avg_attrs(self, kernel_size, stride, padding, count_include_pad, divisor_override), {out});
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
  run_op(op, dev.index(), a, {to_tpj_dtype(accumulator(self.scalar_type()))}, {out});
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
  run_op(op, dev.index(), a, {to_tpj_dtype(accumulator(self.scalar_type()))}, {out});
  return out;
}

}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  m.impl("convolution", TORCH_FN(convolution_tpu));
  m.impl("convolution_overrideable", TORCH_FN(convolution_tpu));
  m.impl("convolution_backward", TORCH_FN(convolution_backward_tpu));
  m.impl("convolution_backward_overrideable",
         [](const at::Tensor& g, const at::Tensor& x, const at::Tensor& w, IntArrayRef stride,
            IntArrayRef padding, IntArrayRef dilation, bool transposed, IntArrayRef output_padding,
            int64_t groups,
            std::array<bool, 3> mask) -> std::tuple<at::Tensor, at::Tensor, at::Tensor> {
           return convolution_backward_tpu(g, x, w, std::nullopt, stride, padding, dilation,
                                       transposed, output_padding, groups, mask);
         });
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
