/* ops/distance: p-norm distances between rows: _cdist_forward / _cdist_backward
 * (torch.cdist) and _pdist_forward / _pdist_backward (F.pdist), computed
 * directly from the differences the way CPU's kernels do (CPU's matmul path
 * for large euclidean inputs is PyTorch's own composite, not these ops).
 * attrs: tpj_attrs_dist_t; the general p travels as a runtime scalar (last
 * operand). */
#include "ops/attrs.h"
#include "ops/window.h"

#define TPJ_MUL(x, y) tpj_hlo_emit_binary(b, "stablehlo.multiply", x, y)
#define TPJ_SUB(x, y) tpj_hlo_emit_binary(b, "stablehlo.subtract", x, y)
#define TPJ_DIV(x, y) tpj_hlo_emit_binary(b, "stablehlo.divide", x, y)


static int tpj_dist_bad(tpj_op_ctx_t* ctx, const char* op) {
  tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "%s: bad operands", op));
  return 0;
}

static tpj_hlo_value_t tpj_dist_c(tpj_hlo_builder_t* b, tpj_dtype_t dt, double v, const tpj_hlo_value_t* like) {
  return tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_f64(b, dt, v), like->dims, like->ndim);
}

/* x1 (B, P, M), x2 (B, R, M) -> x1[:, :, None] - x2[:, None] (B, P, R, M) */
static tpj_hlo_value_t tpj_dist_diff(tpj_hlo_builder_t* b, tpj_hlo_value_t x1, tpj_hlo_value_t x2) {
  int64_t d[4] = {x1.dims[0], x1.dims[1], x2.dims[1], x1.dims[2]};
  int64_t b1[3] = {0, 1, 3}, b2[3] = {0, 2, 3};
  return TPJ_SUB(tpj_hlo_emit_broadcast_in_dim(b, x1, d, 4, b1), tpj_hlo_emit_broadcast_in_dim(b, x2, d, 4, b2));
}

/* |diff| reduced over the last dim by the norm: (B, P, R) */
static tpj_hlo_value_t tpj_dist_norm(tpj_hlo_builder_t* b, tpj_hlo_value_t diff, int kind, tpj_hlo_value_t p) {
  tpj_dtype_t cd = diff.dtype;
  int64_t last = 3;
  tpj_hlo_value_t a = tpj_hlo_emit_unary(b, "stablehlo.abs", diff);
  tpj_hlo_value_t zero = tpj_hlo_emit_zero(b, cd);
  switch (kind) {
    case TPJ_DIST_ZERO: {
      /* CPU: min(ceil(|d|), 1), so NaN stays NaN */
      tpj_hlo_value_t v = tpj_hlo_emit_binary(b, "stablehlo.minimum", tpj_hlo_emit_unary(b, "stablehlo.ceil", a),
                                              tpj_dist_c(b, cd, 1.0, &a));
      return tpj_hlo_emit_reduce(b, v, zero, &last, 1, "stablehlo.add");
    }
    case TPJ_DIST_ONE:
      return tpj_hlo_emit_reduce(b, a, zero, &last, 1, "stablehlo.add");
    case TPJ_DIST_TWO:
      return tpj_hlo_emit_unary(b, "stablehlo.sqrt",
                                tpj_hlo_emit_reduce(b, TPJ_MUL(diff, diff), zero, &last, 1, "stablehlo.add"));
    case TPJ_DIST_INF:
      return tpj_hlo_emit_reduce(b, a, zero, &last, 1, "stablehlo.maximum");
    default: {
      tpj_hlo_value_t pp = tpj_hlo_emit_broadcast_to(b, p, a.dims, a.ndim);
      tpj_hlo_value_t s = tpj_hlo_emit_reduce(b, tpj_hlo_emit_binary(b, "stablehlo.power", a, pp), zero, &last, 1,
                                              "stablehlo.add");
      tpj_hlo_value_t inv = TPJ_DIV(tpj_hlo_emit_one(b, cd), p);
      return tpj_hlo_emit_binary(b, "stablehlo.power", s, tpj_hlo_emit_broadcast_to(b, inv, s.dims, s.ndim));
    }
  }
}

