/* ops/special_igamma: the regularized incomplete gamma functions igamma (lower, P)
 * and igammac (upper, Q), following the algorithm of PyTorch's CPU kernel
 * (Cephes/SciPy's igam): boundary values first, Temme's uniform asymptotic
 * expansion where a is large and x near a, else the power series for P,
 * the series DLMF 8.7.3 or the continued fraction DLMF 8.9.2 for Q, and
 * 1 - the other where that one converges better. The series and the
 * continued fraction are stablehlo.while loops over the whole tensor in
 * which each element stops where CPU's loop breaks (it keeps its value while
 * the others go on); the asymptotic expansion's 25 terms are a loop whose
 * inner 25-step sum is unrolled. Every helper runs for every element (on
 * harmless inputs where its result is not taken) and the right one is
 * selected.
 *
 * attrs: [0] compute dtype (float32 for half inputs, as CPU computes),
 * [1] 0 for igamma, 1 for igammac. in[0] a, in[1] x. */
#include <math.h>

#include "hlo/sampling.h"
#include "hlo/special.h"
#include "ops/special_igamma_table.h"
#include "ops/ops.h"
#include "ops/sugar.h"

/* shorthand sugar.h does not provide */
#define NOT(x) tpj_hlo_emit_unary(b, "stablehlo.not", x)
#define U(op, x) tpj_hlo_emit_unary(b, "stablehlo." op, x)
#define C(x, v) tpj_ops_const_like(b, x, v)

static double tpj_ig_machep(tpj_dtype_t dt) {
  return dt == TPJ_F64 ? 1.11022302462515654042E-16 : 5.9604644775390625E-8;
}

/* any(v) over all dims: a 0-d bool */
static tpj_hlo_value_t tpj_ig_any(tpj_hlo_builder_t* b, tpj_hlo_value_t v) {
  int64_t dims[TPJ_MAX_DIMS];
  for (int i = 0; i < v.ndim; i++) dims[i] = i;
  return tpj_hlo_emit_reduce(b, v, tpj_hlo_emit_zero(b, TPJ_BOOL), dims, v.ndim, "stablehlo.or");
}

/* cond of every loop: state[0] is a 0-d i64 counter, state[n-1] the done
 * mask; go on while the counter is below the limit in *ctx and an element
 * is not done */
static void tpj_ig_cond(tpj_hlo_builder_t* b, const tpj_hlo_value_t* s, int n, void* ctx,
                        tpj_hlo_value_t* out) {
  int64_t limit = *(const int64_t*)ctx;
  tpj_hlo_value_t more = CMP(s[0], tpj_hlo_emit_const_i64(b, limit), "LT");
  out[0] = AND(more, tpj_ig_any(b, NOT(s[n - 1])));
}

static tpj_hlo_value_t tpj_ig_next(tpj_hlo_builder_t* b, tpj_hlo_value_t i) {
  return ADD(i, tpj_hlo_emit_const_i64(b, 1));
}

/* ratevl(a, num, 12, denom, 12) for the Lanczos sum (a > 0) */
static tpj_hlo_value_t tpj_ig_lanczos(tpj_hlo_builder_t* b, tpj_hlo_value_t a) {
  static const double num[13] = {
      0.006061842346248906525783753964555936883222, 0.5098416655656676188125178644804694509993,
      19.51992788247617482847860966235652136208,    449.9445569063168119446858607650988409623,
      6955.999602515376140356310115515198987526,    75999.29304014542649875303443598909137092,
      601859.6171681098786670226533699352302507,    3481712.15498064590882071018964774556468,
      14605578.08768506808414169982791359218571,    43338889.32467613834773723740590533316085,
      86363131.28813859145546927288977868422342,    103794043.1163445451906271053616070238554,
      56906521.91347156388090791033559122686859};
  static const double den[13] = {1.,        66.,       1925.,     32670.,     357423.,
                                 2637558.,  13339535., 45995730., 105258076., 150917976.,
                                 120543840., 39916800., 0.};
  tpj_hlo_value_t big = CMP(U("abs", a), C(a, 1.0), "GT");
  tpj_hlo_value_t y = SEL(big, DIV(C(a, 1.0), a), a);
  /* |a| > 1: Horner from the last coefficient in 1/a, else from the first */
  tpj_hlo_value_t n = SEL(big, C(a, num[12]), C(a, num[0]));
  tpj_hlo_value_t d = SEL(big, C(a, den[12]), C(a, den[0]));
  for (int i = 1; i <= 12; ++i) {
    n = ADD(MUL(n, y), SEL(big, C(a, num[12 - i]), C(a, num[i])));
    d = ADD(MUL(d, y), SEL(big, C(a, den[12 - i]), C(a, den[i])));
  }
  return DIV(n, d);
}

