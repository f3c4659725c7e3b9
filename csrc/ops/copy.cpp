// Transfers: host <-> device and device <-> device, for any view on either
// side. A destination that covers its storage gets a new buffer directly;
// one that is part of a storage (a slice, a row, a permuted view) is written
// on the device by tpj::write_view (dynamic_update_slice or scatter).
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>

#include "allocator.h"
#include "ops/copy.h"
#include "ops/fallback.h"
#include "pinned.h"
#include "runtime.h"
#include "tensor.h"
#include "layout.h"
#include "storage_dtypes.h"

extern "C" {
#include "rt/upload.h"
}

namespace torch_pjrt {
namespace {

void release_host_storage(void* storage) { delete static_cast<c10::Storage*>(storage); }

// A non_blocking upload of pinned memory returns before the plugin has read
// it (as cudaMemcpyAsync does): the source storage is kept alive until the
// plugin is done with it. Like CUDA, the user must not write the source
// before synchronizing.
bool upload_pinned_async(const at::Tensor& h, const at::Tensor& dst) {
  if (!is_pinned(h.data_ptr())) return false;
  tpj_rt_shape_t s = shape_of(dst);
  tpj_box_t* box = box_for_write(dst);
  auto* keep = new c10::Storage(h.storage());
  tpj_rt_buffer_t* buf = nullptr;
  tpj_status_t st = tpj_rt_buffer_from_host_async(rt(), box->device, s.dtype, s.dims, s.ndim,
                                                  h.data_ptr(), &release_host_storage, keep, &buf);
  if (st) {
    delete keep;
    throw_status(st, "copy_");
  }
  tpj_box_set_buffer(box, buf);
  return true;
}

void copy_host_to_device(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  if (dst.numel() == 0) return;
  at::Tensor h = src.to(dst.scalar_type()).contiguous().resolve_conj().resolve_neg();
  if (covers_storage(dst) && h.sizes() == dst.sizes()) {
    if (non_blocking && upload_pinned_async(h, dst)) return;
    tpj_rt_shape_t s = shape_of(dst);
    TPJ_CHECK(tpj_box_from_host(rt(), box_for_write(dst), s.dtype, s.dims, s.ndim, h.data_ptr()));
    return;
  }
  // Upload the source as it is (broadcasting happens on the device), then
  // write it into the destination's view there.
  c10::DeviceGuard guard(dst.device());
  at::Tensor staged = at::empty(h.sizes(), dst.options());
  tpj_rt_shape_t s = shape_of(staged);
  TPJ_CHECK(tpj_box_from_host(rt(), box_of(staged), s.dtype, s.dims, s.ndim, h.data_ptr()));
  write_view(dst, staged);
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
    TPJ_CHECK(tpj_rt_buffer_copy_to_device(rt(), buffer_of(src).get(), dst.device().index(), &moved));
    c10::DeviceGuard guard(dst.device());
    at::Tensor tmp = at::empty(src.sizes(), src.options().device(dst.device()));
    tpj_box_set_buffer(box_of(tmp), moved);
    src = tmp;
  }
  if (!covers_storage(dst)) {
    write_view(dst, src);
    return;
  }
  at::Tensor s = src;
  if (!(src.scalar_type() == dst.scalar_type() && src.sizes() == dst.sizes() && is_natural(src)))
    s = materialize(src, dst.scalar_type(), dst.sizes());
  // Buffers are immutable: the destination simply shares the source's.
  tpj_box_set_buffer(box_for_write(dst), buffer_of(s).release());
}

at::Tensor copy_from_lazy_bits(const at::Tensor& self, const at::Tensor& dst, bool non_blocking);

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  // The Conjugate/Negative keys send copies with lazy bits to
  // copy_from_lazy_bits, but not when a TorchDispatchMode is active
  // (torch.compile's runtime wrapper is one): the copy reaches this kernel
  // with the bits still set, and reading the stored values would drop them.
  if (self.is_conj() || self.is_neg() || dst.is_conj() || dst.is_neg())
    return copy_from_lazy_bits(self, dst, non_blocking);
  // Host-to-device copies from pinned memory honour non_blocking; the others
  // complete before returning, which is always correct.
  check_supported(self, "copy_");
  check_supported(dst, "copy_");
  // TensorIterator's first check: dst may not have elements sharing memory
  if (dst.device().is_privateuseone()) at::assert_no_internal_overlap(dst);
  // copy_ broadcasts the source to dst: CPU's checks (TensorIterator's
  // wording), before any path that would reshape on the device.
  if (self.sizes() != dst.sizes()) {
    std::vector<int64_t> shape = at::infer_size(dst.sizes(), self.sizes());
    TORCH_CHECK(c10::IntArrayRef(shape) == dst.sizes(), "output with shape ", dst.sizes(),
                " doesn't match the broadcast shape ", c10::IntArrayRef(shape));
  }
  bool src_tpu = self.device().is_privateuseone(), dst_tpu = dst.device().is_privateuseone();
  Layout l;
  if (dst_tpu && dst.storage_offset() == 0 && !is_storage_only(dst.scalar_type()) &&
      static_cast<size_t>(dst.numel()) * dst.element_size() == dst.storage().nbytes() &&
      dense_layout(dst, &l)) {
    // A whole storage in another order of its dims (a clone or .to() of a
    // permuted or channels_last tensor, empty_strided's result): the same
    // copy into dst seen in memory order, which covers its storage, so the
    // value becomes its buffer instead of being scattered into it.
    at::IntArrayRef perm(l.perm, l.ndim);
    copy_from(self.expand(dst.sizes()).permute(perm), dst.permute(perm), non_blocking);
    return dst;
  }
  if (src_tpu && dst_tpu && self.scalar_type() != dst.scalar_type() &&
      (is_storage_only(self.scalar_type()) || is_storage_only(dst.scalar_type()))) {
    // A conversion from or to a dtype tpu only holds (storage_dtypes.cpp):
    // CPU's conversion, counted.
    dtype_fallback("aten::_copy_from", is_storage_only(self.scalar_type()) ? self.scalar_type()
                                                                           : dst.scalar_type());
    copy_host_to_device(to_host(self), dst, false);
  } else if (src_tpu && dst_tpu) {
    copy_device_to_device(self, dst);
  } else if (dst_tpu) {
    TORCH_CHECK(self.device().is_cpu(), "copy_: cannot copy from ", self.device(), " to ",
                dst.device(), " (copy through the CPU)");
    copy_host_to_device(self, dst, non_blocking);
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

// Copies with the lazy conjugate or negative bit set on either side. Both
// are resolved on the host: PyTorch's conjugate fallback would otherwise
// clone through copy_ back into _copy_from without end.
at::Tensor copy_from_lazy_bits(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  auto plain = [](const at::Tensor& t) {
    at::Tensor p = t;
    if (p.is_conj()) p = p.conj();     // drops the bit: a view of the stored values
    if (p.is_neg()) p = at::_neg_view(p);
    return p;
  };
  auto resolve_host = [](at::Tensor h, bool conj, bool neg) {
    if (conj) h = h.conj();
    if (neg) h = at::_neg_view(h);
    return h.resolve_conj().resolve_neg();
  };
  at::Tensor src_plain = plain(self);
  if (!src_plain.device().is_cpu() && !dst.device().is_cpu()) {
    // tpu to tpu: the bits are applied by device ops (conj_physical, neg),
    // which a compiled graph can record; the host is not involved. Writing
    // into a view that reads as conj/neg of its storage stores the inverse,
    // which is the same conj/neg again.
    at::Tensor v = src_plain;
    if (self.is_conj() != dst.is_conj()) v = at::conj_physical(v);
    if (self.is_neg() != dst.is_neg()) v = at::neg(v);
    copy_from(v, plain(dst), non_blocking);
    return dst;
  }
  at::Tensor host = src_plain.device().is_cpu() ? src_plain.clone() : to_host(src_plain);
  host = resolve_host(host, self.is_conj(), self.is_neg());
  if (dst.device().is_cpu()) {
    dst.copy_(host);
    return dst;
  }
  // Writing into a view that reads as conj/neg of its storage: store the
  // inverse, which is the same conj/neg again.
  host = resolve_host(host, dst.is_conj(), dst.is_neg());
  copy_from(host, plain(dst), non_blocking);
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  if (dst.sizes() != self.sizes()) dst.resize_(self.sizes());
  return copy_from(self, dst, false);
}

}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", TORCH_FN(torch_pjrt::copy_from_lazy_bits));
}

TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", TORCH_FN(torch_pjrt::copy_from_lazy_bits));
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_copy_from", TORCH_FN(torch_pjrt::copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(torch_pjrt::copy_from_and_resize));
}
