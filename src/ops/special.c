/* ops/special: special functions (the gamma family, Hurwitz zeta, nextafter,
 * xlog1py, entr, the modified Bessel functions i0/i0e/i1/i1e, sinc, logit);
 * igamma/igammac are in ops/special_igamma.c, the orthogonal polynomials in
 * ops/special_orthopoly.c.
 *
 * Each lowering follows the algorithm of PyTorch's CPU kernel (Cephes-style
 * series and Chebyshev expansions) and applies the same special cases (poles,
 * negative integers, infinities), so results agree with CPU to rounding.
 * attrs[0] is the dtype the computation runs in (float32 for half inputs, as
 * CPU's kernels compute); polygamma has attrs[1] = n. Operands are converted
 * to the compute dtype and broadcast to the output's dims; the result is
 * converted to the output's dtype. */
#include <math.h>

#include "ops/desc.h"
#include "ops/lower_util.h"
#include "ops/ops.h"
#include "ops/sugar.h"

typedef struct {
  tpj_hlo_builder_t* b;
  tpj_dtype_t cd;              /* compute dtype */
  const tpj_rt_shape_t* o;     /* the output */
} tpj_sp_t;

static int tpj_sp_begin(tpj_op_ctx_t* ctx, int nin, int nattrs, const char* op, tpj_sp_t* s) {
  s->b = ctx->b;
  s->o = &ctx->outs[0];
  if (ctx->nin < nin || ctx->nattrs < nattrs || ctx->nouts < 1 || ctx->attrs[0] <= 0 ||
      ctx->attrs[0] >= TPJ_DTYPE_COUNT) {
    tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "%s: bad operands", op));
    return 0;
  }
  s->cd = (tpj_dtype_t)ctx->attrs[0];
  return 1;
}

/* operand i in the compute dtype at the output's dims */
static tpj_hlo_value_t tpj_sp_in(tpj_op_ctx_t* ctx, const tpj_sp_t* s, int i) {
  return tpj_ops_cast_to(s->b, ctx->in[i], s->cd, s->o->dims, s->o->ndim);
}

/* the constant v in x's dtype and dims */
static tpj_hlo_value_t tpj_sp_c(tpj_hlo_builder_t* b, tpj_hlo_value_t x, double v) {
  return tpj_ops_const_like(b, x, v);
}

#define U(op, x) tpj_hlo_emit_unary(b, op, x)
#define C(x, v) tpj_sp_c(b, x, v)

static const double kPi = 3.14159265358979323846;

static tpj_hlo_value_t tpj_sp_isnan(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  return CMP(x, x, "NE");
}

/* x == trunc(x) for finite x (false for inf and NaN) */
static tpj_hlo_value_t tpj_sp_is_int(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  tpj_hlo_value_t t = SEL(CMP(x, C(x, 0.0), "LT"), U("stablehlo.ceil", x), U("stablehlo.floor", x));
  return AND(CMP(x, t, "EQ"), tpj_hlo_emit_unary_to(b, "stablehlo.is_finite", x, TPJ_BOOL));
}

static tpj_hlo_value_t tpj_sp_trunc(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  return SEL(CMP(x, C(x, 0.0), "LT"), U("stablehlo.ceil", x), U("stablehlo.floor", x));
}

/* ---- the gamma family ---- */

void tpj_lower_lgamma(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_sp_t s;
  if (!tpj_sp_begin(ctx, 1, 1, "lgamma", &s)) return;
  tpj_hlo_builder_t* b = s.b;
  /* in float64: XLA's float32 lgamma is off by ~5e-7 absolute near its
   * zeros at 1 and 2, where CPU's is exact */
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, tpj_sp_in(ctx, &s, 0), TPJ_F64);
  /* lgamma is +inf at the poles (0 and the negative integers) and at
   * +-inf, as C's lgamma */
  tpj_hlo_value_t inf = C(x, HUGE_VAL);
  tpj_hlo_value_t pole = AND(tpj_sp_is_int(b, x), CMP(x, C(x, 0.0), "LE"));
  pole = OR(pole, CMP(U("stablehlo.abs", x), inf, "EQ"));
  tpj_hlo_value_t r = SEL(pole, inf, U("chlo.lgamma", x));
  results[0] = tpj_hlo_emit_convert(b, r, s.o->dtype);
}

/* digamma for x > 0 the way CPU computes it: push x up to >= 10 with
 * psi(x) = psi(x + 1) - 1/x, then the asymptotic series (exactly 10 gives
 * psi(10) directly). Ten steps reach 10 from any x > 0. */
static tpj_hlo_value_t tpj_sp_digamma_pos(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  tpj_hlo_value_t ten = C(x, 10.0), one = C(x, 1.0), zero = C(x, 0.0);
  tpj_hlo_value_t acc = zero;
  for (int i = 0; i < 10; i++) {
    tpj_hlo_value_t lo = CMP(x, ten, "LT");
    acc = SEL(lo, SUB(acc, DIV(one, x)), acc);
    x = SEL(lo, ADD(x, one), x);
  }
  static const double kA[] = {8.33333333333333333333E-2, -2.10927960927960927961E-2,
                              7.57575757575757575758E-3, -4.16666666666666666667E-3,
                              3.96825396825396825397E-3, -8.33333333333333333333E-3,
                              8.33333333333333333333E-2};
  tpj_hlo_value_t z = DIV(one, MUL(x, x));
  tpj_hlo_value_t p = C(x, kA[0]);
  for (int i = 1; i < 7; i++) p = ADD(MUL(p, z), C(x, kA[i]));
  tpj_hlo_value_t y = SEL(CMP(x, C(x, 1.0e17), "LT"), MUL(z, p), zero);
  tpj_hlo_value_t r = SUB(SUB(ADD(acc, U("stablehlo.log", x)), DIV(C(x, 0.5), x)), y);
  return SEL(CMP(x, ten, "EQ"), ADD(acc, C(x, 2.25175258906672110764)), r);
}

/* pi / tan(pi * frac(x)), in float64 as CPU computes it for float32 too */
static tpj_hlo_value_t tpj_sp_pi_cot(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  tpj_hlo_value_t r = SUB(x, tpj_sp_trunc(b, x));
  tpj_hlo_value_t r64 = tpj_hlo_emit_convert(b, r, TPJ_F64);
  tpj_hlo_value_t t = U("chlo.tan", MUL(C(r64, kPi), r64));
  return tpj_hlo_emit_convert(b, DIV(C(r64, kPi), t), x.dtype);
}

static tpj_hlo_value_t tpj_sp_digamma(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  tpj_hlo_value_t zero = C(x, 0.0), one = C(x, 1.0);
  tpj_hlo_value_t neg = CMP(x, zero, "LT");
  /* reflection for x < 0: psi(x) = psi(1 - x) - pi / tan(pi x) */
  tpj_hlo_value_t pos_x = SEL(neg, SUB(one, x), x);
  tpj_hlo_value_t r = tpj_sp_digamma_pos(b, SEL(CMP(pos_x, zero, "EQ"), one, pos_x));
  r = SEL(neg, SUB(r, tpj_sp_pi_cot(b, x)), r);
  /* +-0 -> -+inf; negative integers and -inf -> NaN (C++/SciPy); +inf -> inf */
  tpj_hlo_value_t inf = C(x, HUGE_VAL), nan = C(x, NAN);
  /* copysign(inf, -x) at +-0 is -1 / x */
  tpj_hlo_value_t signed_inf = DIV(C(x, -1.0), x);
  r = SEL(AND(neg, OR(tpj_sp_is_int(b, x), CMP(x, U("stablehlo.negate", inf), "EQ"))), nan, r);
  r = SEL(CMP(x, inf, "EQ"), inf, r);
  return SEL(CMP(x, zero, "EQ"), signed_inf, r);
}

void tpj_lower_digamma(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_sp_t s;
  if (!tpj_sp_begin(ctx, 1, 1, "digamma", &s)) return;
  tpj_hlo_value_t r = tpj_sp_digamma(s.b, tpj_sp_in(ctx, &s, 0));
  results[0] = tpj_hlo_emit_convert(s.b, r, s.o->dtype);
}

/* trigamma as CPU computes it: reflection below 1/2, six recurrence steps,
 * then the asymptotic series */
