/* ops/linalg_decomp: matrix decompositions and solves for float32/float64 —
 * Cholesky, LU with partial pivoting, triangular and LU/Cholesky solves,
 * inverse, det/slogdet, QR (XLA's Householder expanders, which follow
 * LAPACK's geqrf conventions) and symmetric eigenvalues. Cholesky and LU are
 * stablehlo.while loops written here, one column per step, because LAPACK's
 * `info` (the first failing minor or zero pivot) and getrf's pivot choice
 * (the first row of largest |a|) are part of PyTorch's results and XLA has
 * no LU. Every lowering flattens the batch dims to one leading dim N. */
#include <string.h>

#include "hlo/linalg.h"
#include "ops/attrs.h"
#include "ops/ops.h"

typedef tpj_hlo_builder_t Bld;
typedef tpj_hlo_value_t Val;

/* ---- small helpers ------------------------------------------------------ */

/* x (0-d, or dims matching out's leading dims) broadcast to dims. */
static Val lead(Bld* b, Val x, const int64_t* dims, int nd) {
  int64_t bd[TPJ_MAX_DIMS];
  for (int i = 0; i < x.ndim; ++i) bd[i] = i;
  return tpj_hlo_emit_broadcast_in_dim(b, x, dims, nd, bd);
}

static Val full(Bld* b, tpj_dtype_t dt, double v, const int64_t* dims, int nd) {
  Val c = tpj_dtype_is_float(dt) ? tpj_hlo_emit_const_f64(b, dt, v)
                                 : tpj_hlo_emit_convert(b, tpj_hlo_emit_const_i64(b, (int64_t)v), dt);
  return lead(b, c, dims, nd);
}

static Val iota(Bld* b, const int64_t* dims, int nd, int d) {
  return tpj_hlo_emit_iota(b, TPJ_I64, dims, nd, d);
}

static Val cmp(Bld* b, Val x, Val y, const char* dir) { return tpj_hlo_emit_compare(b, x, y, dir); }
static Val and2(Bld* b, Val x, Val y) { return tpj_hlo_emit_binary(b, "stablehlo.and", x, y); }
static Val bin(Bld* b, const char* op, Val x, Val y) { return tpj_hlo_emit_binary(b, op, x, y); }
static Val sel(Bld* b, Val c, Val x, Val y) { return tpj_hlo_emit_select(b, c, x, y); }

static Val reshape(Bld* b, Val x, const int64_t* dims, int nd) {
  return tpj_hlo_emit_reshape(b, x, dims, nd);
}

/* [*, m, n] -> [N, m, n] (N = product of the batch dims). */
static Val flat3(Bld* b, Val x) {
  int64_t n = 1;
  for (int i = 0; i + 2 < x.ndim; ++i) n *= x.dims[i];
  int64_t d[3] = {n, x.dims[x.ndim - 2], x.dims[x.ndim - 1]};
  return reshape(b, x, d, 3);
}

/* [*, k] -> [N, k]. */
static Val flat2(Bld* b, Val x) {
  int64_t n = 1;
  for (int i = 0; i + 1 < x.ndim; ++i) n *= x.dims[i];
  int64_t d[2] = {n, x.dims[x.ndim - 1]};
  return reshape(b, x, d, 2);
}

/* Swaps the last two dims. */
static Val mT(Bld* b, Val x) {
  int64_t p[TPJ_MAX_DIMS];
  for (int i = 0; i < x.ndim; ++i) p[i] = i;
  p[x.ndim - 1] = x.ndim - 2;
  p[x.ndim - 2] = x.ndim - 1;
  return tpj_hlo_emit_transpose(b, x, p);
}

/* x broadcast to the batch dims of dims (nd dims, the last `keep` of which
 * are x's own last `keep` dims). */
static Val to_batch(Bld* b, Val x, const int64_t* dims, int nd, int keep) {
  int64_t d[TPJ_MAX_DIMS];
  for (int i = 0; i < nd - keep; ++i) d[i] = dims[i];
  for (int i = 0; i < keep; ++i) d[nd - keep + i] = x.dims[x.ndim - keep + i];
  return tpj_hlo_emit_broadcast_to(b, x, d, nd);
}

/* Sums x over dim (a one-hot select then a sum reads one element exactly). */
static Val sum_dim(Bld* b, Val x, int dim) {
  int64_t d[1] = {dim};
  return tpj_hlo_emit_reduce(b, x, tpj_hlo_emit_zero(b, x.dtype), d, 1, "stablehlo.add");
}

/* The diagonal of [N, m, n] as [N, min(m, n)]. */
static Val diag(Bld* b, Val x) {
  Val r = iota(b, x.dims, 3, 1), c = iota(b, x.dims, 3, 2);
  Val d = sum_dim(b, sel(b, cmp(b, r, c, "EQ"), x, full(b, x.dtype, 0, x.dims, 3)), 2);
  int64_t k = x.dims[1] < x.dims[2] ? x.dims[1] : x.dims[2];
  int64_t st[2] = {0, 0}, lim[2] = {x.dims[0], k}, one[2] = {1, 1};
  return tpj_hlo_emit_slice(b, d, st, lim, one);
}

static Val slice3(Bld* b, Val x, int64_t rows, int64_t cols) {
  int64_t st[3] = {0, 0, 0}, lim[3] = {x.dims[0], rows, cols}, one[3] = {1, 1, 1};
  return tpj_hlo_emit_slice(b, x, st, lim, one);
}

