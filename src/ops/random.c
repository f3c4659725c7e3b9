/* ops/random: random ops from stablehlo.rng_bit_generator. Every op takes a
 * runtime key (int64[2]: the generator's seed and counter offset, which the
 * host advances per draw), so a new draw reuses the compiled program; bits
 * become values here. Operand layout: tensor inputs first, then the key,
 * then 0-d runtime scalars in the compute dtype (float32, or float64 for
 * float64 results; half results are computed in float32, as on CPU). */
#include <math.h>

#include "hlo/random.h"
#include "hlo/sort.h"
#include "ops/attrs.h"
#include "ops/ops.h"

static int tpj_rand_need(tpj_op_ctx_t* ctx, int nin, int nattrs, int nouts, const char* op) {
  if (ctx->nin >= nin && ctx->nattrs >= nattrs && ctx->nouts >= nouts) return 1;
  tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "%s: bad operands", op));
  return 0;
}

static tpj_dtype_t tpj_rand_compute(tpj_dtype_t dt) { return dt == TPJ_F64 ? TPJ_F64 : TPJ_F32; }

/* Mantissa digits of a float dtype (std::numeric_limits<T>::digits), which
 * is how many random bits CPU's uniform uses per value. */
static int tpj_rand_digits(tpj_dtype_t dt) {
  switch (dt) {
    case TPJ_F16: return 11;
    case TPJ_BF16: return 8;
    case TPJ_F64: return 53;
    default: return 24;
  }
}

static tpj_hlo_value_t tpj_rand_fill(tpj_hlo_builder_t* b, tpj_dtype_t dt, double v,
                                     const int64_t* dims, int ndim) {
  return tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_f64(b, dt, v), dims, ndim);
}

static tpj_hlo_value_t tpj_rand_bin(tpj_hlo_builder_t* b, const char* op, tpj_hlo_value_t x,
                                    tpj_hlo_value_t y) {
  return tpj_hlo_emit_binary(b, op, x, y);
}

/* n uniform values of cdt (float32 or float64), 1-D: k / 2^digits for a
 * random k of `digits` bits, in [0, 1); with `open`, (k + 1/2) / 2^digits,
 * in (0, 1). */
static tpj_hlo_value_t tpj_rand_uniform(tpj_hlo_builder_t* b, tpj_hlo_value_t key, tpj_dtype_t cdt,
                                        int digits, int open, int64_t n) {
  tpj_dtype_t bt = cdt == TPJ_F64 ? TPJ_I64 : TPJ_I32;
  int width = bt == TPJ_I64 ? 64 : 32;
  tpj_hlo_value_t bits = tpj_hlo_emit_rng_bits(b, key, bt, &n, 1);
  tpj_hlo_value_t k = tpj_rand_bin(b, "stablehlo.shift_right_logical", bits,
                                   tpj_rand_fill(b, bt, width - digits, &n, 1));
  tpj_hlo_value_t f = tpj_hlo_emit_convert(b, k, cdt);
  if (open) f = tpj_rand_bin(b, "stablehlo.add", f, tpj_rand_fill(b, cdt, 0.5, &n, 1));
  return tpj_rand_bin(b, "stablehlo.multiply", f, tpj_rand_fill(b, cdt, ldexp(1.0, -digits), &n, 1));
}

static int64_t tpj_rand_numel(const tpj_rt_shape_t* s) {
  int64_t n = 1;
  for (int i = 0; i < s->ndim; ++i) n *= s->dims[i];
  return n;
}

/* in[0] key, in[1] from, in[2] to (0-d, the result's dtype):
 * from + u * (to - from) with u from the dtype's digits, as CPU does. */
