// The device guard and the PrivateUse1 hooks: what torch.accelerator and the
// dispatcher's device handling call. Streams and events: stream.cpp.
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "allocator.h"
#include "pinned.h"
#include "runtime.h"
#include "generator.h"
#include "stream.h"

namespace torch_pjrt {
namespace {

struct TpuGuardImpl final : c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;
  c10::DeviceType type() const override { return kType; }
  c10::Device exchangeDevice(c10::Device d) const override {
    c10::Device old = getDevice();
    if (d.index() != old.index()) setDevice(d);
    return old;
  }
  c10::Device getDevice() const override { return c10::Device(kType, current_device()); }
  void setDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kType, "expected a tpu device, got ", d);
    set_current_device(d.index());
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.index() >= 0 && d.index() < device_count_noexcept()) set_current_device(d.index());
  }
  c10::Stream getStream(c10::Device d) const override { return current_stream(d.index()); }
  c10::Stream getDefaultStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream getNewStream(c10::Device d, int /*priority*/) const override {
    return new_stream(d.index());
  }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool /*high_priority*/) const override {
    return new_stream(d.index());
  }
  c10::Stream exchangeStream(c10::Stream s) const override { return exchange_stream(s); }
  bool queryStream(const c10::Stream& s) const override { return query_stream(s); }
  void synchronizeStream(const c10::Stream& s) const override { synchronize_stream(s); }
  void record(void** event, const c10::Stream& s, const c10::DeviceIndex device,
              const c10::EventFlag flag) const override {
    event_record(event, s, device, flag);
  }
  void block(void* event, const c10::Stream& s) const override { event_block(event, s); }
  bool queryEvent(void* event) const override { return event_query(event); }
  void synchronizeEvent(void* event) const override { event_synchronize(event); }
  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override {
    event_destroy(event);
  }
  double elapsedTime(void* start, void* end, const c10::DeviceIndex) const override {
    return event_elapsed_ms(start, end);
  }
  c10::DeviceCapability getDeviceCapability(c10::Device) const override {
    // The dtypes a PJRT buffer can hold (TPU plugins lack f64: ops refuse it
    // there with their own message).
    c10::DeviceCapability cap;
    cap.capability_data.capability_bits = 0;
    auto& t = cap.capability_data.supported_scalar_types;
    t.has_Bool = t.has_Byte = t.has_Char = t.has_Short = t.has_Int = t.has_Long = 1;
    t.has_Half = t.has_BFloat16 = t.has_Float = t.has_Double = 1;
    t.has_ComplexFloat = t.has_ComplexDouble = 1;
    return cap;
  }
  c10::DeviceIndex deviceCount() const noexcept override {
    return static_cast<c10::DeviceIndex>(device_count_noexcept());
  }
  void synchronizeDevice(const c10::DeviceIndex device_index) const override {
    TPJ_CHECK(tpj_rt_synchronize(rt(), device_index));
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, TpuGuardImpl);

struct TpuHooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return device_count_noexcept() > 0; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return is_initialized(); }
  void init() const override { rt(); }
  c10::DeviceIndex deviceCount() const override {
    return static_cast<c10::DeviceIndex>(device_count_noexcept());
  }
  void setCurrentDevice(c10::DeviceIndex device) const override { set_current_device(device); }
  c10::DeviceIndex getCurrentDevice() const override {
    return static_cast<c10::DeviceIndex>(current_device());
  }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    auto old = getCurrentDevice();
    set_current_device(device);
    return old;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override {
    return exchangeDevice(device);
  }
  at::Device getDeviceFromPtr(void* data) const override {
    auto* box = static_cast<tpj_box_t*>(data);
    return at::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(box->device));
  }
  bool isPinnedPtr(const void* data) const override { return is_pinned(data); }
  at::Allocator* getPinnedMemoryAllocator() const override { return pinned_allocator(); }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex device_index) const override {
    return default_generator(device_index);
  }
  at::Generator getNewGenerator(c10::DeviceIndex device_index) const override {
    return new_generator(device_index);
  }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    resize_storage_bytes(storage, newsize);
  }
};

const bool g_hooks_registered = [] {
  at::RegisterPrivateUse1HooksInterface(new TpuHooks());
  return true;
}();

}  // namespace
}  // namespace torch_pjrt
