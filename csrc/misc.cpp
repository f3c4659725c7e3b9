// Kernel glue for the pointwise stragglers of src/ops/misc.c (copysign,
// signbit, fmax/fmin, heaviside, logaddexp/logaddexp2, xlogy, angle,
// complex, polar) and for small ops PyTorch composes from ops that are
// already native here (rsub, equal, nansum, count_nonzero over dims, trace,
// vdot, aminmax, renorm, addbmm, clamp with tensor bounds, fill_ with a
// tensor value). The composites call those native ops through the
// dispatcher, so they compute exactly what the parts compute; argument
// checks and messages are CPU's (from meta functions where PyTorch has one).
// Cases with no exact lowering (complex logaddexp) run CPU's kernel,
// counted by dtype_fallback.
#include <ATen/MetaFunctions.h>
#include <ATen/ExpandUtils.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <string>

#include "common.h"
#include "storage_dtypes.h"

namespace torch_pjrt {
namespace {

using at::Scalar;
using at::ScalarType;
using at::Tensor;

ScalarType float_default() { return c10::typeMetaToScalarType(c10::get_default_dtype()); }
bool is_int(ScalarType t) { return c10::isIntegralType(t, /*includeBool=*/true); }

[[noreturn]] void no_kernel(const char* kernel, ScalarType t) {
  TORCH_CHECK_NOT_IMPLEMENTED(false, "\"", kernel, "\" not implemented for '", t, "'");
  TORCH_INTERNAL_ASSERT(false);
}

// Runs check (PyTorch's meta function, or checks written here); when it
// refuses, runs cpu (the op on CPU copies) so that the error raised is CPU's
// own, word for word, and raises check's error if CPU's kernel did not.
template <class Check, class Cpu>
void checked_like_cpu(Check check, Cpu cpu) {
  try {
    check();
  } catch (const std::exception&) {
    cpu();
    throw;
  }
}

// One misc.c op over the broadcast of its operands: attrs {compute dtype}.
Tensor pointwise(const char* op, std::initializer_list<const Tensor*> ts, ScalarType compute,
                 ScalarType result) {
  std::vector<int64_t> sizes = (*ts.begin())->sizes().vec();
  for (const Tensor* t : ts) {
    check_supported(*t, op);
    sizes = at::infer_size(sizes, t->sizes());
  }
  c10::Device dev = common_device(op, ts);
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(sizes, at::TensorOptions().dtype(result).device(dev));
  if (out.numel() == 0) return out;
  OpArgs a;
  for (const Tensor* t : ts) add_operand(a, *t, dev.index());
  run_op(op, dev.index(), a, {to_tpj_dtype(compute)}, {out});
  return out;
}

// ---- pointwise --------------------------------------------------------------

Tensor copysign(const Tensor& a, const Tensor& b) {
  ScalarType t = at::result_type(a, b);
  if (c10::isComplexType(t)) no_kernel("copysign_cpu", t);
  if (is_int(t)) t = float_default();
  return pointwise("aten::copysign.Tensor", {&a, &b}, t, t);
}

Tensor signbit(const Tensor& x) {
  TORCH_CHECK_NOT_IMPLEMENTED(!x.is_complex(), "signbit is not implemented for complex tensors.");
  return pointwise("aten::signbit", {&x}, x.scalar_type(), at::kBool);
}

Tensor fminmax(const char* op, const Tensor& a, const Tensor& b) {
  ScalarType t = at::result_type(a, b);
  TORCH_CHECK(!c10::isComplexType(t), std::string(op).substr(6), " not implemented for complex tensors.");
  return pointwise(op, {&a, &b}, t, t);
}

Tensor heaviside(const Tensor& x, const Tensor& v) {
  TORCH_CHECK(!x.is_complex() && !v.is_complex(),
              "heaviside is not yet implemented for complex tensors.");
  TORCH_CHECK(x.scalar_type() == v.scalar_type(),
              "heaviside is not yet implemented for tensors with different dtypes.");
  ScalarType t = x.scalar_type();
  if (!c10::isFloatingType(t))
    return pointwise("aten::heaviside", {&x, &v}, t == at::kBool ? at::kByte : t, t);
  // x's bits (an integer view): misc.c tests them, not a flushed float.
  ScalarType it = t == at::kDouble ? at::kLong : t == at::kFloat ? at::kInt : at::kShort;
  Tensor bits = x.view(it);
  return pointwise("aten::heaviside", {&bits, &v}, t, t);
}

Tensor logaddexp(const char* op, const char* kernel, const Tensor& a, const Tensor& b) {
  ScalarType t = at::result_type(a, b);
  if (is_int(t)) no_kernel(kernel, t);
  if (c10::isComplexType(t)) {
    if (std::string(op) == "aten::logaddexp2") no_kernel(kernel, t);
    common_device(op, {&a, &b});
    dtype_fallback(op, t);  // no complex lowering: CPU's kernel
    return at::logaddexp(a.cpu(), b.cpu()).to(a.device().is_cpu() ? b.device() : a.device());
  }
  return pointwise(op, {&a, &b}, accumulator(t), t);
}

Tensor xlogy(const Tensor& a, const Tensor& b) {
  ScalarType t = at::result_type(a, b);
  if (c10::isComplexType(t)) no_kernel("xlogy_cpu", t);
  if (is_int(t)) t = float_default();
  return pointwise("aten::xlogy.Tensor", {&a, &b}, accumulator(t), t);
}

Tensor angle(const Tensor& x) {
  ScalarType t = x.scalar_type();
  if (c10::isComplexType(t)) return pointwise("aten::angle", {&x}, t, c10::toRealValueType(t));
  ScalarType out = is_int(t) ? float_default() : t;
  return pointwise("aten::angle", {&x}, accumulator(out), out);
}

// complex(real, imag) and polar(abs, angle): CPU's checks, then the lowering;
// half inputs would give complex32, which has no tpu dtype.
Tensor to_complex(const char* op, const Tensor& a, const Tensor& b) {
  ScalarType ta = a.scalar_type(), tb = b.scalar_type();
  auto fl = [](ScalarType t) { return t == at::kHalf || t == at::kFloat || t == at::kDouble; };
  TORCH_CHECK(fl(ta) && fl(tb), "Expected both inputs to be Half, Float or Double tensors but got ",
              ta, " and ", tb);
  TORCH_CHECK(ta == tb, "Expected object of scalar type ", ta, " but got scalar type ", tb,
              " for second argument");
  if (ta == at::kHalf && std::string(op) == "aten::polar") no_kernel("polar_cpu", ta);
  if (ta == at::kHalf) {
    // complex32 is storage only on tpu (storage_dtypes.cpp): CPU's kernel.
    c10::Device dev = common_device(op, {&a, &b});
    dtype_fallback(op, at::kComplexHalf);
    return at::complex(a.to(at::kCPU), b.to(at::kCPU)).to(dev);
  }
  return pointwise(op, {&a, &b}, ta, c10::toComplexType(ta));
}

// ---- composites of native ops ----------------------------------------------

Tensor rsub(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return at::sub(other, self, alpha);
}

bool equal(const Tensor& a, const Tensor& b) {
  common_device("aten::equal", {&a, &b});
  if (!a.sizes().equals(b.sizes())) return false;
  if (a.numel() == 0) return true;
  return at::eq(a, b).all().item<bool>();
}

Tensor nansum(const Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
              std::optional<ScalarType> dtype) {
  TORCH_CHECK(!c10::isComplexType(self.scalar_type()),
              "nansum on CPU does not support complex inputs");
  Tensor x = self.is_floating_point() ? at::masked_fill(self, at::isnan(self), 0) : self;
  return at::sum(x, dim, keepdim, dtype);
}

Tensor count_nonzero_dims(const Tensor& self, at::IntArrayRef dims) {
  return at::sum(at::ne(self, 0), dims, false, at::kLong);
}

Tensor trace(const Tensor& self) {
  TORCH_CHECK(self.dim() == 2, "trace: expected a matrix, but got tensor with dim ", self.dim());
  return at::sum(at::diagonal(self));
}

// conj_physical materialized: the stored values of a conj view, or the
// real part with the imaginary part negated.
Tensor conj_physical(const Tensor& self) {
  if (!self.is_complex()) return self.clone();
  if (self.is_conj()) return self.conj().clone();
  return at::complex(at::real(self), at::neg(at::imag(self)));
}

Tensor vdot(const Tensor& a, const Tensor& b) {
  TORCH_CHECK(a.dim() == 1 && b.dim() == 1, "1D tensors expected, but got ", a.dim(), "D and ",
              b.dim(), "D tensors");
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "dot : expected both vectors to have same dtype, "
              "but found ", a.scalar_type(), " and ", b.scalar_type());
  TORCH_CHECK(a.numel() == b.numel(), "inconsistent tensor size, expected tensor [", a.numel(),
              "] and src [", b.numel(), "] to have the same number of elements, but got ",
              a.numel(), " and ", b.numel(), " elements respectively");
  common_device("aten::vdot", {&a, &b});
  ScalarType t = a.scalar_type();
  if (c10::isComplexType(t)) return at::sum(at::mul(torch_pjrt::conj_physical(a), b));  // conj(a) . b
  TORCH_CHECK_NOT_IMPLEMENTED(t != at::kBool, "\"dot\" not implemented for 'Bool'");
  // Products and their sum in the accumulator (float for half), as CPU's dot.
  ScalarType acc = accumulator(t);
  return at::sum(at::mul(a.to(acc), b.to(acc)), at::OptionalIntArrayRef{}, false, acc).to(t);
}

std::tuple<Tensor, Tensor> aminmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  std::tuple<Tensor, Tensor> m;
  checked_like_cpu([&] { m = at::meta::aminmax(to_meta(self), dim, keepdim); },
                   [&] { at::aminmax(self.cpu(), dim, keepdim); });
  Tensor lo, hi;
  if (dim) {
    lo = at::amin(self, {*dim}, keepdim);
    hi = at::amax(self, {*dim}, keepdim);
  } else {
    lo = at::amin(self).reshape(std::get<0>(m).sizes());
    hi = at::amax(self).reshape(std::get<1>(m).sizes());
  }
  return {lo, hi};
}

