// Kernel glue for index_select and embedding_dense_backward. Indices are
// validated on the host (one wait for the index tensor, usually small):
// XLA would clamp an out-of-range index into a silent wrong answer, and
// PyTorch users expect "index out of range in self".
#include <ATen/MetaFunctions.h>
#include <ATen/WrapDimUtils.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "common.h"

namespace torch_pjrt {

at::Tensor to_host(const at::Tensor& src);  // copy.cpp

namespace {

using at::Tensor;

void check_indices(const Tensor& index, int64_t size) {
  int64_t lo = 0, hi = 0;
  if (!index_bounds(index, &lo, &hi)) return;
  TORCH_CHECK_INDEX(lo >= 0 && hi < size, "index out of range in self");
}

Tensor on_device(const Tensor& t, c10::Device dev) {
  return t.device() == dev ? t : t.to(dev);
}

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  const char* op = "aten::index_select";
  check_supported(self, op);
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  TORCH_CHECK(index.scalar_type() == at::kLong || index.scalar_type() == at::kInt,
              "index_select(): Expected dtype int32 or int64 for index");
  int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  Tensor m = at::index_select(to_meta(self), dim, to_meta(index));
  check_indices(index, self.dim() == 0 ? 1 : self.size(d));
  c10::DeviceGuard guard(self.device());
  Tensor idx = on_device(index, self.device());
  Tensor out = at::empty(m.sizes(), self.options());
  OpArgs a;
  a.tensor(self);
  a.tensor(idx);
  run_op(op, self.device().index(), a, {d}, {out});
  return out;
}

Tensor embedding_dense_backward(const Tensor& grad, const Tensor& indices, c10::SymInt num_weights,
                                c10::SymInt padding_idx, bool scale_grad_by_freq) {
  const char* op = "aten::embedding_dense_backward";
  int64_t n = num_weights.expect_int(), pad = padding_idx.expect_int();
  if (scale_grad_by_freq) {
    // Counting duplicate indices is not lowered yet: PyTorch's CPU kernel, counted.
    count_fallback(op);
    Tensor r = at::embedding_dense_backward(to_host(grad), to_host(indices), n, pad, true);
    return r.to(grad.device());
  }
  check_supported(grad, op);
  check_indices(indices, n);
  c10::DeviceGuard guard(grad.device());
  Tensor idx = on_device(indices, grad.device());
  Tensor out = at::empty({n, grad.size(-1)}, grad.options());
  at::ScalarType acc = (grad.scalar_type() == at::kHalf || grad.scalar_type() == at::kBFloat16)
                           ? at::kFloat
                           : grad.scalar_type();
  OpArgs a;
  a.tensor(grad);
  a.tensor(idx);
  run_op(op, grad.device().index(), a, {pad, to_tpj_dtype(acc)}, {out});
  return out;
}

// Every target is a class or ignore_index, as CPU's kernel insists.
void check_targets(const Tensor& target, int64_t classes, int64_t ignore_index) {
  if (tracing() && !target.device().is_cpu()) return;  // a compiled graph cannot wait on values
  Tensor h = (target.device().is_cpu() ? target : to_host(target)).reshape(-1);
  auto acc = h.to(at::kLong).contiguous();
  const int64_t* p = acc.data_ptr<int64_t>();
  for (int64_t i = 0; i < acc.numel(); ++i)
    TORCH_CHECK_INDEX(p[i] == ignore_index || (p[i] >= 0 && p[i] < classes), "Target ", p[i],
                      " is out of bounds.");
}

std::tuple<Tensor, Tensor> nll_loss_forward(const Tensor& self, const Tensor& target,
                                            const std::optional<Tensor>& weight, int64_t reduction,
                                            c10::SymInt ignore_index) {
  const char* op = "aten::nll_loss_forward";
  int64_t ig = ignore_index.expect_int();
  bool hw = weight && weight->defined();
  auto [m0, m1] = at::meta::nll_loss_forward_symint(to_meta(self), to_meta(target),
                                              hw ? to_meta(*weight) : Tensor(), reduction, ig);
  check_supported(self, op);
  check_targets(target, self.size(-1), ig);
  c10::DeviceGuard guard(self.device());
  Tensor out = at::empty(m0.sizes(), m0.options().device(self.device()));
  Tensor total = at::empty(m1.sizes(), m1.options().device(self.device()));
  at::ScalarType cd = (self.scalar_type() == at::kHalf || self.scalar_type() == at::kBFloat16)
                          ? at::kFloat
                          : self.scalar_type();
  OpArgs a;
  a.tensor(self);
  a.tensor(on_device(target, self.device()));
  if (hw) a.tensor(on_device(*weight, self.device()));
  run_op(op, self.device().index(), a, {to_tpj_dtype(cd), reduction, ig, hw}, {out, total});
  return {out, total};
}

Tensor nll_loss_backward(const Tensor& grad, const Tensor& self, const Tensor& target,
                         const std::optional<Tensor>& weight, int64_t reduction,
                         c10::SymInt ignore_index, const Tensor& total_weight) {
  const char* op = "aten::nll_loss_backward";
  int64_t ig = ignore_index.expect_int();
  bool hw = weight && weight->defined();
  Tensor m = at::meta::nll_loss_backward_symint(to_meta(grad), to_meta(self), to_meta(target),
                                          hw ? to_meta(*weight) : Tensor(), reduction, ig,
                                          to_meta(total_weight));
  check_supported(self, op);
  c10::DeviceGuard guard(self.device());
  Tensor out = at::empty(m.sizes(), m.options().device(self.device()));
  at::ScalarType cd = (self.scalar_type() == at::kHalf || self.scalar_type() == at::kBFloat16)
                          ? at::kFloat
                          : self.scalar_type();
  OpArgs a;
  a.tensor(grad);
  a.tensor(self);
  a.tensor(on_device(target, self.device()));
  a.tensor(total_weight);
  if (hw) a.tensor(on_device(*weight, self.device()));
  run_op(op, self.device().index(), a, {to_tpj_dtype(cd), reduction, ig, hw}, {out});
  return out;
}

}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("index_select", TORCH_FN(torch_pjrt::index_select));
  m.impl("embedding_dense_backward", TORCH_FN(torch_pjrt::embedding_dense_backward));
  m.impl("nll_loss_forward", TORCH_FN(torch_pjrt::nll_loss_forward));
  m.impl("nll_loss_backward", TORCH_FN(torch_pjrt::nll_loss_backward));
}
