// The tpu generator (see generator.h) and the default generator of each
// device, plus the torch.ops.tpj_rng functions that torch.tpu's seed and
// rng-state functions call (the hooks hand PyTorch the generators; Python has
// no other way to reach a backend's default generator).
#include "generator.h"

#include <ATen/core/Generator.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cstring>
#include <mutex>
#include <vector>

#include "runtime.h"

namespace torch_pjrt {

TpuGeneratorImpl::TpuGeneratorImpl(c10::DeviceIndex device_index)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, device_index),
                         c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)) {}

void TpuGeneratorImpl::set_current_seed(uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
}

void TpuGeneratorImpl::set_offset(uint64_t offset) {
  // Draws move the offset in steps of 4; keep any offset a user sets on that
  // grid so get_state/set_state round trips stay exact.
  TORCH_CHECK(offset % 4 == 0, "offset must be a multiple of 4");
  offset_ = offset;
}

uint64_t TpuGeneratorImpl::get_offset() const { return offset_; }
uint64_t TpuGeneratorImpl::current_seed() const { return seed_; }

uint64_t TpuGeneratorImpl::seed() {
  uint64_t s = c10::detail::getNonDeterministicRandom(true);
  set_current_seed(s);
  return s;
}

void TpuGeneratorImpl::set_state(const c10::TensorImpl& new_state) {
  at::detail::check_rng_state(new_state);
  constexpr size_t kSize = 2 * sizeof(uint64_t);
  TORCH_CHECK(new_state.numel() == static_cast<int64_t>(kSize), "RNG state is wrong size");
  uint64_t v[2];
  std::memcpy(v, new_state.data(), kSize);
  seed_ = v[0];
  set_offset(v[1]);
}

c10::intrusive_ptr<c10::TensorImpl> TpuGeneratorImpl::get_state() const {
  at::Tensor state = at::empty({static_cast<int64_t>(2 * sizeof(uint64_t))}, at::kByte);
  uint64_t v[2] = {seed_, offset_};
  std::memcpy(state.data_ptr(), v, sizeof(v));
  return state.getIntrusivePtr();
}

void TpuGeneratorImpl::take(uint64_t words, uint64_t* out_seed, uint64_t* out_offset) {
  *out_seed = seed_;
  *out_offset = offset_;
  offset_ += (words + 3) / 4 * 4;
}

TpuGeneratorImpl* TpuGeneratorImpl::clone_impl() const {
  auto* g = new TpuGeneratorImpl(device().index());
  g->seed_ = seed_;
  g->offset_ = offset_;
  return g;
}

namespace {

c10::DeviceIndex resolve(c10::DeviceIndex index) {
  if (index < 0) index = static_cast<c10::DeviceIndex>(current_device());
  check_device_index(index);
  return index;
}

}  // namespace

// The default generators, made on first use (which opens the runtime). A
// manual_seed_all before that only records the seed they start from, so
// torch.manual_seed() does not open the plugin in a program that never uses
// tpu.
static std::mutex g_gens_mu;
static std::vector<at::Generator>* g_gens = nullptr;  // never freed: outlives Python
static uint64_t g_first_seed = c10::default_rng_seed_val;

const at::Generator& default_generator(c10::DeviceIndex index) {
  index = resolve(index);  // opens the runtime
  std::lock_guard<std::mutex> lock(g_gens_mu);
  if (!g_gens) {
    g_gens = new std::vector<at::Generator>();
    int n = device_count_noexcept();
    for (int i = 0; i < n; ++i) {
      g_gens->push_back(at::make_generator<TpuGeneratorImpl>(static_cast<c10::DeviceIndex>(i)));
      g_gens->back().set_current_seed(g_first_seed);
    }
  }
  return (*g_gens)[index];
}

at::Generator new_generator(c10::DeviceIndex index) {
  return at::make_generator<TpuGeneratorImpl>(resolve(index));
}

namespace {

TpuGeneratorImpl* default_impl(int64_t device) {
  return at::check_generator<TpuGeneratorImpl>(
      default_generator(static_cast<c10::DeviceIndex>(device)));
}

// Seeds travel through int64 schemas as their two's-complement bits.
void rng_manual_seed(int64_t device, int64_t seed) {
  TpuGeneratorImpl* g = default_impl(device);
  std::lock_guard<std::mutex> lock(g->mutex_);
  g->set_current_seed(static_cast<uint64_t>(seed));
}

void rng_manual_seed_all(int64_t seed) {
  std::lock_guard<std::mutex> lock(g_gens_mu);
  g_first_seed = static_cast<uint64_t>(seed);
  if (!g_gens) return;
  for (auto& gen : *g_gens) {
    std::lock_guard<std::mutex> glock(gen.mutex());
    gen.set_current_seed(g_first_seed);
  }
}

int64_t rng_seed(int64_t device) {
  TpuGeneratorImpl* g = default_impl(device);
  std::lock_guard<std::mutex> lock(g->mutex_);
  return static_cast<int64_t>(g->seed());
}

int64_t rng_initial_seed(int64_t device) {
  TpuGeneratorImpl* g = default_impl(device);
  std::lock_guard<std::mutex> lock(g->mutex_);
  return static_cast<int64_t>(g->current_seed());
}

at::Tensor rng_get_state(int64_t device) {
  TpuGeneratorImpl* g = default_impl(device);
  std::lock_guard<std::mutex> lock(g->mutex_);
  return at::Tensor::wrap_tensor_impl(g->get_state());
}

void rng_set_state(int64_t device, const at::Tensor& state) {
  TpuGeneratorImpl* g = default_impl(device);
  std::lock_guard<std::mutex> lock(g->mutex_);
  g->set_state(*state.unsafeGetTensorImpl());
}

}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY(tpj_rng, m) {
  m.def("manual_seed(int device, int seed) -> ()", &torch_pjrt::rng_manual_seed);
  m.def("manual_seed_all(int seed) -> ()", &torch_pjrt::rng_manual_seed_all);
  m.def("seed(int device) -> int", &torch_pjrt::rng_seed);
  m.def("initial_seed(int device) -> int", &torch_pjrt::rng_initial_seed);
  m.def("get_state(int device) -> Tensor", &torch_pjrt::rng_get_state);
  m.def("set_state(int device, Tensor state) -> ()", &torch_pjrt::rng_set_state);
}

namespace torch_pjrt {

tpj_rt_buffer_t* upload_rng_key(TpuGeneratorImpl* gen, uint64_t words, int device) {
  uint64_t seed, offset;
  {
    std::lock_guard<std::mutex> lock(gen->mutex_);
    gen->take(words, &seed, &offset);
  }
  int64_t key[2] = {static_cast<int64_t>(seed), static_cast<int64_t>(offset)};
  int64_t dims[1] = {2};
  tpj_rt_buffer_t* buf = nullptr;
  TPJ_CHECK(tpj_rt_buffer_from_host(rt(), device, TPJ_I64, dims, 1, key, &buf));
  return buf;
}

}  // namespace torch_pjrt
