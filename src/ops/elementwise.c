/* ops/elementwise: binary arithmetic and fills. Output dtype and shape come
 * from PyTorch (ctx->outs[0]); operands are converted to it and broadcast
 * here, so type promotion is never re-implemented. */
#include <string.h>

#include "ops/ops.h"
#include "view/view.h"

tpj_hlo_value_t tpj_ops_cast_to(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_dtype_t dt,
                                const int64_t* dims, int ndim) {
  return tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_convert(b, x, dt), dims, ndim);
}

/* Elementwise ops share one attribute layout: attrs[0] is the dtype the
 * computation runs in (PyTorch's common dtype; 0 means the output's), and for
 * add/sub attrs[1] != 0 says in[2] is alpha. Operands are converted to the
 * compute dtype and broadcast to the output's dims; the result is converted
 * to the output's dtype. */
static tpj_dtype_t tpj_compute_dtype(const tpj_op_ctx_t* ctx) {
  if (ctx->nattrs > 0 && ctx->attrs[0] > 0 && ctx->attrs[0] < TPJ_DTYPE_COUNT)
    return (tpj_dtype_t)ctx->attrs[0];
  return ctx->outs[0].dtype;
}

/* CPU's half and bfloat16 kernels for the fused ops (addcmul, addcdiv, lerp)
 * compute in float32 and round once at the end. */
static tpj_dtype_t tpj_half_opmath(tpj_dtype_t cd) {
  return (cd == TPJ_F16 || cd == TPJ_BF16) ? TPJ_F32 : cd;
}

static int tpj_need_inputs(tpj_op_ctx_t* ctx, int n, const char* op) {
  if (ctx->nin >= n) return 1;
  tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "%s needs %d operands", op, n));
  return 0;
}

static void tpj_lower_binary(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, const char* op,
                             const char* bool_op) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (!tpj_need_inputs(ctx, 2, op)) return;
  tpj_dtype_t cd = tpj_compute_dtype(ctx);
  const char* name = cd == TPJ_BOOL && bool_op ? bool_op : op;
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[0], cd, o->dims, o->ndim);
  tpj_hlo_value_t y = tpj_ops_cast_to(b, ctx->in[1], cd, o->dims, o->ndim);
  if (ctx->nattrs > 1 && ctx->attrs[1] && ctx->nin > 2) {
    tpj_hlo_value_t alpha = tpj_ops_cast_to(b, ctx->in[2], cd, o->dims, o->ndim);
    y = tpj_hlo_emit_binary(b, cd == TPJ_BOOL ? "stablehlo.and" : "stablehlo.multiply", y, alpha);
  }
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_binary(b, name, x, y), o->dtype);
}

static void tpj_lower_unary(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, const char* op) {
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (!tpj_need_inputs(ctx, 1, op)) return;
  tpj_hlo_value_t x = tpj_ops_cast_to(ctx->b, ctx->in[0], tpj_compute_dtype(ctx), o->dims, o->ndim);
  results[0] = tpj_hlo_emit_convert(ctx->b, tpj_hlo_emit_unary(ctx->b, op, x), o->dtype);
}

static void tpj_lower_compare(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, const char* dir) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (!tpj_need_inputs(ctx, 2, dir)) return;
  tpj_dtype_t cd = tpj_compute_dtype(ctx);
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[0], cd, o->dims, o->ndim);
  tpj_hlo_value_t y = tpj_ops_cast_to(b, ctx->in[1], cd, o->dims, o->ndim);
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_compare(b, x, y, dir), o->dtype);
}

#define TPJ_BINARY(fn, op, bool_op) \
  void fn(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) { tpj_lower_binary(ctx, r, op, bool_op); }
#define TPJ_UNARY(fn, op) \
  void fn(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) { tpj_lower_unary(ctx, r, op); }
#define TPJ_COMPARE(fn, dir) \
  void fn(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) { tpj_lower_compare(ctx, r, dir); }

TPJ_BINARY(tpj_lower_add_tensor, "stablehlo.add", "stablehlo.or")
TPJ_BINARY(tpj_lower_mul_tensor, "stablehlo.multiply", "stablehlo.and")
TPJ_BINARY(tpj_lower_sub_tensor, "stablehlo.subtract", NULL)
TPJ_BINARY(tpj_lower_div_tensor, "stablehlo.divide", NULL)
TPJ_BINARY(tpj_lower_pow, "stablehlo.power", NULL)

TPJ_UNARY(tpj_lower_exp, "stablehlo.exponential")
TPJ_UNARY(tpj_lower_log, "stablehlo.log")
TPJ_UNARY(tpj_lower_sin, "stablehlo.sine")
TPJ_UNARY(tpj_lower_cos, "stablehlo.cosine")
TPJ_UNARY(tpj_lower_tanh, "stablehlo.tanh")
TPJ_UNARY(tpj_lower_sqrt, "stablehlo.sqrt")
TPJ_UNARY(tpj_lower_rsqrt, "stablehlo.rsqrt")
TPJ_UNARY(tpj_lower_sigmoid, "stablehlo.logistic")
TPJ_UNARY(tpj_lower_log1p, "stablehlo.log_plus_one")
TPJ_UNARY(tpj_lower_expm1, "stablehlo.exponential_minus_one")
TPJ_UNARY(tpj_lower_neg, "stablehlo.negate")

