/* ops/index_gather: indexing by tensors — gather, the scatter family
 * (scatter, scatter_add, scatter_reduce), advanced indexing (index.Tensor,
 * index_put), index_add/index_copy/index_fill, and nonzero.
 *
 * Every lowering works in the flat index space of a contiguous operand: it
 * computes, for each element it reads or writes, the operand's linear
 * element index (index values for the indexed dims, iotas for the others,
 * times the row-major strides), then uses one 1-D gather or one 1-D
 * combining scatter. Index values are checked against the operand on the
 * host by the glue (csrc/ops/index.cpp) before they get here: XLA clamps an
 * out-of-range gather index and drops an out-of-range scatter update, both
 * silent wrong answers. */
#include <math.h>

#include "hlo/gather.h"
#include "ops/attrs.h"
#include "ops/ops.h"

static tpj_hlo_value_t add(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t y) {
  return tpj_hlo_emit_binary(b, "stablehlo.add", x, y);
}

static tpj_hlo_value_t mul(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t y) {
  return tpj_hlo_emit_binary(b, "stablehlo.multiply", x, y);
}

static tpj_hlo_value_t splat_i64(tpj_hlo_builder_t* b, int64_t v, const int64_t* dims, int nd) {
  return tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, v), dims, nd);
}

static tpj_hlo_value_t splat(tpj_hlo_builder_t* b, tpj_hlo_value_t v0d, const int64_t* dims,
                             int nd) {
  return tpj_hlo_emit_broadcast_to(b, v0d, dims, nd);
}

static int64_t prod_dims(const int64_t* dims, int nd) {
  int64_t n = 1;
  for (int i = 0; i < nd; ++i) n *= dims[i];
  return n;
}

static int same_dims(const tpj_hlo_value_t* x, const tpj_hlo_value_t* y) {
  if (x->ndim != y->ndim) return 0;
  for (int i = 0; i < x->ndim; ++i)
    if (x->dims[i] != y->dims[i]) return 0;
  return 1;
}

/* Row-major strides (in elements) of dims. */
static void strides_of(const int64_t* dims, int nd, int64_t* st) {
  int64_t s = 1;
  for (int i = nd - 1; i >= 0; --i) {
    st[i] = s;
    s *= dims[i];
  }
}

/* idx as i64, with negative values counted from the end of a dim of `size`
 * (PyTorch's convention where an op accepts them; the glue has checked
 * -size <= idx < size). */
static tpj_hlo_value_t wrap_index(tpj_hlo_builder_t* b, tpj_hlo_value_t idx, int64_t size) {
  idx = tpj_hlo_emit_convert(b, idx, TPJ_I64);
  tpj_hlo_value_t zero = splat_i64(b, 0, idx.dims, idx.ndim);
  tpj_hlo_value_t neg = tpj_hlo_emit_compare(b, idx, zero, "LT");
  return tpj_hlo_emit_select(b, neg, add(b, idx, splat_i64(b, size, idx.dims, idx.ndim)), idx);
}

/* A 0-d value as a 1-element vector; others unchanged. PyTorch treats a 0-d
 * operand of these ops like a 1-element one. */
static tpj_hlo_value_t at_least_1d(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  if (x.ndim > 0) return x;
  int64_t one = 1;
  return tpj_hlo_emit_reshape(b, x, &one, 1);
}

static tpj_hlo_value_t flatten(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  int64_t n = tpj_hlo_numel(&x);
  return tpj_hlo_emit_reshape(b, x, &n, 1);
}

static tpj_hlo_value_t zeros(tpj_hlo_builder_t* b, const tpj_rt_shape_t* o) {
  return splat(b, tpj_hlo_emit_zero(b, o->dtype), o->dims, o->ndim);
}

/* The linear index into an operand of dims `xd` (nd dims) of each element
 * of an nd-dim grid `gd`, whose coordinate along `dim` is idx (i64, dims gd)
 * and along every other dim its own position: the addressing of gather,
 * scatter and index_add. */
