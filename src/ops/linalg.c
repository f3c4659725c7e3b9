/* ops/linalg: matrix products through dot_general (mm, addmm and the
 * forms that share them, _grouped_mm), linalg_cross and linalg_matrix_exp;
 * the decompositions are in ops/linalg_decomp.c. Products: attrs[0] is the compute
 * dtype (PyTorch requires both operands to share it); for addmm/baddbmm
 * attrs[1] != 0 adds beta * in[0] (in[3] is beta when attrs[2]), and
 * attrs[3] != 0 scales the product by alpha (in[4], or in[3] without beta). */
#include <math.h>

#include "hlo/sort.h"
#include "ops/lower_util.h"
#include "ops/ops.h"

static tpj_hlo_value_t tpj_matmul(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t y,
                                  tpj_dtype_t dt) {
  x = tpj_hlo_emit_convert(b, x, dt);
  y = tpj_hlo_emit_convert(b, y, dt);
  if (x.ndim == 3 && y.ndim == 3) {
    int64_t xb = 0, yb = 0, xc = 2, yc = 1;
    return tpj_hlo_emit_dot_general(b, x, y, &xb, &yb, 1, &xc, &yc, 1, dt);
  }
  /* mm (2x2), mv (2x1), dot (1x1): x's last dim against y's first */
  int64_t xc = x.ndim - 1, yc = 0;
  return tpj_hlo_emit_dot_general(b, x, y, NULL, NULL, 0, &xc, &yc, 1, dt);
}

void tpj_lower_mm(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nin < 2) {
    tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "mm needs two operands"));
    return;
  }
  results[0] = tpj_matmul(ctx->b, ctx->in[0], ctx->in[1], o->dtype);
}

void tpj_lower_addmm(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nin < 3 || ctx->nattrs < 4) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "addmm: bad operands"));
    return;
  }
  int next = 3;
  tpj_hlo_value_t p = tpj_matmul(b, ctx->in[1], ctx->in[2], o->dtype);
  tpj_hlo_value_t beta = {-1, 0, TPJ_DTYPE_INVALID, 0, {0}}, alpha = beta;
  if (ctx->attrs[2]) beta = ctx->in[next++];
  if (ctx->attrs[3]) alpha = ctx->in[next++];
  if (ctx->nin < next) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "addmm: missing scalars"));
    return;
  }
  if (ctx->attrs[3]) p = tpj_hlo_emit_binary(b, "stablehlo.multiply", p,
                                             tpj_ops_cast_to(b, alpha, o->dtype, o->dims, o->ndim));
  if (ctx->attrs[1]) {
    /* beta == 0 drops the bias entirely (NaNs in it do not propagate) */
    tpj_hlo_value_t bias = tpj_ops_cast_to(b, ctx->in[0], o->dtype, o->dims, o->ndim);
    if (ctx->attrs[2])
      bias = tpj_hlo_emit_binary(b, "stablehlo.multiply", bias,
                                 tpj_ops_cast_to(b, beta, o->dtype, o->dims, o->ndim));
    p = tpj_hlo_emit_binary(b, o->dtype == TPJ_BOOL ? "stablehlo.or" : "stablehlo.add", p, bias);
  }
  results[0] = p;
}

#define ADD(x, y) tpj_hlo_emit_binary(b, "stablehlo.add", x, y)
#define SUB(x, y) tpj_hlo_emit_binary(b, "stablehlo.subtract", x, y)
#define MUL(x, y) tpj_hlo_emit_binary(b, "stablehlo.multiply", x, y)
#define CMP(x, y, d) tpj_hlo_emit_compare(b, x, y, d)

/* aten::linalg_cross: attrs[0] dim (wrapped, of the broadcast shape). Both
 * operands go to the output's dtype and dims; component i is
 * a[i+1] * b[i+2] - a[i+2] * b[i+1], as CPU's kernel computes it. */
void tpj_lower_linalg_cross(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_ops_need(ctx, 2, 1, 1, "linalg_cross")) return;
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[0], o->dtype, o->dims, o->ndim);
  tpj_hlo_value_t y = tpj_ops_cast_to(b, ctx->in[1], o->dtype, o->dims, o->ndim);
  int dim = (int)ctx->attrs[0];
  tpj_hlo_value_t c[3];
  for (int i = 0; i < 3; ++i) {
    int j = (i + 1) % 3, k = (i + 2) % 3;
    c[i] = SUB(MUL(tpj_ops_element_at(b, x, dim, j), tpj_ops_element_at(b, y, dim, k)),
               MUL(tpj_ops_element_at(b, x, dim, k), tpj_ops_element_at(b, y, dim, j)));
  }
  results[0] = tpj_hlo_emit_concatenate(b, c, 3, dim);
}

/* ---- linalg_matrix_exp ------------------------------------------------------- */

