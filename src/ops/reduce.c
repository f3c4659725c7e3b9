/* ops/reduce: sum, mean, prod, amax, amin, any, all over a list of dims.
 * Attribute layout: attrs[0] compute dtype (the accumulator: float32 for
 * half types, as PyTorch's CPU kernels accumulate), attrs[1] keepdim,
 * attrs[2] the number of dims, attrs[3..] the dims (wrapped, sorted). The
 * output dtype and shape are PyTorch's (ctx->outs[0]). */
#include "ops/ops.h"

typedef enum { TPJ_RED_SUM, TPJ_RED_MEAN, TPJ_RED_PROD, TPJ_RED_MAX, TPJ_RED_MIN,
               TPJ_RED_ANY, TPJ_RED_ALL } tpj_reduce_kind_t;

static void tpj_lower_reduce(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, tpj_reduce_kind_t kind) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nin < 1 || ctx->nattrs < 3 || ctx->nattrs < 3 + ctx->attrs[2]) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "reduction: bad operands"));
    return;
  }
  tpj_hlo_value_t x = ctx->in[0];
  int ndims = (int)ctx->attrs[2];
  const int64_t* dims = &ctx->attrs[3];
  tpj_dtype_t cd = ctx->attrs[0] > 0 ? (tpj_dtype_t)ctx->attrs[0] : o->dtype;
  const char* body = "stablehlo.add";
  tpj_hlo_value_t init;
  switch (kind) {
    case TPJ_RED_SUM:
    case TPJ_RED_MEAN: init = tpj_hlo_emit_zero(b, cd); break;
    case TPJ_RED_PROD:
      body = cd == TPJ_BOOL ? "stablehlo.and" : "stablehlo.multiply";
      init = tpj_hlo_emit_one(b, cd);
      break;
    case TPJ_RED_MAX:
      body = "stablehlo.maximum";
      init = tpj_hlo_emit_extreme(b, cd, 0);
      break;
    case TPJ_RED_MIN:
      body = "stablehlo.minimum";
      init = tpj_hlo_emit_extreme(b, cd, 1);
      break;
    case TPJ_RED_ANY:
      cd = TPJ_BOOL;
      body = "stablehlo.or";
      init = tpj_hlo_emit_zero(b, cd);
      break;
    default:
      cd = TPJ_BOOL;
      body = "stablehlo.and";
      init = tpj_hlo_emit_one(b, cd);
      break;
  }
  if (cd == TPJ_BOOL && kind == TPJ_RED_SUM) body = "stablehlo.or";
  tpj_hlo_value_t xc = tpj_hlo_emit_convert(b, x, cd);
  tpj_hlo_value_t r = tpj_hlo_emit_reduce(b, xc, init, dims, ndims, body);
  if ((kind == TPJ_RED_MAX || kind == TPJ_RED_MIN) && tpj_dtype_is_float(cd)) {
    /* a NaN anywhere in the reduced elements gives NaN, as in PyTorch */
    tpj_hlo_value_t nan = tpj_hlo_emit_compare(b, xc, xc, "NE");
    tpj_hlo_value_t any = tpj_hlo_emit_reduce(b, nan, tpj_hlo_emit_zero(b, TPJ_BOOL), dims, ndims,
                                              "stablehlo.or");
    tpj_hlo_value_t q = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_f64(b, cd, 0.0 / 0.0),
                                                  r.dims, r.ndim);
    r = tpj_hlo_emit_select(b, any, q, r);
  }
  if (kind == TPJ_RED_MEAN) {
    int64_t count = 1;
    for (int i = 0; i < ndims; ++i) count *= x.dims[dims[i]];
    tpj_hlo_value_t n = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_f64(b, cd, (double)count),
                                                  r.dims, r.ndim);
    r = tpj_hlo_emit_binary(b, "stablehlo.divide", r, n);
  }
  r = tpj_hlo_emit_convert(b, r, o->dtype);
  results[0] = tpj_hlo_emit_reshape(b, r, o->dims, o->ndim);  /* keepdim puts 1s back */
}

#define TPJ_REDUCE(fn, kind) \
  void fn(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) { tpj_lower_reduce(ctx, r, kind); }

TPJ_REDUCE(tpj_lower_sum, TPJ_RED_SUM)
TPJ_REDUCE(tpj_lower_mean, TPJ_RED_MEAN)
TPJ_REDUCE(tpj_lower_prod, TPJ_RED_PROD)
TPJ_REDUCE(tpj_lower_amax, TPJ_RED_MAX)
TPJ_REDUCE(tpj_lower_amin, TPJ_RED_MIN)
TPJ_REDUCE(tpj_lower_any, TPJ_RED_ANY)
TPJ_REDUCE(tpj_lower_all, TPJ_RED_ALL)
