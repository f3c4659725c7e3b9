/* ops/pointwise: elementwise ops. First binary arithmetic, comparisons,
 * where, clamp, masked_fill, addcmul/addcdiv, lerp and fills; then (each
 * section says its attribute layout) rounding, sign, inverse trig and
 * hyperbolic functions, the erf family, remainder, rounding division,
 * hypot, nan_to_num, the bitwise and logical ops; gcd and lcm; copysign,
 * signbit, fmax/fmin, heaviside, logaddexp/logaddexp2, xlogy, angle,
 * complex, polar and frexp. Output dtype and shape come from PyTorch
 * (ctx->outs[0]); operands are converted to it and broadcast here, so type
 * promotion is never re-implemented. */
#include <math.h>
#include <string.h>

#include "hlo/sort.h"
#include "ops/desc.h"
#include "ops/lower_util.h"
#include "ops/ops.h"
#include "ops/sugar.h"
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

/* x * y where in_x / in_y are the operands before conversion to the float
 * compute dtype: XLA rewrites convert(bool) * y as select(bool, y, 0), so
 * False * inf came out 0 where CPU's 0.0 * inf is NaN. Put the NaN back. */
static tpj_hlo_value_t tpj_mul_keep_nan(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                        tpj_hlo_value_t y, tpj_dtype_t in_x, tpj_dtype_t in_y) {
  tpj_hlo_value_t r = MUL(x, y);
  if (!tpj_dtype_is_float(r.dtype) || (in_x == TPJ_BOOL) == (in_y == TPJ_BOOL)) return r;
  tpj_hlo_value_t p = in_x == TPJ_BOOL ? x : y, v = in_x == TPJ_BOOL ? y : x;
  tpj_hlo_value_t z = tpj_ops_const_like(b, p, 0.0);
  tpj_hlo_value_t bad = AND(CMP(p, z, "EQ"),
                            tpj_hlo_emit_unary(b, "stablehlo.not",
                                               tpj_hlo_emit_unary_to(b, "stablehlo.is_finite", v,
                                                                     TPJ_BOOL)));
  return SEL(bad, tpj_ops_const_like(b, r, NAN), r);
}

/* An operand converted to the opmath dtype cd for an op whose common dtype
 * is half or bfloat16: CPU's TensorIterator first casts it to the common
 * dtype (int32 70000 becomes inf in float16), then the kernel widens it. */
static tpj_hlo_value_t tpj_opmath_in(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_dtype_t common,
                                     tpj_dtype_t cd, const int64_t* dims, int ndim) {
  if ((common == TPJ_F16 || common == TPJ_BF16) && cd != common && x.dtype != common &&
      !tpj_dtype_is_complex(x.dtype))
    x = tpj_hlo_emit_convert(b, x, common);
  return tpj_ops_cast_to(b, x, cd, dims, ndim);
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
  tpj_hlo_value_t r = strcmp(name, "stablehlo.multiply") == 0
                        ? tpj_mul_keep_nan(b, x, y, ctx->in[0].dtype, ctx->in[1].dtype)
                        : tpj_hlo_emit_binary(b, name, x, y);
  results[0] = tpj_hlo_emit_convert(b, r, o->dtype);
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

/* Integer x^e as CPU's powi: square-and-multiply over every bit of e, each
 * product wrapping modulo 2^bits (XLA's integer power looks at only the
 * low 6 bits of e, so 2^64 gave 1, and an odd base to a power >= 64 was
 * wrong too). A negative e gives 1 for x = 1, +-1 for x = -1 by e's
 * parity, else 0. */
static tpj_hlo_value_t tpj_pow_int(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t e) {
  int width = (int)tpj_dtype_size(x.dtype) * 8;
  int is_unsigned = x.dtype == TPJ_U8;
  tpj_hlo_value_t one = tpj_ops_const_like(b, x, 1.0), zero = tpj_ops_const_like(b, x, 0.0);
  tpj_hlo_value_t r = one, base = x;
  /* a non-negative signed e has width - 1 bits */
  for (int i = 0; i < width - !is_unsigned; ++i) {
    tpj_hlo_value_t bit = AND(tpj_hlo_emit_binary(b, "stablehlo.shift_right_logical", e,
                                                  tpj_ops_const_like(b, e, (double)i)),
                              one);
    r = SEL(CMP(bit, zero, "NE"), MUL(r, base), r);
    if (i + 1 < width - !is_unsigned) base = MUL(base, base);
  }
  if (is_unsigned) return r;
  tpj_hlo_value_t minus_one = tpj_ops_const_like(b, x, -1.0);
  tpj_hlo_value_t odd = CMP(AND(e, one), zero, "NE");
  tpj_hlo_value_t neg = SEL(CMP(x, one, "EQ"), one,
                            SEL(CMP(x, minus_one, "EQ"), SEL(odd, minus_one, one), zero));
  return SEL(CMP(e, zero, "LT"), neg, r);
}

/* Complex x^e as CPU's std::pow (glibc's cpow): cexp(e * clog(x)), with
 * cexp's C99 special cases where XLA's power gives NaN: 0^e is 0 for
 * Re(e * log 0) = -inf, inf^e is inf + NaN i. 0^0 stays NaN, as on CPU. */
static tpj_hlo_value_t tpj_pow_complex(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                       tpj_hlo_value_t e) {
  tpj_hlo_value_t l = tpj_hlo_emit_unary(b, "stablehlo.log", x);
  tpj_hlo_value_t a = tpj_hlo_emit_real(b, e), bi = tpj_hlo_emit_imag(b, e);
  tpj_hlo_value_t c = tpj_hlo_emit_real(b, l), d = tpj_hlo_emit_imag(b, l);
  tpj_hlo_value_t wr = SUB(MUL(a, c), MUL(bi, d)), wi = ADD(MUL(a, d), MUL(bi, c));
  tpj_hlo_value_t z = tpj_ops_const_like(b, wr, 0.0);
  tpj_hlo_value_t inf = tpj_ops_const_like(b, wr, INFINITY);
  tpj_hlo_value_t nan = tpj_ops_const_like(b, wr, NAN);
  tpj_hlo_value_t m = tpj_hlo_emit_unary(b, "stablehlo.exponential", wr);
  tpj_hlo_value_t re = MUL(m, tpj_hlo_emit_unary(b, "stablehlo.cosine", wi));
  tpj_hlo_value_t im = MUL(m, tpj_hlo_emit_unary(b, "stablehlo.sine", wi));
  tpj_hlo_value_t wi_zero = CMP(wi, z, "EQ");
  tpj_hlo_value_t wi_bad = tpj_hlo_emit_unary(
      b, "stablehlo.not", tpj_hlo_emit_unary_to(b, "stablehlo.is_finite", wi, TPJ_BOOL));
  /* an imaginary part of 0 stays exact: exp(wr) + 0i, inf * 0 is no NaN */
  re = SEL(wi_zero, m, re);
  im = SEL(wi_zero, wi, im);
  tpj_hlo_value_t neg_inf = CMP(wr, tpj_hlo_emit_unary(b, "stablehlo.negate", inf), "EQ");
  tpj_hlo_value_t pos_inf = CMP(wr, inf, "EQ");
  re = SEL(AND(neg_inf, wi_bad), z, re);
  im = SEL(AND(neg_inf, wi_bad), z, im);
  re = SEL(AND(pos_inf, wi_bad), inf, re);
  im = SEL(AND(pos_inf, wi_bad), nan, im);
  return tpj_hlo_emit_complex(b, re, im);
}

static void tpj_pow(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, int scalar_exp) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (!tpj_need_inputs(ctx, 2, "pow")) return;
  tpj_dtype_t cd = tpj_compute_dtype(ctx);
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[0], cd, o->dims, o->ndim);
  tpj_hlo_value_t e = tpj_ops_cast_to(b, ctx->in[1], cd, o->dims, o->ndim);
  tpj_hlo_value_t r;
  if (tpj_dtype_is_int(cd)) {
    r = tpj_pow_int(b, x, e);
  } else if (tpj_dtype_is_complex(cd) && !scalar_exp) {
    r = tpj_pow_complex(b, x, e);
  } else {
    r = tpj_hlo_emit_binary(b, "stablehlo.power", x, e);
    /* CPU's pow(Tensor, Scalar) in float32, float64 and bfloat16 runs sqrt
     * for an exponent of 0.5 and rsqrt for -0.5, which differ from pow at
     * -inf (NaN, not inf) and -0 (-0 and -inf, not +0 and +inf). The
     * exponent is a runtime scalar, so the choice is made per call. */
    if (scalar_exp && (cd == TPJ_F32 || cd == TPJ_F64 || cd == TPJ_BF16)) {
      r = SEL(CMP(e, tpj_ops_const_like(b, e, -0.5), "EQ"),
              tpj_hlo_emit_unary(b, "stablehlo.rsqrt", x), r);
      r = SEL(CMP(e, tpj_ops_const_like(b, e, 0.5), "EQ"),
              tpj_hlo_emit_unary(b, "stablehlo.sqrt", x), r);
    }
  }
  results[0] = tpj_hlo_emit_convert(b, r, o->dtype);
}

