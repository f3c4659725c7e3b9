// Refusing tpu in a child forked after the parent used it (device/fork.cpp).
#pragma once



namespace torch_pjrt {

// Raises in a forked child whose parent had opened the runtime.
void check_not_forked();

}  // namespace torch_pjrt
