// out= overloads served by their native functional sibling.
//
// Many composites call X.out (pow.Tensor_Scalar_out, norm.out, mm.out, ...)
// while only X is registered for tpu. Rather than one kernel per op, the boxed
// fallback (fallback.cpp) first asks try_native_out_form(): every unregistered
// op passes through it, so one mechanism covers all of them, including out=
// overloads of ops other families register later.
//
// Which ops: an out= overload (every written argument is a kwarg-only Tensor
// `out`, one per return) whose functional sibling has a tpu kernel of its
// own. The sibling is found through c10::Dispatcher: same base name, not
// mutable, argument names and types equal to the out= schema minus its out
// arguments, one plain Tensor return per out. The lookup is cached per op.
//
// How it runs, matching what PyTorch's CPU kernel does with out=:
//  1. The out= op itself runs on meta tensors (with a meta copy of each out).
//     That runs the op's argument checks (dtype castable to out, shapes),
//     gives at::native::resize_output's warning for a non-empty out of the
//     wrong shape — exactly once — and the size and strides the out ends up
//     with. Where the meta function refuses the call, the op runs on CPU
//     copies of the arguments so that the error is CPU's own, word for word
//     (meta functions phrase some differently). Ops without a meta kernel
//     skip this step and use at::native::resize_output directly.
//  2. The functional sibling runs on tpu (its own kernel, as a user call).
//  3. Each result is written into its out: resized to the meta out's shape
//     (and restrided as the meta out was, when it was resized), then
//     assign_result() (ops.cpp) — the buffer is shared when the out is a
//     whole storage of the same dtype, otherwise tpj::write_view writes the
//     view (non-contiguous outs work) converting to the out's dtype.
// Dtypes: when a result's dtype differs from its out's, only ops tagged
// `pointwise` (TensorIterator: compute in the inputs' common dtype, cast to
// out, canCast checked) are exact with a cast. For any other op the out's
// dtype can change the computation (sum.IntList_out into an int64 out sums
// truncated values), so such a call discards the functional result, returns
// false before anything is written, and the caller runs CPU's kernel (a
// counted fallback).
// A served call is not a fallback: nothing is counted in fallbacks(), and
// TORCH_PJRT_FALLBACK=error lets it run.
// Pointwise ops also get TensorIterator's overlap checks (no internal overlap
// in out, no partial overlap with an input).
// Not handled (CPU fallback stays): outs that are Tensor lists, ops whose
// functional form is not native, factory out= forms (their functional form
// takes dtype/device options the out= form has not).
#include <ATen/MemoryOverlap.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <ATen/native/Resize.h>
#include <c10/util/Exception.h>

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "ops/write.h"
#include "tensor.h"
#include "fallback.h"
#include "ops/outform.h"

