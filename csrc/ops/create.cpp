// Kernel glue for tensor creation (src/ops/create.c): arange, linspace,
// logspace, eye, tril_indices/triu_indices and _efficientzerotensor. Sizes
// and argument errors follow CPU: arange's and linspace's size rules are
// CPU's (in the accumulate type), the rest run the op on meta tensors first.
#include <ATen/MetaFunctions.h>
#include <ATen/AccumulateType.h>
#include <ATen/Dispatch.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/unfold_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>
#include "ops/fallback.h"
#include "ops/write.h"
#include "runtime.h"
#include "tensor.h"
#include "dtype_check.h"
#include "glue.h"
#include <ATen/ExpandUtils.h>
#include <string>
#include "storage_dtypes.h"
#include <ATen/native/Resize.h>
#include <algorithm>

extern "C" {
#include "ops/attrs.h"
}

namespace torch_pjrt {
namespace {

using at::Scalar;
using at::ScalarType;
using at::Tensor;

// Makes out n elements long, as CPU's arange and linspace do.
void resize_1d(Tensor& out, int64_t n, bool warn) {
  if (out.numel() == n) return;
  if (warn && out.numel() > 0)
    TORCH_WARN("The number of elements in the out tensor of shape ", out.sizes(), " is ",
               out.numel(), " which does not match the computed number of elements ", n,
               ". Note that this may occur as a result of rounding error. The out tensor will be "
               "resized to a tensor of shape (", n, ",).");
  out.resize_({n});
}

Tensor& arange_out(const Scalar& start, const Scalar& end, const Scalar& step, Tensor& out) {
  const char* op = "aten::arange.start_out";
  check_supported(out, op);
  int64_t size = 0;
  ScalarType acc = out.scalar_type();
  AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, out.scalar_type(), "arange_cpu", [&] {
    using acc_t = at::acc_type<scalar_t, false>;
    acc = c10::CppTypeToScalarType<acc_t>::value;
    // every dtype checks and sizes in double first; the values use acc_t
    double xstart = start.to<double>(), xend = end.to<double>(), xstep = step.to<double>();
    TORCH_CHECK(xstep > 0 || xstep < 0, "step must be nonzero");
    TORCH_CHECK(std::isfinite(xstart) && std::isfinite(xend), "unsupported range: ",
                start.to<acc_t>(), " -> ", end.to<acc_t>());
    TORCH_CHECK((xstep > 0 && xend >= xstart) || (xstep < 0 && xend <= xstart),
                "upper bound and lower bound inconsistent with step sign");
    double size_d = std::ceil((xend - xstart) / xstep);
    TORCH_CHECK(size_d >= 0 && size_d <= static_cast<double>(std::numeric_limits<int64_t>::max()),
                "invalid size, possible overflow?");
    size = static_cast<int64_t>(size_d);
    if constexpr (std::is_same_v<scalar_t, int64_t>) {
      // int64 then re-checks and sizes with the truncated values (ValueError)
      int64_t istart = start.to<int64_t>(), iend = end.to<int64_t>(), istep = step.to<int64_t>();
      TORCH_CHECK_VALUE(istep != 0, "step must be nonzero");
      TORCH_CHECK_VALUE((istep > 0 && iend >= istart) || (istep < 0 && iend <= istart),
                        "upper bound and lower bound inconsistent with step sign");
      int64_t sgn = (istep > 0) - (istep < 0);
      size = (iend - istart + istep - sgn) / istep;
    }
  });
  resize_1d(out, size, /*warn=*/true);
  if (size == 0) return out;
  c10::DeviceGuard guard(out.device());
  Tensor r = at::empty({size}, out.options());
  OpArgs a;
  a.scalar(start, acc, out.device().index());
  a.scalar(step, acc, out.device().index());
  tpj_attrs_compute_t attrs{};
  attrs.compute = to_tpj_dtype(acc);
  run_op(op, out.device().index(), a, attrs_of(attrs), {r});
  assign_result(out, r, "aten::arange");
  return out;
}

Tensor& linspace_out(const Scalar& start, const Scalar& end, int64_t steps, Tensor& out) {
  const char* op = "aten::linspace.out";
  check_supported(out, op);
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  ScalarType t = out.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(!c10::isComplexType(t) && t != at::kBool, "\"linspace_cpu\" not "
                              "implemented for '", t, "' on tpu");
  resize_1d(out, steps, /*warn=*/false);
  if (steps == 0) return out;
  // CPU steps in double for integer outputs, in the output's dtype otherwise
  ScalarType cd = c10::isIntegralType(t, false) ? at::kDouble : t;
  c10::DeviceGuard guard(out.device());
  Tensor r = at::empty({steps}, out.options());
  OpArgs a;
  a.scalar(start, t, out.device().index());
  a.scalar(end, t, out.device().index());
  tpj_attrs_compute_t attrs{};
  attrs.compute = to_tpj_dtype(cd);
  run_op(op, out.device().index(), a, attrs_of(attrs), {r});
  assign_result(out, r, "aten::linspace");
  return out;
}

Tensor& eye_out(int64_t n, int64_t m, Tensor& out) {
  const char* op = "aten::eye.m_out";
  TORCH_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
  TORCH_CHECK(m >= 0, "m must be greater or equal to 0, got ", m);
  check_supported(out, op);
  out.resize_({n, m});
  if (n == 0 || m == 0) return out;
  c10::DeviceGuard guard(out.device());
  Tensor r = at::empty({n, m}, out.options());
  OpArgs a;
  run_op(op, out.device().index(), a, {}, {r});
  assign_result(out, r, "aten::eye");
  return out;
}
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  using at::Tensor;
  m.impl("arange.start_out", TORCH_FN(arange_out));
  m.impl("linspace.out", TORCH_FN(linspace_out));
  m.impl("eye.m_out", TORCH_FN(eye_out));
  m.impl("eye.out", [](int64_t n, Tensor& out) -> Tensor& { return eye_out(n, n, out); });
}
namespace torch_pjrt {
namespace {

using at::Scalar;
using at::ScalarType;
using at::Tensor;

// logspace into out: base ** linspace(start, end, steps), both native, for
// floating outs (CPU's kernel also takes the exponent in out's dtype); other
// dtypes run CPU's kernel.
Tensor& logspace_out(const Scalar& start, const Scalar& end, int64_t steps, double base,
                     Tensor& out) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  ScalarType t = out.scalar_type();
  if (!c10::isFloatingType(t)) {
    dtype_fallback("aten::logspace.out", t);
    Tensor r = at::logspace(start, end, steps, base, out.options().device(at::kCPU));
    return out_result(out, r.to(out.device()), "aten::logspace.out");
  }
  Tensor lin = at::linspace(start, end, steps, out.options());
  return out_result(out, pow_scalar(base, lin), "aten::logspace.out");
}
}  // namespace
}  // namespace torch_pjrt
namespace {
namespace tp = torch_pjrt;
using at::Scalar;
using at::Tensor;
}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  // sgn's and other backward formulas ask for a "zero tensor"; a plain
  // zeros tensor holds the same values (no ZeroTensor key on tpu).
  m.impl("_efficientzerotensor", [](c10::SymIntArrayRef size, std::optional<at::ScalarType> dtype,
                                    std::optional<at::Layout> layout,
                                    std::optional<at::Device> device, std::optional<bool> pin) {
    return at::zeros_symint(size, at::TensorOptions().dtype(dtype).layout(layout).device(device));
  });
  m.impl("logspace.out", TORCH_FN(tp::logspace_out));
}
namespace torch_pjrt {
namespace {

using at::Tensor;
using Pair = std::tuple<Tensor, Tensor>;
using PairRef = std::tuple<Tensor&, Tensor&>;

// ---- tril_indices, triu_indices ------------------------------------------------

Tensor tri_indices(bool upper, int64_t row, int64_t col, int64_t offset,
                   std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                   std::optional<at::Device> device, std::optional<bool> pin) {
  const char* op = upper ? "aten::triu_indices" : "aten::tril_indices";
  auto opts = at::TensorOptions().dtype(dtype).layout(layout).device(device).pinned_memory(pin);
  auto call = [&](at::TensorOptions o) {
    return upper ? at::triu_indices(row, col, offset, o) : at::tril_indices(row, col, offset, o);
  };
  Tensor m = meta_or_cpu([&] { return call(opts.device(at::kMeta).pinned_memory(std::nullopt)); },
                         [&] { call(opts.device(at::kCPU)); });
  TORCH_CHECK_NOT_IMPLEMENTED(m.scalar_type() == at::kLong || m.scalar_type() == at::kInt, "\"",
                              upper ? "triu_indices" : "tril_indices",
                              "\" not implemented for '", m.scalar_type(), "'");
  c10::Device dev = device.value_or(at::Device(at::kPrivateUse1, current_device()));
  if (dev.index() < 0) dev = at::Device(at::kPrivateUse1, current_device());
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(m.sizes(), m.options().device(dev));
  if (out.numel() == 0) return out;
  OpArgs a;
  tpj_attrs_tri_indices_t attrs{};
  attrs.rows = row;
  attrs.cols = col;
  attrs.offset = offset;
  attrs.upper = upper;
  run_op(op, dev.index(), a, attrs_of(attrs), {out});
  return out;
}
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  namespace tp = torch_pjrt;
  m.impl("tril_indices", [](int64_t r, int64_t c, int64_t off, std::optional<at::ScalarType> dt,
                            std::optional<at::Layout> l, std::optional<at::Device> d,
                            std::optional<bool> p) {
    return tp::tri_indices(false, r, c, off, dt, l, d, p);
  });
  m.impl("triu_indices", [](int64_t r, int64_t c, int64_t off, std::optional<at::ScalarType> dt,
                            std::optional<at::Layout> l, std::optional<at::Device> d,
                            std::optional<bool> p) {
    return tp::tri_indices(true, r, c, off, dt, l, d, p);
  });
}
