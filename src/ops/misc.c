/* ops/misc: pointwise stragglers — copysign, signbit, fmax/fmin, heaviside,
 * logaddexp/logaddexp2, xlogy, angle, complex and polar — each written the
 * way PyTorch's CPU kernel computes it (NaN and infinity cases included).
 *
 * Attribute layout: attrs[0] is the dtype the computation runs in (chosen
 * by the glue, csrc/misc.cpp, from PyTorch's promotion; float32 for half
 * inputs where CPU's kernel computes in float). Operands are converted to
 * it and broadcast to the output's dims; the result is converted to the
 * output's dtype. */
#include "ops/ops.h"
#include "ops/sugar.h"

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

/* _cummax_helper / _cummin_helper: attrs {dim (wrapped), is_max}; results
 * values and int64 indices. CPU's rule, element by element along dim: x
 * replaces the running value when x is NaN, or when neither is NaN and
 * x >= value (x <= value for cummin), so ties and NaNs take the later index.
 * That is a maximum under a total order (NaN on top, then the index), hence
 * associative: a Hillis-Steele scan of log2(n) shifted combines, the shift
 * padding with an identity that always loses (the dtype's lowest value for
 * cummax, index -1). Bool values scan as uint8. */
static tpj_hlo_value_t tpj_misc_shift(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int dim, int64_t k,
                                      tpj_hlo_value_t fill) {
  int64_t start[TPJ_MAX_DIMS] = {0}, limit[TPJ_MAX_DIMS], strides[TPJ_MAX_DIMS];
  int64_t lo[TPJ_MAX_DIMS] = {0}, hi[TPJ_MAX_DIMS] = {0};
  for (int i = 0; i < x.ndim; i++) {
    limit[i] = x.dims[i];
    strides[i] = 1;
  }
  limit[dim] = x.dims[dim] - k;
  lo[dim] = k;
  return tpj_hlo_emit_pad(b, tpj_hlo_emit_slice(b, x, start, limit, strides), fill, lo, hi);
}

void tpj_lower_cummaxmin(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (ctx->nin < 1 || ctx->nattrs < 2 || ctx->nouts < 2) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "cummax/cummin: bad operands"));
    return;
  }
  int dim = (int)ctx->attrs[0], is_max = ctx->attrs[1] != 0;
  tpj_hlo_value_t v = ctx->in[0];
  if (v.dtype == TPJ_BOOL) v = tpj_hlo_emit_convert(b, v, TPJ_U8);
  int is_float = tpj_dtype_is_float(v.dtype);
  tpj_hlo_value_t idx = tpj_hlo_emit_iota(b, TPJ_I64, v.dims, v.ndim, dim);
  tpj_hlo_value_t vfill = tpj_hlo_emit_extreme(b, v.dtype, !is_max);
  tpj_hlo_value_t ifill = tpj_hlo_emit_const_i64(b, -1);
  int64_t n = v.ndim > 0 ? v.dims[dim] : 1;
  for (int64_t k = 1; k < n; k *= 2) {
    tpj_hlo_value_t pv = tpj_misc_shift(b, v, dim, k, vfill);  /* the earlier partial */
    tpj_hlo_value_t pi = tpj_misc_shift(b, idx, dim, k, ifill);
    tpj_hlo_value_t later = CMP(v, pv, is_max ? "GE" : "LE");
    if (is_float) later = OR(ISNAN(v), AND(tpj_hlo_emit_compare(b, pv, pv, "EQ"), later));
    v = SEL(later, v, pv);
    idx = SEL(later, idx, pi);
  }
  results[0] = tpj_hlo_emit_convert(b, v, ctx->outs[0].dtype);
  results[1] = tpj_hlo_emit_convert(b, idx, ctx->outs[1].dtype);
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
