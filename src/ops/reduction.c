/* ops/reduction: sum, mean, prod, amax, amin, any, all over a list of dims;
 * further down segment_reduce, bincount and histc (each with its own
 * layout); var/std, vector_norm and logsumexp are in ops/reduction_stats.c.
 * The first group are descriptor rows (bottom of this file) with the layout
 * tpj_attrs_reduce_t (ops/desc.h): the compute dtype (the accumulator:
 * float32 for half types, as PyTorch's CPU kernels accumulate), keepdim, the
 * dims (wrapped, sorted). The output dtype and shape are PyTorch's
 * (ctx->outs[0]). */
#include <math.h>

#include "hlo/sort.h"
#include "ops/attrs.h"
#include "ops/desc.h"
#include "ops/lower_util.h"
#include "ops/ops.h"

typedef enum { TPJ_RED_SUM, TPJ_RED_MEAN, TPJ_RED_PROD, TPJ_RED_MAX, TPJ_RED_MIN,
               TPJ_RED_ANY, TPJ_RED_ALL } tpj_reduce_kind_t;

static void tpj_lower_reduce(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, tpj_reduce_kind_t kind) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  const tpj_attrs_reduce_t* at = TPJ_ATTRS(ctx, tpj_attrs_reduce_t);
  if (ctx->nin < 1 || ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_reduce_t) ||
      ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_reduce_t) + at->ndims) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "reduction: bad operands"));
    return;
  }
  tpj_hlo_value_t x = ctx->in[0];
  int ndims = (int)at->ndims;
  const int64_t* dims = at->dims;
  tpj_dtype_t cd = at->compute > 0 ? (tpj_dtype_t)at->compute : o->dtype;
  const char* body = "stablehlo.add";
  tpj_hlo_value_t init;
  switch (kind) {
    case TPJ_RED_SUM:
    case TPJ_RED_MEAN: init = tpj_hlo_emit_zero(b, cd); break;
    case TPJ_RED_PROD:
      body = cd == TPJ_BOOL ? "stablehlo.and" : "stablehlo.multiply";
      init = tpj_hlo_emit_one(b, cd);
      break;
    case TPJ_RED_MAX:
      body = "stablehlo.maximum";
      init = tpj_hlo_emit_extreme(b, cd, 0);
      break;
    case TPJ_RED_MIN:
      body = "stablehlo.minimum";
      init = tpj_hlo_emit_extreme(b, cd, 1);
      break;
    case TPJ_RED_ANY:
      cd = TPJ_BOOL;
      body = "stablehlo.or";
      init = tpj_hlo_emit_zero(b, cd);
      break;
    default:
      cd = TPJ_BOOL;
      body = "stablehlo.and";
      init = tpj_hlo_emit_one(b, cd);
      break;
  }
  if (cd == TPJ_BOOL && kind == TPJ_RED_SUM) body = "stablehlo.or";
  tpj_hlo_value_t xc = tpj_hlo_emit_convert(b, x, cd);
  tpj_hlo_value_t r = tpj_hlo_emit_reduce(b, xc, init, dims, ndims, body);
  if ((kind == TPJ_RED_MAX || kind == TPJ_RED_MIN) && tpj_dtype_is_float(cd)) {
    /* a NaN anywhere in the reduced elements gives NaN, as in PyTorch */
    tpj_hlo_value_t nan = tpj_hlo_emit_compare(b, xc, xc, "NE");
    tpj_hlo_value_t any = tpj_hlo_emit_reduce(b, nan, tpj_hlo_emit_zero(b, TPJ_BOOL), dims, ndims,
                                              "stablehlo.or");
    tpj_hlo_value_t q = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_f64(b, cd, 0.0 / 0.0),
                                                  r.dims, r.ndim);
    r = tpj_hlo_emit_select(b, any, q, r);
  }
  if (kind == TPJ_RED_MEAN) {
    int64_t count = 1;
    for (int i = 0; i < ndims; ++i) count *= x.dims[dims[i]];
    tpj_hlo_value_t n = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_f64(b, cd, (double)count),
                                                  r.dims, r.ndim);
    r = tpj_hlo_emit_binary(b, "stablehlo.divide", r, n);
  }
  r = tpj_hlo_emit_convert(b, r, o->dtype);
  results[0] = tpj_hlo_emit_reshape(b, r, o->dims, o->ndim);  /* keepdim puts 1s back */
}

