#include "view/view.h"

#include <string.h>

int64_t tpj_view_numel(const tpj_view_t* v) {
  int64_t n = 1;
  for (int i = 0; i < v->ndim; ++i) n *= v->sizes[i];
  return n;
}

int tpj_view_is_contiguous(const tpj_view_t* v) {
  int64_t expected = 1;
  for (int i = v->ndim - 1; i >= 0; --i) {
    if (v->sizes[i] == 1) continue;
    if (v->strides[i] != expected) return 0;
    expected *= v->sizes[i];
  }
  return 1;
}

int tpj_view_is_natural(const tpj_view_t* v, tpj_dtype_t buf_dtype, const int64_t* buf_dims,
                        int buf_ndim) {
  if (v->dtype != buf_dtype || v->offset != 0 || !tpj_view_is_contiguous(v)) return 0;
  int64_t n = 1;
  for (int i = 0; i < buf_ndim; ++i) n *= buf_dims[i];
  return n == tpj_view_numel(v);
}

int64_t tpj_view_extent(const tpj_view_t* v) {
  int64_t hi = v->offset;
  for (int i = 0; i < v->ndim; ++i) {
    if (v->sizes[i] == 0) return 0;
    hi += (v->sizes[i] - 1) * v->strides[i];
  }
  return hi + 1;
}

/* The dims that move through memory: size > 1 and stride != 0, in the view's
 * order, plus the order that sorts them by stride, largest first. */
typedef struct {
  int n;
  int pos[TPJ_MAX_DIMS];     /* index into the view's dims */
  int order[TPJ_MAX_DIMS];   /* indices into pos, by descending stride */
} tpj_view_dims_t;

static void tpj_view_real_dims(const tpj_view_t* v, tpj_view_dims_t* d) {
  d->n = 0;
  for (int i = 0; i < v->ndim; ++i)
    if (v->sizes[i] > 1 && v->strides[i] != 0) d->pos[d->n++] = i;
  for (int i = 0; i < d->n; ++i) d->order[i] = i;
  /* insertion sort, stable, descending stride */
  for (int i = 1; i < d->n; ++i) {
    int k = d->order[i];
    int j = i - 1;
    while (j >= 0 && v->strides[d->pos[d->order[j]]] < v->strides[d->pos[k]]) {
      d->order[j + 1] = d->order[j];
      --j;
    }
    d->order[j + 1] = k;
  }
}

static int tpj_view_dims_nest(const tpj_view_t* v, const tpj_view_dims_t* d) {
  for (int k = 0; k + 1 < d->n; ++k) {
    int a = d->pos[d->order[k]], c = d->pos[d->order[k + 1]];
    if (v->strides[a] % v->strides[c] != 0) return 0;
    if (v->strides[a] < v->sizes[c] * v->strides[c]) return 0;
  }
  for (int k = 0; k < d->n; ++k)
    if (v->strides[d->pos[k]] < 0) return 0;
  return 1;
}

int tpj_view_is_regular(const tpj_view_t* v) {
  tpj_view_dims_t d;
  tpj_view_real_dims(v, &d);
  return tpj_view_dims_nest(v, &d);
}

