// Graph capture for torch.compile: a graph is traced by running its ATen ops
// through the ordinary eager kernels while the C core records them
// (tpj_exec_trace_*), so every op is lowered by the one C table. The result
// is a Graph: one executable plus how to map its results back to tensors
// (new storages, or writes into mutated input storages). Later calls with the
// same input signature run it with one Execute and no per-op work.
#include <torch/extension.h>

#include <c10/core/DeviceGuard.h>

#include <cstdlib>
#include <unordered_map>

#include "allocator.h"
#include "graph.h"
#include "runtime.h"
#include "tensor.h"
#include "generator.h"
#include "rt/reap.h"
#include "ops/glue.h"
#include "storage_dtypes.h"

extern "C" {
#include "ops/attrs.h"
}

namespace torch_pjrt {

bool tracing() { return is_initialized() && tpj_exec_tracing(exec()); }

namespace {

// A random op inside a graph: its generator and how many words it draws.
// Each run takes a fresh key from the generator, as the eager op would.
struct RngSlot {
  c10::intrusive_ptr<TpuGeneratorImpl> gen;
  uint64_t words;
};

// What the trace knows about the graph's inputs; alive between
// trace_begin and trace_end/abort.
struct TraceInputs {
  std::vector<at::Tensor> tensors;                 // tpu inputs, in argument order
  std::vector<int> arg_index;                      // their position in the argument list
  std::vector<tpj_rt_buffer_t*> orig;              // their boxes' buffers (retained)
  std::vector<int> scalar_args;                    // CPU 0-d inputs: argument positions
  std::vector<const c10::TensorImpl*> scalar_impls;
  std::vector<tpj_rt_buffer_t*> scalar_bufs;       // their uploaded values (owned)
  std::vector<RngSlot> rng;                         // random draws, in trace order
  std::vector<tpj_rt_buffer_t*> rng_bufs;          // their trace-time keys (owned)
  // Device-side checks (defer_index_check): a 0-d bool tensor of the trace,
  // true when the check fails, and the message the next wait raises.
  std::vector<std::pair<at::Tensor, std::string>> checks;
  int device = 0;
};
// The trace's inputs, owned by the tracing thread (one trace at a time:
// _compile.py traces under a lock); other threads see no trace.
TraceInputs* g_trace_inputs = nullptr;
thread_local bool t_tracing = false;
// This thread's trace, or none.
TraceInputs* my_trace() { return t_tracing ? g_trace_inputs : nullptr; }

void release_all(std::vector<tpj_rt_buffer_t*>& v) {
  for (auto* b : v) tpj_rt_buffer_release(b);
  v.clear();
}

tpj_rt_buffer_t* upload_scalar(const at::Tensor& t, int device) {
  at::Tensor c = t.contiguous();
  tpj_rt_buffer_t* buf = nullptr;
  TPJ_CHECK(tpj_rt_buffer_from_host(rt(), device, to_tpj_dtype(c.scalar_type()), nullptr, 0,
                                    c.data_ptr(), &buf));
  return buf;
}

// Puts the trace-time buffers back: tracing computed nothing, so a mutated
// input must still hold its old value when the graph first runs for real.
void restore_inputs(TraceInputs* tr) {
  for (size_t i = 0; i < tr->tensors.size(); ++i) {
    tpj_box_t* box = box_of(tr->tensors[i]);
    if (BufferRef(tpj_box_acquire_buffer(box)).get() != tr->orig[i]) {
      tpj_rt_buffer_retain(tr->orig[i]);
      tpj_box_set_buffer(box, tr->orig[i]);
    }
  }
}

void drop_trace() {
  TraceInputs* tr = my_trace();
  if (!tr) return;
  release_all(tr->orig);
  release_all(tr->scalar_bufs);
  release_all(tr->rng_bufs);
  delete tr;
  g_trace_inputs = nullptr;
  t_tracing = false;
}

// Where one output storage comes from after a run.
struct StorageSpec {
  enum Kind { kResult, kInput, kConst } kind;
  int index;                  // result index or tpu-input index
  tpj_rt_buffer_t* constant;  // kConst: retained
  size_t nbytes;
};

struct OutputSpec {
  int storage;                // index into storages
  at::ScalarType dtype;
  std::vector<int64_t> sizes, strides;
  int64_t offset;
};

}  // namespace

tpj_rt_buffer_t* traced_rng_key(TpuGeneratorImpl* gen, uint64_t words, int device) {
  TraceInputs* tr = my_trace();
  if (!tr) return nullptr;
  tpj_rt_buffer_t* key = upload_rng_key(gen, words, device);
  tr->rng.push_back(RngSlot{c10::intrusive_ptr<TpuGeneratorImpl>::reclaim_copy(gen), words});
  tr->rng_bufs.push_back(key);
  return key;
}

thread_local bool t_deferred_checks = false;

bool set_deferred_index_checks(bool on) {
  bool prev = t_deferred_checks;
  t_deferred_checks = on;
  return prev;
}

bool defer_index_check(const at::Tensor& index, int64_t lo, int64_t hi,
                       const std::string& message) {
  static const bool enabled = [] {
    const char* e = std::getenv("TORCH_PJRT_GRAPH_INDEX_CHECKS");
    return !(e && std::string(e) == "0");
  }();
  TraceInputs* tr = my_trace();
  if ((!tr && !t_deferred_checks) || index.device().is_cpu()) return false;
  if (index.numel() == 0 || (tr && !enabled)) return true;  // nothing to check (or told not to)
  // The flag, true when some value is out of range (src/ops/index_gather.c):
  // recorded into the trace like any op, or computed now when eager.
  at::Tensor flag = at::empty({}, index.options().dtype(at::kBool));
  OpArgs a;
  a.tensor(index);
  tpj_attrs_index_range_t attrs{};
  attrs.lo = lo;
  attrs.hi = hi;
  run_op("tpj::index_out_of_range", index.device().index(), a, attrs_of(attrs), {flag});
  if (tr)
    tr->checks.emplace_back(flag, message);  // a graph output, handed over after each run
  else  // read by the runtime at the next wait on the device, as a graph's are
    TPJ_CHECK(tpj_rt_check_later(rt(), buffer_of(flag).get(), message.c_str()));
  return true;
}

tpj_rt_buffer_t* traced_scalar(const at::Tensor& t) {
  TraceInputs* tr = my_trace();
  if (!tr) return nullptr;
  for (size_t i = 0; i < tr->scalar_impls.size(); ++i)
    if (tr->scalar_impls[i] == t.unsafeGetTensorImpl()) return tr->scalar_bufs[i];
  return nullptr;
}

// A compiled graph. run() takes the same argument list as the trace.
class Graph {
 public:
  tpj_exec_graph_t* g = nullptr;
  int device = 0;
  int nargs = 0;
  std::vector<int> tensor_args, scalar_args;
  std::vector<RngSlot> rng;
  std::vector<StorageSpec> storages;
  std::vector<OutputSpec> outputs;
  std::vector<std::pair<int, int>> mutations;  // (tpu input, result)
  // The last check_messages.size() outputs are device-side check flags
  // (handed to the runtime after each run, not returned).
  std::vector<std::string> check_messages;
  // Per argument: the run may take it (run_consuming) -- an input no output
  // storage or mutation refers to, so nothing reads it after the launch.
  std::vector<bool> consumable;

