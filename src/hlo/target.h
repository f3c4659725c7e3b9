/* hlo/target: emission choices that depend on the compiler behind the
 * device, made once per process by exec when it opens the runtime.
 *
 * XLA:CPU compiles a floating-point reduce strictly in order: each output
 * element is one chain of dependent scalar adds (or max/min), which the
 * vectoriser may not reorder. A row sum of a (256, 256) f32 is then ~22 µs
 * where a vectorised one takes ~2 µs, and layer norm, softmax, the losses
 * and every bias gradient are made of such reductions. With the CPU target
 * on, tpj_hlo_emit_reduce writes the common cases so that they vectorise:
 *   - a sum over leading or trailing dims of an f32/f64 value becomes a
 *     dot with a vector of ones (XLA's matrix-vector kernel accumulates in
 *     several lanes; the ones are exact, so only the order of the additions
 *     changes, as it does between PyTorch's own CPU kernels);
 *   - a max or min over trailing dims first folds the row in halves with
 *     elementwise maximum/minimum (vectorised, and exact: the result is the
 *     same element), then reduces the last 16 or so.
 * Other reductions are emitted as plain stablehlo.reduce. Other compilers
 * (TPU, GPU) reduce in parallel already and get the plain form. */
#ifndef TPJ_HLO_TARGET_H_
#define TPJ_HLO_TARGET_H_

#include "hlo/builder.h"

#ifdef __cplusplus
extern "C" {
#endif

/* On (1) for the CPU plugin; off (0, the default) otherwise. */
void tpj_hlo_set_cpu_target(int on);
int tpj_hlo_cpu_target(void);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_HLO_TARGET_H_ */
