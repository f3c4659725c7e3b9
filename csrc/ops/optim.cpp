// Kernel glue for torch.optim.Adam/AdamW(fused=True): aten::_fused_adam_ and
// _fused_adamw_ (plain and tensor_lr). Transformers' Trainer uses fused
// AdamW by default. One launch per parameter (src/ops/optim.c); the
// hyperparameters are runtime scalars uploaded once per call, so a learning
// rate schedule does not recompile; results are written back in place.
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "ops/write.h"
#include "glue.h"
#include "tensor.h"

extern "C" {
#include "ops/attrs.h"
}

namespace torch_pjrt {
namespace {

using at::Tensor;
using at::TensorList;

void fused_adam(bool adamw, TensorList params, TensorList grads, TensorList exp_avgs,
                TensorList exp_avg_sqs, TensorList max_exp_avg_sqs, TensorList state_steps,
                const Tensor* lr_tensor, double lr, double beta1, double beta2,
                double weight_decay, double eps, bool amsgrad, bool maximize,
                const std::optional<Tensor>& grad_scale, const std::optional<Tensor>& found_inf) {
  const char* op = adamw ? "aten::_fused_adamw_" : "aten::_fused_adam_";
  size_t n = params.size();
  TORCH_CHECK(grads.size() == n && exp_avgs.size() == n && exp_avg_sqs.size() == n &&
                  state_steps.size() == n && (!amsgrad || max_exp_avg_sqs.size() == n),
              op, ": expected the same number of params, grads, exp_avgs, exp_avg_sqs, ",
              amsgrad ? "max_exp_avg_sqs, " : "", "and state_steps");
  if (n == 0) return;
  bool has_scale = grad_scale.has_value() && grad_scale->defined();
  bool has_inf = found_inf.has_value() && found_inf->defined();
  c10::Device dev = params[0].device();
  c10::DeviceGuard guard(dev);
  int di = dev.index();
  // The hyperparameters, uploaded once for every parameter of this call.
  OpArgs hyper;
  if (lr_tensor) {
    add_operand(hyper, lr_tensor->to(at::kDouble), di);
  } else {
    hyper.scalar(lr, at::kDouble, di);
  }
  for (double h : {beta1, beta2, weight_decay, eps}) hyper.scalar(h, at::kDouble, di);
  for (size_t i = 0; i < n; ++i) {
    const Tensor& p = params[i];
    std::vector<const Tensor*> ts = {&p, &grads[i], &exp_avgs[i], &exp_avg_sqs[i]};
    if (amsgrad) ts.push_back(&max_exp_avg_sqs[i]);
    for (const Tensor* t : ts) {
      TORCH_CHECK(t->device() == dev, op, ": expected all tensors on ", dev, ", got ", t->device());
      TORCH_CHECK(t->sizes() == p.sizes(), op, ": expected every state tensor to have the "
                  "parameter's sizes ", p.sizes(), ", got ", t->sizes());
      check_supported(*t, op);
    }
    TORCH_CHECK(at::isFloatingType(p.scalar_type()), op, ": expected floating-point parameters, got ",
                p.scalar_type());
    if (p.numel() == 0) continue;
    OpArgs a;
    for (const Tensor* t : ts) a.tensor(*t);
    add_operand(a, state_steps[i], di);
    for (const tpj_exec_arg_t& h : hyper.args) a.args.push_back(h);  // borrowed from hyper
    if (has_scale) add_operand(a, *grad_scale, di);
    if (has_inf) add_operand(a, *found_inf, di);
    // Results: param, exp_avg, exp_avg_sq, [max_exp_avg_sq], [unscaled grad].
    std::vector<Tensor> outs;
    for (const Tensor* t : ts) {
      if (t != &grads[i]) outs.push_back(at::empty(t->sizes(), t->options()));
    }
    if (has_scale) outs.push_back(at::empty(grads[i].sizes(), grads[i].options()));
    tpj_attrs_fused_adam_t attr{};
    attr.adamw = adamw;
    attr.amsgrad = amsgrad;
    attr.maximize = maximize;
    attr.has_grad_scale = has_scale;
    attr.has_found_inf = has_inf;
    attr.compute = to_tpj_dtype(accumulator(p.scalar_type()));
    run_op(adamw ? "aten::_fused_adamw_" : "aten::_fused_adam_", di, a, attrs_of(attr), outs);
    assign_result(p, outs[0], op);
    assign_result(exp_avgs[i], outs[1], op);
    assign_result(exp_avg_sqs[i], outs[2], op);
    if (amsgrad) assign_result(max_exp_avg_sqs[i], outs[3], op);
    if (has_scale) assign_result(grads[i], outs[3 + amsgrad], op);
  }
}

template <bool AdamW>
void k_fused(TensorList self, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
             TensorList max_exp_avg_sqs, TensorList state_steps, double lr, double beta1,
             double beta2, double weight_decay, double eps, bool amsgrad, bool maximize,
             const std::optional<Tensor>& grad_scale, const std::optional<Tensor>& found_inf) {
  fused_adam(AdamW, self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, nullptr, lr,
             beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale, found_inf);
}

template <bool AdamW>
void k_fused_tensor_lr(TensorList self, TensorList grads, TensorList exp_avgs,
                       TensorList exp_avg_sqs, TensorList max_exp_avg_sqs, TensorList state_steps,
                       const Tensor& lr, double beta1, double beta2, double weight_decay,
                       double eps, bool amsgrad, bool maximize,
                       const std::optional<Tensor>& grad_scale,
                       const std::optional<Tensor>& found_inf) {
  fused_adam(AdamW, self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, &lr, 0.0,
             beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale, found_inf);
}

}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  m.impl("_fused_adam_", TORCH_FN(k_fused<false>));
  m.impl("_fused_adamw_", TORCH_FN(k_fused<true>));
  m.impl("_fused_adam_.tensor_lr", TORCH_FN(k_fused_tensor_lr<false>));
  m.impl("_fused_adamw_.tensor_lr", TORCH_FN(k_fused_tensor_lr<true>));
}
