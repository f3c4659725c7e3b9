// Dtypes tpu holds but never computes on: uint16, uint32, uint64 (PyTorch's
// "limited support" unsigned types, which PyTorch's own CPU kernels compute
// in only a few ops) and complex32 (ComplexHalf, which XLA lacks: its 4 bytes
// per element live in a u32 buffer). A CUDA user can hold such tensors, so tpu
// must too: creation, copies (any direction, any view), views, fill_/zero_ and
// item() are native byte moves; every other op runs PyTorch's CPU kernel,
// counted in torch_pjrt.fallbacks() under the op's name, so results and
// errors are CPU's. A lowering written for signed integers or real floats
// would be silently wrong on these types (shifts, division, comparisons,
// casts), so none of them ever sees one.
//
// Routing is by dispatch key, so no glue kernel needs to know: tensors of these
// dtypes carry one extra functionality key, kStorageOnlyKey, ranked above the
// backend (Dense) key and below ADInplaceOrView and Autograd. Its boxed
// fallback below sees every op that reaches the backend with such a tensor
// and either redispatches to the PrivateUse1 kernel (storage ops, views) or
// runs the CPU fallback. The key is FPGA, a functionality key no in-tree
// backend registers kernels for; tensors of every other dtype never carry it,
// so their dispatch is unchanged. A view that changes dtype (view_as_complex,
// view(dtype)) is rekeyed by kernels.cpp; a storage-only tensor that somehow
// lacks the key still cannot compute: run_op refuses it (check_storage_only).
#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include <cstring>
#include <string>

#include "ops/fallback.h"
#include "tensor.h"
#include "storage_dtypes.h"

