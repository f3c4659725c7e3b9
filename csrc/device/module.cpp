// torch_pjrt._C: the Python entry points of the glue.
#include <torch/extension.h>

#include <map>

#include "allocator.h"
#include "runtime.h"
#include "tensor.h"
#include "create_options.h"
#include "rt/open.h"
#include "inplace.h"

extern "C" {
#include "ops/ops.h"
}

namespace torch_pjrt {
std::map<std::string, int64_t> fallback_counts();
void reset_fallback_counts();
void bind_graph(py::module& m);
void bind_distributed(py::module& m);
}  // namespace torch_pjrt

namespace {

namespace tp = torch_pjrt;

py::dict info() {
  tpj_rt_t* r = tp::rt();
  py::dict d;
  int major, minor, hmajor, hminor;
  tpj_rt_api_version(r, &major, &minor);
  tpj_rt_header_version(&hmajor, &hminor);
  d["plugin_path"] = tpj_rt_plugin_path(r);
  d["platform"] = tpj_rt_platform_name(r);
  d["platform_version"] = tpj_rt_platform_version(r);
  d["pjrt_api_version"] = py::make_tuple(major, minor);
  d["pjrt_header_version"] = py::make_tuple(hmajor, hminor);
  d["attributes"] = tpj_rt_plugin_attributes(r);
  py::list devs;
  for (int i = 0; i < tpj_rt_device_count(r); ++i) {
    py::dict dev;
    dev["index"] = i;
    dev["kind"] = tpj_rt_device_kind(r, i);
    dev["description"] = tpj_rt_device_description(r, i);
    devs.append(dev);
  }
  d["devices"] = devs;
  return d;
}

py::dict metrics() {
  tpj_exec_metrics_t m;
  tpj_exec_get_metrics(tp::exec(), &m);
  py::dict d;
  d["compiles"] = m.compiles;
  d["graph_compiles"] = m.graph_compiles;
  d["graph_runs"] = m.graph_runs;
  d["donated_buffers"] = m.donated_buffers;
  d["cache_hits_disk"] = m.cache_hits_disk;
  d["disk_writes"] = m.disk_writes;
  d["disk_errors"] = m.disk_errors;
  d["cache_hits"] = m.cache_hits;
  d["cache_misses"] = m.cache_misses;
  d["executions"] = m.executions;
  d["evictions"] = m.evictions;
  d["compile_seconds"] = m.compile_seconds;
  d["cache_size"] = tpj_exec_cache_size(tp::exec());
  int64_t h2d, d2h;
  tpj_rt_transfer_bytes(&h2d, &d2h);
  d["h2d_bytes"] = h2d;
  d["d2h_bytes"] = d2h;
  d["live_buffers"] = tpj_rt_live_buffers() - tp::scalar_cache_size();
  int64_t live = 0;
  for (int i = 0; i < tpj_rt_device_count(tp::rt()); ++i) {
    tpj_box_stats_t st;
    tpj_box_get_stats(i, &st);
    live += st.allocated;
  }
  d["live_bytes"] = live;
  return d;
}

py::dict memory_stats(int device) {
  tpj_box_stats_t s;
  tpj_box_get_stats(device, &s);
  py::dict d;
  d["allocated"] = s.allocated;
  d["peak"] = s.peak;
  d["num_allocs"] = s.num_allocs;
  d["num_frees"] = s.num_frees;
  return d;
}

py::object buffer_shape(const at::Tensor& t) {
  TORCH_CHECK(t.device().is_privateuseone(), "expected a tpu tensor");
  tp::BufferRef b(tpj_box_acquire_buffer(tp::box_of(t)));
  if (!b.get()) return py::none();
  std::vector<int64_t> dims(b->dims, b->dims + b->ndim);
  return py::make_tuple(tpj_dtype_name(b->dtype), dims, reinterpret_cast<uintptr_t>(b.get()));
}

py::list lowered_ops() {
  py::list l;
  for (int i = 0; i < tpj_ops_count(); ++i) l.append(tpj_ops_at(i)->name);
  return l;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("_configure", &tp::configure, py::arg("plugin_path"), py::arg("cpu_devices"),
        py::arg("error"));
  // [(name, value)] with value a bool, int, float or str: PJRT client-create
  // options (see python/torch_pjrt/_plugin.py).
  m.def("_set_create_options", [](const std::vector<std::pair<std::string, py::object>>& opts) {
    std::vector<tp::CreateOption> out;
    for (const auto& [name, v] : opts) {
      tp::CreateOption o;
      o.name = name;
      if (py::isinstance<py::bool_>(v)) {
        o.type = TPJ_RT_OPTION_BOOL;
        o.int_value = v.cast<bool>();
      } else if (py::isinstance<py::int_>(v)) {
        o.type = TPJ_RT_OPTION_INT64;
        o.int_value = v.cast<int64_t>();
      } else if (py::isinstance<py::float_>(v)) {
        o.type = TPJ_RT_OPTION_FLOAT;
        o.float_value = v.cast<double>();
      } else if (py::isinstance<py::str>(v)) {
        o.type = TPJ_RT_OPTION_STRING;
        o.string_value = v.cast<std::string>();
      } else {
        throw py::type_error("client option " + name + " must be a bool, int, float or str");
      }
      out.push_back(std::move(o));
    }
    tp::set_create_options(std::move(out));
  });
  m.def("_set_visible_devices", &tp::set_visible_devices, py::arg("visible"), py::arg("setting"));
  m.def("_set_cache_dir", &tp::set_cache_dir);
  m.def("_init", [] { tp::rt(); });
  m.def("_is_initialized", &tp::is_initialized);
  m.def("_device_count", &tp::device_count_noexcept);
  m.def("_current_device", &tp::current_device);
  m.def("_set_device", &tp::set_current_device);
  m.def("_check_device", &tp::check_device_index);
  m.def("_synchronize", [](int device) {
    tpj_status_t s;
    {
      py::gil_scoped_release nogil;
      s = tpj_rt_synchronize(tp::rt(), device);
    }
    if (s) tp::throw_status(s, "synchronize");
  });
  // Testing only: the next completion of `op` (an aten overload name) fails.
  m.def("_inject_async_error", [](const std::string& op) {
    tpj_rt_inject_async_error(tp::rt(), op.c_str());
  });
  // Testing only: the smallest storage a whole-storage in-place op donates.
  m.def("_set_in_place_min_bytes", [](int64_t n) { return tp::set_in_place_min_bytes(n); });
  m.def("_info", &info);
  m.def("_metrics", &metrics);
  m.def("_memory_stats", &memory_stats);
  m.def("_reset_peak_memory_stats", [](int device) { tpj_box_reset_peak(device); });
  // The reused runtime scalars are the runtime's own state, not leaks.
  m.def("_live_buffers", [] { return tpj_rt_live_buffers() - tp::scalar_cache_size(); });
  m.def("_fallbacks", &tp::fallback_counts);
  m.def("_reset_fallbacks", &tp::reset_fallback_counts);
  m.def("_buffer_shape", &buffer_shape);
  m.def("_lowered_ops", &lowered_ops);
  tp::bind_graph(m);
  tp::bind_distributed(m);
}
