/* ops/window: helpers shared by the sliding-window lowerings (ops/pool.c,
 * ops/fold.c, ops/distance.c): inputs as planes, placing a strided grid of
 * values back into an input-sized tensor (the transpose of a strided slice),
 * and concatenating long lists of pieces. */
#ifndef TPJ_OPS_WINDOW_H_
#define TPJ_OPS_WINDOW_H_

#include "ops/ops.h"

/* x (.., *sp) with nsp trailing spatial dims as (P, *sp) */
tpj_hlo_value_t tpj_window_planes(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int nsp);

/* v (P, *osp) scattered into zeros (P, *isp): element j of spatial dim i
 * lands at lo[i] + j * step[i]; elements that fall outside are dropped.
 * Returns 0 (and leaves *out alone) when none lands inside. */
int tpj_window_place(tpj_hlo_builder_t* b, tpj_hlo_value_t v, int nsp, const int64_t* lo,
                     const int64_t* step, const int64_t* isp, tpj_hlo_value_t* out);

/* acc with the n values of parts concatenated after it along dim (acc
 * invalid: just the parts). One concatenate takes a bounded number of
 * operands, so long lists are built chunk by chunk with this. */
tpj_hlo_value_t tpj_window_append(tpj_hlo_builder_t* b, tpj_hlo_value_t acc,
                                  const tpj_hlo_value_t* parts, int n, int dim);

#endif /* TPJ_OPS_WINDOW_H_ */
