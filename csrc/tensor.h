// The tensor <-> C core bridge every room shares (device/tensor.cpp): a tpu
// tensor's box, buffer and view, dtypes, the operands of an op call
// (OpArgs) and running a table op (run_op) into new outputs.
#pragma once

#include <ATen/ATen.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/SmallVector.h>

#include <string>
#include <vector>

extern "C" {
#include "exec/exec.h"
#include "rt/box.h"
#include "rt/rt.h"
#include "view/view.h"
}

namespace torch_pjrt {

tpj_dtype_t to_tpj_dtype(at::ScalarType t);
// The ScalarType of a dtype (complex32's u32 storage reads as uint32).
at::ScalarType scalar_type_of(tpj_dtype_t t);
tpj_view_t view_of(const at::Tensor& t);
tpj_rt_shape_t shape_of(const at::Tensor& t);
// Rejects sparse, quantized, nested and unsupported-dtype tensors by name.
void check_supported(const at::Tensor& t, const char* op);
// A reference of its own to a storage's buffer, released when it dies.
// Another thread may swap a storage's buffer at any time (and drop the old
// one), so glue never keeps a bare `box->buf`: it takes a BufferRef.
class BufferRef {
 public:
  explicit BufferRef(tpj_rt_buffer_t* b = nullptr) : b_(b) {}
  BufferRef(BufferRef&& o) noexcept : b_(o.b_) { o.b_ = nullptr; }
  BufferRef(const BufferRef&) = delete;
  BufferRef& operator=(const BufferRef&) = delete;
  ~BufferRef() { tpj_rt_buffer_release(b_); }
  tpj_rt_buffer_t* get() const { return b_; }
  tpj_rt_buffer_t* operator->() const { return b_; }
  // Hands the reference to the caller.
  tpj_rt_buffer_t* release() {
    tpj_rt_buffer_t* b = b_;
    b_ = nullptr;
    return b;
  }

 private:
  tpj_rt_buffer_t* b_;
};
// The storage's current buffer, first giving a never-written storage a zero
// buffer.
BufferRef buffer_of(const at::Tensor& t);
// True when t reads its box's buffer exactly (no slicing, same dtype).
bool is_natural(const at::Tensor& t);
// True when t is contiguous from offset 0 and covers its whole storage.
bool covers_storage(const at::Tensor& t);

// Owns the buffers an op call creates for runtime scalars. Inline storage:
// a small op's operands cost no heap allocation.
struct OpArgs {
  c10::SmallVector<tpj_exec_arg_t, 4> args;
  c10::SmallVector<tpj_rt_buffer_t*, 4> owned;
  // Operands that were CPU 0-d tensors (add_operand): TensorIterator counts
  // them as operands of another shape when it picks an output's layout.
  int cpu_scalar_operands = 0;
  ~OpArgs();
  void tensor(const at::Tensor& t);               // read through t's view (buffer held)
  void scalar(const at::Scalar& s, at::ScalarType dt, int device);  // 0-d runtime argument
  void buffer(tpj_rt_buffer_t* b);                // used as it is (borrowed)
  void held(BufferRef b);                         // used as it is (the reference kept)
};

// Runs the table op on device; results go into the boxes of `outs`, which
// must be fresh contiguous tensors covering their storages.
// attrs and outs are ArrayRefs so a call's braced lists ({dtype, 0}, {out})
// allocate nothing.
void run_op(const char* op, int device, OpArgs& a, c10::ArrayRef<int64_t> attrs,
            c10::ArrayRef<at::Tensor> outs);
// A new contiguous tpu tensor on device, made as the empty kernel makes it
// but without a trip through the dispatcher (the usual output of run_op).
at::Tensor new_output(at::IntArrayRef sizes, at::ScalarType dtype, c10::Device device);
// Drops the runtime scalars kept for reuse (torch.tpu.empty_cache), and how
// many are kept now (live_buffers() leaves them out, as the executable cache's
// own state is left out).
void clear_scalar_cache();
int64_t scalar_cache_size();
// One warning per process when a disk cache entry was corrupt (recompiled).
void warn_disk_cache_once();

// Writes into the view dst, on the device: value is a tpu tensor or a scalar
// that broadcasts to dst (converted to dst's dtype). The storage gets a new
// buffer; every alias of it sees the write.
void write_view(const at::Tensor& dst, const at::Tensor& value);
void write_view(const at::Tensor& dst, const at::Scalar& value);

// The device all tpu operands share; 0-d CPU tensors are scalars and may mix
// in, as on CUDA. Raises PyTorch's "Expected all tensors to be on the same
// device" otherwise.
c10::Device common_device(const char* op, std::initializer_list<const at::Tensor*> ts);
// Adds t as an operand: read through its view, or (a CPU 0-d tensor) as a
// runtime scalar.
void add_operand(OpArgs& a, const at::Tensor& t, int device);
// The dims a reduction over `dim` covers: wrapped, sorted, distinct; every
// dim when none are named; none for a 0-d tensor.
std::vector<int64_t> reduced_dims(const at::Tensor& self, at::OptionalIntArrayRef dim);
// Half-precision math accumulates in float32, as PyTorch's CPU kernels do.
at::ScalarType accumulator(at::ScalarType t);
// A meta tensor with t's sizes, strides and dtype: PyTorch's meta functions
// on it give an op's output shape and dtype and run its argument checks.
at::Tensor to_meta(const at::Tensor& t);

// A new contiguous tpu tensor holding t's values (as dtype, broadcast to
// sizes), computed on t's device.
at::Tensor materialize(const at::Tensor& t, at::ScalarType dtype, at::IntArrayRef sizes);

// The smallest and largest value of an integer index tensor, read on the
// host (one wait for a tpu tensor); false when it is empty. Glue checks
// indices with it before launching: XLA clamps an out-of-range gather index
// and drops an out-of-range scatter update, both silent wrong answers.
bool index_bounds(const at::Tensor& index, int64_t* lo, int64_t* hi);

}  // namespace torch_pjrt
