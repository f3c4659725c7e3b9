/* ops/sort: sort, topk, kthvalue, median, argmax/argmin, max/min with
 * indices, and the scans cumsum, cumprod, logcumsumexp. Indices are int64.
 * PyTorch's orders hold: NaN is the largest value, sorting is stable, and
 * max/min/argmax/argmin pick the first extreme (the first NaN when there is
 * one). Output dtypes and dims are PyTorch's (ctx->outs); a 0-d operand is
 * handled as a 1-element vector. */
#include <math.h>

#include "hlo/sort.h"
#include "ops/ops.h"

static int need(tpj_op_ctx_t* ctx, int nin, int nattrs, const char* op) {
  if (ctx->nin >= nin && ctx->nattrs >= nattrs) return 1;
  tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "%s: bad operands", op));
  return 0;
}

/* x as at least 1-D (a 0-d value becomes [1]). */
static tpj_hlo_value_t at_least_1d(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  if (x.ndim > 0) return x;
  int64_t one = 1;
  return tpj_hlo_emit_reshape(b, x, &one, 1);
}

tpj_hlo_value_t tpj_ops_unreduce(tpj_hlo_builder_t* b, tpj_hlo_value_t r, const int64_t* dims,
                                 int ndim, const int64_t* rdims, int nrdims) {
  int64_t bdims[TPJ_MAX_DIMS];
  int k = 0, j = 0;
  for (int d = 0; d < ndim; ++d) {
    if (j < nrdims && rdims[j] == d) ++j;
    else bdims[k++] = d;
  }
  return tpj_hlo_emit_broadcast_in_dim(b, r, dims, ndim, bdims);
}

tpj_hlo_value_t tpj_ops_is_nan(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  return tpj_hlo_emit_compare(b, x, x, "NE");
}

/* A bool key sorts as u8 (StableHLO compares i1 only for equality). */
static tpj_hlo_value_t sortable(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  return x.dtype == TPJ_BOOL ? tpj_hlo_emit_convert(b, x, TPJ_U8) : x;
}

static tpj_dtype_t bits_dtype(tpj_dtype_t dt) {
  return dt == TPJ_F64 ? TPJ_I64 : dt == TPJ_F32 ? TPJ_I32 : TPJ_I16;
}

/* An integer key ordered like PyTorch orders the floats x: the bit pattern
 * with the magnitude bits of negatives flipped, -0.0 mapped to 0.0 and
 * every NaN to the largest key. Comparing bits, not floats, keeps
 * subnormals apart from zero where XLA:CPU's float compares flush them. */
static tpj_hlo_value_t float_key(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  tpj_dtype_t it = bits_dtype(x.dtype);
  int64_t inf = x.dtype == TPJ_F64 ? 0x7FF0000000000000LL : x.dtype == TPJ_F32 ? 0x7F800000
                : x.dtype == TPJ_F16 ? 0x7C00 : 0x7F80;
  tpj_hlo_value_t i = tpj_hlo_emit_bitcast_convert(b, x, it, x.dims, x.ndim);
  tpj_hlo_value_t maxpos = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_extreme(b, it, 1), x.dims,
                                                     x.ndim);
  tpj_hlo_value_t zero = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, it), x.dims, x.ndim);
  tpj_hlo_value_t infb = tpj_hlo_emit_broadcast_to(
      b, tpj_hlo_emit_convert(b, tpj_hlo_emit_const_i64(b, inf), it), x.dims, x.ndim);
  tpj_hlo_value_t mag = tpj_hlo_emit_binary(b, "stablehlo.and", i, maxpos);
  tpj_hlo_value_t k = tpj_hlo_emit_select(b, tpj_hlo_emit_compare(b, i, zero, "LT"),
                                          tpj_hlo_emit_binary(b, "stablehlo.xor", i, maxpos), i);
  k = tpj_hlo_emit_select(b, tpj_hlo_emit_compare(b, mag, zero, "EQ"), zero, k);
  return tpj_hlo_emit_select(b, tpj_hlo_emit_compare(b, mag, infb, "GT"), maxpos, k);
}

/* The key x sorts and reduces by: itself (bool as u8), or float_key. */
static tpj_hlo_value_t order_key(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  return tpj_dtype_is_float(x.dtype) ? float_key(b, x) : sortable(b, x);
}

