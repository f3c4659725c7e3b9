/* ops/nn2: nn.functional ops that had no lowering: nll_loss2d (via the 2-D
 * nll_loss lowering), the backward of the reflection and replication pads,
 * logit, hardshrink, softshrink, threshold (each with its backward where
 * autograd needs one) and channel_shuffle. Half inputs compute in float32
 * (attrs[0] is the compute dtype where an op takes one), as CPU's kernels
 * do. */
#include <math.h>

#include "ops/ops.h"

#define TPJ_MUL(x, y) tpj_hlo_emit_binary(b, "stablehlo.multiply", x, y)
#define TPJ_ADD(x, y) tpj_hlo_emit_binary(b, "stablehlo.add", x, y)
#define TPJ_SUB(x, y) tpj_hlo_emit_binary(b, "stablehlo.subtract", x, y)

static int tpj_nn2_bad(tpj_op_ctx_t* ctx, const char* op) {
  tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "%s: bad operands", op));
  return 0;
}

/* s (0-d) broadcast like v */
static tpj_hlo_value_t tpj_nn2_full(tpj_hlo_builder_t* b, tpj_hlo_value_t s, const tpj_hlo_value_t* v) {
  return tpj_hlo_emit_broadcast_to(b, s, v->dims, v->ndim);
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
    tpj_nn2_bad(ctx, "nll_loss2d_forward");
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
    tpj_nn2_bad(ctx, "nll_loss2d_backward");
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

/* ---- reflection / replication pad backward --------------------------------
 * in[0] grad_output; attrs[0] 1 for reflect, attrs[1] compute dtype, then
 * PyTorch's pads (last dim first). The transpose of tpj_lower_edge_pad, one
 * dim at a time: the middle of the gradient goes back to the (possibly
 * cropped) input, each padded side is mirrored (reflect) or summed into the
 * edge element (replicate) and added where the forward read it. */

static tpj_hlo_value_t tpj_pad_slice(tpj_hlo_builder_t* b, tpj_hlo_value_t g, int d, int64_t lo,
                                     int64_t hi) {
  int64_t start[TPJ_MAX_DIMS] = {0}, limit[TPJ_MAX_DIMS], strides[TPJ_MAX_DIMS];
  for (int i = 0; i < g.ndim; ++i) {
    limit[i] = g.dims[i];
    strides[i] = 1;
  }
  start[d] = lo;
  limit[d] = hi;
  return tpj_hlo_emit_slice(b, g, start, limit, strides);
}

/* v zero-padded along d by lo in front and hi behind */
static tpj_hlo_value_t tpj_pad_place(tpj_hlo_builder_t* b, tpj_hlo_value_t v, int d, int64_t lo,
                                     int64_t hi) {
  int64_t l[TPJ_MAX_DIMS] = {0}, h[TPJ_MAX_DIMS] = {0};
  l[d] = lo;
  h[d] = hi;
  return tpj_hlo_emit_pad(b, v, tpj_hlo_emit_zero(b, v.dtype), l, h);
}

/* the gradient of one padded side (p > 0) of dim d, as an input-sized tensor */
static tpj_hlo_value_t tpj_pad_edge_grad(tpj_hlo_builder_t* b, tpj_hlo_value_t g, int d, int64_t n,
                                         int64_t p, int front, int reflect) {
  int64_t o = g.dims[d];
  tpj_hlo_value_t s = front ? tpj_pad_slice(b, g, d, 0, p) : tpj_pad_slice(b, g, d, o - p, o);
  if (reflect) {
    int64_t dd = d;
    s = tpj_hlo_emit_reverse(b, s, &dd, 1);
    return front ? tpj_pad_place(b, s, d, 1, n - 1 - p) : tpj_pad_place(b, s, d, n - 1 - p, 1);
  }
  int64_t dd = d, kd[TPJ_MAX_DIMS];
  tpj_hlo_value_t r = tpj_hlo_emit_reduce(b, s, tpj_hlo_emit_zero(b, s.dtype), &dd, 1, "stablehlo.add");
  for (int i = 0; i < g.ndim; ++i) kd[i] = i == d ? 1 : g.dims[i];
  r = tpj_hlo_emit_reshape(b, r, kd, g.ndim);
  return front ? tpj_pad_place(b, r, d, 0, n - 1) : tpj_pad_place(b, r, d, n - 1, 0);
}

void tpj_lower_edge_pad_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nin < 1 || ctx->nattrs < 2 || ctx->nouts < 1 || ctx->in[0].ndim != o->ndim) {
    tpj_nn2_bad(ctx, "pad_backward");
    return;
  }
  int reflect = ctx->attrs[0] != 0;
  tpj_hlo_value_t g = tpj_hlo_emit_convert(b, ctx->in[0], (tpj_dtype_t)ctx->attrs[1]);
  for (int i = 2; i + 1 < ctx->nattrs && (i - 2) / 2 < g.ndim; i += 2) {
    int d = g.ndim - 1 - (i - 2) / 2;
    int64_t plo = ctx->attrs[i], phi = ctx->attrs[i + 1], n = o->dims[d];
    int64_t start = plo < 0 ? -plo : 0, end = n + (phi < 0 ? phi : 0);
    if (end < start) end = start;
    int64_t gs = plo > 0 ? plo : 0;
    tpj_hlo_value_t r = tpj_pad_place(b, tpj_pad_slice(b, g, d, gs, gs + end - start), d, start,
                                      n - end);
    if (plo > 0) r = TPJ_ADD(r, tpj_pad_edge_grad(b, g, d, n, plo, 1, reflect));
    if (phi > 0) r = TPJ_ADD(r, tpj_pad_edge_grad(b, g, d, n, phi, 0, reflect));
    g = r;
  }
  results[0] = tpj_hlo_emit_convert(b, g, o->dtype);
}