static tpj_hlo_value_t linear_along(tpj_hlo_builder_t* b, tpj_hlo_value_t idx, const int64_t* xd,
                                    int nd, int dim) {
  int64_t st[TPJ_MAX_DIMS] = {0};  /* gcc 13 cannot see strides_of fill it */
  strides_of(xd, nd, st);
  const int64_t* gd = idx.dims;
  tpj_hlo_value_t lin = mul(b, idx, splat_i64(b, st[dim], gd, nd));
  for (int d = 0; d < nd; ++d) {
    if (d == dim || gd[d] == 1) continue;  /* a size-1 grid dim is coordinate 0 */
    tpj_hlo_value_t io = tpj_hlo_emit_iota(b, TPJ_I64, gd, nd, d);
    lin = add(b, lin, mul(b, io, splat_i64(b, st[d], gd, nd)));
  }
  return lin;
}

/* gather: in[0] self, in[1] index (same rank as self, or 0-d); attrs
 * tpj_attrs_index_dim_t. outs[0] has index's dims. */
void tpj_lower_gather(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nin < 2 || ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_index_dim_t)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "gather: bad operands"));
    return;
  }
  if (prod_dims(o->dims, o->ndim) == 0) {
    results[0] = zeros(b, o);
    return;
  }
  tpj_hlo_value_t x = at_least_1d(b, ctx->in[0]);
  tpj_hlo_value_t idx = at_least_1d(b, tpj_hlo_emit_convert(b, ctx->in[1], TPJ_I64));
  int dim = (int)TPJ_ATTRS(ctx, tpj_attrs_index_dim_t)->dim;
  tpj_hlo_value_t lin = linear_along(b, idx, x.dims, x.ndim, dim);
  tpj_hlo_value_t r = tpj_hlo_emit_gather_1d(b, flatten(b, x), lin);
  results[0] = tpj_hlo_emit_reshape(b, r, o->dims, o->ndim);
}

/* The StableHLO combiner of a scatter mode, for dtype dt (bool has no
 * arithmetic: add is or, multiply is and). */
static const char* combiner(int mode, tpj_dtype_t dt) {
  int bl = dt == TPJ_BOOL;
  switch (mode) {
    case TPJ_SCATTER_SUM:
    case TPJ_SCATTER_MEAN:
      return bl ? "stablehlo.or" : "stablehlo.add";
    case TPJ_SCATTER_PROD:
      return bl ? "stablehlo.and" : "stablehlo.multiply";
    case TPJ_SCATTER_AMAX:
      return bl ? "stablehlo.or" : "stablehlo.maximum";
    case TPJ_SCATTER_AMIN:
      return bl ? "stablehlo.and" : "stablehlo.minimum";
    default:
      return NULL;
  }
}

/* The value a position starts from when include_self is false. */
static tpj_hlo_value_t identity(tpj_hlo_builder_t* b, int mode, tpj_dtype_t dt) {
  switch (mode) {
    case TPJ_SCATTER_PROD:
      return tpj_hlo_emit_one(b, dt);
    case TPJ_SCATTER_AMAX:
      return tpj_hlo_emit_extreme(b, dt, 0);
    case TPJ_SCATTER_AMIN:
      return tpj_hlo_emit_extreme(b, dt, 1);
    default:
      return tpj_hlo_emit_zero(b, dt);
  }
}

/* a / b rounded toward -inf for integers (PyTorch's scatter_reduce "mean"
 * on integer tensors floors), true division for floats; b > 0. */
static tpj_hlo_value_t div_floor(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t y) {
  tpj_hlo_value_t q = tpj_hlo_emit_binary(b, "stablehlo.divide", x, y);
  if (!tpj_dtype_is_int(x.dtype)) return q;
  tpj_hlo_value_t rem = tpj_hlo_emit_binary(b, "stablehlo.remainder", x, y);
  tpj_hlo_value_t z = splat(b, tpj_hlo_emit_zero(b, x.dtype), x.dims, x.ndim);
  tpj_hlo_value_t fix = tpj_hlo_emit_binary(b, "stablehlo.and", tpj_hlo_emit_compare(b, rem, z, "NE"),
                                            tpj_hlo_emit_compare(b, x, z, "LT"));
  tpj_hlo_value_t one = splat(b, tpj_hlo_emit_one(b, x.dtype), x.dims, x.ndim);
  return tpj_hlo_emit_select(b, fix, tpj_hlo_emit_binary(b, "stablehlo.subtract", q, one), q);
}

