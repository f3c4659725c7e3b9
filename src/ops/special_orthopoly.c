/* ops/special_orthopoly: the orthogonal polynomials of torch.special (Chebyshev
 * T/U/V/W and their shifted forms, Hermite H/He, Laguerre L, Legendre P) of
 * x and a degree tensor n, as CPU computes them: its special cases (n < 0
 * -> 0, the values at the interval's ends, the trigonometric forms for
 * large n inside it, Hermite's degree limit), then the three-term
 * recurrence run on the device by a stablehlo.while up to the largest
 * degree, stopping per element where CPU stops (its degree, or a NaN).
 *
 * attrs[0] is the compute dtype (float32 or float64); attrs[1] the
 * polynomial (tpj_poly_kind_t). Operands x and n are converted to the
 * compute dtype and broadcast to the output's dims. */
#include <math.h>

#include "hlo/special.h"
#include "ops/ops.h"
#include "ops/sugar.h"

typedef enum {
  TPJ_POLY_T, TPJ_POLY_U, TPJ_POLY_V, TPJ_POLY_W,
  TPJ_POLY_ST, TPJ_POLY_SU, TPJ_POLY_SV, TPJ_POLY_SW,
  TPJ_POLY_H, TPJ_POLY_HE, TPJ_POLY_L, TPJ_POLY_P,
  TPJ_POLY_COUNT
} tpj_poly_kind_t;

#define U(op, x) tpj_hlo_emit_unary(b, op, x)
#define C(x, v) tpj_poly_c(b, x, v)

static tpj_hlo_value_t tpj_poly_c(tpj_hlo_builder_t* b, tpj_hlo_value_t x, double v) {
  return tpj_ops_const_like(b, x, v);
}

static int tpj_poly_is_cheb(int kind) { return kind <= TPJ_POLY_SW; }

/* one step of the recurrence: the next value from the last two, p and q,
 * at counter k (see the kernels: k runs 2..n for Chebyshev, 1..n-1 else) */
static tpj_hlo_value_t tpj_poly_step(tpj_hlo_builder_t* b, int kind, tpj_hlo_value_t y,
                                     tpj_hlo_value_t k, tpj_hlo_value_t p, tpj_hlo_value_t q) {
  switch (kind) {
    case TPJ_POLY_H: /* 2y q - 2k p */
      return SUB(MUL(ADD(y, y), q), MUL(ADD(k, k), p));
    case TPJ_POLY_HE: /* y q - k p */
      return SUB(MUL(y, q), MUL(k, p));
    case TPJ_POLY_L: /* ((2k + (1 - y)) q - k p) / (k + 1) */
      return DIV(SUB(MUL(ADD(ADD(k, k), SUB(C(y, 1.0), y)), q), MUL(k, p)), ADD(k, C(k, 1.0)));
    case TPJ_POLY_P: /* ((2k + 1) y q - k p) / (k + 1) */
      return DIV(SUB(MUL(MUL(ADD(ADD(k, k), C(k, 1.0)), y), q), MUL(k, p)), ADD(k, C(k, 1.0)));
    default: /* Chebyshev: 2y q - p */
      return SUB(MUL(ADD(y, y), q), p);
  }
}

/* loop state: y, kend (last counter value, per element), p, q, k (0-d) */
enum { S_Y, S_KEND, S_P, S_Q, S_K, S_N };

static tpj_hlo_value_t tpj_poly_active(tpj_hlo_builder_t* b, const tpj_hlo_value_t* s) {
  tpj_hlo_value_t k = tpj_hlo_emit_broadcast_to(b, s[S_K], s[S_Q].dims, s[S_Q].ndim);
  return AND(CMP(k, s[S_KEND], "LE"), CMP(s[S_Q], s[S_Q], "EQ"));
}

static void tpj_poly_cond(tpj_hlo_builder_t* b, const tpj_hlo_value_t* s, int n, void* ctx,
                          tpj_hlo_value_t* out) {
  (void)n, (void)ctx;
  tpj_hlo_value_t act = tpj_poly_active(b, s);
  int64_t dims[TPJ_MAX_DIMS];
  for (int i = 0; i < act.ndim; i++) dims[i] = i;
  out[0] = tpj_hlo_emit_reduce(b, act, tpj_hlo_emit_zero(b, TPJ_BOOL), dims, act.ndim,
                               "stablehlo.or");
}