#define TPJ_REDUCE(fn, kind) \
  void fn(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) { tpj_lower_reduce(ctx, r, kind); }

TPJ_REDUCE(tpj_lower_sum, TPJ_RED_SUM)
TPJ_REDUCE(tpj_lower_mean, TPJ_RED_MEAN)
TPJ_REDUCE(tpj_lower_prod, TPJ_RED_PROD)
TPJ_REDUCE(tpj_lower_amax, TPJ_RED_MAX)
TPJ_REDUCE(tpj_lower_amin, TPJ_RED_MIN)
TPJ_REDUCE(tpj_lower_any, TPJ_RED_ANY)
TPJ_REDUCE(tpj_lower_all, TPJ_RED_ALL)

#define SUB(x, y) tpj_hlo_emit_binary(b, "stablehlo.subtract", x, y)
#define MUL(x, y) tpj_hlo_emit_binary(b, "stablehlo.multiply", x, y)
#define CMP(x, y, d) tpj_hlo_emit_compare(b, x, y, d)
#define SEL(c, x, y) tpj_hlo_emit_select(b, c, x, y)

/* ---- segment_reduce -------------------------------------------------------- */

enum { SEG_SUM, SEG_MEAN, SEG_MAX, SEG_MIN, SEG_PROD };

/* Segments of data x ([B..., N, R...], axis = len(B)) brought to the layout
 * [B..., S, N, R...]: mask says which positions each segment covers; len
 * is each segment's length ([B..., S]). seg is lengths ([B..., S]) or
 * offsets ([B..., S + 1]). */
typedef struct {
  int axis, nd;
  int64_t full[TPJ_MAX_DIMS];
  tpj_hlo_value_t mask, len;
} segs_t;

static int segments(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t seg, int axis,
                    int is_lengths, segs_t* g) {
  tpj_hlo_value_t off = tpj_hlo_emit_convert(b, seg, TPJ_I64);
  int last = off.ndim - 1;
  if (is_lengths) { /* lengths -> offsets: a leading 0, then running sums */
    int64_t zd[TPJ_MAX_DIMS];
    for (int d = 0; d < off.ndim; ++d) zd[d] = d == last ? 1 : off.dims[d];
    tpj_hlo_value_t parts[2] = {
        tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, TPJ_I64), zd, off.ndim),
        tpj_hlo_emit_cumulative(b, off, last, TPJ_HLO_SCAN_ADD, 0)};
    off = tpj_hlo_emit_concatenate(b, parts, 2, last);
  }
  g->nd = x.ndim + 1;
  if (g->nd > TPJ_MAX_DIMS || last != axis) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "segment_reduce: bad dims"));
    return 0;
  }
  int64_t segs = off.dims[last] - 1;
  int64_t lo_s[TPJ_MAX_DIMS] = {0}, hi_s[TPJ_MAX_DIMS], st[TPJ_MAX_DIMS];
  for (int d = 0; d < off.ndim; ++d) hi_s[d] = off.dims[d], st[d] = 1;
  hi_s[last] = segs;
  tpj_hlo_value_t lo = tpj_hlo_emit_slice(b, off, lo_s, hi_s, st);
  lo_s[last] = 1;
  hi_s[last] = segs + 1;
  tpj_hlo_value_t hi = tpj_hlo_emit_slice(b, off, lo_s, hi_s, st);
  g->axis = axis;
  for (int d = 0; d < axis; ++d) g->full[d] = x.dims[d];
  g->full[axis] = segs;
  for (int d = axis; d < x.ndim; ++d) g->full[d + 1] = x.dims[d];
  int64_t bd[TPJ_MAX_DIMS];
  for (int d = 0; d <= axis; ++d) bd[d] = d; /* [B..., S] */
  tpj_hlo_value_t pos = tpj_hlo_emit_iota(b, TPJ_I64, g->full, g->nd, axis + 1);
  g->mask = tpj_hlo_emit_binary(
      b, "stablehlo.and", CMP(pos, tpj_hlo_emit_broadcast_in_dim(b, lo, g->full, g->nd, bd), "GE"),
      CMP(pos, tpj_hlo_emit_broadcast_in_dim(b, hi, g->full, g->nd, bd), "LT"));
  g->len = SUB(hi, lo);
  return 1;
}

