// Dtypes tpu holds but never computes on (uint16/32/64, complex32): see
// storage_dtypes.cpp. Included only by the glue that creates, copies or
// guards them.
#pragma once

#include "tensor.h"
#include <ATen/ATen.h>

#include <vector>

namespace torch_pjrt {

struct OpArgs;

// uint16/32/64 and complex32: tpu holds, copies, views and fills them; every
// computation on them runs PyTorch's CPU kernel (counted), routed by a
// dispatch key their tensors carry.
bool is_storage_only(at::ScalarType t);
// The dispatch keys of a new tpu tensor of dtype t.
c10::DispatchKeySet tpu_key_set(at::ScalarType t);
// v itself, or a TensorImpl over the same storage whose dispatch keys match
// its dtype (a view that changed the dtype: view_as_complex, view(dtype)).
at::Tensor with_dtype_keys(const at::Tensor& v);
// run_op's guard: only the storage ops (tpj::full, same-dtype tpj::view_copy)
// may see a storage-only dtype; anything else raises rather than compute in a
// lowering written for other types.
void check_storage_only(const char* op, const OpArgs& a, c10::ArrayRef<at::Tensor> outs);

}  // namespace torch_pjrt
