// torch_pjrt._C's distributed entry points: python/torch_pjrt/distributed.py
// builds the gloo Backend in Python and hands it over here, or asks for the
// ranks of an XLA-transport group over devices of this process.
#include <torch/extension.h>

#include "runtime.h"
#include "distributed/dist.h"

extern "C" {
#include "dist/xla.h"
}

namespace torch_pjrt {

void bind_distributed(py::module& m) {
  // host: a c10d Backend over CPU tensors (ProcessGroupGloo). Returns the
  // "pjrt" Backend staging tpu tensors through it.
  m.def("_dist_make_gloo_backend", [](c10::intrusive_ptr<c10d::Backend> host, double timeout_s) {
    auto timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
    return make_pjrt_backend(make_gloo_transport(std::move(host), timeout), timeout);
  });
  // One "pjrt" Backend per rank of a group whose rank r drives tpu:devices[r]
  // of this process, over XLA's collectives. Each is used from its own thread.
  m.def("_dist_make_xla_backends", [](std::vector<int> devices, double timeout_s) {
    tpj_dist_xla_group_t* g = nullptr;
    TPJ_CHECK(tpj_dist_xla_group_create(rt(), exec(), devices.data(),
                                        static_cast<int>(devices.size()),
                                        static_cast<int64_t>(timeout_s * 1000), &g));
    std::vector<c10::intrusive_ptr<c10d::Backend>> out;
    for (int r = 0; r < static_cast<int>(devices.size()); ++r) {
      tpj_dist_transport_t* t = nullptr;
      tpj_status_t s = tpj_dist_xla_transport_create(g, r, &t);
      if (s) {
        tpj_dist_xla_group_release(g);
        throw_status(s, "pjrt");
      }
      out.push_back(make_pjrt_device_backend(t));
    }
    tpj_dist_xla_group_release(g);  // the transports hold it
    return out;
  });
  m.def("_dist_transport_name", [](c10::intrusive_ptr<c10d::Backend> b) { return transport_name(b); });
}

}  // namespace torch_pjrt