void tpj_lower_pow(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) { tpj_pow(ctx, r, 0); }
void tpj_lower_pow_scalar(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) { tpj_pow(ctx, r, 1); }

TPJ_UNARY(tpj_lower_exp, "stablehlo.exponential")
TPJ_UNARY(tpj_lower_log, "stablehlo.log")
TPJ_UNARY(tpj_lower_sin, "stablehlo.sine")
TPJ_UNARY(tpj_lower_cos, "stablehlo.cosine")
TPJ_UNARY(tpj_lower_tanh, "stablehlo.tanh")
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
  tpj_dtype_t common = tpj_compute_dtype(ctx), cd = tpj_half_opmath(common);
  tpj_hlo_value_t v[4];
  for (int i = 0; i < 4; ++i) v[i] = tpj_opmath_in(b, ctx->in[i], common, cd, o->dims, o->ndim);
  tpj_hlo_value_t p = strcmp(op, "stablehlo.multiply") == 0
                          ? tpj_mul_keep_nan(b, v[1], v[2], ctx->in[1].dtype, ctx->in[2].dtype)
                          : tpj_hlo_emit_binary(b, op, v[1], v[2]);
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

/* ops/math: more elementwise math (rounding, sign, inverse trig and
 * hyperbolic functions, erf family, remainder, rounding division, hypot,
 * nan_to_num) and the bitwise and logical ops.
 *
 * Attribute layout shared by every op here: attrs[0] is the dtype the
 * computation runs in (chosen by the glue from PyTorch's promotion; float32
 * for half inputs, as CPU's kernels compute); further attrs are per op and
 * documented at each lowering. Operands are converted to the compute dtype
 * and broadcast to the output's dims; the result is converted to the
 * output's dtype. */
static tpj_dtype_t tpj_math_cd(const tpj_op_ctx_t* ctx) {
  if (ctx->nattrs > 0 && ctx->attrs[0] > 0 && ctx->attrs[0] < TPJ_DTYPE_COUNT)
    return (tpj_dtype_t)ctx->attrs[0];
  return ctx->outs[0].dtype;
}

static int tpj_math_need(tpj_op_ctx_t* ctx, int nin, int nattrs, const char* op) {
  if (ctx->nin >= nin && ctx->nattrs >= nattrs && ctx->nouts >= 1) return 1;
  tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "%s: bad operands", op));
  return 0;
}

/* operand i in dtype dt, broadcast to the output's dims (through a half
 * output's dtype first, as CPU casts it, when dt is its float32 opmath) */
static tpj_hlo_value_t tpj_math_in(tpj_op_ctx_t* ctx, int i, tpj_dtype_t dt) {
  const tpj_rt_shape_t* o = &ctx->outs[0];
  return tpj_opmath_in(ctx->b, ctx->in[i], o->dtype, dt, o->dims, o->ndim);
}

/* the constant v shaped like x */
static tpj_hlo_value_t tpj_math_c(tpj_hlo_builder_t* b, tpj_hlo_value_t x, double v) {
  return tpj_ops_const_like(b, x, v);
}

static tpj_hlo_value_t tpj_math_done(tpj_op_ctx_t* ctx, tpj_hlo_value_t r) {
  return tpj_hlo_emit_convert(ctx->b, r, ctx->outs[0].dtype);
}


/* ---- unary ops that are one (C)HLO op in the compute dtype ---- */

static void tpj_math_unary(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, const char* op) {
  if (!tpj_math_need(ctx, 1, 0, op)) return;
  tpj_hlo_value_t x = tpj_math_in(ctx, 0, tpj_math_cd(ctx));
  results[0] = tpj_math_done(ctx, tpj_hlo_emit_unary(ctx->b, op, x));
}

#define TPJ_MATH_UNARY(fn, op) \
  void fn(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) { tpj_math_unary(ctx, r, op); }

/* erf with float32 tails that reach +-1. XLA's float32 erf is one rational
 * approximation over x clamped to [-4, 4] that never reaches +-1: erf(-10)
 * + 1 was 1.8e-7, which every gelu (-1.8e-6 at -20, -inf at -inf where CPU
 * gives NaN) and its backward inherited. From |x| = 3.9192059 on, the true
 * erf rounds to +-1 in float32, so that is the result there. (Elsewhere
 * XLA's erf is within 3 ulps. 1 - erfc(|x|) from |x| = 1 on is within 0.8
 * ulp, but evaluates erf and erfc both: gelu's forward and backward took
 * 1.7x as long.) float64's erf already reaches +-1. */
tpj_hlo_value_t tpj_ops_erf(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  tpj_hlo_value_t e = tpj_hlo_emit_unary(b, "chlo.erf", x);
  if (x.dtype != TPJ_F32) return e;
  tpj_hlo_value_t ax = tpj_hlo_emit_unary(b, "stablehlo.abs", x);
  tpj_hlo_value_t one = tpj_hlo_emit_unary(b, "stablehlo.sign", x);
  return SEL(CMP(ax, tpj_math_c(b, x, 3.9192059040069580), "GE"), one, e);
}

void tpj_lower_erf(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_math_need(ctx, 1, 0, "erf")) return;
  tpj_hlo_value_t x = tpj_math_in(ctx, 0, tpj_math_cd(ctx));
  results[0] = tpj_math_done(ctx, tpj_ops_erf(ctx->b, x));
}

TPJ_MATH_UNARY(tpj_lower_erfc, "chlo.erfc")
TPJ_MATH_UNARY(tpj_lower_erfinv, "chlo.erf_inv")
TPJ_MATH_UNARY(tpj_lower_tan, "chlo.tan")
TPJ_MATH_UNARY(tpj_lower_asin, "chlo.asin")
TPJ_MATH_UNARY(tpj_lower_acos, "chlo.acos")
TPJ_MATH_UNARY(tpj_lower_atan, "chlo.atan")
TPJ_MATH_UNARY(tpj_lower_sinh, "chlo.sinh")
TPJ_MATH_UNARY(tpj_lower_cosh, "chlo.cosh")
TPJ_MATH_UNARY(tpj_lower_asinh, "chlo.asinh")
TPJ_MATH_UNARY(tpj_lower_acosh, "chlo.acosh")
TPJ_MATH_UNARY(tpj_lower_atanh, "chlo.atanh")

