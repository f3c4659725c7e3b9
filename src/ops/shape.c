/* ops/shape: cat, channel_shuffle, tril/triu, flip, roll, and the constant,
 * reflection and replication pads with the backward of the last two. Each
 * writes a whole fresh output whose shape PyTorch computed (ctx->outs[0]).
 * cat: inputs PyTorch skips
 * (legacy 1-D empty tensors next to higher-rank ones) are skipped here too;
 * the rest are converted to the output dtype and concatenated. */
#include <math.h>

#include "hlo/sort.h"
#include "ops/attrs.h"
#include "ops/lower_util.h"
#include "ops/ops.h"

void tpj_lower_cat(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_cat_t) || ctx->nin < 1) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "cat: bad operands"));
    return;
  }
  int dim = (int)TPJ_ATTRS(ctx, tpj_attrs_cat_t)->dim;
  tpj_hlo_value_t parts[TPJ_OP_MAX_IN];
  int n = 0;
  for (int i = 0; i < ctx->nin; ++i) {
    tpj_hlo_value_t x = ctx->in[i];
    if (x.ndim != o->ndim) continue;          /* a legacy empty (0,) tensor */
    if (x.dims[dim] == 0) continue;           /* contributes nothing */
    parts[n++] = tpj_hlo_emit_convert(b, x, o->dtype);
  }
  if (n == 0) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "cat: nothing to concatenate"));
    return;
  }
  results[0] = n == 1 ? parts[0] : tpj_hlo_emit_concatenate(b, parts, n, dim);
}

/* channel_shuffle: in[0] x (N, C, *); attrs tpj_attrs_channel_shuffle_t.
 * (N, g, C/g, *) with the two group dims swapped. */
void tpj_lower_channel_shuffle(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t x = ctx->in[0];
  const tpj_attrs_channel_shuffle_t* at = TPJ_ATTRS(ctx, tpj_attrs_channel_shuffle_t);
  if (ctx->nin < 1 || ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_channel_shuffle_t) || x.ndim < 2 ||
      x.ndim + 1 > TPJ_MAX_DIMS || at->groups < 1 || x.dims[1] % at->groups) {
    tpj_ops_fail_operands(ctx, "channel_shuffle");
    return;
  }
  int64_t g = at->groups, d[TPJ_MAX_DIMS], perm[TPJ_MAX_DIMS];
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

/* tril / triu over the last two dims: attrs tpj_attrs_tri_t. Keeps
 * col - row <= k (tril) or >= k (triu), zero elsewhere. */
static void tpj_create_tri(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, int upper) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_create_need(ctx, 1, TPJ_ATTRS_WORDS(tpj_attrs_tri_t), "tril/triu")) return;
  const tpj_attrs_tri_t* at = TPJ_ATTRS(ctx, tpj_attrs_tri_t);
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t x = tpj_create_scalar(ctx, 0, o->dtype);
  if (o->ndim < 2) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "tril/triu needs 2 or more dims"));
    return;
  }
  tpj_hlo_value_t row = tpj_hlo_emit_iota(b, TPJ_I64, o->dims, o->ndim, o->ndim - 2);
  tpj_hlo_value_t col = tpj_hlo_emit_iota(b, TPJ_I64, o->dims, o->ndim, o->ndim - 1);
  tpj_hlo_value_t k = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, at->diagonal),
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

