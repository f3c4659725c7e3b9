// Fork safety, as CUDA has it: a child forked after the parent opened the
// PJRT client inherits the client's memory but none of its threads, so any
// use would hang. rt() raises PyTorch's usual "Cannot re-initialize ... in
// forked subprocess" instead; torch.tpu._is_in_bad_fork() answers from here
// (torch.manual_seed and DataLoader workers consult it).
#include <pthread.h>
#include <torch/library.h>

#include <atomic>

#include "fork.h"
#include "runtime.h"

namespace torch_pjrt {
namespace {

std::atomic<bool> g_initialized_at_fork{false};
std::atomic<bool> g_bad_fork{false};

// Runs in the parent just before fork(): is_initialized() takes the runtime
// mutex, which is safe here and not in the child.
void before_fork() { g_initialized_at_fork = is_initialized(); }
void in_child() {
  if (g_initialized_at_fork) g_bad_fork = true;
}

const int g_registered = pthread_atfork(&before_fork, nullptr, &in_child);

bool in_bad_fork_op() { return g_bad_fork; }

}  // namespace

void check_not_forked() {
  (void)g_registered;
  TORCH_CHECK(!g_bad_fork,
              "Cannot re-initialize tpu in forked subprocess. To use tpu with multiprocessing, "
              "you must use the 'spawn' start method");
}

}  // namespace torch_pjrt

TORCH_LIBRARY(tpj_fork, m) { m.def("in_bad_fork() -> bool", &torch_pjrt::in_bad_fork_op); }
