/* ops/loss_margin: multi_margin_loss and multilabel_margin_loss with their
 * backward. Inputs are (N, C) or (C); classes are picked by one-hot
 * comparisons against an iota (targets are range-checked by the glue).
 * The compute dtype is float32 for half inputs. */
#include "ops/attrs.h"
#include "ops/ops.h"

#define TPJ_MUL(x, y) tpj_hlo_emit_binary(b, "stablehlo.multiply", x, y)
#define TPJ_ADD(x, y) tpj_hlo_emit_binary(b, "stablehlo.add", x, y)
#define TPJ_SUB(x, y) tpj_hlo_emit_binary(b, "stablehlo.subtract", x, y)
#define TPJ_AND(x, y) tpj_hlo_emit_binary(b, "stablehlo.and", x, y)

static int tpj_margin_bad(tpj_op_ctx_t* ctx, const char* op) {
  tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "%s: bad operands", op));
  return 0;
}

static tpj_hlo_value_t tpj_margin_full(tpj_hlo_builder_t* b, tpj_hlo_value_t s, const int64_t* d, int n) {
  return tpj_hlo_emit_broadcast_to(b, s, d, n);
}

/* v (N,) broadcast along dim 0 of (N, C) */
static tpj_hlo_value_t tpj_margin_rows(tpj_hlo_builder_t* b, tpj_hlo_value_t v, const int64_t* nc) {
  int64_t bd = 0;
  return tpj_hlo_emit_broadcast_in_dim(b, v, nc, 2, &bd);
}

static tpj_hlo_value_t tpj_margin_rowsum(tpj_hlo_builder_t* b, tpj_hlo_value_t v) {
  int64_t d = 1;
  return tpj_hlo_emit_reduce(b, v, tpj_hlo_emit_zero(b, v.dtype), &d, 1, "stablehlo.add");
}

/* The loss per row (N,) reduced as asked, shaped like out. */
static tpj_hlo_value_t tpj_margin_reduce(tpj_hlo_builder_t* b, tpj_hlo_value_t rows, int64_t red,
                                         const tpj_rt_shape_t* out) {
  if (red != 0) {
    int64_t d = 0;
    int64_t n = rows.dims[0];
    rows = tpj_hlo_emit_reduce(b, rows, tpj_hlo_emit_zero(b, rows.dtype), &d, 1, "stablehlo.add");
    if (red == 1)
      rows = tpj_hlo_emit_binary(b, "stablehlo.divide", rows, tpj_hlo_emit_const_f64(b, rows.dtype, (double)n));
  }
  return tpj_hlo_emit_convert(b, tpj_hlo_emit_reshape(b, rows, out->dims, out->ndim), out->dtype);
}

/* The gradient scale per row (N,): grad_output / C, over N too for mean. */
static tpj_hlo_value_t tpj_margin_gscale(tpj_hlo_builder_t* b, tpj_hlo_value_t go, int64_t red,
                                         int64_t n, int64_t c, tpj_dtype_t cd) {
  go = tpj_hlo_emit_convert(b, go, cd);
  double div = (double)c * (red == 1 ? (double)n : 1.0);
  if (red == 0) go = tpj_hlo_emit_reshape(b, go, &n, 1);
  else go = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_reshape(b, go, NULL, 0), &n, 1);
  return tpj_hlo_emit_binary(b, "stablehlo.divide", go,
                             tpj_margin_full(b, tpj_hlo_emit_const_f64(b, cd, div), &n, 1));
}

/* ---- multi_margin_loss ----------------------------------------------------
 * in[0] x, in[1] target, [weight], margin (0-d); attrs
 * tpj_attrs_multi_margin_t. Row i: sum over j != y of w[y] * max(0, margin -
 * x[y] + x[j])^p, over C. */