/* bitwise_not: `not` is logical on bool (i1) and bitwise on integers */
TPJ_MATH_UNARY(tpj_lower_bitwise_not, "stablehlo.not")

/* floor, ceil and round are the identity on integers, as on CPU */
static void tpj_math_rounding(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, const char* op) {
  if (!tpj_math_need(ctx, 1, 0, op)) return;
  tpj_hlo_value_t x = tpj_math_in(ctx, 0, tpj_math_cd(ctx));
  if (tpj_dtype_is_float(x.dtype)) x = tpj_hlo_emit_unary(ctx->b, op, x);
  results[0] = tpj_math_done(ctx, x);
}

void tpj_lower_floor(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_math_rounding(ctx, r, "stablehlo.floor");
}
void tpj_lower_ceil(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_math_rounding(ctx, r, "stablehlo.ceil");
}

static tpj_hlo_value_t tpj_math_trunc(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  if (!tpj_dtype_is_float(x.dtype)) return x;
  tpj_hlo_value_t neg = CMP(x, tpj_math_c(b, x, 0.0), "LT");
  return SEL(neg, tpj_hlo_emit_unary(b, "stablehlo.ceil", x),
             tpj_hlo_emit_unary(b, "stablehlo.floor", x));
}

void tpj_lower_trunc(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_math_need(ctx, 1, 0, "trunc")) return;
  results[0] = tpj_math_done(ctx, tpj_math_trunc(ctx->b, tpj_math_in(ctx, 0, tpj_math_cd(ctx))));
}

/* frac: x - trunc(x) */
void tpj_lower_frac(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_math_need(ctx, 1, 0, "frac")) return;
  tpj_hlo_value_t x = tpj_math_in(ctx, 0, tpj_math_cd(ctx));
  results[0] = tpj_math_done(ctx, SUB(x, tpj_math_trunc(b, x)));
}

/* round: half to even; attrs[1] (when present) is `decimals`, applied the
 * way CPU does: nearbyint(x * 10^d) / 10^d, or nearbyint(x / 10^-d) * 10^-d
 * for negative d, in the compute dtype. */
void tpj_lower_round(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_math_need(ctx, 1, 0, "round")) return;
  tpj_hlo_value_t x = tpj_math_in(ctx, 0, tpj_math_cd(ctx));
  if (!tpj_dtype_is_float(x.dtype)) {
    results[0] = tpj_math_done(ctx, x);
    return;
  }
  int64_t d = ctx->nattrs > 1 ? ctx->attrs[1] : 0;
  const char* rne = "stablehlo.round_nearest_even";
  if (d == 0) {
    results[0] = tpj_math_done(ctx, tpj_hlo_emit_unary(b, rne, x));
    return;
  }
  double p = 1.0;
  for (int64_t i = 0; i < (d < 0 ? -d : d); ++i) p *= 10.0;
  /* the power is rounded to the compute dtype first, as CPU's opmath does */
  tpj_hlo_value_t pw = tpj_math_c(b, x, p);
  tpj_hlo_value_t r = d > 0 ? DIV(tpj_hlo_emit_unary(b, rne, MUL(x, pw)), pw)
                            : MUL(tpj_hlo_emit_unary(b, rne, DIV(x, pw)), pw);
  results[0] = tpj_math_done(ctx, r);
}

/* sign and sgn (real inputs): (0 < x) - (x < 0), so NaN gives 0 and
 * unsigned and bool inputs work; complex sgn is x / |x| (0 at 0). */
void tpj_lower_sign(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_math_need(ctx, 1, 0, "sign")) return;
  tpj_hlo_value_t x = tpj_math_in(ctx, 0, tpj_math_cd(ctx));
  if (x.dtype == TPJ_BOOL) {
    results[0] = tpj_math_done(ctx, x);
    return;
  }
  if (tpj_dtype_is_complex(x.dtype)) {
    tpj_dtype_t part = x.dtype == TPJ_C64 ? TPJ_F32 : TPJ_F64;
    tpj_hlo_value_t mag = tpj_hlo_emit_unary_to(b, "stablehlo.abs", x, part);
    tpj_hlo_value_t zero = tpj_math_c(b, mag, 0.0);
    tpj_hlo_value_t cm = tpj_hlo_emit_complex(b, mag, zero);
    tpj_hlo_value_t is0 = CMP(mag, zero, "EQ");
    results[0] = tpj_math_done(ctx, SEL(is0, tpj_math_c(b, x, 0.0), DIV(x, cm)));
    return;
  }
  tpj_hlo_value_t z = tpj_math_c(b, x, 0.0);
  tpj_hlo_value_t pos = tpj_hlo_emit_convert(b, CMP(z, x, "LT"), x.dtype);
  tpj_hlo_value_t neg = tpj_hlo_emit_convert(b, CMP(x, z, "LT"), x.dtype);
  results[0] = tpj_math_done(ctx, SUB(pos, neg));
}

/* isnan: x != x (false for integers and bool) */
void tpj_lower_isnan(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_math_need(ctx, 1, 0, "isnan")) return;
  tpj_hlo_value_t x = tpj_math_in(ctx, 0, ctx->in[0].dtype);
  results[0] = tpj_math_done(ctx, CMP(x, x, "NE"));
}

/* isposinf / isneginf: x == +inf / -inf (false for integers and bool) */
static void tpj_math_isinf_signed(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, int positive) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_math_need(ctx, 1, 0, "isinf")) return;
  tpj_hlo_value_t x = tpj_math_in(ctx, 0, ctx->in[0].dtype);
  if (!tpj_dtype_is_float(x.dtype)) {
    results[0] = tpj_math_done(ctx, CMP(x, x, "NE"));
    return;
  }
  tpj_hlo_value_t inf = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_extreme(b, x.dtype, positive),
                                                  x.dims, x.ndim);
  results[0] = tpj_math_done(ctx, CMP(x, inf, "EQ"));
}

void tpj_lower_isposinf(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) { tpj_math_isinf_signed(ctx, r, 1); }
void tpj_lower_isneginf(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) { tpj_math_isinf_signed(ctx, r, 0); }

/* reciprocal: 1 / x */
void tpj_lower_reciprocal(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_math_need(ctx, 1, 0, "reciprocal")) return;
  tpj_hlo_value_t x = tpj_math_in(ctx, 0, tpj_math_cd(ctx));
  results[0] = tpj_math_done(ctx, DIV(tpj_math_c(b, x, 1.0), x));
}

/* log2 and log10: log(x) / log(base) */
static void tpj_math_log_base(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, double ln_base) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_math_need(ctx, 1, 0, "log")) return;
  tpj_hlo_value_t x = tpj_math_in(ctx, 0, tpj_math_cd(ctx));
  tpj_hlo_value_t l = tpj_hlo_emit_unary(b, "stablehlo.log", x);
  results[0] = tpj_math_done(ctx, DIV(l, tpj_math_c(b, x, ln_base)));
}

void tpj_lower_log2(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_math_log_base(ctx, r, 0.69314718055994530942);
}
void tpj_lower_log10(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_math_log_base(ctx, r, 2.30258509299404568402);
}

