// Kernel glue for the ops Hugging Face Transformers models reach that no
// other family covers: isin (generate()'s stopping criteria), histc and
// _grouped_mm (mixture-of-experts routing). Lowerings: src/ops/hf.c.
#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_grouped_mm_compositeexplicitautograd_dispatch.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cmath>

#include "common.h"

namespace torch_pjrt {
namespace {

using at::Tensor;

Tensor& put(Tensor& out, const Tensor& result, const char* op) {
  at::native::resize_output(out, result.sizes());
  assign_result(out, result, op);
  return out;
}

// ---- isin -------------------------------------------------------------------

void check_isin_dtype(at::ScalarType t) {
  TORCH_CHECK(!at::isComplexType(t), "Unsupported input type encountered for isin(): ", t);
}

// elements and test are tpu tensors (or CPU 0-d ones) of dtype common.
Tensor isin_run(const Tensor& elements, const Tensor* test, const at::Scalar* test_scalar,
                at::ScalarType common, bool invert) {
  const char* op = "aten::isin.Tensor_Tensor";
  check_isin_dtype(common);
  c10::Device dev = test ? common_device(op, {&elements, test}) : elements.device();
  check_supported(elements, op);
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(elements.sizes(), elements.options().dtype(at::kBool).device(dev));
  if (elements.numel() == 0) return out;
  if (test && test->numel() == 0) return out.fill_(invert);
  OpArgs a;
  add_operand(a, elements.scalar_type() == common ? elements : elements.to(common), dev.index());
  if (test) {
    add_operand(a, test->scalar_type() == common ? *test : test->to(common), dev.index());
  } else {
    a.scalar(*test_scalar, common, dev.index());
  }
  run_op(op, dev.index(), a, {invert}, {out});
  return out;
}

Tensor k_isin_tt(const Tensor& elements, const Tensor& test, bool assume_unique, bool invert) {
  (void)assume_unique;  // an optimisation hint only; the result is the same
  at::ScalarType common = at::result_type(elements, test);
  return isin_run(elements, &test, nullptr, common, invert);
}

Tensor k_isin_ts(const Tensor& elements, const at::Scalar& test, bool assume_unique, bool invert) {
  (void)assume_unique;
  return isin_run(elements, nullptr, &test, at::result_type(elements, test), invert);
}

Tensor k_isin_st(const at::Scalar& element, const Tensor& test, bool assume_unique, bool invert) {
  (void)assume_unique;
  at::ScalarType common = at::result_type(test, element);
  c10::DeviceGuard guard(test.device());
  Tensor e = at::scalar_tensor(element, test.options().dtype(common));
  return isin_run(e, &test, nullptr, common, invert);
}

// ---- histc --------------------------------------------------------------------

Tensor k_histc(const Tensor& self, int64_t bins, const at::Scalar& min, const at::Scalar& max) {
  const char* op = "aten::histc";
  check_supported(self, op);
  at::ScalarType dt = self.scalar_type();
  // CPU takes floating types only (histogram_cpu); like CUDA, integers work
  // here too (MoE layers count expert ids, an integer tensor, off the CPU).
  TORCH_CHECK_NOT_IMPLEMENTED(!at::isComplexType(dt) && dt != at::kBool,
                              "\"histogram_cpu\" not implemented for '", dt, "'");
  TORCH_CHECK(bins > 0, "torch.histogram(): bins must be > 0, but got ", bins, " for dimension 0");
  double lo = min.toDouble(), hi = max.toDouble();
  TORCH_CHECK(std::isfinite(lo) && std::isfinite(hi), "torch.histc: range of [", lo, ", ", hi,
              "] is not finite");
  TORCH_CHECK(lo <= hi, "torch.histc: max must be larger than min");
  // float16/bfloat16: CPU's bin edges come from half-precision arithmetic
  // that XLA rounds differently, so an element near an edge could land one
  // bin away (the conformance sweep found such rows): run CPU's kernel.
  if (dt == at::kHalf || dt == at::kBFloat16) {
    Tensor r = at::histc(self.cpu(), bins, min, max);
    dtype_fallback(op, dt);
    return r.to(self.device());
  }
  c10::DeviceGuard guard(self.device());
  Tensor out = at::zeros({bins}, self.options());
  if (self.numel() == 0) return out;
  at::ScalarType cd = at::isFloatingType(dt) ? dt : at::kDouble;
  OpArgs a;
  a.tensor(self);
  a.scalar(min, cd, self.device().index());
  a.scalar(max, cd, self.device().index());
  run_op(op, self.device().index(), a, {bins}, {out});
  return out;
}

// ---- _grouped_mm ----------------------------------------------------------------

Tensor k_grouped_mm(const Tensor& self, const Tensor& mat2, const std::optional<Tensor>& offs,
                    const std::optional<Tensor>& bias, std::optional<at::ScalarType> out_dtype) {
  const char* op = "aten::_grouped_mm";
  bool has_offs = offs.has_value() && offs->defined();
  bool has_bias = bias.has_value() && bias->defined();
  int layout = -1;
  if (self.dim() == 2 && mat2.dim() == 3 && has_offs) layout = 0;
  if (self.dim() == 3 && mat2.dim() == 3 && !has_offs) layout = 1;
  if (self.dim() == 2 && mat2.dim() == 2 && has_offs && !has_bias) layout = 2;
  if (layout < 0) {
    // The other layouts (3-D x 2-D, jagged n): PyTorch's composite kernel,
    // which works on any device (one mm per group).
    return at::compositeexplicitautograd::_grouped_mm(self, mat2, offs, bias, out_dtype);
  }
  TORCH_CHECK(self.scalar_type() == mat2.scalar_type(),
              "Expected mat_a and mat_b to have the same dtype, but got ", self.scalar_type(),
              " and ", mat2.scalar_type());
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), "grouped_mm: expected floating inputs, got ",
              self.scalar_type());
  int64_t g = layout == 2 ? offs->size(0) : mat2.size(0);
  int64_t k = mat2.size(-2), n = mat2.size(-1);
  TORCH_CHECK(self.size(-1) == k, "contraction dimension of mat_a and mat_b must match, got ",
              self.size(-1), " and ", k);
  std::vector<int64_t> sizes;
  if (layout == 2) {
    TORCH_CHECK(offs->scalar_type() == at::kInt, "offs has to be int32");
    TORCH_CHECK(offs->dim() == 1, "offs must be a 1D tensor, got sizes ", offs->sizes());
    sizes = {g, self.size(0), n};
  } else if (layout == 0) {
    TORCH_CHECK(offs->scalar_type() == at::kInt, "offs has to be int32");
    TORCH_CHECK(offs->dim() == 1 && offs->size(0) == g,
                "offs must be a 1D tensor with one entry per group (", g, "), got sizes ",
                offs->sizes());
    sizes = {self.size(0), n};
  } else {
    TORCH_CHECK(self.size(0) == g, "batch dimension of mat_a and mat_b must match, got ",
                self.size(0), " and ", g);
    sizes = {g, self.size(1), n};
  }
  if (has_bias) {
    TORCH_CHECK(bias->dim() == 2 && bias->size(0) == g && bias->size(1) == n,
                "bias must have sizes [", g, ", ", n, "], got ", bias->sizes());
  }
  at::ScalarType od = out_dtype.value_or(self.scalar_type());
  std::vector<const Tensor*> ts = {&self, &mat2};
  if (has_offs) ts.push_back(&*offs);
  if (has_bias) ts.push_back(&*bias);
  c10::Device dev = self.device();
  for (const Tensor* t : ts) {
    TORCH_CHECK(t->device() == dev, "Expected all tensors to be on the same device, but found at "
                "least two devices, ", dev, " and ", t->device(), "!");
    check_supported(*t, op);
  }
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(sizes, self.options().dtype(od));
  if (out.numel() == 0) return out;
  OpArgs a;
  a.tensor(self);
  a.tensor(mat2);
  if (has_offs) a.tensor(*offs);
  if (has_bias) a.tensor(*bias);
  run_op(op, dev.index(), a,
         {layout, has_bias, to_tpj_dtype(accumulator(self.scalar_type()))}, {out});
  return out;
}

}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  using at::Tensor;
  m.impl("isin.Tensor_Tensor", TORCH_FN(k_isin_tt));
  m.impl("isin.Tensor_Scalar", TORCH_FN(k_isin_ts));
  m.impl("isin.Scalar_Tensor", TORCH_FN(k_isin_st));
  m.impl("isin.Tensor_Tensor_out",
         [](const Tensor& e, const Tensor& t, bool u, bool inv, Tensor& o) -> Tensor& {
           return put(o, k_isin_tt(e, t, u, inv), "aten::isin");
         });
  m.impl("isin.Tensor_Scalar_out",
         [](const Tensor& e, const at::Scalar& t, bool u, bool inv, Tensor& o) -> Tensor& {
           return put(o, k_isin_ts(e, t, u, inv), "aten::isin");
         });
  m.impl("isin.Scalar_Tensor_out",
         [](const at::Scalar& e, const Tensor& t, bool u, bool inv, Tensor& o) -> Tensor& {
           return put(o, k_isin_st(e, t, u, inv), "aten::isin");
         });
  m.impl("histc", TORCH_FN(k_histc));
  m.impl("histc.out", [](const Tensor& s, int64_t bins, const at::Scalar& lo, const at::Scalar& hi,
                         Tensor& o) -> Tensor& { return put(o, k_histc(s, bins, lo, hi), "aten::histc"); });
  m.impl("_grouped_mm", TORCH_FN(k_grouped_mm));
}