/* Keeps the lower (lower = 1) or upper triangle of [N, m, n] from diagonal
 * offset k, zeroing the rest. */
static Val tri(Bld* b, Val x, int lower, int64_t k) {
  Val r = iota(b, x.dims, 3, 1), c = iota(b, x.dims, 3, 2);
  Val rk = bin(b, "stablehlo.add", r, full(b, TPJ_I64, (double)k, x.dims, 3));
  Val keep = cmp(b, c, rk, lower ? "LE" : "GE");
  return sel(b, keep, x, full(b, x.dtype, 0, x.dims, 3));
}

static Val eye(Bld* b, tpj_dtype_t dt, int64_t n, int64_t m, int64_t k) {
  int64_t d[3] = {n, m, k};
  Val e = cmp(b, iota(b, d, 3, 1), iota(b, d, 3, 2), "EQ");
  return tpj_hlo_emit_convert(b, e, dt);
}

static Val ts(Bld* b, Val a, Val x, int lower, int unit, int trans) {
  return tpj_hlo_emit_triangular_solve(b, a, x, 1, lower, unit, trans);
}

/* 0-d i64 zero and one for loop counters. */
static Val i64c(Bld* b, int64_t v) { return tpj_hlo_emit_const_i64(b, v); }

/* ---- Cholesky ------------------------------------------------------------ */

/* Left-looking Cholesky of the lower triangle of a [N, n, n], LAPACK potrf
 * style: column j is a[:, j] - L[:, :j] L[j, :j]^T, its diagonal must be
 * > 0 (else info = j + 1, and that matrix's later columns stay zero). */
static void chol_loop(Bld* b, Val a, Val* out_l, Val* out_info) {
  int64_t N = a.dims[0], n = a.dims[1];
  tpj_dtype_t dt = a.dtype;
  int64_t dN[1] = {N};
  if (n == 0 || N == 0) { /* nothing to factor (and no column to slice) */
    *out_l = a;
    *out_info = full(b, TPJ_I32, 0, dN, 1);
    return;
  }
  Val init[4] = {i64c(b, 0), a, full(b, dt, 0, a.dims, 3), full(b, TPJ_I32, 0, dN, 1)};
  Val c[4], v[4];
  tpj_hlo_while_t w;
  tpj_hlo_while_begin(b, &w, init, 4, c);
  tpj_hlo_while_body(b, &w, cmp(b, c[0], i64c(b, n), "LT"), v);
  Val k = v[0], A = v[1], L = v[2], info = v[3];
  Val z = i64c(b, 0);
  int64_t d2[2] = {N, n};
  Val rs[3] = {z, k, z}, cs[3] = {z, z, k};
  int64_t rsz[3] = {N, 1, n}, csz[3] = {N, n, 1};
  Val rowk = reshape(b, tpj_hlo_emit_dynamic_slice(b, L, rs, rsz), d2, 2);
  int64_t bd[1] = {0}, lc[1] = {2}, rc[1] = {1};
  Val dotv = tpj_hlo_emit_dot_general(b, L, rowk, bd, bd, 1, lc, rc, 1, dt);
  Val col = bin(b, "stablehlo.subtract",
                reshape(b, tpj_hlo_emit_dynamic_slice(b, A, cs, csz), d2, 2), dotv);
  Val s2[2] = {z, k};
  int64_t s2sz[2] = {N, 1};
  Val ajj = reshape(b, tpj_hlo_emit_dynamic_slice(b, col, s2, s2sz), dN, 1);
  /* !(ajj > 0) also catches NaN, as LAPACK's check does */
  Val bad = tpj_hlo_emit_unary(b, "stablehlo.not", cmp(b, ajj, full(b, dt, 0, dN, 1), "GT"));
  Val izero = full(b, TPJ_I32, 0, dN, 1);
  Val fresh = and2(b, bad, cmp(b, info, izero, "EQ"));
  Val k1 = tpj_hlo_emit_convert(b, bin(b, "stablehlo.add", k, i64c(b, 1)), TPJ_I32);
  info = sel(b, fresh, lead(b, k1, dN, 1), info);
  Val active = cmp(b, info, izero, "EQ");
  Val s = tpj_hlo_emit_unary(b, "stablehlo.sqrt", ajj);
  Val rows = iota(b, d2, 2, 1), kk = lead(b, k, d2, 2);
  Val sb = lead(b, s, d2, 2);
  Val nc = sel(b, cmp(b, rows, kk, "EQ"), sb,
               sel(b, cmp(b, rows, kk, "GT"), bin(b, "stablehlo.divide", col, sb),
                   full(b, dt, 0, d2, 2)));
  Val cols3 = iota(b, a.dims, 3, 2);
  Val put = and2(b, cmp(b, cols3, lead(b, k, a.dims, 3), "EQ"), lead(b, active, a.dims, 3));
  L = sel(b, put, lead(b, nc, a.dims, 3), L);
  Val next[4] = {bin(b, "stablehlo.add", k, i64c(b, 1)), A, L, info};
  Val res[4];
  tpj_hlo_while_end(b, &w, next, res);
  *out_l = res[2];
  *out_info = res[3];
}

/* aten::linalg_cholesky_ex(A, upper) -> (L, info). upper reads A's upper
 * triangle (LAPACK's 'U'): the lower factor of A^T, transposed. */
