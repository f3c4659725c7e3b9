// Tensors as the C core sees them: a box, a buffer, a view; and the one call
// that runs a table op eagerly.
#include <atomic>
#include <ATen/EmptyTensor.h>
#include <ATen/WrapDimUtils.h>
#include <c10/core/DeviceGuard.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "allocator.h"
#include "graph.h"
#include "ops/copy.h"
#include "runtime.h"
#include "tensor.h"
#include "exec/donate.h"
#include "inplace.h"
#include "layout.h"
#include "storage_dtypes.h"
#include "view/box.h"

namespace torch_pjrt {

tpj_dtype_t to_tpj_dtype(at::ScalarType t) {
  switch (t) {
    case at::kBool: return TPJ_BOOL;
    case at::kByte: return TPJ_U8;
    case at::kChar: return TPJ_I8;
    case at::kShort: return TPJ_I16;
    case at::kInt: return TPJ_I32;
    case at::kLong: return TPJ_I64;
    case at::kHalf: return TPJ_F16;
    case at::kBFloat16: return TPJ_BF16;
    case at::kFloat: return TPJ_F32;
    case at::kDouble: return TPJ_F64;
    case at::kComplexFloat: return TPJ_C64;
    case at::kComplexDouble: return TPJ_C128;
    // Storage only (storage_dtypes.cpp): held and moved, computed on the CPU.
    case at::kUInt16: return TPJ_U16;
    case at::kUInt32: return TPJ_U32;
    case at::kUInt64: return TPJ_U64;
    // XLA has no complex32: its 4 bytes per element live in a u32 buffer
    // (same element size, so views keep their sizes, strides and offsets).
    case at::kComplexHalf: return TPJ_U32;
    default: return TPJ_DTYPE_INVALID;
  }
}

at::ScalarType scalar_type_of(tpj_dtype_t t) {
  switch (t) {
    case TPJ_BOOL: return at::kBool;
    case TPJ_U8: return at::kByte;
    case TPJ_I8: return at::kChar;
    case TPJ_I16: return at::kShort;
    case TPJ_I32: return at::kInt;
    case TPJ_I64: return at::kLong;
    case TPJ_F16: return at::kHalf;
    case TPJ_BF16: return at::kBFloat16;
    case TPJ_F32: return at::kFloat;
    case TPJ_F64: return at::kDouble;
    case TPJ_C64: return at::kComplexFloat;
    case TPJ_C128: return at::kComplexDouble;
    // storage only (storage_dtypes.cpp): run_op refuses them in its own words
    case TPJ_U16: return at::kUInt16;
    case TPJ_U32: return at::kUInt32;
    case TPJ_U64: return at::kUInt64;
    default: TORCH_INTERNAL_ASSERT(false, "no ScalarType for ", tpj_dtype_name(t));
  }
}

void check_supported(const at::Tensor& t, const char* op) {
  TORCH_CHECK_NOT_IMPLEMENTED(t.layout() == at::kStrided, op, ": ", t.layout(),
                              " tensors are not supported on tpu (only strided)");
  TORCH_CHECK_NOT_IMPLEMENTED(!t.is_quantized(), op,
                              ": quantized tensors are not supported on tpu (got ",
                              t.scalar_type(), ")");
  TORCH_CHECK_NOT_IMPLEMENTED(!t.is_nested(), op, ": nested tensors are not supported on tpu");
  TORCH_CHECK_NOT_IMPLEMENTED(to_tpj_dtype(t.scalar_type()) != TPJ_DTYPE_INVALID, op,
                              ": dtype ", t.scalar_type(), " is not supported on tpu");
  TORCH_CHECK_NOT_IMPLEMENTED(t.dim() <= TPJ_MAX_DIMS, op, ": tensors of rank ", t.dim(),
                              " are not supported on tpu (max ", TPJ_MAX_DIMS, ")");
}

tpj_view_t view_of(const at::Tensor& t) {
  tpj_view_t v;
  std::memset(&v, 0, sizeof(v));
  v.dtype = to_tpj_dtype(t.scalar_type());
  v.ndim = static_cast<int>(t.dim());
  for (int i = 0; i < v.ndim; ++i) {
    v.sizes[i] = t.size(i);
    v.strides[i] = t.stride(i);
  }
  v.offset = t.storage_offset();
  return v;
}

tpj_rt_shape_t shape_of(const at::Tensor& t) {
  tpj_rt_shape_t s;
  std::memset(&s, 0, sizeof(s));
  s.dtype = to_tpj_dtype(t.scalar_type());
  s.ndim = static_cast<int>(t.dim());
  for (int i = 0; i < s.ndim; ++i) s.dims[i] = t.size(i);
  return s;
}

BufferRef buffer_of(const at::Tensor& t) {
  tpj_box_t* box = box_of(t);
  if (tpj_rt_buffer_t* b = tpj_box_acquire_buffer(box)) return BufferRef(b);
  // Reading a never-written storage: materialise zeros, in the reader's
  // dtype when the bytes divide into it (else as bytes). Another thread may
  // write the storage meanwhile: its buffer wins.
  std::vector<uint8_t> zeros(box->nbytes, 0);
  size_t item = t.element_size();
  bool typed = box->nbytes % item == 0;
  int64_t n = static_cast<int64_t>(typed ? box->nbytes / item : box->nbytes);
  tpj_rt_buffer_t* z = nullptr;
  TPJ_CHECK(tpj_rt_buffer_from_host(rt(), box->device,
                                    typed ? to_tpj_dtype(t.scalar_type()) : TPJ_U8, &n, 1,
                                    zeros.data(), &z));
  tpj_rt_buffer_retain(z);
  if (!tpj_box_set_buffer_if_empty(box, z)) {
    tpj_rt_buffer_release(z);
    tpj_rt_buffer_release(z);
    return BufferRef(tpj_box_acquire_buffer(box));
  }
  return BufferRef(z);
}

namespace {
bool reads_naturally(const at::Tensor& t, const tpj_box_t* box, const tpj_rt_buffer_t* b) {
  if (!b) return false;
  tpj_view_t v = view_of(t);
  return tpj_view_is_natural(&v, b->dtype, b->dims, b->ndim) &&
         tpj_rt_buffer_nbytes(b) == box->nbytes;
}
}  // namespace

bool is_natural(const at::Tensor& t) {
  tpj_box_t* box = box_of(t);
  BufferRef b(tpj_box_acquire_buffer(box));
  return reads_naturally(t, box, b.get());
}

bool covers_storage(const at::Tensor& t) {
  return t.storage_offset() == 0 && t.is_contiguous() &&
         static_cast<size_t>(t.numel()) * t.element_size() == t.storage().nbytes();
}

OpArgs::~OpArgs() {
  for (auto* b : owned) tpj_rt_buffer_release(b);
}

void OpArgs::tensor(const at::Tensor& t_in) {
  // A conjugate or negative view reaches kernels that PyTorch lets through the
  // Conjugate/Negative keys (mm, bmm, addmm, dot...: BLAS reads the bit); the
  // lowerings read stored values, so resolve the bit first (x @ x.conj().T was wrong).
  const at::Tensor t = (t_in.is_conj() || t_in.is_neg()) ? t_in.resolve_conj().resolve_neg() : t_in;
  tpj_exec_arg_t a;
  std::memset(&a, 0, sizeof(a));
  // Held: t may be a temporary (a.tensor(x.reshape(...))) whose storage dies
  // before run_op, and another thread may replace the storage's buffer.
  a.buf = buffer_of(t).release();
  owned.push_back(a.buf);
  a.has_view = 1;
  a.view = view_of(t);
  args.push_back(a);
}

namespace {

// The bytes of s as one element of dt (16 bytes at most), converted as
// at::scalar_tensor(s, dt) converts it (Scalar::to, which raises on
// overflow). False for a dtype this does not know.
bool scalar_bytes(const at::Scalar& s, at::ScalarType dt, unsigned char* out, size_t* n) {
#define TPJ_SCALAR_CASE(st, T)           \
  case at::ScalarType::st: {             \
    T v = s.to<T>();                     \
    std::memcpy(out, &v, sizeof(v));     \
    *n = sizeof(v);                      \
    return true;                         \
  }
  switch (dt) {
    TPJ_SCALAR_CASE(Bool, bool)
    TPJ_SCALAR_CASE(Byte, uint8_t)
    TPJ_SCALAR_CASE(Char, int8_t)
    TPJ_SCALAR_CASE(Short, int16_t)
    TPJ_SCALAR_CASE(Int, int32_t)
    TPJ_SCALAR_CASE(Long, int64_t)
    TPJ_SCALAR_CASE(Half, at::Half)
    TPJ_SCALAR_CASE(BFloat16, at::BFloat16)
    TPJ_SCALAR_CASE(Float, float)
    TPJ_SCALAR_CASE(Double, double)
    TPJ_SCALAR_CASE(ComplexFloat, c10::complex<float>)
    TPJ_SCALAR_CASE(ComplexDouble, c10::complex<double>)
    default:
      return false;
  }
#undef TPJ_SCALAR_CASE
}

// Uploaded runtime scalars, kept for reuse: buffers are immutable, so one
// 0-d buffer of (device, dtype, bytes) serves every call that passes that
// value (x * 2.0 in a loop uploaded and waited for a buffer on each call).
// Direct-mapped and small: a new value evicts what shared its slot.
struct ScalarSlot {
  tpj_rt_buffer_t* buf = nullptr;  // owned reference
  int device = -1;
  at::ScalarType dtype = at::ScalarType::Undefined;
  size_t n = 0;
  unsigned char bytes[16] = {};
};
constexpr size_t kScalarSlots = 64;
std::mutex g_scalar_mu;
ScalarSlot g_scalars[kScalarSlots];

size_t scalar_slot(int device, at::ScalarType dt, const unsigned char* b, size_t n) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ (static_cast<uint64_t>(device) << 8) ^
               static_cast<uint64_t>(dt);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  return (h ^ (h >> 29)) % kScalarSlots;
}

// A new reference to the 0-d buffer holding s as dt on device.
tpj_rt_buffer_t* scalar_buffer(const at::Scalar& s, at::ScalarType dt, int device) {
  unsigned char b[16];
  size_t n = 0;
  tpj_rt_buffer_t* buf = nullptr;
  if (!scalar_bytes(s, dt, b, &n)) {
    // A 0-d CPU tensor of the wanted dtype gives the scalar's bytes.
    at::Tensor host = at::scalar_tensor(s, at::TensorOptions().dtype(dt));
    TPJ_CHECK(tpj_rt_buffer_from_host(rt(), device, to_tpj_dtype(dt), nullptr, 0,
                                      host.data_ptr(), &buf));
    return buf;
  }
  size_t k = scalar_slot(device, dt, b, n);
  {
    std::lock_guard<std::mutex> lock(g_scalar_mu);
    ScalarSlot& e = g_scalars[k];
    if (e.buf && e.device == device && e.dtype == dt && e.n == n &&
        std::memcmp(e.bytes, b, n) == 0) {
      tpj_rt_buffer_retain(e.buf);
      return e.buf;
    }
  }
  TPJ_CHECK(tpj_rt_buffer_from_host(rt(), device, to_tpj_dtype(dt), nullptr, 0, b, &buf));
  tpj_rt_buffer_t* old = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_scalar_mu);
    ScalarSlot& e = g_scalars[k];
    old = e.buf;
    tpj_rt_buffer_retain(buf);
    e.buf = buf;
    e.device = device;
    e.dtype = dt;
    e.n = n;
    std::memcpy(e.bytes, b, n);
  }
  tpj_rt_buffer_release(old);
  return buf;
}

}  // namespace

