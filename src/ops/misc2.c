/* ops/misc2: odds and ends that used to run on the CPU — linalg_cross,
 * nanmedian, mode, unique_consecutive, glu (+ backward), prelu (+ backward),
 * gcd and lcm, tril/triu_indices, segment_reduce — each written the way PyTorch's CPU kernel computes it.
 * Output dtypes and dims are PyTorch's (ctx->outs, from the meta functions
 * in csrc/misc2.cpp); a 0-d operand is read as a 1-element vector. */
#include <math.h>

#include "hlo/sort.h"
#include "ops/ops.h"

#define ADD(x, y) tpj_hlo_emit_binary(b, "stablehlo.add", x, y)
#define SUB(x, y) tpj_hlo_emit_binary(b, "stablehlo.subtract", x, y)
#define MUL(x, y) tpj_hlo_emit_binary(b, "stablehlo.multiply", x, y)
#define CMP(x, y, d) tpj_hlo_emit_compare(b, x, y, d)
#define SEL(c, x, y) tpj_hlo_emit_select(b, c, x, y)

static int need(tpj_op_ctx_t* ctx, int nin, int nattrs, int nouts, const char* op) {
  if (ctx->nin >= nin && ctx->nattrs >= nattrs && ctx->nouts >= nouts) return 1;
  tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "%s: bad operands", op));
  return 0;
}

/* the constant v (a double, exact for the integers used here) shaped like x */
static tpj_hlo_value_t full_like(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_dtype_t dt,
                                 double v) {
  return tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_f64(b, dt, v), x.dims, x.ndim);
}

static tpj_hlo_value_t i64_like(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int64_t v) {
  return tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, v), x.dims, x.ndim);
}

/* x's element k along dim (that dim kept, of size 1) */
static tpj_hlo_value_t element_at(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int dim, int64_t k) {
  int64_t lo[TPJ_MAX_DIMS], hi[TPJ_MAX_DIMS], st[TPJ_MAX_DIMS];
  for (int d = 0; d < x.ndim; ++d) {
    lo[d] = d == dim ? k : 0;
    hi[d] = d == dim ? k + 1 : x.dims[d];
    st[d] = 1;
  }
  return tpj_hlo_emit_slice(b, x, lo, hi, st);
}

/* Elements [lo, hi) of a 1-D value. */
static tpj_hlo_value_t range_1d(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int64_t lo, int64_t hi) {
  int64_t one = 1;
  return tpj_hlo_emit_slice(b, x, &lo, &hi, &one);
}

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

/* aten::linalg_cross: attrs[0] dim (wrapped, of the broadcast shape). Both
 * operands go to the output's dtype and dims; component i is
 * a[i+1] * b[i+2] - a[i+2] * b[i+1], as CPU's kernel computes it. */
void tpj_lower_linalg_cross(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!need(ctx, 2, 1, 1, "linalg_cross")) return;
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[0], o->dtype, o->dims, o->ndim);
  tpj_hlo_value_t y = tpj_ops_cast_to(b, ctx->in[1], o->dtype, o->dims, o->ndim);
  int dim = (int)ctx->attrs[0];
  tpj_hlo_value_t c[3];
  for (int i = 0; i < 3; ++i) {
    int j = (i + 1) % 3, k = (i + 2) % 3;
    c[i] = SUB(MUL(element_at(b, x, dim, j), element_at(b, y, dim, k)),
               MUL(element_at(b, x, dim, k), element_at(b, y, dim, j)));
  }
  results[0] = tpj_hlo_emit_concatenate(b, c, 3, dim);
}

/* aten::nanmedian.dim (two outputs) and aten::nanmedian (one): attrs[0]
 * dim (wrapped; -1: all elements, flattened), attrs[1] the index CPU's
 * kernel reports for a slice of NaNs only (std::nth_element's choice among
 * equivalent elements, which depends on the slice length alone; the glue
 * computes it). Sorted with NaN last, a slice's k non-NaN values come
 * first; the result is position (k - 1) / 2. */
void tpj_lower_nanmedian(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!need(ctx, 1, 1, 1, "nanmedian")) return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t x = prepare(b, ctx->in[0], ctx->attrs[0] < 0);
  int dim = ctx->attrs[0] < 0 || ctx->in[0].ndim == 0 ? 0 : (int)ctx->attrs[0];
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
    k = i64_like(b, r, x.dims[dim]);
  }
  tpj_hlo_value_t pos = tpj_hlo_emit_binary(
      b, "stablehlo.divide",
      tpj_hlo_emit_binary(b, "stablehlo.maximum", SUB(k, i64_like(b, k, 1)), i64_like(b, k, 0)),
      i64_like(b, k, 2));
  tpj_hlo_value_t at = CMP(tpj_hlo_emit_iota(b, TPJ_I64, x.dims, x.ndim, dim),
                           tpj_ops_unreduce(b, pos, x.dims, x.ndim, &rd, 1), "EQ");
  tpj_hlo_value_t idx = pick(b, s[1], at, dim);
  if (tpj_dtype_is_float(x.dtype) && ctx->nattrs > 1)
    idx = SEL(CMP(k, i64_like(b, k, 0), "EQ"), i64_like(b, k, ctx->attrs[1]), idx);
  finish2(ctx, pick(b, s[2], at, dim), idx, results);
}