  ~Graph() {
    for (auto& s : storages)
      if (s.kind == StorageSpec::kConst) tpj_rt_buffer_release(s.constant);
    tpj_exec_graph_release(g);
  }

  int num_nodes() const { return g ? tpj_exec_graph_num_nodes(g) : 0; }

  std::vector<at::Tensor> run(std::vector<std::optional<at::Tensor>> args) {
    return run_impl(args, nullptr);
  }

  // run() for a caller that gives up the listed arguments (a backward's
  // saved activations): the list is emptied and each consumable tensor is
  // dropped before the launch, so its storage is freed -- and counted free --
  // before the results exist, as eager autograd frees an activation once its
  // last use ran. The launch holds the buffer until then; a buffer no one
  // else holds is donated to a result of its type where the graph has one.
  // Something else still holding the storage (a view, a saved-tensor hook)
  // keeps it, intact.
  std::vector<at::Tensor> run_consuming(py::list args, const std::vector<int>& consume) {
    std::vector<std::optional<at::Tensor>> a;
    a.reserve(args.size());
    for (py::handle h : args)
      a.push_back(h.is_none() ? std::nullopt : std::optional<at::Tensor>(h.cast<at::Tensor>()));
    args.attr("clear")();
    return run_impl(a, &consume);
  }

