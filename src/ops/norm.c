/* ops/norm: batch norm, group norm and layer norm, forward and backward. Statistics
 * are computed in the compute dtype (float32 for half inputs, as
 * CPU's kernels accumulate), with the two-pass (x - mean)^2 variance; eps
 * and momentum are 0-d runtime scalars so changing them never recompiles.
 * Batch norm's running-stat update is returned as two extra results that the
 * glue writes back into the running buffers, exactly as CPU updates them in
 * place. */
#include <math.h>

#include "ops/attrs.h"
#include "ops/ops.h"
#include "ops/sugar.h"


static const tpj_hlo_value_t kNone = {-1, 0, TPJ_DTYPE_INVALID, 0, {0}};

/* sum of x over dims (sorted) */
static tpj_hlo_value_t tpj_norm_sum(tpj_hlo_builder_t* b, tpj_hlo_value_t x, const int64_t* dims,
                                    int n) {
  return tpj_hlo_emit_reduce(b, x, tpj_hlo_emit_zero(b, x.dtype), dims, n, "stablehlo.add");
}

/* v (a 0-d or n-d value) times the constant c, at v's dims */
static tpj_hlo_value_t tpj_norm_scale(tpj_hlo_builder_t* b, tpj_hlo_value_t v, double c) {
  return MUL(v, tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_f64(b, v.dtype, c), v.dims, v.ndim));
}

/* a 0-d runtime scalar broadcast to v's dims, in v's dtype */
static tpj_hlo_value_t tpj_norm_like(tpj_hlo_builder_t* b, tpj_hlo_value_t s, tpj_hlo_value_t v) {
  return tpj_ops_cast_to(b, s, v.dtype, v.dims, v.ndim);
}

/* ---- batch norm ----------------------------------------------------------
 * x is (N, C, *); statistics are per channel (dim 1). */

/* a per-channel (C,) value broadcast to x's dims, converted to cd */
static tpj_hlo_value_t tpj_bn_chan(tpj_hlo_builder_t* b, tpj_hlo_value_t v, const tpj_hlo_value_t* x) {
  int64_t one = 1;
  v = tpj_hlo_emit_convert(b, v, x->dtype);
  v = tpj_hlo_emit_reshape(b, v, &x->dims[1], 1);
  return tpj_hlo_emit_broadcast_in_dim(b, v, x->dims, x->ndim, &one);
}

/* The per-channel sum of x (N, C, *): over the trailing extent first, then
 * over N. Both are then a leading or trailing reduction, which the CPU
 * target sums pairwise (hlo/target.h); one reduce over dims (0, 2, ...) is
 * a middle reduction, summed in one float32 chain per channel: its mean
 * was 20-80x and the outputs and weight gradients up to 60x further from a
 * float64 reference than CPU's (which accumulates in double). */
static tpj_hlo_value_t tpj_bn_sum(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  int64_t lead = 0;
  if (x.ndim > 2) {
    int64_t ncs[3] = {x.dims[0], x.dims[1], 1}, two = 2;
    for (int d = 2; d < x.ndim; ++d) ncs[2] *= x.dims[d];
    x = tpj_norm_sum(b, tpj_hlo_emit_reshape(b, x, ncs, 3), &two, 1);
  }
  return tpj_norm_sum(b, x, &lead, 1);
}

static int64_t tpj_bn_count(const tpj_hlo_value_t* x) {
  int64_t c = 1;
  for (int d = 0; d < x->ndim; ++d)
    if (d != 1) c *= x->dims[d];
  return c;
}

static tpj_hlo_value_t tpj_bn_out(tpj_hlo_builder_t* b, tpj_hlo_value_t v, const tpj_rt_shape_t* o) {
  v = tpj_hlo_emit_convert(b, v, o->dtype);
  if (tpj_hlo_numel(&v) == 0 || o->ndim != v.ndim) return tpj_hlo_emit_reshape(b, v, o->dims, o->ndim);
  return v;
}

/* attrs: tpj_attrs_batch_norm_t. in: x, [weight], [bias], [running_mean,
 * running_var], momentum, eps. outs: y, save_mean, save_invstd, then
 * (training with running stats) the new running_mean and running_var. In
 * eval mode only y is needed. */