void clear_scalar_cache() {
  std::vector<tpj_rt_buffer_t*> drop;
  {
    std::lock_guard<std::mutex> lock(g_scalar_mu);
    for (ScalarSlot& e : g_scalars) {
      if (e.buf) drop.push_back(e.buf);
      e = ScalarSlot();
    }
  }
  for (tpj_rt_buffer_t* b : drop) tpj_rt_buffer_release(b);
}

int64_t scalar_cache_size() {
  // Only the buffers no one but the cache holds: a scalar a captured graph
  // also keeps (as its constant) is live for that graph, and stays counted
  // after the cache evicts it.
  std::lock_guard<std::mutex> lock(g_scalar_mu);
  int64_t n = 0;
  for (const ScalarSlot& e : g_scalars)
    if (e.buf && __atomic_load_n(&e.buf->refcount, __ATOMIC_ACQUIRE) == 1) ++n;
  return n;
}

void OpArgs::scalar(const at::Scalar& s, at::ScalarType dt, int device) {
  tpj_rt_buffer_t* buf = scalar_buffer(s, dt, device);
  owned.push_back(buf);
  tpj_exec_arg_t a;
  std::memset(&a, 0, sizeof(a));
  a.buf = buf;
  args.push_back(a);
}

void OpArgs::held(BufferRef b) {
  buffer(b.get());
  owned.push_back(b.release());
}

