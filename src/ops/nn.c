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

/* kind: 0 softmax, 1 log_softmax, 2 _safe_softmax (softmax, but a row whose
 * elements are all -inf gives zeros, as scaled_dot_product_attention's math
 * path wants for fully masked rows). */
static void tpj_lower_softmax_common(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, int kind) {
  int log = kind == 1;
  tpj_dtype_t cd;
  int64_t d;
  if (!tpj_softmax_args(ctx, 1, &cd, &d)) return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  if (x.ndim == 0) {
    /* softmax of a scalar is 1, log_softmax 0, and NaN for an infinite or NaN
     * scalar as on CPU (its x - max(x) is inf - inf): x - x gives both. */
    tpj_hlo_value_t v = tpj_hlo_emit_binary(b, "stablehlo.subtract", x, x);
    if (!log) v = tpj_hlo_emit_unary(b, "stablehlo.exponential", v);
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
  if (kind == 2) {
    /* The sum is 0 exactly for an all -inf row: its max was replaced by 0
     * above, so every exp is 0. Any other row has an exp(0) = 1 term, or a
     * NaN (a NaN or +inf element), and keeps softmax's value. This needs no
     * second reduction, unlike testing every element against -inf. */
    tpj_hlo_value_t z = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, cd), r.dims, r.ndim);
    r = tpj_hlo_emit_select(b, tpj_hlo_emit_compare(b, s, z, "EQ"), z, r);
  }
  results[0] = tpj_hlo_emit_convert(b, r, ctx->outs[0].dtype);
}

void tpj_lower_softmax(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) { tpj_lower_softmax_common(ctx, r, 0); }
void tpj_lower_log_softmax(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_lower_softmax_common(ctx, r, 1);
}
void tpj_lower_safe_softmax(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_lower_softmax_common(ctx, r, 2);
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

/* ---- gelu ---------------------------------------------------------------
 * attrs[0] compute dtype, attrs[1] 1 for approximate="tanh". gelu: in[0] x;
 * gelu_backward: in[0] grad, in[1] x. */

static tpj_hlo_value_t tpj_c(tpj_hlo_builder_t* b, tpj_dtype_t dt, double v, const tpj_hlo_value_t* like) {
  return tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_f64(b, dt, v), like->dims, like->ndim);
}

#define TPJ_MUL(x, y) tpj_hlo_emit_binary(b, "stablehlo.multiply", x, y)
#define TPJ_ADD(x, y) tpj_hlo_emit_binary(b, "stablehlo.add", x, y)
#define TPJ_SUB(x, y) tpj_hlo_emit_binary(b, "stablehlo.subtract", x, y)

static const double kSqrt1_2 = 0.70710678118654752440;   /* 1/sqrt(2) */
static const double kSqrt2_Pi = 0.79788456080286535588;  /* sqrt(2/pi) */
static const double kInvSqrt2Pi = 0.39894228040143267794; /* 1/sqrt(2*pi) */
static const double kGeluC = 0.044715;

/* tanh(sqrt(2/pi) * (x + c x^3)) */
static tpj_hlo_value_t tpj_gelu_tanh_inner(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  tpj_hlo_value_t x3 = TPJ_MUL(TPJ_MUL(x, x), x);
  tpj_hlo_value_t in = TPJ_MUL(tpj_c(b, x.dtype, kSqrt2_Pi, &x),
                               TPJ_ADD(x, TPJ_MUL(tpj_c(b, x.dtype, kGeluC, &x), x3)));
  return tpj_hlo_emit_unary(b, "stablehlo.tanh", in);
}

void tpj_lower_gelu(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (ctx->nin < 1 || ctx->nattrs < 2) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "gelu: bad operands"));
    return;
  }
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], (tpj_dtype_t)ctx->attrs[0]);
  tpj_hlo_value_t cdf;
  if (ctx->attrs[1]) {
    cdf = TPJ_MUL(tpj_c(b, x.dtype, 0.5, &x), TPJ_ADD(tpj_c(b, x.dtype, 1.0, &x),
                                                       tpj_gelu_tanh_inner(b, x)));
  } else {
    tpj_hlo_value_t e = tpj_hlo_emit_unary(b, "chlo.erf", TPJ_MUL(x, tpj_c(b, x.dtype, kSqrt1_2, &x)));
    cdf = TPJ_MUL(tpj_c(b, x.dtype, 0.5, &x), TPJ_ADD(tpj_c(b, x.dtype, 1.0, &x), e));
  }
  results[0] = tpj_hlo_emit_convert(b, TPJ_MUL(x, cdf), ctx->outs[0].dtype);
}

