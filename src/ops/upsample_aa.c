/* ops/upsample_aa: antialiased bilinear and bicubic resizing
 * (F.interpolate(..., antialias=True)): _upsample_bilinear2d_aa,
 * _upsample_bicubic2d_aa and their backward. The grid samplers are in
 * ops/sampling.c.
 *
 * Each output pixel along one axis is a normalised weighted sum over a
 * window of input pixels, and both the windows and the weights depend on the
 * sizes only. So they are computed here on the host with CPU's formulas in
 * CPU's precision (float for float tensors, double for double: each float
 * operation is rounded to float) and enter the program as constants: per
 * output position K taps (index, weight, and whether the tap lies in the
 * window). Taps outside the window are selected away rather than weighted
 * by zero, so an inf or NaN in the input stays where CPU puts it. Forward
 * resizes W, then H, and leaves an axis whose size does not change
 * untouched, as CPU's separable kernel does. The backward gathers, for each
 * input position, the outputs whose windows hold it (the transposed taps).
 *
 * attrs: tpj_attrs_upsample_aa_t. outs[0] is the result (forward: the resized shape;
 * backward: the input's shape). */
#include <stdlib.h>
#include <string.h>

#include "hlo/sampling.h"
#include "ops/attrs.h"
#include "ops/ops.h"

#define TPJ_MUL(x, y) tpj_hlo_emit_binary(b, "stablehlo.multiply", x, y)

typedef struct {
  int f32;  /* round every operation to float */
  int bicubic;
  int align;
  int has_scale[2];
  double scale[2];
} tpj_aa_t;

/* Rounds to the compute type. Each float +, -, *, / done in double and
 * rounded once is the float operation's exact result. */
static double tpj_aa_r(const tpj_aa_t* p, double x) { return p->f32 ? (double)(float)x : x; }

/* CPU's aa_filter: the triangle for bilinear; for bicubic Keys' cubic with
 * a = -0.5 (PIL's choice, unlike upsample_bicubic2d's -0.75). */
static double tpj_aa_filter(const tpj_aa_t* p, double x) {
  if (x < 0) x = -x;
  if (!p->bicubic) return x < 1.0 ? tpj_aa_r(p, 1.0 - x) : 0.0;
  double t;
  if (x < 1.0) { /* ((a + 2) x - (a + 3)) x x + 1 */
    t = tpj_aa_r(p, 1.5 * x);
    t = tpj_aa_r(p, t - 2.5);
    t = tpj_aa_r(p, t * x);
    t = tpj_aa_r(p, t * x);
    return tpj_aa_r(p, t + 1.0);
  }
  if (x < 2.0) { /* ((a x - 5 a) x + 8 a) x - 4 a */
    t = tpj_aa_r(p, -0.5 * x);
    t = tpj_aa_r(p, t + 2.5);
    t = tpj_aa_r(p, t * x);
    t = tpj_aa_r(p, t - 4.0);
    t = tpj_aa_r(p, t * x);
    return tpj_aa_r(p, t + 2.0);
  }
  return 0.0;
}

/* area_pixel_compute_scale in the compute type */
static double tpj_aa_scale(const tpj_aa_t* p, int k, int64_t in, int64_t out) {
  if (p->align) return out > 1 ? tpj_aa_r(p, (double)(in - 1) / (double)(out - 1)) : 0.0;
  if (p->has_scale[k] && p->scale[k] > 0.0) return tpj_aa_r(p, 1.0 / p->scale[k]);
  return tpj_aa_r(p, (double)in / (double)out);
}

/* Taps of `n` positions, `k` each: idx (in range), weight, in-window flag. */
typedef struct {
  int64_t n, k;
  int64_t* idx;
  double* w;
  unsigned char* on;
} tpj_aa_taps_t;

static void tpj_aa_taps_free(tpj_aa_taps_t* t) {
  free(t->idx);
  free(t->w);
  free(t->on);
  memset(t, 0, sizeof *t);
}

static int tpj_aa_taps_alloc(tpj_aa_taps_t* t, int64_t n, int64_t k) {
  t->n = n;
  t->k = k;
  size_t m = (size_t)(n * k > 0 ? n * k : 1);
  t->idx = (int64_t*)calloc(m, sizeof(int64_t));
  t->w = (double*)calloc(m, sizeof(double));
  t->on = (unsigned char*)calloc(m, 1);
  return t->idx && t->w && t->on;
}

/* CPU's _compute_indices_min_size_weights_aa for every output position of
 * one axis: the window [xmin, xmin + xsize) and its normalised weights. */