static void tpj_poly_body(tpj_hlo_builder_t* b, const tpj_hlo_value_t* s, int n, void* ctx,
                          tpj_hlo_value_t* out) {
  (void)n;
  int kind = *(const int*)ctx;
  tpj_hlo_value_t act = tpj_poly_active(b, s);
  tpj_hlo_value_t k = tpj_hlo_emit_broadcast_to(b, s[S_K], s[S_Q].dims, s[S_Q].ndim);
  tpj_hlo_value_t r = tpj_poly_step(b, kind, s[S_Y], k, s[S_P], s[S_Q]);
  out[S_Y] = s[S_Y];
  out[S_KEND] = s[S_KEND];
  out[S_P] = SEL(act, s[S_Q], s[S_P]);
  out[S_Q] = SEL(act, r, s[S_Q]);
  out[S_K] = ADD(s[S_K], tpj_hlo_emit_const_f64(b, s[S_K].dtype, 1.0));
}

/* (-1)^n v for an integer-valued n */
static tpj_hlo_value_t tpj_poly_parity(tpj_hlo_builder_t* b, tpj_hlo_value_t n,
                                       tpj_hlo_value_t v) {
  tpj_hlo_value_t half = MUL(n, C(n, 0.5));
  return SEL(CMP(U("stablehlo.floor", half), half, "EQ"), v, U("stablehlo.negate", v));
}

void tpj_lower_orthopoly(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (ctx->nin < 2 || ctx->nattrs < 2 || ctx->nouts < 1 || ctx->attrs[1] < 0 ||
      ctx->attrs[1] >= TPJ_POLY_COUNT || (ctx->attrs[0] != TPJ_F32 && ctx->attrs[0] != TPJ_F64)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "orthopoly: bad operands"));
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[0];
  int kind = (int)ctx->attrs[1];
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[0], cd, o->dims, o->ndim);
  tpj_hlo_value_t n0 = tpj_ops_cast_to(b, ctx->in[1], cd, o->dims, o->ndim);
  tpj_hlo_value_t one = C(x, 1.0), zero = C(x, 0.0);
  /* CPU's int64 cast of n: toward zero; NaN, inf and out-of-range give
   * INT64_MIN on x86 (a negative degree) */
  tpj_hlo_value_t fin = CMP(U("stablehlo.abs", n0), C(x, 9.2233720368547758e18), "LT");
  tpj_hlo_value_t n = SEL(fin, SEL(CMP(n0, zero, "LT"), U("stablehlo.ceil", n0),
                                   U("stablehlo.floor", n0)), C(x, -1.0));
  int cheb = tpj_poly_is_cheb(kind), shifted = kind >= TPJ_POLY_ST && kind <= TPJ_POLY_SW;
  int base = cheb ? kind % 4 : -1; /* 0 T, 1 U, 2 V, 3 W */
  tpj_hlo_value_t y = shifted ? SUB(ADD(x, x), one) : x;
  tpj_hlo_value_t two_n1 = ADD(ADD(n, n), one), n1 = ADD(n, one);
  /* the degree-1 value, which also starts the recurrence */
  tpj_hlo_value_t q1;
  switch (kind) {
    case TPJ_POLY_H: q1 = ADD(x, x); break;
    case TPJ_POLY_HE: case TPJ_POLY_P: q1 = x; break;
    case TPJ_POLY_L: q1 = SUB(one, x); break;
    default:
      q1 = base == 0 ? y : base == 1 ? ADD(y, y) : base == 2 ? SUB(ADD(y, y), one)
                                                           : ADD(ADD(y, y), one);
  }
  tpj_hlo_value_t special = CMP(n, zero, "LT"), val = zero;  /* n < 0 -> 0 */
  /* the recurrence counters run from k0 to kend */
  double k0 = cheb ? 2.0 : 1.0;
  tpj_hlo_value_t kend = cheb ? n : SUB(n, one);
  tpj_hlo_value_t is0 = CMP(n, zero, "EQ"), is1 = CMP(n, one, "EQ");
