/* hlo/create: emitters for the tensor creation and shape family
 * (src/ops/create.c) that the core builder does not have. */
#ifndef TPJ_HLO_CREATE_H_
#define TPJ_HLO_CREATE_H_

#include "hlo/builder.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reverses x along each of dims (distinct, in range). */
tpj_hlo_value_t tpj_hlo_emit_reverse(tpj_hlo_builder_t* b, tpj_hlo_value_t x, const int64_t* dims,
                                     int ndims);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_HLO_CREATE_H_ */
