// Sparse tensors on tpu (COO, and CSR/CSC/BSR/BSC structure).
//
// A sparse tpu tensor is PyTorch's own SparseTensorImpl (dispatch key
// SparsePrivateUse1) whose indices and values are dense tpu tensors, exactly
// as SparseCUDA keeps CUDA tensors. So the structure (sizes, sparse_dim,
// dense_dim, nnz, the coalesced flag) lives in the impl on the host and every
// number lives on the device.
//
// What is native here:
//  - PyTorch's layout-generic kernels (the ones ATen registers for SparseCPU,
//    SparseCUDA and SparseMeta alike: construction, metadata, indices/values,
//    resize, copy between sparse tensors, clone, empty/zeros; sum, permute,
//    unsqueeze, narrow_copy, mv and the zero-preserving unary ops). They only
//    touch the impl and call dispatched ops on the dense parts, which run on
//    tpu. Transfers (`.cpu()`, `.to("tpu")`) are ATen's _to_copy, which moves
//    indices and values and calls the constructor registered here.
//  - dense -> sparse (`_to_sparse`): nonzero() of the (slice-wise) nonzero
//    mask, then index() for the values; sparse_mask (values of a dense tensor
//    at a sparse tensor's indices, which autograd uses) the same way.
//  - sparse -> dense (`_to_dense`): zeros, then index_put_ with accumulate,
//    so duplicate entries of an uncoalesced tensor add up as on CPU.
//  - sparse @ dense (`mm`, `addmm`, hence torch.sparse.mm and `s @ d`):
//    gather the dense rows each entry needs, scale by the values and
//    index_add them into the output rows.
//  - coalesce (index bookkeeping on the host, sums on the device), and
//    add/sub of dense and sparse operands.
// Everything else on a sparse tpu tensor runs PyTorch's CPU kernel on CPU
// copies (sparse_fallback in fallback.cpp: counted, TORCH_PJRT_FALLBACK
// honoured) and the results come back to tpu, sparse results staying sparse.
// Sparse compressed tensors (CSR/CSC/BSR/BSC) get the same arrangement for
// their structure; their computations all take CPU's kernels.
#include <ATen/SparseTensorImpl.h>
#include <ATen/ops/_coalesced_native.h>
#include <ATen/ops/_dimI_native.h>
#include <ATen/ops/_dimV_native.h>
#include <ATen/ops/_indices_native.h>
#include <ATen/ops/_nnz_native.h>
#include <ATen/ops/_sparse_compressed_tensor_unsafe_native.h>
#include <ATen/ops/_sparse_coo_tensor_unsafe.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_native.h>
#include <ATen/ops/_to_sparse_native.h>
#include <ATen/ops/_values_native.h>
#include <ATen/ops/abs_native.h>
#include <ATen/ops/asin_native.h>
#include <ATen/ops/asinh_native.h>
#include <ATen/ops/atan_native.h>
#include <ATen/ops/atanh_native.h>
#include <ATen/ops/ccol_indices_native.h>
#include <ATen/ops/ceil_native.h>
#include <ATen/ops/clone_native.h>
#include <ATen/ops/col_indices_native.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/copy_sparse_to_sparse_native.h>
#include <ATen/ops/crow_indices_native.h>
#include <ATen/ops/deg2rad_native.h>
#include <ATen/ops/dense_dim_native.h>
#include <ATen/ops/div_native.h>
#include <ATen/ops/empty_like_native.h>
#include <ATen/ops/empty_native.h>
#include <ATen/ops/erf_native.h>
#include <ATen/ops/erfinv_native.h>
#include <ATen/ops/expm1_native.h>
#include <ATen/ops/floor_native.h>
#include <ATen/ops/frac_native.h>
#include <ATen/ops/indices_native.h>
#include <ATen/ops/is_coalesced_native.h>
#include <ATen/ops/isinf_native.h>
#include <ATen/ops/isnan_native.h>
#include <ATen/ops/log1p_native.h>
#include <ATen/ops/mv_native.h>
#include <ATen/ops/nan_to_num_native.h>
#include <ATen/ops/narrow_copy_native.h>
#include <ATen/ops/neg_native.h>
#include <ATen/ops/permute_native.h>
#include <ATen/ops/rad2deg_native.h>
#include <ATen/ops/relu_native.h>
#include <ATen/ops/round_native.h>
#include <ATen/ops/row_indices_native.h>
#include <ATen/ops/sgn_native.h>
#include <ATen/ops/sign_native.h>
#include <ATen/ops/sin_native.h>
#include <ATen/ops/sinh_native.h>
#include <ATen/ops/sparse_dim_native.h>
#include <ATen/ops/sparse_resize_and_clear_native.h>
#include <ATen/ops/sparse_resize_native.h>
#include <ATen/ops/sqrt_native.h>
#include <ATen/ops/sum_native.h>
#include <ATen/ops/tan_native.h>
#include <ATen/ops/tanh_native.h>
#include <ATen/ops/trunc_native.h>
#include <ATen/ops/unsqueeze_native.h>
#include <ATen/ops/values_native.h>
#include <ATen/ops/zero_native.h>
#include <ATen/ops/zeros_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "graph.h"
#include "fallback.h"