void tpj_lower_batch_norm(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_attrs_batch_norm_t* at = TPJ_ATTRS(ctx, tpj_attrs_batch_norm_t);
  if (ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_batch_norm_t) ||
      ctx->nouts < (at->training ? 3 : 1) || ctx->in[0].ndim < 2) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "native_batch_norm: bad operands"));
    return;
  }
  int train = (int)at->training, hw = (int)at->has_weight, hb = (int)at->has_bias;
  int hr = (int)at->has_running;
  int need = 3 + hw + hb + 2 * hr;
  if (ctx->nin < need || (!train && !hr) || (train && hr && ctx->nouts < 5)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "native_batch_norm: bad operands"));
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)at->compute;
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  int next = 1;
  tpj_hlo_value_t w = kNone, bias = kNone, rm = kNone, rv = kNone;
  if (hw) w = ctx->in[next++];
  if (hb) bias = ctx->in[next++];
  if (hr) {
    rm = ctx->in[next++];
    rv = ctx->in[next++];
  }
  tpj_hlo_value_t momentum = tpj_hlo_emit_convert(b, ctx->in[next++], cd);
  tpj_hlo_value_t eps = tpj_hlo_emit_convert(b, ctx->in[next], cd);
  int64_t count = tpj_bn_count(&x);
  int64_t c = x.dims[1];
  tpj_hlo_value_t mean, var;  /* (C,) */
  if (train) {
    mean = tpj_norm_scale(b, tpj_bn_sum(b, x), 1.0 / (double)count);
    tpj_hlo_value_t xc = SUB(x, tpj_bn_chan(b, mean, &x));
    var = tpj_norm_scale(b, tpj_bn_sum(b, MUL(xc, xc)), 1.0 / (double)count);
  } else {
    mean = tpj_hlo_emit_convert(b, tpj_hlo_emit_reshape(b, rm, &c, 1), cd);
    var = tpj_hlo_emit_convert(b, tpj_hlo_emit_reshape(b, rv, &c, 1), cd);
  }
  tpj_hlo_value_t invstd = tpj_hlo_emit_unary(b, "stablehlo.rsqrt", ADD(var, tpj_norm_like(b, eps, var)));
  tpj_hlo_value_t y = MUL(SUB(x, tpj_bn_chan(b, mean, &x)), tpj_bn_chan(b, invstd, &x));
  if (hw) y = MUL(y, tpj_bn_chan(b, w, &x));
  if (hb) y = ADD(y, tpj_bn_chan(b, bias, &x));
  results[0] = tpj_hlo_emit_convert(b, y, ctx->outs[0].dtype);
  if (train) {
    results[1] = tpj_bn_out(b, mean, &ctx->outs[1]);
    results[2] = tpj_bn_out(b, invstd, &ctx->outs[2]);
  } else {
    /* eval: the glue asks for y alone (CPU's saved stats are then empty);
     * any stats asked for anyway are zeros */
    for (int i = 1; i < 3 && i < ctx->nouts; ++i)
      results[i] = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, ctx->outs[i].dtype),
                                             ctx->outs[i].dims, ctx->outs[i].ndim);
  }
  if (train && hr) {
    /* running = momentum * batch + (1 - momentum) * running, with the
     * unbiased variance (count - 1; inf/NaN for a single value, as CPU) */
    tpj_hlo_value_t m = tpj_norm_like(b, momentum, mean);
    tpj_hlo_value_t keep = SUB(tpj_norm_like(b, tpj_hlo_emit_one(b, cd), mean), m);
    tpj_hlo_value_t unbiased = DIV(tpj_norm_scale(b, var, (double)count),
                                   tpj_norm_like(b, tpj_hlo_emit_const_f64(b, cd, (double)(count - 1)), var));
    tpj_hlo_value_t rmc = tpj_hlo_emit_convert(b, tpj_hlo_emit_reshape(b, rm, &c, 1), cd);
    tpj_hlo_value_t rvc = tpj_hlo_emit_convert(b, tpj_hlo_emit_reshape(b, rv, &c, 1), cd);
    results[3] = tpj_bn_out(b, ADD(MUL(m, mean), MUL(keep, rmc)), &ctx->outs[3]);
    results[4] = tpj_bn_out(b, ADD(MUL(m, unbiased), MUL(keep, rvc)), &ctx->outs[4]);
  }
}

