// The c10d backend "pjrt": what torch.distributed calls for tpu tensors.
// Every collective here is the same three steps over one transport
// (src/dist/transport.h): stage the operands (a download into one host block
// for a host transport), start the transport's operation, and, when it
// finishes, upload the results into the tensors and complete the Work's
// future. Reductions gloo lacks (AVG, PREMUL_SUM) and dtypes it cannot reduce
// are rewritten here, so every transport sees the same small vocabulary.
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "allocator.h"
#include "runtime.h"
#include "tensor.h"
#include "distributed/dist.h"

extern "C" {
#include "rt/upload.h"
}

namespace torch_pjrt {
namespace {

using c10d::OpType;
using Transport = std::shared_ptr<tpj_dist_transport_t>;

// True on a transport thread while it runs our completion callback.
thread_local bool in_callback = false;

// ---- Work ------------------------------------------------------------------

// A collective in flight. Its future completes (with the output tensors, as
// DDP's comm hooks expect) from the transport's completion callback, after
// the results are uploaded; a transport work with no callback (gloo's
// send/recv) is finished by wait() instead.
class PjrtWork : public c10d::Work {
 public:
  PjrtWork(int rank, OpType type, Transport t, tpj_dist_work_t* w,
           std::vector<at::Tensor> outputs, std::vector<at::Tensor> keep,
           std::function<void()> finish)
      : Work(rank, type),
        t_(std::move(t)),
        w_(w),
        outputs_(std::move(outputs)),
        keep_(std::move(keep)),
        finish_(std::move(finish)),
        fut_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

  ~PjrtWork() override {
    // An unfinished send/recv still reads or writes the staged host block,
    // which dies with this Work: let the transport finish with it first.
    if (lazy_ && !fut_->completed()) tpj_status_free(t_->work_wait(t_->self, w_, -1));
    t_->work_release(t_->self, w_);
  }

  // Asks the transport to call back on completion; the callback holds a
  // reference, so a Work dropped by its caller still completes its future.
  static void arm(const c10::intrusive_ptr<PjrtWork>& self) {
    auto* ref = new c10::intrusive_ptr<PjrtWork>(self);
    tpj_status_t s = self->t_->work_then(self->t_->self, self->w_, &on_done, ref);
    if (s) {
      tpj_status_free(s);
      delete ref;
      self->lazy_ = true;
    }
  }

  bool isCompleted() override { return fut_->completed(); }
  bool isSuccess() const override { return fut_->completed() && !fut_->hasError(); }
  std::exception_ptr exception() const override {
    return fut_->completed() && fut_->hasError() ? fut_->exception_ptr() : nullptr;
  }
  int sourceRank() const override { return t_->work_source_rank(t_->self, w_); }
  std::vector<at::Tensor> result() override { return outputs_; }
  void synchronize() override {}
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return fut_; }

  bool wait(std::chrono::milliseconds timeout) override {
    int64_t ms = timeout == ::kNoTimeout ? -1 : timeout.count();
    if (lazy_) {
      complete(t_->work_wait(t_->self, w_, ms));
    } else {
      if (ms >= 0 && !fut_->completed()) {
        tpj_status_t s = t_->work_wait(t_->self, w_, ms);
        if (s) complete(s);
      }
      fut_->wait();
    }
    if (fut_->hasError()) std::rethrow_exception(fut_->exception_ptr());
    return true;
  }

 private:
  static void on_done(void* user, tpj_status_t s) {
    auto* ref = static_cast<c10::intrusive_ptr<PjrtWork>*>(user);
    (*ref)->complete(s);
    in_callback = true;
    delete ref;  // may be the last reference to the Work, and to the transport
    in_callback = false;
  }

  // Uploads the results (success) and completes the future, once.
  void complete(tpj_status_t s) {
    std::lock_guard<std::mutex> g(mu_);
    if (done_) {
      tpj_status_free(s);
      return;
    }
    done_ = true;
    std::exception_ptr err;
    if (s) {
      std::string msg = tpj_status_message(s);
      tpj_status_free(s);
      try {
        C10_THROW_ERROR(DistBackendError, msg);
      } catch (...) {
        err = std::current_exception();
      }
    } else {
      try {
        // The collective's results are its outputs, written as NCCL writes
        // them: no version bump. A bump here would come from the completion
        // thread after autograd or selective activation checkpointing noted
        // the output's version (SAC caches a functional collective's output
        // and then calls it "mutated" in the recompute: TorchTitan's TP).
        at::AutoDispatchBelowADInplaceOrView below_inplace;
        if (finish_) finish_();
      } catch (...) {
        err = std::current_exception();
      }
    }
    finish_ = nullptr;  // drops the host staging
    keep_.clear();
    if (err) {
      fut_->setError(err);
    } else {
      fut_->markCompleted(c10::IValue(outputs_));
    }
  }

  Transport t_;
  tpj_dist_work_t* w_;
  std::vector<at::Tensor> outputs_;
  std::vector<at::Tensor> keep_;
  std::function<void()> finish_;
  c10::intrusive_ptr<c10::ivalue::Future> fut_;
  bool lazy_ = false;
  std::mutex mu_;
  bool done_ = false;
};

// ---- staging -----------------------------------------------------------------

}  // namespace

void check_dense(const char* op, c10::ArrayRef<at::Tensor> ts) {
  for (const auto& t : ts) {
    TORCH_CHECK(t.defined(), "pjrt ", op, ": got an undefined tensor");
    TORCH_CHECK_NOT_IMPLEMENTED(t.layout() == at::kStrided, "pjrt ", op, ": ", t.layout(),
                                " tensors are not supported");
  }
}

