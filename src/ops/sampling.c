/* ops/sampling: grid_sampler_2d / grid_sampler_3d and their backward
 * (F.grid_sample): bilinear and nearest for 2 or 3 spatial dims, bicubic
 * for 2; padding zeros, border or reflection; align_corners either way.
 *
 * Each output point reads the input at a position the grid gives in
 * [-1, 1] (x for the last spatial dim, then y, then z). Positions are
 * unnormalized and padded with CPU's formulas in the compute dtype (the
 * vectorized 2-D kernel's, and GridSampler.h's unnormalization for 3-D);
 * the neighbours are read with one flat gather per corner or tap, and a
 * neighbour outside the input contributes nothing (it is selected away, not
 * weighted by zero, so an inf next to the input stays out as on CPU). The
 * backward adds weighted gradients into the input with a scatter-add and
 * computes the grid's gradient from the same neighbours, times the
 * derivative of the unnormalization and padding, as CPU does.
 *
 * attrs: tpj_attrs_grid_sampler_t (backward: tpj_attrs_grid_sampler_backward_t,
 * whose head it is). Forward in: input (N, C, *S), grid (N, *O, k). Backward in:
 * grad_output (N, C, *O), input, grid; outs: [grad_input,] grad_grid. */
#include <string.h>

#include "hlo/gather.h"
#include "ops/attrs.h"
#include "ops/ops.h"

#define TPJ_ADD(x, y) tpj_hlo_emit_binary(b, "stablehlo.add", x, y)
#define TPJ_SUB(x, y) tpj_hlo_emit_binary(b, "stablehlo.subtract", x, y)
#define TPJ_MUL(x, y) tpj_hlo_emit_binary(b, "stablehlo.multiply", x, y)

enum { TPJ_GS_ZEROS = 0, TPJ_GS_BORDER = 1, TPJ_GS_REFLECTION = 2 };

typedef struct {
  tpj_hlo_builder_t* b;
  tpj_dtype_t cd;
  int k; /* spatial dims */
  int mode, pad, align;
  int64_t n, c, sp[3], p; /* input: batch, channels, spatial sizes, their product */
  int ng;                 /* G = (N, *O): one entry per output point */
  int64_t g[4];
  int nfull; /* F = (N, C, *O) */
  int64_t full[5];
  tpj_hlo_value_t x_flat;   /* input, flattened, compute dtype */
  tpj_hlo_value_t coord[3]; /* grid coordinate per spatial axis (G) */
  tpj_hlo_value_t base;     /* n * C * P (G, i64) */
  tpj_hlo_value_t chan;     /* c * P (F, i64) */
} tpj_gs_t;

static tpj_hlo_value_t tpj_gs_c(const tpj_gs_t* s, double v) {
  return tpj_hlo_emit_broadcast_to(s->b, tpj_hlo_emit_const_f64(s->b, s->cd, v), s->g, s->ng);
}

static tpj_hlo_value_t tpj_gs_ci(const tpj_gs_t* s, int64_t v) {
  return tpj_hlo_emit_broadcast_to(s->b, tpj_hlo_emit_const_i64(s->b, v), s->g, s->ng);
}

/* A G-shaped value broadcast over the channels (F). */
static tpj_hlo_value_t tpj_gs_full(const tpj_gs_t* s, tpj_hlo_value_t v) {
  int64_t bd[4] = {0, 2, 3, 4};
  return tpj_hlo_emit_broadcast_in_dim(s->b, v, s->full, s->nfull, bd);
}

/* CPU's unnormalization scale: (size - 1) / 2 or size / 2 in the compute
 * type (float division for float). */
static double tpj_gs_scale(const tpj_gs_t* s, int64_t size) {
  double v = s->align ? (double)(size - 1) / 2.0 : (double)size / 2.0;
  return s->cd == TPJ_F32 ? (double)(float)v : v;
}

/* [-1, 1] -> pixel coordinates. 2-D: (x + 1) sf [- 0.5]; 3-D:
 * ((x + 1) / 2) (size - 1) or ((x + 1) size - 1) / 2. */