/* Scatters upd (flat, dtype of flat) at lin (flat i64) into flat with `mode`
 * (a TPJ_SCATTER_*), as scatter_reduce does with include_self. */
static tpj_hlo_value_t scatter_mode(tpj_hlo_builder_t* b, tpj_hlo_value_t flat,
                                    tpj_hlo_value_t lin, tpj_hlo_value_t upd, int mode,
                                    int include_self) {
  tpj_dtype_t dt = flat.dtype;
  if (mode == TPJ_SCATTER_SET) return tpj_hlo_emit_scatter_1d_combine(b, flat, lin, upd, NULL);
  tpj_hlo_value_t base = flat;
  if (!include_self)  /* the indexed positions start from the combiner's identity */
    base = tpj_hlo_emit_scatter_1d_combine(b, flat, lin, splat(b, identity(b, mode, dt), lin.dims, 1),
                                           NULL);
  tpj_hlo_value_t r = tpj_hlo_emit_scatter_1d_combine(b, base, lin, upd, combiner(mode, dt));
  if (mode == TPJ_SCATTER_MEAN && dt != TPJ_BOOL) {
    /* count the contributions to each position (self counts once when
     * included); untouched positions divide by 1 and keep their value */
    tpj_hlo_value_t cnt0 = splat(b, include_self ? tpj_hlo_emit_one(b, dt) : tpj_hlo_emit_zero(b, dt),
                                 flat.dims, 1);
    tpj_hlo_value_t cnt = tpj_hlo_emit_scatter_1d_combine(
        b, cnt0, lin, splat(b, tpj_hlo_emit_one(b, dt), lin.dims, 1), "stablehlo.add");
    tpj_hlo_value_t one = splat(b, tpj_hlo_emit_one(b, dt), flat.dims, 1);
    cnt = tpj_hlo_emit_binary(b, "stablehlo.maximum", cnt, one);
    r = div_floor(b, r, cnt);
  }
  if ((mode == TPJ_SCATTER_AMAX || mode == TPJ_SCATTER_AMIN) && tpj_dtype_is_float(dt)) {
    /* a NaN among a position's values makes it NaN, as on CPU; XLA's
     * maximum/minimum need not propagate it */
    tpj_hlo_value_t nan0 = include_self ? tpj_hlo_emit_compare(b, flat, flat, "NE")
                                        : splat(b, tpj_hlo_emit_zero(b, TPJ_BOOL), flat.dims, 1);
    tpj_hlo_value_t nan = tpj_hlo_emit_scatter_1d_combine(
        b, nan0, lin, tpj_hlo_emit_compare(b, upd, upd, "NE"), "stablehlo.or");
    r = tpj_hlo_emit_select(b, nan, splat(b, tpj_hlo_emit_const_f64(b, dt, NAN), flat.dims, 1), r);
  }
  return r;
}

/* scatter, scatter_add, scatter_reduce: in[0] self, in[1] index (same rank
 * as self, or 0-d), in[2] src (a tensor at least index's size, or a 0-d
 * value); attrs tpj_attrs_scatter_t. outs[0] has self's dims and dtype. */