void tpj_lower_linalg_cholesky_ex(tpj_op_ctx_t* ctx, Val* results) {
  Bld* b = ctx->b;
  int upper = ctx->nattrs >= TPJ_ATTRS_WORDS(tpj_attrs_cholesky_t) &&
              TPJ_ATTRS(ctx, tpj_attrs_cholesky_t)->upper;
  Val a = flat3(b, ctx->in[0]);
  if (upper) a = mT(b, a);
  Val l, info;
  chol_loop(b, a, &l, &info);
  if (upper) l = mT(b, l);
  results[0] = reshape(b, l, ctx->outs[0].dims, ctx->outs[0].ndim);
  if (ctx->nouts > 1) results[1] = reshape(b, info, ctx->outs[1].dims, ctx->outs[1].ndim);
}

/* ---- triangular solves ----------------------------------------------------- */

/* aten::linalg_solve_triangular(A, B, upper, left, unitriangular). */
void tpj_lower_linalg_solve_triangular(tpj_op_ctx_t* ctx, Val* results) {
  Bld* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  Val a = to_batch(b, ctx->in[0], o->dims, o->ndim, 2);
  Val x = tpj_hlo_emit_broadcast_to(b, ctx->in[1], o->dims, o->ndim);
  const tpj_attrs_solve_triangular_t* at = TPJ_ATTRS(ctx, tpj_attrs_solve_triangular_t);
  results[0] = tpj_hlo_emit_triangular_solve(b, a, x, (int)at->left, !at->upper,
                                             (int)at->unitriangular, 0);
}

/* aten::triangular_solve(b, A, upper, transpose, unitriangular) ->
 * (solution, A broadcast). */
void tpj_lower_triangular_solve(tpj_op_ctx_t* ctx, Val* results) {
  Bld* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  Val x = tpj_hlo_emit_broadcast_to(b, ctx->in[0], o->dims, o->ndim);
  Val a = tpj_hlo_emit_broadcast_to(b, ctx->in[1], ctx->outs[1].dims, ctx->outs[1].ndim);
  const tpj_attrs_triangular_solve_t* at = TPJ_ATTRS(ctx, tpj_attrs_triangular_solve_t);
  results[0] = ts(b, a, x, !at->upper, (int)at->unitriangular, (int)at->transpose);
  results[1] = a;
}

/* X = (L L^T)^-1 rhs, or (U^T U)^-1 rhs. */
static Val chol_solve(Bld* b, Val f, Val rhs, int upper) {
  if (upper) return ts(b, f, ts(b, f, rhs, 0, 0, 1), 0, 0, 0);
  return ts(b, f, ts(b, f, rhs, 1, 0, 0), 1, 0, 1);
}

/* aten::_cholesky_solve_helper(B, factor, upper). */
void tpj_lower_cholesky_solve_helper(tpj_op_ctx_t* ctx, Val* results) {
  Bld* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  Val x = tpj_hlo_emit_broadcast_to(b, ctx->in[0], o->dims, o->ndim);
  Val f = to_batch(b, ctx->in[1], o->dims, o->ndim, 2);
  results[0] = chol_solve(b, f, x, (int)TPJ_ATTRS(ctx, tpj_attrs_cholesky_t)->upper);
}

/* aten::cholesky_inverse(factor, upper): solved against I, then the lower
 * triangle mirrored so the result is exactly symmetric like LAPACK potri's. */
void tpj_lower_cholesky_inverse(tpj_op_ctx_t* ctx, Val* results) {
  Bld* b = ctx->b;
  Val f = flat3(b, ctx->in[0]);
  Val x = chol_solve(b, f, eye(b, f.dtype, f.dims[0], f.dims[1], f.dims[1]),
                     (int)TPJ_ATTRS(ctx, tpj_attrs_cholesky_t)->upper);
  Val r = iota(b, x.dims, 3, 1), c = iota(b, x.dims, 3, 2);
  x = sel(b, cmp(b, r, c, "GE"), x, mT(b, x));
  results[0] = reshape(b, x, ctx->outs[0].dims, ctx->outs[0].ndim);
}

/* ---- LU ---------------------------------------------------------------- */

/* perm with entries i and p (per matrix) swapped: perm [N, m] i64, i 0-d,
 * p [N]. */
static Val swap_entries(Bld* b, Val perm, Val i, Val p) {
  Val rows = iota(b, perm.dims, 2, 1);
  Val z = i64c(b, 0);
  Val st[2] = {z, i};
  int64_t sz[2] = {perm.dims[0], 1}, dN[1] = {perm.dims[0]};
  Val vi = reshape(b, tpj_hlo_emit_dynamic_slice(b, perm, st, sz), dN, 1);
  Val atp = cmp(b, rows, lead(b, p, perm.dims, 2), "EQ");
  Val vp = sum_dim(b, sel(b, atp, perm, full(b, TPJ_I64, 0, perm.dims, 2)), 1);
  return sel(b, cmp(b, rows, lead(b, i, perm.dims, 2), "EQ"), lead(b, vp, perm.dims, 2),
             sel(b, atp, lead(b, vi, perm.dims, 2), perm));
}

