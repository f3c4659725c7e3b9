// What fallback.cpp shares with the glue that runs ops on the CPU itself or
// feeds its boxed fallbacks (sparse.cpp, outform.cpp): the counters, the
// policy, and the dtype fallback of a kernel that runs CPU's kernel itself.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <c10/core/ScalarType.h>

#include <string>

namespace torch_pjrt {

void count_fallback(const std::string& op);
// A kernel that has no lowering for dtype t and is about to run op on the
// CPU itself: honours TORCH_PJRT_FALLBACK (error raises NotImplementedError,
// warn warns once per op) and counts op in fallbacks().
void dtype_fallback(const char* op, at::ScalarType t);

// The fallback policy, one place for every path that runs an op on the CPU
// in place of a tpu lowering. With TORCH_PJRT_FALLBACK=error it raises
// NotImplementedError "<refused> has no tpu lowering and
// TORCH_PJRT_FALLBACK=error forbids running it on the CPU". Otherwise it
// counts `key` in fallbacks() and, under warn (the default), warns the first
// time key is counted: "<warned> has no tpu lowering: it runs on the CPU
// (slower; counted in ...)", without "slower; " when slower is false.
void fallback_policy(const std::string& key, const std::string& refused,
                     const std::string& warned, bool slower);

// An op on a sparse COO tpu tensor run by PyTorch's CPU kernel on CPU copies
// (counted as "<op> (sparse)"); results come back to tpu.
void sparse_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);
// The same for sparse compressed tensors (SparseCsrCPU's kernels).
void sparse_csr_cpu(const c10::OperatorHandle& op, torch::jit::Stack* stack);

}  // namespace torch_pjrt