/* x as (B, N, M) in cd */
static tpj_hlo_value_t tpj_dist_3d(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_dtype_t cd) {
  int64_t bs = 1;
  for (int i = 0; i < x.ndim - 2; ++i) bs *= x.dims[i];
  int64_t d[3] = {bs, x.dims[x.ndim - 2], x.dims[x.ndim - 1]};
  return tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, x, cd), d, 3);
}

static int tpj_dist_params(tpj_op_ctx_t* ctx, int nin, tpj_dtype_t* cd, int* kind, tpj_hlo_value_t* p,
                           const char* op) {
  if (ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_dist_t) || ctx->nin < nin)
    return tpj_dist_bad(ctx, op);
  const tpj_attrs_dist_t* at = TPJ_ATTRS(ctx, tpj_attrs_dist_t);
  *cd = (tpj_dtype_t)at->compute;
  *kind = (int)at->kind;
  if (*kind == TPJ_DIST_P) {
    if (ctx->nin < nin + 1) return tpj_dist_bad(ctx, op);
    *p = tpj_hlo_emit_convert(ctx->b, ctx->in[nin], *cd);
  } else {
    *p = tpj_hlo_emit_zero(ctx->b, *cd);
  }
  return 1;
}

/* aten::_cdist_forward: in[0] x1 (*, P, M), in[1] x2 (*, R, M) with the
 * same (broadcast by the glue) batch dims. */
void tpj_lower_cdist(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_dtype_t cd;
  int kind;
  tpj_hlo_value_t p;
  if (!tpj_dist_params(ctx, 2, &cd, &kind, &p, "_cdist_forward")) return;
  tpj_hlo_value_t d = tpj_dist_norm(b, tpj_dist_diff(b, tpj_dist_3d(b, ctx->in[0], cd), tpj_dist_3d(b, ctx->in[1], cd)),
                                    kind, p);
  const tpj_rt_shape_t* o = &ctx->outs[0];
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_reshape(b, d, o->dims, o->ndim), o->dtype);
}

static tpj_hlo_value_t tpj_dist_sign(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  return tpj_hlo_emit_unary(b, "stablehlo.sign", x);
}

/* The gradient of dist (B, P, R) with respect to x1 along the differences
 * diff (B, P, R, M), times g, summed over R: CPU's per-norm formulas. */