/* getrf (unblocked, right-looking) on a [N, m, n]: at step k the pivot is the
 * first row >= k of largest |a[:, k]|; a zero pivot sets info = k + 1 (the
 * first only) and skips the scaling, as LAPACK does. Results: lu, pivots
 * [N, K] i32 1-based, info [N] i32, perm [N, m] i64 (row i of L U is row
 * perm[i] of a). */
static void lu_loop(Bld* b, Val a, Val* out_lu, Val* out_piv, Val* out_info, Val* out_perm) {
  int64_t N = a.dims[0], m = a.dims[1], n = a.dims[2], K = m < n ? m : n;
  tpj_dtype_t dt = a.dtype;
  int64_t dN[1] = {N}, dK[2] = {N, K}, dm[2] = {N, m}, dn[2] = {N, n};
  if (K == 0 || N == 0) { /* nothing to factor (and no column to slice) */
    *out_lu = a;
    *out_piv = full(b, TPJ_I32, 0, dK, 2);
    *out_info = full(b, TPJ_I32, 0, dN, 1);
    *out_perm = iota(b, dm, 2, 1);
    return;
  }
  Val init[5] = {i64c(b, 0), a, full(b, TPJ_I32, 0, dK, 2), full(b, TPJ_I32, 0, dN, 1),
                 iota(b, dm, 2, 1)};
  Val c[5], v[5];
  tpj_hlo_while_t w;
  tpj_hlo_while_begin(b, &w, init, 5, c);
  tpj_hlo_while_body(b, &w, cmp(b, c[0], i64c(b, K), "LT"), v);
  Val k = v[0], A = v[1], piv = v[2], info = v[3], perm = v[4];
  Val z = i64c(b, 0);
  Val cs[3] = {z, z, k};
  int64_t csz[3] = {N, m, 1}, rsz[3] = {N, 1, n};
  Val col = reshape(b, tpj_hlo_emit_dynamic_slice(b, A, cs, csz), dm, 2);
  Val rows = iota(b, dm, 2, 1), km = lead(b, k, dm, 2);
  Val below = cmp(b, rows, km, "GE");
  Val mag = sel(b, below, tpj_hlo_emit_unary(b, "stablehlo.abs", col), full(b, dt, -1, dm, 2));
  int64_t d1[1] = {1};
  Val mx = tpj_hlo_emit_reduce(b, mag, tpj_hlo_emit_extreme(b, dt, 0), d1, 1, "stablehlo.maximum");
  Val ismax = cmp(b, mag, lead(b, mx, dm, 2), "EQ");
  Val p = tpj_hlo_emit_reduce(b, sel(b, ismax, rows, full(b, TPJ_I64, (double)m, dm, 2)),
                              tpj_hlo_emit_extreme(b, TPJ_I64, 1), d1, 1, "stablehlo.minimum");
  /* a NaN column has no maximum: keep row k, like LAPACK's i*amax */
  Val kN = lead(b, k, dN, 1);
  p = sel(b, cmp(b, p, full(b, TPJ_I64, (double)m, dN, 1), "EQ"), kN, p);
  /* swap rows k and p */
  Val rs[3] = {z, k, z};
  Val rowk = reshape(b, tpj_hlo_emit_dynamic_slice(b, A, rs, rsz), dn, 2);
  Val r3 = iota(b, a.dims, 3, 1), c3 = iota(b, a.dims, 3, 2);
  Val atp = cmp(b, r3, lead(b, p, a.dims, 3), "EQ");
  Val rowp = sum_dim(b, sel(b, atp, A, full(b, dt, 0, a.dims, 3)), 1);
  Val atk = cmp(b, r3, lead(b, k, a.dims, 3), "EQ");
  int64_t bd_row[2] = {0, 2};
  Val rowp3 = tpj_hlo_emit_broadcast_in_dim(b, rowp, a.dims, 3, bd_row);
  A = sel(b, atk, rowp3, sel(b, atp, tpj_hlo_emit_broadcast_in_dim(b, rowk, a.dims, 3, bd_row), A));
  perm = swap_entries(b, perm, k, p);
  Val kcols = iota(b, dK, 2, 1);
  Val p1 = tpj_hlo_emit_convert(b, bin(b, "stablehlo.add", p, full(b, TPJ_I64, 1, dN, 1)), TPJ_I32);
  piv = sel(b, cmp(b, kcols, lead(b, k, dK, 2), "EQ"), lead(b, p1, dK, 2), piv);
  /* pivot and info */
  Val ps[2] = {z, k};
  int64_t psz[2] = {N, 1};
  Val pivot = reshape(b, tpj_hlo_emit_dynamic_slice(b, rowp, ps, psz), dN, 1);
  Val zero = cmp(b, pivot, full(b, dt, 0, dN, 1), "EQ");
  Val izero = full(b, TPJ_I32, 0, dN, 1);
  Val k1 = tpj_hlo_emit_convert(b, bin(b, "stablehlo.add", kN, full(b, TPJ_I64, 1, dN, 1)), TPJ_I32);
  info = sel(b, and2(b, zero, cmp(b, info, izero, "EQ")), k1, info);
  /* scale the column below the pivot, then the rank-1 update */
  Val c2 = reshape(b, tpj_hlo_emit_dynamic_slice(b, A, cs, csz), dm, 2);
  Val scale = and2(b, cmp(b, rows, km, "GT"), lead(b, tpj_hlo_emit_unary(b, "stablehlo.not", zero), dm, 2));
  Val l = sel(b, scale, bin(b, "stablehlo.divide", c2, lead(b, pivot, dm, 2)), c2);
  Val k3 = lead(b, k, a.dims, 3);
  Val lcol = lead(b, l, a.dims, 3);
  Val upd = bin(b, "stablehlo.subtract", A, bin(b, "stablehlo.multiply", lcol, rowp3));
  Val trail = and2(b, cmp(b, r3, k3, "GT"), cmp(b, c3, k3, "GT"));
  A = sel(b, trail, upd, sel(b, cmp(b, c3, k3, "EQ"), lcol, A));
  Val next[5] = {bin(b, "stablehlo.add", k, i64c(b, 1)), A, piv, info, perm};
  Val res[5];
  tpj_hlo_while_end(b, &w, next, res);
  *out_lu = res[1];
  *out_piv = res[2];
  *out_info = res[3];
  *out_perm = res[4];
}

