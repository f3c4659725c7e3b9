// Kernel glue for shape ops (src/ops/shape.c): cat, tril/triu, flip, roll,
// constant_pad_nd, the reflection and replication pads with their backward,
// channel_shuffle and repeat_interleave (unfold is PyTorch's own view).
// Shapes and argument errors come from running the op on meta tensors
// first.
#include <ATen/AccumulateType.h>
#include <ATen/Dispatch.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MetaFunctions.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Gelu.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/unfold_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "ops/write.h"
#include "tensor.h"
#include "dtype_check.h"
#include "glue.h"
#include "inplace.h"
#include "storage_dtypes.h"

extern "C" {
#include "ops/attrs.h"
}

namespace torch_pjrt {
namespace {

using at::Scalar;
using at::ScalarType;
using at::Tensor;

// repeat_interleave(repeats): i repeated repeats[i] times. The size is data
// dependent: the host reads repeats (as CPU's kernel does); the indices are
// computed on the device: position p gets the number of running totals <= p.
Tensor repeat_interleave_tensor(const Tensor& repeats, std::optional<c10::SymInt> output_size) {
  auto cpu = [&] { at::repeat_interleave_symint(repeats.cpu(), output_size); };
  ScalarType t = repeats.scalar_type();
  Tensor host;
  checked_like_cpu(
      [&] {
        TORCH_CHECK(repeats.dim() == 1 && (t == at::kLong || t == at::kInt), "bad repeats");
        host = repeats.to(at::kCPU, at::kLong);
        TORCH_CHECK(host.numel() == 0 || host.min().item<int64_t>() >= 0, "negative repeats");
        TORCH_CHECK(!output_size || output_size->expect_int() == host.sum().item<int64_t>(),
                    "size mismatch");
      },
      cpu);
  int64_t total = host.numel() == 0 ? 0 : host.sum().item<int64_t>();
  if (total == 0 || repeats.numel() == 0) return at::empty({total}, repeats.options());
  Tensor csum = at::cumsum(repeats, 0, at::kLong);
  Tensor pos = at::arange(total, repeats.options().dtype(at::kLong));
  return at::sum(at::le(csum.unsqueeze(0), pos.unsqueeze(1)), {1}, false, t);
}
}  // namespace
}  // namespace torch_pjrt
namespace {
namespace tp = torch_pjrt;
using at::Scalar;
using at::Tensor;
}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("repeat_interleave.Tensor", TORCH_FN(tp::repeat_interleave_tensor));
}

