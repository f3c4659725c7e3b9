#include "hlo/builder.h"
#include "hlo/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const tpj_hlo_value_t tpj_hlo_kInvalid = {-1, 0, TPJ_DTYPE_INVALID, 0, {0}};
#define kInvalid tpj_hlo_kInvalid

void tpj_hlo_builder_init(tpj_hlo_builder_t* b) {
  memset(b, 0, sizeof(*b));
  tpj_strbuf_init(&b->body);
}

void tpj_hlo_builder_free(tpj_hlo_builder_t* b) {
  tpj_strbuf_free(&b->body);
  free(b->args);
  b->args = NULL;
  tpj_status_free(b->status);
  b->status = NULL;
}

void tpj_hlo_fail(tpj_hlo_builder_t* b, tpj_status_t s) {
  if (!s) return;
  if (b->status) tpj_status_free(s);
  else b->status = s;
}

int tpj_hlo_ok(const tpj_hlo_builder_t* b) { return b->status == NULL; }

int64_t tpj_hlo_numel(const tpj_hlo_value_t* v) {
  int64_t n = 1;
  for (int i = 0; i < v->ndim; ++i) n *= v->dims[i];
  return n;
}

void tpj_hlo_print_type(tpj_strbuf_t* sb, tpj_dtype_t dt, const int64_t* dims, int ndim) {
  tpj_strbuf_puts(sb, "tensor<");
  for (int i = 0; i < ndim; ++i) tpj_strbuf_printf(sb, "%lldx", (long long)dims[i]);
  tpj_strbuf_puts(sb, tpj_dtype_hlo_name(dt));
  tpj_strbuf_puts(sb, ">");
}

void tpj_hlo_print_value_type(tpj_strbuf_t* sb, const tpj_hlo_value_t* v) {
  tpj_hlo_print_type(sb, v->dtype, v->dims, v->ndim);
}

void tpj_hlo_print_ref(tpj_strbuf_t* sb, const tpj_hlo_value_t* v) {
  tpj_strbuf_printf(sb, v->is_arg ? "%%arg%d" : "%%v%d", v->id);
}

void tpj_hlo_print_i64_array(tpj_strbuf_t* sb, const int64_t* a, int n) {
  tpj_strbuf_puts(sb, "array<i64");
  for (int i = 0; i < n; ++i) tpj_strbuf_printf(sb, "%s %lld", i ? "," : ":", (long long)a[i]);
  tpj_strbuf_puts(sb, ">");
}

int tpj_hlo_check_valid(tpj_hlo_builder_t* b, const tpj_hlo_value_t* v) {
  if (b->status) return 0;
  if (v->id < 0) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "use of an invalid HLO value"));
    return 0;
  }
  return 1;
}

int tpj_hlo_check_dims(tpj_hlo_builder_t* b, const int64_t* dims, int ndim) {
  if (ndim < 0 || ndim > TPJ_MAX_DIMS) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_UNIMPLEMENTED, "rank %d exceeds the maximum %d", ndim,
                                    TPJ_MAX_DIMS));
    return 0;
  }
  for (int i = 0; i < ndim; ++i) {
    if (dims[i] < 0) {
      tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "negative dimension %lld",
                                      (long long)dims[i]));
      return 0;
    }
  }
  return 1;
}

tpj_hlo_value_t tpj_hlo_new_value(tpj_hlo_builder_t* b, tpj_dtype_t dt,
                                         const int64_t* dims, int ndim) {
  tpj_hlo_value_t v;
  memset(&v, 0, sizeof(v));
  v.id = b->next_id++;
  v.dtype = dt;
  v.ndim = ndim;
  for (int i = 0; i < ndim; ++i) v.dims[i] = dims[i];
  return v;
}

/* Writes `%vN = "name"(operands...)` up to the attribute dictionary. */
void tpj_hlo_begin_op(tpj_hlo_builder_t* b, const tpj_hlo_value_t* r, const char* name,
                             const tpj_hlo_value_t* const* ops, int nops) {
  tpj_strbuf_t* sb = &b->body;
  tpj_strbuf_puts(sb, "    ");
  tpj_hlo_print_ref(sb, r);
  tpj_strbuf_printf(sb, " = \"%s\"(", name);
  for (int i = 0; i < nops; ++i) {
    if (i) tpj_strbuf_puts(sb, ", ");
    tpj_hlo_print_ref(sb, ops[i]);
  }
  tpj_strbuf_puts(sb, ")");
}

/* Writes ` : (types) -> type` and the newline. */
void tpj_hlo_end_op(tpj_hlo_builder_t* b, const tpj_hlo_value_t* r,
                           const tpj_hlo_value_t* const* ops, int nops) {
  tpj_strbuf_t* sb = &b->body;
  tpj_strbuf_puts(sb, " : (");
  for (int i = 0; i < nops; ++i) {
    if (i) tpj_strbuf_puts(sb, ", ");
    tpj_hlo_print_value_type(sb, ops[i]);
  }
  tpj_strbuf_puts(sb, ") -> ");
  tpj_hlo_print_value_type(sb, r);
  tpj_strbuf_puts(sb, "\n");
}