void check_same_dtype(const char* op, c10::ArrayRef<at::Tensor> ts) {
  check_dense(op, ts);
  for (const auto& t : ts) {
    TORCH_CHECK(t.scalar_type() == ts[0].scalar_type(), "pjrt ", op,
                ": tensors must share one dtype, got ", ts[0].scalar_type(), " and ",
                t.scalar_type());
  }
}


void check_blocks(const char* what, c10::ArrayRef<at::Tensor> blocks, const at::Tensor& one,
                  int size) {
  check_dense(what, blocks);
  check_dense(what, one);
  TORCH_CHECK(static_cast<int>(blocks.size()) == size, "pjrt ", what, ": expected a list of ",
              size, " tensors (the group size), got ", blocks.size());
  for (const auto& b : blocks) {
    TORCH_CHECK(b.scalar_type() == one.scalar_type() && b.numel() == one.numel(), "pjrt ",
                what, ": every tensor in the list must match ", one.sizes(), " ",
                one.scalar_type(), ", got ", b.sizes(), " ", b.scalar_type());
  }
}

void check_lists(const char* what, c10::ArrayRef<at::Tensor> outs, c10::ArrayRef<at::Tensor> ins,
                 int size) {
  TORCH_CHECK(static_cast<int>(outs.size()) == size && static_cast<int>(ins.size()) == size,
              "pjrt ", what, ": expected ", size, " input and output tensors, got ", ins.size(),
              " and ", outs.size());
  check_same_dtype(what, ins);
  check_same_dtype(what, outs);
}

void check_pairs(const char* what, c10::ArrayRef<at::Tensor> outs, c10::ArrayRef<at::Tensor> ins,
                 bool out_is_bigger, int size) {
  TORCH_CHECK(!ins.empty() && outs.size() == ins.size(), "pjrt ", what,
              ": expected as many outputs as inputs, got ", outs.size(), " and ", ins.size());
  check_dense(what, outs);
  check_dense(what, ins);
  for (size_t i = 0; i < ins.size(); ++i) {
    const at::Tensor& big = out_is_bigger ? outs[i] : ins[i];
    const at::Tensor& small = out_is_bigger ? ins[i] : outs[i];
    TORCH_CHECK(outs[i].scalar_type() == ins[i].scalar_type(), "pjrt ", what,
                ": input and output dtypes differ (", ins[i].scalar_type(), " vs ",
                outs[i].scalar_type(), ")");
    TORCH_CHECK(big.numel() == small.numel() * size, "pjrt ", what, ": ",
                out_is_bigger ? "output" : "input", " must have ", size,
                " times the elements of the ", out_is_bigger ? "input" : "output", " (got ",
                big.sizes(), " and ", small.sizes(), ")");
  }
}

std::vector<int64_t> split_counts(const char* what, const at::Tensor& t,
                                  const std::vector<int64_t>& splits, const char* which, int size,
                                  int64_t unit) {
  TORCH_CHECK(t.dim() >= 1, "pjrt ", what, ": the ", which, " must have a dimension to split");
  int64_t rows = t.size(0);
  int64_t row = rows ? t.numel() / rows * unit : 0;
  std::vector<int64_t> out;
  if (splits.empty()) {
    TORCH_CHECK(rows % size == 0, "pjrt ", what, ": the ", which, "'s first dimension (", rows,
                ") does not divide by the group size ", size);
    out.assign(size, rows / size * row);
    return out;
  }
  TORCH_CHECK(static_cast<int>(splits.size()) == size, "pjrt ", what, ": ", which,
              " splits need ", size, " entries, got ", splits.size());
  int64_t sum = 0;
  for (int64_t s : splits) {
    TORCH_CHECK(s >= 0, "pjrt ", what, ": negative split size ", s);
    sum += s;
    out.push_back(s * row);
  }
  TORCH_CHECK(sum == rows, "pjrt ", what, ": ", which, " splits add up to ", sum,
              " rows, but the ", which, " has ", rows);
  return out;
}

