// Kernel glue for the pointwise family (src/ops/pointwise.c): arithmetic,
// comparisons and the unary table ops; rounding, sign, the erf family,
// inverse trig and hyperbolic functions, log2/log10/exp2, reciprocal,
// remainder/fmod, division with a rounding mode, hypot, nan_to_num, isnan;
// the bitwise and logical ops; copysign, signbit, fmax/fmin, heaviside,
// logaddexp/logaddexp2, xlogy, angle, complex, polar, frexp, gcd/lcm; clamp
// (scalar and tensor bounds), masked_fill, rsub, pow with a scalar base,
// conj_physical. The output's dtype and shape come from PyTorch's own
// promotion and broadcasting (at::result_type, at::infer_size,
// c10::promoteTypes); the C core gets the operands, the compute dtype, and
// the output. In-place and out= forms compute the functional result and
// write it into the destination (sharing the buffer when the destination is
// a whole storage, tpj::write_view otherwise).
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/BinaryOps.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cstring>

#include "ops/fallback.h"
#include "ops/write.h"
#include "tensor.h"
#include "dtype_check.h"
#include "storage_dtypes.h"
#include "inplace.h"
#include "glue.h"
#include "layout.h"
#include <ATen/MetaFunctions.h>
#include <string>
#include <ATen/WrapDimUtils.h>
#include <algorithm>
#include <cmath>
#include <limits>
#include <ATen/native/Gelu.h>
#include <sstream>
#include <ATen/AccumulateType.h>
#include <ATen/Dispatch.h>
#include <utility>
#include "forms.h"