void tpj_lower_uniform(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_rand_need(ctx, 3, 0, 1, "uniform_")) return;
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_dtype_t cdt = tpj_rand_compute(o->dtype);
  int64_t n = tpj_rand_numel(o);
  tpj_hlo_value_t u = tpj_rand_uniform(b, ctx->in[0], cdt, tpj_rand_digits(o->dtype), 0, n);
  tpj_hlo_value_t from = tpj_hlo_emit_convert(b, ctx->in[1], cdt);
  tpj_hlo_value_t to = tpj_hlo_emit_convert(b, ctx->in[2], cdt);
  tpj_hlo_value_t range = tpj_rand_bin(b, "stablehlo.subtract", to, from);
  tpj_hlo_value_t r = tpj_rand_bin(b, "stablehlo.add",
                                   tpj_rand_bin(b, "stablehlo.multiply", u,
                                                tpj_hlo_emit_broadcast_to(b, range, &n, 1)),
                                   tpj_hlo_emit_broadcast_to(b, from, &n, 1));
  r = tpj_hlo_emit_reshape(b, r, o->dims, o->ndim);
  results[0] = tpj_hlo_emit_convert(b, r, o->dtype);
}

/* in[0] key, in[1] mean, in[2] std (0-d, or tensors that broadcast to the
 * result): mean + std * z, z standard normal by Box-Muller from two
 * uniforms per value. */
void tpj_lower_normal(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_rand_need(ctx, 3, 0, 1, "normal")) return;
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_dtype_t cdt = tpj_rand_compute(o->dtype);
  int64_t n = tpj_rand_numel(o);
  int64_t n2 = 2 * n;
  tpj_hlo_value_t u = tpj_rand_uniform(b, ctx->in[0], cdt, cdt == TPJ_F64 ? 53 : 24, 0, n2);
  int64_t s0 = 0, s1 = n, s2 = n2, one = 1;
  tpj_hlo_value_t ua = tpj_hlo_emit_slice(b, u, &s0, &s1, &one);
  tpj_hlo_value_t ub = tpj_hlo_emit_slice(b, u, &s1, &s2, &one);
  /* 1 - ua is in (0, 1], so the log is finite */
  tpj_hlo_value_t u1 = tpj_rand_bin(b, "stablehlo.subtract", tpj_rand_fill(b, cdt, 1.0, &n, 1), ua);
  tpj_hlo_value_t radius = tpj_hlo_emit_unary(
      b, "stablehlo.sqrt",
      tpj_rand_bin(b, "stablehlo.multiply", tpj_rand_fill(b, cdt, -2.0, &n, 1),
                   tpj_hlo_emit_unary(b, "stablehlo.log", u1)));
  tpj_hlo_value_t angle =
      tpj_rand_bin(b, "stablehlo.multiply", tpj_rand_fill(b, cdt, 2.0 * M_PI, &n, 1), ub);
  tpj_hlo_value_t z = tpj_rand_bin(b, "stablehlo.multiply", radius,
                                   tpj_hlo_emit_unary(b, "stablehlo.cosine", angle));
  z = tpj_hlo_emit_reshape(b, z, o->dims, o->ndim);
  tpj_hlo_value_t mean = tpj_ops_cast_to(b, ctx->in[1], cdt, o->dims, o->ndim);
  tpj_hlo_value_t sd = tpj_ops_cast_to(b, ctx->in[2], cdt, o->dims, o->ndim);
  tpj_hlo_value_t r = tpj_rand_bin(b, "stablehlo.add", mean,
                                   tpj_rand_bin(b, "stablehlo.multiply", sd, z));
  results[0] = tpj_hlo_emit_convert(b, r, o->dtype);
}

/* u < p as the result's dtype; p (compute dtype) has the result's dims. */
static tpj_hlo_value_t tpj_rand_below(tpj_hlo_builder_t* b, tpj_hlo_value_t key, tpj_hlo_value_t p,
                                      const tpj_rt_shape_t* o) {
  int64_t n = tpj_rand_numel(o);
  tpj_hlo_value_t u = tpj_rand_uniform(b, key, p.dtype, p.dtype == TPJ_F64 ? 53 : 24, 0, n);
  u = tpj_hlo_emit_reshape(b, u, o->dims, o->ndim);
  return tpj_hlo_emit_convert(b, tpj_hlo_emit_compare(b, u, p, "LT"), o->dtype);
}