/* ---- pointwise --------------------------------------------------------------
 * Runtime scalars come rounded the way CPU's kernel reads them (the glue
 * says which: the input's dtype for logit, hardshrink and the shrink
 * backward, the compute dtype for softshrink and threshold), then widen to
 * the compute dtype here. */

/* 1 - eps, rounded to the tensor's dtype as CPU's kernels compute it */
static tpj_hlo_value_t tpj_logit_hi(tpj_hlo_builder_t* b, tpj_hlo_value_t one, tpj_hlo_value_t lo,
                                    tpj_dtype_t dt) {
  tpj_hlo_value_t hi = TPJ_SUB(one, lo);
  return tpj_hlo_emit_convert(b, tpj_hlo_emit_convert(b, hi, dt), hi.dtype);
}

/* logit: in[0] x, [in[1] eps]; attrs[0] compute dtype, attrs[1] has eps.
 * With eps, x is clamped to [eps, 1 - eps] first (NaN stays NaN). */
void tpj_lower_logit(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (ctx->nin < 1 || ctx->nattrs < 2 || (ctx->attrs[1] && ctx->nin < 2)) {
    tpj_nn2_bad(ctx, "logit");
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[0];
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  tpj_hlo_value_t one = tpj_nn2_full(b, tpj_hlo_emit_one(b, cd), &x);
  if (ctx->attrs[1]) {
    tpj_hlo_value_t lo = tpj_nn2_full(b, tpj_hlo_emit_convert(b, ctx->in[1], cd), &x);
    tpj_hlo_value_t hi = tpj_logit_hi(b, one, lo, ctx->outs[0].dtype);
    x = tpj_hlo_emit_select(b, tpj_hlo_emit_compare(b, x, lo, "LT"), lo, x);
    x = tpj_hlo_emit_select(b, tpj_hlo_emit_compare(b, x, hi, "GT"), hi, x);
  }
  tpj_hlo_value_t r = tpj_hlo_emit_unary(
      b, "stablehlo.log", tpj_hlo_emit_binary(b, "stablehlo.divide", x, TPJ_SUB(one, x)));
  results[0] = tpj_hlo_emit_convert(b, r, ctx->outs[0].dtype);
}

/* logit_backward: in[0] grad, in[1] x, [in[2] eps]; attrs as logit.
 * g / (x (1 - x)); outside [0, 1] NaN without eps, outside [eps, 1 - eps] 0
 * with it (the clamp's gradient). */
void tpj_lower_logit_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nin < 2 || ctx->nattrs < 2 || (ctx->attrs[1] && ctx->nin < 3)) {
    tpj_nn2_bad(ctx, "logit_backward");
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[0];
  tpj_hlo_value_t g = tpj_ops_cast_to(b, ctx->in[0], cd, o->dims, o->ndim);
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[1], cd, o->dims, o->ndim);
  tpj_hlo_value_t one = tpj_nn2_full(b, tpj_hlo_emit_one(b, cd), &x);
  tpj_hlo_value_t lo, hi, fill;
  if (ctx->attrs[1]) {
    lo = tpj_nn2_full(b, tpj_hlo_emit_convert(b, ctx->in[2], cd), &x);
    hi = tpj_logit_hi(b, one, lo, o->dtype);
    fill = tpj_nn2_full(b, tpj_hlo_emit_zero(b, cd), &x);
  } else {
    lo = tpj_nn2_full(b, tpj_hlo_emit_zero(b, cd), &x);
    hi = one;
    fill = tpj_nn2_full(b, tpj_hlo_emit_const_f64(b, cd, NAN), &x);
  }
  tpj_hlo_value_t out = tpj_hlo_emit_binary(b, "stablehlo.or", tpj_hlo_emit_compare(b, x, lo, "LT"),
                                            tpj_hlo_emit_compare(b, x, hi, "GT"));
  tpj_hlo_value_t r = tpj_hlo_emit_binary(b, "stablehlo.divide", g, TPJ_MUL(x, TPJ_SUB(one, x)));
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_select(b, out, fill, r), o->dtype);
}