namespace torch_pjrt {
namespace {

bool is_one(const at::Scalar& s) {
  if (s.isComplex()) return s.toComplexDouble() == c10::complex<double>(1.0, 0.0);
  if (s.isFloatingPoint()) return s.toDouble() == 1.0;
  return s.toLong() == 1;
}

at::ScalarType default_float() { return c10::typeMetaToScalarType(c10::get_default_dtype()); }

enum class Kind {
  kArith,      // result in the common dtype (add, sub, mul, maximum, pow)
  kTrueDiv,    // integers and bool promote to the default float
  kCompare,    // compute in the common dtype, result bool
};

// in_place (the in-place forms: self): when the result has self's dtype and
// shape and self is its storage's natural tensor, the storage is updated in
// place (inplace.h) and self is returned; else the functional result.
// A result in a storage-only dtype (float16 * 1j gives complex32, which tpu
// holds but does not compute in): CPU's kernel, counted, the result stored on
// tpu. Only add, sub, mul and div reach here (the other binary ops refuse
// complex or give bool).
at::Tensor storage_only_binary(const char* op, const at::Tensor& self, const at::Tensor& other,
                               at::ScalarType out_dtype, const at::Scalar* alpha,
                               const at::Tensor* in_place) {
  dtype_fallback(op, out_dtype);
  at::Tensor s = self.cpu(), o = other.is_cpu() ? other : other.cpu();
  at::Scalar one(1);
  const at::Scalar& al = alpha ? *alpha : one;
  std::string name(op);
  at::Tensor r;
  if (in_place) {  // CPU raises: the result cannot be cast to self's dtype
    if (name == "aten::add.Tensor") s.add_(o, al);
    else if (name == "aten::sub.Tensor") s.sub_(o, al);
    else if (name == "aten::mul.Tensor") s.mul_(o);
    else s.div_(o);
    self.copy_(s);
    return self;
  }
  if (name == "aten::add.Tensor") r = at::add(s, o, al);
  else if (name == "aten::sub.Tensor") r = at::sub(s, o, al);
  else if (name == "aten::mul.Tensor") r = at::mul(s, o);
  else if (name == "aten::div.Tensor") r = at::div(s, o);
  else TORCH_CHECK_NOT_IMPLEMENTED(false, op, " has no kernel for ", out_dtype);
  return r.to(self.device());
}

at::Tensor binary(const char* op, const at::Tensor& self, const at::Tensor& other, Kind kind,
                  const at::Scalar* alpha = nullptr, const at::Tensor* in_place = nullptr) {
  check_supported(self, op);
  check_supported(other, op);
  c10::Device dev = common_device(op, {&self, &other});
  at::ScalarType compute = at::result_type(self, other);
  if (kind == Kind::kTrueDiv && c10::isIntegralType(compute, /*includeBool=*/true))
    compute = default_float();
  if (alpha) at::native::alpha_check(compute, *alpha);
  // strcmp, not std::string: this runs on every eager add/mul/compare
  if (std::strcmp(op, "aten::sub.Tensor") == 0) at::native::sub_check(self, other);
  if (c10::isComplexType(compute)) {
    std::string name(op);
    TORCH_CHECK(name != "aten::maximum" && name != "aten::minimum", name.substr(6),
                " not implemented for complex tensors.");
    bool ordered = name.rfind("aten::lt", 0) == 0 || name.rfind("aten::le", 0) == 0 ||
                   name.rfind("aten::gt", 0) == 0 || name.rfind("aten::ge", 0) == 0;
    TORCH_CHECK_NOT_IMPLEMENTED(!ordered, "\"", name.substr(6, 2), "\" not implemented for '",
                                compute, "'");
  }
  at::ScalarType out_dtype = kind == Kind::kCompare ? at::kBool : compute;
  if (C10_UNLIKELY(is_storage_only(out_dtype)))
    return storage_only_binary(op, self, other, out_dtype, alpha, in_place);
  OpArgs a;
  bool direct = in_place && out_dtype == self.scalar_type() &&
                (self.sizes().equals(other.sizes()) ||
                 self.sizes().equals(at::infer_size_dimvector(self.sizes(), other.sizes()))) &&
                add_in_place_operand(a, self);
  at::Tensor out;
  if (!direct) {
    out = self.sizes().equals(other.sizes())
              ? new_output(self.sizes(), out_dtype, dev)
              : new_output(at::infer_size_dimvector(self.sizes(), other.sizes()), out_dtype, dev);
    add_operand(a, self, dev.index());
  }
  add_operand(a, other, dev.index());
  int64_t attrs[2] = {to_tpj_dtype(compute), 0};
  if (alpha && !is_one(*alpha)) {
    attrs[1] = 1;
    a.scalar(*alpha, compute, dev.index());
  }
  if (direct) {
    run_op_in_place(op, dev.index(), a, attrs, self);
    return self;
  }
  run_pointwise(op, dev.index(), a, attrs, {out});
  return out;
}

enum class UKind { kSame, kFloat };

// in_place: as binary's.
at::Tensor unary(const char* op, const at::Tensor& self, UKind kind,
                 const at::Tensor* in_place = nullptr) {
  check_supported(self, op);
  TORCH_INTERNAL_ASSERT(self.device().is_privateuseone());
  at::ScalarType in = self.scalar_type();
  TORCH_CHECK(!(in == at::kBool && std::string(op) == "aten::neg"),
              "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
              "to invert a mask, use the `~` or `logical_not()` operator instead.");
  TORCH_CHECK(!(in == at::kBool && std::string(op) == "aten::relu"),
              "Boolean inputs not supported for relu");
  TORCH_CHECK_NOT_IMPLEMENTED(!(in == at::kBool && std::string(op) == "aten::abs"),
                              "\"abs\" not implemented for 'Bool'");
  at::ScalarType compute = in;
  if (kind == UKind::kFloat && c10::isIntegralType(in, /*includeBool=*/true))
    compute = default_float();
  at::ScalarType out_dtype = compute;
  if (std::string(op) == "aten::abs" && c10::isComplexType(in)) out_dtype = c10::toRealValueType(in);
  OpArgs a;
  if (in_place && out_dtype == in && add_in_place_operand(a, self)) {
    run_op_in_place(op, self.device().index(), a, {to_tpj_dtype(compute)}, self);
    return self;
  }
  at::Tensor out = new_output(self.sizes(), out_dtype, self.device());
  a.tensor(self);
  run_pointwise(op, self.device().index(), a, {to_tpj_dtype(compute)}, {out});
  return out;
}

at::Tensor where(const at::Tensor& cond, const at::Tensor& self, const at::Tensor& other) {
  const char* op = "aten::where.self";
  check_supported(cond, op);
  check_supported(self, op);
  check_supported(other, op);
  TORCH_CHECK(cond.scalar_type() == at::kBool || cond.scalar_type() == at::kByte,
              "where expected condition to be a boolean tensor, but got a tensor with dtype ",
              cond.scalar_type());
  c10::Device dev = common_device(op, {&cond, &self, &other});
  at::ScalarType dtype = at::result_type(self, other);
  auto sizes = at::infer_size(at::infer_size(cond.sizes(), self.sizes()), other.sizes());
  c10::DeviceGuard guard(dev);
  at::Tensor out = at::empty(sizes, self.options().dtype(dtype).device(dev));
  OpArgs a;
  add_operand(a, cond, dev.index());
  add_operand(a, self, dev.index());
  add_operand(a, other, dev.index());
  run_pointwise(op, dev.index(), a, {to_tpj_dtype(dtype)}, {out});
  return out;
}

// addcmul / addcdiv: self + value * t1 (*|/) t2, promoted like CPU.
at::Tensor addc(const char* op, const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2,
                const at::Scalar& value) {
  for (const at::Tensor* t : {&self, &t1, &t2}) check_supported(*t, op);
  c10::Device dev = common_device(op, {&self, &t1, &t2});
  at::native::ResultTypeState st;
  for (const at::Tensor* t : {&self, &t1, &t2}) st = at::native::update_result_type_state(*t, st);
  at::ScalarType dtype = at::native::result_type(st);
  if (std::string(op) == "aten::addcdiv")
    TORCH_CHECK(!(c10::isIntegralType(t1.scalar_type(), true) &&
                  c10::isIntegralType(t2.scalar_type(), true)),
                "Integer division with addcdiv is no longer supported, and in a future release "
                "addcdiv will perform a true division of tensor1 and tensor2. The historic "
                "addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / "
                "tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / "
                "tensor2) for float inputs. The future addcdiv behavior is just the latter "
                "implementation: (input + value * tensor1 / tensor2), for all dtypes.");
  auto sizes = at::infer_size(at::infer_size(self.sizes(), t1.sizes()), t2.sizes());
  c10::DeviceGuard guard(dev);
  at::Tensor out = at::empty(sizes, self.options().dtype(dtype).device(dev));
  OpArgs a;
  add_operand(a, self, dev.index());
  add_operand(a, t1, dev.index());
  add_operand(a, t2, dev.index());
  a.scalar(value, dtype, dev.index());
  run_pointwise(op, dev.index(), a, {to_tpj_dtype(dtype)}, {out});
  return out;
}

// lerp: weight a Scalar (wrapped) or a tensor; CPU requires matching dtypes.
at::Tensor lerp(const char* op, const at::Tensor& self, const at::Tensor& end,
                const at::Tensor& weight) {
  for (const at::Tensor* t : {&self, &end, &weight}) check_supported(*t, op);
  TORCH_CHECK(self.scalar_type() == end.scalar_type(), "expected dtype ", self.scalar_type(),
              " for `end` but got dtype ", end.scalar_type());
  bool wrapped = weight.unsafeGetTensorImpl()->is_wrapped_number();
  // A 0-d weight tensor is not checked: it takes part in type promotion
  // as a 0-d operand does (a complex one makes the result complex).
  bool zero_dim = !wrapped && weight.dim() == 0;
  TORCH_CHECK(wrapped || zero_dim || self.scalar_type() == weight.scalar_type(),
              "expected dtype ", self.scalar_type(), " for `weight` but got dtype ",
              weight.scalar_type());
  // CPU's lerp kernels are built for floating and complex types only.
  at::ScalarType st = zero_dim ? at::result_type(self, weight) : self.scalar_type();
  check_cpu_dtype(at::isFloatingType(st) || at::isComplexType(st), st,
                  wrapped ? "lerp_kernel_scalar" : "lerp_kernel_tensor");
  c10::Device dev = common_device(op, {&self, &end, &weight});
  auto sizes = at::infer_size(at::infer_size(self.sizes(), end.sizes()), weight.sizes());
  c10::DeviceGuard guard(dev);
  at::Tensor out = at::empty(sizes, self.options().dtype(st).device(dev));
  OpArgs a;
  add_operand(a, self, dev.index());
  add_operand(a, end, dev.index());
  add_operand(a, weight, dev.index());
  // lerp.Scalar's weight is a parameter of CPU's kernel, not an operand of
  // its TensorIterator: it does not count toward the output's layout.
  if (wrapped) --a.cpu_scalar_operands;
  run_pointwise(op, dev.index(), a, {to_tpj_dtype(st)}, {out});
  return out;
}

// lerp_: CPU's TensorIterator checks the broadcast shape before the kernel
// looks at dtypes.
void check_lerp_shape(const at::Tensor& self, const at::Tensor& end, const at::Tensor& weight) {
  auto sizes = at::infer_size(at::infer_size(self.sizes(), end.sizes()), weight.sizes());
  TORCH_CHECK(self.sizes() == at::IntArrayRef(sizes), "output with shape ", self.sizes(),
              " doesn't match the broadcast shape ", at::IntArrayRef(sizes));
}

// An in-place form's end: nothing left to do when the storage was updated in
// place (result is dst), else result is written into dst.
at::Tensor& assign_unless_self(at::Tensor& dst, const at::Tensor& result, const char* op) {
  if (!result.is_same(dst)) assign_result(dst, result, op);
  return dst;
}

}  // namespace


}  // namespace torch_pjrt

