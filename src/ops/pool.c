/* ops/pool: pooling over 1-3 spatial dims that ops/conv.c's 2-D lowerings do
 * not cover: max_pool3d_with_indices, avg_pool3d, adaptive_max_pool2d/3d,
 * _adaptive_avg_pool3d, with their backward. Inputs are (C, *sp) or
 * (N, C, *sp) and are worked on as (P, *sp) planes; output sizes come from
 * ctx->outs (PyTorch's arithmetic, ceil_mode included). Max pooling visits a
 * window's taps in CPU's row-major order, and a tap wins when it is greater
 * or NaN, so indices equal CPU's (first maximum on ties, last NaN). */
#include "ops/attrs.h"
#include "ops/window.h"

#define TPJ_NSP_MAX 3

static int tpj_pool_bad(tpj_op_ctx_t* ctx, const char* op) {
  tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "%s: bad operands", op));
  return 0;
}

tpj_hlo_value_t tpj_window_planes(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int nsp) {
  int64_t p = 1, d[TPJ_MAX_DIMS];
  for (int i = 0; i < x.ndim - nsp; ++i) p *= x.dims[i];
  d[0] = p;
  for (int i = 0; i < nsp; ++i) d[1 + i] = x.dims[x.ndim - nsp + i];
  return tpj_hlo_emit_reshape(b, x, d, nsp + 1);
}

int tpj_window_place(tpj_hlo_builder_t* b, tpj_hlo_value_t v, int nsp, const int64_t* lo,
                     const int64_t* step, const int64_t* isp, tpj_hlo_value_t* out) {
  int64_t l[TPJ_MAX_DIMS] = {0}, h[TPJ_MAX_DIMS] = {0}, in[TPJ_MAX_DIMS] = {0};
  for (int i = 0; i < nsp; ++i) {
    int64_t n = v.dims[1 + i], last = lo[i] + (n - 1) * step[i];
    if (n == 0 || lo[i] >= isp[i] || last < 0) return 0;
    /* a negative edge pad crops what fell before 0 or past the end */
    l[1 + i] = lo[i];
    in[1 + i] = step[i] - 1;
    h[1 + i] = isp[i] - (last + 1);
  }
  *out = tpj_hlo_emit_pad_general(b, v, tpj_hlo_emit_zero(b, v.dtype), l, h, in);
  return 1;
}

static tpj_hlo_value_t tpj_pool_i64(tpj_hlo_builder_t* b, int64_t v, const int64_t* dims, int n) {
  return tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, v), dims, n);
}

/* iota(n) * scale + off, 1-D i64 */
static tpj_hlo_value_t tpj_pool_affine(tpj_hlo_builder_t* b, int64_t n, int64_t scale, int64_t off) {
  tpj_hlo_value_t i = tpj_hlo_emit_iota(b, TPJ_I64, &n, 1, 0);
  i = tpj_hlo_emit_binary(b, "stablehlo.multiply", i, tpj_pool_i64(b, scale, &n, 1));
  return tpj_hlo_emit_binary(b, "stablehlo.add", i, tpj_pool_i64(b, off, &n, 1));
}

/* (i * num + add) / den elementwise on a 1-D i64 iota of length n (floor for
 * the non-negative values used here) */
static tpj_hlo_value_t tpj_pool_ratio(tpj_hlo_builder_t* b, int64_t n, int64_t num, int64_t add,
                                      int64_t den) {
  tpj_hlo_value_t v = tpj_pool_affine(b, n, num, add);
  return tpj_hlo_emit_binary(b, "stablehlo.divide", v, tpj_pool_i64(b, den, &n, 1));
}

static tpj_hlo_value_t tpj_pool_along(tpj_hlo_builder_t* b, tpj_hlo_value_t v, const int64_t* dims,
                                      int n, int64_t axis) {
  return tpj_hlo_emit_broadcast_in_dim(b, v, dims, n, &axis);
}

/* The running (best, idx) of a max window gets the tap v at flat index
 * `flat` where `valid`: it wins when greater, NaN, or the first valid tap. */