// renorm as CPU computes it: each slice's p-norm (in the accumulator), the
// scale maxnorm / (norm + 1e-7) where the norm is over maxnorm, else 1.
Tensor renorm(const Tensor& self, const Scalar& p, int64_t dim, const Scalar& maxnorm) {
  checked_like_cpu([&] { at::meta::renorm(to_meta(self), p, dim, maxnorm); },
                   [&] { at::renorm(self.cpu(), p, dim, maxnorm); });
  int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  std::vector<int64_t> rdims;
  for (int64_t i = 0; i < self.dim(); i++)
    if (i != d) rdims.push_back(i);
  ScalarType t = self.scalar_type();
  ScalarType acc = accumulator(t);
  Tensor norm = at::linalg_vector_norm(self, p, rdims, true,
                                       acc != t ? std::optional<ScalarType>(acc) : std::nullopt);
  Tensor factor = at::where(at::gt(norm, maxnorm), at::div(wrap_scalar(maxnorm), at::add(norm, 1e-7)),
                            wrap_scalar(1.0));
  return at::mul(self, factor.to(t));
}

Tensor addbmm(const Tensor& self, const Tensor& b1, const Tensor& b2, const Scalar& beta,
              const Scalar& alpha) {
  checked_like_cpu(
      [&] {
        TORCH_CHECK(b1.dim() == 3 && b2.dim() == 3 && b1.size(0) == b2.size(0) &&
                        b1.size(2) == b2.size(1),
                    "addbmm: bad shapes");
        self.expand({b1.size(1), b2.size(2)});
      },
      [&] { at::addbmm(self.cpu(), b1.cpu(), b2.cpu(), beta, alpha); });
  int64_t n = b1.size(1), k = b1.size(0) * b1.size(2), p = b2.size(2);
  // sum_b b1[b] @ b2[b] is one matrix product over the joined (b, m) dim.
  Tensor x = b1.transpose(0, 1).reshape({n, k});
  Tensor y = b2.reshape({k, p});
  return at::addmm(self.expand({n, p}), x, y, beta, alpha);
}