namespace {
using torch_pjrt::Kind;
using torch_pjrt::UKind;
using at::Scalar;
using at::Tensor;
namespace tp = torch_pjrt;

#define TPJ_BINARY_FAMILY(aten, op, kind)                                                    \
  m.impl(aten ".Tensor", [](const Tensor& a, const Tensor& b) {                              \
    return tp::binary(op, a, b, kind);                                                       \
  });                                                                                        \
  m.impl(aten "_.Tensor", [](Tensor& a, const Tensor& b) -> Tensor& {                        \
    tp::check_no_overlap(a, {&b});                                                              \
    return tp::assign_unless_self(a, tp::binary(op, a, b, kind, nullptr, &a), op);           \
  });                                                                                        \
  m.impl(aten ".out", [](const Tensor& a, const Tensor& b, Tensor& o) -> Tensor& {           \
    tp::check_no_overlap(o, {&a, &b});                                                          \
    return tp::out_result(o, tp::binary(op, a, b, kind), op);                                  \
  });

#define TPJ_ALPHA_FAMILY(aten, op)                                                           \
  m.impl(aten ".Tensor", [](const Tensor& a, const Tensor& b, const Scalar& alpha) {         \
    return tp::binary(op, a, b, Kind::kArith, &alpha);                                       \
  });                                                                                        \
  m.impl(aten "_.Tensor", [](Tensor& a, const Tensor& b, const Scalar& alpha) -> Tensor& {   \
    tp::check_no_overlap(a, {&b});                                                              \
    return tp::assign_unless_self(a, tp::binary(op, a, b, Kind::kArith, &alpha, &a), op);    \
  });                                                                                        \
  m.impl(aten ".out",                                                                        \
         [](const Tensor& a, const Tensor& b, const Scalar& alpha, Tensor& o) -> Tensor& {   \
           tp::check_no_overlap(o, {&a, &b});                                                   \
           return tp::out_result(o, tp::binary(op, a, b, Kind::kArith, &alpha), op);           \
         });

#define TPJ_COMPARE_FAMILY(aten, op)                                                         \
  m.impl(aten ".Tensor", [](const Tensor& a, const Tensor& b) {                              \
    return tp::binary(op ".Tensor", a, b, Kind::kCompare);                                   \
  });                                                                                        \
  m.impl(aten ".Scalar", [](const Tensor& a, const Scalar& b) {                              \
    return tp::binary(op ".Scalar", a, tp::wrap_scalar(b), Kind::kCompare);                         \
  });                                                                                        \
  m.impl(aten ".Tensor_out", [](const Tensor& a, const Tensor& b, Tensor& o) -> Tensor& {    \
    return tp::out_result(o, tp::binary(op ".Tensor", a, b, Kind::kCompare), op);              \
  });                                                                                        \
  m.impl(aten ".Scalar_out", [](const Tensor& a, const Scalar& b, Tensor& o) -> Tensor& {    \
    return tp::out_result(o, tp::binary(op ".Scalar", a, tp::wrap_scalar(b), Kind::kCompare), op);    \
  });

#define TPJ_UNARY_FAMILY(aten, op, kind)                                                     \
  m.impl(aten, [](const Tensor& a) { return tp::unary(op, a, kind); });                      \
  m.impl(aten "_", [](Tensor& a) -> Tensor& {                                                \
    tp::check_no_overlap(a, {});                                                                \
    return tp::assign_unless_self(a, tp::unary(op, a, kind, &a), op);                        \
  });                                                                                        \
  m.impl(aten ".out", [](const Tensor& a, Tensor& o) -> Tensor& {                            \
    /* TensorIterator's unary_op: out's dtype is the input's (abs of complex aside) */        \
    TORCH_CHECK(kind != UKind::kSame || a.is_complex() || o.scalar_type() == a.scalar_type(),  \
                "Found dtype ", o.scalar_type(), " but expected ", a.scalar_type());          \
    tp::check_no_overlap(o, {&a});                                                              \
    return tp::out_result(o, tp::unary(op, a, kind), op);                                      \
  });

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  TPJ_ALPHA_FAMILY("add", "aten::add.Tensor")
  TPJ_ALPHA_FAMILY("sub", "aten::sub.Tensor")
  TPJ_BINARY_FAMILY("mul", "aten::mul.Tensor", Kind::kArith)
  TPJ_BINARY_FAMILY("div", "aten::div.Tensor", Kind::kTrueDiv)
  m.impl("maximum", [](const Tensor& a, const Tensor& b) {
    return tp::binary("aten::maximum", a, b, Kind::kArith);
  });
  m.impl("minimum", [](const Tensor& a, const Tensor& b) {
    return tp::binary("aten::minimum", a, b, Kind::kArith);
  });
  m.impl("pow.Tensor_Tensor", [](const Tensor& a, const Tensor& b) {
    TORCH_CHECK_NOT_IMPLEMENTED(at::result_type(a, b) != at::kBool,
                                "\"pow\" not implemented for 'Bool'");
    return tp::binary("aten::pow.Tensor_Tensor", a, b, Kind::kArith);
  });
  m.impl("pow.Tensor_Scalar", [](const Tensor& a, const Scalar& b) {
    TORCH_CHECK(!(at::isIntegralType(a.scalar_type(), true) && b.isIntegral(true) &&
                  b.toLong() < 0),
                "Integers to negative integer powers are not allowed.");
    // x ** 2 as x * x, as CPU's kernel does: a runtime exponent is a generic
    // pow per element on XLA:CPU (about 12x slower on 16K floats), and for
    // complex x it keeps CPU's infinities (exp(2 log x) makes them NaN)
    if ((at::isFloatingType(a.scalar_type()) || at::isComplexType(a.scalar_type())) &&
        !b.isComplex() && b.toDouble() == 2.0)
      return tp::binary("aten::mul.Tensor", a, a, Kind::kArith);
    return tp::binary("aten::pow.Tensor_Scalar", a, tp::wrap_scalar(b), Kind::kArith);
  });
  TPJ_COMPARE_FAMILY("eq", "aten::eq")
  TPJ_COMPARE_FAMILY("ne", "aten::ne")
  TPJ_COMPARE_FAMILY("lt", "aten::lt")
  TPJ_COMPARE_FAMILY("le", "aten::le")
  TPJ_COMPARE_FAMILY("gt", "aten::gt")
  TPJ_COMPARE_FAMILY("ge", "aten::ge")
  TPJ_UNARY_FAMILY("exp", "aten::exp", UKind::kFloat)
  TPJ_UNARY_FAMILY("log", "aten::log", UKind::kFloat)
  TPJ_UNARY_FAMILY("sin", "aten::sin", UKind::kFloat)
  TPJ_UNARY_FAMILY("cos", "aten::cos", UKind::kFloat)
  TPJ_UNARY_FAMILY("tanh", "aten::tanh", UKind::kFloat)
  TPJ_UNARY_FAMILY("sqrt", "aten::sqrt", UKind::kFloat)
  TPJ_UNARY_FAMILY("rsqrt", "aten::rsqrt", UKind::kFloat)
  TPJ_UNARY_FAMILY("sigmoid", "aten::sigmoid", UKind::kFloat)
  TPJ_UNARY_FAMILY("log1p", "aten::log1p", UKind::kFloat)
  TPJ_UNARY_FAMILY("expm1", "aten::expm1", UKind::kFloat)
  TPJ_UNARY_FAMILY("neg", "aten::neg", UKind::kSame)
  TPJ_UNARY_FAMILY("abs", "aten::abs", UKind::kSame)
  m.impl("where.self", TORCH_FN(tp::where));
  // scaled_dot_product_attention's math path (_safe_softmax) writes where's out= form
  m.impl("where.self_out", [](const at::Tensor& c, const at::Tensor& s, const at::Tensor& o,
                              at::Tensor& out) -> at::Tensor& {
    return tp::out_result(out, tp::where(c, s, o), "aten::where.self_out");
  });
  m.impl("addcmul", [](const Tensor& s, const Tensor& a, const Tensor& b, const Scalar& v) {
    return tp::addc("aten::addcmul", s, a, b, v);
  });
  m.impl("addcmul_", [](Tensor& s, const Tensor& a, const Tensor& b, const Scalar& v) -> Tensor& {
    tp::check_no_overlap(s, {&a, &b});
    tp::assign_result(s, tp::addc("aten::addcmul", s, a, b, v), "aten::addcmul_");
    return s;
  });
  m.impl("addcdiv", [](const Tensor& s, const Tensor& a, const Tensor& b, const Scalar& v) {
    return tp::addc("aten::addcdiv", s, a, b, v);
  });
  m.impl("addcdiv_", [](Tensor& s, const Tensor& a, const Tensor& b, const Scalar& v) -> Tensor& {
    tp::check_no_overlap(s, {&a, &b});
    tp::assign_result(s, tp::addc("aten::addcdiv", s, a, b, v), "aten::addcdiv_");
    return s;
  });
  m.impl("lerp.Scalar", [](const Tensor& s, const Tensor& e, const Scalar& w) {
    return tp::lerp("aten::lerp.Scalar", s, e, tp::wrap_scalar(w));
  });
  m.impl("lerp.Tensor", [](const Tensor& s, const Tensor& e, const Tensor& w) {
    return tp::lerp("aten::lerp.Tensor", s, e, w);
  });
  m.impl("lerp_.Scalar", [](Tensor& s, const Tensor& e, const Scalar& w) -> Tensor& {
    tp::check_no_overlap(s, {&e});
    tp::check_lerp_shape(s, e, tp::wrap_scalar(w));
    tp::assign_result(s, tp::lerp("aten::lerp.Scalar", s, e, tp::wrap_scalar(w)), "aten::lerp_");
    return s;
  });
  m.impl("lerp_.Tensor", [](Tensor& s, const Tensor& e, const Tensor& w) -> Tensor& {
    tp::check_no_overlap(s, {&e, &w});
    tp::check_lerp_shape(s, e, w);
    tp::assign_result(s, tp::lerp("aten::lerp.Tensor", s, e, w), "aten::lerp_");
    return s;
  });
  m.impl("relu", [](const Tensor& a) { return tp::unary("aten::relu", a, UKind::kSame); });
  m.impl("relu_", [](Tensor& a) -> Tensor& {
    tp::assign_result(a, tp::unary("aten::relu", a, UKind::kSame), "aten::relu");
    return a;
  });
}

