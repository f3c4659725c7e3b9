// torch_pjrt C++ glue: what PyTorch's dispatcher demands in C++, and nothing
// else. Op semantics live in the C core (src/); this layer maps tensors to
// storage boxes and views, and tpj_status_t to c10 exceptions.
#pragma once

#include <ATen/ATen.h>
#include <c10/core/Allocator.h>
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

// The one bridge from tpj_status_t to a c10 exception. Frees the status.
[[noreturn]] void throw_status(tpj_status_t s, const char* context);

#define TPJ_CHECK(expr)                                        \
  do {                                                         \
    tpj_status_t tpj_s_ = (expr);                              \
    if (tpj_s_) ::torch_pjrt::throw_status(tpj_s_, __func__);  \
  } while (0)

// ---- runtime (runtime.cpp) -------------------------------------------------

// Records which plugin to open; the open itself happens on first use.
// error: when non-empty, no plugin was found and every use raises it.
void configure(const std::string& plugin_path, int cpu_devices, const std::string& error);
// Where compiled executables are kept across processes ("" turns it off).
void set_cache_dir(const std::string& dir);
// The runtime, opened on first call; raises when there is no plugin.
tpj_rt_t* rt();
tpj_exec_t* exec();
// Device count without raising (0 when the plugin cannot be opened).
int device_count_noexcept();
bool is_initialized();
// Raises "invalid device ordinal" for an index out of range.
void check_device_index(int64_t index);
int current_device();
void set_current_device(int index);

// ---- storage (allocator.cpp) -----------------------------------------------

c10::Allocator* allocator();
// The box behind a tpu tensor's storage (never NULL for a tpu tensor).
tpj_box_t* box_of(const at::Tensor& t);
tpj_box_t* box_of(const c10::Storage& s);
// The box a write into t installs its buffer in. A copy-on-write storage (a
// lazy clone shares its source's box) first gets a box of its own, as a CPU
// kernel's mutable_data_ptr() materialises it: writing one never changes
// the other.
tpj_box_t* box_for_write(const at::Tensor& t);
// Makes the storage nbytes long, keeping its first min(old, new) bytes.
void resize_storage_bytes(const c10::Storage& storage, size_t nbytes);

// ---- pinned host memory (pinned.cpp) ---------------------------------------
c10::Allocator* pinned_allocator();
bool is_pinned(const void* data);

// ---- tensors <-> the C core (tensor.cpp) -----------------------------------

tpj_dtype_t to_tpj_dtype(at::ScalarType t);
// The ScalarType of a dtype the lowerings compute in (bool .. complex128).
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

// ---- graph capture (graph.cpp) ---------------------------------------------
// True while torch.compile traces a graph: ops record instead of running, and
// glue that would read a tensor on the host (index validation) must not.
bool tracing();
// While this thread traces a graph, or runs eager ops with deferred index
// checks on (set_deferred_index_checks): records a device-side check that
// every value of the tpu tensor index lies in [lo, hi); a run where one does
// not fails the next wait on the device with message (an index out of range
// would otherwise be clamped silently). True when recorded (the caller
// skips its host check, which would wait for the values).
bool defer_index_check(const at::Tensor& index, int64_t lo, int64_t hi,
                       const std::string& message);
// This thread's eager index checks: on the host, waiting for the index's
// values (false, the default), or deferred to the device like a compiled
// graph's (true). Returns the previous setting.
bool set_deferred_index_checks(bool on);
// The graph parameter standing for a CPU 0-d input of the graph being traced
// (borrowed), or NULL: such a scalar changes per call and must not be baked in.
tpj_rt_buffer_t* traced_scalar(const at::Tensor& t);
// ---- in-place and out= forms of elementwise ops (ops.cpp) ------------------

// Writes result into dst as PyTorch's in-place forms do (castable dtype,
// same shape; buffer sharing or tpj::write_view).
void assign_result(const at::Tensor& dst, const at::Tensor& result, const char* op);
// The out= form: resizes out like at::native::resize_output, then assigns.
at::Tensor& out_result(at::Tensor& out, const at::Tensor& result, const char* op);
// What TensorIterator checks before writing dst from inputs (no internal or
// partial overlap).
void check_no_overlap(const at::Tensor& dst, std::initializer_list<const at::Tensor*> inputs);
// A Python number as a wrapped 0-d CPU tensor (weak in type promotion).
at::Tensor wrap_scalar(const at::Scalar& s);
// The smallest and largest value of an integer index tensor, read on the
// host (one wait for a tpu tensor); false when it is empty. Glue checks
// indices with it before launching: XLA clamps an out-of-range gather index
// and drops an out-of-range scatter update, both silent wrong answers.
bool index_bounds(const at::Tensor& index, int64_t* lo, int64_t* hi);

// ---- fallbacks (fallback.cpp) ----------------------------------------------
void count_fallback(const std::string& op);
// A kernel that has no lowering for dtype t and is about to run op on the
// CPU itself: honours TORCH_PJRT_FALLBACK (error raises NotImplementedError,
// warn warns once per op) and counts op in fallbacks().
void dtype_fallback(const char* op, at::ScalarType t);

}  // namespace torch_pjrt
