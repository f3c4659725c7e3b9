// Helpers that several op glue files share: running one table op into
// tensors shaped like PyTorch's meta results, CPU's errors where a meta
// function refuses a call, and small conversions. Inline, in torch_pjrt, so
// a glue file includes this and uses what it needs.
#pragma once

#include <ATen/ATen.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>

#include <initializer_list>
#include <type_traits>
#include <vector>

#include "ops/write.h"
#include "tensor.h"
#include "inplace.h"
#include "layout.h"

namespace torch_pjrt {

using at::Scalar;
using at::ScalarType;
using at::Tensor;

// A lowering's attribute struct (src/ops/attrs.h: int64 fields only) as the
// int64 attribute words run_op passes, borrowed from s.
template <class T>
inline c10::ArrayRef<int64_t> attrs_of(const T& s) {
  static_assert(std::is_standard_layout_v<T> && sizeof(T) % sizeof(int64_t) == 0,
                "an attribute struct is int64 words");
  return {reinterpret_cast<const int64_t*>(&s), sizeof(T) / sizeof(int64_t)};
}

// The attribute words of a layout with a variable-length tail (dims[]):
// head's words, then tail.
template <class T>
inline std::vector<int64_t> attrs_with_tail(const T& head, c10::ArrayRef<int64_t> tail) {
  std::vector<int64_t> w(attrs_of(head).begin(), attrs_of(head).end());
  w.insert(w.end(), tail.begin(), tail.end());
  return w;
}

// pow(Scalar, Tensor) as CPU's kernel does it: ones for a base of 1 (even
// for NaN exponents), otherwise pow with the base as a wrapped number.
inline Tensor pow_scalar(const Scalar& base, const Tensor& exp) {
  if (base.equal(1.0)) {
    ScalarType t = at::result_type(exp, base);
    return at::full(exp.sizes(), 1, exp.options().dtype(t));
  }
  return at::pow(wrap_scalar(base), exp);
}

// Runs check (PyTorch's meta function, or checks written here); when it
// refuses, runs cpu (the op on CPU copies) so that the error raised is CPU's
// own, word for word, and raises check's error if CPU's kernel did not.
template <class Check, class Cpu>
inline void checked_like_cpu(Check check, Cpu cpu) {
  try {
    check();
  } catch (const std::exception&) {
    cpu();
    throw;
  }
}

// conj_physical materialized: the stored values of a conj view, or the
// real part with the imaginary part negated.
inline Tensor conj_physical(const Tensor& self) {
  if (!self.is_complex()) return self.clone();
  if (self.is_conj()) return self.conj().clone();
  return at::complex(at::real(self), at::neg(at::imag(self)));
}

[[noreturn]] inline void no_kernel(const char* kernel, ScalarType t) {
  TORCH_CHECK_NOT_IMPLEMENTED(false, "\"", kernel, "\" not implemented for '", t, "'");
  TORCH_INTERNAL_ASSERT(false);
}

// The meta call m(); when it refuses, CPU's kernel (cpu()) raises its own
// error, or m's error is raised if CPU accepted the call.
template <class M, class C>
inline auto meta_or_cpu(M m, C cpu) -> decltype(m()) {
  try {
    return m();
  } catch (const std::exception&) {
    cpu();
    throw;
  }
}

// Runs op on the tensors ts (tpu, or CPU 0-d scalars) into new tensors
// shaped like metas. pointwise: the op is elementwise, its outputs laid out
// as TensorIterator lays them out (layout.h); else contiguous.
inline std::vector<Tensor> run_outs(const char* op, std::initializer_list<const Tensor*> ts,
                        std::initializer_list<Tensor> metas, c10::ArrayRef<int64_t> attrs,
                        bool pointwise = false) {
  for (const Tensor* t : ts) check_supported(*t, op);
  c10::Device dev = common_device(op, ts);
  c10::DeviceGuard guard(dev);
  std::vector<Tensor> outs;
  bool empty = false;
  for (const Tensor& m : metas) {
    outs.push_back(at::empty(m.sizes(), m.options().device(dev)));
    empty = empty || m.numel() == 0;
  }
  if (empty && !pointwise) return outs;
  OpArgs a;
  for (const Tensor* t : ts) add_operand(a, *t, dev.index());
  if (pointwise) run_pointwise(op, dev.index(), a, attrs, outs);
  else run_op(op, dev.index(), a, attrs, outs);
  return outs;
}

inline int64_t wrap_dim0(int64_t dim, const Tensor& self) {
  return self.dim() == 0 ? 0 : c10::maybe_wrap_dim(dim, self.dim());
}

// Runs op with the operands of `ts` (tpu tensors or CPU scalars) into a new
// tensor shaped like meta_out, after `scalars` are appended.
// in_place (an in-place form: the first of ts): when the result is shaped
// and typed like it and it is its storage's natural tensor, its storage is
// updated in place (inplace.h) and it is returned. pointwise: as run_outs'.
inline Tensor run_like(const char* op, std::initializer_list<const Tensor*> ts, const Tensor& meta_out,
                c10::ArrayRef<int64_t> attrs, std::initializer_list<const Scalar*> scalars = {},
                const Tensor* in_place = nullptr, bool pointwise = false) {
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
  if (pointwise) run_pointwise(op, dev.index(), a, attrs, {out});
  else run_op(op, dev.index(), a, attrs, {out});
  return out;
}

// Runs op on the tpu tensors ts, then the runtime scalars (rounded to
// scalar_dt, as CPU's kernels read them), into a tensor shaped like meta.
// pointwise: as run_outs'.
inline Tensor run_meta(const char* op, std::initializer_list<const Tensor*> ts, const Tensor& meta,
               c10::ArrayRef<int64_t> attrs, std::initializer_list<Scalar> scalars = {},
               at::ScalarType scalar_dt = at::kFloat, bool pointwise = false) {
  for (const Tensor* t : ts) check_supported(*t, op);
  c10::Device dev = common_device(op, ts);
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(meta.sizes(), meta.options().device(dev));
  OpArgs a;
  for (const Tensor* t : ts) add_operand(a, *t, dev.index());
  for (const Scalar& s : scalars) a.scalar(s, scalar_dt, dev.index());
  if (pointwise) run_pointwise(op, dev.index(), a, attrs, {out});
  else run_op(op, dev.index(), a, attrs, {out});
  return out;
}

inline int64_t acc_dtype(at::ScalarType t) { return to_tpj_dtype(accumulator(t)); }
// t on dev: a CPU operand (an index, a target) is copied there, as CUDA
// accepts CPU indices; one on another tpu device is refused, as CUDA refuses
// one on another GPU (copying it would hide a user's device mix-up).
inline Tensor on_device(const Tensor& t, c10::Device dev) {
  if (t.device() == dev) return t;
  TORCH_CHECK(t.device().is_cpu(), "Expected all tensors to be on the same device, but found at "
              "least two devices, ", dev, " and ", t.device(), "!");
  return t.to(dev);
}

inline Tensor& put_out(Tensor& out, const Tensor& result, const char* op) {
  at::native::resize_output(out, result.sizes());
  assign_result(out, result, op);
  return out;
}

// A defined optional tensor; its meta tensor, or an undefined one.
inline bool has_tensor(const std::optional<Tensor>& t) { return t && t->defined(); }
inline Tensor meta_or_undefined(const std::optional<Tensor>& t) { return has_tensor(t) ? to_meta(*t) : Tensor(); }

// Every tensor operand on one tpu device (PyTorch's message otherwise).
inline c10::Device device_of(const char* op, const std::vector<const Tensor*>& ts) {
  for (const Tensor* t : ts) check_supported(*t, op);
  c10::Device dev = ts[0]->device();
  for (const Tensor* t : ts)
    TORCH_CHECK(t->device() == dev, "Expected all tensors to be on the same device, but found at "
                "least two devices, ", dev, " and ", t->device(), "!");
  return dev;
}

inline Tensor empty_like_meta(const Tensor& meta, c10::Device dev) {
  return at::empty(meta.sizes(), meta.options().device(dev));
}

// XLA's convolution and pooling are for floating types.
inline bool native_dtype(at::ScalarType t) { return c10::isFloatingType(t); }

inline void check_devices(const char* op, std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts) check_supported(*t, op);
  common_device(op, ts);
}

}  // namespace torch_pjrt