void tpj_lower_scatter(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nin < 3 || ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_scatter_t)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "scatter: bad operands"));
    return;
  }
  const tpj_attrs_scatter_t* at = TPJ_ATTRS(ctx, tpj_attrs_scatter_t);
  tpj_hlo_value_t x = at_least_1d(b, tpj_hlo_emit_convert(b, ctx->in[0], o->dtype));
  tpj_hlo_value_t idx = at_least_1d(b, tpj_hlo_emit_convert(b, ctx->in[1], TPJ_I64));
  if (prod_dims(o->dims, o->ndim) == 0 || tpj_hlo_numel(&idx) == 0) {
    results[0] = tpj_hlo_emit_reshape(b, x, o->dims, o->ndim);
    return;
  }
  tpj_hlo_value_t src = tpj_hlo_emit_convert(b, ctx->in[2], o->dtype);
  if (src.ndim == 0) {
    src = splat(b, src, idx.dims, idx.ndim);
  } else {
    /* only src's leading index-sized block is scattered */
    int64_t start[TPJ_MAX_DIMS] = {0}, step[TPJ_MAX_DIMS];
    for (int i = 0; i < src.ndim; ++i) step[i] = 1;
    src = tpj_hlo_emit_slice(b, src, start, idx.dims, step);
  }
  tpj_hlo_value_t lin = flatten(b, linear_along(b, idx, x.dims, x.ndim, (int)at->dim));
  tpj_hlo_value_t r = scatter_mode(b, flatten(b, x), lin, flatten(b, src), (int)at->mode,
                                   (int)at->include_self);
  results[0] = tpj_hlo_emit_reshape(b, r, o->dims, o->ndim);
}

/* Advanced indexing. self has nd dims; k index tensors (already broadcast
 * to one shape B by the glue) index dims pos[0] < ... < pos[k-1]. As in
 * NumPy, B replaces the indexed dims in place when they are adjacent and
 * goes first otherwise. Writes the result dims into rd and returns the
 * linear index into self of each result element (i64, dims rd). */
static tpj_hlo_value_t advanced_linear(tpj_hlo_builder_t* b, const int64_t* xd, int nd,
                                       const tpj_hlo_value_t* idx, const int64_t* pos, int k,
                                       int64_t* rd, int* rnd) {
  const int64_t* bd = idx[0].dims;
  int bn = idx[0].ndim;
  int adjacent = 1;
  for (int j = 1; j < k; ++j) adjacent &= pos[j] == pos[0] + j;
  int bstart = adjacent ? (int)pos[0] : 0;
  /* where each self dim lands in the result (-1: an indexed dim) */
  int where[TPJ_MAX_DIMS];
  int n = 0, is_idx[TPJ_MAX_DIMS] = {0};
  for (int j = 0; j < k; ++j) is_idx[pos[j]] = 1;
  if (!adjacent) n = bn;
  for (int d = 0; d < nd; ++d) {
    if (adjacent && d == bstart) n += bn;
    where[d] = is_idx[d] ? -1 : n++;
  }
  *rnd = n;
  if (n > TPJ_MAX_DIMS) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "index: too many result dims"));
    tpj_hlo_value_t bad = {.id = -1};
    return bad;
  }
  for (int d = 0; d < nd; ++d)
    if (where[d] >= 0) rd[where[d]] = xd[d];
  for (int i = 0; i < bn; ++i) rd[bstart + i] = bd[i];
  int64_t st[TPJ_MAX_DIMS];
  strides_of(xd, nd, st);
  int64_t bmap[TPJ_MAX_DIMS];
  for (int i = 0; i < bn; ++i) bmap[i] = bstart + i;
  tpj_hlo_value_t lin = splat_i64(b, 0, rd, n);
  for (int j = 0; j < k; ++j) {
    tpj_hlo_value_t c = wrap_index(b, idx[j], xd[pos[j]]);
    c = mul(b, c, splat_i64(b, st[pos[j]], bd, bn));
    lin = add(b, lin, tpj_hlo_emit_broadcast_in_dim(b, c, rd, n, bmap));
  }
  for (int d = 0; d < nd; ++d) {
    if (where[d] < 0 || xd[d] == 1) continue;
    tpj_hlo_value_t io = tpj_hlo_emit_iota(b, TPJ_I64, rd, n, where[d]);
    lin = add(b, lin, mul(b, io, splat_i64(b, st[d], rd, n)));
  }
  return lin;
}

