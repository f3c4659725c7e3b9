// The host-staging transport: src/dist/transport.h filled in over a c10d
// Backend that takes CPU tensors (PyTorch's gloo, built in Python: gloo's own
// headers are not in the wheel, but its Backend's virtual methods are all we
// call). Operands are host bytes the c10d layer has already downloaded.
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "tensor.h"
#include "distributed/dist.h"

namespace torch_pjrt {
namespace {

struct GlooTransport {
  c10::intrusive_ptr<c10d::Backend> pg;
  std::chrono::milliseconds timeout;
  tpj_dist_transport_t table;
};

// The c10d Work behind a tpj_dist_work_t (reinterpret_cast both ways).
struct GlooWork {
  c10::intrusive_ptr<c10d::Work> work;
};

c10d::ReduceOp reduce_op(tpj_dist_op_t op) {
  switch (op) {
    case TPJ_DIST_PRODUCT: return c10d::ReduceOp::PRODUCT;
    case TPJ_DIST_MIN: return c10d::ReduceOp::MIN;
    case TPJ_DIST_MAX: return c10d::ReduceOp::MAX;
    case TPJ_DIST_BAND: return c10d::ReduceOp::BAND;
    case TPJ_DIST_BOR: return c10d::ReduceOp::BOR;
    case TPJ_DIST_BXOR: return c10d::ReduceOp::BXOR;
    default: return c10d::ReduceOp::SUM;
  }
}

// A CPU tensor over the operand's host bytes (not owned: the c10d layer keeps
// them alive until the work finishes).
at::Tensor host_tensor(const tpj_dist_buf_t* b) {
  return at::from_blob(b->host, {b->numel}, at::TensorOptions().dtype(scalar_type_of(b->dtype)));
}

// Blocks of equal size over a flat operand.
std::vector<at::Tensor> blocks(const tpj_dist_buf_t* b, int n) {
  return host_tensor(b).chunk(n);
}

// Runs fn (which calls the gloo backend) and turns what it throws into a
// status: a rank's failure (a peer closing, a timeout) reaches Python as a
// message, never as an abort.
template <typename F>
tpj_status_t guarded(const char* what, F&& fn) {
  try {
    fn();
    return nullptr;
  } catch (const c10::Error& e) {
    return tpj_status_make(TPJ_INTERNAL, "pjrt %s: %s", what, e.what_without_backtrace());
  } catch (const std::exception& e) {
    return tpj_status_make(TPJ_INTERNAL, "pjrt %s: %s", what, e.what());
  }
}

GlooTransport* self_of(void* self) { return static_cast<GlooTransport*>(self); }

tpj_status_t start(const char* what, tpj_dist_work_t** out_work,
                   const std::function<c10::intrusive_ptr<c10d::Work>()>& fn) {
  *out_work = nullptr;
  return guarded(what, [&] {
    auto w = new GlooWork{fn()};
    *out_work = reinterpret_cast<tpj_dist_work_t*>(w);
  });
}

tpj_status_t all_reduce(void* self, tpj_dist_buf_t* buf, tpj_dist_op_t op, tpj_dist_work_t** out) {
  return start("all_reduce", out, [&] {
    std::vector<at::Tensor> ts{host_tensor(buf)};
    c10d::AllreduceOptions o;
    o.reduceOp = reduce_op(op);
    return self_of(self)->pg->allreduce(ts, o);
  });
}

tpj_status_t broadcast(void* self, tpj_dist_buf_t* buf, int root, tpj_dist_work_t** out) {
  return start("broadcast", out, [&] {
    std::vector<at::Tensor> ts{host_tensor(buf)};
    c10d::BroadcastOptions o;
    o.rootRank = root;
    return self_of(self)->pg->broadcast(ts, o);
  });
}

tpj_status_t reduce(void* self, tpj_dist_buf_t* buf, tpj_dist_op_t op, int root,
                    tpj_dist_work_t** out) {
  return start("reduce", out, [&] {
    std::vector<at::Tensor> ts{host_tensor(buf)};
    c10d::ReduceOptions o;
    o.reduceOp = reduce_op(op);
    o.rootRank = root;
    return self_of(self)->pg->reduce(ts, o);
  });
}

tpj_status_t all_gather(void* self, tpj_dist_buf_t* in, tpj_dist_buf_t* out_buf,
                        tpj_dist_work_t** out) {
  return start("all_gather", out, [&] {
    at::Tensor i = host_tensor(in), o = host_tensor(out_buf);
    return self_of(self)->pg->_allgather_base(o, i, c10d::AllgatherOptions());
  });
}

tpj_status_t reduce_scatter(void* self, tpj_dist_buf_t* in, tpj_dist_buf_t* out_buf,
                            tpj_dist_op_t op, tpj_dist_work_t** out) {
  return start("reduce_scatter", out, [&] {
    at::Tensor i = host_tensor(in), o = host_tensor(out_buf);
    c10d::ReduceScatterOptions opts;
    opts.reduceOp = reduce_op(op);
    return self_of(self)->pg->_reduce_scatter_base(o, i, opts);
  });
}

tpj_status_t gather(void* self, tpj_dist_buf_t* in, tpj_dist_buf_t* out_buf, int root,
                    tpj_dist_work_t** out) {
  GlooTransport* g = self_of(self);
  return start("gather", out, [&] {
    std::vector<std::vector<at::Tensor>> outs;
    if (out_buf) outs.push_back(blocks(out_buf, g->table.size));
    std::vector<at::Tensor> ins{host_tensor(in)};
    c10d::GatherOptions o;
    o.rootRank = root;
    return g->pg->gather(outs, ins, o);
  });
}

tpj_status_t scatter(void* self, tpj_dist_buf_t* in, tpj_dist_buf_t* out_buf, int root,
                     tpj_dist_work_t** out) {
  GlooTransport* g = self_of(self);
  return start("scatter", out, [&] {
    std::vector<std::vector<at::Tensor>> ins;
    if (in) ins.push_back(blocks(in, g->table.size));
    std::vector<at::Tensor> outs{host_tensor(out_buf)};
    c10d::ScatterOptions o;
    o.rootRank = root;
    return g->pg->scatter(outs, ins, o);
  });
}

tpj_status_t all_to_all(void* self, tpj_dist_buf_t* in, tpj_dist_buf_t* out_buf,
                        const int64_t* in_counts, const int64_t* out_counts,
                        tpj_dist_work_t** out) {
  GlooTransport* g = self_of(self);
  return start("all_to_all", out, [&] {
    at::Tensor i = host_tensor(in), o = host_tensor(out_buf);
    std::vector<int64_t> ic(in_counts, in_counts + g->table.size);
    std::vector<int64_t> oc(out_counts, out_counts + g->table.size);
    return g->pg->alltoall_base(o, i, oc, ic, c10d::AllToAllOptions());
  });
}

tpj_status_t send(void* self, tpj_dist_buf_t* buf, int peer, int tag, tpj_dist_work_t** out) {
  return start("send", out, [&] {
    std::vector<at::Tensor> ts{host_tensor(buf)};
    return self_of(self)->pg->send(ts, peer, tag);
  });
}

tpj_status_t recv(void* self, tpj_dist_buf_t* buf, int peer, int tag, tpj_dist_work_t** out) {
  return start("recv", out, [&] {
    std::vector<at::Tensor> ts{host_tensor(buf)};
    if (peer < 0) return self_of(self)->pg->recvAnysource(ts, tag);
    return self_of(self)->pg->recv(ts, peer, tag);
  });
}

tpj_status_t barrier(void* self, tpj_dist_work_t** out) {
  return start("barrier", out, [&] { return self_of(self)->pg->barrier(c10d::BarrierOptions()); });
}

GlooWork* work_of(tpj_dist_work_t* w) { return reinterpret_cast<GlooWork*>(w); }

tpj_status_t work_wait(void* self, tpj_dist_work_t* w, int64_t timeout_ms) {
  return guarded("wait", [&] {
    auto t = timeout_ms < 0 ? ::kNoTimeout : std::chrono::milliseconds(timeout_ms);
    work_of(w)->work->wait(t);
  });
}

tpj_status_t work_then(void* self, tpj_dist_work_t* w, tpj_dist_done_fn fn, void* user) {
  c10::intrusive_ptr<c10::ivalue::Future> fut;
  try {
    fut = work_of(w)->work->getFuture();
  } catch (const std::exception&) {
    // gloo's send and recv works have no future; they finish in wait().
    return tpj_status_make(TPJ_UNIMPLEMENTED, "no completion callback");
  }
  if (!fut) return tpj_status_make(TPJ_UNIMPLEMENTED, "no completion callback");
  fut->addCallback([fn, user](c10::ivalue::Future& f) {
    if (f.hasError()) {
      fn(user, tpj_status_make(TPJ_INTERNAL, "pjrt: %s", f.tryRetrieveErrorMessage().c_str()));
    } else {
      fn(user, nullptr);
    }
  });
  return nullptr;
}

int work_source_rank(void* self, tpj_dist_work_t* w) {
  try {
    return work_of(w)->work->sourceRank();
  } catch (const std::exception&) {
    return -1;
  }
}

void work_release(void* self, tpj_dist_work_t* w) { delete work_of(w); }

void destroy(void* self) { delete self_of(self); }

}  // namespace

tpj_dist_transport_t* make_gloo_transport(c10::intrusive_ptr<c10d::Backend> pg,
                                          std::chrono::milliseconds timeout) {
  auto* g = new GlooTransport{std::move(pg), timeout, {}};
  tpj_dist_transport_t& t = g->table;
  t.name = "gloo (host staging)";
  t.stages_on_host = 1;
  t.rank = g->pg->getRank();
  t.size = g->pg->getSize();
  t.self = g;
  t.all_reduce = all_reduce;
  t.broadcast = broadcast;
  t.reduce = reduce;
  t.all_gather = all_gather;
  t.reduce_scatter = reduce_scatter;
  t.gather = gather;
  t.scatter = scatter;
  t.all_to_all = all_to_all;
  t.send = send;
  t.recv = recv;
  t.barrier = barrier;
  t.work_wait = work_wait;
  t.work_then = work_then;
  t.work_source_rank = work_source_rank;
  t.work_release = work_release;
  t.destroy = destroy;
  return &t;
}

}  // namespace torch_pjrt
