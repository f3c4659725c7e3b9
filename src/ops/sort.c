/* ops/sort: sort, topk, kthvalue, median, nanmedian, mode, argmax/argmin,
 * max/min with indices, unique_consecutive, isin, and the scans cumsum,
 * cumprod, logcumsumexp, cummax/cummin and complex cumsum/cumprod. Indices are int64.
 * PyTorch's orders hold: NaN is the largest value, sorting is stable, and
 * max/min/argmax/argmin pick the first extreme (the first NaN when there is
 * one). Output dtypes and dims are PyTorch's (ctx->outs); a 0-d operand is
 * handled as a 1-element vector. */
#include <math.h>

#include "hlo/sort.h"
#include "ops/attrs.h"
#include "ops/lower_util.h"
#include "ops/ops.h"
#include "ops/sugar.h"

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

/* Exported for nanmedian and mode (below): the same keys, so those
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

/* aten::sort.stable: attrs tpj_attrs_sort_t. */
void tpj_lower_sort(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!need(ctx, 1, TPJ_ATTRS_WORDS(tpj_attrs_sort_t), "sort")) return;
  const tpj_attrs_sort_t* at = TPJ_ATTRS(ctx, tpj_attrs_sort_t);
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t x = at_least_1d(b, ctx->in[0]), v, i;
  sort_with_indices(b, x, (int)at->dim, (int)at->descending, &v, &i);
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

/* aten::topk: attrs tpj_attrs_topk_t. The result is always sorted
 * (sorted=False leaves the order unspecified). */
void tpj_lower_topk(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!need(ctx, 1, TPJ_ATTRS_WORDS(tpj_attrs_topk_t), "topk")) return;
  const tpj_attrs_topk_t* at = TPJ_ATTRS(ctx, tpj_attrs_topk_t);
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t x = at_least_1d(b, ctx->in[0]), v, i;
  int dim = (int)at->dim;
  sort_with_indices(b, x, dim, (int)at->largest, &v, &i);
  /* a 0-d input's result is 0-d, its one element and index 0, for k = 0
   * too: CPU's kernel returns it as for k = 1 (its output shape keeps the
   * 0-d shape, so k cannot shrink it) */
  int64_t k = ctx->in[0].ndim == 0 ? 1 : at->k;
  v = narrow(b, v, dim, 0, k);
  i = narrow(b, i, dim, 0, k);
  results[0] = tpj_hlo_emit_reshape(b, v, ctx->outs[0].dims, ctx->outs[0].ndim);
  results[1] = tpj_hlo_emit_reshape(b, i, ctx->outs[1].dims, ctx->outs[1].ndim);
}

/* aten::kthvalue: attrs tpj_attrs_kthvalue_t. */
void tpj_lower_kthvalue(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!need(ctx, 1, TPJ_ATTRS_WORDS(tpj_attrs_kthvalue_t), "kthvalue")) return;
  const tpj_attrs_kthvalue_t* at = TPJ_ATTRS(ctx, tpj_attrs_kthvalue_t);
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t x = at_least_1d(b, ctx->in[0]), v, i;
  int dim = (int)at->dim;
  sort_with_indices(b, x, dim, 0, &v, &i);
  v = narrow(b, v, dim, at->k - 1, 1);
  i = narrow(b, i, dim, at->k - 1, 1);
  results[0] = tpj_hlo_emit_reshape(b, v, ctx->outs[0].dims, ctx->outs[0].ndim);
  results[1] = tpj_hlo_emit_reshape(b, i, ctx->outs[1].dims, ctx->outs[1].ndim);
}

/* x flattened when the attribute dim says "all dims" (< 0), else x (>= 1-D)
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

/* aten::median.dim (two outputs) and aten::median (one): attrs
 * tpj_attrs_select_t. The lower median; when the slice holds a NaN, the
 * first NaN and its index, as CPU's kernel returns. */
void tpj_lower_median(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!need(ctx, 1, TPJ_ATTRS_WORDS(tpj_attrs_select_t), "median")) return;
  const tpj_attrs_select_t* at = TPJ_ATTRS(ctx, tpj_attrs_select_t);
  tpj_hlo_builder_t* b = ctx->b;
  int dim;
  tpj_hlo_value_t x = prepare_dim(b, ctx->in[0], at->dim, &dim), v, i;
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
 * aten::argmax / argmin (index): attrs tpj_attrs_select_t. */