typedef struct {
  int64_t nc[2];
  tpj_hlo_value_t x;   /* (N, C) */
  tpj_hlo_value_t z;   /* margin - x[y] + x */
  tpj_hlo_value_t on;  /* j != y and z > 0 */
  tpj_hlo_value_t wy;  /* the target's weight, (N, C) */
} tpj_mm_t;

static int tpj_mm_prepare(tpj_op_ctx_t* ctx, int first, tpj_mm_t* m, const char* op) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_attrs_multi_margin_t* at = TPJ_ATTRS(ctx, tpj_attrs_multi_margin_t);
  int words = TPJ_ATTRS_WORDS(tpj_attrs_multi_margin_t);
  int hw = ctx->nattrs >= words && at->has_weight;
  if (ctx->nattrs < words || ctx->nin < first + 3 + hw || ctx->in[first].ndim > 2)
    return tpj_margin_bad(ctx, op);
  tpj_dtype_t cd = (tpj_dtype_t)at->compute;
  tpj_hlo_value_t x = ctx->in[first];
  m->nc[0] = x.ndim == 2 ? x.dims[0] : 1;
  m->nc[1] = x.ndim ? x.dims[x.ndim - 1] : 1;
  const int64_t* nc = m->nc;
  m->x = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, x, cd), nc, 2);
  tpj_hlo_value_t t = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, ctx->in[first + 1], TPJ_I64), nc, 1);
  tpj_hlo_value_t hot = tpj_hlo_emit_compare(b, tpj_hlo_emit_iota(b, TPJ_I64, nc, 2, 1),
                                             tpj_margin_rows(b, t, nc), "EQ");
  tpj_hlo_value_t zero = tpj_margin_full(b, tpj_hlo_emit_zero(b, cd), nc, 2);
  tpj_hlo_value_t xy = tpj_margin_rowsum(b, tpj_hlo_emit_select(b, hot, m->x, zero));
  tpj_hlo_value_t margin = tpj_hlo_emit_convert(b, ctx->in[first + 2 + hw], cd);
  m->z = TPJ_ADD(TPJ_SUB(tpj_margin_full(b, margin, nc, 2), tpj_margin_rows(b, xy, nc)), m->x);
  m->on = TPJ_AND(tpj_hlo_emit_compare(b, hot, tpj_margin_full(b, tpj_hlo_emit_zero(b, TPJ_BOOL), nc, 2), "EQ"),
                  tpj_hlo_emit_compare(b, m->z, zero, "GT"));
  if (hw) {
    int64_t bd1 = 1;
    tpj_hlo_value_t w = tpj_hlo_emit_broadcast_in_dim(b, tpj_hlo_emit_convert(b, ctx->in[first + 2], cd), nc, 2, &bd1);
    m->wy = tpj_margin_rows(b, tpj_margin_rowsum(b, tpj_hlo_emit_select(b, hot, w, zero)), nc);
  } else {
    m->wy = tpj_margin_full(b, tpj_hlo_emit_one(b, cd), nc, 2);
  }
  return tpj_hlo_ok(b);
}

void tpj_lower_multi_margin_loss(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_mm_t m;
  if (!tpj_mm_prepare(ctx, 0, &m, "multi_margin_loss")) return;
  const tpj_attrs_multi_margin_t* at = TPJ_ATTRS(ctx, tpj_attrs_multi_margin_t);
  tpj_hlo_value_t h = at->p == 2 ? TPJ_MUL(m.z, m.z) : m.z;
  h = tpj_hlo_emit_select(b, m.on, TPJ_MUL(h, m.wy), tpj_margin_full(b, tpj_hlo_emit_zero(b, h.dtype), m.nc, 2));
  tpj_hlo_value_t rows = tpj_hlo_emit_binary(
      b, "stablehlo.divide", tpj_margin_rowsum(b, h),
      tpj_margin_full(b, tpj_hlo_emit_const_f64(b, h.dtype, (double)m.nc[1]), m.nc, 1));
  results[0] = tpj_margin_reduce(b, rows, at->reduction, &ctx->outs[0]);
}

