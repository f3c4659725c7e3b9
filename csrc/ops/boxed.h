// One boxed kernel for every overload whose glue would only forward its
// arguments to a C lowering: tensors (and wrapped numbers) become operands,
// ints and bools attributes (or one of the reduction, loss and dim
// layouts), the output comes from PyTorch's meta function (or, where that
// is slow or missing, a named shape rule), and a few rule flags and an
// optional check carry what CPU's kernels refuse. A family lists its
// overloads in a table of BoxedOp; register_boxed registers each, with its
// in-place and out= forms, against one functor. See docs/ARCHITECTURE.md,
// "Boxed glue".
#ifndef TORCH_PJRT_BOXED_H_
#define TORCH_PJRT_BOXED_H_

#include <ATen/MetaFunctions.h>
#include <ATen/core/boxing/impl/make_boxed_from_unboxed_functor.h>
#include <torch/library.h>

#include <cstdint>
#include <type_traits>
#include <utility>

namespace torch_pjrt {

// Rule flags of a BoxedOp; 0 is: output from the meta function, compute
// dtype accumulator(output dtype) (float32 for half types), no refusals.
enum BoxedRule : uint32_t {
  // forms registered besides the functional overload: name_ (in place) and
  // name.out / name.<overload>_out (PyTorch's naming)
  kInplace = 1u << 0,
  kOut = 1u << 1,
  kForms = kInplace | kOut,
  // output without a meta call: the broadcast of the tensor operands, in
  // their promoted dtype; with kFloatResult integers and bool promote to the
  // default float (erf, tan, ...); with kBoolResult it is bool (isnan)
  kBroadcast = 1u << 2,
  kFloatResult = 1u << 3,
  kBoolResult = 1u << 4,
  // output shaped and typed like the input: the last tensor operand (x of
  // a backward op's (grad_output, x)), for a meta kernel that is Python and
  // slow, or missing
  kLikeInput = 1u << 5,
  // compute dtype: the output's own (sign, bitwise, nextafter) / the first
  // operand's (isnan and friends compare in the input's dtype)
  kExactCompute = 1u << 6,
  kComputeInput = 1u << 7,
  // CPU's refusals, as NotImplementedError "\"cpu_kernel\" not implemented
  // for 'T'": T is the output dtype for kNoHalf, the operands' promoted
  // dtype for the others
  kNoHalf = 1u << 8,
  kNoBool = 1u << 9,
  kNoIntegral = 1u << 10,    // bool and integers
  kIntegralOnly = 1u << 11,  // bool and integers only (bitwise)
  kNoComplex = 1u << 12,
  kFloatingOnly = 1u << 13,  // float, double and the half types
  // CPU's kernel (counted as a fallback) for complex operands / for outputs
  // other than float64
  kComplexOnCpu = 1u << 14,
  kDoubleOnly = 1u << 15,
  // integer division: CPU raises ZeroDivisionError, XLA would not
  kCheckDivisor = 1u << 16,
  // Scalar arguments are runtime 0-d arguments in the compute dtype (with
  // kScalarsAsOutput: the output's dtype, as CPU's kernel reads them), after
  // the tensors (activation parameters), not operands in schema order
  kRuntimeScalars = 1u << 17,
  kScalarsAsOutput = 1u << 18,
  // the input (see kLikeInput) floating, or complex too, else CPU's refusal
  kFloatingInput = 1u << 19,
  kComplexInputOk = 1u << 20,
  // the out= form is named name.grad_input (a backward op's)
  kGradInputOut = 1u << 21,
  // an empty output runs no program (the lowering may not take zero sizes)
  kSkipEmpty = 1u << 22,
  // complex operands: NotImplementedError "<name> is not supported for
  // complex inputs" (floor, ceil, trunc)
  kNoComplexByName = 1u << 23,
  // Not elementwise: the lowering computes in logical order (run_op) and
  // reads one of these attribute layouts instead of {compute dtype, [attr],
  // ints and bools in schema order}:
  // kReduce: {compute, keepdim, n, dims...}: the dims are the schema's int
  // list (absent or empty: all) or its int (one dim), wrapped and sorted;
  // keepdim its bool (false without); a dtype argument is the meta's.
  kReduce = 1u << 24,
  // kLoss: {compute, reduction, has_weight}: reduction the schema's int
  // (0..2, else "<op>: N is not a valid value for reduction"), has_weight
  // whether its optional tensor was given (then an operand in schema
  // order); float arguments are runtime scalars in the compute dtype.
  kLoss = 1u << 25,
  // the first two tensor operands broadcast, in CPU's TensorIterator
  // wording, checked before the meta function (whose wording differs)
  kBroadcastCheck = 1u << 26,
  // the row's check runs after the meta function (its errors come first)
  kCheckAfterMeta = 1u << 27,
  // kDim: {compute, dim}: the schema's int, wrapped against the first
  // tensor (0 for a 0-d one); not elementwise, as kReduce
  kDim = 1u << 28,
  // CPU's kernel (counted) when the operands' promoted dtype or the output's
  // is not floating: it computes in the operands' dtype and raises its own
  // error for integers, where the meta function would promote (igamma)
  kNonFloatingOnCpu = 1u << 29,
};

// An op's meta function on the functional arguments (tensors as meta
// tensors, a copy it may move from): TPJ_META(fn) is at::meta::fn,
// PyTorch's C++ structured meta function, called without the dispatcher
// (whose Meta kernel is a Python one for most of these ops, about a
// millisecond a call).
using MetaFn = at::Tensor (*)(c10::IValue* args);
// CPU's argument rules in CPU's words, and checks of values that need the
// host (a probability range), on the functional arguments; raises.
using CheckFn = void (*)(const c10::IValue* args);

struct BoxedOp {
  const char* name;        // the functional overload: "special_i0e", "bitwise_and.Scalar"
  const char* lowering;    // its entry in the lowering table (src/ops/table.c)
  uint32_t rules;          // BoxedRule flags
  const char* cpu_kernel;  // CPU's kernel name in refusals, or nullptr
  int64_t attr;            // an attribute after the compute dtype, or -1
  MetaFn meta;             // with neither kBroadcast nor kLikeInput; nullptr: the
                           // dispatcher's Meta kernel (slow where it is Python)
  CheckFn check = nullptr;  // before the meta function (kCheckAfterMeta: after)
};

// Unpacks the stack as the dispatcher's boxing does (an int list as a
// vector, an optional one as an OptionalArray).
template <class R, class... A, size_t... I>
at::Tensor call_meta(R (*f)(A...), c10::IValue* v, std::index_sequence<I...>) {
  return f(c10::impl::ivalue_to_arg<std::decay_t<A>, false>::call(v[I])...);
}
template <class R, class... A>
at::Tensor call_meta(R (*f)(A...), c10::IValue* v) {
  return call_meta(f, v, std::index_sequence_for<A...>{});
}
template <auto F>
at::Tensor meta_fn(c10::IValue* v) {
  return call_meta(F, v);
}
#define TPJ_META(fn) (&::torch_pjrt::meta_fn<&at::meta::fn>)
// The same for an overloaded meta function: sig picks the overload.
#define TPJ_META_AS(fn, sig) (&::torch_pjrt::meta_fn<static_cast<sig>(&at::meta::fn)>)
// A row whose overload, lowering and meta function share fn's name.
#define TPJ_BOXED(fn, rules, kernel, attr) {#fn, "aten::" #fn, rules, kernel, attr, TPJ_META(fn)}

// Registers each op (and its forms) in m (a TORCH_LIBRARY_IMPL(aten,
// PrivateUse1) block). Checks each lowering is in the C table and each
// schema has only arguments the kernel knows (Tensor, Scalar, int, bool;
// with kReduce, kLoss or kDim also Tensor?, int[], int[]?, ScalarType(?),
// float, SymInt).
void register_boxed(torch::Library& m, const BoxedOp* ops, size_t n);

// Integer division by zero raises on CPU; XLA would give a silent value.
// This waits for the divisor b (as index validation does); in a traced graph
// a tpu divisor is not checked (a compiled graph cannot wait on values).
void check_divisor(const at::Tensor& b);

template <size_t N>
void register_boxed(torch::Library& m, const BoxedOp (&ops)[N]) {
  register_boxed(m, ops, N);
}

}  // namespace torch_pjrt

#endif  // TORCH_PJRT_BOXED_H_
