/* hlo/sort: emitters for sorting and scans: stablehlo.sort with a
 * NaN-aware comparator region, and cumulative reductions along one dim
 * through stablehlo.reduce_window. Used by src/ops/sort.c and stats.c. */
#ifndef TPJ_HLO_SORT_H_
#define TPJ_HLO_SORT_H_

#include "hlo/builder.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sorts xs[0..n) (same dims) along dim by the key xs[0], stably: equal keys
 * keep their order. Floating keys order NaN (of either sign) above +inf, and
 * -0.0 equal to 0.0, as PyTorch does; descending reverses the key order but
 * not the order of equal keys. Bool keys are not accepted (convert first).
 * Writes n results to out. */
void tpj_hlo_emit_sort(tpj_hlo_builder_t* b, const tpj_hlo_value_t* xs, int n, int dim,
                       int descending, tpj_hlo_value_t* out);

/* The scan bodies of tpj_hlo_emit_cumulative. */
typedef enum {
  TPJ_HLO_SCAN_ADD,
  TPJ_HLO_SCAN_MUL,
  TPJ_HLO_SCAN_LOGADDEXP, /* log(exp(a) + exp(b)), stable; floats only */
} tpj_hlo_scan_t;

/* Inclusive scan of x along dim: out[i] = x[0] op ... op x[i], or, with
 * reverse, out[i] = x[i] op ... op x[n-1]. */
tpj_hlo_value_t tpj_hlo_emit_cumulative(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int dim,
                                        tpj_hlo_scan_t op, int reverse);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_HLO_SORT_H_ */
