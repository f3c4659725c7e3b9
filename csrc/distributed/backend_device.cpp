// The c10d backend "pjrt" over a transport that reads device buffers (the
// XLA transport, src/dist/xla.h): nothing is staged on the host. Every
// collective packs its tensors into one flat tpu tensor (the tensor itself
// when it is one contiguous tensor whose buffer is already flat), hands its
// buffer to the transport, and copies the flat result back into the output
// tensors on the device. The transport's collectives finish when they
// return (their results are buffers PJRT computes asynchronously), so each
// Work is complete when it is made.
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <algorithm>
#include <memory>

#include "allocator.h"
#include "tensor.h"
#include "distributed/dist.h"

namespace torch_pjrt {
namespace {

using c10d::OpType;
using Transport = std::shared_ptr<tpj_dist_transport_t>;

class DoneWork : public c10d::Work {
 public:
  DoneWork(int rank, OpType type, std::vector<at::Tensor> outputs, int source = -1)
      : Work(rank, type),
        outputs_(std::move(outputs)),
        source_(source),
        fut_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {
    fut_->markCompleted(c10::IValue(outputs_));
  }
  bool isCompleted() override { return true; }
  bool isSuccess() const override { return true; }
  bool wait(std::chrono::milliseconds) override { return true; }
  void synchronize() override {}
  int sourceRank() const override { return source_; }
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return fut_; }

 private:
  std::vector<at::Tensor> outputs_;
  int source_;
  c10::intrusive_ptr<c10::ivalue::Future> fut_;
};

// ts laid end to end as one flat tpu tensor (a view when there is one).
at::Tensor pack(c10::ArrayRef<at::Tensor> ts) {
  if (ts.size() == 1) return ts[0].reshape(-1);
  std::vector<at::Tensor> parts;
  for (const auto& t : ts) parts.push_back(t.reshape(-1));
  return at::cat(parts);
}

// The buffer behind flat, which must be exactly [numel] elements of its
// dtype (the program's parameter type): flat is first copied into such a
// buffer when it reads its storage's buffer through a view.
BufferRef flat_buffer(at::Tensor& flat) {
  tpj_dtype_t dt = to_tpj_dtype(flat.scalar_type());
  if (covers_storage(flat)) {
    BufferRef b = buffer_of(flat);
    if (b->dtype == dt && b->ndim == 1 && b->dims[0] == flat.numel()) return b;
  }
  flat = materialize(flat, flat.scalar_type(), {flat.numel()});
  BufferRef b = buffer_of(flat);
  TORCH_INTERNAL_ASSERT(b->ndim == 1 && b->dims[0] == flat.numel(), "pjrt: a flat copy has dims of rank ", b->ndim);
  return b;
}

// A transport result (owned; taken) as a flat tpu tensor.
at::Tensor result(tpj_rt_buffer_t*& buf, at::ScalarType dt, c10::Device device) {
  TORCH_INTERNAL_ASSERT(buf, "pjrt: the transport gave no result");
  at::Tensor o = new_output({tpj_rt_buffer_numel(buf)}, dt, device);
  tpj_box_set_buffer(box_of(o), buf);
  buf = nullptr;
  return o;
}

// flat's elements into ts, in order.
void unpack(const at::Tensor& flat, c10::ArrayRef<at::Tensor> ts) {
  int64_t off = 0;
  for (const auto& t : ts) {
    int64_t n = t.numel();
    if (n) t.copy_(flat.narrow(0, off, n).view(t.sizes()));
    off += n;
  }
}

// One operand and its result, released if not taken.
struct Operand {
  at::Tensor flat;  // keeps the buffer's storage alive
  tpj_dist_buf_t buf{};  // buf.device: an owned reference
  explicit Operand(c10::ArrayRef<at::Tensor> ts) : flat(pack(ts)) {
    buf.device = flat_buffer(flat).release();
    buf.dtype = to_tpj_dtype(flat.scalar_type());
    buf.numel = flat.numel();
  }
  // PREMUL_SUM's factor, applied before the transport sees the operand.
  void scale(double factor) {
    flat = flat * factor;
    tpj_rt_buffer_release(buf.device);
    buf.device = flat_buffer(flat).release();
  }
  // An output operand: only its element count and dtype.
  Operand(int64_t numel, at::ScalarType dt) {
    buf.dtype = to_tpj_dtype(dt);
    buf.numel = numel;
  }
  Operand(const Operand&) = delete;
  ~Operand() {
    tpj_rt_buffer_release(buf.device);
    tpj_rt_buffer_release(buf.out_device);
  }
};

class DeviceBackend : public PjrtBackendBase {
 public:
  explicit DeviceBackend(Transport t) : PjrtBackendBase(t->rank, t->size), t_(std::move(t)) {}