static void tpj_pool_max_step(tpj_hlo_builder_t* b, tpj_hlo_value_t v, tpj_hlo_value_t flat,
                              tpj_hlo_value_t valid, tpj_hlo_value_t* best, tpj_hlo_value_t* idx) {
  tpj_hlo_value_t none = tpj_pool_i64(b, -1, idx->dims, idx->ndim);
  tpj_hlo_value_t wins = tpj_hlo_emit_compare(b, v, *best, "GT");
  wins = tpj_hlo_emit_binary(b, "stablehlo.or", wins, tpj_hlo_emit_compare(b, v, v, "NE"));
  wins = tpj_hlo_emit_binary(b, "stablehlo.or", wins, tpj_hlo_emit_compare(b, *idx, none, "EQ"));
  wins = tpj_hlo_emit_binary(b, "stablehlo.and", wins, valid);
  *best = tpj_hlo_emit_select(b, wins, v, *best);
  *idx = tpj_hlo_emit_select(b, wins, flat, *idx);
}

/* Folds spatial dim i's tap (in range `ok`, coordinate `pos`, both already
 * broadcast to the output) into the tap's validity and its flat index
 * within the plane (row-major over the input's spatial sizes isp). */
static void tpj_pool_tap_fold(tpj_hlo_builder_t* b, int i, tpj_hlo_value_t ok, tpj_hlo_value_t pos,
                              const int64_t* isp, tpj_hlo_value_t* valid, tpj_hlo_value_t* flat) {
  if (i == 0) {
    *valid = ok;
    *flat = pos;
    return;
  }
  *valid = tpj_hlo_emit_binary(b, "stablehlo.and", *valid, ok);
  *flat = tpj_hlo_emit_binary(
      b, "stablehlo.add",
      tpj_hlo_emit_binary(b, "stablehlo.multiply", *flat, tpj_pool_i64(b, isp[i], pos.dims, pos.ndim)),
      pos);
}

/* Advances the tap counter t (row-major over ks); 0 when done. */
static int tpj_pool_next(int64_t* t, const int64_t* ks, int nsp) {
  for (int i = nsp - 1; i >= 0; --i) {
    if (++t[i] < ks[i]) return 1;
    t[i] = 0;
  }
  return 0;
}

static void tpj_pool_results(tpj_hlo_builder_t* b, const tpj_rt_shape_t* outs, int n,
                             const tpj_hlo_value_t* vals, tpj_hlo_value_t* results) {
  for (int i = 0; i < n; ++i)
    results[i] = tpj_hlo_emit_convert(b, tpj_hlo_emit_reshape(b, vals[i], outs[i].dims, outs[i].ndim),
                                      outs[i].dtype);
}

/* ---- max_pool with indices ------------------------------------------------
 * in[0] x; attrs tpj_attrs_max_pool_t. Results: maxima and flat indices
 * within each plane. */
