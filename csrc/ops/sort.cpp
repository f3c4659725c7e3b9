// Kernel glue for sorting, selection and scans (src/ops/sort.c): sort,
// topk, kthvalue, median and nanmedian, mode, max/min with indices,
// argmax/argmin, unique_consecutive, isin, searchsorted/bucketize, and the
// scans cumsum, cumprod, logcumsumexp and cummax/cummin. Shapes, dtypes and
// most argument checks come from the meta functions; the rest are CPU's
// checks with CPU's messages.
#include <ATen/MetaFunctions.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "ops/copy.h"
#include "ops/fallback.h"
#include "ops/write.h"
#include "tensor.h"
#include "glue.h"
#include <ATen/ExpandUtils.h>
#include <string>
#include "storage_dtypes.h"
#include <algorithm>
#include <cmath>
#include <limits>
#include <ATen/ops/_grouped_mm_compositeexplicitautograd_dispatch.h>

extern "C" {
#include "ops/attrs.h"
}

namespace torch_pjrt {


namespace {

using at::Tensor;
using Pair = std::tuple<Tensor, Tensor>;
using PairRef = std::tuple<Tensor&, Tensor&>;

// Runs op on self into new tensors shaped like metas.
std::vector<Tensor> run(const char* op, const Tensor& self, std::initializer_list<Tensor> metas,
                        c10::ArrayRef<int64_t> attrs) {
  check_supported(self, op);
  c10::DeviceGuard guard(self.device());
  std::vector<Tensor> outs;
  for (const Tensor& m : metas) outs.push_back(at::empty(m.sizes(), m.options().device(self.device())));
  OpArgs a;
  a.tensor(self);
  run_op(op, self.device().index(), a, attrs, outs);
  return outs;
}

Pair run2(const char* op, const Tensor& self, const Pair& metas, c10::ArrayRef<int64_t> attrs) {
  auto o = run(op, self, {std::get<0>(metas), std::get<1>(metas)}, attrs);
  return {o[0], o[1]};
}

Tensor run1(const char* op, const Tensor& self, const Tensor& meta, c10::ArrayRef<int64_t> attrs) {
  return run(op, self, {meta}, attrs)[0];
}

int64_t wrap(int64_t dim, const Tensor& self) {
  return self.dim() == 0 ? 0 : c10::maybe_wrap_dim(dim, self.dim());
}

// The attributes of an op that selects along one dim (-1: all elements).
tpj_attrs_select_t select_attrs(int64_t dim) {
  tpj_attrs_select_t attrs{};
  attrs.dim = dim;
  return attrs;
}

// out= forms: resize like PyTorch's out kernels, then write.
Tensor& put(Tensor& out, const Tensor& result, const char* op) {
  at::native::resize_output(out, result.sizes());
  assign_result(out, result, op);
  return out;
}

PairRef put2(Tensor& o0, Tensor& o1, const Pair& r, const char* op) {
  put(o0, std::get<0>(r), op);
  put(o1, std::get<1>(r), op);
  return {o0, o1};
}

// ---- sort, topk, kthvalue, median -----------------------------------------

void check_sortable(const Tensor& self) {
  TORCH_CHECK(!self.is_complex(), "Sort does not support complex dtypes on CPU");
}

Pair k_sort(const Tensor& self, std::optional<bool> stable, int64_t dim, bool descending) {
  check_sortable(self);
  Pair m = at::meta::sort(to_meta(self), stable, dim, descending);
  // CPU's results take self's strides (densified): sort self permuted into
  // that order and view the results back (layout.h).
  InLayout lay(std::get<0>(m));
  Tensor sp = lay.in(self);
  Pair mp = at::meta::sort(to_meta(sp), stable, lay.dim(wrap(dim, self)), descending);
  // Always stable: PyTorch leaves unstable order unspecified, and CPU's
  // kernel is stable too.
  tpj_attrs_sort_t attrs{};
  attrs.dim = lay.dim(wrap(dim, self));
  attrs.descending = descending;
  Pair r = run2("aten::sort.stable", sp, mp, attrs_of(attrs));
  return {lay.out(std::get<0>(r)), lay.out(std::get<1>(r))};
}

PairRef k_sort_out(const Tensor& self, std::optional<bool> stable, int64_t dim, bool descending,
                 Tensor& values, Tensor& indices) {
  return put2(values, indices, k_sort(self, stable, dim, descending), "aten::sort");
}

Pair k_topk(const Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted) {
  check_sortable(self);
  TORCH_CHECK(k >= 0 && k <= (self.dim() > 0 ? self.size(wrap(dim, self)) : 1),
              "selected index k out of range");
  Pair m = at::meta::topk(to_meta(self), k, dim, largest, sorted);
  tpj_attrs_topk_t attrs{};
  attrs.k = k;
  attrs.dim = wrap(dim, self);
  attrs.largest = largest;
  return run2("aten::topk", self, m, attrs_of(attrs));
}

PairRef k_topk_out(const Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted,
                 Tensor& values, Tensor& indices) {
  return put2(values, indices, k_topk(self, k, dim, largest, sorted), "aten::topk");
}

Pair k_kthvalue(const Tensor& self, int64_t k, int64_t dim, bool keepdim) {
  check_sortable(self);
  int64_t d = wrap(dim, self);
  int64_t n = self.dim() == 0 ? 1 : self.size(d);
  TORCH_CHECK(k >= 1 && k <= n, "kthvalue(): selected number k out of range for dimension ", d);
  Pair m = at::kthvalue(to_meta(self), k, dim, keepdim);
  tpj_attrs_kthvalue_t attrs{};
  attrs.k = k;
  attrs.dim = d;
  return run2("aten::kthvalue", self, m, attrs_of(attrs));
}

PairRef k_kthvalue_out(const Tensor& self, int64_t k, int64_t dim, bool keepdim, Tensor& values,
                     Tensor& indices) {
  at::assert_no_overlap(self, values);  // CPU's kthvalue.values checks
  at::assert_no_overlap(self, indices);
  return put2(values, indices, k_kthvalue(self, k, dim, keepdim), "aten::kthvalue");
}

void check_median(const Tensor& self) {
  TORCH_CHECK_NOT_IMPLEMENTED(!self.is_complex(), "\"median_cpu\" not implemented for '",
                              self.scalar_type(), "'");
}

Pair k_median_dim(const Tensor& self, int64_t dim, bool keepdim) {
  check_median(self);
  int64_t d = wrap(dim, self);
  TORCH_CHECK_INDEX(self.dim() == 0 || self.size(d) != 0,
                    "median(): Expected reduction dim ", d, " to have non-zero size.");
  Pair m = at::median(to_meta(self), dim, keepdim);
  return run2("aten::median.dim", self, m, attrs_of(select_attrs(d)));
}

PairRef k_median_dim_out(const Tensor& self, int64_t dim, bool keepdim, Tensor& values,
                       Tensor& indices) {
  return put2(values, indices, k_median_dim(self, dim, keepdim), "aten::median");
}

Tensor k_median(const Tensor& self) {
  check_median(self);
  if (self.numel() == 0) {  // CPU: NaN for an empty input
    return at::full({}, std::numeric_limits<double>::quiet_NaN(), self.options());
  }
  return run1("aten::median", self, at::median(to_meta(self)), attrs_of(select_attrs(-1)));
}

// ---- max / min / argmax / argmin ------------------------------------------

void check_not_complex(const Tensor& self, const char* kernel) {
  TORCH_CHECK_NOT_IMPLEMENTED(!self.is_complex(), "\"", kernel, "\" not implemented for '",
                              self.scalar_type(), "'");
}

// CPU's check (and message) for a reduction without identity over a dim.
void check_dim_nonempty(const char* name, const Tensor& self, int64_t dim) {
  int64_t d = wrap(dim, self);
  TORCH_CHECK_INDEX(self.dim() == 0 || self.size(d) != 0, name,
                    "(): Expected reduction dim ", d, " to have non-zero size.");
}

Pair k_max_dim(const Tensor& self, int64_t dim, bool keepdim) {
  check_dim_nonempty("max", self, dim);
  Pair m = at::meta::max(to_meta(self), dim, keepdim);
  return run2("aten::max.dim", self, m, attrs_of(select_attrs(wrap(dim, self))));
}

Pair k_min_dim(const Tensor& self, int64_t dim, bool keepdim) {
  check_dim_nonempty("min", self, dim);
  Pair m = at::meta::min(to_meta(self), dim, keepdim);
  return run2("aten::min.dim", self, m, attrs_of(select_attrs(wrap(dim, self))));
}

Tensor k_max_all(const Tensor& self) {
  check_not_complex(self, "max_all");
  TORCH_CHECK(self.numel() > 0, "max(): Expected reduction dim to be specified for input.numel() "
              "== 0. Specify the reduction dim with the 'dim' argument.");
  return run1("aten::max", self, at::max(to_meta(self)), attrs_of(select_attrs(-1)));
}

Tensor k_min_all(const Tensor& self) {
  check_not_complex(self, "min_all");
  TORCH_CHECK(self.numel() > 0, "min(): Expected reduction dim to be specified for input.numel() "
              "== 0. Specify the reduction dim with the 'dim' argument.");
  return run1("aten::min", self, at::min(to_meta(self)), attrs_of(select_attrs(-1)));
}

Tensor k_argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  // CPU refuses bool before it looks at the reduced dim's size
  TORCH_CHECK(self.scalar_type() != at::kBool, "argmax(): does not support bool input");
  if (dim) check_dim_nonempty("argmax", self, *dim);
  TORCH_CHECK_INDEX(dim || self.numel() > 0,
                    "argmax(): Expected reduction dim to be specified for input.numel() == 0.");
  Tensor m = at::meta::argmax(to_meta(self), dim, keepdim);
  return run1("aten::argmax", self, m, attrs_of(select_attrs(dim ? wrap(*dim, self) : -1)));
}

Tensor k_argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  // CPU refuses bool before it looks at the reduced dim's size
  TORCH_CHECK(self.scalar_type() != at::kBool, "argmin(): does not support bool input");
  if (dim) check_dim_nonempty("argmin", self, *dim);
  TORCH_CHECK_INDEX(dim || self.numel() > 0,
                    "argmin(): Expected reduction dim to be specified for input.numel() == 0.");
  Tensor m = at::meta::argmin(to_meta(self), dim, keepdim);
  return run1("aten::argmin", self, m, attrs_of(select_attrs(dim ? wrap(*dim, self) : -1)));
}

