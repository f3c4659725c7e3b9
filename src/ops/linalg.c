/* ops/linalg: matrix products through dot_general. attrs[0] is the compute
 * dtype (PyTorch requires both operands to share it); for addmm/baddbmm
 * attrs[1] != 0 adds beta * in[0] (in[3] is beta when attrs[2]), and
 * attrs[3] != 0 scales the product by alpha (in[4], or in[3] without beta). */
#include "ops/ops.h"

static tpj_hlo_value_t tpj_matmul(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t y,
                                  tpj_dtype_t dt) {
  x = tpj_hlo_emit_convert(b, x, dt);
  y = tpj_hlo_emit_convert(b, y, dt);
  if (x.ndim == 3 && y.ndim == 3) {
    int64_t xb = 0, yb = 0, xc = 2, yc = 1;
    return tpj_hlo_emit_dot_general(b, x, y, &xb, &yb, 1, &xc, &yc, 1, dt);
  }
  /* mm (2x2), mv (2x1), dot (1x1): x's last dim against y's first */
  int64_t xc = x.ndim - 1, yc = 0;
  return tpj_hlo_emit_dot_general(b, x, y, NULL, NULL, 0, &xc, &yc, 1, dt);
}

void tpj_lower_mm(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nin < 2) {
    tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "mm needs two operands"));
    return;
  }
  results[0] = tpj_matmul(ctx->b, ctx->in[0], ctx->in[1], o->dtype);
}

void tpj_lower_addmm(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nin < 3 || ctx->nattrs < 4) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "addmm: bad operands"));
    return;
  }
  int next = 3;
  tpj_hlo_value_t p = tpj_matmul(b, ctx->in[1], ctx->in[2], o->dtype);
  tpj_hlo_value_t beta = {-1, 0, TPJ_DTYPE_INVALID, 0, {0}}, alpha = beta;
  if (ctx->attrs[2]) beta = ctx->in[next++];
  if (ctx->attrs[3]) alpha = ctx->in[next++];
  if (ctx->nin < next) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "addmm: missing scalars"));
    return;
  }
  if (ctx->attrs[3]) p = tpj_hlo_emit_binary(b, "stablehlo.multiply", p,
                                             tpj_ops_cast_to(b, alpha, o->dtype, o->dims, o->ndim));
  if (ctx->attrs[1]) {
    /* beta == 0 drops the bias entirely (NaNs in it do not propagate) */
    tpj_hlo_value_t bias = tpj_ops_cast_to(b, ctx->in[0], o->dtype, o->dims, o->ndim);
    if (ctx->attrs[2])
      bias = tpj_hlo_emit_binary(b, "stablehlo.multiply", bias,
                                 tpj_ops_cast_to(b, beta, o->dtype, o->dims, o->ndim));
    p = tpj_hlo_emit_binary(b, o->dtype == TPJ_BOOL ? "stablehlo.or" : "stablehlo.add", p, bias);
  }
  results[0] = p;
}