TPJ_COMPARE(tpj_lower_eq, "EQ")
TPJ_COMPARE(tpj_lower_ne, "NE")
TPJ_COMPARE(tpj_lower_lt, "LT")
TPJ_COMPARE(tpj_lower_le, "LE")
TPJ_COMPARE(tpj_lower_gt, "GT")
TPJ_COMPARE(tpj_lower_ge, "GE")

/* maximum/minimum propagate a NaN from either operand, as PyTorch does
 * (XLA:CPU's min/max may not). */
static void tpj_lower_minmax(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, const char* op,
                             const char* bool_op) {
  tpj_lower_binary(ctx, results, op, bool_op);
  tpj_dtype_t cd = tpj_compute_dtype(ctx);
  if (!tpj_dtype_is_float(cd)) return;
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[0], o->dtype, o->dims, o->ndim);
  tpj_hlo_value_t y = tpj_ops_cast_to(b, ctx->in[1], o->dtype, o->dims, o->ndim);
  tpj_hlo_value_t r = tpj_hlo_emit_select(b, tpj_hlo_emit_compare(b, y, y, "NE"), y, results[0]);
  results[0] = tpj_hlo_emit_select(b, tpj_hlo_emit_compare(b, x, x, "NE"), x, r);
}

void tpj_lower_maximum(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_lower_minmax(ctx, r, "stablehlo.maximum", "stablehlo.or");
}

void tpj_lower_minimum(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_lower_minmax(ctx, r, "stablehlo.minimum", "stablehlo.and");
}

/* abs: a complex input gives its (real) magnitude. */
void tpj_lower_abs(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (!tpj_need_inputs(ctx, 1, "abs")) return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[0], tpj_compute_dtype(ctx), o->dims, o->ndim);
  if (x.dtype == TPJ_BOOL || x.dtype == TPJ_U8) {
    results[0] = tpj_hlo_emit_convert(b, x, o->dtype);  /* already non-negative */
    return;
  }
  if (tpj_dtype_is_complex(x.dtype)) {
    /* StableHLO's abs of a complex value is its real magnitude */
    tpj_dtype_t part = x.dtype == TPJ_C64 ? TPJ_F32 : TPJ_F64;
    results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_unary_to(b, "stablehlo.abs", x, part),
                                      o->dtype);
    return;
  }
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_unary(b, "stablehlo.abs", x), o->dtype);
}

/* relu: max(x, 0) in the input's dtype. */
void tpj_lower_relu(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (!tpj_need_inputs(ctx, 1, "relu")) return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[0], o->dtype, o->dims, o->ndim);
  tpj_hlo_value_t z = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, o->dtype), o->dims, o->ndim);
  results[0] = tpj_hlo_emit_binary(b, "stablehlo.maximum", x, z);
}

/* where(cond, a, b): attrs[0] is the dtype a and b are promoted to. */
void tpj_lower_where(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (!tpj_need_inputs(ctx, 3, "where")) return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t c = tpj_ops_cast_to(b, ctx->in[0], TPJ_BOOL, o->dims, o->ndim);
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[1], o->dtype, o->dims, o->ndim);
  tpj_hlo_value_t y = tpj_ops_cast_to(b, ctx->in[2], o->dtype, o->dims, o->ndim);
  results[0] = tpj_hlo_emit_select(b, c, x, y);
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
 * attrs hold the destination view. The result is the whole new storage of
 * the view's dtype: 1-D, or shaped as outs[0] asks (the eager glue keeps the
 * storage buffer's shape so that the old buffer can be donated to it). */
void tpj_lower_write_view(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_view_t v;
  if (ctx->nin != 2 || tpj_view_from_attrs(ctx->attrs, ctx->nattrs, &v) < 0) {
    tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "tpj::write_view: bad operands"));
    return;
  }
  tpj_hlo_value_t x = tpj_ops_cast_to(ctx->b, ctx->in[1], v.dtype, v.sizes, v.ndim);
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t r = tpj_view_emit_write(ctx->b, ctx->in[0], &v, x);
  if (tpj_hlo_ok(ctx->b) && o->ndim != 1)
    r = tpj_hlo_emit_reshape(ctx->b, r, o->dims, o->ndim);
  results[0] = r;
}

/* clamp: in[0] x, then in[1] min when attrs[1], then max when attrs[2];
 * attrs[0] compute dtype. A NaN in x stays NaN, as in PyTorch. */