/* aten::mode: attrs[0] dim (wrapped). CPU's kernel sorts the slice and
 * walks its runs of equal values, keeping the first run longer than every
 * earlier one: the smallest of the most frequent values, with the index of
 * the last element of its run (CPU's sort keeps equal elements in order on
 * slices of up to 16). A third output, when asked for, is the longest run
 * of all slices: the glue checks that longer slices had no repeated mode
 * (whose index CPU's introsort would choose).  Runs are found on sort's keys; the
 * run ends, sorted once more, give each run's length. */
void tpj_lower_mode(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!need(ctx, 1, 1, 2, "mode")) return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t x = prepare(b, ctx->in[0], 0);
  int dim = ctx->in[0].ndim == 0 ? 0 : (int)ctx->attrs[0];
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
    tpj_hlo_value_t last = CMP(element_at(b, iota, dim, 0), element_at(b, iota, dim, 0), "EQ");
    tpj_hlo_value_t parts[2] = {CMP(cur, next, "NE"), last};
    is_end = tpj_hlo_emit_concatenate(b, parts, 2, dim);
  } else {
    is_end = CMP(iota, iota, "EQ");
  }
  /* run r ends at e[r] (r < runs); positions past the runs hold n + i */
  tpj_hlo_value_t key = SEL(is_end, iota, ADD(iota, i64_like(b, iota, n)));
  tpj_hlo_value_t e;
  tpj_hlo_emit_sort(b, &key, 1, dim, 0, &e);
  tpj_hlo_value_t prev;
  if (n > 1) {
    int64_t lo[TPJ_MAX_DIMS] = {0}, hi[TPJ_MAX_DIMS], st[TPJ_MAX_DIMS];
    for (int d = 0; d < x.ndim; ++d) hi[d] = x.dims[d], st[d] = 1;
    hi[dim] = n - 1;
    tpj_hlo_value_t parts[2] = {i64_like(b, element_at(b, iota, dim, 0), -1),
                                tpj_hlo_emit_slice(b, e, lo, hi, st)};
    prev = tpj_hlo_emit_concatenate(b, parts, 2, dim);
  } else {
    prev = i64_like(b, e, -1);
  }
  tpj_hlo_value_t valid = CMP(e, i64_like(b, e, n), "LT");
  tpj_hlo_value_t len = SEL(valid, SUB(e, prev), i64_like(b, e, 0));
  tpj_hlo_value_t top = tpj_hlo_emit_reduce(b, len, tpj_hlo_emit_zero(b, TPJ_I64), &rd, 1,
                                            "stablehlo.maximum");
  tpj_hlo_value_t is_top = CMP(len, tpj_ops_unreduce(b, top, x.dims, x.ndim, &rd, 1), "EQ");
  tpj_hlo_value_t best = tpj_hlo_emit_reduce(b, SEL(is_top, iota, i64_like(b, iota, n)),
                                             tpj_hlo_emit_extreme(b, TPJ_I64, 1), &rd, 1,
                                             "stablehlo.minimum");
  tpj_hlo_value_t end = pick(b, e, CMP(iota, tpj_ops_unreduce(b, best, x.dims, x.ndim, &rd, 1),
                                       "EQ"), dim);
  tpj_hlo_value_t at = CMP(iota, tpj_ops_unreduce(b, end, x.dims, x.ndim, &rd, 1), "EQ");
  finish2(ctx, pick(b, s[2], at, dim), pick(b, s[1], at, dim), results);
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
static tpj_hlo_value_t rows(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int dim, int all) {
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

/* tpj::unique_consecutive_count: attrs[0] dim (-1: flattened); the number
 * of runs (int64, 0-d). The glue reads it on the host to size the outputs
 * of aten::unique_consecutive, as nonzero's count is read. */
void tpj_lower_unique_consecutive_count(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!need(ctx, 1, 1, 1, "unique_consecutive")) return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t rs = rows(b, ctx->in[0], (int)ctx->attrs[0], ctx->attrs[0] < 0);
  int64_t rd = 0;
  tpj_hlo_value_t st = tpj_hlo_emit_convert(b, run_starts(b, rs), TPJ_I64);
  results[0] = tpj_hlo_emit_reduce(b, st, tpj_hlo_emit_zero(b, TPJ_I64), &rd, 1, "stablehlo.add");
}

