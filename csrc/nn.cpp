// Kernel glue for softmax, log_softmax and their backward, threshold_backward,
// clamp, masked_fill and cat. Shapes, dtypes and argument checks come from
// the meta functions.
#include <ATen/MetaFunctions.h>
#include <ATen/native/Gelu.h>
#include <ATen/WrapDimUtils.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <sstream>

#include "common.h"
#include "inplace.h"

namespace torch_pjrt {
namespace {

using at::Scalar;
using at::Tensor;

// Runs op with the operands of `ts` (tpu tensors or CPU scalars) into a new
// tensor shaped like meta_out, after `scalars` are appended.
// in_place (an in-place form: the first of ts): when the result is shaped
// and typed like it and it is its storage's natural tensor, its storage is
// updated in place (inplace.h) and it is returned.
Tensor run_like(const char* op, std::initializer_list<const Tensor*> ts, const Tensor& meta_out,
                std::vector<int64_t> attrs, std::initializer_list<const Scalar*> scalars = {},
                const Tensor* in_place = nullptr) {
  for (const Tensor* t : ts) check_supported(*t, op);
  c10::Device dev = common_device(op, ts);
  c10::DeviceGuard guard(dev);
  OpArgs a;
  if (in_place && in_place->sizes() == meta_out.sizes() &&
      in_place->scalar_type() == meta_out.scalar_type() && add_in_place_operand(a, *in_place)) {
    for (const Tensor* t : ts)
      if (t != *ts.begin()) add_operand(a, *t, dev.index());
    for (const Scalar* s : scalars) a.scalar(*s, meta_out.scalar_type(), dev.index());
    run_op_in_place(op, dev.index(), a, attrs, *in_place);
    return *in_place;
  }
  Tensor out = at::empty(meta_out.sizes(), meta_out.options().device(dev));
  for (const Tensor* t : ts) add_operand(a, *t, dev.index());
  for (const Scalar* s : scalars) a.scalar(*s, out.scalar_type(), dev.index());
  run_op(op, dev.index(), a, attrs, {out});
  return out;
}

// CPU's kernels take floating inputs only; say so the way they do.
void check_softmax_input(const Tensor& self, int64_t dim, const char* name) {
  int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  bool last = self.dim() == 0 || d == self.dim() - 1;
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(self.scalar_type()), "\"", name,
                              last ? "_lastdim_kernel_impl" : "_kernel_impl",
                              "\" not implemented for '", self.scalar_type(), "'");
}

Tensor softmax(const Tensor& self, int64_t dim, bool half_to_float) {
  check_softmax_input(self, dim, "softmax");
  Tensor m = at::meta::_softmax(to_meta(self), dim, half_to_float);
  int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  return run_like("aten::_softmax", {&self}, m, {to_tpj_dtype(accumulator(self.scalar_type())), d});
}

// scaled_dot_product_attention's math path: softmax with all -inf rows
// giving zeros. PyTorch's composite (softmax, an all() over eq(-inf), where)
// would be three ops and a second reduction; this is one.
Tensor safe_softmax(const Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  Tensor m = at::empty(self.sizes(), self.options().dtype(dtype.value_or(self.scalar_type()))
                                         .device(at::kMeta));
  check_softmax_input(m, dim, "softmax");
  int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  at::ScalarType out_dtype = m.scalar_type();
  return run_like("aten::_safe_softmax", {&self}, m, {to_tpj_dtype(accumulator(out_dtype)), d});
}

Tensor log_softmax(const Tensor& self, int64_t dim, bool half_to_float) {
  check_softmax_input(self, dim, "log_softmax");
  Tensor m = at::meta::_log_softmax(to_meta(self), dim, half_to_float);
  int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  return run_like("aten::_log_softmax", {&self}, m,
                  {to_tpj_dtype(accumulator(self.scalar_type())), d});
}

Tensor softmax_backward(const Tensor& grad, const Tensor& output, int64_t dim,
                        at::ScalarType input_dtype) {
  Tensor m = at::meta::_softmax_backward_data(to_meta(grad), to_meta(output), dim, input_dtype);
  int64_t d = c10::maybe_wrap_dim(dim, grad.dim());
  return run_like("aten::_softmax_backward_data", {&grad, &output}, m,
                  {to_tpj_dtype(accumulator(grad.scalar_type())), d});
}

Tensor log_softmax_backward(const Tensor& grad, const Tensor& output, int64_t dim,
                            at::ScalarType input_dtype) {
  Tensor m = at::meta::_log_softmax_backward_data(to_meta(grad), to_meta(output), dim, input_dtype);
  int64_t d = c10::maybe_wrap_dim(dim, grad.dim());
  return run_like("aten::_log_softmax_backward_data", {&grad, &output}, m,
                  {to_tpj_dtype(accumulator(grad.scalar_type())), d});
}

Tensor threshold_backward(const Tensor& grad, const Tensor& self, const Scalar& threshold) {
  Tensor m = at::meta::threshold_backward(to_meta(grad), to_meta(self), threshold);
  // Half types compare in float against the unrounded threshold, as CPU's
  // kernel does (bf16(0.3) <= 0.3 is false there, true in bf16).
  at::ScalarType t = m.scalar_type();
  at::ScalarType cd = (t == at::kHalf || t == at::kBFloat16) ? at::kFloat : t;
  const char* op = "aten::threshold_backward";
  check_supported(grad, op);
  check_supported(self, op);
  c10::Device dev = common_device(op, {&grad, &self});
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(m.sizes(), m.options().device(dev));
  OpArgs a;
  add_operand(a, grad, dev.index());
  add_operand(a, self, dev.index());
  a.scalar(threshold, cd, dev.index());
  run_op(op, dev.index(), a, {to_tpj_dtype(cd)}, {out});
  return out;
}

Tensor clamp_op(const Tensor& self, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  Tensor m = at::meta::clamp(to_meta(self), lo, hi);
  std::vector<int64_t> attrs{to_tpj_dtype(m.scalar_type()), lo.has_value(), hi.has_value()};
  if (lo && hi) return run_like("aten::clamp", {&self}, m, attrs, {&*lo, &*hi});
  if (lo) return run_like("aten::clamp", {&self}, m, attrs, {&*lo});
  if (hi) return run_like("aten::clamp", {&self}, m, attrs, {&*hi});
  return run_like("aten::clamp", {&self}, m, attrs);
}

void check_mask(const Tensor& self, const Tensor& mask) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_fill_ only supports boolean masks, but got "
              "mask with dtype ", mask.dtype());
  (void)self;
}