/* Reads the k index operands from in[first..] and their dims from dims
 * (ndims of them); 0 (and a failure) when they do not fit self. */
static int read_indices(tpj_op_ctx_t* ctx, int first, const int64_t* dims, int ndims, int nd,
                        tpj_hlo_value_t* idx, int64_t* pos) {
  int k = ctx->nin - first;
  if (k < 1 || k > nd || ndims != k) {
    tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "index: bad operands"));
    return 0;
  }
  for (int j = 0; j < k; ++j) {
    idx[j] = ctx->in[first + j];
    pos[j] = dims[j];
    if (pos[j] < 0 || pos[j] >= nd || (j && pos[j] <= pos[j - 1]) ||
        !same_dims(&idx[j], &idx[0])) {
      tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "index: bad index operands"));
      return 0;
    }
  }
  return k;
}

/* index.Tensor (and take): in[0] self, in[1..k] integer index tensors of
 * one shape; attrs the dims they index (a plain list, attrs.h). Bool masks
 * were turned into index tensors by the glue. */
void tpj_lower_index(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t x = ctx->in[0];
  tpj_hlo_value_t idx[TPJ_MAX_DIMS];
  int64_t pos[TPJ_MAX_DIMS], rd[TPJ_MAX_DIMS];
  int k = read_indices(ctx, 1, ctx->attrs, ctx->nattrs, x.ndim, idx, pos), rn = 0;
  if (!k) return;
  if (prod_dims(o->dims, o->ndim) == 0) {
    results[0] = zeros(b, o);
    return;
  }
  tpj_hlo_value_t lin = advanced_linear(b, x.dims, x.ndim, idx, pos, k, rd, &rn);
  /* take reads a flat self at a flattened index: only the sizes must agree */
  if (prod_dims(rd, rn) != prod_dims(o->dims, o->ndim)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "index: result shape disagrees with PyTorch's"));
    return;
  }
  tpj_hlo_value_t r = tpj_hlo_emit_gather_1d(b, flatten(b, x), lin);
  results[0] = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, r, o->dtype), o->dims, o->ndim);
}

/* index_put (accumulate or not): in[0] self, in[1] values (broadcast to the
 * indexing result), in[2..] index tensors of one shape; attrs
 * tpj_attrs_index_put_t. outs[0] is the new self. */
void tpj_lower_index_put(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nin < 3 || ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_index_put_t) + 1) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "index_put: bad operands"));
    return;
  }
  const tpj_attrs_index_put_t* at = TPJ_ATTRS(ctx, tpj_attrs_index_put_t);
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], o->dtype);
  tpj_hlo_value_t idx[TPJ_MAX_DIMS];
  int64_t pos[TPJ_MAX_DIMS], rd[TPJ_MAX_DIMS];
  int k = read_indices(ctx, 2, at->dims, ctx->nattrs - TPJ_ATTRS_WORDS(tpj_attrs_index_put_t),
                       x.ndim, idx, pos),
      rn = 0;
  if (!k) return;
  if (prod_dims(o->dims, o->ndim) == 0 || tpj_hlo_numel(&idx[0]) == 0) {
    results[0] = x;
    return;
  }
  tpj_hlo_value_t lin = advanced_linear(b, x.dims, x.ndim, idx, pos, k, rd, &rn);
  tpj_hlo_value_t v = tpj_ops_cast_to(b, ctx->in[1], o->dtype, rd, rn);
  int mode = at->accumulate ? TPJ_SCATTER_SUM : TPJ_SCATTER_SET;
  tpj_hlo_value_t r = scatter_mode(b, flatten(b, x), flatten(b, lin), flatten(b, v), mode, 1);
  results[0] = tpj_hlo_emit_reshape(b, r, o->dims, o->ndim);
}

/* index_add, index_copy, index_fill: in[0] self, in[1] index (0-d or 1-D),
 * in[2] source (self's dims with dims[dim] = len(index)) or a 0-d fill
 * value, in[3] alpha (index_add only); attrs tpj_attrs_index_along_t.
 * Negative indices count from the end (only
 * index_fill lets them through the glue). */
