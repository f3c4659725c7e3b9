// Kernel glue for reductions (src/ops/reduction.c, reduction_stats.c): sum,
// mean, prod, amax/amin, any/all (descriptor rows in src/ops/reduction.c), nansum,
// aminmax, count_nonzero over dims, equal, norm and renorm, var/std (and
// _mean), linalg_vector_norm, logsumexp, histc, bincount and
// segment_reduce. Output shape and dtype, and every argument check, come
// from running the op on meta tensors.
#include <ATen/MetaFunctions.h>
#include <ATen/WrapDimUtils.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>
#include <algorithm>
#include "ops/copy.h"
#include "ops/fallback.h"
#include "ops/write.h"
#include "tensor.h"

extern "C" {
#include "ops/attrs.h"
}
#include "glue.h"
#include <ATen/ExpandUtils.h>
#include <string>
#include "storage_dtypes.h"
#include <ATen/native/Resize.h>
#include <cmath>
#include <limits>
#include <ATen/ops/_grouped_mm_compositeexplicitautograd_dispatch.h>

namespace torch_pjrt {
namespace {

using at::Scalar;
using at::ScalarType;
using at::Tensor;

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
}  // namespace
}  // namespace torch_pjrt
namespace {
namespace tp = torch_pjrt;
using at::Scalar;
using at::Tensor;
}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("equal", TORCH_FN(tp::equal));
  m.impl("nansum", TORCH_FN(tp::nansum));
  m.impl("count_nonzero.dim_IntList", TORCH_FN(tp::count_nonzero_dims));
  m.impl("aminmax", TORCH_FN(tp::aminmax));
  m.impl("renorm", TORCH_FN(tp::renorm));
  m.impl("renorm_", [](Tensor& s, const Scalar& p, int64_t dim, const Scalar& maxnorm) -> Tensor& {
    tp::assign_result(s, tp::renorm(s, p, dim, maxnorm), "aten::renorm_");
    return s;
  });
  m.impl("norm.ScalarOpt_dim", [](const Tensor& s, const std::optional<Scalar>& p,
                                  at::IntArrayRef dim, bool keepdim) {
    return tp::norm_dim(s, p, dim, keepdim, std::nullopt);
  });
  m.impl("norm.ScalarOpt_dim_dtype", [](const Tensor& s, const std::optional<Scalar>& p,
                                        at::IntArrayRef dim, bool keepdim, at::ScalarType dt) {
    return tp::norm_dim(s, p, dim, keepdim, dt);
  });
}
namespace torch_pjrt {

namespace {

using at::Tensor;
using Pair = std::tuple<Tensor, Tensor>;
using PairRef = std::tuple<Tensor&, Tensor&>;

// ---- segment_reduce ------------------------------------------------------------

tpj_attrs_segment_reduce_t segment_attrs(at::ScalarType compute, int64_t kind, int64_t axis,
                                         bool by_lengths, const std::optional<at::Scalar>& initial) {
  tpj_attrs_segment_reduce_t attr{};
  attr.compute = to_tpj_dtype(compute);
  attr.kind = kind;
  attr.axis = axis;
  attr.by_lengths = by_lengths;
  attr.has_initial = initial.has_value();
  return attr;
}

Tensor segment_reduce(const Tensor& data, c10::string_view reduce,
                      const std::optional<Tensor>& lengths, const std::optional<Tensor>& indices,
                      const std::optional<Tensor>& offsets, int64_t axis, bool unsafe,
                      const std::optional<at::Scalar>& initial) {
  const char* op = "aten::segment_reduce";
  auto cpu_call = [&] {
    auto c = [](const std::optional<Tensor>& t) {
      return t ? std::optional<Tensor>(t->cpu()) : std::nullopt;
    };
    return at::segment_reduce(data.cpu(), reduce, c(lengths), c(indices), c(offsets), axis,
                              unsafe, initial);
  };
  bool by_lengths = lengths.has_value() && lengths->defined();
  bool by_offsets = offsets.has_value() && offsets->defined();
  int64_t kind = reduce == "sum" ? 0 : reduce == "mean" ? 1 : reduce == "max" ? 2
                 : reduce == "min" ? 3 : reduce == "prod" ? 4 : -1;
  // Everything CPU refuses (a bad reduce, indices, integer data, bad
  // lengths), it refuses with its own message.
  bool refuse = kind < 0 || by_lengths == by_offsets || (indices && indices->defined()) ||
                !at::isFloatingType(data.scalar_type());
  const Tensor& seg = by_lengths ? *lengths : *offsets;
  int64_t ax = 0;
  if (!refuse) {
    ax = c10::maybe_wrap_dim(axis, data.dim());
    refuse = ax != seg.dim() - 1 || seg.dim() < 1 || seg.size(-1) < (by_offsets ? 1 : 0);
    for (int64_t d = 0; !refuse && d < ax; d++) refuse = seg.size(d) != data.size(d);
  }
  if (!refuse && by_lengths && !unsafe) {
    // CPU checks the lengths on the host; so does this (one wait).
    Tensor l = to_host(seg);
    refuse = (l < 0).any().item<bool>() || !(l.sum(-1) == data.size(ax)).all().item<bool>();
  }
  if (refuse) {  // CPU raises; should it accept the call, it runs there (counted)
    Tensor r = cpu_call();
    dtype_fallback(op, data.scalar_type());
    return r.to(data.device());
  }
  std::vector<int64_t> sizes = data.sizes().vec();
  sizes[ax] = seg.size(-1) - (by_offsets ? 1 : 0);
  at::ScalarType compute = accumulator(data.scalar_type());
  check_supported(data, op);
  check_supported(seg, op);
  c10::Device dev = common_device(op, {&data, &seg});
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(sizes, data.options().device(dev));
  if (out.numel() == 0) return out;
  OpArgs a;
  add_operand(a, data, dev.index());
  add_operand(a, seg, dev.index());
  if (initial) a.scalar(*initial, compute, dev.index());
  tpj_attrs_segment_reduce_t attr = segment_attrs(compute, kind, ax, by_lengths, initial);
  run_op(op, dev.index(), a, attrs_of(attr), {out});
  return out;
}

Tensor segment_reduce_backward(const Tensor& grad, const Tensor& output, const Tensor& data,
                               c10::string_view reduce, const std::optional<Tensor>& lengths,
                               const std::optional<Tensor>& offsets, int64_t axis,
                               const std::optional<at::Scalar>& initial) {
  const char* op = "aten::_segment_reduce_backward";
  bool by_lengths = lengths.has_value() && lengths->defined();
  bool by_offsets = offsets.has_value() && offsets->defined();
  int64_t kind = reduce == "sum" ? 0 : reduce == "mean" ? 1 : reduce == "max" ? 2
                 : reduce == "min" ? 3 : reduce == "prod" ? 4 : -1;
  const Tensor* seg = by_lengths ? &*lengths : by_offsets ? &*offsets : nullptr;
  int64_t ax = seg ? c10::maybe_wrap_dim(axis, data.dim()) : 0;
  if (kind < 0 || !seg || by_lengths == by_offsets || ax != seg->dim() - 1 ||
      !at::isFloatingType(data.scalar_type()) || data.numel() == 0) {
    auto c = [](const std::optional<Tensor>& t) {
      return t && t->defined() ? std::optional<Tensor>(t->cpu()) : std::nullopt;
    };
    Tensor r = at::_segment_reduce_backward(grad.cpu(), output.cpu(), data.cpu(), reduce,
                                            c(lengths), c(offsets), axis, initial);
    dtype_fallback(op, data.scalar_type());
    return r.to(data.device());
  }
  at::ScalarType compute = accumulator(data.scalar_type());
  for (const Tensor* t : {&grad, &output, &data, seg}) check_supported(*t, op);
  c10::Device dev = common_device(op, {&grad, &output, &data, seg});
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(data.sizes(), grad.options().device(dev));
  OpArgs a;
  for (const Tensor* t : {&grad, &output, &data, seg}) add_operand(a, *t, dev.index());
  if (initial) a.scalar(*initial, compute, dev.index());
  tpj_attrs_segment_reduce_t attr = segment_attrs(compute, kind, ax, by_lengths, initial);
  run_op(op, dev.index(), a, attrs_of(attr),
         {out});
  return out;
}

// ---- bincount ---------------------------------------------------------------------

// The output's length depends on the data: the largest value is read on the
// host (one wait, which also checks that none is negative), as CPU does.
Tensor bincount(const Tensor& self, const std::optional<Tensor>& weights, int64_t minlength) {
  const char* op = "aten::bincount";
  bool weighted = weights.has_value() && weights->defined();
  auto cpu_call = [&] {
    return at::bincount(self.cpu(), weighted ? std::optional<Tensor>(weights->cpu()) : std::nullopt,
                        minlength);
  };
  check_supported(self, op);
  int64_t lo = 0, hi = -1;
  bool ok = self.dim() == 1 && c10::isIntegralType(self.scalar_type(), /*includeBool=*/false) &&
            minlength >= 0 && (!weighted || (weights->dim() == 1 && weights->size(0) == self.size(0)));
  bool any = ok && index_bounds(self, &lo, &hi);
  if (!ok || (any && lo < 0)) {  // CPU's own error (it accepts nothing else)
    Tensor r = cpu_call();
    dtype_fallback(op, self.scalar_type());
    return r.to(self.device());
  }
  at::ScalarType wt = !weighted ? at::kLong
                      : (weights->scalar_type() == at::kFloat ? at::kFloat : at::kDouble);
  int64_t n = std::max(any ? hi + 1 : 0, minlength);
  c10::DeviceGuard guard(self.device());
  Tensor out = at::zeros({n}, self.options().dtype(wt));
  if (!any) return out;
  OpArgs a;
  a.tensor(self);
  if (weighted) {
    check_supported(*weights, op);
    a.tensor(*weights);
  }
  tpj_attrs_bincount_t attr{};
  attr.weighted = weighted;
  run_op(op, self.device().index(), a, attrs_of(attr), {out});
  return out;
}
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  namespace tp = torch_pjrt;
  m.impl("segment_reduce", TORCH_FN(tp::segment_reduce));
  m.impl("_segment_reduce_backward", TORCH_FN(tp::segment_reduce_backward));
  m.impl("bincount", TORCH_FN(tp::bincount));
}
namespace torch_pjrt {
namespace {

using at::Tensor;

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
  tpj_attrs_histc_t attr{};
  attr.bins = bins;
  run_op(op, self.device().index(), a, attrs_of(attr), {out});
  return out;
}
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  using at::Tensor;
  m.impl("histc", TORCH_FN(k_histc));
  m.impl("histc.out", [](const Tensor& s, int64_t bins, const at::Scalar& lo, const at::Scalar& hi,
                         Tensor& o) -> Tensor& { return put_out(o, k_histc(s, bins, lo, hi), "aten::histc"); });
}

// Kernel glue for statistical reductions: var, std, var_mean, std_mean,
// linalg_vector_norm and logsumexp. Output shapes and dtypes come from the
// meta functions; the compute dtype is float32 for half types, as CPU's
// kernels accumulate.
extern "C" {
#include "ops/attrs.h"
#include "ops/ops.h"
}
namespace torch_pjrt {

namespace {

using at::OptionalIntArrayRef;
using at::Tensor;

// The attributes of a statistic (tpj_attrs_var_t, tpj_attrs_logsumexp_t,
// tpj_attrs_vector_norm_t): head, then the reduced dims, ndims of them.
template <class Head>
std::vector<int64_t> stats_attrs(at::ScalarType compute, Head head,
                                 const std::vector<int64_t>& dims) {
  head.compute = to_tpj_dtype(compute);
  head.ndims = static_cast<int64_t>(dims.size());
  return attrs_with_tail(head, dims);
}

// `scalar` (if any) is a 0-d runtime operand of dtype scalar_dt.
std::vector<Tensor> run(const char* op, const Tensor& self, std::initializer_list<Tensor> metas,
                        c10::ArrayRef<int64_t> attrs, const at::Scalar* scalar = nullptr,
                        at::ScalarType scalar_dt = at::kFloat) {
  check_supported(self, op);
  c10::DeviceGuard guard(self.device());
  std::vector<Tensor> outs;
  for (const Tensor& m : metas)
    outs.push_back(at::empty(m.sizes(), m.options().device(self.device())));
  OpArgs a;
  a.tensor(self);
  if (scalar) a.scalar(*scalar, scalar_dt, self.device().index());
  run_op(op, self.device().index(), a, attrs, outs);
  return outs;
}

Tensor& put(Tensor& out, const Tensor& result, const char* op) {
  at::native::resize_output(out, result.sizes());
  assign_result(out, result, op);
  return out;
}

// ---- var / std ---------------------------------------------------------------

// var, std, var_mean and std_mean share one lowering: flag 1 is std.
std::vector<Tensor> var_like(const char* name, const char* op, bool is_std, bool with_mean,
                             const Tensor& self, OptionalIntArrayRef dim,
                             const std::optional<at::Scalar>& correction, bool keepdim) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()) || at::isComplexType(self.scalar_type()),
              "std and var only support floating point and complex dtypes");
  std::vector<int64_t> dims = reduced_dims(self, dim);
  // The result shapes, computed here: PyTorch's meta kernels for var and
  // var_mean are Python (tens of microseconds a call). var is real, the
  // mean keeps self's dtype.
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < self.dim(); ++d) {
    bool reduced = std::find(dims.begin(), dims.end(), d) != dims.end();
    if (!reduced) shape.push_back(self.size(d));
    else if (keepdim) shape.push_back(1);
  }
  auto mo = at::TensorOptions().device(c10::kMeta);
  std::vector<Tensor> metas{at::empty(shape, mo.dtype(c10::toRealValueType(self.scalar_type())))};
  if (with_mean) metas.push_back(at::empty(shape, mo.dtype(self.scalar_type())));
  int64_t n = 1;
  for (int64_t d : dims) n *= self.size(d);
  double dof = static_cast<double>(n) - (correction ? correction->toDouble() : 1.0);
  if (dof <= 0) {
    TORCH_WARN(name, "(): degrees of freedom is <= 0. Correction should be strictly less than "
               "the reduction factor (input numel divided by output numel).");
  }
  at::Scalar divisor(std::max(0.0, dof));
  at::ScalarType compute = accumulator(self.scalar_type());
  at::ScalarType real = c10::toRealValueType(compute);
  tpj_attrs_var_t head{};
  head.is_std = is_std;
  std::vector<int64_t> attrs = stats_attrs(compute, head, dims);
  if (with_mean) return run(op, self, {metas[0], metas[1]}, attrs, &divisor, real);
  return run(op, self, {metas[0]}, attrs, &divisor, real);
}