/* The row order that pivots [N, K] (1-based, i32) apply to m rows: perm
 * [N, m] i64, one swap per step as LAPACK's laswp does. Pivots out of
 * range are the glue's to reject. */
static Val perm_of(Bld* b, Val piv, int64_t m) {
  int64_t N = piv.dims[0], K = piv.dims[1];
  int64_t dm[2] = {N, m}, dN[1] = {N};
  if (K == 0 || N == 0 || m == 0) return iota(b, dm, 2, 1);
  Val piv64 = tpj_hlo_emit_convert(b, piv, TPJ_I64);
  Val init[3] = {i64c(b, 0), iota(b, dm, 2, 1), piv64};
  Val c[3], v[3];
  tpj_hlo_while_t w;
  tpj_hlo_while_begin(b, &w, init, 3, c);
  tpj_hlo_while_body(b, &w, cmp(b, c[0], i64c(b, K), "LT"), v);
  Val z = i64c(b, 0);
  Val st[2] = {z, v[0]};
  int64_t sz[2] = {N, 1};
  Val p = reshape(b, tpj_hlo_emit_dynamic_slice(b, v[2], st, sz), dN, 1);
  p = bin(b, "stablehlo.subtract", p, full(b, TPJ_I64, 1, dN, 1));
  Val next[3] = {bin(b, "stablehlo.add", v[0], i64c(b, 1)), swap_entries(b, v[1], v[0], p), v[2]};
  Val res[3];
  tpj_hlo_while_end(b, &w, next, res);
  return res[1];
}

/* Flat indices n*m*k + perm[n, i]*k + j into x [N, m, k] viewed as 1-D. */
static Val row_index(Bld* b, Val perm, const int64_t* d) {
  Val n = iota(b, d, 3, 0), j = iota(b, d, 3, 2);
  int64_t bd[2] = {0, 1};
  Val pr = tpj_hlo_emit_broadcast_in_dim(b, perm, d, 3, bd);
  Val idx = bin(b, "stablehlo.multiply", n, full(b, TPJ_I64, (double)(d[1] * d[2]), d, 3));
  idx = bin(b, "stablehlo.add", idx, bin(b, "stablehlo.multiply", pr, full(b, TPJ_I64, (double)d[2], d, 3)));
  return bin(b, "stablehlo.add", idx, j);
}

/* y[n, i] = x[n, perm[n, i]] (rows of [N, m, k]); exact, by a gather. */
static Val take_rows(Bld* b, Val x, Val perm) {
  int64_t flat[1] = {x.dims[0] * x.dims[1] * x.dims[2]};
  if (flat[0] == 0) return x;
  return tpj_hlo_emit_gather_1d(b, reshape(b, x, flat, 1), row_index(b, perm, x.dims));
}

/* y[n, perm[n, i]] = x[n, i]: the inverse of take_rows, by a scatter. */
static Val put_rows(Bld* b, Val x, Val perm) {
  int64_t flat[1] = {x.dims[0] * x.dims[1] * x.dims[2]};
  if (flat[0] == 0) return x;
  Val y = tpj_hlo_emit_scatter_1d(b, full(b, x.dtype, 0, flat, 1), row_index(b, perm, x.dims), x);
  return reshape(b, y, x.dims, 3);
}

/* Solves A x = rhs (or A^T x = rhs when adjoint) with A = P L U given as
 * lu [N, n, n] and perm [N, n]; rhs [N, n, k]. */
static Val lu_solve(Bld* b, Val lu, Val perm, Val rhs, int adjoint) {
  if (!adjoint) return ts(b, lu, ts(b, lu, take_rows(b, rhs, perm), 1, 1, 0), 0, 0, 0);
  return put_rows(b, ts(b, lu, ts(b, lu, rhs, 0, 0, 1), 1, 1, 1), perm);
}

/* P [N, m, m] (P[r, c] = 1 where r = perm[c]), L [N, m, K] unit lower, U
 * [N, K, n] upper from lu [N, m, n]. */
