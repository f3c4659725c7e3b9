// Kernel glue for indexing (src/ops/index.c, index_gather.c): index_select
// and embedding_dense_backward; gather, scatter/scatter_add/scatter_reduce,
// advanced indexing (index.Tensor, _index_put_impl_), index_add/index_copy/
// index_fill/index_reduce, put_, take, masked_select, masked_scatter_ and
// nonzero (with their in-place and out= forms).
//
// Index values are checked on the host before launching (one wait for the
// index tensor, usually small): XLA clamps an out-of-range gather index and
// drops an out-of-range scatter update, both silent wrong answers, while CPU
// raises "index 5 is out of bounds for dimension 0 with size 3".
//
// nonzero's result size depends on the data: its count is computed on the
// device, read on the host (one wait), and the positions are then found by a
// native program of that size. Bool-mask indexing (x[mask], x[mask] = v,
// masked_select) goes through that nonzero.
#include <ATen/MetaFunctions.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/ExpandUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>
#include "graph.h"
#include "ops/copy.h"
#include "ops/fallback.h"
#include "ops/write.h"
#include "tensor.h"
#include "inplace.h"
#include "glue.h"
#include <string>
#include "storage_dtypes.h"

extern "C" {
#include "ops/attrs.h"
}

namespace torch_pjrt {
}  // namespace torch_pjrt

namespace torch_pjrt {

namespace {

using at::Scalar;
using at::Tensor;
using IndexList = c10::List<std::optional<Tensor>>;

using Mode = tpj_scatter_mode_t;  // a scatter's combine mode (src/ops/attrs.h)


Tensor& out_to(Tensor& out, const Tensor& result, const char* op) {
  at::native::resize_output(out, result.sizes());
  assign_result(out, result, op);
  return out;
}

// CPU's check and message: indices in [0, size) (or [-size, size) where the
// op counts negative ones from the end).
void check_range(const Tensor& index, int64_t size, int64_t dim, bool negative_ok,
                 const char* prefix, bool index_error) {
  int64_t lo = 0, hi = 0;
  int64_t min_ok = negative_ok ? -size : 0;
  if (defer_index_check(index, min_ok, size,
                        std::string(prefix) + "index out of bounds for dimension " +
                            std::to_string(dim) + " with size " + std::to_string(size) +
                            " (found by a device-side check)"))
    return;
  if (!index_bounds(index, &lo, &hi)) return;
  bool ok = lo >= min_ok && hi < size;
  int64_t bad = lo < min_ok ? lo : hi;
  if (index_error)
    TORCH_CHECK_INDEX(ok, prefix, "index ", bad, " is out of bounds for dimension ", dim,
                      " with size ", size);
  TORCH_CHECK(ok, prefix, "index ", bad, " is out of bounds for dimension ", dim, " with size ",
              size);
}

int64_t size_at(const Tensor& self, int64_t d) { return self.dim() == 0 ? 1 : self.size(d); }

// ---- gather ------------------------------------------------------------------

Tensor gather_k(const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad) {
  const char* op = "aten::gather";
  Tensor m = at::meta::gather(to_meta(self), dim, to_meta(index), sparse_grad);
  check_supported(self, op);
  c10::Device dev = common_device(op, {&self, &index});
  int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  check_range(index, size_at(self, d), d, false, "", false);
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(m.sizes(), self.options());
  if (out.numel() == 0) return out;
  Tensor idx = on_device(index, dev);  // OpArgs borrows: keep operands alive
  OpArgs a;
  a.tensor(self);
  a.tensor(idx);
  tpj_attrs_index_dim_t attrs{};
  attrs.dim = d;
  run_op(op, dev.index(), a, attrs_of(attrs), {out});
  return out;
}

Tensor& gather_out_k(const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad,
                   Tensor& out) {
  // CPU's gather.out checks these before computing
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "gather(): Expected out tensor to have dtype ",
              self.scalar_type(), ", but got ", out.scalar_type(), " instead");
  at::native::resize_output(out, index.sizes());  // gather's result has index's shape
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, self);
  at::assert_no_partial_overlap(out, index);
  return out_to(out, gather_k(self, dim, index, sparse_grad), "aten::gather.out");
}

// ---- scatter family ----------------------------------------------------------------

// An in-place form's end: nothing left to do when the storage was updated
// in place (r is self), else the functional result r is written into self.
Tensor& assign_unless_self(Tensor& self, const Tensor& r, const char* name) {
  if (!r.is_same(self)) assign_result(self, r, name);
  return self;
}

// self with src (a tensor) or value scattered at index along dim; meta is the
// result of the overload's meta function (its argument checks ran). in_place
// (the in-place forms: self): a natural self's storage is updated in place
// (inplace.h) and self returned; else the functional result.
Tensor scatter_run(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                   const Tensor* src, const Scalar* value, Mode mode, bool include_self,
                   const Tensor* in_place = nullptr) {
  check_supported(self, op);
  c10::Device dev = src ? common_device(op, {&self, &index, src}) : common_device(op, {&self, &index});
  int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  check_range(index, size_at(self, d), d, false, "", false);
  c10::DeviceGuard guard(dev);
  // Nothing scattered: CPU returns before converting the value (an
  // overflowing scalar is no error then).
  if (index.numel() == 0) return in_place ? *in_place : self.clone(at::MemoryFormat::Contiguous);
  OpArgs a;
  bool direct = in_place && add_in_place_operand(a, self);
  Tensor out;
  if (!direct) {
    out = at::empty(self.sizes(), self.options());
    if (out.numel() == 0) return out;
    a.tensor(self);
  }
  Tensor idx = on_device(index, dev);  // OpArgs borrows: keep operands alive
  a.tensor(idx);
  if (src) add_operand(a, *src, dev.index());
  else a.scalar(*value, self.scalar_type(), dev.index());
  tpj_attrs_scatter_t attrs{};
  attrs.dim = d;
  attrs.mode = mode;
  attrs.include_self = include_self;
  if (direct) {
    run_op_in_place(op, dev.index(), a, attrs_of(attrs), self);
    return self;
  }
  run_op(op, dev.index(), a, attrs_of(attrs), {out});
  return out;
}