Tensor k_var(const Tensor& self, OptionalIntArrayRef dim, const std::optional<at::Scalar>& c,
           bool keepdim) {
  return var_like("var", "aten::var.correction", false, false, self, dim, c, keepdim)[0];
}

Tensor k_std_(const Tensor& self, OptionalIntArrayRef dim, const std::optional<at::Scalar>& c,
            bool keepdim) {
  return var_like("std", "aten::std.correction", true, false, self, dim, c, keepdim)[0];
}

std::tuple<Tensor, Tensor> k_var_mean(const Tensor& self, OptionalIntArrayRef dim,
                                    const std::optional<at::Scalar>& c, bool keepdim) {
  auto r = var_like("var_mean", "aten::var_mean.correction", false, true, self, dim, c, keepdim);
  return {r[0], r[1]};
}

std::tuple<Tensor, Tensor> k_std_mean(const Tensor& self, OptionalIntArrayRef dim,
                                    const std::optional<at::Scalar>& c, bool keepdim) {
  auto r = var_like("std_mean", "aten::std_mean.correction", true, true, self, dim, c, keepdim);
  return {r[0], r[1]};
}

// ---- logsumexp, linalg_vector_norm -------------------------------------------

Tensor k_logsumexp(const Tensor& self, at::IntArrayRef dim, bool keepdim) {
  if (at::isComplexType(self.scalar_type()) && self.numel() > 0) {
    // CPU's formula for complex input, of ops native here: shift by the
    // largest real part (an infinite one by 0).
    check_supported(self, "aten::logsumexp");
    std::vector<int64_t> dims = reduced_dims(self, dim);
    Tensor maxes = at::amax(at::real(self), dims, true);
    maxes = at::where(at::eq(at::abs(maxes), INFINITY), at::zeros_like(maxes), maxes);
    Tensor sum = at::sum(at::exp(at::sub(self, maxes)), dims, keepdim);
    return at::add(at::log(sum), keepdim ? maxes : maxes.squeeze(dims));
  }
  if (at::isComplexType(self.scalar_type())) {  // empty: CPU's kernel, counted
    check_supported(self, "aten::logsumexp");
    dtype_fallback("aten::logsumexp", self.scalar_type());
    return at::logsumexp(self.cpu(), dim, keepdim).to(self.device());
  }
  Tensor m = at::logsumexp(to_meta(self), dim, keepdim);
  tpj_attrs_logsumexp_t head{};
  head.zero = 0;
  return run("aten::logsumexp", self, {m},
             stats_attrs(accumulator(m.scalar_type()), head, reduced_dims(self, dim)))[0];
}