/* exp2: 2 ** x */
void tpj_lower_exp2(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_math_need(ctx, 1, 0, "exp2")) return;
  tpj_hlo_value_t x = tpj_math_in(ctx, 0, tpj_math_cd(ctx));
  results[0] = tpj_math_done(ctx, tpj_hlo_emit_binary(b, "stablehlo.power", tpj_math_c(b, x, 2.0), x));
}

/* nan_to_num: in[1..3] are the 0-d replacements for NaN, +inf and -inf
 * (the glue fills in the dtype's extremes for the defaults). Integers and
 * bool pass through. */
void tpj_lower_nan_to_num(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_math_need(ctx, 4, 0, "nan_to_num")) return;
  tpj_dtype_t cd = tpj_math_cd(ctx);
  tpj_hlo_value_t x = tpj_math_in(ctx, 0, cd);
  if (!tpj_dtype_is_float(cd)) {
    results[0] = tpj_math_done(ctx, x);
    return;
  }
  tpj_hlo_value_t nan = tpj_math_in(ctx, 1, cd), pinf = tpj_math_in(ctx, 2, cd),
                  ninf = tpj_math_in(ctx, 3, cd);
  tpj_hlo_value_t hi = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_extreme(b, cd, 1), x.dims, x.ndim);
  tpj_hlo_value_t lo = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_extreme(b, cd, 0), x.dims, x.ndim);
  tpj_hlo_value_t r = SEL(CMP(x, hi, "EQ"), pinf, x);
  r = SEL(CMP(x, lo, "EQ"), ninf, r);
  results[0] = tpj_math_done(ctx, SEL(CMP(x, x, "NE"), nan, r));
}

/* ---- binary ops ---- */

static int tpj_math_binary_in(tpj_op_ctx_t* ctx, const char* op, tpj_hlo_value_t* x,
                              tpj_hlo_value_t* y) {
  if (!tpj_math_need(ctx, 2, 0, op)) return 0;
  tpj_dtype_t cd = tpj_math_cd(ctx);
  *x = tpj_math_in(ctx, 0, cd);
  *y = tpj_math_in(ctx, 1, cd);
  return 1;
}

static void tpj_math_binary(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, const char* op) {
  tpj_hlo_value_t x, y;
  if (!tpj_math_binary_in(ctx, op, &x, &y)) return;
  results[0] = tpj_math_done(ctx, tpj_hlo_emit_binary(ctx->b, op, x, y));
}

#define TPJ_MATH_BINARY(fn, op) \
  void fn(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) { tpj_math_binary(ctx, r, op); }

TPJ_MATH_BINARY(tpj_lower_bitwise_and, "stablehlo.and")
TPJ_MATH_BINARY(tpj_lower_bitwise_or, "stablehlo.or")
TPJ_MATH_BINARY(tpj_lower_bitwise_xor, "stablehlo.xor")
TPJ_MATH_BINARY(tpj_lower_atan2, "stablehlo.atan2")
/* fmod: C's fmod (the result has the dividend's sign), which is
 * StableHLO's remainder for integers and floats alike */
TPJ_MATH_BINARY(tpj_lower_fmod, "stablehlo.remainder")

/* logical ops: each operand is "x != 0" (NaN counts as true) */
static tpj_hlo_value_t tpj_math_truth(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  if (x.dtype == TPJ_BOOL) return x;
  return CMP(x, tpj_math_c(b, x, 0.0), "NE");
}

static void tpj_math_logical(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, const char* op) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_math_need(ctx, 2, 0, op)) return;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t x = tpj_hlo_emit_broadcast_to(b, tpj_math_truth(b, ctx->in[0]), o->dims, o->ndim);
  tpj_hlo_value_t y = tpj_hlo_emit_broadcast_to(b, tpj_math_truth(b, ctx->in[1]), o->dims, o->ndim);
  results[0] = tpj_math_done(ctx, tpj_hlo_emit_binary(b, op, x, y));
}

void tpj_lower_logical_and(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_math_logical(ctx, r, "stablehlo.and");
}
void tpj_lower_logical_or(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_math_logical(ctx, r, "stablehlo.or");
}
void tpj_lower_logical_xor(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_math_logical(ctx, r, "stablehlo.xor");
}

void tpj_lower_logical_not(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_math_need(ctx, 1, 0, "logical_not")) return;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t x = tpj_hlo_emit_broadcast_to(b, tpj_math_truth(b, ctx->in[0]), o->dims, o->ndim);
  results[0] = tpj_math_done(ctx, tpj_hlo_emit_unary(b, "stablehlo.not", x));
}

/* remainder: Python's modulo, the result has the divisor's sign:
 * r = fmod(a, b); r != 0 and (r < 0) != (b < 0) ? r + b : r */
void tpj_lower_remainder(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t x, y;
  if (!tpj_math_binary_in(ctx, "remainder", &x, &y)) return;
  tpj_hlo_value_t r = tpj_hlo_emit_binary(b, "stablehlo.remainder", x, y);
  if (x.dtype == TPJ_BOOL) {
    results[0] = tpj_math_done(ctx, r);
    return;
  }
  tpj_hlo_value_t z = tpj_math_c(b, r, 0.0);
  tpj_hlo_value_t fix = AND(CMP(r, z, "NE"), CMP(CMP(r, z, "LT"), CMP(y, z, "LT"), "NE"));
  results[0] = tpj_math_done(ctx, SEL(fix, ADD(r, y), r));
}

/* div with rounding_mode: attrs[1] is 1 for "trunc", 2 for "floor".
 * Integers: StableHLO's divide truncates; floor subtracts one when the
 * remainder is non-zero and the signs differ. Floats follow CPU's
 * div_floor: (a - fmod(a, b)) / b, corrected, then floored, with a signed
 * zero and a / b when b is 0. */
void tpj_lower_div_mode(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t x, y;
  if (!tpj_math_binary_in(ctx, "div", &x, &y)) return;
  int floor = ctx->nattrs > 1 && ctx->attrs[1] == 2;
  tpj_hlo_value_t q = DIV(x, y);
  if (!tpj_dtype_is_float(x.dtype)) {
    if (floor && x.dtype != TPJ_BOOL) {
      tpj_hlo_value_t z = tpj_math_c(b, x, 0.0);
      tpj_hlo_value_t m = tpj_hlo_emit_binary(b, "stablehlo.remainder", x, y);
      tpj_hlo_value_t fix = AND(CMP(m, z, "NE"), CMP(CMP(x, z, "LT"), CMP(y, z, "LT"), "NE"));
      q = SEL(fix, SUB(q, tpj_math_c(b, q, 1.0)), q);
    }
    results[0] = tpj_math_done(ctx, q);
    return;
  }
  if (!floor) {
    /* CPU's half/bfloat16 kernel rounds the quotient to the output dtype before
     * truncating (2.999 becomes 3.0, then 3), so round it the same way. */
    tpj_dtype_t od = ctx->outs[0].dtype;
    if ((od == TPJ_F16 || od == TPJ_BF16) && q.dtype != od)
      q = tpj_hlo_emit_convert(b, tpj_hlo_emit_convert(b, q, od), q.dtype);
    results[0] = tpj_math_done(ctx, tpj_math_trunc(b, q));
    return;
  }
  tpj_hlo_value_t z = tpj_math_c(b, x, 0.0), one = tpj_math_c(b, x, 1.0);
  tpj_hlo_value_t m = tpj_hlo_emit_binary(b, "stablehlo.remainder", x, y);
  tpj_hlo_value_t d = DIV(SUB(x, m), y);
  tpj_hlo_value_t fix = AND(CMP(m, z, "NE"), CMP(CMP(y, z, "LT"), CMP(m, z, "LT"), "NE"));
  d = SEL(fix, SUB(d, one), d);
  tpj_hlo_value_t f = tpj_hlo_emit_unary(b, "stablehlo.floor", d);
  f = SEL(CMP(SUB(d, f), tpj_math_c(b, x, 0.5), "GT"), ADD(f, one), f);
  /* d == 0: a zero with the sign of a / b */
  tpj_hlo_value_t signed_zero = SEL(CMP(q, z, "LT"), tpj_math_c(b, x, -0.0), z);
  f = SEL(CMP(d, z, "EQ"), signed_zero, f);
  results[0] = tpj_math_done(ctx, SEL(CMP(y, z, "EQ"), q, f));
}

