// The generic boxed kernel (boxed.cpp) that serves every descriptor row of
// the C op table (src/ops/desc.h): registered once per row and form, it
// reads the row for the output dtype, CPU's refusals and checks, and runs
// the row's lowering. Nothing op-specific lives in C++ but the meta
// functions PyTorch writes in C++. See docs/ARCHITECTURE.md, "Adding an op".
#ifndef TORCH_PJRT_BOXED_H_
#define TORCH_PJRT_BOXED_H_

#include <ATen/core/Tensor.h>

namespace torch_pjrt {

// Integer division by zero raises on CPU; XLA would give a silent value.
// This waits for the divisor b (as index validation does); in a traced graph
// a tpu divisor is not checked (a compiled graph cannot wait on values).
void check_divisor(const at::Tensor& b);

}  // namespace torch_pjrt

#endif  // TORCH_PJRT_BOXED_H_