static tpj_hlo_value_t tpj_dist_grad(tpj_hlo_builder_t* b, tpj_hlo_value_t diff, tpj_hlo_value_t g,
                                     tpj_hlo_value_t dist, int kind, tpj_hlo_value_t p) {
  tpj_dtype_t cd = diff.dtype;
  int64_t bd[3] = {0, 1, 2}, sum_r = 2;
  tpj_hlo_value_t G = tpj_hlo_emit_broadcast_in_dim(b, g, diff.dims, 4, bd);
  tpj_hlo_value_t D = tpj_hlo_emit_broadcast_in_dim(b, dist, diff.dims, 4, bd);
  tpj_hlo_value_t zero = tpj_dist_c(b, cd, 0.0, &diff), one = tpj_dist_c(b, cd, 1.0, &diff);
  tpj_hlo_value_t dz = tpj_hlo_emit_compare(b, D, zero, "EQ");
  tpj_hlo_value_t a = tpj_hlo_emit_unary(b, "stablehlo.abs", diff);
  tpj_hlo_value_t r;
  switch (kind) {
    case TPJ_DIST_ZERO:
      r = zero;
      break;
    case TPJ_DIST_ONE:
      r = TPJ_MUL(G, tpj_dist_sign(b, diff));
      break;
    case TPJ_DIST_TWO:
      r = tpj_hlo_emit_select(b, dz, zero, TPJ_DIV(TPJ_MUL(G, diff), D));
      break;
    case TPJ_DIST_INF: {
      tpj_hlo_value_t hit = tpj_hlo_emit_binary(b, "stablehlo.minimum", one,
                                                tpj_hlo_emit_unary(b, "stablehlo.ceil",
                                                                   tpj_hlo_emit_unary(b, "stablehlo.abs", TPJ_SUB(a, D))));
      r = TPJ_MUL(TPJ_MUL(G, tpj_dist_sign(b, diff)), TPJ_SUB(one, hit));
      break;
    }
    default: {
      tpj_hlo_value_t P = tpj_hlo_emit_broadcast_to(b, p, diff.dims, 4);
      tpj_hlo_value_t pm1 = TPJ_SUB(P, one);
      tpj_hlo_value_t lt2 = tpj_hlo_emit_compare(b, P, tpj_dist_c(b, cd, 2.0, &diff), "LT");
      /* p < 2: sign(d) |d|^(p-1) g / D^(p-1), 0 where d == 0 and p < 1 */
      tpj_hlo_value_t low = TPJ_DIV(TPJ_MUL(TPJ_MUL(tpj_dist_sign(b, diff), tpj_hlo_emit_binary(b, "stablehlo.power", a, pm1)), G),
                                    tpj_hlo_emit_binary(b, "stablehlo.power", D, pm1));
      low = tpj_hlo_emit_select(
          b, tpj_hlo_emit_binary(b, "stablehlo.and", tpj_hlo_emit_compare(b, diff, zero, "EQ"),
                                 tpj_hlo_emit_compare(b, P, one, "LT")),
          zero, low);
      /* otherwise d |d|^(p-2) g / D^(p-1) */
      tpj_hlo_value_t high = TPJ_DIV(TPJ_MUL(TPJ_MUL(diff, tpj_hlo_emit_binary(b, "stablehlo.power", a, TPJ_SUB(pm1, one))), G),
                                     tpj_hlo_emit_binary(b, "stablehlo.power", D, pm1));
      r = tpj_hlo_emit_select(b, dz, zero, tpj_hlo_emit_select(b, lt2, low, high));
      break;
    }
  }
  return tpj_hlo_emit_reduce(b, r, tpj_hlo_emit_zero(b, cd), &sum_r, 1, "stablehlo.add");
}

/* aten::_cdist_backward: in[0] grad (*, P, R), in[1] x1, in[2] x2, in[3]
 * cdist; result like x1. */
void tpj_lower_cdist_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_dtype_t cd;
  int kind;
  tpj_hlo_value_t p;
  if (!tpj_dist_params(ctx, 4, &cd, &kind, &p, "_cdist_backward")) return;
  tpj_hlo_value_t x1 = tpj_dist_3d(b, ctx->in[1], cd), x2 = tpj_dist_3d(b, ctx->in[2], cd);
  tpj_hlo_value_t g = tpj_dist_3d(b, ctx->in[0], cd), dist = tpj_dist_3d(b, ctx->in[3], cd);
  tpj_hlo_value_t r = tpj_dist_grad(b, tpj_dist_diff(b, x1, x2), g, dist, kind, p);
  const tpj_rt_shape_t* o = &ctx->outs[0];
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_reshape(b, r, o->dims, o->ndim), o->dtype);
}

/* The (N, N) distances of x (N, M) as (1, N, N) */
static tpj_hlo_value_t tpj_pdist_full(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int kind, tpj_hlo_value_t p,
                                      tpj_hlo_value_t* diff) {
  int64_t d3[3] = {1, x.dims[0], x.dims[1]};
  tpj_hlo_value_t x3 = tpj_hlo_emit_reshape(b, x, d3, 3);
  *diff = tpj_dist_diff(b, x3, x3);
  return tpj_dist_norm(b, *diff, kind, p);
}

/* aten::_pdist_forward: in[0] x (N, M); the distances of rows i < j in
 * row-major order: row i's slice j > i of the full matrix, concatenated. */