void tpj_lower_max_pool_nd(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_attrs_max_pool_t* at = TPJ_ATTRS(ctx, tpj_attrs_max_pool_t);
  int nsp = ctx->nattrs >= TPJ_ATTRS_WORDS(tpj_attrs_max_pool_t) ? (int)at->nsp : 0;
  if (ctx->nin < 1 || nsp < 1 || nsp > TPJ_NSP_MAX ||
      ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_max_pool_t) + 4 * nsp || ctx->nouts < 2 ||
      ctx->in[0].ndim < nsp + 1) {
    tpj_pool_bad(ctx, "max_pool_with_indices");
    return;
  }
  const int64_t *k = at->windows, *s = k + nsp, *pad = s + nsp, *dl = pad + nsp;
  tpj_hlo_value_t x = tpj_window_planes(b, ctx->in[0], nsp);
  const tpj_rt_shape_t* o = &ctx->outs[0];
  int64_t od[TPJ_MAX_DIMS], lo[TPJ_MAX_DIMS] = {0}, hi[TPJ_MAX_DIMS] = {0}, in0[TPJ_MAX_DIMS] = {0};
  od[0] = x.dims[0];
  for (int i = 0; i < nsp; ++i) {
    od[1 + i] = o->dims[o->ndim - nsp + i];
    int64_t need = (od[1 + i] - 1) * s[i] + (k[i] - 1) * dl[i] - pad[i] - (x.dims[1 + i] - 1);
    lo[1 + i] = pad[i];
    hi[1 + i] = need > 0 ? need : 0;
  }
  /* padded so every tap is inside; padding taps are masked off as invalid */
  tpj_hlo_value_t xp = tpj_hlo_emit_pad_general(b, x, tpj_hlo_emit_extreme(b, x.dtype, 0), lo, hi, in0);
  tpj_hlo_value_t best = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_extreme(b, x.dtype, 0), od, nsp + 1);
  tpj_hlo_value_t idx = tpj_pool_i64(b, -1, od, nsp + 1);
  int64_t t[TPJ_NSP_MAX] = {0};
  do {
    int64_t st[TPJ_MAX_DIMS] = {0}, lim[TPJ_MAX_DIMS], str[TPJ_MAX_DIMS];
    lim[0] = od[0];
    str[0] = 1;
    tpj_hlo_value_t valid = {-1, 0, TPJ_DTYPE_INVALID, 0, {0}}, flat = valid;
    for (int i = 0; i < nsp; ++i) {
      st[1 + i] = t[i] * dl[i];
      lim[1 + i] = st[1 + i] + (od[1 + i] - 1) * s[i] + 1;
      str[1 + i] = s[i];
      tpj_hlo_value_t pos = tpj_pool_affine(b, od[1 + i], s[i], t[i] * dl[i] - pad[i]);
      tpj_hlo_value_t ok = tpj_hlo_emit_binary(
          b, "stablehlo.and", tpj_hlo_emit_compare(b, pos, tpj_pool_i64(b, 0, pos.dims, 1), "GE"),
          tpj_hlo_emit_compare(b, pos, tpj_pool_i64(b, x.dims[1 + i], pos.dims, 1), "LT"));
      tpj_pool_tap_fold(b, i, tpj_pool_along(b, ok, od, nsp + 1, 1 + i),
                        tpj_pool_along(b, pos, od, nsp + 1, 1 + i), x.dims + 1, &valid, &flat);
    }
    tpj_hlo_value_t v = tpj_hlo_emit_slice(b, xp, st, lim, str);
    tpj_pool_max_step(b, v, flat, valid, &best, &idx);
  } while (tpj_pool_next(t, k, nsp) && tpj_hlo_ok(b));
  tpj_hlo_value_t vals[2] = {best, idx};
  tpj_pool_results(b, ctx->outs, 2, vals, results);
}

/* ---- backward of max pooling (fixed or adaptive) ----------------------------
 * in[0] grad_output, in[1] indices (flat in each plane); attrs
 * tpj_attrs_pool_planes_t. Each gradient is added at its index. */
void tpj_lower_max_pool_nd_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_attrs_pool_planes_t* at = TPJ_ATTRS(ctx, tpj_attrs_pool_planes_t);
  int nsp = ctx->nattrs >= TPJ_ATTRS_WORDS(tpj_attrs_pool_planes_t) ? (int)at->nsp : 0;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nin < 2 || nsp < 1 || nsp > TPJ_NSP_MAX || o->ndim < nsp + 1) {
    tpj_pool_bad(ctx, "max_pool_backward");
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)at->compute;
  int64_t plane = 1;
  for (int i = 0; i < nsp; ++i) plane *= o->dims[o->ndim - 1 - i];
  tpj_hlo_value_t g = tpj_window_planes(b, tpj_hlo_emit_convert(b, ctx->in[0], cd), nsp);
  tpj_hlo_value_t ix = tpj_window_planes(b, tpj_hlo_emit_convert(b, ctx->in[1], TPJ_I64), nsp);
  int64_t P = g.dims[0], n = tpj_hlo_numel(&g), total = P * plane;
  tpj_hlo_value_t base = tpj_pool_along(b, tpj_pool_affine(b, P, plane, 0), ix.dims, ix.ndim, 0);
  ix = tpj_hlo_emit_reshape(b, tpj_hlo_emit_binary(b, "stablehlo.add", ix, base), &n, 1);
  g = tpj_hlo_emit_reshape(b, g, &n, 1);
  tpj_hlo_value_t z = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, cd), &total, 1);
  tpj_hlo_value_t r = tpj_hlo_emit_scatter_add_rows(b, z, ix, g);
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_reshape(b, r, o->dims, o->ndim), o->dtype);
}