Mode legacy_mode(c10::string_view reduce) {
  if (reduce == "add") return TPJ_SCATTER_SUM;
  if (reduce == "multiply") return TPJ_SCATTER_PROD;
  TORCH_CHECK(false, "reduce argument must be either add or multiply.");
}

Mode reduce_mode(c10::string_view reduce) {
  if (reduce == "sum") return TPJ_SCATTER_SUM;
  if (reduce == "prod") return TPJ_SCATTER_PROD;
  if (reduce == "mean") return TPJ_SCATTER_MEAN;
  if (reduce == "amax") return TPJ_SCATTER_AMAX;
  if (reduce == "amin") return TPJ_SCATTER_AMIN;
  TORCH_CHECK(false, "reduce argument must be either sum, prod, mean, amax or amin, got ", reduce);
}

Tensor scatter_src_k(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  at::meta::scatter(to_meta(self), dim, to_meta(index), to_meta(src));
  return scatter_run("aten::scatter.src", self, dim, index, &src, nullptr, TPJ_SCATTER_SET,
                     true);
}

Tensor scatter_value_k(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  at::meta::scatter(to_meta(self), dim, to_meta(index), value);
  return scatter_run("aten::scatter.value", self, dim, index, nullptr, &value, TPJ_SCATTER_SET,
                     true);
}

Tensor scatter_reduce_src_k(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                          c10::string_view reduce) {
  Mode mode = legacy_mode(reduce);
  at::meta::scatter(to_meta(self), dim, to_meta(index), to_meta(src), reduce);
  return scatter_run("aten::scatter.reduce", self, dim, index, &src, nullptr, mode, true);
}

Tensor scatter_reduce_value_k(const Tensor& self, int64_t dim, const Tensor& index,
                            const Scalar& value, c10::string_view reduce) {
  Mode mode = legacy_mode(reduce);
  at::meta::scatter(to_meta(self), dim, to_meta(index), value, reduce);
  return scatter_run("aten::scatter.value_reduce", self, dim, index, nullptr, &value, mode, true);
}

Tensor scatter_add_k(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  at::meta::scatter_add(to_meta(self), dim, to_meta(index), to_meta(src));
  return scatter_run("aten::scatter_add", self, dim, index, &src, nullptr, TPJ_SCATTER_SUM,
                     true);
}

// scatter_(src), scatter_(value), scatter_add_: self's storage updated in place
// where it can be (scatter_run's in_place).
Tensor& scatter_src_inplace(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  at::scatter(to_meta(self), dim, to_meta(index), to_meta(src));
  Tensor r = scatter_run("aten::scatter.src", self, dim, index, &src, nullptr, TPJ_SCATTER_SET,
                         true, &self);
  return assign_unless_self(self, r, "aten::scatter_");
}

Tensor& scatter_value_inplace(Tensor& self, int64_t dim, const Tensor& index, const Scalar& v) {
  at::scatter(to_meta(self), dim, to_meta(index), v);
  Tensor r = scatter_run("aten::scatter.value", self, dim, index, nullptr, &v, TPJ_SCATTER_SET,
                         true, &self);
  return assign_unless_self(self, r, "aten::scatter_");
}

Tensor& scatter_add_inplace(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  at::scatter_add(to_meta(self), dim, to_meta(index), to_meta(src));
  Tensor r = scatter_run("aten::scatter_add", self, dim, index, &src, nullptr, TPJ_SCATTER_SUM,
                         true, &self);
  return assign_unless_self(self, r, "aten::scatter_add_");
}

Tensor scatter_reduce_two_k(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                          c10::string_view reduce, bool include_self) {
  Mode mode = reduce_mode(reduce);
  at::meta::scatter_reduce(to_meta(self), dim, to_meta(index), to_meta(src), reduce, include_self);
  // CPU's mean kernel has no bool instance; it refuses before checking the index
  TORCH_CHECK_NOT_IMPLEMENTED(mode != TPJ_SCATTER_MEAN || self.scalar_type() != at::kBool,
                              "\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'");
  return scatter_run("aten::scatter_reduce.two", self, dim, index, &src, nullptr, mode,
                     include_self);
}

// ---- nonzero -------------------------------------------------------------------

Tensor nonzero_k(const Tensor& self) {
  const char* op = "aten::nonzero";
  check_supported(self, op);
  c10::DeviceGuard guard(self.device());
  int dev = self.device().index();
  int64_t n = 0;
  if (self.numel() > 0) {
    // The result's size is data-dependent: count on the device, wait for the count.
    Tensor count = at::empty({}, self.options().dtype(at::kLong));
    OpArgs a;
    a.tensor(self);
    run_op("tpj::count_nonzero", dev, a, {}, {count});
    n = to_host(count).item<int64_t>();
  }
  // CPU's result is (n, ndim) with strides (1, n): each coordinate's column
  // is contiguous. Made the same way (one transpose on the device).
  Tensor out = at::empty_strided({n, self.dim()}, {1, n}, self.options().dtype(at::kLong));
  if (out.numel() == 0) return out;
  Tensor rows = at::empty({n, self.dim()}, self.options().dtype(at::kLong));
  OpArgs a;
  a.tensor(self);
  run_op(op, dev, a, {}, {rows});
  out.copy_(rows);
  return out;
}

