// The tpu random number generator: one per device, holding a seed and an
// offset (a counter into the seed's stream), like CUDA's Philox generator.
// Random ops take (seed, offset) as a runtime key and advance the offset by
// what they draw, so the numbers depend only on the seed and on the draws
// made from this generator, never on other devices' work.
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

#include <cstdint>

extern "C" {
#include "rt/rt.h"
}

namespace torch_pjrt {

struct TpuGeneratorImpl final : c10::GeneratorImpl {
  explicit TpuGeneratorImpl(c10::DeviceIndex device_index);
  ~TpuGeneratorImpl() override = default;

  void set_current_seed(uint64_t seed) override;
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  uint64_t current_seed() const override;
  uint64_t seed() override;
  // 16 bytes: seed then offset, each a native-endian uint64 (CUDA's layout).
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;
  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

  // The key for a draw of `words` 32-bit random words: the current (seed,
  // offset); the offset then moves past them (rounded up to 4 words).
  // Callers hold mutex_.
  void take(uint64_t words, uint64_t* out_seed, uint64_t* out_offset);

 private:
  TpuGeneratorImpl* clone_impl() const override;
  uint64_t seed_ = c10::default_rng_seed_val;
  uint64_t offset_ = 0;
};

// The default generator of tpu:index (-1: the current device). Lives for the
// process; torch.manual_seed reseeds it through torch.tpu.manual_seed_all.
const at::Generator& default_generator(c10::DeviceIndex index);
// A fresh generator for torch.Generator(device="tpu[:index]").
at::Generator new_generator(c10::DeviceIndex index);

// The key of a draw of `words` 32-bit words, uploaded as an int64[2] (seed,
// offset) buffer (owned by the caller); the generator moves past the draw.
tpj_rt_buffer_t* upload_rng_key(TpuGeneratorImpl* gen, uint64_t words, int device);
// While a graph is captured: the graph parameter standing for this draw's
// key (borrowed; every run of the graph draws a new key), else NULL.
tpj_rt_buffer_t* traced_rng_key(TpuGeneratorImpl* gen, uint64_t words, int device);

}  // namespace torch_pjrt