/* attrs: tpj_attrs_batch_norm_backward_t.
 * in: grad_out, x, [weight], mean, var_or_invstd, eps. Training passes the
 * saved mean and invstd; eval passes running_mean and running_var (invstd
 * is then 1/sqrt(var + eps)). outs: the masked-in grads in order. */
void tpj_lower_batch_norm_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_attrs_batch_norm_backward_t* at = TPJ_ATTRS(ctx, tpj_attrs_batch_norm_backward_t);
  if (ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_batch_norm_backward_t) ||
      ctx->nin < 5 + (at->has_weight != 0) || ctx->in[1].ndim < 2) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "native_batch_norm_backward: bad operands"));
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)at->compute;
  int train = (int)at->training, hw = (int)at->has_weight;
  tpj_hlo_value_t g = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[1], cd);
  int next = 2;
  tpj_hlo_value_t w = hw ? ctx->in[next++] : kNone;
  int64_t c = x.dims[1];
  tpj_hlo_value_t mean = tpj_hlo_emit_convert(b, tpj_hlo_emit_reshape(b, ctx->in[next++], &c, 1), cd);
  tpj_hlo_value_t invstd = tpj_hlo_emit_convert(b, tpj_hlo_emit_reshape(b, ctx->in[next++], &c, 1), cd);
  if (!train) {
    tpj_hlo_value_t eps = tpj_hlo_emit_convert(b, ctx->in[next], cd);
    invstd = tpj_hlo_emit_unary(b, "stablehlo.rsqrt", ADD(invstd, tpj_norm_like(b, eps, invstd)));
  }
  int64_t count = tpj_bn_count(&x);
  tpj_hlo_value_t is = tpj_bn_chan(b, invstd, &x);
  tpj_hlo_value_t xhat = MUL(SUB(x, tpj_bn_chan(b, mean, &x)), is);
  tpj_hlo_value_t sum_g = tpj_bn_sum(b, g);
  tpj_hlo_value_t sum_gx = tpj_bn_sum(b, MUL(g, xhat));
  int out = 0;
  if (at->mask[0]) {
    tpj_hlo_value_t scale = hw ? MUL(is, tpj_bn_chan(b, w, &x)) : is;
    tpj_hlo_value_t gi;
    if (train) {
      /* (g - mean(g) - xhat * mean(g * xhat)) * invstd * w */
      tpj_hlo_value_t mg = tpj_bn_chan(b, tpj_norm_scale(b, sum_g, 1.0 / (double)count), &x);
      tpj_hlo_value_t mgx = tpj_bn_chan(b, tpj_norm_scale(b, sum_gx, 1.0 / (double)count), &x);
      gi = MUL(SUB(SUB(g, mg), MUL(xhat, mgx)), scale);
    } else {
      gi = MUL(g, scale);
    }
    results[out] = tpj_hlo_emit_convert(b, gi, ctx->outs[out].dtype);
    out++;
  }
  if (at->mask[1]) {
    results[out] = tpj_bn_out(b, sum_gx, &ctx->outs[out]);
    out++;
  }
  if (at->mask[2]) {
    results[out] = tpj_bn_out(b, sum_g, &ctx->outs[out]);
    out++;
  }
}

/* ---- group norm ----------------------------------------------------------
 * x is (N, C, *) seen as (N, G, C/G * HxW) for the statistics and as
 * (N, C, HxW) for the per-channel affine. attrs: tpj_attrs_group_norm_t,
 * tpj_attrs_group_norm_backward_t. */

typedef struct {
  int64_t n, c, hw, g, d;   /* d = C/G * HxW */
  int64_t ncs[3];           /* (N, C, HxW) */
  int64_t ngd[3];           /* (N, G, D) */
} tpj_gn_t;