namespace torch_pjrt {
namespace {

// Runs `name` through the counted CPU fallback: for a call the native kernel
// does not take (a dtype or a shape CPU handles, or refuses with its own
// message).
template <typename Ret, typename... Args>
Ret via_cpu(const char* name, const char* overload, Args... args) {
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
  torch::jit::Stack stack;
  torch::jit::push(stack, args...);
  sparse_fallback(op, &stack);
  return torch::jit::pop(stack).to<Ret>();
}

// The per-sparse-dim index tensors of a COO tensor, as index_put_ takes them.
c10::List<std::optional<at::Tensor>> index_list(const at::Tensor& indices, int64_t sparse_dim) {
  c10::List<std::optional<at::Tensor>> ix;
  for (int64_t d = 0; d < sparse_dim; d++) ix.push_back(indices.select(0, d));
  return ix;
}

at::Tensor to_dense_k(const at::Tensor& self, std::optional<at::ScalarType> dtype,
                      std::optional<bool> masked_grad) {
  // CPU's sparse_to_dense refuses a dtype the same way.
  TORCH_CHECK(!dtype.has_value(), "dtype argument is not supported by sparse_to_dense");
  at::Tensor dst = at::zeros(self.sizes(), self.options().layout(at::kStrided));
  if (self._nnz() == 0) return dst;
  at::Tensor values = self._values();
  int64_t sparse_dim = self.sparse_dim();
  if (sparse_dim == 0) {
    // No sparse dims: every entry is the whole (dense) tensor; they add up.
    // A bool sum counts, which converts back to "any is true" as CPU's add_.
    return dst.add_(values.sum(0).to(dst.scalar_type()));
  }
  return dst.index_put_(index_list(self._indices(), sparse_dim), values, /*accumulate=*/true);
}

// Dtypes whose sum does not depend on the order of the additions or that
// CPU also sums in their own precision.
bool mm_native_dtype(at::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kComplexFloat ||
         t == at::kComplexDouble || at::isIntegralType(t, /*includeBool=*/false);
}

// A 2-D sparse (no dense dims) times a 2-D dense matrix of the same dtype.
bool mm_native_ok(const at::Tensor& sparse, const at::Tensor& dense) {
  return sparse.is_sparse() && sparse.dim() == 2 && sparse.dense_dim() == 0 &&
         dense.layout() == at::kStrided && dense.dim() == 2 &&
         sparse.size(1) == dense.size(0) && sparse.scalar_type() == dense.scalar_type() &&
         mm_native_dtype(sparse.scalar_type()) && sparse.device() == dense.device();
}

// sparse @ dense: row r of the result is the sum over entries (r, c, v) of
// v * dense[c]. Duplicate entries add up, as in CPU's kernel.
at::Tensor sparse_dense_mm(const at::Tensor& sparse, const at::Tensor& dense) {
  at::Tensor out = at::zeros({sparse.size(0), dense.size(1)}, dense.options());
  if (sparse._nnz() == 0 || dense.size(1) == 0) return out;
  at::Tensor idx = sparse._indices(), values = sparse._values();
  at::Tensor contrib = dense.index_select(0, idx.select(0, 1)).mul_(values.unsqueeze(1));
  return out.index_add_(0, idx.select(0, 0), contrib);
}

// A scalar the dtype takes without CPU's refusal (a floating alpha for
// integers, a complex one for reals).
bool scalar_fits(const at::Scalar& v, at::ScalarType t) {
  if (at::isIntegralType(t, false)) return v.isIntegral(false);
  return !v.isComplex() || at::isComplexType(t);
}

at::Tensor mm_k(const at::Tensor& self, const at::Tensor& mat2) {
  if (!mm_native_ok(self, mat2)) return via_cpu<at::Tensor>("aten::mm", "", self, mat2);
  return sparse_dense_mm(self, mat2);
}

at::Tensor addmm_k(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                   const at::Scalar& beta, const at::Scalar& alpha) {
  // self must be dense here and broadcast to the product, as on CPU.
  if (!mm_native_ok(mat1, mat2) || self.is_sparse() || self.scalar_type() != mat2.scalar_type() ||
      self.device() != mat2.device() ||
      !at::is_expandable_to(self.sizes(), {mat1.size(0), mat2.size(1)}) ||
      !scalar_fits(alpha, self.scalar_type()) || !scalar_fits(beta, self.scalar_type()))
    return via_cpu<at::Tensor>("aten::addmm", "", self, mat1, mat2, beta, alpha);
  at::Tensor prod = sparse_dense_mm(mat1, mat2);
  if (!(alpha.isIntegral(false) && alpha.toLong() == 1)) prod.mul_(alpha);
  // beta == 0 ignores self entirely (NaN included), as addmm documents.
  if (beta.isBoolean() ? !beta.toBool() : beta.toComplexDouble() == 0.0) return prod;
  return prod.add_(self.expand(prod.sizes()), beta);
}

// dense -> sparse COO with sparse_dim sparse dims. ATen's generic version
// finds the hybrid case's index set with unique_dim over nonzero()'s columns;
// here it is nonzero() of "any element of this dense slice is nonzero",
// which lists the same index tuples in the same (row-major, sorted) order.
at::Tensor to_sparse_k(const at::Tensor& self, int64_t sparse_dim) {
  int64_t dims = self.dim();
  // A 0-d tensor and out-of-range sparse_dim (CPU's own messages) take ATen's path.
  if (dims == 0 || sparse_dim < 1 || sparse_dim > dims)
    return at::native::dense_to_sparse(self, sparse_dim);
  at::Tensor nonzero = self.ne(0);
  if (sparse_dim < dims) nonzero = nonzero.flatten(sparse_dim).any(-1);
  at::Tensor indices = nonzero.nonzero().t();
  at::Tensor values = self.index(index_list(indices, sparse_dim));
  return at::_sparse_coo_tensor_unsafe(indices, values, self.sizes(),
                                       self.options().layout(at::kSparse))
      ._coalesced_(true);
}

// The values of a strided tensor at a coalesced mask's indices (autograd
// sends a dense gradient of a sparse result through this).
at::Tensor sparse_mask_k(const at::Tensor& self, const at::Tensor& mask) {
  if (!(self.layout() == at::kStrided && mask.is_sparse() && mask.is_coalesced() &&
        mask.sparse_dim() > 0 && self.sizes() == mask.sizes() && self.device() == mask.device()))
    return via_cpu<at::Tensor>("aten::sparse_mask", "", self, mask);
  at::Tensor indices = mask._indices();
  at::Tensor values = self.index(index_list(indices, mask.sparse_dim()));
  return at::_sparse_coo_tensor_unsafe(indices, values, self.sizes(),
                                       self.options().layout(at::kSparse))
      ._coalesced_(true);
}

// ATen's sparse constructors make the impl's (empty) indices and values on
// the current device before installing the given ones, which must be on the
// same device: PyTorch's generated SparseCUDA wrappers set a device guard for
// this, which a registration through m.impl does not get.
at::Tensor coo_with_dims_k(int64_t sparse_dim, int64_t dense_dim, at::IntArrayRef size,
                           std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                           std::optional<at::Device> device, std::optional<bool> pin) {
  c10::OptionalDeviceGuard guard(device);
  return at::native::new_with_dims_sparse(sparse_dim, dense_dim, size, dtype, layout, device, pin);
}

at::Tensor coo_with_dims_and_tensors_k(int64_t sparse_dim, int64_t dense_dim,
                                       c10::SymIntArrayRef size, const at::Tensor& indices,
                                       const at::Tensor& values,
                                       std::optional<at::ScalarType> dtype,
                                       std::optional<at::Layout> layout,
                                       std::optional<at::Device> device, std::optional<bool> pin,
                                       std::optional<bool> is_coalesced) {
  c10::OptionalDeviceGuard guard(device);
  return at::native::new_with_dims_and_tensor_sparse_symint(
      sparse_dim, dense_dim, size, indices, values, dtype, layout, device, pin, is_coalesced);
}

at::Tensor empty_k(c10::SymIntArrayRef size, std::optional<at::ScalarType> dtype,
                   std::optional<at::Layout> layout, std::optional<at::Device> device,
                   std::optional<bool> pin, std::optional<at::MemoryFormat> memory_format) {
  c10::OptionalDeviceGuard guard(device);
  return at::native::empty_sparse_symint(size, dtype, layout, device, pin, memory_format);
}

at::Tensor empty_like_k(const at::Tensor& self, std::optional<at::ScalarType> dtype,
                        std::optional<at::Layout> layout, std::optional<at::Device> device,
                        std::optional<bool> pin, std::optional<at::MemoryFormat> memory_format) {
  c10::OptionalDeviceGuard guard(device.has_value() ? device : self.device());
  return at::native::empty_like_sparse_coo(self, dtype, layout, device, pin, memory_format);
}

at::Tensor clone_k(const at::Tensor& self, std::optional<at::MemoryFormat> memory_format) {
  c10::DeviceGuard guard(self.device());
  return at::native::clone_sparse(self, memory_format);
}

at::Tensor& zeros_out_k(at::IntArrayRef size, at::Tensor& out) {
  c10::DeviceGuard guard(out.device());
  return at::native::zeros_sparse_out(size, out);
}

at::Tensor compressed_unsafe_k(const at::Tensor& compressed_indices,
                               const at::Tensor& plain_indices, const at::Tensor& values,
                               c10::SymIntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout> layout, std::optional<at::Device> device,
                               std::optional<bool> pin) {
  c10::OptionalDeviceGuard guard(device.has_value() ? device : values.device());
  return at::native::_sparse_compressed_tensor_unsafe_symint(
      compressed_indices, plain_indices, values, size, dtype, layout, device, pin);
}

at::Tensor empty_compressed_k(c10::SymIntArrayRef size, std::optional<at::ScalarType> dtype,
                              std::optional<at::Layout> layout, std::optional<at::Device> device,
                              std::optional<bool> pin,
                              std::optional<at::MemoryFormat> memory_format) {
  c10::OptionalDeviceGuard guard(device);
  return at::native::empty_sparse_compressed_symint(size, dtype, layout, device, pin,
                                                    memory_format);
}

at::Tensor empty_like_compressed_k(const at::Tensor& self, std::optional<at::ScalarType> dtype,
                                   std::optional<at::Layout> layout,
                                   std::optional<at::Device> device, std::optional<bool> pin,
                                   std::optional<at::MemoryFormat> memory_format) {
  c10::OptionalDeviceGuard guard(device.has_value() ? device : self.device());
  return at::native::empty_like_sparse_csr(self, dtype, layout, device, pin, memory_format);
}

at::Tensor clone_compressed_k(const at::Tensor& self,
                              std::optional<at::MemoryFormat> memory_format) {
  c10::DeviceGuard guard(self.device());
  return at::native::clone_sparse_compressed(self, memory_format);
}

// Value dtypes whose sums the native kernels below compute: float32/64,
// complex and integers (bool, float16 and bfloat16 take CPU's kernel, which
// adds in its own way).
bool native_sum_dtype(at::ScalarType t) { return mm_native_dtype(t); }

// Coalescing: the index bookkeeping (sort the flattened indices, find the
// distinct ones and where each entry goes) runs on the host over the int64
// indices (one wait, as index validation does); the values are summed on the
// device with index_add, in CPU's output order (sorted row-major).
at::Tensor coalesce_k(const at::Tensor& self) {
  int64_t nnz = self._nnz();
  if (nnz < 2) {
    at::Tensor dst = self.clone();
    dst._coalesced_(true);
    return dst;
  }
  if (!native_sum_dtype(self.scalar_type()) || tracing())
    return via_cpu<at::Tensor>("aten::_coalesce", "", self);
  int64_t sparse_dim = self.sparse_dim();
  at::Tensor idx = self._indices().cpu();
  // Row-major linear index of each entry, and each sparse dim's stride in it.
  std::vector<int64_t> mult(sparse_dim);
  int64_t m = 1;
  for (int64_t d = sparse_dim - 1; d >= 0; d--) {
    mult[d] = m;
    m *= self.size(d);
  }
  at::Tensor linear = at::zeros({nnz}, idx.options());
  for (int64_t d = 0; d < sparse_dim; d++) linear.add_(idx.select(0, d), mult[d]);
  auto [uniq, inverse] = at::_unique(linear, /*sorted=*/true, /*return_inverse=*/true);
  int64_t n = uniq.numel();
  at::Tensor new_idx = at::empty({sparse_dim, n}, idx.options());
  for (int64_t d = 0; d < sparse_dim; d++)
    new_idx.select(0, d).copy_(uniq.div(mult[d], "floor").remainder(self.size(d)));
  at::Tensor values = self._values();
  std::vector<int64_t> vsize = values.sizes().vec();
  vsize[0] = n;
  at::Tensor summed = at::zeros(vsize, values.options())
                          .index_add_(0, inverse.to(values.device()), values);
  return at::_sparse_coo_tensor_unsafe(new_idx.to(values.device()), summed, self.sizes(),
                                       self.options())
      ._coalesced_(true);
}

// alpha * values, or the values themselves for alpha 1.
at::Tensor scaled(const at::Tensor& values, const at::Scalar& alpha) {
  if (alpha.isIntegral(false) && alpha.toLong() == 1) return values;
  return values.mul(alpha);
}

// What the native add kernels take: same device and sizes, one value dtype
// they sum exactly, an alpha that dtype accepts (CPU refuses a floating alpha
// for integers with its own message).
bool add_native_ok(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  at::ScalarType t = other.scalar_type();
  return other.is_sparse() && self.device() == other.device() &&
         self.sizes() == other.sizes() && self.scalar_type() == t && native_sum_dtype(t) &&
         scalar_fits(alpha, t);
}

// dense + alpha * sparse: every entry is added at its index (duplicates add).
at::Tensor& add_dense_sparse_into(at::Tensor& dst, const at::Tensor& sparse,
                                  const at::Scalar& alpha) {
  if (sparse._nnz() == 0) return dst;
  at::Tensor values = scaled(sparse._values(), alpha);
  if (sparse.sparse_dim() == 0) return dst.add_(values.sum(0));
  return dst.index_put_(index_list(sparse._indices(), sparse.sparse_dim()), values,
                        /*accumulate=*/true);
}

// sparse + alpha * sparse: the entries of both, as on CPU coalesced when both
// operands are.
at::Tensor add_sparse_sparse(const at::Tensor& self, const at::Tensor& other,
                             const at::Scalar& alpha) {
  at::Tensor indices = at::cat({self._indices(), other._indices()}, 1);
  at::Tensor values = at::cat({self._values(), scaled(other._values(), alpha)}, 0);
  at::Tensor r = at::_sparse_coo_tensor_unsafe(indices, values, self.sizes(), self.options());
  if (self.is_coalesced() && other.is_coalesced()) return coalesce_k(r);
  return r;
}

at::Tensor add_k(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  if (add_native_ok(self, other, alpha)) {
    if (self.layout() == at::kStrided) {
      at::Tensor r = self.clone(at::MemoryFormat::Contiguous);
      return add_dense_sparse_into(r, other, alpha);
    }
    if (self.is_sparse() && self.sparse_dim() == other.sparse_dim() &&
        self.dense_dim() == other.dense_dim())
      return add_sparse_sparse(self, other, alpha);
  }
  return via_cpu<at::Tensor>("aten::add", "Tensor", self, other, alpha);
}

at::Tensor& add__k(at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  if (self.layout() == at::kStrided && add_native_ok(self, other, alpha))
    return add_dense_sparse_into(self, other, alpha);
  // Everything else (a sparse self among it) through CPU's kernel; the
  // result is written back into self.
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow("aten::add_", "Tensor");
  torch::jit::Stack stack;
  torch::jit::push(stack, self, other, alpha);
  sparse_fallback(op, &stack);
  return self;
}

// self - alpha * other is self + (-alpha) * other; bool operands get CPU's
// refusal.
at::Tensor sub_k(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  if (self.scalar_type() == at::kBool || other.scalar_type() == at::kBool)
    return via_cpu<at::Tensor>("aten::sub", "Tensor", self, other, alpha);
  return add_k(self, other, -alpha);
}

at::Tensor& sub__k(at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  if (self.scalar_type() == at::kBool || other.scalar_type() == at::kBool) {
    auto op = c10::Dispatcher::singleton().findSchemaOrThrow("aten::sub_", "Tensor");
    torch::jit::Stack stack;
    torch::jit::push(stack, self, other, alpha);
    sparse_fallback(op, &stack);
    return self;
  }
  return add__k(self, other, -alpha);
}

// sparse * 0-d tensor (a Python number arrives as one): the values times it,
// same indices and coalesced flag, as CPU's mul_out_sparse_zerodim. Other
// operand shapes (sparse * sparse, sparse * dense) take CPU's kernel.
bool mul_native_ok(const at::Tensor& self, const at::Tensor& other) {
  return self.is_sparse() && other.layout() == at::kStrided && other.dim() == 0 &&
         (other.device().is_cpu() || other.device() == self.device());
}

at::Tensor mul_k(const at::Tensor& self, const at::Tensor& other) {
  const at::Tensor* sp = &self;
  const at::Tensor* sc = &other;
  if (!mul_native_ok(self, other)) std::swap(sp, sc);
  if (!mul_native_ok(*sp, *sc)) return via_cpu<at::Tensor>("aten::mul", "Tensor", self, other);
  at::Tensor values = sp->_values().mul(*sc);
  return at::_sparse_coo_tensor_unsafe(sp->_indices().clone(), values, sp->sizes(),
                                       sp->options().dtype(values.scalar_type()))
      ._coalesced_(sp->is_coalesced());
}

at::Tensor& mul__k(at::Tensor& self, const at::Tensor& other) {
  if (mul_native_ok(self, other) &&
      at::result_type(self, other) == self.scalar_type()) {
    self._values().mul_(other);
    return self;
  }
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow("aten::mul_", "Tensor");
  torch::jit::Stack stack;
  torch::jit::push(stack, self, other);
  sparse_fallback(op, &stack);
  return self;
}

// The CPU fallback writes a mutated sparse argument back with this (sparse
// copy_ resizes the destination to the source's sizes and dims).
at::Tensor copy_from_and_resize_k(const at::Tensor& self, const at::Tensor& dst) {
  at::Tensor d = dst;
  d.copy_(self);
  return dst;
}

}  // namespace
}  // namespace torch_pjrt

