// Glue for the sampling ops: antialiased resizing (_upsample_bilinear2d_aa,
// _upsample_bicubic2d_aa, their backward and .out/.grad_input forms; lowered
// in src/ops/sampling.c). Output shapes and argument errors come from
// PyTorch's meta kernels. float32 and float64 run natively; CPU's kernel
// takes uint8 too (a separate fixed-point algorithm) and refuses half types,
// so every other dtype goes to CPU's kernel (counted, or CPU's error).
#include <cstring>

#include <ATen/ATen.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "common.h"

namespace torch_pjrt {
namespace {

using at::Tensor;
using D = std::optional<double>;
using L = at::IntArrayRef;

std::vector<int64_t> aa_attrs(at::ScalarType dt, bool bicubic, bool align_corners, D sh, D sw) {
  std::vector<int64_t> attrs{to_tpj_dtype(dt), bicubic ? 1 : 0, align_corners ? 1 : 0};
  for (const D& s : {sh, sw}) {
    int64_t bits = 0;
    if (s) std::memcpy(&bits, &*s, sizeof bits);
    attrs.push_back(s ? 1 : 0);
    attrs.push_back(bits);
  }
  return attrs;
}

// Runs `op` on x (input or grad_output) into a tensor shaped like meta; cpu
// is the same call on CPU tensors, for the dtypes without a lowering.
template <typename CpuFn>
Tensor run_aa(const char* op, const Tensor& x, const Tensor& meta, bool bicubic, bool ac, D sh,
              D sw, CpuFn cpu) {
  check_supported(x, op);
  c10::Device dev = x.device();
  at::ScalarType t = x.scalar_type();
  if (t != at::kFloat && t != at::kDouble) {
    Tensor r = cpu(x.cpu());  // CPU's error for the half types
    dtype_fallback(op, t);
    return r.to(dev);
  }
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(meta.sizes(), meta.options().device(dev));
  if (out.numel() == 0) return out;
  OpArgs a;
  a.tensor(x);
  run_op(op, dev.index(), a, aa_attrs(t, bicubic, ac, sh, sw), {out});
  return out;
}

Tensor bilinear_aa(const Tensor& self, L size, bool ac, D sh, D sw) {
  auto f = [&](const Tensor& in) { return at::_upsample_bilinear2d_aa(in, size, ac, sh, sw); };
  return run_aa("aten::_upsample_bilinear2d_aa", self, f(to_meta(self)), false, ac, sh, sw, f);
}

Tensor bicubic_aa(const Tensor& self, L size, bool ac, D sh, D sw) {
  auto f = [&](const Tensor& in) { return at::_upsample_bicubic2d_aa(in, size, ac, sh, sw); };
  return run_aa("aten::_upsample_bicubic2d_aa", self, f(to_meta(self)), true, ac, sh, sw, f);
}

Tensor bilinear_aa_backward(const Tensor& grad, L size, L input_size, bool ac, D sh, D sw) {
  auto f = [&](const Tensor& g) {
    return at::_upsample_bilinear2d_aa_backward(g, size, input_size, ac, sh, sw);
  };
  return run_aa("aten::_upsample_bilinear2d_aa_backward", grad, f(to_meta(grad)), false, ac, sh,
                sw, f);
}

Tensor bicubic_aa_backward(const Tensor& grad, L size, L input_size, bool ac, D sh, D sw) {
  auto f = [&](const Tensor& g) {
    return at::_upsample_bicubic2d_aa_backward(g, size, input_size, ac, sh, sw);
  };
  return run_aa("aten::_upsample_bicubic2d_aa_backward", grad, f(to_meta(grad)), true, ac, sh,
                sw, f);
}

// The .out / .grad_input forms: compute, then write into the caller's tensor.
template <typename... A>
struct OutForm {
  template <Tensor (*F)(const Tensor&, A...)>
  static Tensor& call(const Tensor& x, A... args, Tensor& out) {
    Tensor r = F(x, args...);
    at::native::resize_output(out, r.sizes());
    assign_result(out, r, "aten::_upsample_aa.out");
    return out;
  }
};

}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
#define REG(NAME, FN, OUTNAME, ...)            \
  m.impl(NAME, TORCH_FN(FN));                  \
  m.impl(OUTNAME, TORCH_FN((OutForm<__VA_ARGS__>::call<&FN>)));
  REG("_upsample_bilinear2d_aa", bilinear_aa, "_upsample_bilinear2d_aa.out", L, bool, D, D)
  REG("_upsample_bicubic2d_aa", bicubic_aa, "_upsample_bicubic2d_aa.out", L, bool, D, D)
  REG("_upsample_bilinear2d_aa_backward", bilinear_aa_backward,
      "_upsample_bilinear2d_aa_backward.grad_input", L, L, bool, D, D)
  REG("_upsample_bicubic2d_aa_backward", bicubic_aa_backward,
      "_upsample_bicubic2d_aa_backward.grad_input", L, L, bool, D, D)
#undef REG
}
