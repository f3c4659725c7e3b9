/* ops/upsample: F.interpolate's nearest, nearest-exact and (bi/tri)linear
 * modes, forward and backward, for 1 to 3 spatial dims.
 *
 * Interpolation is separable, so each spatial dim is resized on its own.
 * The source positions are computed inside the program from an iota with
 * PyTorch's CPU formulas and precision (nearest: float; linear: float, or
 * double for double tensors), so the indices match CPU's exactly. Forward
 * reads neighbours with take (a gather along one dim); backward adds each
 * output gradient into its source rows with a scatter-add, so a NaN or inf
 * in one place stays in the places CPU puts it.
 *
 * attrs: tpj_attrs_upsample_t. The output shape (forward: the
 * upsampled one; backward: the input's) is ctx->outs[0]. */
#include <math.h>
#include <string.h>

#include "ops/attrs.h"
#include "ops/ops.h"

typedef struct {
  tpj_dtype_t cd;
  int mode;
  int align_corners;
  int nsp;
  int has_scale[3];
  double scale[3];
} tpj_upsample_t;

static int tpj_upsample_parse(tpj_op_ctx_t* ctx, tpj_upsample_t* p, const char* op) {
  const tpj_attrs_upsample_t* at = TPJ_ATTRS(ctx, tpj_attrs_upsample_t);
  int head = TPJ_ATTRS_WORDS(tpj_attrs_upsample_t), per = TPJ_ATTRS_WORDS(tpj_attrs_scale_t);
  if (ctx->nin < 1 || ctx->nattrs < head) goto bad;
  p->cd = (tpj_dtype_t)at->compute;
  p->mode = (int)at->mode;
  p->align_corners = (int)at->align_corners;
  p->nsp = (int)at->nsp;
  if (p->nsp < 1 || p->nsp > 3 || ctx->nattrs < head + per * p->nsp) goto bad;
  if (ctx->in[0].ndim < p->nsp || ctx->outs[0].ndim != ctx->in[0].ndim) goto bad;
  for (int k = 0; k < p->nsp; ++k) {
    p->has_scale[k] = (int)at->scales[k].has_scale;
    memcpy(&p->scale[k], &at->scales[k].bits, sizeof(double));
  }
  return 1;
bad:
  tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "%s: bad operands", op));
  return 0;
}

/* PyTorch's compute_scales_value: the user's 1/scale when given and
 * positive, else in/out; align_corners (linear only) maps corner to corner. */
static double tpj_upsample_step(const tpj_upsample_t* p, int k, int64_t in, int64_t out,
                                int as_float) {
  double s;
  if (p->mode == TPJ_UPSAMPLE_LINEAR && p->align_corners)
    s = out > 1 ? (double)(in - 1) / (double)(out - 1) : 0.0;
  else if (p->has_scale[k] && p->scale[k] > 0.0)
    s = 1.0 / p->scale[k];
  else
    s = (double)in / (double)out;
  return as_float ? (double)(float)s : s;
}

/* Per output position along one dim: the first source index (i64, [out]),
 * and for linear the second index and the weight of the second (pd, [out]). */
typedef struct {
  tpj_hlo_value_t i0, i1, w1;
} tpj_upsample_taps_t;

