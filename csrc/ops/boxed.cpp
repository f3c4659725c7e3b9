// The boxed kernel behind boxed.h: one functor per registered overload and
// form, holding its descriptor row (src/ops/desc.h), the kinds of its
// arguments (read once from the schema at registration), its C++ meta
// function if PyTorch has one, and the functional overload's handle, whose
// Meta kernel gives the output otherwise and whose CPU kernel runs the
// dtypes the row places on CPU. Every rule comes from the row: the output
// dtype (tpj_op_desc_out_dtype), CPU's refusals and the compute dtype
// (tpj_op_desc_plan), CPU's argument checks (the row's check).
#include "boxed.h"

#include <ATen/ATen.h>
#include <ATen/MetaFunctions.h>
#include <ATen/core/boxing/impl/make_boxed_from_unboxed_functor.h>
#include <ATen/ExpandUtils.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/TypeProperties.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "graph.h"
#include "ops/fallback.h"
#include "ops/write.h"
#include "runtime.h"
#include "tensor.h"
#include "layout.h"
#include "ops/ops.h"

extern "C" {
#include "ops/desc.h"
}

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

// A row's output from PyTorch's C++ meta function, called without the
// dispatcher (whose Meta kernel is a Python one for most of these ops, about
// a millisecond a call), on the functional arguments (tensors as meta
// tensors, a copy it may move from).
using MetaFn = Tensor (*)(c10::IValue* args);

// Unpacks the stack as the dispatcher's boxing does (an int list as a
// vector, an optional one as an OptionalArray).
template <class R, class... A, size_t... I>
Tensor call_meta(R (*f)(A...), c10::IValue* v, std::index_sequence<I...>) {
  return f(c10::impl::ivalue_to_arg<std::decay_t<A>, false>::call(v[I])...);
}
template <auto F>
Tensor meta_fn(c10::IValue* v) {
  return call_meta(F, v, std::make_index_sequence<c10::guts::infer_function_traits_t<
                             std::remove_pointer_t<decltype(F)>>::number_of_parameters>{});
}
#define TPJ_META(fn) (&meta_fn<&at::meta::fn>)
#define TPJ_META_AS(fn, sig) (&meta_fn<static_cast<sig>(&at::meta::fn)>)

Tensor sum_meta(c10::IValue* v) {
  return at::meta::sum(v[0].toTensor(), std::nullopt, false, v[1].toOptional<at::ScalarType>());
}
using AllMeta = Tensor (*)(const Tensor&);
using DimMeta = Tensor (*)(const Tensor&, int64_t, bool);
using DimsMeta = Tensor (*)(const Tensor&, at::OptionalIntArrayRef, bool);

