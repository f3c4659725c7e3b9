// out= overloads served by their functional kernel (outform.cpp), for the
// CPU fallback (fallback.cpp) to try before it runs CPU's kernel.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace torch_pjrt {

// An out= overload whose functional form is native runs that; false
// (nothing written) when it cannot.
bool try_native_out_form(const c10::OperatorHandle& op, torch::jit::Stack* stack);

}  // namespace torch_pjrt