/* Reinterprets buf as a 1-D array of dt (bitcast when the dtypes differ). */
static tpj_hlo_value_t tpj_view_flatten(tpj_hlo_builder_t* b, tpj_hlo_value_t buf,
                                        tpj_dtype_t dt) {
  int64_t n = tpj_hlo_numel(&buf);
  tpj_hlo_value_t flat = tpj_hlo_emit_reshape(b, buf, &n, 1);
  if (buf.dtype == dt) return flat;
  /* StableHLO's bool (i1) has no byte width to bitcast: go through bytes. */
  if (dt == TPJ_BOOL) {
    tpj_hlo_value_t bytes = tpj_view_flatten(b, flat, TPJ_U8);
    tpj_hlo_value_t zero = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, TPJ_U8), bytes.dims,
                                                     bytes.ndim);
    return tpj_hlo_emit_compare(b, bytes, zero, "NE");
  }
  if (buf.dtype == TPJ_BOOL) return tpj_view_flatten(b, tpj_hlo_emit_convert(b, flat, TPJ_U8), dt);
  /* Nor does StableHLO bitcast complex values: a complex element is its
   * (real, imag) pair of floats. */
  if (tpj_dtype_is_complex(buf.dtype)) {
    int64_t col[2] = {n, 1};
    tpj_hlo_value_t parts[2] = {tpj_hlo_emit_reshape(b, tpj_hlo_emit_real(b, flat), col, 2),
                                tpj_hlo_emit_reshape(b, tpj_hlo_emit_imag(b, flat), col, 2)};
    int64_t m = 2 * n;
    tpj_hlo_value_t pairs = tpj_hlo_emit_reshape(b, tpj_hlo_emit_concatenate(b, parts, 2, 1), &m, 1);
    return tpj_view_flatten(b, pairs, dt);
  }
  if (tpj_dtype_is_complex(dt)) {
    tpj_dtype_t part = dt == TPJ_C64 ? TPJ_F32 : TPJ_F64;
    tpj_hlo_value_t reals = tpj_view_flatten(b, flat, part);
    int64_t m = reals.dims[0];
    if (m % 2 != 0) {
      tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT,
                                      "a storage of %lld bytes cannot be read as %s",
                                      (long long)(m * (int64_t)tpj_dtype_size(part)),
                                      tpj_dtype_name(dt)));
      return reals;
    }
    int64_t dims2[2] = {m / 2, 2}, half = m / 2;
    tpj_hlo_value_t p2 = tpj_hlo_emit_reshape(b, reals, dims2, 2);
    int64_t s0[2] = {0, 0}, l0[2] = {m / 2, 1}, s1[2] = {0, 1}, l1[2] = {m / 2, 2}, st[2] = {1, 1};
    tpj_hlo_value_t re = tpj_hlo_emit_reshape(b, tpj_hlo_emit_slice(b, p2, s0, l0, st), &half, 1);
    tpj_hlo_value_t im = tpj_hlo_emit_reshape(b, tpj_hlo_emit_slice(b, p2, s1, l1, st), &half, 1);
    return tpj_hlo_emit_complex(b, re, im);
  }
  size_t from = tpj_dtype_size(buf.dtype), to = tpj_dtype_size(dt);
  if (from == to) return tpj_hlo_emit_bitcast_convert(b, flat, dt, &n, 1);
  if (from > to) {
    /* one wide element becomes (from/to) narrow ones */
    int64_t dims2[2] = {n, (int64_t)(from / to)};
    tpj_hlo_value_t x = tpj_hlo_emit_bitcast_convert(b, flat, dt, dims2, 2);
    int64_t m = n * (int64_t)(from / to);
    return tpj_hlo_emit_reshape(b, x, &m, 1);
  }
  int64_t k = (int64_t)(to / from);
  if (n % k != 0) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT,
                                    "a storage of %lld %s elements cannot be read as %s", (long long)n,
                                    tpj_dtype_name(buf.dtype), tpj_dtype_name(dt)));
    return flat;
  }
  int64_t dims2[2] = {n / k, k};
  tpj_hlo_value_t x = tpj_hlo_emit_reshape(b, flat, dims2, 2);
  int64_t m = n / k;
  return tpj_hlo_emit_bitcast_convert(b, x, dt, &m, 1);
}

/* Reads the nested dims with slices and reshapes; returns a value whose dims
 * are the real dims in descending-stride order. */
