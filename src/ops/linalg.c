/* ops/linalg: matrix products through dot_general (mm, addmm and the
 * forms that share them, _grouped_mm), linalg_cross and linalg_matrix_exp;
 * the decompositions are in ops/linalg_decomp.c. Products compute in the
 * output's dtype (PyTorch requires both operands to share it); addmm and
 * baddbmm's attributes are tpj_attrs_addmm_t. */
#include <math.h>

#include "hlo/gather.h"
#include "hlo/linalg.h"
#include "hlo/sort.h"
#include "hlo/target.h"
#include "ops/attrs.h"
#include "ops/lower_util.h"
#include "ops/ops.h"

static tpj_hlo_value_t tpj_matmul(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t y,
                                  tpj_dtype_t dt) {
  x = tpj_hlo_emit_convert(b, x, dt);
  y = tpj_hlo_emit_convert(b, y, dt);
  if (x.ndim == 3 && y.ndim == 3) {
    int64_t xb = 0, yb = 0, xc = 2, yc = 1;
    return tpj_hlo_emit_dot_general(b, x, y, &xb, &yb, 1, &xc, &yc, 1, dt);
  }
  /* mm (2x2), mv (2x1), dot (1x1): x's last dim against y's first */
  int64_t xc = x.ndim - 1, yc = 0;
  return tpj_hlo_emit_dot_general(b, x, y, NULL, NULL, 0, &xc, &yc, 1, dt);
}

void tpj_lower_mm(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nin < 2) {
    tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "mm needs two operands"));
    return;
  }
  results[0] = tpj_matmul(ctx->b, ctx->in[0], ctx->in[1], o->dtype);
}

void tpj_lower_addmm(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nin < 3 || ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_addmm_t)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "addmm: bad operands"));
    return;
  }
  const tpj_attrs_addmm_t* at = TPJ_ATTRS(ctx, tpj_attrs_addmm_t);
  int next = 3;
  tpj_hlo_value_t p = tpj_matmul(b, ctx->in[1], ctx->in[2], o->dtype);
  tpj_hlo_value_t beta = {-1, 0, TPJ_DTYPE_INVALID, 0, {0}}, alpha = beta;
  if (at->has_beta) beta = ctx->in[next++];
  if (at->has_alpha) alpha = ctx->in[next++];
  if (ctx->nin < next) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "addmm: missing scalars"));
    return;
  }
  if (at->has_alpha)
    p = tpj_hlo_emit_binary(b, "stablehlo.multiply", p,
                            tpj_ops_cast_to(b, alpha, o->dtype, o->dims, o->ndim));
  if (at->has_bias) {
    /* beta == 0 drops the bias entirely (NaNs in it do not propagate) */
    tpj_hlo_value_t bias = tpj_ops_cast_to(b, ctx->in[0], o->dtype, o->dims, o->ndim);
    if (at->has_beta)
      bias = tpj_hlo_emit_binary(b, "stablehlo.multiply", bias,
                                 tpj_ops_cast_to(b, beta, o->dtype, o->dims, o->ndim));
    p = tpj_hlo_emit_binary(b, o->dtype == TPJ_BOOL ? "stablehlo.or" : "stablehlo.add", p, bias);
  }
  results[0] = p;
}

#define ADD(x, y) tpj_hlo_emit_binary(b, "stablehlo.add", x, y)
#define SUB(x, y) tpj_hlo_emit_binary(b, "stablehlo.subtract", x, y)
#define MUL(x, y) tpj_hlo_emit_binary(b, "stablehlo.multiply", x, y)
#define CMP(x, y, d) tpj_hlo_emit_compare(b, x, y, d)

/* aten::linalg_cross: attrs tpj_attrs_linalg_cross_t. Both
 * operands go to the output's dtype and dims; component i is
 * a[i+1] * b[i+2] - a[i+2] * b[i+1], as CPU's kernel computes it. */