/* ---- avg_pool ----------------------------------------------------------------
 * attrs tpj_attrs_avg_pool_t, then tpj_attrs_avg_pool_end_t. */
typedef struct {
  int nsp;
  const int64_t *k, *s, *p;
  int include_pad;
  int64_t divisor;
  tpj_dtype_t cd;
} tpj_avg_t;

static int tpj_avg_params(tpj_op_ctx_t* ctx, tpj_avg_t* a, const char* op) {
  const tpj_attrs_avg_pool_t* at = TPJ_ATTRS(ctx, tpj_attrs_avg_pool_t);
  int head = TPJ_ATTRS_WORDS(tpj_attrs_avg_pool_t), tail = TPJ_ATTRS_WORDS(tpj_attrs_avg_pool_end_t);
  a->nsp = ctx->nattrs >= head ? (int)at->nsp : 0;
  if (ctx->nin < 1 || a->nsp < 1 || a->nsp > TPJ_NSP_MAX ||
      ctx->nattrs < head + 3 * a->nsp + tail || ctx->in[0].ndim < a->nsp + 1)
    return tpj_pool_bad(ctx, op);
  a->k = at->windows;
  a->s = a->k + a->nsp;
  a->p = a->s + a->nsp;
  const tpj_attrs_avg_pool_end_t* end = (const tpj_attrs_avg_pool_end_t*)(a->p + a->nsp);
  a->include_pad = (int)end->count_include_pad;
  a->divisor = end->divisor_override;
  a->cd = (tpj_dtype_t)end->compute;
  return 1;
}

/* The divisor of each output position, (1, *osp) broadcast to od: CPU clips
 * a window to the padded input for count_include_pad, to the input
 * otherwise; divisor_override replaces both. */
static tpj_hlo_value_t tpj_avg_div(tpj_hlo_builder_t* b, const tpj_avg_t* a, const int64_t* isp,
                                   const int64_t* od) {
  int n = a->nsp + 1;
  if (a->divisor != 0)
    return tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_f64(b, a->cd, (double)a->divisor), od, n);
  tpj_hlo_value_t cnt = tpj_pool_i64(b, 1, od, n);
  for (int i = 0; i < a->nsp; ++i) {
    int64_t on = od[1 + i];
    tpj_hlo_value_t start = tpj_pool_affine(b, on, a->s[i], -a->p[i]);
    tpj_hlo_value_t end = tpj_hlo_emit_binary(
        b, "stablehlo.minimum",
        tpj_hlo_emit_binary(b, "stablehlo.add", start, tpj_pool_i64(b, a->k[i], &on, 1)),
        tpj_pool_i64(b, isp[i] + a->p[i], &on, 1));
    if (!a->include_pad) {
      start = tpj_hlo_emit_binary(b, "stablehlo.maximum", start, tpj_pool_i64(b, 0, &on, 1));
      end = tpj_hlo_emit_binary(b, "stablehlo.minimum", end, tpj_pool_i64(b, isp[i], &on, 1));
    }
    tpj_hlo_value_t c = tpj_hlo_emit_binary(b, "stablehlo.subtract", end, start);
    cnt = tpj_hlo_emit_binary(b, "stablehlo.multiply", cnt, tpj_pool_along(b, c, od, n, 1 + i));
  }
  return tpj_hlo_emit_convert(b, cnt, a->cd);
}

/* aten::avg_pool3d: the sum of the window's taps (zero padding) over the
 * divisor. */