void OpArgs::buffer(tpj_rt_buffer_t* b) {
  tpj_exec_arg_t a;
  std::memset(&a, 0, sizeof(a));
  a.buf = b;
  args.push_back(a);
}

namespace {
// Runs the write op on a's operands into dst's storage: the old buffer
// (a.args[0]) is donated to the result when the box is its sole holder.
//
// a.args[0] is held (a reference in a.owned, taken with buffer_of). Under the
// box's lock no other thread can take a new reference to the box's buffer,
// so when that buffer is still a.args[0] our own reference is dropped (the
// box keeps it alive) and "the box is its sole holder" is a refcount of 1
// that stays true through the launch and the install of the result. When
// another thread wrote the storage since we read it, its buffer is not
// ours to donate: ours is computed from what we read and installed last,
// as two racing writes end on a CPU.
void run_write(const char* op, const at::Tensor& dst, OpArgs& a, const int64_t* attrs, int na,
               const tpj_rt_shape_t& out) {
  c10::SmallVector<int, 4> donate_to(a.args.size(), -1);
  donate_to[0] = 0;
  tpj_rt_buffer_t* result = nullptr;
  int donated = 0;
  tpj_box_t* box = box_for_write(dst);
  tpj_box_lock(box);
  tpj_rt_buffer_t* cur = a.args[0].buf;
  if (box->buf == cur) {
    for (size_t i = 0; i < a.owned.size(); ++i) {
      if (a.owned[i] != cur) continue;
      a.owned.erase(a.owned.begin() + static_cast<std::ptrdiff_t>(i));
      tpj_rt_buffer_release(cur);  // the box still holds it
      break;
    }
  }
  tpj_status_t s = tpj_exec_run_donating(exec(), op, dst.device().index(), a.args.data(),
                                         static_cast<int>(a.args.size()), attrs, na, &out, 1,
                                         donate_to.data(), &result, &donated);
  // A launch that reported its failure at once (launch-blocking) has still
  // made the result, and may have taken the old buffer: the storage holds
  // the result either way, which carries the failure to its readers.
  if (result) tpj_box_set_buffer(box, result);
  tpj_box_unlock(box);
  TPJ_CHECK(s);
}

// A view that is one block of the storage's buffer (src/view/box.h): one
// dynamic_update_slice, which XLA does in place on the donated buffer (no
// copy of the storage), at a position passed at run time (0-d i64 scalars:
// writing at each step of a loop, a KV cache, compiles once).
void write_block(const at::Tensor& dst, OpArgs& a, const tpj_view_t& v, const int64_t* start,
                 const int64_t* block) {
  const tpj_rt_buffer_t* cur = a.args[0].buf;
  int64_t attrs[2 + 2 * TPJ_MAX_DIMS];
  int na = 0;
  attrs[na++] = v.dtype;
  attrs[na++] = v.ndim;
  for (int i = 0; i < v.ndim; ++i) attrs[na++] = v.sizes[i];
  for (int k = 0; k < cur->ndim; ++k) attrs[na++] = block[k];
  tpj_rt_shape_t out;
  std::memset(&out, 0, sizeof(out));
  out.dtype = cur->dtype;
  out.ndim = cur->ndim;
  std::copy(cur->dims, cur->dims + cur->ndim, out.dims);
  int device = dst.device().index();
  for (int k = 0; k < cur->ndim; ++k) a.scalar(at::Scalar(start[k]), at::kLong, device);
  run_write("tpj::write_block", dst, a, attrs, na, out);
}

// a.args[0] is the storage's current buffer, borrowed from its box (so the
// box is its sole holder unless another storage, a clone or a cached value
// shares it); the new storage replaces it.
void write_view_with(const at::Tensor& dst, OpArgs& a) {
  tpj_box_t* box = box_of(dst);
  size_t item = dst.element_size();
  TORCH_CHECK_NOT_IMPLEMENTED(box->nbytes % item == 0, "writing a ", dst.scalar_type(),
                              " view into a storage of ", box->nbytes, " bytes");
  tpj_view_t v = view_of(dst);
  const tpj_rt_buffer_t* cur = a.args[0].buf;
  bool same_type = cur->dtype == v.dtype && tpj_rt_buffer_nbytes(cur) == box->nbytes;
  int64_t start[TPJ_MAX_DIMS], block[TPJ_MAX_DIMS];
  if (same_type && tpj_view_as_box(&v, cur->dims, cur->ndim, start, block)) {
    write_block(dst, a, v, start, block);
    return;
  }
  int64_t attrs[TPJ_OP_MAX_ATTRS];
  int na = tpj_view_to_attrs(&v, attrs, TPJ_OP_MAX_ATTRS);
  TORCH_INTERNAL_ASSERT(na > 0);
  tpj_rt_shape_t out;
  std::memset(&out, 0, sizeof(out));
  out.dtype = v.dtype;
  if (same_type) {
    // The new storage keeps the old buffer's type: the old buffer can then be
    // donated to it, and whole-tensor reads of it stay plain reshapes.
    out.ndim = cur->ndim;
    std::copy(cur->dims, cur->dims + cur->ndim, out.dims);
  } else {
    out.ndim = 1;
    out.dims[0] = static_cast<int64_t>(box->nbytes / item);
  }
  run_write("tpj::write_view", dst, a, attrs, na, out);
}
}  // namespace