// The C type CPU's masked_fill names in its overflow message.
const char* c_type_name(at::ScalarType t) {
  switch (t) {
    case at::kBool: return "bool";
    case at::kByte: return "uint8_t";
    case at::kChar: return "int8_t";
    case at::kShort: return "int16_t";
    case at::kInt: return "int";
    case at::kLong: return "int64_t";
    case at::kHalf: return "c10::Half";
    case at::kBFloat16: return "c10::BFloat16";
    case at::kFloat: return "float";
    case at::kDouble: return "double";
    default: return c10::toString(t);
  }
}

// Out of place, masked_fill broadcasts self and mask together and keeps
// self's dtype. Computed here: PyTorch's meta kernel for it is Python
// (about 180 us a call).
Tensor masked_fill_meta(const Tensor& self, const Tensor& mask) {
  return at::empty(at::infer_size(self.sizes(), mask.sizes()),
                   at::TensorOptions().device(c10::kMeta).dtype(self.scalar_type()));
}

// in_place: see run_like.
Tensor masked_fill_impl(const Tensor& self, const Tensor& mask, const Scalar& value,
                        const Tensor* in_place) {
  check_mask(self, mask);
  TORCH_CHECK(!value.isComplex() || self.is_complex(), "value cannot be converted to type ",
              c_type_name(self.scalar_type()), " without overflow");
  Tensor m = masked_fill_meta(self, mask);
  return run_like("aten::masked_fill.Scalar", {&self, &mask}, m, {to_tpj_dtype(m.scalar_type())},
                  {&value}, in_place);
}

Tensor masked_fill_op(const Tensor& self, const Tensor& mask, const Scalar& value) {
  return masked_fill_impl(self, mask, value, nullptr);
}

Tensor masked_fill_tensor(const Tensor& self, const Tensor& mask, const Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got "
              "tensor with ", value.dim(), " dimension(s).");
  check_mask(self, mask);
  TORCH_CHECK(!value.is_complex() || self.is_complex(), "value cannot be converted to type ",
              c_type_name(self.scalar_type()), " without overflow");
  Tensor m = masked_fill_meta(self, mask);
  return run_like("aten::masked_fill.Tensor", {&self, &mask, &value}, m,
                  {to_tpj_dtype(m.scalar_type())});
}

// CPU's checks and wording for cat (the meta reference words them differently).
void check_cat(const std::vector<Tensor>& ts, int64_t dim) {
  const Tensor* first = nullptr;
  for (size_t i = 0; i < ts.size(); ++i) {
    TORCH_CHECK(ts[i].dim() > 0, "zero-dimensional tensor (at position ", i,
                ") cannot be concatenated");
    if (ts[i].dim() == 1 && ts[i].size(0) == 0) continue;  // legacy empty: skipped
    if (!first) {
      first = &ts[i];
      continue;
    }
    TORCH_CHECK(ts[i].dim() == first->dim(), "Tensors must have same number of dimensions: got ",
                first->dim(), " and ", ts[i].dim());
    int64_t d = c10::maybe_wrap_dim(dim, first->dim());
    for (int64_t k = 0; k < first->dim(); ++k) {
      if (k == d) continue;
      TORCH_CHECK(ts[i].size(k) == first->size(k), "Sizes of tensors must match except in "
                  "dimension ", d, ". Expected size ", first->size(k), " but got size ",
                  ts[i].size(k), " for tensor number ", i, " in the list.");
    }
  }
}

