// Glue for the three ops every torch.fft function, stft and istft reach:
// _fft_c2c, _fft_r2c and _fft_c2r (their .out forms are served by
// outform.cpp); their autograd formulas call the same three. Output shapes come from PyTorch's meta
// functions; the lowering is src/ops/fft.c. float32/float64 (r2c) and
// complex64/complex128 (c2c, c2r) run natively. Other dtypes, empty tensors
// and out-of-contract c2r sizes go to CPU's kernel, which raises CPU's error
// for them (half, bfloat16, empty) or computes (a counted fallback).
#include <ATen/ATen.h>
#include <torch/library.h>

#include "glue.h"
#include "ops/fallback.h"
#include "tensor.h"

extern "C" {
#include "ops/attrs.h"
}

namespace torch_pjrt {
namespace {

using at::Tensor;

enum Kind { kC2C, kR2C, kC2R };

bool native_dtype(Kind kind, at::ScalarType t) {
  if (kind == kR2C) return t == at::kFloat || t == at::kDouble;
  return t == at::kComplexFloat || t == at::kComplexDouble;
}

// The dims wrapped; *ok is false when one repeats (left to CPU's kernel).
std::vector<int64_t> wrap_dims(const Tensor& x, at::IntArrayRef dim, bool* ok) {
  std::vector<int64_t> w;
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(x.dim(), 1)), false);
  *ok = true;
  for (int64_t d : dim) {
    int64_t v = c10::maybe_wrap_dim(d, x.dim());
    if (seen[v]) *ok = false;
    seen[v] = true;
    w.push_back(v);
  }
  return w;
}

// The attributes of a transform: head (one of tpj_attrs_fft_c2c_t, _r2c_t,
// _c2r_t, its second word set), then the dims.
template <class Head>
std::vector<int64_t> fft_attrs(Head head, int64_t norm, bool conj,
                               const std::vector<int64_t>& dims) {
  head.norm = norm;
  head.conj = conj;
  head.ndims = static_cast<int64_t>(dims.size());
  return attrs_with_tail(head, dims);
}

// Runs op on self into a tensor shaped like fn(meta self). `arg` is forward /
// onesided / last_dim_size; fn is the same aten call, on meta tensors for the
// output shape and argument checks, on CPU tensors for what stays on CPU.
template <typename Fn>
Tensor run_fft(const char* op, Kind kind, const Tensor& self, at::IntArrayRef dim,
               int64_t norm, int64_t arg, Fn fn) {
  check_supported(self, op);
  c10::Device dev = self.device();
  bool ok = native_dtype(kind, self.scalar_type()) && self.numel() > 0;
  std::vector<int64_t> dims;
  if (ok) dims = wrap_dims(self, dim, &ok);
  Tensor meta;
  if (ok) {
    meta = fn(to_meta(self));  // PyTorch's argument checks and the output shape
    // c2r reads exactly last_dim_size / 2 + 1 bins; CPU's kernels treat
    // other sizes in ways of their own.
    if (kind == kC2R) ok = !dims.empty() && arg >= 1 && self.size(dims.back()) == arg / 2 + 1;
    if (kind != kC2C && dims.empty()) ok = false;
    if (meta.numel() == 0) ok = false;
  }
  if (!ok) {
    Tensor r = fn(self.cpu());  // CPU's error for what CPU refuses
    if (r.numel() > 0) dtype_fallback(op, self.scalar_type());
    return r.to(dev);
  }
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(meta.sizes(), meta.options().device(dev));
  bool conj = self.is_conj();
  std::vector<int64_t> attrs;
  if (kind == kC2C) {
    tpj_attrs_fft_c2c_t head{};
    head.forward = arg;
    attrs = fft_attrs(head, norm, conj, dims);
  } else if (kind == kR2C) {
    tpj_attrs_fft_r2c_t head{};
    head.onesided = arg;
    attrs = fft_attrs(head, norm, conj, dims);
  } else {
    tpj_attrs_fft_c2r_t head{};
    head.last_dim_size = arg;
    attrs = fft_attrs(head, norm, conj, dims);
  }
  OpArgs a;
  // A conjugate view is read as its stored values and conjugated in the
  // program, rather than resolved through the host.
  a.tensor(conj ? self.conj() : self);
  run_op(op, dev.index(), a, attrs, {out});
  return out;
}