static tpj_upsample_taps_t tpj_upsample_taps(tpj_hlo_builder_t* b, const tpj_upsample_t* p,
                                             int k, int64_t in, int64_t out) {
  tpj_upsample_taps_t t;
  int64_t dims[1] = {out};
  tpj_hlo_value_t last = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, in - 1), dims, 1);
  if (p->mode != TPJ_UPSAMPLE_LINEAR) {
    /* CPU: min(floorf(o * s), in - 1), or (o + 0.5) * s for nearest-exact,
     * in float; nearest with out == in is the identity. */
    if (p->mode == TPJ_UPSAMPLE_NEAREST && out == in) {
      t.i0 = tpj_hlo_emit_iota(b, TPJ_I64, dims, 1, 0);
    } else {
      double s = tpj_upsample_step(p, k, in, out, 1);
      tpj_hlo_value_t o = tpj_hlo_emit_iota(b, TPJ_F32, dims, 1, 0);
      if (p->mode == TPJ_UPSAMPLE_NEAREST_EXACT)
        o = tpj_hlo_emit_binary(b, "stablehlo.add", o,
                                tpj_hlo_emit_broadcast_to(
                                    b, tpj_hlo_emit_const_f64(b, TPJ_F32, 0.5), dims, 1));
      tpj_hlo_value_t src = tpj_hlo_emit_binary(
          b, "stablehlo.multiply", o,
          tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_f64(b, TPJ_F32, s), dims, 1));
      src = tpj_hlo_emit_unary(b, "stablehlo.floor", src);
      t.i0 = tpj_hlo_emit_binary(b, "stablehlo.minimum",
                                 tpj_hlo_emit_convert(b, src, TPJ_I64), last);
    }
    t.i1 = t.i0;
    t.w1 = t.i0;
    return t;
  }
  /* linear: src = s * o (align_corners) or max(s * (o + 0.5) - 0.5, 0);
   * i0 = min(floor(src), in - 1); w1 = clamp(src - i0, 0, 1);
   * i1 = i0 + (i0 < in - 1). In float, or double for double tensors. */
  tpj_dtype_t pd = p->cd == TPJ_F64 ? TPJ_F64 : TPJ_F32;
  double s = tpj_upsample_step(p, k, in, out, pd == TPJ_F32);
#define TPJ_C(v) tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_f64(b, pd, (v)), dims, 1)
  tpj_hlo_value_t o = tpj_hlo_emit_iota(b, pd, dims, 1, 0);
  tpj_hlo_value_t src;
  if (p->align_corners) {
    src = tpj_hlo_emit_binary(b, "stablehlo.multiply", TPJ_C(s), o);
  } else {
    src = tpj_hlo_emit_binary(b, "stablehlo.multiply", TPJ_C(s),
                              tpj_hlo_emit_binary(b, "stablehlo.add", o, TPJ_C(0.5)));
    src = tpj_hlo_emit_binary(b, "stablehlo.subtract", src, TPJ_C(0.5));
    src = tpj_hlo_emit_binary(b, "stablehlo.maximum", src, TPJ_C(0.0));
  }
  tpj_hlo_value_t i0 = tpj_hlo_emit_binary(
      b, "stablehlo.minimum",
      tpj_hlo_emit_convert(b, tpj_hlo_emit_unary(b, "stablehlo.floor", src), TPJ_I64), last);
  tpj_hlo_value_t w1 = tpj_hlo_emit_binary(b, "stablehlo.subtract", src,
                                           tpj_hlo_emit_convert(b, i0, pd));
  w1 = tpj_hlo_emit_binary(b, "stablehlo.maximum", w1, TPJ_C(0.0));
  w1 = tpj_hlo_emit_binary(b, "stablehlo.minimum", w1, TPJ_C(1.0));
#undef TPJ_C
  tpj_hlo_value_t step = tpj_hlo_emit_convert(
      b, tpj_hlo_emit_compare(b, i0, last, "LT"), TPJ_I64);
  t.i0 = i0;
  t.i1 = tpj_hlo_emit_binary(b, "stablehlo.add", i0, step);
  t.w1 = w1;
  return t;
}

/* w (1-D, [x.dims[dim]]) converted to x's dtype and broadcast along dim. */
static tpj_hlo_value_t tpj_upsample_weight(tpj_hlo_builder_t* b, tpj_hlo_value_t w,
                                           tpj_hlo_value_t x, int dim) {
  int64_t bd[1] = {dim};
  return tpj_hlo_emit_broadcast_in_dim(b, tpj_hlo_emit_convert(b, w, x.dtype), x.dims, x.ndim,
                                       bd);
}

static tpj_hlo_value_t tpj_upsample_dim(tpj_hlo_builder_t* b, const tpj_upsample_t* p, int k,
                                        tpj_hlo_value_t x, int dim, int64_t out) {
  int64_t in = x.dims[dim];
  if (in == out && p->mode == TPJ_UPSAMPLE_NEAREST) return x;
  tpj_upsample_taps_t t = tpj_upsample_taps(b, p, k, in, out);
  tpj_hlo_value_t a = tpj_hlo_emit_take(b, x, t.i0, dim);
  if (p->mode != TPJ_UPSAMPLE_LINEAR) return a;
  tpj_hlo_value_t c = tpj_hlo_emit_take(b, x, t.i1, dim);
  /* CPU: w0 * a + w1 * c with w0 = 1 - w1. */
  int64_t one_dims[1] = {out};
  tpj_hlo_value_t one = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_one(b, t.w1.dtype), one_dims, 1);
  tpj_hlo_value_t w0 = tpj_hlo_emit_binary(b, "stablehlo.subtract", one, t.w1);
  return tpj_hlo_emit_binary(
      b, "stablehlo.add",
      tpj_hlo_emit_binary(b, "stablehlo.multiply", tpj_upsample_weight(b, w0, a, dim), a),
      tpj_hlo_emit_binary(b, "stablehlo.multiply", tpj_upsample_weight(b, t.w1, c, dim), c));
}