  std::vector<at::Tensor> run_impl(std::vector<std::optional<at::Tensor>>& args,
                                   const std::vector<int>* consume) {
    TORCH_CHECK(static_cast<int>(args.size()) == nargs, "compiled graph: expected ", nargs,
                " arguments, got ", args.size());
    // The tpu inputs' buffers, held: another thread may replace a storage's
    // buffer meanwhile. A mutated input's own reference is dropped under its
    // box's lock below, so the launch may donate it.
    std::vector<tpj_rt_buffer_t*> params;
    std::vector<tpj_rt_buffer_t*> owned;
    for (int i : tensor_args) {
      params.push_back(buffer_of(*args[i]).release());
      owned.push_back(params.back());
    }
    // 0-d CPU arguments (an optimizer's step counts and the factors made
    // from them, one per parameter) mostly repeat a few values: each value
    // is uploaded once per run and its buffer shared (buffers are immutable).
    struct Uploaded {
      c10::ScalarType dtype;
      uint64_t bits;
      tpj_rt_buffer_t* buf;
    };
    c10::SmallVector<Uploaded, 16> uploaded;
    for (int i : scalar_args) {
      const at::Tensor& t = *args[i];
      uint64_t bits = 0;
      bool keyed = t.element_size() <= 8 && t.is_contiguous();
      if (keyed) memcpy(&bits, t.data_ptr(), t.element_size());
      tpj_rt_buffer_t* b = nullptr;
      for (const Uploaded& u : uploaded)
        if (keyed && u.dtype == t.scalar_type() && u.bits == bits) b = u.buf;
      if (b) {
        tpj_rt_buffer_retain(b);
      } else {
        b = upload_scalar(t, device);
        if (keyed) uploaded.push_back({t.scalar_type(), bits, b});
      }
      owned.push_back(b);
      params.push_back(b);
    }
    for (const RngSlot& r : rng) {
      tpj_rt_buffer_t* b = upload_rng_key(r.gen.get(), r.words, device);
      owned.push_back(b);
      params.push_back(b);
    }
    if (consume) {
      for (int i : *consume) {
        if (i < 0 || i >= nargs || !consumable[i] || !args[i]) continue;
        if (!args[i]->device().is_privateuseone()) continue;
        args[i].reset();  // its buffer stays held in owned until the launch is done
      }
    }
    int nres = g ? tpj_exec_graph_num_results(g) : 0;
    std::vector<tpj_rt_buffer_t*> res(nres, nullptr);
    // The mutated inputs' boxes stay locked from the donation check (in
    // graph_run) through installing their new values, so no reader takes a
    // buffer that is being donated. Our own reference to a buffer the box
    // still holds is dropped: the box is then the sole holder the check
    // looks for (a consumed input's storage was dropped above instead).
    std::vector<tpj_box_t*> locked;
    for (auto [in, r] : mutations) locked.push_back(box_for_write(*args[tensor_args[in]]));
    tpj_box_lock_many(locked.data(), static_cast<int>(locked.size()));
    for (auto [in, r] : mutations) {
      if (box_of(*args[tensor_args[in]])->buf != owned[in] || !owned[in]) continue;
      tpj_rt_buffer_release(owned[in]);  // the box still holds it
      owned[in] = nullptr;
    }
    tpj_status_t s = g ? tpj_exec_graph_run(exec(), g, device, params.data(),
                                            static_cast<int>(params.size()), res.data())
                       : nullptr;
    // The launch reads these: released later, or each run would wait for
    // itself (rt/reap.h).
    for (tpj_rt_buffer_t* b : owned) tpj_rt_buffer_release_later(b);
    if (s) {
      tpj_box_unlock_many(locked.data(), static_cast<int>(locked.size()));
      TPJ_CHECK(s);
    }
    for (auto [in, r] : mutations) {
      tpj_rt_buffer_retain(res[r]);
      tpj_box_t* box = box_of(*args[tensor_args[in]]);
      tpj_rt_buffer_t* old = box->buf;  // the launch reads it: released later
      box->buf = res[r];                // (its lock is held)
      tpj_rt_buffer_release_later(old);
      args[tensor_args[in]]->unsafeGetTensorImpl()->bump_version();
    }
    tpj_box_unlock_many(locked.data(), static_cast<int>(locked.size()));
    // Then the output storages (outputs may share one), then their views.
    std::vector<c10::Storage> made(storages.size());
    for (size_t k = 0; k < storages.size(); ++k) {
      const StorageSpec& sp = storages[k];
      if (sp.kind == StorageSpec::kInput) {
        made[k] = args[tensor_args[sp.index]]->storage();
        continue;
      }
      made[k] = c10::Storage(c10::Storage::use_byte_size_t(), sp.nbytes, allocator(),
                             /*resizable=*/true);
      tpj_rt_buffer_t* b = sp.kind == StorageSpec::kResult ? res[sp.index] : sp.constant;
      tpj_rt_buffer_retain(b);
      tpj_box_set_buffer(box_of(made[k]), b);
    }
    release_all(res);
    std::vector<at::Tensor> outs;
    outs.reserve(outputs.size());
    // Made directly over their storages, not through empty() and set_():
    // two dispatcher calls per output were a visible share of a graph's
    // host time (an optimizer graph returns three tensors per parameter).
    for (const OutputSpec& o : outputs) {
      auto impl = c10::make_intrusive<c10::TensorImpl>(
          c10::Storage(made[o.storage]), tpu_key_set(o.dtype), c10::scalarTypeToTypeMeta(o.dtype));
      impl->set_sizes_and_strides(o.sizes, o.strides, o.offset);
      outs.emplace_back(std::move(impl));
    }
    // The check flags: read by the runtime at the next wait on the device.
    for (size_t i = check_messages.size(); i > 0; --i) {
      const std::string& msg = check_messages[i - 1];
      TPJ_CHECK(tpj_rt_check_later(rt(), buffer_of(outs.back()).get(), msg.c_str()));
      outs.pop_back();
    }
    return outs;
  }
};

namespace {

void trace_begin(const std::vector<std::optional<at::Tensor>>& args) {
  TORCH_CHECK(!g_trace_inputs, "a graph is already being traced");
  auto* tr = new TraceInputs();
  bool have_dev = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i] || !args[i]->defined()) continue;
    const at::Tensor& t = *args[i];
    if (t.device().is_privateuseone()) {
      if (!have_dev) tr->device = t.device().index();
      have_dev = true;
    }
  }
  try {
    for (size_t i = 0; i < args.size(); ++i) {
      if (!args[i] || !args[i]->defined()) continue;
      const at::Tensor& t = *args[i];
      if (t.device().is_privateuseone()) {
        tpj_rt_buffer_t* b = buffer_of(t).release();
        tr->tensors.push_back(t);
        tr->arg_index.push_back(static_cast<int>(i));
        tr->orig.push_back(b);
      } else if (t.device().is_cpu() && t.dim() == 0) {
        tr->scalar_args.push_back(static_cast<int>(i));
        tr->scalar_impls.push_back(t.unsafeGetTensorImpl());
        tr->scalar_bufs.push_back(upload_scalar(t, tr->device));
      }
    }
  } catch (...) {
    g_trace_inputs = tr;
    t_tracing = true;
    drop_trace();
    throw;
  }
  g_trace_inputs = tr;
  t_tracing = true;
  TPJ_CHECK(tpj_exec_trace_begin(exec()));
}