Tensor clamp_tensor(const Tensor& self, const std::optional<Tensor>& lo,
                    const std::optional<Tensor>& hi) {
  std::optional<Tensor> mlo, mhi;
  if (lo && lo->defined()) mlo = to_meta(*lo);
  if (hi && hi->defined()) mhi = to_meta(*hi);
  ScalarType t;
  checked_like_cpu([&] { t = at::meta::clamp(to_meta(self), mlo, mhi).scalar_type(); },
                   [&] {
                     at::clamp(self.cpu(), lo ? std::optional<Tensor>(lo->cpu()) : std::nullopt,
                               hi ? std::optional<Tensor>(hi->cpu()) : std::nullopt);
                   });
  // TensorIterator computes in the common dtype: cast first, then the
  // NaN-propagating maximum/minimum (CPU's clamp kernel returns NaN for a
  // NaN bound or input).
  Tensor r = self.to(t);
  if (mlo) r = at::maximum(r, lo->to(t));
  if (mhi) r = at::minimum(r, hi->to(t));
  return r;
}

// index_reduce is scatter_reduce with the 1-D index spread along dim over
// source's shape (same reductions, include_self and integer mean rounding).
Tensor index_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                    c10::string_view reduce, bool include_self) {
  checked_like_cpu(
      [&] {
        at::meta::index_reduce(to_meta(self), dim, to_meta(index), to_meta(source), reduce,
                         include_self);
        TORCH_CHECK(reduce == "prod" || reduce == "mean" || reduce == "amax" || reduce == "amin",
                    "index_reduce: bad reduce");
        TORCH_CHECK(index.dim() <= 1 && index.numel() == (source.dim() == 0 ? 1 :
                        source.size(c10::maybe_wrap_dim(dim, source.dim()))),
                    "index_reduce: bad index");
      },
      [&] {
        at::index_reduce(self.cpu(), dim, index.cpu(), source.cpu(), reduce, include_self);
      });
  Tensor s = self.dim() == 0 ? self.reshape({1}) : self;
  Tensor src = source.dim() == 0 ? source.reshape({1}) : source;
  int64_t d = c10::maybe_wrap_dim(dim, s.dim());
  std::vector<int64_t> shape(src.dim(), 1);
  shape[d] = index.numel();
  Tensor idx = index.reshape(shape).expand(src.sizes());
  return at::scatter_reduce(s, d, idx, src, reduce, include_self).view(self.sizes());
}