Tensor& nonzero_out_k(const Tensor& self, Tensor& out) {
  TORCH_CHECK(out.scalar_type() == at::kLong,
              "nonzero: Expected out tensor to have scalar type Long but got scalar type",
              out.scalar_type());
  return out_to(out, nonzero_k(self), "aten::nonzero.out");
}

Tensor nonzero_static_k(const Tensor& self, c10::SymInt size, int64_t fill_value) {
  const char* op = "aten::nonzero_static";
  check_supported(self, op);
  int64_t rows = size.expect_int();
  TORCH_CHECK(rows >= 0, "nonzero_static: 'size' must be an non-negative integer, but got ", rows);
  c10::DeviceGuard guard(self.device());
  Tensor out = at::empty({rows, self.dim()}, self.options().dtype(at::kLong));
  if (out.numel() == 0) return out;
  OpArgs a;
  a.tensor(self);
  tpj_attrs_nonzero_static_t attrs{};
  attrs.fill_value = fill_value;
  run_op(op, self.device().index(), a, attrs_of(attrs), {out});
  return out;
}

// ---- advanced indexing -------------------------------------------------------

// The index tensors of an advanced-indexing call with masks expanded: idx[j]
// indexes dim dims[j]; checked[j] when it came from a mask (in range by
// construction). self may gain a leading size-1 dim for a 0-d mask.
struct Expanded {
  Tensor self;
  std::vector<Tensor> idx;
  std::vector<int64_t> dims;
  std::vector<bool> checked;
  std::vector<int64_t> result;  // the indexing result's sizes
};

Expanded expand_indices(const Tensor& self_in, const IndexList& indices, c10::Device dev) {
  Expanded e;
  e.self = self_in;
  int64_t d = 0;
  for (size_t i = 0; i < indices.size(); ++i) {
    std::optional<Tensor> t = indices.get(i);
    if (!t || !t->defined()) {
      ++d;
      continue;
    }
    at::ScalarType st = t->scalar_type();
    if (st == at::kBool || st == at::kByte) {
      Tensor mask = on_device(*t, dev);
      if (mask.dim() == 0) {  // x[True]: a new size-1 dim, selected or not
        e.self = e.self.unsqueeze(d);
        mask = mask.reshape({1});
      }
      for (int64_t j = 0; j < mask.dim(); ++j)
        TORCH_CHECK_INDEX(d + j < e.self.dim() && mask.size(j) == e.self.size(d + j),
                          "The shape of the mask ", mask.sizes(), " at index ", j,
                          " does not match the shape of the indexed tensor ", e.self.sizes(),
                          " at index ", d + j);
      Tensor nz = nonzero_k(mask);
      for (int64_t j = 0; j < mask.dim(); ++j) {
        e.idx.push_back(nz.select(1, j));
        e.dims.push_back(d + j);
        e.checked.push_back(true);
      }
      d += mask.dim();
    } else {
      TORCH_CHECK_INDEX(st == at::kLong || st == at::kInt,
                        "tensors used as indices must be long, int, byte or bool tensors");
      e.idx.push_back(on_device(*t, dev));
      e.dims.push_back(d);
      e.checked.push_back(false);
      ++d;
    }
  }
  TORCH_CHECK_INDEX(d <= e.self.dim(), "too many indices for tensor of dimension ",
                    e.self.dim());
  // The result's sizes and PyTorch's own checks (indices that do not broadcast).
  IndexList meta;
  for (int64_t k = 0, j = 0; k < e.self.dim() && j < (int64_t)e.idx.size(); ++k) {
    if (e.dims[j] == k) meta.push_back(std::optional<Tensor>(to_meta(e.idx[j++])));
    else meta.push_back(std::optional<Tensor>());
  }
  e.result = at::meta::index(to_meta(e.self), meta).sizes().vec();
  // An empty result reads nothing, so CPU's kernel checks no index value;
  // its AdvancedIndex still refuses a non-empty index into a dim of size 0.
  bool empty_result = c10::multiply_integers(e.result) == 0;
  for (size_t j = 0; j < e.idx.size(); ++j) {
    if (e.checked[j]) continue;
    if (empty_result) {
      TORCH_CHECK_INDEX(e.self.size(e.dims[j]) > 0 || e.idx[j].numel() == 0,
                        "index is out of bounds for dimension with size 0");
    } else {
      check_range(e.idx[j], e.self.size(e.dims[j]), (int64_t)j, true, "", true);
    }
  }
  if (!e.idx.empty()) e.idx = at::broadcast_tensors(e.idx);  // stride-0 views: free
  return e;
}

// self indexed by already-checked index tensors of one shape (index.Tensor's lowering).
Tensor index_run(const Tensor& self, const std::vector<Tensor>& idx,
                 const std::vector<int64_t>& dims, at::IntArrayRef result) {
  c10::DeviceGuard guard(self.device());
  Tensor out = at::empty(result, self.options());
  if (out.numel() == 0) return out;
  OpArgs a;
  a.tensor(self);
  for (const Tensor& t : idx) a.tensor(t);
  run_op("aten::index.Tensor", self.device().index(), a, dims, {out});
  return out;
}

