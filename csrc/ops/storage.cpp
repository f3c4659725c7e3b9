// Native kernels PyTorch needs from any device: creation (empty*), views,
// resize, set_, scalars (item), fill_ (scalar and 0-d tensor values). Views
// only build TensorImpls over the same storage box.
#include <ATen/EmptyTensor.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_cpu_dispatch.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "allocator.h"
#include "runtime.h"
#include "tensor.h"
#include "storage_dtypes.h"
#include <ATen/MetaFunctions.h>
#include <ATen/ExpandUtils.h>
#include <string>

namespace torch_pjrt {
namespace {

void check_creation(std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                    std::optional<bool> pin_memory, const char* op) {
  auto dt = c10::dtype_or_default(dtype);
  TORCH_CHECK_NOT_IMPLEMENTED(to_tpj_dtype(dt) != TPJ_DTYPE_INVALID, op, ": dtype ", dt,
                              " is not supported on tpu");
  auto lay = c10::layout_or_default(layout);
  TORCH_CHECK_NOT_IMPLEMENTED(lay == at::kStrided, op, ": layout ", lay,
                              " is not supported on tpu (only torch.strided)");
  TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory), op,
              ": only CPU tensors can be pinned, not tpu tensors");
}

at::Tensor empty_memory_format(at::IntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout> layout,
                               std::optional<at::Device> device, std::optional<bool> pin_memory,
                               std::optional<at::MemoryFormat> memory_format) {
  check_creation(dtype, layout, pin_memory, "empty");
  c10::DeviceGuard guard(c10::device_or_default(device));
  return at::detail::empty_generic(size, allocator(), tpu_key_set(c10::dtype_or_default(dtype)),
                                   c10::dtype_or_default(dtype),
                                   memory_format);
}

at::Tensor empty_strided(at::IntArrayRef size, at::IntArrayRef stride,
                         std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                         std::optional<at::Device> device, std::optional<bool> pin_memory) {
  check_creation(dtype, layout, pin_memory, "empty_strided");
  c10::DeviceGuard guard(c10::device_or_default(device));
  return at::detail::empty_strided_generic(size, stride, allocator(),
                                           tpu_key_set(c10::dtype_or_default(dtype)),
                                           c10::dtype_or_default(dtype));
}

at::Tensor as_strided(const at::Tensor& self, c10::SymIntArrayRef size,
                      c10::SymIntArrayRef stride, std::optional<c10::SymInt> offset) {
  return at::cpu::as_strided_symint(self, size, stride, std::move(offset));
}

at::Tensor view(const at::Tensor& self, c10::SymIntArrayRef size) {
  return at::native::view(self, C10_AS_INTARRAYREF_SLOW(size));
}

at::Tensor reshape_alias(const at::Tensor& self, c10::SymIntArrayRef size,
                         c10::SymIntArrayRef stride) {
  return at::native::_reshape_alias(self, C10_AS_INTARRAYREF_SLOW(size),
                                    C10_AS_INTARRAYREF_SLOW(stride));
}

// Sets sizes (and strides) and grows the storage when it is too small: the
// device counterpart of ATen's resize_impl_cpu_, which would memcpy through
// our box pointer.
void resize_impl(at::TensorImpl* self, at::IntArrayRef size,
                 std::optional<at::IntArrayRef> stride) {
  if (self->sizes() == size && (!stride || self->strides() == *stride)) return;
  size_t itemsize = self->dtype().itemsize();
  size_t offset = static_cast<size_t>(self->storage_offset());
  size_t needed;
  if (stride) {
    self->set_sizes_and_strides(size, *stride);
    needed = at::detail::computeStorageNbytes(size, *stride, itemsize, offset);
  } else {
    self->set_sizes_contiguous(size);
    needed = at::detail::computeStorageNbytesContiguous(size, itemsize, offset);
  }
  if (self->numel() > 0 && needed > self->unsafe_storage().nbytes())
    resize_storage_bytes(self->unsafe_storage(), needed);
}

const at::Tensor& resize_(const at::Tensor& self, c10::SymIntArrayRef size,
                          std::optional<at::MemoryFormat> memory_format) {
  auto sizes = C10_AS_INTARRAYREF_SLOW(size);
  for (auto s : sizes) TORCH_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s);
  resize_impl(self.unsafeGetTensorImpl(), sizes, std::nullopt);
  if (memory_format) {
    auto mf = *memory_format;
    TORCH_CHECK(mf != at::MemoryFormat::Preserve, "Unsupported memory format ", mf);
    self.unsafeGetTensorImpl()->empty_tensor_restride(mf);
  }
  return self;
}

at::Tensor& set_storage_offset(at::Tensor& self, at::Storage source, c10::SymInt offset,
                               c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
  auto off = offset.expect_int();
  auto sizes = C10_AS_INTARRAYREF_SLOW(size);
  auto strides = C10_AS_INTARRAYREF_SLOW(stride);
  at::native::checkSetStorage(self, source, off, sizes, strides);
  self.unsafeGetTensorImpl()->set_storage_offset(off);
  std::optional<at::IntArrayRef> st =
      strides.data() != nullptr ? std::optional<at::IntArrayRef>(strides) : std::nullopt;
  resize_impl(self.unsafeGetTensorImpl(), sizes, st);
  return self;
}