/* in[0] key, in[1] p (0-d, compute dtype) */
void tpj_lower_bernoulli_float(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_rand_need(ctx, 2, 0, 1, "bernoulli_")) return;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t p = tpj_hlo_emit_broadcast_to(ctx->b, ctx->in[1], o->dims, o->ndim);
  results[0] = tpj_rand_below(ctx->b, ctx->in[0], p, o);
}

/* in[0] p (a float tensor that broadcasts to the result), in[1] key */
void tpj_lower_bernoulli_tensor(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_rand_need(ctx, 2, 0, 1, "bernoulli_")) return;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_dtype_t cdt = tpj_rand_compute(ctx->in[0].dtype);
  tpj_hlo_value_t p = tpj_ops_cast_to(ctx->b, ctx->in[0], cdt, o->dims, o->ndim);
  results[0] = tpj_rand_below(ctx->b, ctx->in[1], p, o);
}

/* in[0] key, in[1] from, in[2] range (0-d int64; range is unsigned, 0
 * meaning 2^64); attrs tpj_attrs_random_t. The result is from + the
 * drawn value, converted to the result's dtype. */
void tpj_lower_random(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_rand_need(ctx, 3, TPJ_ATTRS_WORDS(tpj_attrs_random_t), 1, "random_")) return;
  const tpj_attrs_random_t* at = TPJ_ATTRS(ctx, tpj_attrs_random_t);
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  int64_t n = tpj_rand_numel(o);
  tpj_hlo_value_t bits = tpj_hlo_emit_rng_bits(b, ctx->in[0], TPJ_I64, &n, 1);
  tpj_hlo_value_t from = tpj_hlo_emit_broadcast_to(b, ctx->in[1], &n, 1);
  tpj_hlo_value_t range = tpj_hlo_emit_broadcast_to(b, ctx->in[2], &n, 1);
  tpj_hlo_value_t v;
  if (at->mode == 2) {
    /* unsigned bits < range, by flipping the sign bits for a signed compare */
    tpj_hlo_value_t sign = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_extreme(b, TPJ_I64, 0), &n, 1);
    tpj_hlo_value_t lt = tpj_hlo_emit_compare(b, tpj_rand_bin(b, "stablehlo.xor", bits, sign),
                                              tpj_rand_bin(b, "stablehlo.xor", range, sign), "LT");
    v = tpj_hlo_emit_select(b, lt, bits, tpj_rand_bin(b, "stablehlo.subtract", bits, range));
  } else {
    v = tpj_rand_bin(b, "stablehlo.shift_right_logical", bits,
                     tpj_rand_fill(b, TPJ_I64, at->mode == 0 ? 32 : 1, &n, 1));
    v = tpj_rand_bin(b, "stablehlo.remainder", v, range);
  }
  v = tpj_rand_bin(b, "stablehlo.add", v, from);
  v = tpj_hlo_emit_reshape(b, v, o->dims, o->ndim);
  results[0] = tpj_hlo_emit_convert(b, v, o->dtype);
}

/* in[0] key, in[1] lambda (0-d, compute dtype): -log(u) / lambda with u in
 * (0, 1), so the result is positive and finite. */
void tpj_lower_exponential(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_rand_need(ctx, 2, 0, 1, "exponential_")) return;
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_dtype_t cdt = tpj_rand_compute(o->dtype);
  int64_t n = tpj_rand_numel(o);
  /* one digit less than the mantissa, so (k + 1/2) / 2^digits stays below 1 */
  tpj_hlo_value_t u = tpj_rand_uniform(b, ctx->in[0], cdt, cdt == TPJ_F64 ? 52 : 23, 1, n);
  tpj_hlo_value_t e = tpj_hlo_emit_unary(b, "stablehlo.negate", tpj_hlo_emit_unary(b, "stablehlo.log", u));
  tpj_hlo_value_t lambd = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_convert(b, ctx->in[1], cdt), &n, 1);
  tpj_hlo_value_t r = tpj_hlo_emit_reshape(b, tpj_rand_bin(b, "stablehlo.divide", e, lambd),
                                           o->dims, o->ndim);
  results[0] = tpj_hlo_emit_convert(b, r, o->dtype);
}