static tpj_hlo_value_t tpj_gs_unnormalize(const tpj_gs_t* s, tpj_hlo_value_t x, int64_t size) {
  tpj_hlo_builder_t* b = s->b;
  tpj_hlo_value_t x1 = TPJ_ADD(x, tpj_gs_c(s, 1.0));
  if (s->k == 2) {
    tpj_hlo_value_t r = TPJ_MUL(x1, tpj_gs_c(s, tpj_gs_scale(s, size)));
    return s->align ? r : TPJ_SUB(r, tpj_gs_c(s, 0.5));
  }
  tpj_hlo_value_t two = tpj_gs_c(s, 2.0);
  if (s->align)
    return TPJ_MUL(tpj_hlo_emit_binary(b, "stablehlo.divide", x1, two), tpj_gs_c(s, (double)(size - 1)));
  return tpj_hlo_emit_binary(b, "stablehlo.divide",
                             TPJ_SUB(TPJ_MUL(x1, tpj_gs_c(s, (double)size)), tpj_gs_c(s, 1.0)), two);
}

static tpj_hlo_value_t tpj_gs_clip(const tpj_gs_t* s, tpj_hlo_value_t x, int64_t size) {
  tpj_hlo_builder_t* b = s->b;
  return tpj_hlo_emit_binary(b, "stablehlo.minimum", tpj_gs_c(s, (double)(size - 1)),
                             tpj_hlo_emit_binary(b, "stablehlo.maximum", x, tpj_gs_c(s, 0.0)));
}

/* Reflection about the input's edges (align_corners: the corner pixels'
 * centres; else their outer edges): |x - low| folded into [0, 2 span]. The
 * sign of the fold's derivative goes to *sign when sign is not NULL. */
static tpj_hlo_value_t tpj_gs_reflect(const tpj_gs_t* s, tpj_hlo_value_t x, int64_t size,
                                      tpj_hlo_value_t* sign) {
  tpj_hlo_builder_t* b = s->b;
  if (s->align && size <= 1) {
    if (sign) *sign = tpj_gs_c(s, 0.0);
    return tpj_gs_c(s, 0.0);
  }
  double low = s->align ? 0.0 : -0.5;
  double twice = s->align ? (double)(size - 1) * 2 : (double)size * 2;
  tpj_hlo_value_t ts = tpj_gs_c(s, twice);
  tpj_hlo_value_t in = s->align ? x : TPJ_SUB(x, tpj_gs_c(s, low));
  tpj_hlo_value_t a = tpj_hlo_emit_unary(b, "stablehlo.abs", in);
  tpj_hlo_value_t flips =
      tpj_hlo_emit_unary(b, "stablehlo.floor", tpj_hlo_emit_binary(b, "stablehlo.divide", a, ts));
  tpj_hlo_value_t extra = TPJ_SUB(a, TPJ_MUL(flips, ts));
  tpj_hlo_value_t other = TPJ_SUB(ts, extra);
  tpj_hlo_value_t more = tpj_hlo_emit_compare(b, extra, other, "GT");
  tpj_hlo_value_t r = tpj_hlo_emit_select(b, more, other, extra);
  if (!s->align) r = TPJ_ADD(r, tpj_gs_c(s, low));
  if (sign) {
    tpj_hlo_value_t neg = tpj_hlo_emit_compare(b, in, tpj_gs_c(s, 0.0), "LT");
    tpj_hlo_value_t flip = tpj_hlo_emit_binary(b, "stablehlo.xor", more, neg);
    *sign = tpj_hlo_emit_select(b, flip, tpj_gs_c(s, -1.0), tpj_gs_c(s, 1.0));
  }
  return r;
}

/* Padding applied to a pixel coordinate (CPU's compute_coordinates); with
 * grad, the derivative of it goes there (0 where the clip saturates). */
static tpj_hlo_value_t tpj_gs_pad(const tpj_gs_t* s, tpj_hlo_value_t x, int64_t size,
                                  tpj_hlo_value_t* grad) {
  tpj_hlo_builder_t* b = s->b;
  if (s->pad == TPJ_GS_ZEROS) {
    if (grad) *grad = tpj_gs_c(s, 1.0);
    return x;
  }
  tpj_hlo_value_t sign = tpj_gs_c(s, 1.0);
  if (s->pad == TPJ_GS_REFLECTION) x = tpj_gs_reflect(s, x, size, grad ? &sign : NULL);
  if (grad) { /* borders count as outside: 0 < x < size - 1 */
    tpj_hlo_value_t inside = tpj_hlo_emit_binary(
        b, "stablehlo.and", tpj_hlo_emit_compare(b, x, tpj_gs_c(s, 0.0), "GT"),
        tpj_hlo_emit_compare(b, x, tpj_gs_c(s, (double)(size - 1)), "LT"));
    *grad = tpj_hlo_emit_select(b, inside, sign, tpj_gs_c(s, 0.0));
  }
  return tpj_gs_clip(s, x, size);
}

