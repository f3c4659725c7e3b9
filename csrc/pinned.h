// Pinned host memory (device/pinned.cpp): the allocator behind
// pin_memory() and non_blocking copies.
#pragma once

#include <c10/core/Allocator.h>

namespace torch_pjrt {

c10::Allocator* pinned_allocator();
bool is_pinned(const void* data);

}  // namespace torch_pjrt