// pow(Scalar, Tensor) as CPU's kernel does it: ones for a base of 1 (even
// for NaN exponents), otherwise pow with the base as a wrapped number.
Tensor pow_scalar(const Scalar& base, const Tensor& exp) {
  if (base.equal(1.0)) {
    ScalarType t = at::result_type(exp, base);
    return at::full(exp.sizes(), 1, exp.options().dtype(t));
  }
  return at::pow(wrap_scalar(base), exp);
}

// cummax/cummin's helpers fill values and indices (already sized by
// cummax_out) from one scan on the device.
void cummaxmin_helper(const char* op, const Tensor& self, Tensor& values, Tensor& indices,
                      int64_t dim, bool is_max) {
  check_supported(self, op);
  if (c10::isComplexType(self.scalar_type())) no_kernel(is_max ? "cummax_cpu" : "cummin_cpu",
                                                         self.scalar_type());
  int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  c10::DeviceGuard guard(self.device());
  Tensor v = at::empty(self.sizes(), self.options());
  Tensor i = at::empty(self.sizes(), self.options().dtype(at::kLong));
  if (self.numel() > 0) {
    OpArgs a;
    a.tensor(self);
    run_op(op, self.device().index(), a, {d, is_max ? 1 : 0}, {v, i});
  }
  assign_result(values, v, op);
  assign_result(indices, i, op);
}

// norm(p, dim) is linalg_vector_norm, as CPU's norm kernel computes it; the
// meta function first gives norm's own checks (float or complex input).
Tensor norm_dim(const Tensor& self, const std::optional<Scalar>& p, at::IntArrayRef dim,
                bool keepdim, std::optional<ScalarType> dtype) {
  auto norm_of = [&](const Tensor& x) {
    if (dtype) at::norm(x, p, dim, keepdim, *dtype);
    else at::norm(x, p, dim, keepdim);
  };
  checked_like_cpu([&] { norm_of(to_meta(self)); }, [&] { norm_of(self.cpu()); });
  return at::linalg_vector_norm(self, p.value_or(2.0), dim, keepdim, dtype);
}