/* x ([B..., N, R...]) in the segment layout */
static tpj_hlo_value_t per_segment(tpj_hlo_builder_t* b, const segs_t* g, tpj_hlo_value_t x) {
  int64_t bd[TPJ_MAX_DIMS];
  for (int d = 0; d < x.ndim; ++d) bd[d] = d < g->axis ? d : d + 1;
  return tpj_hlo_emit_broadcast_in_dim(b, x, g->full, g->nd, bd);
}

/* y ([B..., S, R...]) in the segment layout */
static tpj_hlo_value_t per_position(tpj_hlo_builder_t* b, const segs_t* g, tpj_hlo_value_t y) {
  int64_t bd[TPJ_MAX_DIMS];
  for (int d = 0; d < y.ndim; ++d) bd[d] = d <= g->axis ? d : d + 1;
  return tpj_hlo_emit_broadcast_in_dim(b, y, g->full, g->nd, bd);
}

/* a segment's length ([B..., S]) as dt, over [B..., S, R...] (like) */
static tpj_hlo_value_t seg_len(tpj_hlo_builder_t* b, const segs_t* g, tpj_dtype_t dt,
                               tpj_hlo_value_t like) {
  int64_t bd[TPJ_MAX_DIMS];
  for (int d = 0; d <= g->axis; ++d) bd[d] = d;
  return tpj_hlo_emit_broadcast_in_dim(b, tpj_hlo_emit_convert(b, g->len, dt), like.dims,
                                       like.ndim, bd);
}

static int seg_need(tpj_op_ctx_t* ctx, int nin, const char* op) {
  const int words = TPJ_ATTRS_WORDS(tpj_attrs_segment_reduce_t);
  if (ctx->nattrs >= words &&
      ctx->nin >= nin + (int)TPJ_ATTRS(ctx, tpj_attrs_segment_reduce_t)->has_initial &&
      ctx->nouts >= 1)
    return 1;
  tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "%s: bad operands", op));
  return 0;
}

/* aten::segment_reduce: in[0] data, in[1] lengths or offsets (integer,
 * [B..., S] or [B..., S + 1]), in[2] (with has_initial) the initial value, a
 * 0-d runtime scalar of the compute dtype; tpj_attrs_segment_reduce_t
 * (ops/attrs.h). Each segment is reduced
 * over a mask of its positions; as in CPU's kernel the initial value seeds
 * each segment, max/min propagate NaN, mean divides by the length (an
 * empty segment is NaN without an initial value) and an empty segment
 * is the reduction's identity (lowest for max, highest for min). */
