/* ops/conv: convolution (plain and transposed, 1-3 spatial dims, groups)
 * with its backward, and 2-D pooling: max_pool2d_with_indices, avg_pool2d,
 * _adaptive_avg_pool2d, each with its backward. Half inputs are computed in
 * float32 (the attributes' compute dtype), as PyTorch's CPU kernels
 * accumulate. Output sizes come from ctx->outs (PyTorch's own arithmetic);
 * the lowerings pick paddings that produce exactly those sizes. */
#include "hlo/conv.h"
#include "ops/attrs.h"
#include "ops/ops.h"

#define TPJ_SP TPJ_HLO_CONV_MAX_SPATIAL

static int tpj_conv_bad(tpj_op_ctx_t* ctx, const char* op) {
  tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "%s: bad operands", op));
  return 0;
}

/* ---- convolution ---------------------------------------------------------
 * attrs: tpj_attrs_conv_t, its windows, then three flags:
 * tpj_attrs_conv_bias_t (forward) or tpj_attrs_conv_mask_t (backward). */
typedef struct {
  tpj_dtype_t cd;
  int transposed, nsp;
  int64_t groups;
  int64_t stride[TPJ_SP], pad[TPJ_SP], dil[TPJ_SP], opad[TPJ_SP];
  const int64_t* flags; /* the attributes past the windows (the three flags) */
} tpj_conv_params_t;

static int tpj_conv_params(tpj_op_ctx_t* ctx, int nin, tpj_conv_params_t* p, const char* op) {
  int head = TPJ_ATTRS_WORDS(tpj_attrs_conv_t), tail = TPJ_ATTRS_WORDS(tpj_attrs_conv_mask_t);
  if (ctx->nin < nin || ctx->nattrs < head) return tpj_conv_bad(ctx, op);
  const tpj_attrs_conv_t* at = TPJ_ATTRS(ctx, tpj_attrs_conv_t);
  p->cd = (tpj_dtype_t)at->compute;
  p->transposed = (int)at->transposed;
  p->groups = at->groups;
  p->nsp = (int)at->nsp;
  if (p->nsp < 1 || p->nsp > TPJ_SP || ctx->nattrs < head + 4 * p->nsp + tail || p->groups < 1)
    return tpj_conv_bad(ctx, op);
  const int64_t* a = at->windows;
  for (int i = 0; i < p->nsp; ++i) {
    p->stride[i] = a[i];
    p->pad[i] = a[p->nsp + i];
    p->dil[i] = a[2 * p->nsp + i];
    p->opad[i] = a[3 * p->nsp + i];
  }
  p->flags = a + 4 * p->nsp;
  return 1;
}

/* Convolution whose pads may be negative (a crop): XLA's convolution takes
 * non-negative pads only, so such an input is padded/cropped (and dilated)
 * by stablehlo.pad first. */
static tpj_hlo_value_t tpj_conv_emit(tpj_hlo_builder_t* b, tpj_hlo_value_t lhs,
                                     tpj_hlo_value_t rhs, tpj_hlo_conv_t c, tpj_dtype_t dt) {
  int neg = 0;
  for (int i = 0; i < c.nsp; ++i) neg |= c.pad_lo[i] < 0 || c.pad_hi[i] < 0;
  if (neg) {
    int64_t lo[TPJ_MAX_DIMS] = {0}, hi[TPJ_MAX_DIMS] = {0}, in[TPJ_MAX_DIMS] = {0};
    for (int i = 0; i < c.nsp; ++i) {
      int64_t d = c.in_spatial[i];
      lo[d] = c.pad_lo[i];
      hi[d] = c.pad_hi[i];
      in[d] = c.lhs_dil[i] - 1;
      c.pad_lo[i] = c.pad_hi[i] = 0;
      c.lhs_dil[i] = 1;
    }
    lhs = tpj_hlo_emit_pad_general(b, lhs, tpj_hlo_emit_zero(b, lhs.dtype), lo, hi, in);
  }
  return tpj_hlo_emit_convolution(b, lhs, rhs, &c, dt);
}