tpj_hlo_value_t tpj_hlo_arg(tpj_hlo_builder_t* b, tpj_dtype_t dt, const int64_t* dims,
                            int ndim) {
  if (b->status || !tpj_hlo_check_dims(b, dims, ndim)) return kInvalid;
  if (b->nargs == b->cap_args) {
    int cap = b->cap_args ? 2 * b->cap_args : 16;
    tpj_hlo_value_t* a = (tpj_hlo_value_t*)realloc(b->args, (size_t)cap * sizeof(*a));
    if (!a) {
      tpj_hlo_fail(b, tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory"));
      return kInvalid;
    }
    b->args = a;
    b->cap_args = cap;
  }
  tpj_hlo_value_t v;
  memset(&v, 0, sizeof(v));
  v.id = b->nargs;
  v.is_arg = 1;
  v.dtype = dt;
  v.ndim = ndim;
  for (int i = 0; i < ndim; ++i) v.dims[i] = dims[i];
  b->args[b->nargs++] = v;
  return v;
}

int tpj_hlo_same_shape(const tpj_hlo_value_t* x, const tpj_hlo_value_t* y) {
  if (x->ndim != y->ndim) return 0;
  for (int i = 0; i < x->ndim; ++i)
    if (x->dims[i] != y->dims[i]) return 0;
  return 1;
}

tpj_hlo_value_t tpj_hlo_emit_binary(tpj_hlo_builder_t* b, const char* name, tpj_hlo_value_t x,
                                    tpj_hlo_value_t y) {
  if (!tpj_hlo_check_valid(b, &x) || !tpj_hlo_check_valid(b, &y)) return kInvalid;
  if (x.dtype != y.dtype || !tpj_hlo_same_shape(&x, &y)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT,
                                    "%s: operands differ in dtype or shape (%s rank %d vs %s "
                                    "rank %d)",
                                    name, tpj_dtype_name(x.dtype), x.ndim,
                                    tpj_dtype_name(y.dtype), y.ndim));
    return kInvalid;
  }
  /* The spec allows a complex remainder, but XLA:CPU's emitter dies on one
   * (a segfault, not an error): refuse it here, whatever lowering asked. */
  if (tpj_dtype_is_complex(x.dtype) && strcmp(name, "stablehlo.remainder") == 0) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_UNIMPLEMENTED, "remainder is not implemented for %s",
                                    tpj_dtype_name(x.dtype)));
    return kInvalid;
  }
  tpj_hlo_value_t r = tpj_hlo_new_value(b, x.dtype, x.dims, x.ndim);
  const tpj_hlo_value_t* ops[2] = {&x, &y};
  tpj_hlo_begin_op(b, &r, name, ops, 2);
  tpj_hlo_end_op(b, &r, ops, 2);
  return r;
}

tpj_hlo_value_t tpj_hlo_emit_unary(tpj_hlo_builder_t* b, const char* name, tpj_hlo_value_t x) {
  return tpj_hlo_emit_unary_to(b, name, x, x.dtype);
}

tpj_hlo_value_t tpj_hlo_emit_select(tpj_hlo_builder_t* b, tpj_hlo_value_t cond,
                                    tpj_hlo_value_t x, tpj_hlo_value_t y) {
  if (!tpj_hlo_check_valid(b, &cond) || !tpj_hlo_check_valid(b, &x) ||
      !tpj_hlo_check_valid(b, &y))
    return kInvalid;
  if (cond.dtype != TPJ_BOOL || x.dtype != y.dtype || !tpj_hlo_same_shape(&x, &y) ||
      !tpj_hlo_same_shape(&cond, &x)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT,
                                    "select needs a bool condition and two like operands of "
                                    "one shape"));
    return kInvalid;
  }
  tpj_hlo_value_t r = tpj_hlo_new_value(b, x.dtype, x.dims, x.ndim);
  const tpj_hlo_value_t* ops[3] = {&cond, &x, &y};
  tpj_hlo_begin_op(b, &r, "stablehlo.select", ops, 3);
  tpj_hlo_end_op(b, &r, ops, 3);
  return r;
}

tpj_hlo_value_t tpj_hlo_emit_unary_to(tpj_hlo_builder_t* b, const char* name, tpj_hlo_value_t x,
                                      tpj_dtype_t dt) {
  if (!tpj_hlo_check_valid(b, &x)) return kInvalid;
  tpj_hlo_value_t r = tpj_hlo_new_value(b, dt, x.dims, x.ndim);
  const tpj_hlo_value_t* ops[1] = {&x};
  tpj_hlo_begin_op(b, &r, name, ops, 1);
  tpj_hlo_end_op(b, &r, ops, 1);
  return r;
}

tpj_hlo_value_t tpj_hlo_emit_compare(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t y,
                                     const char* dir) {
  if (!tpj_hlo_check_valid(b, &x) || !tpj_hlo_check_valid(b, &y)) return kInvalid;
  if (x.dtype != y.dtype || !tpj_hlo_same_shape(&x, &y)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT,
                                    "compare: operands differ in dtype or shape"));
    return kInvalid;
  }
  tpj_hlo_value_t r = tpj_hlo_new_value(b, TPJ_BOOL, x.dims, x.ndim);
  const tpj_hlo_value_t* ops[2] = {&x, &y};
  tpj_hlo_begin_op(b, &r, "stablehlo.compare", ops, 2);
  /* Signed integers say so: without compare_type the StableHLO folder compares
   * constant operands as unsigned (tril(1x1, -1) kept the element: 0 <= -1). */
  int is_signed = tpj_dtype_is_int(x.dtype) && x.dtype != TPJ_U8;
  tpj_strbuf_printf(&b->body, " {comparison_direction = #stablehlo<comparison_direction %s>%s}",
                    dir, is_signed ? ", compare_type = #stablehlo<comparison_type SIGNED>" : "");
  tpj_hlo_end_op(b, &r, ops, 2);
  return r;
}

static tpj_hlo_value_t tpj_hlo_emit_part(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                         const char* name) {
  if (!tpj_hlo_check_valid(b, &x)) return kInvalid;
  if (!tpj_dtype_is_complex(x.dtype)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "%s of a non-complex value", name));
    return kInvalid;
  }
  tpj_hlo_value_t r = tpj_hlo_new_value(b, x.dtype == TPJ_C64 ? TPJ_F32 : TPJ_F64, x.dims, x.ndim);
  const tpj_hlo_value_t* ops[1] = {&x};
  tpj_hlo_begin_op(b, &r, name, ops, 1);
  tpj_hlo_end_op(b, &r, ops, 1);
  return r;
}

tpj_hlo_value_t tpj_hlo_emit_real(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  return tpj_hlo_emit_part(b, x, "stablehlo.real");
}

tpj_hlo_value_t tpj_hlo_emit_imag(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  return tpj_hlo_emit_part(b, x, "stablehlo.imag");
}