namespace tp = torch_pjrt;

TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  // Construction and structure: ATen's layout-generic kernels.
  m.impl("_sparse_coo_tensor_with_dims", TORCH_FN(tp::coo_with_dims_k));
  m.impl("_sparse_coo_tensor_with_dims_and_tensors",
         TORCH_FN(tp::coo_with_dims_and_tensors_k));
  m.impl("empty.memory_format", TORCH_FN(tp::empty_k));
  m.impl("empty_like", TORCH_FN(tp::empty_like_k));
  m.impl("zeros.out", TORCH_FN(tp::zeros_out_k));
  m.impl("zero_", TORCH_FN(at::native::zero_sparse_));
  m.impl("sparse_resize_", TORCH_FN(at::native::sparse_resize_));
  m.impl("sparse_resize_and_clear_", TORCH_FN(at::native::sparse_resize_and_clear_));
  m.impl("sparse_dim", TORCH_FN(at::native::sparse_dim_sparse));
  m.impl("dense_dim", TORCH_FN(at::native::dense_dim_sparse));
  m.impl("_dimI", TORCH_FN(at::native::sparse_dim_sparse));
  m.impl("_dimV", TORCH_FN(at::native::dense_dim_sparse));
  m.impl("_nnz", TORCH_FN(at::native::_nnz_sparse));
  m.impl("is_coalesced", TORCH_FN(at::native::is_coalesced_sparse));
  m.impl("_coalesced_", TORCH_FN(at::native::_coalesced_sparse_));
  m.impl("_indices", TORCH_FN(at::native::_indices_sparse));
  m.impl("_values", TORCH_FN(at::native::_values_sparse));
  m.impl("indices", TORCH_FN(at::native::indices_sparse));
  m.impl("values", TORCH_FN(at::native::values_sparse));
  m.impl("copy_", TORCH_FN(at::native::copy_sparse_wrapper_));
  m.impl("copy_sparse_to_sparse_", TORCH_FN(at::native::copy_sparse_));
  m.impl("clone", TORCH_FN(tp::clone_k));
  m.impl("_copy_from_and_resize", TORCH_FN(tp::copy_from_and_resize_k));
  // Conversions and products computed by tpu kernels on the dense parts.
  m.impl("_to_dense", TORCH_FN(tp::to_dense_k));
  m.impl("mm", TORCH_FN(tp::mm_k));
  m.impl("addmm", TORCH_FN(tp::addmm_k));
  m.impl("sparse_mask", TORCH_FN(tp::sparse_mask_k));
  m.impl("_coalesce", TORCH_FN(tp::coalesce_k));
  m.impl("add.Tensor", TORCH_FN(tp::add_k));
  m.impl("add_.Tensor", TORCH_FN(tp::add__k));
  m.impl("mul.Tensor", TORCH_FN(tp::mul_k));
  m.impl("mul_.Tensor", TORCH_FN(tp::mul__k));
  // ATen's generic sparse / 0-d tensor (the values divided).
  m.impl("div.Tensor", TORCH_FN(static_cast<at::Tensor (*)(const at::Tensor&, const at::Tensor&)>(
                           at::native::div_sparse)));
  m.impl("div_.Tensor", TORCH_FN(static_cast<at::Tensor& (*)(at::Tensor&, const at::Tensor&)>(
                            at::native::div_sparse_)));
  m.impl("div.out",
         TORCH_FN(static_cast<at::Tensor& (*)(const at::Tensor&, const at::Tensor&, at::Tensor&)>(
             at::native::div_out_sparse_zerodim)));
  m.impl("div.Tensor_mode",
         TORCH_FN(static_cast<at::Tensor (*)(const at::Tensor&, const at::Tensor&,
                                             std::optional<c10::string_view>)>(
             at::native::div_sparse)));
  m.impl("div_.Tensor_mode",
         TORCH_FN(static_cast<at::Tensor& (*)(at::Tensor&, const at::Tensor&,
                                              std::optional<c10::string_view>)>(
             at::native::div_sparse_)));
  m.impl("div.out_mode",
         TORCH_FN(static_cast<at::Tensor& (*)(const at::Tensor&, const at::Tensor&,
                                              std::optional<c10::string_view>, at::Tensor&)>(
             at::native::div_out_sparse_zerodim)));
  m.impl("sub.Tensor", TORCH_FN(tp::sub_k));
  m.impl("sub_.Tensor", TORCH_FN(tp::sub__k));
  // Ops that have both a CompositeExplicitAutograd kernel and their own
  // SparseCPU/SparseCUDA one: without a registration here the composite
  // (written for strided tensors) would serve sparse tpu tensors, and
  // sum() of a sparse tensor would give a wrong answer. ATen's sparse kernels
  // for them are layout-generic (coalesce, then the dense op on the values).
  m.impl("sum", TORCH_FN(at::native::sum_coo));
  m.impl("abs", TORCH_FN(at::native::abs_sparse));
  m.impl("abs_", TORCH_FN(at::native::abs_sparse_));
  m.impl("nan_to_num", TORCH_FN(at::native::nan_to_num_sparse));
  m.impl("nan_to_num_", TORCH_FN(at::native::nan_to_num_sparse_));
  m.impl("mv", TORCH_FN(at::native::mv_sparse));
  m.impl("narrow_copy", TORCH_FN(at::native::narrow_copy_sparse));
  m.impl("permute", TORCH_FN(at::native::permute_sparse_coo));
  m.impl("unsqueeze", TORCH_FN(at::native::unsqueeze_sparse));
  m.impl("isinf", TORCH_FN(at::native::isinf_sparse));
  // Zero-preserving unary ops: ATen's layout-generic kernels (the op on the
  // coalesced values).