/* x^a e^-x / Gamma(a), CPU's _igam_helper_fac */
static tpj_hlo_value_t tpj_ig_fac(tpj_hlo_builder_t* b, tpj_hlo_value_t a, tpj_hlo_value_t x) {
  const double g = 6.024680040776729583740234375;
  double maxlog = a.dtype == TPJ_F64 ? 7.09782712893383996843E2 : 88.72283905206835;
  tpj_hlo_value_t ax = SUB(SUB(MUL(a, U("log", x)), x), tpj_hlo_emit_unary(b, "chlo.lgamma", a));
  tpj_hlo_value_t far_r = SEL(CMP(ax, C(a, -maxlog), "LT"), C(a, 0.0), U("exponential", ax));
  tpj_hlo_value_t fac = SUB(ADD(a, C(a, g)), C(a, 0.5));
  tpj_hlo_value_t res = DIV(U("sqrt", DIV(fac, C(a, 2.718281828459045))), tpj_ig_lanczos(b, a));
  tpj_hlo_value_t small = MUL(U("exponential", SUB(a, x)), tpj_hlo_emit_binary(b, "stablehlo.power", DIV(x, fac), a));
  tpj_hlo_value_t numfac = DIV(ADD(SUB(SUB(x, a), C(a, g)), C(a, 0.5)), fac);
  tpj_hlo_value_t large = U("exponential", ADD(MUL(a, SUB(U("log_plus_one", numfac), numfac)),
                                               DIV(MUL(x, C(a, 0.5 - g)), fac)));
  tpj_hlo_value_t both_small = AND(CMP(a, C(a, 200.0), "LT"), CMP(x, C(a, 200.0), "LT"));
  tpj_hlo_value_t near_r = MUL(res, SEL(both_small, small, large));
  tpj_hlo_value_t far = CMP(U("abs", SUB(a, x)), MUL(C(a, 0.4), U("abs", a)), "GT");
  return SEL(far, far_r, near_r);
}

/* ---- P by the power series (DLMF 8.11.4): state i, a, x, r, c, ans, done */
static void tpj_ig_series_body(tpj_hlo_builder_t* b, const tpj_hlo_value_t* s, int n, void* ctx,
                               tpj_hlo_value_t* out) {
  (void)n, (void)ctx;
  tpj_hlo_value_t a = s[1], x = s[2], act = NOT(s[6]);
  tpj_hlo_value_t r = ADD(s[3], C(a, 1.0));
  tpj_hlo_value_t c = MUL(s[4], DIV(x, r));
  tpj_hlo_value_t ans = ADD(s[5], c);
  out[0] = tpj_ig_next(b, s[0]);
  out[1] = a;
  out[2] = x;
  out[3] = SEL(act, r, s[3]);
  out[4] = SEL(act, c, s[4]);
  out[5] = SEL(act, ans, s[5]);
  out[6] = OR(s[6], CMP(c, MUL(C(a, tpj_ig_machep(a.dtype)), ans), "LE"));
}

static tpj_hlo_value_t tpj_ig_series(tpj_hlo_builder_t* b, tpj_hlo_value_t a, tpj_hlo_value_t x,
                                     tpj_hlo_value_t skip) {
  tpj_hlo_value_t ax = tpj_ig_fac(b, a, x);
  tpj_hlo_value_t zero_ax = CMP(ax, C(a, 0.0), "EQ");
  tpj_hlo_value_t init[7] = {tpj_hlo_emit_const_i64(b, 0), a, x, a, C(a, 1.0), C(a, 1.0),
                             OR(skip, zero_ax)};
  tpj_hlo_value_t fin[7];
  int64_t limit = 2000;
  tpj_hlo_emit_while(b, init, 7, tpj_ig_cond, tpj_ig_series_body, &limit, fin);
  return SEL(zero_ax, C(a, 0.0), DIV(MUL(fin[5], ax), a));
}