void tpj_lower_linalg_cross(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_ops_need(ctx, 2, TPJ_ATTRS_WORDS(tpj_attrs_linalg_cross_t), 1, "linalg_cross")) return;
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[0], o->dtype, o->dims, o->ndim);
  tpj_hlo_value_t y = tpj_ops_cast_to(b, ctx->in[1], o->dtype, o->dims, o->ndim);
  int dim = (int)TPJ_ATTRS(ctx, tpj_attrs_linalg_cross_t)->dim;
  tpj_hlo_value_t c[3];
  for (int i = 0; i < 3; ++i) {
    int j = (i + 1) % 3, k = (i + 2) % 3;
    c[i] = SUB(MUL(tpj_ops_element_at(b, x, dim, j), tpj_ops_element_at(b, y, dim, k)),
               MUL(tpj_ops_element_at(b, x, dim, k), tpj_ops_element_at(b, y, dim, j)));
  }
  results[0] = tpj_hlo_emit_concatenate(b, c, 3, dim);
}

/* ---- linalg_matrix_exp ------------------------------------------------------- */

/* a @ c over the leading batch dims of [..., n, n] values */
static tpj_hlo_value_t matmul(tpj_hlo_builder_t* b, tpj_hlo_value_t a, tpj_hlo_value_t c) {
  int64_t batch[TPJ_MAX_DIMS];
  int nb = a.ndim - 2;
  for (int d = 0; d < nb; ++d) batch[d] = d;
  int64_t ac = a.ndim - 1, cc = a.ndim - 2;
  return tpj_hlo_emit_dot_general(b, a, c, batch, batch, nb, &ac, &cc, 1, a.dtype);
}

/* aten::linalg_matrix_exp: attrs tpj_attrs_matrix_exp_t (the glue sends
 * half types to CPU's kernel). exp(A) = T(A / 2^s)^(2^s), T the degree-18
 * Taylor polynomial in Horner form: its truncation error at norm 1 is
 * below 1/19!, far under float64's precision. */
void tpj_lower_matrix_exp(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_ops_need(ctx, 1, TPJ_ATTRS_WORDS(tpj_attrs_matrix_exp_t), 1, "linalg_matrix_exp"))
    return;
  const tpj_attrs_matrix_exp_t* at = TPJ_ATTRS(ctx, tpj_attrs_matrix_exp_t);
  tpj_hlo_builder_t* b = ctx->b;
  tpj_dtype_t cd = (tpj_dtype_t)at->compute;
  int64_t s = at->squarings;
  tpj_hlo_value_t a = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  tpj_dtype_t rd = cd == TPJ_C64 ? TPJ_F32 : cd == TPJ_C128 ? TPJ_F64 : cd;
  /* a scalar v of cd shaped like a */
  #define CD_FULL(v)                                                                         \
    (rd == cd ? tpj_ops_full_like(b, a, cd, (v))                                                     \
              : tpj_hlo_emit_complex(b, tpj_ops_full_like(b, a, rd, (v)), tpj_ops_full_like(b, a, rd, 0.0)))
  tpj_hlo_value_t x = MUL(a, CD_FULL(ldexp(1.0, (int)-s)));
  int n = a.ndim;
  tpj_hlo_value_t eye_r = tpj_hlo_emit_convert(
      b, CMP(tpj_hlo_emit_iota(b, TPJ_I64, a.dims, n, n - 2),
             tpj_hlo_emit_iota(b, TPJ_I64, a.dims, n, n - 1), "EQ"), rd);
  tpj_hlo_value_t eye = rd == cd ? eye_r : tpj_hlo_emit_complex(b, eye_r, tpj_ops_full_like(b, a, rd, 0.0));
  tpj_hlo_value_t e = ADD(eye, MUL(x, CD_FULL(1.0 / 18)));
  for (int k = 17; k >= 1; --k) e = ADD(eye, MUL(matmul(b, x, e), CD_FULL(1.0 / k)));
  #undef CD_FULL
  for (int64_t i = 0; i < s; ++i) e = matmul(b, e, e);
  results[0] = tpj_hlo_emit_convert(b, e, ctx->outs[0].dtype);
}

