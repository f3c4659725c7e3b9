/* rt/replicated: one program run as several replicas, one per device of
 * this client, launched together (XLA's collectives between the replicas).
 * Kept out of rt.h so that only the XLA transport (dist/) depends on it. */
#ifndef TPJ_RT_REPLICATED_H_
#define TPJ_RT_REPLICATED_H_

#include <stddef.h>

#include "rt/rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Compiles StableHLO text for n replicas: replica i runs on devices[i]
 * (addressable device indices, distinct). *out_exe is owned by the caller. */
tpj_status_t tpj_rt_compile_replicated(tpj_rt_t* rt, const char* mlir, size_t mlir_len,
                                       const int* devices, int n, tpj_rt_exe_t** out_exe);
/* Launches every replica of exe (compiled for devices[n]) without waiting.
 * args holds n lists of nargs buffers, list i on devices[i]; outs receives
 * n lists of nouts new buffers (owned by the caller), list i on devices[i].
 * Each device's completion is remembered as tpj_rt_execute's is. */
tpj_status_t tpj_rt_execute_replicated(tpj_rt_t* rt, tpj_rt_exe_t* exe, const int* devices,
                                       int n, tpj_rt_buffer_t* const* args, size_t nargs,
                                       const tpj_rt_shape_t* out_shapes, size_t nouts,
                                       tpj_rt_buffer_t** outs, const char* op_name);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_RT_REPLICATED_H_ */