void write_view(const at::Tensor& dst, const at::Tensor& value) {
  if (dst.numel() == 0) return;
  OpArgs a;
  a.held(buffer_of(dst));
  a.tensor(value);
  write_view_with(dst, a);
}

void write_view(const at::Tensor& dst, const at::Scalar& value) {
  if (dst.numel() == 0) return;
  OpArgs a;
  a.held(buffer_of(dst));
  a.scalar(value, dst.scalar_type(), dst.device().index());
  write_view_with(dst, a);
}

namespace {
// Below this many bytes a whole-storage in-place op computes into a fresh
// buffer instead: PJRT's CPU client runs a launch with a donated argument
// through its worker threads rather than inline, which costs more than
// copying a small storage (x.add_(1) on 64 KiB: 9.6 us fresh, 28 us
// donated; 4 MiB: 273 us fresh, 197 us donated). Slice writes always donate:
// there the copy is the whole storage against one block.
std::atomic<int64_t> g_in_place_min_bytes{int64_t{1} << 20};
}  // namespace

int64_t set_in_place_min_bytes(int64_t n) { return g_in_place_min_bytes.exchange(n); }

bool add_in_place_operand(OpArgs& a, const at::Tensor& self) {
  TORCH_INTERNAL_ASSERT(a.args.empty(), "add_in_place_operand: the storage is operand 0");
  if (self.numel() == 0 || self.is_conj() || self.is_neg()) return false;
  tpj_box_t* box = box_of(self);
  if (static_cast<int64_t>(box->nbytes) < g_in_place_min_bytes.load(std::memory_order_relaxed))
    return false;
  BufferRef cur(tpj_box_acquire_buffer(box));
  if (!reads_naturally(self, box, cur.get())) return false;
  // Read through self's (natural) view, so a buffer of another shape still
  // reads right (it is then not donated: the output's type differs).
  // run_write decides, under the box's lock, whether it can be donated.
  a.held(std::move(cur));
  a.args.back().has_view = 1;
  a.args.back().view = view_of(self);
  return true;
}

