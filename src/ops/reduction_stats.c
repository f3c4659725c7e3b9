/* ops/reduction_stats: statistical reductions: var, std, var_mean, std_mean,
 * linalg_vector_norm and logsumexp. Their attribute layouts (tpj_attrs_var_t,
 * tpj_attrs_logsumexp_t, tpj_attrs_vector_norm_t) share one shape: the
 * compute dtype (float32 for half types, as PyTorch's CPU kernels
 * accumulate), an op-specific word, then the reduced dims. Outputs are
 * PyTorch's (ctx->outs); keepdim is a reshape to them. */
#include <math.h>

#include "ops/attrs.h"
#include "ops/ops.h"

typedef struct {
  int ndims;
  const int64_t* dims;
  int64_t count; /* elements per reduced slice */
} red_t;

/* The reduced dims of a layout of `words` words (its tail left out) whose
 * last word, *ndims, counts the dims that follow it. */
static int parse(tpj_op_ctx_t* ctx, int nin, int words, const int64_t* ndims, red_t* r,
                 const char* op) {
  if (ctx->nin < nin || ctx->nattrs < words || ctx->nattrs < words + *ndims) {
    tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "%s: bad operands", op));
    return 0;
  }
  r->ndims = (int)*ndims;
  r->dims = ndims + 1;
  r->count = 1;
  for (int i = 0; i < r->ndims; ++i) r->count *= ctx->in[0].dims[r->dims[i]];
  return 1;
}

static tpj_hlo_value_t sum(tpj_hlo_builder_t* b, tpj_hlo_value_t x, const red_t* r) {
  return tpj_hlo_emit_reduce(b, x, tpj_hlo_emit_zero(b, x.dtype), r->dims, r->ndims,
                             "stablehlo.add");
}

static tpj_hlo_value_t fill(tpj_hlo_builder_t* b, tpj_dtype_t dt, double v,
                            const tpj_hlo_value_t* like) {
  return tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_f64(b, dt, v), like->dims, like->ndim);
}

static tpj_dtype_t real_of(tpj_dtype_t dt) {
  return dt == TPJ_C64 ? TPJ_F32 : dt == TPJ_C128 ? TPJ_F64 : dt;
}

/* aten::var.correction, std.correction, var_mean.correction and
 * std_mean.correction: attrs tpj_attrs_var_t.
 * Two passes (mean, then squared deviations), so large means cost no
 * precision. A second output, when asked for, is the mean. */
void tpj_lower_var(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  red_t r;
  const tpj_attrs_var_t* at = TPJ_ATTRS(ctx, tpj_attrs_var_t);
  if (!parse(ctx, 2, TPJ_ATTRS_WORDS(tpj_attrs_var_t), &at->ndims, &r, "var")) return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_dtype_t cd = (tpj_dtype_t)at->compute, rd = real_of(cd);
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  tpj_hlo_value_t mean = sum(b, x, &r);
  mean = tpj_hlo_emit_binary(b, "stablehlo.divide", mean, fill(b, cd, (double)r.count, &mean));
  tpj_hlo_value_t d = tpj_hlo_emit_binary(
      b, "stablehlo.subtract", x, tpj_ops_unreduce(b, mean, x.dims, x.ndim, r.dims, r.ndims));
  tpj_hlo_value_t sq;
  if (rd != cd) {
    tpj_hlo_value_t re = tpj_hlo_emit_real(b, d), im = tpj_hlo_emit_imag(b, d);
    sq = tpj_hlo_emit_binary(b, "stablehlo.add", tpj_hlo_emit_binary(b, "stablehlo.multiply", re, re),
                             tpj_hlo_emit_binary(b, "stablehlo.multiply", im, im));
  } else {
    sq = tpj_hlo_emit_binary(b, "stablehlo.multiply", d, d);
  }
  tpj_hlo_value_t s = sum(b, sq, &r);
  tpj_hlo_value_t div = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_convert(b, ctx->in[1], rd),
                                                  s.dims, s.ndim);
  tpj_hlo_value_t v = tpj_hlo_emit_binary(b, "stablehlo.divide", s, div);
  if (at->is_std) v = tpj_hlo_emit_unary(b, "stablehlo.sqrt", v);
  const tpj_rt_shape_t* o = &ctx->outs[0];
  results[0] = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, v, o->dtype), o->dims, o->ndim);
  if (ctx->nouts > 1) {
    o = &ctx->outs[1];
    results[1] =
        tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, mean, o->dtype), o->dims, o->ndim);
  }
}

/* aten::logsumexp: max-shifted, with an infinite max replaced by 0 (as
 * PyTorch does) so all -inf gives -inf and +inf gives +inf, not NaN. */
