/* ops/fold: sliding blocks in and out of a tensor: im2col (F.unfold),
 * col2im (F.fold), unfold_backward (Tensor.unfold's gradient) and
 * max_unpool2d/3d. Each is a loop over the window's taps of strided slices
 * (gathering) or strided placements (scattering, see ops/window.h). */
#include "hlo/gather.h"
#include "ops/attrs.h"
#include "ops/window.h"

tpj_hlo_value_t tpj_window_append(tpj_hlo_builder_t* b, tpj_hlo_value_t acc,
                                  const tpj_hlo_value_t* parts, int n, int dim) {
  tpj_hlo_value_t c = n == 1 ? parts[0] : tpj_hlo_emit_concatenate(b, parts, n, dim);
  if (acc.id < 0) return c;
  tpj_hlo_value_t two[2] = {acc, c};
  return tpj_hlo_emit_concatenate(b, two, 2, dim);
}

static int tpj_fold_bad(tpj_op_ctx_t* ctx, const char* op) {
  tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "%s: bad operands", op));
  return 0;
}

/* The window of im2col / col2im: tpj_attrs_im2col_t, the head of
 * tpj_attrs_col2im_t. */
typedef struct {
  int64_t k[2], d[2], p[2], s[2];
} tpj_fold_t;

static int tpj_fold_params(tpj_op_ctx_t* ctx, int nattrs, tpj_fold_t* f, const char* op) {
  if (ctx->nin < 1 || ctx->nattrs < nattrs || ctx->nouts < 1) return tpj_fold_bad(ctx, op);
  const tpj_attrs_im2col_t* w = TPJ_ATTRS(ctx, tpj_attrs_im2col_t);
  for (int i = 0; i < 2; ++i) {
    f->k[i] = w->kernel[i];
    f->d[i] = w->dilation[i];
    f->p[i] = w->padding[i];
    f->s[i] = w->stride[i];
    if (f->k[i] < 1 || f->d[i] < 1 || f->s[i] < 1) return tpj_fold_bad(ctx, op);
  }
  return 1;
}

/* blocks along one dim of size n */
static int64_t tpj_fold_blocks(const tpj_fold_t* f, int i, int64_t n) {
  return (n + 2 * f->p[i] - (f->d[i] * (f->k[i] - 1) + 1)) / f->s[i] + 1;
}

/* aten::im2col: in[0] x (N, C, H, W) or (C, H, W); out (N, C*kh*kw, L)
 * with column c*kh*kw + i*kw + j holding tap (i, j) of every block. */
void tpj_lower_im2col(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_fold_t f;
  if (!tpj_fold_params(ctx, TPJ_ATTRS_WORDS(tpj_attrs_im2col_t), &f, "im2col") ||
      ctx->in[0].ndim < 3)
    return;
  tpj_hlo_value_t x = tpj_window_planes(b, ctx->in[0], 2);
  int64_t P = x.dims[0], oh = tpj_fold_blocks(&f, 0, x.dims[1]), ow = tpj_fold_blocks(&f, 1, x.dims[2]);
  int64_t lo[3] = {0, f.p[0], f.p[1]}, hi[3] = {0, f.p[0], f.p[1]};
  tpj_hlo_value_t xp = tpj_hlo_emit_pad(b, x, tpj_hlo_emit_zero(b, x.dtype), lo, hi);
  int64_t tap[3] = {P, 1, oh * ow};
  /* taps are concatenated in chunks (one concatenate takes a bounded
   * number of operands), each chunk appended to the result so far */
  tpj_hlo_value_t chunk[TPJ_HLO_MAX_ARGS], r = {-1, 0, TPJ_DTYPE_INVALID, 0, {0}};
  int nc = 0;
  for (int64_t i = 0; i < f.k[0] && tpj_hlo_ok(b); ++i)
    for (int64_t j = 0; j < f.k[1]; ++j) {
      int64_t st[3] = {0, i * f.d[0], j * f.d[1]};
      int64_t lim[3] = {P, st[1] + (oh - 1) * f.s[0] + 1, st[2] + (ow - 1) * f.s[1] + 1};
      int64_t str[3] = {1, f.s[0], f.s[1]};
      chunk[nc++] = tpj_hlo_emit_reshape(b, tpj_hlo_emit_slice(b, xp, st, lim, str), tap, 3);
      int last = i == f.k[0] - 1 && j == f.k[1] - 1;
      if (nc < TPJ_HLO_MAX_ARGS - 1 && !last) continue;
      r = tpj_window_append(b, r, chunk, nc, 1);
      nc = 0;
    }
  results[0] = tpj_hlo_emit_reshape(b, r, ctx->outs[0].dims, ctx->outs[0].ndim);
}