void tpj_lower_segment_reduce(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!seg_need(ctx, 2, "segment_reduce")) return;
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_attrs_segment_reduce_t* at = TPJ_ATTRS(ctx, tpj_attrs_segment_reduce_t);
  tpj_dtype_t cd = (tpj_dtype_t)at->compute;
  int kind = (int)at->kind, axis = (int)at->axis, has_init = (int)at->has_initial;
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  segs_t g;
  if (!segments(b, x, ctx->in[1], axis, (int)at->by_lengths, &g)) return;
  tpj_hlo_value_t xf = per_segment(b, &g, x);
  int64_t rd = axis + 1;
  const char* body = kind == SEG_MAX ? "stablehlo.maximum" : kind == SEG_MIN ? "stablehlo.minimum"
                     : kind == SEG_PROD ? "stablehlo.multiply" : "stablehlo.add";
  tpj_hlo_value_t id = kind == SEG_MAX ? tpj_hlo_emit_extreme(b, cd, 0)
                       : kind == SEG_MIN ? tpj_hlo_emit_extreme(b, cd, 1)
                       : kind == SEG_PROD ? tpj_hlo_emit_one(b, cd) : tpj_hlo_emit_zero(b, cd);
  tpj_hlo_value_t sel = SEL(g.mask, xf, tpj_hlo_emit_broadcast_to(b, id, g.full, g.nd));
  tpj_hlo_value_t r = tpj_hlo_emit_reduce(b, sel, id, &rd, 1, body);
  tpj_hlo_value_t init = has_init ? tpj_hlo_emit_broadcast_to(
                                        b, tpj_hlo_emit_convert(b, ctx->in[2], cd), r.dims, r.ndim)
                                  : r;
  if (has_init) r = tpj_hlo_emit_binary(b, body, r, init);
  if (kind == SEG_MAX || kind == SEG_MIN) {
    tpj_hlo_value_t nan = tpj_hlo_emit_binary(b, "stablehlo.and", g.mask, CMP(xf, xf, "NE"));
    nan = tpj_hlo_emit_reduce(b, nan, tpj_hlo_emit_zero(b, TPJ_BOOL), &rd, 1, "stablehlo.or");
    r = SEL(nan, tpj_ops_full_like(b, r, cd, NAN), r);
  }
  if (kind == SEG_MEAN) {
    tpj_hlo_value_t len = seg_len(b, &g, cd, r);
    tpj_hlo_value_t empty = CMP(len, tpj_ops_full_like(b, len, cd, 0.0), "EQ");
    tpj_hlo_value_t mean = tpj_hlo_emit_binary(b, "stablehlo.divide", r, len);
    r = SEL(empty, has_init ? init : tpj_ops_full_like(b, r, cd, NAN), mean);
  }
  results[0] = tpj_hlo_emit_convert(b, r, ctx->outs[0].dtype);
}

/* aten::_segment_reduce_backward: in[0] grad and in[1] output ([B..., S,
 * R...]), in[2] data, in[3] lengths or offsets, in[4] (with has_initial) the
 * initial value; attributes as segment_reduce's. CPU's rules, per position j of
 * segment s: sum passes grad[s]; mean grad[s] / length; max/min give
 * grad[s] to the positions equal to output[s] (or NaN), divided by their
 * count when there are several and grad[s] > 0; prod gives
 * grad[s] * output[s] / x[j], or, where x[j] is 0 or NaN, grad[s] times
 * the product of the segment's other values (and the initial value).
 * Positions outside every segment get 0. */