/* in[0] grad_output, then the forward's operands. */
void tpj_lower_multi_margin_loss_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_mm_t m;
  if (!tpj_mm_prepare(ctx, 1, &m, "multi_margin_loss_backward")) return;
  const tpj_attrs_multi_margin_t* at = TPJ_ATTRS(ctx, tpj_attrs_multi_margin_t);
  tpj_dtype_t cd = m.x.dtype;
  tpj_hlo_value_t s = tpj_margin_gscale(b, ctx->in[0], at->reduction, m.nc[0], m.nc[1], cd);
  tpj_hlo_value_t d = at->p == 2 ? TPJ_MUL(tpj_margin_full(b, tpj_hlo_emit_const_f64(b, cd, 2.0), m.nc, 2), m.z)
                                         : tpj_margin_full(b, tpj_hlo_emit_one(b, cd), m.nc, 2);
  tpj_hlo_value_t zero = tpj_margin_full(b, tpj_hlo_emit_zero(b, cd), m.nc, 2);
  tpj_hlo_value_t gj = tpj_hlo_emit_select(b, m.on, TPJ_MUL(TPJ_MUL(d, m.wy), tpj_margin_rows(b, s, m.nc)), zero);
  /* the target column gets minus the row's sum */
  tpj_hlo_value_t t = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, ctx->in[2], TPJ_I64), m.nc, 1);
  tpj_hlo_value_t is_t = tpj_hlo_emit_compare(b, tpj_hlo_emit_iota(b, TPJ_I64, m.nc, 2, 1),
                                              tpj_margin_rows(b, t, m.nc), "EQ");
  tpj_hlo_value_t neg = tpj_margin_rows(b, tpj_hlo_emit_unary(b, "stablehlo.negate", tpj_margin_rowsum(b, gj)), m.nc);
  tpj_hlo_value_t r = tpj_hlo_emit_select(b, is_t, neg, gj);
  const tpj_rt_shape_t* o = &ctx->outs[0];
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_reshape(b, r, o->dims, o->ndim), o->dtype);
}

/* ---- multilabel_margin_loss -------------------------------------------------
 * target (N, C) lists row i's classes up to the first -1. Row i: sum over
 * its listed slots k (a repeated class counts again) and the non-target
 * classes j of max(0, 1 - x[y_k] + x[j]), over C. */
typedef struct {
  int64_t nc[2], nkc[3];
  tpj_hlo_value_t x;    /* (N, C) */
  tpj_hlo_value_t hot;  /* (N, K, C): slot k is listed and names class j */
  tpj_hlo_value_t it;   /* (N, C): j is a target */
  tpj_hlo_value_t z;    /* (N, K, C): 1 - x[y_k] + x[j] */
  tpj_hlo_value_t on;   /* (N, K, C): slot k listed, j not a target, z > 0 */
} tpj_ml_t;

/* in[first] x, in[first + 1] target; the is_target of the forward when
 * given (the backward), else computed. */
