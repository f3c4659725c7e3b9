// The boxed kernel behind boxed.h: one functor per registered overload,
// holding its BoxedOp, the kinds of its arguments (read once from the
// schema at registration) and the functional overload's handle, whose Meta
// kernel gives the output and whose CPU kernel runs the dtypes a lowering
// does not take.
#include "boxed.h"

#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/TypeProperties.h>
#include <c10/core/DeviceGuard.h>

#include <string>
#include <vector>

#include "common.h"
#include "layout.h"
#include "ops/ops.h"

namespace torch_pjrt {

void check_divisor(const at::Tensor& b) {
  if (tracing() && !b.device().is_cpu()) return;  // a compiled graph cannot wait on values
  bool zero;
  if (b.device().is_cpu()) zero = b.numel() > 0 && (b == 0).any().item<bool>();
  else zero = b.numel() > 0 && (b.cpu() == 0).any().item<bool>();
  TORCH_CHECK(!zero, "ZeroDivisionError");
}

namespace {

using at::Scalar;
using at::ScalarType;
using at::Tensor;
using Stack = torch::jit::Stack;

enum class Form { kFunctional, kInplace, kOut };
enum class Arg : uint8_t {
  kTensor, kScalar, kInt, kBool,
  // kReduce and kLoss rows only
  kOptTensor, kIntList, kOptIntList, kDtype, kFloat, kSymInt,
};

bool integral(ScalarType t) { return c10::isIntegralType(t, /*includeBool=*/true); }

[[noreturn]] void refuse(const char* kernel, ScalarType t) {
  TORCH_CHECK_NOT_IMPLEMENTED(false, "\"", kernel, "\" not implemented for '", t, "'");
  TORCH_INTERNAL_ASSERT(false);
}

// A meta stand-in for an operand; a CPU 0-d one (a wrapped Python number)
// stays as it is, weak in promotion, as meta kernels take it.
Tensor meta_like(const Tensor& t) {
  if (t.device().is_cpu() && t.dim() == 0) return t;
  return to_meta(t);
}

class BoxedKernel final : public c10::OperatorKernel {
 public:
  BoxedKernel(const BoxedOp& op, Form form, std::vector<Arg> args, c10::OperatorHandle fn,
              std::string base)
      : op_(op), form_(form), args_(std::move(args)), fn_(std::move(fn)), base_(std::move(base)) {}

  void operator()(const c10::OperatorHandle&, c10::DispatchKeySet, Stack* stack) {
    size_t n = args_.size() + (form_ == Form::kOut ? 1 : 0);
    c10::IValue* v = stack->data() + (stack->size() - n);
    Tensor result = functional(v);
    if (form_ == Form::kFunctional) {
      torch::jit::drop(*stack, n);
      torch::jit::push(*stack, std::move(result));
      return;
    }
    // in place: self is argument 0; out=: the last argument
    Tensor dst = form_ == Form::kInplace ? v[0].toTensor() : v[n - 1].toTensor();
    std::string name = "aten::" + base_ + (form_ == Form::kInplace ? "_" : "");
    if (form_ == Form::kInplace) {
      assign_result(dst, result, name.c_str());
    } else {
      at::Tensor out = dst;
      out_result(out, result, name.c_str());
    }
    torch::jit::drop(*stack, n);
    torch::jit::push(*stack, std::move(dst));
  }