static void lower_extreme(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, int is_max,
                          int want_values, int want_index) {
  if (!need(ctx, 1, TPJ_ATTRS_WORDS(tpj_attrs_select_t), "max/min")) return;
  const tpj_attrs_select_t* at = TPJ_ATTRS(ctx, tpj_attrs_select_t);
  tpj_hlo_builder_t* b = ctx->b;
  int dim;
  tpj_hlo_value_t x = prepare_dim(b, ctx->in[0], at->dim, &dim), v, i;
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

/* aten::cumsum / cumprod / logcumsumexp: attrs tpj_attrs_scan_t (the
 * compute dtype float32 for half outputs, as CPU accumulates). */
static void lower_scan(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, tpj_hlo_scan_t op) {
  if (!need(ctx, 1, TPJ_ATTRS_WORDS(tpj_attrs_scan_t), "cumulative op")) return;
  const tpj_attrs_scan_t* at = TPJ_ATTRS(ctx, tpj_attrs_scan_t);
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_dtype_t cd = at->compute > 0 ? (tpj_dtype_t)at->compute : o->dtype;
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, at_least_1d(b, ctx->in[0]), cd);
  tpj_hlo_value_t r = tpj_hlo_emit_cumulative(b, x, (int)at->dim, op, 0);
  r = tpj_hlo_emit_convert(b, r, o->dtype);
  results[0] = tpj_hlo_emit_reshape(b, r, o->dims, o->ndim);
}

void tpj_lower_cumsum(tpj_op_ctx_t* c, tpj_hlo_value_t* r) { lower_scan(c, r, TPJ_HLO_SCAN_ADD); }
void tpj_lower_cumprod(tpj_op_ctx_t* c, tpj_hlo_value_t* r) { lower_scan(c, r, TPJ_HLO_SCAN_MUL); }
void tpj_lower_logcumsumexp(tpj_op_ctx_t* c, tpj_hlo_value_t* r) {
  lower_scan(c, r, TPJ_HLO_SCAN_LOGADDEXP);
}

#define ADD(x, y) tpj_hlo_emit_binary(b, "stablehlo.add", x, y)
#define SUB(x, y) tpj_hlo_emit_binary(b, "stablehlo.subtract", x, y)
#define MUL(x, y) tpj_hlo_emit_binary(b, "stablehlo.multiply", x, y)
#define CMP(x, y, d) tpj_hlo_emit_compare(b, x, y, d)
#define SEL(c, x, y) tpj_hlo_emit_select(b, c, x, y)

/* The integer holding x's bits (floats), x as u8 (bool), or x itself. */
static tpj_hlo_value_t as_bits(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  if (x.dtype == TPJ_BOOL) return tpj_hlo_emit_convert(b, x, TPJ_U8);
  if (!tpj_dtype_is_float(x.dtype)) return x;
  tpj_dtype_t it = x.dtype == TPJ_F64 ? TPJ_I64 : x.dtype == TPJ_F32 ? TPJ_I32 : TPJ_I16;
  return tpj_hlo_emit_bitcast_convert(b, x, it, x.dims, x.ndim);
}

static tpj_hlo_value_t from_bits(tpj_hlo_builder_t* b, tpj_hlo_value_t bits, tpj_dtype_t dt) {
  if (dt == TPJ_BOOL) return tpj_hlo_emit_convert(b, bits, TPJ_BOOL);
  if (!tpj_dtype_is_float(dt)) return bits;
  return tpj_hlo_emit_bitcast_convert(b, bits, dt, bits.dims, bits.ndim);
}

/* The element of x where mask (one true per slice along dim) holds, bit
 * exact: the bits are summed with zeros, so no float arithmetic touches
 * the value. The result drops dim. */
static tpj_hlo_value_t pick(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t mask,
                            int dim) {
  tpj_hlo_value_t bits = as_bits(b, x);
  tpj_hlo_value_t z = tpj_hlo_emit_zero(b, bits.dtype);
  tpj_hlo_value_t sel = SEL(mask, bits, tpj_hlo_emit_broadcast_to(b, z, bits.dims, bits.ndim));
  int64_t rd = dim;
  return from_bits(b, tpj_hlo_emit_reduce(b, sel, z, &rd, 1, "stablehlo.add"), x.dtype);
}

