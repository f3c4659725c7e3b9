/* ops/amp: the two kernels torch.amp.GradScaler runs every step, so that
 * float16 training never copies gradients to the host.
 *
 * aten::_amp_foreach_non_finite_check_and_unscale_
 *   in:   k gradients, found_inf (float32, one element), inv_scale (float32,
 *         one element)
 *   outs: the k gradients times inv_scale (computed in float32, float64 for
 *         float64 gradients, as CUDA's opmath), then found_inf: 1 when any
 *         gradient holds an inf or NaN, else unchanged.
 * aten::_amp_update_scale_
 *   in:   scale (float32), growth_tracker (int32), found_inf (float32), each
 *         one element; then runtime scalars growth_factor, backoff_factor
 *         (float32) and growth_interval (int32), so a new schedule reuses the
 *         program.
 *   outs: the new scale and growth tracker (CUDA's rule: an inf backs the
 *         scale off and restarts the count; growth_interval clean steps in a
 *         row grow it, unless the grown scale would be inf). */
#include "ops/ops.h"

static tpj_hlo_value_t tpj_amp_scalar(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  int64_t none[1] = {0};
  return tpj_hlo_emit_reshape(b, x, none, 0);
}

static tpj_hlo_value_t tpj_amp_reshape_to(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                          const tpj_rt_shape_t* out) {
  return tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, x, out->dtype), out->dims, out->ndim);
}

/* 0-d bool: x holds an inf or NaN somewhere. */
static tpj_hlo_value_t tpj_amp_any_nonfinite(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  tpj_hlo_value_t bad =
      tpj_hlo_emit_unary(b, "stablehlo.not", tpj_hlo_emit_unary_to(b, "stablehlo.is_finite", x,
                                                                    TPJ_BOOL));
  if (bad.ndim == 0) return bad;
  int64_t dims[TPJ_MAX_DIMS];
  for (int i = 0; i < bad.ndim; ++i) dims[i] = i;
  return tpj_hlo_emit_reduce(b, bad, tpj_hlo_emit_zero(b, TPJ_BOOL), dims, bad.ndim,
                             "stablehlo.or");
}

void tpj_lower_amp_unscale(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  int k = ctx->nin - 2;
  if (k < 1 || ctx->nouts != k + 1) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "_amp_foreach_non_finite_check_and_unscale_: "
                                                  "bad operands"));
    return;
  }
  tpj_hlo_value_t found = tpj_amp_scalar(b, ctx->in[k]);
  tpj_hlo_value_t inv = tpj_amp_scalar(b, ctx->in[k + 1]);
  tpj_hlo_value_t any = tpj_hlo_emit_zero(b, TPJ_BOOL);
  for (int i = 0; i < k; ++i) {
    tpj_hlo_value_t g = ctx->in[i];
    tpj_dtype_t cd = g.dtype == TPJ_F64 ? TPJ_F64 : TPJ_F32;
    tpj_hlo_value_t gc = tpj_hlo_emit_convert(b, g, cd);
    tpj_hlo_value_t s = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_convert(b, inv, cd), gc.dims,
                                                  gc.ndim);
    results[i] = tpj_hlo_emit_convert(b, tpj_hlo_emit_binary(b, "stablehlo.multiply", gc, s),
                                      ctx->outs[i].dtype);
    any = tpj_hlo_emit_binary(b, "stablehlo.or", any, tpj_amp_any_nonfinite(b, g));
  }
  tpj_hlo_value_t one = tpj_hlo_emit_one(b, found.dtype);
  results[k] = tpj_amp_reshape_to(b, tpj_hlo_emit_select(b, any, one, found), &ctx->outs[k]);
}

void tpj_lower_amp_update_scale(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (ctx->nin < 6 || ctx->nouts < 2) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "_amp_update_scale_: bad operands"));
    return;
  }
  tpj_hlo_value_t scale = tpj_amp_scalar(b, ctx->in[0]);
  tpj_hlo_value_t tracker = tpj_amp_scalar(b, ctx->in[1]);
  tpj_hlo_value_t found = tpj_amp_scalar(b, ctx->in[2]);
  tpj_hlo_value_t growth = tpj_hlo_emit_convert(b, ctx->in[3], scale.dtype);
  tpj_hlo_value_t backoff = tpj_hlo_emit_convert(b, ctx->in[4], scale.dtype);
  tpj_hlo_value_t interval = tpj_hlo_emit_convert(b, ctx->in[5], tracker.dtype);

  tpj_hlo_value_t inf = tpj_hlo_emit_compare(b, found, tpj_hlo_emit_zero(b, found.dtype), "NE");
  tpj_hlo_value_t zero_t = tpj_hlo_emit_zero(b, tracker.dtype);
  tpj_hlo_value_t succ = tpj_hlo_emit_binary(b, "stablehlo.add", tracker,
                                             tpj_hlo_emit_one(b, tracker.dtype));
  tpj_hlo_value_t grow = tpj_hlo_emit_compare(b, succ, interval, "EQ");
  tpj_hlo_value_t grown = tpj_hlo_emit_binary(b, "stablehlo.multiply", scale, growth);
  tpj_hlo_value_t grown_ok =
      tpj_hlo_emit_binary(b, "stablehlo.and", grow,
                          tpj_hlo_emit_unary_to(b, "stablehlo.is_finite", grown, TPJ_BOOL));
  tpj_hlo_value_t clean_scale = tpj_hlo_emit_select(b, grown_ok, grown, scale);
  tpj_hlo_value_t clean_tracker = tpj_hlo_emit_select(b, grow, zero_t, succ);
  tpj_hlo_value_t backed = tpj_hlo_emit_binary(b, "stablehlo.multiply", scale, backoff);
  results[0] = tpj_amp_reshape_to(b, tpj_hlo_emit_select(b, inf, backed, clean_scale),
                                  &ctx->outs[0]);
  results[1] = tpj_amp_reshape_to(b, tpj_hlo_emit_select(b, inf, zero_t, clean_tracker),
                                  &ctx->outs[1]);
}