namespace torch_pjrt {
namespace {

struct Plan {
  std::optional<c10::OperatorHandle> functional;  // unset: not served here
  std::vector<size_t> outs;                       // out argument positions
  std::vector<size_t> ins;                        // the functional's arguments
  bool pointwise = false;
  // A cast of the functional result into out is exact: pointwise ops, and
  // ops that only move values (cat: FSDP2's _chunk_cat writes bf16
  // gradients into its f32 reduce-scatter buffer through cat.out).
  bool cast_exact = false;
};

bool plain_tensor(const c10::TypePtr& t) { return t->kind() == c10::TypeKind::TensorType; }

Plan make_plan(const c10::OperatorHandle& op) {
  Plan p;
  const c10::FunctionSchema& s = op.schema();
  const auto& args = s.arguments();
  for (size_t i = 0; i < args.size(); i++) {
    const auto* alias = args[i].alias_info();
    bool writes = alias && alias->isWrite();
    if (args[i].is_out()) {
      if (!plain_tensor(args[i].type())) return p;
      p.outs.push_back(i);
    } else if (writes) {
      return p;  // mutates an input: not an out= form
    } else {
      p.ins.push_back(i);
    }
  }
  if (p.outs.empty() || s.returns().size() != p.outs.size() || s.is_vararg()) return p;
  auto& d = c10::Dispatcher::singleton();
  for (const c10::OperatorName& name : d.getAllOpNamesForDispatchKey(c10::DispatchKey::PrivateUse1)) {
    if (name.name != s.name()) continue;
    auto h = d.findOp(name);
    if (!h || !h->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1)) continue;
    const c10::FunctionSchema& f = h->schema();
    if (f.is_mutable() || f.is_vararg() || f.arguments().size() != p.ins.size() ||
        f.returns().size() != p.outs.size())
      continue;
    bool same = true;
    for (size_t k = 0; k < p.ins.size() && same; k++) {
      const auto& a = f.arguments()[k];
      const auto& b = args[p.ins[k]];
      same = a.name() == b.name() && a.type()->str() == b.type()->str();
    }
    for (const auto& r : f.returns())
      same = same && plain_tensor(r.type()) && r.alias_info() == nullptr;
    if (!same) continue;
    p.functional = *h;
    p.pointwise = op.hasTag(at::Tag::pointwise);
    p.cast_exact = p.pointwise || op.schema().name() == "aten::cat";
    return p;
  }
  return p;
}

const Plan& plan_for(const c10::OperatorHandle& op) {
  static std::mutex mu;
  static std::map<std::string, Plan> plans;
  const auto& n = op.schema().operator_name();
  std::string key = n.name + "." + n.overload_name;
  std::lock_guard<std::mutex> lock(mu);
  auto it = plans.find(key);
  if (it == plans.end()) it = plans.emplace(key, make_plan(op)).first;
  return it->second;
}

at::Tensor meta_of(const at::Tensor& t) {
  if (!t.defined()) return t;
  at::Tensor m = to_meta(t);
  // A Python number keeps its weak place in type promotion.
  if (t.unsafeGetTensorImpl()->is_wrapped_number()) m.unsafeGetTensorImpl()->set_wrapped_number(true);
  return m;
}

c10::IValue meta_of(const c10::IValue& v) {
  if (v.isTensor()) return meta_of(v.toTensor());
  if (v.isTensorList()) {
    c10::List<at::Tensor> l;
    for (const at::Tensor& t : v.toTensorList()) l.push_back(meta_of(t));
    return l;
  }
  if (v.isList() && v.toList().elementType()->kind() == c10::TypeKind::OptionalType) {
    auto src = v.toList();
    bool tensors = false;
    for (const c10::IValue& e : src) tensors = tensors || e.isTensor();
    if (!tensors) return v;
    c10::List<std::optional<at::Tensor>> l;
    for (const c10::IValue& e : src)
      l.push_back(e.isTensor() ? std::optional<at::Tensor>(meta_of(e.toTensor())) : std::nullopt);
    return l;
  }
  return v;
}

// v with its tpu tensors copied to the CPU.
c10::IValue cpu_of(const c10::IValue& v) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    return t.defined() ? c10::IValue(t.cpu()) : v;
  }
  if (v.isTensorList()) {
    c10::List<at::Tensor> l;
    for (const at::Tensor& t : v.toTensorList()) l.push_back(t.cpu());
    return l;
  }
  if (v.isList() && v.toList().elementType()->kind() == c10::TypeKind::OptionalType) {
    c10::List<std::optional<at::Tensor>> l;
    for (const c10::IValue& e : v.toList()) {
      if (e.isTensor()) l.push_back(e.toTensor().cpu());
      else if (e.isNone()) l.push_back(std::nullopt);
      else return v;  // not a list of tensors
    }
    return l;
  }
  return v;
}

void tensors_in(const c10::IValue& v, std::vector<at::Tensor>* ts) {
  if (v.isTensor()) {
    if (v.toTensor().defined()) ts->push_back(v.toTensor());
  } else if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorList()) ts->push_back(t);
  }
}

}  // namespace

