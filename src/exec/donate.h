/* exec/donate: one op, eagerly, updating a storage in place. An in-place
 * write computes the whole new storage from the old one (dynamic_update_slice
 * or scatter); donating the old buffer lets XLA write into it instead of
 * copying the storage on every call. Kept out of exec.h so that only the
 * glue that writes storages depends on it. */
#ifndef TPJ_EXEC_DONATE_H_
#define TPJ_EXEC_DONATE_H_

#include "exec/exec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* tpj_exec_run, where donate_to[nargs] (NULL or -1: none) names for each
 * argument the output its buffer may become. An argument is donated only
 * when its buffer is real, held once (refcount 1: the caller's storage box is
 * its sole holder), passed once, and exactly of that output's type; the call
 * then runs its own executable (a cache entry apart from the plain one) whose
 * main aliases those arguments to their outputs, and *out_donated counts them
 * (also in the metrics' donated_buffers). Otherwise it is tpj_exec_run.
 * A donated argument's buffer is used up, also when the launch fails later
 * (the failure surfaces at the next wait, as for any op): the caller swaps
 * the output in and only releases the old buffer. */
tpj_status_t tpj_exec_run_donating(tpj_exec_t* ex, const char* op_name, int device,
                                   const tpj_exec_arg_t* args, int nargs, const int64_t* attrs,
                                   int nattrs, const tpj_rt_shape_t* out_shapes, int nouts,
                                   const int* donate_to, tpj_rt_buffer_t** outs,
                                   int* out_donated);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_EXEC_DONATE_H_ */