/* A strided convolution of x (N, C, sp...) with w (O, C/g, k...), padded by
 * p in front and as much behind as makes the result's spatial sizes `target`
 * (PyTorch's floor arithmetic drops the rest). */
static tpj_hlo_value_t tpj_conv_forward(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                        tpj_hlo_value_t w, const tpj_conv_params_t* p,
                                        const int64_t* target) {
  tpj_hlo_conv_t c;
  tpj_hlo_conv_init(&c, p->nsp);
  c.feature_groups = p->groups;
  for (int i = 0; i < p->nsp; ++i) {
    int64_t dk = (w.dims[2 + i] - 1) * p->dil[i] + 1;
    c.stride[i] = p->stride[i];
    c.rhs_dil[i] = p->dil[i];
    c.pad_lo[i] = p->pad[i];
    c.pad_hi[i] = (target[i] - 1) * p->stride[i] + dk - x.dims[2 + i] - p->pad[i];
  }
  return tpj_conv_emit(b, x, w, c, x.dtype);
}

/* The transpose of tpj_conv_forward over its input: y (N, A, sp...) with
 * w (A, B, k...) as stored for a conv from B*g to A channels, giving
 * (N, B*g, target...). Used by conv_transpose and by conv's grad_input: the
 * kernel is flipped and its per-group in/out features swapped, and y is
 * dilated by the stride. */
static tpj_hlo_value_t tpj_conv_transposed(tpj_hlo_builder_t* b, tpj_hlo_value_t y,
                                           tpj_hlo_value_t w, const tpj_conv_params_t* p,
                                           const int64_t* target) {
  int nsp = p->nsp;
  int64_t g = p->groups, A = w.dims[0], B = w.dims[1];
  tpj_hlo_value_t k = w;
  if (g > 1) {
    int64_t d5[TPJ_MAX_DIMS] = {g, A / g, B}, perm[TPJ_MAX_DIMS] = {0, 2, 1};
    for (int i = 0; i < nsp; ++i) {
      d5[3 + i] = w.dims[2 + i];
      perm[3 + i] = 3 + i;
    }
    k = tpj_hlo_emit_reshape(b, k, d5, nsp + 3);
    k = tpj_hlo_emit_transpose(b, k, perm);
    int64_t d4[TPJ_MAX_DIMS] = {g * B, A / g};
    for (int i = 0; i < nsp; ++i) d4[2 + i] = w.dims[2 + i];
    k = tpj_hlo_emit_reshape(b, k, d4, nsp + 2);
  }
  int64_t sp[TPJ_SP] = {2, 3, 4};
  k = tpj_hlo_emit_reverse(b, k, sp, nsp);
  tpj_hlo_conv_t c;
  tpj_hlo_conv_init(&c, nsp);
  c.feature_groups = g;
  if (g == 1) {  /* w is (A = in features, B = out features): name them so */
    c.k_in = 0;
    c.k_out = 1;
  }
  for (int i = 0; i < nsp; ++i) {
    int64_t ext = (w.dims[2 + i] - 1) * p->dil[i];
    c.lhs_dil[i] = p->stride[i];
    c.rhs_dil[i] = p->dil[i];
    c.pad_lo[i] = ext - p->pad[i];
    c.pad_hi[i] = target[i] - 1 - (y.dims[2 + i] - 1) * p->stride[i] + p->pad[i];
  }
  return tpj_conv_emit(b, y, k, c, y.dtype);
}

/* dW (O, C/g, k...) of a conv of x (N, C, sp...) giving gy (N, O, osp...):
 * dW[o, c, k] = sum over n, j of x[n, c, j*s + k*d - p] * gy[n, o, j]. A
 * convolution with N as the contracted feature, x's channels as its batch
 * (split into g batch groups) and gy's spatial dims as the window. */