/* x as at least 1-D, flattened when all (a 0-d value becomes [1]). */
static tpj_hlo_value_t prepare(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int all) {
  if (x.ndim > 0 && !all) return x;
  int64_t n = tpj_hlo_numel(&x);
  return tpj_hlo_emit_reshape(b, x, &n, 1);
}

/* x sorted along dim by sort's order keys: keys, int64 indices, values. */
static void sorted(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int dim, tpj_hlo_value_t* out) {
  tpj_hlo_value_t xs[3] = {tpj_ops_order_key(b, x),
                           tpj_hlo_emit_iota(b, TPJ_I64, x.dims, x.ndim, dim), x};
  tpj_hlo_emit_sort(b, xs, 3, dim, 0, out);
}

static void finish2(tpj_op_ctx_t* ctx, tpj_hlo_value_t v, tpj_hlo_value_t i,
                    tpj_hlo_value_t* results) {
  results[0] = tpj_hlo_emit_reshape(ctx->b, v, ctx->outs[0].dims, ctx->outs[0].ndim);
  if (ctx->nouts > 1)
    results[1] = tpj_hlo_emit_reshape(ctx->b, i, ctx->outs[1].dims, ctx->outs[1].ndim);
}

/* aten::nanmedian.dim (two outputs) and aten::nanmedian (one): attrs
 * tpj_attrs_nanmedian_t (nan_index optional). Sorted with NaN last, a
 * slice's k non-NaN values come first; the result is position (k - 1) / 2. */
void tpj_lower_nanmedian(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_ops_need(ctx, 1, 1, 1, "nanmedian")) return;
  const tpj_attrs_nanmedian_t* at = TPJ_ATTRS(ctx, tpj_attrs_nanmedian_t);
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t x = prepare(b, ctx->in[0], at->dim < 0);
  int dim = at->dim < 0 || ctx->in[0].ndim == 0 ? 0 : (int)at->dim;
  int64_t rd = dim;
  tpj_hlo_value_t s[3];
  sorted(b, x, dim, s);
  tpj_hlo_value_t k;
  if (tpj_dtype_is_float(x.dtype)) {
    tpj_hlo_value_t ok = tpj_hlo_emit_convert(b, CMP(x, x, "EQ"), TPJ_I64);
    k = tpj_hlo_emit_reduce(b, ok, tpj_hlo_emit_zero(b, TPJ_I64), &rd, 1, "stablehlo.add");
  } else {
    tpj_hlo_value_t r = tpj_hlo_emit_reduce(b, x, tpj_hlo_emit_zero(b, x.dtype), &rd, 1,
                                            "stablehlo.add");
    k = tpj_ops_i64_like(b, r, x.dims[dim]);
  }
  tpj_hlo_value_t pos = tpj_hlo_emit_binary(
      b, "stablehlo.divide",
      tpj_hlo_emit_binary(b, "stablehlo.maximum", SUB(k, tpj_ops_i64_like(b, k, 1)), tpj_ops_i64_like(b, k, 0)),
      tpj_ops_i64_like(b, k, 2));
  tpj_hlo_value_t hit = CMP(tpj_hlo_emit_iota(b, TPJ_I64, x.dims, x.ndim, dim),
                            tpj_ops_unreduce(b, pos, x.dims, x.ndim, &rd, 1), "EQ");
  tpj_hlo_value_t idx = pick(b, s[1], hit, dim);
  if (tpj_dtype_is_float(x.dtype) && ctx->nattrs > 1)
    idx = SEL(CMP(k, tpj_ops_i64_like(b, k, 0), "EQ"), tpj_ops_i64_like(b, k, at->nan_index), idx);
  finish2(ctx, pick(b, s[2], hit, dim), idx, results);
}

/* aten::mode: attrs tpj_attrs_select_t. CPU's kernel sorts the slice and
 * walks its runs of equal values, keeping the first run longer than every
 * earlier one: the smallest of the most frequent values, with the index of
 * the last element of its run (CPU's sort keeps equal elements in order on
 * slices of up to 16). A third output, when asked for, is the longest run
 * of all slices: the glue checks that longer slices had no repeated mode
 * (whose index CPU's introsort would choose).  Runs are found on sort's keys; the
 * run ends, sorted once more, give each run's length. */
