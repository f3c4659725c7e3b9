// Pinned host memory for tpu: what tensor.pin_memory(), DataLoader(pin_memory=
// True) and non_blocking device-to-host copies allocate. PJRT copies from any
// host memory, so "pinned" here means an allocation we track (is_pinned()
// answers for it), 64-byte aligned so plugins can use it without a bounce.
// It is also tpu's at::HostAllocator: torch.accelerator.empty_host_cache()
// and the host memory stats look the allocator up there, and an unregistered
// device type is a null pointer to them (a segfault once tpu was used).
#include <ATen/core/CachingHostAllocator.h>
#include <c10/core/Allocator.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "pinned.h"

namespace torch_pjrt {
namespace {

std::mutex g_mu;
std::map<uintptr_t, size_t> g_blocks;  // start -> size

void free_pinned(void* p) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_blocks.erase(reinterpret_cast<uintptr_t>(p));
  }
  std::free(p);
}

struct PinnedAllocator final : at::HostAllocator {
  c10::DataPtr allocate(size_t nbytes) override {
    size_t rounded = (nbytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded ? rounded : 64);
    TORCH_CHECK_WITH(OutOfMemoryError, p, "out of host memory allocating ", nbytes,
                     " pinned bytes");
    {
      std::lock_guard<std::mutex> lock(g_mu);
      g_blocks[reinterpret_cast<uintptr_t>(p)] = nbytes;
    }
    return {p, p, &free_pinned, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &free_pinned; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
  // Blocks are freed when their storage is, never cached, and PJRT has read
  // a host buffer by the time a copy from it returns: no stream to wait for.
  bool record_event(void*, void*, c10::Stream) override { return true; }
  void empty_cache() override {}
  at::HostStats get_stats() override { return {}; }
  void reset_accumulated_stats() override {}
  void reset_peak_stats() override {}
};

PinnedAllocator g_pinned;

}  // namespace

REGISTER_HOST_ALLOCATOR(c10::DeviceType::PrivateUse1, &g_pinned)

c10::Allocator* pinned_allocator() { return &g_pinned; }

bool is_pinned(const void* data) {
  auto p = reinterpret_cast<uintptr_t>(data);
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_blocks.upper_bound(p);
  if (it == g_blocks.begin()) return false;
  --it;
  return p >= it->first && p < it->first + (it->second ? it->second : 1);
}

}  // namespace torch_pjrt