// ---- scans ------------------------------------------------------------------

int64_t accumulator(at::ScalarType out) {
  return to_tpj_dtype((out == at::kHalf || out == at::kBFloat16) ? at::kFloat : out);
}

// A forward scan along dim (wrapped) computed in the accumulator of out.
tpj_attrs_scan_t scan_attrs(int64_t dim, at::ScalarType out) {
  tpj_attrs_scan_t attrs{};
  attrs.dim = dim;
  attrs.compute = accumulator(out);
  return attrs;
}

// Complex scans have no lowering (the scan emitters take real operands):
// CPU's kernel, counted.
bool complex_on_cpu(const Tensor& self, std::optional<at::ScalarType> dtype, const char* op) {
  if (!at::isComplexType(self.scalar_type()) && !(dtype && at::isComplexType(*dtype)))
    return false;
  check_supported(self, op);
  dtype_fallback(op, self.scalar_type());
  return true;
}

// A complex scan (misc2.c's tpj::complex_scan): product 0 sums, 1 multiplies.
Tensor complex_scan(const Tensor& self, const Tensor& meta, int64_t dim, int64_t product) {
  if (meta.numel() == 0) return at::empty(meta.sizes(), meta.options().device(self.device()));
  tpj_attrs_complex_scan_t attrs{};
  attrs.dim = wrap(dim, self);
  attrs.product = product;
  return run1("tpj::complex_scan", self, meta, attrs_of(attrs));
}