static tpj_hlo_value_t tpj_sp_trigamma(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  tpj_hlo_value_t one = C(x, 1.0);
  tpj_hlo_value_t low = CMP(x, C(x, 0.5), "LT");
  tpj_hlo_value_t sn = U("stablehlo.sine", MUL(C(x, kPi), x));
  tpj_hlo_value_t refl = SEL(low, U("stablehlo.negate", DIV(C(x, kPi * kPi), MUL(sn, sn))),
                             C(x, 0.0));
  x = SEL(low, SUB(one, x), x);
  tpj_hlo_value_t r = refl;
  for (int i = 0; i < 6; i++) {
    r = ADD(r, DIV(one, MUL(x, x)));
    x = ADD(x, one);
  }
  tpj_hlo_value_t ixx = DIV(one, MUL(x, x));
  tpj_hlo_value_t t = SUB(C(x, 1.0 / 30), MUL(ixx, C(x, 1.0 / 42)));
  t = SUB(C(x, 1.0 / 6), MUL(ixx, t));
  t = ADD(ADD(one, DIV(one, MUL(C(x, 2.0), x))), MUL(ixx, t));
  r = ADD(r, DIV(t, x));
  return SEL(low, U("stablehlo.negate", r), r);
}

/* Hurwitz zeta(x, q) as CPU computes it (Cephes' zeta, in float64 for
 * float32 too: CPU's accumulate type), with its special cases: x == 1 ->
 * inf, x < 1 -> NaN, q a non-positive integer -> inf, q <= 0 with x not an
 * integer -> NaN. chlo.zeta covers q > 0; a negative q (x an integer) is
 * shifted: with N = ceil(-q), f = q + N in (0, 1),
 *   zeta(x, q) = zeta(x, f) + (-1)^x (zeta(x, 1 - f) - zeta(x, N + 1 - f)). */
static tpj_hlo_value_t tpj_sp_zeta(tpj_hlo_builder_t* b, tpj_hlo_value_t x0, tpj_hlo_value_t q0) {
  tpj_dtype_t out = x0.dtype;
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, x0, TPJ_F64);
  tpj_hlo_value_t q = tpj_hlo_emit_convert(b, q0, TPJ_F64);
  tpj_hlo_value_t one = C(x, 1.0), zero = C(x, 0.0);
  tpj_hlo_value_t qle0 = CMP(q, zero, "LE");
  tpj_hlo_value_t n = U("stablehlo.ceil", U("stablehlo.negate", q));
  tpj_hlo_value_t f = ADD(q, n);
  tpj_hlo_value_t qs = SEL(qle0, f, q);
  tpj_hlo_value_t r = tpj_hlo_emit_binary(b, "chlo.zeta", x, qs);
  /* 1 - f and N + 1 - f written so that they are exact (q = -1e-30 gives
   * f == 1 but 1 - f == 1e-30) */
  tpj_hlo_value_t one_f = U("stablehlo.negate", ADD(q, SUB(n, one)));
  tpj_hlo_value_t tail = SUB(tpj_hlo_emit_binary(b, "chlo.zeta", x, one_f),
                             tpj_hlo_emit_binary(b, "chlo.zeta", x, SUB(one, q)));
  tpj_hlo_value_t half_x = MUL(x, C(x, 0.5));
  tpj_hlo_value_t odd = CMP(U("stablehlo.floor", half_x), half_x, "NE");
  r = SEL(qle0, ADD(r, SEL(odd, U("stablehlo.negate", tail), tail)), r);
  /* huge x, where CPU's sum stops at its first term q^-x: inf for q < 1,
   * 1 for q == 1; for q > 1 that term is 0 and CPU's Euler-Maclaurin step
   * gives 0, or NaN once its running product of (x + k), 23 factors,
   * overflows */
  tpj_hlo_value_t first = tpj_hlo_emit_binary(b, "stablehlo.power", q, U("stablehlo.negate", x));
  tpj_hlo_value_t pos = CMP(q, zero, "GT");
  tpj_hlo_value_t inf = C(x, HUGE_VAL);
  r = SEL(AND(pos, CMP(first, inf, "EQ")), inf, r);
  r = SEL(AND(CMP(q, one, "EQ"), CMP(x, C(x, 1e13), "GT")), one, r);
  tpj_hlo_value_t prod = one;
  for (int k = 0; k < 23; k++) prod = MUL(prod, ADD(x, C(x, (double)k)));
  tpj_hlo_value_t em = SEL(CMP(prod, inf, "EQ"), C(x, NAN), zero);
  r = SEL(AND(CMP(q, one, "GT"), CMP(first, zero, "EQ")), em, r);
  r = SEL(CMP(q, inf, "EQ"), C(x, NAN), r); /* CPU's 0 * inf */
  tpj_hlo_value_t q_int = CMP(q, U("stablehlo.floor", q), "EQ");
  tpj_hlo_value_t x_int = CMP(x, U("stablehlo.floor", x), "EQ");
  r = SEL(AND(qle0, U("stablehlo.not", x_int)), C(x, NAN), r);
  r = SEL(AND(qle0, q_int), inf, r);
  r = SEL(CMP(x, one, "LT"), C(x, NAN), r);
  r = SEL(CMP(x, one, "EQ"), inf, r);
  return tpj_hlo_emit_convert(b, r, out);
}

void tpj_lower_special_zeta(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_sp_t s;
  if (!tpj_sp_begin(ctx, 2, 1, "special_zeta", &s)) return;
  tpj_hlo_value_t r = tpj_sp_zeta(s.b, tpj_sp_in(ctx, &s, 0), tpj_sp_in(ctx, &s, 1));
  results[0] = tpj_hlo_emit_convert(s.b, r, s.o->dtype);
}

/* polygamma(n, x): digamma for n = 0, trigamma for 1, otherwise
 * (-1)^(n+1) n! zeta(n + 1, x) as CPU. */
void tpj_lower_polygamma(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_sp_t s;
  if (!tpj_sp_begin(ctx, 1, 2, "polygamma", &s)) return;
  tpj_hlo_builder_t* b = s.b;
  int64_t n = ctx->attrs[1];
  tpj_hlo_value_t x = tpj_sp_in(ctx, &s, 0), r;
  if (n == 0) {
    r = tpj_sp_digamma(b, x);
  } else if (n == 1) {
    r = tpj_sp_trigamma(b, x);
  } else {
    tpj_hlo_value_t z = tpj_sp_zeta(b, C(x, (double)(n + 1)), x);
    /* CPU's factor is exp(lgamma(n + 1)) in the compute dtype */
    tpj_hlo_value_t f = U("stablehlo.exponential", U("chlo.lgamma", C(x, (double)n + 1.0)));
    r = MUL(MUL(C(x, (n % 2) ? 1.0 : -1.0), f), z);
  }
  results[0] = tpj_hlo_emit_convert(b, r, s.o->dtype);
}

/* ---- elementwise helpers with special values ---- */

void tpj_lower_nextafter(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_sp_t s;
  if (!tpj_sp_begin(ctx, 2, 1, "nextafter", &s)) return;
  tpj_hlo_value_t r = tpj_hlo_emit_binary(s.b, "chlo.next_after", tpj_sp_in(ctx, &s, 0),
                                          tpj_sp_in(ctx, &s, 1));
  results[0] = tpj_hlo_emit_convert(s.b, r, s.o->dtype);
}

/* x * log1p(y): NaN when y is NaN, else 0 when x == 0 */
void tpj_lower_special_xlog1py(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_sp_t s;
  if (!tpj_sp_begin(ctx, 2, 1, "special_xlog1py", &s)) return;
  tpj_hlo_builder_t* b = s.b;
  tpj_hlo_value_t x = tpj_sp_in(ctx, &s, 0), y = tpj_sp_in(ctx, &s, 1);
  tpj_hlo_value_t r = MUL(x, U("stablehlo.log_plus_one", y));
  r = SEL(CMP(x, C(x, 0.0), "EQ"), C(x, 0.0), r);
  r = SEL(tpj_sp_isnan(b, y), y, r);
  results[0] = tpj_hlo_emit_convert(b, r, s.o->dtype);
}

/* -x log x for x > 0; 0 at 0; -inf below 0; NaN stays NaN */
void tpj_lower_special_entr(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_sp_t s;
  if (!tpj_sp_begin(ctx, 1, 1, "special_entr", &s)) return;
  tpj_hlo_builder_t* b = s.b;
  tpj_hlo_value_t x = tpj_sp_in(ctx, &s, 0), zero = C(x, 0.0);
  tpj_hlo_value_t r = U("stablehlo.negate", MUL(x, U("stablehlo.log", x)));
  r = SEL(CMP(x, zero, "EQ"), zero, r);
  r = SEL(CMP(x, zero, "LT"), C(x, -HUGE_VAL), r);
  r = SEL(tpj_sp_isnan(b, x), x, r);
  results[0] = tpj_hlo_emit_convert(b, r, s.o->dtype);
}

/* ---- modified Bessel functions of the first kind (Cephes' Chebyshev
 * expansions: one over [0, 8] in x/2 - 2, one over (8, inf) in 32/x - 2) */

