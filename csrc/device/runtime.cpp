// The process-wide runtime: the PJRT plugin is opened lazily on first use, so
// `import torch` (which autoloads torch_pjrt) stays cheap.
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "allocator.h"
#include "fork.h"
#include "runtime.h"
#include "create_options.h"
#include "rt/open.h"

namespace torch_pjrt {

namespace {
std::mutex g_mu;
std::string g_plugin_path;
std::string g_config_error = "torch_pjrt was not configured (import torch_pjrt)";
int g_cpu_devices = 0;
std::vector<CreateOption> g_create_options;
bool g_restrict_devices = false;
std::vector<int> g_visible_devices;
std::string g_visible_setting;
tpj_rt_t* g_rt = nullptr;
// g_rt once opened (it is never closed): every op asks for the runtime, and
// the mutex it would take otherwise was a visible part of a small op's cost.
std::atomic<tpj_rt_t*> g_rt_ready{nullptr};
tpj_exec_t* g_exec = nullptr;
std::string g_open_error;
std::string g_cache_dir;
thread_local int t_current_device = 0;

// XLA's plugins log through TSL/absl to stderr from the first message on
// (client creation alone prints two lines on the CPU plugin, a dozen on the
// GPU one). A user's terminal shows only what they asked for: unless
// TORCH_PJRT_PLUGIN_LOG=1, or the user chose TF_CPP_MIN_LOG_LEVEL
// themselves, only the plugin's errors and fatal messages remain. The
// plugin reads the variable when it first logs, so it is set before the
// plugin loads, and stays set (as jax and TensorFlow read it too).
void quiet_plugin_log() {
  const char* want = std::getenv("TORCH_PJRT_PLUGIN_LOG");
  if (want && want[0] && std::string(want) != "0") return;
  setenv("TF_CPP_MIN_LOG_LEVEL", "2", /*overwrite=*/0);
}

void open_locked() {
  if (g_rt || !g_open_error.empty()) return;
  if (!g_config_error.empty()) {
    g_open_error = g_config_error;
    return;
  }
  std::vector<tpj_rt_option_t> opts;
  if (g_cpu_devices > 0)
    opts.push_back({"cpu_device_count", TPJ_RT_OPTION_INT64, g_cpu_devices, 0.0, nullptr});
  for (const CreateOption& o : g_create_options)
    opts.push_back({o.name.c_str(), static_cast<tpj_rt_option_type_t>(o.type), o.int_value,
                    o.float_value, o.string_value.c_str()});
  quiet_plugin_log();
  tpj_rt_t* rt = nullptr;
  tpj_status_t s = tpj_rt_open_with_options(g_plugin_path.c_str(), opts.data(), opts.size(), &rt);
  if (s) {
    g_open_error = tpj_status_message(s);
    tpj_status_free(s);
    return;
  }
  if (g_restrict_devices) {
    s = tpj_rt_restrict_devices(rt, g_visible_devices.data(),
                                static_cast<int>(g_visible_devices.size()));
    if (s) {
      g_open_error = g_visible_setting + ": " + tpj_status_message(s);
      tpj_status_free(s);
      tpj_rt_close(rt);
      return;
    }
  }
  const char* blocking = std::getenv("TORCH_PJRT_LAUNCH_BLOCKING");
  tpj_rt_set_launch_blocking(rt, blocking && blocking[0] == '1');
  int capacity = 1024;
  if (const char* c = std::getenv("TORCH_PJRT_CACHE_SIZE")) capacity = std::atoi(c);
  s = tpj_exec_create(rt, capacity, &g_exec);
  if (s) {
    g_open_error = tpj_status_message(s);
    tpj_status_free(s);
    tpj_rt_close(rt);
    return;
  }
  if (!g_cache_dir.empty()) {
    // Entries are only valid for the same plugin build and PJRT API.
    int major, minor;
    tpj_rt_api_version(rt, &major, &minor);
    std::string identity = std::string(tpj_rt_platform_name(rt)) + "|" +
                           tpj_rt_platform_version(rt) + "|" + std::to_string(major) + "." +
                           std::to_string(minor) + "|" + tpj_rt_plugin_attributes(rt) + "|" +
                           tpj_rt_compile_options_tag(rt);
    // XLA_FLAGS change what the plugin compiles (fast math, dump paths that
    // a loaded executable would keep using): a different value, other entries.
    if (const char* f = std::getenv("XLA_FLAGS")) identity += std::string("|XLA_FLAGS=") + f;
    // A cache that cannot be created only costs compiles: run without it,
    // and say so once (here, the first tpu use), naming the directory.
    if (tpj_status_t cs = tpj_exec_set_disk_cache(g_exec, g_cache_dir.c_str(), identity.c_str())) {
      std::string why = tpj_status_message(cs);
      tpj_status_free(cs);
      TORCH_WARN("torch_pjrt: ", why, "; compiled programs are not kept across processes. "
                 "Set TORCH_PJRT_CACHE_DIR to a writable directory (an empty value turns "
                 "the disk cache off).");
    }
  }
  g_rt = rt;
  g_rt_ready.store(rt, std::memory_order_release);
}
}  // namespace

void set_cache_dir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_cache_dir = dir;
  if (g_exec) {
    TORCH_CHECK(dir.empty(), "the executable cache directory must be set before first use");
    tpj_status_free(tpj_exec_set_disk_cache(g_exec, nullptr, nullptr));
  }
}