void tpj_lower_gelu_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nin < 2 || ctx->nattrs < 2) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "gelu_backward: bad operands"));
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[0];
  tpj_hlo_value_t g = tpj_ops_cast_to(b, ctx->in[0], cd, o->dims, o->ndim);
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[1], cd, o->dims, o->ndim);
  tpj_hlo_value_t d;
  if (ctx->attrs[1]) {
    /* 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 c x^2) */
    tpj_hlo_value_t t = tpj_gelu_tanh_inner(b, x);
    tpj_hlo_value_t one = tpj_c(b, cd, 1.0, &x), half = tpj_c(b, cd, 0.5, &x);
    tpj_hlo_value_t left = TPJ_MUL(half, TPJ_ADD(one, t));
    tpj_hlo_value_t dinner = TPJ_MUL(tpj_c(b, cd, kSqrt2_Pi, &x),
                                     TPJ_ADD(one, TPJ_MUL(tpj_c(b, cd, 3.0 * kGeluC, &x), TPJ_MUL(x, x))));
    tpj_hlo_value_t right = TPJ_MUL(TPJ_MUL(half, x), TPJ_MUL(TPJ_SUB(one, TPJ_MUL(t, t)), dinner));
    d = TPJ_ADD(left, right);
  } else {
    /* Phi(x) + x phi(x) */
    tpj_hlo_value_t e = tpj_hlo_emit_unary(b, "chlo.erf", TPJ_MUL(x, tpj_c(b, cd, kSqrt1_2, &x)));
    tpj_hlo_value_t cdf = TPJ_MUL(tpj_c(b, cd, 0.5, &x), TPJ_ADD(tpj_c(b, cd, 1.0, &x), e));
    tpj_hlo_value_t pdf = TPJ_MUL(tpj_c(b, cd, kInvSqrt2Pi, &x),
                                  tpj_hlo_emit_unary(b, "stablehlo.exponential",
                                                     TPJ_MUL(tpj_c(b, cd, -0.5, &x), TPJ_MUL(x, x))));
    d = TPJ_ADD(cdf, TPJ_MUL(x, pdf));
  }
  results[0] = tpj_hlo_emit_convert(b, TPJ_MUL(g, d), o->dtype);
}

/* ---- layer norm ---------------------------------------------------------
 * attrs[0] compute dtype, attrs[1] the first normalized axis, attrs[2]
 * has weight, attrs[3] has bias.
 * forward: in[0] x, [weight], [bias], then eps (0-d); outs: y, mean, rstd.
 * backward: in[0] grad_out, in[1] x, in[2] mean, in[3] rstd, [weight];
 * attrs[4..6] the output mask; outs: the masked-in grads in order. */

static int tpj_ln_axes(const tpj_hlo_value_t* x, int64_t axis, int64_t* axes) {
  int n = 0;
  for (int64_t d = axis; d < x->ndim; ++d) axes[n++] = d;
  return n;
}

/* mean over the normalized axes, broadcast back to x */
static tpj_hlo_value_t tpj_ln_mean(tpj_hlo_builder_t* b, tpj_hlo_value_t x, const int64_t* axes,
                                   int n) {
  int64_t count = 1;
  for (int i = 0; i < n; ++i) count *= x.dims[axes[i]];
  tpj_hlo_value_t s = tpj_hlo_emit_reduce(b, x, tpj_hlo_emit_zero(b, x.dtype), axes, n, "stablehlo.add");
  s = tpj_hlo_emit_binary(b, "stablehlo.divide", s,
                          tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_f64(b, x.dtype, (double)count),
                                                    s.dims, s.ndim));
  int64_t bdims[TPJ_MAX_DIMS];
  for (int i = 0; i < s.ndim; ++i) bdims[i] = i;
  return tpj_hlo_emit_broadcast_in_dim(b, s, x.dims, x.ndim, bdims);
}

/* the stats' shape: x's batch dims, then 1 for each normalized dim */
static tpj_hlo_value_t tpj_ln_stat(tpj_hlo_builder_t* b, tpj_hlo_value_t full, const tpj_rt_shape_t* o,
                                   int64_t axis) {
  int64_t st[TPJ_MAX_DIMS], li[TPJ_MAX_DIMS], sd[TPJ_MAX_DIMS];
  for (int i = 0; i < full.ndim; ++i) {
    st[i] = 0;
    li[i] = i < axis ? full.dims[i] : 1;
    sd[i] = 1;
  }
  tpj_hlo_value_t s = tpj_hlo_emit_slice(b, full, st, li, sd);
  return tpj_hlo_emit_convert(b, tpj_hlo_emit_reshape(b, s, o->dims, o->ndim), o->dtype);
}