Tensor index_k(const Tensor& self, const IndexList& indices) {
  check_supported(self, "aten::index.Tensor");
  Expanded e = expand_indices(self, indices, self.device());
  if (e.idx.empty()) return at::alias(e.self);  // x[None-only]: a view, as on CPU
  return index_run(e.self, e.idx, e.dims, e.result);
}

Tensor& index_out_k(const Tensor& self, const IndexList& indices, Tensor& out) {
  return out_to(out, index_k(self, indices), "aten::index.Tensor_out");
}

Tensor& index_put_impl_k(Tensor& self, const IndexList& indices, const Tensor& values,
                       bool accumulate, bool unsafe) {
  (void)unsafe;
  const char* op = "aten::index_put";
  check_supported(self, op);
  TORCH_CHECK(self.scalar_type() == values.scalar_type(),
              "Index put requires the source and destination dtypes match, got ",
              self.scalar_type(), " for the destination and ", values.scalar_type(),
              " for the source.");
  c10::Device dev = self.device();
  if (self.numel() == 0) {
    // CPU writes nothing; its AdvancedIndex refuses only a non-empty index
    // into a dim of size 0
    int64_t pos = 0;
    for (size_t i = 0; i < indices.size(); ++i) {
      std::optional<Tensor> oi = indices.get(i);
      if (!oi || !oi->defined()) { ++pos; continue; }
      bool mask = oi->scalar_type() == at::kBool || oi->scalar_type() == at::kByte;
      if (!mask && pos < self.dim())
        TORCH_CHECK_INDEX(self.size(pos) > 0 || oi->numel() == 0,
                          "index is out of bounds for dimension with size 0");
      pos += mask ? std::max<int64_t>(oi->dim(), 1) : 1;
    }
    return self;
  }
  Expanded e = expand_indices(self, indices, dev);
  TORCH_CHECK(at::is_expandable_to(values.sizes(), e.result), "shape mismatch: value tensor of shape ",
              values.sizes(), " cannot be broadcast to indexing result of shape ",
              c10::IntArrayRef(e.result));
  if (e.idx.empty()) {
    if (accumulate) self.add_(values);
    else self.copy_(values);
    return self;
  }
  if (self.numel() == 0 || e.idx[0].numel() == 0) return self;
  c10::DeviceGuard guard(dev);
  // a CPU 0-d value is a runtime scalar, as on CUDA
  Tensor v = values.dim() == 0 && values.device().is_cpu() ? values : on_device(values, dev);
  tpj_attrs_index_put_t head{};
  head.accumulate = accumulate;
  std::vector<int64_t> attrs = attrs_with_tail(head, e.dims);
  OpArgs a;
  // a natural self's storage is updated in place (inplace.h)
  if (e.self.sizes() == self.sizes() && add_in_place_operand(a, self)) {
    add_operand(a, v, dev.index());
    for (const Tensor& t : e.idx) a.tensor(t);
    run_op_in_place(op, dev.index(), a, attrs, self);
    return self;
  }
  Tensor out = at::empty(e.self.sizes(), self.options().memory_format(at::MemoryFormat::Contiguous));
  a.tensor(e.self);
  add_operand(a, v, dev.index());
  for (const Tensor& t : e.idx) a.tensor(t);
  run_op(op, dev.index(), a, attrs, {out});
  // CPU's index_put_ writes through an expanded self (with a deprecation warning)
  assign_overlapping(self, out.view(self.sizes()), "aten::index_put_");
  return self;
}

// ---- masked_select -------------------------------------------------------------

Tensor masked_select_k(const Tensor& self, const Tensor& mask) {
  const char* op = "aten::masked_select";
  check_supported(self, op);
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_select: expected BoolTensor for mask");
  c10::Device dev = common_device(op, {&self, &mask});
  std::vector<int64_t> sizes = at::infer_size(mask.sizes(), self.sizes());
  c10::DeviceGuard guard(dev);
  if (sizes.empty()) sizes.push_back(1);  // a 0-d pair selects from one element
  Tensor s = self.expand(sizes), m = on_device(mask, dev).expand(sizes);
  Tensor nz = nonzero_k(m);
  std::vector<Tensor> idx;
  std::vector<int64_t> dims;
  for (int64_t j = 0; j < (int64_t)sizes.size(); ++j) {
    idx.push_back(nz.select(1, j));
    dims.push_back(j);
  }
  return index_run(s, idx, dims, {nz.size(0)});
}

Tensor& masked_select_out_k(const Tensor& self, const Tensor& mask, Tensor& out) {
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, self);
  at::assert_no_overlap(out, mask);
  return out_to(out, masked_select_k(self, mask), "aten::masked_select.out");
}

// ---- take, masked_scatter_ -------------------------------------------------------