bool is_complex_scan(const Tensor& self, std::optional<at::ScalarType> dtype) {
  return dtype ? at::isComplexType(*dtype) : self.is_complex();
}

Tensor k_cumsum(const Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  if (is_complex_scan(self, dtype))
    return complex_scan(self, at::meta::cumsum(to_meta(self), dim, dtype), dim, 0);
  if (complex_on_cpu(self, dtype, "aten::cumsum"))
    return at::cumsum(self.cpu(), dim, dtype).to(self.device());
  Tensor m = at::meta::cumsum(to_meta(self), dim, dtype);
  // (a 0-d self is copied, not scanned, so CPU takes bool there)
  TORCH_CHECK_NOT_IMPLEMENTED(m.scalar_type() != at::kBool || self.dim() == 0,
                              "\"cumsum_out_cpu\" not implemented for 'Bool'");
  return run1("aten::cumsum", self, m, attrs_of(scan_attrs(wrap(dim, self), m.scalar_type())));
}

Tensor k_cumprod(const Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  if (is_complex_scan(self, dtype))
    return complex_scan(self, at::meta::cumprod(to_meta(self), dim, dtype), dim, 1);
  if (complex_on_cpu(self, dtype, "aten::cumprod"))
    return at::cumprod(self.cpu(), dim, dtype).to(self.device());
  Tensor m = at::meta::cumprod(to_meta(self), dim, dtype);
  // (a 0-d self is copied, not scanned, so CPU takes bool there)
  TORCH_CHECK_NOT_IMPLEMENTED(m.scalar_type() != at::kBool || self.dim() == 0,
                              "\"cumprod_out_cpu\" not implemented for 'Bool'");
  return run1("aten::cumprod", self, m, attrs_of(scan_attrs(wrap(dim, self), m.scalar_type())));
}