/* ---- Q by DLMF 8.7.3: state n, a, x, fac, sum, done */
static void tpj_ig_cseries_body(tpj_hlo_builder_t* b, const tpj_hlo_value_t* s, int n, void* ctx,
                                tpj_hlo_value_t* out) {
  (void)n, (void)ctx;
  tpj_hlo_value_t a = s[1], x = s[2], act = NOT(s[5]);
  tpj_hlo_value_t nf = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_convert(b, s[0], a.dtype), a.dims, a.ndim);
  tpj_hlo_value_t fac = MUL(s[3], DIV(U("negate", x), nf));
  tpj_hlo_value_t term = DIV(fac, ADD(a, nf));
  tpj_hlo_value_t sum = ADD(s[4], term);
  out[0] = tpj_ig_next(b, s[0]);
  out[1] = a;
  out[2] = x;
  out[3] = SEL(act, fac, s[3]);
  out[4] = SEL(act, sum, s[4]);
  out[5] = OR(s[5], CMP(U("abs", term), MUL(C(a, tpj_ig_machep(a.dtype)), U("abs", sum)), "LE"));
}

static tpj_hlo_value_t tpj_ig_cseries(tpj_hlo_builder_t* b, tpj_hlo_value_t a, tpj_hlo_value_t x,
                                      tpj_hlo_value_t skip) {
  tpj_hlo_value_t init[6] = {tpj_hlo_emit_const_i64(b, 1), a, x, C(a, 1.0), C(a, 0.0), skip};
  tpj_hlo_value_t fin[6];
  int64_t limit = 2000;
  tpj_hlo_emit_while(b, init, 6, tpj_ig_cond, tpj_ig_cseries_body, &limit, fin);
  tpj_hlo_value_t logx = U("log", x);
  tpj_hlo_value_t lg1 = tpj_hlo_emit_unary(b, "chlo.lgamma", ADD(C(a, 1.0), a));
  tpj_hlo_value_t term = U("negate", U("exponential_minus_one", SUB(MUL(a, logx), lg1)));
  tpj_hlo_value_t e = U("exponential", SUB(MUL(a, logx), tpj_hlo_emit_unary(b, "chlo.lgamma", a)));
  return SUB(term, MUL(e, fin[4]));
}

/* ---- Q by the continued fraction (DLMF 8.9.2): state i, yz (2, ...) = y, z,
 * pq (4, ...) = pkm1, pkm2, qkm1, qkm2, c, ans, done */
static tpj_hlo_value_t tpj_ig_row(tpj_hlo_builder_t* b, tpj_hlo_value_t v, int i) {
  int64_t start[TPJ_MAX_DIMS] = {0}, limit[TPJ_MAX_DIMS], step[TPJ_MAX_DIMS];
  for (int d = 0; d < v.ndim; ++d) {
    limit[d] = v.dims[d];
    step[d] = 1;
  }
  start[0] = i;
  limit[0] = i + 1;
  return tpj_hlo_emit_reshape(b, tpj_hlo_emit_slice(b, v, start, limit, step), v.dims + 1, v.ndim - 1);
}

static tpj_hlo_value_t tpj_ig_stack(tpj_hlo_builder_t* b, const tpj_hlo_value_t* xs, int n) {
  tpj_hlo_value_t r[4];
  int64_t dims[TPJ_MAX_DIMS];
  dims[0] = 1;
  for (int d = 0; d < xs[0].ndim; ++d) dims[d + 1] = xs[0].dims[d];
  for (int i = 0; i < n; ++i) r[i] = tpj_hlo_emit_reshape(b, xs[i], dims, xs[0].ndim + 1);
  return tpj_hlo_emit_concatenate(b, r, n, 0);
}

