// Whole-storage in-place ops that update their storage in place: the op reads
// the storage's buffer itself as operand 0 and its result replaces it, taking
// over the old buffer's memory when the storage's box is its sole holder (see
// src/exec/donate.h). A header of its own so that adding it rebuilt only the
// files that use it.
#ifndef TORCH_PJRT_INPLACE_H_
#define TORCH_PJRT_INPLACE_H_

#include "tensor.h"

namespace torch_pjrt {

// True when self is its storage's natural tensor (contiguous, covering the
// storage, whose buffer holds it in self's dtype): then it adds self, read
// from the storage's buffer, as a's operand 0 (a must have none yet) and the
// caller finishes with run_op_in_place. False: nothing added, the caller
// computes the functional result and assigns it.
bool add_in_place_operand(OpArgs& a, const at::Tensor& self);

// The smallest storage (bytes) an in-place op updates in place; smaller ones
// compute into a fresh buffer (see tensor.cpp). Returns the previous value.
// Testing hook: torch_pjrt._C._set_in_place_min_bytes.
int64_t set_in_place_min_bytes(int64_t n);

// Runs the table op whose one output has self's sizes and dtype, its
// operand 0 from add_in_place_operand, and installs the result in self's
// storage.
void run_op_in_place(const char* op, int device, OpArgs& a, c10::ArrayRef<int64_t> attrs,
                     const at::Tensor& self);

}  // namespace torch_pjrt

#endif  // TORCH_PJRT_INPLACE_H_
