/* ops/upsample_bicubic: upsample_bicubic2d and its backward (F.interpolate's bicubic
 * mode), separable like CPU's kernel: the last dim is interpolated first,
 * then the one before, each output reading 4 clamped neighbours with the
 * cubic-convolution weights (A = -0.75). Source positions and weights are
 * computed in the compute dtype from an iota with CPU's formulas
 * (area_pixel_compute_source_index, guard_index_and_lambda). The backward
 * adds each weighted gradient into its neighbour rows with a scatter-add.
 * attrs: tpj_attrs_upsample_bicubic_t. */
#include <string.h>

#include "ops/attrs.h"
#include "ops/ops.h"

#define TPJ_MUL(x, y) tpj_hlo_emit_binary(b, "stablehlo.multiply", x, y)
#define TPJ_ADD(x, y) tpj_hlo_emit_binary(b, "stablehlo.add", x, y)
#define TPJ_SUB(x, y) tpj_hlo_emit_binary(b, "stablehlo.subtract", x, y)

static const double kCubicA = -0.75;

typedef struct {
  tpj_hlo_value_t idx[4];  /* (O,) i64 neighbour rows, clamped */
  tpj_hlo_value_t w[4];    /* (O,) weights in the compute dtype */
} tpj_cubic_taps_t;

/* CPU's area_pixel_compute_scale in the compute type (float division for
 * float, double for double). */
static double tpj_cubic_scale(tpj_dtype_t cd, int align, int has, double user, int64_t in,
                              int64_t out) {
  if (align) {
    if (out <= 1) return 0.0;
    return cd == TPJ_F64 ? (double)(in - 1) / (double)(out - 1) : (double)((float)(in - 1) / (float)(out - 1));
  }
  if (has && user > 0.0) return cd == TPJ_F64 ? 1.0 / user : (double)(float)(1.0 / user);
  return cd == TPJ_F64 ? (double)in / (double)out : (double)((float)in / (float)out);
}

static tpj_hlo_value_t tpj_cubic_c(tpj_hlo_builder_t* b, tpj_dtype_t dt, double v, int64_t n) {
  return tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_f64(b, dt, v), &n, 1);
}

/* ((A + 2) x - (A + 3)) x x + 1 */
static tpj_hlo_value_t tpj_cubic1(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int64_t n) {
  tpj_dtype_t dt = x.dtype;
  tpj_hlo_value_t v = TPJ_SUB(TPJ_MUL(tpj_cubic_c(b, dt, kCubicA + 2, n), x), tpj_cubic_c(b, dt, kCubicA + 3, n));
  return TPJ_ADD(TPJ_MUL(TPJ_MUL(v, x), x), tpj_cubic_c(b, dt, 1.0, n));
}

/* ((A x - 5 A) x + 8 A) x - 4 A */
static tpj_hlo_value_t tpj_cubic2(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int64_t n) {
  tpj_dtype_t dt = x.dtype;
  tpj_hlo_value_t v = TPJ_SUB(TPJ_MUL(tpj_cubic_c(b, dt, kCubicA, n), x), tpj_cubic_c(b, dt, 5 * kCubicA, n));
  v = TPJ_ADD(TPJ_MUL(v, x), tpj_cubic_c(b, dt, 8 * kCubicA, n));
  return TPJ_SUB(TPJ_MUL(v, x), tpj_cubic_c(b, dt, 4 * kCubicA, n));
}

/* The 4 taps of each of the out positions over in rows along dim k. */
static tpj_cubic_taps_t tpj_cubic_taps(tpj_op_ctx_t* ctx, int k, int64_t in, int64_t out) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_attrs_upsample_bicubic_t* at = TPJ_ATTRS(ctx, tpj_attrs_upsample_bicubic_t);
  tpj_dtype_t cd = (tpj_dtype_t)at->compute;
  int align = (int)at->align_corners;
  double user;
  memcpy(&user, &at->scales[k].bits, sizeof user);
  double scale = tpj_cubic_scale(cd, align, (int)at->scales[k].has_scale, user, in, out);
  tpj_hlo_value_t i = tpj_hlo_emit_iota(b, cd, &out, 1, 0);
  tpj_hlo_value_t real = align ? TPJ_MUL(tpj_cubic_c(b, cd, scale, out), i)
                               : TPJ_SUB(TPJ_MUL(tpj_cubic_c(b, cd, scale, out), TPJ_ADD(i, tpj_cubic_c(b, cd, 0.5, out))),
                                         tpj_cubic_c(b, cd, 0.5, out));
  /* index = min(floor(real), in - 1); lambda = clamp(real - index, 0, 1) */
  tpj_hlo_value_t fl = tpj_hlo_emit_binary(b, "stablehlo.minimum", tpj_hlo_emit_unary(b, "stablehlo.floor", real),
                                           tpj_cubic_c(b, cd, (double)(in - 1), out));
  tpj_hlo_value_t lam = tpj_hlo_emit_binary(
      b, "stablehlo.minimum",
      tpj_hlo_emit_binary(b, "stablehlo.maximum", TPJ_SUB(real, fl), tpj_cubic_c(b, cd, 0.0, out)),
      tpj_cubic_c(b, cd, 1.0, out));
  tpj_hlo_value_t base = tpj_hlo_emit_convert(b, fl, TPJ_I64);
  tpj_hlo_value_t one_m = TPJ_SUB(tpj_cubic_c(b, cd, 1.0, out), lam);
  tpj_cubic_taps_t t;
  t.w[0] = tpj_cubic2(b, TPJ_ADD(lam, tpj_cubic_c(b, cd, 1.0, out)), out);
  t.w[1] = tpj_cubic1(b, lam, out);
  t.w[2] = tpj_cubic1(b, one_m, out);
  t.w[3] = tpj_cubic2(b, TPJ_ADD(one_m, tpj_cubic_c(b, cd, 1.0, out)), out);
  tpj_hlo_value_t lo = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, 0), &out, 1);
  tpj_hlo_value_t hi = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, in - 1), &out, 1);
  for (int j = 0; j < 4; ++j) {
    tpj_hlo_value_t v = TPJ_ADD(base, tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, j - 1), &out, 1));
    t.idx[j] = tpj_hlo_emit_binary(b, "stablehlo.maximum", tpj_hlo_emit_binary(b, "stablehlo.minimum", v, hi), lo);
  }
  return t;
}

