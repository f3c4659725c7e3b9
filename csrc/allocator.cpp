// The tpu allocator: every storage is a tpj_box_t. The DataPtr points at the
// box, which nothing may dereference; the box owns the device buffer.
#include <c10/core/CachingDeviceAllocator.h>

#include <unistd.h>

#include <cstring>

#include "common.h"

namespace torch_pjrt {

namespace {

void delete_box(void* ctx) { tpj_box_destroy(static_cast<tpj_box_t*>(ctx)); }

c10::CachingDeviceAllocator::Stat to_stat(int64_t current, int64_t peak, int64_t allocated,
                                          int64_t freed) {
  c10::CachingDeviceAllocator::Stat s;
  s.current = current;
  s.peak = peak;
  s.allocated = allocated;
  s.freed = freed;
  return s;
}

struct TpuAllocator final : c10::DeviceAllocator {
  c10::DataPtr allocate(size_t nbytes) override {
    int device = current_device();
    check_device_index(device);
    tpj_box_t* box = tpj_box_create(nbytes, device);
    TORCH_CHECK_WITH(OutOfMemoryError, box, "out of host memory allocating a tpu storage");
    return {box, box, &delete_box, c10::Device(c10::DeviceType::PrivateUse1, device)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &delete_box; }

  // Storage-to-storage copies (Storage.copy_, clone of a storage): whole
  // buffers are shared (they are immutable); anything else goes through the
  // host.
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    auto* d = static_cast<tpj_box_t*>(dest);
    auto* s = static_cast<const tpj_box_t*>(src);
    if (count == 0) return;
    if (count == d->nbytes && count == s->nbytes && s->buf && s->device == d->device) {
      tpj_rt_buffer_retain(s->buf);
      tpj_box_set_buffer(d, s->buf);
      return;
    }
    std::vector<uint8_t> sh(s->nbytes), dh(d->nbytes);
    TPJ_CHECK(tpj_box_to_host(rt(), s, sh.data()));
    TPJ_CHECK(tpj_box_to_host(rt(), d, dh.data()));
    TORCH_CHECK(count <= sh.size() && count <= dh.size(), "storage copy out of range");
    std::memcpy(dh.data(), sh.data(), count);
    int64_t n = static_cast<int64_t>(dh.size());
    TPJ_CHECK(tpj_box_from_host(rt(), d, TPJ_U8, &n, 1, dh.data()));
  }

  bool initialized() override { return is_initialized(); }
  void emptyCache(c10::MempoolId_t) override {}
  void recordStream(const c10::DataPtr&, c10::Stream) override {}

  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    tpj_box_stats_t st;
    tpj_box_get_stats(device, &st);
    c10::CachingDeviceAllocator::DeviceStats out;
    auto bytes = to_stat(st.allocated, st.peak, 0, 0);
    auto counts = to_stat(st.num_allocs - st.num_frees, 0, st.num_allocs, st.num_frees);
    for (auto* arr : {&out.allocated_bytes, &out.active_bytes, &out.reserved_bytes,
                      &out.requested_bytes})
      for (auto& s : *arr) s = bytes;
    for (auto* arr : {&out.allocation, &out.active, &out.segment})
      for (auto& s : *arr) s = counts;
    return out;
  }

  void resetAccumulatedStats(c10::DeviceIndex) override {}
  void resetPeakStats(c10::DeviceIndex device) override { tpj_box_reset_peak(device); }

  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    int64_t in_use = -1, peak = -1, limit = -1;
    tpj_status_t s = tpj_rt_device_memory_stats(rt(), device, &in_use, &peak, &limit);
    tpj_status_free(s);
    if (s || limit <= 0) {
      // The CPU plugin reports no limit: the device memory is host memory.
      long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES);
      long page = sysconf(_SC_PAGE_SIZE);
      return {static_cast<size_t>(avail) * page, static_cast<size_t>(pages) * page};
    }
    return {static_cast<size_t>(limit - (in_use > 0 ? in_use : 0)), static_cast<size_t>(limit)};
  }
};

TpuAllocator g_allocator;

}  // namespace

c10::Allocator* allocator() { return &g_allocator; }

tpj_box_t* box_of(const c10::Storage& s) {
  auto* box = static_cast<tpj_box_t*>(s.data_ptr().get());
  TORCH_CHECK(box, "tpu storage has no box (was it created by another allocator?)");
  return box;
}

tpj_box_t* box_of(const at::Tensor& t) {
  // A kernel reached through another operand's dispatch key (a CPU weight
  // with a tpu index) must raise, not read a CPU pointer as a box.
  TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1,
              "Expected all tensors to be on the same device, but found a tensor on ", t.device(),
              " where a tpu tensor was expected");
  return box_of(t.storage());
}

void resize_storage_bytes(const c10::Storage& storage, size_t nbytes) {
  TORCH_CHECK(storage.resizable(), "Trying to resize storage that is not resizable");
  c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
  size_t old = impl->nbytes();
  if (nbytes == old) return;
  c10::DeviceGuard guard(storage.device());
  c10::DataPtr fresh = g_allocator.allocate(nbytes);
  auto* nb = static_cast<tpj_box_t*>(fresh.get());
  tpj_box_t* ob = box_of(storage);
  if (ob->buf && old > 0 && nbytes > 0) {
    // Keep the old bytes: rare (resize_ of a written tensor), so via the host.
    std::vector<uint8_t> host(nbytes, 0);
    std::vector<uint8_t> prev(old);
    TPJ_CHECK(tpj_box_to_host(rt(), ob, prev.data()));
    std::memcpy(host.data(), prev.data(), std::min(old, nbytes));
    int64_t n = static_cast<int64_t>(nbytes);
    TPJ_CHECK(tpj_box_from_host(rt(), nb, TPJ_U8, &n, 1, host.data()));
  }
  impl->set_data_ptr_noswap(std::move(fresh));
  impl->set_nbytes(nbytes);
}

}  // namespace torch_pjrt

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, torch_pjrt::allocator());