namespace torch_pjrt {
namespace {

using at::Scalar;
using at::ScalarType;
using at::Tensor;

ScalarType float_default() { return c10::typeMetaToScalarType(c10::get_default_dtype()); }
bool is_int(ScalarType t) { return c10::isIntegralType(t, /*includeBool=*/true); }

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
  OpArgs a;
  for (const Tensor* t : ts) add_operand(a, *t, dev.index());
  run_pointwise(op, dev.index(), a, {to_tpj_dtype(compute)}, {out});
  return out;
}

// ---- pointwise --------------------------------------------------------------

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
  OpArgs a;
  a.tensor(self.view(it));
  run_pointwise(op, self.device().index(), a, {to_tpj_dtype(t)}, {man, ex});
  return {man.view(t), ex};
}
}  // namespace
}  // namespace torch_pjrt
namespace {
namespace tp = torch_pjrt;
using at::Scalar;
using at::Tensor;

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

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("heaviside", TORCH_FN(tp::heaviside));
  m.impl("heaviside_", [](Tensor& a, const Tensor& b) -> Tensor& {
    return inplace<tp::heaviside>(a, b, "aten::heaviside_");
  });
  m.impl("angle", TORCH_FN(tp::angle));
  m.impl("complex", TORCH_FN(complex_fn));
  m.impl("polar", TORCH_FN(polar_fn));

