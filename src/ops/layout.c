/* tpj::laid_out (ops.h): runs another table op and transposes the outputs
 * PyTorch lays out in another order of their dims (channels_last results of
 * conv, batch norm and pooling) inside the same program, so such an output
 * costs no launch of its own and XLA may fold the transpose into the op. */
#include <string.h>

#include "ops/ops.h"

void tpj_lower_laid_out(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  int n = ctx->nattrs >= 3 ? (int)ctx->attrs[2] : -1;
  const tpj_op_def_t* def = ctx->nattrs >= 3 ? tpj_ops_at((int)ctx->attrs[0]) : NULL;
  if (!def || def->lower == tpj_lower_laid_out || n < 0 || n > TPJ_MAX_DIMS ||
      ctx->nattrs < 3 + n) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "tpj::laid_out: malformed attrs"));
    return;
  }
  int64_t mask = ctx->attrs[1];
  const int64_t* perm = ctx->attrs + 3;
  tpj_op_ctx_t inner = *ctx;
  inner.nattrs = ctx->nattrs - 3 - n;
  memmove(inner.attrs, ctx->attrs + 3 + n, sizeof(int64_t) * (size_t)inner.nattrs);
  for (int i = 0; i < ctx->nouts; ++i) {
    if (!(mask >> i & 1)) continue;
    if (ctx->outs[i].ndim != n) {
      tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT,
                                      "tpj::laid_out: output %d is not of rank %d", i, n));
      return;
    }
    for (int k = 0; k < n; ++k) inner.outs[i].dims[perm[k]] = ctx->outs[i].dims[k];
  }
  def->lower(&inner, results);
  for (int i = 0; i < ctx->nouts && tpj_hlo_ok(b); ++i)
    if (mask >> i & 1) results[i] = tpj_hlo_emit_transpose(b, results[i], perm);
}