/* roll: attrs tpj_attrs_roll_t. */
void tpj_lower_roll(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_create_need(ctx, 1, TPJ_ATTRS_WORDS(tpj_attrs_roll_t), "roll")) return;
  const tpj_attrs_roll_t* at = TPJ_ATTRS(ctx, tpj_attrs_roll_t);
  const tpj_rt_shape_t* o = &ctx->outs[0];
  int64_t n = at->n;
  if (ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_roll_t) + (n == 0 ? 1 : 2 * n)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "roll: bad attrs"));
    return;
  }
  tpj_hlo_value_t x = tpj_create_scalar(ctx, 0, o->dtype);
  if (n == 0) {
    int64_t numel = 1;
    for (int i = 0; i < o->ndim; ++i) numel *= o->dims[i];
    tpj_hlo_value_t flat = tpj_hlo_emit_reshape(b, x, &numel, 1);
    int64_t s = numel ? ((at->shifts_dims[0] % numel) + numel) % numel : 0;
    results[0] = tpj_hlo_emit_reshape(b, tpj_create_roll1(b, flat, s, 0), o->dims, o->ndim);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    int d = (int)at->shifts_dims[n + i];
    int64_t len = o->dims[d];
    int64_t s = len ? ((at->shifts_dims[i] % len) + len) % len : 0;
    x = tpj_create_roll1(b, x, s, d);
  }
  results[0] = x;
}

/* constant_pad_nd: in[1] is the 0-d fill value; attrs are PyTorch's pads
 * (a plain list, attrs.h). */
void tpj_lower_constant_pad_nd(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_create_need(ctx, 2, 0, "constant_pad_nd")) return;
  tpj_dtype_t dt = ctx->outs[0].dtype;
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], dt);
  tpj_hlo_value_t v = tpj_hlo_emit_convert(b, ctx->in[1], dt);
  const int64_t* pads = ctx->attrs;
  int64_t lo[TPJ_MAX_DIMS] = {0}, hi[TPJ_MAX_DIMS] = {0};
  for (int i = 0; i + 1 < ctx->nattrs && i / 2 < x.ndim; i += 2) {
    int d = x.ndim - 1 - i / 2;
    lo[d] = pads[i];
    hi[d] = pads[i + 1];
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

/* reflection_pad / replication_pad (1d, 2d, 3d): attrs tpj_attrs_edge_pad_t,
 * the pads checked by the glue against the input's sizes. A negative pad
 * crops that side (out[o] = x[edge(o - lo)]), so both edges come from the
 * uncropped input and only the middle is cropped. */
void tpj_lower_edge_pad(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_create_need(ctx, 1, TPJ_ATTRS_WORDS(tpj_attrs_edge_pad_t), "pad")) return;
  const tpj_attrs_edge_pad_t* at = TPJ_ATTRS(ctx, tpj_attrs_edge_pad_t);
  int reflect = at->reflect != 0;
  int npads = ctx->nattrs - TPJ_ATTRS_WORDS(tpj_attrs_edge_pad_t);
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], ctx->outs[0].dtype);
  for (int i = 0; i + 1 < npads && i / 2 < x.ndim; i += 2) {
    int d = x.ndim - 1 - i / 2;
    int64_t plo = at->pads[i], phi = at->pads[i + 1];
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

#define TPJ_ADD(x, y) tpj_hlo_emit_binary(b, "stablehlo.add", x, y)

/* ---- reflection / replication pad backward --------------------------------
 * in[0] grad_output; attrs tpj_attrs_edge_pad_backward_t. The transpose of tpj_lower_edge_pad, one
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
  if (ctx->nin < 1 || ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_edge_pad_backward_t) ||
      ctx->nouts < 1 || ctx->in[0].ndim != o->ndim) {
    tpj_ops_fail_operands(ctx, "pad_backward");
    return;
  }
  const tpj_attrs_edge_pad_backward_t* at = TPJ_ATTRS(ctx, tpj_attrs_edge_pad_backward_t);
  int reflect = at->reflect != 0;
  int npads = ctx->nattrs - TPJ_ATTRS_WORDS(tpj_attrs_edge_pad_backward_t);
  tpj_hlo_value_t g = tpj_hlo_emit_convert(b, ctx->in[0], (tpj_dtype_t)at->compute);
  for (int i = 0; i + 1 < npads && i / 2 < g.ndim; i += 2) {
    int d = g.ndim - 1 - i / 2;
    int64_t plo = at->pads[i], phi = at->pads[i + 1], n = o->dims[d];
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