/* a @ c over the leading batch dims of [..., n, n] values */
static tpj_hlo_value_t matmul(tpj_hlo_builder_t* b, tpj_hlo_value_t a, tpj_hlo_value_t c) {
  int64_t batch[TPJ_MAX_DIMS];
  int nb = a.ndim - 2;
  for (int d = 0; d < nb; ++d) batch[d] = d;
  int64_t ac = a.ndim - 1, cc = a.ndim - 2;
  return tpj_hlo_emit_dot_general(b, a, c, batch, batch, nb, &ac, &cc, 1, a.dtype);
}

/* aten::linalg_matrix_exp: attrs[0] the squarings s (the glue picks the
 * smallest with ||A||_1 / 2^s <= 1 over the batch), attrs[1] the compute
 * dtype (the glue sends half types to CPU's kernel). exp(A) = T(A / 2^s)^(2^s), T the degree-18
 * Taylor polynomial in Horner form: its truncation error at norm 1 is
 * below 1/19!, far under float64's precision. */
void tpj_lower_matrix_exp(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_ops_need(ctx, 1, 2, 1, "linalg_matrix_exp")) return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[1];
  int64_t s = ctx->attrs[0];
  tpj_hlo_value_t a = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  tpj_dtype_t rd = cd == TPJ_C64 ? TPJ_F32 : cd == TPJ_C128 ? TPJ_F64 : cd;
  /* a scalar v of cd shaped like a */
  #define CD_FULL(v)                                                                         \
    (rd == cd ? tpj_ops_full_like(b, a, cd, (v))                                                     \
              : tpj_hlo_emit_complex(b, tpj_ops_full_like(b, a, rd, (v)), tpj_ops_full_like(b, a, rd, 0.0)))
  tpj_hlo_value_t x = MUL(a, CD_FULL(ldexp(1.0, (int)-s)));
  int n = a.ndim;
  tpj_hlo_value_t eye_r = tpj_hlo_emit_convert(
      b, CMP(tpj_hlo_emit_iota(b, TPJ_I64, a.dims, n, n - 2),
             tpj_hlo_emit_iota(b, TPJ_I64, a.dims, n, n - 1), "EQ"), rd);
  tpj_hlo_value_t eye = rd == cd ? eye_r : tpj_hlo_emit_complex(b, eye_r, tpj_ops_full_like(b, a, rd, 0.0));
  tpj_hlo_value_t e = ADD(eye, MUL(x, CD_FULL(1.0 / 18)));
  for (int k = 17; k >= 1; --k) e = ADD(eye, MUL(matmul(b, x, e), CD_FULL(1.0 / k)));
  #undef CD_FULL
  for (int64_t i = 0; i < s; ++i) e = matmul(b, e, e);
  results[0] = tpj_hlo_emit_convert(b, e, ctx->outs[0].dtype);
}

/* aten::_grouped_mm, the layouts MoE layers use. attrs[0] layout, attrs[1]
 * has bias, attrs[2] the accumulation dtype:
 *   0: a (m, k) x b (g, k, n) with offs (g) int32, the cumulative row counts
 *      of the groups: row i uses b[group(i)]; rows from offs[g-1] on are 0.
 *   1: a (g, m, k) x b (g, k, n): a batched product.
 *   2: a (m, s) x b (s, n) with offs (g) over s: out[e] = the product of
 *      group e's columns of a and rows of b, (g, m, n) -- the weight
 *      gradient of layout 0; no bias.
 * Inputs: a, b, then offs (layouts 0 and 2), then bias (g, n) when present.
 * Layout 0 multiplies every row by every group's matrix and keeps its own
 * group's product (g times the work of one product, none of it
 * data-dependent, so a compiled graph never depends on the routing). */
