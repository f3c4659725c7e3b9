// torch_pjrt._C's distributed entry points: python/torch_pjrt/distributed.py
// builds the gloo Backend in Python and hands it over here.
#include <torch/extension.h>

#include "distributed/dist.h"

namespace torch_pjrt {

void bind_distributed(py::module& m) {
  // host: a c10d Backend over CPU tensors (ProcessGroupGloo). Returns the
  // "pjrt" Backend staging tpu tensors through it.
  m.def("_dist_make_gloo_backend", [](c10::intrusive_ptr<c10d::Backend> host, double timeout_s) {
    auto timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
    return make_pjrt_backend(make_gloo_transport(std::move(host), timeout), timeout);
  });
  m.def("_dist_transport_name", [](c10::intrusive_ptr<c10d::Backend> b) { return transport_name(b); });
}

}  // namespace torch_pjrt