  m.impl("rsub.Tensor", TORCH_FN(tp::rsub));
  m.impl("clamp.Tensor", TORCH_FN(tp::clamp_tensor));
  m.impl("clamp_min.Tensor", [](const Tensor& s, const Tensor& lo) {
    return tp::clamp_tensor(s, lo, std::nullopt);
  });
  m.impl("clamp_max.Tensor", [](const Tensor& s, const Tensor& hi) {
    return tp::clamp_tensor(s, std::nullopt, hi);
  });
  m.impl("pow.Scalar", TORCH_FN(tp::pow_scalar));
  m.impl("frexp.Tensor", TORCH_FN(tp::frexp));
  m.impl("_conj_physical", TORCH_FN(tp::conj_physical));
  m.impl("conj_physical.out", [](const Tensor& s, Tensor& out) -> Tensor& {
    return tp::out_result(out, tp::conj_physical(s), "aten::conj_physical.out");
  });
}

namespace torch_pjrt {
namespace {

using at::Tensor;
using Pair = std::tuple<Tensor, Tensor>;
using PairRef = std::tuple<Tensor&, Tensor&>;

// ---- gcd, lcm -------------------------------------------------------------------

template <const char* kOp, const char* kKernel>
Tensor gcd_like(const Tensor& a, const Tensor& b) {
  at::ScalarType t = at::result_type(a, b);
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isIntegralType(t, /*includeBool=*/false), "\"", kKernel,
                              "\" not implemented for '", t, "'");
  Tensor m = at::empty(at::infer_size(a.sizes(), b.sizes()),
                       at::TensorOptions().dtype(t).device(at::kMeta));
  return run_outs(kOp, {&a, &b}, {m}, {}, /*pointwise=*/true)[0];
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
}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  namespace tp = torch_pjrt;
  m.impl("gcd", TORCH_FN((tp::gcd_like<tp::kGcd, tp::kGcdCpu>)));
  m.impl("gcd_", TORCH_FN((tp::inplace<tp::gcd_like<tp::kGcd, tp::kGcdCpu>>)));
  m.impl("lcm", TORCH_FN((tp::gcd_like<tp::kLcm, tp::kLcmCpu>)));
  m.impl("lcm_", TORCH_FN((tp::inplace<tp::gcd_like<tp::kLcm, tp::kLcmCpu>>)));
}