void tpj_lower_mode(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_ops_need(ctx, 1, TPJ_ATTRS_WORDS(tpj_attrs_select_t), 2, "mode")) return;
  const tpj_attrs_select_t* at = TPJ_ATTRS(ctx, tpj_attrs_select_t);
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t x = prepare(b, ctx->in[0], 0);
  int dim = ctx->in[0].ndim == 0 ? 0 : (int)at->dim;
  int64_t n = x.dims[dim], rd = dim;
  tpj_hlo_value_t s[3];
  sorted(b, x, dim, s);
  tpj_hlo_value_t iota = tpj_hlo_emit_iota(b, TPJ_I64, x.dims, x.ndim, dim);
  /* is_end[i]: the last element of a run (key differs from the next) */
  tpj_hlo_value_t is_end;
  if (n > 1) {
    int64_t lo[TPJ_MAX_DIMS] = {0}, hi[TPJ_MAX_DIMS], st[TPJ_MAX_DIMS];
    for (int d = 0; d < x.ndim; ++d) hi[d] = x.dims[d], st[d] = 1;
    hi[dim] = n - 1;
    tpj_hlo_value_t cur = tpj_hlo_emit_slice(b, s[0], lo, hi, st);
    lo[dim] = 1;
    hi[dim] = n;
    tpj_hlo_value_t next = tpj_hlo_emit_slice(b, s[0], lo, hi, st);
    tpj_hlo_value_t last = CMP(tpj_ops_element_at(b, iota, dim, 0), tpj_ops_element_at(b, iota, dim, 0), "EQ");
    tpj_hlo_value_t parts[2] = {CMP(cur, next, "NE"), last};
    is_end = tpj_hlo_emit_concatenate(b, parts, 2, dim);
  } else {
    is_end = CMP(iota, iota, "EQ");
  }
  /* run r ends at e[r] (r < runs); positions past the runs hold n + i */
  tpj_hlo_value_t key = SEL(is_end, iota, ADD(iota, tpj_ops_i64_like(b, iota, n)));
  tpj_hlo_value_t e;
  tpj_hlo_emit_sort(b, &key, 1, dim, 0, &e);
  tpj_hlo_value_t prev;
  if (n > 1) {
    int64_t lo[TPJ_MAX_DIMS] = {0}, hi[TPJ_MAX_DIMS], st[TPJ_MAX_DIMS];
    for (int d = 0; d < x.ndim; ++d) hi[d] = x.dims[d], st[d] = 1;
    hi[dim] = n - 1;
    tpj_hlo_value_t parts[2] = {tpj_ops_i64_like(b, tpj_ops_element_at(b, iota, dim, 0), -1),
                                tpj_hlo_emit_slice(b, e, lo, hi, st)};
    prev = tpj_hlo_emit_concatenate(b, parts, 2, dim);
  } else {
    prev = tpj_ops_i64_like(b, e, -1);
  }
  tpj_hlo_value_t valid = CMP(e, tpj_ops_i64_like(b, e, n), "LT");
  tpj_hlo_value_t len = SEL(valid, SUB(e, prev), tpj_ops_i64_like(b, e, 0));
  tpj_hlo_value_t top = tpj_hlo_emit_reduce(b, len, tpj_hlo_emit_zero(b, TPJ_I64), &rd, 1,
                                            "stablehlo.maximum");
  tpj_hlo_value_t is_top = CMP(len, tpj_ops_unreduce(b, top, x.dims, x.ndim, &rd, 1), "EQ");
  tpj_hlo_value_t best = tpj_hlo_emit_reduce(b, SEL(is_top, iota, tpj_ops_i64_like(b, iota, n)),
                                             tpj_hlo_emit_extreme(b, TPJ_I64, 1), &rd, 1,
                                             "stablehlo.minimum");
  tpj_hlo_value_t end = pick(b, e, CMP(iota, tpj_ops_unreduce(b, best, x.dims, x.ndim, &rd, 1),
                                       "EQ"), dim);
  tpj_hlo_value_t hit = CMP(iota, tpj_ops_unreduce(b, end, x.dims, x.ndim, &rd, 1), "EQ");
  finish2(ctx, pick(b, s[2], hit, dim), pick(b, s[1], hit, dim), results);
  if (ctx->nouts > 2) { /* the longest run of any slice (0-d) */
    int64_t all[TPJ_MAX_DIMS];
    for (int d = 0; d < top.ndim; ++d) all[d] = d;
    results[2] = tpj_hlo_emit_reduce(b, top, tpj_hlo_emit_zero(b, TPJ_I64), all, top.ndim,
                                     "stablehlo.maximum");
  }
}