 private:
  // The functional result of the arguments v[0 .. args_.size()).
  Tensor functional(const c10::IValue* v) {
    const uint32_t r = op_.rules;
    const char* op = op_.lowering;
    c10::SmallVector<Tensor, 4> ts;
    c10::SmallVector<Scalar, 3> scalars;
    c10::SmallVector<int64_t, 4> attrs{0};
    if (op_.attr >= 0) attrs.push_back(op_.attr);
    // kReduce / kLoss: the arguments their attribute layouts name
    int dims_at = -1, int_at = -1, bool_at = -1;
    bool has_opt = false;
    for (size_t i = 0; i < args_.size(); ++i) {
      switch (args_[i]) {
        case Arg::kTensor: ts.push_back(v[i].toTensor()); break;
        case Arg::kOptTensor:
          if (v[i].isTensor() && v[i].toTensor().defined()) {
            ts.push_back(v[i].toTensor());
            has_opt = true;
          }
          break;
        case Arg::kScalar:
          if (r & kRuntimeScalars) scalars.push_back(v[i].toScalar());
          else ts.push_back(wrap_scalar(v[i].toScalar()));
          break;
        case Arg::kFloat: scalars.push_back(v[i].toDouble()); break;
        case Arg::kInt:
          if (int_at < 0) int_at = static_cast<int>(i);
          attrs.push_back(v[i].toInt());
          break;
        case Arg::kSymInt:
          if (int_at < 0) int_at = static_cast<int>(i);
          attrs.push_back(v[i].toSymInt().expect_int());
          break;
        case Arg::kBool:
          if (bool_at < 0) bool_at = static_cast<int>(i);
          attrs.push_back(v[i].toBool());
          break;
        case Arg::kIntList:
        case Arg::kOptIntList: dims_at = static_cast<int>(i); break;
        case Arg::kDtype: break;  // the meta function's
      }
    }
    if (op_.check && !(r & kCheckAfterMeta)) op_.check(v);
    for (const Tensor& t : ts) check_supported(t, op);
    c10::Device dev = operands_device(op, ts);
    if (form_ != Form::kFunctional) {
      // what TensorIterator checks before writing dst (no partial overlap)
      const Tensor& dst = form_ == Form::kInplace ? v[0].toTensor() : v[args_.size()].toTensor();
      c10::SmallVector<const Tensor*, 3> in;
      for (size_t i = form_ == Form::kInplace ? 1 : 0; i < ts.size(); ++i)
        if (!(ts[i].device().is_cpu() && ts[i].dim() == 0)) in.push_back(&ts[i]);
      check_overlap(dst, in);
    }
    if (r & kBroadcastCheck) (void)at::infer_size(ts[0].sizes(), ts[1].sizes());

    // the output's sizes and dtype
    std::vector<int64_t> sizes;
    ScalarType out_t;
    const Tensor& input = ts.back();
    if (r & kLikeInput) {
      sizes = input.sizes().vec();
      out_t = input.scalar_type();
    } else if (r & kBroadcast) {
      sizes = ts[0].sizes().vec();
      for (size_t i = 1; i < ts.size(); ++i) sizes = at::infer_size(sizes, ts[i].sizes());
      out_t = ts.size() == 1 ? ts[0].scalar_type() : promoted(ts);
      if ((r & kFloatResult) && integral(out_t))
        out_t = c10::typeMetaToScalarType(c10::get_default_dtype());
      if (r & kBoolResult) out_t = at::kBool;
    } else {
      Stack m(v, v + args_.size());
      for (size_t i = 0; i < args_.size(); ++i)
        if (m[i].isTensor() && m[i].toTensor().defined()) m[i] = meta_like(m[i].toTensor());
      Tensor meta;
      if (op_.meta) {
        meta = op_.meta(m.data());
      } else {
        fn_.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::Meta), &m);
        meta = m[0].toTensor();
      }
      sizes = meta.sizes().vec();
      out_t = meta.scalar_type();
    }
    if (op_.check && (r & kCheckAfterMeta)) op_.check(v);
    if (r & kReduce) {
      // {compute, keepdim, n, dims...}
      const Tensor& self = ts[0];
      std::vector<int64_t> dims;
      if (dims_at >= 0 && !v[dims_at].isNone()) {
        std::vector<int64_t> named = v[dims_at].toIntVector();
        dims = reduced_dims(self, named);
      } else if (dims_at >= 0) {
        dims = reduced_dims(self, std::nullopt);
      } else if (int_at >= 0) {
        if (self.dim() > 0) dims.push_back(c10::maybe_wrap_dim(v[int_at].toInt(), self.dim()));
      } else {
        dims = reduced_dims(self, std::nullopt);
      }
      attrs.resize(1);
      attrs.push_back(bool_at >= 0 && v[bool_at].toBool());
      attrs.push_back(static_cast<int64_t>(dims.size()));
      attrs.append(dims.begin(), dims.end());
    } else if (r & kDim) {
      // {compute, dim}
      attrs.resize(1);
      attrs.push_back(c10::maybe_wrap_dim(v[int_at].toInt(), ts[0].dim()));
    } else if (r & kLoss) {
      // {compute, reduction, has_weight}
      int64_t reduction = v[int_at].toInt();
      TORCH_CHECK(reduction >= 0 && reduction <= 2, op, ": ", reduction,
                  " is not a valid value for reduction");
      attrs.resize(1);
      attrs.push_back(reduction);
      attrs.push_back(has_opt);
    }