#define TPJ_SPARSE_UNARY(op)                                \
  m.impl(#op, TORCH_FN(at::native::op##_sparse));           \
  m.impl(#op "_", TORCH_FN(at::native::op##_sparse_));
  TPJ_SPARSE_UNARY(neg)
  TPJ_SPARSE_UNARY(sin)
  TPJ_SPARSE_UNARY(sinh)
  TPJ_SPARSE_UNARY(tan)
  TPJ_SPARSE_UNARY(tanh)
  TPJ_SPARSE_UNARY(asin)
  TPJ_SPARSE_UNARY(asinh)
  TPJ_SPARSE_UNARY(atan)
  TPJ_SPARSE_UNARY(atanh)
  TPJ_SPARSE_UNARY(ceil)
  TPJ_SPARSE_UNARY(floor)
  TPJ_SPARSE_UNARY(round)
  TPJ_SPARSE_UNARY(trunc)
  TPJ_SPARSE_UNARY(frac)
  TPJ_SPARSE_UNARY(expm1)
  TPJ_SPARSE_UNARY(log1p)
  TPJ_SPARSE_UNARY(sqrt)
  TPJ_SPARSE_UNARY(erf)
  TPJ_SPARSE_UNARY(erfinv)
  TPJ_SPARSE_UNARY(sgn)
  TPJ_SPARSE_UNARY(sign)
  TPJ_SPARSE_UNARY(relu)
#undef TPJ_SPARSE_UNARY
  m.impl("isnan", TORCH_FN(at::native::isnan_sparse));
  m.impl("rad2deg", TORCH_FN(at::native::rad2deg_sparse));
  m.impl("rad2deg_", TORCH_FN(at::native::rad2deg_sparse_));
  m.impl("rad2deg.out", TORCH_FN(at::native::rad2deg_sparse_out));
  m.impl("deg2rad", TORCH_FN(at::native::deg2rad_sparse));
  m.impl("deg2rad_", TORCH_FN(at::native::deg2rad_sparse_));
  m.impl("deg2rad.out", TORCH_FN(at::native::deg2rad_sparse_out));
}

// Sparse compressed (CSR, CSC, BSR, BSC): the same arrangement, structure
// only; every computation is the counted CPU fallback.
TORCH_LIBRARY_IMPL(aten, SparseCsrPrivateUse1, m) {
  m.impl("empty.memory_format", TORCH_FN(tp::empty_compressed_k));
  m.impl("empty_like", TORCH_FN(tp::empty_like_compressed_k));
  m.impl("_nnz", TORCH_FN(at::native::_nnz_sparse_csr));
  m.impl("sparse_dim", TORCH_FN(at::native::sparse_dim_sparse_csr));
  m.impl("dense_dim", TORCH_FN(at::native::dense_dim_sparse_csr));
  m.impl("crow_indices", TORCH_FN(at::native::crow_indices_sparse_csr));
  m.impl("col_indices", TORCH_FN(at::native::col_indices_sparse_csr));
  m.impl("ccol_indices", TORCH_FN(at::native::ccol_indices_sparse_csr));
  m.impl("row_indices", TORCH_FN(at::native::row_indices_sparse_csr));
  m.impl("values", TORCH_FN(at::native::values_sparse_csr));
  m.impl("copy_", TORCH_FN(at::native::copy_sparse_compressed_));
  m.impl("clone", TORCH_FN(tp::clone_compressed_k));
  m.impl("_copy_from_and_resize", TORCH_FN(tp::copy_from_and_resize_k));
  // Structured ops would otherwise take PyTorch's composite kernel, which
  // allocates a sparse compressed result and calls the out= form (refused by
  // the CSR fallback); CPU's functional kernel gives CPU's result layout.
  // The same for ops with a CompositeExplicitAutograd kernel and a SparseCsrCPU
  // one (the composite would treat the tensor as strided).
  for (const char* op : {"mm", "addmm", "add.Tensor", "add_.Tensor", "sub.Tensor", "sub_.Tensor",
                         "mul.Tensor", "mul_.Tensor", "div.Tensor", "div_.Tensor", "neg", "abs",
                         "abs_", "sum", "sum.dim_IntList", "_conj_physical", "conj_physical_",
                         "mul.Scalar", "mul_.Scalar", "rad2deg", "rad2deg_", "rad2deg.out",
                         "deg2rad", "deg2rad_", "deg2rad.out", "select.int", "isinf",
                         "select_copy.int"})
    m.impl(op, torch::CppFunction::makeFromBoxedFunction<&tp::sparse_csr_cpu>());
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_sparse_compressed_tensor_unsafe", TORCH_FN(tp::compressed_unsafe_k));
  // dense -> sparse COO; the compressed layouts reach the CSR refusal.
  m.impl("_to_sparse", TORCH_FN(static_cast<at::Tensor (*)(const at::Tensor&,
                                                           std::optional<at::Layout>,
                                                           at::OptionalIntArrayRef,
                                                           std::optional<int64_t>)>(
                           at::native::dense_to_sparse)));
  m.impl("_to_sparse.sparse_dim", TORCH_FN(tp::to_sparse_k));
}