void tpj_lower_grouped_mm(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_ops_need(ctx, 2, 3, 0, "_grouped_mm")) return;
  tpj_hlo_builder_t* b = ctx->b;
  int layout = (int)ctx->attrs[0], has_bias = (int)ctx->attrs[1];
  tpj_dtype_t acc = (tpj_dtype_t)ctx->attrs[2];
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t a = ctx->in[0], w = ctx->in[1];
  if (layout == 1) {
    int64_t bat = 0, ac = 2, wc = 1;
    tpj_hlo_value_t r = tpj_hlo_emit_dot_general(b, a, w, &bat, &bat, 1, &ac, &wc, 1, acc);
    if (has_bias && tpj_ops_need(ctx, 3, 3, 0, "_grouped_mm")) {
      int64_t bd[2] = {0, 2};
      tpj_hlo_value_t bias = tpj_hlo_emit_convert(b, ctx->in[2], acc);
      r = tpj_hlo_emit_binary(b, "stablehlo.add", r,
                              tpj_hlo_emit_broadcast_in_dim(b, bias, r.dims, 3, bd));
    }
    results[0] = tpj_hlo_emit_convert(b, r, o->dtype);
    return;
  }
  if (!tpj_ops_need(ctx, 3 + has_bias, 3, 0, "_grouped_mm")) return;
  if (layout == 2) {
    int64_t m = a.dims[0], sl = a.dims[1], g = ctx->in[2].dims[0];
    int64_t sg[2] = {sl, g}, gd = 1, over = 1;
    tpj_hlo_value_t offs = tpj_hlo_emit_convert(b, ctx->in[2], TPJ_I64);
    tpj_hlo_value_t past = tpj_hlo_emit_compare(
        b, tpj_hlo_emit_iota(b, TPJ_I64, sg, 2, 0),
        tpj_hlo_emit_broadcast_in_dim(b, offs, sg, 2, &gd), "GE");
    tpj_hlo_value_t grp = tpj_hlo_emit_reduce(b, tpj_hlo_emit_convert(b, past, TPJ_I64),
                                              tpj_hlo_emit_zero(b, TPJ_I64), &over, 1,
                                              "stablehlo.add");
    int64_t gs[2] = {g, sl}, sd = 1;
    tpj_hlo_value_t mask = tpj_hlo_emit_compare(
        b, tpj_hlo_emit_broadcast_in_dim(b, grp, gs, 2, &sd), tpj_hlo_emit_iota(b, TPJ_I64, gs, 2, 0),
        "EQ");
    int64_t gms[3] = {g, m, sl}, md[2] = {0, 2}, ad[2] = {1, 2};
    tpj_hlo_value_t ag = tpj_hlo_emit_select(
        b, tpj_hlo_emit_broadcast_in_dim(b, mask, gms, 3, md),
        tpj_hlo_emit_broadcast_in_dim(b, a, gms, 3, ad),
        tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, a.dtype), gms, 3));
    int64_t agc = 2, wc = 0;
    tpj_hlo_value_t r = tpj_hlo_emit_dot_general(b, ag, w, NULL, NULL, 0, &agc, &wc, 1, acc);
    results[0] = tpj_hlo_emit_convert(b, r, o->dtype);
    return;
  }
  int64_t m = a.dims[0], g = w.dims[0], n = w.dims[2];
  /* all[i, e, :] = a[i] @ w[e]: contract a's dim 1 with w's dim 1. */
  int64_t ac = 1, wc = 1;
  tpj_hlo_value_t all = tpj_hlo_emit_dot_general(b, a, w, NULL, NULL, 0, &ac, &wc, 1, acc);
  /* group(i) = the number of offsets <= i (g for rows past the last group). */
  int64_t mg[2] = {m, g}, rd = 0, gd = 1;
  tpj_hlo_value_t offs = tpj_hlo_emit_convert(b, ctx->in[2], TPJ_I64);
  tpj_hlo_value_t row = tpj_hlo_emit_iota(b, TPJ_I64, mg, 2, 0);
  tpj_hlo_value_t past = tpj_hlo_emit_compare(
      b, row, tpj_hlo_emit_broadcast_in_dim(b, offs, mg, 2, &gd), "GE");
  int64_t over = 1;
  tpj_hlo_value_t grp = tpj_hlo_emit_reduce(b, tpj_hlo_emit_convert(b, past, TPJ_I64),
                                            tpj_hlo_emit_zero(b, TPJ_I64), &over, 1,
                                            "stablehlo.add");
  int64_t mgn[3] = {m, g, n}, gd3[2] = {0, 1};
  tpj_hlo_value_t mine = tpj_hlo_emit_compare(
      b, tpj_hlo_emit_broadcast_in_dim(b, grp, mg, 2, &rd), tpj_hlo_emit_iota(b, TPJ_I64, mg, 2, 1),
      "EQ");
  tpj_hlo_value_t mine3 = tpj_hlo_emit_broadcast_in_dim(b, mine, mgn, 3, gd3);
  tpj_hlo_value_t zero = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, acc), mgn, 3);
  if (has_bias) {
    int64_t bd[2] = {1, 2};
    tpj_hlo_value_t bias = tpj_hlo_emit_convert(b, ctx->in[3], acc);
    all = tpj_hlo_emit_binary(b, "stablehlo.add", all,
                              tpj_hlo_emit_broadcast_in_dim(b, bias, mgn, 3, bd));
  }
  tpj_hlo_value_t kept = tpj_hlo_emit_select(b, mine3, all, zero);
  tpj_hlo_value_t r = tpj_hlo_emit_reduce(b, kept, tpj_hlo_emit_zero(b, acc), &over, 1,
                                          "stablehlo.add");
  results[0] = tpj_hlo_emit_convert(b, r, o->dtype);
}