void tpj_lower_avg_pool_nd(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_avg_t a;
  if (!tpj_avg_params(ctx, &a, "avg_pool")) return;
  int nsp = a.nsp, n = nsp + 1;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t x = tpj_window_planes(b, tpj_hlo_emit_convert(b, ctx->in[0], a.cd), nsp);
  int64_t od[TPJ_MAX_DIMS], lo[TPJ_MAX_DIMS] = {0}, hi[TPJ_MAX_DIMS] = {0}, in0[TPJ_MAX_DIMS] = {0};
  od[0] = x.dims[0];
  for (int i = 0; i < nsp; ++i) {
    od[1 + i] = o->dims[o->ndim - nsp + i];
    int64_t need = (od[1 + i] - 1) * a.s[i] + a.k[i] - a.p[i] - x.dims[1 + i];
    lo[1 + i] = a.p[i];
    hi[1 + i] = need > 0 ? need : 0;
  }
  tpj_hlo_value_t xp = tpj_hlo_emit_pad_general(b, x, tpj_hlo_emit_zero(b, a.cd), lo, hi, in0);
  tpj_hlo_value_t sum = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, a.cd), od, n);
  int64_t t[TPJ_NSP_MAX] = {0};
  do {
    int64_t st[TPJ_MAX_DIMS] = {0}, lim[TPJ_MAX_DIMS], str[TPJ_MAX_DIMS];
    lim[0] = od[0];
    str[0] = 1;
    for (int i = 0; i < nsp; ++i) {
      st[1 + i] = t[i];
      lim[1 + i] = t[i] + (od[1 + i] - 1) * a.s[i] + 1;
      str[1 + i] = a.s[i];
    }
    sum = tpj_hlo_emit_binary(b, "stablehlo.add", sum, tpj_hlo_emit_slice(b, xp, st, lim, str));
  } while (tpj_pool_next(t, a.k, nsp) && tpj_hlo_ok(b));
  tpj_hlo_value_t r = tpj_hlo_emit_binary(b, "stablehlo.divide", sum, tpj_avg_div(b, &a, x.dims + 1, od));
  tpj_pool_results(b, o, 1, &r, results);
}

/* aten::avg_pool3d_backward: in[0] grad_output; attrs as avg_pool. Each tap
 * sends grad / divisor back to the input position it read: a pad with
 * interior stride - 1 places it (negative edges crop what fell in padding). */
void tpj_lower_avg_pool_nd_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_avg_t a;
  if (!tpj_avg_params(ctx, &a, "avg_pool_backward")) return;
  int nsp = a.nsp, n = nsp + 1;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t g = tpj_window_planes(b, tpj_hlo_emit_convert(b, ctx->in[0], a.cd), nsp);
  int64_t isp[TPJ_NSP_MAX], xd[TPJ_MAX_DIMS];
  xd[0] = g.dims[0];
  for (int i = 0; i < nsp; ++i) xd[1 + i] = isp[i] = o->dims[o->ndim - nsp + i];
  g = tpj_hlo_emit_binary(b, "stablehlo.divide", g, tpj_avg_div(b, &a, isp, g.dims));
  tpj_hlo_value_t sum = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, a.cd), xd, n);
  int64_t t[TPJ_NSP_MAX] = {0};
  do {
    int64_t lo[TPJ_NSP_MAX];
    for (int i = 0; i < nsp; ++i) lo[i] = t[i] - a.p[i];
    tpj_hlo_value_t placed;
    if (tpj_window_place(b, g, nsp, lo, a.s, isp, &placed))
      sum = tpj_hlo_emit_binary(b, "stablehlo.add", sum, placed);
  } while (tpj_pool_next(t, a.k, nsp) && tpj_hlo_ok(b));
  tpj_pool_results(b, o, 1, &sum, results);
}

/* ---- adaptive pooling --------------------------------------------------------
 * Cell j of n_out over n_in covers [floor(j*n_in/n_out),
 * ceil((j+1)*n_in/n_out)), as PyTorch's kernels do. */

static int64_t tpj_adaptive_width(int64_t n_out, int64_t n_in) {
  int64_t w = 0;
  for (int64_t j = 0; j < n_out; ++j) {
    int64_t s = j * n_in / n_out, e = ((j + 1) * n_in + n_out - 1) / n_out;
    if (e - s > w) w = e - s;
  }
  return w;
}