static tpj_hlo_value_t tpj_conv_weight_grad(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                            tpj_hlo_value_t gy, const tpj_conv_params_t* p,
                                            const int64_t* ksize) {
  tpj_hlo_conv_t c;
  tpj_hlo_conv_init(&c, p->nsp);
  c.in_batch = 1;
  c.in_feature = 0;
  c.k_in = 0;
  c.k_out = 1;
  c.out_feature = 0;
  c.out_batch = 1;
  c.batch_groups = p->groups;
  for (int i = 0; i < p->nsp; ++i) {
    int64_t dwin = (gy.dims[2 + i] - 1) * p->stride[i] + 1;
    c.stride[i] = p->dil[i];
    c.rhs_dil[i] = p->stride[i];
    c.pad_lo[i] = p->pad[i];
    c.pad_hi[i] = (ksize[i] - 1) * p->dil[i] + dwin - x.dims[2 + i] - p->pad[i];
  }
  return tpj_conv_emit(b, x, gy, c, x.dtype);
}

static tpj_hlo_value_t tpj_bias_shape(tpj_hlo_builder_t* b, tpj_hlo_value_t bias,
                                      const tpj_hlo_value_t* like) {
  int64_t bd[1] = {1};
  return tpj_hlo_emit_broadcast_in_dim(b, bias, like->dims, like->ndim, bd);
}

/* aten::convolution: in[0] input, in[1] weight, in[2] bias (has_bias). */
void tpj_lower_convolution(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_conv_params_t p;
  if (!tpj_conv_params(ctx, 2, &p, "convolution")) return;
  int has_bias = (int)((const tpj_attrs_conv_bias_t*)p.flags)->has_bias;
  if (has_bias && ctx->nin < 3) {
    tpj_conv_bad(ctx, "convolution");
    return;
  }
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], p.cd);
  tpj_hlo_value_t w = tpj_hlo_emit_convert(b, ctx->in[1], p.cd);
  tpj_hlo_value_t y = p.transposed ? tpj_conv_transposed(b, x, w, &p, o->dims + 2)
                                   : tpj_conv_forward(b, x, w, &p, o->dims + 2);
  if (has_bias) {
    tpj_hlo_value_t bias = tpj_hlo_emit_convert(b, ctx->in[2], p.cd);
    y = tpj_hlo_emit_binary(b, "stablehlo.add", y, tpj_bias_shape(b, bias, &y));
  }
  results[0] = tpj_hlo_emit_convert(b, y, o->dtype);
}

/* aten::convolution_backward: in[0] grad_output, in[1] input, in[2] weight;
 * one result per set flag of the output mask, in order. */
void tpj_lower_convolution_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_conv_params_t p;
  if (!tpj_conv_params(ctx, 3, &p, "convolution_backward")) return;
  const int64_t* mask = ((const tpj_attrs_conv_mask_t*)p.flags)->mask;
  tpj_hlo_value_t gy = tpj_hlo_emit_convert(b, ctx->in[0], p.cd);
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[1], p.cd);
  tpj_hlo_value_t w = tpj_hlo_emit_convert(b, ctx->in[2], p.cd);
  int n = 0;
  if (mask[0]) {
    /* the transpose of the forward map, over its input */
    tpj_hlo_value_t gx = p.transposed ? tpj_conv_forward(b, gy, w, &p, x.dims + 2)
                                      : tpj_conv_transposed(b, gy, w, &p, x.dims + 2);
    results[n] = tpj_hlo_emit_convert(b, gx, ctx->outs[n].dtype);
    ++n;
  }
  if (mask[1]) {
    /* a transposed conv is the transpose of a conv from gy to x, so its
     * weight gradient swaps the two roles */
    tpj_hlo_value_t gw = p.transposed ? tpj_conv_weight_grad(b, gy, x, &p, w.dims + 2)
                                      : tpj_conv_weight_grad(b, x, gy, &p, w.dims + 2);
    results[n] = tpj_hlo_emit_convert(b, gw, ctx->outs[n].dtype);
    ++n;
  }
  if (mask[2]) {
    int64_t dims[TPJ_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < gy.ndim; ++i)
      if (i != 1) dims[nd++] = i;
    tpj_hlo_value_t gb = tpj_hlo_emit_reduce(b, gy, tpj_hlo_emit_zero(b, p.cd), dims, nd,
                                             "stablehlo.add");
    results[n] = tpj_hlo_emit_convert(b, gb, ctx->outs[n].dtype);
    ++n;
  }
}

