// Transfers: host <-> device and device <-> device, for any view on either
// side. Whole-storage destinations get a new buffer directly; a destination
// that is part of a storage (a slice, a row, a permuted dense view) is
// staged through the host in this version: exact, but slower than an
// on-device update (the engine issue moves that onto the device).
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "common.h"

namespace torch_pjrt {
namespace {

void upload_flat(tpj_box_t* box, at::ScalarType dtype, const void* data) {
  size_t item = c10::elementSize(dtype);
  int64_t n;
  tpj_dtype_t dt;
  if (box->nbytes % item == 0) {
    n = static_cast<int64_t>(box->nbytes / item);
    dt = to_tpj_dtype(dtype);
  } else {
    n = static_cast<int64_t>(box->nbytes);
    dt = TPJ_U8;
  }
  TPJ_CHECK(tpj_box_from_host(rt(), box, dt, &n, 1, data));
}

// A CPU tensor aliasing host bytes with t's dtype, sizes, strides, offset.
at::Tensor host_alias(const at::Tensor& host_bytes, const at::Tensor& t) {
  return at::empty({0}, t.options().device(at::kCPU))
      .set_(host_bytes.storage(), t.storage_offset(), t.sizes(), t.strides());
}

void copy_host_to_device(const at::Tensor& src, const at::Tensor& dst) {
  if (dst.numel() == 0) return;
  tpj_box_t* box = box_of(dst);
  if (covers_storage(dst)) {
    at::Tensor h = src.to(dst.scalar_type()).expand(dst.sizes()).contiguous().resolve_conj().resolve_neg();
    tpj_rt_shape_t s = shape_of(dst);
    TPJ_CHECK(tpj_box_from_host(rt(), box, s.dtype, s.dims, s.ndim, h.data_ptr()));
    return;
  }
  size_t nbytes = dst.storage().nbytes();
  at::Tensor bytes = at::empty({static_cast<int64_t>(nbytes)}, at::TensorOptions().dtype(at::kByte));
  bool whole = dst.storage_offset() == 0 && dst.is_non_overlapping_and_dense() &&
               static_cast<size_t>(dst.numel()) * dst.element_size() == nbytes;
  if (!whole) TPJ_CHECK(tpj_box_to_host(rt(), box, bytes.data_ptr()));
  host_alias(bytes, dst).copy_(src);
  upload_flat(box, dst.scalar_type(), bytes.data_ptr());
}

}  // namespace

// A CPU tensor with src's values (contiguous).
at::Tensor to_host(const at::Tensor& src) {
  at::Tensor h = at::empty(src.sizes(), src.options().device(at::kCPU));
  if (src.numel() == 0) return h;
  at::Tensor s = is_natural(src) ? src : materialize(src, src.scalar_type(), src.sizes());
  TPJ_CHECK(tpj_box_to_host(rt(), box_of(s), h.data_ptr()));
  return h;
}

namespace {

void copy_device_to_device(at::Tensor src, const at::Tensor& dst) {
  if (dst.numel() == 0) return;
  if (src.device() != dst.device()) {
    if (!is_natural(src)) src = materialize(src, src.scalar_type(), src.sizes());
    tpj_rt_buffer_t* moved = nullptr;
    TPJ_CHECK(tpj_rt_buffer_copy_to_device(rt(), buffer_of(src), dst.device().index(), &moved));
    c10::DeviceGuard guard(dst.device());
    at::Tensor tmp = at::empty(src.sizes(), src.options().device(dst.device()));
    tpj_box_set_buffer(box_of(tmp), moved);
    src = tmp;
  }
  if (!covers_storage(dst)) {
    copy_host_to_device(to_host(src), dst);
    return;
  }
  at::Tensor s = src;
  if (!(src.scalar_type() == dst.scalar_type() && src.sizes() == dst.sizes() && is_natural(src)))
    s = materialize(src, dst.scalar_type(), dst.sizes());
  // Buffers are immutable: the destination simply shares the source's.
  tpj_rt_buffer_t* buf = box_of(s)->buf;
  tpj_rt_buffer_retain(buf);
  tpj_box_set_buffer(box_of(dst), buf);
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  (void)non_blocking;  // copies complete before returning, which is always correct
  check_supported(self, "copy_");
  check_supported(dst, "copy_");
  bool src_tpu = self.device().is_privateuseone(), dst_tpu = dst.device().is_privateuseone();
  if (src_tpu && dst_tpu) {
    copy_device_to_device(self, dst);
  } else if (dst_tpu) {
    TORCH_CHECK(self.device().is_cpu(), "copy_: cannot copy from ", self.device(), " to ",
                dst.device(), " (copy through the CPU)");
    copy_host_to_device(self, dst);
  } else {
    TORCH_CHECK(dst.device().is_cpu(), "copy_: cannot copy from ", self.device(), " to ",
                dst.device(), " (copy through the CPU)");
    if (dst.numel() == 0) return dst;
    if (dst.is_contiguous() && dst.scalar_type() == self.scalar_type() &&
        dst.sizes() == self.sizes() && !dst.is_conj() && !dst.is_neg()) {
      at::Tensor s = is_natural(self) ? self : materialize(self, self.scalar_type(), self.sizes());
      TPJ_CHECK(tpj_box_to_host(rt(), box_of(s), dst.data_ptr()));
    } else {
      dst.copy_(to_host(self));
    }
  }
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  if (dst.sizes() != self.sizes()) dst.resize_(self.sizes());
  return copy_from(self, dst, false);
}

}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_copy_from", TORCH_FN(torch_pjrt::copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(torch_pjrt::copy_from_and_resize));
}