Tensor cat_list(const std::vector<Tensor>& ts, int64_t dim) {
  check_cat(ts, dim);
  std::vector<Tensor> metas;
  for (const Tensor& t : ts) metas.push_back(to_meta(t));
  Tensor m = at::meta::cat(metas, dim);
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

// CPU's kernel refuses an unknown `approximate` (the C++ meta function does
// not look at it).
Tensor gelu(const Tensor& self, c10::string_view approximate) {
  at::native::get_gelutype_enum(approximate);
  Tensor m = at::meta::gelu(to_meta(self), approximate);
  return run_like("aten::gelu", {&self}, m,
                  {to_tpj_dtype(accumulator(self.scalar_type())), approximate == "tanh"});
}

Tensor gelu_backward(const Tensor& grad, const Tensor& self, c10::string_view approximate) {
  at::native::get_gelutype_enum(approximate);
  Tensor m = at::meta::gelu_backward(to_meta(grad), to_meta(self), approximate);
  return run_like("aten::gelu_backward", {&grad, &self}, m,
                  {to_tpj_dtype(accumulator(m.scalar_type())), approximate == "tanh"});
}

Tensor meta_or_undefined(const std::optional<Tensor>& t) {
  return t && t->defined() ? to_meta(*t) : Tensor();
}

std::tuple<Tensor, Tensor, Tensor> layer_norm(const Tensor& input, c10::SymIntArrayRef shape,
                                              const std::optional<Tensor>& weight,
                                              const std::optional<Tensor>& bias, double eps) {
  const char* op = "aten::native_layer_norm";
  // CPU's check and wording (the meta function words it differently)
  auto ns = C10_AS_INTARRAYREF_SLOW(shape);
  int64_t nd = static_cast<int64_t>(ns.size()), id = input.dim();
  bool fits = nd >= 1 && id >= nd && input.sizes().slice(id - nd).equals(ns);
  if (nd >= 1 && !fits) {
    std::ostringstream ss;
    ss << "Given normalized_shape=" << ns << ", expected input with shape [*";
    for (int64_t v : ns) ss << ", " << v;
    ss << "], but got input of size" << input.sizes();
    TORCH_CHECK(false, ss.str());
  }
  TORCH_CHECK(nd >= 1, "Expected normalized_shape to be at least 1-dimensional, i.e., containing "
              "at least one element, but got normalized_shape = ", ns);
  for (const auto* p : {&weight, &bias}) {
    TORCH_CHECK(!(*p && (*p)->defined()) || (*p)->sizes().equals(ns), "Expected ",
                p == &weight ? "weight" : "bias", " to be of same shape as normalized_shape, but "
                "got ", p == &weight ? "weight" : "bias", " of shape ", (*p)->sizes(),
                " and normalized_shape = ", ns);
  }
  // Shapes computed here: PyTorch's meta kernel for native_layer_norm is a
  // Python decomposition (about 0.8 ms a call). y is like input, the
  // statistics keep input's leading dims and 1 for each normalized one.
  std::vector<int64_t> stat_shape(input.sizes().begin(), input.sizes().end() - nd);
  stat_shape.resize(id, 1);
  auto mo = at::TensorOptions().device(c10::kMeta).dtype(input.scalar_type());
  Tensor m0 = at::empty(input.sizes(), mo), m1 = at::empty(stat_shape, mo), m2 = m1;
  bool hw = weight && weight->defined(), hb = bias && bias->defined();
  std::vector<const Tensor*> ts{&input};
  if (hw) ts.push_back(&*weight);
  if (hb) ts.push_back(&*bias);
  for (const Tensor* t : ts) check_supported(*t, op);
  c10::Device dev = input.device();
  for (const Tensor* t : ts)
    TORCH_CHECK(t->device() == dev, "Expected all tensors to be on the same device, but found at "
                "least two devices, ", dev, " and ", t->device(), "!");
  c10::DeviceGuard guard(dev);
  at::ScalarType cd = accumulator(input.scalar_type());
  Tensor y = at::empty(m0.sizes(), m0.options().device(dev));
  // CPU's statistics dtype: the input's, or float for a half-type input with
  // float weight or bias (the meta function says float for every half input)
  at::ScalarType st = input.scalar_type();
  if ((st == at::kHalf || st == at::kBFloat16) &&
      ((hw && weight->scalar_type() == at::kFloat) || (hb && bias->scalar_type() == at::kFloat)))
    st = at::kFloat;
  Tensor mean = at::empty(m1.sizes(), m1.options().device(dev).dtype(st));
  Tensor rstd = at::empty(m2.sizes(), m2.options().device(dev).dtype(st));
  OpArgs a;
  for (const Tensor* t : ts) a.tensor(*t);
  a.scalar(eps, cd, dev.index());
  int64_t axis = input.dim() - static_cast<int64_t>(shape.size());
  run_op(op, dev.index(), a, {to_tpj_dtype(cd), axis, hw, hb}, {y, mean, rstd});
  return {y, mean, rstd};
}

std::tuple<Tensor, Tensor, Tensor> layer_norm_backward(
    const Tensor& grad_out, const Tensor& input, c10::SymIntArrayRef shape, const Tensor& mean,
    const Tensor& rstd, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
    std::array<bool, 3> mask) {
  const char* op = "aten::native_layer_norm_backward";
  // Shapes computed here (PyTorch's meta kernel is a Python decomposition):
  // the input's gradient like input, the parameters' like the parameters.
  Tensor m0 = to_meta(input), m1 = meta_or_undefined(weight), m2 = meta_or_undefined(bias);
  bool hw = weight && weight->defined();
  c10::Device dev = input.device();
  c10::DeviceGuard guard(dev);
  std::vector<Tensor> outs;
  Tensor r[3];
  const Tensor* metas[3] = {&m0, &m1, &m2};
  for (int i = 0; i < 3; ++i) {
    if (!mask[i] || !metas[i]->defined()) continue;
    r[i] = at::empty(metas[i]->sizes(), metas[i]->options().device(dev));
    outs.push_back(r[i]);
  }
  if (outs.empty()) return {r[0], r[1], r[2]};
  OpArgs a;
  a.tensor(grad_out);
  a.tensor(input);
  a.tensor(mean);
  a.tensor(rstd);
  if (hw) a.tensor(*weight);
  int64_t axis = input.dim() - static_cast<int64_t>(shape.size());
  run_op(op, dev.index(), a,
         {to_tpj_dtype(accumulator(input.scalar_type())), axis, hw, 0, r[0].defined(),
          r[1].defined(), r[2].defined()},
         outs);
  return {r[0], r[1], r[2]};
}

Tensor cat(const at::ITensorListRef& tensors, int64_t dim) {
  return cat_list(std::vector<Tensor>(tensors.begin(), tensors.end()), dim);
}

// scaled_dot_product_attention asks each device which fused kernel to use;
// we have none, so the answer is the math path (sdp::SDPBackend::math == 0),
// which PyTorch composes from matmul, softmax, masked_fill and dropout, all
// native here. Without this the query would fall back to the CPU's answer
// and pick a CPU-only flash kernel.
int64_t fused_sdp_choice(const Tensor&, const Tensor&, const Tensor&,
                         const std::optional<Tensor>&, double, bool, std::optional<double>, bool) {
  return 0;
}

}  // namespace