void run_op_in_place(const char* op, int device, OpArgs& a, c10::ArrayRef<int64_t> attrs,
                     const at::Tensor& self) {
  TORCH_INTERNAL_ASSERT(!a.args.empty(), op, ": operand 0 must be the storage's buffer");
  TORCH_INTERNAL_ASSERT(device == self.device().index(), op, ": runs on self's device");
  check_storage_only(op, a, {self});
  run_write(op, self, a, attrs.data(), static_cast<int>(attrs.size()), shape_of(self));
  warn_disk_cache_once();
}

void run_op_shaped(const char* op, int device, OpArgs& a, c10::ArrayRef<int64_t> attrs,
                   c10::ArrayRef<at::Tensor> outs, const tpj_rt_shape_t* given) {
  check_storage_only(op, a, outs);
  TORCH_INTERNAL_ASSERT(outs.size() <= TPJ_OP_MAX_OUT, op, ": too many outputs");
  tpj_rt_shape_t shapes[TPJ_OP_MAX_OUT];
  tpj_rt_buffer_t* results[TPJ_OP_MAX_OUT] = {};
  bool empty = true;
  for (size_t i = 0; i < outs.size(); ++i) {
    const at::Tensor& o = outs[i];
    // A new buffer becomes the whole storage, its row-major order the
    // storage's memory order: o must be dense from offset 0 (contiguous
    // unless the caller says in which order, layout.h).
    TORCH_INTERNAL_ASSERT(covers_storage(o), op, ": output must be a fresh contiguous tensor");
    shapes[i] = given ? given[i] : shape_of(o);
    if (o.numel() != 0) empty = false;
  }
  if (empty && !outs.empty()) return;  // nothing to compute
  TPJ_CHECK(tpj_exec_run(exec(), op, device, a.args.data(), static_cast<int>(a.args.size()),
                         attrs.data(), static_cast<int>(attrs.size()), shapes,
                         static_cast<int>(outs.size()), results));
  // Outputs are fresh tensors, or a whole storage being overwritten (fill_):
  // the latter may be a lazy clone's.
  for (size_t i = 0; i < outs.size(); ++i) tpj_box_set_buffer(box_for_write(outs[i]), results[i]);
  warn_disk_cache_once();
}

