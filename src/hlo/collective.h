/* hlo/collective: XLA's collectives between the replicas of one program
 * (stablehlo.all_reduce and its siblings), for the XLA transport of
 * torch.distributed (src/dist/xla.c). Every replica is in the one group
 * [0, n): a smaller group is a program compiled for fewer devices. */
#ifndef TPJ_HLO_COLLECTIVE_H_
#define TPJ_HLO_COLLECTIVE_H_

#include "hlo/builder.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Every replica's x combined elementwise with body ("stablehlo.add", ...). */
tpj_hlo_value_t tpj_hlo_emit_all_reduce(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int n,
                                        const char* body);
/* The replicas' x laid end to end along dim 0 (replica order). */
tpj_hlo_value_t tpj_hlo_emit_all_gather(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int n);
/* x (dim 0 divisible by n) reduced over replicas with body; replica r keeps
 * block r of dim 0. */
tpj_hlo_value_t tpj_hlo_emit_reduce_scatter(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int n,
                                            const char* body);
/* Block s of dim 0 of replica r's result is block r of replica s's x. */
tpj_hlo_value_t tpj_hlo_emit_all_to_all(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int n);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_HLO_COLLECTIVE_H_ */