/* |x| <= lambd as CPU tests it: x >= -lambd && x <= lambd (false for NaN) */
static tpj_hlo_value_t tpj_shrink_inside(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t l) {
  tpj_hlo_value_t nl = tpj_hlo_emit_unary(b, "stablehlo.negate", l);
  return tpj_hlo_emit_binary(b, "stablehlo.and", tpj_hlo_emit_compare(b, x, nl, "GE"),
                             tpj_hlo_emit_compare(b, x, l, "LE"));
}

/* hardshrink: in[0] x, in[1] lambd; attrs[0] compute dtype. 0 inside. */
void tpj_lower_hardshrink(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (ctx->nin < 2 || ctx->nattrs < 1) {
    tpj_nn2_bad(ctx, "hardshrink");
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[0];
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  tpj_hlo_value_t l = tpj_nn2_full(b, tpj_hlo_emit_convert(b, ctx->in[1], cd), &x);
  tpj_hlo_value_t z = tpj_nn2_full(b, tpj_hlo_emit_zero(b, cd), &x);
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_select(b, tpj_shrink_inside(b, x, l), z, x),
                                    ctx->outs[0].dtype);
}

/* hardshrink_backward and softshrink_backward: in[0] grad, in[1] x,
 * in[2] lambd; grad where x < -lambd or x > lambd, else 0 (0 for a NaN x,
 * as CPU). */