/* hypot: sqrt(a^2 + b^2) without overflow: m * sqrt(1 + (n / m)^2) with
 * m = max(|a|, |b|), n = min; 0 when both are 0, +inf when either is
 * infinite (even with a NaN), as C's hypot. */
void tpj_lower_hypot(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t x, y;
  if (!tpj_math_binary_in(ctx, "hypot", &x, &y)) return;
  tpj_hlo_value_t ax = tpj_hlo_emit_unary(b, "stablehlo.abs", x);
  tpj_hlo_value_t ay = tpj_hlo_emit_unary(b, "stablehlo.abs", y);
  tpj_hlo_value_t m = tpj_hlo_emit_binary(b, "stablehlo.maximum", ax, ay);
  tpj_hlo_value_t n = tpj_hlo_emit_binary(b, "stablehlo.minimum", ax, ay);
  tpj_hlo_value_t z = tpj_math_c(b, x, 0.0), one = tpj_math_c(b, x, 1.0);
  tpj_hlo_value_t ratio = DIV(n, SEL(CMP(m, z, "EQ"), one, m));
  tpj_hlo_value_t r = MUL(m, tpj_hlo_emit_unary(b, "stablehlo.sqrt", ADD(one, MUL(ratio, ratio))));
  tpj_hlo_value_t nan = tpj_hlo_emit_binary(b, "stablehlo.or", CMP(x, x, "NE"), CMP(y, y, "NE"));
  r = SEL(nan, ADD(x, y), r);
  tpj_hlo_value_t inf = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_extreme(b, x.dtype, 1), x.dims,
                                                  x.ndim);
  tpj_hlo_value_t any_inf = tpj_hlo_emit_binary(b, "stablehlo.or", CMP(ax, inf, "EQ"),
                                                CMP(ay, inf, "EQ"));
  results[0] = tpj_math_done(ctx, SEL(any_inf, inf, r));
}

#define MUL(x, y) tpj_hlo_emit_binary(b, "stablehlo.multiply", x, y)
#define CMP(x, y, d) tpj_hlo_emit_compare(b, x, y, d)
#define SEL(c, x, y) tpj_hlo_emit_select(b, c, x, y)

/* ---- gcd, lcm -------------------------------------------------------------- */

/* Euclid's loop of CPU's calc_gcd on |a|, |b|, unrolled: each step does
 * (a, b) = (b % a, a) where a != 0. Fibonacci pairs need the most steps:
 * fewer than 1.45 * bits + 2 of them. */
static tpj_hlo_value_t gcd(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t y) {
  int is_signed = x.dtype != TPJ_U8;
  tpj_hlo_value_t a = is_signed ? tpj_hlo_emit_unary(b, "stablehlo.abs", x) : x;
  tpj_hlo_value_t c = is_signed ? tpj_hlo_emit_unary(b, "stablehlo.abs", y) : y;
  tpj_hlo_value_t z = tpj_ops_full_like(b, a, a.dtype, 0.0), one = tpj_ops_full_like(b, a, a.dtype, 1.0);
  int bits = (int)tpj_dtype_size(a.dtype) * 8;
  int steps = bits * 3 / 2 + 2;
  for (int i = 0; i < steps; ++i) {
    tpj_hlo_value_t live = CMP(a, z, "NE");
    tpj_hlo_value_t r = tpj_hlo_emit_binary(b, "stablehlo.remainder", c, SEL(live, a, one));
    tpj_hlo_value_t na = SEL(live, r, a);
    c = SEL(live, a, c);
    a = na;
  }
  return c;
}

/* aten::gcd / aten::lcm: integer operands, converted to the output dtype
 * and broadcast. lcm is |a / g * b|, 0 where g is 0 (CPU's calc_lcm). */
void tpj_lower_gcd(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_ops_need(ctx, 2, 0, 1, "gcd")) return;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  results[0] = gcd(ctx->b, tpj_ops_cast_to(ctx->b, ctx->in[0], o->dtype, o->dims, o->ndim),
                   tpj_ops_cast_to(ctx->b, ctx->in[1], o->dtype, o->dims, o->ndim));
}

void tpj_lower_lcm(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_ops_need(ctx, 2, 0, 1, "lcm")) return;
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[0], o->dtype, o->dims, o->ndim);
  tpj_hlo_value_t y = tpj_ops_cast_to(b, ctx->in[1], o->dtype, o->dims, o->ndim);
  tpj_hlo_value_t g = gcd(b, x, y);
  tpj_hlo_value_t z = tpj_ops_full_like(b, g, g.dtype, 0.0);
  tpj_hlo_value_t g0 = CMP(g, z, "EQ");
  tpj_hlo_value_t q = tpj_hlo_emit_binary(b, "stablehlo.divide", x,
                                          SEL(g0, tpj_ops_full_like(b, g, g.dtype, 1.0), g));
  tpj_hlo_value_t m = MUL(q, y);
  results[0] = SEL(g0, z, x.dtype == TPJ_U8 ? m : tpj_hlo_emit_unary(b, "stablehlo.abs", m));
}

static int tpj_misc_need(tpj_op_ctx_t* ctx, int nin, const char* op) {
  if (ctx->nin >= nin && ctx->nattrs >= 1 && ctx->nouts >= 1 && ctx->attrs[0] > 0 &&
      ctx->attrs[0] < TPJ_DTYPE_COUNT)
    return 1;
  tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "%s: bad operands", op));
  return 0;
}

static tpj_hlo_value_t tpj_misc_in(tpj_op_ctx_t* ctx, int i) {
  const tpj_rt_shape_t* o = &ctx->outs[0];
  return tpj_ops_cast_to(ctx->b, ctx->in[i], (tpj_dtype_t)ctx->attrs[0], o->dims, o->ndim);
}

/* the constant v shaped like x */
static tpj_hlo_value_t tpj_misc_c(tpj_hlo_builder_t* b, tpj_hlo_value_t x, double v) {
  return tpj_ops_const_like(b, x, v);
}

static tpj_hlo_value_t tpj_misc_done(tpj_op_ctx_t* ctx, tpj_hlo_value_t r) {
  return tpj_hlo_emit_convert(ctx->b, r, ctx->outs[0].dtype);
}

#define UN(op, x) tpj_hlo_emit_unary(b, "stablehlo." op, x)
#define ISNAN(x) CMP(x, x, "NE")

/* x's bits as the signed integer of its width (floats only) */
static tpj_hlo_value_t tpj_misc_int_bits(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  tpj_dtype_t it = x.dtype == TPJ_F64 ? TPJ_I64 : x.dtype == TPJ_F32 ? TPJ_I32 : TPJ_I16;
  return tpj_hlo_emit_bitcast_convert(b, x, it, x.dims, x.ndim);
}