/* exp(-x) I0(x) on [0, 8] */
static const double kI0eA[] = {
    -4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
    1.71539128555513303061E-15,  -1.16853328779934516808E-14, 7.67618549860493561688E-14,
    -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
    9.67580903537323691224E-11,  -5.18979560163526290666E-10, 2.65982372468238665035E-9,
    -1.30002500998624804212E-8,  6.04699502254191894932E-8,  -2.67079385394061173391E-7,
    1.11738753912010371815E-6,   -4.41673835845875056359E-6, 1.64484480707288970893E-5,
    -5.75419501008210370398E-5,  1.88502885095841655729E-4,  -5.76375574538582365885E-4,
    1.63947561694133579842E-3,   -4.32430999505057594430E-3, 1.05464603945949983183E-2,
    -2.37374148058994688156E-2,  4.93052842396707084878E-2,  -9.49010970480476444210E-2,
    1.71620901522208775349E-1,   -3.04682672343198398683E-1, 6.76795274409476084995E-1};
/* exp(-x) sqrt(x) I0(x) on (8, inf) */
static const double kI0eB[] = {
    -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
    3.46122286769746109310E-17,  -2.82762398051658348494E-16, -3.42548561967721913462E-16,
    1.77256013305652638360E-15,  3.81168066935262242075E-15,  -9.55484669882830764870E-15,
    -4.15056934728722208663E-14, 1.54008621752140982691E-14,  3.85277838274214270114E-13,
    7.18012445138366623367E-13,  -1.79417853150680611778E-12, -1.32158118404477131188E-11,
    -3.14991652796324136454E-11, 1.18891471078464383424E-11,  4.94060238822496958910E-10,
    3.39623202570838634515E-9,   2.26666899049817806459E-8,   2.04891858946906374183E-7,
    2.89137052083475648297E-6,   6.88975834691682398426E-5,   3.36911647825569408990E-3,
    8.04490411014108831608E-1};
/* exp(-x) I1(x) / x on [0, 8]; float32 uses the last 17 terms, as CPU */
static const double kI1eA[] = {
    2.77791411276104639959E-18,  -2.11142121435816608115E-17, 1.55363195773620046921E-16,
    -1.10559694773538630805E-15, 7.60068429473540693410E-15,  -5.04218550472791168711E-14,
    3.22379336594557470981E-13,  -1.98397439776494371520E-12, 1.17361862988909016308E-11,
    -6.66348972350202774223E-11, 3.62559028155211703701E-10,  -1.88724975172282928790E-9,
    9.38153738649577178388E-9,   -4.44505912879632808065E-8,  2.00329475355213526229E-7,
    -8.56872026469545474066E-7,  3.47025130813767847674E-6,   -1.32731636560394358279E-5,
    4.78156510755005422638E-5,   -1.61760815825896745588E-4,  5.12285956168575772895E-4,
    -1.51357245063125314899E-3,  4.15642294431288815669E-3,   -1.05640848946261981558E-2,
    2.47264490306265168283E-2,   -5.29459812080949914269E-2,  1.02643658689847095384E-1,
    -1.76416518357834055153E-1,  2.52587186443633654823E-1};
/* exp(-x) sqrt(x) I1(x) on (8, inf); float32 uses the last 7 terms */
static const double kI1eB[] = {
    7.51729631084210481353E-18,  4.41434832307170791151E-18,  -4.65030536848935832153E-17,
    -3.20952592199342395980E-17, 2.96262899764595013876E-16,  3.30820231092092828324E-16,
    -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
    4.27244001671195135429E-14,  -2.10154184277266431302E-14, -4.08355111109219731823E-13,
    -7.19855177624590851209E-13, 2.03562854414708950722E-12,  1.41258074366137813316E-11,
    3.25260358301548823856E-11,  -1.89749581235054123450E-11, -5.58974346219658380687E-10,
    -3.83538038596423702205E-9,  -2.63146884688951950684E-8,  -2.51223623787020892529E-7,
    -3.88256480887769039346E-6,  -1.10588938762623716291E-4,  -9.76109749136146840777E-3,
    7.78576235018280120474E-1};

#define TPJ_SP_LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Clenshaw's recurrence for sum' c_i T_i(y / 2), Cephes' chbevl */
static tpj_hlo_value_t tpj_sp_chbevl(tpj_hlo_builder_t* b, tpj_hlo_value_t y, const double* c,
                                     int n) {
  tpj_hlo_value_t b0 = C(y, c[0]), b1 = C(y, 0.0), b2 = b1;
  for (int i = 1; i < n; i++) {
    b2 = b1;
    b1 = b0;
    b0 = ADD(SUB(MUL(y, b1), b2), C(y, c[i]));
  }
  return MUL(C(y, 0.5), SUB(b0, b2));
}

/* i0 and i1 (also as special.modified_bessel_i0/i1), scaled or not.
 * Float32 i1/i1e use the short tables as CPU; modified_bessel_i1 does not. */
enum { TPJ_SP_I0 = 0, TPJ_SP_I0E = 1, TPJ_SP_I1 = 2, TPJ_SP_I1E = 3, TPJ_SP_MI1 = 4 };

/* kind is one of the TPJ_SP_I* above */
static tpj_hlo_value_t tpj_sp_bessel_i(tpj_hlo_builder_t* b, tpj_hlo_value_t x0, int kind) {
  int order1 = kind >= TPJ_SP_I1, scaled = kind == TPJ_SP_I0E || kind == TPJ_SP_I1E;
  int f32 = x0.dtype != TPJ_F64 && kind != TPJ_SP_MI1;
  const double* ca = order1 ? kI1eA : kI0eA;
  const double* cb = order1 ? kI1eB : kI0eB;
  int na = order1 ? TPJ_SP_LEN(kI1eA) : TPJ_SP_LEN(kI0eA);
  int nb = order1 ? TPJ_SP_LEN(kI1eB) : TPJ_SP_LEN(kI0eB);
  if (order1 && f32) {
    ca += na - 17, na = 17;
    cb += nb - 7, nb = 7;
  }
  tpj_hlo_value_t x = U("stablehlo.abs", x0);
  tpj_hlo_value_t small = CMP(x, C(x, 8.0), "LE");
  tpj_hlo_value_t ca_v = tpj_sp_chbevl(b, SUB(MUL(x, C(x, 0.5)), C(x, 2.0)), ca, na);
  /* 32 / x is inf at x = 0, where this branch is not selected */
  tpj_hlo_value_t cb_v = tpj_sp_chbevl(b, SUB(DIV(C(x, 32.0), x), C(x, 2.0)), cb, nb);
  tpj_hlo_value_t ra, rb;
  /* the products in CPU's order: exp(x) * x * c, exp(x) * c / sqrt(x) */
  if (scaled) {
    ra = order1 ? MUL(ca_v, x) : ca_v;
    rb = DIV(cb_v, U("stablehlo.sqrt", x));
  } else {
    tpj_hlo_value_t e = U("stablehlo.exponential", x);
    ra = order1 ? MUL(MUL(e, x), ca_v) : MUL(e, ca_v);
    rb = DIV(MUL(e, cb_v), U("stablehlo.sqrt", x));
  }
  tpj_hlo_value_t r = SEL(small, ra, rb);
  if (order1) r = SEL(CMP(x0, C(x0, 0.0), "LT"), U("stablehlo.negate", r), r);
  return r;
}

static void tpj_sp_bessel_lower(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, int kind) {
  tpj_sp_t s;
  if (!tpj_sp_begin(ctx, 1, 1, "bessel_i", &s)) return;
  tpj_hlo_value_t r = tpj_sp_bessel_i(s.b, tpj_sp_in(ctx, &s, 0), kind);
  results[0] = tpj_hlo_emit_convert(s.b, r, s.o->dtype);
}

void tpj_lower_i0(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) { tpj_sp_bessel_lower(ctx, r, TPJ_SP_I0); }
void tpj_lower_special_i0e(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_sp_bessel_lower(ctx, r, TPJ_SP_I0E);
}
void tpj_lower_special_i1(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_sp_bessel_lower(ctx, r, TPJ_SP_I1);
}
void tpj_lower_special_i1e(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_sp_bessel_lower(ctx, r, TPJ_SP_I1E);
}
void tpj_lower_special_modified_bessel_i1(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_sp_bessel_lower(ctx, r, TPJ_SP_MI1);
}

/* sin(pi x) / (pi x), 1 at 0, as CPU (pi x rounded to the compute dtype) */
void tpj_lower_sinc(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_sp_t s;
  if (!tpj_sp_begin(ctx, 1, 1, "sinc", &s)) return;
  tpj_hlo_builder_t* b = s.b;
  tpj_hlo_value_t x = tpj_sp_in(ctx, &s, 0);
  tpj_hlo_value_t p = MUL(C(x, kPi), x);
  tpj_hlo_value_t r = DIV(U("stablehlo.sine", p), p);
  r = SEL(CMP(x, C(x, 0.0), "EQ"), C(x, 1.0), r);
  results[0] = tpj_hlo_emit_convert(b, r, s.o->dtype);
}