tpj_hlo_value_t tpj_hlo_emit_complex(tpj_hlo_builder_t* b, tpj_hlo_value_t re, tpj_hlo_value_t im) {
  if (!tpj_hlo_check_valid(b, &re) || !tpj_hlo_check_valid(b, &im)) return kInvalid;
  if (re.dtype != im.dtype || (re.dtype != TPJ_F32 && re.dtype != TPJ_F64) ||
      !tpj_hlo_same_shape(&re, &im)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT,
                                    "complex needs two float32 or float64 values of one shape"));
    return kInvalid;
  }
  tpj_hlo_value_t r = tpj_hlo_new_value(b, re.dtype == TPJ_F32 ? TPJ_C64 : TPJ_C128, re.dims, re.ndim);
  const tpj_hlo_value_t* ops[2] = {&re, &im};
  tpj_hlo_begin_op(b, &r, "stablehlo.complex", ops, 2);
  tpj_hlo_end_op(b, &r, ops, 2);
  return r;
}

tpj_hlo_value_t tpj_hlo_emit_concatenate(tpj_hlo_builder_t* b, const tpj_hlo_value_t* xs, int n,
                                         int dim) {
  if (n < 1 || n > TPJ_HLO_MAX_ARGS) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "concatenate of %d values", n));
    return kInvalid;
  }
  for (int i = 0; i < n; ++i)
    if (!tpj_hlo_check_valid(b, &xs[i])) return kInvalid;
  if (dim < 0 || dim >= xs[0].ndim) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "concatenate: bad dimension %d", dim));
    return kInvalid;
  }
  int64_t dims[TPJ_MAX_DIMS];
  for (int d = 0; d < xs[0].ndim; ++d) dims[d] = xs[0].dims[d];
  dims[dim] = 0;
  for (int i = 0; i < n; ++i) {
    int ok = xs[i].dtype == xs[0].dtype && xs[i].ndim == xs[0].ndim;
    for (int d = 0; ok && d < xs[0].ndim; ++d) ok = d == dim || xs[i].dims[d] == xs[0].dims[d];
    if (!ok) {
      tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT,
                                      "concatenate: operand %d differs in dtype or shape", i));
      return kInvalid;
    }
    dims[dim] += xs[i].dims[dim];
  }
  tpj_hlo_value_t r = tpj_hlo_new_value(b, xs[0].dtype, dims, xs[0].ndim);
  const tpj_hlo_value_t* ops[TPJ_HLO_MAX_ARGS];
  for (int i = 0; i < n; ++i) ops[i] = &xs[i];
  tpj_hlo_begin_op(b, &r, "stablehlo.concatenate", ops, n);
  tpj_strbuf_printf(&b->body, " {dimension = %d : i64}", dim);
  tpj_hlo_end_op(b, &r, ops, n);
  return r;
}

tpj_hlo_value_t tpj_hlo_emit_convert(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_dtype_t dt) {
  if (!tpj_hlo_check_valid(b, &x)) return kInvalid;
  if (x.dtype == dt) return x;
  if (tpj_dtype_size(dt) == 0) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "convert to an invalid dtype"));
    return kInvalid;
  }
  if (dt == TPJ_BOOL && tpj_dtype_is_complex(x.dtype)) {
    /* PyTorch's complex -> bool is z != 0, either part; XLA's convert looks
     * at the real part only. */
    tpj_hlo_value_t re = tpj_hlo_emit_real(b, x), im = tpj_hlo_emit_imag(b, x);
    tpj_hlo_value_t z = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_f64(b, re.dtype, 0.0),
                                                  x.dims, x.ndim);
    return tpj_hlo_emit_binary(b, "stablehlo.or", tpj_hlo_emit_compare(b, re, z, "NE"),
                               tpj_hlo_emit_compare(b, im, z, "NE"));
  }
  tpj_hlo_value_t r = tpj_hlo_new_value(b, dt, x.dims, x.ndim);
  const tpj_hlo_value_t* ops[1] = {&x};
  tpj_hlo_begin_op(b, &r, "stablehlo.convert", ops, 1);
  tpj_hlo_end_op(b, &r, ops, 1);
  return r;
}

tpj_hlo_value_t tpj_hlo_emit_bitcast_convert(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                             tpj_dtype_t dt, const int64_t* dims, int ndim) {
  if (!tpj_hlo_check_valid(b, &x) || !tpj_hlo_check_dims(b, dims, ndim)) return kInvalid;
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= dims[i];
  if ((uint64_t)tpj_hlo_numel(&x) * tpj_dtype_size(x.dtype) != (uint64_t)n * tpj_dtype_size(dt)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "bitcast between different byte sizes"));
    return kInvalid;
  }
  tpj_hlo_value_t r = tpj_hlo_new_value(b, dt, dims, ndim);
  const tpj_hlo_value_t* ops[1] = {&x};
  tpj_hlo_begin_op(b, &r, "stablehlo.bitcast_convert", ops, 1);
  tpj_hlo_end_op(b, &r, ops, 1);
  return r;
}

tpj_hlo_value_t tpj_hlo_emit_reshape(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                     const int64_t* dims, int ndim) {
  if (!tpj_hlo_check_valid(b, &x) || !tpj_hlo_check_dims(b, dims, ndim)) return kInvalid;
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= dims[i];
  if (n != tpj_hlo_numel(&x)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT,
                                    "reshape of %lld elements into %lld elements",
                                    (long long)tpj_hlo_numel(&x), (long long)n));
    return kInvalid;
  }
  tpj_hlo_value_t r = tpj_hlo_new_value(b, x.dtype, dims, ndim);
  if (tpj_hlo_same_shape(&x, &r)) {
    b->next_id--;
    return x;
  }
  const tpj_hlo_value_t* ops[1] = {&x};
  tpj_hlo_begin_op(b, &r, "stablehlo.reshape", ops, 1);
  tpj_hlo_end_op(b, &r, ops, 1);
  return r;
}

tpj_hlo_value_t tpj_hlo_emit_transpose(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                       const int64_t* perm) {
  if (!tpj_hlo_check_valid(b, &x)) return kInvalid;
  int seen[TPJ_MAX_DIMS] = {0};
  int64_t dims[TPJ_MAX_DIMS];
  int identity = 1;
  for (int i = 0; i < x.ndim; ++i) {
    if (perm[i] < 0 || perm[i] >= x.ndim || seen[perm[i]]) {
      tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "transpose: bad permutation"));
      return kInvalid;
    }
    seen[perm[i]] = 1;
    dims[i] = x.dims[perm[i]];
    if (perm[i] != i) identity = 0;
  }
  if (identity) return x;
  tpj_hlo_value_t r = tpj_hlo_new_value(b, x.dtype, dims, x.ndim);
  const tpj_hlo_value_t* ops[1] = {&x};
  tpj_hlo_begin_op(b, &r, "stablehlo.transpose", ops, 1);
  tpj_strbuf_puts(&b->body, " {permutation = ");
  tpj_hlo_print_i64_array(&b->body, perm, x.ndim);
  tpj_strbuf_puts(&b->body, "}");
  tpj_hlo_end_op(b, &r, ops, 1);
  return r;
}