void tpj_lower_shrink_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nin < 3 || ctx->nattrs < 1) {
    tpj_nn2_bad(ctx, "shrink_backward");
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[0];
  tpj_hlo_value_t g = tpj_ops_cast_to(b, ctx->in[0], cd, o->dims, o->ndim);
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[1], cd, o->dims, o->ndim);
  tpj_hlo_value_t l = tpj_nn2_full(b, tpj_hlo_emit_convert(b, ctx->in[2], cd), &x);
  tpj_hlo_value_t z = tpj_nn2_full(b, tpj_hlo_emit_zero(b, cd), &x);
  tpj_hlo_value_t out = tpj_hlo_emit_binary(
      b, "stablehlo.or", tpj_hlo_emit_compare(b, x, tpj_hlo_emit_unary(b, "stablehlo.negate", l), "LT"),
      tpj_hlo_emit_compare(b, x, l, "GT"));
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_select(b, out, g, z), o->dtype);
}

/* softshrink: in[0] x, in[1] lambd; attrs[0] compute dtype.
 * x - lambd above, x + lambd below, +0 between; NaN stays NaN (as CPU). */
void tpj_lower_softshrink(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (ctx->nin < 2 || ctx->nattrs < 1) {
    tpj_nn2_bad(ctx, "softshrink");
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[0];
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  tpj_hlo_value_t l = tpj_nn2_full(b, tpj_hlo_emit_convert(b, ctx->in[1], cd), &x);
  tpj_hlo_value_t nl = tpj_hlo_emit_unary(b, "stablehlo.negate", l);
  tpj_hlo_value_t r = tpj_hlo_emit_select(b, tpj_hlo_emit_compare(b, x, x, "NE"), x,
                                         tpj_nn2_full(b, tpj_hlo_emit_zero(b, cd), &x));
  r = tpj_hlo_emit_select(b, tpj_hlo_emit_compare(b, x, nl, "LT"), TPJ_ADD(x, l), r);
  r = tpj_hlo_emit_select(b, tpj_hlo_emit_compare(b, x, l, "GT"), TPJ_SUB(x, l), r);
  results[0] = tpj_hlo_emit_convert(b, r, ctx->outs[0].dtype);
}

/* threshold: in[0] x, in[1] threshold, in[2] value; attrs[0] compute dtype
 * (float32 for half x: CPU compares with the unrounded threshold). value
 * where x <= threshold, else x. */
void tpj_lower_threshold(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nin < 3 || ctx->nattrs < 1) {
    tpj_nn2_bad(ctx, "threshold");
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[0];
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  tpj_hlo_value_t t = tpj_nn2_full(b, tpj_hlo_emit_convert(b, ctx->in[1], cd), &x);
  tpj_hlo_value_t v = tpj_nn2_full(b, tpj_hlo_emit_convert(b, ctx->in[2], cd), &x);
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_select(b, tpj_hlo_emit_compare(b, x, t, "LE"), v, x),
                                    o->dtype);
}

/* channel_shuffle: in[0] x (N, C, *); attrs[0] groups. (N, g, C/g, *) with
 * the two group dims swapped. */
void tpj_lower_channel_shuffle(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t x = ctx->in[0];
  if (ctx->nin < 1 || ctx->nattrs < 1 || x.ndim < 2 || x.ndim + 1 > TPJ_MAX_DIMS ||
      ctx->attrs[0] < 1 || x.dims[1] % ctx->attrs[0]) {
    tpj_nn2_bad(ctx, "channel_shuffle");
    return;
  }
  int64_t g = ctx->attrs[0], d[TPJ_MAX_DIMS], perm[TPJ_MAX_DIMS];
  d[0] = x.dims[0];
  d[1] = g;
  d[2] = x.dims[1] / g;
  for (int i = 2; i < x.ndim; ++i) d[i + 1] = x.dims[i];
  for (int i = 0; i <= x.ndim; ++i) perm[i] = i;
  perm[1] = 2;
  perm[2] = 1;
  tpj_hlo_value_t r = tpj_hlo_emit_transpose(b, tpj_hlo_emit_reshape(b, x, d, x.ndim + 1), perm);
  results[0] = tpj_hlo_emit_reshape(b, r, x.dims, x.ndim);
}
