// Writing a result into a destination as PyTorch's in-place and out= forms
// do (write.h): the result must cast to dst's dtype and match its shape; the
// buffer is shared when dst is its storage's natural tensor, else the value
// is written into dst's view on the device (tpj::write_view).
#include "ops/write.h"

#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>

#include "allocator.h"
#include "layout.h"
#include "tensor.h"

namespace torch_pjrt {
namespace {

at::Tensor wrap(const at::Scalar& s) {
  at::Tensor t = at::scalar_to_tensor(s);
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

void write_into(const at::Tensor& dst, const at::Tensor& result, const char* op);

// Writes result into dst (same device) as PyTorch's in-place and out= forms
// do: the result must cast to dst's dtype and match its shape, and dst may
// not have elements that share memory (TensorIterator's check; the few CPU
// kernels that write through an expanded dst use assign_overlapping).
void assign(const at::Tensor& dst, const at::Tensor& result, const char* op) {
  at::assert_no_internal_overlap(dst);
  write_into(dst, result, op);
}

void write_into(const at::Tensor& dst, const at::Tensor& result, const char* op) {
  TORCH_CHECK(c10::canCast(result.scalar_type(), dst.scalar_type()), "result type ",
              result.scalar_type(), " can't be cast to the desired output type ",
              dst.scalar_type());
  TORCH_CHECK(dst.sizes() == result.sizes(), "output with shape ", dst.sizes(),
              " doesn't match the broadcast shape ", result.sizes());
  TORCH_CHECK(dst.device() == result.device(), op, ": expected the output on ", result.device(),
              ", got ", dst.device());
  if (dst.numel() == 0) return;
  if (same_memory_layout(dst, result)) {
    tpj_box_set_buffer(box_for_write(dst), buffer_of(result).release());
  } else {
    write_view(dst, result);  // converts to dst's dtype on the device
  }
}

// What TensorIterator checks before writing dst from inputs.
void check_overlap(const at::Tensor& dst, std::initializer_list<const at::Tensor*> inputs) {
  at::assert_no_internal_overlap(dst);
  for (const at::Tensor* t : inputs)
    if (t->device() == dst.device()) at::assert_no_partial_overlap(dst, *t);
}

at::Tensor& out_form(at::Tensor& out, const at::Tensor& result, const char* op) {
  // An out= that had to be resized takes the result's layout, as
  // TensorIterator restrides an out it resizes; one of the right shape
  // keeps its own strides.
  if (at::native::resize_output(out, result.sizes()) && !result.is_contiguous() &&
      out.numel() == result.numel())
    out.as_strided_(result.sizes(), result.strides());
  assign(out, result, op);
  return out;
}

}  // namespace

void assign_result(const at::Tensor& dst, const at::Tensor& result, const char* op) {
  assign(dst, result, op);
}

void assign_overlapping(const at::Tensor& dst, const at::Tensor& result, const char* op) {
  write_into(dst, result, op);
}

at::Tensor& out_result(at::Tensor& out, const at::Tensor& result, const char* op) {
  return out_form(out, result, op);
}

void check_no_overlap(const at::Tensor& dst, std::initializer_list<const at::Tensor*> inputs) {
  check_overlap(dst, inputs);
}

at::Tensor wrap_scalar(const at::Scalar& s) { return wrap(s); }

}  // namespace torch_pjrt