tpj_hlo_value_t tpj_hlo_emit_broadcast_in_dim(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                              const int64_t* dims, int ndim,
                                              const int64_t* bdims) {
  if (!tpj_hlo_check_valid(b, &x) || !tpj_hlo_check_dims(b, dims, ndim)) return kInvalid;
  if (x.ndim > ndim) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "broadcast to a lower rank"));
    return kInvalid;
  }
  for (int i = 0; i < x.ndim; ++i) {
    if (bdims[i] < 0 || bdims[i] >= ndim || (i && bdims[i] <= bdims[i - 1]) ||
        (x.dims[i] != 1 && x.dims[i] != dims[bdims[i]])) {
      tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT,
                                      "broadcast_in_dim: dimension %d of size %lld does not "
                                      "fit",
                                      i, (long long)x.dims[i]));
      return kInvalid;
    }
  }
  tpj_hlo_value_t r = tpj_hlo_new_value(b, x.dtype, dims, ndim);
  if (tpj_hlo_same_shape(&x, &r)) {
    b->next_id--;
    return x;
  }
  const tpj_hlo_value_t* ops[1] = {&x};
  tpj_hlo_begin_op(b, &r, "stablehlo.broadcast_in_dim", ops, 1);
  tpj_strbuf_puts(&b->body, " {broadcast_dimensions = ");
  tpj_hlo_print_i64_array(&b->body, bdims, x.ndim);
  tpj_strbuf_puts(&b->body, "}");
  tpj_hlo_end_op(b, &r, ops, 1);
  return r;
}

tpj_hlo_value_t tpj_hlo_emit_broadcast_to(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                          const int64_t* dims, int ndim) {
  if (!tpj_hlo_check_valid(b, &x)) return kInvalid;
  if (x.ndim > ndim) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "cannot broadcast rank %d to rank %d",
                                    x.ndim, ndim));
    return kInvalid;
  }
  int64_t bdims[TPJ_MAX_DIMS];
  for (int i = 0; i < x.ndim; ++i) bdims[i] = ndim - x.ndim + i;
  return tpj_hlo_emit_broadcast_in_dim(b, x, dims, ndim, bdims);
}

tpj_hlo_value_t tpj_hlo_emit_slice(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                   const int64_t* start, const int64_t* limit,
                                   const int64_t* strides) {
  if (!tpj_hlo_check_valid(b, &x)) return kInvalid;
  int64_t dims[TPJ_MAX_DIMS];
  int identity = 1;
  for (int i = 0; i < x.ndim; ++i) {
    if (start[i] < 0 || limit[i] > x.dims[i] || start[i] > limit[i] || strides[i] < 1) {
      tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT,
                                      "slice [%lld:%lld:%lld] out of range for size %lld",
                                      (long long)start[i], (long long)limit[i],
                                      (long long)strides[i], (long long)x.dims[i]));
      return kInvalid;
    }
    dims[i] = (limit[i] - start[i] + strides[i] - 1) / strides[i];
    if (start[i] != 0 || limit[i] != x.dims[i] || strides[i] != 1) identity = 0;
  }
  if (identity) return x;
  tpj_hlo_value_t r = tpj_hlo_new_value(b, x.dtype, dims, x.ndim);
  const tpj_hlo_value_t* ops[1] = {&x};
  tpj_hlo_begin_op(b, &r, "stablehlo.slice", ops, 1);
  tpj_strbuf_puts(&b->body, " {start_indices = ");
  tpj_hlo_print_i64_array(&b->body, start, x.ndim);
  tpj_strbuf_puts(&b->body, ", limit_indices = ");
  tpj_hlo_print_i64_array(&b->body, limit, x.ndim);
  tpj_strbuf_puts(&b->body, ", strides = ");
  tpj_hlo_print_i64_array(&b->body, strides, x.ndim);
  tpj_strbuf_puts(&b->body, "}");
  tpj_hlo_end_op(b, &r, ops, 1);
  return r;
}

tpj_hlo_value_t tpj_hlo_emit_pad_general(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                         tpj_hlo_value_t padv, const int64_t* lo,
                                         const int64_t* hi, const int64_t* interior) {
  if (!tpj_hlo_check_valid(b, &x) || !tpj_hlo_check_valid(b, &padv)) return kInvalid;
  if (padv.ndim != 0 || padv.dtype != x.dtype) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "pad value must be a 0-d %s",
                                    tpj_dtype_name(x.dtype)));
    return kInvalid;
  }
  int64_t dims[TPJ_MAX_DIMS];
  for (int i = 0; i < x.ndim; ++i) {
    if (interior[i] < 0) {
      tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "pad: negative interior padding"));
      return kInvalid;
    }
    int64_t spread = x.dims[i] ? x.dims[i] + (x.dims[i] - 1) * interior[i] : 0;
    dims[i] = spread + lo[i] + hi[i];
    if (dims[i] < 0) {
      tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "pad to a negative size"));
      return kInvalid;
    }
  }
  tpj_hlo_value_t r = tpj_hlo_new_value(b, x.dtype, dims, x.ndim);
  const tpj_hlo_value_t* ops[2] = {&x, &padv};
  tpj_hlo_begin_op(b, &r, "stablehlo.pad", ops, 2);
  tpj_strbuf_puts(&b->body, " {edge_padding_low = ");
  tpj_hlo_print_i64_array(&b->body, lo, x.ndim);
  tpj_strbuf_puts(&b->body, ", edge_padding_high = ");
  tpj_hlo_print_i64_array(&b->body, hi, x.ndim);
  tpj_strbuf_puts(&b->body, ", interior_padding = ");
  tpj_hlo_print_i64_array(&b->body, interior, x.ndim);
  tpj_strbuf_puts(&b->body, "}");
  tpj_hlo_end_op(b, &r, ops, 2);
  return r;
}