/* Exported for src/ops/misc2.c (nanmedian, mode): the same keys, so those
 * orders agree with sort's. */
tpj_hlo_value_t tpj_ops_order_key(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  return order_key(b, x);
}

/* values and int64 indices of x sorted along dim; the values move as
 * payload, so they come out bit-exact. */
static void sort_with_indices(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int dim, int descending,
                              tpj_hlo_value_t* vals, tpj_hlo_value_t* idx) {
  tpj_hlo_value_t xs[3] = {order_key(b, x), tpj_hlo_emit_iota(b, TPJ_I64, x.dims, x.ndim, dim),
                           x};
  tpj_hlo_value_t out[3];
  tpj_hlo_emit_sort(b, xs, 3, dim, descending, out);
  *vals = out[2];
  *idx = out[1];
}

/* aten::sort.stable: attrs[0] dim (wrapped), attrs[1] descending. */
void tpj_lower_sort(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!need(ctx, 1, 2, "sort")) return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t x = at_least_1d(b, ctx->in[0]), v, i;
  sort_with_indices(b, x, (int)ctx->attrs[0], (int)ctx->attrs[1], &v, &i);
  results[0] = tpj_hlo_emit_reshape(b, v, ctx->outs[0].dims, ctx->outs[0].ndim);
  results[1] = tpj_hlo_emit_reshape(b, i, ctx->outs[1].dims, ctx->outs[1].ndim);
}

/* Elements [start, start + len) of x along dim. */
static tpj_hlo_value_t narrow(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int dim, int64_t start,
                              int64_t len) {
  int64_t lo[TPJ_MAX_DIMS], hi[TPJ_MAX_DIMS], st[TPJ_MAX_DIMS];
  for (int d = 0; d < x.ndim; ++d) {
    lo[d] = d == dim ? start : 0;
    hi[d] = d == dim ? start + len : x.dims[d];
    st[d] = 1;
  }
  return tpj_hlo_emit_slice(b, x, lo, hi, st);
}

/* aten::topk: attrs[0] k, attrs[1] dim (wrapped), attrs[2] largest. The
 * result is always sorted (sorted=False leaves the order unspecified). */
void tpj_lower_topk(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!need(ctx, 1, 3, "topk")) return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t x = at_least_1d(b, ctx->in[0]), v, i;
  int dim = (int)ctx->attrs[1];
  sort_with_indices(b, x, dim, (int)ctx->attrs[2], &v, &i);
  v = narrow(b, v, dim, 0, ctx->attrs[0]);
  i = narrow(b, i, dim, 0, ctx->attrs[0]);
  results[0] = tpj_hlo_emit_reshape(b, v, ctx->outs[0].dims, ctx->outs[0].ndim);
  results[1] = tpj_hlo_emit_reshape(b, i, ctx->outs[1].dims, ctx->outs[1].ndim);
}

/* aten::kthvalue: attrs[0] k (1-based, checked), attrs[1] dim (wrapped). */
void tpj_lower_kthvalue(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!need(ctx, 1, 2, "kthvalue")) return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t x = at_least_1d(b, ctx->in[0]), v, i;
  int dim = (int)ctx->attrs[1];
  sort_with_indices(b, x, dim, 0, &v, &i);
  v = narrow(b, v, dim, ctx->attrs[0] - 1, 1);
  i = narrow(b, i, dim, ctx->attrs[0] - 1, 1);
  results[0] = tpj_hlo_emit_reshape(b, v, ctx->outs[0].dims, ctx->outs[0].ndim);
  results[1] = tpj_hlo_emit_reshape(b, i, ctx->outs[1].dims, ctx->outs[1].ndim);
}

/* x flattened when attrs says "all dims" (attrs[0] < 0), else x (>= 1-D)
 * with the dim to reduce in *dim. */
static tpj_hlo_value_t prepare_dim(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int64_t attr,
                                   int* dim) {
  if (attr < 0 || x.ndim == 0) {
    int64_t n = tpj_hlo_numel(&x);
    *dim = 0;
    return tpj_hlo_emit_reshape(b, x, &n, 1);
  }
  *dim = (int)attr;
  return x;
}

/* aten::median.dim (two outputs) and aten::median (one): attrs[0] dim
 * (wrapped; -1: all elements, flattened). The lower median; when the slice
 * holds a NaN, the first NaN and its index, as CPU's kernel returns. */