static void tpj_ig_cf_body(tpj_hlo_builder_t* b, const tpj_hlo_value_t* s, int n, void* ctx,
                           tpj_hlo_value_t* out) {
  (void)n, (void)ctx;
  tpj_hlo_value_t act = NOT(s[5]);
  tpj_hlo_value_t y0 = tpj_ig_row(b, s[1], 0), z0 = tpj_ig_row(b, s[1], 1);
  tpj_hlo_value_t pkm1 = tpj_ig_row(b, s[2], 0), pkm2 = tpj_ig_row(b, s[2], 1);
  tpj_hlo_value_t qkm1 = tpj_ig_row(b, s[2], 2), qkm2 = tpj_ig_row(b, s[2], 3);
  tpj_hlo_value_t c = ADD(s[3], C(s[3], 1.0));
  tpj_hlo_value_t y = ADD(y0, C(y0, 1.0));
  tpj_hlo_value_t z = ADD(z0, C(z0, 2.0));
  tpj_hlo_value_t yc = MUL(y, c);
  tpj_hlo_value_t pk = SUB(MUL(pkm1, z), MUL(pkm2, yc));
  tpj_hlo_value_t qk = SUB(MUL(qkm1, z), MUL(qkm2, yc));
  tpj_hlo_value_t nz = CMP(qk, C(qk, 0.0), "NE");
  tpj_hlo_value_t r = DIV(pk, qk);
  tpj_hlo_value_t t = SEL(nz, U("abs", DIV(SUB(s[4], r), r)), C(qk, 1.0));
  tpj_hlo_value_t ans = SEL(nz, r, s[4]);
  int big_f64 = c.dtype == TPJ_F64;
  tpj_hlo_value_t big = CMP(U("abs", pk), C(pk, big_f64 ? 4.503599627370496e15 : 16777216.), "GT");
  tpj_hlo_value_t inv = C(pk, big_f64 ? 2.22044604925031308085e-16 : 5.9604644775390625E-8);
  tpj_hlo_value_t np[4] = {pk, pkm1, qk, qkm1};
  for (int i = 0; i < 4; ++i) np[i] = SEL(big, MUL(np[i], inv), np[i]);
  tpj_hlo_value_t nyz[2] = {y, z};
  tpj_hlo_value_t yz = tpj_ig_stack(b, nyz, 2), pq = tpj_ig_stack(b, np, 4);
  static const int64_t kShift[TPJ_MAX_DIMS] = {1, 2, 3, 4, 5, 6, 7, 8};
  tpj_hlo_value_t act2 = tpj_hlo_emit_broadcast_in_dim(b, act, yz.dims, yz.ndim, kShift);
  tpj_hlo_value_t act4 = tpj_hlo_emit_broadcast_in_dim(b, act, pq.dims, pq.ndim, kShift);
  out[0] = tpj_ig_next(b, s[0]);
  out[1] = SEL(act2, yz, s[1]);
  out[2] = SEL(act4, pq, s[2]);
  out[3] = SEL(act, c, s[3]);
  out[4] = SEL(act, ans, s[4]);
  out[5] = OR(s[5], CMP(t, C(t, tpj_ig_machep(t.dtype)), "LE"));
}

static tpj_hlo_value_t tpj_ig_cf(tpj_hlo_builder_t* b, tpj_hlo_value_t a, tpj_hlo_value_t x,
                                 tpj_hlo_value_t skip) {
  tpj_hlo_value_t ax = tpj_ig_fac(b, a, x);
  tpj_hlo_value_t zero_ax = CMP(ax, C(a, 0.0), "EQ");
  tpj_hlo_value_t y = SUB(C(a, 1.0), a);
  tpj_hlo_value_t z = ADD(ADD(x, y), C(a, 1.0));
  tpj_hlo_value_t pkm1 = ADD(x, C(a, 1.0)), qkm1 = MUL(z, x);
  tpj_hlo_value_t yz0[2] = {y, z}, pq0[4] = {pkm1, C(a, 1.0), qkm1, x};
  tpj_hlo_value_t init[6] = {tpj_hlo_emit_const_i64(b, 0), tpj_ig_stack(b, yz0, 2),
                             tpj_ig_stack(b, pq0, 4), C(a, 0.0), DIV(pkm1, qkm1),
                             OR(skip, zero_ax)};
  tpj_hlo_value_t fin[6];
  int64_t limit = 2000;
  tpj_hlo_emit_while(b, init, 6, tpj_ig_cond, tpj_ig_cf_body, &limit, fin);
  return SEL(zero_ax, C(a, 0.0), MUL(fin[4], ax));
}

/* ---- Temme's expansion (DLMF 8.12.3/8.12.4): state k, a, eta, afac, sum,
 * absoldterm, done; the sum over n of d[k][n] eta^n is unrolled */