tpj_hlo_value_t tpj_hlo_emit_pad(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t padv,
                                 const int64_t* lo, const int64_t* hi) {
  int64_t interior[TPJ_MAX_DIMS] = {0};
  return tpj_hlo_emit_pad_general(b, x, padv, lo, hi, interior);
}

tpj_hlo_value_t tpj_hlo_emit_reverse(tpj_hlo_builder_t* b, tpj_hlo_value_t x, const int64_t* dims,
                                     int ndims) {
  if (!tpj_hlo_check_valid(b, &x)) return kInvalid;
  int seen[TPJ_MAX_DIMS] = {0};
  for (int i = 0; i < ndims; ++i) {
    if (dims[i] < 0 || dims[i] >= x.ndim || seen[dims[i]]) {
      tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "reverse: bad dimension %lld",
                                      (long long)dims[i]));
      return kInvalid;
    }
    seen[dims[i]] = 1;
  }
  if (ndims == 0) return x;
  tpj_hlo_value_t r = tpj_hlo_new_value(b, x.dtype, x.dims, x.ndim);
  const tpj_hlo_value_t* ops[1] = {&x};
  tpj_hlo_begin_op(b, &r, "stablehlo.reverse", ops, 1);
  tpj_strbuf_puts(&b->body, " {dimensions = ");
  tpj_hlo_print_i64_array(&b->body, dims, ndims);
  tpj_strbuf_puts(&b->body, "}");
  tpj_hlo_end_op(b, &r, ops, 1);
  return r;
}

static tpj_hlo_value_t tpj_hlo_emit_constant_text(tpj_hlo_builder_t* b, tpj_dtype_t dt,
                                                  const char* literal) {
  if (b->status) return kInvalid;
  tpj_hlo_value_t r = tpj_hlo_new_value(b, dt, NULL, 0);
  tpj_hlo_begin_op(b, &r, "stablehlo.constant", NULL, 0);
  tpj_strbuf_printf(&b->body, " {value = dense<%s> : ", literal);
  tpj_hlo_print_value_type(&b->body, &r);
  tpj_strbuf_puts(&b->body, "}");
  tpj_hlo_end_op(b, &r, NULL, 0);
  return r;
}

tpj_hlo_value_t tpj_hlo_emit_zero(tpj_hlo_builder_t* b, tpj_dtype_t dt) {
  const char* lit = "0";
  if (dt == TPJ_BOOL) lit = "false";
  else if (tpj_dtype_is_float(dt)) lit = "0.000000e+00";
  else if (tpj_dtype_is_complex(dt)) lit = "(0.000000e+00,0.000000e+00)";
  return tpj_hlo_emit_constant_text(b, dt, lit);
}

tpj_hlo_value_t tpj_hlo_emit_const_i64(tpj_hlo_builder_t* b, int64_t v) {
  char lit[32];
  snprintf(lit, sizeof(lit), "%lld", (long long)v);
  return tpj_hlo_emit_constant_text(b, TPJ_I64, lit);
}

tpj_hlo_value_t tpj_hlo_emit_iota(tpj_hlo_builder_t* b, tpj_dtype_t dt, const int64_t* dims,
                                  int ndim, int iota_dim) {
  if (b->status || !tpj_hlo_check_dims(b, dims, ndim)) return kInvalid;
  if (iota_dim < 0 || iota_dim >= ndim) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "iota dimension out of range"));
    return kInvalid;
  }
  tpj_hlo_value_t r = tpj_hlo_new_value(b, dt, dims, ndim);
  tpj_hlo_begin_op(b, &r, "stablehlo.iota", NULL, 0);
  tpj_strbuf_printf(&b->body, " {iota_dimension = %d : i64}", iota_dim);
  tpj_hlo_end_op(b, &r, NULL, 0);
  return r;
}

tpj_hlo_value_t tpj_hlo_emit_gather_1d(tpj_hlo_builder_t* b, tpj_hlo_value_t flat,
                                       tpj_hlo_value_t idx) {
  if (!tpj_hlo_check_valid(b, &flat) || !tpj_hlo_check_valid(b, &idx)) return kInvalid;
  if (flat.ndim != 1 || idx.dtype != TPJ_I64) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT,
                                    "gather_1d needs a 1-D operand and int64 indices"));
    return kInvalid;
  }
  tpj_hlo_value_t r = tpj_hlo_new_value(b, flat.dtype, idx.dims, idx.ndim);
  const tpj_hlo_value_t* ops[2] = {&flat, &idx};
  tpj_hlo_begin_op(b, &r, "stablehlo.gather", ops, 2);
  tpj_strbuf_printf(&b->body,
                    " {dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], "
                    "start_index_map = [0], index_vector_dim = %d>, indices_are_sorted = "
                    "false, slice_sizes = array<i64: 1>}",
                    idx.ndim);
  tpj_hlo_end_op(b, &r, ops, 2);
  return r;
}

tpj_hlo_value_t tpj_hlo_emit_update_slice(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                          tpj_hlo_value_t update, const int64_t* start) {
  if (!tpj_hlo_check_valid(b, &x) || !tpj_hlo_check_valid(b, &update)) return kInvalid;
  if (x.dtype != update.dtype || x.ndim != update.ndim) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT,
                                    "dynamic_update_slice: operand and update differ in dtype or rank"));
    return kInvalid;
  }
  for (int i = 0; i < x.ndim; ++i) {
    if (start[i] < 0 || start[i] + update.dims[i] > x.dims[i]) {
      tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT,
                                      "dynamic_update_slice: update does not fit at %lld in dim %d",
                                      (long long)start[i], i));
      return kInvalid;
    }
  }
  tpj_hlo_value_t idx[TPJ_MAX_DIMS];
  for (int i = 0; i < x.ndim; ++i) idx[i] = tpj_hlo_emit_const_i64(b, start[i]);
  return tpj_hlo_dus_op(b, x, update, idx);
}

