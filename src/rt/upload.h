/* rt/upload: asynchronous host-to-device uploads (implemented in rt.c),
 * for non_blocking copies from pinned memory, and uploads that alias host
 * memory (distributed staging). Apart from rt.h so that adding
 * it did not rebuild everything that includes rt.h. */
#ifndef TPJ_RT_UPLOAD_H_
#define TPJ_RT_UPLOAD_H_

#include "rt/rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Like tpj_rt_buffer_from_host, but may return before the plugin has read
 * the host data: it must stay unchanged and alive until done(ctx) runs (on a
 * plugin thread, or before this returns when the plugin copied at once or
 * cannot report completion). On failure done is not called. */
tpj_status_t tpj_rt_buffer_from_host_async(tpj_rt_t* rt, int device, tpj_dtype_t dtype,
                                           const int64_t* dims, int ndim, const void* data,
                                           void (*done)(void*), void* ctx,
                                           tpj_rt_buffer_t** out_buf);

/* A buffer over the host memory at data itself where the plugin can alias
 * it (the CPU plugin, for data aligned as it requires), else a copy. data
 * must stay alive and unchanged until done(ctx) runs: when the buffer is
 * destroyed, or once the copy is made. On failure done is not called. */
tpj_status_t tpj_rt_buffer_alias_host(tpj_rt_t* rt, int device, tpj_dtype_t dtype,
                                      const int64_t* dims, int ndim, const void* data,
                                      void (*done)(void*), void* ctx, tpj_rt_buffer_t** out_buf);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_RT_UPLOAD_H_ */