/* in[0] input, in[1] key, in[2] keep probability 1 - p, in[3] scale (0-d,
 * compute dtype; the host computes both in double, as CPU does); attrs
 * tpj_attrs_compute_t. outs are (input * mask * scale, bool mask). */
void tpj_lower_native_dropout(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_rand_need(ctx, 4, TPJ_ATTRS_WORDS(tpj_attrs_compute_t), 2, "native_dropout")) return;
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_dtype_t cdt = (tpj_dtype_t)TPJ_ATTRS(ctx, tpj_attrs_compute_t)->compute;
  int64_t n = tpj_rand_numel(o);
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], cdt);
  tpj_hlo_value_t keep_p = tpj_ops_cast_to(b, ctx->in[2], cdt, o->dims, o->ndim);
  tpj_hlo_value_t scale = tpj_ops_cast_to(b, ctx->in[3], cdt, o->dims, o->ndim);
  tpj_hlo_value_t u = tpj_rand_uniform(b, ctx->in[1], cdt, cdt == TPJ_F64 ? 53 : 24, 0, n);
  u = tpj_hlo_emit_reshape(b, u, o->dims, o->ndim);
  tpj_hlo_value_t keep = tpj_hlo_emit_compare(b, u, keep_p, "LT");
  /* CPU computes x * mask * scale, so a dropped inf or NaN gives NaN. XLA
   * rewrites a multiply by a converted bool into a select, so say x * 0
   * explicitly (it does not fold x * 0 for floats). */
  tpj_hlo_value_t dropped = tpj_rand_bin(b, "stablehlo.multiply", x,
                                         tpj_rand_fill(b, cdt, 0.0, o->dims, o->ndim));
  tpj_hlo_value_t r = tpj_hlo_emit_select(b, keep, tpj_rand_bin(b, "stablehlo.multiply", x, scale),
                                          dropped);
  results[0] = tpj_hlo_emit_convert(b, r, o->dtype);
  results[1] = tpj_hlo_emit_convert(b, keep, ctx->outs[1].dtype);
}

/* in[0] grad, in[1] mask, in[2] scale (0-d, compute dtype); attrs
 * tpj_attrs_compute_t: grad * mask * scale. */
void tpj_lower_native_dropout_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_rand_need(ctx, 3, TPJ_ATTRS_WORDS(tpj_attrs_compute_t), 1, "native_dropout_backward"))
    return;
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_dtype_t cdt = (tpj_dtype_t)TPJ_ATTRS(ctx, tpj_attrs_compute_t)->compute;
  tpj_hlo_value_t g = tpj_ops_cast_to(b, ctx->in[0], cdt, o->dims, o->ndim);
  tpj_hlo_value_t m = tpj_ops_cast_to(b, ctx->in[1], cdt, o->dims, o->ndim);
  tpj_hlo_value_t s = tpj_ops_cast_to(b, ctx->in[2], cdt, o->dims, o->ndim);
  tpj_hlo_value_t r = tpj_rand_bin(b, "stablehlo.multiply",
                                   tpj_rand_bin(b, "stablehlo.multiply", g, m), s);
  results[0] = tpj_hlo_emit_convert(b, r, o->dtype);
}

/* in[0] key; the result is 1-D of n: iota(n) sorted by random 64-bit keys
 * (ties, at odds of about n^2 / 2^65, keep iota order). */
void tpj_lower_randperm(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_rand_need(ctx, 1, 0, 1, "randperm")) return;
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  int64_t n = tpj_rand_numel(o);
  tpj_hlo_value_t keys = tpj_hlo_emit_rng_bits(b, ctx->in[0], TPJ_I64, &n, 1);
  tpj_hlo_value_t idx = tpj_hlo_emit_iota(b, TPJ_I64, &n, 1, 0);
  tpj_hlo_value_t r = tpj_hlo_emit_sort_by_key(b, keys, idx, 0);
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_reshape(b, r, o->dims, o->ndim), o->dtype);
}