static void tpj_ig_asym_body(tpj_hlo_builder_t* b, const tpj_hlo_value_t* s, int n, void* ctx,
                             tpj_hlo_value_t* out) {
  (void)n, (void)ctx;
  tpj_hlo_value_t a = s[1], eta = s[2], act = NOT(s[6]);
  double machep = tpj_ig_machep(a.dtype);
  /* d[k][j] for this k: column j of the table gathered at k */
  tpj_hlo_value_t table[25];
  for (int j = 0; j < 25; ++j) {
    double col[25];
    float colf[25];
    for (int k = 0; k < 25; ++k) {
      col[k] = kIgamD[k][j];
      colf[k] = (float)kIgamD[k][j];
    }
    int64_t n25 = 25;
    tpj_hlo_value_t colv =
        tpj_hlo_emit_const_array(b, a.dtype, &n25, 1, a.dtype == TPJ_F64 ? (const void*)col : (const void*)colf);
    table[j] = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_gather_1d(b, colv, s[0]), a.dims, a.ndim);
  }
  tpj_hlo_value_t ck = table[0], pw = C(a, 1.0);
  tpj_hlo_value_t idone = CMP(pw, C(a, 0.0), "EQ"); /* all false */
  for (int j = 1; j < 25; ++j) {
    pw = MUL(eta, pw);
    tpj_hlo_value_t term = MUL(table[j], pw);
    tpj_hlo_value_t nck = ADD(ck, term);
    ck = SEL(idone, ck, nck);
    idone = OR(idone, CMP(U("abs", term), MUL(C(a, machep), U("abs", nck)), "LT"));
  }
  tpj_hlo_value_t term = MUL(ck, s[3]);
  tpj_hlo_value_t absterm = U("abs", term);
  tpj_hlo_value_t b1 = AND(act, CMP(absterm, s[5], "GT"));
  tpj_hlo_value_t add = AND(act, NOT(b1));
  tpj_hlo_value_t sum = SEL(add, ADD(s[4], term), s[4]);
  tpj_hlo_value_t b2 = AND(add, CMP(absterm, MUL(C(a, machep), U("abs", sum)), "LT"));
  out[0] = tpj_ig_next(b, s[0]);
  out[1] = a;
  out[2] = eta;
  out[3] = SEL(add, DIV(s[3], a), s[3]);
  out[4] = sum;
  out[5] = SEL(add, absterm, s[5]);
  out[6] = OR(s[6], OR(b1, b2));
}

static tpj_hlo_value_t tpj_ig_asym(tpj_hlo_builder_t* b, tpj_hlo_value_t a, tpj_hlo_value_t x,
                                   int igam, tpj_hlo_value_t skip) {
  double sgn = igam ? -1.0 : 1.0;
  tpj_hlo_value_t lambda = DIV(x, a);
  tpj_hlo_value_t sigma = DIV(SUB(x, a), a);
  tpj_hlo_value_t root = U("sqrt", MUL(C(a, -2.0), SUB(U("log_plus_one", sigma), sigma)));
  tpj_hlo_value_t eta = SEL(CMP(lambda, C(a, 1.0), "GT"), root,
                            SEL(CMP(lambda, C(a, 1.0), "LT"), U("negate", root), C(a, 0.0)));
  tpj_hlo_value_t res = MUL(C(a, 0.5), tpj_hlo_emit_unary(b, "chlo.erfc", MUL(MUL(C(a, sgn), eta), U("sqrt", DIV(a, C(a, 2.0))))));
  tpj_hlo_value_t init[7] = {tpj_hlo_emit_const_i64(b, 0), a, eta, C(a, 1.0), C(a, 0.0),
                             C(a, INFINITY), skip};
  tpj_hlo_value_t fin[7];
  int64_t limit = 25;
  tpj_hlo_emit_while(b, init, 7, tpj_ig_cond, tpj_ig_asym_body, &limit, fin);
  /* CPU divides by sqrt(2 pi a) with pi as a float */
  double pi_f = (double)(float)3.14159265358979323846;
  tpj_hlo_value_t e = U("exponential", MUL(MUL(MUL(C(a, -0.5), a), eta), eta));
  tpj_hlo_value_t corr = DIV(MUL(MUL(C(a, sgn), e), fin[4]), U("sqrt", MUL(C(a, 2 * pi_f), a)));
  return ADD(res, corr);
}