static int tpj_ml_prepare(tpj_op_ctx_t* ctx, int first, int has_it, tpj_ml_t* m) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_dtype_t cd = (tpj_dtype_t)TPJ_ATTRS(ctx, tpj_attrs_multilabel_margin_t)->compute;
  tpj_hlo_value_t x = ctx->in[first];
  int64_t n = x.ndim == 2 ? x.dims[0] : 1, c = x.ndim ? x.dims[x.ndim - 1] : 1;
  m->nc[0] = m->nkc[0] = n;
  m->nc[1] = m->nkc[1] = m->nkc[2] = c;
  const int64_t *nc = m->nc, *nkc = m->nkc;
  m->x = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, x, cd), nc, 2);
  tpj_hlo_value_t t = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, ctx->in[first + 1], TPJ_I64), nc, 2);
  /* slot k is listed when no -1 comes at or before it: the -1s of each
   * prefix are counted by a product with an upper-triangular ones matrix */
  tpj_hlo_value_t stop = tpj_hlo_emit_convert(
      b, tpj_hlo_emit_compare(b, t, tpj_margin_full(b, tpj_hlo_emit_const_i64(b, -1), nc, 2), "EQ"), TPJ_F32);
  int64_t cc[2] = {c, c}, c1 = 1, c0 = 0;
  tpj_hlo_value_t upper = tpj_hlo_emit_convert(
      b, tpj_hlo_emit_compare(b, tpj_hlo_emit_iota(b, TPJ_I64, cc, 2, 0), tpj_hlo_emit_iota(b, TPJ_I64, cc, 2, 1), "LE"),
      TPJ_F32);
  tpj_hlo_value_t before = tpj_hlo_emit_dot_general(b, stop, upper, NULL, NULL, 0, &c1, &c0, 1, TPJ_F32);
  tpj_hlo_value_t f0 = tpj_margin_full(b, tpj_hlo_emit_zero(b, TPJ_F32), nc, 2);
  tpj_hlo_value_t listed = tpj_hlo_emit_compare(b, before, f0, "EQ");
  int64_t bd01[2] = {0, 1}, bd02[2] = {0, 2};
  m->hot = TPJ_AND(tpj_hlo_emit_compare(b, tpj_hlo_emit_broadcast_in_dim(b, t, nkc, 3, bd01),
                                        tpj_hlo_emit_iota(b, TPJ_I64, nkc, 3, 2), "EQ"),
                   tpj_hlo_emit_broadcast_in_dim(b, listed, nkc, 3, bd01));
  tpj_hlo_value_t x3 = tpj_hlo_emit_broadcast_in_dim(b, m->x, nkc, 3, bd02);
  tpj_hlo_value_t zero3 = tpj_margin_full(b, tpj_hlo_emit_zero(b, cd), nkc, 3);
  int64_t r2 = 2, r1 = 1;
  tpj_hlo_value_t xy = tpj_hlo_emit_reduce(b, tpj_hlo_emit_select(b, m->hot, x3, zero3),
                                           tpj_hlo_emit_zero(b, cd), &r2, 1, "stablehlo.add");
  tpj_hlo_value_t hotf = tpj_hlo_emit_convert(b, m->hot, TPJ_F32);
  tpj_hlo_value_t slot_on = tpj_hlo_emit_compare(
      b, tpj_hlo_emit_reduce(b, hotf, tpj_hlo_emit_zero(b, TPJ_F32), &r2, 1, "stablehlo.add"), f0, "GT");
  if (has_it) {
    tpj_hlo_value_t it = tpj_hlo_emit_reshape(b, ctx->in[first + 2], nc, 2);
    m->it = tpj_hlo_emit_compare(b, it, tpj_margin_full(b, tpj_hlo_emit_zero(b, it.dtype), nc, 2), "NE");
  } else {
    m->it = tpj_hlo_emit_compare(
        b, tpj_hlo_emit_reduce(b, hotf, tpj_hlo_emit_zero(b, TPJ_F32), &r1, 1, "stablehlo.add"), f0, "GT");
  }
  m->z = TPJ_ADD(TPJ_SUB(tpj_margin_full(b, tpj_hlo_emit_one(b, cd), nkc, 3),
                         tpj_hlo_emit_broadcast_in_dim(b, xy, nkc, 3, bd01)), x3);
  tpj_hlo_value_t nt = tpj_hlo_emit_compare(b, tpj_hlo_emit_broadcast_in_dim(b, m->it, nkc, 3, bd02),
                                            tpj_margin_full(b, tpj_hlo_emit_zero(b, TPJ_BOOL), nkc, 3), "EQ");
  m->on = TPJ_AND(TPJ_AND(nt, tpj_hlo_emit_broadcast_in_dim(b, slot_on, nkc, 3, bd01)),
                  tpj_hlo_emit_compare(b, m->z, zero3, "GT"));
  return tpj_hlo_ok(b);
}