void tpj_lower_median(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!need(ctx, 1, 1, "median")) return;
  tpj_hlo_builder_t* b = ctx->b;
  int dim;
  tpj_hlo_value_t x = prepare_dim(b, ctx->in[0], ctx->attrs[0], &dim), v, i;
  int64_t n = x.dims[dim];
  sort_with_indices(b, x, dim, 0, &v, &i);
  v = narrow(b, v, dim, (n - 1) / 2, 1);
  i = narrow(b, i, dim, (n - 1) / 2, 1);
  if (tpj_dtype_is_float(x.dtype)) {
    /* the first NaN's index: min over NaN positions; n means none */
    int64_t rd = dim;
    tpj_hlo_value_t nan = tpj_ops_is_nan(b, x);
    tpj_hlo_value_t iota = tpj_hlo_emit_iota(b, TPJ_I64, x.dims, x.ndim, dim);
    tpj_hlo_value_t big = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, n), x.dims,
                                                    x.ndim);
    tpj_hlo_value_t first = tpj_hlo_emit_reduce(b, tpj_hlo_emit_select(b, nan, iota, big),
                                                tpj_hlo_emit_extreme(b, TPJ_I64, 1), &rd, 1,
                                                "stablehlo.minimum");
    first = tpj_hlo_emit_reshape(b, first, i.dims, i.ndim);
    tpj_hlo_value_t has = tpj_hlo_emit_compare(
        b, first, tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, n), i.dims, i.ndim),
        "LT");
    tpj_hlo_value_t q = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_f64(b, x.dtype, NAN),
                                                  v.dims, v.ndim);
    v = tpj_hlo_emit_select(b, has, q, v);
    i = tpj_hlo_emit_select(b, has, first, i);
  }
  results[0] = tpj_hlo_emit_reshape(b, v, ctx->outs[0].dims, ctx->outs[0].ndim);
  if (ctx->nouts > 1)
    results[1] = tpj_hlo_emit_reshape(b, i, ctx->outs[1].dims, ctx->outs[1].ndim);
}

/* The extreme of x along dim (a NaN when the slice has one) and the index
 * of its first occurrence, found on order keys (so NaN is the largest and
 * subnormals stay apart from zero); the value is then read out bit-exact
 * at that index. val and idx have x's dims without dim. */
static void extreme_with_index(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int dim, int is_max,
                               tpj_hlo_value_t* val, tpj_hlo_value_t* idx) {
  tpj_hlo_value_t k = order_key(b, x);
  int64_t rd = dim;
  int64_t n = x.dims[dim];
  tpj_hlo_value_t m = tpj_hlo_emit_reduce(b, k, tpj_hlo_emit_extreme(b, k.dtype, !is_max), &rd, 1,
                                          is_max ? "stablehlo.maximum" : "stablehlo.minimum");
  tpj_hlo_value_t match =
      tpj_hlo_emit_compare(b, k, tpj_ops_unreduce(b, m, k.dims, k.ndim, &rd, 1), "EQ");
  /* a NaN minimum: PyTorch's min also propagates NaN, so any NaN wins */
  if (!is_max && tpj_dtype_is_float(x.dtype)) {
    tpj_hlo_value_t nan = tpj_ops_is_nan(b, x);
    tpj_hlo_value_t any = tpj_hlo_emit_reduce(b, nan, tpj_hlo_emit_zero(b, TPJ_BOOL), &rd, 1,
                                              "stablehlo.or");
    match = tpj_hlo_emit_select(b, tpj_ops_unreduce(b, any, k.dims, k.ndim, &rd, 1), nan, match);
  }
  tpj_hlo_value_t iota = tpj_hlo_emit_iota(b, TPJ_I64, k.dims, k.ndim, dim);
  tpj_hlo_value_t big = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, n), k.dims, k.ndim);
  *idx = tpj_hlo_emit_reduce(b, tpj_hlo_emit_select(b, match, iota, big),
                             tpj_hlo_emit_extreme(b, TPJ_I64, 1), &rd, 1, "stablehlo.minimum");
  if (!tpj_dtype_is_float(x.dtype)) {
    *val = tpj_hlo_emit_convert(b, m, x.dtype);
    return;
  }
  /* the bits at idx: all other positions contribute 0 to an or-reduce */
  tpj_dtype_t it = bits_dtype(x.dtype);
  tpj_hlo_value_t bits = tpj_hlo_emit_bitcast_convert(b, x, it, x.dims, x.ndim);
  tpj_hlo_value_t at = tpj_hlo_emit_compare(b, iota, tpj_ops_unreduce(b, *idx, k.dims, k.ndim,
                                                                      &rd, 1), "EQ");
  tpj_hlo_value_t zero = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, it), x.dims, x.ndim);
  tpj_hlo_value_t v = tpj_hlo_emit_reduce(b, tpj_hlo_emit_select(b, at, bits, zero),
                                          tpj_hlo_emit_zero(b, it), &rd, 1, "stablehlo.or");
  *val = tpj_hlo_emit_bitcast_convert(b, v, x.dtype, v.dims, v.ndim);
}

