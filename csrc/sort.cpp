// Kernel glue for sorting and selection (sort, topk, kthvalue, median),
// max/min with indices, argmax/argmin, and the scans cumsum, cumprod and
// logcumsumexp. Shapes, dtypes and most argument checks come from the meta
// functions; the rest are CPU's checks with CPU's messages.
#include <ATen/MetaFunctions.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "common.h"

namespace torch_pjrt {

void assign_result(const at::Tensor& dst, const at::Tensor& result, const char* op);

namespace {

using at::Tensor;
using Pair = std::tuple<Tensor, Tensor>;
using PairRef = std::tuple<Tensor&, Tensor&>;

// Runs op on self into new tensors shaped like metas.
std::vector<Tensor> run(const char* op, const Tensor& self, std::initializer_list<Tensor> metas,
                        const std::vector<int64_t>& attrs) {
  check_supported(self, op);
  c10::DeviceGuard guard(self.device());
  std::vector<Tensor> outs;
  for (const Tensor& m : metas) outs.push_back(at::empty(m.sizes(), m.options().device(self.device())));
  OpArgs a;
  a.tensor(self);
  run_op(op, self.device().index(), a, attrs, outs);
  return outs;
}

Pair run2(const char* op, const Tensor& self, const Pair& metas,
          const std::vector<int64_t>& attrs) {
  auto o = run(op, self, {std::get<0>(metas), std::get<1>(metas)}, attrs);
  return {o[0], o[1]};
}

Tensor run1(const char* op, const Tensor& self, const Tensor& meta,
            const std::vector<int64_t>& attrs) {
  return run(op, self, {meta}, attrs)[0];
}

int64_t wrap(int64_t dim, const Tensor& self) {
  return self.dim() == 0 ? 0 : c10::maybe_wrap_dim(dim, self.dim());
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
  // Always stable: PyTorch leaves unstable order unspecified, and CPU's
  // kernel is stable too.
  return run2("aten::sort.stable", self, m, {wrap(dim, self), descending});
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
  return run2("aten::topk", self, m, {k, wrap(dim, self), largest});
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
  return run2("aten::kthvalue", self, m, {k, d});
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
  return run2("aten::median.dim", self, m, {d});
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
  return run1("aten::median", self, at::median(to_meta(self)), {-1});
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
  return run2("aten::max.dim", self, m, {wrap(dim, self)});
}

Pair k_min_dim(const Tensor& self, int64_t dim, bool keepdim) {
  check_dim_nonempty("min", self, dim);
  Pair m = at::meta::min(to_meta(self), dim, keepdim);
  return run2("aten::min.dim", self, m, {wrap(dim, self)});
}

Tensor k_max_all(const Tensor& self) {
  check_not_complex(self, "max_all");
  TORCH_CHECK(self.numel() > 0, "max(): Expected reduction dim to be specified for input.numel() "
              "== 0. Specify the reduction dim with the 'dim' argument.");
  return run1("aten::max", self, at::max(to_meta(self)), {-1});
}

Tensor k_min_all(const Tensor& self) {
  check_not_complex(self, "min_all");
  TORCH_CHECK(self.numel() > 0, "min(): Expected reduction dim to be specified for input.numel() "
              "== 0. Specify the reduction dim with the 'dim' argument.");
  return run1("aten::min", self, at::min(to_meta(self)), {-1});
}

Tensor k_argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  if (dim) check_dim_nonempty("argmax", self, *dim);
  TORCH_CHECK_INDEX(dim || self.numel() > 0,
                    "argmax(): Expected reduction dim to be specified for input.numel() == 0.");
  Tensor m = at::meta::argmax(to_meta(self), dim, keepdim);
  return run1("aten::argmax", self, m, {dim ? wrap(*dim, self) : -1});
}

Tensor k_argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  if (dim) check_dim_nonempty("argmin", self, *dim);
  TORCH_CHECK_INDEX(dim || self.numel() > 0,
                    "argmin(): Expected reduction dim to be specified for input.numel() == 0.");
  Tensor m = at::meta::argmin(to_meta(self), dim, keepdim);
  return run1("aten::argmin", self, m, {dim ? wrap(*dim, self) : -1});
}

// ---- scans ------------------------------------------------------------------

int64_t accumulator(at::ScalarType out) {
  return to_tpj_dtype((out == at::kHalf || out == at::kBFloat16) ? at::kFloat : out);
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
  return run1("tpj::complex_scan", self, meta, {wrap(dim, self), product});
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
  return run1("aten::cumsum", self, m, {wrap(dim, self), accumulator(m.scalar_type())});
}

Tensor k_cumprod(const Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  if (is_complex_scan(self, dtype))
    return complex_scan(self, at::meta::cumprod(to_meta(self), dim, dtype), dim, 1);
  if (complex_on_cpu(self, dtype, "aten::cumprod"))
    return at::cumprod(self.cpu(), dim, dtype).to(self.device());
  Tensor m = at::meta::cumprod(to_meta(self), dim, dtype);
  return run1("aten::cumprod", self, m, {wrap(dim, self), accumulator(m.scalar_type())});
}

Tensor k_logcumsumexp(const Tensor& self, int64_t dim) {
  if (complex_on_cpu(self, std::nullopt, "aten::_logcumsumexp"))
    return at::_logcumsumexp(self.cpu(), dim).to(self.device());
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()),
                              "\"logcumsumexp_out_cpu\" not implemented for '",
                              self.scalar_type(), "'");
  int64_t d = wrap(dim, self);
  Tensor m = at::empty_like(to_meta(self), at::MemoryFormat::Contiguous);
  return run1("aten::_logcumsumexp", self, m, {d, accumulator(m.scalar_type())});
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
                          Tensor& o) -> Tensor& { return put(o, k_cumsum(s, d, dt), "aten::cumsum"); });
  m.impl("cumprod.out", [](const Tensor& s, int64_t d, std::optional<at::ScalarType> dt,
                           Tensor& o) -> Tensor& {
    return put(o, k_cumprod(s, d, dt), "aten::cumprod");
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