/* ---- ndtri: the inverse of the standard normal CDF (Cephes' rational
 * approximations on three intervals) ---- */

/* Horner's rule, coefficients from the highest degree down */
static tpj_hlo_value_t tpj_sp_polevl(tpj_hlo_builder_t* b, tpj_hlo_value_t x, const double* c,
                                     int n) {
  tpj_hlo_value_t r = C(x, c[0]);
  for (int i = 1; i < n; i++) r = ADD(MUL(r, x), C(x, c[i]));
  return r;
}

static const double kNdtriP0[] = {-5.99633501014107895267E1, 9.80010754185999661536E1,
                                  -5.66762857469070293439E1, 1.39312609387279679503E1,
                                  -1.23916583867381258016E0};
static const double kNdtriQ0[] = {1.0, 1.95448858338141759834E0, 4.67627912898881538453E0,
                                  8.63602421390890590575E1, -2.25462687854119370527E2,
                                  2.00260212380060660359E2, -8.20372256168333339912E1,
                                  1.59056225126211695515E1, -1.18331621121330003142E0};
static const double kNdtriP1[] = {4.05544892305962419923E0,  3.15251094599893866154E1,
                                  5.71628192246421288162E1,  4.40805073893200834700E1,
                                  1.46849561928858024014E1,  2.18663306850790267539E0,
                                  -1.40256079171354495875E-1, -3.50424626827848203418E-2,
                                  -8.57456785154685413611E-4};
static const double kNdtriQ1[] = {1.0, 1.57799883256466749731E1, 4.53907635128879210584E1,
                                  4.13172038254672030440E1, 1.50425385692907503408E1,
                                  2.50464946208309415979E0, -1.42182922854787788574E-1,
                                  -3.80806407691578277194E-2, -9.33259480895457427372E-4};
static const double kNdtriP2[] = {3.23774891776946035970E0, 6.91522889068984211695E0,
                                  3.93881025292474443415E0, 1.33303460815807542389E0,
                                  2.01485389549179081538E-1, 1.23716634817820021358E-2,
                                  3.01581553508235416007E-4, 2.65806974686737550832E-6,
                                  6.23974539184983293730E-9};
static const double kNdtriQ2[] = {1.0, 6.02427039364742014255E0, 3.67983563856160859403E0,
                                  1.37702099489081330271E0, 2.16236993594496635890E-1,
                                  1.34204006088543189037E-2, 3.28014464682127739104E-4,
                                  2.89247864745380683936E-6, 6.79019408009981274425E-9};

void tpj_lower_special_ndtri(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_sp_t s;
  if (!tpj_sp_begin(ctx, 1, 1, "special_ndtri", &s)) return;
  tpj_hlo_builder_t* b = s.b;
  tpj_hlo_value_t y0 = tpj_sp_in(ctx, &s, 0), one = C(y0, 1.0);
  const double e2 = 0.13533528323661269189; /* exp(-2) */
  /* the upper tail by symmetry: y = 1 - y0 there, and the sign flips */
  tpj_hlo_value_t upper = CMP(y0, SUB(one, C(y0, e2)), "GT");
  tpj_hlo_value_t y = SEL(upper, SUB(one, y0), y0);
  /* the middle: y - 1/2 through a rational function of its square */
  tpj_hlo_value_t ym = SUB(y, C(y, 0.5)), y2 = MUL(ym, ym);
  tpj_hlo_value_t mid = MUL(ADD(ym, MUL(ym, DIV(MUL(y2, tpj_sp_polevl(b, y2, kNdtriP0, 5)),
                                                tpj_sp_polevl(b, y2, kNdtriQ0, 9)))),
                            C(y, 2.50662827463100050242E0));
  /* the tails: z = sqrt(-2 log y), split at z = 8 */
  tpj_hlo_value_t tail_y = SEL(CMP(y, C(y, e2), "GT"), C(y, 0.01), y);
  /* XLA:CPU treats a subnormal operand as 0 (DAZ), but CPU gives finite
   * values there (ndtri(1e-40) = -13.2): read a subnormal's bits instead,
   * y0 = m 2^-149 (float32) or m 2^-1074 (float64), m its integer bits. */
  int f64 = s.cd == TPJ_F64;
  tpj_dtype_t it = f64 ? TPJ_I64 : TPJ_I32;
  tpj_hlo_value_t bits = tpj_hlo_emit_bitcast_convert(b, y0, it, y0.dims, y0.ndim);
  tpj_hlo_value_t min_normal = C(bits, f64 ? 4503599627370496.0 : 8388608.0); /* 2^52, 2^23 */
  tpj_hlo_value_t izero = C(bits, 0.0);
  tpj_hlo_value_t sub = AND(CMP(bits, izero, "GT"), CMP(bits, min_normal, "LT"));
  tpj_hlo_value_t sign_min = C(bits, f64 ? -9223372036854775808.0 : -2147483648.0);
  tpj_hlo_value_t neg_sub = AND(CMP(bits, sign_min, "GT"),
                                CMP(bits, ADD(sign_min, min_normal), "LT"));
  tpj_hlo_value_t log_sub = SUB(U("stablehlo.log", tpj_hlo_emit_convert(b, bits, s.cd)),
                                C(y0, (f64 ? 1074.0 : 149.0) * 0.69314718055994530942));
  tpj_hlo_value_t log_y = SEL(sub, log_sub, U("stablehlo.log", tail_y));
  tpj_hlo_value_t x = U("stablehlo.sqrt", MUL(C(y, -2.0), log_y));
  tpj_hlo_value_t x0 = SUB(x, DIV(U("stablehlo.log", x), x));
  tpj_hlo_value_t z = DIV(one, x);
  tpj_hlo_value_t x1a = DIV(MUL(z, tpj_sp_polevl(b, z, kNdtriP1, 9)),
                            tpj_sp_polevl(b, z, kNdtriQ1, 9));
  tpj_hlo_value_t x1b = DIV(MUL(z, tpj_sp_polevl(b, z, kNdtriP2, 9)),
                            tpj_sp_polevl(b, z, kNdtriQ2, 9));
  tpj_hlo_value_t tail = SUB(x0, SEL(CMP(x, C(x, 8.0), "LT"), x1a, x1b));
  tail = SEL(upper, tail, U("stablehlo.negate", tail));
  tpj_hlo_value_t r = SEL(CMP(y, C(y, e2), "GT"), mid, tail);
  /* 0 -> -inf, 1 -> inf, outside [0, 1] -> NaN */
  tpj_hlo_value_t zero = C(y0, 0.0);
  r = SEL(OR(CMP(y0, zero, "LT"), CMP(y0, one, "GT")), C(y0, NAN), r);
  r = SEL(CMP(y0, one, "EQ"), C(y0, HUGE_VAL), r);
  r = SEL(AND(CMP(y0, zero, "EQ"), U("stablehlo.not", sub)), C(y0, -HUGE_VAL), r);
  r = SEL(neg_sub, C(y0, NAN), r);
  results[0] = tpj_hlo_emit_convert(b, r, s.o->dtype);
}

/* ---- Bessel functions of the first and second kind, orders 0 and 1
 * (Cephes' j0/j1/y0/y1: rational approximations on [0, 5] and the
 * asymptotic form P cos - Q sin above) ---- */

static const double kJ0PP[] = {
    7.96936729297347051624e-04, 8.28352392107440799803e-02, 1.23953371646414299388e+00,
    5.44725003058768775090e+00, 8.74716500199817011941e+00, 5.30324038235394892183e+00,
    9.99999999999999997821e-01};
static const double kJ0PQ[] = {
    9.24408810558863637013e-04, 8.56288474354474431428e-02, 1.25352743901058953537e+00,
    5.47097740330417105182e+00, 8.76190883237069594232e+00, 5.30605288235394617618e+00,
    1.00000000000000000218e+00};
static const double kJ0QP[] = {
    -1.13663838898469149931e-02, -1.28252718670509318512e+00, -1.95539544257735972385e+01,
    -9.32060152123768231369e+01, -1.77681167980488050595e+02, -1.47077505154951170175e+02,
    -5.14105326766599330220e+01, -6.05014350600728481186e+00};
static const double kJ0QQ[] = {
    6.43178256118178023184e+01, 8.56430025976980587198e+02, 3.88240183605401609683e+03,
    7.24046774195652478189e+03, 5.93072701187316984827e+03, 2.06209331660327847417e+03,
    2.42005740240291393179e+02};
static const double kJ0RP[] = {
    -4.79443220978201773821e+09, 1.95617491946556577543e+12, -2.49248344360967716204e+14,
    9.70862251047306323952e+15};
static const double kJ0RQ[] = {
    4.99563147152651017219e+02, 1.73785401676374683123e+05, 4.84409658339962045305e+07,
    1.11855537045356834862e+10, 2.11277520115489217587e+12, 3.10518229857422583814e+14,
    3.18121955943204943306e+16, 1.71086294081043136091e+18};