namespace torch_pjrt {
namespace {

using at::Scalar;
using at::Tensor;

Tensor clamp_op(const Tensor& self, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  Tensor m = at::meta::clamp(to_meta(self), lo, hi);
  std::vector<int64_t> attrs{to_tpj_dtype(m.scalar_type()), lo.has_value(), hi.has_value()};
  if (lo && hi) return run_like("aten::clamp", {&self}, m, attrs, {&*lo, &*hi}, nullptr, true);
  if (lo) return run_like("aten::clamp", {&self}, m, attrs, {&*lo}, nullptr, true);
  if (hi) return run_like("aten::clamp", {&self}, m, attrs, {&*hi}, nullptr, true);
  return run_like("aten::clamp", {&self}, m, attrs, {}, nullptr, true);
}

void check_mask(const Tensor& self, const Tensor& mask) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_fill_ only supports boolean masks, but got "
              "mask with dtype ", mask.dtype());
  (void)self;
}

// The C type CPU's masked_fill names in its overflow message.
const char* c_type_name(at::ScalarType t) {
  switch (t) {
    case at::kBool: return "bool";
    case at::kByte: return "uint8_t";
    case at::kChar: return "int8_t";
    case at::kShort: return "int16_t";
    case at::kInt: return "int";
    case at::kLong: return "int64_t";
    case at::kHalf: return "c10::Half";
    case at::kBFloat16: return "c10::BFloat16";
    case at::kFloat: return "float";
    case at::kDouble: return "double";
    default: return c10::toString(t);
  }
}