tpj_hlo_value_t tpj_hlo_dus_op(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t update,
                               const tpj_hlo_value_t* starts) {
  tpj_hlo_value_t r = tpj_hlo_new_value(b, x.dtype, x.dims, x.ndim);
  const tpj_hlo_value_t* ops[TPJ_MAX_DIMS + 2];
  ops[0] = &x;
  ops[1] = &update;
  for (int i = 0; i < x.ndim; ++i) ops[2 + i] = &starts[i];
  tpj_hlo_begin_op(b, &r, "stablehlo.dynamic_update_slice", ops, 2 + x.ndim);
  tpj_hlo_end_op(b, &r, ops, 2 + x.ndim);
  return r;
}

/* Writes the one-block region of reduce/scatter: ` ({ ^bb0(a, b): ... })`
 * computing `body`(a, b), or returning b when body is NULL (an overwrite).
 * Block argument names carry the op's id, so they are unique in the function. */
void tpj_hlo_print_region(tpj_strbuf_t* sb, int id, tpj_dtype_t dt, const char* body) {
  tpj_strbuf_printf(sb, " ({\n    ^bb0(%%ra%d: ", id);
  tpj_hlo_print_type(sb, dt, NULL, 0);
  tpj_strbuf_printf(sb, ", %%rb%d: ", id);
  tpj_hlo_print_type(sb, dt, NULL, 0);
  tpj_strbuf_puts(sb, "):\n");
  if (body) {
    tpj_strbuf_printf(sb, "      %%rc%d = \"%s\"(%%ra%d, %%rb%d) : (", id, body, id, id);
    tpj_hlo_print_type(sb, dt, NULL, 0);
    tpj_strbuf_puts(sb, ", ");
    tpj_hlo_print_type(sb, dt, NULL, 0);
    tpj_strbuf_puts(sb, ") -> ");
    tpj_hlo_print_type(sb, dt, NULL, 0);
    tpj_strbuf_puts(sb, "\n");
  }
  tpj_strbuf_printf(sb, "      \"stablehlo.return\"(%%r%c%d) : (", body ? 'c' : 'b', id);
  tpj_hlo_print_type(sb, dt, NULL, 0);
  tpj_strbuf_puts(sb, ") -> ()\n    })");
}

tpj_hlo_value_t tpj_hlo_emit_scatter_1d_with(tpj_hlo_builder_t* b, tpj_hlo_value_t flat,
                                             tpj_hlo_value_t idx, tpj_hlo_value_t upd,
                                             const char* body, int unique) {
  if (!tpj_hlo_check_valid(b, &flat) || !tpj_hlo_check_valid(b, &idx) ||
      !tpj_hlo_check_valid(b, &upd))
    return kInvalid;
  if (flat.ndim != 1 || idx.dtype != TPJ_I64 || upd.dtype != flat.dtype ||
      !tpj_hlo_same_shape(&idx, &upd)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT,
                                    "scatter_1d needs a 1-D operand, int64 indices and updates "
                                    "of the indices' shape and the operand's dtype"));
    return kInvalid;
  }
  tpj_hlo_value_t r = tpj_hlo_new_value(b, flat.dtype, flat.dims, 1);
  const tpj_hlo_value_t* ops[3] = {&flat, &idx, &upd};
  tpj_hlo_begin_op(b, &r, "stablehlo.scatter", ops, 3);
  tpj_strbuf_t* sb = &b->body;
  tpj_hlo_print_region(sb, r.id, flat.dtype, body);
  tpj_strbuf_printf(sb,
                    " {indices_are_sorted = false, scatter_dimension_numbers = "
                    "#stablehlo.scatter<inserted_window_dims = [0], "
                    "scatter_dims_to_operand_dims = [0], index_vector_dim = %d>, "
                    "unique_indices = %s}",
                    idx.ndim, unique ? "true" : "false");
  tpj_hlo_end_op(b, &r, ops, 3);
  return r;
}

tpj_hlo_value_t tpj_hlo_emit_scatter_1d(tpj_hlo_builder_t* b, tpj_hlo_value_t flat,
                                        tpj_hlo_value_t idx, tpj_hlo_value_t upd) {
  /* the update computation keeps the new value: an overwrite */
  return tpj_hlo_emit_scatter_1d_with(b, flat, idx, upd, NULL, 1);
}

void tpj_hlo_print_i64_list(tpj_strbuf_t* sb, const int64_t* a, int n) {
  tpj_strbuf_puts(sb, "[");
  for (int i = 0; i < n; ++i) tpj_strbuf_printf(sb, "%s%lld", i ? ", " : "", (long long)a[i]);
  tpj_strbuf_puts(sb, "]");
}

tpj_hlo_value_t tpj_hlo_emit_reduce(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t init,
                                    const int64_t* dims, int ndims, const char* body) {
  if (!tpj_hlo_check_valid(b, &x) || !tpj_hlo_check_valid(b, &init)) return kInvalid;
  if (init.ndim != 0 || init.dtype != x.dtype) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "reduce: init must be a 0-d %s",
                                    tpj_dtype_name(x.dtype)));
    return kInvalid;
  }
  for (int i = 0; i < ndims; ++i) {
    if (dims[i] < 0 || dims[i] >= x.ndim || (i && dims[i] <= dims[i - 1])) {
      tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "reduce: bad dimension list"));
      return kInvalid;
    }
  }
  if (ndims == 0) return x;
  tpj_hlo_value_t fast;
  if (tpj_hlo_cpu_reduce(b, x, init, dims, ndims, body, &fast)) return fast;
  return tpj_hlo_reduce_plain(b, x, init, dims, ndims, body);
}

tpj_hlo_value_t tpj_hlo_reduce_plain(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t init,
                                     const int64_t* dims, int ndims, const char* body) {
  int reduced[TPJ_MAX_DIMS] = {0};
  for (int i = 0; i < ndims; ++i) reduced[dims[i]] = 1;
  int64_t out[TPJ_MAX_DIMS];
  int nout = 0;
  for (int d = 0; d < x.ndim; ++d)
    if (!reduced[d]) out[nout++] = x.dims[d];
  tpj_hlo_value_t r = tpj_hlo_new_value(b, x.dtype, out, nout);
  const tpj_hlo_value_t* ops[2] = {&x, &init};
  tpj_hlo_begin_op(b, &r, "stablehlo.reduce", ops, 2);
  tpj_strbuf_t* sb = &b->body;
  tpj_hlo_print_region(sb, r.id, x.dtype, body);
  tpj_strbuf_puts(sb, " {dimensions = ");
  tpj_hlo_print_i64_array(sb, dims, ndims);
  tpj_strbuf_puts(sb, "}");
  tpj_hlo_end_op(b, &r, ops, 2);
  return r;
}