/* ---- unique_consecutive --------------------------------------------------- */

/* x as rows: dim moved to the front, the rest flattened ([n, m]); all
 * flattens x to [n, 1]. */
static tpj_hlo_value_t tpj_ops_rows(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int dim, int all) {
  int64_t n = tpj_hlo_numel(&x);
  if (all || x.ndim == 0) {
    int64_t d2[2] = {n, 1};
    return tpj_hlo_emit_reshape(b, x, d2, 2);
  }
  int64_t perm[TPJ_MAX_DIMS];
  int k = 0;
  perm[k++] = dim;
  for (int d = 0; d < x.ndim; ++d)
    if (d != dim) perm[k++] = d;
  tpj_hlo_value_t t = tpj_hlo_emit_transpose(b, x, perm);
  int64_t d2[2] = {x.dims[dim], x.dims[dim] ? n / x.dims[dim] : 0};
  return tpj_hlo_emit_reshape(b, t, d2, 2);
}

/* x != y as CPU's `!=` decides it, without float compares (XLA:CPU's flush
 * subnormals to zero): a NaN differs from everything, +0.0 equals -0.0,
 * any other pair differs when its bits do. */
static tpj_hlo_value_t differs(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t y) {
  if (!tpj_dtype_is_float(x.dtype)) return CMP(as_bits(b, x), as_bits(b, y), "NE");
  tpj_hlo_value_t xb = as_bits(b, x), yb = as_bits(b, y);
  tpj_hlo_value_t mag = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_extreme(b, xb.dtype, 1), xb.dims,
                                                  xb.ndim);
  tpj_hlo_value_t z = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, xb.dtype), xb.dims, xb.ndim);
  tpj_hlo_value_t zeros = tpj_hlo_emit_binary(
      b, "stablehlo.and", CMP(tpj_hlo_emit_binary(b, "stablehlo.and", xb, mag), z, "EQ"),
      CMP(tpj_hlo_emit_binary(b, "stablehlo.and", yb, mag), z, "EQ"));
  tpj_hlo_value_t nan = tpj_hlo_emit_binary(b, "stablehlo.or", CMP(x, x, "NE"), CMP(y, y, "NE"));
  tpj_hlo_value_t bits = tpj_hlo_emit_binary(b, "stablehlo.and", CMP(xb, yb, "NE"),
                                             tpj_hlo_emit_unary(b, "stablehlo.not", zeros));
  return tpj_hlo_emit_binary(b, "stablehlo.or", nan, bits);
}

/* starts[i] (bool [n]): row i begins a run (i == 0, or it differs from row
 * i - 1 anywhere). rs is [n, m] with n >= 1. */
static tpj_hlo_value_t run_starts(tpj_hlo_builder_t* b, tpj_hlo_value_t rs) {
  int64_t n = rs.dims[0], one = 1;
  tpj_hlo_value_t first = tpj_hlo_emit_broadcast_to(
      b, tpj_hlo_emit_extreme(b, TPJ_BOOL, 1), &one, 1);
  if (n == 1) return first;
  int64_t lo[2] = {1, 0}, hi[2] = {n, rs.dims[1]}, st[2] = {1, 1};
  tpj_hlo_value_t cur = tpj_hlo_emit_slice(b, rs, lo, hi, st);
  lo[0] = 0;
  hi[0] = n - 1;
  tpj_hlo_value_t prev = tpj_hlo_emit_slice(b, rs, lo, hi, st);
  int64_t rd = 1;
  tpj_hlo_value_t any = tpj_hlo_emit_reduce(b, differs(b, cur, prev),
                                            tpj_hlo_emit_zero(b, TPJ_BOOL), &rd, 1, "stablehlo.or");
  tpj_hlo_value_t parts[2] = {first, any};
  return tpj_hlo_emit_concatenate(b, parts, 2, 0);
}

/* tpj::unique_consecutive_count: attrs tpj_attrs_select_t; the number
 * of runs (int64, 0-d). The glue reads it on the host to size the outputs
 * of aten::unique_consecutive, as nonzero's count is read. */