static const double kJ1PP[] = {
    7.62125616208173112003e-04, 7.31397056940917570436e-02, 1.12719608129684925192e+00,
    5.11207951146807644818e+00, 8.42404590141772420927e+00, 5.21451598682361504063e+00,
    1.00000000000000000254e+00};
static const double kJ1PQ[] = {
    5.71323128072548699714e-04, 6.88455908754495404082e-02, 1.10514232634061696926e+00,
    5.07386386128601488557e+00, 8.39985554327604159757e+00, 5.20982848682361821619e+00,
    9.99999999999999997461e-01};
static const double kJ1QP[] = {
    5.10862594750176621635e-02, 4.98213872951233449420e+00, 7.58238284132545283818e+01,
    3.66779609360150777800e+02, 7.10856304998926107277e+02, 5.97489612400613639965e+02,
    2.11688757100572135698e+02, 2.52070205858023719784e+01};
static const double kJ1QQ[] = {
    7.42373277035675149943e+01, 1.05644886038262816351e+03, 4.98641058337653607651e+03,
    9.56231892404756170795e+03, 7.99704160447350683650e+03, 2.82619278517639096600e+03,
    3.36093607810698293419e+02};
static const double kJ1RP[] = {
    -8.99971225705559398224e+08, 4.52228297998194034323e+11, -7.27494245221818276015e+13,
    3.68295732863852883286e+15};
static const double kJ1RQ[] = {
    6.20836478118054335476e+02, 2.56987256757748830383e+05, 8.35146791431949253037e+07,
    2.21511595479792499675e+10, 4.74914122079991414898e+12, 7.84369607876235854894e+14,
    8.95222336184627338078e+16, 5.32278620332680085395e+18};
static const double kY0YP[] = {
    1.55924367855235737965e+04, -1.46639295903971606143e+07, 5.43526477051876500413e+09,
    -9.82136065717911466409e+11, 8.75906394395366999549e+13, -3.46628303384729719441e+15,
    4.42733268572569800351e+16, -1.84950800436986690637e+16};
static const double kY0YQ[] = {
    1.04128353664259848412e+03, 6.26107330137134956842e+05, 2.68919633393814121987e+08,
    8.64002487103935000337e+10, 2.02979612750105546709e+13, 3.17157752842975028269e+15,
    2.50596256172653059228e+17};
static const double kY1YP[] = {
    1.26320474790178026440e+09, -6.47355876379160291031e+11, 1.14509511541823727583e+14,
    -8.12770255501325109621e+15, 2.02439475713594898196e+17, -7.78877196265950026825e+17};
static const double kY1YQ[] = {
    5.94301592346128195359e+02, 2.35564092943068577943e+05, 7.34811944459721705660e+07,
    1.87601316108706159478e+10, 3.88231277496238566008e+12, 6.20557727146953693363e+14,
    6.87141087355300489866e+16, 3.97270608116560655612e+18};

/* x > 5: sqrt(2 / (pi x)) (P cos(x - phase) - (5/x) Q sin(x - phase)) for J,
 * sqrt(2 / (pi x)) (P sin(x - phase) + (5/x) Q cos(x - phase)) for Y */
static tpj_hlo_value_t tpj_sp_jy_asym(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int order,
                                      int second_kind) {
  tpj_hlo_value_t five_x = DIV(C(x, 5.0), x);
  tpj_hlo_value_t z = order ? MUL(five_x, five_x) : DIV(C(x, 25.0), MUL(x, x));
  const double *pp = order ? kJ1PP : kJ0PP, *pq = order ? kJ1PQ : kJ0PQ;
  const double *qp = order ? kJ1QP : kJ0QP, *qq = order ? kJ1QQ : kJ0QQ;
  tpj_hlo_value_t p = DIV(tpj_sp_polevl(b, z, pp, 7), tpj_sp_polevl(b, z, pq, 7));
  tpj_hlo_value_t q = DIV(tpj_sp_polevl(b, z, qp, 8), tpj_sp_polevl(b, z, qq, 7));
  double phase = order ? 2.356194490192344928846982537459627163
                       : 0.785398163397448309615660845819875721;
  tpj_hlo_value_t a = SUB(x, C(x, phase));
  tpj_hlo_value_t c = U("stablehlo.cosine", a), s = U("stablehlo.sine", a);
  tpj_hlo_value_t r = second_kind ? ADD(MUL(p, s), MUL(five_x, MUL(q, c)))
                                  : SUB(MUL(p, c), MUL(five_x, MUL(q, s)));
  return DIV(MUL(r, C(x, 0.797884560802865355879892119868763737)), U("stablehlo.sqrt", x));
}

/* J0 or J1 of x (odd J1 by symmetry) */
static tpj_hlo_value_t tpj_sp_bessel_j(tpj_hlo_builder_t* b, tpj_hlo_value_t x0, int order) {
  tpj_hlo_value_t x = U("stablehlo.abs", x0), xx = MUL(x, x);
  const double *rp = order ? kJ1RP : kJ0RP, *rq = order ? kJ1RQ : kJ0RQ;
  tpj_hlo_value_t ratio = DIV(tpj_sp_polevl(b, xx, rp, 4), tpj_sp_polevl(b, xx, rq, 8));
  tpj_hlo_value_t small;
  if (order) {
    small = MUL(MUL(MUL(ratio, x), SUB(xx, C(x, 1.46819706421238932572e+01))),
                SUB(xx, C(x, 4.92184563216946036703e+01)));
  } else {
    small = MUL(MUL(SUB(xx, C(x, 5.78318596294678452118e+00)),
                    SUB(xx, C(x, 3.04712623436620863991e+01))), ratio);
    small = SEL(CMP(x, C(x, 0.00001), "LT"), SUB(C(x, 1.0), DIV(xx, C(x, 4.0))), small);
  }
  tpj_hlo_value_t r = SEL(CMP(x, C(x, 5.0), "LE"), small, tpj_sp_jy_asym(b, x, order, 0));
  if (order) r = SEL(CMP(x0, C(x0, 0.0), "LT"), U("stablehlo.negate", r), r);
  return r;
}

/* Y0 or Y1: -inf at 0, NaN below */
static tpj_hlo_value_t tpj_sp_bessel_y(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int order) {
  tpj_hlo_value_t xx = MUL(x, x), lg = U("stablehlo.log", x);
  tpj_hlo_value_t small;
  const double two_pi = 0.636619772367581343075535053490057448;
  if (order) {
    tpj_hlo_value_t ratio = DIV(tpj_sp_polevl(b, xx, kY1YP, 6), tpj_sp_polevl(b, xx, kY1YQ, 8));
    small = ADD(MUL(x, ratio), MUL(C(x, two_pi), SUB(MUL(tpj_sp_bessel_j(b, x, 1), lg),
                                                     DIV(C(x, 1.0), x))));
  } else {
    tpj_hlo_value_t ratio = DIV(tpj_sp_polevl(b, xx, kY0YP, 8), tpj_sp_polevl(b, xx, kY0YQ, 7));
    small = ADD(ratio, MUL(MUL(C(x, two_pi), lg), tpj_sp_bessel_j(b, x, 0)));
  }
  tpj_hlo_value_t r = SEL(CMP(x, C(x, 5.0), "LE"), small, tpj_sp_jy_asym(b, x, order, 1));
  r = SEL(CMP(x, C(x, 0.0), "LT"), C(x, NAN), r);
  return SEL(CMP(x, C(x, 0.0), "EQ"), C(x, -HUGE_VAL), r);
}

/* sin(x) / x, by its Taylor series below 1/2; 0 at +-inf */
static tpj_hlo_value_t tpj_sp_spherical_j0(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  tpj_hlo_value_t xx = MUL(x, x);
  static const double kInv[] = {1.0 / 6227020800.0, -1.0 / 39916800.0, 1.0 / 362880.0,
                                -1.0 / 5040.0, 1.0 / 120.0, -1.0 / 6.0};
  tpj_hlo_value_t p = C(x, kInv[0]);
  for (int i = 1; i < 6; i++) p = ADD(C(x, kInv[i]), MUL(xx, p));
  tpj_hlo_value_t series = ADD(C(x, 1.0), MUL(xx, p));
  tpj_hlo_value_t r = SEL(CMP(U("stablehlo.abs", x), C(x, 0.5), "LT"), series,
                          DIV(U("stablehlo.sine", x), x));
  return SEL(CMP(U("stablehlo.abs", x), C(x, HUGE_VAL), "EQ"), C(x, 0.0), r);
}

enum { TPJ_SP_J0, TPJ_SP_J1, TPJ_SP_Y0, TPJ_SP_Y1, TPJ_SP_SJ0 };

