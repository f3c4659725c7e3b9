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

}  // namespace torch_pjrt
