/* ops/hf: ops that Hugging Face Transformers models reach and no other
 * family covers: isin (generate()'s stopping criteria), histc and
 * _grouped_mm (mixture-of-experts routing: tokens per expert, then one
 * matrix product per expert group). Operands arrive in the dtypes the glue
 * chose (PyTorch's promotion is done there); output dtypes and dims are
 * PyTorch's (ctx->outs). */
#include "ops/ops.h"

static int need(tpj_op_ctx_t* ctx, int nin, int nattrs, const char* op) {
  if (ctx->nin >= nin && ctx->nattrs >= nattrs) return 1;
  tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "%s: bad operands", op));
  return 0;
}

static tpj_hlo_value_t flat(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  int64_t n = tpj_hlo_numel(&x);
  return tpj_hlo_emit_reshape(b, x, &n, 1);
}

/* aten::isin.Tensor_Tensor: in[0] elements, in[1] test elements (any
 * shape, 0-d for a scalar; both in one dtype); attrs[0] invert. Every
 * element is compared with every test element: generate() tests a few
 * token ids, so n * m stays small. NaN is in nothing, as on CPU. */
void tpj_lower_isin(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!need(ctx, 2, 1, "isin")) return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t x = flat(b, ctx->in[0]), t = flat(b, ctx->in[1]);
  int64_t dims[2] = {x.dims[0], t.dims[0]};
  int64_t xd = 0, td = 1;
  tpj_hlo_value_t eq = tpj_hlo_emit_compare(b, tpj_hlo_emit_broadcast_in_dim(b, x, dims, 2, &xd),
                                            tpj_hlo_emit_broadcast_in_dim(b, t, dims, 2, &td),
                                            "EQ");
  int64_t over = 1;
  tpj_hlo_value_t any = tpj_hlo_emit_reduce(b, eq, tpj_hlo_emit_zero(b, TPJ_BOOL), &over, 1,
                                            "stablehlo.or");
  if (ctx->attrs[0]) any = tpj_hlo_emit_unary(b, "stablehlo.not", any);
  results[0] = tpj_hlo_emit_reshape(b, any, ctx->outs[0].dims, ctx->outs[0].ndim);
}

/* The dtype histc compares in: a float input's own (CPU computes its bin
 * edges in it), float64 for integers. */
static tpj_dtype_t histc_dtype(tpj_dtype_t dt) {
  return tpj_dtype_is_float(dt) ? dt : TPJ_F64;
}

static tpj_hlo_value_t bcast(tpj_hlo_builder_t* b, tpj_hlo_value_t s, const int64_t* dims,
                             int ndim) {
  return tpj_hlo_emit_broadcast_to(b, s, dims, ndim);
}

/* aten::histc: in[0] x (any shape, not empty), in[1] min and in[2] max
 * (0-d runtime values in the compare dtype, so a new range does not
 * recompile); attrs[0] bins. As CPU: min == max means the data's range, a
 * still-empty range widens to [min - 1, max + 1]; an element lands in bin k
 * when edge[k] <= x < edge[k + 1] with edges = linspace(min, max, bins + 1)
 * (the last bin includes max); elements outside [min, max] and NaN are not
 * counted. Counting is a one-hot sum, n * bins work: MoE routing counts
 * n tokens into a few dozen experts. */