void tpj_lower_unique_consecutive_count(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_ops_need(ctx, 1, TPJ_ATTRS_WORDS(tpj_attrs_select_t), 1, "unique_consecutive")) return;
  const tpj_attrs_select_t* at = TPJ_ATTRS(ctx, tpj_attrs_select_t);
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t rs = tpj_ops_rows(b, ctx->in[0], (int)at->dim, at->dim < 0);
  int64_t rd = 0;
  tpj_hlo_value_t st = tpj_hlo_emit_convert(b, run_starts(b, rs), TPJ_I64);
  results[0] = tpj_hlo_emit_reduce(b, st, tpj_hlo_emit_zero(b, TPJ_I64), &rd, 1, "stablehlo.add");
}

/* aten::unique_consecutive: attrs tpj_attrs_unique_consecutive_t. Outputs: the first row of
 * each run (outs[0]), each row's run number (outs[1]) and each run's
 * length (outs[2]). Run starts, sorted to the front, give both. */
void tpj_lower_unique_consecutive(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_ops_need(ctx, 1, TPJ_ATTRS_WORDS(tpj_attrs_unique_consecutive_t), 3,
                    "unique_consecutive"))
    return;
  const tpj_attrs_unique_consecutive_t* at = TPJ_ATTRS(ctx, tpj_attrs_unique_consecutive_t);
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t x = ctx->in[0];
  int all = at->dim < 0, dim = all ? 0 : (int)at->dim;
  int64_t runs = at->runs;
  tpj_hlo_value_t rs = tpj_ops_rows(b, x, dim, all);
  int64_t n = rs.dims[0];
  tpj_hlo_value_t st = run_starts(b, rs);
  tpj_hlo_value_t iota = tpj_hlo_emit_iota(b, TPJ_I64, &n, 1, 0);
  tpj_hlo_value_t key = SEL(st, iota, ADD(iota, tpj_ops_i64_like(b, iota, n)));
  tpj_hlo_value_t starts;
  tpj_hlo_emit_sort(b, &key, 1, 0, 0, &starts);
  starts = tpj_ops_range_1d(b, starts, 0, runs);
  /* values: the start rows, back in x's layout */
  tpj_hlo_value_t v = tpj_hlo_emit_take(b, rs, starts, 0);
  if (all || x.ndim == 0) {
    v = tpj_hlo_emit_reshape(b, v, ctx->outs[0].dims, ctx->outs[0].ndim);
  } else {
    int64_t td[TPJ_MAX_DIMS], perm[TPJ_MAX_DIMS];
    int k = 0;
    td[k++] = runs;
    for (int d = 0; d < x.ndim; ++d)
      if (d != dim) td[k++] = x.dims[d];
    v = tpj_hlo_emit_reshape(b, v, td, x.ndim);
    /* td's order is (dim, others...): put dim back */
    for (int d = 0, j = 1; d < x.ndim; ++d) perm[d] = d == dim ? 0 : j++;
    v = tpj_hlo_emit_transpose(b, v, perm);
  }
  results[0] = v;
  tpj_hlo_value_t inv = SUB(tpj_hlo_emit_cumulative(b, tpj_hlo_emit_convert(b, st, TPJ_I64), 0,
                                                    TPJ_HLO_SCAN_ADD, 0),
                            tpj_ops_i64_like(b, iota, 1));
  results[1] = tpj_hlo_emit_reshape(b, inv, ctx->outs[1].dims, ctx->outs[1].ndim);
  int64_t one = 1;
  tpj_hlo_value_t ends_parts[2] = {tpj_ops_range_1d(b, starts, 1, runs),
                                   tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, n),
                                                             &one, 1)};
  tpj_hlo_value_t ends = tpj_hlo_emit_concatenate(b, ends_parts, 2, 0);
  results[2] = tpj_hlo_emit_reshape(b, SUB(ends, starts), ctx->outs[2].dims, ctx->outs[2].ndim);
}

/* ---- complex scans ---------------------------------------------------------- */

/* tpj::complex_scan (cumsum / cumprod of complex values): attrs
 * tpj_attrs_complex_scan_t. The operand is converted to the
 * output's complex dtype first. A sum scans the real and imaginary parts
 * (exactly what complex addition does); a product doubles its reach
 * log2(n) times (y[i] *= y[i - s] for s = 1, 2, 4, ...), since the scan
 * emitter takes real operands only. */
