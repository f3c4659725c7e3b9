/* ops/lower_util: small helpers that several lowering files share: the
 * operand-count check, constants shaped like a value, flattening, picking one
 * element or a range along a dim. static inline, so a file that includes
 * this and uses only some of them compiles without warnings. */
#ifndef TPJ_OPS_LOWER_UTIL_H_
#define TPJ_OPS_LOWER_UTIL_H_

#include "ops/ops.h"

static inline int tpj_ops_need(tpj_op_ctx_t* ctx, int nin, int nattrs, int nouts, const char* op) {
  if (ctx->nin >= nin && ctx->nattrs >= nattrs && ctx->nouts >= nouts) return 1;
  tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "%s: bad operands", op));
  return 0;
}

/* the constant v (a double, exact for the integers used here) shaped like x */
static inline tpj_hlo_value_t tpj_ops_full_like(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_dtype_t dt,
                                 double v) {
  return tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_f64(b, dt, v), x.dims, x.ndim);
}

static inline tpj_hlo_value_t tpj_ops_i64_like(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int64_t v) {
  return tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, v), x.dims, x.ndim);
}

/* Elements [lo, hi) of a 1-D value. */
static inline tpj_hlo_value_t tpj_ops_range_1d(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int64_t lo, int64_t hi) {
  int64_t one = 1;
  return tpj_hlo_emit_slice(b, x, &lo, &hi, &one);
}

/* x's element k along dim (that dim kept, of size 1) */
static inline tpj_hlo_value_t tpj_ops_element_at(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int dim, int64_t k) {
  int64_t lo[TPJ_MAX_DIMS], hi[TPJ_MAX_DIMS], st[TPJ_MAX_DIMS];
  for (int d = 0; d < x.ndim; ++d) {
    lo[d] = d == dim ? k : 0;
    hi[d] = d == dim ? k + 1 : x.dims[d];
    st[d] = 1;
  }
  return tpj_hlo_emit_slice(b, x, lo, hi, st);
}

static inline int tpj_ops_fail_operands(tpj_op_ctx_t* ctx, const char* op) {
  tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "%s: bad operands", op));
  return 0;
}

/* s (0-d) broadcast like v */
static inline tpj_hlo_value_t tpj_ops_fill_like(tpj_hlo_builder_t* b, tpj_hlo_value_t s, const tpj_hlo_value_t* v) {
  return tpj_hlo_emit_broadcast_to(b, s, v->dims, v->ndim);
}

static inline tpj_hlo_value_t tpj_ops_flat(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  int64_t n = tpj_hlo_numel(&x);
  return tpj_hlo_emit_reshape(b, x, &n, 1);
}

static inline int tpj_create_need(tpj_op_ctx_t* ctx, int nin, int nattrs, const char* op) {
  if (ctx->nin >= nin && ctx->nattrs >= nattrs && ctx->nouts >= 1) return 1;
  tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "%s: bad operands", op));
  return 0;
}

static inline tpj_hlo_value_t tpj_create_scalar(tpj_op_ctx_t* ctx, int i, tpj_dtype_t dt) {
  const tpj_rt_shape_t* o = &ctx->outs[0];
  return tpj_ops_cast_to(ctx->b, ctx->in[i], dt, o->dims, o->ndim);
}

#endif /* TPJ_OPS_LOWER_UTIL_H_ */