void tpj_lower_histc(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!need(ctx, 3, 1, "histc")) return;
  tpj_hlo_builder_t* b = ctx->b;
  int64_t bins = ctx->attrs[0];
  tpj_dtype_t cd = histc_dtype(ctx->in[0].dtype);
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, flat(b, ctx->in[0]), cd);
  tpj_hlo_value_t lo = tpj_hlo_emit_convert(b, ctx->in[1], cd);
  tpj_hlo_value_t hi = tpj_hlo_emit_convert(b, ctx->in[2], cd);
  int64_t d0 = 0;
  tpj_hlo_value_t dmin = tpj_hlo_emit_reduce(b, x, tpj_hlo_emit_extreme(b, cd, 1), &d0, 1,
                                             "stablehlo.minimum");
  tpj_hlo_value_t dmax = tpj_hlo_emit_reduce(b, x, tpj_hlo_emit_extreme(b, cd, 0), &d0, 1,
                                             "stablehlo.maximum");
  tpj_hlo_value_t same = tpj_hlo_emit_compare(b, lo, hi, "EQ");
  lo = tpj_hlo_emit_select(b, same, dmin, lo);
  hi = tpj_hlo_emit_select(b, same, dmax, hi);
  tpj_hlo_value_t one = tpj_hlo_emit_one(b, cd);
  same = tpj_hlo_emit_compare(b, lo, hi, "EQ");
  lo = tpj_hlo_emit_select(b, same, tpj_hlo_emit_binary(b, "stablehlo.subtract", lo, one), lo);
  hi = tpj_hlo_emit_select(b, same, tpj_hlo_emit_binary(b, "stablehlo.add", hi, one), hi);

  /* The inner edges 1..bins-1 as CPU's linspace computes them: from the
   * start in the first half, back from the end in the second. */
  int64_t nin = bins - 1 > 0 ? bins - 1 : 0;
  tpj_hlo_value_t k = tpj_hlo_emit_iota(b, cd, &nin, 1, 0);
  k = tpj_hlo_emit_binary(b, "stablehlo.add", k, bcast(b, one, &nin, 1));
  tpj_hlo_value_t nb = tpj_hlo_emit_const_f64(b, cd, (double)bins);
  tpj_hlo_value_t step = tpj_hlo_emit_binary(
      b, "stablehlo.divide", tpj_hlo_emit_binary(b, "stablehlo.subtract", hi, lo), nb);
  tpj_hlo_value_t stepv = bcast(b, step, &nin, 1);
  tpj_hlo_value_t front = tpj_hlo_emit_binary(
      b, "stablehlo.add", bcast(b, lo, &nin, 1), tpj_hlo_emit_binary(b, "stablehlo.multiply",
                                                                     stepv, k));
  tpj_hlo_value_t back = tpj_hlo_emit_binary(
      b, "stablehlo.subtract", bcast(b, hi, &nin, 1),
      tpj_hlo_emit_binary(b, "stablehlo.multiply", stepv,
                          tpj_hlo_emit_binary(b, "stablehlo.subtract", bcast(b, nb, &nin, 1), k)));
  tpj_hlo_value_t half = tpj_hlo_emit_const_f64(b, cd, (double)((bins + 1) / 2));
  tpj_hlo_value_t edges = tpj_hlo_emit_select(
      b, tpj_hlo_emit_compare(b, k, bcast(b, half, &nin, 1), "LT"), front, back);

  /* bin(x) = the number of inner edges <= x. */
  int64_t n = x.dims[0];
  int64_t ne[2] = {n, nin}, xd = 0, ed = 1;
  tpj_hlo_value_t ge = tpj_hlo_emit_compare(b, tpj_hlo_emit_broadcast_in_dim(b, x, ne, 2, &xd),
                                            tpj_hlo_emit_broadcast_in_dim(b, edges, ne, 2, &ed),
                                            "GE");
  int64_t over = 1;
  tpj_hlo_value_t bin = tpj_hlo_emit_reduce(b, tpj_hlo_emit_convert(b, ge, TPJ_I64),
                                            tpj_hlo_emit_zero(b, TPJ_I64), &over, 1,
                                            "stablehlo.add");
  tpj_hlo_value_t inside = tpj_hlo_emit_binary(
      b, "stablehlo.and", tpj_hlo_emit_compare(b, x, bcast(b, lo, &n, 1), "GE"),
      tpj_hlo_emit_compare(b, x, bcast(b, hi, &n, 1), "LE"));

  /* One-hot rows (n, bins), counted in int64 (exact), then PyTorch's dtype. */
  int64_t nbins[2] = {n, bins}, bd = 0;
  tpj_hlo_value_t ids = tpj_hlo_emit_iota(b, TPJ_I64, nbins, 2, 1);
  tpj_hlo_value_t hit = tpj_hlo_emit_binary(
      b, "stablehlo.and",
      tpj_hlo_emit_compare(b, tpj_hlo_emit_broadcast_in_dim(b, bin, nbins, 2, &bd), ids, "EQ"),
      tpj_hlo_emit_broadcast_in_dim(b, inside, nbins, 2, &bd));
  int64_t rows = 0;
  tpj_hlo_value_t counts = tpj_hlo_emit_reduce(b, tpj_hlo_emit_convert(b, hit, TPJ_I64),
                                               tpj_hlo_emit_zero(b, TPJ_I64), &rows, 1,
                                               "stablehlo.add");
  results[0] = tpj_hlo_emit_convert(b, counts, ctx->outs[0].dtype);
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
  if (!need(ctx, 2, 3, "_grouped_mm")) return;
  tpj_hlo_builder_t* b = ctx->b;
  int layout = (int)ctx->attrs[0], has_bias = (int)ctx->attrs[1];
  tpj_dtype_t acc = (tpj_dtype_t)ctx->attrs[2];
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t a = ctx->in[0], w = ctx->in[1];
  if (layout == 1) {
    int64_t bat = 0, ac = 2, wc = 1;
    tpj_hlo_value_t r = tpj_hlo_emit_dot_general(b, a, w, &bat, &bat, 1, &ac, &wc, 1, acc);
    if (has_bias && need(ctx, 3, 3, "_grouped_mm")) {
      int64_t bd[2] = {0, 2};
      tpj_hlo_value_t bias = tpj_hlo_emit_convert(b, ctx->in[2], acc);
      r = tpj_hlo_emit_binary(b, "stablehlo.add", r,
                              tpj_hlo_emit_broadcast_in_dim(b, bias, r.dims, 3, bd));
    }
    results[0] = tpj_hlo_emit_convert(b, r, o->dtype);
    return;
  }
  if (!need(ctx, 3 + has_bias, 3, "_grouped_mm")) return;
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