/* g has the upsampled size along dim; returns the gradient with size `in`
 * there: each g row added into its source row(s), weighted. */
static tpj_hlo_value_t tpj_upsample_dim_backward(tpj_hlo_builder_t* b, const tpj_upsample_t* p,
                                                 int k, tpj_hlo_value_t g, int dim, int64_t in) {
  int64_t out = g.dims[dim];
  if (in == out && p->mode == TPJ_UPSAMPLE_NEAREST) return g;
  tpj_upsample_taps_t t = tpj_upsample_taps(b, p, k, in, out);
  /* Move dim to the front for the row scatter, and back afterwards. */
  int n = g.ndim;
  int64_t perm[TPJ_MAX_DIMS], inv[TPJ_MAX_DIMS];
  perm[0] = dim;
  for (int i = 0, j = 1; i < n; ++i)
    if (i != dim) perm[j++] = i;
  for (int i = 0; i < n; ++i) inv[perm[i]] = i;
  tpj_hlo_value_t gt = tpj_hlo_emit_transpose(b, g, perm);
  int64_t zdims[TPJ_MAX_DIMS];
  memcpy(zdims, gt.dims, sizeof(int64_t) * (size_t)n);
  zdims[0] = in;
  tpj_hlo_value_t acc = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, g.dtype), zdims, n);
  if (p->mode != TPJ_UPSAMPLE_LINEAR) {
    acc = tpj_hlo_emit_scatter_add_rows(b, acc, t.i0, gt);
  } else {
    int64_t one_dims[1] = {out};
    tpj_hlo_value_t one =
        tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_one(b, t.w1.dtype), one_dims, 1);
    tpj_hlo_value_t w0 = tpj_hlo_emit_binary(b, "stablehlo.subtract", one, t.w1);
    acc = tpj_hlo_emit_scatter_add_rows(
        b, acc, t.i0,
        tpj_hlo_emit_binary(b, "stablehlo.multiply", tpj_upsample_weight(b, w0, gt, 0), gt));
    acc = tpj_hlo_emit_scatter_add_rows(
        b, acc, t.i1,
        tpj_hlo_emit_binary(b, "stablehlo.multiply", tpj_upsample_weight(b, t.w1, gt, 0), gt));
  }
  return tpj_hlo_emit_transpose(b, acc, inv);
}

/* Forward for every upsample_* overload: in[0] the input. */
void tpj_lower_upsample(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_upsample_t p;
  if (!tpj_upsample_parse(ctx, &p, "upsample")) return;
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t x = ctx->in[0];
  if (p.mode == TPJ_UPSAMPLE_LINEAR) x = tpj_hlo_emit_convert(b, x, p.cd);
  int first = x.ndim - p.nsp;
  for (int k = 0; k < p.nsp; ++k) x = tpj_upsample_dim(b, &p, k, x, first + k, o->dims[first + k]);
  results[0] = tpj_hlo_emit_convert(b, x, o->dtype);
}

/* Backward for every upsample_*_backward overload: in[0] grad_output; the
 * result has the input's shape. Accumulates in the compute dtype. */
void tpj_lower_upsample_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_upsample_t p;
  if (!tpj_upsample_parse(ctx, &p, "upsample_backward")) return;
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t g = tpj_hlo_emit_convert(b, ctx->in[0], p.cd);
  int first = g.ndim - p.nsp;
  for (int k = 0; k < p.nsp; ++k)
    g = tpj_upsample_dim_backward(b, &p, k, g, first + k, o->dims[first + k]);
  results[0] = tpj_hlo_emit_convert(b, g, o->dtype);
}