/* ---- 2-D pooling ---------------------------------------------------------
 * Inputs are (C, H, W) or (N, C, H, W); the lowerings work on (P, H, W)
 * planes. Window (kh, kw), stride, padding (and dilation for max) come as
 * attrs; output sizes from ctx->outs, which already include ceil_mode. */

/* x as (P, H, W) planes */
static tpj_hlo_value_t tpj_planes(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  int64_t p = 1;
  for (int i = 0; i < x.ndim - 2; ++i) p *= x.dims[i];
  int64_t d[3] = {p, x.dims[x.ndim - 2], x.dims[x.ndim - 1]};
  return tpj_hlo_emit_reshape(b, x, d, 3);
}

static tpj_hlo_value_t tpj_i64_full(tpj_hlo_builder_t* b, int64_t v, const int64_t* dims, int n) {
  return tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, v), dims, n);
}

/* The 1-D i64 vector iota(n) * scale + offset. */
static tpj_hlo_value_t tpj_affine(tpj_hlo_builder_t* b, int64_t n, int64_t scale, int64_t off) {
  tpj_hlo_value_t i = tpj_hlo_emit_iota(b, TPJ_I64, &n, 1, 0);
  i = tpj_hlo_emit_binary(b, "stablehlo.multiply", i, tpj_i64_full(b, scale, &n, 1));
  return tpj_hlo_emit_binary(b, "stablehlo.add", i, tpj_i64_full(b, off, &n, 1));
}

/* v (1-D, length dims[axis]) broadcast along axis of dims */
static tpj_hlo_value_t tpj_along(tpj_hlo_builder_t* b, tpj_hlo_value_t v, const int64_t* dims,
                                 int n, int64_t axis) {
  return tpj_hlo_emit_broadcast_in_dim(b, v, dims, n, &axis);
}

static tpj_hlo_value_t tpj_in_range(tpj_hlo_builder_t* b, tpj_hlo_value_t pos, int64_t hi) {
  tpj_hlo_value_t ge = tpj_hlo_emit_compare(b, pos, tpj_i64_full(b, 0, pos.dims, 1), "GE");
  tpj_hlo_value_t lt = tpj_hlo_emit_compare(b, pos, tpj_i64_full(b, hi, pos.dims, 1), "LT");
  return tpj_hlo_emit_binary(b, "stablehlo.and", ge, lt);
}

/* aten::max_pool2d_with_indices: in[0] x; attrs tpj_attrs_max_pool2d_t.
 * Results: the maxima and their flat indices h * W + w in the plane.
 * The window's taps are visited in CPU's order (row-major) and a tap wins
 * when it is greater or NaN, so ties keep the first maximum and NaN the last
 * NaN, exactly as PyTorch's CPU kernel; padding taps never win. */