void tpj_hlo_print_precision(tpj_strbuf_t* sb, tpj_dtype_t operand_dtype) {
  if (operand_dtype == TPJ_F32 || operand_dtype == TPJ_C64)
    tpj_strbuf_puts(sb, ", precision_config = [#stablehlo<precision HIGHEST>, "
                        "#stablehlo<precision HIGHEST>]");
}

tpj_hlo_value_t tpj_hlo_emit_dot_general(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t y,
                                         const int64_t* xbatch, const int64_t* ybatch, int nbatch,
                                         const int64_t* xcontract, const int64_t* ycontract,
                                         int ncontract, tpj_dtype_t out_dtype) {
  if (!tpj_hlo_check_valid(b, &x) || !tpj_hlo_check_valid(b, &y)) return kInvalid;
  int xused[TPJ_MAX_DIMS] = {0}, yused[TPJ_MAX_DIMS] = {0};
  int64_t out[TPJ_MAX_DIMS];
  int nout = 0;
  for (int i = 0; i < nbatch; ++i) {
    if (xbatch[i] < 0 || xbatch[i] >= x.ndim || ybatch[i] < 0 || ybatch[i] >= y.ndim ||
        x.dims[xbatch[i]] != y.dims[ybatch[i]]) {
      tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "dot_general: batch dims differ"));
      return kInvalid;
    }
    xused[xbatch[i]] = yused[ybatch[i]] = 1;
    out[nout++] = x.dims[xbatch[i]];
  }
  for (int i = 0; i < ncontract; ++i) {
    if (xcontract[i] < 0 || xcontract[i] >= x.ndim || ycontract[i] < 0 || ycontract[i] >= y.ndim ||
        x.dims[xcontract[i]] != y.dims[ycontract[i]]) {
      tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT,
                                      "dot_general: contracting dims differ in size"));
      return kInvalid;
    }
    xused[xcontract[i]] = yused[ycontract[i]] = 1;
  }
  for (int d = 0; d < x.ndim; ++d)
    if (!xused[d]) out[nout++] = x.dims[d];
  for (int d = 0; d < y.ndim; ++d)
    if (!yused[d]) out[nout++] = y.dims[d];
  if (nout > TPJ_MAX_DIMS) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_UNIMPLEMENTED, "dot_general: result rank too high"));
    return kInvalid;
  }
  tpj_hlo_value_t r = tpj_hlo_new_value(b, out_dtype, out, nout);
  const tpj_hlo_value_t* ops[2] = {&x, &y};
  tpj_hlo_begin_op(b, &r, "stablehlo.dot_general", ops, 2);
  tpj_strbuf_t* sb = &b->body;
  tpj_strbuf_puts(sb, " {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = ");
  tpj_hlo_print_i64_list(sb, xbatch, nbatch);
  tpj_strbuf_puts(sb, ", rhs_batching_dimensions = ");
  tpj_hlo_print_i64_list(sb, ybatch, nbatch);
  tpj_strbuf_puts(sb, ", lhs_contracting_dimensions = ");
  tpj_hlo_print_i64_list(sb, xcontract, ncontract);
  tpj_strbuf_puts(sb, ", rhs_contracting_dimensions = ");
  tpj_hlo_print_i64_list(sb, ycontract, ncontract);
  tpj_strbuf_puts(sb, ">");
  tpj_hlo_print_precision(sb, x.dtype);
  tpj_strbuf_puts(sb, "}");
  tpj_hlo_end_op(b, &r, ops, 2);
  return r;
}

tpj_hlo_value_t tpj_hlo_emit_const_f64(tpj_hlo_builder_t* b, tpj_dtype_t dt, double v) {
  if (tpj_dtype_is_float(dt) || tpj_dtype_is_complex(dt)) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof(bits));
    char lit[32];
    snprintf(lit, sizeof(lit), "0x%016llX", (unsigned long long)bits);
    return tpj_hlo_emit_convert(b, tpj_hlo_emit_constant_text(b, TPJ_F64, lit), dt);
  }
  char lit[48];
  if (dt == TPJ_BOOL) snprintf(lit, sizeof(lit), "%s", v != 0 ? "true" : "false");
  else snprintf(lit, sizeof(lit), "%lld", (long long)v);
  return tpj_hlo_emit_constant_text(b, dt, lit);
}

tpj_hlo_value_t tpj_hlo_emit_one(tpj_hlo_builder_t* b, tpj_dtype_t dt) {
  return tpj_hlo_emit_const_f64(b, dt, 1.0);
}

tpj_hlo_value_t tpj_hlo_emit_extreme(tpj_hlo_builder_t* b, tpj_dtype_t dt, int highest) {
  const char* lit = NULL;
  char buf[32];
  switch (dt) {
    case TPJ_BOOL: lit = highest ? "true" : "false"; break;
    case TPJ_U8: lit = highest ? "255" : "0"; break;
    case TPJ_I8: lit = highest ? "127" : "-128"; break;
    case TPJ_I16: lit = highest ? "32767" : "-32768"; break;
    case TPJ_I32: lit = highest ? "2147483647" : "-2147483648"; break;
    case TPJ_I64: lit = highest ? "9223372036854775807" : "-9223372036854775808"; break;
    case TPJ_F16: lit = highest ? "0x7C00" : "0xFC00"; break;
    case TPJ_BF16: lit = highest ? "0x7F80" : "0xFF80"; break;
    case TPJ_F32: lit = highest ? "0x7F800000" : "0xFF800000"; break;
    case TPJ_F64: lit = highest ? "0x7FF0000000000000" : "0xFFF0000000000000"; break;
    default:
      tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "no extreme value for %s",
                                      tpj_dtype_name(dt)));
      return kInvalid;
  }
  snprintf(buf, sizeof(buf), "%s", lit);
  return tpj_hlo_emit_constant_text(b, dt, buf);
}