Tensor k_vector_norm(const Tensor& self, const at::Scalar& ord, OptionalIntArrayRef dim,
                   bool keepdim, std::optional<at::ScalarType> dtype) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()) || at::isComplexType(self.scalar_type()),
              "linalg.vector_norm: Expected a floating point or complex tensor as input. Got ",
              self.scalar_type());
  Tensor m = at::meta::linalg_vector_norm(to_meta(self), ord, dim, keepdim, dtype);
  at::ScalarType compute = accumulator(m.scalar_type());
  double p = ord.toDouble();
  tpj_attrs_vector_norm_t head{};
  head.kind = p == 0 ? TPJ_NORM_ZERO : p == 1 ? TPJ_NORM_ONE : p == 2 ? TPJ_NORM_TWO
              : p == INFINITY ? TPJ_NORM_INF : p == -INFINITY ? TPJ_NORM_NEG_INF : TPJ_NORM_P;
  std::vector<int64_t> attrs = stats_attrs(compute, head, reduced_dims(self, dim));
  if (head.kind == TPJ_NORM_P)
    return run("aten::linalg_vector_norm", self, {m}, attrs, &ord, compute)[0];
  return run("aten::linalg_vector_norm", self, {m}, attrs)[0];
}
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  using at::Tensor;
  using OptScalar = std::optional<at::Scalar>;
  m.impl("var.correction", TORCH_FN(k_var));
  m.impl("std.correction", TORCH_FN(k_std_));
  m.impl("var_mean.correction", TORCH_FN(k_var_mean));
  m.impl("std_mean.correction", TORCH_FN(k_std_mean));
  m.impl("var.correction_out", [](const Tensor& s, at::OptionalIntArrayRef d, const OptScalar& c,
                                  bool k, Tensor& o) -> Tensor& {
    return put(o, k_var(s, d, c, k), "aten::var");
  });
  m.impl("std.correction_out", [](const Tensor& s, at::OptionalIntArrayRef d, const OptScalar& c,
                                  bool k, Tensor& o) -> Tensor& {
    return put(o, k_std_(s, d, c, k), "aten::std");
  });
  m.impl("logsumexp", TORCH_FN(k_logsumexp));
  m.impl("logsumexp.out", [](const Tensor& s, at::IntArrayRef d, bool k, Tensor& o) -> Tensor& {
    return put(o, k_logsumexp(s, d, k), "aten::logsumexp");
  });
  m.impl("linalg_vector_norm", TORCH_FN(k_vector_norm));
  m.impl("linalg_vector_norm.out",
         [](const Tensor& s, const at::Scalar& ord, at::OptionalIntArrayRef d, bool k,
            std::optional<at::ScalarType> dt, Tensor& o) -> Tensor& {
           return put(o, k_vector_norm(s, ord, d, k, dt), "aten::linalg_vector_norm");
         });
}