/* aten::unique_consecutive: attrs[0] dim (-1: flattened), attrs[1] the run
 * count R (from tpj::unique_consecutive_count). Outputs: the first row of
 * each run (outs[0]), each row's run number (outs[1]) and each run's
 * length (outs[2]). Run starts, sorted to the front, give both. */
void tpj_lower_unique_consecutive(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!need(ctx, 1, 2, 3, "unique_consecutive")) return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t x = ctx->in[0];
  int all = ctx->attrs[0] < 0, dim = all ? 0 : (int)ctx->attrs[0];
  int64_t runs = ctx->attrs[1];
  tpj_hlo_value_t rs = rows(b, x, dim, all);
  int64_t n = rs.dims[0];
  tpj_hlo_value_t st = run_starts(b, rs);
  tpj_hlo_value_t iota = tpj_hlo_emit_iota(b, TPJ_I64, &n, 1, 0);
  tpj_hlo_value_t key = SEL(st, iota, ADD(iota, i64_like(b, iota, n)));
  tpj_hlo_value_t starts;
  tpj_hlo_emit_sort(b, &key, 1, 0, 0, &starts);
  starts = range_1d(b, starts, 0, runs);
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
                            i64_like(b, iota, 1));
  results[1] = tpj_hlo_emit_reshape(b, inv, ctx->outs[1].dims, ctx->outs[1].ndim);
  int64_t one = 1;
  tpj_hlo_value_t ends_parts[2] = {range_1d(b, starts, 1, runs),
                                   tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, n),
                                                             &one, 1)};
  tpj_hlo_value_t ends = tpj_hlo_emit_concatenate(b, ends_parts, 2, 0);
  results[2] = tpj_hlo_emit_reshape(b, SUB(ends, starts), ctx->outs[2].dims, ctx->outs[2].ndim);
}

/* ---- glu, prelu ------------------------------------------------------------ */

/* glu's halves a and b of x along dim, in the compute dtype cd. */
static void halves(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int dim, tpj_dtype_t cd,
                   tpj_hlo_value_t* lo_half, tpj_hlo_value_t* hi_half) {
  int64_t lo[TPJ_MAX_DIMS] = {0}, hi[TPJ_MAX_DIMS], st[TPJ_MAX_DIMS];
  for (int d = 0; d < x.ndim; ++d) hi[d] = x.dims[d], st[d] = 1;
  int64_t h = x.dims[dim] / 2;
  hi[dim] = h;
  *lo_half = tpj_hlo_emit_convert(b, tpj_hlo_emit_slice(b, x, lo, hi, st), cd);
  lo[dim] = h;
  hi[dim] = 2 * h;
  *hi_half = tpj_hlo_emit_convert(b, tpj_hlo_emit_slice(b, x, lo, hi, st), cd);
}

/* aten::glu: attrs[0] compute dtype (float32 for half types, as CPU's
 * kernel computes), attrs[1] dim (wrapped). a * sigmoid(b). */
void tpj_lower_glu(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!need(ctx, 1, 2, 1, "glu")) return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t x, y;
  halves(b, ctx->in[0], (int)ctx->attrs[1], (tpj_dtype_t)ctx->attrs[0], &x, &y);
  tpj_hlo_value_t r = MUL(x, tpj_hlo_emit_unary(b, "stablehlo.logistic", y));
  results[0] = tpj_hlo_emit_convert(b, r, ctx->outs[0].dtype);
}

/* aten::glu_backward(grad, self, dim): attrs as glu. The gradient of a is
 * grad * sigmoid(b), of b grad * a * sigmoid(b) * (1 - sigmoid(b)). */
void tpj_lower_glu_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!need(ctx, 2, 2, 1, "glu_backward")) return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[0];
  int dim = (int)ctx->attrs[1];
  tpj_hlo_value_t x, y;
  halves(b, ctx->in[1], dim, cd, &x, &y);
  tpj_hlo_value_t g = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  tpj_hlo_value_t sig = tpj_hlo_emit_unary(b, "stablehlo.logistic", y);
  tpj_hlo_value_t ga = MUL(sig, g);
  tpj_hlo_value_t gb = MUL(MUL(SUB(full_like(b, sig, cd, 1.0), sig), sig), MUL(x, g));
  tpj_hlo_value_t parts[2] = {ga, gb};
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_concatenate(b, parts, 2, dim),
                                    ctx->outs[0].dtype);
}

/* aten::_prelu_kernel(self, weight): self > 0 ? self : weight * self, in
 * the output dtype (CPU's kernel computes in it too), weight broadcast. */
