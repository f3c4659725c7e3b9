// Glue for F.interpolate's nearest, nearest-exact, (bi/tri)linear and
// bicubic modes: upsample_{nearest,linear,bilinear,trilinear,bicubic}* and
// _upsample_nearest_exact*, each with its backward. Output shapes and
// argument errors come from PyTorch's meta kernels; the lowerings are
// src/ops/upsample.c and upsample_bicubic.c. Floating types run natively,
// and uint8 for the nearest modes; other dtypes go to CPU's kernel (uint8
// bilinear, or CPU's error). Antialiased resizing (_upsample_bilinear2d_aa,
// _upsample_bicubic2d_aa and their backward; src/ops/upsample_aa.c) runs
// float32 and float64 natively; CPU's kernel takes uint8 too (a separate
// fixed-point algorithm) and refuses half types, so every other dtype goes
// to CPU's kernel (counted, or CPU's error).
// The .out/.grad_input forms are served by outform.cpp (the functional
// kernel, then CPU's out= rules).
#include <ATen/MetaFunctions.h>
#include <cstring>

#include <ATen/ATen.h>
#include <torch/library.h>

#include "ops/copy.h"
#include "ops/fallback.h"
#include "tensor.h"
#include "one_or_cpu.h"
#include "glue.h"
#include <c10/core/DeviceGuard.h>
#include <cmath>
#include "dtype_check.h"

