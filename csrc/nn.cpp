// Kernel glue for softmax, log_softmax and their backward, threshold_backward,
// clamp, masked_fill and cat. Shapes, dtypes and argument checks come from
// the meta functions.
#include <ATen/WrapDimUtils.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "common.h"

namespace torch_pjrt {
namespace {

using at::Scalar;
using at::Tensor;

at::ScalarType compute_of(at::ScalarType t) {
  return (t == at::kHalf || t == at::kBFloat16) ? at::kFloat : t;
}

// Runs op with the operands of `ts` (tpu tensors or CPU scalars) into a new
// tensor shaped like meta_out, after `scalars` are appended.
Tensor run_like(const char* op, std::initializer_list<const Tensor*> ts, const Tensor& meta_out,
                std::vector<int64_t> attrs, std::initializer_list<const Scalar*> scalars = {}) {
  for (const Tensor* t : ts) check_supported(*t, op);
  c10::Device dev = common_device(op, ts);
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(meta_out.sizes(), meta_out.options().device(dev));
  OpArgs a;
  for (const Tensor* t : ts) add_operand(a, *t, dev.index());
  for (const Scalar* s : scalars) a.scalar(*s, out.scalar_type(), dev.index());
  run_op(op, dev.index(), a, attrs, {out});
  return out;
}

Tensor softmax(const Tensor& self, int64_t dim, bool half_to_float) {
  Tensor m = at::_softmax(to_meta(self), dim, half_to_float);
  int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  return run_like("aten::_softmax", {&self}, m, {to_tpj_dtype(compute_of(self.scalar_type())), d});
}

Tensor log_softmax(const Tensor& self, int64_t dim, bool half_to_float) {
  Tensor m = at::_log_softmax(to_meta(self), dim, half_to_float);
  int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  return run_like("aten::_log_softmax", {&self}, m,
                  {to_tpj_dtype(compute_of(self.scalar_type())), d});
}

Tensor softmax_backward(const Tensor& grad, const Tensor& output, int64_t dim,
                        at::ScalarType input_dtype) {
  Tensor m = at::_softmax_backward_data(to_meta(grad), to_meta(output), dim, input_dtype);
  int64_t d = c10::maybe_wrap_dim(dim, grad.dim());
  return run_like("aten::_softmax_backward_data", {&grad, &output}, m,
                  {to_tpj_dtype(compute_of(grad.scalar_type())), d});
}

Tensor log_softmax_backward(const Tensor& grad, const Tensor& output, int64_t dim,
                            at::ScalarType input_dtype) {
  Tensor m = at::_log_softmax_backward_data(to_meta(grad), to_meta(output), dim, input_dtype);
  int64_t d = c10::maybe_wrap_dim(dim, grad.dim());
  return run_like("aten::_log_softmax_backward_data", {&grad, &output}, m,
                  {to_tpj_dtype(compute_of(grad.scalar_type())), d});
}

Tensor threshold_backward(const Tensor& grad, const Tensor& self, const Scalar& threshold) {
  Tensor m = at::threshold_backward(to_meta(grad), to_meta(self), threshold);
  return run_like("aten::threshold_backward", {&grad, &self}, m,
                  {to_tpj_dtype(m.scalar_type())}, {&threshold});
}

Tensor clamp_op(const Tensor& self, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  Tensor m = at::clamp(to_meta(self), lo, hi);
  std::vector<int64_t> attrs{to_tpj_dtype(m.scalar_type()), lo.has_value(), hi.has_value()};
  if (lo && hi) return run_like("aten::clamp", {&self}, m, attrs, {&*lo, &*hi});
  if (lo) return run_like("aten::clamp", {&self}, m, attrs, {&*lo});
  if (hi) return run_like("aten::clamp", {&self}, m, attrs, {&*hi});
  return run_like("aten::clamp", {&self}, m, attrs);
}

Tensor masked_fill_op(const Tensor& self, const Tensor& mask, const Scalar& value) {
  Tensor m = at::masked_fill(to_meta(self), to_meta(mask), value);
  return run_like("aten::masked_fill.Scalar", {&self, &mask}, m, {to_tpj_dtype(m.scalar_type())},
                  {&value});
}

Tensor masked_fill_tensor(const Tensor& self, const Tensor& mask, const Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got "
              "tensor with ", value.dim(), " dimension(s).");
  Tensor m = at::masked_fill(to_meta(self), to_meta(mask), to_meta(value));
  return run_like("aten::masked_fill.Tensor", {&self, &mask, &value}, m,
                  {to_tpj_dtype(m.scalar_type())});
}

Tensor cat_list(const std::vector<Tensor>& ts, int64_t dim) {
  std::vector<Tensor> metas;
  for (const Tensor& t : ts) metas.push_back(to_meta(t));
  Tensor m = at::cat(metas, dim);
  int64_t d = c10::maybe_wrap_dim(dim, m.dim());
  if (ts.size() > TPJ_OP_MAX_IN) {
    // More operands than one program takes: concatenate in chunks.
    std::vector<Tensor> chunk(ts.begin(), ts.begin() + TPJ_OP_MAX_IN);
    std::vector<Tensor> rest{cat_list(chunk, d)};
    rest.insert(rest.end(), ts.begin() + TPJ_OP_MAX_IN, ts.end());
    return cat_list(rest, d);
  }
  const char* op = "aten::cat";
  for (const Tensor& t : ts) {
    check_supported(t, op);
    TORCH_CHECK(t.device() == ts[0].device(), "Expected all tensors to be on the same device, "
                "but found at least two devices, ", ts[0].device(), " and ", t.device(), "!");
  }
  c10::DeviceGuard guard(ts[0].device());
  Tensor out = at::empty(m.sizes(), m.options().device(ts[0].device()));
  OpArgs a;
  for (const Tensor& t : ts) a.tensor(t);
  run_op(op, ts[0].device().index(), a, {d}, {out});
  return out;
}

Tensor cat(const at::ITensorListRef& tensors, int64_t dim) {
  return cat_list(std::vector<Tensor>(tensors.begin(), tensors.end()), dim);
}

}  // namespace