// take: self read as a flat vector at index (negative indices count from the
// end), through index.Tensor's lowering.
Tensor take_k(const Tensor& self, const Tensor& index) {
  const char* op = "aten::take";
  check_supported(self, op);
  TORCH_CHECK(index.scalar_type() == at::kLong, "take(): Expected a long tensor for index, but got ",
              index.scalar_type());
  c10::Device dev = common_device(op, {&self, &index});
  int64_t n = self.numel(), lo = 0, hi = 0;
  if (index_bounds(index, &lo, &hi)) {
    int64_t bad = lo < -n ? lo : hi;
    TORCH_CHECK_INDEX(lo >= -n && hi < n, "out of range: tried to access index ", bad,
                      " on a tensor of ", n, " elements.");
  }
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(index.sizes(), self.options());
  if (out.numel() == 0) return out;
  Tensor flat = self.reshape({n}), idx = on_device(index, dev).reshape({index.numel()});
  OpArgs a;  // borrows flat and idx
  a.tensor(flat);
  a.tensor(idx);
  run_op(op, dev.index(), a, {0}, {out});  // index.Tensor's dims: the one dim of flat
  return out;
}

// masked_scatter_ (masked_select's backward): the mask's positions, in
// order, take source's leading elements; an index_put at nonzero(mask).
Tensor& masked_scatter_k(Tensor& self, const Tensor& mask, const Tensor& source) {
  const char* op = "aten::masked_scatter_";
  check_supported(self, op);
  TORCH_CHECK(mask.scalar_type() == at::kBool,
              "masked_scatter_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(),
              "masked_scatter_: expected self and source to have same dtypes but got ",
              self.scalar_type(), " and ", source.scalar_type());
  c10::Device dev = common_device(op, {&self, &mask, &source});
  c10::DeviceGuard guard(dev);
  if (self.numel() == 0) return self;
  // a 0-d self is written as a 1-element vector
  Tensor x = self.dim() == 0 ? self.reshape({1}) : self;
  Tensor m = on_device(mask, dev).expand(self.sizes()).reshape(x.sizes());
  Tensor nz = nonzero_k(m);
  int64_t count = nz.size(0);
  TORCH_CHECK(source.numel() >= count, "Number of elements of source < number of ones in mask");
  if (count == 0) return self;
  Tensor vals = source.reshape({source.numel()}).narrow(0, 0, count);
  Tensor out = at::empty(x.sizes(), self.options().memory_format(at::MemoryFormat::Contiguous));
  OpArgs a;
  a.tensor(x);
  a.tensor(vals);
  tpj_attrs_index_put_t head{};
  head.accumulate = 0;
  std::vector<int64_t> dims;
  std::vector<Tensor> cols;  // OpArgs borrows: keep them alive
  for (int64_t j = 0; j < x.dim(); ++j) {
    cols.push_back(nz.select(1, j));
    dims.push_back(j);
  }
  for (const Tensor& c : cols) a.tensor(c);
  run_op("aten::index_put", dev.index(), a, attrs_with_tail(head, dims), {out});
  assign_result(self, out.view(self.sizes()), op);
  return self;
}

// ---- index_add / index_copy / index_fill ----------------------------------------

// self with source (or a fill value) written at index along dim; the meta
// checks ran in the caller.
// in_place (the in-place forms: self): when self is its storage's natural
// tensor, the storage is updated in place (inplace.h) and self is returned;
// otherwise the functional result, for the caller to assign.
Tensor index_along(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                   const Tensor* source, const Scalar* value, const Scalar* alpha, Mode mode,
                   const Tensor* in_place = nullptr) {
  check_supported(self, op);
  c10::Device dev = self.device();
  int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  c10::DeviceGuard guard(dev);
  OpArgs a;
  bool direct = in_place && index.numel() != 0 && add_in_place_operand(a, self);
  Tensor out;
  if (!direct) {
    out = at::empty(self.sizes(), self.options().memory_format(at::MemoryFormat::Contiguous));
    if (out.numel() == 0 || index.numel() == 0) {
      out.copy_(self);
      return out;
    }
    a.tensor(self);
  }
  Tensor idx = on_device(index, dev);  // OpArgs borrows: keep operands alive
  a.tensor(idx);
  if (source) add_operand(a, *source, dev.index());
  else a.scalar(*value, self.scalar_type(), dev.index());
  if (alpha) a.scalar(*alpha, self.scalar_type(), dev.index());
  tpj_attrs_index_along_t attrs{};
  attrs.dim = d;
  attrs.mode = mode;
  if (direct) {
    run_op_in_place(op, dev.index(), a, attrs_of(attrs), self);
    return self;
  }
  run_op(op, dev.index(), a, attrs_of(attrs), {out});
  return out;
}


// index_add's meta checks. The meta function checks that self's and
// source's slices broadcast by selecting element 0 of each along dim, which
// raises for a zero-size dim (an empty index and source, or an empty self)
// where CPU's kernel adds nothing: such a dim is checked at size 1 instead,
// once the index count matches source (the meta's own count check words a
// mismatch as CPU does). Where the stand-ins fail a check, CPU's kernel on
// empty CPU tensors of the real shapes raises CPU's error, with the real
// shapes in its message.
void index_add_meta(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                    const Scalar& alpha) {
  Tensor ms = to_meta(self), mi = to_meta(index), mx = to_meta(source);
  int64_t nd = std::max<int64_t>(self.dim(), 1);
  bool stand_in = false;
  if (self.dim() > 0 && dim >= -nd && dim < nd) {
    int64_t d = c10::maybe_wrap_dim(dim, self.dim());
    bool src_empty = source.dim() > d && source.size(d) == 0 && index.numel() == 0;
    stand_in = src_empty || self.size(d) == 0;
    if (stand_in) {
      auto ss = self.sizes().vec();
      ss[d] = 1;
      ms = at::empty(ss, ms.options());
    }
    if (src_empty) {
      auto xs = source.sizes().vec();
      xs[d] = 1;
      mx = at::empty(xs, mx.options());
      mi = at::empty({1}, mi.options());
    }
  }
  if (!stand_in) {
    at::meta::index_add(ms, dim, mi, mx, alpha);
    return;
  }
  checked_like_cpu([&] { at::meta::index_add(ms, dim, mi, mx, alpha); }, [&] {
    auto cpu = [](const Tensor& t) { return at::empty(t.sizes(), t.options().device(at::kCPU)); };
    at::index_add(cpu(self), dim, index.cpu(), cpu(source), alpha);
  });
}