static int tpj_gn_dims(tpj_op_ctx_t* ctx, int64_t n, int64_t c, int64_t hxw, int64_t group,
                       tpj_gn_t* s) {
  s->n = n;
  s->c = c;
  s->hw = hxw;
  s->g = group;
  if (s->g <= 0 || s->c % s->g != 0) {
    tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "native_group_norm: bad groups"));
    return 0;
  }
  s->d = s->c / s->g * s->hw;
  s->ncs[0] = s->n, s->ncs[1] = s->c, s->ncs[2] = s->hw;
  s->ngd[0] = s->n, s->ngd[1] = s->g, s->ngd[2] = s->d;
  return 1;
}

/* (C,) -> (N, G, D) through (N, C, HxW) */
static tpj_hlo_value_t tpj_gn_chan(tpj_hlo_builder_t* b, tpj_hlo_value_t v, const tpj_gn_t* s,
                                   tpj_dtype_t cd) {
  int64_t one = 1;
  v = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, v, cd), &s->c, 1);
  v = tpj_hlo_emit_broadcast_in_dim(b, v, s->ncs, 3, &one);
  return tpj_hlo_emit_reshape(b, v, s->ngd, 3);
}

/* (N, G) -> (N, G, D) */
static tpj_hlo_value_t tpj_gn_stat(tpj_hlo_builder_t* b, tpj_hlo_value_t v, const tpj_gn_t* s) {
  int64_t bd[2] = {0, 1};
  return tpj_hlo_emit_broadcast_in_dim(b, v, s->ngd, 3, bd);
}

/* in: x, [weight], [bias], eps.
 * outs: y, mean (N, G), rstd (N, G). */
void tpj_lower_group_norm(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_gn_t s;
  const tpj_attrs_group_norm_t* at = TPJ_ATTRS(ctx, tpj_attrs_group_norm_t);
  if (ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_group_norm_t) || ctx->nouts < 3 ||
      ctx->nin < 2 + (at->has_weight != 0) + (at->has_bias != 0) ||
      !tpj_gn_dims(ctx, at->n, at->c, at->hxw, at->group, &s)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "native_group_norm: bad operands"));
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)at->compute;
  int hw = (int)at->has_weight, hb = (int)at->has_bias;
  tpj_hlo_value_t x = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, ctx->in[0], cd), s.ngd, 3);
  int next = 1;
  tpj_hlo_value_t w = hw ? ctx->in[next++] : kNone;
  tpj_hlo_value_t bias = hb ? ctx->in[next++] : kNone;
  tpj_hlo_value_t eps = tpj_hlo_emit_convert(b, ctx->in[next], cd);
  int64_t two = 2;
  double inv = s.d > 0 ? 1.0 / (double)s.d : 0.0;
  tpj_hlo_value_t mean = tpj_norm_scale(b, tpj_norm_sum(b, x, &two, 1), inv);
  tpj_hlo_value_t xc = SUB(x, tpj_gn_stat(b, mean, &s));
  tpj_hlo_value_t var = tpj_norm_scale(b, tpj_norm_sum(b, MUL(xc, xc), &two, 1), inv);
  tpj_hlo_value_t rstd = tpj_hlo_emit_unary(b, "stablehlo.rsqrt", ADD(var, tpj_norm_like(b, eps, var)));
  tpj_hlo_value_t y = MUL(xc, tpj_gn_stat(b, rstd, &s));
  if (hw) y = MUL(y, tpj_gn_chan(b, w, &s, cd));
  if (hb) y = ADD(y, tpj_gn_chan(b, bias, &s, cd));
  const tpj_rt_shape_t* o = &ctx->outs[0];
  results[0] = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, y, o->dtype), o->dims, o->ndim);
  results[1] = tpj_bn_out(b, mean, &ctx->outs[1]);
  results[2] = tpj_bn_out(b, rstd, &ctx->outs[2]);
}

/* in: grad_out, x, mean, rstd, [weight].
 * outs: the masked-in grads in order. */
