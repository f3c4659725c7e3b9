/* ops/shape: cat. attrs[0] is the (wrapped) dim. Inputs PyTorch skips
 * (legacy 1-D empty tensors next to higher-rank ones) are skipped here too;
 * the rest are converted to the output dtype and concatenated. */
#include "ops/ops.h"

void tpj_lower_cat(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nattrs < 1 || ctx->nin < 1) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "cat: bad operands"));
    return;
  }
  int dim = (int)ctx->attrs[0];
  tpj_hlo_value_t parts[TPJ_OP_MAX_IN];
  int n = 0;
  for (int i = 0; i < ctx->nin; ++i) {
    tpj_hlo_value_t x = ctx->in[i];
    if (x.ndim != o->ndim) continue;          /* a legacy empty (0,) tensor */
    if (x.dims[dim] == 0) continue;           /* contributes nothing */
    parts[n++] = tpj_hlo_emit_convert(b, x, o->dtype);
  }
  if (n == 0) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "cat: nothing to concatenate"));
    return;
  }
  results[0] = n == 1 ? parts[0] : tpj_hlo_emit_concatenate(b, parts, n, dim);
}