namespace torch_pjrt {
namespace {

using at::Tensor;
using Scales = std::vector<std::optional<double>>;

enum Mode : int64_t { kNearest = 0, kNearestExact = 1, kLinear = 2 };

std::vector<int64_t> upsample_attrs(at::ScalarType dt, Mode mode, bool align_corners,
                                    const Scales& scales) {
  std::vector<int64_t> attrs{to_tpj_dtype(accumulator(dt)), mode, align_corners ? 1 : 0,
                             static_cast<int64_t>(scales.size())};
  for (const auto& s : scales) {
    int64_t bits = 0;
    if (s) std::memcpy(&bits, &*s, sizeof bits);
    attrs.push_back(s ? 1 : 0);
    attrs.push_back(bits);
  }
  return attrs;
}

// The dtypes CPU's kernels take: floating types, and uint8 for nearest.
bool native(Mode mode, at::ScalarType t) {
  return c10::isFloatingType(t) || (mode != kLinear && t == at::kByte);
}

// Runs `op` on x (input or grad_output) into a tensor shaped like meta.
// cpu() is the same call on CPU tensors, for dtypes without a lowering.
template <typename CpuFn>
Tensor run_upsample(const char* op, const Tensor& x, const Tensor& meta, Mode mode,
                    bool align_corners, const Scales& scales, CpuFn cpu) {
  return run_one_or_cpu(op, x, meta, native(mode, x.scalar_type()), [&] {
    return upsample_attrs(x.scalar_type(), mode, align_corners, scales);
  }, cpu);
}

// Forward: CALL (an ATen function call without its namespace) runs as
// at::meta::CALL for the output shape and PyTorch's argument errors (the C++
// meta function: the dispatcher's Meta kernel is a Python decomposition,
// milliseconds a call) and as at::CALL for the CPU fallback.
#define TPJ_UPSAMPLE_FWD(NAME, OP, MODE, AC, SCALES, CALL)                              \
  Tensor NAME(const Tensor& self, ARGS) {                                                \
    auto f = [&](const Tensor& in) { return at::CALL; };                                 \
    Tensor m = [&](const Tensor& in) { return at::meta::CALL; }(to_meta(self));          \
    return in_meta_layout(run_upsample(OP, self, m, MODE, AC, SCALES, f), m);            \
  }

#define ARGS at::IntArrayRef output_size, std::optional<double> s0
TPJ_UPSAMPLE_FWD(nearest1d, "aten::upsample_nearest1d", kNearest, false, (Scales{s0}),
                 upsample_nearest1d(in, output_size, s0))
TPJ_UPSAMPLE_FWD(nearest_exact1d, "aten::_upsample_nearest_exact1d", kNearestExact, false,
                 (Scales{s0}), _upsample_nearest_exact1d(in, output_size, s0))
#undef ARGS
#define ARGS at::IntArrayRef output_size, bool ac, std::optional<double> s0
TPJ_UPSAMPLE_FWD(linear1d, "aten::upsample_linear1d", kLinear, ac, (Scales{s0}),
                 upsample_linear1d(in, output_size, ac, s0))
#undef ARGS
#define ARGS at::IntArrayRef output_size, std::optional<double> s0, std::optional<double> s1
TPJ_UPSAMPLE_FWD(nearest2d, "aten::upsample_nearest2d", kNearest, false, (Scales{s0, s1}),
                 upsample_nearest2d(in, output_size, s0, s1))
TPJ_UPSAMPLE_FWD(nearest_exact2d, "aten::_upsample_nearest_exact2d", kNearestExact, false,
                 (Scales{s0, s1}), _upsample_nearest_exact2d(in, output_size, s0, s1))
#undef ARGS
#define ARGS \
  at::IntArrayRef output_size, bool ac, std::optional<double> s0, std::optional<double> s1
TPJ_UPSAMPLE_FWD(bilinear2d, "aten::upsample_bilinear2d", kLinear, ac, (Scales{s0, s1}),
                 upsample_bilinear2d(in, output_size, ac, s0, s1))
#undef ARGS
#define ARGS                                                                      \
  at::IntArrayRef output_size, std::optional<double> s0, std::optional<double> s1, \
      std::optional<double> s2
TPJ_UPSAMPLE_FWD(nearest3d, "aten::upsample_nearest3d", kNearest, false, (Scales{s0, s1, s2}),
                 upsample_nearest3d(in, output_size, s0, s1, s2))
TPJ_UPSAMPLE_FWD(nearest_exact3d, "aten::_upsample_nearest_exact3d", kNearestExact, false,
                 (Scales{s0, s1, s2}), _upsample_nearest_exact3d(in, output_size, s0, s1, s2))
#undef ARGS
#define ARGS                                                                               \
  at::IntArrayRef output_size, bool ac, std::optional<double> s0, std::optional<double> s1, \
      std::optional<double> s2
TPJ_UPSAMPLE_FWD(trilinear3d, "aten::upsample_trilinear3d", kLinear, ac, (Scales{s0, s1, s2}),
                 upsample_trilinear3d(in, output_size, ac, s0, s1, s2))
#undef ARGS
#undef TPJ_UPSAMPLE_FWD

// Backward: grad_output -> grad_input shaped input_size.
#define TPJ_UPSAMPLE_BWD(NAME, OP, MODE, AC, SCALES, CALL)                               \
  Tensor NAME(const Tensor& grad, ARGS) {                                                 \
    auto f = [&](const Tensor& g) { return at::CALL; };                                   \
    Tensor m = [&](const Tensor& g) { return at::meta::CALL; }(to_meta(grad));            \
    return run_upsample(OP, grad, m, MODE, AC, SCALES, f);                                \
  }

#define ARGS at::IntArrayRef output_size, at::IntArrayRef input_size, std::optional<double> s0
TPJ_UPSAMPLE_BWD(nearest1d_backward, "aten::upsample_nearest1d_backward", kNearest, false,
                 (Scales{s0}), upsample_nearest1d_backward(g, output_size, input_size, s0))
TPJ_UPSAMPLE_BWD(nearest_exact1d_backward, "aten::_upsample_nearest_exact1d_backward",
                 kNearestExact, false, (Scales{s0}),
                 _upsample_nearest_exact1d_backward(g, output_size, input_size, s0))
#undef ARGS
#define ARGS \
  at::IntArrayRef output_size, at::IntArrayRef input_size, bool ac, std::optional<double> s0
TPJ_UPSAMPLE_BWD(linear1d_backward, "aten::upsample_linear1d_backward", kLinear, ac, (Scales{s0}),
                 upsample_linear1d_backward(g, output_size, input_size, ac, s0))
#undef ARGS
#define ARGS                                                                        \
  at::IntArrayRef output_size, at::IntArrayRef input_size, std::optional<double> s0, \
      std::optional<double> s1
TPJ_UPSAMPLE_BWD(nearest2d_backward, "aten::upsample_nearest2d_backward", kNearest, false,
                 (Scales{s0, s1}),
                 upsample_nearest2d_backward(g, output_size, input_size, s0, s1))
TPJ_UPSAMPLE_BWD(nearest_exact2d_backward, "aten::_upsample_nearest_exact2d_backward",
                 kNearestExact, false, (Scales{s0, s1}),
                 _upsample_nearest_exact2d_backward(g, output_size, input_size, s0, s1))
#undef ARGS
#define ARGS                                                                    \
  at::IntArrayRef output_size, at::IntArrayRef input_size, bool ac,              \
      std::optional<double> s0, std::optional<double> s1
TPJ_UPSAMPLE_BWD(bilinear2d_backward, "aten::upsample_bilinear2d_backward", kLinear, ac,
                 (Scales{s0, s1}),
                 upsample_bilinear2d_backward(g, output_size, input_size, ac, s0, s1))
#undef ARGS
#define ARGS                                                                        \
  at::IntArrayRef output_size, at::IntArrayRef input_size, std::optional<double> s0, \
      std::optional<double> s1, std::optional<double> s2
TPJ_UPSAMPLE_BWD(nearest3d_backward, "aten::upsample_nearest3d_backward", kNearest, false,
                 (Scales{s0, s1, s2}),
                 upsample_nearest3d_backward(g, output_size, input_size, s0, s1, s2))
TPJ_UPSAMPLE_BWD(nearest_exact3d_backward, "aten::_upsample_nearest_exact3d_backward",
                 kNearestExact, false, (Scales{s0, s1, s2}),
                 _upsample_nearest_exact3d_backward(g, output_size, input_size, s0, s1, s2))
#undef ARGS
#define ARGS                                                                    \
  at::IntArrayRef output_size, at::IntArrayRef input_size, bool ac,              \
      std::optional<double> s0, std::optional<double> s1, std::optional<double> s2
TPJ_UPSAMPLE_BWD(trilinear3d_backward, "aten::upsample_trilinear3d_backward", kLinear, ac,
                 (Scales{s0, s1, s2}),
                 upsample_trilinear3d_backward(g, output_size, input_size, ac, s0, s1, s2))
#undef ARGS
#undef TPJ_UPSAMPLE_BWD

}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
m.impl("upsample_nearest1d", TORCH_FN(nearest1d));
  m.impl("_upsample_nearest_exact1d", TORCH_FN(nearest_exact1d));
  m.impl("upsample_linear1d", TORCH_FN(linear1d));
  m.impl("upsample_nearest2d", TORCH_FN(nearest2d));
  m.impl("_upsample_nearest_exact2d", TORCH_FN(nearest_exact2d));
  m.impl("upsample_bilinear2d", TORCH_FN(bilinear2d));
  m.impl("upsample_nearest3d", TORCH_FN(nearest3d));
  m.impl("_upsample_nearest_exact3d", TORCH_FN(nearest_exact3d));
  m.impl("upsample_trilinear3d", TORCH_FN(trilinear3d));
  m.impl("upsample_nearest1d_backward", TORCH_FN(nearest1d_backward));
  m.impl("_upsample_nearest_exact1d_backward", TORCH_FN(nearest_exact1d_backward));
  m.impl("upsample_linear1d_backward", TORCH_FN(linear1d_backward));
  m.impl("upsample_nearest2d_backward", TORCH_FN(nearest2d_backward));
  m.impl("_upsample_nearest_exact2d_backward", TORCH_FN(nearest_exact2d_backward));
  m.impl("upsample_bilinear2d_backward", TORCH_FN(bilinear2d_backward));
  m.impl("upsample_nearest3d_backward", TORCH_FN(nearest3d_backward));
  m.impl("_upsample_nearest_exact3d_backward", TORCH_FN(nearest_exact3d_backward));
  m.impl("upsample_trilinear3d_backward", TORCH_FN(trilinear3d_backward));
}

namespace torch_pjrt {

namespace {

using at::Scalar;
using at::Tensor;

// ---- bicubic upsampling ----------------------------------------------------------

// attrs of src/ops/upsample_bicubic.c: compute dtype, align_corners, then per dim
// has_scale and the scale's bits.
std::vector<int64_t> cubic_attrs(const Tensor& x, bool align, std::optional<double> sh,
                                 std::optional<double> sw) {
  std::vector<int64_t> a{acc_dtype(x.scalar_type()), align};
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
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  m.impl("upsample_bicubic2d", TORCH_FN(torch_pjrt::bicubic));
  m.impl("upsample_bicubic2d_backward", TORCH_FN(torch_pjrt::bicubic_backward));
}

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
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  m.impl("_upsample_bilinear2d_aa", TORCH_FN(bilinear_aa));
  m.impl("_upsample_bicubic2d_aa", TORCH_FN(bicubic_aa));
  m.impl("_upsample_bilinear2d_aa_backward", TORCH_FN(bilinear_aa_backward));
  m.impl("_upsample_bicubic2d_aa_backward", TORCH_FN(bicubic_aa_backward));
}