/* One neighbour: integer index per spatial axis (G, i64). Reads the input
 * there (F), 0 where any index is outside; *flat_idx and *valid (F) are
 * the flat position and the in-bounds mask, for the backward's scatter. */
static tpj_hlo_value_t tpj_gs_read(const tpj_gs_t* s, const tpj_hlo_value_t* idx,
                                   tpj_hlo_value_t* flat_idx, tpj_hlo_value_t* valid) {
  tpj_hlo_builder_t* b = s->b;
  tpj_hlo_value_t ok = {-1, 0, TPJ_DTYPE_INVALID, 0, {0}}, lin = s->base;
  int64_t stride = 1;
  for (int a = s->k - 1; a >= 0; --a) {
    tpj_hlo_value_t lo = tpj_gs_ci(s, 0), hi = tpj_gs_ci(s, s->sp[a] - 1);
    tpj_hlo_value_t in = tpj_hlo_emit_binary(b, "stablehlo.and", tpj_hlo_emit_compare(b, idx[a], lo, "GE"),
                                             tpj_hlo_emit_compare(b, idx[a], hi, "LE"));
    ok = a == s->k - 1 ? in : tpj_hlo_emit_binary(b, "stablehlo.and", ok, in);
    tpj_hlo_value_t cl = tpj_hlo_emit_binary(b, "stablehlo.maximum", tpj_hlo_emit_binary(b, "stablehlo.minimum", idx[a], hi), lo);
    lin = TPJ_ADD(lin, TPJ_MUL(cl, tpj_gs_ci(s, stride)));
    stride *= s->sp[a];
  }
  tpj_hlo_value_t fi = TPJ_ADD(tpj_gs_full(s, lin), s->chan);
  tpj_hlo_value_t okf = tpj_gs_full(s, ok);
  tpj_hlo_value_t v = tpj_hlo_emit_gather_1d(b, s->x_flat, fi);
  tpj_hlo_value_t zero = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, s->cd), s->full, s->nfull);
  if (flat_idx) *flat_idx = fi;
  if (valid) *valid = okf;
  return tpj_hlo_emit_select(b, okf, v, zero);
}

static tpj_hlo_value_t tpj_gs_to_i64(const tpj_gs_t* s, tpj_hlo_value_t x) {
  return tpj_hlo_emit_convert(s->b, x, TPJ_I64);
}

/* Reads operands and sets up shapes. x: input, grid: the grid. */
static int tpj_gs_init(tpj_op_ctx_t* ctx, tpj_gs_t* s, tpj_hlo_value_t x, tpj_hlo_value_t grid,
                       const char* op) {
  memset(s, 0, sizeof *s);
  tpj_hlo_builder_t* b = ctx->b;
  s->b = b;
  const tpj_attrs_grid_sampler_t* at = TPJ_ATTRS(ctx, tpj_attrs_grid_sampler_t);
  if (ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_grid_sampler_t) ||
      (at->compute != TPJ_F32 && at->compute != TPJ_F64) || (x.ndim != 4 && x.ndim != 5) ||
      grid.ndim != x.ndim || grid.dims[x.ndim - 1] != x.ndim - 2 ||
      (at->interpolation == TPJ_GS_BICUBIC && x.ndim != 4)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "%s: bad operands", op));
    return 0;
  }
  s->cd = (tpj_dtype_t)at->compute;
  s->mode = (int)at->interpolation;
  s->pad = (int)at->padding;
  s->align = (int)at->align_corners;
  s->k = x.ndim - 2;
  s->n = x.dims[0];
  s->c = x.dims[1];
  s->p = 1;
  for (int a = 0; a < s->k; ++a) {
    s->sp[a] = x.dims[2 + a];
    s->p *= s->sp[a];
  }
  s->ng = grid.ndim - 1;
  for (int i = 0; i < s->ng; ++i) s->g[i] = grid.dims[i];
  s->nfull = s->ng + 1;
  s->full[0] = s->n;
  s->full[1] = s->c;
  for (int i = 1; i < s->ng; ++i) s->full[i + 1] = s->g[i];
  int64_t total = tpj_hlo_numel(&x);
  s->x_flat = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, x, s->cd), &total, 1);
  tpj_hlo_value_t gr = tpj_hlo_emit_convert(b, grid, s->cd);
  for (int j = 0; j < s->k; ++j) { /* grid entry j is spatial axis k-1-j */
    int64_t start[5] = {0}, limit[5], step[5];
    for (int i = 0; i < grid.ndim; ++i) {
      limit[i] = grid.dims[i];
      step[i] = 1;
    }
    start[grid.ndim - 1] = j;
    limit[grid.ndim - 1] = j + 1;
    s->coord[s->k - 1 - j] =
        tpj_hlo_emit_reshape(b, tpj_hlo_emit_slice(b, gr, start, limit, step), s->g, s->ng);
  }
  s->base = TPJ_MUL(tpj_hlo_emit_iota(b, TPJ_I64, s->g, s->ng, 0), tpj_gs_ci(s, s->c * s->p));
  s->chan = TPJ_MUL(tpj_hlo_emit_iota(b, TPJ_I64, s->full, s->nfull, 1),
                    tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, s->p), s->full, s->nfull));
  return tpj_hlo_ok(b);
}