static int tpj_aa_forward_taps(const tpj_aa_t* p, int axis, int64_t in, int64_t out,
                               tpj_aa_taps_t* t) {
  double scale = tpj_aa_scale(p, axis, in, out);
  double half = p->bicubic ? 2.0 : 1.0; /* interp_size * 0.5 */
  double support = scale >= 1.0 ? tpj_aa_r(p, half * scale) : half;
  double invscale = scale >= 1.0 ? tpj_aa_r(p, 1.0 / scale) : 1.0;
  int64_t up = (int64_t)support; /* ceil: support > 0 (no libm in the C tests) */
  if ((double)up < support) ++up;
  int64_t kmax = up * 2 + 1;
  if (!tpj_aa_taps_alloc(t, out, kmax)) return 0;
  for (int64_t i = 0; i < out; ++i) {
    double center = tpj_aa_r(p, scale * ((double)i + 0.5));
    int64_t xmin = (int64_t)(tpj_aa_r(p, center - support) + 0.5);
    if (xmin < 0) xmin = 0;
    int64_t hi = (int64_t)(tpj_aa_r(p, center + support) + 0.5);
    int64_t xsize = (hi < in ? hi : in) - xmin;
    if (xsize < 0) xsize = 0;
    if (xsize > kmax) xsize = kmax;
    double* w = t->w + i * kmax;
    double total = 0.0;
    for (int64_t j = 0; j < xsize; ++j) {
      double d = tpj_aa_r(p, tpj_aa_r(p, (double)(j + xmin)) - center);
      w[j] = tpj_aa_filter(p, tpj_aa_r(p, (d + 0.5) * invscale));
      total = tpj_aa_r(p, total + w[j]);
    }
    for (int64_t j = 0; j < kmax; ++j) {
      int on = j < xsize;
      if (on && total != 0.0) w[j] = tpj_aa_r(p, w[j] / total);
      t->on[i * kmax + j] = (unsigned char)on;
      int64_t at = xmin + j;
      t->idx[i * kmax + j] = on ? at : (in > 0 ? (at < in ? at : in - 1) : 0);
      if (!on) w[j] = 0.0;
    }
  }
  return 1;
}

/* The transposed taps: for each input position, the outputs whose windows
 * hold it, in increasing output order, with their weights. */
static int tpj_aa_backward_taps(const tpj_aa_taps_t* f, int64_t in, tpj_aa_taps_t* t) {
  int64_t* count = (int64_t*)calloc((size_t)(in > 0 ? in : 1), sizeof(int64_t));
  if (!count) return 0;
  int64_t k = 1;
  for (int64_t i = 0; i < f->n * f->k; ++i)
    if (f->on[i] && ++count[f->idx[i]] > k) k = count[f->idx[i]];
  int ok = tpj_aa_taps_alloc(t, in, k);
  if (ok) {
    memset(count, 0, (size_t)(in > 0 ? in : 1) * sizeof(int64_t));
    for (int64_t o = 0; o < f->n; ++o)
      for (int64_t j = 0; j < f->k; ++j) {
        int64_t s = o * f->k + j;
        if (!f->on[s]) continue;
        int64_t i = f->idx[s], slot = i * k + count[i]++;
        t->idx[slot] = o;
        t->w[slot] = f->w[s];
        t->on[slot] = 1;
      }
  }
  free(count);
  return ok;
}

/* x along dim d resized by taps: result[.., p, ..] = sum over the in-window
 * taps j of w[p, j] * x[.., idx[p, j], ..]. */
static tpj_hlo_value_t tpj_aa_apply(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int d,
                                    const tpj_aa_taps_t* t) {
  tpj_dtype_t cd = x.dtype;
  int64_t pk[2] = {t->n, t->k}, flat = t->n * t->k;
  size_t m = (size_t)(flat > 0 ? flat : 1);
  void* wbuf = malloc(m * sizeof(double));
  if (!wbuf) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_OUT_OF_MEMORY, "antialias: out of memory"));
    return x;
  }
  for (int64_t i = 0; i < flat; ++i) {
    if (cd == TPJ_F32) ((float*)wbuf)[i] = (float)t->w[i];
    else ((double*)wbuf)[i] = t->w[i];
  }
  tpj_hlo_value_t idx = tpj_hlo_emit_const_array(b, TPJ_I64, &flat, 1, t->idx);
  tpj_hlo_value_t w = tpj_hlo_emit_const_array(b, cd, pk, 2, wbuf);
  tpj_hlo_value_t on = tpj_hlo_emit_const_array(b, TPJ_U8, pk, 2, t->on);
  free(wbuf);
  on = tpj_hlo_emit_compare(b, on, tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, TPJ_U8), pk, 2),
                            "NE");
  tpj_hlo_value_t v = tpj_hlo_emit_take(b, x, idx, d);
  int64_t dims[TPJ_MAX_DIMS];
  int nd = 0;
  for (int i = 0; i < x.ndim; ++i) {
    if (i == d) {
      dims[nd++] = t->n;
      dims[nd++] = t->k;
    } else {
      dims[nd++] = x.dims[i];
    }
  }
  v = tpj_hlo_emit_reshape(b, v, dims, nd);
  int64_t bd[2] = {d, d + 1};
  w = tpj_hlo_emit_broadcast_in_dim(b, w, dims, nd, bd);
  on = tpj_hlo_emit_broadcast_in_dim(b, on, dims, nd, bd);
  tpj_hlo_value_t zero = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, cd), dims, nd);
  v = tpj_hlo_emit_select(b, on, TPJ_MUL(w, v), zero);
  int64_t rd = d + 1;
  return tpj_hlo_emit_reduce(b, v, tpj_hlo_emit_zero(b, cd), &rd, 1, "stablehlo.add");
}

