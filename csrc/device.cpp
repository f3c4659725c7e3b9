// The device guard and the PrivateUse1 hooks: what torch.accelerator and the
// dispatcher's device handling call. One default stream per device for now.
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "common.h"
#include "generator.h"

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
  c10::Stream getStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream getDefaultStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream exchangeStream(c10::Stream s) const override {
    return c10::Stream(c10::Stream::DEFAULT, s.device());
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