/* in[0] probabilities ([C] or [R, C], float; the host has checked them:
 * finite, non-negative, each row's sum positive), in[1] key; attrs
 * tpj_attrs_multinomial_t. The result is int64 [n] or [R, n].
 * Without replacement (and for one sample either way) it is CPU's
 * exponential trick: the n largest of p / E with E ~ Exp(1) per category.
 * With replacement each sample is the number of categories whose normalised
 * cumulative probability is <= u, for u uniform in [0, 1): the category u
 * falls in (the cdf ends at exactly 1, so u never passes the last non-zero
 * category). */
void tpj_lower_multinomial(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_rand_need(ctx, 2, TPJ_ATTRS_WORDS(tpj_attrs_multinomial_t), 1, "multinomial")) return;
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t p = ctx->in[0];
  tpj_dtype_t cdt = tpj_rand_compute(p.dtype);
  int64_t c = p.dims[p.ndim - 1], rows = p.ndim == 2 ? p.dims[0] : 1;
  int64_t n = o->dims[o->ndim - 1];
  int64_t rc[2] = {rows, c};
  p = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, p, cdt), rc, 2);
  int digits = cdt == TPJ_F64 ? 52 : 23;
  tpj_hlo_value_t r;
  if (!TPJ_ATTRS(ctx, tpj_attrs_multinomial_t)->replacement || n == 1) {
    tpj_hlo_value_t u = tpj_rand_uniform(b, ctx->in[1], cdt, digits, 1, rows * c);
    tpj_hlo_value_t e = tpj_hlo_emit_unary(b, "stablehlo.negate",
                                           tpj_hlo_emit_unary(b, "stablehlo.log", u));
    tpj_hlo_value_t keys =
        tpj_rand_bin(b, "stablehlo.divide", p, tpj_hlo_emit_reshape(b, e, rc, 2));
    tpj_hlo_value_t xs[2] = {keys, tpj_hlo_emit_iota(b, TPJ_I64, rc, 2, 1)};
    tpj_hlo_value_t sorted[2];
    tpj_hlo_emit_sort(b, xs, 2, 1, 1, sorted);
    int64_t start[2] = {0, 0}, limit[2] = {rows, n}, stride[2] = {1, 1};
    r = tpj_hlo_emit_slice(b, sorted[1], start, limit, stride);
  } else {
    tpj_hlo_value_t cdf = tpj_hlo_emit_cumulative(b, p, 1, TPJ_HLO_SCAN_ADD, 0);
    int64_t lim[2] = {rows, c}, st[2] = {0, c - 1}, one[2] = {1, 1};
    tpj_hlo_value_t total = tpj_hlo_emit_slice(b, cdf, st, lim, one);
    int64_t keep_rows[2] = {0, 1};
    cdf = tpj_rand_bin(b, "stablehlo.divide", cdf,
                       tpj_hlo_emit_broadcast_in_dim(b, total, rc, 2, keep_rows));
    int64_t rnc[3] = {rows, n, c}, cdf_dims[2] = {0, 2}, u_dims[2] = {0, 1}, rn[2] = {rows, n};
    tpj_hlo_value_t u = tpj_rand_uniform(b, ctx->in[1], cdt, digits + 1, 0, rows * n);
    u = tpj_hlo_emit_reshape(b, u, rn, 2);
    tpj_hlo_value_t below = tpj_hlo_emit_compare(
        b, tpj_hlo_emit_broadcast_in_dim(b, cdf, rnc, 3, cdf_dims),
        tpj_hlo_emit_broadcast_in_dim(b, u, rnc, 3, u_dims), "LE");
    int64_t last = 2;
    r = tpj_hlo_emit_reduce(b, tpj_hlo_emit_convert(b, below, TPJ_I64),
                            tpj_hlo_emit_zero(b, TPJ_I64), &last, 1, "stablehlo.add");
  }
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_reshape(b, r, o->dims, o->ndim), o->dtype);
}