void tpj_lower_logsumexp(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  red_t r;
  const tpj_attrs_logsumexp_t* at = TPJ_ATTRS(ctx, tpj_attrs_logsumexp_t);
  if (!parse(ctx, 1, TPJ_ATTRS_WORDS(tpj_attrs_logsumexp_t), &at->ndims, &r, "logsumexp")) return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_dtype_t cd = (tpj_dtype_t)at->compute;
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  tpj_hlo_value_t m = tpj_hlo_emit_reduce(b, x, tpj_hlo_emit_extreme(b, cd, 0), r.dims, r.ndims,
                                          "stablehlo.maximum");
  tpj_hlo_value_t inf = tpj_hlo_emit_compare(b, tpj_hlo_emit_unary(b, "stablehlo.abs", m),
                                             fill(b, cd, INFINITY, &m), "EQ");
  m = tpj_hlo_emit_select(b, inf, fill(b, cd, 0.0, &m), m);
  tpj_hlo_value_t e = tpj_hlo_emit_unary(
      b, "stablehlo.exponential",
      tpj_hlo_emit_binary(b, "stablehlo.subtract", x,
                          tpj_ops_unreduce(b, m, x.dims, x.ndim, r.dims, r.ndims)));
  tpj_hlo_value_t v = tpj_hlo_emit_binary(b, "stablehlo.add",
                                          tpj_hlo_emit_unary(b, "stablehlo.log", sum(b, e, &r)), m);
  const tpj_rt_shape_t* o = &ctx->outs[0];
  results[0] = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, v, o->dtype), o->dims, o->ndim);
}

/* aten::linalg_vector_norm: attrs tpj_attrs_vector_norm_t; for TPJ_NORM_P,
 * in[1] is p as a 0-d runtime scalar of the compute dtype.
 * |x| is taken before the conversion, so complex inputs work. */
void tpj_lower_vector_norm(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  red_t r;
  const tpj_attrs_vector_norm_t* at = TPJ_ATTRS(ctx, tpj_attrs_vector_norm_t);
  if (!parse(ctx, 1, TPJ_ATTRS_WORDS(tpj_attrs_vector_norm_t), &at->ndims, &r,
             "linalg_vector_norm"))
    return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_dtype_t cd = (tpj_dtype_t)at->compute;
  tpj_hlo_value_t x = ctx->in[0];
  if (tpj_dtype_is_complex(x.dtype))
    x = tpj_hlo_emit_unary_to(b, "stablehlo.abs", x, real_of(x.dtype));
  x = tpj_hlo_emit_convert(b, x, cd);
  if (!tpj_dtype_is_complex(ctx->in[0].dtype)) x = tpj_hlo_emit_unary(b, "stablehlo.abs", x);
  tpj_hlo_value_t v;
  switch (at->kind) {
    case TPJ_NORM_ZERO:
      v = sum(b, tpj_hlo_emit_convert(b, tpj_hlo_emit_compare(b, x, fill(b, cd, 0.0, &x), "NE"),
                                      cd),
              &r);
      break;
    case TPJ_NORM_ONE: v = sum(b, x, &r); break;
    case TPJ_NORM_TWO:
      v = tpj_hlo_emit_unary(b, "stablehlo.sqrt",
                             sum(b, tpj_hlo_emit_binary(b, "stablehlo.multiply", x, x), &r));
      break;
    case TPJ_NORM_INF:
    case TPJ_NORM_NEG_INF: {
      int hi = at->kind == TPJ_NORM_INF;
      v = tpj_hlo_emit_reduce(b, x, tpj_hlo_emit_extreme(b, cd, !hi), r.dims, r.ndims,
                              hi ? "stablehlo.maximum" : "stablehlo.minimum");
      /* |x| has no -NaN; a NaN anywhere gives NaN, as in PyTorch */
      tpj_hlo_value_t nan = tpj_hlo_emit_compare(b, x, x, "NE");
      tpj_hlo_value_t any = tpj_hlo_emit_reduce(b, nan, tpj_hlo_emit_zero(b, TPJ_BOOL), r.dims,
                                                r.ndims, "stablehlo.or");
      v = tpj_hlo_emit_select(b, any, fill(b, cd, NAN, &v), v);
      break;
    }
    default: {
      if (ctx->nin < 2) {
        tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "linalg_vector_norm: p is missing"));
        return;
      }
      tpj_hlo_value_t p = tpj_hlo_emit_convert(b, ctx->in[1], cd);
      tpj_hlo_value_t px = tpj_hlo_emit_broadcast_to(b, p, x.dims, x.ndim);
      v = sum(b, tpj_hlo_emit_binary(b, "stablehlo.power", x, px), &r);
      tpj_hlo_value_t inv = tpj_hlo_emit_binary(b, "stablehlo.divide", tpj_hlo_emit_one(b, cd), p);
      v = tpj_hlo_emit_binary(b, "stablehlo.power", v,
                              tpj_hlo_emit_broadcast_to(b, inv, v.dims, v.ndim));
      break;
    }
  }
  const tpj_rt_shape_t* o = &ctx->outs[0];
  results[0] = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, v, o->dtype), o->dims, o->ndim);
}