/* aten::igamma / aten::igammac */
void tpj_lower_igamma(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (ctx->nin < 2 || ctx->nattrs < 2 || (ctx->attrs[0] != TPJ_F32 && ctx->attrs[0] != TPJ_F64)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "igamma: bad operands"));
    return;
  }
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[0];
  int upper = (int)ctx->attrs[1];
  tpj_hlo_value_t a0 = tpj_ops_cast_to(b, ctx->in[0], cd, o->dims, o->ndim);
  tpj_hlo_value_t x0 = tpj_ops_cast_to(b, ctx->in[1], cd, o->dims, o->ndim);
  tpj_hlo_value_t zero = C(a0, 0.0), one = C(a0, 1.0), nan = C(a0, NAN), inf = C(a0, INFINITY);
  /* the boundary cases, in CPU's order; `fixed` marks them */
  tpj_hlo_value_t bad = OR(CMP(x0, zero, "LT"), CMP(a0, zero, "LT"));
  tpj_hlo_value_t a_zero = CMP(a0, zero, "EQ"), x_zero = CMP(x0, zero, "EQ");
  tpj_hlo_value_t a_inf = CMP(a0, inf, "EQ"), x_inf = CMP(x0, inf, "EQ");
  tpj_hlo_value_t p_val = upper ? zero : one, q_val = upper ? one : zero;
  tpj_hlo_value_t nan_in = OR(CMP(a0, a0, "NE"), CMP(x0, x0, "NE"));
  /* lowest priority first: a NaN (which CPU's algorithm carries through) */
  tpj_hlo_value_t fixed_v = nan;
  fixed_v = SEL(x_inf, p_val, fixed_v);
  fixed_v = SEL(a_inf, SEL(x_inf, nan, q_val), fixed_v);
  fixed_v = SEL(x_zero, q_val, fixed_v);
  fixed_v = SEL(a_zero, SEL(CMP(x0, zero, "GT"), p_val, nan), fixed_v);
  fixed_v = SEL(bad, nan, fixed_v);
  tpj_hlo_value_t fixed = OR(OR(OR(bad, a_zero), OR(x_zero, a_inf)), OR(x_inf, nan_in));
  /* ordinary inputs everywhere else, so no helper loops on a boundary */
  tpj_hlo_value_t a = SEL(fixed, one, a0), x = SEL(fixed, one, x0);
  tpj_hlo_value_t r = DIV(U("abs", SUB(x, a)), a);
  tpj_hlo_value_t asym =
      OR(AND(AND(CMP(a, C(a, 20.0), "GT"), CMP(a, C(a, 200.0), "LT")), CMP(r, C(a, 0.3), "LT")),
         AND(CMP(a, C(a, 200.0), "GT"), CMP(r, DIV(C(a, 4.5), U("sqrt", a)), "LT")));
  asym = AND(asym, NOT(fixed));
  tpj_hlo_value_t rest = AND(NOT(asym), NOT(fixed));
  /* which helper computes what (before the 1 - flip) */
  tpj_hlo_value_t use_series, use_cseries, use_cf, flip;
  if (!upper) {
    tpj_hlo_value_t via_q = AND(CMP(x, one, "GT"), CMP(x, a, "GT"));
    tpj_hlo_value_t cf = AND(via_q, CMP(x, C(a, 1.1), "GT"));
    use_cf = AND(rest, cf);
    use_cseries = AND(rest, AND(via_q, NOT(cf)));
    use_series = AND(rest, NOT(via_q));
    flip = via_q;
  } else {
    tpj_hlo_value_t hi = CMP(x, C(a, 1.1), "GT");
    tpj_hlo_value_t lo = CMP(x, C(a, 0.5), "LE");
    tpj_hlo_value_t p_hi = CMP(x, a, "LT");
    tpj_hlo_value_t p_lo = CMP(DIV(C(a, -0.4), U("log", x)), a, "LT");
    tpj_hlo_value_t p_mid = CMP(MUL(x, C(a, 1.1)), a, "LT");
    tpj_hlo_value_t via_p = SEL(hi, p_hi, SEL(lo, p_lo, p_mid));
    use_series = AND(rest, via_p);
    use_cf = AND(rest, AND(hi, NOT(via_p)));
    use_cseries = AND(rest, AND(NOT(hi), NOT(via_p)));
    flip = via_p;
  }
  tpj_hlo_value_t v_series = tpj_ig_series(b, a, x, NOT(use_series));
  tpj_hlo_value_t v_cseries = tpj_ig_cseries(b, a, x, NOT(use_cseries));
  tpj_hlo_value_t v_cf = tpj_ig_cf(b, a, x, NOT(use_cf));
  tpj_hlo_value_t v_asym = tpj_ig_asym(b, a, x, !upper, NOT(asym));
  tpj_hlo_value_t v = SEL(use_series, v_series, SEL(use_cf, v_cf, v_cseries));
  v = SEL(flip, SUB(one, v), v);
  v = SEL(asym, v_asym, v);
  v = SEL(fixed, fixed_v, v);
  results[0] = tpj_hlo_emit_convert(b, v, o->dtype);
}
