/* hlo/internal: the builder's printing and checking primitives, shared by
 * the emitter files of src/hlo/ (builder.c and one file per op family, e.g.
 * conv.c). Not for src/ops/: lowerings call the emitters only. */
#ifndef TPJ_HLO_INTERNAL_H_
#define TPJ_HLO_INTERNAL_H_

#include "hlo/builder.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The invalid value every failing emitter returns. */
extern const tpj_hlo_value_t tpj_hlo_kInvalid;

void tpj_hlo_print_value_type(tpj_strbuf_t* sb, const tpj_hlo_value_t* v);
/* "%vN" or "%argN" */
void tpj_hlo_print_ref(tpj_strbuf_t* sb, const tpj_hlo_value_t* v);
/* "array<i64: 1, 2>" */
void tpj_hlo_print_i64_array(tpj_strbuf_t* sb, const int64_t* a, int n);
/* "[1, 2]" */
void tpj_hlo_print_i64_list(tpj_strbuf_t* sb, const int64_t* a, int n);
/* ", precision_config = [HIGHEST, HIGHEST]" for float32/complex64 operands,
 * nothing otherwise. PyTorch computes float32 matrix products in full float32
 * unless asked (torch.backends.cuda.matmul.allow_tf32 is False by default),
 * while XLA's DEFAULT precision lets a GPU round the operands to TF32 (and a
 * TPU to bfloat16): an error of 1e-3 that a user comparing with CPU would
 * call wrong. XLA:CPU computes float32 either way. */
void tpj_hlo_print_precision(tpj_strbuf_t* sb, tpj_dtype_t operand_dtype);
/* 0 (and a recorded failure) when v is invalid or the builder has failed. */
int tpj_hlo_check_valid(tpj_hlo_builder_t* b, const tpj_hlo_value_t* v);
int tpj_hlo_check_dims(tpj_hlo_builder_t* b, const int64_t* dims, int ndim);
int tpj_hlo_same_shape(const tpj_hlo_value_t* x, const tpj_hlo_value_t* y);
/* A fresh SSA value of the given type (nothing is printed). */
tpj_hlo_value_t tpj_hlo_new_value(tpj_hlo_builder_t* b, tpj_dtype_t dt, const int64_t* dims,
                                  int ndim);
/* Writes `%vN = "name"(operands...)`; then the caller prints regions and the
 * attribute dictionary; tpj_hlo_end_op writes ` : (types) -> type\n`. */
void tpj_hlo_begin_op(tpj_hlo_builder_t* b, const tpj_hlo_value_t* r, const char* name,
                      const tpj_hlo_value_t* const* ops, int nops);
void tpj_hlo_end_op(tpj_hlo_builder_t* b, const tpj_hlo_value_t* r,
                    const tpj_hlo_value_t* const* ops, int nops);
/* stablehlo.dynamic_update_slice of upd into x at the i64 0-d starts (one per
 * dim of x); the caller has checked dtypes, ranks and bounds. */
tpj_hlo_value_t tpj_hlo_dus_op(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t upd,
                               const tpj_hlo_value_t* starts);
/* The one-block scalar region of reduce/scatter computing body(a, b)
 * ("stablehlo.add", ...), or returning b when body is NULL. */
void tpj_hlo_print_region(tpj_strbuf_t* sb, int id, tpj_dtype_t dt, const char* body);
/* flat[idx] (body)= upd elementwise: flat 1-D, idx i64 with upd's dims; body
 * NULL overwrites. unique promises distinct indices (else duplicates are
 * combined by body, or one wins an overwrite). */
tpj_hlo_value_t tpj_hlo_emit_scatter_1d_with(tpj_hlo_builder_t* b, tpj_hlo_value_t flat,
                                             tpj_hlo_value_t idx, tpj_hlo_value_t upd,
                                             const char* body, int unique);
/* stablehlo.reduce exactly as asked (tpj_hlo_emit_reduce's checks done). */
tpj_hlo_value_t tpj_hlo_reduce_plain(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t init,
                                     const int64_t* dims, int ndims, const char* body);
/* With the CPU target (target.h), writes a reduction XLA:CPU vectorises
 * into *out and returns 1; 0 leaves the plain reduce to the caller. */
int tpj_hlo_cpu_reduce(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t init,
                       const int64_t* dims, int ndims, const char* body, tpj_hlo_value_t* out);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_HLO_INTERNAL_H_ */