void tpj_lower_index_along(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nin < 3 || ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_index_along_t)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "index_add/copy/fill: bad operands"));
    return;
  }
  const tpj_attrs_index_along_t* at = TPJ_ATTRS(ctx, tpj_attrs_index_along_t);
  tpj_hlo_value_t x = at_least_1d(b, tpj_hlo_emit_convert(b, ctx->in[0], o->dtype));
  int dim = (int)at->dim, mode = (int)at->mode;
  tpj_hlo_value_t idx = flatten(b, ctx->in[1]);
  int64_t m = idx.dims[0];
  if (prod_dims(o->dims, o->ndim) == 0 || m == 0 || dim < 0 || dim >= x.ndim) {
    results[0] = tpj_hlo_emit_reshape(b, x, o->dims, o->ndim);
    return;
  }
  int64_t ud[TPJ_MAX_DIMS];
  for (int d = 0; d < x.ndim; ++d) ud[d] = d == dim ? m : x.dims[d];
  int64_t bd = dim;
  idx = tpj_hlo_emit_broadcast_in_dim(b, wrap_index(b, idx, x.dims[dim]), ud, x.ndim, &bd);
  tpj_hlo_value_t src = tpj_hlo_emit_convert(b, ctx->in[2], o->dtype);
  if (src.ndim == 0 && prod_dims(ud, x.ndim) != 1)
    src = splat(b, src, ud, x.ndim);
  else
    src = tpj_hlo_emit_reshape(b, src, ud, x.ndim);
  if (ctx->nin > 3)
    src = tpj_hlo_emit_binary(b, o->dtype == TPJ_BOOL ? "stablehlo.and" : "stablehlo.multiply", src,
                              tpj_ops_cast_to(b, ctx->in[3], o->dtype, ud, x.ndim));
  tpj_hlo_value_t lin = flatten(b, linear_along(b, idx, x.dims, x.ndim, dim));
  tpj_hlo_value_t r = scatter_mode(b, flatten(b, x), lin, flatten(b, src), mode, 1);
  results[0] = tpj_hlo_emit_reshape(b, r, o->dims, o->ndim);
}

/* tpj::count_nonzero: in[0] x; outs[0] a 0-d i64, the number of nonzero
 * elements. The glue reads it on the host to size nonzero's result. */
void tpj_lower_count_nonzero(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t x = flatten(b, ctx->in[0]);
  tpj_hlo_value_t nz = tpj_hlo_emit_compare(
      b, x, splat(b, tpj_hlo_emit_zero(b, x.dtype), x.dims, 1), "NE");
  int64_t d0 = 0;
  results[0] = tpj_hlo_emit_reduce(b, tpj_hlo_emit_convert(b, nz, TPJ_I64),
                                   tpj_hlo_emit_zero(b, TPJ_I64), &d0, 1, "stablehlo.add");
}

/* tpj::index_out_of_range: in[0] an integer index tensor; attrs
 * tpj_attrs_index_range_t; outs[0] a 0-d bool, true when some value lies
 * outside [lo, hi). One program for an index check deferred to the device. */
void tpj_lower_index_out_of_range(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (ctx->nin < 1 || ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_index_range_t)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "index_out_of_range: bad operands"));
    return;
  }
  const tpj_attrs_index_range_t* at = TPJ_ATTRS(ctx, tpj_attrs_index_range_t);
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, flatten(b, ctx->in[0]), TPJ_I64);
  int64_t n = x.dims[0], d0 = 0;
  tpj_hlo_value_t below = tpj_hlo_emit_compare(b, x, splat_i64(b, at->lo, &n, 1), "LT");
  tpj_hlo_value_t above = tpj_hlo_emit_compare(b, x, splat_i64(b, at->hi, &n, 1), "GE");
  tpj_hlo_value_t bad = tpj_hlo_emit_binary(b, "stablehlo.or", below, above);
  results[0] = tpj_hlo_emit_reduce(b, bad, tpj_hlo_emit_zero(b, TPJ_BOOL), &d0, 1, "stablehlo.or");
}