void run_op(const char* op, int device, OpArgs& a, c10::ArrayRef<int64_t> attrs,
            c10::ArrayRef<at::Tensor> outs) {
  run_op_shaped(op, device, a, attrs, outs, nullptr);
}

at::Tensor new_output(at::IntArrayRef sizes, at::ScalarType dtype, c10::Device device) {
  c10::DeviceGuard guard(device);
  return at::detail::empty_generic(sizes, allocator(), tpu_key_set(dtype), dtype, std::nullopt);
}

void warn_disk_cache_once() {
  char path[512];
  if (tpj_exec_take_disk_error(exec(), path, sizeof(path)))
    TORCH_WARN("torch_pjrt: the executable cache entry ", path,
               " was unreadable or corrupt; it was recompiled and rewritten");
}

// The device all tpu operands share; 0-d CPU tensors are scalars and may mix
// in, as on CUDA. Raises PyTorch's usual message otherwise.
c10::Device common_device(const char* op, std::initializer_list<const at::Tensor*> ts) {
  std::optional<c10::Device> dev;
  for (const at::Tensor* t : ts) {
    if (t->device().is_cpu() && t->dim() == 0) continue;
    if (!dev) {
      dev = t->device();
    } else if (*dev != t->device()) {
      TORCH_CHECK(false, "Expected all tensors to be on the same device, but found at least two "
                         "devices, ", *dev, " and ", t->device(), "! (when checking arguments for ",
                  op, ")");
    }
  }
  TORCH_INTERNAL_ASSERT(dev && dev->is_privateuseone(), op, ": no tpu operand");
  return *dev;
}