void tpj_lower_prelu(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!need(ctx, 2, 0, 1, "_prelu_kernel")) return;
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[0], o->dtype, o->dims, o->ndim);
  tpj_hlo_value_t w = tpj_ops_cast_to(b, ctx->in[1], o->dtype, o->dims, o->ndim);
  results[0] = SEL(CMP(x, full_like(b, x, x.dtype, 0.0), "GT"), x, MUL(w, x));
}

/* aten::_prelu_kernel_backward(grad, self, weight): both gradients over
 * the broadcast shape (autograd sums the weight's): grad_self is
 * self > 0 ? grad : weight * grad, grad_weight self > 0 ? 0 : self * grad. */
void tpj_lower_prelu_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!need(ctx, 3, 0, 2, "_prelu_kernel_backward")) return;
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t g = tpj_ops_cast_to(b, ctx->in[0], o->dtype, o->dims, o->ndim);
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[1], o->dtype, o->dims, o->ndim);
  tpj_hlo_value_t w = tpj_ops_cast_to(b, ctx->in[2], o->dtype, o->dims, o->ndim);
  tpj_hlo_value_t pos = CMP(x, full_like(b, x, x.dtype, 0.0), "GT");
  results[0] = SEL(pos, g, MUL(w, g));
  results[1] = SEL(pos, full_like(b, x, x.dtype, 0.0), MUL(x, g));
}

/* ---- gcd, lcm -------------------------------------------------------------- */

/* Euclid's loop of CPU's calc_gcd on |a|, |b|, unrolled: each step does
 * (a, b) = (b % a, a) where a != 0. Fibonacci pairs need the most steps:
 * fewer than 1.45 * bits + 2 of them. */
static tpj_hlo_value_t gcd(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t y) {
  int is_signed = x.dtype != TPJ_U8;
  tpj_hlo_value_t a = is_signed ? tpj_hlo_emit_unary(b, "stablehlo.abs", x) : x;
  tpj_hlo_value_t c = is_signed ? tpj_hlo_emit_unary(b, "stablehlo.abs", y) : y;
  tpj_hlo_value_t z = full_like(b, a, a.dtype, 0.0), one = full_like(b, a, a.dtype, 1.0);
  int bits = (int)tpj_dtype_size(a.dtype) * 8;
  int steps = bits * 3 / 2 + 2;
  for (int i = 0; i < steps; ++i) {
    tpj_hlo_value_t live = CMP(a, z, "NE");
    tpj_hlo_value_t r = tpj_hlo_emit_binary(b, "stablehlo.remainder", c, SEL(live, a, one));
    tpj_hlo_value_t na = SEL(live, r, a);
    c = SEL(live, a, c);
    a = na;
  }
  return c;
}

/* aten::gcd / aten::lcm: integer operands, converted to the output dtype
 * and broadcast. lcm is |a / g * b|, 0 where g is 0 (CPU's calc_lcm). */
void tpj_lower_gcd(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!need(ctx, 2, 0, 1, "gcd")) return;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  results[0] = gcd(ctx->b, tpj_ops_cast_to(ctx->b, ctx->in[0], o->dtype, o->dims, o->ndim),
                   tpj_ops_cast_to(ctx->b, ctx->in[1], o->dtype, o->dims, o->ndim));
}

void tpj_lower_lcm(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!need(ctx, 2, 0, 1, "lcm")) return;
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[0], o->dtype, o->dims, o->ndim);
  tpj_hlo_value_t y = tpj_ops_cast_to(b, ctx->in[1], o->dtype, o->dims, o->ndim);
  tpj_hlo_value_t g = gcd(b, x, y);
  tpj_hlo_value_t z = full_like(b, g, g.dtype, 0.0);
  tpj_hlo_value_t g0 = CMP(g, z, "EQ");
  tpj_hlo_value_t q = tpj_hlo_emit_binary(b, "stablehlo.divide", x,
                                          SEL(g0, full_like(b, g, g.dtype, 1.0), g));
  tpj_hlo_value_t m = MUL(q, y);
  results[0] = SEL(g0, z, x.dtype == TPJ_U8 ? m : tpj_hlo_emit_unary(b, "stablehlo.abs", m));
}

/* ---- tril_indices, triu_indices -------------------------------------------- */

/* aten::tril_indices / aten::triu_indices: attrs[0] rows, attrs[1] cols,
 * attrs[2] offset, attrs[3] upper. outs[0] is [2, N] (N counted by the
 * glue). The kept (row, col) pairs, in row-major order, are the first N
 * of all pairs sorted with the dropped ones pushed past the end. */
