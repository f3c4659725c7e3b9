/* ops/nn: softmax and log_softmax with their backward, threshold_backward.
 * attrs[0] is the compute dtype (float32 for half inputs), attrs[1] the
 * (wrapped) softmax dim. */
#include "ops/ops.h"

/* reduce x over dim d and broadcast the result back to x's dims */
static tpj_hlo_value_t tpj_reduce_keep(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int64_t d,
                                       int is_max) {
  tpj_hlo_value_t init = is_max ? tpj_hlo_emit_extreme(b, x.dtype, 0) : tpj_hlo_emit_zero(b, x.dtype);
  tpj_hlo_value_t r = tpj_hlo_emit_reduce(b, x, init, &d, 1, is_max ? "stablehlo.maximum"
                                                                     : "stablehlo.add");
  int64_t bdims[TPJ_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < x.ndim; ++i)
    if (i != d) bdims[n++] = i;
  return tpj_hlo_emit_broadcast_in_dim(b, r, x.dims, x.ndim, bdims);
}

static int tpj_softmax_args(tpj_op_ctx_t* ctx, int nin, tpj_dtype_t* cd, int64_t* d) {
  if (ctx->nin < nin || ctx->nattrs < 2) {
    tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "softmax: bad operands"));
    return 0;
  }
  *cd = (tpj_dtype_t)ctx->attrs[0];
  *d = ctx->attrs[1];
  return 1;
}

static void tpj_lower_softmax_common(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, int log) {
  tpj_dtype_t cd;
  int64_t d;
  if (!tpj_softmax_args(ctx, 1, &cd, &d)) return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  if (x.ndim == 0) {  /* softmax of a scalar is 1, log_softmax 0 */
    tpj_hlo_value_t v = log ? tpj_hlo_emit_zero(b, cd) : tpj_hlo_emit_one(b, cd);
    results[0] = tpj_hlo_emit_convert(b, v, ctx->outs[0].dtype);
    return;
  }
  tpj_hlo_value_t m = tpj_reduce_keep(b, x, d, 1);
  /* an all -inf row: subtract 0 instead of -inf, so the row gives NaN/-inf
   * like PyTorch rather than NaN from (-inf) - (-inf) everywhere */
  tpj_hlo_value_t finite = tpj_hlo_emit_compare(
      b, m, tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_extreme(b, cd, 0), m.dims, m.ndim), "NE");
  m = tpj_hlo_emit_select(b, finite, m,
                          tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, cd), m.dims, m.ndim));
  tpj_hlo_value_t shifted = tpj_hlo_emit_binary(b, "stablehlo.subtract", x, m);
  tpj_hlo_value_t e = tpj_hlo_emit_unary(b, "stablehlo.exponential", shifted);
  tpj_hlo_value_t s = tpj_reduce_keep(b, e, d, 0);
  tpj_hlo_value_t r = log ? tpj_hlo_emit_binary(b, "stablehlo.subtract", shifted,
                                                tpj_hlo_emit_unary(b, "stablehlo.log", s))
                          : tpj_hlo_emit_binary(b, "stablehlo.divide", e, s);
  results[0] = tpj_hlo_emit_convert(b, r, ctx->outs[0].dtype);
}

void tpj_lower_softmax(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) { tpj_lower_softmax_common(ctx, r, 0); }
void tpj_lower_log_softmax(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_lower_softmax_common(ctx, r, 1);
}

/* in[0] grad_output, in[1] output (of softmax / log_softmax) */
static void tpj_lower_softmax_bwd_common(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, int log) {
  tpj_dtype_t cd;
  int64_t d;
  if (!tpj_softmax_args(ctx, 2, &cd, &d)) return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t g = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  tpj_hlo_value_t y = tpj_hlo_emit_convert(b, ctx->in[1], cd);
  tpj_hlo_value_t r;
  if (g.ndim == 0) {
    r = log ? tpj_hlo_emit_binary(b, "stablehlo.subtract", g,
                                  tpj_hlo_emit_binary(b, "stablehlo.multiply",
                                                      tpj_hlo_emit_unary(b, "stablehlo.exponential", y), g))
            : tpj_hlo_emit_binary(b, "stablehlo.multiply", y,
                                  tpj_hlo_emit_binary(b, "stablehlo.subtract", g,
                                                      tpj_hlo_emit_binary(b, "stablehlo.multiply", g, y)));
  } else if (log) {
    /* g - exp(y) * sum(g) */
    tpj_hlo_value_t s = tpj_reduce_keep(b, g, d, 0);
    r = tpj_hlo_emit_binary(b, "stablehlo.subtract", g,
                            tpj_hlo_emit_binary(b, "stablehlo.multiply",
                                                tpj_hlo_emit_unary(b, "stablehlo.exponential", y), s));
  } else {
    /* y * (g - sum(g * y)) */
    tpj_hlo_value_t s = tpj_reduce_keep(b, tpj_hlo_emit_binary(b, "stablehlo.multiply", g, y), d, 0);
    r = tpj_hlo_emit_binary(b, "stablehlo.multiply", y,
                            tpj_hlo_emit_binary(b, "stablehlo.subtract", g, s));
  }
  results[0] = tpj_hlo_emit_convert(b, r, ctx->outs[0].dtype);
}

void tpj_lower_softmax_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_lower_softmax_bwd_common(ctx, r, 0);
}
void tpj_lower_log_softmax_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_lower_softmax_bwd_common(ctx, r, 1);
}

/* threshold_backward: in[0] grad, in[1] self, in[2] threshold (0-d);
 * grad where self > threshold, else 0. attrs[0] compute dtype. */
void tpj_lower_threshold_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nin < 3 || ctx->nattrs < 1) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "threshold_backward: bad operands"));
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[0];
  tpj_hlo_value_t g = tpj_ops_cast_to(b, ctx->in[0], cd, o->dims, o->ndim);
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[1], cd, o->dims, o->ndim);
  tpj_hlo_value_t t = tpj_ops_cast_to(b, ctx->in[2], cd, o->dims, o->ndim);
  tpj_hlo_value_t z = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, cd), o->dims, o->ndim);
  tpj_hlo_value_t r = tpj_hlo_emit_select(b, tpj_hlo_emit_compare(b, x, t, "LE"), z, g);
  results[0] = tpj_hlo_emit_convert(b, r, o->dtype);
}