// In-place forms used by the ops above (assign lives in ops.cpp).
void assign_result(const at::Tensor& dst, const at::Tensor& result, const char* op);

}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  m.impl("_softmax", TORCH_FN(softmax));
  m.impl("_safe_softmax", TORCH_FN(safe_softmax));
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
  m.impl("clamp_min_", [](at::Tensor& s, const at::Scalar& lo) -> at::Tensor& {
    assign_result(s, clamp_op(s, lo, std::nullopt), "aten::clamp_min_");
    return s;
  });
  m.impl("clamp_max_", [](at::Tensor& s, const at::Scalar& hi) -> at::Tensor& {
    assign_result(s, clamp_op(s, std::nullopt, hi), "aten::clamp_max_");
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
    Tensor r = masked_fill_impl(s, mask, v, &s);
    if (!r.is_same(s)) assign_result(s, r, "aten::masked_fill_");
    return s;
  });
  m.impl("masked_fill_.Tensor", [](at::Tensor& s, const at::Tensor& mask,
                                   const at::Tensor& v) -> at::Tensor& {
    assign_result(s, masked_fill_tensor(s, mask, v), "aten::masked_fill_");
    return s;
  });
  m.impl("cat", TORCH_FN(cat));
  m.impl("_fused_sdp_choice", TORCH_FN(fused_sdp_choice));
  m.impl("gelu", TORCH_FN(gelu));
  m.impl("gelu_backward", TORCH_FN(gelu_backward));
  m.impl("native_layer_norm", TORCH_FN(layer_norm));
  m.impl("native_layer_norm_backward", TORCH_FN(layer_norm_backward));
}