// Out of place, masked_fill broadcasts self and mask together and keeps
// self's dtype. Computed here: PyTorch's meta kernel for it is Python
// (about 180 us a call).
Tensor masked_fill_meta(const Tensor& self, const Tensor& mask) {
  return at::empty(at::infer_size(self.sizes(), mask.sizes()),
                   at::TensorOptions().device(c10::kMeta).dtype(self.scalar_type()));
}

// in_place: see run_like.
Tensor masked_fill_impl(const Tensor& self, const Tensor& mask, const Scalar& value,
                        const Tensor* in_place) {
  check_mask(self, mask);
  // CPU converts a complex value to bool (z != 0) without a check
  TORCH_CHECK(!value.isComplex() || self.is_complex() || self.scalar_type() == at::kBool,
              "value cannot be converted to type ",
              c_type_name(self.scalar_type()), " without overflow");
  Tensor m = masked_fill_meta(self, mask);
  return run_like("aten::masked_fill.Scalar", {&self, &mask}, m, {to_tpj_dtype(m.scalar_type())},
                  {&value}, in_place);
}

Tensor masked_fill_op(const Tensor& self, const Tensor& mask, const Scalar& value) {
  return masked_fill_impl(self, mask, value, nullptr);
}

Tensor masked_fill_tensor(const Tensor& self, const Tensor& mask, const Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got "
              "tensor with ", value.dim(), " dimension(s).");
  check_mask(self, mask);
  TORCH_CHECK(!value.is_complex() || self.is_complex() || self.scalar_type() == at::kBool,
              "value cannot be converted to type ",
              c_type_name(self.scalar_type()), " without overflow");
  Tensor m = masked_fill_meta(self, mask);
  return run_like("aten::masked_fill.Tensor", {&self, &mask, &value}, m,
                  {to_tpj_dtype(m.scalar_type())});
}
}  // namespace

