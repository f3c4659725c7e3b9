// Kernel glue for table ops: the output's dtype and shape come from PyTorch's
// own promotion and broadcasting functions (at::result_type, infer_size),
// then the operands go to the C core.
#include <ATen/ExpandUtils.h>
#include <ATen/native/BinaryOps.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "common.h"

namespace torch_pjrt {
namespace {

// The device all tpu operands share; 0-d CPU tensors are scalars and may mix
// in, as on CUDA. Raises PyTorch's usual message otherwise.
c10::Device common_device(const char* op, std::initializer_list<const at::Tensor*> ts) {
  std::optional<c10::Device> dev;
  for (const at::Tensor* t : ts) {
    if (t->device().is_cpu() && t->dim() == 0) continue;
    if (!dev) {
      dev = t->device();
    } else if (*dev != t->device()) {
      TORCH_CHECK(false, "Expected all tensors to be on the same device, but found at least two "
                         "devices, ", *dev, " and ", t->device(), "! (when checking arguments for ",
                  op, ")");
    }
  }
  TORCH_INTERNAL_ASSERT(dev && dev->is_privateuseone(), op, ": no tpu operand");
  return *dev;
}

// A tensor operand: read through its view, or a CPU 0-d scalar uploaded.
void add_operand(OpArgs& a, const at::Tensor& t, int device) {
  if (t.device().is_cpu()) a.scalar(t.item(), t.scalar_type(), device);
  else a.tensor(t);
}

at::Tensor binary(const char* op, const at::Tensor& self, const at::Tensor& other,
                  const at::Scalar* alpha) {
  check_supported(self, op);
  check_supported(other, op);
  c10::Device dev = common_device(op, {&self, &other});
  at::ScalarType dtype = at::result_type(self, other);
  if (alpha) at::native::alpha_check(dtype, *alpha);
  auto sizes = at::infer_size(self.sizes(), other.sizes());
  c10::DeviceGuard guard(dev);
  at::Tensor out = at::empty(sizes, self.options().dtype(dtype).device(dev));
  OpArgs a;
  add_operand(a, self, dev.index());
  add_operand(a, other, dev.index());
  std::vector<int64_t> attrs{0};
  if (alpha && !(alpha->isIntegral(true) ? alpha->toLong() == 1 : alpha->toDouble() == 1.0)) {
    attrs[0] = 1;
    a.scalar(*alpha, out.scalar_type(), dev.index());
  }
  run_op(op, dev.index(), a, attrs, {out});
  return out;
}

at::Tensor add_tensor(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  return binary("aten::add.Tensor", self, other, &alpha);
}

at::Tensor mul_tensor(const at::Tensor& self, const at::Tensor& other) {
  return binary("aten::mul.Tensor", self, other, nullptr);
}

}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("add.Tensor", TORCH_FN(torch_pjrt::add_tensor));
  m.impl("mul.Tensor", TORCH_FN(torch_pjrt::mul_tensor));
}