static void unpack(Bld* b, Val lu, Val perm, Val* P, Val* L, Val* U) {
  int64_t N = lu.dims[0], m = lu.dims[1], n = lu.dims[2], K = m < n ? m : n;
  if (P) {
    int64_t d[3] = {N, m, m}, bd[2] = {0, 2};
    Val pc = tpj_hlo_emit_broadcast_in_dim(b, perm, d, 3, bd);
    *P = tpj_hlo_emit_convert(b, cmp(b, iota(b, d, 3, 1), pc, "EQ"), lu.dtype);
  }
  if (L) {
    Val l = slice3(b, lu, m, K);
    Val r = iota(b, l.dims, 3, 1), c = iota(b, l.dims, 3, 2);
    *L = sel(b, cmp(b, r, c, "GT"), l,
             tpj_hlo_emit_convert(b, cmp(b, r, c, "EQ"), lu.dtype));
  }
  if (U) *U = tri(b, slice3(b, lu, K, n), 0, 0);
}

static Val out_as(Bld* b, Val x, const tpj_rt_shape_t* o) { return reshape(b, x, o->dims, o->ndim); }

/* aten::linalg_lu_factor_ex(A) -> (LU, pivots, info). */
void tpj_lower_linalg_lu_factor_ex(tpj_op_ctx_t* ctx, Val* results) {
  Bld* b = ctx->b;
  Val lu, piv, info, perm;
  lu_loop(b, flat3(b, ctx->in[0]), &lu, &piv, &info, &perm);
  results[0] = out_as(b, lu, &ctx->outs[0]);
  results[1] = out_as(b, piv, &ctx->outs[1]);
  results[2] = out_as(b, info, &ctx->outs[2]);
}

/* The empty result PyTorch gives for an output that was not asked for. */
static Val empty_out(Bld* b, const tpj_rt_shape_t* o) {
  return full(b, o->dtype, 0, o->dims, o->ndim);
}

static int64_t numel(const tpj_rt_shape_t* o) {
  int64_t n = 1;
  for (int i = 0; i < o->ndim; ++i) n *= o->dims[i];
  return n;
}

/* aten::lu_unpack(LU, pivots, unpack_data, unpack_pivots) -> (P, L, U). */
void tpj_lower_lu_unpack(tpj_op_ctx_t* ctx, Val* results) {
  Bld* b = ctx->b;
  const tpj_attrs_lu_unpack_t* at = TPJ_ATTRS(ctx, tpj_attrs_lu_unpack_t);
  int data = (int)at->unpack_data, pivots = (int)at->unpack_pivots;
  Val lu = flat3(b, ctx->in[0]);
  Val P, L, U;
  Val perm = pivots ? perm_of(b, flat2(b, ctx->in[1]), lu.dims[1]) : lu;
  unpack(b, lu, perm, pivots ? &P : NULL, data ? &L : NULL, data ? &U : NULL);
  results[0] = pivots && numel(&ctx->outs[0]) ? out_as(b, P, &ctx->outs[0]) : empty_out(b, &ctx->outs[0]);
  results[1] = data && numel(&ctx->outs[1]) ? out_as(b, L, &ctx->outs[1]) : empty_out(b, &ctx->outs[1]);
  results[2] = data && numel(&ctx->outs[2]) ? out_as(b, U, &ctx->outs[2]) : empty_out(b, &ctx->outs[2]);
}

/* aten::linalg_lu(A, pivot=True) -> (P, L, U). */
void tpj_lower_linalg_lu(tpj_op_ctx_t* ctx, Val* results) {
  Bld* b = ctx->b;
  Val lu, piv, info, perm, P, L, U;
  lu_loop(b, flat3(b, ctx->in[0]), &lu, &piv, &info, &perm);
  unpack(b, lu, perm, &P, &L, &U);
  results[0] = out_as(b, P, &ctx->outs[0]);
  results[1] = out_as(b, L, &ctx->outs[1]);
  results[2] = out_as(b, U, &ctx->outs[2]);
}

/* Solves with rhs [N, n, k] (left) or [N, k, n] (right: x A = rhs is
 * A^T x^T = rhs^T). */
static Val lu_solve_side(Bld* b, Val lu, Val perm, Val rhs, int left, int adjoint) {
  if (left) return lu_solve(b, lu, perm, rhs, adjoint);
  return mT(b, lu_solve(b, lu, perm, mT(b, rhs), !adjoint));
}

/* aten::linalg_lu_solve(LU, pivots, B, left, adjoint). */
void tpj_lower_linalg_lu_solve(tpj_op_ctx_t* ctx, Val* results) {
  Bld* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  Val lu = flat3(b, to_batch(b, ctx->in[0], o->dims, o->ndim, 2));
  Val piv = flat2(b, to_batch(b, ctx->in[1], o->dims, o->ndim - 1, 1));
  Val rhs = flat3(b, tpj_hlo_emit_broadcast_to(b, ctx->in[2], o->dims, o->ndim));
  const tpj_attrs_lu_solve_t* at = TPJ_ATTRS(ctx, tpj_attrs_lu_solve_t);
  Val x = lu_solve_side(b, lu, perm_of(b, piv, lu.dims[1]), rhs, (int)at->left,
                        (int)at->adjoint);
  results[0] = out_as(b, x, o);
}

/* aten::linalg_inv_ex(A) -> (inverse, info): A^-1 = solve(A, I). */
void tpj_lower_linalg_inv_ex(tpj_op_ctx_t* ctx, Val* results) {
  Bld* b = ctx->b;
  Val a = flat3(b, ctx->in[0]);
  Val lu, piv, info, perm;
  lu_loop(b, a, &lu, &piv, &info, &perm);
  Val x = lu_solve(b, lu, perm, eye(b, a.dtype, a.dims[0], a.dims[1], a.dims[1]), 0);
  results[0] = out_as(b, x, &ctx->outs[0]);
  results[1] = out_as(b, info, &ctx->outs[1]);
}

