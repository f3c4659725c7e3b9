/* hlo/gather: emitters for indexing by tensors beyond builder.h's
 * gather_1d/scatter_1d: a 1-D scatter that combines duplicate indices
 * (overwrite, add, multiply, max, min, or) and a 1-D ascending sort. */
#ifndef TPJ_HLO_GATHER_H_
#define TPJ_HLO_GATHER_H_

#include "hlo/builder.h"

#ifdef __cplusplus
extern "C" {
#endif

/* flat[idx[i]] = body(flat[idx[i]], upd[i]) for each i, in an unspecified
 * order: flat is 1-D, idx is i64 with upd's dims, upd has flat's dtype.
 * body is a binary StableHLO op ("stablehlo.add", ...), or NULL for an
 * overwrite where duplicate indices leave one of their updates (as
 * PyTorch's scatter does). Indices out of range are the caller's to reject. */
tpj_hlo_value_t tpj_hlo_emit_scatter_1d_combine(tpj_hlo_builder_t* b, tpj_hlo_value_t flat,
                                                tpj_hlo_value_t idx, tpj_hlo_value_t upd,
                                                const char* body);

/* x (1-D, integer) sorted ascending. */
tpj_hlo_value_t tpj_hlo_emit_sort_1d(tpj_hlo_builder_t* b, tpj_hlo_value_t x);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_HLO_GATHER_H_ */
