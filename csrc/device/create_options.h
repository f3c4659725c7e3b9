// Named PJRT client-create options, chosen in Python (_plugin.create_options)
// and passed through to tpj_rt_open_with_options when the runtime opens.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace torch_pjrt {

struct CreateOption {
  std::string name;
  int type;  // tpj_rt_option_type_t
  int64_t int_value = 0;
  double float_value = 0.0;
  std::string string_value;
};

// Must be called before the runtime opens (first tpu use).
void set_create_options(std::vector<CreateOption> options);

// The plugin's devices this process sees, in that order, as tpu:0..n-1
// (TORCH_PJRT_VISIBLE_DEVICES, or the devices Ray assigned: see
// python/torch_pjrt/_plugin.py); `setting` is the text the error names.
// Unset (the default): all of them. Before the runtime opens.
void set_visible_devices(std::vector<int> visible, std::string setting);

}  // namespace torch_pjrt
