/* ops/create: tensor creation: arange, linspace, eye, tril_indices and
 * triu_indices. Each writes a whole fresh output whose shape PyTorch
 * computed (ctx->outs[0]). */
#include <math.h>

#include "hlo/sort.h"
#include "ops/attrs.h"
#include "ops/lower_util.h"
#include "ops/ops.h"

/* arange: in[0] start, in[1] step (0-d); attrs tpj_attrs_compute_t, the
 * dtype the values are computed in (CPU's accumulate type: double for
 * float32, float for half types, int64 for integers). out[i] = start +
 * step * i. */
void tpj_lower_arange(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_create_need(ctx, 2, TPJ_ATTRS_WORDS(tpj_attrs_compute_t), "arange")) return;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_dtype_t cd = (tpj_dtype_t)TPJ_ATTRS(ctx, tpj_attrs_compute_t)->compute;
  tpj_hlo_value_t i = tpj_hlo_emit_iota(b, cd, o->dims, o->ndim, 0);
  tpj_hlo_value_t r = tpj_hlo_emit_binary(
      b, "stablehlo.add", tpj_create_scalar(ctx, 0, cd),
      tpj_hlo_emit_binary(b, "stablehlo.multiply", tpj_create_scalar(ctx, 1, cd), i));
  results[0] = tpj_hlo_emit_convert(b, r, o->dtype);
}

/* linspace: in[0] start, in[1] end (0-d, already in the output's dtype, as
 * CPU converts them first); attrs tpj_attrs_compute_t, the step's dtype
 * (double for integer outputs). Like CPU, the first half counts up from start and the second
 * half down from end, so both ends are exact. */
void tpj_lower_linspace(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_create_need(ctx, 2, TPJ_ATTRS_WORDS(tpj_attrs_compute_t), "linspace")) return;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_dtype_t cd = (tpj_dtype_t)TPJ_ATTRS(ctx, tpj_attrs_compute_t)->compute;
  int64_t steps = o->dims[0];
  tpj_hlo_value_t s = tpj_create_scalar(ctx, 0, cd), e = tpj_create_scalar(ctx, 1, cd);
  if (steps == 1) {
    results[0] = tpj_hlo_emit_convert(b, s, o->dtype);
    return;
  }
  tpj_hlo_value_t n1 = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_f64(b, cd, (double)(steps - 1)),
                                                 o->dims, o->ndim);
  tpj_hlo_value_t step = tpj_hlo_emit_binary(b, "stablehlo.divide",
                                             tpj_hlo_emit_binary(b, "stablehlo.subtract", e, s), n1);
  tpj_hlo_value_t i = tpj_hlo_emit_iota(b, cd, o->dims, o->ndim, 0);
  tpj_hlo_value_t up = tpj_hlo_emit_binary(b, "stablehlo.add", s,
                                           tpj_hlo_emit_binary(b, "stablehlo.multiply", step, i));
  tpj_hlo_value_t down = tpj_hlo_emit_binary(
      b, "stablehlo.subtract", e,
      tpj_hlo_emit_binary(b, "stablehlo.multiply", step,
                          tpj_hlo_emit_binary(b, "stablehlo.subtract", n1, i)));
  tpj_hlo_value_t ii = tpj_hlo_emit_iota(b, TPJ_I64, o->dims, o->ndim, 0);
  tpj_hlo_value_t half = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, steps / 2), o->dims,
                                                   o->ndim);
  tpj_hlo_value_t r = tpj_hlo_emit_select(b, tpj_hlo_emit_compare(b, ii, half, "LT"), up, down);
  results[0] = tpj_hlo_emit_convert(b, r, o->dtype);
}

/* eye: ones where row == col, in the output's dtype. */
void tpj_lower_eye(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_create_need(ctx, 0, 0, "eye")) return;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t row = tpj_hlo_emit_iota(b, TPJ_I64, o->dims, o->ndim, 0);
  tpj_hlo_value_t col = tpj_hlo_emit_iota(b, TPJ_I64, o->dims, o->ndim, 1);
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_compare(b, row, col, "EQ"), o->dtype);
}

#define ADD(x, y) tpj_hlo_emit_binary(b, "stablehlo.add", x, y)
#define SUB(x, y) tpj_hlo_emit_binary(b, "stablehlo.subtract", x, y)
#define CMP(x, y, d) tpj_hlo_emit_compare(b, x, y, d)
#define SEL(c, x, y) tpj_hlo_emit_select(b, c, x, y)

/* ---- tril_indices, triu_indices -------------------------------------------- */

/* aten::tril_indices / aten::triu_indices: attrs tpj_attrs_tri_indices_t.
 * outs[0] is [2, N] (N counted by the
 * glue). The kept (row, col) pairs, in row-major order, are the first N
 * of all pairs sorted with the dropped ones pushed past the end. */
void tpj_lower_tri_indices(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_ops_need(ctx, 0, TPJ_ATTRS_WORDS(tpj_attrs_tri_indices_t), 1, "tril_indices")) return;
  const tpj_attrs_tri_indices_t* at = TPJ_ATTRS(ctx, tpj_attrs_tri_indices_t);
  tpj_hlo_builder_t* b = ctx->b;
  int64_t rows = at->rows, cols = at->cols, off = at->offset;
  int64_t total = rows * cols, n = ctx->outs[0].dims[1];
  tpj_hlo_value_t lin = tpj_hlo_emit_iota(b, TPJ_I64, &total, 1, 0);
  tpj_hlo_value_t r = tpj_hlo_emit_binary(b, "stablehlo.divide", lin, tpj_ops_i64_like(b, lin, cols));
  tpj_hlo_value_t c = tpj_hlo_emit_binary(b, "stablehlo.remainder", lin, tpj_ops_i64_like(b, lin, cols));
  tpj_hlo_value_t diag = SUB(c, r);
  tpj_hlo_value_t keep = at->upper ? CMP(diag, tpj_ops_i64_like(b, diag, off), "GE")
                                   : CMP(diag, tpj_ops_i64_like(b, diag, off), "LE");
  tpj_hlo_value_t key = SEL(keep, lin, ADD(lin, tpj_ops_i64_like(b, lin, total)));
  tpj_hlo_value_t sorted_key;
  tpj_hlo_emit_sort(b, &key, 1, 0, 0, &sorted_key);
  tpj_hlo_value_t kept = tpj_ops_range_1d(b, sorted_key, 0, n);
  int64_t one_n[2] = {1, n};
  tpj_hlo_value_t parts[2] = {
      tpj_hlo_emit_reshape(b, tpj_hlo_emit_binary(b, "stablehlo.divide", kept,
                                                  tpj_ops_i64_like(b, kept, cols)), one_n, 2),
      tpj_hlo_emit_reshape(b, tpj_hlo_emit_binary(b, "stablehlo.remainder", kept,
                                                  tpj_ops_i64_like(b, kept, cols)), one_n, 2)};
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_concatenate(b, parts, 2, 0),
                                    ctx->outs[0].dtype);
}
