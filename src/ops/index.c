/* ops/index: index_select and embedding_dense_backward. Indices are checked
 * against the operand on the host by the glue before they get here: XLA
 * clamps out-of-range indices, and a clamped read is a silent wrong answer. */
#include "ops/attrs.h"
#include "ops/ops.h"

/* index_select: in[0] self, in[1] index (0-d or 1-D); attrs
 * tpj_attrs_index_dim_t. */
void tpj_lower_index_select(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nin < 2 || ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_index_dim_t)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "index_select: bad operands"));
    return;
  }
  tpj_hlo_value_t x = ctx->in[0], idx = ctx->in[1];
  int64_t n = tpj_hlo_numel(&idx);
  idx = tpj_hlo_emit_reshape(b, idx, &n, 1);
  if (x.ndim == 0) {  /* a 0-d self is indexed as a 1-element vector */
    int64_t one = 1;
    x = tpj_hlo_emit_reshape(b, x, &one, 1);
  }
  tpj_hlo_value_t r = tpj_hlo_emit_take(b, x, idx, (int)TPJ_ATTRS(ctx, tpj_attrs_index_dim_t)->dim);
  results[0] = tpj_hlo_emit_reshape(b, r, o->dims, o->ndim);
}

/* embedding_dense_backward: in[0] grad_output (..., D), in[1] indices (...);
 * attrs tpj_attrs_embedding_backward_t. outs[0] is (num_weights, D). */
void tpj_lower_embedding_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nin < 2 || ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_embedding_backward_t) ||
      o->ndim != 2) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "embedding_dense_backward: bad operands"));
    return;
  }
  const tpj_attrs_embedding_backward_t* at = TPJ_ATTRS(ctx, tpj_attrs_embedding_backward_t);
  tpj_dtype_t cd = (tpj_dtype_t)at->compute;
  tpj_hlo_value_t idx = ctx->in[1];
  int64_t m = tpj_hlo_numel(&idx);
  idx = tpj_hlo_emit_reshape(b, idx, &m, 1);
  int64_t gdims[2] = {m, o->dims[1]};
  tpj_hlo_value_t g = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, ctx->in[0], cd), gdims, 2);
  if (at->padding_idx >= 0) {
    /* rows whose index is padding_idx contribute nothing */
    tpj_hlo_value_t pad = tpj_hlo_emit_broadcast_to(
        b, tpj_hlo_emit_convert(b, tpj_hlo_emit_const_i64(b, at->padding_idx), idx.dtype),
        idx.dims, 1);
    tpj_hlo_value_t keep = tpj_hlo_emit_compare(b, idx, pad, "NE");
    int64_t bd = 0;
    keep = tpj_hlo_emit_broadcast_in_dim(b, keep, gdims, 2, &bd);
    g = tpj_hlo_emit_select(b, keep, g, tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, cd), gdims, 2));
  }
  tpj_hlo_value_t zeros = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, cd), o->dims, 2);
  tpj_hlo_value_t r = tpj_hlo_emit_scatter_add_rows(b, zeros, idx, g);
  results[0] = tpj_hlo_emit_convert(b, r, o->dtype);
}