// put_: self's flat elements at index (negative ones wrap) become source's
// (or gain them, with accumulate). Indices are checked on the host, since
// XLA would drop an out-of-range write; repeated indices without accumulate
// run CPU's kernel, where the last write wins (a scatter picks any).
Tensor& put_(Tensor& self, const Tensor& index, const Tensor& source, bool accumulate) {
  const char* op = "aten::put_";
  auto cpu_put = [&] {
    Tensor c = self.cpu();
    c.put_(index.cpu(), source.cpu(), accumulate);
    return c;
  };
  int64_t n = self.numel(), lo = 0, hi = -1;
  bool any = index_bounds(index, &lo, &hi);
  checked_like_cpu(
      [&] {
        TORCH_CHECK(index.scalar_type() == at::kLong && source.scalar_type() == self.scalar_type() &&
                        index.numel() == source.numel() && (!any || (lo >= -n && hi < n)),
                    "put_: bad arguments");
      },
      [&] { cpu_put(); });
  if (!any) return self;
  Tensor flat = index.reshape({-1});
  flat = at::where(at::lt(flat, 0), at::add(flat, n), flat);
  if (!accumulate && std::get<0>(at::_unique(flat.cpu())).numel() != flat.numel()) {
    dtype_fallback(op, self.scalar_type());
    assign_result(self, cpu_put().to(self.device()), op);
    return self;
  }
  Tensor r = at::index_put(self.reshape({-1}), {std::optional<Tensor>(flat)}, source.reshape({-1}),
                           accumulate);
  assign_result(self, r.view(self.sizes()), op);
  return self;
}

// logspace into out: base ** linspace(start, end, steps), both native, for
// floating outs (CPU's kernel also takes the exponent in out's dtype); other
// dtypes run CPU's kernel.
Tensor& logspace_out(const Scalar& start, const Scalar& end, int64_t steps, double base,
                     Tensor& out) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  ScalarType t = out.scalar_type();
  if (!c10::isFloatingType(t)) {
    dtype_fallback("aten::logspace.out", t);
    Tensor r = at::logspace(start, end, steps, base, out.options().device(at::kCPU));
    return out_result(out, r.to(out.device()), "aten::logspace.out");
  }
  Tensor lin = at::linspace(start, end, steps, out.options());
  return out_result(out, pow_scalar(base, lin), "aten::logspace.out");
}

// repeat_interleave(repeats): i repeated repeats[i] times. The size is data
// dependent: the host reads repeats (as CPU's kernel does); the indices are
// computed on the device: position p gets the number of running totals <= p.
Tensor repeat_interleave_tensor(const Tensor& repeats, std::optional<c10::SymInt> output_size) {
  auto cpu = [&] { at::repeat_interleave_symint(repeats.cpu(), output_size); };
  ScalarType t = repeats.scalar_type();
  Tensor host;
  checked_like_cpu(
      [&] {
        TORCH_CHECK(repeats.dim() == 1 && (t == at::kLong || t == at::kInt), "bad repeats");
        host = repeats.to(at::kCPU, at::kLong);
        TORCH_CHECK(host.numel() == 0 || host.min().item<int64_t>() >= 0, "negative repeats");
        TORCH_CHECK(!output_size || output_size->expect_int() == host.sum().item<int64_t>(),
                    "size mismatch");
      },
      cpu);
  int64_t total = host.numel() == 0 ? 0 : host.sum().item<int64_t>();
  if (total == 0 || repeats.numel() == 0) return at::empty({total}, repeats.options());
  Tensor csum = at::cumsum(repeats, 0, at::kLong);
  Tensor pos = at::arange(total, repeats.options().dtype(at::kLong));
  return at::sum(at::le(csum.unsqueeze(0), pos.unsqueeze(1)), {1}, false, t);
}

