// Kernel glue for src/ops/misc2.c: linalg_cross, nanmedian, mode,
// unique_consecutive, glu (+ backward), _prelu_kernel (+ backward), gcd and
// lcm, tril/triu_indices, segment_reduce; _batch_norm_with_update and
// batch_norm_backward, which are native_batch_norm(_backward) as on CPU.
// Shapes and dtypes come from the meta functions; where one refuses a call,
// the op runs on CPU copies so the error raised is CPU's own.
//
// tril/triu_indices count their pairs on the host (the sizes alone decide
// it, as the meta function does); segment_reduce checks its lengths on the
// host, as CPU's kernel does, before a native launch; bincount reads its
// largest value on the host to size its output; matrix_exp reads the
// largest 1-norm to choose its squarings.
//
// unique_consecutive's result size depends on the data: the run count is
// computed on the device and read on the host (one wait, as nonzero does),
// then a program of that size computes the values, inverse and counts.
#include <ATen/MetaFunctions.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "common.h"

namespace torch_pjrt {

at::Tensor to_host(const at::Tensor& src);  // copy.cpp

namespace {

using at::Tensor;
using Pair = std::tuple<Tensor, Tensor>;
using PairRef = std::tuple<Tensor&, Tensor&>;

// The meta call m(); when it refuses, CPU's kernel (cpu()) raises its own
// error, or m's error is raised if CPU accepted the call.
template <class M, class C>
auto meta_or_cpu(M m, C cpu) -> decltype(m()) {
  try {
    return m();
  } catch (const std::exception&) {
    cpu();
    throw;
  }
}

// Runs op on the tensors ts (tpu, or CPU 0-d scalars) into new tensors
// shaped like metas.
std::vector<Tensor> run(const char* op, std::initializer_list<const Tensor*> ts,
                        std::initializer_list<Tensor> metas, const std::vector<int64_t>& attrs) {
  for (const Tensor* t : ts) check_supported(*t, op);
  c10::Device dev = common_device(op, ts);
  c10::DeviceGuard guard(dev);
  std::vector<Tensor> outs;
  bool empty = false;
  for (const Tensor& m : metas) {
    outs.push_back(at::empty(m.sizes(), m.options().device(dev)));
    empty = empty || m.numel() == 0;
  }
  if (empty) return outs;
  OpArgs a;
  for (const Tensor* t : ts) add_operand(a, *t, dev.index());
  run_op(op, dev.index(), a, attrs, outs);
  return outs;
}

int64_t wrap(int64_t dim, const Tensor& self) {
  return self.dim() == 0 ? 0 : c10::maybe_wrap_dim(dim, self.dim());
}

// (values, indices) out= forms, written as out_result (ops.cpp) writes one.
PairRef put2(Tensor& o0, Tensor& o1, const Pair& r, const char* op) {
  out_result(o0, std::get<0>(r), op);
  out_result(o1, std::get<1>(r), op);
  return {o0, o1};
}

// ---- linalg_cross -------------------------------------------------------------

Tensor linalg_cross(const Tensor& self, const Tensor& other, int64_t dim) {
  // The meta function promotes mixed dtypes; CPU's kernel refuses them.
  if (self.scalar_type() != other.scalar_type())
    at::linalg_cross(self.cpu(), other.cpu(), dim);
  Tensor m = meta_or_cpu([&] { return at::meta::linalg_cross(to_meta(self), to_meta(other), dim); },
                         [&] { at::linalg_cross(self.cpu(), other.cpu(), dim); });
  return run("aten::linalg_cross", {&self, &other}, {m}, {c10::maybe_wrap_dim(dim, m.dim())})[0];
}

// ---- nanmedian, mode ------------------------------------------------------------

// The index CPU's nanmedian reports for a slice of n NaNs: its kernel runs
// std::nth_element for position 0 with a comparator under which NaNs are
// all equivalent, so the element that lands there depends on n alone. The
// same call on n equivalent indices finds it.
int64_t all_nan_index(int64_t n) {
  if (n <= 0) return 0;
  std::vector<int64_t> idx(n);
  for (int64_t i = 0; i < n; i++) idx[i] = i;
  std::nth_element(idx.begin(), idx.begin(), idx.end(), [](int64_t, int64_t) { return false; });
  return idx[0];
}

Tensor nanmedian(const Tensor& self) {
  Tensor m = meta_or_cpu([&] { return at::nanmedian(to_meta(self)); },
                         [&] { at::nanmedian(self.cpu()); });
  if (self.numel() == 0)  // CPU: NaN for an empty input
    return at::full({}, std::numeric_limits<double>::quiet_NaN(), self.options());
  return run("aten::nanmedian", {&self}, {m}, {-1, 0})[0];
}

Pair nanmedian_dim(const Tensor& self, int64_t dim, bool keepdim) {
  Pair m = meta_or_cpu([&] { return at::nanmedian(to_meta(self), dim, keepdim); },
                       [&] { at::nanmedian(self.cpu(), dim, keepdim); });
  int64_t d = wrap(dim, self);
  TORCH_CHECK_INDEX(self.dim() == 0 || self.size(d) != 0,
                    "median(): Expected reduction dim ", d, " to have non-zero size.");
  int64_t n = self.dim() == 0 ? 1 : self.size(d);
  auto o = run("aten::nanmedian.dim", {&self}, {std::get<0>(m), std::get<1>(m)},
               {d, all_nan_index(n)});
  return {o[0], o[1]};
}

Pair mode(const Tensor& self, int64_t dim, bool keepdim) {
  Pair m = meta_or_cpu([&] { return at::mode(to_meta(self), dim, keepdim); },
                       [&] { at::mode(self.cpu(), dim, keepdim); });
  int64_t d = wrap(dim, self);
  TORCH_CHECK_NOT_IMPLEMENTED(!self.is_complex(), "\"mode_cpu\" not implemented for '",
                              self.scalar_type(), "'");
  TORCH_CHECK_INDEX(self.dim() == 0 || self.size(d) != 0,
                    "mode(): Expected reduction dim ", d, " to have non-zero size.");
  // CPU's index among equal values is where std::sort leaves them: for up
  // to 16 elements an insertion sort (stable: the run's last element is
  // its largest index, which the lowering returns), for more an introsort
  // whose order no program here reproduces. For longer slices the longest
  // run is read on the host (one wait): a mode that repeats runs CPU's
  // kernel; a mode that occurs once has one index.
  bool long_slices = self.dim() > 0 && self.size(d) > 16 && self.numel() > 0;
  if (!long_slices) {
    auto o = run("aten::mode", {&self}, {std::get<0>(m), std::get<1>(m)}, {d});
    return {o[0], o[1]};
  }
  auto o = run("aten::mode", {&self},
               {std::get<0>(m), std::get<1>(m), at::empty({}, std::get<1>(m).options())}, {d});
  if (to_host(o[2]).item<int64_t>() > 1) {
    dtype_fallback("aten::mode", self.scalar_type());
    auto r = at::mode(self.cpu(), dim, keepdim);
    return {std::get<0>(r).to(self.device()), std::get<1>(r).to(self.device())};
  }
  return {o[0], o[1]};
}

// ---- unique_consecutive -----------------------------------------------------------

std::tuple<Tensor, Tensor, Tensor> unique_consecutive(const Tensor& self, bool return_inverse,
                                                      bool return_counts,
                                                      std::optional<int64_t> dim) {
  const char* op = "aten::unique_consecutive";
  check_supported(self, op);
  TORCH_CHECK_NOT_IMPLEMENTED(!self.is_complex(), "\"unique\" not implemented for '",
                              self.scalar_type(), "'");
  c10::DeviceGuard guard(self.device());
  auto longs = self.options().dtype(at::kLong);
  bool all = !dim.has_value() || self.dim() == 0;
  int64_t d = all ? -1 : c10::maybe_wrap_dim(*dim, self.dim());
  int64_t n = all ? self.numel() : self.size(d);
  if (!all && n > 0 && self.numel() == 0)
    TORCH_CHECK(false, "There are 0 sized dimensions, and they aren't selected, so unique cannot "
                "be applied");
  int64_t runs = 0;
  if (n > 0) {
    Tensor count = at::empty({}, longs);
    OpArgs a;
    a.tensor(self);
    run_op("tpj::unique_consecutive_count", self.device().index(), a, {d}, {count});
    runs = to_host(count).item<int64_t>();
  }
  std::vector<int64_t> vsizes = all ? std::vector<int64_t>{runs} : self.sizes().vec();
  if (!all) vsizes[d] = runs;
  Tensor values = at::empty(vsizes, self.options());
  // With a dim, CPU returns the inverse and counts whether asked or not.
  Tensor inverse = at::empty(all ? self.sizes() : at::IntArrayRef{n}, longs);
  Tensor counts = at::empty({runs}, longs);
  if (n > 0) {
    OpArgs a;
    a.tensor(self);
    run_op(op, self.device().index(), a, {d, runs}, {values, inverse, counts});
  }
  if (all && !return_inverse) inverse = at::empty({0}, longs);
  if (all && !return_counts) counts = at::empty({0}, longs);
  return {values, inverse, counts};
}

// ---- glu, prelu ---------------------------------------------------------------------

Tensor glu(const Tensor& self, int64_t dim) {
  Tensor m = meta_or_cpu([&] { return at::meta::glu(to_meta(self), dim); },
                         [&] { at::glu(self.cpu(), dim); });
  return run("aten::glu", {&self}, {m},
             {to_tpj_dtype(accumulator(self.scalar_type())), wrap(dim, self)})[0];
}

Tensor glu_backward(const Tensor& grad, const Tensor& self, int64_t dim) {
  Tensor m = meta_or_cpu([&] { return at::glu_backward(to_meta(grad), to_meta(self), dim); },
                         [&] { at::glu_backward(grad.cpu(), self.cpu(), dim); });
  return run("aten::glu_backward", {&grad, &self}, {m},
             {to_tpj_dtype(accumulator(self.scalar_type())), wrap(dim, self)})[0];
}

Tensor prelu(const Tensor& self, const Tensor& weight) {
  Tensor m = meta_or_cpu([&] { return at::_prelu_kernel(to_meta(self), to_meta(weight)); },
                         [&] { at::_prelu_kernel(self.cpu(), weight.cpu()); });
  return run("aten::_prelu_kernel", {&self, &weight}, {m}, {})[0];
}

Pair prelu_backward(const Tensor& grad, const Tensor& self, const Tensor& weight) {
  Pair m = meta_or_cpu(
      [&] { return at::_prelu_kernel_backward(to_meta(grad), to_meta(self), to_meta(weight)); },
      [&] { at::_prelu_kernel_backward(grad.cpu(), self.cpu(), weight.cpu()); });
  auto o = run("aten::_prelu_kernel_backward", {&grad, &self, &weight},
               {std::get<0>(m), std::get<1>(m)}, {});
  return {o[0], o[1]};
}

// ---- gcd, lcm -------------------------------------------------------------------

template <const char* kOp, const char* kKernel>
Tensor gcd_like(const Tensor& a, const Tensor& b) {
  at::ScalarType t = at::result_type(a, b);
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isIntegralType(t, /*includeBool=*/false), "\"", kKernel,
                              "\" not implemented for '", t, "'");
  Tensor m = at::empty(at::infer_size(a.sizes(), b.sizes()),
                       at::TensorOptions().dtype(t).device(at::kMeta));
  return run(kOp, {&a, &b}, {m}, {})[0];
}

constexpr char kGcd[] = "aten::gcd";
constexpr char kGcdCpu[] = "gcd_cpu";
constexpr char kLcm[] = "aten::lcm";
constexpr char kLcmCpu[] = "lcm_cpu";

template <Tensor (*F)(const Tensor&, const Tensor&)>
Tensor& inplace(Tensor& self, const Tensor& other) {
  check_no_overlap(self, {&other});
  assign_result(self, F(self, other), "in-place");
  return self;
}

// ---- tril_indices, triu_indices ------------------------------------------------

Tensor tri_indices(bool upper, int64_t row, int64_t col, int64_t offset,
                   std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                   std::optional<at::Device> device, std::optional<bool> pin) {
  const char* op = upper ? "aten::triu_indices" : "aten::tril_indices";
  auto opts = at::TensorOptions().dtype(dtype).layout(layout).device(device).pinned_memory(pin);
  auto call = [&](at::TensorOptions o) {
    return upper ? at::triu_indices(row, col, offset, o) : at::tril_indices(row, col, offset, o);
  };
  Tensor m = meta_or_cpu([&] { return call(opts.device(at::kMeta).pinned_memory(std::nullopt)); },
                         [&] { call(opts.device(at::kCPU)); });
  TORCH_CHECK_NOT_IMPLEMENTED(m.scalar_type() == at::kLong || m.scalar_type() == at::kInt, "\"",
                              upper ? "triu_indices" : "tril_indices",
                              "\" not implemented for '", m.scalar_type(), "'");
  c10::Device dev = device.value_or(at::Device(at::kPrivateUse1, current_device()));
  if (dev.index() < 0) dev = at::Device(at::kPrivateUse1, current_device());
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(m.sizes(), m.options().device(dev));
  if (out.numel() == 0) return out;
  OpArgs a;
  run_op(op, dev.index(), a, {row, col, offset, upper}, {out});
  return out;
}

// ---- segment_reduce ------------------------------------------------------------

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
  run_op(op, dev.index(), a,
         {to_tpj_dtype(compute), kind, ax, by_lengths, initial.has_value()}, {out});
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
  run_op(op, dev.index(), a, {to_tpj_dtype(compute), kind, ax, by_lengths, initial.has_value()},
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
  run_op(op, self.device().index(), a, {weighted}, {out});
  return out;
}

// ---- linalg_matrix_exp ------------------------------------------------------------

// The number of squarings depends on the data: the largest 1-norm of the
// batch is read on the host (one wait).
Tensor matrix_exp(const Tensor& self) {
  const char* op = "aten::linalg_matrix_exp";
  Tensor m = meta_or_cpu([&] { return at::linalg_matrix_exp(to_meta(self)); },
                         [&] { at::linalg_matrix_exp(self.cpu()); });
  check_supported(self, op);
  // CPU computes half types in half precision, where its series overflows
  // to NaN on matrices this computes finitely: CPU's kernel, counted.
  if (self.scalar_type() == at::kHalf || self.scalar_type() == at::kBFloat16) {
    Tensor r = at::linalg_matrix_exp(self.cpu());
    dtype_fallback(op, self.scalar_type());
    return r.to(self.device());
  }
  c10::DeviceGuard guard(self.device());
  Tensor out = at::empty(m.sizes(), m.options().device(self.device()));
  if (out.numel() == 0) return out;
  double norm = to_host(at::amax(at::sum(at::abs(self), -2))).to(at::kDouble).item<double>();
  int64_t s = 0;
  if (std::isfinite(norm) && norm > 1) s = std::min<int64_t>(1100, std::ceil(std::log2(norm)));
  OpArgs a;
  a.tensor(self);
  run_op(op, self.device().index(), a, {s, to_tpj_dtype(self.scalar_type())}, {out});
  return out;
}

// ---- _batch_norm_with_update, batch_norm_backward ------------------------------

// What CPU's kernels are: native_batch_norm in training mode (which updates
// the running statistics in place) with an empty reserve, and
// native_batch_norm_backward. Both are native here.
std::tuple<Tensor, Tensor, Tensor, Tensor> bn_with_update(
    const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
    Tensor& running_mean, Tensor& running_var, double momentum, double eps) {
  auto [out, mean, invstd] = at::native_batch_norm(input, weight, bias, running_mean, running_var,
                                                   /*training=*/true, momentum, eps);
  Tensor reserve = at::empty({0}, input.options().dtype(at::kByte));
  return {out, mean, invstd, reserve};
}

std::tuple<Tensor, Tensor, Tensor> bn_backward(
    const Tensor& grad, const Tensor& input, const Tensor& weight,
    const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
    const std::optional<Tensor>& save_mean, const std::optional<Tensor>& save_var, bool update,
    double eps, std::array<bool, 3> mask, const Tensor&) {
  std::optional<Tensor> w = weight.defined() ? std::optional<Tensor>(weight) : std::nullopt;
  return at::native_batch_norm_backward(grad, input, w, running_mean, running_var, save_mean,
                                        save_var, update, eps, mask);
}

}  // namespace
}  // namespace torch_pjrt

