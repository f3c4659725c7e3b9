// What the glue asks of torch.compile's graph capture (compile/graph.cpp):
// whether this thread is tracing, and index checks deferred to the device.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

extern "C" {
#include "rt/rt.h"
}

namespace torch_pjrt {

// True while torch.compile traces a graph: ops record instead of running, and
// glue that would read a tensor on the host (index validation) must not.
bool tracing();
// While this thread traces a graph, or runs eager ops with deferred index
// checks on (set_deferred_index_checks): records a device-side check that
// every value of the tpu tensor index lies in [lo, hi); a run where one does
// not fails the next wait on the device with message (an index out of range
// would otherwise be clamped silently). True when recorded (the caller
// skips its host check, which would wait for the values).
bool defer_index_check(const at::Tensor& index, int64_t lo, int64_t hi,
                       const std::string& message);
// This thread's eager index checks: on the host, waiting for the index's
// values (false, the default), or deferred to the device like a compiled
// graph's (true). Returns the previous setting.
bool set_deferred_index_checks(bool on);
// The graph parameter standing for a CPU 0-d input of the graph being traced
// (borrowed), or NULL: such a scalar changes per call and must not be baked in.
tpj_rt_buffer_t* traced_scalar(const at::Tensor& t);

}  // namespace torch_pjrt