void tpj_lower_tri_indices(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!need(ctx, 0, 4, 1, "tril_indices")) return;
  tpj_hlo_builder_t* b = ctx->b;
  int64_t rows = ctx->attrs[0], cols = ctx->attrs[1], off = ctx->attrs[2];
  int64_t total = rows * cols, n = ctx->outs[0].dims[1];
  tpj_hlo_value_t lin = tpj_hlo_emit_iota(b, TPJ_I64, &total, 1, 0);
  tpj_hlo_value_t r = tpj_hlo_emit_binary(b, "stablehlo.divide", lin, i64_like(b, lin, cols));
  tpj_hlo_value_t c = tpj_hlo_emit_binary(b, "stablehlo.remainder", lin, i64_like(b, lin, cols));
  tpj_hlo_value_t diag = SUB(c, r);
  tpj_hlo_value_t keep = ctx->attrs[3] ? CMP(diag, i64_like(b, diag, off), "GE")
                                       : CMP(diag, i64_like(b, diag, off), "LE");
  tpj_hlo_value_t key = SEL(keep, lin, ADD(lin, i64_like(b, lin, total)));
  tpj_hlo_value_t sorted_key;
  tpj_hlo_emit_sort(b, &key, 1, 0, 0, &sorted_key);
  tpj_hlo_value_t kept = range_1d(b, sorted_key, 0, n);
  int64_t one_n[2] = {1, n};
  tpj_hlo_value_t parts[2] = {
      tpj_hlo_emit_reshape(b, tpj_hlo_emit_binary(b, "stablehlo.divide", kept,
                                                  i64_like(b, kept, cols)), one_n, 2),
      tpj_hlo_emit_reshape(b, tpj_hlo_emit_binary(b, "stablehlo.remainder", kept,
                                                  i64_like(b, kept, cols)), one_n, 2)};
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_concatenate(b, parts, 2, 0),
                                    ctx->outs[0].dtype);
}

/* ---- segment_reduce -------------------------------------------------------- */

enum { SEG_SUM, SEG_MEAN, SEG_MAX, SEG_MIN, SEG_PROD };

/* Segments of data x ([B..., N, R...], axis = len(B)) brought to the layout
 * [B..., S, N, R...]: mask says which positions each segment covers; len
 * is each segment's length ([B..., S]). seg is lengths ([B..., S]) or
 * offsets ([B..., S + 1]). */
typedef struct {
  int axis, nd;
  int64_t full[TPJ_MAX_DIMS];
  tpj_hlo_value_t mask, len;
} segs_t;

static int segments(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t seg, int axis,
                    int is_lengths, segs_t* g) {
  tpj_hlo_value_t off = tpj_hlo_emit_convert(b, seg, TPJ_I64);
  int last = off.ndim - 1;
  if (is_lengths) { /* lengths -> offsets: a leading 0, then running sums */
    int64_t zd[TPJ_MAX_DIMS];
    for (int d = 0; d < off.ndim; ++d) zd[d] = d == last ? 1 : off.dims[d];
    tpj_hlo_value_t parts[2] = {
        tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, TPJ_I64), zd, off.ndim),
        tpj_hlo_emit_cumulative(b, off, last, TPJ_HLO_SCAN_ADD, 0)};
    off = tpj_hlo_emit_concatenate(b, parts, 2, last);
  }
  g->nd = x.ndim + 1;
  if (g->nd > TPJ_MAX_DIMS || last != axis) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "segment_reduce: bad dims"));
    return 0;
  }
  int64_t segs = off.dims[last] - 1;
  int64_t lo_s[TPJ_MAX_DIMS] = {0}, hi_s[TPJ_MAX_DIMS], st[TPJ_MAX_DIMS];
  for (int d = 0; d < off.ndim; ++d) hi_s[d] = off.dims[d], st[d] = 1;
  hi_s[last] = segs;
  tpj_hlo_value_t lo = tpj_hlo_emit_slice(b, off, lo_s, hi_s, st);
  lo_s[last] = 1;
  hi_s[last] = segs + 1;
  tpj_hlo_value_t hi = tpj_hlo_emit_slice(b, off, lo_s, hi_s, st);
  g->axis = axis;
  for (int d = 0; d < axis; ++d) g->full[d] = x.dims[d];
  g->full[axis] = segs;
  for (int d = axis; d < x.ndim; ++d) g->full[d + 1] = x.dims[d];
  int64_t bd[TPJ_MAX_DIMS];
  for (int d = 0; d <= axis; ++d) bd[d] = d; /* [B..., S] */
  tpj_hlo_value_t pos = tpj_hlo_emit_iota(b, TPJ_I64, g->full, g->nd, axis + 1);
  g->mask = tpj_hlo_emit_binary(
      b, "stablehlo.and", CMP(pos, tpj_hlo_emit_broadcast_in_dim(b, lo, g->full, g->nd, bd), "GE"),
      CMP(pos, tpj_hlo_emit_broadcast_in_dim(b, hi, g->full, g->nd, bd), "LT"));
  g->len = SUB(hi, lo);
  return 1;
}