/* aten::_linalg_solve_ex(A, B; tpj_attrs_solve_ex_t) -> (result, LU,
 * pivots, info). LU is A's own (not broadcast); it is broadcast to the
 * result's batch dims for the solve. A vector B is a one-column (left) or
 * one-row (right) matrix. */
void tpj_lower_linalg_solve_ex(tpj_op_ctx_t* ctx, Val* results) {
  Bld* b = ctx->b;
  const tpj_attrs_solve_ex_t* at = TPJ_ATTRS(ctx, tpj_attrs_solve_ex_t);
  int left = (int)at->left, vec = (int)at->vector_case;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  const tpj_rt_shape_t* olu = &ctx->outs[1];
  Val lu, piv, info, perm;
  lu_loop(b, flat3(b, ctx->in[0]), &lu, &piv, &info, &perm);
  int64_t n = lu.dims[1];
  /* the right-hand side as a matrix with the result's batch dims */
  int64_t rd[TPJ_MAX_DIMS + 1];
  int nd = o->ndim + (vec ? 1 : 0);
  for (int i = 0; i < o->ndim; ++i) rd[i] = o->dims[i];
  Val B = ctx->in[1];
  if (vec) {
    rd[nd - 2] = left ? n : 1;
    rd[nd - 1] = left ? 1 : n;
    int64_t bd[TPJ_MAX_DIMS + 1];
    for (int i = 0; i < B.ndim - 1; ++i) bd[i] = B.dims[i];
    bd[B.ndim - 1] = left ? n : 1;
    bd[B.ndim] = left ? 1 : n;
    B = reshape(b, B, bd, B.ndim + 1);
  }
  Val rhs = flat3(b, tpj_hlo_emit_broadcast_to(b, B, rd, nd));
  Val lub = flat3(b, to_batch(b, out_as(b, lu, olu), rd, nd, 2));
  int64_t pd[TPJ_MAX_DIMS];
  for (int i = 0; i < olu->ndim - 1; ++i) pd[i] = olu->dims[i];
  Val permb = flat2(b, to_batch(b, reshape(b, perm, pd, olu->ndim - 1), rd, nd - 1, 1));
  Val x = lu_solve_side(b, lub, permb, rhs, left, 0);
  results[0] = out_as(b, x, o);
  results[1] = out_as(b, lu, olu);
  results[2] = out_as(b, piv, &ctx->outs[2]);
  results[3] = out_as(b, info, &ctx->outs[3]);
}

/* The permutation's sign (+1/-1, dtype dt) from pivots [N, K]: -1 for an
 * odd number of actual swaps. */
static Val perm_sign(Bld* b, Val piv, tpj_dtype_t dt) {
  Val at = bin(b, "stablehlo.add", iota(b, piv.dims, 2, 1), full(b, TPJ_I64, 1, piv.dims, 2));
  Val swapped = cmp(b, tpj_hlo_emit_convert(b, piv, TPJ_I64), at, "NE");
  Val cnt = sum_dim(b, tpj_hlo_emit_convert(b, swapped, TPJ_I64), 1);
  int64_t dN[1] = {piv.dims[0]};
  Val odd = bin(b, "stablehlo.remainder", cnt, full(b, TPJ_I64, 2, dN, 1));
  Val s = bin(b, "stablehlo.subtract", full(b, TPJ_I64, 1, dN, 1),
              bin(b, "stablehlo.multiply", odd, full(b, TPJ_I64, 2, dN, 1)));
  return tpj_hlo_emit_convert(b, s, dt);
}

/* The matrix det/slogdet factor: A, or A^T when transposed is set
 * (tpj_attrs_det_t; det(A^T) = det(A)). */
static Val det_input(tpj_op_ctx_t* ctx) {
  Val a = flat3(ctx->b, ctx->in[0]);
  return ctx->nattrs >= TPJ_ATTRS_WORDS(tpj_attrs_det_t) &&
                 TPJ_ATTRS(ctx, tpj_attrs_det_t)->transposed
             ? mT(ctx->b, a)
             : a;
}

/* aten::_linalg_det(A; attr transposed) -> (det, LU, pivots). */
void tpj_lower_linalg_det(tpj_op_ctx_t* ctx, Val* results) {
  Bld* b = ctx->b;
  Val lu, piv, info, perm;
  lu_loop(b, det_input(ctx), &lu, &piv, &info, &perm);
  int64_t d1[1] = {1};
  Val prod = tpj_hlo_emit_reduce(b, diag(b, lu), tpj_hlo_emit_one(b, lu.dtype), d1, 1,
                                 "stablehlo.multiply");
  results[0] = out_as(b, bin(b, "stablehlo.multiply", prod, perm_sign(b, piv, lu.dtype)), &ctx->outs[0]);
  results[1] = out_as(b, lu, &ctx->outs[1]);
  results[2] = out_as(b, piv, &ctx->outs[2]);
}