Tensor k_logcumsumexp(const Tensor& self, int64_t dim) {
  if (complex_on_cpu(self, std::nullopt, "aten::_logcumsumexp"))
    return at::_logcumsumexp(self.cpu(), dim).to(self.device());
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()),
                              "\"logcumsumexp_out_cpu\" not implemented for '",
                              self.scalar_type(), "'");
  int64_t d = wrap(dim, self);
  Tensor m = at::empty_like(to_meta(self), at::MemoryFormat::Contiguous);
  return run1("aten::_logcumsumexp", self, m, attrs_of(scan_attrs(d, m.scalar_type())));
}

}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  using at::Tensor;
  m.impl("sort.stable", TORCH_FN(k_sort));
  m.impl("sort.values_stable", TORCH_FN(k_sort_out));
  m.impl("topk", TORCH_FN(k_topk));
  m.impl("topk.values", TORCH_FN(k_topk_out));
  m.impl("kthvalue", TORCH_FN(k_kthvalue));
  m.impl("kthvalue.values", TORCH_FN(k_kthvalue_out));
  m.impl("median", TORCH_FN(k_median));
  m.impl("median.dim", TORCH_FN(k_median_dim));
  m.impl("median.dim_values", TORCH_FN(k_median_dim_out));
  m.impl("max.dim", TORCH_FN(k_max_dim));
  m.impl("min.dim", TORCH_FN(k_min_dim));
  m.impl("max.dim_max", [](const Tensor& s, int64_t d, bool k, Tensor& v, Tensor& i) {
    return put2(v, i, k_max_dim(s, d, k), "aten::max");
  });
  m.impl("min.dim_min", [](const Tensor& s, int64_t d, bool k, Tensor& v, Tensor& i) {
    return put2(v, i, k_min_dim(s, d, k), "aten::min");
  });
  m.impl("max", TORCH_FN(k_max_all));
  m.impl("min", TORCH_FN(k_min_all));
  m.impl("max.unary_out", [](const Tensor& s, Tensor& o) -> Tensor& {
    return put(o, k_max_all(s), "aten::max");
  });
  m.impl("min.unary_out", [](const Tensor& s, Tensor& o) -> Tensor& {
    return put(o, k_min_all(s), "aten::min");
  });
  m.impl("argmax", TORCH_FN(k_argmax));
  m.impl("argmin", TORCH_FN(k_argmin));
  m.impl("argmax.out", [](const Tensor& s, std::optional<int64_t> d, bool k, Tensor& o) -> Tensor& {
    return put(o, k_argmax(s, d, k), "aten::argmax");
  });
  m.impl("argmin.out", [](const Tensor& s, std::optional<int64_t> d, bool k, Tensor& o) -> Tensor& {
    return put(o, k_argmin(s, d, k), "aten::argmin");
  });
  m.impl("cumsum", TORCH_FN(k_cumsum));
  m.impl("cumprod", TORCH_FN(k_cumprod));
  m.impl("cumsum.out", [](const Tensor& s, int64_t d, std::optional<at::ScalarType> dt,
                          Tensor& o) -> Tensor& {
    // CPU's scan meta: with out= and no dtype, the scan runs in out's dtype
    return put(o, k_cumsum(s, d, dt ? dt : o.scalar_type()), "aten::cumsum");
  });
  m.impl("cumprod.out", [](const Tensor& s, int64_t d, std::optional<at::ScalarType> dt,
                           Tensor& o) -> Tensor& {
    return put(o, k_cumprod(s, d, dt ? dt : o.scalar_type()), "aten::cumprod");
  });
  m.impl("cumsum_", [](Tensor& s, int64_t d, std::optional<at::ScalarType> dt) -> Tensor& {
    assign_result(s, k_cumsum(s, d, dt), "aten::cumsum_");
    return s;
  });
  m.impl("cumprod_", [](Tensor& s, int64_t d, std::optional<at::ScalarType> dt) -> Tensor& {
    assign_result(s, k_cumprod(s, d, dt), "aten::cumprod_");
    return s;
  });
  m.impl("_logcumsumexp", TORCH_FN(k_logcumsumexp));
  m.impl("_logcumsumexp.out", [](const Tensor& s, int64_t d, Tensor& o) -> Tensor& {
    return put(o, k_logcumsumexp(s, d), "aten::logcumsumexp");
  });
}

