/* hlo/target: emission choices that depend on the compiler behind the
 * device, made once per process by exec when it opens the runtime.
 *
 * XLA:CPU compiles a floating-point reduce strictly in order: each output
 * element is one chain of dependent scalar adds (or max/min), which the
 * vectoriser may not reorder. A row sum of a (256, 256) f32 is then ~22 µs
 * where a vectorised one takes ~2 µs, and layer norm, softmax, the losses
 * and every bias gradient are made of such reductions. With the CPU target
 * on, tpj_hlo_emit_reduce writes the common cases (f32/f64 add, max, min
 * over leading or trailing dims) so that they vectorise:
 *   - a leading reduction of up to 1024 rows folds in halves with
 *     elementwise ops down to one row, with no reduce left;
 *   - a trailing one folds its rows in halves a few times, down to about
 *     16 lanes, then reduces those behind an optimization_barrier (so XLA
 *     does not fuse the folds back into the reduce's scalar loop).
 * Max and min are exact either way (the result is one of the elements); a
 * sum changes only the order of its additions, as it does between
 * PyTorch's own CPU kernels.
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