static int tpj_cubic_check(tpj_op_ctx_t* ctx, const char* op) {
  if (ctx->nin < 1 || ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_upsample_bicubic_t) ||
      ctx->in[0].ndim != 4 || ctx->outs[0].ndim != 4) {
    tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "%s: bad operands", op));
    return 0;
  }
  return 1;
}

/* aten::upsample_bicubic2d: in[0] x (N, C, H, W) */
void tpj_lower_upsample_bicubic(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_cubic_check(ctx, "upsample_bicubic2d")) return;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_dtype_t cd = (tpj_dtype_t)TPJ_ATTRS(ctx, tpj_attrs_upsample_bicubic_t)->compute;
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  for (int d = 3; d >= 2 && tpj_hlo_ok(b); --d) {
    tpj_cubic_taps_t t = tpj_cubic_taps(ctx, d - 2, x.dims[d], o->dims[d]);
    tpj_hlo_value_t acc = {-1, 0, TPJ_DTYPE_INVALID, 0, {0}};
    for (int j = 0; j < 4; ++j) {
      tpj_hlo_value_t v = tpj_hlo_emit_take(b, x, t.idx[j], d);
      int64_t dd = d;
      v = TPJ_MUL(tpj_hlo_emit_broadcast_in_dim(b, t.w[j], v.dims, v.ndim, &dd), v);
      acc = j ? TPJ_ADD(acc, v) : v;
    }
    x = acc;
  }
  results[0] = tpj_hlo_emit_convert(b, x, o->dtype);
}

/* aten::upsample_bicubic2d_backward: in[0] grad (N, C, OH, OW); the result
 * has the input's shape (ctx->outs[0]). The forward's steps transposed, in
 * reverse order: rows (H), then columns (W). */
void tpj_lower_upsample_bicubic_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_cubic_check(ctx, "upsample_bicubic2d_backward")) return;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_dtype_t cd = (tpj_dtype_t)TPJ_ATTRS(ctx, tpj_attrs_upsample_bicubic_t)->compute;
  tpj_hlo_value_t g = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  for (int d = 2; d <= 3 && tpj_hlo_ok(b); ++d) {
    int64_t in = o->dims[d], out = g.dims[d];
    tpj_cubic_taps_t t = tpj_cubic_taps(ctx, d - 2, in, out);
    /* dim d first, as scatter_add_rows indexes the leading dim */
    int64_t perm[4] = {d, 0, 0, 0}, inv[4];
    for (int i = 0, n = 1; i < 4; ++i)
      if (i != d) perm[n++] = i;
    for (int i = 0; i < 4; ++i) inv[perm[i]] = i;
    tpj_hlo_value_t gt = tpj_hlo_emit_transpose(b, g, perm);
    int64_t zd[4] = {in, gt.dims[1], gt.dims[2], gt.dims[3]};
    tpj_hlo_value_t acc = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, cd), zd, 4);
    for (int j = 0; j < 4; ++j) {
      int64_t d0 = 0;
      tpj_hlo_value_t u = TPJ_MUL(tpj_hlo_emit_broadcast_in_dim(b, t.w[j], gt.dims, 4, &d0), gt);
      acc = tpj_hlo_emit_scatter_add_rows(b, acc, t.idx[j], u);
    }
    g = tpj_hlo_emit_transpose(b, acc, inv);
  }
  results[0] = tpj_hlo_emit_convert(b, g, o->dtype);
}