/* Per spatial axis: the padded pixel coordinate and its derivative with
 * respect to the grid value (unnormalization scale times padding's). */
static void tpj_gs_source(const tpj_gs_t* s, tpj_hlo_value_t* pos, tpj_hlo_value_t* dpos) {
  for (int a = 0; a < s->k; ++a) {
    tpj_hlo_value_t u = tpj_gs_unnormalize(s, s->coord[a], s->sp[a]);
    if (s->mode == TPJ_GS_BICUBIC) { /* bicubic pads each tap instead */
      pos[a] = u;
      if (dpos) dpos[a] = tpj_gs_c(s, tpj_gs_scale(s, s->sp[a]));
      continue;
    }
    tpj_hlo_value_t g;
    pos[a] = tpj_gs_pad(s, u, s->sp[a], dpos ? &g : NULL);
    if (dpos)
      dpos[a] = tpj_hlo_emit_binary(s->b, "stablehlo.multiply", g,
                                    tpj_gs_c(s, tpj_gs_scale(s, s->sp[a])));
  }
}

/* Multiplication order of the corner weights: CPU's 2-D kernel takes y's
 * factor times x's, the 3-D one x's times y's times z's. */
static void tpj_gs_order(const tpj_gs_t* s, int* order) {
  for (int i = 0; i < s->k; ++i) order[i] = s->k == 2 ? i : s->k - 1 - i;
}

/* The bilinear corners: floor, and the factor of each side per axis
 * (2-D: 1 - frac and frac; 3-D: (floor + 1) - x and x - floor). */
static void tpj_gs_linear_factors(const tpj_gs_t* s, const tpj_hlo_value_t* pos,
                                  tpj_hlo_value_t* i0, tpj_hlo_value_t (*fac)[2]) {
  tpj_hlo_builder_t* b = s->b;
  for (int a = 0; a < s->k; ++a) {
    tpj_hlo_value_t fl = tpj_hlo_emit_unary(b, "stablehlo.floor", pos[a]);
    i0[a] = tpj_gs_to_i64(s, fl);
    tpj_hlo_value_t frac = TPJ_SUB(pos[a], fl);
    if (s->k == 2) {
      fac[a][0] = TPJ_SUB(tpj_gs_c(s, 1.0), frac);
      fac[a][1] = frac;
    } else {
      fac[a][0] = TPJ_SUB(TPJ_ADD(fl, tpj_gs_c(s, 1.0)), pos[a]);
      fac[a][1] = frac;
    }
  }
}

/* offset of spatial axis a in corner c: bit 0 is x (the last axis) */
static int tpj_gs_off(const tpj_gs_t* s, int c, int a) { return (c >> (s->k - 1 - a)) & 1; }

static const double kCubicA = -0.75;

/* CPU's cubic convolution coefficients for fraction t, and (with grad) the
 * negated derivatives get_cubic_coefficients_grad gives. */
