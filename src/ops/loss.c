/* ops/loss: nll_loss and nll_loss2d, forward and backward (cross_entropy
 * is log_softmax + nll_loss); the pointwise losses are in
 * ops/loss_pointwise.c, the margin losses in ops/loss_margin.c. The class
 * of each row is picked with a one-hot comparison against an iota rather
 * than a gather, so ignore_index (which may lie outside [0, C)) simply
 * matches nothing. Targets out of range are rejected by the glue on the
 * host first. attrs: tpj_attrs_nll_loss_t. */
#include <math.h>

#include "ops/attrs.h"
#include "ops/lower_util.h"
#include "ops/ops.h"

typedef struct {
  tpj_hlo_value_t x;      /* (N, C) in the compute dtype */
  tpj_hlo_value_t hot;    /* (N, C) bool: column == target and target != ignore */
  tpj_hlo_value_t w;      /* (N,) weight of each row's target, 0 where ignored */
} tpj_nll_t;

static int tpj_nll_prepare(tpj_op_ctx_t* ctx, tpj_hlo_value_t self, tpj_hlo_value_t target,
                           int weight_at, tpj_nll_t* out) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_attrs_nll_loss_t* at = TPJ_ATTRS(ctx, tpj_attrs_nll_loss_t);
  tpj_dtype_t cd = (tpj_dtype_t)at->compute;
  int64_t c = self.ndim == 2 ? self.dims[1] : self.dims[0];
  int64_t n = self.ndim == 2 ? self.dims[0] : 1;
  int64_t nc[2] = {n, c};
  out->x = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, self, cd), nc, 2);
  tpj_hlo_value_t t = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, target, TPJ_I64), &n, 1);
  int64_t bd0 = 0;
  tpj_hlo_value_t tt = tpj_hlo_emit_broadcast_in_dim(b, t, nc, 2, &bd0);
  tpj_hlo_value_t cols = tpj_hlo_emit_iota(b, TPJ_I64, nc, 2, 1);
  tpj_hlo_value_t keep = tpj_hlo_emit_compare(
      b, t, tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, at->ignore_index), &n, 1), "NE");
  out->hot = tpj_hlo_emit_binary(b, "stablehlo.and", tpj_hlo_emit_compare(b, cols, tt, "EQ"),
                                 tpj_hlo_emit_broadcast_in_dim(b, keep, nc, 2, &bd0));
  tpj_hlo_value_t zero = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, cd), nc, 2);
  tpj_hlo_value_t wfull;
  if (at->has_weight) {
    int64_t bd1 = 1;
    wfull = tpj_hlo_emit_broadcast_in_dim(b, tpj_hlo_emit_convert(b, ctx->in[weight_at], cd), nc, 2, &bd1);
  } else {
    wfull = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_one(b, cd), nc, 2);
  }
  int64_t red = 1;
  out->w = tpj_hlo_emit_reduce(b, tpj_hlo_emit_select(b, out->hot, wfull, zero),
                               tpj_hlo_emit_zero(b, cd), &red, 1, "stablehlo.add");
  return tpj_hlo_ok(b);
}

/* in[0] self, in[1] target, [in[2] weight]; outs: output, total_weight */
void tpj_lower_nll_loss(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_attrs_nll_loss_t* at = TPJ_ATTRS(ctx, tpj_attrs_nll_loss_t);
  if (ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_nll_loss_t) || ctx->nin < 2 + (at->has_weight != 0) ||
      ctx->nouts < 2) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "nll_loss_forward: bad operands"));
    return;
  }
  tpj_nll_t p;
  if (!tpj_nll_prepare(ctx, ctx->in[0], ctx->in[1], 2, &p)) return;
  tpj_dtype_t cd = (tpj_dtype_t)at->compute;
  int64_t red = 1, all = 0;
  tpj_hlo_value_t zero = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, cd), p.x.dims, 2);
  tpj_hlo_value_t picked = tpj_hlo_emit_reduce(b, tpj_hlo_emit_select(b, p.hot, p.x, zero),
                                               tpj_hlo_emit_zero(b, cd), &red, 1, "stablehlo.add");
  /* rows: -x[i, t_i] * w_i (the one-hot already dropped ignored rows) */
  tpj_hlo_value_t loss = tpj_hlo_emit_unary(b, "stablehlo.negate",
                                            tpj_hlo_emit_binary(b, "stablehlo.multiply", picked, p.w));
  tpj_hlo_value_t total = tpj_hlo_emit_reduce(b, p.w, tpj_hlo_emit_zero(b, cd), &all, 1, "stablehlo.add");
  tpj_hlo_value_t out = loss;
  if (at->reduction != 0) {
    out = tpj_hlo_emit_reduce(b, loss, tpj_hlo_emit_zero(b, cd), &all, 1, "stablehlo.add");
    if (at->reduction == 1) out = tpj_hlo_emit_binary(b, "stablehlo.divide", out, total);
  }
  results[0] = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, out, ctx->outs[0].dtype),
                                    ctx->outs[0].dims, ctx->outs[0].ndim);
  tpj_hlo_value_t tw = tpj_hlo_emit_convert(b, total, ctx->outs[1].dtype);
  if (ctx->outs[1].ndim == 0) results[1] = tw;
  else results[1] = tpj_hlo_emit_broadcast_to(b, tw, ctx->outs[1].dims, ctx->outs[1].ndim);
}