// searchsorted runs CPU's binary search itself, every value at once: each
// step gathers the sequence at the midpoints and narrows [start, end) with
// CPU's tests (!(s >= v) for the left side, !(s > v) for the right), so the
// answer is CPU's even for NaNs in the sequence or the values. The sorter
// permutes the sequence first. Checks and errors come from PyTorch's meta
// function, and from CPU's kernel where that refuses.
Tensor searchsorted(const Tensor& seq, const Tensor& values, bool out_int32, bool right,
                    std::optional<c10::string_view> side, const std::optional<Tensor>& sorter) {
  bool has_sorter = sorter && sorter->defined();
  Tensor meta;
  checked_like_cpu(
      [&] {
        meta = at::searchsorted(to_meta(seq), to_meta(values), out_int32, right, side,
                                has_sorter ? std::optional<Tensor>(to_meta(*sorter)) : std::nullopt);
      },
      [&] {
        at::searchsorted(seq.cpu(), values.cpu(), out_int32, right, side,
                         has_sorter ? std::optional<Tensor>(sorter->cpu()) : std::nullopt);
      });
  bool upper = right || (side && *side == "right");
  // CPU's kernel compares in the common dtype (a Python number is weak).
  ScalarType common = at::result_type(seq, values);
  ScalarType rt = out_int32 ? at::kInt : at::kLong;
  int64_t n = seq.dim() == 0 ? 1 : seq.size(-1);
  if (meta.numel() == 0 || n == 0)
    return at::zeros(meta.sizes(), values.options().dtype(rt).device(seq.device()));
  Tensor s = seq.dim() == 0 ? seq.reshape({1}) : seq;
  if (has_sorter) s = at::take_along_dim(s, *sorter, -1);
  s = s.to(common);
  // rows: one per leading index of seq (one row for a 1-D seq)
  Tensor v = values.to(seq.device(), common);
  int64_t rows = s.numel() / n;
  s = s.reshape({rows, n});
  v = v.reshape({rows, -1});
  Tensor start = at::zeros(v.sizes(), v.options().dtype(at::kLong));
  Tensor end = at::full(v.sizes(), n, v.options().dtype(at::kLong));
  for (int64_t span = n; span > 0; span /= 2) {
    for (int rep = 0; rep < (span == 1 ? 2 : 1); rep++) {
      Tensor active = at::lt(start, end);
      Tensor mid = at::add(start, at::floor_divide(at::sub(end, start), 2));
      Tensor at_mid = at::gather(s, 1, at::clamp_max(mid, n - 1));
      Tensor go_right = at::logical_not(upper ? at::gt(at_mid, v) : at::ge(at_mid, v));
      start = at::where(at::logical_and(active, go_right), at::add(mid, 1), start);
      end = at::where(at::logical_and(active, at::logical_not(go_right)), mid, end);
    }
  }
  return start.to(rt).view(meta.sizes());
}

// frexp on the bits (misc.c): x goes in as an integer view and the
// mantissa comes back as one, viewed as x's dtype.
std::tuple<Tensor, Tensor> frexp(const Tensor& self) {
  const char* op = "aten::frexp.Tensor";
  check_supported(self, op);
  ScalarType t = self.scalar_type();
  TORCH_CHECK(c10::isFloatingType(t), "torch.frexp() only supports floating-point dtypes");
  ScalarType it = t == at::kDouble ? at::kLong : t == at::kFloat ? at::kInt : at::kShort;
  c10::DeviceGuard guard(self.device());
  Tensor man = at::empty(self.sizes(), self.options().dtype(it));
  Tensor ex = at::empty(self.sizes(), self.options().dtype(at::kInt));
  if (self.numel() > 0) {
    OpArgs a;
    a.tensor(self.view(it));
    run_op(op, self.device().index(), a, {to_tpj_dtype(t)}, {man, ex});
  }
  return {man.view(t), ex};
}

Tensor& fill_tensor(Tensor& self, const Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ",
              value.dim(), " dimensions.");
  if (value.device().is_cpu()) return self.fill_(value.item());
  if (self.numel() == 0) return self;
  write_view(self, value);
  return self;
}

}  // namespace
}  // namespace torch_pjrt