/* The segments of a grouped product: the grouped dim's m rows (padded to
 * nb blocks of bs rows) cut at every block boundary and at every group
 * offset. There are nb + g of them (some empty), and each lies inside one
 * block and one group, so segment p is block blk[p]'s rows masked to
 * [start, end) times group grp[p]'s matrix. A loop over the segments
 * (grouped_mm_loop) does about m + g * bs rows of work in all, whatever the
 * routing, where multiplying every row by every group's matrix costs m * g
 * (64x for a 64-expert MoE). */
typedef struct {
  int64_t bs, nb, np;   /* block rows, blocks, segments (nb + g) */
  tpj_hlo_value_t blk;  /* (np) i64: the first row of the block each segment lies in */
  tpj_hlo_value_t grp;  /* (np) i64: its group, clamped to g - 1 */
  tpj_hlo_value_t keep; /* (np, bs) bool: the block's rows in the segment
                         * (none for rows past the last group) */
} tpj_grouped_segments_t;

static tpj_grouped_segments_t grouped_segments(tpj_hlo_builder_t* b, tpj_hlo_value_t offs32,
                                               int64_t m) {
  tpj_grouped_segments_t sg;
  int64_t g = offs32.dims[0];
  /* blocks about as long as an average group: shorter ones make more
   * segments (loop trips), longer ones multiply more masked rows */
  int64_t bs = 1, avg = (m + g - 1) / g;
  while (bs < avg) bs *= 2;
  sg.bs = bs;
  sg.nb = (m + bs - 1) / bs;
  sg.np = sg.nb + g;
  int64_t mp = sg.nb * bs, np = sg.np, one = 1;
  tpj_hlo_value_t offs = tpj_hlo_emit_convert(b, offs32, TPJ_I64);
  offs = tpj_hlo_emit_binary(b, "stablehlo.maximum",
                             tpj_hlo_emit_binary(b, "stablehlo.minimum", offs, tpj_ops_i64_like(b, offs, mp)),
                             tpj_ops_i64_like(b, offs, 0));
  /* the cut points: 0, the interior block boundaries and the offsets, sorted */
  tpj_hlo_value_t cuts[3];
  int ncut = 0;
  cuts[ncut++] = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, 0), &one, 1);
  if (sg.nb > 1) {
    int64_t nint = sg.nb - 1;
    tpj_hlo_value_t it = tpj_hlo_emit_iota(b, TPJ_I64, &nint, 1, 0);
    cuts[ncut++] = tpj_hlo_emit_binary(
        b, "stablehlo.multiply", tpj_hlo_emit_binary(b, "stablehlo.add", it, tpj_ops_i64_like(b, it, 1)),
        tpj_ops_i64_like(b, it, bs));
  }
  cuts[ncut++] = offs;
  tpj_hlo_value_t start = tpj_hlo_emit_sort_1d(b, tpj_hlo_emit_concatenate(b, cuts, ncut, 0));
  /* segment p is [start[p], start[p + 1]), the last one ending at mp */
  int64_t q1 = np;
  tpj_hlo_value_t tail[2] = {tpj_hlo_emit_slice(b, start, &one, &q1, &one),
                             tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, mp), &one, 1)};
  tpj_hlo_value_t end = tpj_hlo_emit_concatenate(b, tail, 2, 0);
  tpj_hlo_value_t bsn = tpj_ops_i64_like(b, start, bs);
  tpj_hlo_value_t blk = tpj_hlo_emit_binary(b, "stablehlo.minimum", tpj_hlo_emit_binary(b, "stablehlo.divide", start, bsn),
                                            tpj_ops_i64_like(b, start, sg.nb - 1));
  sg.blk = tpj_hlo_emit_binary(b, "stablehlo.multiply", blk, bsn);
  /* group(row) = the number of offsets <= row; g for rows past the last */
  int64_t pg[2] = {np, g}, d0 = 0, d1 = 1, over = 1;
  tpj_hlo_value_t past = tpj_hlo_emit_compare(b, tpj_hlo_emit_broadcast_in_dim(b, start, pg, 2, &d0),
                                              tpj_hlo_emit_broadcast_in_dim(b, offs, pg, 2, &d1), "GE");
  tpj_hlo_value_t grp = tpj_hlo_emit_reduce(b, tpj_hlo_emit_convert(b, past, TPJ_I64),
                                            tpj_hlo_emit_zero(b, TPJ_I64), &over, 1, "stablehlo.add");
  tpj_hlo_value_t valid = tpj_hlo_emit_compare(b, grp, tpj_ops_i64_like(b, grp, g), "LT");
  sg.grp = tpj_hlo_emit_binary(b, "stablehlo.minimum", grp, tpj_ops_i64_like(b, grp, g - 1));
  /* row r of segment p's block: blk + r, kept when inside [start, end) */
  int64_t pb[2] = {np, bs};
  tpj_hlo_value_t row = tpj_hlo_emit_binary(b, "stablehlo.add",
                                            tpj_hlo_emit_broadcast_in_dim(b, sg.blk, pb, 2, &d0),
                                            tpj_hlo_emit_iota(b, TPJ_I64, pb, 2, 1));
  tpj_hlo_value_t in_seg = tpj_hlo_emit_binary(
      b, "stablehlo.and",
      tpj_hlo_emit_compare(b, row, tpj_hlo_emit_broadcast_in_dim(b, start, pb, 2, &d0), "GE"),
      tpj_hlo_emit_compare(b, row, tpj_hlo_emit_broadcast_in_dim(b, end, pb, 2, &d0), "LT"));
  sg.keep = tpj_hlo_emit_binary(b, "stablehlo.and", in_seg,
                                tpj_hlo_emit_broadcast_in_dim(b, valid, pb, 2, &d0));
  return sg;
}

