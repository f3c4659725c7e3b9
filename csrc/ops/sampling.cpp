// Glue for F.grid_sample: grid_sampler_2d/3d and their backward
// (src/ops/sampling.c) for float32 and float64. CPU's kernels compute half
// types step by step in the half type, which a float32 program would not
// reproduce (a nearest pick can move), so those run CPU's kernel (counted).
// Any call CPU's checks would refuse runs on CPU copies too, so the error is
// CPU's own. The out= forms are served by outform.cpp (the functional
// kernel, then CPU's out= rules: resize warning, dtype and overlap checks).
#include <ATen/MetaFunctions.h>
#include <cstring>
#include <ATen/ATen.h>
#include <torch/library.h>
#include "glue.h"
#include "ops/fallback.h"
#include "tensor.h"
#include "one_or_cpu.h"

extern "C" {
#include "ops/attrs.h"
}

namespace torch_pjrt {
namespace {

using at::Tensor;
using D = std::optional<double>;
using L = at::IntArrayRef;

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

// mode and pad are PyTorch's GridSamplerInterpolation and GridSamplerPadding
tpj_attrs_grid_sampler_t grid_attrs(at::ScalarType t, int64_t mode, int64_t pad, bool ac) {
  tpj_attrs_grid_sampler_t attrs{};
  attrs.compute = to_tpj_dtype(t);
  attrs.interpolation = mode;
  attrs.padding = pad;
  attrs.align_corners = ac;
  return attrs;
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
  run_op(op, dev.index(), a, attrs_of(grid_attrs(input.scalar_type(), mode, pad, ac)), {out});
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
  tpj_attrs_grid_sampler_backward_t attrs{};
  attrs.sampler = grid_attrs(input.scalar_type(), mode, pad, ac);
  attrs.want_input = mask[0];
  std::vector<Tensor> outs;
  if (gi.defined()) outs.push_back(gi);
  outs.push_back(gg);
  run_op(op, dev.index(), a, attrs_of(attrs), outs);
  return {gi, gg};
}
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  m.impl("grid_sampler_2d", TORCH_FN(grid_sampler<2>));
  m.impl("grid_sampler_3d", TORCH_FN(grid_sampler<3>));
  m.impl("grid_sampler_2d_backward", TORCH_FN(grid_sampler_backward<2>));
  m.impl("grid_sampler_3d_backward", TORCH_FN(grid_sampler_backward<3>));
}