void tpj_lower_complex_scan(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_ops_need(ctx, 1, TPJ_ATTRS_WORDS(tpj_attrs_complex_scan_t), 1, "complex scan")) return;
  const tpj_attrs_complex_scan_t* at = TPJ_ATTRS(ctx, tpj_attrs_complex_scan_t);
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, prepare(b, ctx->in[0], 0), o->dtype);
  int dim = ctx->in[0].ndim == 0 ? 0 : (int)at->dim;
  tpj_hlo_value_t r;
  if (!at->product) {
    r = tpj_hlo_emit_complex(
        b, tpj_hlo_emit_cumulative(b, tpj_hlo_emit_real(b, x), dim, TPJ_HLO_SCAN_ADD, 0),
        tpj_hlo_emit_cumulative(b, tpj_hlo_emit_imag(b, x), dim, TPJ_HLO_SCAN_ADD, 0));
  } else {
    tpj_dtype_t rd = o->dtype == TPJ_C128 ? TPJ_F64 : TPJ_F32;
    tpj_hlo_value_t one = tpj_hlo_emit_complex(b, tpj_hlo_emit_one(b, rd),
                                               tpj_hlo_emit_zero(b, rd));
    int64_t n = x.dims[dim];
    r = x;
    for (int64_t s = 1; s < n; s *= 2) {
      int64_t lo[TPJ_MAX_DIMS] = {0}, hi[TPJ_MAX_DIMS], st[TPJ_MAX_DIMS];
      int64_t plo[TPJ_MAX_DIMS] = {0}, phi[TPJ_MAX_DIMS] = {0};
      for (int d = 0; d < x.ndim; ++d) hi[d] = x.dims[d], st[d] = 1;
      hi[dim] = n - s;
      plo[dim] = s;
      tpj_hlo_value_t shifted = tpj_hlo_emit_pad(b, tpj_hlo_emit_slice(b, r, lo, hi, st), one,
                                                 plo, phi);
      r = MUL(r, shifted);
    }
  }
  results[0] = tpj_hlo_emit_reshape(b, r, o->dims, o->ndim);
}

#define ISNAN(x) CMP(x, x, "NE")

/* _cummax_helper / _cummin_helper: attrs tpj_attrs_cummaxmin_t; results
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
  if (ctx->nin < 1 || ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_cummaxmin_t) || ctx->nouts < 2) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "cummax/cummin: bad operands"));
    return;
  }
  const tpj_attrs_cummaxmin_t* at = TPJ_ATTRS(ctx, tpj_attrs_cummaxmin_t);
  int dim = (int)at->dim, is_max = at->is_max != 0;
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

/* aten::isin.Tensor_Tensor: in[0] elements, in[1] test elements (any
 * shape, 0-d for a scalar; both in one dtype); attrs tpj_attrs_isin_t. Every
 * element is compared with every test element: generate() tests a few
 * token ids, so n * m stays small. NaN is in nothing, as on CPU. */
void tpj_lower_isin(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_ops_need(ctx, 2, TPJ_ATTRS_WORDS(tpj_attrs_isin_t), 0, "isin")) return;
  const tpj_attrs_isin_t* at = TPJ_ATTRS(ctx, tpj_attrs_isin_t);
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t x = tpj_ops_flat(b, ctx->in[0]), t = tpj_ops_flat(b, ctx->in[1]);
  int64_t dims[2] = {x.dims[0], t.dims[0]};
  int64_t xd = 0, td = 1;
  tpj_hlo_value_t eq = tpj_hlo_emit_compare(b, tpj_hlo_emit_broadcast_in_dim(b, x, dims, 2, &xd),
                                            tpj_hlo_emit_broadcast_in_dim(b, t, dims, 2, &td),
                                            "EQ");
  int64_t over = 1;
  tpj_hlo_value_t any = tpj_hlo_emit_reduce(b, eq, tpj_hlo_emit_zero(b, TPJ_BOOL), &over, 1,
                                            "stablehlo.or");
  if (at->invert) any = tpj_hlo_emit_unary(b, "stablehlo.not", any);
  results[0] = tpj_hlo_emit_reshape(b, any, ctx->outs[0].dims, ctx->outs[0].ndim);
}
