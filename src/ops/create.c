/* ops/create: tensor creation and shape ops: arange, linspace, tril/triu,
 * flip, roll, constant/reflection/replication padding. Each writes a whole
 * fresh output whose shape PyTorch computed (ctx->outs[0]). */
#include "ops/ops.h"

static int tpj_create_need(tpj_op_ctx_t* ctx, int nin, int nattrs, const char* op) {
  if (ctx->nin >= nin && ctx->nattrs >= nattrs && ctx->nouts >= 1) return 1;
  tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "%s: bad operands", op));
  return 0;
}

static tpj_hlo_value_t tpj_create_scalar(tpj_op_ctx_t* ctx, int i, tpj_dtype_t dt) {
  const tpj_rt_shape_t* o = &ctx->outs[0];
  return tpj_ops_cast_to(ctx->b, ctx->in[i], dt, o->dims, o->ndim);
}

/* arange: in[0] start, in[1] step (0-d); attrs[0] the dtype the values are
 * computed in (CPU's accumulate type: double for float32, float for half
 * types, int64 for integers). out[i] = start + step * i. */
void tpj_lower_arange(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_create_need(ctx, 2, 1, "arange")) return;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[0];
  tpj_hlo_value_t i = tpj_hlo_emit_iota(b, cd, o->dims, o->ndim, 0);
  tpj_hlo_value_t r = tpj_hlo_emit_binary(
      b, "stablehlo.add", tpj_create_scalar(ctx, 0, cd),
      tpj_hlo_emit_binary(b, "stablehlo.multiply", tpj_create_scalar(ctx, 1, cd), i));
  results[0] = tpj_hlo_emit_convert(b, r, o->dtype);
}

/* linspace: in[0] start, in[1] end (0-d, already in the output's dtype, as
 * CPU converts them first); attrs[0] the step's dtype (double for integer
 * outputs). Like CPU, the first half counts up from start and the second
 * half down from end, so both ends are exact. */
void tpj_lower_linspace(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_create_need(ctx, 2, 1, "linspace")) return;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[0];
  int64_t steps = o->dims[0];
  tpj_hlo_value_t s = tpj_create_scalar(ctx, 0, cd), e = tpj_create_scalar(ctx, 1, cd);
  if (steps == 1) {
    results[0] = tpj_hlo_emit_convert(b, s, o->dtype);
    return;
  }
  tpj_hlo_value_t n1 = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_f64(b, cd, (double)(steps - 1)),
                                                 o->dims, o->ndim);
  tpj_hlo_value_t step = tpj_hlo_emit_binary(b, "stablehlo.divide",
                                             tpj_hlo_emit_binary(b, "stablehlo.subtract", e, s), n1);
  tpj_hlo_value_t i = tpj_hlo_emit_iota(b, cd, o->dims, o->ndim, 0);
  tpj_hlo_value_t up = tpj_hlo_emit_binary(b, "stablehlo.add", s,
                                           tpj_hlo_emit_binary(b, "stablehlo.multiply", step, i));
  tpj_hlo_value_t down = tpj_hlo_emit_binary(
      b, "stablehlo.subtract", e,
      tpj_hlo_emit_binary(b, "stablehlo.multiply", step,
                          tpj_hlo_emit_binary(b, "stablehlo.subtract", n1, i)));
  tpj_hlo_value_t ii = tpj_hlo_emit_iota(b, TPJ_I64, o->dims, o->ndim, 0);
  tpj_hlo_value_t half = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, steps / 2), o->dims,
                                                   o->ndim);
  tpj_hlo_value_t r = tpj_hlo_emit_select(b, tpj_hlo_emit_compare(b, ii, half, "LT"), up, down);
  results[0] = tpj_hlo_emit_convert(b, r, o->dtype);
}

/* tril / triu over the last two dims: attrs[0] is the diagonal. Keeps
 * col - row <= k (tril) or >= k (triu), zero elsewhere. */
