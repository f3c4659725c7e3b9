// Glue for the sampling ops.
// - Antialiased resizing (_upsample_bilinear2d_aa, _upsample_bicubic2d_aa,
//   their backward; src/ops/sampling.c). Output shapes and argument errors
//   come from PyTorch's meta kernels. float32 and float64 run natively;
//   CPU's kernel takes uint8 too (a separate fixed-point algorithm) and
//   refuses half types, so every other dtype goes to CPU's kernel (counted,
//   or CPU's error).
// - grid_sampler_2d/3d and their backward (src/ops/grid_sampler.c) for
//   float32 and float64. CPU's kernels compute half types step by step in
//   the half type, which a float32 program would not reproduce (a nearest
//   pick can move), so those run CPU's kernel (counted). Any call CPU's
//   checks would refuse runs on CPU copies too, so the error is CPU's own.
// - igamma / igammac (src/ops/igamma.c): functional and in-place, for
//   floating results (half types compute in float32, as CPU does).
// The out= forms of all of these are served by outform.cpp (the functional
// kernel, then CPU's out= rules: resize warning, dtype and overlap checks).
#include <ATen/MetaFunctions.h>
#include <cstring>

#include <ATen/ATen.h>
#include <torch/library.h>

#include "common.h"
#include "one_or_cpu.h"