void tpj_lower_segment_reduce_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!seg_need(ctx, 4, "_segment_reduce_backward")) return;
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_attrs_segment_reduce_t* at = TPJ_ATTRS(ctx, tpj_attrs_segment_reduce_t);
  tpj_dtype_t cd = (tpj_dtype_t)at->compute;
  int kind = (int)at->kind, axis = (int)at->axis;
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[2], cd);
  segs_t g;
  if (!segments(b, x, ctx->in[3], axis, (int)at->by_lengths, &g)) return;
  tpj_hlo_value_t gr = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  tpj_hlo_value_t xf = per_segment(b, &g, x);
  tpj_hlo_value_t gf = per_position(b, &g, gr);
  tpj_hlo_value_t outf = per_position(b, &g, tpj_hlo_emit_convert(b, ctx->in[1], cd));
  tpj_hlo_value_t zero = tpj_ops_full_like(b, xf, cd, 0.0);
  tpj_hlo_value_t nan = CMP(xf, xf, "NE");
  tpj_hlo_value_t v, take = g.mask;
  int64_t rd = axis + 1;
  switch (kind) {
    case SEG_SUM: v = gf; break;
    case SEG_MEAN: v = tpj_hlo_emit_binary(b, "stablehlo.divide", gf,
                                           per_position(b, &g, seg_len(b, &g, cd, gr)));
      break;
    case SEG_MAX:
    case SEG_MIN: {
      take = tpj_hlo_emit_binary(b, "stablehlo.and", g.mask,
                                 tpj_hlo_emit_binary(b, "stablehlo.or", nan,
                                                     CMP(xf, outf, "EQ")));
      tpj_hlo_value_t cnt = tpj_hlo_emit_reduce(b, tpj_hlo_emit_convert(b, take, cd),
                                                tpj_hlo_emit_zero(b, cd), &rd, 1, "stablehlo.add");
      cnt = per_position(b, &g, cnt);
      tpj_hlo_value_t split = tpj_hlo_emit_binary(
          b, "stablehlo.and", CMP(cnt, tpj_ops_full_like(b, cnt, cd, 2.0), "GE"), CMP(gf, zero, "GT"));
      v = SEL(split, tpj_hlo_emit_binary(b, "stablehlo.divide", gf, cnt), gf);
      break;
    }
    default: { /* SEG_PROD */
      tpj_hlo_value_t y = SEL(g.mask, xf, tpj_ops_full_like(b, xf, cd, 1.0));
      tpj_hlo_value_t pre = tpj_hlo_emit_cumulative(b, y, axis + 1, TPJ_HLO_SCAN_MUL, 0);
      tpj_hlo_value_t suf = tpj_hlo_emit_cumulative(b, y, axis + 1, TPJ_HLO_SCAN_MUL, 1);
      /* exclusive: shift the prefix right and the suffix left by one */
      int64_t n = xf.dims[axis + 1];
      int64_t lo[TPJ_MAX_DIMS] = {0}, hi[TPJ_MAX_DIMS], st[TPJ_MAX_DIMS];
      int64_t plo[TPJ_MAX_DIMS] = {0}, phi[TPJ_MAX_DIMS] = {0};
      for (int d = 0; d < g.nd; ++d) hi[d] = g.full[d], st[d] = 1;
      tpj_hlo_value_t one = tpj_hlo_emit_one(b, cd);
      hi[axis + 1] = n - 1;
      plo[axis + 1] = 1;
      pre = tpj_hlo_emit_pad(b, tpj_hlo_emit_slice(b, pre, lo, hi, st), one, plo, phi);
      lo[axis + 1] = 1;
      hi[axis + 1] = n;
      plo[axis + 1] = 0;
      phi[axis + 1] = 1;
      suf = tpj_hlo_emit_pad(b, tpj_hlo_emit_slice(b, suf, lo, hi, st), one, plo, phi);
      tpj_hlo_value_t excl = MUL(pre, suf);
      if (at->has_initial)
        excl = MUL(excl, tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_convert(b, ctx->in[4], cd),
                                                   g.full, g.nd));
      tpj_hlo_value_t special = tpj_hlo_emit_binary(b, "stablehlo.or", nan, CMP(xf, zero, "EQ"));
      v = SEL(special, MUL(gf, excl),
              tpj_hlo_emit_binary(b, "stablehlo.divide", MUL(gf, outf), xf));
      break;
    }
  }
  tpj_hlo_value_t r = tpj_hlo_emit_reduce(b, SEL(take, v, zero), tpj_hlo_emit_zero(b, cd),
                                          (int64_t[]){axis}, 1, "stablehlo.add");
  results[0] = tpj_hlo_emit_convert(b, r, ctx->outs[0].dtype);
}

/* ---- bincount ------------------------------------------------------------------- */