static void tpj_create_tri(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, int upper) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_create_need(ctx, 1, 1, "tril/triu")) return;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t x = tpj_create_scalar(ctx, 0, o->dtype);
  if (o->ndim < 2) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "tril/triu needs 2 or more dims"));
    return;
  }
  tpj_hlo_value_t row = tpj_hlo_emit_iota(b, TPJ_I64, o->dims, o->ndim, o->ndim - 2);
  tpj_hlo_value_t col = tpj_hlo_emit_iota(b, TPJ_I64, o->dims, o->ndim, o->ndim - 1);
  tpj_hlo_value_t k = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, ctx->attrs[0]),
                                                o->dims, o->ndim);
  tpj_hlo_value_t d = tpj_hlo_emit_binary(b, "stablehlo.subtract", col, row);
  tpj_hlo_value_t keep = tpj_hlo_emit_compare(b, d, k, upper ? "GE" : "LE");
  tpj_hlo_value_t z = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, o->dtype), o->dims, o->ndim);
  results[0] = tpj_hlo_emit_select(b, keep, x, z);
}

void tpj_lower_tril(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) { tpj_create_tri(ctx, r, 0); }
void tpj_lower_triu(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) { tpj_create_tri(ctx, r, 1); }

/* flip: attrs are the (wrapped, distinct) dims to reverse. */
void tpj_lower_flip(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_create_need(ctx, 1, 0, "flip")) return;
  tpj_hlo_value_t x = tpj_create_scalar(ctx, 0, ctx->outs[0].dtype);
  results[0] = tpj_hlo_emit_reverse(ctx->b, x, ctx->attrs, ctx->nattrs);
}

/* x rolled by s (0 <= s < n) along dim: the last s entries move to the front */
static tpj_hlo_value_t tpj_create_roll1(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int64_t s, int d) {
  int64_t n = x.dims[d];
  if (n == 0 || s == 0) return x;
  int64_t start[TPJ_MAX_DIMS] = {0}, limit[TPJ_MAX_DIMS], strides[TPJ_MAX_DIMS];
  for (int i = 0; i < x.ndim; ++i) {
    limit[i] = x.dims[i];
    strides[i] = 1;
  }
  tpj_hlo_value_t parts[2];
  start[d] = n - s;
  parts[0] = tpj_hlo_emit_slice(b, x, start, limit, strides);
  start[d] = 0;
  limit[d] = n - s;
  parts[1] = tpj_hlo_emit_slice(b, x, start, limit, strides);
  return tpj_hlo_emit_concatenate(b, parts, 2, d);
}

/* roll: attrs[0] = n; then n shifts and n (wrapped) dims. n == 0 rolls the
 * flattened tensor by attrs[1]. */
void tpj_lower_roll(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_create_need(ctx, 1, 1, "roll")) return;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  int64_t n = ctx->attrs[0];
  if (ctx->nattrs < 1 + (n == 0 ? 1 : 2 * n)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "roll: bad attrs"));
    return;
  }
  tpj_hlo_value_t x = tpj_create_scalar(ctx, 0, o->dtype);
  if (n == 0) {
    int64_t numel = 1;
    for (int i = 0; i < o->ndim; ++i) numel *= o->dims[i];
    tpj_hlo_value_t flat = tpj_hlo_emit_reshape(b, x, &numel, 1);
    int64_t s = numel ? ((ctx->attrs[1] % numel) + numel) % numel : 0;
    results[0] = tpj_hlo_emit_reshape(b, tpj_create_roll1(b, flat, s, 0), o->dims, o->ndim);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    int d = (int)ctx->attrs[1 + n + i];
    int64_t len = o->dims[d];
    int64_t s = len ? ((ctx->attrs[1 + i] % len) + len) % len : 0;
    x = tpj_create_roll1(b, x, s, d);
  }
  results[0] = x;
}

/* constant_pad_nd: in[1] is the 0-d fill value; attrs are PyTorch's pads
 * (pairs for the last dim first; negative pads crop). */