#define TAKE(cond, v)                                             \
  do {                                                            \
    tpj_hlo_value_t c_ = AND(U("stablehlo.not", special), cond);  \
    val = SEL(c_, v, val);                                        \
    special = OR(special, c_);                                    \
  } while (0)
  if (cheb || kind == TPJ_POLY_P) {
    /* the ends: y == 1 and y == -1 (x == 1 and x == 0 when shifted) */
    tpj_hlo_value_t end = shifted ? OR(CMP(x, one, "EQ"), CMP(x, zero, "EQ"))
                                  : CMP(U("stablehlo.abs", x), one, "EQ");
    tpj_hlo_value_t pos = shifted ? CMP(x, one, "EQ") : CMP(x, zero, "GT");
    tpj_hlo_value_t ev;
    switch (base) {
      case 1: ev = SEL(pos, n1, tpj_poly_parity(b, n, n1)); break;
      case 2: ev = SEL(pos, one, tpj_poly_parity(b, n, two_n1)); break;
      case 3: ev = SEL(pos, two_n1, tpj_poly_parity(b, n, one)); break;
      default: ev = SEL(pos, one, tpj_poly_parity(b, n, one)); break; /* T and P */
    }
    TAKE(end, ev);
  }
  if (cheb) {
    /* large n inside (-1, 1): the trigonometric forms */
    double lim = kind == TPJ_POLY_T || kind == TPJ_POLY_ST ? 6.0
                 : kind == TPJ_POLY_SW                     ? 4.0
                 : shifted                                 ? 6.0
                                                           : 8.0;
    tpj_hlo_value_t inside = AND(CMP(n, C(x, lim), "GT"),
                                 CMP(U("stablehlo.abs", y), one, "LT"));
    tpj_hlo_value_t th = U("chlo.acos", y), tv;
    tpj_hlo_value_t half = DIV(th, C(x, 2.0)), nh = ADD(n, C(x, 0.5));
    switch (base) {
      case 0: tv = U("stablehlo.cosine", MUL(n, th)); break;
      case 1: {
        tpj_hlo_value_t s = U("stablehlo.sine", th);
        tv = SEL(CMP(s, zero, "NE"), DIV(U("stablehlo.sine", MUL(n1, th)), s),
                 DIV(MUL(n1, U("stablehlo.cosine", MUL(n1, th))), y));
        break;
      }
      case 2:
        tv = SEL(CMP(U("stablehlo.sine", half), one, "NE"),
                 DIV(U("stablehlo.cosine", MUL(nh, th)), U("stablehlo.cosine", half)),
                 tpj_poly_parity(b, n, two_n1));
        break;
      default: {
        /* CPU's shifted W has no y > 0 case here */
        tpj_hlo_value_t edge = shifted ? tpj_poly_parity(b, n, one)
                                       : SEL(CMP(y, zero, "GT"), two_n1,
                                             tpj_poly_parity(b, n, one));
        tv = SEL(CMP(U("stablehlo.cosine", half), one, "NE"),
                 DIV(U("stablehlo.sine", MUL(nh, th)), U("stablehlo.sine", half)), edge);
      }
    }
    TAKE(inside, tv);
  }
  if (kind == TPJ_POLY_L) TAKE(CMP(x, zero, "EQ"), one);
  TAKE(is0, one);
  TAKE(is1, q1);
  if (kind == TPJ_POLY_H || kind == TPJ_POLY_HE)
    TAKE(CMP(n, C(x, cd == TPJ_F32 ? 128.0 : 512.0), "GT"), C(x, NAN));
#undef TAKE
  /* everything else runs the recurrence from p = 1, q = q1 */
  tpj_hlo_value_t init[S_N];
  init[S_Y] = y;
  init[S_KEND] = SEL(special, C(x, -1.0), kend);
  init[S_P] = one;
  init[S_Q] = q1;
  init[S_K] = tpj_hlo_emit_const_f64(b, cd, k0);
  tpj_hlo_value_t fin_state[S_N];
  tpj_hlo_emit_while(b, init, S_N, tpj_poly_cond, tpj_poly_body, &kind, fin_state);
  tpj_hlo_value_t r = SEL(special, val, fin_state[S_Q]);
  results[0] = tpj_hlo_emit_convert(b, r, o->dtype);
}