void trace_abort() {
  if (is_initialized()) tpj_exec_trace_abort(exec());
  if (my_trace()) restore_inputs(my_trace());
  drop_trace();
}

// Which arguments run_consuming may take: tpu inputs that no output storage
// or mutation refers to. Each may also donate its buffer to a computed
// result of its exact type that nothing else donates to, so the launch
// writes that result into the input's memory instead of new memory.
void mark_consumable(Graph& graph, const TraceInputs* tr, const std::vector<int>& consumable,
                     const std::vector<tpj_rt_buffer_t*>& results, std::vector<int>& donate_to) {
  graph.consumable.assign(graph.nargs, false);
  std::vector<bool> taken(results.size(), false);
  for (int r : donate_to)
    if (r >= 0) taken[r] = true;
  for (int arg : consumable) {
    if (arg < 0 || arg >= graph.nargs) continue;
    int in = -1;
    for (size_t i = 0; i < tr->arg_index.size(); ++i)
      if (tr->arg_index[i] == arg) in = static_cast<int>(i);
    if (in < 0 || donate_to[in] >= 0) continue;
    bool used = false;
    for (const StorageSpec& sp : graph.storages)
      used |= sp.kind == StorageSpec::kInput && sp.index == in;
    for (auto [m, r] : graph.mutations) used |= m == in;
    if (used) continue;
    graph.consumable[arg] = true;
    const tpj_rt_buffer_t* p = tr->orig[in];
    for (size_t r = 0; r < results.size(); ++r) {
      const tpj_rt_buffer_t* b = results[r];
      if (taken[r] || !b->trace_id || b->dtype != p->dtype || b->ndim != p->ndim) continue;
      bool same = true;
      for (int d = 0; same && d < p->ndim; ++d) same = b->dims[d] == p->dims[d];
      if (!same) continue;
      taken[r] = true;
      donate_to[in] = static_cast<int>(r);
      break;
    }
  }
}