[[noreturn]] void throw_status(tpj_status_t s, const char* context) {
  std::string msg = tpj_status_message(s);
  tpj_status_code_t code = tpj_status_code(s);
  tpj_status_free(s);
  switch (code) {
    case TPJ_OUT_OF_MEMORY: {
      // What is left on the device, as CUDA's message says (PJRT's own
      // message usually names the requested size).
      std::string avail;
      try {
        int d = current_device();
        auto info = static_cast<c10::DeviceAllocator*>(allocator())->getMemoryInfo(
            static_cast<c10::DeviceIndex>(d));
        avail = " (tpu " + std::to_string(d) + ": " + std::to_string(info.first) +
                " bytes free of " + std::to_string(info.second) + ")";
      } catch (const std::exception&) {
      }
      TORCH_CHECK_WITH(OutOfMemoryError, false, "tpu out of memory: ", msg, avail);
    }
    case TPJ_UNIMPLEMENTED:
      TORCH_CHECK_NOT_IMPLEMENTED(false, msg);
    case TPJ_INDEX_ERROR:
      TORCH_CHECK_INDEX(false, msg);
    case TPJ_OUT_OF_RANGE:
      TORCH_CHECK(false, msg);
    default:
      TORCH_CHECK(false, msg);
  }
}

void configure(const std::string& plugin_path, int cpu_devices, const std::string& error) {
  std::lock_guard<std::mutex> lock(g_mu);
  TORCH_CHECK(g_rt == nullptr, "torch_pjrt is already initialised");
  g_plugin_path = plugin_path;
  g_cpu_devices = cpu_devices;
  g_config_error = error;
  g_open_error.clear();
}

void set_visible_devices(std::vector<int> visible, std::string setting) {
  std::lock_guard<std::mutex> lock(g_mu);
  TORCH_CHECK(g_rt == nullptr, "visible devices must be set before the tpu runtime opens");
  g_restrict_devices = true;
  g_visible_devices = std::move(visible);
  g_visible_setting = std::move(setting);
}

void set_create_options(std::vector<CreateOption> options) {
  std::lock_guard<std::mutex> lock(g_mu);
  TORCH_CHECK(g_rt == nullptr, "client options must be set before the tpu runtime opens");
  g_create_options = std::move(options);
}


tpj_rt_t* rt() {
  check_not_forked();
  if (tpj_rt_t* r = g_rt_ready.load(std::memory_order_acquire)) return r;
  std::lock_guard<std::mutex> lock(g_mu);
  open_locked();
  TORCH_CHECK(g_rt, g_open_error);
  return g_rt;
}

tpj_exec_t* exec() {
  rt();
  return g_exec;
}

bool is_initialized() {
  if (g_rt_ready.load(std::memory_order_acquire)) return true;
  std::lock_guard<std::mutex> lock(g_mu);
  return g_rt != nullptr;
}

int device_count_noexcept() {
  if (tpj_rt_t* r = g_rt_ready.load(std::memory_order_acquire)) return tpj_rt_device_count(r);
  std::lock_guard<std::mutex> lock(g_mu);
  open_locked();
  return g_rt ? tpj_rt_device_count(g_rt) : 0;
}

void check_device_index(int64_t index) {
  int n = tpj_rt_device_count(rt());
  TORCH_CHECK(index >= 0 && index < n, "tpu error: invalid device ordinal ", index,
              " (device count is ", n, ")");
}

int current_device() { return t_current_device; }

void set_current_device(int index) {
  // Restoring the device a guard found needs no check (and must not throw:
  // DeviceGuard's destructor calls this from a noexcept function, also in a
  // forked child where every other use raises).
  if (index == t_current_device && is_initialized()) return;
  check_device_index(index);
  t_current_device = index;
}

}  // namespace torch_pjrt