Tensor index_add_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                      const Scalar& alpha, const Tensor* in_place) {
  const char* op = "aten::index_add";
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), "index_add_(): self (",
              self.scalar_type(), ") and source (", source.scalar_type(),
              ") must have the same scalar type");
  index_add_meta(self, dim, index, source, alpha);
  common_device(op, {&self, &index, &source});
  // CPU adds nothing to an empty self; only its kernel for a vector checks the index
  if (self.numel() == 0 && self.dim() > 1) return in_place ? self : self.clone();
  int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  // CPU's checks and messages: its kernel for a vector self checks as
  // index_select does (an IndexError).
  // Of higher ranks, the kernel for an int64 index along the first or the last
  // dim with alpha 1 (an accumulating index_put_) names the index; the others
  // check as index_select does.
  bool names_index = self.dim() > 1 && index.scalar_type() == at::kLong &&
                     (d == 0 || d == self.dim() - 1) && alpha.equal(1);
  if (!names_index) {
    int64_t lo = 0, hi = 0;
    if (index_bounds(index, &lo, &hi))
      TORCH_CHECK_INDEX(lo >= 0 && hi < size_at(self, d), "index out of range in self");
  } else {
    check_range(index, size_at(self, d), d, false, "", false);
  }
  if (self.numel() == 0) return in_place ? self : self.clone();
  return index_along(op, self, dim, index, &source, nullptr, &alpha, TPJ_SCATTER_SUM, in_place);
}

Tensor index_add_k(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                   const Scalar& alpha) {
  return index_add_impl(self, dim, index, source, alpha, nullptr);
}

Tensor index_copy_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                       const Tensor* in_place) {
  const char* op = "aten::index_copy";
  at::meta::index_copy(to_meta(self), dim, to_meta(index), to_meta(source));
  common_device(op, {&self, &index, &source});
  int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  check_range(index, size_at(self, d), d, false, "index_copy_(): ", true);
  return index_along(op, self, dim, index, &source, nullptr, nullptr, TPJ_SCATTER_SET, in_place);
}

Tensor index_copy_k(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  return index_copy_impl(self, dim, index, source, nullptr);
}

void check_fill_index(const Tensor& self, int64_t dim, const Tensor& index) {
  TORCH_CHECK_INDEX(index.scalar_type() == at::kLong, "index_fill_(): Expected dtype int64 for index.");
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_fill_(): Index is supposed to be a vector");
  int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  check_range(index, size_at(self, d), d, true, "", true);
}

Tensor index_fill_scalar_k(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  const char* op = "aten::index_fill.int_Scalar";
  TORCH_CHECK_INDEX(index.scalar_type() == at::kLong, "index_fill_(): Expected dtype int64 for index.");
  TORCH_CHECK(self.is_complex() || !value.isComplex(),
              "index_fill_(): Converting complex Scalar to non-complex type is not supported");
  check_fill_index(self, dim, index);
  common_device(op, {&self, &index});
  return index_along(op, self, dim, index, nullptr, &value, nullptr, TPJ_SCATTER_SET);
}