std::shared_ptr<Graph> trace_end(int nargs, const std::vector<at::Tensor>& user_outs,
                                 const std::vector<int>& consumable) {
  TORCH_CHECK(my_trace(), "no graph is being traced");
  TraceInputs* tr = my_trace();
  auto graph = std::make_shared<Graph>();
  // The device-side checks become extra outputs, after the caller's.
  std::vector<at::Tensor> outs(user_outs);
  for (auto& [flag, message] : tr->checks) {
    outs.push_back(flag);
    graph->check_messages.push_back(message);
  }
  graph->device = tr->device;
  graph->nargs = nargs;
  graph->tensor_args = tr->arg_index;
  graph->scalar_args = tr->scalar_args;
  graph->rng = tr->rng;

  std::vector<tpj_rt_buffer_t*> results;
  auto result_of = [&](tpj_rt_buffer_t* b) {
    for (size_t i = 0; i < results.size(); ++i)
      if (results[i] == b) return static_cast<int>(i);
    results.push_back(b);
    return static_cast<int>(results.size() - 1);
  };
  // Buffers that are graph parameters: read fresh on every run, never kept.
  auto is_param = [&](const tpj_rt_buffer_t* b) {
    for (auto* p : tr->orig)
      if (p == b) return true;
    for (auto* p : tr->scalar_bufs)
      if (p == b) return true;
    for (auto* p : tr->rng_bufs)
      if (p == b) return true;
    return false;
  };
  std::unordered_map<const c10::StorageImpl*, int> storage_ids;
  std::string failure;
  for (const at::Tensor& t : outs) {
    if (!t.device().is_privateuseone() || t.device().index() != tr->device) {
      failure = "a graph output is not on the graph's device";
      break;
    }
    const c10::StorageImpl* si = t.storage().unsafeGetStorageImpl();
    auto it = storage_ids.find(si);
    int sid;
    if (it != storage_ids.end()) {
      sid = it->second;
    } else {
      StorageSpec sp{StorageSpec::kResult, -1, nullptr, t.storage().nbytes()};
      for (size_t i = 0; i < tr->tensors.size(); ++i)
        if (tr->tensors[i].storage().unsafeGetStorageImpl() == si) {
          sp.kind = StorageSpec::kInput;
          sp.index = static_cast<int>(i);
        }
      if (sp.kind != StorageSpec::kInput) {
        BufferRef b = buffer_of(t);
        if (b->trace_id || is_param(b.get())) {
          sp.index = result_of(b.get());  // a parameter comes back as a result too
        } else {
          sp.kind = StorageSpec::kConst;
          sp.constant = b.release();
        }
      }
      sid = static_cast<int>(graph->storages.size());
      graph->storages.push_back(sp);
      storage_ids[si] = sid;
    }
    graph->outputs.push_back(OutputSpec{sid, t.scalar_type(), t.sizes().vec(), t.strides().vec(),
                                        t.storage_offset()});
  }
  for (size_t i = 0; failure.empty() && i < tr->tensors.size(); ++i) {
    BufferRef now(tpj_box_acquire_buffer(box_of(tr->tensors[i])));
    if (now.get() == tr->orig[i]) continue;
    if (!now.get() || !(now->trace_id || is_param(now.get()))) {
      failure = "an input was overwritten with a value computed outside the graph";
      break;
    }
    graph->mutations.emplace_back(static_cast<int>(i), result_of(now.get()));
  }
  std::vector<tpj_rt_buffer_t*> params(tr->orig);
  params.insert(params.end(), tr->scalar_bufs.begin(), tr->scalar_bufs.end());
  params.insert(params.end(), tr->rng_bufs.begin(), tr->rng_bufs.end());
  tpj_exec_graph_t* g = nullptr;
  tpj_status_t s;
  if (failure.empty()) {
    // An overwritten input donates its buffer to its new value, so the
    // graph updates it in place instead of holding both.
    std::vector<int> donate_to(params.size(), -1);
    for (auto [in, r] : graph->mutations) donate_to[in] = r;
    mark_consumable(*graph, tr, consumable, results, donate_to);
    s = tpj_exec_trace_end_donating(exec(), params.data(), static_cast<int>(params.size()),
                                    results.data(), static_cast<int>(results.size()),
                                    donate_to.data(), &g);
  } else {
    tpj_exec_trace_abort(exec());
    s = nullptr;
  }
  restore_inputs(tr);
  drop_trace();
  TORCH_CHECK(failure.empty(), "torch.compile(backend=\"tpu\"): ", failure);
  TPJ_CHECK(s);
  warn_disk_cache_once();
  graph->g = g;
  return graph;
}