// out= forms (linalg_cross.out, gcd.out, ...) need no entry: outform.cpp
// serves them from these functional kernels.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  namespace tp = torch_pjrt;
  using at::Tensor;
  m.impl("linalg_cross", TORCH_FN(tp::linalg_cross));
  m.impl("nanmedian", TORCH_FN(tp::nanmedian));
  m.impl("nanmedian.dim", TORCH_FN(tp::nanmedian_dim));
  m.impl("nanmedian.dim_values", [](const Tensor& s, int64_t dim, bool keepdim, Tensor& v,
                                    Tensor& i) -> tp::PairRef {
    return tp::put2(v, i, tp::nanmedian_dim(s, dim, keepdim), "aten::nanmedian");
  });
  m.impl("mode", TORCH_FN(tp::mode));
  m.impl("mode.values", [](const Tensor& s, int64_t dim, bool keepdim, Tensor& v,
                           Tensor& i) -> tp::PairRef {
    return tp::put2(v, i, tp::mode(s, dim, keepdim), "aten::mode");
  });
  m.impl("unique_consecutive", TORCH_FN(tp::unique_consecutive));
  m.impl("glu", TORCH_FN(tp::glu));
  m.impl("glu_backward", TORCH_FN(tp::glu_backward));
  m.impl("glu_backward.grad_input", [](const Tensor& g, const Tensor& s, int64_t dim,
                                       Tensor& out) -> Tensor& {
    return tp::out_result(out, tp::glu_backward(g, s, dim), "aten::glu_backward");
  });
  m.impl("_prelu_kernel", TORCH_FN(tp::prelu));
  m.impl("_prelu_kernel_backward", TORCH_FN(tp::prelu_backward));
  m.impl("tril_indices", [](int64_t r, int64_t c, int64_t off, std::optional<at::ScalarType> dt,
                            std::optional<at::Layout> l, std::optional<at::Device> d,
                            std::optional<bool> p) {
    return tp::tri_indices(false, r, c, off, dt, l, d, p);
  });
  m.impl("triu_indices", [](int64_t r, int64_t c, int64_t off, std::optional<at::ScalarType> dt,
                            std::optional<at::Layout> l, std::optional<at::Device> d,
                            std::optional<bool> p) {
    return tp::tri_indices(true, r, c, off, dt, l, d, p);
  });
  m.impl("segment_reduce", TORCH_FN(tp::segment_reduce));
  m.impl("_segment_reduce_backward", TORCH_FN(tp::segment_reduce_backward));
  m.impl("bincount", TORCH_FN(tp::bincount));
  m.impl("linalg_matrix_exp", TORCH_FN(tp::matrix_exp));
  m.impl("_batch_norm_with_update", TORCH_FN(tp::bn_with_update));
  m.impl("batch_norm_backward", TORCH_FN(tp::bn_backward));
  m.impl("gcd", TORCH_FN((tp::gcd_like<tp::kGcd, tp::kGcdCpu>)));
  m.impl("gcd_", TORCH_FN((tp::inplace<tp::gcd_like<tp::kGcd, tp::kGcdCpu>>)));
  m.impl("lcm", TORCH_FN((tp::gcd_like<tp::kLcm, tp::kLcmCpu>)));
  m.impl("lcm_", TORCH_FN((tp::inplace<tp::gcd_like<tp::kLcm, tp::kLcmCpu>>)));
}