static void tpj_gs_cubic(const tpj_gs_t* s, tpj_hlo_value_t t, tpj_hlo_value_t* c,
                         tpj_hlo_value_t* cg) {
  tpj_hlo_builder_t* b = s->b;
  const double A = kCubicA;
#define K(v) tpj_gs_c(s, v)
  /* cubic1(x) = ((A + 2) x - (A + 3)) x x + 1; cubic2(x) = ((A x - 5A) x + 8A) x - 4A */
#define CUBIC1(x) TPJ_ADD(TPJ_MUL(TPJ_MUL(TPJ_SUB(TPJ_MUL(K(A + 2), x), K(A + 3)), x), x), K(1.0))
#define CUBIC2(x) \
  TPJ_SUB(TPJ_MUL(TPJ_ADD(TPJ_MUL(TPJ_SUB(TPJ_MUL(K(A), x), K(5 * A)), x), K(8 * A)), x), K(4 * A))
  tpj_hlo_value_t t1 = TPJ_ADD(t, K(1.0)), one_m = TPJ_SUB(K(1.0), t);
  tpj_hlo_value_t t2 = TPJ_ADD(one_m, K(1.0));
  c[0] = CUBIC2(t1);
  c[1] = CUBIC1(t);
  c[2] = CUBIC1(one_m);
  c[3] = CUBIC2(t2);
  if (cg) {
    tpj_hlo_value_t x = TPJ_SUB(K(-1.0), t);
    cg[0] = TPJ_SUB(TPJ_MUL(TPJ_SUB(TPJ_MUL(K(-3 * A), x), K(10 * A)), x), K(8 * A));
    x = tpj_hlo_emit_unary(b, "stablehlo.negate", t);
    cg[1] = TPJ_MUL(TPJ_SUB(TPJ_MUL(K(-3 * (A + 2)), x), K(2 * (A + 3))), x);
    x = one_m;
    cg[2] = TPJ_MUL(TPJ_SUB(TPJ_MUL(K(3 * (A + 2)), x), K(2 * (A + 3))), x);
    x = TPJ_SUB(K(2.0), t);
    cg[3] = TPJ_ADD(TPJ_MUL(TPJ_SUB(TPJ_MUL(K(3 * A), x), K(10 * A)), x), K(8 * A));
  }
#undef CUBIC1
#undef CUBIC2
#undef K
}

/* The integer index of the bicubic tap at pixel coordinate fl + off, padded
 * like CPU's get_value_bounded. */
static tpj_hlo_value_t tpj_gs_cubic_tap(const tpj_gs_t* s, tpj_hlo_value_t fl, int off, int a) {
  tpj_hlo_builder_t* b = s->b;
  tpj_hlo_value_t p = tpj_gs_pad(s, TPJ_ADD(fl, tpj_gs_c(s, (double)off)), s->sp[a], NULL);
  return tpj_gs_to_i64(s, tpj_hlo_emit_unary(b, "stablehlo.floor", p));
}

static tpj_hlo_value_t tpj_gs_zero_full(const tpj_gs_t* s) {
  return tpj_hlo_emit_broadcast_to(s->b, tpj_hlo_emit_zero(s->b, s->cd), s->full, s->nfull);
}

/* What the forward and the backward share: for every neighbour (corner or
 * tap) its value, flat index, mask, weight (G), and per axis the weight's
 * derivative (G) with respect to the pixel coordinate. */
#define TPJ_GS_MAX_NB 16
typedef struct {
  int nb;
  tpj_hlo_value_t val[TPJ_GS_MAX_NB], idx[TPJ_GS_MAX_NB], ok[TPJ_GS_MAX_NB];
  tpj_hlo_value_t w[TPJ_GS_MAX_NB];
  tpj_hlo_value_t dw[TPJ_GS_MAX_NB][3];
  tpj_hlo_value_t cx[4], cy[4]; /* bicubic: the coefficients along x and y */
} tpj_gs_nb_t;