/* aten::col2im: in[0] cols (N, C*kh*kw, L) or (C*kh*kw, L); out (N, C, H, W)
 * summing each tap back where im2col read it. attrs tpj_attrs_col2im_t. */
void tpj_lower_col2im(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_fold_t f;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (!tpj_fold_params(ctx, TPJ_ATTRS_WORDS(tpj_attrs_col2im_t), &f, "col2im") || o->ndim < 3)
    return;
  tpj_dtype_t cd = (tpj_dtype_t)TPJ_ATTRS(ctx, tpj_attrs_col2im_t)->compute;
  int64_t H = o->dims[o->ndim - 2], W = o->dims[o->ndim - 1];
  int64_t oh = tpj_fold_blocks(&f, 0, H), ow = tpj_fold_blocks(&f, 1, W), K = f.k[0] * f.k[1];
  int64_t P = 1;
  for (int i = 0; i < o->ndim - 2; ++i) P *= o->dims[i];
  int64_t d4[4] = {P, K, oh, ow}, isp[2] = {H, W}, xd[3] = {P, H, W}, td[3] = {P, oh, ow};
  tpj_hlo_value_t g = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, ctx->in[0], cd), d4, 4);
  tpj_hlo_value_t sum = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, cd), xd, 3);
  for (int64_t i = 0; i < f.k[0] && tpj_hlo_ok(b); ++i)
    for (int64_t j = 0; j < f.k[1]; ++j) {
      int64_t st[4] = {0, i * f.k[1] + j, 0, 0}, lim[4] = {P, st[1] + 1, oh, ow}, one[4] = {1, 1, 1, 1};
      tpj_hlo_value_t v = tpj_hlo_emit_reshape(b, tpj_hlo_emit_slice(b, g, st, lim, one), td, 3);
      int64_t lo[2] = {i * f.d[0] - f.p[0], j * f.d[1] - f.p[1]};
      tpj_hlo_value_t placed;
      if (tpj_window_place(b, v, 2, lo, f.s, isp, &placed))
        sum = tpj_hlo_emit_binary(b, "stablehlo.add", sum, placed);
    }
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_reshape(b, sum, o->dims, o->ndim), o->dtype);
}

/* aten::unfold_backward: in[0] grad (the input's dims with dims[dim] = the
 * number of windows, then a last dim of `size`); attrs
 * tpj_attrs_unfold_backward_t. Tap k of window w goes back to w*step + k along dim. */
