// Kernel glue for convolution (plain and transposed, 1-3 spatial dims) with
// its backward. Convolution's argument checks repeat CPU's (Convolution.cpp)
// with its wording, because the meta kernel words them differently. The
// lowerings are in src/ops/conv.c; pooling's glue is in pool.cpp.
#include <ATen/MetaFunctions.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>
#include <cstdlib>
#include <sstream>
#include "ops/fallback.h"
#include "tensor.h"
#include "layout.h"
#include "glue.h"

extern "C" {
#include "ops/attrs.h"
}

namespace torch_pjrt {
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
  if (input.size(1) == 0) out[1] = 0;  // CPU's calc_output_size: no input channels, none out
  for (int64_t i = 0; i < a.nsp; ++i) {
    int64_t in = input.size(2 + i), ext = a.dilation[i] * (weight.size(2 + i) - 1);
    out.push_back(a.transposed
                      ? (in - 1) * a.stride[i] - 2 * a.padding[i] + ext + a.output_padding[i] + 1
                      : (in + 2 * a.padding[i] - ext - 1) / a.stride[i] + 1);
  }
  return out;
}

// CPU's backend choice for an empty input (Convolution.cpp,
// select_conv_backend): a zero batch or zero input channels gives an empty
// result, whose channel dim is 0 for zero input channels (calc_output_size),
// as the meta function says too; any other empty input (a zero-length
// spatial dim that padding made fit the kernel) is refused, with the input's
// shape as CPU's kernel sees it (a 1-d convolution runs as a 2-d one).
// Returns true (and *out) when the result is decided here.
bool empty_conv(const Tensor& input, const Tensor& weight, const ConvArgs& a, Tensor* out) {
  if (input.numel() != 0) return false;
  if (input.size(0) != 0 && input.size(1) != 0) {
    std::vector<int64_t> shape = input.sizes().vec();
    if (a.nsp == 1) shape.insert(shape.begin() + 2, 1);
    TORCH_CHECK(false, "Only zero batch or zero channel inputs are supported, but got input shape: ",
                IntArrayRef(shape));
  }
  *out = at::empty(conv_output_sizes(input, weight, a), input.options());
  return true;
}

// tpj_attrs_conv_t, its windows, then flags (tpj_attrs_conv_bias_t or
// tpj_attrs_conv_mask_t).
template <class Flags>
std::vector<int64_t> conv_attrs(at::ScalarType dt, const ConvArgs& a, const Flags& flags) {
  tpj_attrs_conv_t head{};
  head.compute = to_tpj_dtype(accumulator(dt));
  head.transposed = a.transposed;
  head.groups = a.groups;
  head.nsp = a.nsp;
  std::vector<int64_t> tail;
  for (const auto* v : {&a.stride, &a.padding, &a.dilation, &a.output_padding})
    tail.insert(tail.end(), v->begin(), v->end());
  tail.insert(tail.end(), attrs_of(flags).begin(), attrs_of(flags).end());
  return attrs_with_tail(head, tail);
}


// Integer and complex convolutions run on the CPU, reported like any other
// fallback (XLA's convolution is for floating types): dtype_fallback.
Tensor opt_cpu(const std::optional<Tensor>& t) {
  return t && t->defined() ? t->cpu() : Tensor();
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
  Tensor out;
  if (empty_conv(input, weight, a, &out)) return out;
  out = at::empty(conv_output_sizes(input, weight, a), input.options());
  OpArgs args;
  args.tensor(input);
  args.tensor(weight);
  if (hb) args.tensor(*bias);
  // CPU's kernels give a channels_last result when the input or the weight
  // is channels_last (mkldnn_conv_use_channels_last, and the slow paths alike).
  at::MemoryFormat mf = format_of(input);
  if (mf == at::MemoryFormat::Contiguous) mf = format_of(weight);
  tpj_attrs_conv_bias_t flags{};
  flags.has_bias = hb;
  run_op_laid_out(op, dev.index(), args, conv_attrs(input.scalar_type(), a, flags), {out}, mf, 1);
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
  // no input channels: the forward's result was empty, every gradient is
  // zeros (the bias's too, as CPU's)
  auto make = [&](IntArrayRef s) {
    return input.size(1) == 0 ? at::zeros(s, grad_out.options()) : at::empty(s, grad_out.options());
  };
  if (mask[0]) outs.push_back(r[0] = make(input.sizes()));
  if (mask[1]) outs.push_back(r[1] = make(weight.sizes()));
  if (mask[2]) {
    std::vector<int64_t> bs{a.transposed ? weight.size(1) * a.groups : weight.size(0)};
    if (bias_sizes) bs = bias_sizes->vec();
    outs.push_back(r[2] = make(bs));
  }
  if (outs.empty() || input.size(1) == 0) return {r[0], r[1], r[2]};
  OpArgs args;
  args.tensor(grad_out);
  args.tensor(input);
  args.tensor(weight);
  // grad_input is laid out like the input, grad_weight like the weight (CPU).
  at::MemoryFormat fi = format_of(input), fw = format_of(weight);
  uint32_t laid = (mask[0] && fi != at::MemoryFormat::Contiguous ? 1u : 0u) |
                  (mask[1] && fw != at::MemoryFormat::Contiguous ? 1u << (mask[0] ? 1 : 0) : 0u);
  tpj_attrs_conv_mask_t flags{};
  for (int i = 0; i < 3; ++i) flags.mask[i] = mask[i];
  run_op_laid_out(op, dev.index(), args, conv_attrs(input.scalar_type(), a, flags), outs,
                  fi != at::MemoryFormat::Contiguous ? fi : fw, laid);
  return {r[0], r[1], r[2]};
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
}
