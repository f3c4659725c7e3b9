// Kernel glue for the creation and shape family (src/ops/create.c): arange,
// linspace, tril/triu, flip, roll, constant_pad_nd and the reflection and
// replication pads. Sizes and argument errors follow CPU: arange's and
// linspace's size rules are CPU's (in the accumulate type), the rest run
// the op on meta tensors first.
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

#include "common.h"

namespace torch_pjrt {
namespace {

using at::Scalar;
using at::ScalarType;
using at::Tensor;

// A fresh tpu tensor shaped like meta computed by op from x.
Tensor run_shape(const char* op, const Tensor& x, const Tensor& meta, std::vector<int64_t> attrs,
                 const Scalar* value = nullptr) {
  check_supported(x, op);
  c10::DeviceGuard guard(x.device());
  Tensor out = at::empty(meta.sizes(), x.options().dtype(meta.scalar_type()));
  OpArgs a;
  a.tensor(x);
  if (value) a.scalar(*value, x.scalar_type(), x.device().index());
  run_op(op, x.device().index(), a, attrs, {out});
  return out;
}

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
  run_op(op, out.device().index(), a, {to_tpj_dtype(acc)}, {r});
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
  run_op(op, out.device().index(), a, {to_tpj_dtype(cd)}, {r});
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

Tensor tril(const Tensor& x, int64_t k) {
  return run_shape("aten::tril", x, at::meta::tril(to_meta(x), k), {k});
}
Tensor triu(const Tensor& x, int64_t k) {
  return run_shape("aten::triu", x, at::meta::triu(to_meta(x), k), {k});
}

Tensor flip(const Tensor& x, at::IntArrayRef dims) {
  std::vector<bool> seen(std::max<int64_t>(x.dim(), 1), false);
  std::vector<int64_t> wrapped;
  for (int64_t d : dims) {
    int64_t w = c10::maybe_wrap_dim(d, x.dim());
    TORCH_CHECK(!seen[w], "dim ", w, " appears multiple times in the list of dims");
    seen[w] = true;
    if (x.dim() > 0) wrapped.push_back(w);
  }
  return run_shape("aten::flip", x, to_meta(x), wrapped);
}

Tensor roll(const Tensor& x, c10::SymIntArrayRef sym_shifts, at::IntArrayRef dims) {
  auto shifts = C10_AS_INTARRAYREF_SLOW(sym_shifts);
  TORCH_CHECK(!shifts.empty(), "`shifts` required");
  std::vector<int64_t> attrs;
  for (int64_t d : dims) (void)c10::maybe_wrap_dim(d, x.dim(), /*wrap_scalar=*/false);  // CPU's IndexError
  if (dims.empty() && shifts.size() == 1) {
    attrs = {0, shifts[0]};
  } else {
    TORCH_CHECK(shifts.size() == dims.size(), "shifts and dimensions must align. shifts: ",
                shifts.size(), ", dims:", dims.size());
    attrs.push_back(static_cast<int64_t>(dims.size()));
    for (int64_t s : shifts) attrs.push_back(s);
    for (int64_t d : dims) attrs.push_back(c10::maybe_wrap_dim(d, x.dim()));
  }
  return run_shape("aten::roll", x, to_meta(x), attrs);
}

Tensor constant_pad_nd(const Tensor& x, c10::SymIntArrayRef pad, const Scalar& value) {
  Tensor m = at::constant_pad_nd_symint(to_meta(x), pad, value);
  auto p = C10_AS_INTARRAYREF_SLOW(pad);
  return run_shape("aten::constant_pad_nd", x, m, std::vector<int64_t>(p.begin(), p.end()), &value);
}

// reflection/replication pads: the meta function checks the arguments the way
// CPU does and gives the output shape.
template <Tensor (*Meta)(const Tensor&, c10::SymIntArrayRef)>
Tensor edge_pad(const char* op, bool reflect, const Tensor& x, c10::SymIntArrayRef pad) {
  auto p = C10_AS_INTARRAYREF_SLOW(pad);
  int64_t nd = x.dim(), npad = static_cast<int64_t>(p.size()) / 2;
  if (reflect && (nd == npad + 1 || nd == npad + 2)) {
    // CPU's wording (the meta function prints the sizes differently)
    for (int64_t i = 0; i < npad; ++i) {
      int64_t d = nd - 1 - i;
      TORCH_CHECK(p[2 * i] < x.size(d) && p[2 * i + 1] < x.size(d), "Argument #", 4 + 2 * i,
                  ": Padding size should be less than the corresponding input dimension, but "
                  "got: padding (", p[2 * i], ", ", p[2 * i + 1], ") at dimension ", d,
                  " of input ", x.sizes());
    }
  }
  Tensor m = Meta(to_meta(x), pad);
  std::vector<int64_t> attrs{reflect};
  for (auto v : p) attrs.push_back(v);
  return run_shape(op, x, m, attrs);
}

Tensor meta_reflect1(const Tensor& x, c10::SymIntArrayRef p) { return at::reflection_pad1d_symint(x, p); }
Tensor meta_reflect2(const Tensor& x, c10::SymIntArrayRef p) { return at::reflection_pad2d_symint(x, p); }
Tensor meta_reflect3(const Tensor& x, c10::SymIntArrayRef p) { return at::reflection_pad3d_symint(x, p); }
Tensor meta_repl1(const Tensor& x, c10::SymIntArrayRef p) { return at::replication_pad1d_symint(x, p); }
Tensor meta_repl2(const Tensor& x, c10::SymIntArrayRef p) { return at::replication_pad2d_symint(x, p); }
Tensor meta_repl3(const Tensor& x, c10::SymIntArrayRef p) { return at::replication_pad3d_symint(x, p); }

}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  using at::Tensor;
  m.impl("arange.start_out", TORCH_FN(arange_out));
  m.impl("linspace.out", TORCH_FN(linspace_out));
  m.impl("eye.m_out", TORCH_FN(eye_out));
  m.impl("eye.out", [](int64_t n, Tensor& out) -> Tensor& { return eye_out(n, n, out); });
  // a view (as_strided over the same storage), used by repeat
  m.impl("unfold", TORCH_FN(at::native::unfold));
  m.impl("tril", TORCH_FN(torch_pjrt::tril));
  m.impl("triu", TORCH_FN(torch_pjrt::triu));
  m.impl("tril_", [](Tensor& x, int64_t k) -> Tensor& {
    assign_result(x, torch_pjrt::tril(x, k), "aten::tril_");
    return x;
  });
  m.impl("triu_", [](Tensor& x, int64_t k) -> Tensor& {
    assign_result(x, torch_pjrt::triu(x, k), "aten::triu_");
    return x;
  });
  m.impl("tril.out", [](const Tensor& x, int64_t k, Tensor& o) -> Tensor& {
    check_no_overlap(o, {&x});
    return out_result(o, torch_pjrt::tril(x, k), "aten::tril");
  });
  m.impl("triu.out", [](const Tensor& x, int64_t k, Tensor& o) -> Tensor& {
    check_no_overlap(o, {&x});
    return out_result(o, torch_pjrt::triu(x, k), "aten::triu");
  });
  m.impl("flip", TORCH_FN(torch_pjrt::flip));
  m.impl("roll", TORCH_FN(torch_pjrt::roll));
  m.impl("constant_pad_nd", TORCH_FN(torch_pjrt::constant_pad_nd));
  m.impl("reflection_pad1d", [](const Tensor& x, c10::SymIntArrayRef p) {
    return edge_pad<meta_reflect1>("aten::reflection_pad1d", true, x, p);
  });
  m.impl("reflection_pad2d", [](const Tensor& x, c10::SymIntArrayRef p) {
    return edge_pad<meta_reflect2>("aten::reflection_pad2d", true, x, p);
  });
  m.impl("reflection_pad3d", [](const Tensor& x, c10::SymIntArrayRef p) {
    return edge_pad<meta_reflect3>("aten::reflection_pad3d", true, x, p);
  });
  m.impl("replication_pad1d", [](const Tensor& x, c10::SymIntArrayRef p) {
    return edge_pad<meta_repl1>("aten::replication_pad1d", false, x, p);
  });
  m.impl("replication_pad2d", [](const Tensor& x, c10::SymIntArrayRef p) {
    return edge_pad<meta_repl2>("aten::replication_pad2d", false, x, p);
  });
  m.impl("replication_pad3d", [](const Tensor& x, c10::SymIntArrayRef p) {
    return edge_pad<meta_repl3>("aten::replication_pad3d", false, x, p);
  });
}