static tpj_hlo_value_t tpj_view_read_nested(tpj_hlo_builder_t* b, tpj_hlo_value_t flat,
                                            const tpj_view_t* v, const tpj_view_dims_t* d) {
  int64_t n = flat.dims[0];
  /* A box: with the storage split at every stride of the view (dims n/s0,
   * s0/s1, ..., s_last), the offset's digits in that split plus the sizes
   * stay inside each dim. Then the view is one slice of a reshape (a
   * q/k/v split of a fused projection is), with no padding or copying. */
  if (d->n + 1 <= TPJ_MAX_DIMS) {
    int64_t split[TPJ_MAX_DIMS], st[TPJ_MAX_DIMS], li[TPJ_MAX_DIMS], one[TPJ_MAX_DIMS];
    int a0 = d->pos[d->order[0]];
    int box = n % v->strides[a0] == 0;
    int64_t rest = v->offset;
    for (int k = 0; box && k <= d->n; ++k) {
      int64_t unit = k < d->n ? v->strides[d->pos[d->order[k]]] : 1;
      int64_t above = k == 0 ? n : v->strides[d->pos[d->order[k - 1]]];
      int64_t size = k < d->n ? v->sizes[d->pos[d->order[k]]] : 1;
      split[k] = above / unit;
      st[k] = rest / unit;
      rest %= unit;
      li[k] = st[k] + size;
      one[k] = 1;
      box = li[k] <= split[k];
    }
    if (box) {
      tpj_hlo_value_t r = tpj_hlo_emit_reshape(b, flat, split, d->n + 1);
      r = tpj_hlo_emit_slice(b, r, st, li, one);
      int64_t dims[TPJ_MAX_DIMS];
      for (int k = 0; k < d->n; ++k) dims[k] = v->sizes[d->pos[d->order[k]]];
      return tpj_hlo_emit_reshape(b, r, dims, d->n);
    }
  }
  int a0 = d->pos[d->order[0]];
  int64_t span = v->sizes[a0] * v->strides[a0];
  if (v->offset + span > n) {
    int64_t lo = 0, hi = v->offset + span - n;
    flat = tpj_hlo_emit_pad(b, flat, tpj_hlo_emit_zero(b, flat.dtype), &lo, &hi);
  }
  int64_t start = v->offset, limit = v->offset + span, one = 1;
  tpj_hlo_value_t cur = tpj_hlo_emit_slice(b, flat, &start, &limit, &one);
  int64_t dims[TPJ_MAX_DIMS + 1];
  int nd = 0;
  for (int k = 0; k < d->n; ++k) {
    int a = d->pos[d->order[k]];
    if (k + 1 == d->n) {
      /* the innermost real dim: every strides[a]-th element of cur's last
       * dim (length sizes[a] * strides[a]). A strided slice, not a split,
       * so no intermediate value has more than d->n dims. */
      int64_t st[TPJ_MAX_DIMS], li[TPJ_MAX_DIMS], sd[TPJ_MAX_DIMS];
      for (int i = 0; i < nd; ++i) {
        st[i] = 0;
        li[i] = dims[i];
        sd[i] = 1;
      }
      st[nd] = 0;
      li[nd] = v->sizes[a] * v->strides[a];
      sd[nd] = v->strides[a];
      cur = tpj_hlo_emit_slice(b, cur, st, li, sd);
      break;
    }
    /* cur's last dim has length sizes[a] * strides[a]: split it, keep the
     * next dim's span of each stride-long row, and go on splitting that */
    int c = d->pos[d->order[k + 1]];
    int64_t want = v->sizes[c] * v->strides[c];
    dims[nd] = v->sizes[a];
    dims[nd + 1] = v->strides[a];
    cur = tpj_hlo_emit_reshape(b, cur, dims, nd + 2);
    if (want != v->strides[a]) {
      int64_t st[TPJ_MAX_DIMS + 1], li[TPJ_MAX_DIMS + 1], sd[TPJ_MAX_DIMS + 1];
      for (int i = 0; i < nd + 2; ++i) {
        st[i] = 0;
        li[i] = dims[i];
        sd[i] = 1;
      }
      li[nd + 1] = want;
      cur = tpj_hlo_emit_slice(b, cur, st, li, sd);
      dims[nd + 1] = want;
    }
    nd += 1;
  }
  return cur;
}

/* flat index of every element of v: offset + sum(iota_k * stride_k) */
static tpj_hlo_value_t tpj_view_indices(tpj_hlo_builder_t* b, const tpj_view_t* v) {
  tpj_hlo_value_t idx = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, v->offset),
                                                  v->sizes, v->ndim);
  for (int k = 0; k < v->ndim; ++k) {
    if (v->sizes[k] == 1 || v->strides[k] == 0) continue;
    tpj_hlo_value_t io = tpj_hlo_emit_iota(b, TPJ_I64, v->sizes, v->ndim, k);
    tpj_hlo_value_t st = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, v->strides[k]),
                                                   v->sizes, v->ndim);
    idx = tpj_hlo_emit_binary(b, "stablehlo.add", idx,
                              tpj_hlo_emit_binary(b, "stablehlo.multiply", io, st));
  }
  return idx;
}

tpj_hlo_value_t tpj_view_emit_read(tpj_hlo_builder_t* b, tpj_hlo_value_t buf,
                                   const tpj_view_t* v) {
  if (tpj_view_is_natural(v, buf.dtype, buf.dims, buf.ndim))
    return tpj_hlo_emit_reshape(b, buf, v->sizes, v->ndim);
  tpj_hlo_value_t flat = tpj_view_flatten(b, buf, v->dtype);
  if (!tpj_hlo_ok(b)) return flat;
  int64_t n = flat.dims[0];
  /* an empty view reads nothing, wherever it points */
  if (tpj_view_numel(v) == 0)
    return tpj_hlo_emit_broadcast_in_dim(b, tpj_hlo_emit_zero(b, v->dtype), v->sizes, v->ndim,
                                         NULL);
  if (v->offset < 0 || tpj_view_extent(v) > n) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_OUT_OF_RANGE,
                                    "view (offset %lld, extent %lld) reaches past its storage "
                                    "of %lld elements",
                                    (long long)v->offset, (long long)tpj_view_extent(v),
                                    (long long)n));
    return flat;
  }
  tpj_view_dims_t d;
  tpj_view_real_dims(v, &d);
  tpj_hlo_value_t cur;
  if (d.n == 0) {
    int64_t start = v->offset, limit = v->offset + 1, one = 1;
    cur = tpj_hlo_emit_reshape(b, tpj_hlo_emit_slice(b, flat, &start, &limit, &one), NULL, 0);
  } else if (tpj_view_dims_nest(v, &d)) {
    cur = tpj_view_read_nested(b, flat, v, &d);
    /* from descending-stride order back to the view's order */
    int64_t perm[TPJ_MAX_DIMS];
    for (int k = 0; k < d.n; ++k)
      for (int j = 0; j < d.n; ++j)
        if (d.order[j] == k) perm[k] = j;
    cur = tpj_hlo_emit_transpose(b, cur, perm);
  } else {
    /* irregular strides: one gather of every element, already in v's shape */
    return tpj_hlo_emit_gather_1d(b, flat, tpj_view_indices(b, v));
  }
  /* size-1 and stride-0 dims come back through broadcast_in_dim */
  int64_t bdims[TPJ_MAX_DIMS];
  for (int k = 0; k < d.n; ++k) bdims[k] = d.pos[k];
  return tpj_hlo_emit_broadcast_in_dim(b, cur, v->sizes, v->ndim, bdims);
}