// The rows whose meta function PyTorch writes in C++; the others (and the
// BROADCAST / LIKE_INPUT rows, which need none) use the dispatcher's.
struct MetaRow {
  const char* aten;
  MetaFn fn;
};
const MetaRow kMeta[] = {
    {"_log_softmax", TPJ_META(_log_softmax)},
    {"_log_softmax_backward_data", TPJ_META(_log_softmax_backward_data)},
    {"_softmax", TPJ_META(_softmax)},
    {"_softmax_backward_data", TPJ_META(_softmax_backward_data)},
    {"all", TPJ_META_AS(all, AllMeta)},
    {"all.dim", TPJ_META_AS(all, DimMeta)},
    {"all.dims", TPJ_META_AS(all, DimsMeta)},
    {"amax", TPJ_META(amax)},
    {"amin", TPJ_META(amin)},
    {"any", TPJ_META_AS(any, AllMeta)},
    {"any.dim", TPJ_META_AS(any, DimMeta)},
    {"any.dims", TPJ_META_AS(any, DimsMeta)},
    {"digamma", TPJ_META(digamma)},
    {"elu", TPJ_META(elu)},
    {"elu_backward", TPJ_META(elu_backward)},
    {"hardsigmoid", TPJ_META(hardsigmoid)},
    {"hardsigmoid_backward", TPJ_META(hardsigmoid_backward)},
    {"hardshrink", TPJ_META(hardshrink)},
    {"hardshrink_backward", TPJ_META(hardshrink_backward)},
    {"i0", TPJ_META(i0)},
    {"igamma", TPJ_META(igamma)},
    {"igammac", TPJ_META(igammac)},
    {"leaky_relu", TPJ_META(leaky_relu)},
    {"leaky_relu_backward", TPJ_META(leaky_relu_backward)},
    {"lgamma", TPJ_META(lgamma)},
    {"mean.dim", TPJ_META(mean)},
    {"mish", TPJ_META(mish)},
    {"mse_loss", TPJ_META(mse_loss)},
    {"nextafter", TPJ_META(nextafter)},
    {"polygamma", TPJ_META(polygamma)},
    {"prod.dim_int", TPJ_META(prod)},
    {"sigmoid_backward", TPJ_META(sigmoid_backward)},
    {"silu", TPJ_META(silu)},
    {"silu_backward", TPJ_META(silu_backward)},
    {"sinc", TPJ_META(sinc)},
    {"smooth_l1_loss", TPJ_META(smooth_l1_loss)},
    {"softplus", TPJ_META(softplus)},
    {"softplus_backward", TPJ_META(softplus_backward)},
    {"softshrink", TPJ_META(softshrink)},
    {"softshrink_backward", TPJ_META(softshrink_backward)},
    {"special_airy_ai", TPJ_META(special_airy_ai)},
    {"special_bessel_j0", TPJ_META(special_bessel_j0)},
    {"special_bessel_j1", TPJ_META(special_bessel_j1)},
    {"special_bessel_y0", TPJ_META(special_bessel_y0)},
    {"special_bessel_y1", TPJ_META(special_bessel_y1)},
    {"special_chebyshev_polynomial_t", TPJ_META(special_chebyshev_polynomial_t)},
    {"special_chebyshev_polynomial_u", TPJ_META(special_chebyshev_polynomial_u)},
    {"special_chebyshev_polynomial_v", TPJ_META(special_chebyshev_polynomial_v)},
    {"special_chebyshev_polynomial_w", TPJ_META(special_chebyshev_polynomial_w)},
    {"special_entr", TPJ_META(special_entr)},
    {"special_erfcx", TPJ_META(special_erfcx)},
    {"special_hermite_polynomial_h", TPJ_META(special_hermite_polynomial_h)},
    {"special_hermite_polynomial_he", TPJ_META(special_hermite_polynomial_he)},
    {"special_i0e", TPJ_META(special_i0e)},
    {"special_i1", TPJ_META(special_i1)},
    {"special_i1e", TPJ_META(special_i1e)},
    {"special_laguerre_polynomial_l", TPJ_META(special_laguerre_polynomial_l)},
    {"special_legendre_polynomial_p", TPJ_META(special_legendre_polynomial_p)},
    {"special_log_ndtr", TPJ_META(special_log_ndtr)},
    {"special_modified_bessel_i0", TPJ_META(special_modified_bessel_i0)},
    {"special_modified_bessel_i1", TPJ_META(special_modified_bessel_i1)},
    {"special_modified_bessel_k0", TPJ_META(special_modified_bessel_k0)},
    {"special_modified_bessel_k1", TPJ_META(special_modified_bessel_k1)},
    {"special_ndtri", TPJ_META(special_ndtri)},
    {"special_scaled_modified_bessel_k0", TPJ_META(special_scaled_modified_bessel_k0)},
    {"special_scaled_modified_bessel_k1", TPJ_META(special_scaled_modified_bessel_k1)},
    {"special_shifted_chebyshev_polynomial_t", TPJ_META(special_shifted_chebyshev_polynomial_t)},
    {"special_shifted_chebyshev_polynomial_u", TPJ_META(special_shifted_chebyshev_polynomial_u)},
    {"special_shifted_chebyshev_polynomial_v", TPJ_META(special_shifted_chebyshev_polynomial_v)},
    {"special_shifted_chebyshev_polynomial_w", TPJ_META(special_shifted_chebyshev_polynomial_w)},
    {"special_spherical_bessel_j0", TPJ_META(special_spherical_bessel_j0)},
    {"special_xlog1py", TPJ_META(special_xlog1py)},
    {"special_zeta", TPJ_META(special_zeta)},
    {"sum", &sum_meta},
    {"sum.dim_IntList", TPJ_META(sum)},
    {"tanh_backward", TPJ_META(tanh_backward)},
    {"threshold", TPJ_META(threshold)},
    {"threshold_backward", TPJ_META(threshold_backward)},
};

