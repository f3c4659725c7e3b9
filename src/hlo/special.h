/* hlo/special: control flow for the special functions: a stablehlo.while
 * over a few state values whose condition and body regions are written by
 * callbacks. Used by src/ops/special_orthopoly.c for the polynomial recurrences. */
#ifndef TPJ_HLO_SPECIAL_H_
#define TPJ_HLO_SPECIAL_H_

#include "hlo/builder.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes one region: state[0..n) are its block arguments. A condition
 * writes one 0-d bool to out[0]; a body writes n values of the state's types
 * to out. A region may use only its arguments and values it emits itself. */
typedef void (*tpj_hlo_region_fn_t)(tpj_hlo_builder_t* b, const tpj_hlo_value_t* state, int n,
                                    void* ctx, tpj_hlo_value_t* out);

/* while (cond(state)) state = body(state), starting from init[0..n)
 * (n <= 8); the final state goes to out[0..n). */
void tpj_hlo_emit_while(tpj_hlo_builder_t* b, const tpj_hlo_value_t* init, int n,
                        tpj_hlo_region_fn_t cond, tpj_hlo_region_fn_t body, void* ctx,
                        tpj_hlo_value_t* out);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_HLO_SPECIAL_H_ */