void tpj_lower_max_pool2d(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (ctx->nin < 1 || ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_max_pool2d_t) || ctx->nouts < 2) {
    tpj_conv_bad(ctx, "max_pool2d_with_indices");
    return;
  }
  const tpj_attrs_max_pool2d_t* at = TPJ_ATTRS(ctx, tpj_attrs_max_pool2d_t);
  const int64_t *k = at->kernel, *s = at->stride, *pad = at->padding, *dl = at->dilation;
  tpj_hlo_value_t x = tpj_planes(b, ctx->in[0]);
  const tpj_rt_shape_t* o = &ctx->outs[0];
  int64_t P = x.dims[0], H = x.dims[1], W = x.dims[2];
  int64_t OH = o->dims[o->ndim - 2], OW = o->dims[o->ndim - 1];
  int64_t od[3] = {P, OH, OW};
  /* pad so every tap of every window is inside: padding taps read -inf and
   * are masked off as invalid anyway */
  int64_t lo[3] = {0, pad[0], pad[1]}, hi[3] = {0, 0, 0}, in0[3] = {0, 0, 0};
  int64_t sz[2] = {H, W};
  for (int i = 0; i < 2; ++i) {
    int64_t last = (i ? OW : OH) - 1;
    int64_t need = last * s[i] + (k[i] - 1) * dl[i] - pad[i] - (sz[i] - 1);
    hi[1 + i] = need > 0 ? need : 0;
  }
  tpj_hlo_value_t xp = tpj_hlo_emit_pad_general(b, x, tpj_hlo_emit_extreme(b, x.dtype, 0), lo,
                                                hi, in0);
  tpj_hlo_value_t best = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_extreme(b, x.dtype, 0), od, 3);
  tpj_hlo_value_t idx = tpj_i64_full(b, -1, od, 3);
  tpj_hlo_value_t none = idx;
  for (int64_t i = 0; i < k[0]; ++i) {
    tpj_hlo_value_t row = tpj_affine(b, OH, s[0], i * dl[0] - pad[0]);
    tpj_hlo_value_t rok = tpj_in_range(b, row, H);
    for (int64_t j = 0; j < k[1]; ++j) {
      tpj_hlo_value_t col = tpj_affine(b, OW, s[1], j * dl[1] - pad[1]);
      tpj_hlo_value_t cok = tpj_in_range(b, col, W);
      int64_t st[3] = {0, i * dl[0], j * dl[1]};
      int64_t lim[3] = {P, st[1] + (OH - 1) * s[0] + 1, st[2] + (OW - 1) * s[1] + 1};
      int64_t str[3] = {1, s[0], s[1]};
      tpj_hlo_value_t v = tpj_hlo_emit_slice(b, xp, st, lim, str);
      tpj_hlo_value_t valid = tpj_hlo_emit_binary(b, "stablehlo.and", tpj_along(b, rok, od, 3, 1),
                                                  tpj_along(b, cok, od, 3, 2));
      tpj_hlo_value_t flat = tpj_hlo_emit_binary(
          b, "stablehlo.add",
          tpj_hlo_emit_binary(b, "stablehlo.multiply", tpj_along(b, row, od, 3, 1),
                              tpj_i64_full(b, W, od, 3)),
          tpj_along(b, col, od, 3, 2));
      tpj_hlo_value_t wins = tpj_hlo_emit_compare(b, v, best, "GT");
      wins = tpj_hlo_emit_binary(b, "stablehlo.or", wins, tpj_hlo_emit_compare(b, v, v, "NE"));
      wins = tpj_hlo_emit_binary(b, "stablehlo.or", wins, tpj_hlo_emit_compare(b, idx, none, "EQ"));
      wins = tpj_hlo_emit_binary(b, "stablehlo.and", wins, valid);
      best = tpj_hlo_emit_select(b, wins, v, best);
      idx = tpj_hlo_emit_select(b, wins, flat, idx);
    }
  }
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_reshape(b, best, o->dims, o->ndim), o->dtype);
  const tpj_rt_shape_t* oi = &ctx->outs[1];
  results[1] = tpj_hlo_emit_convert(b, tpj_hlo_emit_reshape(b, idx, oi->dims, oi->ndim), oi->dtype);
}

/* aten::max_pool2d_with_indices_backward: in[0] grad_output, in[1] indices
 * (flat in each plane, from the forward); attrs tpj_attrs_compute_t. Each
 * gradient is added at its index (overlapping windows accumulate). */