MetaFn meta_of(const char* aten) {
  for (const MetaRow& m : kMeta)
    if (std::strcmp(m.aten, aten) == 0) return m.fn;
  return nullptr;
}

// The C view of a call's arguments (desc.h), for the row's check. Holds the
// int lists' storage and the dtype names.
struct CallView {
  tpj_op_call_t call;
  std::vector<std::vector<int64_t>> lists;

  // The smallest and largest value of tensor argument arg: one wait.
  static tpj_status_t value_range(const tpj_op_call_t* c, int arg, double* lo, double* hi,
                                  int* known) {
    const auto* v = static_cast<const c10::IValue*>(c->glue);
    const Tensor& t = v[arg].toTensor();
    *known = 0;
    if (t.numel() == 0 || tracing()) return nullptr;  // a compiled graph cannot wait on values
    try {
      Tensor lim = at::stack({at::amin(t), at::amax(t)}).to(at::kCPU, at::kDouble);
      *lo = lim[0].item<double>();
      *hi = lim[1].item<double>();
      *known = 1;
    } catch (const std::exception& e) {
      return tpj_status_make(TPJ_INTERNAL, "%s", e.what());
    }
    return nullptr;
  }

  CallView(const c10::IValue* v, const std::vector<Arg>& kinds, ScalarType promoted) {
    const size_t n = kinds.size();
    std::memset(&call, 0, sizeof(call));
    TORCH_INTERNAL_ASSERT(n <= TPJ_OP_MAX_ARGS, "boxed glue: too many arguments");
    call.nargs = static_cast<int>(n);
    call.promoted = to_tpj_dtype(promoted);
    call.promoted_name = c10::toString(promoted);
    call.value_range = &value_range;
    call.glue = const_cast<c10::IValue*>(v);
    for (size_t i = 0; i < n; ++i) {
      tpj_op_arg_t& a = call.args[i];
      const c10::IValue& x = v[i];
      if (x.isNone()) continue;
      if (kinds[i] == Arg::kDtype) {
        a.kind = TPJ_ARG_DTYPE;
        a.dtype = to_tpj_dtype(x.toScalarType());
        a.dtype_name = c10::toString(x.toScalarType());
      } else if (x.isTensor() && x.toTensor().defined()) {
        const Tensor& t = x.toTensor();
        a.kind = TPJ_ARG_TENSOR;
        a.dtype = to_tpj_dtype(t.scalar_type());
        a.dtype_name = c10::toString(t.scalar_type());
        a.ndim = static_cast<int>(t.dim());
        a.dims = t.sizes().data();
        a.numel = t.numel();
      } else if (x.isBool()) {
        a.kind = TPJ_ARG_BOOL;
        a.i = x.toBool();
      } else if (x.isInt()) {
        a.kind = TPJ_ARG_INT;
        a.i = x.toInt();
      } else if (x.isDouble()) {
        a.kind = TPJ_ARG_SCALAR;
        a.f = x.toDouble();
      } else if (x.isScalar()) {
        const at::Scalar s = x.toScalar();
        a.kind = TPJ_ARG_SCALAR;
        a.f = s.isComplex() ? s.toComplexDouble().real() : s.toDouble();
        if (s.isIntegral(false)) a.i = s.toLong();
      } else if (x.isIntList()) {
        a.kind = TPJ_ARG_INTS;
        if (lists.empty()) lists.reserve(n);  // no reallocation: ints point into it
        lists.push_back(x.toIntVector());
        a.n = static_cast<int>(lists.back().size());
        a.ints = lists.back().data();
      }
    }
  }
};