/* x ([B..., N, R...]) in the segment layout */
static tpj_hlo_value_t per_segment(tpj_hlo_builder_t* b, const segs_t* g, tpj_hlo_value_t x) {
  int64_t bd[TPJ_MAX_DIMS];
  for (int d = 0; d < x.ndim; ++d) bd[d] = d < g->axis ? d : d + 1;
  return tpj_hlo_emit_broadcast_in_dim(b, x, g->full, g->nd, bd);
}

/* y ([B..., S, R...]) in the segment layout */
static tpj_hlo_value_t per_position(tpj_hlo_builder_t* b, const segs_t* g, tpj_hlo_value_t y) {
  int64_t bd[TPJ_MAX_DIMS];
  for (int d = 0; d < y.ndim; ++d) bd[d] = d <= g->axis ? d : d + 1;
  return tpj_hlo_emit_broadcast_in_dim(b, y, g->full, g->nd, bd);
}

/* a segment's length ([B..., S]) as dt, over [B..., S, R...] (like) */
static tpj_hlo_value_t seg_len(tpj_hlo_builder_t* b, const segs_t* g, tpj_dtype_t dt,
                               tpj_hlo_value_t like) {
  int64_t bd[TPJ_MAX_DIMS];
  for (int d = 0; d <= g->axis; ++d) bd[d] = d;
  return tpj_hlo_emit_broadcast_in_dim(b, tpj_hlo_emit_convert(b, g->len, dt), like.dims,
                                       like.ndim, bd);
}

static int seg_need(tpj_op_ctx_t* ctx, int nin, const char* op) {
  if (ctx->nin >= nin + (ctx->nattrs >= 5 && ctx->attrs[4]) && ctx->nattrs >= 5 &&
      ctx->nouts >= 1)
    return 1;
  tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "%s: bad operands", op));
  return 0;
}

/* aten::segment_reduce: in[0] data, in[1] lengths or offsets (integer,
 * [B..., S] or [B..., S + 1]), in[2] (when attrs[4]) the initial value, a
 * 0-d runtime scalar of the compute dtype. attrs[0] the compute dtype,
 * attrs[1] the reduction (SEG_*), attrs[2] axis (= the batch dims B),
 * attrs[3] 1 for lengths, attrs[4] has initial. Each segment is reduced
 * over a mask of its positions; as in CPU's kernel the initial value seeds
 * each segment, max/min propagate NaN, mean divides by the length (an
 * empty segment is NaN without an initial value) and an empty segment
 * is the reduction's identity (lowest for max, highest for min). */
void tpj_lower_segment_reduce(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!seg_need(ctx, 2, "segment_reduce")) return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[0];
  int kind = (int)ctx->attrs[1], axis = (int)ctx->attrs[2], has_init = (int)ctx->attrs[4];
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  segs_t g;
  if (!segments(b, x, ctx->in[1], axis, (int)ctx->attrs[3], &g)) return;
  tpj_hlo_value_t xf = per_segment(b, &g, x);
  int64_t rd = axis + 1;
  const char* body = kind == SEG_MAX ? "stablehlo.maximum" : kind == SEG_MIN ? "stablehlo.minimum"
                     : kind == SEG_PROD ? "stablehlo.multiply" : "stablehlo.add";
  tpj_hlo_value_t id = kind == SEG_MAX ? tpj_hlo_emit_extreme(b, cd, 0)
                       : kind == SEG_MIN ? tpj_hlo_emit_extreme(b, cd, 1)
                       : kind == SEG_PROD ? tpj_hlo_emit_one(b, cd) : tpj_hlo_emit_zero(b, cd);
  tpj_hlo_value_t sel = SEL(g.mask, xf, tpj_hlo_emit_broadcast_to(b, id, g.full, g.nd));
  tpj_hlo_value_t r = tpj_hlo_emit_reduce(b, sel, id, &rd, 1, body);
  tpj_hlo_value_t init = has_init ? tpj_hlo_emit_broadcast_to(
                                        b, tpj_hlo_emit_convert(b, ctx->in[2], cd), r.dims, r.ndim)
                                  : r;
  if (has_init) r = tpj_hlo_emit_binary(b, body, r, init);
  if (kind == SEG_MAX || kind == SEG_MIN) {
    tpj_hlo_value_t nan = tpj_hlo_emit_binary(b, "stablehlo.and", g.mask, CMP(xf, xf, "NE"));
    nan = tpj_hlo_emit_reduce(b, nan, tpj_hlo_emit_zero(b, TPJ_BOOL), &rd, 1, "stablehlo.or");
    r = SEL(nan, full_like(b, r, cd, NAN), r);
  }
  if (kind == SEG_MEAN) {
    tpj_hlo_value_t len = seg_len(b, &g, cd, r);
    tpj_hlo_value_t empty = CMP(len, full_like(b, len, cd, 0.0), "EQ");
    tpj_hlo_value_t mean = tpj_hlo_emit_binary(b, "stablehlo.divide", r, len);
    r = SEL(empty, has_init ? init : full_like(b, r, cd, NAN), mean);
  }
  results[0] = tpj_hlo_emit_convert(b, r, ctx->outs[0].dtype);
}