/* in[0] x, in[1] target; outs: loss, is_target (x's dtype and shape) */
void tpj_lower_multilabel_margin_loss(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_ml_t m;
  if (ctx->nin < 2 || ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_multilabel_margin_t) ||
      ctx->nouts < 2 || ctx->in[0].ndim > 2) {
    tpj_margin_bad(ctx, "multilabel_margin_loss_forward");
    return;
  }
  if (!tpj_ml_prepare(ctx, 0, 0, &m)) return;
  tpj_dtype_t cd = m.x.dtype;
  tpj_hlo_value_t h = tpj_hlo_emit_select(b, m.on, m.z, tpj_margin_full(b, tpj_hlo_emit_zero(b, cd), m.nkc, 3));
  int64_t r12[2] = {1, 2};
  tpj_hlo_value_t rows = tpj_hlo_emit_reduce(b, h, tpj_hlo_emit_zero(b, cd), r12, 2, "stablehlo.add");
  rows = tpj_hlo_emit_binary(b, "stablehlo.divide", rows,
                             tpj_margin_full(b, tpj_hlo_emit_const_f64(b, cd, (double)m.nc[1]), m.nc, 1));
  const tpj_attrs_multilabel_margin_t* at = TPJ_ATTRS(ctx, tpj_attrs_multilabel_margin_t);
  results[0] = tpj_margin_reduce(b, rows, at->reduction, &ctx->outs[0]);
  const tpj_rt_shape_t* o1 = &ctx->outs[1];
  results[1] = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, m.it, o1->dtype), o1->dims, o1->ndim);
}

/* in[0] grad_output, in[1] x, in[2] target, in[3] is_target. Non-target j
 * gets s for each slot it beats the margin of; the slot's class gets -s for
 * each j it does. */
void tpj_lower_multilabel_margin_loss_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_ml_t m;
  if (ctx->nin < 4 || ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_multilabel_margin_t) ||
      ctx->in[1].ndim > 2) {
    tpj_margin_bad(ctx, "multilabel_margin_loss_backward");
    return;
  }
  if (!tpj_ml_prepare(ctx, 1, 1, &m)) return;
  tpj_dtype_t cd = m.x.dtype;
  tpj_hlo_value_t onf = tpj_hlo_emit_convert(b, m.on, cd);
  int64_t r1 = 1, r2 = 2, bd01[2] = {0, 1};
  tpj_hlo_value_t beats = tpj_hlo_emit_reduce(b, onf, tpj_hlo_emit_zero(b, cd), &r1, 1, "stablehlo.add");
  tpj_hlo_value_t cnt = tpj_hlo_emit_reduce(b, onf, tpj_hlo_emit_zero(b, cd), &r2, 1, "stablehlo.add");
  tpj_hlo_value_t lost = tpj_hlo_emit_reduce(
      b, tpj_hlo_emit_select(b, m.hot, tpj_hlo_emit_broadcast_in_dim(b, cnt, m.nkc, 3, bd01),
                             tpj_margin_full(b, tpj_hlo_emit_zero(b, cd), m.nkc, 3)),
      tpj_hlo_emit_zero(b, cd), &r1, 1, "stablehlo.add");
  const tpj_attrs_multilabel_margin_t* at = TPJ_ATTRS(ctx, tpj_attrs_multilabel_margin_t);
  tpj_hlo_value_t s = tpj_margin_gscale(b, ctx->in[0], at->reduction, m.nc[0], m.nc[1], cd);
  tpj_hlo_value_t r = TPJ_MUL(TPJ_SUB(beats, lost), tpj_margin_rows(b, s, m.nc));
  const tpj_rt_shape_t* o = &ctx->outs[0];
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_reshape(b, r, o->dims, o->ndim), o->dtype);
}
