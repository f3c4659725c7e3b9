/* hlo/random: emitters for random bits (stablehlo.rng_bit_generator) and for
 * sorting values by key (stablehlo.sort), used by ops/random.c. StableHLO's
 * RNG state and bits are unsigned (ui64, ui32), which tpj_dtype_t does not
 * name; these emitters keep unsigned values inside and hand back signed
 * integers of the same width (bitcasts, so every bit pattern survives). */
#ifndef TPJ_HLO_RANDOM_H_
#define TPJ_HLO_RANDOM_H_

#include "hlo/builder.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Uniformly random bits of dtype dt (TPJ_I32 or TPJ_I64) and the given dims
 * from the THREE_FRY generator with state key, an i64[2] value (seed,
 * counter). The same key always gives the same bits; a draw of n 32-bit
 * words uses counters [counter, counter + n/2), so keys whose counters are
 * at least that far apart give independent bits. */
tpj_hlo_value_t tpj_hlo_emit_rng_bits(tpj_hlo_builder_t* b, tpj_hlo_value_t key, tpj_dtype_t dt,
                                      const int64_t* dims, int ndim);

/* Sorts the pair (keys, values) along dim by keys ascending (compare LT;
 * stable) and returns the values in that order. keys (integer or float) and
 * values have one shape. */
tpj_hlo_value_t tpj_hlo_emit_sort_by_key(tpj_hlo_builder_t* b, tpj_hlo_value_t keys,
                                         tpj_hlo_value_t values, int dim);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_HLO_RANDOM_H_ */