static void tpj_sp_jy_lower(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, int kind) {
  tpj_sp_t s;
  if (!tpj_sp_begin(ctx, 1, 1, "bessel", &s)) return;
  tpj_hlo_builder_t* b = s.b;
  tpj_hlo_value_t x = tpj_sp_in(ctx, &s, 0), r;
  switch (kind) {
    case TPJ_SP_J0: r = tpj_sp_bessel_j(b, x, 0); break;
    case TPJ_SP_J1: r = tpj_sp_bessel_j(b, x, 1); break;
    case TPJ_SP_Y0: r = tpj_sp_bessel_y(b, x, 0); break;
    case TPJ_SP_Y1: r = tpj_sp_bessel_y(b, x, 1); break;
    default: r = tpj_sp_spherical_j0(b, x); break;
  }
  results[0] = tpj_hlo_emit_convert(b, r, s.o->dtype);
}

void tpj_lower_special_bessel_j0(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_sp_jy_lower(ctx, r, TPJ_SP_J0);
}
void tpj_lower_special_bessel_j1(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_sp_jy_lower(ctx, r, TPJ_SP_J1);
}
void tpj_lower_special_bessel_y0(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_sp_jy_lower(ctx, r, TPJ_SP_Y0);
}
void tpj_lower_special_bessel_y1(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_sp_jy_lower(ctx, r, TPJ_SP_Y1);
}
void tpj_lower_special_spherical_bessel_j0(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_sp_jy_lower(ctx, r, TPJ_SP_SJ0);
}

/* ---- modified Bessel functions of the second kind, orders 0 and 1 (Cephes'
 * k0/k1: Chebyshev expansions in x^2 - 2 on (0, 2] and 8/x - 2 above) ---- */

static const double kK0A[] = {
    1.37446543561352307156e-16, 4.25981614279661018399e-14, 1.03496952576338420167e-11,
    1.90451637722020886025e-09, 2.53479107902614945675e-07, 2.28621210311945178607e-05,
    1.26461541144692592338e-03, 3.59799365153615016266e-02, 3.44289899924628486886e-01,
    -5.35327393233902768720e-01};
static const double kK0B[] = {
    5.30043377268626276149e-18, -1.64758043015242134646e-17, 5.21039150503902756861e-17,
    -1.67823109680541210385e-16, 5.51205597852431940784e-16, -1.84859337734377901440e-15,
    6.34007647740507060557e-15, -2.22751332699166985548e-14, 8.03289077536357521100e-14,
    -2.98009692317273043925e-13, 1.14034058820847496303e-12, -4.51459788337394416547e-12,
    1.85594911495471785253e-11, -7.95748924447710747776e-11, 3.57739728140030116597e-10,
    -1.69753450938905987466e-09, 8.57403401741422608519e-09, -4.66048989768794782956e-08,
    2.76681363944501510342e-07, -1.83175552271911948767e-06, 1.39498137188764993662e-05,
    -1.28495495816278026384e-04, 1.56988388573005337491e-03, -3.14481013119645005427e-02,
    2.44030308206595545468e+00};
static const double kK1A[] = {
    -7.02386347938628759343e-18, -2.42744985051936593393e-15, -6.66690169419932900609e-13,
    -1.41148839263352776110e-10, -2.21338763073472585583e-08, -2.43340614156596823496e-06,
    -1.73028895751305206302e-04, -6.97572385963986435018e-03, -1.22611180822657148235e-01,
    -3.53155960776544875667e-01, 1.52530022733894777053e+00};
static const double kK1B[] = {
    -5.75674448366501715755e-18, 1.79405087314755922667e-17, -5.68946255844285935196e-17,
    1.83809354436663880070e-16, -6.05704724837331885336e-16, 2.03870316562433424052e-15,
    -7.01983709041831346144e-15, 2.47715442448130437068e-14, -8.97670518232499435011e-14,
    3.34841966607842919884e-13, -1.28917396095102890680e-12, 5.13963967348173025100e-12,
    -2.12996783842756842877e-11, 9.21831518760500529508e-11, -4.19035475934189648750e-10,
    2.01504975519703286596e-09, -1.03457624656780970260e-08, 5.74108412545004946722e-08,
    -3.50196060308781257119e-07, 2.40648494783721712015e-06, -1.93619797416608296024e-05,
    1.95215518471351631108e-04, -2.85781685962277938680e-03, 1.03923736576817238437e-01,
    2.72062619048444266945e+00};

/* K0 or K1 of x, scaled by exp(x) when asked: inf at 0, NaN below */
static tpj_hlo_value_t tpj_sp_bessel_k(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int order,
                                       int scaled) {
  tpj_hlo_value_t two = C(x, 2.0);
  tpj_hlo_value_t ca = order ? tpj_sp_chbevl(b, SUB(MUL(x, x), two), kK1A, TPJ_SP_LEN(kK1A))
                             : tpj_sp_chbevl(b, SUB(MUL(x, x), two), kK0A, TPJ_SP_LEN(kK0A));
  tpj_hlo_value_t cb = tpj_sp_chbevl(b, SUB(DIV(C(x, 8.0), x), two), order ? kK1B : kK0B, 25);
  tpj_hlo_value_t lg = U("stablehlo.log", MUL(C(x, 0.5), x));
  tpj_hlo_value_t small =
      order ? ADD(MUL(lg, tpj_sp_bessel_i(b, x, TPJ_SP_MI1)), DIV(ca, x))
            : SUB(ca, MUL(lg, tpj_sp_bessel_i(b, x, TPJ_SP_I0)));
  tpj_hlo_value_t large = DIV(cb, U("stablehlo.sqrt", x));
  if (scaled) small = MUL(small, U("stablehlo.exponential", x));
  else large = DIV(MUL(U("stablehlo.exponential", U("stablehlo.negate", x)), cb),
                   U("stablehlo.sqrt", x));
  tpj_hlo_value_t r = SEL(CMP(x, two, "LE"), small, large);
  r = SEL(CMP(x, C(x, 0.0), "LT"), C(x, NAN), r);
  return SEL(CMP(x, C(x, 0.0), "EQ"), C(x, HUGE_VAL), r);
}

static void tpj_sp_k_lower(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, int order, int scaled) {
  tpj_sp_t s;
  if (!tpj_sp_begin(ctx, 1, 1, "modified_bessel_k", &s)) return;
  tpj_hlo_value_t r = tpj_sp_bessel_k(s.b, tpj_sp_in(ctx, &s, 0), order, scaled);
  results[0] = tpj_hlo_emit_convert(s.b, r, s.o->dtype);
}

void tpj_lower_special_modified_bessel_k0(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_sp_k_lower(ctx, r, 0, 0);
}
void tpj_lower_special_modified_bessel_k1(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_sp_k_lower(ctx, r, 1, 0);
}
void tpj_lower_special_scaled_modified_bessel_k0(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_sp_k_lower(ctx, r, 0, 1);
}
void tpj_lower_special_scaled_modified_bessel_k1(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_sp_k_lower(ctx, r, 1, 1);
}

/* ---- the Airy function Ai (Cephes' airy: asymptotic rational forms for
 * |x| >= 2.09, the Maclaurin series f(x) and g(x) in between) ---- */

static const double kAiryAN[] = {
    3.46538101525629032477e-01, 1.20075952739645805542e+01, 7.62796053615234516538e+01,
    1.68089224934630576269e+02, 1.59756391350164413639e+02, 7.05360906840444183113e+01,
    1.40264691163389668864e+01, 9.99999999999999995305e-01};
static const double kAiryAD[] = {
    5.67594532638770212846e-01, 1.47562562584847203173e+01, 8.45138970141474626562e+01,
    1.77318088145400459522e+02, 1.64234692871529701831e+02, 7.14778400825575695274e+01,
    1.40959135607834029598e+01, 1.00000000000000000470e+00};
static const double kAiryAFN[] = {
    -1.31696323418331795333e-01, -6.26456544431912369773e-01, -6.93158036036933542233e-01,
    -2.79779981545119124951e-01, -4.91900132609500318020e-02, -4.06265923594885404393e-03,
    -1.59276496239262096340e-04, -2.77649108155232920844e-06, -1.67787698489114633780e-08};
static const double kAiryAFD[] = {
    1.33560420706553243746e+01, 3.26825032795224613948e+01, 2.67367040941499554804e+01,
    9.18707402907259625840e+00, 1.47529146771666414581e+00, 1.15687173795188044134e-01,
    4.40291641615211203805e-03, 7.54720348287414296618e-05, 4.51850092970580378464e-07};
static const double kAiryAGN[] = {
    1.97339932091685679179e-02, 3.91103029615688277255e-01, 1.06579897599595591108e+00,
    9.39169229816650230044e-01, 3.51465656105547619242e-01, 6.33888919628925490927e-02,
    5.85804113048388458567e-03, 2.82851600836737019778e-04, 6.98793669997260967291e-06,
    8.11789239554389293311e-08, 3.41551784765923618484e-10};