void tpj_lower_layer_norm(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (ctx->nattrs < 4 || ctx->nouts < 3 ||
      ctx->nin < 2 + (ctx->attrs[2] != 0) + (ctx->attrs[3] != 0)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "native_layer_norm: bad operands"));
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[0];
  int64_t axis = ctx->attrs[1];
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  int next = 1;
  tpj_hlo_value_t w = {-1, 0, TPJ_DTYPE_INVALID, 0, {0}}, bias = w;
  if (ctx->attrs[2]) w = ctx->in[next++];
  if (ctx->attrs[3]) bias = ctx->in[next++];
  tpj_hlo_value_t eps = tpj_hlo_emit_convert(b, ctx->in[next], cd);
  int64_t axes[TPJ_MAX_DIMS];
  int n = tpj_ln_axes(&x, axis, axes);
  tpj_hlo_value_t mean = tpj_ln_mean(b, x, axes, n);
  tpj_hlo_value_t xc = TPJ_SUB(x, mean);
  tpj_hlo_value_t var = tpj_ln_mean(b, TPJ_MUL(xc, xc), axes, n);
  tpj_hlo_value_t rstd = tpj_hlo_emit_unary(
      b, "stablehlo.rsqrt", TPJ_ADD(var, tpj_hlo_emit_broadcast_to(b, eps, var.dims, var.ndim)));
  tpj_hlo_value_t y = TPJ_MUL(xc, rstd);
  if (ctx->attrs[2]) y = TPJ_MUL(y, tpj_ops_cast_to(b, w, cd, x.dims, x.ndim));
  if (ctx->attrs[3]) y = TPJ_ADD(y, tpj_ops_cast_to(b, bias, cd, x.dims, x.ndim));
  results[0] = tpj_hlo_emit_convert(b, y, ctx->outs[0].dtype);
  results[1] = tpj_ln_stat(b, mean, &ctx->outs[1], axis);
  results[2] = tpj_ln_stat(b, rstd, &ctx->outs[2], axis);
}

void tpj_lower_layer_norm_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (ctx->nattrs < 7 || ctx->nin < 4 + (ctx->attrs[2] != 0)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "native_layer_norm_backward: bad operands"));
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[0];
  int64_t axis = ctx->attrs[1];
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[1], cd);
  tpj_hlo_value_t go = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  tpj_hlo_value_t mean = tpj_ops_cast_to(b, ctx->in[2], cd, x.dims, x.ndim);
  tpj_hlo_value_t rstd = tpj_ops_cast_to(b, ctx->in[3], cd, x.dims, x.ndim);
  tpj_hlo_value_t xhat = TPJ_MUL(TPJ_SUB(x, mean), rstd);
  int64_t axes[TPJ_MAX_DIMS], batch[TPJ_MAX_DIMS];
  int n = tpj_ln_axes(&x, axis, axes);
  for (int64_t i = 0; i < axis; ++i) batch[i] = i;
  int out = 0;
  if (ctx->attrs[4]) {
    tpj_hlo_value_t g = go;
    if (ctx->attrs[2]) g = TPJ_MUL(g, tpj_ops_cast_to(b, ctx->in[4], cd, x.dims, x.ndim));
    /* rstd * (g - mean(g) - xhat * mean(g * xhat)) */
    tpj_hlo_value_t gi = TPJ_MUL(rstd, TPJ_SUB(TPJ_SUB(g, tpj_ln_mean(b, g, axes, n)),
                                               TPJ_MUL(xhat, tpj_ln_mean(b, TPJ_MUL(g, xhat), axes, n))));
    results[out] = tpj_hlo_emit_convert(b, gi, ctx->outs[out].dtype);
    out++;
  }
  for (int k = 0; k < 2; ++k) {
    if (!ctx->attrs[5 + k]) continue;
    tpj_hlo_value_t v = k == 0 ? TPJ_MUL(go, xhat) : go;
    v = tpj_hlo_emit_reduce(b, v, tpj_hlo_emit_zero(b, cd), batch, (int)axis, "stablehlo.add");
    results[out] = tpj_hlo_emit_convert(b, tpj_hlo_emit_reshape(b, v, ctx->outs[out].dims,
                                                                 ctx->outs[out].ndim),
                                        ctx->outs[out].dtype);
    out++;
  }
}