void tpj_lower_group_norm_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_gn_t s;
  const tpj_attrs_group_norm_backward_t* at = TPJ_ATTRS(ctx, tpj_attrs_group_norm_backward_t);
  if (ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_group_norm_backward_t) ||
      ctx->nin < 4 + (at->has_weight != 0) ||
      !tpj_gn_dims(ctx, at->n, at->c, at->hxw, at->group, &s)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "native_group_norm_backward: bad operands"));
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)at->compute;
  int hw = (int)at->has_weight;
  tpj_hlo_value_t g = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, ctx->in[0], cd), s.ngd, 3);
  tpj_hlo_value_t x = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, ctx->in[1], cd), s.ngd, 3);
  int64_t ng[2] = {s.n, s.g};
  tpj_hlo_value_t mean = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, ctx->in[2], cd), ng, 2);
  tpj_hlo_value_t rstd = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, ctx->in[3], cd), ng, 2);
  tpj_hlo_value_t rs = tpj_gn_stat(b, rstd, &s);
  tpj_hlo_value_t xhat = MUL(SUB(x, tpj_gn_stat(b, mean, &s)), rs);
  int out = 0;
  int64_t two = 2;
  double inv = s.d > 0 ? 1.0 / (double)s.d : 0.0;
  if (at->mask[0]) {
    tpj_hlo_value_t gw = hw ? MUL(g, tpj_gn_chan(b, ctx->in[4], &s, cd)) : g;
    /* rstd * (gw - mean(gw) - xhat * mean(gw * xhat)) over each group */
    tpj_hlo_value_t mg = tpj_gn_stat(b, tpj_norm_scale(b, tpj_norm_sum(b, gw, &two, 1), inv), &s);
    tpj_hlo_value_t mgx =
        tpj_gn_stat(b, tpj_norm_scale(b, tpj_norm_sum(b, MUL(gw, xhat), &two, 1), inv), &s);
    tpj_hlo_value_t gi = MUL(rs, SUB(SUB(gw, mg), MUL(xhat, mgx)));
    const tpj_rt_shape_t* o = &ctx->outs[out];
    results[out++] = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, gi, o->dtype), o->dims, o->ndim);
  }
  /* per-channel sums over N and HxW, in the (N, C, HxW) view */
  int64_t red[2] = {0, 2};
  for (int k = 0; k < 2; ++k) {
    if (!at->mask[1 + k]) continue;
    tpj_hlo_value_t v = k == 0 ? MUL(g, xhat) : g;
    v = tpj_norm_sum(b, tpj_hlo_emit_reshape(b, v, s.ncs, 3), red, 2);
    results[out] = tpj_bn_out(b, v, &ctx->outs[out]);
    out++;
  }
}

#define TPJ_MUL(x, y) tpj_hlo_emit_binary(b, "stablehlo.multiply", x, y)
#define TPJ_ADD(x, y) tpj_hlo_emit_binary(b, "stablehlo.add", x, y)
#define TPJ_SUB(x, y) tpj_hlo_emit_binary(b, "stablehlo.subtract", x, y)