/* The sign bit of x: floats read it from their bits (so -0.0 and a negative
 * NaN count, as std::signbit does); signed integers are negative; unsigned
 * and bool never are. */
static tpj_hlo_value_t tpj_misc_signbit(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  if (x.dtype == TPJ_BOOL || x.dtype == TPJ_U8) return CMP(x, x, "NE"); /* false everywhere */
  if (!tpj_dtype_is_float(x.dtype)) return CMP(x, tpj_misc_c(b, x, 0.0), "LT");
  tpj_hlo_value_t bits = tpj_misc_int_bits(b, x);
  return CMP(bits, tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, bits.dtype), x.dims, x.ndim),
             "LT");
}

void tpj_lower_signbit(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_misc_need(ctx, 1, "signbit")) return;
  results[0] = tpj_misc_done(ctx, tpj_misc_signbit(b, tpj_misc_in(ctx, 0)));
}

/* sqrt. Complex: C99's csqrt gives the result's imaginary part the sign of
 * the argument's, -0 included (sqrt(-4 - 0i) is -2i); XLA's drops the sign
 * of a zero imaginary part, so it is put back. */
void tpj_lower_sqrt(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (!tpj_need_inputs(ctx, 1, "sqrt")) return;
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[0], tpj_compute_dtype(ctx), o->dims, o->ndim);
  tpj_hlo_value_t r = tpj_hlo_emit_unary(b, "stablehlo.sqrt", x);
  if (tpj_dtype_is_complex(x.dtype)) {
    tpj_hlo_value_t im = UN("abs", tpj_hlo_emit_imag(b, r));
    im = SEL(tpj_misc_signbit(b, tpj_hlo_emit_imag(b, x)), UN("negate", im), im);
    r = tpj_hlo_emit_complex(b, tpj_hlo_emit_real(b, r), im);
  }
  results[0] = tpj_hlo_emit_convert(b, r, o->dtype);
}

/* copysign(a, b): |a| with b's sign bit. */
void tpj_lower_copysign(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_misc_need(ctx, 2, "copysign")) return;
  tpj_hlo_value_t x = tpj_misc_in(ctx, 0), y = tpj_misc_in(ctx, 1);
  tpj_hlo_value_t ax = UN("abs", x);
  results[0] = tpj_misc_done(ctx, SEL(tpj_misc_signbit(b, y), UN("negate", ax), ax));
}

/* fmax / fmin: a NaN operand yields the other one; integers are max/min. */
static void tpj_misc_fminmax(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, int is_max) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_misc_need(ctx, 2, is_max ? "fmax" : "fmin")) return;
  tpj_hlo_value_t x = tpj_misc_in(ctx, 0), y = tpj_misc_in(ctx, 1);
  tpj_hlo_value_t r = SEL(CMP(x, y, is_max ? "LT" : "GT"), y, x);
  if (tpj_dtype_is_float(x.dtype)) r = SEL(ISNAN(x), y, SEL(ISNAN(y), x, r));
  results[0] = tpj_misc_done(ctx, r);
}
void tpj_lower_fmax(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) { tpj_misc_fminmax(ctx, r, 1); }
void tpj_lower_fmin(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) { tpj_misc_fminmax(ctx, r, 0); }

/* heaviside(x, v): v where x == 0, else x > 0 (so a NaN x gives 0). A
 * float x arrives as its bits (the glue passes an integer view of it) and is
 * tested on them: XLA:CPU flushes a subnormal float operand to 0, which would
 * pick v where CPU's kernel gives 1. */
void tpj_lower_heaviside(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_misc_need(ctx, 2, "heaviside")) return;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[0];
  tpj_hlo_value_t v = tpj_misc_in(ctx, 1), zero, pos;
  if (tpj_dtype_is_float(cd)) {
    tpj_hlo_value_t bits = tpj_hlo_emit_broadcast_to(b, ctx->in[0], o->dims, o->ndim);
    int64_t inf = cd == TPJ_F64 ? 0x7ff0000000000000LL : cd == TPJ_F32 ? 0x7f800000
                : cd == TPJ_F16 ? 0x7c00 : 0x7f80;
    tpj_hlo_value_t z = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, bits.dtype), o->dims,
                                                  o->ndim);
    tpj_hlo_value_t neg0 = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_extreme(b, bits.dtype, 0),
                                                     o->dims, o->ndim);
    tpj_hlo_value_t infb = tpj_hlo_emit_broadcast_to(
        b, tpj_hlo_emit_convert(b, tpj_hlo_emit_const_i64(b, inf), bits.dtype), o->dims, o->ndim);
    zero = OR(CMP(bits, z, "EQ"), CMP(bits, neg0, "EQ"));
    pos = AND(CMP(bits, z, "GT"), CMP(bits, infb, "LE"));
  } else {
    tpj_hlo_value_t x = tpj_misc_in(ctx, 0), z = tpj_misc_c(b, x, 0.0);
    zero = CMP(x, z, "EQ");
    pos = CMP(x, z, "GT");
  }
  results[0] = tpj_misc_done(ctx, SEL(zero, v, tpj_hlo_emit_convert(b, pos, v.dtype)));
}

/* logaddexp: a when both are the same infinity, else
 * max + log1p(exp(-|a - b|)); logaddexp2 the same in base 2
 * (max + log1p(2^-|a - b|) / ln 2). NaNs propagate through max. */
static void tpj_misc_logaddexp(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, int base2) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_misc_need(ctx, 2, base2 ? "logaddexp2" : "logaddexp")) return;
  tpj_hlo_value_t x = tpj_misc_in(ctx, 0), y = tpj_misc_in(ctx, 1);
  tpj_hlo_value_t nan = OR(ISNAN(x), ISNAN(y));
  tpj_hlo_value_t m = SEL(CMP(x, y, "LT"), y, x);
  tpj_hlo_value_t d = UN("negate", UN("abs", SUB(x, y)));
  tpj_hlo_value_t e;
  if (base2) {
    e = UN("exponential", MUL(d, tpj_misc_c(b, d, 0.693147180559945309417232121458)));
    e = MUL(UN("log_plus_one", e), tpj_misc_c(b, d, 1.442695040888963407359924681001892137));
  } else {
    e = UN("log_plus_one", UN("exponential", d));
  }
  tpj_hlo_value_t inf = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_extreme(b, x.dtype, 1), x.dims,
                                                  x.ndim);
  tpj_hlo_value_t same_inf = AND(CMP(x, y, "EQ"), CMP(UN("abs", x), inf, "EQ"));
  tpj_hlo_value_t r = SEL(same_inf, x, ADD(m, e));
  results[0] = tpj_misc_done(ctx, SEL(nan, ADD(x, y), r));
}
void tpj_lower_logaddexp(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) { tpj_misc_logaddexp(ctx, r, 0); }
void tpj_lower_logaddexp2(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) { tpj_misc_logaddexp(ctx, r, 1); }

/* xlogy(x, y): NaN where y is NaN, 0 where x == 0, else x * log(y). */
void tpj_lower_xlogy(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_misc_need(ctx, 2, "xlogy")) return;
  tpj_hlo_value_t x = tpj_misc_in(ctx, 0), y = tpj_misc_in(ctx, 1);
  tpj_hlo_value_t r = SEL(CMP(x, tpj_misc_c(b, x, 0.0), "EQ"), tpj_misc_c(b, x, 0.0),
                          MUL(x, UN("log", y)));
  results[0] = tpj_misc_done(ctx, SEL(ISNAN(y), y, r));
}

