/* hlo/linalg: emitters the matrix decompositions need (src/ops/linalg_decomp.c):
 * stablehlo.triangular_solve, stablehlo.custom_call with several results
 * (XLA's Qr, ProductOfElementaryHouseholderReflectors and Eigh expanders),
 * dynamic_slice / dynamic_update_slice at runtime offsets, and
 * stablehlo.while loops whose regions are built with the ordinary emitters. */
#ifndef TPJ_HLO_LINALG_H_
#define TPJ_HLO_LINALG_H_

#include "hlo/builder.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most values one while loop carries. */
#define TPJ_HLO_WHILE_MAX 16

/* Solves op(a) x = b (left_side) or x op(a) = b for x; a is triangular
 * (lower or upper; only that triangle is read, and with unit_diagonal not
 * its diagonal either); op is a itself, or its transpose when transpose_a.
 * a and b have the same dtype and batch dims. */
tpj_hlo_value_t tpj_hlo_emit_triangular_solve(tpj_hlo_builder_t* b, tpj_hlo_value_t a,
                                              tpj_hlo_value_t x, int left_side, int lower,
                                              int unit_diagonal, int transpose_a);

/* stablehlo.custom_call @target(ins) with results typed like types[0..nout)
 * (dtype and dims only); backend_config may be NULL. Writes nout results. */
void tpj_hlo_emit_custom_call(tpj_hlo_builder_t* b, const char* target,
                              const char* backend_config, const tpj_hlo_value_t* ins, int nin,
                              const tpj_hlo_value_t* types, int nout, tpj_hlo_value_t* out);

/* x[start[0]:start[0]+sizes[0], ...]: starts are 0-d integer values, one per
 * dim of x (XLA clamps them so the slice fits). */
tpj_hlo_value_t tpj_hlo_emit_dynamic_slice(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                           const tpj_hlo_value_t* starts, const int64_t* sizes);
/* x with upd written at the runtime offsets starts (one 0-d integer per dim). */
tpj_hlo_value_t tpj_hlo_emit_dynamic_update_slice(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                                  tpj_hlo_value_t upd,
                                                  const tpj_hlo_value_t* starts);

/* A stablehlo.while loop carrying n values. Use:
 *   tpj_hlo_while_begin(b, &w, init, n, cond_args);   emit the condition from
 *   cond_args (a 0-d bool);
 *   tpj_hlo_while_body(b, &w, cond, body_args);       emit the body from
 *   body_args;
 *   tpj_hlo_while_end(b, &w, next, results);          next: the body's n results.
 * Values made inside one region may be used only inside it; anything the
 * regions need from outside must be carried. */
typedef struct {
  int n;
  tpj_hlo_value_t init[TPJ_HLO_WHILE_MAX];
  tpj_hlo_value_t res[TPJ_HLO_WHILE_MAX];
} tpj_hlo_while_t;

void tpj_hlo_while_begin(tpj_hlo_builder_t* b, tpj_hlo_while_t* w, const tpj_hlo_value_t* init,
                         int n, tpj_hlo_value_t* cond_args);
void tpj_hlo_while_body(tpj_hlo_builder_t* b, tpj_hlo_while_t* w, tpj_hlo_value_t cond,
                        tpj_hlo_value_t* body_args);
void tpj_hlo_while_end(tpj_hlo_builder_t* b, tpj_hlo_while_t* w, const tpj_hlo_value_t* next,
                       tpj_hlo_value_t* results);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_HLO_LINALG_H_ */