/* The window starts and ends of the cells along one dim (1-D i64) */
static void tpj_adaptive_bounds(tpj_hlo_builder_t* b, int64_t n_out, int64_t n_in,
                                tpj_hlo_value_t* start, tpj_hlo_value_t* end) {
  *start = tpj_pool_ratio(b, n_out, n_in, 0, n_out);
  *end = tpj_pool_ratio(b, n_out, n_in, n_in + n_out - 1, n_out);
}

/* aten::adaptive_max_pool2d / 3d: in[0] x; attrs
 * tpj_attrs_adaptive_max_pool_t. Results: maxima
 * and flat indices within each plane. Tap t of a cell reads start + t, valid
 * below end; the values come by a take along each spatial dim. */
void tpj_lower_adaptive_max_pool(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  int nsp = ctx->nattrs >= TPJ_ATTRS_WORDS(tpj_attrs_adaptive_max_pool_t)
                ? (int)TPJ_ATTRS(ctx, tpj_attrs_adaptive_max_pool_t)->nsp
                : 0;
  if (ctx->nin < 1 || nsp < 1 || nsp > TPJ_NSP_MAX || ctx->nouts < 2 || ctx->in[0].ndim < nsp + 1) {
    tpj_pool_bad(ctx, "adaptive_max_pool");
    return;
  }
  tpj_hlo_value_t x = tpj_window_planes(b, ctx->in[0], nsp);
  const tpj_rt_shape_t* o = &ctx->outs[0];
  int n = nsp + 1;
  int64_t od[TPJ_MAX_DIMS], ks[TPJ_NSP_MAX];
  tpj_hlo_value_t start[TPJ_NSP_MAX], end[TPJ_NSP_MAX];
  od[0] = x.dims[0];
  for (int i = 0; i < nsp; ++i) {
    od[1 + i] = o->dims[o->ndim - nsp + i];
    ks[i] = tpj_adaptive_width(od[1 + i], x.dims[1 + i]);
    tpj_adaptive_bounds(b, od[1 + i], x.dims[1 + i], &start[i], &end[i]);
  }
  tpj_hlo_value_t best = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_extreme(b, x.dtype, 0), od, n);
  tpj_hlo_value_t idx = tpj_pool_i64(b, -1, od, n);
  int64_t t[TPJ_NSP_MAX] = {0};
  do {
    tpj_hlo_value_t v = x, valid = {-1, 0, TPJ_DTYPE_INVALID, 0, {0}}, flat = valid;
    for (int i = 0; i < nsp; ++i) {
      int64_t on = od[1 + i];
      tpj_hlo_value_t pos = tpj_hlo_emit_binary(b, "stablehlo.add", start[i], tpj_pool_i64(b, t[i], &on, 1));
      tpj_hlo_value_t ok = tpj_hlo_emit_compare(b, pos, end[i], "LT");
      /* an invalid tap reads the cell's start instead (masked off below) */
      tpj_hlo_value_t safe = tpj_hlo_emit_select(b, ok, pos, start[i]);
      v = tpj_hlo_emit_take(b, v, safe, 1 + i);
      tpj_pool_tap_fold(b, i, tpj_pool_along(b, ok, od, n, 1 + i), tpj_pool_along(b, pos, od, n, 1 + i),
                        x.dims + 1, &valid, &flat);
    }
    tpj_pool_max_step(b, v, flat, valid, &best, &idx);
  } while (tpj_pool_next(t, ks, nsp) && tpj_hlo_ok(b));
  tpj_hlo_value_t vals[2] = {best, idx};
  tpj_pool_results(b, ctx->outs, 2, vals, results);
}

/* The adaptive window sum of v along dim d from n_in to n_out cells; with
 * `mean`, each cell divided by its width. Invalid taps are selected away
 * (not multiplied by 0, which would turn an inf into NaN). */