/* aten::_segment_reduce_backward: in[0] grad and in[1] output ([B..., S,
 * R...]), in[2] data, in[3] lengths or offsets, in[4] (when attrs[4]) the
 * initial value; attrs as segment_reduce. CPU's rules, per position j of
 * segment s: sum passes grad[s]; mean grad[s] / length; max/min give
 * grad[s] to the positions equal to output[s] (or NaN), divided by their
 * count when there are several and grad[s] > 0; prod gives
 * grad[s] * output[s] / x[j], or, where x[j] is 0 or NaN, grad[s] times
 * the product of the segment's other values (and the initial value).
 * Positions outside every segment get 0. */
void tpj_lower_segment_reduce_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!seg_need(ctx, 4, "_segment_reduce_backward")) return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[0];
  int kind = (int)ctx->attrs[1], axis = (int)ctx->attrs[2];
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[2], cd);
  segs_t g;
  if (!segments(b, x, ctx->in[3], axis, (int)ctx->attrs[3], &g)) return;
  tpj_hlo_value_t gr = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  tpj_hlo_value_t xf = per_segment(b, &g, x);
  tpj_hlo_value_t gf = per_position(b, &g, gr);
  tpj_hlo_value_t outf = per_position(b, &g, tpj_hlo_emit_convert(b, ctx->in[1], cd));
  tpj_hlo_value_t zero = full_like(b, xf, cd, 0.0);
  tpj_hlo_value_t nan = CMP(xf, xf, "NE");
  tpj_hlo_value_t v, take = g.mask;
  int64_t rd = axis + 1;
  switch (kind) {
    case SEG_SUM: v = gf; break;
    case SEG_MEAN: v = tpj_hlo_emit_binary(b, "stablehlo.divide", gf,
                                           per_position(b, &g, seg_len(b, &g, cd, gr)));
      break;
    case SEG_MAX:
    case SEG_MIN: {
      take = tpj_hlo_emit_binary(b, "stablehlo.and", g.mask,
                                 tpj_hlo_emit_binary(b, "stablehlo.or", nan,
                                                     CMP(xf, outf, "EQ")));
      tpj_hlo_value_t cnt = tpj_hlo_emit_reduce(b, tpj_hlo_emit_convert(b, take, cd),
                                                tpj_hlo_emit_zero(b, cd), &rd, 1, "stablehlo.add");
      cnt = per_position(b, &g, cnt);
      tpj_hlo_value_t split = tpj_hlo_emit_binary(
          b, "stablehlo.and", CMP(cnt, full_like(b, cnt, cd, 2.0), "GE"), CMP(gf, zero, "GT"));
      v = SEL(split, tpj_hlo_emit_binary(b, "stablehlo.divide", gf, cnt), gf);
      break;
    }
    default: { /* SEG_PROD */
      tpj_hlo_value_t y = SEL(g.mask, xf, full_like(b, xf, cd, 1.0));
      tpj_hlo_value_t pre = tpj_hlo_emit_cumulative(b, y, axis + 1, TPJ_HLO_SCAN_MUL, 0);
      tpj_hlo_value_t suf = tpj_hlo_emit_cumulative(b, y, axis + 1, TPJ_HLO_SCAN_MUL, 1);
      /* exclusive: shift the prefix right and the suffix left by one */
      int64_t n = xf.dims[axis + 1];
      int64_t lo[TPJ_MAX_DIMS] = {0}, hi[TPJ_MAX_DIMS], st[TPJ_MAX_DIMS];
      int64_t plo[TPJ_MAX_DIMS] = {0}, phi[TPJ_MAX_DIMS] = {0};
      for (int d = 0; d < g.nd; ++d) hi[d] = g.full[d], st[d] = 1;
      tpj_hlo_value_t one = tpj_hlo_emit_one(b, cd);
      hi[axis + 1] = n - 1;
      plo[axis + 1] = 1;
      pre = tpj_hlo_emit_pad(b, tpj_hlo_emit_slice(b, pre, lo, hi, st), one, plo, phi);
      lo[axis + 1] = 1;
      hi[axis + 1] = n;
      plo[axis + 1] = 0;
      phi[axis + 1] = 1;
      suf = tpj_hlo_emit_pad(b, tpj_hlo_emit_slice(b, suf, lo, hi, st), one, plo, phi);
      tpj_hlo_value_t excl = MUL(pre, suf);
      if (ctx->attrs[4])
        excl = MUL(excl, tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_convert(b, ctx->in[4], cd),
                                                   g.full, g.nd));
      tpj_hlo_value_t special = tpj_hlo_emit_binary(b, "stablehlo.or", nan, CMP(xf, zero, "EQ"));
      v = SEL(special, MUL(gf, excl),
              tpj_hlo_emit_binary(b, "stablehlo.divide", MUL(gf, outf), xf));
      break;
    }
  }
  tpj_hlo_value_t r = tpj_hlo_emit_reduce(b, SEL(take, v, zero), tpj_hlo_emit_zero(b, cd),
                                          (int64_t[]){axis}, 1, "stablehlo.add");
  results[0] = tpj_hlo_emit_convert(b, r, ctx->outs[0].dtype);
}