/* aten::bincount: in[0] the values (1-D integer, checked non-negative and
 * below the output's length by the glue), in[1] the weights when
 * tpj_attrs_bincount_t.weighted. Each value adds its weight (or 1) to its bin, in the output's
 * dtype (CPU's: the weights' for float and double, double for others). */
void tpj_lower_bincount(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  const tpj_attrs_bincount_t* at = TPJ_ATTRS(ctx, tpj_attrs_bincount_t);
  if (!tpj_ops_need(ctx, 1, 1, 1, "bincount") || (at->weighted && ctx->nin < 2)) {
    if (tpj_hlo_ok(ctx->b))
      tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "bincount: bad operands"));
    return;
  }
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t idx = tpj_hlo_emit_convert(b, ctx->in[0], TPJ_I64);
  tpj_hlo_value_t upd = at->weighted ? tpj_hlo_emit_convert(b, ctx->in[1], o->dtype)
                                      : tpj_ops_full_like(b, idx, o->dtype, 1.0);
  tpj_hlo_value_t zeros = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, o->dtype), o->dims,
                                                    o->ndim);
  results[0] = tpj_hlo_emit_scatter_add_rows(b, zeros, idx, upd);
}

/* The dtype histc compares in: a float input's own (CPU computes its bin
 * edges in it), float64 for integers. */
static tpj_dtype_t histc_dtype(tpj_dtype_t dt) {
  return tpj_dtype_is_float(dt) ? dt : TPJ_F64;
}

static tpj_hlo_value_t bcast(tpj_hlo_builder_t* b, tpj_hlo_value_t s, const int64_t* dims,
                             int ndim) {
  return tpj_hlo_emit_broadcast_to(b, s, dims, ndim);
}

/* aten::histc: in[0] x (any shape, not empty), in[1] min and in[2] max
 * (0-d runtime values in the compare dtype, so a new range does not
 * recompile); tpj_attrs_histc_t. As CPU: min == max means the data's range, a
 * still-empty range widens to [min - 1, max + 1]; an element lands in bin k
 * when edge[k] <= x < edge[k + 1] with edges = linspace(min, max, bins + 1)
 * (the last bin includes max); elements outside [min, max] and NaN are not
 * counted. Counting is a one-hot sum, n * bins work: MoE routing counts
 * n tokens into a few dozen experts. */