/* ---- layer norm ---------------------------------------------------------
 * forward: attrs tpj_attrs_layer_norm_t; in[0] x, [weight], [bias], then eps
 * (0-d); outs: y, mean, rstd.
 * backward: attrs tpj_attrs_layer_norm_backward_t; in[0] grad_out, in[1] x,
 * in[2] mean, in[3] rstd, [weight]; outs: the masked-in grads in order. */

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
  const tpj_attrs_layer_norm_t* at = TPJ_ATTRS(ctx, tpj_attrs_layer_norm_t);
  if (ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_layer_norm_t) || ctx->nouts < 3 ||
      ctx->nin < 2 + (at->has_weight != 0) + (at->has_bias != 0)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "native_layer_norm: bad operands"));
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)at->compute;
  int64_t axis = at->axis;
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  int next = 1;
  tpj_hlo_value_t w = {-1, 0, TPJ_DTYPE_INVALID, 0, {0}}, bias = w;
  if (at->has_weight) w = ctx->in[next++];
  if (at->has_bias) bias = ctx->in[next++];
  tpj_hlo_value_t eps = tpj_hlo_emit_convert(b, ctx->in[next], cd);
  int64_t axes[TPJ_MAX_DIMS];
  int n = tpj_ln_axes(&x, axis, axes);
  int64_t count = 1;
  for (int i = 0; i < n; ++i) count *= x.dims[axes[i]];
  if (count == 0) {
    /* a zero-size normalized shape: y is empty; CPU's moments of no
     * elements are mean 0 and variance 0/0, so rstd NaN */
    for (int k = 0; k < 3; ++k) {
      const tpj_rt_shape_t* o = &ctx->outs[k];
      double v = k == 2 ? NAN : 0.0;
      results[k] = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_f64(b, o->dtype, v), o->dims, o->ndim);
    }
    return;
  }
  tpj_hlo_value_t mean = tpj_ln_mean(b, x, axes, n);
  tpj_hlo_value_t xc = TPJ_SUB(x, mean);
  tpj_hlo_value_t var = tpj_ln_mean(b, TPJ_MUL(xc, xc), axes, n);
  tpj_hlo_value_t rstd = tpj_hlo_emit_unary(
      b, "stablehlo.rsqrt", TPJ_ADD(var, tpj_hlo_emit_broadcast_to(b, eps, var.dims, var.ndim)));
  tpj_hlo_value_t y = TPJ_MUL(xc, rstd);
  if (at->has_weight) y = TPJ_MUL(y, tpj_ops_cast_to(b, w, cd, x.dims, x.ndim));
  if (at->has_bias) y = TPJ_ADD(y, tpj_ops_cast_to(b, bias, cd, x.dims, x.ndim));
  results[0] = tpj_hlo_emit_convert(b, y, ctx->outs[0].dtype);
  results[1] = tpj_ln_stat(b, mean, &ctx->outs[1], axis);
  results[2] = tpj_ln_stat(b, rstd, &ctx->outs[2], axis);
}

void tpj_lower_layer_norm_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_attrs_layer_norm_backward_t* at = TPJ_ATTRS(ctx, tpj_attrs_layer_norm_backward_t);
  if (ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_layer_norm_backward_t) ||
      ctx->nin < 4 + (at->has_weight != 0)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "native_layer_norm_backward: bad operands"));
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)at->compute;
  int64_t axis = at->axis;
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[1], cd);
  tpj_hlo_value_t go = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  tpj_hlo_value_t mean = tpj_ops_cast_to(b, ctx->in[2], cd, x.dims, x.ndim);
  tpj_hlo_value_t rstd = tpj_ops_cast_to(b, ctx->in[3], cd, x.dims, x.ndim);
  tpj_hlo_value_t xhat = TPJ_MUL(TPJ_SUB(x, mean), rstd);
  int64_t axes[TPJ_MAX_DIMS], batch[TPJ_MAX_DIMS];
  int n = tpj_ln_axes(&x, axis, axes);
  for (int64_t i = 0; i < axis; ++i) batch[i] = i;
  int out = 0;
  if (at->mask[0]) {
    tpj_hlo_value_t g = go;
    if (at->has_weight) g = TPJ_MUL(g, tpj_ops_cast_to(b, ctx->in[4], cd, x.dims, x.ndim));
    /* rstd * (g - mean(g) - xhat * mean(g * xhat)) */
    tpj_hlo_value_t gi = TPJ_MUL(rstd, TPJ_SUB(TPJ_SUB(g, tpj_ln_mean(b, g, axes, n)),
                                               TPJ_MUL(xhat, tpj_ln_mean(b, TPJ_MUL(g, xhat), axes, n))));
    results[out] = tpj_hlo_emit_convert(b, gi, ctx->outs[out].dtype);
    out++;
  }
  for (int k = 0; k < 2; ++k) {
    if (!at->mask[1 + k]) continue;
    tpj_hlo_value_t v = k == 0 ? TPJ_MUL(go, xhat) : go;
    v = tpj_hlo_emit_reduce(b, v, tpj_hlo_emit_zero(b, cd), batch, (int)axis, "stablehlo.add");
    results[out] = tpj_hlo_emit_convert(b, tpj_hlo_emit_reshape(b, v, ctx->outs[out].dims,
                                                                 ctx->outs[out].ndim),
                                        ctx->outs[out].dtype);
    out++;
  }
}
