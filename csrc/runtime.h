// The process-wide tpu runtime (device/runtime.cpp): the plugin, opened on
// first use, the executable cache, the current device; and the one bridge
// from tpj_status_t to a c10 exception (TPJ_CHECK).
#pragma once

#include <cstdint>
#include <string>

extern "C" {
#include "exec/exec.h"
#include "rt/rt.h"
}

namespace torch_pjrt {

// The one bridge from tpj_status_t to a c10 exception. Frees the status.
[[noreturn]] void throw_status(tpj_status_t s, const char* context);

#define TPJ_CHECK(expr)                                        \
  do {                                                         \
    tpj_status_t tpj_s_ = (expr);                              \
    if (tpj_s_) ::torch_pjrt::throw_status(tpj_s_, __func__);  \
  } while (0)

// Records which plugin to open; the open itself happens on first use.
// error: when non-empty, no plugin was found and every use raises it.
void configure(const std::string& plugin_path, int cpu_devices, const std::string& error);
// Where compiled executables are kept across processes ("" turns it off).
void set_cache_dir(const std::string& dir);
// The runtime, opened on first call; raises when there is no plugin.
tpj_rt_t* rt();
tpj_exec_t* exec();
// Device count without raising (0 when the plugin cannot be opened).
int device_count_noexcept();
bool is_initialized();
// Raises "invalid device ordinal" for an index out of range.
void check_device_index(int64_t index);
int current_device();
void set_current_device(int index);

}  // namespace torch_pjrt