// A tensor operand: read through its view, or a CPU 0-d scalar uploaded.
void add_operand(OpArgs& a, const at::Tensor& t, int device) {
  if (!t.device().is_cpu()) {
    a.tensor(t);
    return;
  }
  ++a.cpu_scalar_operands;
  if (tpj_rt_buffer_t* traced = traced_scalar(t)) {
    a.buffer(traced);
  } else if (!t.is_conj() && !t.is_neg() && t.scalar_type() == at::kDouble) {
    // A Python float (a wrapped double): read it without item()'s dispatch.
    a.scalar(at::Scalar(*t.const_data_ptr<double>()), t.scalar_type(), device);
  } else if (!t.is_conj() && !t.is_neg() && t.scalar_type() == at::kLong) {
    a.scalar(at::Scalar(*t.const_data_ptr<int64_t>()), t.scalar_type(), device);
  } else {
    a.scalar(t.item(), t.scalar_type(), device);
  }
}

std::vector<int64_t> reduced_dims(const at::Tensor& self, at::OptionalIntArrayRef dim) {
  std::vector<int64_t> dims;
  int64_t nd = self.dim();
  if (nd == 0) return dims;  // dim 0 / -1 of a 0-d tensor reduce nothing
  if (!dim || dim->empty()) {
    for (int64_t d = 0; d < nd; ++d) dims.push_back(d);
  } else {
    for (int64_t d : *dim) dims.push_back(c10::maybe_wrap_dim(d, nd));
    std::sort(dims.begin(), dims.end());
    dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  }
  return dims;
}

at::ScalarType accumulator(at::ScalarType t) {
  return (t == at::kHalf || t == at::kBFloat16) ? at::kFloat : t;
}

at::Tensor to_meta(const at::Tensor& t) {
  return at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kMeta));
}

at::Tensor materialize(const at::Tensor& t, at::ScalarType dtype, at::IntArrayRef sizes) {
  c10::DeviceGuard guard(t.device());
  at::Tensor out = at::empty(sizes, t.options().dtype(dtype));
  if (out.numel() == 0) return out;
  OpArgs a;
  a.tensor(t);
  run_op("tpj::view_copy", t.device().index(), a, {}, {out});
  return out;
}


bool index_bounds(const at::Tensor& index, int64_t* lo, int64_t* hi) {
  if (index.numel() == 0) return false;
  // A compiled graph cannot wait on values: its indices are not checked.
  if (tracing() && !index.device().is_cpu()) return false;
  at::Tensor h = index.device().is_cpu() ? index : to_host(index);
  *lo = h.min().item<int64_t>();
  *hi = h.max().item<int64_t>();
  return true;
}

}  // namespace torch_pjrt