static tpj_hlo_value_t tpj_adaptive_sum(tpj_hlo_builder_t* b, tpj_hlo_value_t v, int d,
                                        int64_t n_out, int mean) {
  int64_t n_in = v.dims[d], K = tpj_adaptive_width(n_out, n_in);
  tpj_hlo_value_t start, end;
  tpj_adaptive_bounds(b, n_out, n_in, &start, &end);
  int64_t od[TPJ_MAX_DIMS];
  for (int i = 0; i < v.ndim; ++i) od[i] = i == d ? n_out : v.dims[i];
  tpj_hlo_value_t zero = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, v.dtype), od, v.ndim);
  tpj_hlo_value_t sum = zero;
  for (int64_t t = 0; t < K && tpj_hlo_ok(b); ++t) {
    tpj_hlo_value_t pos = tpj_hlo_emit_binary(b, "stablehlo.add", start, tpj_pool_i64(b, t, &n_out, 1));
    tpj_hlo_value_t ok = tpj_hlo_emit_compare(b, pos, end, "LT");
    tpj_hlo_value_t tap = tpj_hlo_emit_take(b, v, tpj_hlo_emit_select(b, ok, pos, start), d);
    tap = tpj_hlo_emit_select(b, tpj_pool_along(b, ok, od, v.ndim, d), tap, zero);
    sum = tpj_hlo_emit_binary(b, "stablehlo.add", sum, tap);
  }
  if (!mean) return sum;
  tpj_hlo_value_t w = tpj_hlo_emit_convert(b, tpj_hlo_emit_binary(b, "stablehlo.subtract", end, start), v.dtype);
  return tpj_hlo_emit_binary(b, "stablehlo.divide", sum, tpj_pool_along(b, w, od, v.ndim, d));
}

/* The widths of the n_out cells over n_in along dim d, broadcast like v */
static tpj_hlo_value_t tpj_adaptive_widths(tpj_hlo_builder_t* b, const tpj_hlo_value_t* v, int d,
                                           int64_t n_in) {
  tpj_hlo_value_t start, end;
  tpj_adaptive_bounds(b, v->dims[d], n_in, &start, &end);
  tpj_hlo_value_t w = tpj_hlo_emit_convert(b, tpj_hlo_emit_binary(b, "stablehlo.subtract", end, start), v->dtype);
  return tpj_pool_along(b, w, v->dims, v->ndim, d);
}

/* aten::_adaptive_avg_pool3d (bwd 0) and its backward (bwd 1): in[0] x or
 * grad_output; attrs tpj_attrs_pool_planes_t. Averaging is
 * separable: one adaptive mean per spatial dim. Its transpose scales by
 * 1 / width, then input i sums the cells covering it, which are cells
 * [floor(i*O/I), ceil((i+1)*O/I)): the same window rule with the sizes
 * swapped. */
static void tpj_adaptive_avg(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, int bwd) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_attrs_pool_planes_t* at = TPJ_ATTRS(ctx, tpj_attrs_pool_planes_t);
  int nsp = ctx->nattrs >= TPJ_ATTRS_WORDS(tpj_attrs_pool_planes_t) ? (int)at->nsp : 0;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nin < 1 || nsp < 1 || nsp > TPJ_NSP_MAX || ctx->in[0].ndim < nsp + 1) {
    tpj_pool_bad(ctx, "adaptive_avg_pool");
    return;
  }
  tpj_hlo_value_t x =
      tpj_window_planes(b, tpj_hlo_emit_convert(b, ctx->in[0], (tpj_dtype_t)at->compute), nsp);
  for (int i = nsp - 1; i >= 0; --i) {
    int64_t n = o->dims[o->ndim - nsp + i];
    if (bwd) x = tpj_hlo_emit_binary(b, "stablehlo.divide", x, tpj_adaptive_widths(b, &x, 1 + i, n));
    x = tpj_adaptive_sum(b, x, 1 + i, n, !bwd);
  }
  tpj_pool_results(b, o, 1, &x, results);
}

void tpj_lower_adaptive_avg_pool_nd(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_adaptive_avg(ctx, results, 0);
}

void tpj_lower_adaptive_avg_pool_nd_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_adaptive_avg(ctx, results, 1);
}