  const char* transport() const { return t_->name; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& ts,
                                           const c10d::BroadcastOptions& o) override {
    check_dense("broadcast", ts);
    int root = static_cast<int>(o.rootRank);
    // One packed operand per dtype run would do; one per tensor is simpler
    // and every rank makes the same calls.
    for (auto& t : ts) {
      Operand x{c10::ArrayRef<at::Tensor>(t)};
      run("broadcast", [&](tpj_dist_work_t** w) { return t_->broadcast(t_->self, &x.buf, root, w); });
      if (rank_ != root) unpack(result(x.buf.out_device, t.scalar_type(), t.device()), {t});
    }
    return done(OpType::BROADCAST, ts);
  }




  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outs,
                                           std::vector<at::Tensor>& ins,
                                           const c10d::AllgatherOptions& o) override {
    const char* what = "all_gather";
    TORCH_CHECK(ins.size() == 1 && outs.size() == 1, "pjrt ", what,
                ": one input tensor and one output list expected");
    check_blocks(what, outs[0], ins[0], size_);
    all_gather_into(ins[0], outs[0]);
    return done(OpType::ALLGATHER, outs[0]);
  }


  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outs, std::vector<at::Tensor>& ins,
      const c10d::AllgatherOptions& o) override {
    check_pairs("all_gather_into_tensor", outs, ins, /*out_is_bigger=*/true, size_);
    for (size_t i = 0; i < ins.size(); ++i) all_gather_into(ins[i], {outs[i]});
    return done(OpType::_ALLGATHER_BASE, outs);
  }

  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outs,
                                        std::vector<at::Tensor>& ins,
                                        const c10d::GatherOptions& o) override {
    const char* what = "gather";
    TORCH_CHECK(ins.size() == 1, "pjrt ", what, ": one input tensor expected");
    check_dense(what, ins);
    int root = static_cast<int>(o.rootRank);
    std::vector<at::Tensor> dst;
    if (rank_ == root) {
      TORCH_CHECK(outs.size() == 1, "pjrt ", what, ": the root needs one output list");
      check_blocks(what, outs[0], ins[0], size_);
      dst = outs[0];
    } else {
      TORCH_CHECK(outs.empty() || outs[0].empty(), "pjrt ", what, ": only the root takes outputs");
    }
    Operand x(ins), y(ins[0].numel() * size_, ins[0].scalar_type());
    run(what, [&](tpj_dist_work_t** w) {
      return t_->gather(t_->self, &x.buf, rank_ == root ? &y.buf : nullptr, root, w);
    });
    if (rank_ == root) unpack(result(y.buf.out_device, ins[0].scalar_type(), ins[0].device()), dst);
    return done(OpType::GATHER, dst);
  }

  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outs,
                                         std::vector<std::vector<at::Tensor>>& ins,
                                         const c10d::ScatterOptions& o) override {
    const char* what = "scatter";
    TORCH_CHECK(outs.size() == 1, "pjrt ", what, ": one output tensor expected");
    check_dense(what, outs);
    int root = static_cast<int>(o.rootRank);
    const at::Tensor& out = outs[0];
    std::unique_ptr<Operand> x;
    Operand y(out.numel(), out.scalar_type());
    if (rank_ == root) {
      TORCH_CHECK(ins.size() == 1, "pjrt ", what, ": the root needs one input list");
      check_blocks(what, ins[0], out, size_);
      x = std::make_unique<Operand>(ins[0]);
    } else {
      TORCH_CHECK(ins.empty() || ins[0].empty(), "pjrt ", what, ": only the root takes inputs");
    }
    run(what, [&](tpj_dist_work_t** w) {
      return t_->scatter(t_->self, x ? &x->buf : nullptr, &y.buf, root, w);
    });
    unpack(result(y.buf.out_device, out.scalar_type(), out.device()), outs);
    return done(OpType::SCATTER, outs);
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outs,
                                                std::vector<std::vector<at::Tensor>>& ins,
                                                const c10d::ReduceScatterOptions& o) override {
    const char* what = "reduce_scatter";
    TORCH_CHECK(outs.size() == 1 && ins.size() == 1, "pjrt ", what,
                ": one output tensor and one input list expected");
    check_blocks(what, ins[0], outs[0], size_);
    reduce_scatter_into(what, ins[0], outs[0], o.reduceOp);
    return done(OpType::REDUCE_SCATTER, outs);
  }


  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outs, std::vector<at::Tensor>& ins,
      const c10d::ReduceScatterOptions& o) override {
    const char* what = "reduce_scatter_tensor";
    check_pairs(what, outs, ins, /*out_is_bigger=*/false, size_);
    for (size_t i = 0; i < ins.size(); ++i) reduce_scatter_into(what, {ins[i]}, outs[i], o.reduceOp);
    return done(OpType::_REDUCE_SCATTER_BASE, outs);
  }

  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& out, at::Tensor& in,
                                               std::vector<int64_t>& out_splits,
                                               std::vector<int64_t>& in_splits,
                                               const c10d::AllToAllOptions& o) override {
    const char* what = "all_to_all_single";
    check_dense(what, {out, in});
    TORCH_CHECK(out.scalar_type() == in.scalar_type(), "pjrt ", what,
                ": input and output dtypes differ (", in.scalar_type(), " vs ", out.scalar_type(), ")");
    std::vector<int64_t> ic = split_counts(what, in, in_splits, "input", size_, 1);
    std::vector<int64_t> oc = split_counts(what, out, out_splits, "output", size_, 1);
    unpack(all_to_all_flat(what, {in}, ic, oc, out.scalar_type(), out.device()), {out});
    return done(OpType::ALLTOALL_BASE, {out});
  }

  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outs,
                                          std::vector<at::Tensor>& ins,
                                          const c10d::AllToAllOptions& o) override {
    const char* what = "all_to_all";
    check_lists(what, outs, ins, size_);
    TORCH_CHECK(ins[0].scalar_type() == outs[0].scalar_type(), "pjrt ", what,
                ": input and output dtypes differ (", ins[0].scalar_type(), " vs ",
                outs[0].scalar_type(), ")");
    std::vector<int64_t> ic, oc;
    for (int r = 0; r < size_; ++r) {
      ic.push_back(ins[r].numel());
      oc.push_back(outs[r].numel());
    }
    unpack(all_to_all_flat(what, ins, ic, oc, outs[0].scalar_type(), outs[0].device()), outs);
    return done(OpType::ALLTOALL, outs);
  }

  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& ts, int dst, int tag) override {
    check_same_dtype("send", ts);
    Operand x(ts);
    run("send", [&](tpj_dist_work_t** w) { return t_->send(t_->self, &x.buf, dst, tag, w); });
    return done(OpType::SEND, ts);
  }

  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& ts, int src, int tag) override {
    return recv_from(OpType::RECV, ts, src, tag);
  }

  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& ts, int tag) override {
    return recv_from(OpType::RECVANYSOURCE, ts, -1, tag);
  }

  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& o) override {
    run("barrier", [&](tpj_dist_work_t** w) { return t_->barrier(t_->self, w); });
    return done(OpType::BARRIER, {});
  }

 private:
  // Starts one transport operation and waits for it (it has finished when
  // it returns); returns the source rank of a receive.
  template <typename F>
  int run(const char* what, F&& start) {
    tpj_dist_work_t* w = nullptr;
    tpj_status_t s = start(&w);
    if (s) throw_dist(s);
    s = t_->work_wait(t_->self, w, -1);
    int src = t_->work_source_rank(t_->self, w);
    t_->work_release(t_->self, w);
    if (s) throw_dist(s);
    return src;
  }

  [[noreturn]] static void throw_dist(tpj_status_t s) {
    std::string msg = tpj_status_message(s);
    tpj_status_code_t code = tpj_status_code(s);
    tpj_status_free(s);
    if (code == TPJ_UNIMPLEMENTED) TORCH_CHECK_NOT_IMPLEMENTED(false, msg);
    if (code == TPJ_INVALID_ARGUMENT) TORCH_CHECK(false, msg);
    C10_THROW_ERROR(DistBackendError, msg);
  }

  c10::intrusive_ptr<c10d::Work> done(OpType type, std::vector<at::Tensor> outputs, int src = -1) {
    return c10::make_intrusive<DoneWork>(rank_, type, std::move(outputs), src);
  }

  c10::intrusive_ptr<c10d::Work> reduce_like(const char* what, OpType type,
                                             std::vector<at::Tensor>& ts,
                                             const c10d::ReduceOp& rop, int root) override {
    TORCH_CHECK(!ts.empty(), "pjrt ", what, ": no tensors");
    check_same_dtype(what, ts);
    at::ScalarType dt = ts[0].scalar_type();
    Reduction r = plan_reduction(what, rop, dt);
    Operand x(ts);
    if (r.pre_scale != 1.0) x.scale(r.pre_scale);
    run(what, [&](tpj_dist_work_t** w) {
      return root < 0 ? t_->all_reduce(t_->self, &x.buf, r.op, w)
                      : t_->reduce(t_->self, &x.buf, r.op, root, w);
    });
    if (root < 0 || root == rank_) {
      at::Tensor res = result(x.buf.out_device, dt, ts[0].device());
      if (r.average) apply_average(res, size_);
      unpack(res, ts);
    }
    return done(type, ts);
  }

  // all_to_all of ins laid end to end: ic[r] elements go to rank r, and
  // oc[r] arrive from rank r (the result, laid end to end). The transport
  // runs even splits only (a replicated program has one shape on every
  // replica), so uneven ones travel padded to the largest count of any
  // pair and are sliced out after. Which path to take is decided from every
  // rank's counts, exchanged first (one small all_gather and a host read),
  // so that all ranks take the same one -- a rank's own counts may be even
  // while another's are not -- and every rank raises the same error when
  // one rank's sends do not match what its peer expects.
  at::Tensor all_to_all_flat(const char* what, c10::ArrayRef<at::Tensor> ins,
                             const std::vector<int64_t>& ic, const std::vector<int64_t>& oc,
                             at::ScalarType dt, c10::Device dev) {
    const int n = size_;
    std::vector<int64_t> mine(ic);
    mine.insert(mine.end(), oc.begin(), oc.end());
    at::Tensor counts = at::empty({n * 2 * n}, at::TensorOptions().dtype(at::kLong).device(dev));
    all_gather_into(at::tensor(mine, at::kLong).to(dev), {counts});
    at::Tensor host = counts.cpu().view({n, 2, n});
    auto a = host.accessor<int64_t, 3>();
    int64_t widest = 0;
    bool even = true;
    for (int src = 0; src < n; ++src) {
      for (int dst = 0; dst < n; ++dst) {
        int64_t sent = a[src][0][dst], expected = a[dst][1][src];
        TORCH_CHECK(sent == expected, "pjrt ", what, ": rank ", src, " sends ", sent,
                    " elements to rank ", dst, ", which expects ", expected,
                    " (the input and output splits of the ranks must agree)");
        widest = std::max(widest, sent);
        even = even && sent == a[0][0][0];
      }
    }
    int64_t out_numel = 0;
    for (int64_t c : oc) out_numel += c;
    if (even) {
      Operand x(ins), y(out_numel, dt);
      run(what, [&](tpj_dist_work_t** w) {
        return t_->all_to_all(t_->self, &x.buf, &y.buf, ic.data(), oc.data(), w);
      });
      return result(y.buf.out_device, dt, dev);
    }
    at::Tensor flat = pack(ins);
    std::vector<at::Tensor> parts;
    int64_t off = 0;
    for (int r = 0; r < n; ++r) {
      parts.push_back(flat.narrow(0, off, ic[r]));
      if (ic[r] < widest) parts.push_back(at::zeros({widest - ic[r]}, flat.options()));
      off += ic[r];
    }
    at::Tensor padded = at::cat(parts);
    std::vector<int64_t> block(n, widest);
    Operand x{c10::ArrayRef<at::Tensor>(padded)}, y(widest * n, dt);
    run(what, [&](tpj_dist_work_t** w) {
      return t_->all_to_all(t_->self, &x.buf, &y.buf, block.data(), block.data(), w);
    });
    at::Tensor got = result(y.buf.out_device, dt, dev);
    parts.clear();
    for (int r = 0; r < n; ++r) parts.push_back(got.narrow(0, r * widest, oc[r]));
    return at::cat(parts);
  }

  void all_gather_into(const at::Tensor& in, c10::ArrayRef<at::Tensor> outs) {
    Operand x{c10::ArrayRef<at::Tensor>(in)}, y(in.numel() * size_, in.scalar_type());
    run("all_gather", [&](tpj_dist_work_t** w) { return t_->all_gather(t_->self, &x.buf, &y.buf, w); });
    unpack(result(y.buf.out_device, in.scalar_type(), in.device()), outs);
  }

  // ins: rank r's share in block r (one tensor of size blocks, or a list).
  void reduce_scatter_into(const char* what, c10::ArrayRef<at::Tensor> ins, const at::Tensor& out,
                           const c10d::ReduceOp& rop) {
    at::ScalarType dt = out.scalar_type();
    Reduction r = plan_reduction(what, rop, dt);
    Operand x(ins), y(out.numel(), dt);
    if (r.pre_scale != 1.0) x.scale(r.pre_scale);
    run(what, [&](tpj_dist_work_t** w) {
      return t_->reduce_scatter(t_->self, &x.buf, &y.buf, r.op, w);
    });
    at::Tensor res = result(y.buf.out_device, dt, out.device());
    if (r.average) apply_average(res, size_);
    unpack(res, {out});
  }

  c10::intrusive_ptr<c10d::Work> recv_from(OpType type, std::vector<at::Tensor>& ts, int src,
                                           int tag) {
    check_same_dtype("recv", ts);
    int64_t numel = 0;
    for (const auto& t : ts) numel += t.numel();
    Operand y(numel, ts[0].scalar_type());
    int from = run("recv", [&](tpj_dist_work_t** w) { return t_->recv(t_->self, &y.buf, src, tag, w); });
    unpack(result(y.buf.out_device, ts[0].scalar_type(), ts[0].device()), ts);
    return done(type, ts, from);
  }

  Transport t_;
};

}  // namespace

c10::intrusive_ptr<c10d::Backend> make_pjrt_device_backend(tpj_dist_transport_t* t) {
  Transport owned(t, [](tpj_dist_transport_t* p) { p->destroy(p->self); });
  return c10::make_intrusive<DeviceBackend>(std::move(owned));
}

std::string device_transport_name(const c10::intrusive_ptr<c10d::Backend>& b) {
  auto* p = dynamic_cast<DeviceBackend*>(b.get());
  return p ? p->transport() : "";
}

}  // namespace torch_pjrt
