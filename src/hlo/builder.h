/* hlo/builder: emits a StableHLO module as text, one `main` function.
 * Every emitter checks dtypes and dims before it writes, and a failure is
 * sticky: later emitters return an invalid value and tpj_hlo_finish()
 * reports the first error. Ops are written in MLIR's generic form, which is
 * stable across StableHLO versions; only func.func/return use pretty form. */
#ifndef TPJ_HLO_BUILDER_H_
#define TPJ_HLO_BUILDER_H_

#include <stdint.h>

#include "base/dtype.h"
#include "base/shape.h"
#include "base/status.h"
#include "base/strbuf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most operands of one variadic op (concatenate). Function arguments are
 * unbounded: a compiled graph has one per input. */
#define TPJ_HLO_MAX_ARGS 64

/* A value in the function being built: an SSA id with its type. id < 0 means
 * invalid (an earlier emitter failed). */
typedef struct {
  int id;            /* >= 0: %vN, or an argument when is_arg */
  int is_arg;
  tpj_dtype_t dtype;
  int ndim;
  int64_t dims[TPJ_MAX_DIMS];
} tpj_hlo_value_t;

typedef struct {
  tpj_strbuf_t body;
  int next_id;
  int nargs;
  int cap_args;
  tpj_hlo_value_t* args;  /* owned, grown as arguments are added */
  tpj_status_t status;  /* first failure, owned */
} tpj_hlo_builder_t;

void tpj_hlo_builder_init(tpj_hlo_builder_t* b);
void tpj_hlo_builder_free(tpj_hlo_builder_t* b);
/* Records a failure (the first one wins; s is taken over). */
void tpj_hlo_fail(tpj_hlo_builder_t* b, tpj_status_t s);
int tpj_hlo_ok(const tpj_hlo_builder_t* b);
int64_t tpj_hlo_numel(const tpj_hlo_value_t* v);

/* Appends the type of v ("tensor<2x3xf32>") to sb. */
void tpj_hlo_print_type(tpj_strbuf_t* sb, tpj_dtype_t dt, const int64_t* dims, int ndim);

tpj_hlo_value_t tpj_hlo_arg(tpj_hlo_builder_t* b, tpj_dtype_t dt, const int64_t* dims, int ndim);

/* Elementwise, same dtype and dims: name is the StableHLO op, e.g.
 * "stablehlo.add". */
tpj_hlo_value_t tpj_hlo_emit_binary(tpj_hlo_builder_t* b, const char* name,
                                    tpj_hlo_value_t x, tpj_hlo_value_t y);
tpj_hlo_value_t tpj_hlo_emit_unary(tpj_hlo_builder_t* b, const char* name, tpj_hlo_value_t x);
/* A unary op whose result dtype differs from its operand's (abs of complex). */
tpj_hlo_value_t tpj_hlo_emit_unary_to(tpj_hlo_builder_t* b, const char* name, tpj_hlo_value_t x,
                                      tpj_dtype_t dt);
/* select(cond, x, y): cond is bool, x and y agree; all of one shape. */
tpj_hlo_value_t tpj_hlo_emit_select(tpj_hlo_builder_t* b, tpj_hlo_value_t cond,
                                    tpj_hlo_value_t x, tpj_hlo_value_t y);
/* Elementwise comparison; dir is "EQ", "NE", "LT", "LE", "GT" or "GE".
 * The result is bool. */
tpj_hlo_value_t tpj_hlo_emit_compare(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t y,
                                     const char* dir);
/* Real and imaginary parts of a complex value, and a complex value from
 * two real ones. */
tpj_hlo_value_t tpj_hlo_emit_real(tpj_hlo_builder_t* b, tpj_hlo_value_t x);
tpj_hlo_value_t tpj_hlo_emit_imag(tpj_hlo_builder_t* b, tpj_hlo_value_t x);
tpj_hlo_value_t tpj_hlo_emit_complex(tpj_hlo_builder_t* b, tpj_hlo_value_t re, tpj_hlo_value_t im);
/* Concatenates xs (same dtype, same dims but `dim`) along dim. */
tpj_hlo_value_t tpj_hlo_emit_concatenate(tpj_hlo_builder_t* b, const tpj_hlo_value_t* xs, int n,
                                         int dim);
tpj_hlo_value_t tpj_hlo_emit_convert(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_dtype_t dt);
/* Same-total-bytes bitcast; see StableHLO bitcast_convert for the trailing
 * dimension rule when element sizes differ. */
tpj_hlo_value_t tpj_hlo_emit_bitcast_convert(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                             tpj_dtype_t dt, const int64_t* dims, int ndim);
tpj_hlo_value_t tpj_hlo_emit_reshape(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                     const int64_t* dims, int ndim);
tpj_hlo_value_t tpj_hlo_emit_transpose(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                       const int64_t* perm);
/* out dims; bdims[i] is the out dim that x's dim i maps to (x.ndim entries). */
tpj_hlo_value_t tpj_hlo_emit_broadcast_in_dim(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                              const int64_t* dims, int ndim,
                                              const int64_t* bdims);