tpj_hlo_value_t tpj_view_emit_write(tpj_hlo_builder_t* b, tpj_hlo_value_t buf,
                                    const tpj_view_t* v, tpj_hlo_value_t x) {
  tpj_hlo_value_t flat = tpj_view_flatten(b, buf, v->dtype);
  if (!tpj_hlo_ok(b)) return flat;
  int64_t n = flat.dims[0];
  int64_t numel = tpj_view_numel(v);
  if (numel == 0) return flat;
  if (v->offset < 0 || tpj_view_extent(v) > n) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_OUT_OF_RANGE,
                                    "write to a view (offset %lld, extent %lld) past its storage "
                                    "of %lld elements",
                                    (long long)v->offset, (long long)tpj_view_extent(v),
                                    (long long)n));
    return flat;
  }
  /* A view whose elements overlap (stride 0: expand) is written by the
   * scatter below, the last write of a location winning, as CPU's loop
   * does. The ops CPU refuses to write through such a view (TensorIterator's
   * internal-overlap check) refuse in the glue; fill_, zero_ and
   * index_fill_ write through it. */
  if (tpj_view_is_contiguous(v)) {
    tpj_hlo_value_t x1 = tpj_hlo_emit_reshape(b, x, &numel, 1);
    if (numel == n) return x1;
    return tpj_hlo_emit_update_slice(b, flat, x1, &v->offset);
  }
  /* Scatter moves floats through the backend's arithmetic units, and XLA:CPU
   * flushes bfloat16 subnormals there: move their bits as integers. */
  tpj_dtype_t bits = TPJ_DTYPE_INVALID;
  switch (v->dtype) {
    case TPJ_F16: case TPJ_BF16: bits = TPJ_I16; break;
    case TPJ_F32: bits = TPJ_I32; break;
    case TPJ_F64: bits = TPJ_I64; break;
    default: break;
  }
  tpj_hlo_value_t idx = tpj_view_indices(b, v);
  if (bits == TPJ_DTYPE_INVALID) return tpj_hlo_emit_scatter_1d(b, flat, idx, x);
  tpj_hlo_value_t fi = tpj_hlo_emit_bitcast_convert(b, flat, bits, flat.dims, 1);
  tpj_hlo_value_t xi = tpj_hlo_emit_bitcast_convert(b, x, bits, x.dims, x.ndim);
  tpj_hlo_value_t r = tpj_hlo_emit_scatter_1d(b, fi, idx, xi);
  return tpj_hlo_emit_bitcast_convert(b, r, v->dtype, r.dims, 1);
}

int tpj_view_to_attrs(const tpj_view_t* v, int64_t* attrs, int cap) {
  int need = 2 * v->ndim + 3;
  if (need > cap) return -1;
  attrs[0] = v->dtype;
  attrs[1] = v->ndim;
  attrs[2] = v->offset;
  for (int i = 0; i < v->ndim; ++i) {
    attrs[3 + i] = v->sizes[i];
    attrs[3 + v->ndim + i] = v->strides[i];
  }
  return need;
}

int tpj_view_from_attrs(const int64_t* attrs, int n, tpj_view_t* out_v) {
  if (n < 3 || attrs[1] < 0 || attrs[1] > TPJ_MAX_DIMS || n < 2 * attrs[1] + 3) return -1;
  memset(out_v, 0, sizeof(*out_v));
  out_v->dtype = (tpj_dtype_t)attrs[0];
  out_v->ndim = (int)attrs[1];
  out_v->offset = attrs[2];
  for (int i = 0; i < out_v->ndim; ++i) {
    out_v->sizes[i] = attrs[3 + i];
    out_v->strides[i] = attrs[3 + out_v->ndim + i];
  }
  return 2 * out_v->ndim + 3;
}