static const double kAiryAGD[] = {
    9.30892908077441974853e+00, 1.98352928718312140417e+01, 1.55646628932864612953e+01,
    5.47686069422975497931e+00, 9.54293611618961883998e-01, 8.64580826352392193095e-02,
    4.12656523824222607191e-03, 1.01259085116509135510e-04, 1.17166733214413521882e-06,
    4.91834570062930015649e-09};

void tpj_lower_special_airy_ai(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_sp_t s;
  if (!tpj_sp_begin(ctx, 1, 1, "special_airy_ai", &s)) return;
  tpj_hlo_builder_t* b = s.b;
  tpj_hlo_value_t x = tpj_sp_in(ctx, &s, 0), one = C(x, 1.0);
  const double inv_sqrt_pi = 5.64189583547756286948e-01;
  /* x < -2.09: oscillating, in zeta = 2/3 (-x)^(3/2) */
  tpj_hlo_value_t nx = U("stablehlo.negate", x);
  tpj_hlo_value_t zn = DIV(MUL(MUL(C(x, -2.0), x), U("stablehlo.sqrt", nx)), C(x, 3.0));
  tpj_hlo_value_t z = DIV(one, zn), zz = MUL(z, z);
  tpj_hlo_value_t fr = DIV(tpj_sp_polevl(b, zz, kAiryAFN, 9), tpj_sp_polevl(b, zz, kAiryAFD, 9));
  tpj_hlo_value_t gr = DIV(tpj_sp_polevl(b, zz, kAiryAGN, 11), tpj_sp_polevl(b, zz, kAiryAGD, 10));
  tpj_hlo_value_t t = ADD(zn, C(x, 0.25 * kPi));
  tpj_hlo_value_t neg = SUB(MUL(U("stablehlo.sine", t), ADD(one, MUL(zz, fr))),
                            MUL(U("stablehlo.cosine", t), MUL(z, gr)));
  neg = MUL(DIV(C(x, inv_sqrt_pi), U("stablehlo.sqrt", U("stablehlo.sqrt", nx))), neg);
  /* x >= 2.09: decaying, in zeta = 2/3 x^(3/2) */
  tpj_hlo_value_t zp = DIV(MUL(MUL(C(x, 2.0), x), U("stablehlo.sqrt", x)), C(x, 3.0));
  tpj_hlo_value_t iz = DIV(one, zp);
  tpj_hlo_value_t ar = DIV(tpj_sp_polevl(b, iz, kAiryAN, 8), tpj_sp_polevl(b, iz, kAiryAD, 8));
  tpj_hlo_value_t pos = DIV(MUL(C(x, inv_sqrt_pi), ar),
                            MUL(MUL(C(x, 2.0), U("stablehlo.sqrt", U("stablehlo.sqrt", x))),
                                U("stablehlo.exponential", zp)));
  /* in between: Ai = c1 f(x) - c2 g(x); twelve terms reach float64's
   * epsilon for |x| < 2.09 (CPU stops there too) */
  tpj_hlo_value_t f = one, g = x, k = one, m = one, n = x, x3 = MUL(MUL(x, x), x);
  for (int i = 0; i < 12; i++) {
    m = MUL(m, x3);
    k = ADD(k, one);
    m = DIV(m, k);
    n = MUL(n, x3);
    k = ADD(k, one);
    n = DIV(n, k);
    m = DIV(m, k);
    f = ADD(f, m);
    k = ADD(k, one);
    n = DIV(n, k);
    g = ADD(g, n);
  }
  tpj_hlo_value_t mid = SUB(MUL(C(x, 0.355028053887817239260), f),
                            MUL(C(x, 0.258819403792806798405), g));
  tpj_hlo_value_t r = SEL(CMP(x, C(x, 2.09), "GE"), pos, mid);
  r = SEL(CMP(x, C(x, -2.09), "LT"), neg, r);
  r = SEL(CMP(x, C(x, 103.892), "GT"), C(x, 0.0), r);
  r = SEL(CMP(U("stablehlo.abs", x), C(x, HUGE_VAL), "EQ"), C(x, NAN), r);
  results[0] = tpj_hlo_emit_convert(b, r, s.o->dtype);
}

/* ---- erfcx(x) = exp(x^2) erfc(x) and log_ndtr, in float64 (then rounded):
 * exp(x^2) erfc(x) directly up to 10, where erfc is still far from
 * XLA:CPU's flushed subnormals, and Laplace's continued fraction
 * 1 / (sqrt(pi) (x + (1/2) / (x + 1 / (x + (3/2) / ...)))) above. ---- */

static tpj_hlo_value_t tpj_sp_erfcx_pos(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  tpj_hlo_value_t xs = SEL(CMP(x, C(x, 10.0), "GT"), x, C(x, 10.0));
  tpj_hlo_value_t t = xs;
  for (int k = 40; k >= 1; k--) t = ADD(xs, DIV(C(x, 0.5 * k), t));
  tpj_hlo_value_t cf = DIV(C(x, 0.56418958354775628694807945156), t); /* 1/sqrt(pi) */
  tpj_hlo_value_t xd = SEL(CMP(x, C(x, 10.0), "GT"), C(x, 0.0), x);
  tpj_hlo_value_t direct = MUL(U("stablehlo.exponential", MUL(xd, xd)), U("chlo.erfc", xd));
  return SEL(CMP(x, C(x, 10.0), "GT"), cf, direct);
}

/* CPU's cases: NaN stays; below -26.7 inf; below -6.1 2 exp(x^2); else
 * 2 exp(x^2) - erfcx(-x) for negative x */
static tpj_hlo_value_t tpj_sp_erfcx(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  tpj_hlo_value_t neg = CMP(x, C(x, 0.0), "LT");
  tpj_hlo_value_t ax = U("stablehlo.abs", x);
  tpj_hlo_value_t pos = tpj_sp_erfcx_pos(b, ax);
  tpj_hlo_value_t e2 = MUL(C(x, 2.0), U("stablehlo.exponential", MUL(x, x)));
  tpj_hlo_value_t r = SEL(neg, SEL(CMP(x, C(x, -6.1), "LT"), e2, SUB(e2, pos)), pos);
  r = SEL(CMP(x, C(x, -26.7), "LT"), C(x, HUGE_VAL), r);
  return SEL(tpj_sp_isnan(b, x), x, r);
}

void tpj_lower_special_erfcx(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_sp_t s;
  if (!tpj_sp_begin(ctx, 1, 1, "special_erfcx", &s)) return;
  tpj_hlo_builder_t* b = s.b;
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, tpj_sp_in(ctx, &s, 0), TPJ_F64);
  results[0] = tpj_hlo_emit_convert(b, tpj_sp_erfcx(b, x), s.o->dtype);
}

/* log of the standard normal CDF: log(erfcx(-t) / 2) - t^2 below x = -1,
 * log1p(-erfc(t) / 2) above, t = x / sqrt(2) */
void tpj_lower_special_log_ndtr(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_sp_t s;
  if (!tpj_sp_begin(ctx, 1, 1, "special_log_ndtr", &s)) return;
  tpj_hlo_builder_t* b = s.b;
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, tpj_sp_in(ctx, &s, 0), TPJ_F64);
  tpj_hlo_value_t t = MUL(x, C(x, 0.70710678118654752440));
  tpj_hlo_value_t lo = SUB(U("stablehlo.log", DIV(tpj_sp_erfcx(b, U("stablehlo.negate", t)),
                                                  C(x, 2.0))),
                           MUL(t, t));
  tpj_hlo_value_t hi = U("stablehlo.log_plus_one",
                         U("stablehlo.negate", DIV(U("chlo.erfc", t), C(x, 2.0))));
  tpj_hlo_value_t r = SEL(CMP(x, C(x, -1.0), "LT"), lo, hi);
  results[0] = tpj_hlo_emit_convert(b, r, s.o->dtype);
}

#define TPJ_MUL(x, y) tpj_hlo_emit_binary(b, "stablehlo.multiply", x, y)
#define TPJ_SUB(x, y) tpj_hlo_emit_binary(b, "stablehlo.subtract", x, y)

/* ---- pointwise --------------------------------------------------------------
 * Runtime scalars come rounded the way CPU's kernel reads them (the glue
 * says which: the input's dtype for logit, hardshrink and the shrink
 * backward, the compute dtype for softshrink and threshold), then widen to
 * the compute dtype here. */

/* 1 - eps, rounded to the tensor's dtype as CPU's kernels compute it */
static tpj_hlo_value_t tpj_logit_hi(tpj_hlo_builder_t* b, tpj_hlo_value_t one, tpj_hlo_value_t lo,
                                    tpj_dtype_t dt) {
  tpj_hlo_value_t hi = TPJ_SUB(one, lo);
  return tpj_hlo_emit_convert(b, tpj_hlo_emit_convert(b, hi, dt), hi.dtype);
}