namespace torch_pjrt {
namespace {

using at::Tensor;
using D = std::optional<double>;
using L = at::IntArrayRef;

std::vector<int64_t> aa_attrs(at::ScalarType dt, bool bicubic, bool align_corners, D sh, D sw) {
  std::vector<int64_t> attrs{to_tpj_dtype(dt), bicubic ? 1 : 0, align_corners ? 1 : 0};
  for (const D& s : {sh, sw}) {
    int64_t bits = 0;
    if (s) std::memcpy(&bits, &*s, sizeof bits);
    attrs.push_back(s ? 1 : 0);
    attrs.push_back(bits);
  }
  return attrs;
}

// Runs `op` on x (input or grad_output) into a tensor shaped like meta; cpu
// is the same call on CPU tensors, for the dtypes without a lowering.
template <typename CpuFn>
Tensor run_aa(const char* op, const Tensor& x, const Tensor& meta, bool bicubic, bool ac, D sh,
              D sw, CpuFn cpu) {
  at::ScalarType t = x.scalar_type();
  return run_one_or_cpu(op, x, meta, t == at::kFloat || t == at::kDouble,
                        [&] { return aa_attrs(t, bicubic, ac, sh, sw); }, cpu);
}

Tensor bilinear_aa(const Tensor& self, L size, bool ac, D sh, D sw) {
  auto f = [&](const Tensor& in) { return at::_upsample_bilinear2d_aa(in, size, ac, sh, sw); };
  return run_aa("aten::_upsample_bilinear2d_aa", self, f(to_meta(self)), false, ac, sh, sw, f);
}

Tensor bicubic_aa(const Tensor& self, L size, bool ac, D sh, D sw) {
  auto f = [&](const Tensor& in) { return at::_upsample_bicubic2d_aa(in, size, ac, sh, sw); };
  return run_aa("aten::_upsample_bicubic2d_aa", self, f(to_meta(self)), true, ac, sh, sw, f);
}

Tensor bilinear_aa_backward(const Tensor& grad, L size, L input_size, bool ac, D sh, D sw) {
  auto f = [&](const Tensor& g) {
    return at::_upsample_bilinear2d_aa_backward(g, size, input_size, ac, sh, sw);
  };
  return run_aa("aten::_upsample_bilinear2d_aa_backward", grad, f(to_meta(grad)), false, ac, sh,
                sw, f);
}

Tensor bicubic_aa_backward(const Tensor& grad, L size, L input_size, bool ac, D sh, D sw) {
  auto f = [&](const Tensor& g) {
    return at::_upsample_bicubic2d_aa_backward(g, size, input_size, ac, sh, sw);
  };
  return run_aa("aten::_upsample_bicubic2d_aa_backward", grad, f(to_meta(grad)), true, ac, sh,
                sw, f);
}

// True when CPU's grid sampler checks (check_grid_sampler_common, _2d, _3d)
// pass and the call has a lowering: float32/float64, known modes.
bool grid_native(const Tensor& input, const Tensor& grid, int64_t mode, int64_t pad, int k) {
  if (input.layout() != at::kStrided || grid.layout() != at::kStrided) return false;
  if (input.dim() != k + 2 || grid.dim() != k + 2) return false;
  if (grid.size(0) != input.size(0) || grid.size(-1) != k) return false;
  for (int64_t d = 2; d < input.dim(); ++d)
    if (input.size(d) == 0) return false;
  at::ScalarType t = input.scalar_type();
  if (grid.scalar_type() != t || (t != at::kFloat && t != at::kDouble)) return false;
  return mode >= 0 && mode <= (k == 2 ? 2 : 1) && pad >= 0 && pad <= 2;
}

std::vector<int64_t> grid_attrs(at::ScalarType t, int64_t mode, int64_t pad, bool ac) {
  return {to_tpj_dtype(t), mode, pad, ac ? 1 : 0};
}

template <int K>
Tensor grid_sampler(const Tensor& input, const Tensor& grid, int64_t mode, int64_t pad, bool ac) {
  const char* op = K == 2 ? "aten::grid_sampler_2d" : "aten::grid_sampler_3d";
  c10::Device dev = common_device(op, {&input, &grid});
  check_supported(input, op);
  check_supported(grid, op);
  if (!grid_native(input, grid, mode, pad, K)) {
    Tensor r = K == 2 ? at::grid_sampler_2d(input.cpu(), grid.cpu(), mode, pad, ac)
                      : at::grid_sampler_3d(input.cpu(), grid.cpu(), mode, pad, ac);
    dtype_fallback(op, input.scalar_type());
    return r.to(dev);
  }
  c10::DeviceGuard guard(dev);
  std::vector<int64_t> sizes{input.size(0), input.size(1)};
  for (int d = 1; d <= K; ++d) sizes.push_back(grid.size(d));
  Tensor out = at::empty(sizes, input.options());
  if (out.numel() == 0) return out;
  OpArgs a;
  a.tensor(input);
  a.tensor(grid);
  run_op(op, dev.index(), a, grid_attrs(input.scalar_type(), mode, pad, ac), {out});
  return out;
}

template <int K>
std::tuple<Tensor, Tensor> grid_sampler_backward(const Tensor& grad, const Tensor& input,
                                                 const Tensor& grid, int64_t mode, int64_t pad,
                                                 bool ac, std::array<bool, 2> mask) {
  const char* op = K == 2 ? "aten::grid_sampler_2d_backward" : "aten::grid_sampler_3d_backward";
  c10::Device dev = common_device(op, {&grad, &input, &grid});
  check_supported(grad, op);
  if (!grid_native(input, grid, mode, pad, K) || grad.scalar_type() != input.scalar_type() ||
      grad.dim() != K + 2) {
    auto r = K == 2 ? at::grid_sampler_2d_backward(grad.cpu(), input.cpu(), grid.cpu(), mode, pad,
                                                   ac, mask)
                    : at::grid_sampler_3d_backward(grad.cpu(), input.cpu(), grid.cpu(), mode, pad,
                                                   ac, mask);
    dtype_fallback(op, input.scalar_type());
    Tensor gi = std::get<0>(r);
    return {gi.defined() ? gi.to(dev) : gi, std::get<1>(r).to(dev)};
  }
  c10::DeviceGuard guard(dev);
  Tensor gi = mask[0] ? at::empty(input.sizes(), input.options()) : Tensor();
  Tensor gg = at::empty(grid.sizes(), grid.options());
  if (grad.numel() == 0) {
    if (gi.defined()) gi.zero_();
    gg.zero_();
    return {gi, gg};
  }
  OpArgs a;
  a.tensor(grad);
  a.tensor(input);
  a.tensor(grid);
  std::vector<int64_t> attrs = grid_attrs(input.scalar_type(), mode, pad, ac);
  attrs.push_back(mask[0] ? 1 : 0);
  std::vector<Tensor> outs;
  if (gi.defined()) outs.push_back(gi);
  outs.push_back(gg);
  run_op(op, dev.index(), a, attrs, outs);
  return {gi, gg};
}

Tensor igamma_impl(const Tensor& a, const Tensor& x, bool upper) {
  const char* op = upper ? "aten::igammac" : "aten::igamma";
  c10::Device dev = common_device(op, {&a, &x});
  Tensor m = upper ? at::meta::igammac(to_meta(a), to_meta(x)) : at::meta::igamma(to_meta(a), to_meta(x));
  at::ScalarType t = m.scalar_type();
  // The meta function promotes integers to float, but CPU's kernel runs in
  // the inputs' common dtype and refuses integers (with its own error).
  if (!c10::isFloatingType(t) || !c10::isFloatingType(at::result_type(a, x))) {
    Tensor r = upper ? at::igammac(a.cpu(), x.cpu()) : at::igamma(a.cpu(), x.cpu());
    dtype_fallback(op, t);
    return r.to(dev);
  }
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(m.sizes(), m.options().device(dev));
  if (out.numel() == 0) return out;
  OpArgs args;
  add_operand(args, a, dev.index());
  add_operand(args, x, dev.index());
  run_op(op, dev.index(), args, {to_tpj_dtype(accumulator(t)), upper ? 1 : 0}, {out});
  return out;
}

Tensor igamma_tpu(const Tensor& a, const Tensor& x) { return igamma_impl(a, x, false); }
Tensor igammac_tpu(const Tensor& a, const Tensor& x) { return igamma_impl(a, x, true); }
Tensor& igamma_inplace(Tensor& self, const Tensor& x) {
  assign_result(self, igamma_impl(self, x, false), "aten::igamma_");
  return self;
}
Tensor& igammac_inplace(Tensor& self, const Tensor& x) {
  assign_result(self, igamma_impl(self, x, true), "aten::igammac_");
  return self;
}

}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  m.impl("_upsample_bilinear2d_aa", TORCH_FN(bilinear_aa));
  m.impl("_upsample_bicubic2d_aa", TORCH_FN(bicubic_aa));
  m.impl("_upsample_bilinear2d_aa_backward", TORCH_FN(bilinear_aa_backward));
  m.impl("_upsample_bicubic2d_aa_backward", TORCH_FN(bicubic_aa_backward));
  m.impl("grid_sampler_2d", TORCH_FN(grid_sampler<2>));
  m.impl("grid_sampler_3d", TORCH_FN(grid_sampler<3>));
  m.impl("grid_sampler_2d_backward", TORCH_FN(grid_sampler_backward<2>));
  m.impl("grid_sampler_3d_backward", TORCH_FN(grid_sampler_backward<3>));
  m.impl("igamma", TORCH_FN(igamma_tpu));
  m.impl("igammac", TORCH_FN(igammac_tpu));
  m.impl("igamma_", TORCH_FN(igamma_inplace));
  m.impl("igammac_", TORCH_FN(igammac_inplace));
}
