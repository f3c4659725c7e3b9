// The CPU fallback: an aten op with no tpu kernel runs on PyTorch's CPU
// kernels, is counted, and with TORCH_PJRT_FALLBACK=error is refused. The
// policy (fallback_policy) is written once here for every path that runs an
// op on the CPU: the boxed dense and sparse fallbacks below, dtype_fallback
// (glue kernels without a lowering for a dtype) and the storage-only dtypes.
#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <set>

#include "ops/fallback.h"
#include "ops/outform.h"

namespace torch_pjrt {
namespace {

std::mutex g_mu;
std::map<std::string, int64_t> g_counts;
// Ops already warned about: not cleared by reset_fallbacks(), so the warning
// stays once per op per process.
std::set<std::string> g_warned;

// TORCH_PJRT_FALLBACK: allow (silent), warn (the default: one warning per op
// per process), error (NotImplementedError naming the op).
enum class Mode { kAllow, kWarn, kError };

Mode fallback_mode() {
  const char* v = std::getenv("TORCH_PJRT_FALLBACK");
  std::string m = v ? v : "warn";
  if (m == "allow") return Mode::kAllow;
  if (m == "error") return Mode::kError;
  TORCH_CHECK(m == "warn" || m.empty(), "TORCH_PJRT_FALLBACK=", m,
              " is not one of allow, warn, error");
  return Mode::kWarn;
}

// "aten::name.overload" (the overload only when it has one), as fallbacks()
// counts ops.
std::string full_name(const c10::OperatorHandle& op) {
  const auto& name = op.schema().operator_name();
  return name.name + (name.overload_name.empty() ? "" : "." + name.overload_name);
}

void tpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  // Not a fallback: the functional kernel computes, the out is written on tpu.
  if (try_native_out_form(op, stack)) return;
  std::string full = full_name(op);
  // Ops PyTorch implements for CUDA only (composites call some of them for
  // any non-CPU device: nn.LSTM's _thnn_fused_lstm_cell): the dispatcher's
  // own error would blame the 'CPU' backend the user never asked for.
  TORCH_CHECK_NOT_IMPLEMENTED(op.hasComputedKernelForDispatchKey(c10::DispatchKey::CPU), full,
                              " has no tpu lowering, and PyTorch has no CPU kernel for it to "
                              "fall back to");
  fallback_policy(full, full, full, /*slower=*/true);
  at::native::cpu_fallback(op, stack);
}

}  // namespace

void count_fallback(const std::string& op) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_counts[op] += 1;
}

void fallback_policy(const std::string& key, const std::string& refused,
                     const std::string& warned, bool slower) {
  Mode mode = fallback_mode();
  TORCH_CHECK_NOT_IMPLEMENTED(mode != Mode::kError, refused,
                              " has no tpu lowering and TORCH_PJRT_FALLBACK=error forbids "
                              "running it on the CPU");
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_counts[key] += 1;
    if (mode == Mode::kWarn) first = g_warned.insert(key).second;
  }
  if (first)
    TORCH_WARN(warned, " has no tpu lowering: it runs on the CPU (", slower ? "slower; " : "",
               "counted in torch_pjrt.fallbacks(); TORCH_PJRT_FALLBACK=allow silences this, "
               "=error forbids it)");
}

void dtype_fallback(const char* op, at::ScalarType t) {
  std::string what = std::string(op) + " for " + c10::toString(t);
  fallback_policy(op, what, what, /*slower=*/false);
}

std::map<std::string, int64_t> fallback_counts() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_counts;
}

void reset_fallback_counts() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_counts.clear();
}

}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&torch_pjrt::tpu_fallback>());
}