/* Broadcasts x to dims the way NumPy/PyTorch do (trailing alignment). */
tpj_hlo_value_t tpj_hlo_emit_broadcast_to(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                          const int64_t* dims, int ndim);
tpj_hlo_value_t tpj_hlo_emit_slice(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                   const int64_t* start, const int64_t* limit,
                                   const int64_t* strides);
tpj_hlo_value_t tpj_hlo_emit_pad(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t padv,
                                 const int64_t* lo, const int64_t* hi);
/* stablehlo.pad with per-dim edge padding lo/hi (negative crops) and
 * interior padding (>= 0, inserted between elements). */
tpj_hlo_value_t tpj_hlo_emit_pad_general(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                         tpj_hlo_value_t padv, const int64_t* lo,
                                         const int64_t* hi, const int64_t* interior);
/* Reverses x along each of dims (distinct, in range). */
tpj_hlo_value_t tpj_hlo_emit_reverse(tpj_hlo_builder_t* b, tpj_hlo_value_t x, const int64_t* dims,
                                     int ndims);
/* A 0-d constant 0 or 1 of dtype dt. */
tpj_hlo_value_t tpj_hlo_emit_zero(tpj_hlo_builder_t* b, tpj_dtype_t dt);
tpj_hlo_value_t tpj_hlo_emit_const_i64(tpj_hlo_builder_t* b, int64_t v);
tpj_hlo_value_t tpj_hlo_emit_iota(tpj_hlo_builder_t* b, tpj_dtype_t dt, const int64_t* dims,
                                  int ndim, int iota_dim);
/* Gathers flat[idx] elementwise: flat is 1-D, idx is i64 of any shape; the
 * result has idx's dims and flat's dtype. */
tpj_hlo_value_t tpj_hlo_emit_gather_1d(tpj_hlo_builder_t* b, tpj_hlo_value_t flat,
                                       tpj_hlo_value_t idx);

/* dynamic_update_slice with constant start indices (one per dim of x). */
tpj_hlo_value_t tpj_hlo_emit_update_slice(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                          tpj_hlo_value_t update, const int64_t* start);
/* flat[idx] = upd elementwise (overwrite; the indices must be unique): flat
 * is 1-D, idx is i64 with upd's dims. */
tpj_hlo_value_t tpj_hlo_emit_scatter_1d(tpj_hlo_builder_t* b, tpj_hlo_value_t flat,
                                        tpj_hlo_value_t idx, tpj_hlo_value_t upd);

/* Reduces x over dims (sorted, distinct) starting from init (a 0-d value of
 * x's dtype) with the binary op `body` ("stablehlo.add", "stablehlo.maximum",
 * ...). The result drops the reduced dims. */
tpj_hlo_value_t tpj_hlo_emit_reduce(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t init,
                                    const int64_t* dims, int ndims, const char* body);
/* dot_general with explicit batch and contracting dims; the result is
 * batch dims, then x's free dims, then y's free dims (StableHLO's order). */
tpj_hlo_value_t tpj_hlo_emit_dot_general(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t y,
                                         const int64_t* xbatch, const int64_t* ybatch, int nbatch,
                                         const int64_t* xcontract, const int64_t* ycontract,
                                         int ncontract, tpj_dtype_t out_dtype);
/* 0-d constants: a double exactly (for floats; bits written in hex), the
 * largest or smallest value of dt (+-inf for floats), one of dt. */
tpj_hlo_value_t tpj_hlo_emit_const_f64(tpj_hlo_builder_t* b, tpj_dtype_t dt, double v);
tpj_hlo_value_t tpj_hlo_emit_extreme(tpj_hlo_builder_t* b, tpj_dtype_t dt, int highest);
tpj_hlo_value_t tpj_hlo_emit_one(tpj_hlo_builder_t* b, tpj_dtype_t dt);

/* Takes x's slices at idx (1-D integer) along dim: the result has x's dims
 * with dims[dim] = len(idx). Out-of-range indices are the caller's to
 * reject (XLA clamps them). */
tpj_hlo_value_t tpj_hlo_emit_take(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t idx,
                                  int dim);
/* x[idx[i], ...] += upd[i, ...] for each i: x's leading dim is indexed by the
 * 1-D integer idx, upd has dims (len(idx), x's other dims). */
tpj_hlo_value_t tpj_hlo_emit_scatter_add_rows(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                              tpj_hlo_value_t idx, tpj_hlo_value_t upd);

/* Writes the whole module into out (cleared first). Returns the first
 * failure of any emitter, or of the text buffer. */
tpj_status_t tpj_hlo_finish(tpj_hlo_builder_t* b, const tpj_hlo_value_t* results, int nresults,
                            tpj_strbuf_t* out);
/* tpj_hlo_finish, with alias[i] (one per argument; -1 for none) naming the
 * result that argument i's buffer may be donated to. The two must have the
 * same type; the caller checks. alias may be NULL. */
tpj_status_t tpj_hlo_finish_aliased(tpj_hlo_builder_t* b, const tpj_hlo_value_t* results,
                                    int nresults, const int* alias, tpj_strbuf_t* out);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_HLO_BUILDER_H_ */