void tpj_lower_constant_pad_nd(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_create_need(ctx, 2, 0, "constant_pad_nd")) return;
  tpj_dtype_t dt = ctx->outs[0].dtype;
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], dt);
  tpj_hlo_value_t v = tpj_hlo_emit_convert(b, ctx->in[1], dt);
  int64_t lo[TPJ_MAX_DIMS] = {0}, hi[TPJ_MAX_DIMS] = {0};
  for (int i = 0; i + 1 < ctx->nattrs && i / 2 < x.ndim; i += 2) {
    int d = x.ndim - 1 - i / 2;
    lo[d] = ctx->attrs[i];
    hi[d] = ctx->attrs[i + 1];
  }
  results[0] = tpj_hlo_emit_pad(b, x, v, lo, hi);
}

/* one padded side of dim d for reflect (mirror without the edge) or
 * replicate (the edge repeated) */
static tpj_hlo_value_t tpj_create_edge(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int d, int64_t p,
                                       int front, int reflect) {
  int64_t n = x.dims[d];
  int64_t start[TPJ_MAX_DIMS] = {0}, limit[TPJ_MAX_DIMS], strides[TPJ_MAX_DIMS];
  for (int i = 0; i < x.ndim; ++i) {
    limit[i] = x.dims[i];
    strides[i] = 1;
  }
  if (reflect) {
    start[d] = front ? 1 : n - 1 - p;
    limit[d] = front ? p + 1 : n - 1;
    int64_t dd = d;
    return tpj_hlo_emit_reverse(b, tpj_hlo_emit_slice(b, x, start, limit, strides), &dd, 1);
  }
  start[d] = front ? 0 : n - 1;
  limit[d] = front ? 1 : n;
  tpj_hlo_value_t edge = tpj_hlo_emit_slice(b, x, start, limit, strides);
  int64_t dims[TPJ_MAX_DIMS];
  for (int i = 0; i < x.ndim; ++i) dims[i] = i == d ? p : x.dims[i];
  return tpj_hlo_emit_broadcast_to(b, edge, dims, x.ndim);
}

/* reflection_pad / replication_pad (1d, 2d, 3d): attrs[0] is 1 for
 * reflect; then PyTorch's pads (last dim first), checked by the glue against
 * the input's sizes. A negative pad crops that side (out[o] = x[edge(o - lo)]),
 * so both edges come from the uncropped input and only the middle is cropped. */
void tpj_lower_edge_pad(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_create_need(ctx, 1, 1, "pad")) return;
  int reflect = ctx->attrs[0] != 0;
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], ctx->outs[0].dtype);
  for (int i = 1; i + 1 < ctx->nattrs && (i - 1) / 2 < x.ndim; i += 2) {
    int d = x.ndim - 1 - (i - 1) / 2;
    int64_t plo = ctx->attrs[i], phi = ctx->attrs[i + 1];
    tpj_hlo_value_t parts[3];
    int np = 0;
    if (plo > 0) parts[np++] = tpj_create_edge(b, x, d, plo, 1, reflect);
    tpj_hlo_value_t mid = x;
    if (plo < 0 || phi < 0) {
      int64_t start[TPJ_MAX_DIMS] = {0}, limit[TPJ_MAX_DIMS], strides[TPJ_MAX_DIMS];
      for (int k = 0; k < x.ndim; ++k) {
        limit[k] = x.dims[k];
        strides[k] = 1;
      }
      start[d] = plo < 0 ? -plo : 0;
      limit[d] = x.dims[d] + (phi < 0 ? phi : 0);
      if (limit[d] < start[d]) limit[d] = start[d];
      mid = tpj_hlo_emit_slice(b, x, start, limit, strides);
    }
    if (mid.dims[d] > 0 || np == 0) parts[np++] = mid;
    if (phi > 0) parts[np++] = tpj_create_edge(b, x, d, phi, 0, reflect);
    if (np > 1) x = tpj_hlo_emit_concatenate(b, parts, np, d);
    else x = parts[0];
  }
  results[0] = x;
}

/* eye: ones where row == col, in the output's dtype. */
void tpj_lower_eye(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_create_need(ctx, 0, 0, "eye")) return;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t row = tpj_hlo_emit_iota(b, TPJ_I64, o->dims, o->ndim, 0);
  tpj_hlo_value_t col = tpj_hlo_emit_iota(b, TPJ_I64, o->dims, o->ndim, 1);
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_compare(b, row, col, "EQ"), o->dtype);
}
