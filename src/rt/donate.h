/* rt/donate: launching an executable that updates some of its arguments in
 * place (eager in-place writes). Kept out of rt.h so that only exec depends
 * on it. */
#ifndef TPJ_RT_DONATE_H_
#define TPJ_RT_DONATE_H_

#include <stddef.h>

#include "rt/rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* tpj_rt_execute for an executable whose input/output aliases are exactly
 * the arguments flagged in donated[nargs]: PJRT takes those buffers over
 * (the aliased outputs are written into their memory, after every launch
 * already reading them is done). On success each donated argument has given
 * up its PJRT buffer and its bytes in the device's count: it can only be
 * released (reading it fails with TPJ_FAILED_PRECONDITION). The caller must
 * be its sole holder. On failure nothing was donated. */
tpj_status_t tpj_rt_execute_donated(tpj_rt_t* rt, tpj_rt_exe_t* exe, int device,
                                    tpj_rt_buffer_t* const* args, size_t nargs,
                                    const unsigned char* donated,
                                    const tpj_rt_shape_t* out_shapes, size_t nouts,
                                    tpj_rt_buffer_t** outs, const char* op_name);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_RT_DONATE_H_ */