void tpj_lower_unfold_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  const tpj_attrs_unfold_backward_t* at = TPJ_ATTRS(ctx, tpj_attrs_unfold_backward_t);
  if (ctx->nin < 1 || ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_unfold_backward_t) ||
      ctx->in[0].ndim != o->ndim + 1 || at->dim < 0 || at->dim >= o->ndim) {
    tpj_fold_bad(ctx, "unfold_backward");
    return;
  }
  int dim = (int)at->dim;
  int64_t size = at->size, step = at->step;
  tpj_dtype_t cd = (tpj_dtype_t)at->compute;
  tpj_hlo_value_t g = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  int n = o->ndim;
  /* (P, nwin, Q, size) with P the dims before dim and Q those after */
  int64_t P = 1, Q = 1;
  for (int i = 0; i < dim; ++i) P *= o->dims[i];
  for (int i = dim + 1; i < n; ++i) Q *= o->dims[i];
  int64_t nwin = g.dims[dim], g4[4] = {P, nwin, Q, size}, x3[3] = {P, o->dims[dim], Q};
  g = tpj_hlo_emit_reshape(b, g, g4, 4);
  tpj_hlo_value_t sum = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, cd), x3, 3);
  for (int64_t k = 0; k < size && tpj_hlo_ok(b); ++k) {
    int64_t st[4] = {0, 0, 0, k}, lim[4] = {P, nwin, Q, k + 1}, one[4] = {1, 1, 1, 1};
    int64_t d3[3] = {P, nwin, Q};
    tpj_hlo_value_t v = tpj_hlo_emit_reshape(b, tpj_hlo_emit_slice(b, g, st, lim, one), d3, 3);
    /* placed along dim 1 of (P, nwin, Q): as planes of one spatial dim
     * with Q carried as a second spatial dim of step 1 */
    int64_t lo[2] = {k, 0}, stp[2] = {step, 1}, isp[2] = {o->dims[dim], Q};
    tpj_hlo_value_t placed;
    if (tpj_window_place(b, v, 2, lo, stp, isp, &placed))
      sum = tpj_hlo_emit_binary(b, "stablehlo.add", sum, placed);
  }
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_reshape(b, sum, o->dims, o->ndim), o->dtype);
}

/* aten::max_unpool2d / 3d: in[0] values, in[1] indices (flat within each
 * output plane, checked by the glue); attrs tpj_attrs_max_unpool_t. CPU writes the values
 * in order, so of duplicate indices the last one wins: the winner of each
 * slot is the largest position writing it (a max-scatter of positions),
 * and its value is gathered. */
void tpj_lower_max_unpool(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  int nsp = ctx->nattrs >= TPJ_ATTRS_WORDS(tpj_attrs_max_unpool_t)
                ? (int)TPJ_ATTRS(ctx, tpj_attrs_max_unpool_t)->nsp
                : 0;
  if (ctx->nin < 2 || nsp < 1 || nsp > 3 || o->ndim < nsp + 1) {
    tpj_fold_bad(ctx, "max_unpool");
    return;
  }
  tpj_hlo_value_t v = tpj_window_planes(b, ctx->in[0], nsp);
  tpj_hlo_value_t ix = tpj_window_planes(b, tpj_hlo_emit_convert(b, ctx->in[1], TPJ_I64), nsp);
  int64_t plane = 1, P = v.dims[0];
  for (int i = 0; i < nsp; ++i) plane *= o->dims[o->ndim - 1 - i];
  int64_t n = tpj_hlo_numel(&v), total = P * plane, pd[2] = {P, n / (P ? P : 1)};
  ix = tpj_hlo_emit_reshape(b, ix, pd, 2);
  tpj_hlo_value_t base = tpj_hlo_emit_iota(b, TPJ_I64, pd, 2, 0);
  base = tpj_hlo_emit_binary(b, "stablehlo.multiply", base,
                             tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, plane), pd, 2));
  ix = tpj_hlo_emit_reshape(b, tpj_hlo_emit_binary(b, "stablehlo.add", ix, base), &n, 1);
  tpj_hlo_value_t pos = tpj_hlo_emit_iota(b, TPJ_I64, &n, 1, 0);
  tpj_hlo_value_t none = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, -1), &total, 1);
  tpj_hlo_value_t win = tpj_hlo_emit_scatter_1d_combine(b, none, ix, pos, "stablehlo.maximum");
  tpj_hlo_value_t zero = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, TPJ_I64), &total, 1);
  tpj_hlo_value_t hit = tpj_hlo_emit_compare(b, win, zero, "GE");
  tpj_hlo_value_t vals = tpj_hlo_emit_gather_1d(b, tpj_hlo_emit_reshape(b, v, &n, 1),
                                                tpj_hlo_emit_select(b, hit, win, zero));
  tpj_hlo_value_t r = tpj_hlo_emit_select(
      b, hit, vals, tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, v.dtype), &total, 1));
  results[0] = tpj_hlo_emit_reshape(b, r, o->dims, o->ndim);
}
