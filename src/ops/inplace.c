/* in-place writes: lowerings the eager engine uses to update a storage's
 * buffer in place (the old buffer is donated to the result; see
 * src/exec/donate.h). */
#include "hlo/update.h"
#include "ops/ops.h"

/* tpj::write_block: in[0] a storage's buffer (used as is); in[1] the value
 * to write (any dtype and shape that broadcasts to the view); in[2 ..
 * 2 + nd) the block's start in each of the buffer's nd dims, 0-d i64 run-time
 * values, so one executable serves every position of a block of that shape
 * (a KV cache written at each step). attrs: the view's dtype, its rank r and
 * sizes[r], then the block's sizes[nd]. The glue found the view to be that
 * block of the buffer (src/view/box.h), inside it: a start XLA would clamp
 * never reaches here. The result is the new buffer, of in[0]'s type. */
void tpj_lower_write_block(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_hlo_value_t buf = ctx->in[0];
  int nd = buf.ndim;
  int r = ctx->nattrs >= 2 ? (int)ctx->attrs[1] : -1;
  if (r < 0 || r > TPJ_MAX_DIMS || nd < 1 || ctx->nattrs != 2 + r + nd ||
      ctx->nin != 2 + nd || ctx->attrs[0] != buf.dtype) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "tpj::write_block: bad operands"));
    return;
  }
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[1], buf.dtype, &ctx->attrs[2], r);
  x = tpj_hlo_emit_reshape(b, x, &ctx->attrs[2 + r], nd);
  results[0] = tpj_hlo_emit_update_slice_at(b, buf, x, &ctx->in[2]);
}