void tpj_lower_histc(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_ops_need(ctx, 3, 1, 0, "histc")) return;
  tpj_hlo_builder_t* b = ctx->b;
  int64_t bins = TPJ_ATTRS(ctx, tpj_attrs_histc_t)->bins;
  tpj_dtype_t cd = histc_dtype(ctx->in[0].dtype);
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, tpj_ops_flat(b, ctx->in[0]), cd);
  tpj_hlo_value_t lo = tpj_hlo_emit_convert(b, ctx->in[1], cd);
  tpj_hlo_value_t hi = tpj_hlo_emit_convert(b, ctx->in[2], cd);
  int64_t d0 = 0;
  tpj_hlo_value_t dmin = tpj_hlo_emit_reduce(b, x, tpj_hlo_emit_extreme(b, cd, 1), &d0, 1,
                                             "stablehlo.minimum");
  tpj_hlo_value_t dmax = tpj_hlo_emit_reduce(b, x, tpj_hlo_emit_extreme(b, cd, 0), &d0, 1,
                                             "stablehlo.maximum");
  tpj_hlo_value_t same = tpj_hlo_emit_compare(b, lo, hi, "EQ");
  lo = tpj_hlo_emit_select(b, same, dmin, lo);
  hi = tpj_hlo_emit_select(b, same, dmax, hi);
  tpj_hlo_value_t one = tpj_hlo_emit_one(b, cd);
  same = tpj_hlo_emit_compare(b, lo, hi, "EQ");
  lo = tpj_hlo_emit_select(b, same, tpj_hlo_emit_binary(b, "stablehlo.subtract", lo, one), lo);
  hi = tpj_hlo_emit_select(b, same, tpj_hlo_emit_binary(b, "stablehlo.add", hi, one), hi);

  /* The inner edges 1..bins-1 as CPU's linspace computes them: from the
   * start in the first half, back from the end in the second. */
  int64_t nin = bins - 1 > 0 ? bins - 1 : 0;
  tpj_hlo_value_t k = tpj_hlo_emit_iota(b, cd, &nin, 1, 0);
  k = tpj_hlo_emit_binary(b, "stablehlo.add", k, bcast(b, one, &nin, 1));
  tpj_hlo_value_t nb = tpj_hlo_emit_const_f64(b, cd, (double)bins);
  tpj_hlo_value_t step = tpj_hlo_emit_binary(
      b, "stablehlo.divide", tpj_hlo_emit_binary(b, "stablehlo.subtract", hi, lo), nb);
  tpj_hlo_value_t stepv = bcast(b, step, &nin, 1);
  tpj_hlo_value_t front = tpj_hlo_emit_binary(
      b, "stablehlo.add", bcast(b, lo, &nin, 1), tpj_hlo_emit_binary(b, "stablehlo.multiply",
                                                                     stepv, k));
  tpj_hlo_value_t back = tpj_hlo_emit_binary(
      b, "stablehlo.subtract", bcast(b, hi, &nin, 1),
      tpj_hlo_emit_binary(b, "stablehlo.multiply", stepv,
                          tpj_hlo_emit_binary(b, "stablehlo.subtract", bcast(b, nb, &nin, 1), k)));
  tpj_hlo_value_t half = tpj_hlo_emit_const_f64(b, cd, (double)((bins + 1) / 2));
  tpj_hlo_value_t edges = tpj_hlo_emit_select(
      b, tpj_hlo_emit_compare(b, k, bcast(b, half, &nin, 1), "LT"), front, back);

  /* bin(x) = the number of inner edges <= x. */
  int64_t n = x.dims[0];
  int64_t ne[2] = {n, nin}, xd = 0, ed = 1;
  tpj_hlo_value_t ge = tpj_hlo_emit_compare(b, tpj_hlo_emit_broadcast_in_dim(b, x, ne, 2, &xd),
                                            tpj_hlo_emit_broadcast_in_dim(b, edges, ne, 2, &ed),
                                            "GE");
  int64_t over = 1;
  tpj_hlo_value_t bin = tpj_hlo_emit_reduce(b, tpj_hlo_emit_convert(b, ge, TPJ_I64),
                                            tpj_hlo_emit_zero(b, TPJ_I64), &over, 1,
                                            "stablehlo.add");
  tpj_hlo_value_t inside = tpj_hlo_emit_binary(
      b, "stablehlo.and", tpj_hlo_emit_compare(b, x, bcast(b, lo, &n, 1), "GE"),
      tpj_hlo_emit_compare(b, x, bcast(b, hi, &n, 1), "LE"));

  /* One-hot rows (n, bins), counted in int64 (exact), then PyTorch's dtype. */
  int64_t nbins[2] = {n, bins}, bd = 0;
  tpj_hlo_value_t ids = tpj_hlo_emit_iota(b, TPJ_I64, nbins, 2, 1);
  tpj_hlo_value_t hit = tpj_hlo_emit_binary(
      b, "stablehlo.and",
      tpj_hlo_emit_compare(b, tpj_hlo_emit_broadcast_in_dim(b, bin, nbins, 2, &bd), ids, "EQ"),
      tpj_hlo_emit_broadcast_in_dim(b, inside, nbins, 2, &bd));
  int64_t rows = 0;
  tpj_hlo_value_t counts = tpj_hlo_emit_reduce(b, tpj_hlo_emit_convert(b, hit, TPJ_I64),
                                               tpj_hlo_emit_zero(b, TPJ_I64), &rows, 1,
                                               "stablehlo.add");
  results[0] = tpj_hlo_emit_convert(b, counts, ctx->outs[0].dtype);
}