at::Tensor& set_storage(at::Tensor& self, at::Storage source) {
  int64_t n = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  std::vector<c10::SymInt> size{c10::SymInt(n)};
  return set_storage_offset(self, std::move(source), 0, size, {});
}

at::Tensor& set_empty(at::Tensor& self) {
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0, allocator(), /*resizable=*/true);
  std::vector<c10::SymInt> size{c10::SymInt(0)};
  return set_storage_offset(self, std::move(storage), 0, size, {});
}

at::Tensor& set_tensor(at::Tensor& self, const at::Tensor& source) {
  if (self.is_same(source)) return self;
  return set_storage_offset(self, source.storage(), source.sym_storage_offset(),
                            source.sym_sizes(), source.sym_strides());
}

c10::Scalar local_scalar_dense(const at::Tensor& self) {
  check_supported(self, "item");
  TORCH_CHECK(self.numel() == 1, "a Tensor with ", self.numel(),
              " elements cannot be converted to Scalar");
  // view_copy keeps the view's rank (it broadcasts, never drops dims).
  at::Tensor one = is_natural(self) ? self : materialize(self, self.scalar_type(), self.sizes());
  at::Tensor host = at::empty(self.sizes(), self.options().device(at::kCPU));
  TPJ_CHECK(tpj_box_to_host(rt(), box_of(one), host.data_ptr()));
  return at::_local_scalar_dense(host);
}

at::Tensor& fill_scalar(at::Tensor& self, const at::Scalar& value) {
  check_supported(self, "fill_");
  if (self.numel() == 0) return self;
  if (covers_storage(self)) {
    OpArgs a;
    a.scalar(value, self.scalar_type(), self.device().index());
    run_op("tpj::full", self.device().index(), a, {}, {self});
  } else {
    write_view(self, value);  // part of a storage: a slice, a row, a column
  }
  return self;
}

at::Tensor& zero_(at::Tensor& self) { return fill_scalar(self, 0); }

// Views that change the dtype get the dispatch keys of their new dtype.
at::Tensor view_as_complex(const at::Tensor& self) {
  return with_dtype_keys(at::native::view_as_complex(self));
}

at::Tensor view_dtype(const at::Tensor& self, at::ScalarType dtype) {
  return with_dtype_keys(at::native::view_dtype(self, dtype));
}


// torch._assert_async: CUDA checks the value on the device and fails a later
// launch. Here the flag "the value is zero" is computed on the device and
// handed to the runtime, which reads it at the next wait (synchronize, a copy
// to the host) and fails that wait with the message: no host round trip per
// call (TorchTitan's RoPE asserts its positions this way every layer).
void assert_async_msg(const at::Tensor& self, c10::string_view msg) {
  TORCH_CHECK(self.numel() != 0, "Boolean value of Tensor with no values is ambiguous");
  TORCH_CHECK(self.numel() == 1, "Boolean value of Tensor with more than one value is ambiguous");
  check_supported(self, "_assert_async");
  at::Tensor failed = self.reshape({}).eq(0).contiguous();
  std::string text = msg.empty() ? std::string("Expected Tensor with single nonzero value, but "
                                               "got zero")
                                 : std::string(msg);
  TPJ_CHECK(tpj_rt_check_later(rt(), buffer_of(failed).get(), text.c_str()));
}

void assert_async(const at::Tensor& self) { assert_async_msg(self, ""); }
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  m.impl("empty.memory_format", TORCH_FN(empty_memory_format));
  m.impl("empty_strided", TORCH_FN(empty_strided));
  m.impl("as_strided", TORCH_FN(as_strided));
  m.impl("view", TORCH_FN(view));
  m.impl("_reshape_alias", TORCH_FN(reshape_alias));
  m.impl("view_as_real", TORCH_FN(at::native::view_as_real));
  m.impl("view_as_complex", TORCH_FN(view_as_complex));
  m.impl("view.dtype", TORCH_FN(view_dtype));
  m.impl("resize_", TORCH_FN(resize_));
  m.impl("set_.source_Storage", TORCH_FN(set_storage));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(set_storage_offset));
  m.impl("set_.source_Tensor", TORCH_FN(set_tensor));
  m.impl("set_", TORCH_FN(set_empty));
  m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));
  m.impl("fill_.Scalar", TORCH_FN(fill_scalar));
  m.impl("zero_", TORCH_FN(zero_));
  m.impl("_assert_async", TORCH_FN(assert_async));
  m.impl("_assert_async.msg", TORCH_FN(assert_async_msg));
}

namespace torch_pjrt {
namespace {

using at::Scalar;
using at::ScalarType;
using at::Tensor;

Tensor& fill_tensor(Tensor& self, const Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ",
              value.dim(), " dimensions.");
  // CPU's fill_(Tensor) copies, and copy_ refuses a self whose elements share
  // memory (fill_(Scalar) does not check)
  at::assert_no_internal_overlap(self);
  if (value.device().is_cpu()) return self.fill_(value.item());
  if (self.numel() == 0) return self;
  write_view(self, value);
  return self;
}
}  // namespace
}  // namespace torch_pjrt
namespace {
namespace tp = torch_pjrt;
using at::Scalar;
using at::Tensor;
}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("fill_.Tensor", TORCH_FN(tp::fill_tensor));
}