Tensor fft_r2c(const Tensor& self, at::IntArrayRef dim, int64_t norm, bool onesided) {
  auto f = [&](const Tensor& x) { return at::_fft_r2c(x, dim, norm, onesided); };
  return run_fft("aten::_fft_r2c", kR2C, self, dim, norm, onesided ? 1 : 0, f);
}

Tensor fft_c2r(const Tensor& self, at::IntArrayRef dim, int64_t norm, c10::SymInt last) {
  int64_t n = last.guard_int(__FILE__, __LINE__);
  auto f = [&](const Tensor& x) { return at::_fft_c2r(x, dim, norm, n); };
  return run_fft("aten::_fft_c2r", kC2R, self, dim, norm, n, f);
}

Tensor fft_c2c(const Tensor& self, c10::SymIntArrayRef sym_dim, int64_t norm, bool forward) {
  auto dim = C10_AS_INTARRAYREF_SLOW(sym_dim);
  auto f = [&](const Tensor& x) { return at::_fft_c2c(x, dim, norm, forward); };
  return run_fft("aten::_fft_c2c", kC2C, self, dim, norm, forward ? 1 : 0, f);
}

// On the Conjugate key (hfft passes a conjugate view to _fft_c2r; so do
// autograd formulas): PyTorch's conjugate fallback would resolve the view
// through clone -> _copy_from, which for tpu goes through the host. A tpu
// input goes straight to the kernel above, which conjugates in the program;
// any other device gets what the fallback does: resolve, then redispatch
// below the Conjugate key.
// A tensor subclass on tpu (the Python key: composite compliance's wrapper,
// FakeTensor-like wrappers) has no tpu storage of its own and must reach its
// __torch_dispatch__, so it takes the fallback's path too.
bool plain_tpu(c10::DispatchKeySet ks, const Tensor& self) {
  return self.device().is_privateuseone() && !ks.has(c10::DispatchKey::Python);
}

// What goes below the Conjugate key: a subclass as it is (its
// __torch_dispatch__ passes the conjugate view on to the kernel above, while
// resolving it here would clone it through the subclass and back into this
// kernel without end); any other tensor resolved, as the fallback does.
Tensor resolved(c10::DispatchKeySet ks, const Tensor& self) {
  return ks.has(c10::DispatchKey::Python) ? self : self.resolve_conj();
}

c10::DispatchKeySet below_conjugate(c10::DispatchKeySet ks) {
  return ks & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, c10::DispatchKey::Conjugate);
}

Tensor fft_c2r_conj(c10::DispatchKeySet ks, const Tensor& self, at::IntArrayRef dim,
                    int64_t norm, c10::SymInt last) {
  if (plain_tpu(ks, self)) return fft_c2r(self, dim, norm, std::move(last));
  return at::_ops::_fft_c2r::redispatch(below_conjugate(ks), resolved(ks, self), dim, norm,
                                        std::move(last));
}

Tensor fft_c2c_conj(c10::DispatchKeySet ks, const Tensor& self, c10::SymIntArrayRef dim,
                    int64_t norm, bool forward) {
  if (plain_tpu(ks, self)) return fft_c2c(self, dim, norm, forward);
  return at::_ops::_fft_c2c::redispatch(below_conjugate(ks), resolved(ks, self), dim, norm,
                                        forward);
}

}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  m.impl("_fft_r2c", TORCH_FN(fft_r2c));
  m.impl("_fft_c2r", TORCH_FN(fft_c2r));
  m.impl("_fft_c2c", TORCH_FN(fft_c2c));
}

TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  using namespace torch_pjrt;
  m.impl("_fft_c2r", TORCH_FN(fft_c2r_conj));
  m.impl("_fft_c2c", TORCH_FN(fft_c2c_conj));
}
