/* hlo/update: in-place updates of a buffer at run-time positions. Used by
 * src/ops/inplace.c. */
#ifndef TPJ_HLO_UPDATE_H_
#define TPJ_HLO_UPDATE_H_

#include "hlo/builder.h"

#ifdef __cplusplus
extern "C" {
#endif

/* dynamic_update_slice of update (x's dtype and rank, no longer than x in
 * any dim) into x at starts[x.ndim], 0-d i64 values known only at run time.
 * XLA clamps a start that would put the update past x's end: the caller must
 * know that none does. */
tpj_hlo_value_t tpj_hlo_emit_update_slice_at(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                             tpj_hlo_value_t update,
                                             const tpj_hlo_value_t* starts);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_HLO_UPDATE_H_ */