    // TensorIterator checks that the result casts to an in-place op's self
    // before the kernel looks at the dtype (CPU's "can't be cast" comes
    // before its "not implemented for")
    if (form_ == Form::kInplace) {
      ScalarType self_t = v[0].toTensor().scalar_type();
      TORCH_CHECK(c10::canCast(out_t, self_t), "result type ", out_t,
                  " can't be cast to the desired output type ", self_t);
    }
    // CPU's refusals, and the dtypes CPU's kernel serves
    if ((r & kNoComplexByName) && c10::isComplexType(ts[0].scalar_type()))
      TORCH_CHECK_NOT_IMPLEMENTED(false, base_, " is not supported for complex inputs");
    if (r & (kNoBool | kNoIntegral | kIntegralOnly | kNoComplex | kFloatingOnly)) {
      ScalarType t = ts.size() == 1 ? ts[0].scalar_type() : promoted(ts);
      if (((r & kNoBool) && t == at::kBool) || ((r & kNoIntegral) && integral(t)) ||
          ((r & kIntegralOnly) && !integral(t)) || ((r & kNoComplex) && c10::isComplexType(t)) ||
          ((r & kFloatingOnly) && !c10::isFloatingType(t)))
        refuse(op_.cpu_kernel, t);
    }
    if (r & kFloatingInput) {
      ScalarType t = input.scalar_type();
      if (!c10::isFloatingType(t) && !((r & kComplexInputOk) && c10::isComplexType(t)))
        refuse(op_.cpu_kernel, t);
    }
    if ((r & kNoHalf) && (out_t == at::kHalf || out_t == at::kBFloat16))
      refuse(op_.cpu_kernel, out_t);
    if (r & (kComplexOnCpu | kDoubleOnly | kNonFloatingOnCpu)) {
      ScalarType t = ts.size() == 1 ? ts[0].scalar_type() : promoted(ts);
      if (((r & kComplexOnCpu) && c10::isComplexType(t)) ||
          ((r & kDoubleOnly) && out_t != at::kDouble) ||
          ((r & kNonFloatingOnCpu) && !(c10::isFloatingType(t) && c10::isFloatingType(out_t))))
        return on_cpu(v, (r & kNonFloatingOnCpu) ? out_t : t, dev);
    }
    if ((r & kCheckDivisor) && integral(out_t) && ts[0].numel() > 0) check_divisor(ts[1]);

    ScalarType cd = (r & kExactCompute) ? out_t
                    : (r & kComputeInput) ? ts[0].scalar_type() : accumulator(out_t);
    attrs[0] = to_tpj_dtype(cd);
    c10::DeviceGuard guard(dev);
    OpArgs a;
    ScalarType sd = (r & kScalarsAsOutput) ? out_t : cd;
    Tensor out = new_output(sizes, out_t, dev);
    if (out.numel() == 0 && (r & kSkipEmpty)) return out;
    for (const Tensor& t : ts) add_operand(a, t, dev.index());
    for (const Scalar& s : scalars) a.scalar(s, sd, dev.index());
    if (r & (kReduce | kLoss | kDim)) run_op(op, dev.index(), a, attrs, {out});
    else run_pointwise(op, dev.index(), a, attrs, {out});
    return out;
  }

  static ScalarType promoted(const c10::SmallVector<Tensor, 4>& ts) {
    if (ts.size() == 2) return at::result_type(ts[0], ts[1]);
    at::native::ResultTypeState s;
    for (const Tensor& t : ts) s = at::native::update_result_type_state(t, s);
    return at::native::result_type(s);
  }

  static c10::Device operands_device(const char* op, const c10::SmallVector<Tensor, 4>& ts) {
    switch (ts.size()) {
      case 1: return common_device(op, {&ts[0]});
      case 2: return common_device(op, {&ts[0], &ts[1]});
      case 3: return common_device(op, {&ts[0], &ts[1], &ts[2]});
      default: return common_device(op, {&ts[0], &ts[1], &ts[2], &ts[3]});
    }
  }

  static void check_overlap(const Tensor& dst, const c10::SmallVector<const Tensor*, 3>& in) {
    switch (in.size()) {
      case 0: check_no_overlap(dst, {}); break;
      case 1: check_no_overlap(dst, {in[0]}); break;
      default: check_no_overlap(dst, {in[0], in[1]}); break;
    }
  }

  // CPU's kernel on CPU copies, its result back on dev; counted once it
  // ran (a call CPU refuses raises CPU's error, with no fallback warning).
  Tensor on_cpu(const c10::IValue* v, ScalarType t, c10::Device dev) {
    Stack c(v, v + args_.size());
    for (size_t i = 0; i < args_.size(); ++i)
      if (c[i].isTensor() && c[i].toTensor().defined()) c[i] = c[i].toTensor().cpu();
    fn_.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), &c);
    dtype_fallback(op_.lowering, t);
    return c[0].toTensor().to(dev);
  }

  const BoxedOp& op_;
  const Form form_;
  const std::vector<Arg> args_;  // the functional overload's arguments
  const c10::OperatorHandle fn_;
  const std::string base_;       // "bitwise_and": names in assign_result's errors
};