namespace {

// Byte offsets of tensors laid end to end, each aligned to its element size
// (so a typed view of the block is legal); the last entry is the total.
std::vector<int64_t> byte_offsets(c10::ArrayRef<at::Tensor> ts) {
  std::vector<int64_t> off{0};
  for (const auto& t : ts) {
    int64_t a = t.element_size();
    int64_t start = (off.back() + a - 1) / a * a;
    off.back() = start;
    off.push_back(start + t.numel() * a);
  }
  return off;
}

// Tensor i of ts as a typed view into the host byte block.
at::Tensor piece(const at::Tensor& block, const std::vector<int64_t>& off, const at::Tensor& t,
                 size_t i) {
  return block.narrow(0, off[i], t.numel() * t.element_size())
      .view(t.scalar_type())
      .view(t.sizes());
}

// Host blocks of 1 MiB and more are kept for reuse: a fresh one costs its
// page faults on first touch (about half the cost of staging 64 MiB here). A
// kept block is free when the pool holds the only reference to its storage
// (every view of it, and every Work's keep list, holds one).
at::Tensor host_bytes(int64_t n) {
  constexpr int64_t kMin = 1 << 20, kMaxKept = int64_t{512} << 20;
  if (n < kMin) return at::empty({n}, at::TensorOptions().dtype(at::kByte));
  static std::mutex mu;
  static std::vector<at::Tensor> pool;
  std::lock_guard<std::mutex> g(mu);
  int64_t kept = 0;
  for (const auto& b : pool) {
    if (b.storage().use_count() == 1 && b.numel() >= n && b.numel() <= 2 * n) {
      return b.narrow(0, 0, n);
    }
    kept += b.numel();
  }
  at::Tensor b = at::empty({n}, at::TensorOptions().dtype(at::kByte));
  if (kept + n > kMaxKept) {
    // Make room by dropping free blocks, oldest first.
    for (auto it = pool.begin(); it != pool.end() && kept + n > kMaxKept;) {
      if (it->storage().use_count() == 1) {
        kept -= it->numel();
        it = pool.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (kept + n <= kMaxKept) pool.push_back(b);
  return b;
}

// One download of every tensor into one host byte block.
at::Tensor download(c10::ArrayRef<at::Tensor> ts, const std::vector<int64_t>& off) {
  at::Tensor block = host_bytes(off.back());
  for (size_t i = 0; i < ts.size(); ++i) {
    if (ts[i].numel()) piece(block, off, ts[i], i).copy_(ts[i]);
  }
  return block;
}

void release_block(void* storage) { delete static_cast<c10::Storage*>(storage); }

// Dtypes whose tpu storage holds the host bytes as they are.
bool plain_dtype(at::ScalarType t) {
  switch (t) {
    case at::kFloat: case at::kDouble: case at::kHalf: case at::kBFloat16: case at::kBool:
    case at::kByte: case at::kChar: case at::kShort: case at::kInt: case at::kLong:
      return true;
    default:
      return false;
  }
}

// t (covering its storage) takes a buffer over its piece of the host block
// itself. On the CPU plugin a device buffer is host memory, so the plugin
// aliases the piece instead of copying it (a fresh copy also pays its page
// faults: most of what staging cost at 16 MiB and above); other plugins
// copy. The buffer holds the block until it dies, which keeps the block
// out of host_bytes' reuse until then.
void upload_aliased(const at::Tensor& block, int64_t offset, const at::Tensor& t) {
  tpj_rt_shape_t s = shape_of(t);
  tpj_box_t* box = box_for_write(t);
  auto* keep = new c10::Storage(block.storage());
  tpj_rt_buffer_t* buf = nullptr;
  tpj_status_t st = tpj_rt_buffer_alias_host(rt(), box->device, s.dtype, s.dims, s.ndim,
                                             static_cast<char*>(block.data_ptr()) + offset,
                                             &release_block, keep, &buf);
  if (st) {
    delete keep;
    throw_status(st, "upload");
  }
  tpj_box_set_buffer(box, buf);
}

// One upload per tensor out of the host byte block.
void upload(const at::Tensor& block, const std::vector<int64_t>& off,
            c10::ArrayRef<at::Tensor> ts) {
  for (size_t i = 0; i < ts.size(); ++i) {
    const at::Tensor& t = ts[i];
    if (!t.numel()) continue;
    if (covers_storage(t) && plain_dtype(t.scalar_type()) && !t.is_conj() && !t.is_neg()) {
      upload_aliased(block, off[i], t);
    } else {
      t.copy_(piece(block, off, t, i));
    }
  }
}

void release_buffer(void* buf) { tpj_rt_buffer_release(static_cast<tpj_rt_buffer_t*>(buf)); }

// t's bytes where they lie, as a CPU tensor of t's dtype and sizes that holds
// a reference to t's buffer, when that buffer's device memory is host memory
// (the CPU plugin) and t reads all of it as it is; undefined otherwise (the
// caller stages a copy). Nothing launched before still reads or writes it.
// writable: only when t's storage holds the buffer's one reference, so a
// write is seen by t and its views alone -- what an in-place collective
// means -- and not by a clone, a graph constant or another storage.
at::Tensor device_memory(const at::Tensor& t, bool writable) {
  if (!t.numel() || !covers_storage(t) || !is_natural(t) || !plain_dtype(t.scalar_type()) ||
      t.is_conj() || t.is_neg()) {
    return {};
  }
  if (writable) box_for_write(t);  // a lazy clone's storage gets a box of its own first
  BufferRef b = buffer_of(t);
  if (!b.get() || !b->pjrt || b->dtype != to_tpj_dtype(t.scalar_type()) ||
      tpj_rt_buffer_numel(b.get()) != t.numel()) {
    return {};
  }
  // 2: the box's reference and ours.
  if (writable && __atomic_load_n(&b->refcount, __ATOMIC_ACQUIRE) != 2) return {};
  void* p = nullptr;
  tpj_status_t s = tpj_rt_buffer_host_memory(rt(), b.get(), &p);
  if (s) {
    tpj_status_free(s);  // not host memory: staged instead
    return {};
  }
  tpj_rt_buffer_t* held = b.release();
  return at::from_blob(p, t.sizes(), [held](void*) { release_buffer(held); },
                       at::TensorOptions().dtype(t.scalar_type()));
}

tpj_dist_buf_t bytes_buf(const at::Tensor& block) {
  tpj_dist_buf_t b{};
  b.host = block.data_ptr();
  b.dtype = TPJ_U8;
  b.numel = block.numel();
  return b;
}

// ---- reductions ----------------------------------------------------------------

}  // namespace

const char* op_name(c10d::ReduceOp::RedOpType op) {
  static const char* names[] = {"SUM", "AVG", "PRODUCT", "MIN", "MAX",
                                "BAND", "BOR", "BXOR", "PREMUL_SUM"};
  return op <= c10d::ReduceOp::PREMUL_SUM ? names[op] : "UNUSED";
}

Reduction plan_reduction(const char* what, const c10d::ReduceOp& rop, at::ScalarType dt) {
  using R = c10d::ReduceOp;
  bool is_bool = dt == at::kBool;
  bool is_float = at::isFloatingType(dt);
  bool is_complex = at::isComplexType(dt);
  auto refuse = [&] {
    TORCH_CHECK_NOT_IMPLEMENTED(false, "pjrt ", what, ": ReduceOp.", op_name(rop.op_),
                                " is not supported for ", dt);
  };
  if (dt == at::kComplexHalf || at::isFloat8Type(dt) || at::isQIntType(dt)) refuse();
  Reduction r;
  switch (rop.op_) {
    case R::SUM:
      // bool has no sum: a logical or, which is what NCCL's uint8 sum means.
      r.op = is_bool ? TPJ_DIST_MAX : TPJ_DIST_SUM;
      break;
    case R::AVG:
      if (is_bool) refuse();
      r.average = true;
      break;
    case R::PREMUL_SUM: {
      if (!is_float && !is_complex) refuse();
      auto* s = static_cast<c10d::PreMulSumSupplement*>(rop.supplement_.get());
      TORCH_CHECK(s, "pjrt ", what, ": PREMUL_SUM without a factor");
      r.pre_scale = s->tensor_factor.defined() ? s->tensor_factor.item<double>() : s->double_factor;
      break;
    }
    case R::PRODUCT:
      if (is_complex) refuse();
      r.op = is_bool ? TPJ_DIST_MIN : TPJ_DIST_PRODUCT;
      break;
    case R::MIN:
    case R::MAX:
      if (is_complex) refuse();
      r.op = rop.op_ == R::MIN ? TPJ_DIST_MIN : TPJ_DIST_MAX;
      break;
    case R::BAND:
    case R::BOR:
    case R::BXOR:
      if (is_float || is_complex) refuse();
      r.op = rop.op_ == R::BAND ? TPJ_DIST_BAND : rop.op_ == R::BOR ? TPJ_DIST_BOR : TPJ_DIST_BXOR;
      break;
    default:
      refuse();
  }
  return r;
}

namespace {

// The host tensor the transport reduces: the staged values themselves where
// gloo reduces their dtype (bool as uint8, complex as pairs of reals), else a
// widened copy (int16, the unsigned types).
at::Tensor wire_of(const at::Tensor& host) {
  switch (host.scalar_type()) {
    case at::kBool: return host.view(at::kByte);
    case at::kComplexFloat:
    case at::kComplexDouble: return at::view_as_real(host).view(-1);
    case at::kShort:
    case at::kUInt16: return host.to(at::kInt);
    case at::kUInt32:
    case at::kUInt64: return host.to(at::kLong);
    default: return host;
  }
}

tpj_dist_buf_t typed_buf(const at::Tensor& wire) {
  tpj_dist_buf_t b{};
  b.host = wire.data_ptr();
  b.dtype = to_tpj_dtype(wire.scalar_type());
  b.numel = wire.numel();
  return b;
}

}  // namespace

void apply_average(const at::Tensor& wire, int size) {
  if (at::isIntegralType(wire.scalar_type(), /*includeBool=*/false)) {
    wire.div_(size, "trunc");
  } else {
    wire.div_(size);
  }
}

namespace {

// The typed host view of a byte block whose pieces all have dtype dt.
at::Tensor typed(const at::Tensor& block, at::ScalarType dt) {
  return block.view(dt);
}

// ---- the backend -----------------------------------------------------------------

using Start = std::function<tpj_status_t(tpj_dist_work_t**)>;

// What every rank must agree on before a collective starts: gloo aborts the
// process (an enforce on its I/O thread) when ranks send buffers of other
// sizes, so a mismatch is caught here first and raised on every rank.
struct Sig {
  int64_t bytes = 0;  // per-rank bytes that must match (0: none)
  int64_t root = -1;
  int64_t op = -1;    // the reduction, where there is one
  const std::vector<int64_t>* in_counts = nullptr;   // all_to_all: bytes to each rank
  const std::vector<int64_t>* out_counts = nullptr;  // and from each rank
};

// TORCH_PJRT_DIST_CHECK=0 skips the agreement exchange (one small all_gather
// per collective) for those who have verified their program.
bool check_agreement() {
  static const bool on = [] {
    const char* v = std::getenv("TORCH_PJRT_DIST_CHECK");
    return !(v && std::string(v) == "0");
  }();
  return on;
}

class PjrtBackend : public PjrtBackendBase {
 public:
  PjrtBackend(Transport t, std::chrono::milliseconds timeout)
      : PjrtBackendBase(t->rank, t->size), t_(std::move(t)), timeout_(timeout) {}

  const char* transport() const { return t_->name; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& ts,
                                           const c10d::BroadcastOptions& o) override {
    check_dense("broadcast", ts);
    int root = static_cast<int>(o.rootRank);
    bool is_root = root == rank_;
    auto off = byte_offsets(ts);
    at::Tensor block = is_root ? download(ts, off) : host_bytes(off.back());
    tpj_dist_buf_t b = bytes_buf(block);
    return launch("broadcast", OpType::BROADCAST, ts, {block},
                  [&](tpj_dist_work_t** w) { return t_->broadcast(t_->self, &b, root, w); },
                  [=] { if (!is_root) upload(block, off, ts); }, Sig{off.back(), root});
  }




  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outs,
                                           std::vector<at::Tensor>& ins,
                                           const c10d::AllgatherOptions& o) override {
    TORCH_CHECK(ins.size() == 1 && outs.size() == 1, "pjrt all_gather: one input tensor and one output list expected");
    check_blocks("all_gather", outs[0], ins[0], size_);
    return gather_like("all_gather", OpType::ALLGATHER, outs[0], ins[0]);
  }


  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outs, std::vector<at::Tensor>& ins,
      const c10d::AllgatherOptions& o) override {
    const char* what = "all_gather_into_tensor";
    check_pairs(what, outs, ins, /*out_is_bigger=*/true, size_);
    // Every input goes out in one block; rank r's block lands at r.
    auto off = byte_offsets(ins);
    // gloo only reads the input: on the CPU plugin it reads the buffer's own
    // memory, not a staged copy.
    at::Tensor in_block = ins.size() == 1 ? device_memory(ins[0], /*writable=*/false) : at::Tensor();
    in_block = in_block.defined() ? in_block.view(-1).view(at::kByte) : download(ins, off);
    int64_t n = off.back();
    at::Tensor out_block = host_bytes(n * size_);
    tpj_dist_buf_t ib = bytes_buf(in_block), ob = bytes_buf(out_block);
    int size = size_;
    return launch(what, OpType::_ALLGATHER_BASE, outs, {in_block, out_block},
                  [&](tpj_dist_work_t** w) { return t_->all_gather(t_->self, &ib, &ob, w); },
                  [=] {
                    // One output: the host block is laid out as it is (rank
                    // blocks end to end), so one upload fills it.
                    if (outs.size() == 1) {
                      upload(out_block, {0, n * size}, outs);
                      return;
                    }
                    // A non-contiguous output is filled through a contiguous
                    // temporary: its flat blocks are not views of it.
                    std::vector<at::Tensor> flat;
                    for (const auto& o : outs) {
                      flat.push_back(o.is_contiguous() ? o : at::empty(o.sizes(), o.options()));
                    }
                    for (int r = 0; r < size; ++r) {
                      std::vector<at::Tensor> dst;
                      for (const auto& f : flat) dst.push_back(rank_block(f, r, size));
                      upload(out_block.narrow(0, r * n, n), off, dst);
                    }
                    for (size_t i = 0; i < outs.size(); ++i) {
                      if (!flat[i].is_same(outs[i])) outs[i].copy_(flat[i]);
                    }
                  }, Sig{n});
  }

  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outs,
                                        std::vector<at::Tensor>& ins,
                                        const c10d::GatherOptions& o) override {
    TORCH_CHECK(ins.size() == 1, "pjrt gather: one input tensor expected");
    int root = static_cast<int>(o.rootRank);
    std::vector<at::Tensor> dst = root_list("gather", outs, ins[0], root, "output");
    auto off = byte_offsets(dst);
    at::Tensor in_block = download(ins, byte_offsets(ins)), out_block = host_bytes(off.back());
    tpj_dist_buf_t ib = bytes_buf(in_block), ob = bytes_buf(out_block);
    return launch("gather", OpType::GATHER, dst, {in_block, out_block},
                  [&](tpj_dist_work_t** w) {
                    return t_->gather(t_->self, &ib, root == rank_ ? &ob : nullptr, root, w);
                  },
                  [=] { upload(out_block, off, dst); }, Sig{in_block.numel(), root});
  }

  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outs,
                                         std::vector<std::vector<at::Tensor>>& ins,
                                         const c10d::ScatterOptions& o) override {
    TORCH_CHECK(outs.size() == 1, "pjrt scatter: one output tensor expected");
    int root = static_cast<int>(o.rootRank);
    std::vector<at::Tensor> src = root_list("scatter", ins, outs[0], root, "input");
    auto off = byte_offsets(outs);
    at::Tensor in_block = download(src, byte_offsets(src)), out_block = host_bytes(off.back());
    tpj_dist_buf_t ib = bytes_buf(in_block), ob = bytes_buf(out_block);
    return launch("scatter", OpType::SCATTER, outs, {in_block, out_block},
                  [&](tpj_dist_work_t** w) {
                    return t_->scatter(t_->self, root == rank_ ? &ib : nullptr, &ob, root, w);
                  },
                  [=] { upload(out_block, off, outs); }, Sig{out_block.numel(), root});
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outs,
                                                std::vector<std::vector<at::Tensor>>& ins,
                                                const c10d::ReduceScatterOptions& o) override {
    TORCH_CHECK(outs.size() == 1 && ins.size() == 1,
                "pjrt reduce_scatter: one output tensor and one input list expected");
    check_blocks("reduce_scatter", ins[0], outs[0], size_);
    return reduce_scatter_pieces("reduce_scatter", OpType::REDUCE_SCATTER, outs, ins[0], o.reduceOp);
  }


  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outs, std::vector<at::Tensor>& ins,
      const c10d::ReduceScatterOptions& o) override {
    const char* what = "reduce_scatter_tensor";
    check_pairs(what, outs, ins, /*out_is_bigger=*/false, size_);
    // The transport wants rank r's share of every input in block r: one
    // input already is laid out so (one download), several are interleaved.
    std::vector<at::Tensor> pieces;
    if (ins.size() == 1) {
      pieces.push_back(ins[0]);
    } else {
      for (int r = 0; r < size_; ++r) {
        for (const auto& in : ins) pieces.push_back(rank_block(in, r, size_));
      }
    }
    return reduce_scatter_pieces(what, OpType::_REDUCE_SCATTER_BASE, outs, pieces, o.reduceOp);
  }

  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& out, at::Tensor& in,
                                               std::vector<int64_t>& out_splits,
                                               std::vector<int64_t>& in_splits,
                                               const c10d::AllToAllOptions& o) override {
    const char* what = "all_to_all_single";
    check_dense(what, {out, in});
    TORCH_CHECK(out.scalar_type() == in.scalar_type(), "pjrt ", what,
                ": input and output dtypes differ (", in.scalar_type(), " vs ", out.scalar_type(), ")");
    std::vector<int64_t> ic = split_counts(what, in, in_splits, "input", size_, in.element_size());
    std::vector<int64_t> oc = split_counts(what, out, out_splits, "output", size_, out.element_size());
    std::vector<at::Tensor> ins{in}, outs{out};
    auto off = byte_offsets(ins);
    at::Tensor in_block = download(ins, off);
    at::Tensor out_block = host_bytes(byte_offsets(outs).back());
    tpj_dist_buf_t ib = bytes_buf(in_block), ob = bytes_buf(out_block);
    return launch(what, OpType::ALLTOALL_BASE, outs, {in_block, out_block},
                  [&](tpj_dist_work_t** w) {
                    return t_->all_to_all(t_->self, &ib, &ob, ic.data(), oc.data(), w);
                  },
                  [=] { upload(out_block, byte_offsets(outs), outs); }, Sig{0, -1, -1, &ic, &oc});
  }

  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outs,
                                          std::vector<at::Tensor>& ins,
                                          const c10d::AllToAllOptions& o) override {
    const char* what = "all_to_all";
    check_lists(what, outs, ins, size_);
    std::vector<int64_t> ic, oc;
    for (int r = 0; r < size_; ++r) {
      ic.push_back(ins[r].numel() * ins[r].element_size());
      oc.push_back(outs[r].numel() * outs[r].element_size());
    }
    auto in_off = byte_offsets(ins), out_off = byte_offsets(outs);
    at::Tensor in_block = download(ins, in_off);
    at::Tensor out_block = host_bytes(out_off.back());
    tpj_dist_buf_t ib = bytes_buf(in_block), ob = bytes_buf(out_block);
    return launch(what, OpType::ALLTOALL, outs, {in_block, out_block},
                  [&](tpj_dist_work_t** w) {
                    return t_->all_to_all(t_->self, &ib, &ob, ic.data(), oc.data(), w);
                  },
                  [=] { upload(out_block, out_off, outs); }, Sig{0, -1, -1, &ic, &oc});
  }

  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& ts, int dst, int tag) override {
    check_dense("send", ts);
    auto off = byte_offsets(ts);
    at::Tensor block = download(ts, off);
    tpj_dist_buf_t b = bytes_buf(block);
    return launch("send", OpType::SEND, ts, {block},
                  [&](tpj_dist_work_t** w) { return t_->send(t_->self, &b, dst, tag, w); },
                  nullptr);
  }

  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& ts, int src, int tag) override {
    return recv_from("recv", OpType::RECV, ts, src, tag);
  }

  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& ts, int tag) override {
    return recv_from("recv", OpType::RECVANYSOURCE, ts, -1, tag);
  }

  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& o) override {
    return launch("barrier", OpType::BARRIER, {}, {},
                  [&](tpj_dist_work_t** w) { return t_->barrier(t_->self, w); }, nullptr);
  }

 private:
  // keep: the host blocks the transport reads or writes until it finishes.
  c10::intrusive_ptr<c10d::Work> launch(const char* what, OpType type,
                                        std::vector<at::Tensor> outputs,
                                        std::vector<at::Tensor> keep, const Start& start,
                                        std::function<void()> finish, const Sig& sig = Sig()) {
    if (check_agreement() && type != OpType::SEND && type != OpType::RECV &&
        type != OpType::RECVANYSOURCE) {
      agree(what, type, sig);
    }
    tpj_dist_work_t* w = nullptr;
    tpj_status_t s = start(&w);
    if (s) throw_status(s, what);
    auto work = c10::make_intrusive<PjrtWork>(rank_, type, t_, w, std::move(outputs),
                                              std::move(keep), std::move(finish));
    PjrtWork::arm(work);
    return work;
  }

  // Every rank's copy of `words` (n int64 each), rank by rank.
  at::Tensor exchange(const char* what, std::vector<int64_t> words) {
    int64_t n = static_cast<int64_t>(words.size());
    at::Tensor in = at::tensor(words, at::kLong);
    at::Tensor out = at::empty({size_, n}, at::kLong);
    at::Tensor in_bytes = in.view(at::kByte), out_bytes = out.view(-1).view(at::kByte);
    tpj_dist_buf_t ib = bytes_buf(in_bytes), ob = bytes_buf(out_bytes);
    tpj_dist_work_t* w = nullptr;
    tpj_status_t s = t_->all_gather(t_->self, &ib, &ob, &w);
    if (s) throw_status(s, what);
    s = t_->work_wait(t_->self, w, -1);
    t_->work_release(t_->self, w);
    if (s) throw_status(s, what);
    return out;
  }

  void agree(const char* what, OpType type, const Sig& sig) {
    bool a2a = sig.in_counts != nullptr;
    at::Tensor all = exchange(what, {static_cast<int64_t>(type), sig.bytes, sig.root, sig.op, a2a});
    auto row = [&](int r, int k) { return all[r][k].item<int64_t>(); };
    for (int r = 0; r < size_; ++r) {
      if (row(r, 0) != static_cast<int64_t>(type)) {
        TORCH_CHECK(false, "pjrt ", what, ": the ranks called different collectives: rank ",
                    rank_, " called ", c10d::opTypeToString(type), ", rank ", r, " called ",
                    c10d::opTypeToString(static_cast<OpType>(row(r, 0))));
      }
      TORCH_CHECK(row(r, 1) == sig.bytes, "pjrt ", what,
                  ": the ranks' tensors do not match: rank ", rank_, " passed ", sig.bytes,
                  " bytes, rank ", r, " passed ", row(r, 1),
                  " (every rank must pass tensors of the same shape and dtype)");
      TORCH_CHECK(row(r, 2) == sig.root, "pjrt ", what, ": the ranks disagree on the root (rank ",
                  rank_, " says ", sig.root, ", rank ", r, " says ", row(r, 2), ")");
      TORCH_CHECK(row(r, 3) == sig.op, "pjrt ", what,
                  ": the ranks disagree on the reduce op (rank ", rank_, " and rank ", r, ")");
    }
    if (!a2a) return;
    // Rank s sends in[s][r] bytes to rank r, which expects out[r][s].
    std::vector<int64_t> mine(*sig.in_counts);
    mine.insert(mine.end(), sig.out_counts->begin(), sig.out_counts->end());
    at::Tensor c = exchange(what, mine);
    for (int src = 0; src < size_; ++src) {
      for (int dst = 0; dst < size_; ++dst) {
        int64_t sent = c[src][dst].item<int64_t>(), expected = c[dst][size_ + src].item<int64_t>();
        TORCH_CHECK(sent == expected, "pjrt ", what, ": rank ", src, " sends ", sent,
                    " bytes to rank ", dst, ", which expects ", expected,
                    " (the ranks' split sizes or shapes do not match)");
      }
    }
  }

  // all_reduce and reduce: one host block of every tensor, reduced in place.
  c10::intrusive_ptr<c10d::Work> reduce_like(const char* what, OpType type,
                                             std::vector<at::Tensor>& ts,
                                             const c10d::ReduceOp& rop, int root) override {
    TORCH_CHECK(!ts.empty(), "pjrt ", what, ": no tensors");
    check_same_dtype(what, ts);
    Reduction r = plan_reduction(what, rop, ts[0].scalar_type());
    if (root < 0 && ts.size() == 1) {
      // On the CPU plugin an all_reduce's tensor whose buffer no one else
      // holds is reduced where it lies: no staging copy, no new buffer.
      at::Tensor mem = device_memory(ts[0], /*writable=*/true);
      at::Tensor wire = mem.defined() ? wire_of(mem) : at::Tensor();
      if (wire.defined() && wire.is_alias_of(mem)) return reduce_in_place(what, type, ts, mem, wire, r);
    }
    auto off = byte_offsets(ts);
    at::Tensor block = download(ts, off);
    at::Tensor host = typed(block, ts[0].scalar_type());
    at::Tensor wire = wire_of(host);
    if (r.pre_scale != 1.0) wire.mul_(r.pre_scale);
    tpj_dist_buf_t b = typed_buf(wire);
    bool keeps = root < 0 || root == rank_;
    int size = size_;
    return launch(what, type, ts, {wire},
                  [&](tpj_dist_work_t** w) {
                    return root < 0 ? t_->all_reduce(t_->self, &b, r.op, w)
                                    : t_->reduce(t_->self, &b, r.op, root, w);
                  },
                  [=] {
                    if (!keeps) return;
                    if (r.average) apply_average(wire, size);
                    if (!wire.is_alias_of(host)) host.copy_(wire);
                    upload(block, off, ts);
                  }, Sig{block.numel(), root, r.op});
  }

  // all_reduce of ts[0] in its own buffer's memory, mem (wire: mem as the
  // transport reduces it). Like every result here, and as gloo and NCCL
  // write theirs, no version bump (see PjrtWork); the buffer stays the tensor's.
  c10::intrusive_ptr<c10d::Work> reduce_in_place(const char* what, OpType type,
                                                 std::vector<at::Tensor>& ts, at::Tensor mem,
                                                 at::Tensor wire, const Reduction& r) {
    Sig sig{static_cast<int64_t>(mem.numel() * mem.element_size()), -1, r.op};
    tpj_dist_buf_t b = typed_buf(wire);
    int size = size_;
    return launch(what, type, ts, {wire},
                  [&](tpj_dist_work_t** w) {
                    // after the agreement: a refused call leaves t as it was
                    if (r.pre_scale != 1.0) wire.mul_(r.pre_scale);
                    return t_->all_reduce(t_->self, &b, r.op, w);
                  },
                  [=] {
                    if (r.average) apply_average(wire, size);
                  }, sig);
  }

  // reduce_scatter over pieces laid out block by block (rank r's share of
  // every output in block r), into outs.
  c10::intrusive_ptr<c10d::Work> reduce_scatter_pieces(const char* what, OpType type,
                                                       std::vector<at::Tensor>& outs,
                                                       const std::vector<at::Tensor>& pieces,
                                                       const c10d::ReduceOp& rop) {
    check_same_dtype(what, pieces);
    check_same_dtype(what, outs);
    at::ScalarType dt = outs[0].scalar_type();
    TORCH_CHECK(pieces[0].scalar_type() == dt, "pjrt ", what, ": input and output dtypes differ (",
                pieces[0].scalar_type(), " vs ", dt, ")");
    Reduction r = plan_reduction(what, rop, dt);
    // gloo's reduce_scatter reduces a clone of its input (torch 2.13's
    // ProcessGroupGloo::reduce_scatter_tensor_coalesced), so on the CPU
    // plugin it may read the buffer's own memory; not when PREMUL_SUM's
    // factor must be applied to the input first.
    at::Tensor in_host = pieces.size() == 1 && r.pre_scale == 1.0
                             ? device_memory(pieces[0], /*writable=*/false)
                             : at::Tensor();
    in_host = in_host.defined() ? in_host.view(-1) : typed(download(pieces, byte_offsets(pieces)), dt);
    auto off = byte_offsets(outs);
    at::Tensor out_block = host_bytes(off.back());
    at::Tensor out_host = typed(out_block, dt);
    at::Tensor in_wire = wire_of(in_host), out_wire = wire_of(out_host);
    if (r.pre_scale != 1.0) in_wire.mul_(r.pre_scale);
    tpj_dist_buf_t ib = typed_buf(in_wire), ob = typed_buf(out_wire);
    int size = size_;
    return launch(what, type, outs, {in_wire, out_wire},
                  [&](tpj_dist_work_t** w) {
                    return t_->reduce_scatter(t_->self, &ib, &ob, r.op, w);
                  },
                  [=] {
                    if (r.average) apply_average(out_wire, size);
                    if (!out_wire.is_alias_of(out_host)) out_host.copy_(out_wire);
                    upload(out_block, off, outs);
                  }, Sig{out_block.numel(), -1, r.op});
  }

  // all_gather into a list: rank r's input lands in outs[r].
  c10::intrusive_ptr<c10d::Work> gather_like(const char* what, OpType type,
                                             std::vector<at::Tensor>& outs, at::Tensor& in) {
    std::vector<at::Tensor> ins{in};
    at::Tensor in_block = device_memory(in, /*writable=*/false);  // read only, as above
    in_block = in_block.defined() ? in_block.view(-1).view(at::kByte)
                                  : download(ins, byte_offsets(ins));
    auto off = byte_offsets(outs);
    at::Tensor out_block = host_bytes(off.back());
    tpj_dist_buf_t ib = bytes_buf(in_block), ob = bytes_buf(out_block);
    return launch(what, type, outs, {in_block, out_block},
                  [&](tpj_dist_work_t** w) { return t_->all_gather(t_->self, &ib, &ob, w); },
                  [=] { upload(out_block, off, outs); }, Sig{in_block.numel()});
  }

  c10::intrusive_ptr<c10d::Work> recv_from(const char* what, OpType type,
                                           std::vector<at::Tensor>& ts, int src, int tag) {
    check_dense(what, ts);
    auto off = byte_offsets(ts);
    at::Tensor block = host_bytes(off.back());
    tpj_dist_buf_t b = bytes_buf(block);
    return launch(what, type, ts, {block},
                  [&](tpj_dist_work_t** w) { return t_->recv(t_->self, &b, src, tag, w); },
                  [=] { upload(block, off, ts); });
  }


  // gather's outputs and scatter's inputs: on the root one list of
  // group-size tensors, each matching `one`; nothing elsewhere.
  std::vector<at::Tensor> root_list(const char* what, std::vector<std::vector<at::Tensor>>& lists,
                                    const at::Tensor& one, int root, const char* role) {
    check_dense(what, one);
    if (root != rank_) {
      TORCH_CHECK(lists.empty() || lists[0].empty(), "pjrt ", what, ": only the root takes ",
                  role, "s");
      return {};
    }
    TORCH_CHECK(lists.size() == 1, "pjrt ", what, ": the root needs one ", role, " list");
    check_blocks(what, lists[0], one, size_);
    return lists[0];
  }


  // Rank r's block of a flat view of t (t has size * block elements).
  static at::Tensor rank_block(const at::Tensor& t, int r, int size) {
    at::Tensor flat = t.is_contiguous() ? t.view(-1) : t.reshape(-1);
    int64_t n = t.numel() / size;
    return flat.narrow(0, r * n, n);
  }


  Transport t_;
  std::chrono::milliseconds timeout_;
};

}  // namespace

c10::intrusive_ptr<c10d::Backend> make_pjrt_backend(tpj_dist_transport_t* t,
                                                    std::chrono::milliseconds timeout) {
  Transport owned(t, [](tpj_dist_transport_t* p) {
    // The group is gone and a transport thread dropped the last Work: gloo
    // joins its threads on destruction, this one included, so not here.
    if (in_callback) {
      std::thread([p] { p->destroy(p->self); }).detach();
    } else {
      p->destroy(p->self);
    }
  });
  return c10::make_intrusive<PjrtBackend>(std::move(owned), timeout);
}

std::string transport_name(const c10::intrusive_ptr<c10d::Backend>& b) {
  auto* p = dynamic_cast<PjrtBackend*>(b.get());
  return p ? p->transport() : device_transport_name(b);
}

}  // namespace torch_pjrt
