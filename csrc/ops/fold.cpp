// Kernel glue for src/ops/fold.c: im2col / col2im (F.unfold, F.fold),
// unfold_backward and max_unpool2d/3d. Shapes and argument errors come from
// the meta functions; max_unpool's indices are checked on the host first,
// because XLA would drop an out-of-range write where CPU raises.
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <functional>
#include <sstream>

#include "graph.h"
#include "ops/copy.h"
#include "ops/fallback.h"
#include "tensor.h"
#include "dtype_check.h"
#include "glue.h"

extern "C" {
#include "ops/attrs.h"
}

namespace torch_pjrt {


namespace {

using at::IntArrayRef;
using at::Tensor;

Tensor run_fold(const char* op, std::initializer_list<const Tensor*> ts, const Tensor& meta,
                c10::ArrayRef<int64_t> attrs) {
  for (const Tensor* t : ts) check_supported(*t, op);
  c10::Device dev = common_device(op, ts);
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(meta.sizes(), meta.options().device(dev));
  OpArgs a;
  for (const Tensor* t : ts) a.tensor(*t);
  run_op(op, dev.index(), a, attrs, {out});
  return out;
}

tpj_attrs_im2col_t fold_attrs(IntArrayRef k, IntArrayRef d, IntArrayRef p, IntArrayRef s) {
  auto pick = [](IntArrayRef v, size_t i) { return v.size() == 1 ? v[0] : v[i]; };
  tpj_attrs_im2col_t attrs{};
  for (size_t i = 0; i < 2; ++i) {
    attrs.kernel[i] = pick(k, i);
    attrs.dilation[i] = pick(d, i);
    attrs.padding[i] = pick(p, i);
    attrs.stride[i] = pick(s, i);
  }
  return attrs;
}

// im2col/col2im on CPU: floating, complex and bool, no other integers.
void check_fold_dtype(const Tensor& x, const char* name) {
  at::ScalarType t = x.scalar_type();
  check_cpu_dtype(!c10::isIntegralType(t, false), t, name);
}

Tensor im2col(const Tensor& x, IntArrayRef k, IntArrayRef d, IntArrayRef p, IntArrayRef s) {
  check_fold_dtype(x, "im2col_out_cpu");
  Tensor m = at::im2col(to_meta(x), k, d, p, s);
  return run_fold("aten::im2col", {&x}, m, attrs_of(fold_attrs(k, d, p, s)));
}

Tensor col2im(const Tensor& x, c10::SymIntArrayRef size, IntArrayRef k, IntArrayRef d,
              IntArrayRef p, IntArrayRef s) {
  check_fold_dtype(x, "col2im_out_cpu");
  Tensor m = at::col2im_symint(to_meta(x), size, k, d, p, s);
  tpj_attrs_col2im_t attrs{};
  attrs.window = fold_attrs(k, d, p, s);
  attrs.compute = to_tpj_dtype(accumulator(x.scalar_type()));
  return run_fold("aten::col2im", {&x}, m, attrs_of(attrs));
}

Tensor unfold_backward(const Tensor& g, c10::SymIntArrayRef sizes, int64_t dim, int64_t size,
                       int64_t step) {
  const char* op = "aten::unfold_backward";
  auto in = C10_AS_INTARRAYREF_SLOW(sizes);
  Tensor m = at::unfold_backward_symint(to_meta(g), sizes, dim, size, step);
  tpj_attrs_unfold_backward_t attrs{};
  attrs.size = size;
  attrs.step = step;
  attrs.compute = to_tpj_dtype(accumulator(g.scalar_type()));
  if (in.empty()) {
    // a 0-d input unfolds as one element of a 1-D one
    Tensor g2 = g.reshape({1, 1});
    attrs.dim = 0;
    Tensor r = run_fold(op, {&g2}, at::empty({1}, m.options()), attrs_of(attrs));
    return r.reshape({});
  }
  attrs.dim = c10::maybe_wrap_dim(dim, static_cast<int64_t>(in.size()));
  return run_fold(op, {&g}, m, attrs_of(attrs));
}

// CPU's check: every index lies in its output plane; reports the first bad one.
void check_unpool_indices(const Tensor& indices, IntArrayRef out_size) {
  if (tracing() && !indices.device().is_cpu()) return;  // a compiled graph cannot wait
  int64_t plane = 1;
  for (int64_t v : out_size) plane *= v;
  int64_t lo = 0, hi = 0;
  if (!index_bounds(indices, &lo, &hi) || (lo >= 0 && hi < plane)) return;
  Tensor h = (indices.device().is_cpu() ? indices : to_host(indices)).reshape(-1);
  Tensor bad = ((h < 0) | (h >= plane)).nonzero();
  int64_t v = h[bad[0][0].item<int64_t>()].item<int64_t>();
  std::ostringstream ss;
  for (size_t i = 0; i < out_size.size(); ++i) ss << (i ? "x" : "") << out_size[i];
  TORCH_CHECK(false, "Found an invalid max index: ", v, " (output volumes are of size ", ss.str());
}

// True when two values written to the same output slot differ: CPU's choice
// among them is its kernel's loop order, which the lowering does not follow
// (it keeps the last). Equal values (overlapping pooling windows) are fine.
bool unpool_conflicts(const Tensor& x, const Tensor& indices, int64_t nsp) {
  if (tracing()) return false;
  Tensor ih = (indices.device().is_cpu() ? indices : to_host(indices)).to(at::kLong);
  if (ih.numel() == 0) return false;
  int64_t per = 1;
  for (int64_t i = 0; i < nsp; ++i) per *= ih.size(ih.dim() - 1 - i);
  Tensor keys = ih.reshape({-1, per});
  int64_t span = keys.max().item<int64_t>() + 1;
  keys = (keys + at::arange(keys.size(0)).unsqueeze(1) * span).reshape(-1);
  if (std::get<0>(at::_unique(keys)).numel() == keys.numel()) return false;
  Tensor v = to_host(x).reshape(-1);
  auto [sorted, order] = keys.sort(std::optional<bool>(true), 0, false);
  Tensor same = sorted.slice(0, 1).eq(sorted.slice(0, 0, -1));
  Tensor vs = v.index_select(0, order);
  Tensor differ = vs.slice(0, 1).ne(vs.slice(0, 0, -1));
  return (same & differ).any().item<bool>();
}

Tensor max_unpool(const char* op, const Tensor& x, const Tensor& idx, IntArrayRef size,
                  const Tensor& meta, int64_t nsp, const std::function<Tensor()>& on_cpu) {
  check_unpool_indices(idx, size);
  if (unpool_conflicts(x, idx, nsp)) {
    dtype_fallback(op, x.scalar_type());
    return on_cpu().to(x.device());
  }
  tpj_attrs_max_unpool_t attrs{};
  attrs.nsp = nsp;
  return run_fold(op, {&x, &idx}, meta, attrs_of(attrs));
}

Tensor max_unpool2d(const Tensor& x, const Tensor& idx, c10::SymIntArrayRef size) {
  Tensor m = at::max_unpool2d_symint(to_meta(x), to_meta(idx), size);
  check_floating_dtype(x, "max_unpool2d");
  return max_unpool("aten::max_unpool2d", x, idx, C10_AS_INTARRAYREF_SLOW(size), m, 2, [&] {
    return at::max_unpool2d_symint(to_host(x), to_host(idx), size);
  });
}

Tensor max_unpool3d(const Tensor& x, const Tensor& idx, c10::SymIntArrayRef size,
                    IntArrayRef stride, IntArrayRef padding) {
  Tensor m = at::max_unpool3d_symint(to_meta(x), to_meta(idx), size, stride, padding);
  check_floating_dtype(x, "max_unpool3d");
  return max_unpool("aten::max_unpool3d", x, idx, C10_AS_INTARRAYREF_SLOW(size), m, 3, [&] {
    return at::max_unpool3d_symint(to_host(x), to_host(idx), size, stride, padding);
  });
}

}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  // The out= forms are served by outform.cpp: the functional kernel, then
  // CPU's out= rules (CPU checks no overlap for these ops; the result is
  // computed before the out is written, so an overlapping out is exact).
  m.impl("im2col", TORCH_FN(torch_pjrt::im2col));
  m.impl("col2im", TORCH_FN(torch_pjrt::col2im));
  m.impl("unfold_backward", TORCH_FN(torch_pjrt::unfold_backward));
  m.impl("max_unpool2d", TORCH_FN(torch_pjrt::max_unpool2d));
  m.impl("max_unpool3d", TORCH_FN(torch_pjrt::max_unpool3d));
}