void tpj_lower_clamp(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nattrs < 3 || ctx->nin < 1 + (ctx->attrs[1] != 0) + (ctx->attrs[2] != 0)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "clamp: bad operands"));
    return;
  }
  tpj_dtype_t cd = tpj_compute_dtype(ctx);
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[0], cd, o->dims, o->ndim);
  tpj_hlo_value_t r = x;
  int next = 1;
  tpj_hlo_value_t bounds[2];
  int nb = 0;
  if (ctx->attrs[1]) {
    bounds[nb] = tpj_ops_cast_to(b, ctx->in[next++], cd, o->dims, o->ndim);
    r = tpj_hlo_emit_binary(b, "stablehlo.maximum", r, bounds[nb++]);
  }
  if (ctx->attrs[2]) {
    bounds[nb] = tpj_ops_cast_to(b, ctx->in[next++], cd, o->dims, o->ndim);
    r = tpj_hlo_emit_binary(b, "stablehlo.minimum", r, bounds[nb++]);
  }
  if (tpj_dtype_is_float(cd)) {
    /* a NaN input or a NaN bound gives NaN */
    for (int i = 0; i < nb; ++i)
      r = tpj_hlo_emit_select(b, tpj_hlo_emit_compare(b, bounds[i], bounds[i], "NE"), bounds[i], r);
    r = tpj_hlo_emit_select(b, tpj_hlo_emit_compare(b, x, x, "NE"), x, r);
  }
  results[0] = tpj_hlo_emit_convert(b, r, o->dtype);
}

/* masked_fill: in[0] self, in[1] mask (bool), in[2] the 0-d value. */
void tpj_lower_masked_fill(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (!tpj_need_inputs(ctx, 3, "masked_fill")) return;
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[0], o->dtype, o->dims, o->ndim);
  tpj_hlo_value_t m = tpj_ops_cast_to(b, ctx->in[1], TPJ_BOOL, o->dims, o->ndim);
  tpj_hlo_value_t v = tpj_ops_cast_to(b, ctx->in[2], o->dtype, o->dims, o->ndim);
  results[0] = tpj_hlo_emit_select(b, m, v, x);
}

/* addcmul / addcdiv: in[0] self, in[1] t1, in[2] t2, in[3] value (0-d);
 * self + value * (t1 * t2) or self + value * (t1 / t2), in attrs[0]. */
static void tpj_lower_addc(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, const char* op) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (!tpj_need_inputs(ctx, 4, op)) return;
  tpj_dtype_t cd = tpj_half_opmath(tpj_compute_dtype(ctx));
  tpj_hlo_value_t v[4];
  for (int i = 0; i < 4; ++i) v[i] = tpj_ops_cast_to(b, ctx->in[i], cd, o->dims, o->ndim);
  tpj_hlo_value_t p = tpj_hlo_emit_binary(b, op, v[1], v[2]);
  tpj_hlo_value_t r = tpj_hlo_emit_binary(b, "stablehlo.add", v[0],
                                          tpj_hlo_emit_binary(b, "stablehlo.multiply", v[3], p));
  results[0] = tpj_hlo_emit_convert(b, r, o->dtype);
}

void tpj_lower_addcmul(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_lower_addc(ctx, r, "stablehlo.multiply");
}

void tpj_lower_addcdiv(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_lower_addc(ctx, r, "stablehlo.divide");
}

/* lerp: in[0] self, in[1] end, in[2] weight. PyTorch's two-sided formula,
 * exact at both ends: |w| < 0.5 ? self + w (end - self)
 *                               : end - (end - self) (1 - w). */
void tpj_lower_lerp(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (!tpj_need_inputs(ctx, 3, "lerp")) return;
  tpj_dtype_t cd = tpj_half_opmath(tpj_compute_dtype(ctx));
  tpj_hlo_value_t s = tpj_ops_cast_to(b, ctx->in[0], cd, o->dims, o->ndim);
  tpj_hlo_value_t e = tpj_ops_cast_to(b, ctx->in[1], cd, o->dims, o->ndim);
  tpj_hlo_value_t w = tpj_ops_cast_to(b, ctx->in[2], cd, o->dims, o->ndim);
  tpj_hlo_value_t diff = tpj_hlo_emit_binary(b, "stablehlo.subtract", e, s);
  tpj_hlo_value_t one = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_one(b, cd), o->dims, o->ndim);
  tpj_hlo_value_t half = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_f64(b, cd, 0.5), o->dims,
                                                   o->ndim);
  tpj_hlo_value_t lo = tpj_hlo_emit_binary(b, "stablehlo.add", s,
                                           tpj_hlo_emit_binary(b, "stablehlo.multiply", w, diff));
  tpj_hlo_value_t hi = tpj_hlo_emit_binary(
      b, "stablehlo.subtract", e,
      tpj_hlo_emit_binary(b, "stablehlo.multiply", diff,
                          tpj_hlo_emit_binary(b, "stablehlo.subtract", one, w)));
  tpj_hlo_value_t aw = tpj_dtype_is_complex(cd) ? w : tpj_hlo_emit_unary(b, "stablehlo.abs", w);
  tpj_hlo_value_t small = tpj_dtype_is_complex(cd)
                              ? tpj_hlo_emit_compare(b, tpj_hlo_emit_real(b, w),
                                                     tpj_hlo_emit_real(b, half), "LT")
                              : tpj_hlo_emit_compare(b, aw, half, "LT");
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_select(b, small, lo, hi), o->dtype);
}