static int tpj_aa_parse(tpj_op_ctx_t* ctx, tpj_aa_t* p, const char* op) {
  const tpj_attrs_upsample_aa_t* at = TPJ_ATTRS(ctx, tpj_attrs_upsample_aa_t);
  if (ctx->nin < 1 || ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_upsample_aa_t) ||
      ctx->in[0].ndim != 4 || ctx->outs[0].ndim != 4 ||
      (at->compute != TPJ_F32 && at->compute != TPJ_F64)) {
    tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "%s: bad operands", op));
    return 0;
  }
  p->f32 = at->compute == TPJ_F32;
  p->bicubic = (int)at->bicubic;
  p->align = (int)at->align_corners;
  for (int k = 0; k < 2; ++k) {
    p->has_scale[k] = (int)at->scales[k].has_scale;
    memcpy(&p->scale[k], &at->scales[k].bits, sizeof(double));
  }
  return 1;
}

/* aten::_upsample_{bilinear,bicubic}2d_aa: in[0] x (N, C, H, W) */
void tpj_lower_upsample_aa(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_aa_t p;
  if (!tpj_aa_parse(ctx, &p, "_upsample_aa")) return;
  tpj_dtype_t cd = (tpj_dtype_t)TPJ_ATTRS(ctx, tpj_attrs_upsample_aa_t)->compute;
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  for (int d = 3; d >= 2 && tpj_hlo_ok(b); --d) {
    int64_t in = x.dims[d], out = ctx->outs[0].dims[d];
    if (in == out) continue; /* CPU leaves an unchanged axis alone */
    tpj_aa_taps_t t = {0};
    if (!tpj_aa_forward_taps(&p, d - 2, in, out, &t)) {
      tpj_aa_taps_free(&t);
      tpj_hlo_fail(b, tpj_status_make(TPJ_OUT_OF_MEMORY, "_upsample_aa: out of memory"));
      return;
    }
    x = tpj_aa_apply(b, x, d, &t);
    tpj_aa_taps_free(&t);
  }
  results[0] = tpj_hlo_emit_convert(b, x, ctx->outs[0].dtype);
}

/* aten::_upsample_{bilinear,bicubic}2d_aa_backward: in[0] grad (N, C, OH,
 * OW); the result has the input's shape. CPU's backward spreads each
 * gradient over its window on every axis (it does not skip unchanged ones). */
void tpj_lower_upsample_aa_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_aa_t p;
  if (!tpj_aa_parse(ctx, &p, "_upsample_aa_backward")) return;
  tpj_dtype_t cd = (tpj_dtype_t)TPJ_ATTRS(ctx, tpj_attrs_upsample_aa_t)->compute;
  tpj_hlo_value_t g = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  for (int d = 2; d <= 3 && tpj_hlo_ok(b); ++d) {
    int64_t in = ctx->outs[0].dims[d], out = g.dims[d];
    tpj_aa_taps_t f = {0}, t = {0};
    int ok = tpj_aa_forward_taps(&p, d - 2, in, out, &f) && tpj_aa_backward_taps(&f, in, &t);
    if (ok) g = tpj_aa_apply(b, g, d, &t);
    tpj_aa_taps_free(&f);
    tpj_aa_taps_free(&t);
    if (!ok) {
      tpj_hlo_fail(b, tpj_status_make(TPJ_OUT_OF_MEMORY, "_upsample_aa: out of memory"));
      return;
    }
  }
  results[0] = tpj_hlo_emit_convert(b, g, ctx->outs[0].dtype);
}
