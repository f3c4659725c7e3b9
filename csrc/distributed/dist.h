// csrc/distributed: the c10d backend "pjrt" (backend.cpp) over one transport
// (src/dist/transport.h), and the transports written in C++ (the host-staging
// one over gloo). Shared by this room only.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <chrono>

#include "tensor.h"

extern "C" {
#include "dist/transport.h"
}

namespace torch_pjrt {

// A transport over a c10d Backend that takes CPU tensors (gloo). Owned by the
// caller (destroy()).
tpj_dist_transport_t* make_gloo_transport(c10::intrusive_ptr<c10d::Backend> pg,
                                          std::chrono::milliseconds timeout);

// The "pjrt" c10d Backend over transport t (which it owns from now on).
c10::intrusive_ptr<c10d::Backend> make_pjrt_backend(tpj_dist_transport_t* t,
                                                    std::chrono::milliseconds timeout);

// The transport's name when b is a "pjrt" backend, "" otherwise.
std::string transport_name(const c10::intrusive_ptr<c10d::Backend>& b);

// The "pjrt" c10d Backend over a transport of device operands
// (stages_on_host == 0: the XLA transport), which it owns from now on
// (backend_device.cpp).
c10::intrusive_ptr<c10d::Backend> make_pjrt_device_backend(tpj_dist_transport_t* t);
// transport_name for those backends.
std::string device_transport_name(const c10::intrusive_ptr<c10d::Backend>& b);

// ---- shared by both backends (backend.cpp) ----------------------------------

// The c10d entry points both backends serve the same way: the reduce family
// through reduce_like, the single-tensor forms through the coalesced ones.
class PjrtBackendBase : public c10d::Backend {
 public:
  using c10d::Backend::Backend;
  const std::string getBackendName() const override { return "pjrt"; }
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& ts,
                                           const c10d::AllreduceOptions& o) override {
    return reduce_like("all_reduce", c10d::OpType::ALLREDUCE, ts, o.reduceOp, -1);
  }
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& ts, const c10d::AllreduceCoalescedOptions& o) override {
    return reduce_like("all_reduce_coalesced", c10d::OpType::ALLREDUCE_COALESCED, ts,
                       o.reduceOp, -1);
  }
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& ts,
                                        const c10d::ReduceOptions& o) override {
    return reduce_like("reduce", c10d::OpType::REDUCE, ts, o.reduceOp,
                       static_cast<int>(o.rootRank));
  }
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& out, at::Tensor& in,
                                                 const c10d::AllgatherOptions& o) override {
    std::vector<at::Tensor> outs{out}, ins{in};
    return allgather_into_tensor_coalesced(outs, ins, o);
  }
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& out, at::Tensor& in, const c10d::ReduceScatterOptions& o) override {
    std::vector<at::Tensor> outs{out}, ins{in};
    return reduce_scatter_tensor_coalesced(outs, ins, o);
  }

 protected:
  // all_reduce (root < 0) or reduce to root of every tensor of ts.
  virtual c10::intrusive_ptr<c10d::Work> reduce_like(const char* what, c10d::OpType type,
                                                     std::vector<at::Tensor>& ts,
                                                     const c10d::ReduceOp& rop, int root) = 0;
};

void check_dense(const char* op, c10::ArrayRef<at::Tensor> ts);
void check_same_dtype(const char* op, c10::ArrayRef<at::Tensor> ts);
// blocks (one per rank) must each match `one` in dtype and element count.
void check_blocks(const char* what, c10::ArrayRef<at::Tensor> blocks, const at::Tensor& one,
                  int size);
// all_to_all's lists: size tensors each, one dtype per list.
void check_lists(const char* what, c10::ArrayRef<at::Tensor> outs, c10::ArrayRef<at::Tensor> ins,
                 int size);
// outs[i] and ins[i]: the same dtype, and the bigger one size times the
// other's elements.
void check_pairs(const char* what, c10::ArrayRef<at::Tensor> outs, c10::ArrayRef<at::Tensor> ins,
                 bool out_is_bigger, int size);
// all_to_all_single's per-rank counts from row splits (empty: even), in
// elements times unit (1, or the element size for bytes).
std::vector<int64_t> split_counts(const char* what, const at::Tensor& t,
                                  const std::vector<int64_t>& splits, const char* which, int size,
                                  int64_t unit);

// How a c10d ReduceOp on dtype dt runs on a transport that knows only
// tpj_dist_op_t over gloo's dtypes.
struct Reduction {
  tpj_dist_op_t op = TPJ_DIST_SUM;
  double pre_scale = 1.0;  // PREMUL_SUM: multiply before summing
  bool average = false;    // AVG: divide by the group size after summing
};
const char* op_name(c10d::ReduceOp::RedOpType op);
// Raises NotImplementedError naming the op and dtype it cannot run.
Reduction plan_reduction(const char* what, const c10d::ReduceOp& rop, at::ScalarType dt);
// AVG's division (truncating for integers), in place.
void apply_average(const at::Tensor& t, int size);

}  // namespace torch_pjrt