static void tpj_gs_neighbours(const tpj_gs_t* s, const tpj_hlo_value_t* pos, int want_dw,
                              tpj_gs_nb_t* nb) {
  tpj_hlo_builder_t* b = s->b;
  if (s->mode == TPJ_GS_NEAREST) {
    tpj_hlo_value_t idx[3];
    for (int a = 0; a < s->k; ++a)
      idx[a] = tpj_gs_to_i64(s, tpj_hlo_emit_unary(b, "stablehlo.round_nearest_even", pos[a]));
    nb->nb = 1;
    nb->val[0] = tpj_gs_read(s, idx, &nb->idx[0], &nb->ok[0]);
    nb->w[0] = tpj_gs_c(s, 1.0);
    for (int a = 0; a < s->k; ++a) nb->dw[0][a] = tpj_gs_c(s, 0.0);
    return;
  }
  if (s->mode == TPJ_GS_BILINEAR) {
    tpj_hlo_value_t i0[3], fac[3][2];
    int order[3];
    tpj_gs_linear_factors(s, pos, i0, fac);
    tpj_gs_order(s, order);
    nb->nb = 1 << s->k;
    for (int c = 0; c < nb->nb; ++c) {
      tpj_hlo_value_t idx[3];
      for (int a = 0; a < s->k; ++a)
        idx[a] = tpj_gs_off(s, c, a) ? TPJ_ADD(i0[a], tpj_gs_ci(s, 1)) : i0[a];
      nb->val[c] = tpj_gs_read(s, idx, &nb->idx[c], &nb->ok[c]);
      tpj_hlo_value_t w = fac[order[0]][tpj_gs_off(s, c, order[0])];
      for (int i = 1; i < s->k; ++i) w = TPJ_MUL(w, fac[order[i]][tpj_gs_off(s, c, order[i])]);
      nb->w[c] = w;
      for (int a = 0; want_dw && a < s->k; ++a) {
        /* d w / d pos[a]: the other axes' factors, signed by the side */
        tpj_hlo_value_t d = tpj_gs_c(s, tpj_gs_off(s, c, a) ? 1.0 : -1.0);
        for (int i = 0; i < s->k; ++i)
          if (order[i] != a) d = TPJ_MUL(d, fac[order[i]][tpj_gs_off(s, c, order[i])]);
        nb->dw[c][a] = d;
      }
    }
    return;
  }
  /* bicubic, 2-D: taps (ix - 1 + i, iy - 1 + j); values are summed along x
   * first, so neighbour 4 j + i is tap (i, j) */
  tpj_hlo_value_t fx = tpj_hlo_emit_unary(b, "stablehlo.floor", pos[1]);
  tpj_hlo_value_t fy = tpj_hlo_emit_unary(b, "stablehlo.floor", pos[0]);
  tpj_hlo_value_t xc[4], yc[4], xg[4], yg[4];
  tpj_gs_cubic(s, TPJ_SUB(pos[1], fx), xc, want_dw ? xg : NULL);
  tpj_gs_cubic(s, TPJ_SUB(pos[0], fy), yc, want_dw ? yg : NULL);
  nb->nb = 16;
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 4; ++i) {
      int q = 4 * j + i;
      tpj_hlo_value_t idx[2] = {tpj_gs_cubic_tap(s, fy, j - 1, 0), tpj_gs_cubic_tap(s, fx, i - 1, 1)};
      nb->val[q] = tpj_gs_read(s, idx, &nb->idx[q], &nb->ok[q]);
      nb->w[q] = TPJ_MUL(xc[i], yc[j]);
      if (want_dw) { /* the coefficient grads are negated derivatives */
        nb->dw[q][1] = tpj_hlo_emit_unary(b, "stablehlo.negate", TPJ_MUL(xg[i], yc[j]));
        nb->dw[q][0] = tpj_hlo_emit_unary(b, "stablehlo.negate", TPJ_MUL(yg[j], xc[i]));
      }
    }
  for (int i = 0; i < 4; ++i) {
    nb->cx[i] = xc[i];
    nb->cy[i] = yc[i];
  }
}

/* aten::grid_sampler_2d / grid_sampler_3d */
void tpj_lower_grid_sampler(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_gs_t s;
  if (ctx->nin < 2 || !tpj_gs_init(ctx, &s, ctx->in[0], ctx->in[1], "grid_sampler")) return;
  tpj_hlo_builder_t* b = s.b;
  tpj_hlo_value_t pos[3];
  tpj_gs_source(&s, pos, NULL);
  tpj_gs_nb_t nb;
  tpj_gs_neighbours(&s, pos, 0, &nb);
  tpj_hlo_value_t out;
  if (s.mode == TPJ_GS_BICUBIC) { /* rows along x, then those along y */
    tpj_hlo_value_t rows[4];
    for (int j = 0; j < 4; ++j) {
      tpj_hlo_value_t r = TPJ_MUL(nb.val[4 * j], tpj_gs_full(&s, nb.cx[0]));
      for (int i = 1; i < 4; ++i)
        r = TPJ_ADD(r, TPJ_MUL(nb.val[4 * j + i], tpj_gs_full(&s, nb.cx[i])));
      rows[j] = r;
    }
    out = TPJ_MUL(rows[0], tpj_gs_full(&s, nb.cy[0]));
    for (int j = 1; j < 4; ++j) out = TPJ_ADD(out, TPJ_MUL(rows[j], tpj_gs_full(&s, nb.cy[j])));
  } else {
    out = tpj_gs_zero_full(&s);
    for (int c = 0; c < nb.nb; ++c) {
      tpj_hlo_value_t v = s.mode == TPJ_GS_NEAREST ? nb.val[c] : TPJ_MUL(nb.val[c], tpj_gs_full(&s, nb.w[c]));
      out = c ? TPJ_ADD(out, v) : v;
    }
  }
  results[0] = tpj_hlo_emit_convert(b, out, ctx->outs[0].dtype);
}