/* ---- descriptor rows (desc.h) ---------------------------------------------
 * The reductions over a list of dims: each overload a row; the dims, keepdim
 * and the output dtype come from the schema and the meta function
 * (tpj_attrs_reduce_t), the compute dtype is the output's accumulator. */

/* (self, dim, keepdim, dtype): CPU's wording (the meta function names the
 * dtype differently). */
static tpj_status_t tpj_check_mean(const tpj_op_call_t* c) {
  int given = c->args[3].kind == TPJ_ARG_DTYPE;
  const tpj_op_arg_t* a = given ? &c->args[3] : &c->args[0];
  if (!tpj_dtype_is_float(a->dtype) && !tpj_dtype_is_complex(a->dtype))
    return tpj_status_make(TPJ_INVALID_ARGUMENT,
                           "mean(): could not infer output dtype. %s dtype must be either a "
                           "floating point or complex dtype. Got: %s",
                           given ? "Optional" : "Input", a->dtype_name);
  return NULL;
}

/* (self, dim, keepdim): CPU's checks for reductions without an identity. */
static tpj_status_t tpj_check_extreme(const tpj_op_call_t* c, const char* name, const char* kernel) {
  const tpj_op_arg_t* self = &c->args[0];
  const tpj_op_arg_t* dim = &c->args[1];
  if (tpj_dtype_is_complex(self->dtype)) return tpj_op_refuse(kernel, self->dtype);
  if (self->numel != 0) return NULL;
  if (dim->n == 0)
    return tpj_status_make(TPJ_INVALID_ARGUMENT,
                           "%s(): Expected reduction dim to be specified for input.numel() == 0. "
                           "Specify the reduction dim with the 'dim' argument.",
                           name);
  for (int i = 0; i < dim->n; ++i) {
    int64_t w;
    TPJ_RETURN_IF_ERROR(tpj_op_wrap_dim(dim->ints[i], self->ndim, &w));
    if (self->ndim != 0 && self->dims[w] == 0)
      return tpj_status_make(TPJ_INDEX_ERROR,
                             "%s(): Expected reduction dim %lld to have non-zero size.", name,
                             (long long)w);
  }
  return NULL;
}
static tpj_status_t tpj_check_amax(const tpj_op_call_t* c) {
  return tpj_check_extreme(c, "amax", "max_values_cpu");
}
static tpj_status_t tpj_check_amin(const tpj_op_call_t* c) {
  return tpj_check_extreme(c, "amin", "min_values_cpu");
}

#define TPJ_R TPJ_RULE_REDUCE
static const tpj_op_desc_t kReductionRows[] = {
    {"sum.dim_IntList", "aten::sum.dim_IntList", TPJ_R, NULL, -1, NULL},
    {"sum", "aten::sum.dim_IntList", TPJ_R, NULL, -1, NULL},
    {"mean.dim", "aten::mean.dim", TPJ_R, NULL, -1, tpj_check_mean},
    {"prod.dim_int", "aten::prod.dim_int", TPJ_R, NULL, -1, NULL},
    {"prod", "aten::prod.dim_int", TPJ_R, NULL, -1, NULL},
    {"amax", "aten::amax", TPJ_R, NULL, -1, tpj_check_amax},
    {"amin", "aten::amin", TPJ_R, NULL, -1, tpj_check_amin},
    {"any.dims", "aten::any.dims", TPJ_R, NULL, -1, NULL},
    {"all.dims", "aten::all.dims", TPJ_R, NULL, -1, NULL},
    {"any.dim", "aten::any.dims", TPJ_R, NULL, -1, NULL},
    {"all.dim", "aten::all.dims", TPJ_R, NULL, -1, NULL},
    {"any", "aten::any.dims", TPJ_R, NULL, -1, NULL},
    {"all", "aten::all.dims", TPJ_R, NULL, -1, NULL},
};
TPJ_DESC_LIST(tpj_reduction_rows, kReductionRows);