void tpj_lower_max_pool2d_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (ctx->nin < 2 || ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_compute_t)) {
    tpj_conv_bad(ctx, "max_pool2d_with_indices_backward");
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)TPJ_ATTRS(ctx, tpj_attrs_compute_t)->compute;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  int64_t HW = o->dims[o->ndim - 1] * o->dims[o->ndim - 2];
  tpj_hlo_value_t g = tpj_planes(b, tpj_hlo_emit_convert(b, ctx->in[0], cd));
  tpj_hlo_value_t ix = tpj_planes(b, tpj_hlo_emit_convert(b, ctx->in[1], TPJ_I64));
  int64_t P = g.dims[0], n = tpj_hlo_numel(&g), total = P * HW;
  /* index into the flattened (P * H * W) input */
  tpj_hlo_value_t base = tpj_along(b, tpj_affine(b, P, HW, 0), ix.dims, 3, 0);
  ix = tpj_hlo_emit_reshape(b, tpj_hlo_emit_binary(b, "stablehlo.add", ix, base), &n, 1);
  g = tpj_hlo_emit_reshape(b, g, &n, 1);
  tpj_hlo_value_t z = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, cd), &total, 1);
  tpj_hlo_value_t r = tpj_hlo_emit_scatter_add_rows(b, z, ix, g);
  r = tpj_hlo_emit_reshape(b, r, o->dims, o->ndim);
  results[0] = tpj_hlo_emit_convert(b, r, o->dtype);
}

/* avg_pool2d's divisor per output position (OH, OW) in dt, following CPU:
 * a window is clipped to the padded input for count_include_pad, to the
 * input otherwise; divisor_override (nonzero, negative too, as on CPU)
 * replaces both. */
static tpj_hlo_value_t tpj_avg_divisor(tpj_hlo_builder_t* b, const tpj_attrs_avg_pool2d_t* a,
                                       int64_t H, int64_t W, int64_t OH, int64_t OW,
                                       tpj_dtype_t dt) {
  int64_t od[2] = {OH, OW};
  if (a->divisor_override != 0)
    return tpj_hlo_emit_broadcast_to(
        b, tpj_hlo_emit_const_f64(b, dt, (double)a->divisor_override), od, 2);
  tpj_hlo_value_t cnt[2];
  int64_t sz[2] = {H, W}, on[2] = {OH, OW};
  for (int i = 0; i < 2; ++i) {
    int64_t k = a->kernel[i], s = a->stride[i], p = a->padding[i];
    tpj_hlo_value_t start = tpj_affine(b, on[i], s, -p);
    tpj_hlo_value_t end = tpj_hlo_emit_binary(
        b, "stablehlo.minimum",
        tpj_hlo_emit_binary(b, "stablehlo.add", start, tpj_i64_full(b, k, &on[i], 1)),
        tpj_i64_full(b, sz[i] + p, &on[i], 1));
    if (!a->count_include_pad) {
      start = tpj_hlo_emit_binary(b, "stablehlo.maximum", start, tpj_i64_full(b, 0, &on[i], 1));
      end = tpj_hlo_emit_binary(b, "stablehlo.minimum", end, tpj_i64_full(b, sz[i], &on[i], 1));
    }
    cnt[i] = tpj_along(b, tpj_hlo_emit_binary(b, "stablehlo.subtract", end, start), od, 2, i);
  }
  return tpj_hlo_emit_convert(b, tpj_hlo_emit_binary(b, "stablehlo.multiply", cnt[0], cnt[1]), dt);
}

/* A ones kernel (1, 1, kh, kw) and the conv params of the pooling window */
static tpj_hlo_value_t tpj_avg_kernel(tpj_hlo_builder_t* b, const tpj_attrs_avg_pool2d_t* a,
                                      tpj_dtype_t dt, tpj_conv_params_t* p) {
  p->cd = dt;
  p->transposed = 0;
  p->nsp = 2;
  p->groups = 1;
  for (int i = 0; i < 2; ++i) {
    p->stride[i] = a->stride[i];
    p->pad[i] = a->padding[i];
    p->dil[i] = 1;
    p->opad[i] = 0;
  }
  int64_t kd[4] = {1, 1, a->kernel[0], a->kernel[1]};
  return tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_one(b, dt), kd, 4);
}

/* aten::avg_pool2d: in[0] x; attrs tpj_attrs_avg_pool2d_t. Window sums
 * are a convolution of each plane with a ones kernel (zero padding). */