/* Element p of a 1-D i64 value, 0-d. */
static tpj_hlo_value_t grouped_at(tpj_hlo_builder_t* b, tpj_hlo_value_t v, tpj_hlo_value_t p) {
  int64_t one = 1;
  return tpj_hlo_emit_reshape(b, tpj_hlo_emit_dynamic_slice(b, v, &p, &one), NULL, 0);
}

/* The loop over segments. Layout 0: a (mp, k) padded, w (g, k, n), bias
 * (g, n) or none; out (mp, n) += keep * (a[blk:blk+bs] @ w[grp] + bias[grp]).
 * Layout 2: a (m, mp), w (mp, n); out (g, m, n): out[grp] += a[:, blk:blk+bs]
 * * keep @ w[blk:blk+bs]. A row's product is added to zeros once (the other
 * segments of its block add masked zeros), so layout 0 is exact; layout 2
 * sums a group's segments in order. */
static tpj_hlo_value_t grouped_mm_loop(tpj_hlo_builder_t* b, int layout, tpj_hlo_value_t a,
                                       tpj_hlo_value_t w, const tpj_hlo_value_t* bias,
                                       const tpj_grouped_segments_t* sg, tpj_hlo_value_t out) {
  tpj_hlo_value_t init[8] = {tpj_hlo_emit_const_i64(b, 0), out, a, w, sg->blk, sg->grp, sg->keep,
                             bias ? *bias : tpj_hlo_emit_const_i64(b, 0)};
  tpj_hlo_value_t c[8], v[8], res[8];
  tpj_hlo_while_t lp;
  tpj_hlo_while_begin(b, &lp, init, 8, c);
  tpj_hlo_while_body(b, &lp, tpj_hlo_emit_compare(b, c[0], tpj_hlo_emit_const_i64(b, sg->np), "LT"), v);
  tpj_hlo_value_t p = v[0], acc = v[1], av = v[2], wv = v[3];
  tpj_hlo_value_t z = tpj_hlo_emit_const_i64(b, 0);
  tpj_hlo_value_t blk = grouped_at(b, v[4], p), grp = grouped_at(b, v[5], p);
  int64_t bs = sg->bs, ks[2] = {1, bs};
  tpj_hlo_value_t kst[2] = {p, z};
  tpj_hlo_value_t keep = tpj_hlo_emit_reshape(b, tpj_hlo_emit_dynamic_slice(b, v[6], kst, ks), &bs, 1);
  tpj_dtype_t dt = acc.dtype;
  tpj_hlo_value_t next_acc;
  if (layout == 0) {
    int64_t k = av.dims[1], n = wv.dims[2], as[2] = {bs, k}, ws[3] = {1, k, n}, kn[2] = {k, n};
    int64_t bn[2] = {bs, n}, d0 = 0;
    tpj_hlo_value_t ast[2] = {blk, z}, wst[3] = {grp, z, z};
    tpj_hlo_value_t rows = tpj_hlo_emit_dynamic_slice(b, av, ast, as);
    tpj_hlo_value_t mat = tpj_hlo_emit_reshape(b, tpj_hlo_emit_dynamic_slice(b, wv, wst, ws), kn, 2);
    int64_t rc = 1, mc = 0;
    tpj_hlo_value_t prod = tpj_hlo_emit_dot_general(b, rows, mat, NULL, NULL, 0, &rc, &mc, 1, dt);
    if (bias) {
      int64_t one_n[2] = {1, n}, d1 = 1;
      tpj_hlo_value_t bst[2] = {grp, z};
      tpj_hlo_value_t bg = tpj_hlo_emit_reshape(b, tpj_hlo_emit_dynamic_slice(b, v[7], bst, one_n), &n, 1);
      prod = tpj_hlo_emit_binary(b, "stablehlo.add", prod,
                                 tpj_hlo_emit_broadcast_in_dim(b, tpj_hlo_emit_convert(b, bg, dt), bn, 2, &d1));
    }
    prod = tpj_hlo_emit_select(b, tpj_hlo_emit_broadcast_in_dim(b, keep, bn, 2, &d0), prod,
                               tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, dt), bn, 2));
    tpj_hlo_value_t ost[2] = {blk, z};
    tpj_hlo_value_t cur = tpj_hlo_emit_dynamic_slice(b, acc, ost, bn);
    next_acc = tpj_hlo_emit_dynamic_update_slice(b, acc, tpj_hlo_emit_binary(b, "stablehlo.add", cur, prod), ost);
  } else {
    int64_t m = av.dims[0], n = wv.dims[1], as[2] = {m, bs}, ws[2] = {bs, n}, mb[2] = {m, bs};
    int64_t d1 = 1, mn[2] = {m, n}, omn[3] = {1, m, n};
    tpj_hlo_value_t ast[2] = {z, blk}, wst[2] = {blk, z};
    tpj_hlo_value_t cols = tpj_hlo_emit_dynamic_slice(b, av, ast, as);
    cols = tpj_hlo_emit_select(b, tpj_hlo_emit_broadcast_in_dim(b, keep, mb, 2, &d1), cols,
                               tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, cols.dtype), mb, 2));
    tpj_hlo_value_t rows = tpj_hlo_emit_dynamic_slice(b, wv, wst, ws);
    int64_t cc = 1, rc = 0;
    tpj_hlo_value_t prod = tpj_hlo_emit_dot_general(b, cols, rows, NULL, NULL, 0, &cc, &rc, 1, dt);
    tpj_hlo_value_t ost[3] = {grp, z, z};
    tpj_hlo_value_t cur = tpj_hlo_emit_reshape(b, tpj_hlo_emit_dynamic_slice(b, acc, ost, omn), mn, 2);
    next_acc = tpj_hlo_emit_dynamic_update_slice(
        b, acc, tpj_hlo_emit_reshape(b, tpj_hlo_emit_binary(b, "stablehlo.add", cur, prod), omn, 3), ost);
  }
  tpj_hlo_value_t next[8] = {tpj_hlo_emit_binary(b, "stablehlo.add", p, tpj_hlo_emit_const_i64(b, 1)),
                             next_acc, av, wv, v[4], v[5], v[6], v[7]};
  tpj_hlo_while_end(b, &lp, next, res);
  return res[1];
}