void tpj_lower_pdist(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_dtype_t cd;
  int kind;
  tpj_hlo_value_t p, diff;
  if (!tpj_dist_params(ctx, 1, &cd, &kind, &p, "_pdist_forward") || ctx->in[0].ndim != 2) return;
  int64_t n = ctx->in[0].dims[0];
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (n < 2) {
    results[0] = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, o->dtype), o->dims, o->ndim);
    return;
  }
  tpj_hlo_value_t full = tpj_pdist_full(b, tpj_hlo_emit_convert(b, ctx->in[0], cd), kind, p, &diff);
  int64_t nn[2] = {n, n};
  full = tpj_hlo_emit_reshape(b, full, nn, 2);
  tpj_hlo_value_t acc = {-1, 0, TPJ_DTYPE_INVALID, 0, {0}};
  for (int64_t i = 0; i + 1 < n && tpj_hlo_ok(b); ++i) {
    int64_t st[2] = {i, i + 1}, lim[2] = {i + 1, n}, one[2] = {1, 1}, len = n - 1 - i;
    tpj_hlo_value_t row = tpj_hlo_emit_reshape(b, tpj_hlo_emit_slice(b, full, st, lim, one), &len, 1);
    acc = tpj_window_append(b, acc, &row, 1, 0);
  }
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_reshape(b, acc, o->dims, o->ndim), o->dtype);
}

/* aten::_pdist_backward: in[0] grad (N(N-1)/2), in[1] x, in[2] pdist. The
 * condensed gradient becomes the symmetric (N, N) matrix G; then row i gets
 * sum_j G[i, j] * d dist(x_i - x_j) (the formula is odd in the difference,
 * so the pair's other row gets the opposite). The distances are recomputed
 * from x the way the forward computed them. */
void tpj_lower_pdist_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_dtype_t cd;
  int kind;
  tpj_hlo_value_t p, diff;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (!tpj_dist_params(ctx, 3, &cd, &kind, &p, "_pdist_backward") || ctx->in[1].ndim != 2) return;
  int64_t n = ctx->in[1].dims[0];
  if (n < 2) {
    results[0] = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, o->dtype), o->dims, o->ndim);
    return;
  }
  tpj_hlo_value_t g = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  tpj_hlo_value_t rows[TPJ_HLO_MAX_ARGS], upper = {-1, 0, TPJ_DTYPE_INVALID, 0, {0}};
  int nr = 0;
  int64_t k = 0;
  for (int64_t i = 0; i < n && tpj_hlo_ok(b); ++i) {
    int64_t len = n - 1 - i, r1[2] = {1, n};
    tpj_hlo_value_t row;
    if (len > 0) {
      int64_t st = k, lim = k + len, one = 1, lo = i + 1, hi = 0;
      row = tpj_hlo_emit_slice(b, g, &st, &lim, &one);
      row = tpj_hlo_emit_pad(b, row, tpj_hlo_emit_zero(b, cd), &lo, &hi);
      k += len;
    } else {
      row = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, cd), &n, 1);
    }
    rows[nr++] = tpj_hlo_emit_reshape(b, row, r1, 2);
    if (nr < TPJ_HLO_MAX_ARGS - 1 && i + 1 < n) continue;
    upper = tpj_window_append(b, upper, rows, nr, 0);
    nr = 0;
  }
  int64_t perm[2] = {1, 0}, d3[3] = {1, n, n};
  tpj_hlo_value_t sym = tpj_hlo_emit_binary(b, "stablehlo.add", upper, tpj_hlo_emit_transpose(b, upper, perm));
  tpj_hlo_value_t dist = tpj_pdist_full(b, tpj_hlo_emit_convert(b, ctx->in[1], cd), kind, p, &diff);
  tpj_hlo_value_t r = tpj_dist_grad(b, diff, tpj_hlo_emit_reshape(b, sym, d3, 3), dist, kind, p);
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_reshape(b, r, o->dims, o->ndim), o->dtype);
}