tpj_hlo_value_t tpj_hlo_emit_take(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t idx,
                                  int dim) {
  if (!tpj_hlo_check_valid(b, &x) || !tpj_hlo_check_valid(b, &idx)) return kInvalid;
  if (idx.ndim != 1 || !tpj_dtype_is_int(idx.dtype) || dim < 0 || dim >= x.ndim) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT,
                                    "take needs 1-D integer indices and a dim of the operand"));
    return kInvalid;
  }
  int64_t dims[TPJ_MAX_DIMS], offs[TPJ_MAX_DIMS], sizes[TPJ_MAX_DIMS];
  int no = 0;
  for (int d = 0; d < x.ndim; ++d) {
    dims[d] = d == dim ? idx.dims[0] : x.dims[d];
    sizes[d] = d == dim ? 1 : x.dims[d];
    if (d != dim) offs[no++] = d;
  }
  tpj_hlo_value_t r = tpj_hlo_new_value(b, x.dtype, dims, x.ndim);
  const tpj_hlo_value_t* ops[2] = {&x, &idx};
  tpj_hlo_begin_op(b, &r, "stablehlo.gather", ops, 2);
  tpj_strbuf_t* sb = &b->body;
  tpj_strbuf_puts(sb, " {dimension_numbers = #stablehlo.gather<offset_dims = ");
  tpj_hlo_print_i64_list(sb, offs, no);
  tpj_strbuf_printf(sb, ", collapsed_slice_dims = [%d], start_index_map = [%d], index_vector_dim = 1>, "
                        "indices_are_sorted = false, slice_sizes = ", dim, dim);
  tpj_hlo_print_i64_array(sb, sizes, x.ndim);
  tpj_strbuf_puts(sb, "}");
  tpj_hlo_end_op(b, &r, ops, 2);
  return r;
}

tpj_hlo_value_t tpj_hlo_emit_scatter_add_rows(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                              tpj_hlo_value_t idx, tpj_hlo_value_t upd) {
  if (!tpj_hlo_check_valid(b, &x) || !tpj_hlo_check_valid(b, &idx) || !tpj_hlo_check_valid(b, &upd))
    return kInvalid;
  int ok = x.ndim >= 1 && idx.ndim == 1 && tpj_dtype_is_int(idx.dtype) && upd.dtype == x.dtype &&
           upd.ndim == x.ndim && upd.dims[0] == idx.dims[0];
  for (int d = 1; ok && d < x.ndim; ++d) ok = upd.dims[d] == x.dims[d];
  if (!ok) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT,
                                    "scatter_add_rows: indices or updates do not fit the operand"));
    return kInvalid;
  }
  int64_t win[TPJ_MAX_DIMS];
  for (int d = 1; d < x.ndim; ++d) win[d - 1] = d;
  tpj_hlo_value_t r = tpj_hlo_new_value(b, x.dtype, x.dims, x.ndim);
  const tpj_hlo_value_t* ops[3] = {&x, &idx, &upd};
  tpj_hlo_begin_op(b, &r, "stablehlo.scatter", ops, 3);
  tpj_strbuf_t* sb = &b->body;
  tpj_hlo_print_region(sb, r.id, x.dtype, "stablehlo.add");
  tpj_strbuf_puts(sb, " {indices_are_sorted = false, scatter_dimension_numbers = "
                      "#stablehlo.scatter<update_window_dims = ");
  tpj_hlo_print_i64_list(sb, win, x.ndim - 1);
  tpj_strbuf_puts(sb, ", inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], "
                      "index_vector_dim = 1>, unique_indices = false}");
  tpj_hlo_end_op(b, &r, ops, 3);
  return r;
}

tpj_status_t tpj_hlo_finish(tpj_hlo_builder_t* b, const tpj_hlo_value_t* results, int nresults,
                            tpj_strbuf_t* out) {
  return tpj_hlo_finish_aliased(b, results, nresults, NULL, out);
}

tpj_status_t tpj_hlo_finish_aliased(tpj_hlo_builder_t* b, const tpj_hlo_value_t* results,
                                    int nresults, const int* alias, tpj_strbuf_t* out) {
  for (int i = 0; i < nresults; ++i) tpj_hlo_check_valid(b, &results[i]);
  if (b->status) {
    tpj_status_t s = b->status;
    b->status = NULL;
    return s;
  }
  tpj_strbuf_clear(out);
  tpj_strbuf_puts(out, "module @tpj {\n  func.func public @main(");
  for (int i = 0; i < b->nargs; ++i) {
    if (i) tpj_strbuf_puts(out, ", ");
    tpj_strbuf_printf(out, "%%arg%d: ", i);
    tpj_hlo_print_value_type(out, &b->args[i]);
    /* XLA reads this as an input/output alias: the argument's buffer may be
     * donated to hold that result. */
    if (alias && alias[i] >= 0 && alias[i] < nresults)
      tpj_strbuf_printf(out, " {tf.aliasing_output = %d : i32}", alias[i]);
  }
  tpj_strbuf_puts(out, ") -> (");
  for (int i = 0; i < nresults; ++i) {
    if (i) tpj_strbuf_puts(out, ", ");
    tpj_hlo_print_value_type(out, &results[i]);
  }
  tpj_strbuf_puts(out, ") {\n");
  tpj_strbuf_append(out, tpj_strbuf_cstr(&b->body), b->body.len);
  tpj_strbuf_puts(out, "    return ");
  for (int i = 0; i < nresults; ++i) {
    if (i) tpj_strbuf_puts(out, ", ");
    tpj_hlo_print_ref(out, &results[i]);
  }
  if (nresults) tpj_strbuf_puts(out, " : ");
  for (int i = 0; i < nresults; ++i) {
    if (i) tpj_strbuf_puts(out, ", ");
    tpj_hlo_print_value_type(out, &results[i]);
  }
  tpj_strbuf_puts(out, "\n  }\n}\n");
  TPJ_RETURN_IF_ERROR(tpj_strbuf_status(&b->body));
  return tpj_strbuf_status(out);
}