void tpj_lower_avg_pool2d(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (ctx->nin < 1 || ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_avg_pool2d_t)) {
    tpj_conv_bad(ctx, "avg_pool2d");
    return;
  }
  const tpj_attrs_avg_pool2d_t* a = TPJ_ATTRS(ctx, tpj_attrs_avg_pool2d_t);
  tpj_dtype_t cd = (tpj_dtype_t)a->compute;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t x = tpj_planes(b, tpj_hlo_emit_convert(b, ctx->in[0], cd));
  int64_t P = x.dims[0], H = x.dims[1], W = x.dims[2];
  int64_t OH = o->dims[o->ndim - 2], OW = o->dims[o->ndim - 1];
  int64_t x4[4] = {P, 1, H, W}, y4[4] = {P, 1, OH, OW};
  tpj_conv_params_t p;
  tpj_hlo_value_t k = tpj_avg_kernel(b, a, cd, &p);
  int64_t target[2] = {OH, OW};
  tpj_hlo_value_t sum = tpj_conv_forward(b, tpj_hlo_emit_reshape(b, x, x4, 4), k, &p, target);
  tpj_hlo_value_t div = tpj_hlo_emit_broadcast_to(b, tpj_avg_divisor(b, a, H, W, OH, OW, cd), y4, 4);
  tpj_hlo_value_t r = tpj_hlo_emit_binary(b, "stablehlo.divide", sum, div);
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_reshape(b, r, o->dims, o->ndim), o->dtype);
}

/* aten::avg_pool2d_backward: in[0] grad_output; attrs as avg_pool2d. Each
 * input gets the sum of grad / divisor over the windows that cover it: the
 * transposed convolution with the same ones kernel. */
void tpj_lower_avg_pool2d_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (ctx->nin < 1 || ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_avg_pool2d_t)) {
    tpj_conv_bad(ctx, "avg_pool2d_backward");
    return;
  }
  const tpj_attrs_avg_pool2d_t* a = TPJ_ATTRS(ctx, tpj_attrs_avg_pool2d_t);
  tpj_dtype_t cd = (tpj_dtype_t)a->compute;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t g = tpj_planes(b, tpj_hlo_emit_convert(b, ctx->in[0], cd));
  int64_t P = g.dims[0], OH = g.dims[1], OW = g.dims[2];
  int64_t H = o->dims[o->ndim - 2], W = o->dims[o->ndim - 1];
  int64_t y4[4] = {P, 1, OH, OW};
  g = tpj_hlo_emit_reshape(b, g, y4, 4);
  tpj_hlo_value_t div = tpj_hlo_emit_broadcast_to(b, tpj_avg_divisor(b, a, H, W, OH, OW, cd), y4, 4);
  g = tpj_hlo_emit_binary(b, "stablehlo.divide", g, div);
  tpj_conv_params_t p;
  tpj_hlo_value_t k = tpj_avg_kernel(b, a, cd, &p);
  int64_t target[2] = {H, W};
  tpj_hlo_value_t r = tpj_conv_transposed(b, g, k, &p, target);
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_reshape(b, r, o->dims, o->ndim), o->dtype);
}

/* The (O, I) averaging matrix of adaptive pooling from I to O cells: cell o
 * averages [floor(o*I/O), ceil((o+1)*I/O)), as PyTorch's kernels do. */
