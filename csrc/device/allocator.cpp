// The tpu allocator: every storage is a tpj_box_t. The DataPtr points at the
// box, which nothing may dereference; the box owns the device buffer.
#include <c10/core/CachingDeviceAllocator.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>

#include "allocator.h"
#include "runtime.h"
#include "tensor.h"

extern "C" {
#include "rt/track.h"
}

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
    if (nbytes >= kCheckFreeAbove) check_fits(device, nbytes);
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
    if (count == d->nbytes && count == s->nbytes && s->device == d->device) {
      if (tpj_rt_buffer_t* b = tpj_box_acquire_buffer(const_cast<tpj_box_t*>(s))) {
        tpj_box_set_buffer(d, b);
        return;
      }
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
  void emptyCache(c10::MempoolId_t) override { clear_scalar_cache(); }
  void recordStream(const c10::DataPtr&, c10::Stream) override {}

  // allocated/active/requested: the bytes of live storages (boxes), as a
  // caching allocator counts its blocks. reserved: what the device holds,
  // PJRT_Device_MemoryStats where the plugin has it, else the bytes of live
  // buffers (at least the allocated bytes: an unwritten storage holds none).
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    tpj_box_stats_t st;
    tpj_box_get_stats(device, &st);
    int64_t res = 0, res_peak = 0;
    device_bytes(device, &res, &res_peak);
    res = std::max(res, st.allocated);
    res_peak = std::max({res_peak, st.peak, res});
    c10::CachingDeviceAllocator::DeviceStats out;
    int64_t total_alloc = 0, total_freed = 0;
    tpj_box_byte_totals(device, &total_alloc, &total_freed);
    auto bytes = to_stat(st.allocated, st.peak, total_alloc, total_freed);
    auto counts = to_stat(st.num_allocs - st.num_frees, 0, st.num_allocs, st.num_frees);
    auto reserved = to_stat(res, res_peak, 0, 0);
    auto zero = to_stat(0, 0, 0, 0);
    using c10::CachingDeviceAllocator::StatType;
    for (size_t i = 0; i < out.allocated_bytes.size(); ++i) {
      // One pool: everything is counted under "all" and "large_pool".
      bool counted = i != static_cast<size_t>(StatType::SMALL_POOL);
      for (auto* arr : {&out.allocated_bytes, &out.active_bytes, &out.requested_bytes})
        (*arr)[i] = counted ? bytes : zero;
      for (auto* arr : {&out.allocation, &out.active, &out.segment})
        (*arr)[i] = counted ? counts : zero;
      out.reserved_bytes[i] = counted ? reserved : zero;
      out.inactive_split[i] = zero;
      out.inactive_split_bytes[i] = zero;
    }
    out.num_ooms = tpj_rt_oom_count() + ooms_.load();
    out.num_device_alloc = st.num_allocs;
    out.num_device_free = st.num_frees;
    return out;
  }

  void resetAccumulatedStats(c10::DeviceIndex) override {}
  void resetPeakStats(c10::DeviceIndex device) override {
    tpj_box_reset_peak(device);
    tpj_rt_reset_peak_buffer_bytes(device);
  }

  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    check_device_index(device);
    int64_t in_use = -1, peak = -1, limit = -1;
    tpj_status_t s = tpj_rt_device_memory_stats(rt(), device, &in_use, &peak, &limit);
    tpj_status_free(s);
    if (s || limit <= 0) return host_memory();  // the CPU plugin: device memory is host memory
    return {static_cast<size_t>(limit - (in_use > 0 ? in_use : 0)), static_cast<size_t>(limit)};
  }

 private:
  // Below this a storage is not compared with the free memory (reading it
  // costs a system call); the device still refuses what it cannot hold.
  static constexpr size_t kCheckFreeAbove = size_t{1} << 30;
  std::atomic<int64_t> ooms_{0};

  // (current, peak) bytes the device holds: from PJRT where it says.
  static void device_bytes(c10::DeviceIndex device, int64_t* cur, int64_t* peak) {
    tpj_rt_buffer_bytes(device, cur, peak);
    if (!is_initialized()) return;
    int64_t in_use = -1, p = -1;
    tpj_status_t s = tpj_rt_device_memory_stats(rt(), device, &in_use, &p, nullptr);
    tpj_status_free(s);
    if (!s && in_use >= 0) {
      *cur = in_use;
      if (p >= 0) *peak = p;
    }
  }

  // (available, total) host memory: MemAvailable counts reclaimable page
  // cache, which is what a new allocation can use.
  static std::pair<size_t, size_t> host_memory() {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    size_t total = static_cast<size_t>(pages) * page;
    size_t avail = static_cast<size_t>(sysconf(_SC_AVPHYS_PAGES)) * page;
    if (FILE* f = std::fopen("/proc/meminfo", "r")) {
      char line[256];
      unsigned long long kb = 0;
      while (std::fgets(line, sizeof(line), f))
        if (std::sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
          avail = static_cast<size_t>(kb) * 1024;
          break;
        }
      std::fclose(f);
    }
    return {avail, total};
  }

  // Raises torch.OutOfMemoryError, worded like CUDA's, for a storage larger
  // than the device's free memory (the CPU plugin would otherwise be killed
  // by the kernel instead of failing).
  void check_fits(int device, size_t nbytes) {
    auto [free, total] = getMemoryInfo(static_cast<c10::DeviceIndex>(device));
    if (nbytes <= free) return;
    ooms_++;
    tpj_box_stats_t st;
    tpj_box_get_stats(device, &st);
    TORCH_CHECK_WITH(OutOfMemoryError, false, "tpu out of memory. Tried to allocate ",
                     format_bytes(nbytes), ". tpu ", device, " has a total capacity of ",
                     format_bytes(total), " of which ", format_bytes(free),
                     " is free. Of the allocated memory ", format_bytes(st.allocated),
                     " is allocated by PyTorch. (requested ", nbytes, " bytes, available ",
                     free, " bytes)");
  }

  static std::string format_bytes(size_t n) {
    const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = static_cast<double>(n);
    int u = 0;
    while (v >= 1024 && u < 6) {
      v /= 1024;
      ++u;
    }
    char buf[64];
    std::snprintf(buf, sizeof(buf), u ? "%.2f %s" : "%.0f %s", v, units[u]);
    return buf;
  }
};

TpuAllocator g_allocator;

}  // namespace

c10::Allocator* allocator() { return &g_allocator; }

// A storage the tpu allocator did not make (a wrapper subclass's empty one,
// or another allocator's) has no box: refuse it by name, not by crashing.
constexpr const char* kNoBox =
    "a tpu tensor whose storage was not made by the tpu allocator reached a tpu kernel (a "
    "wrapper tensor subclass with no storage of its own, or another allocator's storage); "
    "its data cannot be read";

tpj_box_t* box_of(const c10::Storage& s) {
  auto* box = static_cast<tpj_box_t*>(s.data_ptr().get());
  TORCH_CHECK(box, kNoBox);
  return box;
}

tpj_box_t* box_for_write(const at::Tensor& t) {
  box_of(t);  // the device check and its message
  auto* box = static_cast<tpj_box_t*>(t.storage().mutable_data());
  TORCH_CHECK(box, kNoBox);
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
  if (BufferRef(tpj_box_acquire_buffer(ob)).get() && old > 0 && nbytes > 0) {
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