/* logit: in[0] x, [in[1] eps]; attrs[0] compute dtype, attrs[1] has eps.
 * With eps, x is clamped to [eps, 1 - eps] first (NaN stays NaN). */
void tpj_lower_logit(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (ctx->nin < 1 || ctx->nattrs < 2 || (ctx->attrs[1] && ctx->nin < 2)) {
    tpj_ops_fail_operands(ctx, "logit");
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[0];
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  tpj_hlo_value_t one = tpj_ops_fill_like(b, tpj_hlo_emit_one(b, cd), &x);
  if (ctx->attrs[1]) {
    tpj_hlo_value_t lo = tpj_ops_fill_like(b, tpj_hlo_emit_convert(b, ctx->in[1], cd), &x);
    tpj_hlo_value_t hi = tpj_logit_hi(b, one, lo, ctx->outs[0].dtype);
    x = tpj_hlo_emit_select(b, tpj_hlo_emit_compare(b, x, lo, "LT"), lo, x);
    x = tpj_hlo_emit_select(b, tpj_hlo_emit_compare(b, x, hi, "GT"), hi, x);
  }
  tpj_hlo_value_t r = tpj_hlo_emit_unary(
      b, "stablehlo.log", tpj_hlo_emit_binary(b, "stablehlo.divide", x, TPJ_SUB(one, x)));
  results[0] = tpj_hlo_emit_convert(b, r, ctx->outs[0].dtype);
}

/* logit_backward: in[0] grad, in[1] x, [in[2] eps]; attrs as logit.
 * g / (x (1 - x)); outside [0, 1] NaN without eps, outside [eps, 1 - eps] 0
 * with it (the clamp's gradient). */
void tpj_lower_logit_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nin < 2 || ctx->nattrs < 2 || (ctx->attrs[1] && ctx->nin < 3)) {
    tpj_ops_fail_operands(ctx, "logit_backward");
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[0];
  tpj_hlo_value_t g = tpj_ops_cast_to(b, ctx->in[0], cd, o->dims, o->ndim);
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[1], cd, o->dims, o->ndim);
  tpj_hlo_value_t one = tpj_ops_fill_like(b, tpj_hlo_emit_one(b, cd), &x);
  tpj_hlo_value_t lo, hi, fill;
  if (ctx->attrs[1]) {
    lo = tpj_ops_fill_like(b, tpj_hlo_emit_convert(b, ctx->in[2], cd), &x);
    hi = tpj_logit_hi(b, one, lo, o->dtype);
    fill = tpj_ops_fill_like(b, tpj_hlo_emit_zero(b, cd), &x);
  } else {
    lo = tpj_ops_fill_like(b, tpj_hlo_emit_zero(b, cd), &x);
    hi = one;
    fill = tpj_ops_fill_like(b, tpj_hlo_emit_const_f64(b, cd, NAN), &x);
  }
  tpj_hlo_value_t out = tpj_hlo_emit_binary(b, "stablehlo.or", tpj_hlo_emit_compare(b, x, lo, "LT"),
                                            tpj_hlo_emit_compare(b, x, hi, "GT"));
  tpj_hlo_value_t r = tpj_hlo_emit_binary(b, "stablehlo.divide", g, TPJ_MUL(x, TPJ_SUB(one, x)));
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_select(b, out, fill, r), o->dtype);
}

/* ---- descriptor rows (desc.h) ---------------------------------------------
 * Output sizes and dtype (and PyTorch's own argument errors) come from the
 * meta functions; half types compute in float32 as CPU's kernels do, and
 * where CPU refuses half types so do we. An empty result runs no program. */
#define TPJ_SF (TPJ_RULE_FORMS | TPJ_RULE_SKIP_EMPTY)
#define TPJ_SO (TPJ_RULE_OUT | TPJ_RULE_SKIP_EMPTY)
/* half types refuse with CPU's kernel name; the polynomials' attribute is
 * their index in special_orthopoly.c */
#define TPJ_HALFLESS(fn, kernel) TPJ_ROW(fn, TPJ_SO | TPJ_RULE_NO_HALF, kernel, -1)
#define TPJ_POLY(p, kind) TPJ_ROW(special_##p, TPJ_SO | TPJ_RULE_NO_HALF, #p "_cpu", kind)

static const tpj_op_desc_t kSpecialRows[] = {
    TPJ_ROW(lgamma, TPJ_SF, NULL, -1),
    TPJ_ROW(digamma, TPJ_SF, NULL, -1),
    TPJ_ROW(i0, TPJ_SF, NULL, -1),
    TPJ_ROW(sinc, TPJ_SF | TPJ_RULE_COMPLEX_ON_CPU, NULL, -1),
    TPJ_ROW(special_entr, TPJ_SO, NULL, -1),
    TPJ_ROW(special_i0e, TPJ_SO, NULL, -1),
    TPJ_ROW(special_i1, TPJ_SO, NULL, -1),
    TPJ_ROW(special_i1e, TPJ_SO, NULL, -1),
    /* only float64 is native: below x = -1e5 or so, float32's Ai depends on
     * the last bit of its huge phase 2/3 (-x)^(3/2), and the fused XLA
     * program does not reproduce CPU's bits there */
    TPJ_ROW(special_airy_ai, TPJ_SO | TPJ_RULE_DOUBLE_ONLY, NULL, -1),
    TPJ_ROW(polygamma, TPJ_SO, NULL, -1), /* n < 0: the meta function's error */
    TPJ_ROW(special_xlog1py, TPJ_SO, NULL, -1),
    /* steps to the neighbour in the output's own dtype (bf16's, not float32's) */
    TPJ_ROW(nextafter, TPJ_SF | TPJ_RULE_EXACT_COMPUTE | TPJ_RULE_FLOATING_ONLY, "nextafter_cpu",
            -1),
    TPJ_HALFLESS(special_ndtri, "ndtri_cpu"),
    TPJ_HALFLESS(special_erfcx, "erfcx_cpu"),
    TPJ_HALFLESS(special_log_ndtr, "log_ndtr_cpu"),
    TPJ_HALFLESS(special_bessel_j0, "bessel_j0_cpu"),
    TPJ_HALFLESS(special_bessel_j1, "bessel_j1_cpu"),
    TPJ_HALFLESS(special_bessel_y0, "bessel_y0_cpu"),
    TPJ_HALFLESS(special_bessel_y1, "bessel_y1_cpu"),
    TPJ_HALFLESS(special_modified_bessel_i0, "modified_bessel_i0_cpu"),
    TPJ_HALFLESS(special_modified_bessel_i1, "modified_bessel_i1_cpu"),
    TPJ_HALFLESS(special_modified_bessel_k0, "modified_bessel_k0_cpu"),
    TPJ_HALFLESS(special_modified_bessel_k1, "modified_bessel_k1_cpu"),
    TPJ_HALFLESS(special_scaled_modified_bessel_k0, "scaled_modified_bessel_k0_cpu"),
    TPJ_HALFLESS(special_scaled_modified_bessel_k1, "scaled_modified_bessel_k1_cpu"),
    TPJ_HALFLESS(special_spherical_bessel_j0, "spherical_bessel_j0_cpu"),
    TPJ_HALFLESS(special_zeta, "zeta_cpu"),
    TPJ_POLY(chebyshev_polynomial_t, 0),
    TPJ_POLY(chebyshev_polynomial_u, 1),
    TPJ_POLY(chebyshev_polynomial_v, 2),
    TPJ_POLY(chebyshev_polynomial_w, 3),
    TPJ_POLY(shifted_chebyshev_polynomial_t, 4),
    TPJ_POLY(shifted_chebyshev_polynomial_u, 5),
    TPJ_POLY(shifted_chebyshev_polynomial_v, 6),
    TPJ_POLY(shifted_chebyshev_polynomial_w, 7),
    TPJ_POLY(hermite_polynomial_h, 8),
    TPJ_POLY(hermite_polynomial_he, 9),
    TPJ_POLY(laguerre_polynomial_l, 10),
    TPJ_POLY(legendre_polynomial_p, 11),
    /* igamma and igammac (special_igamma.c): the attribute is 1 for the upper
     * function; other than floating types run CPU's kernel (counted) */
    TPJ_ROW(igamma, TPJ_RULE_INPLACE | TPJ_RULE_SKIP_EMPTY | TPJ_RULE_NON_FLOATING_ON_CPU, NULL, 0),
    TPJ_ROW(igammac, TPJ_RULE_INPLACE | TPJ_RULE_SKIP_EMPTY | TPJ_RULE_NON_FLOATING_ON_CPU, NULL,
            1),
};
TPJ_DESC_LIST(tpj_special_rows, kSpecialRows);
