// Output layout: the strides PyTorch gives a new result. An elementwise op
// over permuted inputs returns its result in the inputs' memory order
// (TensorIterator), channels_last stays channels_last. The result is computed
// contiguous in that memory order, into a fresh storage, and the output is
// that storage seen with the permuted strides: no copy, no extra launch.
// A header of its own so that adding it rebuilt only the files that use it.
#ifndef TORCH_PJRT_LAYOUT_H_
#define TORCH_PJRT_LAYOUT_H_

#include "tensor.h"

namespace torch_pjrt {

// Dense, non-overlapping strides for `sizes`, and the order of the dims in
// memory, outermost first (perm): the tensor permuted by perm is contiguous.
struct Layout {
  int ndim = 0;
  int64_t strides[TPJ_MAX_DIMS];
  int64_t perm[TPJ_MAX_DIMS];
};

// The layout TensorIterator gives the output of an elementwise op whose
// operands are the views in a (in TensorIterator's operand order: the glue
// adds them in the order ATen's kernel adds its inputs), for an output of
// `sizes`. False when that output is contiguous (the common case, decided
// in a few compares). See docs/ARCHITECTURE.md, "Output layout".
bool pointwise_layout(const OpArgs& a, at::IntArrayRef sizes, Layout* out);

// The layout of `sizes` in memory format mf (channels_last, channels_last_3d);
// false for contiguous.
bool format_layout(at::IntArrayRef sizes, at::MemoryFormat mf, Layout* out);

// When t is dense and non-overlapping (any order of its dims in memory),
// its layout; false when it is contiguous or not dense.
bool dense_layout(const at::Tensor& t, Layout* out);

// run_op for an elementwise op: outs are fresh contiguous tensors of one
// shape (as new_output makes them); when pointwise_layout says otherwise,
// the op runs on the operands viewed in the output's memory order and each
// out is restrided (in place: it is fresh, no one else holds it) to the
// layout CPU would give it.
void run_pointwise(const char* op, int device, OpArgs& a, c10::ArrayRef<int64_t> attrs,
                   c10::ArrayRef<at::Tensor> outs);

// run_op for an op that is not elementwise (conv, batch norm, pooling):
// outs are fresh contiguous tensors; those whose bit is set in mask come out
// in memory format mf (channels_last for rank 4, channels_last_3d for rank
// 5), transposed inside the op's own program (tpj::laid_out), the others
// contiguous. mf contiguous: plain run_op.
void run_op_laid_out(const char* op, int device, OpArgs& a, c10::ArrayRef<int64_t> attrs,
                     c10::ArrayRef<at::Tensor> outs, at::MemoryFormat mf, uint32_t mask);

// The memory format PyTorch's CPU kernels give a conv, batch norm or pooling
// result computed from t: t.suggest_memory_format(), channels_last when t's
// strides say so.
at::MemoryFormat format_of(const at::Tensor& t);

// run_op with the outputs' buffer shapes given (outs[i] must cover its
// storage, densely, from offset 0; shapes[i] its dims in memory order).
void run_op_shaped(const char* op, int device, OpArgs& a, c10::ArrayRef<int64_t> attrs,
                   c10::ArrayRef<at::Tensor> outs, const tpj_rt_shape_t* shapes);

// For an op that is not elementwise but whose result CPU lays out as its
// input (flip, sort: empty_like or the input's dense strides): `target` is
// the meta result CPU's kernel would make. When it is dense but not
// contiguous, the op runs on the input permuted into target's memory order
// (contiguous for a dense input), each dim d of the input becoming dim(d),
// and its contiguous result is viewed with target's strides: no copy.
struct InLayout {
  explicit InLayout(const at::Tensor& target);
  at::Tensor in(const at::Tensor& x) const;    // x permuted, or x
  int64_t dim(int64_t d) const;                // d's place in the permuted input
  at::Tensor out(const at::Tensor& r) const;   // r viewed in target's layout, or r
  bool active = false;
  Layout l;
  at::DimVector sizes;
  int64_t pos[TPJ_MAX_DIMS];
};

// r, computed contiguous, in the layout of meta (the result CPU's kernel
// would make: cat, pad, roll and interpolate allocate in their input's
// suggested memory format, channels_last included). One copy on the device
// when the layouts differ; r itself otherwise.
at::Tensor in_meta_layout(const at::Tensor& r, const at::Tensor& meta);

// True when result's buffer can simply become dst's: same dtype, sizes and
// strides, both from offset 0, dst covering its storage densely (so the
// buffer's row-major order is the memory order of both).
bool same_memory_layout(const at::Tensor& dst, const at::Tensor& result);

}  // namespace torch_pjrt

#endif  // TORCH_PJRT_LAYOUT_H_