static tpj_hlo_value_t tpj_adaptive_matrix(tpj_hlo_builder_t* b, int64_t O, int64_t I,
                                           tpj_dtype_t dt) {
  int64_t d[2] = {O, I};
  tpj_hlo_value_t o = tpj_hlo_emit_iota(b, TPJ_I64, d, 2, 0);
  tpj_hlo_value_t i = tpj_hlo_emit_iota(b, TPJ_I64, d, 2, 1);
  tpj_hlo_value_t In = tpj_i64_full(b, I, d, 2), On = tpj_i64_full(b, O, d, 2);
  tpj_hlo_value_t start = tpj_hlo_emit_binary(b, "stablehlo.divide",
                                              tpj_hlo_emit_binary(b, "stablehlo.multiply", o, In), On);
  tpj_hlo_value_t o1 = tpj_hlo_emit_binary(b, "stablehlo.add", o, tpj_i64_full(b, 1, d, 2));
  tpj_hlo_value_t end = tpj_hlo_emit_binary(
      b, "stablehlo.divide",
      tpj_hlo_emit_binary(b, "stablehlo.add", tpj_hlo_emit_binary(b, "stablehlo.multiply", o1, In),
                          tpj_hlo_emit_binary(b, "stablehlo.subtract", On, tpj_i64_full(b, 1, d, 2))),
      On);
  tpj_hlo_value_t in = tpj_hlo_emit_binary(b, "stablehlo.and", tpj_hlo_emit_compare(b, i, start, "GE"),
                                           tpj_hlo_emit_compare(b, i, end, "LT"));
  tpj_hlo_value_t cnt = tpj_hlo_emit_convert(b, tpj_hlo_emit_binary(b, "stablehlo.subtract", end, start), dt);
  tpj_hlo_value_t w = tpj_hlo_emit_binary(b, "stablehlo.divide",
                                          tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_one(b, dt), d, 2), cnt);
  return tpj_hlo_emit_select(b, in, w, tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, dt), d, 2));
}

/* Contracts x's dim nd-2 with m's dim mdim, twice (rows, then columns): the
 * free dims rotate so the result keeps x's layout. */
static tpj_hlo_value_t tpj_adaptive_apply(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                          tpj_hlo_value_t mh, tpj_hlo_value_t mw, int64_t mdim) {
  int64_t xc = x.ndim - 2;
  tpj_hlo_value_t y = tpj_hlo_emit_dot_general(b, x, mh, NULL, NULL, 0, &xc, &mdim, 1, x.dtype);
  return tpj_hlo_emit_dot_general(b, y, mw, NULL, NULL, 0, &xc, &mdim, 1, x.dtype);
}

/* aten::_adaptive_avg_pool2d: in[0] x (C, H, W) or (N, C, H, W); attrs
 * tpj_attrs_compute_t. out = Ah . x . Aw^T with the averaging matrices. */
void tpj_lower_adaptive_avg_pool2d(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (ctx->nin < 1 || ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_compute_t) || ctx->in[0].ndim < 3) {
    tpj_conv_bad(ctx, "_adaptive_avg_pool2d");
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)TPJ_ATTRS(ctx, tpj_attrs_compute_t)->compute;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  int n = x.ndim;
  tpj_hlo_value_t mh = tpj_adaptive_matrix(b, o->dims[n - 2], x.dims[n - 2], cd);
  tpj_hlo_value_t mw = tpj_adaptive_matrix(b, o->dims[n - 1], x.dims[n - 1], cd);
  results[0] = tpj_hlo_emit_convert(b, tpj_adaptive_apply(b, x, mh, mw, 1), o->dtype);
}

/* aten::_adaptive_avg_pool2d_backward: in[0] grad_output; attrs
 * tpj_attrs_compute_t; the result has the input's shape: Ah^T . g . Aw. */
void tpj_lower_adaptive_avg_pool2d_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (ctx->nin < 1 || ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_compute_t) || ctx->in[0].ndim < 3) {
    tpj_conv_bad(ctx, "_adaptive_avg_pool2d_backward");
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)TPJ_ATTRS(ctx, tpj_attrs_compute_t)->compute;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t g = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  int n = g.ndim;
  tpj_hlo_value_t mh = tpj_adaptive_matrix(b, g.dims[n - 2], o->dims[n - 2], cd);
  tpj_hlo_value_t mw = tpj_adaptive_matrix(b, g.dims[n - 1], o->dims[n - 1], cd);
  results[0] = tpj_hlo_emit_convert(b, tpj_adaptive_apply(b, g, mh, mw, 0), o->dtype);
}