/* in[0] grad_output, in[1] self, in[2] target, in[3] total_weight,
 * [in[4] weight]; out: grad_input like self */
void tpj_lower_nll_loss_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_attrs_nll_loss_t* at = TPJ_ATTRS(ctx, tpj_attrs_nll_loss_t);
  if (ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_nll_loss_t) || ctx->nin < 4 + (at->has_weight != 0)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "nll_loss_backward: bad operands"));
    return;
  }
  tpj_nll_t p;
  if (!tpj_nll_prepare(ctx, ctx->in[1], ctx->in[2], 4, &p)) return;
  tpj_dtype_t cd = (tpj_dtype_t)at->compute;
  int64_t n = p.x.dims[0];
  tpj_hlo_value_t g = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  if (at->reduction == 0) {
    g = tpj_hlo_emit_reshape(b, g, &n, 1);
  } else {
    g = tpj_hlo_emit_reshape(b, g, NULL, 0);
    if (at->reduction == 1) {
      tpj_hlo_value_t tw = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, ctx->in[3], cd), NULL, 0);
      g = tpj_hlo_emit_binary(b, "stablehlo.divide", g, tw);
    }
    g = tpj_hlo_emit_broadcast_to(b, g, &n, 1);
  }
  tpj_hlo_value_t rowg = tpj_hlo_emit_unary(b, "stablehlo.negate",
                                            tpj_hlo_emit_binary(b, "stablehlo.multiply", g, p.w));
  int64_t bd0 = 0;
  tpj_hlo_value_t full = tpj_hlo_emit_broadcast_in_dim(b, rowg, p.x.dims, 2, &bd0);
  tpj_hlo_value_t zero = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, cd), p.x.dims, 2);
  tpj_hlo_value_t r = tpj_hlo_emit_select(b, p.hot, full, zero);
  results[0] = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, r, ctx->outs[0].dtype),
                                    ctx->outs[0].dims, ctx->outs[0].ndim);
}

/* ---- nll_loss2d -----------------------------------------------------------
 * self (N, C, H, W), target (N, H, W): the class dim moves last and the rest
 * flattens to rows, which is nll_loss on (N*H*W, C). attrs as nll_loss. */

static tpj_hlo_value_t tpj_nll2d_rows(tpj_hlo_builder_t* b, tpj_hlo_value_t self) {
  int64_t perm[4] = {0, 2, 3, 1};
  tpj_hlo_value_t t = tpj_hlo_emit_transpose(b, self, perm);
  int64_t rows[2] = {self.dims[0] * self.dims[2] * self.dims[3], self.dims[1]};
  return tpj_hlo_emit_reshape(b, t, rows, 2);
}

static tpj_hlo_value_t tpj_nll2d_flat(tpj_hlo_builder_t* b, tpj_hlo_value_t target) {
  int64_t n = tpj_hlo_numel(&target);
  return tpj_hlo_emit_reshape(b, target, &n, 1);
}

/* in[0] self, in[1] target, [in[2] weight]; outs: output, total_weight */
void tpj_lower_nll_loss2d(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (ctx->nin < 2 || ctx->in[0].ndim != 4) {
    tpj_ops_fail_operands(ctx, "nll_loss2d_forward");
    return;
  }
  tpj_op_ctx_t c = *ctx;
  c.in[0] = tpj_nll2d_rows(ctx->b, ctx->in[0]);
  c.in[1] = tpj_nll2d_flat(ctx->b, ctx->in[1]);
  tpj_lower_nll_loss(&c, results);
}

/* in[0] grad_output, in[1] self, in[2] target, in[3] total_weight,
 * [in[4] weight]; out: grad_input like self */
void tpj_lower_nll_loss2d_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (ctx->nin < 4 || ctx->in[1].ndim != 4 || ctx->nouts < 1 || ctx->outs[0].ndim != 4) {
    tpj_ops_fail_operands(ctx, "nll_loss2d_backward");
    return;
  }
  tpj_op_ctx_t c = *ctx;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  c.in[0] = tpj_nll2d_flat(b, ctx->in[0]);
  c.in[1] = tpj_nll2d_rows(b, ctx->in[1]);
  c.in[2] = tpj_nll2d_flat(b, ctx->in[2]);
  /* the rows' gradient, laid out (N, H, W, C) before the class dim moves back */
  int64_t nhwc[4] = {o->dims[0], o->dims[2], o->dims[3], o->dims[1]};
  for (int i = 0; i < 4; ++i) c.outs[0].dims[i] = nhwc[i];
  tpj_lower_nll_loss_backward(&c, results);
  int64_t perm[4] = {0, 3, 1, 2};
  results[0] = tpj_hlo_emit_transpose(b, results[0], perm);
}
