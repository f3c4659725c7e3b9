/* ops/optim: one tensor's step of torch.optim.Adam/AdamW(fused=True)
 * (aten::_fused_adam_ / _fused_adamw_, the optimizer Transformers' Trainer
 * picks by default). The glue calls this once per parameter and writes the
 * results back in place. Math follows PyTorch's fused CPU kernel: bias
 * corrections in float64, the update in the parameter's math dtype
 * (float32 for half types). */
#include "ops/attrs.h"
#include "ops/ops.h"

/* in: param, grad, exp_avg, exp_avg_sq, [max_exp_avg_sq], step (0-d),
 *     lr, beta1, beta2, weight_decay, eps (0-d float64),
 *     [grad_scale (0-d)], [found_inf (0-d)].
 * attrs: [0] adamw (decoupled weight decay), [1] amsgrad, [2] maximize,
 *        [3] has grad_scale, [4] has found_inf, [5] math dtype.
 * results: param, exp_avg, exp_avg_sq, [max_exp_avg_sq], [grad (unscaled)]. */
void tpj_lower_fused_adam(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_fused_adam_t)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "_fused_adam_: bad attrs"));
    return;
  }
  const tpj_attrs_fused_adam_t* at = TPJ_ATTRS(ctx, tpj_attrs_fused_adam_t);
  int adamw = (int)at->adamw, amsgrad = (int)at->amsgrad, maximize = (int)at->maximize;
  int has_scale = (int)at->has_grad_scale, has_inf = (int)at->has_found_inf;
  tpj_dtype_t md = (tpj_dtype_t)at->compute;
  int need = 4 + amsgrad + 6 + has_scale + has_inf;
  if (ctx->nin < need) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "_fused_adam_: bad operands"));
    return;
  }
  const tpj_hlo_value_t* in = ctx->in;
  tpj_hlo_value_t p0 = in[0];
  const int64_t* dims = p0.dims;
  int nd = p0.ndim;
  int k = 4 + amsgrad;
  tpj_hlo_value_t step = tpj_hlo_emit_convert(b, in[k], TPJ_F64);
  tpj_hlo_value_t lr = in[k + 1], beta1 = in[k + 2], beta2 = in[k + 3], wd = in[k + 4],
                  eps = in[k + 5];
  int next = k + 6;
  tpj_hlo_value_t one = tpj_hlo_emit_one(b, TPJ_F64);

#define MD(x) tpj_ops_cast_to(b, tpj_hlo_emit_convert(b, (x), TPJ_F64), md, dims, nd)
#define BIN(op, x, y) tpj_hlo_emit_binary(b, "stablehlo." op, (x), (y))
  tpj_hlo_value_t param = tpj_hlo_emit_convert(b, p0, md);
  tpj_hlo_value_t grad = tpj_hlo_emit_convert(b, in[1], md);
  tpj_hlo_value_t m = tpj_hlo_emit_convert(b, in[2], md);
  tpj_hlo_value_t v = tpj_hlo_emit_convert(b, in[3], md);
  if (has_scale) grad = BIN("divide", grad, MD(in[next++]));
  tpj_hlo_value_t unscaled = grad;
  if (maximize) grad = tpj_hlo_emit_unary(b, "stablehlo.negate", grad);
  /* Weight decay: AdamW shrinks the parameter, Adam adds wd * param to the
   * gradient. With wd == 0 both are exact no-ops. */
  if (adamw) {
    param = BIN("subtract", param, BIN("multiply", param, MD(BIN("multiply", lr, wd))));
  } else {
    grad = BIN("add", grad, BIN("multiply", param, MD(wd)));
  }
  /* exp_avg = lerp(exp_avg, grad, 1 - beta1); exp_avg_sq = beta2 * exp_avg_sq
   * + (1 - beta2) * grad * grad. */
  m = BIN("add", m, BIN("multiply", MD(BIN("subtract", one, beta1)), BIN("subtract", grad, m)));
  v = BIN("add", BIN("multiply", v, MD(beta2)),
          BIN("multiply", MD(BIN("subtract", one, beta2)), BIN("multiply", grad, grad)));
  tpj_hlo_value_t bc1 = BIN("subtract", one, BIN("power", beta1, step));
  tpj_hlo_value_t bc2 = BIN("subtract", one, BIN("power", beta2, step));
  tpj_hlo_value_t step_size = BIN("divide", lr, bc1);
  tpj_hlo_value_t bc2_sqrt = tpj_hlo_emit_unary(b, "stablehlo.sqrt", bc2);
  tpj_hlo_value_t vmax = v;
  if (amsgrad) {
    vmax = BIN("maximum", tpj_hlo_emit_convert(b, in[4], md), v);
  }
  tpj_hlo_value_t denom = BIN("add", BIN("divide", tpj_hlo_emit_unary(b, "stablehlo.sqrt", vmax),
                                         MD(bc2_sqrt)),
                              MD(eps));
  tpj_hlo_value_t np = BIN("subtract", param, BIN("multiply", MD(step_size), BIN("divide", m, denom)));

  /* found_inf == 1 skips the whole step, the gradient's unscaling too. */
  tpj_hlo_value_t olds[4] = {tpj_hlo_emit_convert(b, p0, md), tpj_hlo_emit_convert(b, in[2], md),
                             tpj_hlo_emit_convert(b, in[3], md),
                             amsgrad ? tpj_hlo_emit_convert(b, in[4], md) : v};
  tpj_hlo_value_t news[4] = {np, m, v, vmax};
  tpj_hlo_value_t skip = {0};
  if (has_inf) {
    tpj_hlo_value_t fi = tpj_hlo_emit_convert(b, in[next++], TPJ_F64);
    skip = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_compare(b, fi, one, "EQ"), dims, nd);
  }
  int nres = 3 + amsgrad;
  for (int i = 0; i < nres; ++i) {
    tpj_hlo_value_t r = has_inf ? tpj_hlo_emit_select(b, skip, olds[i], news[i]) : news[i];
    results[i] = tpj_hlo_emit_convert(b, r, ctx->outs[i].dtype);
  }
  if (has_scale) {
    tpj_hlo_value_t g0 = tpj_hlo_emit_convert(b, in[1], md);
    tpj_hlo_value_t r = has_inf ? tpj_hlo_emit_select(b, skip, g0, unscaled) : unscaled;
    results[nres] = tpj_hlo_emit_convert(b, r, ctx->outs[nres].dtype);
  }
#undef MD
#undef BIN
}