namespace {
namespace tp = torch_pjrt;
using at::Scalar;
using at::Tensor;

Tensor fmax_fn(const Tensor& a, const Tensor& b) { return tp::fminmax("aten::fmax", a, b); }
Tensor fmin_fn(const Tensor& a, const Tensor& b) { return tp::fminmax("aten::fmin", a, b); }
Tensor logaddexp_fn(const Tensor& a, const Tensor& b) {
  return tp::logaddexp("aten::logaddexp", "logaddexp_cpu", a, b);
}
Tensor logaddexp2_fn(const Tensor& a, const Tensor& b) {
  return tp::logaddexp("aten::logaddexp2", "logaddexp2_cpu", a, b);
}
Tensor complex_fn(const Tensor& a, const Tensor& b) { return tp::to_complex("aten::complex", a, b); }
Tensor polar_fn(const Tensor& a, const Tensor& b) { return tp::to_complex("aten::polar", a, b); }

// in-place: the functional result written back (castable, same shape)
template <Tensor (*F)(const Tensor&, const Tensor&)>
Tensor& inplace(Tensor& self, const Tensor& other, const char* op) {
  tp::check_no_overlap(self, {&other});
  tp::assign_result(self, F(self, other), op);
  return self;
}

}  // namespace

// out= forms (copysign.out, fmax.out, xlogy.OutTensor, ...) need no entry:
// outform.cpp serves them from these functional kernels.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("copysign.Tensor", TORCH_FN(tp::copysign));
  m.impl("copysign.Scalar", [](const Tensor& a, const Scalar& b) {
    return tp::copysign(a, tp::wrap_scalar(b));
  });
  m.impl("copysign_.Tensor", [](Tensor& a, const Tensor& b) -> Tensor& {
    return inplace<tp::copysign>(a, b, "aten::copysign_");
  });
  m.impl("copysign_.Scalar", [](Tensor& a, const Scalar& b) -> Tensor& {
    tp::assign_result(a, tp::copysign(a, tp::wrap_scalar(b)), "aten::copysign_");
    return a;
  });
  m.impl("signbit", TORCH_FN(tp::signbit));
  m.impl("fmax", TORCH_FN(fmax_fn));
  m.impl("fmin", TORCH_FN(fmin_fn));
  m.impl("heaviside", TORCH_FN(tp::heaviside));
  m.impl("heaviside_", [](Tensor& a, const Tensor& b) -> Tensor& {
    return inplace<tp::heaviside>(a, b, "aten::heaviside_");
  });
  m.impl("logaddexp", TORCH_FN(logaddexp_fn));
  m.impl("logaddexp2", TORCH_FN(logaddexp2_fn));
  m.impl("xlogy.Tensor", TORCH_FN(tp::xlogy));
  m.impl("xlogy.Scalar_Other", [](const Tensor& a, const Scalar& b) {
    return tp::xlogy(a, tp::wrap_scalar(b));
  });
  m.impl("xlogy.Scalar_Self", [](const Scalar& a, const Tensor& b) {
    return tp::xlogy(tp::wrap_scalar(a), b);
  });
  m.impl("xlogy_.Tensor", [](Tensor& a, const Tensor& b) -> Tensor& {
    return inplace<tp::xlogy>(a, b, "aten::xlogy_");
  });
  m.impl("xlogy_.Scalar_Other", [](Tensor& a, const Scalar& b) -> Tensor& {
    tp::assign_result(a, tp::xlogy(a, tp::wrap_scalar(b)), "aten::xlogy_");
    return a;
  });
  m.impl("angle", TORCH_FN(tp::angle));
  m.impl("complex", TORCH_FN(complex_fn));
  m.impl("polar", TORCH_FN(polar_fn));

  m.impl("rsub.Tensor", TORCH_FN(tp::rsub));
  m.impl("equal", TORCH_FN(tp::equal));
  m.impl("nansum", TORCH_FN(tp::nansum));
  m.impl("count_nonzero.dim_IntList", TORCH_FN(tp::count_nonzero_dims));
  m.impl("trace", TORCH_FN(tp::trace));
  m.impl("vdot", TORCH_FN(tp::vdot));
  m.impl("aminmax", TORCH_FN(tp::aminmax));
  m.impl("renorm", TORCH_FN(tp::renorm));
  m.impl("renorm_", [](Tensor& s, const Scalar& p, int64_t dim, const Scalar& maxnorm) -> Tensor& {
    tp::assign_result(s, tp::renorm(s, p, dim, maxnorm), "aten::renorm_");
    return s;
  });
  m.impl("addbmm", TORCH_FN(tp::addbmm));
  m.impl("addbmm_", [](Tensor& s, const Tensor& b1, const Tensor& b2, const Scalar& beta,
                       const Scalar& alpha) -> Tensor& {
    tp::assign_result(s, tp::addbmm(s, b1, b2, beta, alpha), "aten::addbmm_");
    return s;
  });
  m.impl("clamp.Tensor", TORCH_FN(tp::clamp_tensor));
  m.impl("clamp_min.Tensor", [](const Tensor& s, const Tensor& lo) {
    return tp::clamp_tensor(s, lo, std::nullopt);
  });
  m.impl("clamp_max.Tensor", [](const Tensor& s, const Tensor& hi) {
    return tp::clamp_tensor(s, std::nullopt, hi);
  });
  m.impl("fill_.Tensor", TORCH_FN(tp::fill_tensor));
  m.impl("index_reduce", TORCH_FN(tp::index_reduce));
  m.impl("index_reduce_", [](Tensor& s, int64_t dim, const Tensor& index, const Tensor& src,
                             c10::string_view reduce, bool include_self) -> Tensor& {
    tp::check_no_overlap(s, {&index, &src});
    tp::assign_result(s, tp::index_reduce(s, dim, index, src, reduce, include_self),
                      "aten::index_reduce_");
    return s;
  });
  m.impl("pow.Scalar", TORCH_FN(tp::pow_scalar));
  m.impl("put_", TORCH_FN(tp::put_));
  m.impl("frexp.Tensor", TORCH_FN(tp::frexp));
  m.impl("_conj_physical", TORCH_FN(tp::conj_physical));
  m.impl("conj_physical.out", [](const Tensor& s, Tensor& out) -> Tensor& {
    return tp::out_result(out, tp::conj_physical(s), "aten::conj_physical.out");
  });
  m.impl("searchsorted.Tensor", TORCH_FN(tp::searchsorted));
  m.impl("searchsorted.Scalar", [](const Tensor& seq, const Scalar& v, bool out_int32, bool right,
                                   std::optional<c10::string_view> side,
                                   const std::optional<Tensor>& sorter) {
    return tp::searchsorted(seq, tp::wrap_scalar(v), out_int32, right, side, sorter);
  });
  m.impl("bucketize.Tensor", [](const Tensor& v, const Tensor& boundaries, bool out_int32,
                                bool right) {
    TORCH_CHECK(boundaries.dim() == 1, "boundaries tensor must be 1 dimension, but got dim(",
                boundaries.dim(), ")");
    return tp::searchsorted(boundaries, v, out_int32, right, std::nullopt, std::nullopt);
  });
  m.impl("repeat_interleave.Tensor", TORCH_FN(tp::repeat_interleave_tensor));
  // sgn's and other backward formulas ask for a "zero tensor"; a plain
  // zeros tensor holds the same values (no ZeroTensor key on tpu).
  m.impl("_efficientzerotensor", [](c10::SymIntArrayRef size, std::optional<at::ScalarType> dtype,
                                    std::optional<at::Layout> layout,
                                    std::optional<at::Device> device, std::optional<bool> pin) {
    return at::zeros_symint(size, at::TensorOptions().dtype(dtype).layout(layout).device(device));
  });
  m.impl("logspace.out", TORCH_FN(tp::logspace_out));
  m.impl("norm.ScalarOpt_dim", [](const Tensor& s, const std::optional<Scalar>& p,
                                  at::IntArrayRef dim, bool keepdim) {
    return tp::norm_dim(s, p, dim, keepdim, std::nullopt);
  });
  m.impl("norm.ScalarOpt_dim_dtype", [](const Tensor& s, const std::optional<Scalar>& p,
                                        at::IntArrayRef dim, bool keepdim, at::ScalarType dt) {
    return tp::norm_dim(s, p, dim, keepdim, dt);
  });
  m.impl("_cummax_helper", [](const Tensor& s, Tensor& v, Tensor& i, int64_t dim) {
    tp::cummaxmin_helper("aten::_cummax_helper", s, v, i, dim, true);
  });
  m.impl("_cummin_helper", [](const Tensor& s, Tensor& v, Tensor& i, int64_t dim) {
    tp::cummaxmin_helper("aten::_cummin_helper", s, v, i, dim, false);
  });
}
