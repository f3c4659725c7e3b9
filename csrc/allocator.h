// tpu storages (device/allocator.cpp): the c10 allocator over storage boxes,
// a storage's box, and resizing a storage.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Allocator.h>

extern "C" {
#include "rt/box.h"
}

namespace torch_pjrt {

c10::Allocator* allocator();
// The box behind a tpu tensor's storage (never NULL for a tpu tensor).
tpj_box_t* box_of(const at::Tensor& t);
tpj_box_t* box_of(const c10::Storage& s);
// The box a write into t installs its buffer in. A copy-on-write storage (a
// lazy clone shares its source's box) first gets a box of its own, as a CPU
// kernel's mutable_data_ptr() materialises it: writing one never changes
// the other.
tpj_box_t* box_for_write(const at::Tensor& t);
// Makes the storage nbytes long, keeping its first min(old, new) bytes.
void resize_storage_bytes(const c10::Storage& storage, size_t nbytes);

}  // namespace torch_pjrt