namespace torch_pjrt {
namespace {

using at::Scalar;
using at::Tensor;

// CPU's checks and wording for cat (the meta reference words them differently).
void check_cat(const std::vector<Tensor>& ts, int64_t dim) {
  const Tensor* first = nullptr;
  for (size_t i = 0; i < ts.size(); ++i) {
    TORCH_CHECK(ts[i].dim() > 0, "zero-dimensional tensor (at position ", i,
                ") cannot be concatenated");
    if (ts[i].dim() == 1 && ts[i].size(0) == 0) continue;  // legacy empty: skipped
    if (!first) {
      first = &ts[i];
      continue;
    }
    TORCH_CHECK(ts[i].dim() == first->dim(), "Tensors must have same number of dimensions: got ",
                first->dim(), " and ", ts[i].dim());
    int64_t d = c10::maybe_wrap_dim(dim, first->dim());
    for (int64_t k = 0; k < first->dim(); ++k) {
      if (k == d) continue;
      TORCH_CHECK(ts[i].size(k) == first->size(k), "Sizes of tensors must match except in "
                  "dimension ", d, ". Expected size ", first->size(k), " but got size ",
                  ts[i].size(k), " for tensor number ", i, " in the list.");
    }
  }
}

Tensor cat_list(const std::vector<Tensor>& ts, int64_t dim) {
  check_cat(ts, dim);
  std::vector<Tensor> metas;
  for (const Tensor& t : ts) metas.push_back(to_meta(t));
  Tensor m = at::meta::cat(metas, dim);
  int64_t d = c10::maybe_wrap_dim(dim, m.dim());
  if (ts.size() > TPJ_OP_MAX_IN) {
    // More operands than one program takes: concatenate in chunks.
    std::vector<Tensor> chunk(ts.begin(), ts.begin() + TPJ_OP_MAX_IN);
    std::vector<Tensor> rest{cat_list(chunk, d)};
    rest.insert(rest.end(), ts.begin() + TPJ_OP_MAX_IN, ts.end());
    return cat_list(rest, d);
  }
  const char* op = "aten::cat";
  for (const Tensor& t : ts) {
    check_supported(t, op);
    TORCH_CHECK(t.device() == ts[0].device(), "Expected all tensors to be on the same device, "
                "but found at least two devices, ", ts[0].device(), " and ", t.device(), "!");
  }
  c10::DeviceGuard guard(ts[0].device());
  Tensor out = at::empty(m.sizes(), m.options().device(ts[0].device()));
  OpArgs a;
  for (const Tensor& t : ts) a.tensor(t);
  tpj_attrs_cat_t attrs{};
  attrs.dim = d;
  run_op(op, ts[0].device().index(), a, attrs_of(attrs), {out});
  return in_meta_layout(out, m);  // the inputs' memory format, as CPU's cat
}

Tensor cat(const at::ITensorListRef& tensors, int64_t dim) {
  return cat_list(std::vector<Tensor>(tensors.begin(), tensors.end()), dim);
}
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  m.impl("cat", TORCH_FN(cat));
}

namespace torch_pjrt {
namespace {

using at::Scalar;
using at::Tensor;

Tensor channel_shuffle(const Tensor& x, c10::SymInt groups) {
  Tensor m = at::channel_shuffle_symint(to_meta(x), groups);
  tpj_attrs_channel_shuffle_t attrs{};
  attrs.groups = groups.expect_int();
  return run_meta("aten::channel_shuffle", {&x}, m, attrs_of(attrs));
}
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  m.impl("channel_shuffle", TORCH_FN(torch_pjrt::channel_shuffle));
}

namespace torch_pjrt {
namespace {

using at::Scalar;
using at::ScalarType;
using at::Tensor;

// A fresh tpu tensor shaped like meta computed by op from x.
Tensor run_shape(const char* op, const Tensor& x, const Tensor& meta, c10::ArrayRef<int64_t> attrs,
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

tpj_attrs_tri_t tri_attrs(int64_t diagonal) {
  tpj_attrs_tri_t attrs{};
  attrs.diagonal = diagonal;
  return attrs;
}
Tensor tril(const Tensor& x, int64_t k) {
  return run_shape("aten::tril", x, at::meta::tril(to_meta(x), k), attrs_of(tri_attrs(k)));
}
Tensor triu(const Tensor& x, int64_t k) {
  return run_shape("aten::triu", x, at::meta::triu(to_meta(x), k), attrs_of(tri_attrs(k)));
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
  // CPU's flip writes into empty_like(x): x's layout, densified
  InLayout lay(at::empty_like(to_meta(x)));
  for (int64_t& w : wrapped) w = lay.dim(w);
  Tensor xp = lay.in(x);
  return lay.out(run_shape("aten::flip", xp, to_meta(xp), wrapped));
}

Tensor roll(const Tensor& x, c10::SymIntArrayRef sym_shifts, at::IntArrayRef dims) {
  auto shifts = C10_AS_INTARRAYREF_SLOW(sym_shifts);
  TORCH_CHECK(!shifts.empty(), "`shifts` required");
  tpj_attrs_roll_t head{};
  std::vector<int64_t> shifts_dims;
  for (int64_t d : dims) (void)c10::maybe_wrap_dim(d, x.dim(), /*wrap_scalar=*/false);  // CPU's IndexError
  if (dims.empty() && shifts.size() == 1) {
    head.n = 0;
    shifts_dims = {shifts[0]};
  } else {
    TORCH_CHECK(shifts.size() == dims.size(), "shifts and dimensions must align. shifts: ",
                shifts.size(), ", dims:", dims.size());
    head.n = static_cast<int64_t>(dims.size());
    for (int64_t s : shifts) shifts_dims.push_back(s);
    for (int64_t d : dims) shifts_dims.push_back(c10::maybe_wrap_dim(d, x.dim()));
  }
  Tensor r = run_shape("aten::roll", x, to_meta(x), attrs_with_tail(head, shifts_dims));
  // CPU's roll along dims allocates in x's suggested memory format
  // (channels_last stays); without dims it rolls x flattened (contiguous)
  if (dims.empty()) return r;
  return in_meta_layout(r, at::empty(x.sizes(), to_meta(x).options().memory_format(
                                                    x.suggest_memory_format())));
}

Tensor constant_pad_nd(const Tensor& x, c10::SymIntArrayRef pad, const Scalar& value) {
  Tensor m = at::constant_pad_nd_symint(to_meta(x), pad, value);
  auto p = C10_AS_INTARRAYREF_SLOW(pad);
  return in_meta_layout(
      run_shape("aten::constant_pad_nd", x, m, p, &value),  // the pads, a plain list
      m);
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
  tpj_attrs_edge_pad_t head{};
  head.reflect = reflect;
  return run_shape(op, x, m, attrs_with_tail(head, p));
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

namespace torch_pjrt {
namespace {

using at::Tensor;

// ---- pad backward -------------------------------------------------------------

template <Tensor (*Meta)(const Tensor&, const Tensor&, c10::SymIntArrayRef)>
Tensor pad_backward(const char* op, bool reflect, const Tensor& grad, const Tensor& self,
                    c10::SymIntArrayRef pad) {
  Tensor m = Meta(to_meta(grad), to_meta(self), pad);
  check_floating_dtype(grad, op + 6);  // CPU names the op without "aten::"
  auto p = C10_AS_INTARRAYREF_SLOW(pad);
  tpj_attrs_edge_pad_backward_t head{};
  head.reflect = reflect;
  head.compute = acc_dtype(grad.scalar_type());
  return run_meta(op, {&grad}, m, attrs_with_tail(head, p));
}

#define TPJ_PAD_META(name)                                                         \
  Tensor meta_##name(const Tensor& g, const Tensor& x, c10::SymIntArrayRef p) {    \
    return at::name##_symint(g, x, p);                                             \
  }
TPJ_PAD_META(reflection_pad1d_backward)
TPJ_PAD_META(reflection_pad2d_backward)
TPJ_PAD_META(reflection_pad3d_backward)
TPJ_PAD_META(replication_pad1d_backward)
TPJ_PAD_META(replication_pad2d_backward)
TPJ_PAD_META(replication_pad3d_backward)
#undef TPJ_PAD_META

}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  using at::Tensor;
  using SymArr = c10::SymIntArrayRef;
#define TPJ_PAD_BWD(name, reflect)                                                          \
  m.impl(#name, [](const Tensor& g, const Tensor& x, SymArr p) {                            \
    return pad_backward<meta_##name>("aten::" #name, reflect, g, x, p);                     \
  });
  TPJ_PAD_BWD(reflection_pad1d_backward, true)
  TPJ_PAD_BWD(reflection_pad2d_backward, true)
  TPJ_PAD_BWD(reflection_pad3d_backward, true)
  TPJ_PAD_BWD(replication_pad1d_backward, false)
  TPJ_PAD_BWD(replication_pad2d_backward, false)
  TPJ_PAD_BWD(replication_pad3d_backward, false)
#undef TPJ_PAD_BWD
}