/* aten::_linalg_slogdet(A; attr transposed) -> (sign, logabsdet, LU, pivots). */
void tpj_lower_linalg_slogdet(tpj_op_ctx_t* ctx, Val* results) {
  Bld* b = ctx->b;
  Val lu, piv, info, perm;
  lu_loop(b, det_input(ctx), &lu, &piv, &info, &perm);
  Val d = diag(b, lu);
  int64_t d1[1] = {1};
  Val sgn = tpj_hlo_emit_reduce(b, tpj_hlo_emit_unary(b, "stablehlo.sign", d),
                                tpj_hlo_emit_one(b, lu.dtype), d1, 1, "stablehlo.multiply");
  sgn = bin(b, "stablehlo.multiply", sgn, perm_sign(b, piv, lu.dtype));
  Val lad = sum_dim(b, tpj_hlo_emit_unary(b, "stablehlo.log", tpj_hlo_emit_unary(b, "stablehlo.abs", d)), 1);
  results[0] = out_as(b, sgn, &ctx->outs[0]);
  results[1] = out_as(b, lad, &ctx->outs[1]);
  results[2] = out_as(b, lu, &ctx->outs[2]);
  results[3] = out_as(b, piv, &ctx->outs[3]);
}

/* ---- QR and eigenvalues ------------------------------------------------- */

/* XLA's QrExpander: a [N, m, n] -> (householder vectors + R, taus [N, K]). */
static void geqrf(Bld* b, Val a, Val* out_a, Val* out_tau) {
  int64_t K = a.dims[1] < a.dims[2] ? a.dims[1] : a.dims[2];
  Val types[2] = {a, a};
  types[1].ndim = 2;
  types[1].dims[1] = K;
  Val r[2];
  tpj_hlo_emit_custom_call(b, "Qr", NULL, &a, 1, types, 2, r);
  *out_a = r[0];
  *out_tau = r[1];
}

/* Q [N, m, n] = H_1 ... H_k from vectors a [N, m, n] and taus [N, k], k <= n:
 * missing taus are 0 (H = I). */
static Val householder(Bld* b, Val a, Val tau) {
  if (tau.dims[1] < a.dims[2]) {
    int64_t lo[2] = {0, 0}, hi[2] = {0, a.dims[2] - tau.dims[1]};
    tau = tpj_hlo_emit_pad(b, tau, tpj_hlo_emit_zero(b, tau.dtype), lo, hi);
  }
  Val ins[2] = {a, tau}, q;
  tpj_hlo_emit_custom_call(b, "ProductOfElementaryHouseholderReflectors", NULL, ins, 2, &a, 1, &q);
  return q;
}

/* aten::geqrf(A) -> (a, tau). */
void tpj_lower_geqrf(tpj_op_ctx_t* ctx, Val* results) {
  Bld* b = ctx->b;
  Val a, tau;
  geqrf(b, flat3(b, ctx->in[0]), &a, &tau);
  results[0] = out_as(b, a, &ctx->outs[0]);
  results[1] = out_as(b, tau, &ctx->outs[1]);
}

/* aten::linalg_householder_product(A, tau). */
void tpj_lower_linalg_householder_product(tpj_op_ctx_t* ctx, Val* results) {
  Bld* b = ctx->b;
  results[0] = out_as(b, householder(b, flat3(b, ctx->in[0]), flat2(b, ctx->in[1])), &ctx->outs[0]);
}

/* aten::linalg_qr(A, mode; tpj_attrs_qr_t) -> (Q, R). */
void tpj_lower_linalg_qr(tpj_op_ctx_t* ctx, Val* results) {
  Bld* b = ctx->b;
  int mode = (int)TPJ_ATTRS(ctx, tpj_attrs_qr_t)->mode;
  Val a, tau;
  Val x = flat3(b, ctx->in[0]);
  int64_t m = x.dims[1], n = x.dims[2], K = m < n ? m : n;
  geqrf(b, x, &a, &tau);
  Val rows = mode == 1 ? a : slice3(b, a, K, n);
  results[1] = out_as(b, tri(b, rows, 0, 0), &ctx->outs[1]);
  if (mode == 2) {
    results[0] = empty_out(b, &ctx->outs[0]);
  } else if (mode == 1 && m > n) {
    int64_t lo[3] = {0, 0, 0}, hi[3] = {0, 0, m - n};
    Val sq = tpj_hlo_emit_pad(b, a, tpj_hlo_emit_zero(b, a.dtype), lo, hi);
    results[0] = out_as(b, householder(b, sq, tau), &ctx->outs[0]);
  } else {
    results[0] = out_as(b, householder(b, slice3(b, a, m, K), tau), &ctx->outs[0]);
  }
}

/* aten::_linalg_eigh(A, UPLO, compute_v=False; tpj_attrs_eigh_t) -> (eigenvalues,
 * empty eigenvectors): XLA's Eigh (Jacobi), values sorted ascending. UPLO
 * 'U' reads A's upper triangle: the lower one of A^T. */
void tpj_lower_linalg_eigvalsh(tpj_op_ctx_t* ctx, Val* results) {
  Bld* b = ctx->b;
  Val a = flat3(b, ctx->in[0]);
  if (!TPJ_ATTRS(ctx, tpj_attrs_eigh_t)->lower) a = mT(b, a);
  Val types[2] = {a, a};
  types[1].ndim = 2;
  Val r[2];
  tpj_hlo_emit_custom_call(b, "Eigh", "1,1,100,0.0", &a, 1, types, 2, r);
  results[0] = out_as(b, r[1], &ctx->outs[0]);
  results[1] = empty_out(b, &ctx->outs[1]);
}
