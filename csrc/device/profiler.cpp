// The profiler on tpu, two ways:
// - Kineto (torch.profiler.profile(activities=[CPU, PrivateUse1])): a
//   PrivateUse1 activity profiler records every launch (rt's trace: op name,
//   launch and completion times) and hands them to Kineto as device kernels,
//   linked to the aten op that launched them through the correlation id
//   Kineto pushes around each op, so the op gets its device time and the
//   chrome trace gets a tpu row.
// - The PrivateUse1 stubs (KINETO_PRIVATEUSE1_FALLBACK, i.e.
//   torch.autograd.profiler.profile(use_device="tpu", use_kineto=False)):
//   an event on the device at the start and end of every op, whose
//   difference is the op's device time. A tpu event is an rt mark of the
//   current stream's work, timed by when that work finished (as torch.Event).
#include <torch/csrc/Export.h>
#include <torch/csrc/profiler/stubs/base.h>

#include <kineto/GenericTraceActivity.h>
#include <kineto/IActivityProfiler.h>
#include <kineto/libkineto.h>
#include <kineto/output_base.h>

#include <algorithm>
#include <deque>
#include <map>
#include <functional>
#include <memory>

#include <torch/version.h>

// The PrivateUse1 activity-profiler registry is new in torch 2.13; on older
// releases (2.11, the GPU machines' torch) only the stubs below serve tpu,
// and torch.profiler's PrivateUse1 activity records no device kernels.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 13)
#define TPJ_HAS_PRIVATEUSE1_PROFILER 1
#else
#define TPJ_HAS_PRIVATEUSE1_PROFILER 0
#endif

#if TPJ_HAS_PRIVATEUSE1_PROFILER
// torch/csrc/profiler/standalone/privateuse1_profiler.h includes Kineto's
// headers without their directory, which extensions do not have on their
// include path; these are the two of its exported functions used here.
namespace torch::profiler::impl {
class TORCH_API PrivateUse1ProfilerRegistry {
 public:
  static PrivateUse1ProfilerRegistry& instance();
  void registerFactory(std::function<std::unique_ptr<libkineto::IActivityProfiler>()> factory);
};
}  // namespace torch::profiler::impl
#endif

#include <c10/util/ApproximateClock.h>

#include <cstdlib>

#include "runtime.h"
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

  // Microseconds between the two marks' done times (waits for both). A done
  // time is when the host saw the work finish: PJRT may run a slow
  // producer's consumers inside its completion callbacks, before ours, so
  // ops queued behind it can all read the producer's late time (0 here).
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

// ---- Kineto -----------------------------------------------------------------

class TpuProfilerSession final : public libkineto::IActivityProfilerSession {
 public:
  void start() override {
    tpj_rt_trace_start(rt());
    status_ = libkineto::TraceStatus::RECORDING;
  }

  void stop() override {
    tpj_rt_trace_record_t* recs = nullptr;
    size_t n = 0;
    tpj_status_t s = tpj_rt_trace_stop(rt(), &recs, &n);
    if (s) {
      errors_.push_back(tpj_status_message(s));
      tpj_status_free(s);
    }
    records_.assign(recs, recs + n);
    std::free(recs);
    status_ = libkineto::TraceStatus::READY;
  }

  std::vector<std::string> errors() override { return errors_; }

  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, nullptr, 0, 0);
  }

  void processTrace(libkineto::ActivityLogger& logger,
                    libkineto::getLinkedActivityCallback linked, int64_t start,
                    int64_t end) override {
    // rt times launches on CLOCK_MONOTONIC; the profiler's CPU events are
    // on c10::getTime()'s clock.
    int64_t offset = c10::getTime() - tpj_rt_clock_ns();
    span_ = libkineto::TraceSpan(start, end, "tpu");
    // A launch waits for the device's earlier work (PJRT keeps no start
    // time): it counts from the later of its launch and the previous
    // completion on its device, so queueing is not charged to it.
    std::map<int, int64_t> busy_until;
    for (const auto& r : records_) {
      int64_t done = std::max(r.t_done_ns, r.t_launch_ns);
      int64_t& busy = busy_until[r.device];
      // A completion is sometimes observed late (by a host wait rather than
      // PJRT's callback): a previous "done" after this one is such a late
      // observation, so this launch counts from its own launch time.
      int64_t begin = std::min(busy <= done ? std::max(r.t_launch_ns, busy) : r.t_launch_ns, done);
      busy = done;
      activities_.emplace_back(span_, libkineto::ActivityType::CONCURRENT_KERNEL, r.op);
      auto& a = activities_.back();
      a.startTime = begin + offset;
      a.endTime = done + offset;
      a.device = r.device;
      a.resource = static_cast<int32_t>(r.stream);
      a.id = static_cast<int32_t>(r.tag);
      a.flow.id = static_cast<uint32_t>(r.tag);
      a.flow.type = libkineto::kLinkAsyncCpuGpu;
      a.flow.start = false;
      a.linked = (linked && r.tag) ? linked(static_cast<int32_t>(r.tag)) : nullptr;
      logger.handleGenericActivity(a);
    }
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override { return nullptr; }
  std::vector<libkineto::ResourceInfo> getResourceInfos() override { return {}; }
  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override { return nullptr; }

  // Kineto pushes the correlation id of each op around it on the op's
  // thread: launches inside carry it.
  void pushCorrelationId(uint64_t id) override {
    saved_.push_back(tpj_rt_trace_tag());
    tpj_rt_set_trace_tag(static_cast<int64_t>(id));
  }
  void popCorrelationId() override {
    int64_t prev = 0;
    if (!saved_.empty()) {
      prev = saved_.back();
      saved_.pop_back();
    }
    tpj_rt_set_trace_tag(prev);
  }

 private:
  std::vector<tpj_rt_trace_record_t> records_;
  std::deque<libkineto::GenericTraceActivity> activities_;  // stable addresses
  libkineto::TraceSpan span_{0, 0, "tpu"};
  std::vector<std::string> errors_;
  static thread_local std::vector<int64_t> saved_;
};

thread_local std::vector<int64_t> TpuProfilerSession::saved_;

class TpuActivityProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }
  const std::set<libkineto::ActivityType>& availableActivities() const override {
    return types_;
  }
  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      const std::set<libkineto::ActivityType>& types, const libkineto::Config&) override {
    if (!types.count(libkineto::ActivityType::CONCURRENT_KERNEL) || !is_initialized())
      return nullptr;
    return std::make_unique<TpuProfilerSession>();
  }
  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      int64_t, int64_t, const std::set<libkineto::ActivityType>& types,
      const libkineto::Config& config) override {
    return configure(types, config);
  }

 private:
  std::string name_{"tpu"};
  std::set<libkineto::ActivityType> types_{libkineto::ActivityType::CONCURRENT_KERNEL};
};

#if TPJ_HAS_PRIVATEUSE1_PROFILER
const bool g_kineto_registered = [] {
  torch::profiler::impl::PrivateUse1ProfilerRegistry::instance().registerFactory(
      [] { return std::make_unique<TpuActivityProfiler>(); });
  return true;
}();
#endif

const bool g_stubs_registered = [] {
  torch::profiler::impl::registerPrivateUse1Methods(&g_stubs);
  return true;
}();

}  // namespace
}  // namespace torch_pjrt