/* aten::_grouped_mm, the layouts MoE layers use. attrs tpj_attrs_grouped_mm_t;
 * the layouts:
 *   0: a (m, k) x b (g, k, n) with offs (g) int32, the cumulative row counts
 *      of the groups: row i uses b[group(i)]; rows from offs[g-1] on are 0.
 *   1: a (g, m, k) x b (g, k, n): a batched product.
 *   2: a (m, s) x b (s, n) with offs (g) over s: out[e] = the product of
 *      group e's columns of a and rows of b, (g, m, n) -- the weight
 *      gradient of layout 0; no bias.
 * Inputs: a, b, then offs (layouts 0 and 2), then bias (g, n) when present.
 * Layouts 0 and 2 loop over segments (grouped_segments): static shapes
 * whatever the routing, so a compiled graph never depends on it. */
void tpj_lower_grouped_mm(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  int words = TPJ_ATTRS_WORDS(tpj_attrs_grouped_mm_t);
  if (!tpj_ops_need(ctx, 2, words, 0, "_grouped_mm")) return;
  const tpj_attrs_grouped_mm_t* at = TPJ_ATTRS(ctx, tpj_attrs_grouped_mm_t);
  tpj_hlo_builder_t* b = ctx->b;
  int layout = (int)at->layout, has_bias = (int)at->has_bias;
  tpj_dtype_t acc = (tpj_dtype_t)at->compute;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t a = ctx->in[0], w = ctx->in[1];
  if (layout == 1) {
    int64_t bat = 0, ac = 2, wc = 1;
    tpj_hlo_value_t r = tpj_hlo_emit_dot_general(b, a, w, &bat, &bat, 1, &ac, &wc, 1, acc);
    if (has_bias && tpj_ops_need(ctx, 3, words, 0, "_grouped_mm")) {
      int64_t bd[2] = {0, 2};
      tpj_hlo_value_t bias = tpj_hlo_emit_convert(b, ctx->in[2], acc);
      r = tpj_hlo_emit_binary(b, "stablehlo.add", r,
                              tpj_hlo_emit_broadcast_in_dim(b, bias, r.dims, 3, bd));
    }
    results[0] = tpj_hlo_emit_convert(b, r, o->dtype);
    return;
  }
  if (!tpj_ops_need(ctx, 3 + has_bias, words, 0, "_grouped_mm")) return;
  /* XLA:CPU multiplies low-precision operands through a slow path: widen
   * them to the accumulation dtype first (the products of bfloat16 or
   * float16 values are exact in float32, so the result is the same) */
  if (tpj_hlo_cpu_target()) {
    a = tpj_hlo_emit_convert(b, a, acc);
    w = tpj_hlo_emit_convert(b, w, acc);
  }
  int64_t lo2[2] = {0, 0};
  if (layout == 2) {
    int64_t m = a.dims[0], sl = a.dims[1], n = w.dims[1], g = ctx->in[2].dims[0];
    tpj_grouped_segments_t sg = grouped_segments(b, ctx->in[2], sl);
    int64_t mp = sg.nb * sg.bs, hia[2] = {0, mp - sl}, hiw[2] = {mp - sl, 0}, gmn[3] = {g, m, n};
    tpj_hlo_value_t ap = tpj_hlo_emit_pad(b, a, tpj_hlo_emit_zero(b, a.dtype), lo2, hia);
    tpj_hlo_value_t wp = tpj_hlo_emit_pad(b, w, tpj_hlo_emit_zero(b, w.dtype), lo2, hiw);
    tpj_hlo_value_t r = grouped_mm_loop(b, 2, ap, wp, NULL, &sg,
                                        tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, acc), gmn, 3));
    results[0] = tpj_hlo_emit_convert(b, r, o->dtype);
    return;
  }
  int64_t m = a.dims[0], n = w.dims[2];
  tpj_grouped_segments_t sg = grouped_segments(b, ctx->in[2], m);
  int64_t mp = sg.nb * sg.bs, hi2[2] = {mp - m, 0}, mpn[2] = {mp, n};
  tpj_hlo_value_t ap = tpj_hlo_emit_pad(b, a, tpj_hlo_emit_zero(b, a.dtype), lo2, hi2);
  tpj_hlo_value_t r = grouped_mm_loop(b, 0, ap, w, has_bias ? &ctx->in[3] : NULL, &sg,
                                      tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, acc), mpn, 2));
  int64_t s0[2] = {0, 0}, s1[2] = {m, n}, st[2] = {1, 1};
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_slice(b, r, s0, s1, st), o->dtype);
}