Tensor index_fill_tensor_k(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& value) {
  TORCH_CHECK(value.dim() == 0,
              "index_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  const char* op = "aten::index_fill.int_Scalar";
  check_fill_index(self, dim, index);
  common_device(op, {&self, &index, &value});
  return index_along(op, self, dim, index, &value, nullptr, nullptr, TPJ_SCATTER_SET);
}
}  // namespace
}  // namespace torch_pjrt
namespace {
namespace tp = torch_pjrt;
using at::Scalar;
using at::Tensor;

// In-place forms write the functional result back into self.
#define TPJ_INPLACE(expr, name)          \
  {                                      \
    tp::assign_result(self, (expr), name); \
    return self;                         \
  }
// index_fill_ writes through an expanded self on CPU (with a deprecation
// warning); assign_overlapping skips TensorIterator's overlap check.
#define TPJ_INPLACE_OVERLAPPING(expr, name)     \
  {                                             \
    tp::assign_overlapping(self, (expr), name); \
    return self;                                \
  }
}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("gather", TORCH_FN(tp::gather_k));
  m.impl("gather.out", TORCH_FN(tp::gather_out_k));

  m.impl("scatter.src", TORCH_FN(tp::scatter_src_k));
  m.impl("scatter.value", TORCH_FN(tp::scatter_value_k));
  m.impl("scatter.reduce", TORCH_FN(tp::scatter_reduce_src_k));
  m.impl("scatter.value_reduce", TORCH_FN(tp::scatter_reduce_value_k));
  m.impl("scatter_add", TORCH_FN(tp::scatter_add_k));
  m.impl("scatter_reduce.two", TORCH_FN(tp::scatter_reduce_two_k));
  m.impl("scatter_.src", TORCH_FN(tp::scatter_src_inplace));
  m.impl("scatter_.value", TORCH_FN(tp::scatter_value_inplace));
  m.impl("scatter_.reduce",
         [](Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, c10::string_view r)
             -> Tensor& TPJ_INPLACE(tp::scatter_reduce_src_k(self, dim, index, src, r), "aten::scatter_"));
  m.impl("scatter_.value_reduce",
         [](Tensor& self, int64_t dim, const Tensor& index, const Scalar& v, c10::string_view r)
             -> Tensor& TPJ_INPLACE(tp::scatter_reduce_value_k(self, dim, index, v, r), "aten::scatter_"));
  m.impl("scatter_add_", TORCH_FN(tp::scatter_add_inplace));
  m.impl("scatter_reduce_.two",
         [](Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, c10::string_view r,
            bool inc) -> Tensor& TPJ_INPLACE(tp::scatter_reduce_two_k(self, dim, index, src, r, inc),
                                             "aten::scatter_reduce_"));
  m.impl("scatter.src_out", [](const Tensor& self, int64_t dim, const Tensor& index,
                               const Tensor& src, Tensor& out) -> Tensor& {
    return tp::out_to(out, tp::scatter_src_k(self, dim, index, src), "aten::scatter.src_out");
  });
  m.impl("scatter.value_out", [](const Tensor& self, int64_t dim, const Tensor& index,
                                 const Scalar& v, Tensor& out) -> Tensor& {
    return tp::out_to(out, tp::scatter_value_k(self, dim, index, v), "aten::scatter.value_out");
  });
  m.impl("scatter.reduce_out", [](const Tensor& self, int64_t dim, const Tensor& index,
                                  const Tensor& src, c10::string_view r, Tensor& out) -> Tensor& {
    return tp::out_to(out, tp::scatter_reduce_src_k(self, dim, index, src, r), "aten::scatter.reduce_out");
  });
  m.impl("scatter.value_reduce_out", [](const Tensor& self, int64_t dim, const Tensor& index,
                                        const Scalar& v, c10::string_view r, Tensor& out) -> Tensor& {
    return tp::out_to(out, tp::scatter_reduce_value_k(self, dim, index, v, r),
                      "aten::scatter.value_reduce_out");
  });
  m.impl("scatter_add.out", [](const Tensor& self, int64_t dim, const Tensor& index,
                               const Tensor& src, Tensor& out) -> Tensor& {
    return tp::out_to(out, tp::scatter_add_k(self, dim, index, src), "aten::scatter_add.out");
  });
  m.impl("scatter_reduce.two_out",
         [](const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
            c10::string_view r, bool inc, Tensor& out) -> Tensor& {
           return tp::out_to(out, tp::scatter_reduce_two_k(self, dim, index, src, r, inc),
                             "aten::scatter_reduce.two_out");
         });

  m.impl("index.Tensor", TORCH_FN(tp::index_k));
  m.impl("index.Tensor_out", TORCH_FN(tp::index_out_k));
  m.impl("_index_put_impl_", TORCH_FN(tp::index_put_impl_k));

  m.impl("index_add", TORCH_FN(tp::index_add_k));
  m.impl("index_add_", [](Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                          const Scalar& alpha)
                           -> Tensor& {
    return tp::assign_unless_self(self, tp::index_add_impl(self, dim, index, src, alpha, &self),
                                  "aten::index_add_");
  });
  m.impl("index_add.out", [](const Tensor& self, int64_t dim, const Tensor& index,
                             const Tensor& src, const Scalar& alpha, Tensor& out) -> Tensor& {
    return tp::out_to(out, tp::index_add_k(self, dim, index, src, alpha), "aten::index_add.out");
  });
  m.impl("index_copy", TORCH_FN(tp::index_copy_k));
  m.impl("index_copy_", [](Tensor& self, int64_t dim, const Tensor& index, const Tensor& src)
                            -> Tensor& {
    return tp::assign_unless_self(self, tp::index_copy_impl(self, dim, index, src, &self),
                                  "aten::index_copy_");
  });
  m.impl("index_copy.out", [](const Tensor& self, int64_t dim, const Tensor& index,
                              const Tensor& src, Tensor& out) -> Tensor& {
    return tp::out_to(out, tp::index_copy_k(self, dim, index, src), "aten::index_copy.out");
  });
  m.impl("index_fill.int_Scalar", TORCH_FN(tp::index_fill_scalar_k));
  m.impl("index_fill.int_Tensor", TORCH_FN(tp::index_fill_tensor_k));
  m.impl("index_fill_.int_Scalar",
         [](Tensor& self, int64_t dim, const Tensor& index, const Scalar& v)
             -> Tensor& TPJ_INPLACE_OVERLAPPING(tp::index_fill_scalar_k(self, dim, index, v),
                                                "aten::index_fill_"));
  m.impl("index_fill_.int_Tensor",
         [](Tensor& self, int64_t dim, const Tensor& index, const Tensor& v)
             -> Tensor& TPJ_INPLACE_OVERLAPPING(tp::index_fill_tensor_k(self, dim, index, v),
                                                "aten::index_fill_"));

  m.impl("take", TORCH_FN(tp::take_k));
  m.impl("masked_scatter_", TORCH_FN(tp::masked_scatter_k));
  m.impl("masked_select", TORCH_FN(tp::masked_select_k));
  m.impl("masked_select.out", TORCH_FN(tp::masked_select_out_k));
  m.impl("nonzero", TORCH_FN(tp::nonzero_k));
  m.impl("nonzero.out", TORCH_FN(tp::nonzero_out_k));
  m.impl("nonzero_static", TORCH_FN(tp::nonzero_static_k));
}
namespace torch_pjrt {
namespace {

using at::Scalar;
using at::ScalarType;
using at::Tensor;

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
  // known: the host read the range (not while a graph is traced, where the
  // index_put below checks it on the device).
  bool known = index_bounds(index, &lo, &hi);
  checked_like_cpu(
      [&] {
        TORCH_CHECK(index.scalar_type() == at::kLong && source.scalar_type() == self.scalar_type() &&
                        index.numel() == source.numel() && (!known || (lo >= -n && hi < n)),
                    "put_: bad arguments");
      },
      [&] { cpu_put(); });
  if (index.numel() == 0) return self;
  Tensor flat = index.reshape({-1});
  flat = at::where(at::lt(flat, 0), at::add(flat, n), flat);
  // Repeated indices without accumulate: CPU's last write wins, which a
  // scatter does not promise. A traced graph cannot read them (a scatter
  // then picks one of the writes).
  if (!accumulate && !tracing() &&
      std::get<0>(at::_unique(flat.cpu())).numel() != flat.numel()) {
    dtype_fallback(op, self.scalar_type());
    assign_result(self, cpu_put().to(self.device()), op);
    return self;
  }
  Tensor r = at::index_put(self.reshape({-1}), {std::optional<Tensor>(flat)}, source.reshape({-1}),
                           accumulate);
  assign_result(self, r.view(self.sizes()), op);
  return self;
}
}  // namespace
}  // namespace torch_pjrt
namespace {
namespace tp = torch_pjrt;
using at::Scalar;
using at::Tensor;
}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("index_reduce", TORCH_FN(tp::index_reduce));
  m.impl("index_reduce_", [](Tensor& s, int64_t dim, const Tensor& index, const Tensor& src,
                             c10::string_view reduce, bool include_self) -> Tensor& {
    tp::check_no_overlap(s, {&index, &src});
    tp::assign_result(s, tp::index_reduce(s, dim, index, src, reduce, include_self),
                      "aten::index_reduce_");
    return s;
  });
  m.impl("put_", TORCH_FN(tp::put_));
}
namespace torch_pjrt {

namespace {

using at::Tensor;

// dim1: CPU's kernel for dim 1 of a tensor of rank 2 or more raises a
// RuntimeError naming the first bad index; the others an IndexError.
void check_indices(const Tensor& index, int64_t size, bool dim1 = false) {
  if (defer_index_check(index, 0, size,
                        "index out of range in self (found by a device-side check)"))
    return;
  int64_t lo = 0, hi = 0;
  if (!index_bounds(index, &lo, &hi) || (lo >= 0 && hi < size)) return;
  if (dim1) {
    Tensor h = index.to(at::kCPU, at::kLong).reshape(-1).contiguous();
    const int64_t* p = h.const_data_ptr<int64_t>();
    for (int64_t i = 0; i < h.numel(); ++i)
      TORCH_CHECK(p[i] >= 0 && p[i] < size, "INDICES element is out of DATA bounds, id=", p[i],
                  " axis_dim=", size);
  }
  TORCH_CHECK_INDEX(false, "index out of range in self");
}


Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  const char* op = "aten::index_select";
  check_supported(self, op);
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  TORCH_CHECK(index.scalar_type() == at::kLong || index.scalar_type() == at::kInt,
              "index_select(): Expected dtype int32 or int64 for index");
  int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  Tensor m = at::index_select(to_meta(self), dim, to_meta(index));
  check_indices(index, self.dim() == 0 ? 1 : self.size(d), self.dim() > 1 && d == 1);
  c10::DeviceGuard guard(self.device());
  Tensor idx = on_device(index, self.device());
  Tensor out = at::empty(m.sizes(), self.options());
  OpArgs a;
  a.tensor(self);
  a.tensor(idx);
  tpj_attrs_index_dim_t attrs{};
  attrs.dim = d;
  run_op(op, self.device().index(), a, attrs_of(attrs), {out});
  return out;
}

Tensor embedding_dense_backward(const Tensor& grad, const Tensor& indices, c10::SymInt num_weights,
                                c10::SymInt padding_idx, bool scale_grad_by_freq) {
  const char* op = "aten::embedding_dense_backward";
  int64_t n = num_weights.expect_int(), pad = padding_idx.expect_int();
  if (scale_grad_by_freq) {
    // Counting duplicate indices is not lowered yet: PyTorch's CPU kernel, counted.
    count_fallback(op);
    Tensor r = at::embedding_dense_backward(to_host(grad), to_host(indices), n, pad, true);
    return r.to(grad.device());
  }
  check_supported(grad, op);
  check_indices(indices, n);
  c10::DeviceGuard guard(grad.device());
  Tensor idx = on_device(indices, grad.device());
  Tensor out = at::empty({n, grad.size(-1)}, grad.options());
  at::ScalarType acc = (grad.scalar_type() == at::kHalf || grad.scalar_type() == at::kBFloat16)
                           ? at::kFloat
                           : grad.scalar_type();
  OpArgs a;
  a.tensor(grad);
  a.tensor(idx);
  tpj_attrs_embedding_backward_t attrs{};
  attrs.padding_idx = pad;
  attrs.compute = to_tpj_dtype(acc);
  run_op(op, grad.device().index(), a, attrs_of(attrs), {out});
  return out;
}
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("index_select", TORCH_FN(torch_pjrt::index_select));
  m.impl("embedding_dense_backward", TORCH_FN(torch_pjrt::embedding_dense_backward));
}
