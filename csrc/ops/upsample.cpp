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

extern "C" {
#include "ops/attrs.h"
}

namespace torch_pjrt {
namespace {

using at::Tensor;
using Scales = std::vector<std::optional<double>>;

using Mode = tpj_upsample_mode_t;

tpj_attrs_scale_t scale_attrs(const std::optional<double>& s) {
  tpj_attrs_scale_t attrs{};
  attrs.has_scale = s.has_value();
  if (s) std::memcpy(&attrs.bits, &*s, sizeof attrs.bits);
  return attrs;
}

std::vector<int64_t> upsample_attrs(at::ScalarType dt, Mode mode, bool align_corners,
                                    const Scales& scales) {
  tpj_attrs_upsample_t head{};
  head.compute = to_tpj_dtype(accumulator(dt));
  head.mode = mode;
  head.align_corners = align_corners;
  head.nsp = static_cast<int64_t>(scales.size());
  std::vector<int64_t> tail;
  for (const auto& s : scales) {
    tpj_attrs_scale_t one = scale_attrs(s);
    tail.insert(tail.end(), attrs_of(one).begin(), attrs_of(one).end());
  }
  return attrs_with_tail(head, tail);
}

// The dtypes CPU's kernels take: floating types, and uint8 for nearest.
bool native(Mode mode, at::ScalarType t) {
  return c10::isFloatingType(t) || (mode != TPJ_UPSAMPLE_LINEAR && t == at::kByte);
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
TPJ_UPSAMPLE_FWD(nearest1d, "aten::upsample_nearest1d", TPJ_UPSAMPLE_NEAREST, false, (Scales{s0}),
                 upsample_nearest1d(in, output_size, s0))
TPJ_UPSAMPLE_FWD(nearest_exact1d, "aten::_upsample_nearest_exact1d",
                 TPJ_UPSAMPLE_NEAREST_EXACT, false,
                 (Scales{s0}), _upsample_nearest_exact1d(in, output_size, s0))
#undef ARGS
#define ARGS at::IntArrayRef output_size, bool ac, std::optional<double> s0
TPJ_UPSAMPLE_FWD(linear1d, "aten::upsample_linear1d", TPJ_UPSAMPLE_LINEAR, ac, (Scales{s0}),
                 upsample_linear1d(in, output_size, ac, s0))
#undef ARGS
#define ARGS at::IntArrayRef output_size, std::optional<double> s0, std::optional<double> s1
TPJ_UPSAMPLE_FWD(nearest2d, "aten::upsample_nearest2d",
                 TPJ_UPSAMPLE_NEAREST, false, (Scales{s0, s1}),
                 upsample_nearest2d(in, output_size, s0, s1))
TPJ_UPSAMPLE_FWD(nearest_exact2d, "aten::_upsample_nearest_exact2d",
                 TPJ_UPSAMPLE_NEAREST_EXACT, false,
                 (Scales{s0, s1}), _upsample_nearest_exact2d(in, output_size, s0, s1))
#undef ARGS
#define ARGS \
  at::IntArrayRef output_size, bool ac, std::optional<double> s0, std::optional<double> s1
TPJ_UPSAMPLE_FWD(bilinear2d, "aten::upsample_bilinear2d", TPJ_UPSAMPLE_LINEAR, ac, (Scales{s0, s1}),
                 upsample_bilinear2d(in, output_size, ac, s0, s1))
#undef ARGS
#define ARGS                                                                      \
  at::IntArrayRef output_size, std::optional<double> s0, std::optional<double> s1, \
      std::optional<double> s2
TPJ_UPSAMPLE_FWD(nearest3d, "aten::upsample_nearest3d",
                 TPJ_UPSAMPLE_NEAREST, false, (Scales{s0, s1, s2}),
                 upsample_nearest3d(in, output_size, s0, s1, s2))
TPJ_UPSAMPLE_FWD(nearest_exact3d, "aten::_upsample_nearest_exact3d",
                 TPJ_UPSAMPLE_NEAREST_EXACT, false,
                 (Scales{s0, s1, s2}), _upsample_nearest_exact3d(in, output_size, s0, s1, s2))
#undef ARGS
#define ARGS                                                                               \
  at::IntArrayRef output_size, bool ac, std::optional<double> s0, std::optional<double> s1, \
      std::optional<double> s2
TPJ_UPSAMPLE_FWD(trilinear3d, "aten::upsample_trilinear3d",
                 TPJ_UPSAMPLE_LINEAR, ac, (Scales{s0, s1, s2}),
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
TPJ_UPSAMPLE_BWD(nearest1d_backward, "aten::upsample_nearest1d_backward",
                 TPJ_UPSAMPLE_NEAREST, false,
                 (Scales{s0}), upsample_nearest1d_backward(g, output_size, input_size, s0))
TPJ_UPSAMPLE_BWD(nearest_exact1d_backward, "aten::_upsample_nearest_exact1d_backward",
                 TPJ_UPSAMPLE_NEAREST_EXACT, false, (Scales{s0}),
                 _upsample_nearest_exact1d_backward(g, output_size, input_size, s0))
#undef ARGS
#define ARGS \
  at::IntArrayRef output_size, at::IntArrayRef input_size, bool ac, std::optional<double> s0
TPJ_UPSAMPLE_BWD(linear1d_backward, "aten::upsample_linear1d_backward",
                 TPJ_UPSAMPLE_LINEAR, ac, (Scales{s0}),
                 upsample_linear1d_backward(g, output_size, input_size, ac, s0))
#undef ARGS
#define ARGS                                                                        \
  at::IntArrayRef output_size, at::IntArrayRef input_size, std::optional<double> s0, \
      std::optional<double> s1
TPJ_UPSAMPLE_BWD(nearest2d_backward, "aten::upsample_nearest2d_backward",
                 TPJ_UPSAMPLE_NEAREST, false,
                 (Scales{s0, s1}),
                 upsample_nearest2d_backward(g, output_size, input_size, s0, s1))
TPJ_UPSAMPLE_BWD(nearest_exact2d_backward, "aten::_upsample_nearest_exact2d_backward",
                 TPJ_UPSAMPLE_NEAREST_EXACT, false, (Scales{s0, s1}),
                 _upsample_nearest_exact2d_backward(g, output_size, input_size, s0, s1))
#undef ARGS
#define ARGS                                                                    \
  at::IntArrayRef output_size, at::IntArrayRef input_size, bool ac,              \
      std::optional<double> s0, std::optional<double> s1
TPJ_UPSAMPLE_BWD(bilinear2d_backward, "aten::upsample_bilinear2d_backward", TPJ_UPSAMPLE_LINEAR, ac,
                 (Scales{s0, s1}),
                 upsample_bilinear2d_backward(g, output_size, input_size, ac, s0, s1))
#undef ARGS
#define ARGS                                                                        \
  at::IntArrayRef output_size, at::IntArrayRef input_size, std::optional<double> s0, \
      std::optional<double> s1, std::optional<double> s2
TPJ_UPSAMPLE_BWD(nearest3d_backward, "aten::upsample_nearest3d_backward",
                 TPJ_UPSAMPLE_NEAREST, false,
                 (Scales{s0, s1, s2}),
                 upsample_nearest3d_backward(g, output_size, input_size, s0, s1, s2))
TPJ_UPSAMPLE_BWD(nearest_exact3d_backward, "aten::_upsample_nearest_exact3d_backward",
                 TPJ_UPSAMPLE_NEAREST_EXACT, false, (Scales{s0, s1, s2}),
                 _upsample_nearest_exact3d_backward(g, output_size, input_size, s0, s1, s2))
#undef ARGS
#define ARGS                                                                    \
  at::IntArrayRef output_size, at::IntArrayRef input_size, bool ac,              \
      std::optional<double> s0, std::optional<double> s1, std::optional<double> s2
TPJ_UPSAMPLE_BWD(trilinear3d_backward, "aten::upsample_trilinear3d_backward",
                 TPJ_UPSAMPLE_LINEAR, ac,
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

tpj_attrs_upsample_bicubic_t cubic_attrs(const Tensor& x, bool align, std::optional<double> sh,
                                         std::optional<double> sw) {
  tpj_attrs_upsample_bicubic_t attrs{};
  attrs.compute = acc_dtype(x.scalar_type());
  attrs.align_corners = align;
  attrs.scales[0] = scale_attrs(sh);
  attrs.scales[1] = scale_attrs(sw);
  return attrs;
}

// Floating inputs run natively; others (uint8) run CPU's kernel, counted,
// which also raises CPU's error for dtypes CPU lacks.
template <typename F>
Tensor run_cubic(const char* op, const Tensor& x, const tpj_attrs_upsample_bicubic_t& attrs,
                 F f) {
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
  run_op(op, x.device().index(), a, attrs_of(attrs), {out});
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
  tpj_attrs_upsample_aa_t attrs{};
  attrs.compute = to_tpj_dtype(dt);
  attrs.bicubic = bicubic;
  attrs.align_corners = align_corners;
  attrs.scales[0] = scale_attrs(sh);
  attrs.scales[1] = scale_attrs(sw);
  return attrs_of(attrs).vec();
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