// Raises a row's status as PyTorch's exception kind (desc.h's codes).
void check_row(const tpj_op_desc_t& op, const c10::IValue* v, const std::vector<Arg>& kinds,
               ScalarType promoted) {
  if (!op.check) return;
  CallView view(v, kinds, promoted);
  TPJ_CHECK(op.check(&view.call));
}

// A meta stand-in for an operand; a CPU 0-d one (a wrapped Python number)
// stays as it is, weak in promotion, as meta kernels take it.
Tensor meta_like(const Tensor& t) {
  if (t.device().is_cpu() && t.dim() == 0) return t;
  return to_meta(t);
}

class BoxedKernel final : public c10::OperatorKernel {
 public:
  BoxedKernel(const tpj_op_desc_t& op, Form form, std::vector<Arg> args, c10::OperatorHandle fn,
              std::string base)
      : op_(op), meta_(meta_of(op.aten)), form_(form), args_(std::move(args)), fn_(std::move(fn)),
        base_(std::move(base)) {}

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
    // REDUCE / LOSS / DIM: the arguments their attribute layouts name
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
          if (r & TPJ_RULE_RUNTIME_SCALARS) scalars.push_back(v[i].toScalar());
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
    const ScalarType promoted_t = ts.size() == 1 ? ts[0].scalar_type() : promoted(ts);
    if (!(r & TPJ_RULE_CHECK_AFTER_META)) check_row(op_, v, args_, promoted_t);
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
    if (r & TPJ_RULE_BROADCAST_CHECK) (void)at::infer_size(ts[0].sizes(), ts[1].sizes());

    // the output's sizes and dtype: the row's type rule, or the meta function
    std::vector<int64_t> sizes;
    ScalarType out_t;
    const Tensor& input = ts.back();
    if (r & (TPJ_RULE_LIKE_INPUT | TPJ_RULE_BROADCAST)) {
      if (r & TPJ_RULE_LIKE_INPUT) {
        sizes = input.sizes().vec();
      } else {
        sizes = ts[0].sizes().vec();
        for (size_t i = 1; i < ts.size(); ++i) sizes = at::infer_size(sizes, ts[i].sizes());
      }
      out_t = scalar_type_of(tpj_op_desc_out_dtype(
          &op_, to_tpj_dtype(promoted_t), to_tpj_dtype(input.scalar_type()),
          to_tpj_dtype(c10::typeMetaToScalarType(c10::get_default_dtype()))));
    } else {
      Stack m(v, v + args_.size());
      for (size_t i = 0; i < args_.size(); ++i)
        if (m[i].isTensor() && m[i].toTensor().defined()) m[i] = meta_like(m[i].toTensor());
      Tensor meta;
      if (meta_) {
        meta = meta_(m.data());
      } else {
        fn_.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::Meta), &m);
        meta = m[0].toTensor();
      }
      sizes = meta.sizes().vec();
      out_t = meta.scalar_type();
    }
    if (r & TPJ_RULE_CHECK_AFTER_META) check_row(op_, v, args_, promoted_t);
    if (r & TPJ_RULE_REDUCE) {
      // tpj_attrs_reduce_t
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
    } else if (r & TPJ_RULE_DIM) {
      // tpj_attrs_dim_t
      attrs.resize(1);
      attrs.push_back(c10::maybe_wrap_dim(v[int_at].toInt(), ts[0].dim()));
    } else if (r & TPJ_RULE_LOSS) {
      // tpj_attrs_loss_t
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
    // CPU's refusals, where the call runs, and in which dtype: the row's plan
    tpj_op_dtypes_t dts = {to_tpj_dtype(promoted_t), to_tpj_dtype(ts[0].scalar_type()),
                           to_tpj_dtype(input.scalar_type()), to_tpj_dtype(out_t)};
    tpj_op_plan_t plan;
    TPJ_CHECK(tpj_op_desc_plan(&op_, &dts, &plan));
    if (plan.on_cpu) return on_cpu(v, scalar_type_of(plan.cpu_dtype), dev);
    if ((r & TPJ_RULE_CHECK_DIVISOR) && c10::isIntegralType(out_t, true) && ts[0].numel() > 0)
      check_divisor(ts[1]);

    attrs[0] = plan.compute;
    c10::DeviceGuard guard(dev);
    OpArgs a;
    ScalarType sd = scalar_type_of(plan.scalars);
    Tensor out = new_output(sizes, out_t, dev);
    if (out.numel() == 0 && (r & TPJ_RULE_SKIP_EMPTY)) return out;
    for (const Tensor& t : ts) add_operand(a, t, dev.index());
    for (const Scalar& s : scalars) a.scalar(s, sd, dev.index());
    if (r & (TPJ_RULE_REDUCE | TPJ_RULE_LOSS | TPJ_RULE_DIM)) run_op(op, dev.index(), a, attrs, {out});
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

  const tpj_op_desc_t& op_;
  const MetaFn meta_;  // PyTorch's C++ meta function, or nullptr: the dispatcher's
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
    TORCH_INTERNAL_ASSERT(arg_kind(a.real_type(), rules & (TPJ_RULE_REDUCE | TPJ_RULE_LOSS | TPJ_RULE_DIM), &k), "boxed glue: ",
                          s.name(), " has argument ", a.name(), " of a type it does not pass");
    kinds.push_back(k);
  }
  int tensors = 0;
  for (Arg k : kinds)
    tensors += k == Arg::kTensor || k == Arg::kOptTensor ||
               (k == Arg::kScalar && !(rules & TPJ_RULE_RUNTIME_SCALARS));
  TORCH_INTERNAL_ASSERT(tensors >= 1 && tensors <= 4, "boxed glue: ", s.name(), " operands");
  return kinds;
}