namespace torch_pjrt {

// Quantized tpu tensors would otherwise reach a dispatcher dump.
void unsupported_layout(const c10::OperatorHandle& op, torch::jit::Stack*) {
  const auto& name = op.schema().operator_name();
  TORCH_CHECK_NOT_IMPLEMENTED(false, name.name, ": quantized tensors are not supported "
                              "on tpu; convert with .dequantize() on the CPU first");
}

namespace {

// An op on a sparse tpu tensor that sparse.cpp does not compute on tpu:
// PyTorch's kernel for the same layout on CPU (cpu_key: SparseCPU or
// SparseCsrCPU) runs on CPU copies of the arguments (sparse ones stay
// sparse), mutated arguments are written back and results come back to tpu.
// Counted as "<op> (sparse)" so it is not mistaken for the dense op.
void sparse_fallback_on(const c10::OperatorHandle& op, torch::jit::Stack* stack,
                        c10::DispatchKey cpu_key) {
  std::string full = full_name(op);
  fallback_policy(full + " (sparse)", full + " on a sparse tensor", full + " (sparse)",
                  /*slower=*/true);
  // Some CPU kernels keep what backward needs only when an input requires
  // grad (_sparse_mm_reduce_impl's arg_out): the CPU copies of read-only
  // arguments carry the flag (this runs below autograd; nothing is recorded).
  // cpu_fallback takes the results' device from the tpu arguments it still
  // sees, so results are moved to the first tpu argument's device here.
  const auto& args = op.schema().arguments();
  size_t begin = stack->size() - args.size();
  std::optional<c10::Device> device;
  bool replaced = false;
  for (size_t i = 0; i < args.size(); i++) {
    c10::IValue& v = (*stack)[begin + i];
    if (!v.isTensor()) continue;
    const at::Tensor& t = v.toTensor();
    if (!t.defined() || t.device().is_cpu()) continue;
    if (!device) device = t.device();
    const auto* alias = args[i].alias_info();
    if (t.requires_grad() && !(alias && alias->isWrite())) {
      v = t.cpu().detach().requires_grad_(true);
      replaced = true;
    }
  }
  at::native::cpu_fallback(op, stack, /*error_on_views=*/false, cpu_key);
  if (!replaced || !device) return;
  size_t nret = op.schema().returns().size();
  for (size_t i = stack->size() - nret; i < stack->size(); i++) {
    c10::IValue& v = (*stack)[i];
    if (v.isTensor() && v.toTensor().defined() && v.toTensor().device().is_cpu())
      v = v.toTensor().to(*device);
  }
}

// PyTorch's CompositeExplicitAutogradNonFunctional kernels serve the
// SparseCsrPrivateUse1 key: a structured op (add, mul, mm, ...) on a sparse
// compressed tensor allocates a sparse compressed result and calls the op's
// out= form, whose CPU kernel mostly refuses such an out (or gives another
// layout than the functional op on CPU). Out= forms are refused here with a
// clear message; the other ops run CPU's kernel, and so do the common
// structured ops sparse.cpp registers with sparse_csr_cpu (which then never
// reach their composite kernel).
void sparse_csr_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  for (const auto& arg : op.schema().arguments()) {
    TORCH_CHECK_NOT_IMPLEMENTED(
        !arg.is_out(), full_name(op),
        ": this op on sparse compressed (CSR/CSC/BSR/BSC) tensors is not supported on tpu; "
        "convert with .to_sparse() (COO) or .to_dense() first");
  }
  sparse_fallback_on(op, stack, c10::DispatchKey::SparseCsrCPU);
}

}  // namespace

void sparse_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  sparse_fallback_on(op, stack, c10::DispatchKey::SparseCPU);
}

void sparse_csr_cpu(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  sparse_fallback_on(op, stack, c10::DispatchKey::SparseCsrCPU);
}

}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(_, SparsePrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&torch_pjrt::sparse_fallback>());
}

TORCH_LIBRARY_IMPL(_, SparseCsrPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&torch_pjrt::sparse_csr_fallback>());
}

TORCH_LIBRARY_IMPL(_, QuantizedPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&torch_pjrt::unsupported_layout>());
}
