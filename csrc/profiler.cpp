// The PrivateUse1 profiler stubs: PyTorch's profiler (the
// KINETO_PRIVATEUSE1_FALLBACK state, torch.autograd.profiler.profile(
// use_device="tpu", use_kineto=False)) records an event on the device at the
// start and end of every op and reports the difference as the op's device
// time. A tpu event is an rt mark of the current stream's work, timed by when
// that work finished (stream.cpp has the same for torch.Event).
#include <torch/csrc/profiler/stubs/base.h>

#include <c10/util/ApproximateClock.h>

#include "common.h"
#include "rt/track.h"

namespace torch_pjrt {
namespace {

using torch::profiler::impl::ProfilerVoidEventStub;

struct TpuProfilerStubs final : torch::profiler::impl::ProfilerStubs {
  void record(c10::DeviceIndex* device, ProfilerVoidEventStub* event,
              int64_t* cpu_ns) const override {
    int d = current_device();
    if (device) *device = static_cast<c10::DeviceIndex>(d);
    tpj_rt_mark_t* m = nullptr;
    // The profiler calls this around every op, even before the plugin opens
    // or when it cannot: no mark then (elapsed() reports 0).
    if (is_initialized()) {
      tpj_status_t s = tpj_rt_mark_record(rt(), d, tpj_rt_thread_stream(d), &m);
      tpj_status_free(s);
    }
    *event = std::shared_ptr<void>(m, [](void* p) {
      tpj_rt_mark_release(static_cast<tpj_rt_mark_t*>(p));
    });
    if (cpu_ns) *cpu_ns = c10::getTime();
  }

  // Microseconds between the two marks' done times (waits for both).
  float elapsed(const ProfilerVoidEventStub* a, const ProfilerVoidEventStub* b) const override {
    auto* ma = static_cast<tpj_rt_mark_t*>(a->get());
    auto* mb = static_cast<tpj_rt_mark_t*>(b->get());
    if (!ma || !mb) return 0.f;
    tpj_status_free(tpj_rt_mark_wait(rt(), ma));
    tpj_status_free(tpj_rt_mark_wait(rt(), mb));
    return static_cast<float>(tpj_rt_mark_time_ns(mb) - tpj_rt_mark_time_ns(ma)) / 1000.f;
  }

  void mark(const char*) const override {}
  void rangePush(const char*) const override {}
  void rangePop() const override {}
  bool enabled() const override { return true; }

  void onEachDevice(std::function<void(int)> op) const override {
    int n = device_count_noexcept();
    int prev = current_device();
    for (int i = 0; i < n; ++i) {
      set_current_device(i);
      op(i);
    }
    if (n > 0) set_current_device(prev);
  }

  void synchronize() const override {
    if (is_initialized()) TPJ_CHECK(tpj_rt_synchronize(rt(), -1));
  }
};

TpuProfilerStubs g_stubs;

const bool g_stubs_registered = [] {
  torch::profiler::impl::registerPrivateUse1Methods(&g_stubs);
  return true;
}();

}  // namespace
}  // namespace torch_pjrt
