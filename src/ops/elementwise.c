/* ops/elementwise: binary arithmetic and fills. Output dtype and shape come
 * from PyTorch (ctx->outs[0]); operands are converted to it and broadcast
 * here, so type promotion is never re-implemented. */
#include "ops/ops.h"
#include "view/view.h"

tpj_hlo_value_t tpj_ops_cast_to(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_dtype_t dt,
                                const int64_t* dims, int ndim) {
  return tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_convert(b, x, dt), dims, ndim);
}

static void tpj_lower_binary(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, const char* op,
                             const char* bool_op) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nin < 2) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "%s needs two operands", op));
    return;
  }
  const char* name = o->dtype == TPJ_BOOL ? bool_op : op;
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[0], o->dtype, o->dims, o->ndim);
  tpj_hlo_value_t y = tpj_ops_cast_to(b, ctx->in[1], o->dtype, o->dims, o->ndim);
  /* attrs[0] != 0: in[2] is alpha, a runtime scalar that scales y */
  if (ctx->nattrs > 0 && ctx->attrs[0] && ctx->nin > 2) {
    tpj_hlo_value_t alpha = tpj_ops_cast_to(b, ctx->in[2], o->dtype, o->dims, o->ndim);
    y = tpj_hlo_emit_binary(b, o->dtype == TPJ_BOOL ? "stablehlo.and" : "stablehlo.multiply",
                            y, alpha);
  }
  results[0] = tpj_hlo_emit_binary(b, name, x, y);
}

void tpj_lower_add_tensor(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_lower_binary(ctx, results, "stablehlo.add", "stablehlo.or");
}

void tpj_lower_mul_tensor(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_lower_binary(ctx, results, "stablehlo.multiply", "stablehlo.and");
}

/* tpj::full: in[0] is the 0-d fill value; the output is outs[0]. */
void tpj_lower_full(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  const tpj_rt_shape_t* o = &ctx->outs[0];
  results[0] = tpj_ops_cast_to(ctx->b, ctx->in[0], o->dtype, o->dims, o->ndim);
}

/* tpj::view_copy: in[0] read from its view, converted to outs[0]'s dtype; the
 * eager engine uses it to materialise views (contiguous(), .cpu() of a
 * slice). */
void tpj_lower_view_copy(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  const tpj_rt_shape_t* o = &ctx->outs[0];
  results[0] = tpj_ops_cast_to(ctx->b, ctx->in[0], o->dtype, o->dims, o->ndim);
}

/* tpj::write_view: in[0] is a storage's current buffer (used as is), in[1]
 * the value to write (any dtype and shape that broadcasts to the view);
 * attrs hold the destination view. The result is the whole new storage, 1-D
 * of the view's dtype. */
void tpj_lower_write_view(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_view_t v;
  if (ctx->nin != 2 || tpj_view_from_attrs(ctx->attrs, ctx->nattrs, &v) < 0) {
    tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "tpj::write_view: bad operands"));
    return;
  }
  tpj_hlo_value_t x = tpj_ops_cast_to(ctx->b, ctx->in[1], v.dtype, v.sizes, v.ndim);
  results[0] = tpj_view_emit_write(ctx->b, ctx->in[0], &v, x);
}