/* angle: complex -> atan2(imag, real); real -> pi where negative, NaN kept,
 * else 0. */
void tpj_lower_angle(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_misc_need(ctx, 1, "angle")) return;
  tpj_hlo_value_t x = tpj_misc_in(ctx, 0);
  if (tpj_dtype_is_complex(x.dtype)) {
    tpj_hlo_value_t re = tpj_hlo_emit_real(b, x), im = tpj_hlo_emit_imag(b, x);
    results[0] = tpj_misc_done(ctx, tpj_hlo_emit_binary(b, "stablehlo.atan2", im, re));
    return;
  }
  tpj_hlo_value_t z = tpj_misc_c(b, x, 0.0);
  tpj_hlo_value_t r = SEL(CMP(x, z, "LT"), tpj_misc_c(b, x, 3.14159265358979323846264338327950288), z);
  results[0] = tpj_misc_done(ctx, SEL(ISNAN(x), x, r));
}

/* complex(re, im) and polar(abs, angle) = abs * (cos angle + i sin angle);
 * attrs[0] is the real compute dtype, the output complex. */
void tpj_lower_complex(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_misc_need(ctx, 2, "complex")) return;
  results[0] = tpj_hlo_emit_complex(b, tpj_misc_in(ctx, 0), tpj_misc_in(ctx, 1));
}

void tpj_lower_polar(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_misc_need(ctx, 2, "polar")) return;
  tpj_hlo_value_t r = tpj_misc_in(ctx, 0), t = tpj_misc_in(ctx, 1);
  results[0] = tpj_hlo_emit_complex(b, MUL(r, UN("cosine", t)), MUL(r, UN("sine", t)));
}

/* frexp: x = mantissa * 2^exponent with 0.5 <= |mantissa| < 1 (0, inf and
 * NaN keep x and exponent 0, as glibc's frexp). Done on the bits alone (x
 * arrives as an integer view and the mantissa leaves as one) so that XLA's
 * flushing of subnormal floats never touches them: a subnormal is
 * normalized with count_leading_zeros. attrs {float dtype}; results
 * mantissa bits (x's integer width) and the int32 exponent. */
void tpj_lower_frexp(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_misc_need(ctx, 1, "frexp") || ctx->nouts < 2) return;
  tpj_dtype_t fd = (tpj_dtype_t)ctx->attrs[0];
  int w = fd == TPJ_F64 ? 64 : fd == TPJ_F32 ? 32 : 16;
  int m = fd == TPJ_F64 ? 52 : fd == TPJ_F32 ? 23 : fd == TPJ_F16 ? 10 : 7;
  int64_t bias = fd == TPJ_F64 ? 1023 : fd == TPJ_F16 ? 15 : 127;
  tpj_hlo_value_t x = ctx->in[0];
  tpj_dtype_t it = x.dtype;
#define K(v) tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_convert(b, tpj_hlo_emit_const_i64(b, (int64_t)(v)), it), x.dims, x.ndim)
#define BIN(op, p, q) tpj_hlo_emit_binary(b, "stablehlo." op, p, q)
  uint64_t frac_mask = (((uint64_t)1) << m) - 1;
  uint64_t exp_mask = ((((uint64_t)1) << (w - 1 - m)) - 1);
  tpj_hlo_value_t frac = BIN("and", x, K(frac_mask));
  tpj_hlo_value_t e = BIN("and", BIN("shift_right_logical", x, K(m)), K(exp_mask));
  tpj_hlo_value_t sign = BIN("and", x, K(((uint64_t)1) << (w - 1)));
  tpj_hlo_value_t zero = K(0);
  /* normal: exponent e - (bias - 1), exponent field bias - 1 */
  tpj_hlo_value_t half_field = K((uint64_t)(bias - 1) << m);
  tpj_hlo_value_t man_n = BIN("or", sign, BIN("or", half_field, frac));
  tpj_hlo_value_t exp_n = SUB(e, K(bias - 1));
  /* subnormal: p = top set bit of frac; exponent p - m - (bias - 2) */
  tpj_hlo_value_t p = SUB(K(w - 1), UN("count_leading_zeros", frac));
  tpj_hlo_value_t sfrac = BIN("and", BIN("shift_left", frac, SUB(K(m), p)), K(frac_mask));
  tpj_hlo_value_t man_s = BIN("or", sign, BIN("or", half_field, sfrac));
  tpj_hlo_value_t exp_s = SUB(p, K(m + bias - 2));
  tpj_hlo_value_t is_sub = AND(CMP(e, zero, "EQ"), CMP(frac, zero, "NE"));
  tpj_hlo_value_t keep = OR(AND(CMP(e, zero, "EQ"), CMP(frac, zero, "EQ")), CMP(e, K(exp_mask), "EQ"));
  tpj_hlo_value_t man = SEL(keep, x, SEL(is_sub, man_s, man_n));
  tpj_hlo_value_t ex = SEL(keep, zero, SEL(is_sub, exp_s, exp_n));
#undef K
#undef BIN
  results[0] = tpj_hlo_emit_convert(b, man, ctx->outs[0].dtype);
  results[1] = tpj_hlo_emit_convert(b, ex, ctx->outs[1].dtype);
}

/* ---- descriptor rows (desc.h) --------------------------------------------- */

/* CPU's words for complex operands. */
static tpj_status_t tpj_check_signbit(const tpj_op_call_t* c) {
  if (tpj_dtype_is_complex(c->args[0].dtype))
    return tpj_status_make(TPJ_UNIMPLEMENTED, "signbit is not implemented for complex tensors.");
  return NULL;
}
static tpj_status_t tpj_check_fmax(const tpj_op_call_t* c) {
  if (tpj_dtype_is_complex(c->promoted))
    return tpj_status_make(TPJ_INVALID_ARGUMENT, "fmax not implemented for complex tensors.");
  return NULL;
}
static tpj_status_t tpj_check_fmin(const tpj_op_call_t* c) {
  if (tpj_dtype_is_complex(c->promoted))
    return tpj_status_make(TPJ_INVALID_ARGUMENT, "fmin not implemented for complex tensors.");
  return NULL;
}

#define TPJ_EW (TPJ_RULE_FORMS | TPJ_RULE_BROADCAST)
/* integers and bool promote to the default float */
#define TPJ_FLOAT_UNARY(fn) TPJ_ROW(fn, TPJ_EW | TPJ_RULE_FLOAT_RESULT, NULL, -1)
/* floor, ceil, trunc, round, frac: same dtype; CPU refuses bool (and frac
 * refuses integers) */
#define TPJ_ROUNDING(fn, rule, kernel) TPJ_ROW(fn, TPJ_EW | (rule), kernel, -1)
/* a binary op with Tensor, Scalar (and Scalar_Tensor: a Python number on the
 * left, no in-place form) overloads, all lowered as the Tensor one */
