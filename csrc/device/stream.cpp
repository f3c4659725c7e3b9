// torch.Stream / torch.Event on tpu. A stream is a tag on launches (rt keeps
// the calling thread's current stream per device); an event is an rt mark:
// the work launched on its stream up to record(). PJRT orders every device's
// work by data dependency and buffers are immutable, so a result read after
// event.wait() or on another stream is always the one written before
// record(); wait() therefore adds no device-side ordering and only checks
// its arguments. synchronize()/query() wait for / poll exactly the marked
// work; elapsed_time() is the difference of the marks' done times.
#include "stream.h"

#include <torch/library.h>

#include <atomic>

#include "runtime.h"
#include "rt/track.h"

namespace torch_pjrt {

namespace {

constexpr auto kType = c10::DeviceType::PrivateUse1;

// Stream ids handed out by getNewStream (0 is the default stream).
std::atomic<int64_t> g_next_stream{1};

struct TpuEvent {
  tpj_rt_mark_t* mark = nullptr;
  bool timing = false;
  c10::DeviceIndex device = -1;
};

TpuEvent* as_event(void* e) { return static_cast<TpuEvent*>(e); }

}  // namespace

c10::Stream current_stream(c10::DeviceIndex device) {
  if (device < 0) device = static_cast<c10::DeviceIndex>(current_device());
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(kType, device),
                     tpj_rt_thread_stream(device));
}

c10::Stream new_stream(c10::DeviceIndex device) {
  if (device < 0) device = static_cast<c10::DeviceIndex>(current_device());
  check_device_index(device);
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(kType, device), g_next_stream++);
}

c10::Stream exchange_stream(c10::Stream s) {
  c10::DeviceIndex d = s.device_index();
  check_device_index(d);
  c10::Stream old = current_stream(d);
  tpj_rt_set_thread_stream(d, s.id());
  return old;
}

bool query_stream(const c10::Stream& s) {
  return tpj_rt_stream_query(rt(), s.device_index(), s.id()) != 0;
}

void synchronize_stream(const c10::Stream& s) {
  TPJ_CHECK(tpj_rt_stream_synchronize(rt(), s.device_index(), s.id()));
}

void event_record(void** event, const c10::Stream& s, c10::DeviceIndex device,
                  c10::EventFlag flag) {
  TORCH_CHECK(device == -1 || device == s.device_index(), "Event device index ",
              static_cast<int>(device), " does not match recording stream's device index ",
              static_cast<int>(s.device_index()), ".");
  auto* ev = as_event(*event);
  if (!ev) {
    ev = new TpuEvent();
    // torch.Event(enable_timing=True) asks for the backend default (timed),
    // as on CUDA, where PYTORCH_DEFAULT disables timing.
    ev->timing = flag == c10::EventFlag::BACKEND_DEFAULT;
    ev->device = s.device_index();
    *event = ev;
  }
  TORCH_CHECK(ev->device == s.device_index(), "Event device ", static_cast<int>(ev->device),
              " does not match recording stream's device ", static_cast<int>(s.device_index()),
              ".");
  tpj_rt_mark_t* m = nullptr;
  TPJ_CHECK(tpj_rt_mark_record(rt(), s.device_index(), s.id(), &m));
  tpj_rt_mark_release(ev->mark);
  ev->mark = m;
}

void event_block(void* event, const c10::Stream& s) {
  auto* ev = as_event(event);
  if (!ev || !ev->mark) return;  // never recorded: nothing to wait for, as on CUDA
  check_device_index(s.device_index());
  // Work launched on s after this reads the event's results through their
  // buffers, which PJRT makes ready first: the order is already kept.
}

bool event_query(void* event) {
  auto* ev = as_event(event);
  if (!ev || !ev->mark) return true;
  return tpj_rt_mark_query(rt(), ev->mark) != 0;
}

void event_synchronize(void* event) {
  auto* ev = as_event(event);
  if (!ev || !ev->mark) return;
  TPJ_CHECK(tpj_rt_mark_wait(rt(), ev->mark));
}

void event_destroy(void* event) noexcept {
  auto* ev = as_event(event);
  if (!ev) return;
  tpj_rt_mark_release(ev->mark);
  delete ev;
}

double event_elapsed_ms(void* start, void* end) {
  auto* a = as_event(start);
  auto* b = as_event(end);
  TORCH_CHECK(a && b && a->mark && b->mark,
              "Both events must be recorded before calculating elapsed time.");
  TORCH_CHECK(a->timing && b->timing,
              "Both events must be created with argument 'enable_timing=True'.");
  // CUDA refuses events that are not done yet; waiting gives the same
  // numbers to code that synchronizes first and a number to code that does not.
  event_synchronize(a);
  event_synchronize(b);
  return static_cast<double>(tpj_rt_mark_time_ns(b->mark) - tpj_rt_mark_time_ns(a->mark)) / 1e6;
}

namespace {

// tensor.record_stream(s): a caching allocator must not hand the memory to
// another stream while s may still use it. Here a storage's buffer lives
// until its last reference goes, and PJRT holds every buffer a pending launch
// reads, so there is nothing to record; only the stream is checked.
void record_stream(at::Tensor& self, c10::Stream s) {
  TORCH_CHECK(s.device_type() == kType, "record_stream: expected a tpu stream, got ", s);
  TORCH_CHECK(self.device() == s.device(), "record_stream: the tensor is on ", self.device(),
              " but the stream is on ", s.device());
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("record_stream", &record_stream); }

}  // namespace torch_pjrt