/* The first `rows` positions of x's nonzero elements as a (rows, x.ndim)
 * i64 matrix; rows past the number of nonzero elements hold fill. Sorting
 * the keys (position for a nonzero element, position + numel otherwise)
 * puts the nonzero positions first, in order; they are then split into
 * coordinates. */
static tpj_hlo_value_t nonzero_rows(tpj_hlo_builder_t* b, tpj_hlo_value_t x0, int64_t rows,
                                    int64_t fill) {
  int64_t n = tpj_hlo_numel(&x0), od[2] = {rows, x0.ndim};
  if (rows == 0 || x0.ndim == 0 || n == 0) return splat_i64(b, fill, od, 2);
  tpj_hlo_value_t x = flatten(b, x0);
  tpj_hlo_value_t nz = tpj_hlo_emit_compare(
      b, x, splat(b, tpj_hlo_emit_zero(b, x.dtype), x.dims, 1), "NE");
  tpj_hlo_value_t io = tpj_hlo_emit_iota(b, TPJ_I64, &n, 1, 0);
  tpj_hlo_value_t key = tpj_hlo_emit_sort_1d(
      b, tpj_hlo_emit_select(b, nz, io, add(b, io, splat_i64(b, n, &n, 1))));
  if (rows <= n) {
    int64_t start = 0, step = 1;
    key = tpj_hlo_emit_slice(b, key, &start, &rows, &step);
  } else {
    int64_t lo = 0, hi = rows - n;
    key = tpj_hlo_emit_pad(b, key, tpj_hlo_emit_const_i64(b, 2 * n), &lo, &hi);
  }
  tpj_hlo_value_t valid = tpj_hlo_emit_compare(b, key, splat_i64(b, n, &rows, 1), "LT");
  int64_t st[TPJ_MAX_DIMS];
  strides_of(x0.dims, x0.ndim, st);
  tpj_hlo_value_t cols[TPJ_MAX_DIMS];
  int64_t cd[2] = {rows, 1};
  for (int d = 0; d < x0.ndim; ++d) {
    tpj_hlo_value_t c = tpj_hlo_emit_binary(b, "stablehlo.divide", key, splat_i64(b, st[d], &rows, 1));
    c = tpj_hlo_emit_binary(b, "stablehlo.remainder", c, splat_i64(b, x0.dims[d], &rows, 1));
    c = tpj_hlo_emit_select(b, valid, c, splat_i64(b, fill, &rows, 1));
    cols[d] = tpj_hlo_emit_reshape(b, c, cd, 2);
  }
  return x0.ndim == 1 ? cols[0] : tpj_hlo_emit_concatenate(b, cols, x0.ndim, 1);
}

/* nonzero: in[0] x; outs[0] is (count, x.ndim) i64, count computed by
 * tpj::count_nonzero beforehand (the result's size depends on the data, so
 * it is known only after a host wait). */
void tpj_lower_nonzero(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (o->ndim != 2 || o->dims[1] != ctx->in[0].ndim) {
    tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "nonzero: bad result shape"));
    return;
  }
  results[0] = nonzero_rows(ctx->b, ctx->in[0], o->dims[0], 0);
}

/* nonzero_static: in[0] x; attrs tpj_attrs_nonzero_static_t; outs[0] is (size, x.ndim)
 * i64. Its size is given, so no host wait: missing rows hold fill_value. */
void tpj_lower_nonzero_static(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (o->ndim != 2 || o->dims[1] != ctx->in[0].ndim ||
      ctx->nattrs < TPJ_ATTRS_WORDS(tpj_attrs_nonzero_static_t)) {
    tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "nonzero_static: bad operands"));
    return;
  }
  results[0] = nonzero_rows(ctx->b, ctx->in[0], o->dims[0],
                            TPJ_ATTRS(ctx, tpj_attrs_nonzero_static_t)->fill_value);
}