namespace torch_pjrt {
namespace {

using at::Scalar;
using at::ScalarType;
using at::Tensor;

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
    tpj_attrs_cummaxmin_t attrs{};
    attrs.dim = d;
    attrs.is_max = is_max ? 1 : 0;
    run_op(op, self.device().index(), a, attrs_of(attrs), {v, i});
  }
  assign_result(values, v, op);
  assign_result(indices, i, op);
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
}  // namespace
}  // namespace torch_pjrt
namespace {
namespace tp = torch_pjrt;
using at::Scalar;
using at::Tensor;
}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
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
  m.impl("_cummax_helper", [](const Tensor& s, Tensor& v, Tensor& i, int64_t dim) {
    tp::cummaxmin_helper("aten::_cummax_helper", s, v, i, dim, true);
  });
  m.impl("_cummin_helper", [](const Tensor& s, Tensor& v, Tensor& i, int64_t dim) {
    tp::cummaxmin_helper("aten::_cummin_helper", s, v, i, dim, false);
  });
}

namespace torch_pjrt {

namespace {

using at::Tensor;
using Pair = std::tuple<Tensor, Tensor>;
using PairRef = std::tuple<Tensor&, Tensor&>;

// (values, indices) out= forms, written as out_result (ops.cpp) writes one.
PairRef put_pair(Tensor& o0, Tensor& o1, const Pair& r, const char* op) {
  out_result(o0, std::get<0>(r), op);
  out_result(o1, std::get<1>(r), op);
  return {o0, o1};
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
  tpj_attrs_nanmedian_t attrs{};
  attrs.dim = -1;
  attrs.nan_index = 0;
  return run_outs("aten::nanmedian", {&self}, {m}, attrs_of(attrs))[0];
}

Pair nanmedian_dim(const Tensor& self, int64_t dim, bool keepdim) {
  Pair m = meta_or_cpu([&] { return at::nanmedian(to_meta(self), dim, keepdim); },
                       [&] { at::nanmedian(self.cpu(), dim, keepdim); });
  int64_t d = wrap_dim0(dim, self);
  TORCH_CHECK_INDEX(self.dim() == 0 || self.size(d) != 0,
                    "median(): Expected reduction dim ", d, " to have non-zero size.");
  int64_t n = self.dim() == 0 ? 1 : self.size(d);
  tpj_attrs_nanmedian_t attrs{};
  attrs.dim = d;
  attrs.nan_index = all_nan_index(n);
  auto o = run_outs("aten::nanmedian.dim", {&self}, {std::get<0>(m), std::get<1>(m)},
                    attrs_of(attrs));
  return {o[0], o[1]};
}

Pair mode(const Tensor& self, int64_t dim, bool keepdim) {
  Pair m = meta_or_cpu([&] { return at::mode(to_meta(self), dim, keepdim); },
                       [&] { at::mode(self.cpu(), dim, keepdim); });
  int64_t d = wrap_dim0(dim, self);
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
    auto o = run_outs("aten::mode", {&self}, {std::get<0>(m), std::get<1>(m)},
                      attrs_of(select_attrs(d)));
    return {o[0], o[1]};
  }
  auto o = run_outs("aten::mode", {&self},
               {std::get<0>(m), std::get<1>(m), at::empty({}, std::get<1>(m).options())},
               attrs_of(select_attrs(d)));
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
    run_op("tpj::unique_consecutive_count", self.device().index(), a, attrs_of(select_attrs(d)),
           {count});
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
    tpj_attrs_unique_consecutive_t attrs{};
    attrs.dim = d;
    attrs.runs = runs;
    run_op(op, self.device().index(), a, attrs_of(attrs), {values, inverse, counts});
  }
  if (all && !return_inverse) inverse = at::empty({0}, longs);
  if (all && !return_counts) counts = at::empty({0}, longs);
  return {values, inverse, counts};
}
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  namespace tp = torch_pjrt;
  using at::Tensor;
  m.impl("nanmedian", TORCH_FN(tp::nanmedian));
  m.impl("nanmedian.dim", TORCH_FN(tp::nanmedian_dim));
  m.impl("nanmedian.dim_values", [](const Tensor& s, int64_t dim, bool keepdim, Tensor& v,
                                    Tensor& i) -> tp::PairRef {
    return tp::put_pair(v, i, tp::nanmedian_dim(s, dim, keepdim), "aten::nanmedian");
  });
  m.impl("mode", TORCH_FN(tp::mode));
  m.impl("mode.values", [](const Tensor& s, int64_t dim, bool keepdim, Tensor& v,
                           Tensor& i) -> tp::PairRef {
    return tp::put_pair(v, i, tp::mode(s, dim, keepdim), "aten::mode");
  });
  m.impl("unique_consecutive", TORCH_FN(tp::unique_consecutive));
}

namespace torch_pjrt {
namespace {

using at::Tensor;

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
  tpj_attrs_isin_t attrs{};
  attrs.invert = invert;
  run_op(op, dev.index(), a, attrs_of(attrs), {out});
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
           return put_out(o, k_isin_tt(e, t, u, inv), "aten::isin");
         });
  m.impl("isin.Tensor_Scalar_out",
         [](const Tensor& e, const at::Scalar& t, bool u, bool inv, Tensor& o) -> Tensor& {
           return put_out(o, k_isin_ts(e, t, u, inv), "aten::isin");
         });
  m.impl("isin.Scalar_Tensor_out",
         [](const at::Scalar& e, const Tensor& t, bool u, bool inv, Tensor& o) -> Tensor& {
           return put_out(o, k_isin_st(e, t, u, inv), "aten::isin");
         });
}