// The part of a call's signature that decides the program: per tensor its
// device, dtype, view and box buffer type, and which inputs share a storage.
// Raw integers, not text: this runs on every call of a compiled function
// (an optimizer step passes a few hundred tensors).
py::bytes graph_key(const std::vector<std::optional<at::Tensor>>& args) {
  std::string k;
  k.reserve(args.size() * 96);
  auto put = [&k](int64_t v) { k.append(reinterpret_cast<const char*>(&v), sizeof(v)); };
  auto put_list = [&](c10::IntArrayRef v) {
    put(static_cast<int64_t>(v.size()));
    for (int64_t x : v) put(x);
  };
  std::unordered_map<const c10::StorageImpl*, int64_t> seen;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i] || !args[i]->defined()) {
      put(-1);
      continue;
    }
    const at::Tensor& t = *args[i];
    bool tpu = t.device().is_privateuseone();
    put(tpu ? 1 : 2);
    put(t.device().index());
    put(static_cast<int64_t>(t.scalar_type()));
    put_list(t.sizes());
    put_list(t.strides());
    put(t.storage_offset());
    if (tpu) {
      auto [it, fresh] = seen.emplace(t.storage().unsafeGetStorageImpl(), i);
      put(fresh ? -1 : it->second);
      tpj_box_t* box = box_of(t);
      BufferRef b(tpj_box_acquire_buffer(box));
      if (b.get()) {
        put(static_cast<int64_t>(b->dtype));
        put_list(c10::IntArrayRef(b->dims, b->ndim));
      } else {
        put(-1);
        put(static_cast<int64_t>(box->nbytes));
      }
    }
  }
  return py::bytes(k);
}

}  // namespace

void bind_graph(py::module& m) {
  py::class_<Graph, std::shared_ptr<Graph>>(m, "_Graph")
      .def("run", &Graph::run)
      .def("run_consuming", &Graph::run_consuming)
      .def_property_readonly("num_nodes", &Graph::num_nodes)
      .def_property_readonly("num_mutations",
                             [](const Graph& g) { return static_cast<int>(g.mutations.size()); });
  m.def("_trace_begin", &trace_begin);
  m.def("_trace_end", &trace_end, py::arg("nargs"), py::arg("outs"),
        py::arg("consumable") = std::vector<int>{});
  m.def("_trace_abort", &trace_abort);
  m.def("_graph_key", &graph_key);
  m.def("_set_deferred_index_checks", &set_deferred_index_checks, py::arg("on"));
}

}  // namespace torch_pjrt
