// Registration macros for an op whose functional kernel `fn` is native: its
// in-place form writes fn's result back into self, its out= form into out,
// both with PyTorch's rules (no partial overlap with an input, out= resize
// and castability; see assign_result / out_result in ops.cpp). Used inside a
// TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) block. One definition here so every
// family registers these forms the same way.
#ifndef TORCH_PJRT_FORMS_H_
#define TORCH_PJRT_FORMS_H_

#include "ops/write.h"

// aten.out(Tensor self, *, Tensor(a!) out)
#define TPJ_FORMS_UNARY_OUT(aten, fn)                                                      \
  m.impl(aten ".out", [](const at::Tensor& a, at::Tensor& o) -> at::Tensor& {             \
    torch_pjrt::check_no_overlap(o, {&a});                                                 \
    return torch_pjrt::out_result(o, fn(a), "aten::" aten);                                \
  });

// aten(self), aten_(self), aten.out(self, out)
#define TPJ_FORMS_UNARY(aten, fn)                                                          \
  m.impl(aten, [](const at::Tensor& a) { return fn(a); });                                 \
  m.impl(aten "_", [](at::Tensor& a) -> at::Tensor& {                                      \
    torch_pjrt::check_no_overlap(a, {});                                                   \
    torch_pjrt::assign_result(a, fn(a), "aten::" aten "_");                                \
    return a;                                                                              \
  });                                                                                      \
  TPJ_FORMS_UNARY_OUT(aten, fn)

// aten(self, other), aten.out(self, other, out)
#define TPJ_FORMS_BINARY_NO_INPLACE(aten, fn)                                              \
  m.impl(aten, [](const at::Tensor& a, const at::Tensor& b) { return fn(a, b); });         \
  m.impl(aten ".out", [](const at::Tensor& a, const at::Tensor& b, at::Tensor& o)          \
                          -> at::Tensor& {                                                 \
    torch_pjrt::check_no_overlap(o, {&a, &b});                                             \
    return torch_pjrt::out_result(o, fn(a, b), "aten::" aten);                             \
  });

// ... plus aten_(self, other)
#define TPJ_FORMS_BINARY(aten, fn)                                                         \
  TPJ_FORMS_BINARY_NO_INPLACE(aten, fn)                                                    \
  m.impl(aten "_", [](at::Tensor& a, const at::Tensor& b) -> at::Tensor& {                 \
    torch_pjrt::check_no_overlap(a, {&b});                                                 \
    torch_pjrt::assign_result(a, fn(a, b), "aten::" aten "_");                             \
    return a;                                                                              \
  });

#endif  // TORCH_PJRT_FORMS_H_
