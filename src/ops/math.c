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
#include "ops/ops.h"
#include "ops/sugar.h"

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

/* operand i in dtype dt, broadcast to the output's dims */
static tpj_hlo_value_t tpj_math_in(tpj_op_ctx_t* ctx, int i, tpj_dtype_t dt) {
  const tpj_rt_shape_t* o = &ctx->outs[0];
  return tpj_ops_cast_to(ctx->b, ctx->in[i], dt, o->dims, o->ndim);
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

TPJ_MATH_UNARY(tpj_lower_erf, "chlo.erf")
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