// Serves op (an out= overload reaching the boxed fallback) natively when its
// functional sibling is native; false when it cannot, with nothing written
// and the stack untouched (the caller then runs CPU's kernel).
bool try_native_out_form(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const Plan& p = plan_for(op);
  if (!p.functional) return false;
  const size_t n = op.schema().arguments().size();
  auto args = torch::jit::last(*stack, n);
  std::vector<at::Tensor> outs;
  for (size_t i : p.outs) {
    const at::Tensor& o = args[i].toTensor();
    if (!o.defined() || !o.device().is_privateuseone()) return false;
    outs.push_back(o);
  }
  std::vector<at::Tensor> inputs;
  for (size_t i : p.ins) tensors_in(args[i], &inputs);

  // 1. CPU's checks, warning and out layout, from the op on meta tensors.
  std::vector<at::Tensor> shaped;  // the meta outs after the op; empty: no meta kernel
  {
    torch::jit::Stack ms;
    ms.reserve(n);
    for (const c10::IValue& v : args) ms.push_back(meta_of(v));
    std::vector<at::Tensor> mouts;
    for (size_t i : p.outs) mouts.push_back(ms[i].toTensor());
    bool ran = true, refused = false;
    try {
      op.callBoxed(ms);
    } catch (const c10::NotImplementedError&) {
      ran = false;  // no meta kernel: resize_output below does the checks
    } catch (const std::exception&) {
      refused = true;
    }
    if (refused) {
      // Meta functions word some errors differently from CPU's kernels
      // (mm's shapes, TensorIterator's casts): CPU's kernel raises its own.
      torch::jit::Stack cs;
      cs.reserve(n);
      for (const c10::IValue& v : args) cs.push_back(cpu_of(v));
      op.callBoxed(cs);
      return false;  // CPU accepted it after all: the caller runs it (counted)
    }
    if (ran) shaped = mouts;
  }
  // cat's CPU kernel refuses an out that overlaps any input, even fully
  if (op.schema().name() == "aten::cat")
    for (const at::Tensor& o : outs) {
      at::assert_no_internal_overlap(o);
      for (const at::Tensor& t : inputs)
        if (t.device() == o.device()) at::assert_no_overlap(o, t);
    }
  if (p.pointwise)
    for (const at::Tensor& o : outs) {
      at::assert_no_internal_overlap(o);
      for (const at::Tensor& t : inputs)
        if (t.device() == o.device()) at::assert_no_partial_overlap(o, t);
    }

  // 2. The functional kernel.
  torch::jit::Stack fs;
  fs.reserve(p.ins.size());
  for (size_t i : p.ins) fs.push_back(args[i]);
  try {
    p.functional->callBoxed(fs);
  } catch (const std::exception&) {
    // CPU's out= kernel may refuse first, for a reason of its own (index_select
    // checks out's dtype before the index): then its error is the one raised.
    torch::jit::Stack cs;
    cs.reserve(n);
    for (const c10::IValue& v : args) cs.push_back(cpu_of(v));
    op.callBoxed(cs);
    throw;
  }
  std::vector<at::Tensor> results;
  for (const c10::IValue& v : fs) results.push_back(v.toTensor());

  // Anything that would not be exact goes to CPU before a byte is written.
  for (size_t k = 0; k < outs.size(); k++) {
    if (results[k].scalar_type() != outs[k].scalar_type() && !p.cast_exact) return false;
    if (!shaped.empty() && shaped[k].sizes() != results[k].sizes()) return false;
  }

  // 3. Into the outs, as resize_output and TensorIterator would leave them.
  const auto& name = op.schema().operator_name();
  std::string full = name.name + (name.overload_name.empty() ? "" : "." + name.overload_name);
  for (size_t k = 0; k < outs.size(); k++) {
    at::Tensor& o = outs[k];
    if (shaped.empty()) {
      at::native::resize_output(o, results[k].sizes());
    } else {
      const at::Tensor& m = shaped[k];
      // Restrided only when resized, as CPU's structured kernels do: some
      // Python meta kernels (_linalg_solve_ex's) also restride an out that
      // already has the right shape, which CPU leaves as the caller made it.
      if (o.sizes() != m.sizes()) {
        o.resize_(m.sizes());
        if (o.strides() != m.strides() && o.numel() > 0) o.as_strided_(m.sizes(), m.strides());
      }
    }
    assign_result(o, results[k], full.c_str());
  }
  torch::jit::drop(*stack, n);
  for (const at::Tensor& o : outs) stack->push_back(o);
  return true;
}

}  // namespace torch_pjrt
