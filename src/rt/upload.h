/* rt/upload: asynchronous host-to-device uploads (implemented in buffer.c),
 * for non_blocking copies from pinned memory, uploads that alias host
 * memory, and the host address of a buffer whose device memory is host
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

/* The host address of buf's bytes (row-major, tpj_rt_buffer_nbytes of them)
 * where the plugin's device memory is host memory (the CPU plugin) and it
 * exposes the address (PJRT_Buffer_UnsafePointer); TPJ_UNIMPLEMENTED
 * elsewhere. Waits first for the work launched before on buf's device and
 * for buf itself, so nothing launched so far still reads or writes it. The
 * memory lives as long as buf. Only a caller holding buf's one reference
 * (refcount 1, so no other storage, clone or graph shares it) may write it,
 * and must launch nothing that reads buf meanwhile. */
tpj_status_t tpj_rt_buffer_host_memory(tpj_rt_t* rt, tpj_rt_buffer_t* buf, void** out_ptr);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_RT_UPLOAD_H_ */