#define TPJ_BINARY_TS(fn, rules, kernel)                                   \
  {#fn ".Tensor", "aten::" #fn ".Tensor", TPJ_EW | (rules), kernel, -1, NULL}, \
  {#fn ".Scalar", "aten::" #fn ".Tensor", TPJ_EW | (rules), kernel, -1, NULL}
#define TPJ_BINARY_TST(fn, rules, kernel)                                       \
  TPJ_BINARY_TS(fn, rules, kernel),                                             \
  {#fn ".Scalar_Tensor", "aten::" #fn ".Tensor",                                \
   TPJ_RULE_OUT | TPJ_RULE_BROADCAST | (rules), kernel, -1, NULL}
#define TPJ_BITWISE (TPJ_RULE_EXACT_COMPUTE | TPJ_RULE_INTEGRAL_ONLY)
#define TPJ_MOD (TPJ_RULE_NO_BOOL | TPJ_RULE_NO_COMPLEX | TPJ_RULE_CHECK_DIVISOR)
/* isnan and friends compare in the input's dtype */
#define TPJ_TEST (TPJ_RULE_BROADCAST | TPJ_RULE_BOOL_RESULT | TPJ_RULE_COMPUTE_INPUT)
/* copysign and fmax/fmin compute in the promoted dtype exactly, signbit in
 * the input's dtype, the others in its accumulator */
#define TPJ_B TPJ_RULE_BROADCAST
#define TPJ_COPYSIGN \
  (TPJ_B | TPJ_RULE_INPLACE | TPJ_RULE_FLOAT_RESULT | TPJ_RULE_EXACT_COMPUTE | TPJ_RULE_NO_COMPLEX)
#define TPJ_XLOGY (TPJ_B | TPJ_RULE_FLOAT_RESULT | TPJ_RULE_NO_COMPLEX)

static const tpj_op_desc_t kPointwiseRows[] = {
    /* CPU's erf family has no complex kernels */
    TPJ_ROW(erf, TPJ_EW | TPJ_RULE_FLOAT_RESULT | TPJ_RULE_NO_COMPLEX, "erf_vml_cpu", -1),
    TPJ_ROW(erfc, TPJ_EW | TPJ_RULE_FLOAT_RESULT | TPJ_RULE_NO_COMPLEX, "erfc_vml_cpu", -1),
    TPJ_ROW(erfinv, TPJ_EW | TPJ_RULE_FLOAT_RESULT | TPJ_RULE_NO_COMPLEX, "erfinv_vml_cpu", -1),
    TPJ_FLOAT_UNARY(tan), TPJ_FLOAT_UNARY(asin), TPJ_FLOAT_UNARY(acos),
    TPJ_FLOAT_UNARY(atan), TPJ_FLOAT_UNARY(sinh), TPJ_FLOAT_UNARY(cosh),
    TPJ_FLOAT_UNARY(asinh), TPJ_FLOAT_UNARY(acosh), TPJ_FLOAT_UNARY(atanh),
    TPJ_FLOAT_UNARY(log2), TPJ_FLOAT_UNARY(log10), TPJ_FLOAT_UNARY(exp2),
    TPJ_FLOAT_UNARY(reciprocal),
    /* floor, ceil and trunc refuse complex by name, round and frac by kernel */
    TPJ_ROUNDING(floor, TPJ_RULE_NO_BOOL | TPJ_RULE_NO_COMPLEX_BY_NAME, "floor_vml_cpu"),
    TPJ_ROUNDING(ceil, TPJ_RULE_NO_BOOL | TPJ_RULE_NO_COMPLEX_BY_NAME, "ceil_vml_cpu"),
    TPJ_ROUNDING(trunc, TPJ_RULE_NO_BOOL | TPJ_RULE_NO_COMPLEX_BY_NAME, "trunc_vml_cpu"),
    TPJ_ROUNDING(round, TPJ_RULE_NO_BOOL | TPJ_RULE_NO_COMPLEX, "round_vml_cpu"),
    TPJ_ROUNDING(frac, TPJ_RULE_NO_INTEGRAL | TPJ_RULE_NO_COMPLEX, "frac_cpu"),
    {"round.decimals", "aten::round.decimals", TPJ_EW | TPJ_RULE_NO_INTEGRAL, "round_cpu", -1,
     NULL},
    TPJ_ROW(sgn, TPJ_EW | TPJ_RULE_EXACT_COMPUTE, NULL, -1),
    TPJ_ROW(bitwise_not, TPJ_EW | TPJ_BITWISE, "bitwise_not_cpu", -1),
    TPJ_ROW(logical_not, TPJ_EW | TPJ_RULE_BOOL_RESULT | TPJ_RULE_COMPUTE_INPUT, NULL, -1),
    TPJ_ROW(isnan, TPJ_TEST, NULL, -1),
    TPJ_ROW(isposinf, TPJ_TEST | TPJ_RULE_OUT, NULL, -1),
    TPJ_ROW(isneginf, TPJ_TEST | TPJ_RULE_OUT, NULL, -1),
    TPJ_BINARY_TST(bitwise_and, TPJ_BITWISE, "bitwise_and_cpu"),
    TPJ_BINARY_TST(bitwise_or, TPJ_BITWISE, "bitwise_or_cpu"),
    TPJ_BINARY_TST(bitwise_xor, TPJ_BITWISE, "bitwise_xor_cpu"),
    TPJ_BINARY_TST(remainder, TPJ_MOD, "remainder_cpu"),
    TPJ_BINARY_TS(fmod, TPJ_MOD, "fmod_cpu"),
    TPJ_ROW(logical_and, TPJ_EW | TPJ_RULE_BOOL_RESULT | TPJ_RULE_EXACT_COMPUTE, NULL, -1),
    TPJ_ROW(logical_or, TPJ_EW | TPJ_RULE_BOOL_RESULT | TPJ_RULE_EXACT_COMPUTE, NULL, -1),
    TPJ_ROW(logical_xor, TPJ_EW | TPJ_RULE_BOOL_RESULT | TPJ_RULE_EXACT_COMPUTE, NULL, -1),
    TPJ_ROW(atan2, TPJ_EW | TPJ_RULE_FLOAT_RESULT | TPJ_RULE_NO_COMPLEX, "atan2_cpu", -1),
    TPJ_ROW(hypot, TPJ_EW | TPJ_RULE_NO_INTEGRAL | TPJ_RULE_NO_COMPLEX, "hypot_cpu", -1),
    {"copysign.Tensor", "aten::copysign.Tensor", TPJ_COPYSIGN, "copysign_cpu", -1, NULL},
    {"copysign.Scalar", "aten::copysign.Tensor", TPJ_COPYSIGN, "copysign_cpu", -1, NULL},
    {"signbit", "aten::signbit", TPJ_B | TPJ_RULE_BOOL_RESULT | TPJ_RULE_COMPUTE_INPUT, NULL, -1,
     tpj_check_signbit},
    {"fmax", "aten::fmax", TPJ_B | TPJ_RULE_EXACT_COMPUTE, NULL, -1, tpj_check_fmax},
    {"fmin", "aten::fmin", TPJ_B | TPJ_RULE_EXACT_COMPUTE, NULL, -1, tpj_check_fmin},
    /* logaddexp of complex operands is CPU's kernel */
    TPJ_ROW(logaddexp, TPJ_B | TPJ_RULE_NO_INTEGRAL | TPJ_RULE_COMPLEX_ON_CPU, "logaddexp_cpu", -1),
    TPJ_ROW(logaddexp2, TPJ_B | TPJ_RULE_NO_INTEGRAL | TPJ_RULE_NO_COMPLEX, "logaddexp2_cpu", -1),
    {"xlogy.Tensor", "aten::xlogy.Tensor", TPJ_XLOGY | TPJ_RULE_INPLACE, "xlogy_cpu", -1, NULL},
    {"xlogy.Scalar_Other", "aten::xlogy.Tensor", TPJ_XLOGY | TPJ_RULE_INPLACE, "xlogy_cpu", -1,
     NULL},
    {"xlogy.Scalar_Self", "aten::xlogy.Tensor", TPJ_XLOGY, "xlogy_cpu", -1, NULL},
};
TPJ_DESC_LIST(tpj_pointwise_rows, kPointwiseRows);