void register_one(torch::Library& m, const tpj_op_desc_t& op, Form form, const std::string& name,
                  const std::vector<Arg>& kinds, const c10::OperatorHandle& fn,
                  const std::string& base) {
  m.impl(name.c_str(), torch::CppFunction::makeFromBoxedFunctor(
                           std::make_unique<BoxedKernel>(op, form, kinds, fn, base)));
}

}  // namespace
}  // namespace torch_pjrt

// Every descriptor row of the C op table, with its in-place and out= forms.
// Checks each lowering is in the C table and each schema has only arguments
// the kernel knows (Tensor, Scalar, int, bool; with REDUCE, LOSS or DIM also
// Tensor?, int[], int[]?, ScalarType(?), float, SymInt).
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  for (int i = 0; i < tpj_ops_desc_count(); ++i) {
    const tpj_op_desc_t& op = *tpj_ops_desc_at(i);
    TORCH_INTERNAL_ASSERT(tpj_ops_lookup(op.lowering), "boxed glue: no lowering ", op.lowering);
    std::string full = op.aten;
    size_t dot = full.find('.');
    std::string base = full.substr(0, dot);
    std::string overload = dot == std::string::npos ? "" : full.substr(dot + 1);
    c10::OperatorHandle fn =
        c10::Dispatcher::singleton().findSchemaOrThrow(("aten::" + base).c_str(), overload.c_str());
    std::vector<Arg> kinds = arg_kinds(fn.schema(), op.rules);
    register_one(m, op, Form::kFunctional, full, kinds, fn, base);
    // PyTorch's names: foo_ / foo_.Scalar in place, foo.out / foo.Scalar_out
    if (op.rules & TPJ_RULE_INPLACE)
      register_one(m, op, Form::kInplace, base + "_" + (overload.empty() ? "" : "." + overload),
                   kinds, fn, base);
    if (op.rules & TPJ_RULE_OUT)
      register_one(m, op, Form::kOut,
                   base + "." + ((op.rules & TPJ_RULE_GRAD_INPUT_OUT) ? "grad_input"
                                 : overload.empty()                  ? "out"
                                                                     : overload + "_out"),
                   kinds, fn, base);
  }
}
