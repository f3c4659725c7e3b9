// The dtype error CPU's kernels raise for a dtype they are not built for
// ("\"name\" not implemented for 'Long'"), for glue whose meta function
// accepts every dtype.
#pragma once

#include <ATen/ATen.h>

namespace torch_pjrt {

inline void check_cpu_dtype(bool ok, at::ScalarType t, const char* cpu_name) {
  TORCH_CHECK_NOT_IMPLEMENTED(ok, "\"", cpu_name, "\" not implemented for '", t, "'");
}

// Float, double, half and bfloat16.
inline void check_floating_dtype(const at::Tensor& t, const char* cpu_name) {
  check_cpu_dtype(c10::isFloatingType(t.scalar_type()), t.scalar_type(), cpu_name);
}

}  // namespace torch_pjrt