// In-place forms used by the ops above (assign lives in ops.cpp).
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  m.impl("clamp", TORCH_FN(clamp_op));
  // TensorIterator's unary_op checks out= has the input's dtype
  m.impl("clamp.out", [](const at::Tensor& s, const std::optional<at::Scalar>& lo,
                         const std::optional<at::Scalar>& hi, at::Tensor& o) -> at::Tensor& {
    at::Tensor r = clamp_op(s, lo, hi);  // its dtype is clamp's promoted one
    TORCH_CHECK(o.scalar_type() == r.scalar_type(), "Found dtype ", o.scalar_type(),
                " but expected ", r.scalar_type());
    check_no_overlap(o, {&s});
    return out_result(o, r, "aten::clamp.out");
  });
  m.impl("clamp_", [](at::Tensor& s, const std::optional<at::Scalar>& lo,
                      const std::optional<at::Scalar>& hi) -> at::Tensor& {
    assign_result(s, clamp_op(s, lo, hi), "aten::clamp_");
    return s;
  });
  m.impl("clamp_min_", [](at::Tensor& s, const at::Scalar& lo) -> at::Tensor& {
    assign_result(s, clamp_op(s, lo, std::nullopt), "aten::clamp_min_");
    return s;
  });
  m.impl("clamp_max_", [](at::Tensor& s, const at::Scalar& hi) -> at::Tensor& {
    assign_result(s, clamp_op(s, std::nullopt, hi), "aten::clamp_max_");
    return s;
  });
  m.impl("clamp_min", [](const at::Tensor& s, const at::Scalar& lo) {
    return clamp_op(s, lo, std::nullopt);
  });
  m.impl("clamp_max", [](const at::Tensor& s, const at::Scalar& hi) {
    return clamp_op(s, std::nullopt, hi);
  });
  m.impl("masked_fill.Scalar", TORCH_FN(masked_fill_op));
  m.impl("masked_fill.Tensor", TORCH_FN(masked_fill_tensor));
  m.impl("masked_fill_.Scalar", [](at::Tensor& s, const at::Tensor& mask,
                                   const at::Scalar& v) -> at::Tensor& {
    // CPU's masked_fill_ writes through an expanded self (with a deprecation
    // warning): no internal-overlap check
    Tensor r = masked_fill_impl(s, mask, v, &s);
    if (!r.is_same(s)) assign_overlapping(s, r, "aten::masked_fill_");
    return s;
  });
  m.impl("masked_fill_.Tensor", [](at::Tensor& s, const at::Tensor& mask,
                                   const at::Tensor& v) -> at::Tensor& {
    assign_overlapping(s, masked_fill_tensor(s, mask, v), "aten::masked_fill_");
    return s;
  });
}