/* aten::max.dim / min.dim (values, indices), aten::max / min (value) and
 * aten::argmax / argmin (index): attrs[0] dim (wrapped; -1: all elements). */
static void lower_extreme(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, int is_max,
                          int want_values, int want_index) {
  if (!need(ctx, 1, 1, "max/min")) return;
  tpj_hlo_builder_t* b = ctx->b;
  int dim;
  tpj_hlo_value_t x = prepare_dim(b, ctx->in[0], ctx->attrs[0], &dim), v, i;
  extreme_with_index(b, x, dim, is_max, &v, &i);
  int k = 0;
  if (want_values) {
    results[k] = tpj_hlo_emit_reshape(b, v, ctx->outs[k].dims, ctx->outs[k].ndim);
    ++k;
  }
  if (want_index) results[k] = tpj_hlo_emit_reshape(b, i, ctx->outs[k].dims, ctx->outs[k].ndim);
}

void tpj_lower_max_dim(tpj_op_ctx_t* c, tpj_hlo_value_t* r) { lower_extreme(c, r, 1, 1, 1); }
void tpj_lower_min_dim(tpj_op_ctx_t* c, tpj_hlo_value_t* r) { lower_extreme(c, r, 0, 1, 1); }
void tpj_lower_max_all(tpj_op_ctx_t* c, tpj_hlo_value_t* r) { lower_extreme(c, r, 1, 1, 0); }
void tpj_lower_min_all(tpj_op_ctx_t* c, tpj_hlo_value_t* r) { lower_extreme(c, r, 0, 1, 0); }
void tpj_lower_argmax(tpj_op_ctx_t* c, tpj_hlo_value_t* r) { lower_extreme(c, r, 1, 0, 1); }
void tpj_lower_argmin(tpj_op_ctx_t* c, tpj_hlo_value_t* r) { lower_extreme(c, r, 0, 0, 1); }

/* aten::cumsum / cumprod / logcumsumexp: attrs[0] dim (wrapped), attrs[1]
 * the compute dtype (float32 for half outputs, as CPU accumulates),
 * attrs[2] reverse (the suffix scan autograd's backward uses; 0 for the
 * user-facing ops). */
static void lower_scan(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, tpj_hlo_scan_t op) {
  if (!need(ctx, 1, 2, "cumulative op")) return;
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_dtype_t cd = ctx->attrs[1] > 0 ? (tpj_dtype_t)ctx->attrs[1] : o->dtype;
  int reverse = ctx->nattrs > 2 && ctx->attrs[2];
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, at_least_1d(b, ctx->in[0]), cd);
  tpj_hlo_value_t r = tpj_hlo_emit_cumulative(b, x, (int)ctx->attrs[0], op, reverse);
  r = tpj_hlo_emit_convert(b, r, o->dtype);
  results[0] = tpj_hlo_emit_reshape(b, r, o->dims, o->ndim);
}

void tpj_lower_cumsum(tpj_op_ctx_t* c, tpj_hlo_value_t* r) { lower_scan(c, r, TPJ_HLO_SCAN_ADD); }
void tpj_lower_cumprod(tpj_op_ctx_t* c, tpj_hlo_value_t* r) { lower_scan(c, r, TPJ_HLO_SCAN_MUL); }
void tpj_lower_logcumsumexp(tpj_op_ctx_t* c, tpj_hlo_value_t* r) {
  lower_scan(c, r, TPJ_HLO_SCAN_LOGADDEXP);
}
