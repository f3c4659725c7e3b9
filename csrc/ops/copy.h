// Transfers (ops/copy.cpp) that other glue calls directly.
#pragma once

#include <ATen/core/Tensor.h>

namespace torch_pjrt {

// A CPU tensor holding src's values (one wait for a tpu tensor).
at::Tensor to_host(const at::Tensor& src);

}  // namespace torch_pjrt