namespace torch_pjrt {

namespace {
constexpr c10::DispatchKey kStorageOnlyKey = c10::DispatchKey::FPGA;
}  // namespace

bool is_storage_only(at::ScalarType t) {
  return t == at::kUInt16 || t == at::kUInt32 || t == at::kUInt64 || t == at::kComplexHalf;
}

c10::DispatchKeySet tpu_key_set(at::ScalarType t) {
  c10::DispatchKeySet ks(c10::DispatchKey::PrivateUse1);
  return is_storage_only(t) ? ks.add(kStorageOnlyKey) : ks;
}

at::Tensor with_dtype_keys(const at::Tensor& v) {
  bool want = is_storage_only(v.scalar_type());
  if (v.key_set().has(kStorageOnlyKey) == want) return v;
  c10::DispatchKeySet ks = want ? v.key_set().add(kStorageOnlyKey) : v.key_set().remove(kStorageOnlyKey);
  auto impl = c10::make_intrusive<c10::TensorImpl>(c10::TensorImpl::VIEW, c10::Storage(v.storage()),
                                                   ks, v.dtype());
  impl->set_sizes_and_strides(v.sizes(), v.strides(), v.storage_offset());
  return at::Tensor(std::move(impl));
}

void check_storage_only(const char* op, const OpArgs& a, c10::ArrayRef<at::Tensor> outs) {
  // Tensor operands are seen as the core sees them (complex32 reads as u32,
  // like uint32); outputs by their PyTorch dtype. Runtime scalars are made in
  // the dtype the glue computes in, which the outputs show.
  tpj_dtype_t in = TPJ_DTYPE_INVALID;
  for (const auto& arg : a.args)
    if (arg.has_view && tpj_dtype_is_storage_only(arg.view.dtype)) in = arg.view.dtype;
  at::ScalarType out = at::ScalarType::Undefined;
  for (const auto& o : outs)
    if (is_storage_only(o.scalar_type())) out = o.scalar_type();
  if (in == TPJ_DTYPE_INVALID && out == at::ScalarType::Undefined) return;
  // Byte moves are exact in any type: a fill, and a view read into its own
  // dtype (no conversion).
  if (outs.size() == 1 && a.args.size() == 1 && out != at::ScalarType::Undefined) {
    tpj_dtype_t want = to_tpj_dtype(out);
    if (std::strcmp(op, "tpj::full") == 0 && (in == TPJ_DTYPE_INVALID || in == want)) return;
    if (std::strcmp(op, "tpj::view_copy") == 0 && in == want) return;
  }
  TORCH_CHECK_NOT_IMPLEMENTED(false, op, ": ",
                              out != at::ScalarType::Undefined ? c10::toString(out)
                                                               : tpj_dtype_name(in),
                              " is a dtype tpu holds but does not compute in (copies, views "
                              "and fills only); compute it from CPU tensors");
}

namespace {

// Ops that run natively on storage-only tensors: they only create, move or
// describe bytes. Views (an alias that is not written) are added by schema.
bool is_storage_op(const c10::FunctionSchema& s) {
  static const char* const kNames[] = {
      "aten::_copy_from", "aten::_copy_from_and_resize", "aten::copy_", "aten::empty",
      "aten::empty_strided", "aten::resize_", "aten::set_", "aten::_local_scalar_dense",
      "aten::fill_", "aten::zero_", "aten::record_stream", "aten::is_pinned",
  };
  const std::string& name = s.name();
  for (const char* n : kNames)
    if (name == n) return true;
  for (const auto& r : s.returns()) {
    const auto* alias = r.alias_info();
    if (alias && !alias->isWrite()) return true;
  }
  return false;
}

// The first storage-only dtype among the tensor arguments (any device) and
// ScalarType arguments, or Undefined.
at::ScalarType storage_only_arg(const c10::FunctionSchema& s, const torch::jit::Stack& stack) {
  size_t n = s.arguments().size();
  auto args = torch::jit::last(stack, n);
  auto tensor_dtype = [](const at::Tensor& t) {
    return t.defined() && is_storage_only(t.scalar_type()) ? t.scalar_type()
                                                           : at::ScalarType::Undefined;
  };
  for (size_t i = 0; i < n; ++i) {
    const c10::IValue& iv = args[i];
    at::ScalarType t = at::ScalarType::Undefined;
    if (iv.isTensor()) {
      t = tensor_dtype(iv.toTensor());
    } else if (iv.isTensorList()) {
      for (const at::Tensor& x : iv.toTensorList().vec())
        if (t == at::ScalarType::Undefined) t = tensor_dtype(x);
    } else if (iv.isList()) {
      for (const c10::IValue& e : iv.toListRef())
        if (t == at::ScalarType::Undefined && e.isTensor()) t = tensor_dtype(e.toTensor());
    } else if (iv.isInt()) {
      // a dtype= argument (ScalarType or ScalarType?)
      c10::TypePtr rt = s.arguments()[i].real_type();
      if (auto opt = rt->cast<c10::OptionalType>()) rt = opt->getElementType();
      if (rt->kind() == c10::TypeKind::ScalarTypeType) {
        auto st = static_cast<at::ScalarType>(iv.toInt());
        if (is_storage_only(st)) t = st;
      }
    }
    if (t != at::ScalarType::Undefined) return t;
  }
  return at::ScalarType::Undefined;
}

void storage_only_fallback(const c10::OperatorHandle& op, c10::DispatchKeySet ks,
                           torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  at::ScalarType t = at::ScalarType::Undefined;
  if (!is_storage_op(schema)) t = storage_only_arg(schema, *stack);
  if (t == at::ScalarType::Undefined) {
    // A storage op, or an op whose operands only share a storage-only
    // tensor's keys (view_as_real of complex32): the tpu kernel as usual.
    op.redispatchBoxed(ks & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, kStorageOnlyKey),
                       stack);
    return;
  }
  const auto& name = schema.operator_name();
  std::string full = name.name + (name.overload_name.empty() ? "" : "." + name.overload_name);
  dtype_fallback(full.c_str(), t);
  at::native::cpu_fallback(op, stack);
}

}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(_, FPGA, m) {
  m.fallback(
      torch::CppFunction::makeFromBoxedFunction<&torch_pjrt::storage_only_fallback>());
}