/* aten::grid_sampler_2d_backward / grid_sampler_3d_backward */
void tpj_lower_grid_sampler_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_gs_t s;
  if (ctx->nin < 3 || ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_grid_sampler_backward_t) ||
      !tpj_gs_init(ctx, &s, ctx->in[1], ctx->in[2], "grid_sampler_backward"))
    return;
  tpj_hlo_builder_t* b = s.b;
  int want_input = (int)TPJ_ATTRS(ctx, tpj_attrs_grid_sampler_backward_t)->want_input;
  if (ctx->nouts != 1 + want_input) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "grid_sampler_backward: bad outputs"));
    return;
  }
  tpj_hlo_value_t go = tpj_hlo_emit_convert(b, ctx->in[0], s.cd);
  tpj_hlo_value_t pos[3], dpos[3];
  tpj_gs_source(&s, pos, dpos);
  tpj_gs_nb_t nb;
  tpj_gs_neighbours(&s, pos, 1, &nb);
  tpj_hlo_value_t zero = tpj_gs_zero_full(&s);
  if (want_input) {
    int64_t total = s.n * s.c * s.p;
    tpj_hlo_value_t acc = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, s.cd), &total, 1);
    int64_t m = s.n * s.c;
    for (int i = 1; i < s.nfull - 1; ++i) m *= s.full[i + 1];
    for (int c = 0; c < nb.nb; ++c) {
      tpj_hlo_value_t u = s.mode == TPJ_GS_NEAREST ? go : TPJ_MUL(go, tpj_gs_full(&s, nb.w[c]));
      u = tpj_hlo_emit_select(b, nb.ok[c], u, zero);
      acc = tpj_hlo_emit_scatter_1d_combine(b, acc, tpj_hlo_emit_reshape(b, nb.idx[c], &m, 1),
                                            tpj_hlo_emit_reshape(b, u, &m, 1), "stablehlo.add");
    }
    results[0] = tpj_hlo_emit_convert(
        b, tpj_hlo_emit_reshape(b, acc, ctx->outs[0].dims, ctx->outs[0].ndim), ctx->outs[0].dtype);
  }
  /* grid: per axis sum over neighbours and channels of value * dw * grad;
   * exactly 0 for nearest, as on CPU (an inf value must not make a NaN) */
  tpj_hlo_value_t parts[3];
  if (s.mode == TPJ_GS_NEAREST) {
    int64_t zd[5];
    for (int i = 0; i < s.ng; ++i) zd[i] = s.g[i];
    zd[s.ng] = s.k;
    results[want_input] = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, ctx->outs[want_input].dtype), zd, s.ng + 1);
    return;
  }
  for (int a = 0; a < s.k; ++a) {
    tpj_hlo_value_t acc = zero;
    for (int c = 0; c < nb.nb; ++c) {
      tpj_hlo_value_t t = TPJ_MUL(TPJ_MUL(nb.val[c], tpj_gs_full(&s, nb.dw[c][a])), go);
      acc = c ? TPJ_ADD(acc, t) : t;
    }
    int64_t cdim = 1;
    tpj_hlo_value_t g = tpj_hlo_emit_reduce(b, acc, tpj_hlo_emit_zero(b, s.cd), &cdim, 1, "stablehlo.add");
    g = TPJ_MUL(g, dpos[a]);
    int64_t d1[5];
    for (int i = 0; i < s.ng; ++i) d1[i] = s.g[i];
    d1[s.ng] = 1;
    parts[s.k - 1 - a] = tpj_hlo_emit_reshape(b, g, d1, s.ng + 1);
  }
  tpj_hlo_value_t gg = tpj_hlo_emit_concatenate(b, parts, s.k, s.ng);
  results[want_input] = tpj_hlo_emit_convert(b, gg, ctx->outs[want_input].dtype);
}