// In-place forms used by the ops above (assign lives in ops.cpp).
void assign_result(const at::Tensor& dst, const at::Tensor& result, const char* op);

}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  m.impl("_softmax", TORCH_FN(softmax));
  m.impl("_log_softmax", TORCH_FN(log_softmax));
  m.impl("_softmax_backward_data", TORCH_FN(softmax_backward));
  m.impl("_log_softmax_backward_data", TORCH_FN(log_softmax_backward));
  m.impl("threshold_backward", TORCH_FN(threshold_backward));
  m.impl("clamp", TORCH_FN(clamp_op));
  m.impl("clamp_", [](at::Tensor& s, const std::optional<at::Scalar>& lo,
                      const std::optional<at::Scalar>& hi) -> at::Tensor& {
    assign_result(s, clamp_op(s, lo, hi), "aten::clamp_");
    return s;
  });
  m.impl("clamp_min", [](const at::Tensor& s, const at::Scalar& lo) {
    return clamp_op(s, lo, std::nullopt);
  });
  m.impl("clamp_max", [](const at::Tensor& s, const at::Scalar& hi) {
    return clamp_op(s, std::nullopt, hi);
  });
  m.impl("masked_fill.Scalar", TORCH_FN(masked_fill_op));
  m.impl("masked_fill.Tensor", TORCH_FN(masked_fill_tensor));
  m.impl("masked_fill_.Scalar", [](at::Tensor& s, const at::Tensor& mask,
                                   const at::Scalar& v) -> at::Tensor& {
    assign_result(s, masked_fill_op(s, mask, v), "aten::masked_fill_");
    return s;
  });
  m.impl("masked_fill_.Tensor", [](at::Tensor& s, const at::Tensor& mask,
                                   const at::Tensor& v) -> at::Tensor& {
    assign_result(s, masked_fill_tensor(s, mask, v), "aten::masked_fill_");
    return s;
  });
  m.impl("cat", TORCH_FN(cat));
}
