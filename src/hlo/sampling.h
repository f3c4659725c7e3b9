/* hlo/sampling: emitters for the sampling ops (src/ops/sampling.c): a dense
 * constant array computed on the host (interpolation weights and taps that
 * depend on sizes only). */
#ifndef TPJ_HLO_SAMPLING_H_
#define TPJ_HLO_SAMPLING_H_

#include "hlo/builder.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A constant of dtype dt and dims holding data (numel * element bytes,
 * little-endian, row-major; the caller keeps it). dt is a float or integer
 * type other than bool. */
tpj_hlo_value_t tpj_hlo_emit_const_array(tpj_hlo_builder_t* b, tpj_dtype_t dt,
                                         const int64_t* dims, int ndim, const void* data);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_HLO_SAMPLING_H_ */
