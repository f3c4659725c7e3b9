// Output layout (layout.h): the strides PyTorch gives a new result, and
// running an op into outputs with those strides without a copy.
//
// The rule is TensorIterator's (ATen/TensorIterator.cpp, torch 2.13): with
// every input of the output's shape, contiguous inputs give a contiguous
// output, channels_last inputs a channels_last one, and inputs that are all
// dense with the same strides give those strides (fast_set_up); otherwise
// the dims are ordered by the inputs' strides (reorder_dimensions: the first
// input whose strides tell two dims apart decides, broadcast dims abstain,
// equal strides put the smaller dim inner) and the output is dense in that
// order (compatible_stride). Written over the operands' views, so it sees
// exactly what the op reads.
#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>

#include <algorithm>
#include <cstring>

#include "tensor.h"
#include "layout.h"
#include "storage_dtypes.h"

extern "C" {
#include "ops/ops.h"
}

namespace torch_pjrt {

namespace {

bool exactly_contiguous(const tpj_view_t& v) {
  int64_t expect = 1;
  for (int i = v.ndim - 1; i >= 0; --i) {
    if (v.strides[i] != expect) return false;
    expect *= v.sizes[i];
  }
  return true;
}

// c10's is_contiguous: size-1 dims' strides do not matter; empty is contiguous.
bool is_contiguous(const int64_t* sizes, const int64_t* strides, int n) {
  int64_t expect = 1;
  for (int i = n - 1; i >= 0; --i) {
    if (sizes[i] == 0) return true;
    if (sizes[i] == 1) continue;
    if (strides[i] != expect) return false;
    expect *= sizes[i];
  }
  return true;
}

// c10's compute_channels_last_contiguous_2d (rank 4) / _3d (rank 5).
bool is_channels_last(const int64_t* sizes, const int64_t* strides, int n) {
  static const int kOrder4[] = {1, 3, 2, 0};
  static const int kOrder5[] = {1, 4, 3, 2, 0};
  if (n != 4 && n != 5) return false;
  const int* order = n == 4 ? kOrder4 : kOrder5;
  int64_t expect = 1;
  for (int k = 0; k < n; ++k) {
    int d = order[k];
    if (sizes[d] == 1) continue;
    if (strides[d] != expect) return false;
    expect *= sizes[d];
  }
  return true;
}

// c10's compute_non_overlapping_and_dense.
bool is_dense(const int64_t* sizes, const int64_t* strides, int n) {
  if (n == 1) return sizes[0] < 2 || strides[0] == 1;
  int perm[TPJ_MAX_DIMS];
  for (int i = 0; i < n; ++i) perm[i] = i;
  std::sort(perm, perm + n, [&](int a, int b) {
    if (sizes[a] < 2) return false;
    if (sizes[b] < 2) return true;
    return strides[a] < strides[b];
  });
  int64_t require = 1;
  for (int i = 0; i < n; ++i) {
    int64_t s = sizes[perm[i]];
    if (s < 2) return true;
    if (strides[perm[i]] != require) return false;
    require *= s;
  }
  return true;
}

// Fills l->perm from l->strides (dims by stride, largest first; among equal
// strides, which only size-1 dims or an empty tensor have, the logical
// order). False when the strides are the contiguous ones of sizes.
bool finish(const int64_t* sizes, int n, Layout* l) {
  l->ndim = n;
  if (is_contiguous(sizes, l->strides, n)) {
    // Contiguous up to the strides of size-1 dims: still restride, so those
    // strides are CPU's too.
    bool exact = true;
    int64_t expect = 1;
    for (int i = n - 1; i >= 0; --i) {
      exact = exact && l->strides[i] == expect;
      expect *= std::max<int64_t>(sizes[i], 1);
    }
    if (exact) return false;
  }
  for (int i = 0; i < n; ++i) l->perm[i] = i;
  std::stable_sort(l->perm, l->perm + n, [&](int64_t a, int64_t b) {
    return l->strides[a] > l->strides[b];
  });
  return true;
}

// Dense strides for sizes with the dims in memory order perm (outermost
// first). A size-0 dim counts as 1 in empty(memory_format=...)'s strides and
// as 0 in TensorIterator's compatible_stride (raw): each is copied exactly.
void dense_strides(const int64_t* sizes, const int64_t* perm, int n, int64_t* strides, bool raw) {
  int64_t s = 1;
  for (int k = n - 1; k >= 0; --k) {
    strides[perm[k]] = s;
    s *= raw ? sizes[perm[k]] : std::max<int64_t>(sizes[perm[k]], 1);
  }
}

}  // namespace

bool pointwise_layout(const OpArgs& a, at::IntArrayRef sizes, Layout* out) {
  const int n = static_cast<int>(sizes.size());
  if (n < 2) return false;
  // The common case: every operand exactly contiguous (or 0-d) gives a
  // contiguous output under both of TensorIterator's paths.
  bool all_contiguous = true;
  for (const tpj_exec_arg_t& x : a.args)
    if (x.has_view && x.view.ndim > 0 && !exactly_contiguous(x.view)) all_contiguous = false;
  if (all_contiguous) return false;

  const int64_t* z = sizes.data();
  // fast_set_up: every operand a tensor of the output's shape.
  bool same_shape = a.cpu_scalar_operands == 0;
  const tpj_view_t* first = nullptr;
  for (const tpj_exec_arg_t& x : a.args) {
    if (!x.has_view) continue;
    const tpj_view_t& v = x.view;
    if (v.ndim != n || !std::equal(v.sizes, v.sizes + n, z)) same_shape = false;
    if (!first) first = &v;
  }
  if (!first) return false;
  if (same_shape) {
    bool contiguous = true, channels_last = true, dense = true, same_strides = true;
    for (const tpj_exec_arg_t& x : a.args) {
      if (!x.has_view) continue;
      const tpj_view_t& v = x.view;
      contiguous = contiguous && is_contiguous(v.sizes, v.strides, n);
      channels_last = channels_last && n == 4 && is_channels_last(v.sizes, v.strides, n);
      dense = dense && is_dense(v.sizes, v.strides, n);
      same_strides = same_strides && std::equal(v.strides, v.strides + n, first->strides);
    }
    if (contiguous) return false;
    if (channels_last) return format_layout(sizes, at::MemoryFormat::ChannelsLast, out);
    if (dense && same_strides) {
      std::copy(first->strides, first->strides + n, out->strides);
      return finish(z, n, out);
    }
  }
  // reorder_dimensions. perm[0] is the innermost dim, as in TensorIterator.
  // Operands past the 16th never break a tie in practice.
  constexpr int kMaxTensors = 16;
  int64_t st[kMaxTensors][TPJ_MAX_DIMS];
  int nt = 0;
  for (const tpj_exec_arg_t& x : a.args) {
    if (!x.has_view || nt == kMaxTensors) continue;
    const tpj_view_t& v = x.view;
    int off = n - v.ndim;
    for (int i = 0; i < n; ++i) st[nt][i] = 0;
    for (int i = 0; i < v.ndim; ++i)
      st[nt][off + i] = (v.sizes[i] == 1 && z[off + i] != 1) ? 0 : v.strides[i];
    ++nt;
  }
  auto should_swap = [&](int64_t d0, int64_t d1) -> int {
    for (int t = 0; t < nt; ++t) {
      int64_t s0 = st[t][d0], s1 = st[t][d1];
      if (s0 == 0 || s1 == 0) continue;
      if (s0 < s1) return -1;
      if (s0 > s1) return 1;
      if (z[d0] > z[d1]) return 1;
    }
    return 0;
  };
  int64_t perm[TPJ_MAX_DIMS];
  for (int i = 0; i < n; ++i) perm[i] = n - 1 - i;
  for (int i = 1; i < n; ++i) {
    int d1 = i;
    for (int d0 = i - 1; d0 >= 0; --d0) {
      int c = should_swap(perm[d0], perm[d1]);
      if (c > 0) {
        std::swap(perm[d0], perm[d1]);
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
  bool inverted = true;
  for (int i = 0; i < n; ++i) inverted = inverted && perm[i] == n - 1 - i;
  if (inverted) return false;
  // Outermost first for dense_strides.
  int64_t order[TPJ_MAX_DIMS];
  for (int i = 0; i < n; ++i) order[i] = perm[n - 1 - i];
  dense_strides(z, order, n, out->strides, /*raw=*/true);
  return finish(z, n, out);
}

bool format_layout(at::IntArrayRef sizes, at::MemoryFormat mf, Layout* out) {
  const int n = static_cast<int>(sizes.size());
  static const int64_t kOrder4[] = {0, 2, 3, 1};
  static const int64_t kOrder5[] = {0, 2, 3, 4, 1};
  if (mf == at::MemoryFormat::ChannelsLast && n == 4) {
    dense_strides(sizes.data(), kOrder4, n, out->strides, false);
  } else if (mf == at::MemoryFormat::ChannelsLast3d && n == 5) {
    dense_strides(sizes.data(), kOrder5, n, out->strides, false);
  } else {
    return false;
  }
  return finish(sizes.data(), n, out);
}

bool dense_layout(const at::Tensor& t, Layout* out) {
  const int n = static_cast<int>(t.dim());
  if (n < 2 || t.is_contiguous()) return false;
  if (!is_dense(t.sizes().data(), t.strides().data(), n)) return false;
  std::copy(t.strides().begin(), t.strides().end(), out->strides);
  return finish(t.sizes().data(), n, out);
}

InLayout::InLayout(const at::Tensor& target) {
  active = dense_layout(target, &l);
  if (!active) return;
  sizes = at::DimVector(target.sizes());
  for (int k = 0; k < l.ndim; ++k) pos[l.perm[k]] = k;
}

at::Tensor InLayout::in(const at::Tensor& x) const {
  return active ? x.permute(at::IntArrayRef(l.perm, l.ndim)) : x;
}

int64_t InLayout::dim(int64_t d) const {
  return active && d >= 0 && d < l.ndim ? pos[d] : d;
}

at::Tensor InLayout::out(const at::Tensor& r) const {
  if (!active) return r;
  // r is contiguous in the permuted order, which target's strides describe
  return r.as_strided(sizes, at::IntArrayRef(l.strides, l.ndim), r.storage_offset());
}

at::Tensor in_meta_layout(const at::Tensor& r, const at::Tensor& meta) {
  if (meta.is_contiguous() || r.strides() == meta.strides() || r.sizes() != meta.sizes())
    return r;
  at::Tensor out = at::empty_strided(meta.sizes(), meta.strides(), r.options());
  out.copy_(r);
  return out;
}

namespace {

// The output shapes in l's memory order, for the outs in mask.
void laid_out_shapes(c10::ArrayRef<at::Tensor> outs, const Layout& l, uint32_t mask,
                     tpj_rt_shape_t* shapes) {
  TORCH_INTERNAL_ASSERT(outs.size() <= TPJ_OP_MAX_OUT, "too many outputs");
  for (size_t i = 0; i < outs.size(); ++i) {
    shapes[i] = shape_of(outs[i]);
    if (!(mask >> i & 1)) continue;
    TORCH_INTERNAL_ASSERT(outs[i].dim() == l.ndim, "layout of another rank");
    for (int k = 0; k < l.ndim; ++k) shapes[i].dims[k] = outs[i].size(l.perm[k]);
  }
}

}  // namespace

void run_op_laid_out(const char* op, int device, OpArgs& a, c10::ArrayRef<int64_t> attrs,
                     c10::ArrayRef<at::Tensor> outs, at::MemoryFormat mf, uint32_t mask) {
  static const int64_t kOrder4[] = {0, 2, 3, 1};
  static const int64_t kOrder5[] = {0, 2, 3, 4, 1};
  int n = mf == at::MemoryFormat::ChannelsLast ? 4 : mf == at::MemoryFormat::ChannelsLast3d ? 5 : 0;
  mask &= (1u << outs.size()) - 1;
  for (size_t i = 0; i < outs.size(); ++i)
    if ((mask >> i & 1) && outs[i].dim() != n) mask &= ~(1u << i);
  if (mask == 0) {
    run_op(op, device, a, attrs, outs);
    return;
  }
  // One transpose order for every such output (outputs of other shapes,
  // say grad_input and grad_weight, get their own strides below).
  Layout l;
  l.ndim = n;
  std::copy(n == 4 ? kOrder4 : kOrder5, (n == 4 ? kOrder4 : kOrder5) + n, l.perm);
  tpj_rt_shape_t shapes[TPJ_OP_MAX_OUT];
  laid_out_shapes(outs, l, mask, shapes);
  int index = tpj_ops_index(op);
  TORCH_INTERNAL_ASSERT(index >= 0, op, " has no lowering");
  c10::SmallVector<int64_t, 24> all{index, static_cast<int64_t>(mask), l.ndim};
  all.append(l.perm, l.perm + l.ndim);
  all.append(attrs.begin(), attrs.end());
  run_op_shaped("tpj::laid_out", device, a, all, outs, shapes);
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!(mask >> i & 1)) continue;
    Layout li;
    format_layout(outs[i].sizes(), mf, &li);
    outs[i].unsafeGetTensorImpl()->set_sizes_and_strides(outs[i].sizes(),
                                                         at::IntArrayRef(li.strides, n));
  }
}

at::MemoryFormat format_of(const at::Tensor& t) { return t.suggest_memory_format(); }

void run_pointwise(const char* op, int device, OpArgs& a, c10::ArrayRef<int64_t> attrs,
                   c10::ArrayRef<at::Tensor> outs) {
  Layout l;
  if (outs.empty() || !pointwise_layout(a, outs[0].sizes(), &l)) {
    run_op(op, device, a, attrs, outs);
    return;
  }
  // Each operand broadcast to rank n (leading size-1 dims, which the
  // lowering broadcasts as before) and read in the output's memory order:
  // the op itself is unchanged, it just runs over permuted dims.
  const int n = l.ndim;
  for (tpj_exec_arg_t& x : a.args) {
    if (!x.has_view || x.view.ndim == 0) continue;
    tpj_view_t& v = x.view;
    int64_t vs[TPJ_MAX_DIMS], vt[TPJ_MAX_DIMS];
    int off = n - v.ndim;
    for (int i = 0; i < n; ++i) {
      vs[i] = i < off ? 1 : v.sizes[i - off];
      vt[i] = i < off ? 0 : v.strides[i - off];
    }
    v.ndim = n;
    for (int k = 0; k < n; ++k) {
      v.sizes[k] = vs[l.perm[k]];
      v.strides[k] = vt[l.perm[k]];
    }
  }
  uint32_t all = (1u << outs.size()) - 1;
  tpj_rt_shape_t shapes[TPJ_OP_MAX_OUT];
  laid_out_shapes(outs, l, all, shapes);
  run_op_shaped(op, device, a, attrs, outs, shapes);
  for (const at::Tensor& o : outs)
    o.unsafeGetTensorImpl()->set_sizes_and_strides(o.sizes(), at::IntArrayRef(l.strides, n));
}

bool same_memory_layout(const at::Tensor& dst, const at::Tensor& result) {
  if (dst.scalar_type() != result.scalar_type() || dst.sizes() != result.sizes() ||
      dst.storage_offset() != 0 || result.storage_offset() != 0)
    return false;
  if (covers_storage(dst)) return result.is_contiguous() &&
                                    result.storage().nbytes() == dst.storage().nbytes();
  return dst.strides() == result.strides() &&
         static_cast<size_t>(dst.numel()) * dst.element_size() == dst.storage().nbytes() &&
         result.storage().nbytes() == dst.storage().nbytes() &&
         is_dense(dst.sizes().data(), dst.strides().data(), static_cast<int>(dst.dim()));
}

}  // namespace torch_pjrt
