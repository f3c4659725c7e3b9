// Writing a result into a destination as PyTorch's in-place and out= forms
// do (ops/write.cpp), shared by every op family.
#pragma once

#include <ATen/core/Tensor.h>

#include <initializer_list>

namespace torch_pjrt {

// Writes result into dst as PyTorch's in-place forms do (castable dtype,
// same shape; buffer sharing or tpj::write_view).
void assign_result(const at::Tensor& dst, const at::Tensor& result, const char* op);
// The out= form: resizes out like at::native::resize_output, then assigns.
at::Tensor& out_result(at::Tensor& out, const at::Tensor& result, const char* op);
// What TensorIterator checks before writing dst from inputs (no internal or
// partial overlap).
void check_no_overlap(const at::Tensor& dst, std::initializer_list<const at::Tensor*> inputs);
// A Python number as a wrapped 0-d CPU tensor (weak in type promotion).
at::Tensor wrap_scalar(const at::Scalar& s);
// assign_result without TensorIterator's internal-overlap check (the few CPU
// kernels that write through an expanded dst).
void assign_overlapping(const at::Tensor& dst, const at::Tensor& result, const char* op);

}  // namespace torch_pjrt