bool is_int_list(const c10::TypePtr& t) {
  return t->kind() == c10::TypeKind::ListType &&
         t->castRaw<c10::ListType>()->getElementType()->kind() == c10::TypeKind::IntType;
}

// The kind of an argument of schema type t; false when the kernel cannot
// pass it (the attribute kinds only with kReduce, kLoss or kDim).
bool arg_kind(const c10::TypePtr& t, bool attrs, Arg* out) {
  switch (t->kind()) {
    case c10::TypeKind::TensorType: *out = Arg::kTensor; return true;
    case c10::TypeKind::NumberType: *out = Arg::kScalar; return true;
    case c10::TypeKind::IntType: *out = Arg::kInt; return true;
    case c10::TypeKind::BoolType: *out = Arg::kBool; return true;
    default: break;
  }
  if (!attrs) return false;
  if (t->kind() == c10::TypeKind::FloatType) *out = Arg::kFloat;
  else if (t->kind() == c10::TypeKind::SymIntType) *out = Arg::kSymInt;
  else if (t->kind() == c10::TypeKind::ScalarTypeType) *out = Arg::kDtype;
  else if (is_int_list(t)) *out = Arg::kIntList;
  else if (t->kind() != c10::TypeKind::OptionalType) return false;
  else {
    const c10::TypePtr& e = t->castRaw<c10::OptionalType>()->getElementType();
    if (e->kind() == c10::TypeKind::TensorType) *out = Arg::kOptTensor;
    else if (e->kind() == c10::TypeKind::ScalarTypeType) *out = Arg::kDtype;
    else if (is_int_list(e)) *out = Arg::kOptIntList;
    else return false;
  }
  return true;
}

// The argument kinds of a functional schema; refuses kinds it cannot pass.
std::vector<Arg> arg_kinds(const c10::FunctionSchema& s, uint32_t rules) {
  std::vector<Arg> kinds;
  for (const c10::Argument& a : s.arguments()) {
    Arg k;
    TORCH_INTERNAL_ASSERT(arg_kind(a.real_type(), rules & (kReduce | kLoss | kDim), &k), "boxed glue: ",
                          s.name(), " has argument ", a.name(), " of a type it does not pass");
    kinds.push_back(k);
  }
  int tensors = 0;
  for (Arg k : kinds)
    tensors += k == Arg::kTensor || k == Arg::kOptTensor ||
               (k == Arg::kScalar && !(rules & kRuntimeScalars));
  TORCH_INTERNAL_ASSERT(tensors >= 1 && tensors <= 4, "boxed glue: ", s.name(), " operands");
  return kinds;
}

void register_one(torch::Library& m, const BoxedOp& op, Form form, const std::string& name,
                  const std::vector<Arg>& kinds, const c10::OperatorHandle& fn,
                  const std::string& base) {
  m.impl(name.c_str(), torch::CppFunction::makeFromBoxedFunctor(
                           std::make_unique<BoxedKernel>(op, form, kinds, fn, base)));
}

}  // namespace

void register_boxed(torch::Library& m, const BoxedOp* ops, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const BoxedOp& op = ops[i];
    TORCH_INTERNAL_ASSERT(tpj_ops_lookup(op.lowering), "boxed glue: no lowering ", op.lowering);
    std::string full = op.name;
    size_t dot = full.find('.');
    std::string base = full.substr(0, dot);
    std::string overload = dot == std::string::npos ? "" : full.substr(dot + 1);
    c10::OperatorHandle fn =
        c10::Dispatcher::singleton().findSchemaOrThrow(("aten::" + base).c_str(), overload.c_str());
    std::vector<Arg> kinds = arg_kinds(fn.schema(), op.rules);
    register_one(m, op, Form::kFunctional, full, kinds, fn, base);
    // PyTorch's names: foo_ / foo_.Scalar in place, foo.out / foo.Scalar_out
    if (op.rules & kInplace)
      register_one(m, op, Form::kInplace, base + "_" + (overload.empty() ? "" : "." + overload),
                   kinds, fn, base);
    if (op.rules & kOut)
      register_one(m, op, Form::kOut,
                   base + "." + ((op.rules & kGradInputOut) ? "grad_input"
                                 : overload.empty()          ? "out"
                                                             : overload + "_out"),
                   kinds, fn, base);
  }
}

}  // namespace torch_pjrt