/* ---- complex scans ---------------------------------------------------------- */

/* tpj::complex_scan (cumsum / cumprod of complex values): attrs[0] dim
 * (wrapped), attrs[1] 1 for a product. The operand is converted to the
 * output's complex dtype first. A sum scans the real and imaginary parts
 * (exactly what complex addition does); a product doubles its reach
 * log2(n) times (y[i] *= y[i - s] for s = 1, 2, 4, ...), since the scan
 * emitter takes real operands only. */
void tpj_lower_complex_scan(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!need(ctx, 1, 2, 1, "complex scan")) return;
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, prepare(b, ctx->in[0], 0), o->dtype);
  int dim = ctx->in[0].ndim == 0 ? 0 : (int)ctx->attrs[0];
  tpj_hlo_value_t r;
  if (!ctx->attrs[1]) {
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

/* ---- bincount ------------------------------------------------------------------- */

/* aten::bincount: in[0] the values (1-D integer, checked non-negative and
 * below the output's length by the glue), in[1] the weights when attrs[0]
 * is set. Each value adds its weight (or 1) to its bin, in the output's
 * dtype (CPU's: the weights' for float and double, double for others). */
void tpj_lower_bincount(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!need(ctx, 1, 1, 1, "bincount") || (ctx->attrs[0] && ctx->nin < 2)) {
    if (tpj_hlo_ok(ctx->b))
      tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "bincount: bad operands"));
    return;
  }
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t idx = tpj_hlo_emit_convert(b, ctx->in[0], TPJ_I64);
  tpj_hlo_value_t upd = ctx->attrs[0] ? tpj_hlo_emit_convert(b, ctx->in[1], o->dtype)
                                      : full_like(b, idx, o->dtype, 1.0);
  tpj_hlo_value_t zeros = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, o->dtype), o->dims,
                                                    o->ndim);
  results[0] = tpj_hlo_emit_scatter_add_rows(b, zeros, idx, upd);
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
  if (!need(ctx, 1, 2, 1, "linalg_matrix_exp")) return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[1];
  int64_t s = ctx->attrs[0];
  tpj_hlo_value_t a = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  tpj_dtype_t rd = cd == TPJ_C64 ? TPJ_F32 : cd == TPJ_C128 ? TPJ_F64 : cd;
  /* a scalar v of cd shaped like a */
  #define CD_FULL(v)                                                                         \
    (rd == cd ? full_like(b, a, cd, (v))                                                     \
              : tpj_hlo_emit_complex(b, full_like(b, a, rd, (v)), full_like(b, a, rd, 0.0)))
  tpj_hlo_value_t x = MUL(a, CD_FULL(ldexp(1.0, (int)-s)));
  int n = a.ndim;
  tpj_hlo_value_t eye_r = tpj_hlo_emit_convert(
      b, CMP(tpj_hlo_emit_iota(b, TPJ_I64, a.dims, n, n - 2),
             tpj_hlo_emit_iota(b, TPJ_I64, a.dims, n, n - 1), "EQ"), rd);
  tpj_hlo_value_t eye = rd == cd ? eye_r : tpj_hlo_emit_complex(b, eye_r, full_like(b, a, rd, 0.0));
  tpj_hlo_value_t e = ADD(eye, MUL(x, CD_FULL(1.0 / 18)));
  for (int k = 17; k >= 1; --k) e = ADD(eye, MUL(matmul(b, x, e), CD_FULL(1.0 / k)));
  #undef CD_FULL
  for (int64_t i = 0; i < s; ++i) e = matmul(b, e, e);
  results[0] = tpj_hlo_emit_convert(b, e, ctx->outs[0].dtype);
}
