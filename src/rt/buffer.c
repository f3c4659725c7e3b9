/* rt/buffer: device buffers: wrapping PJRT buffers, uploads (blocking,
 * asynchronous, aliasing host memory), copies to the host and between
 * devices, reference counts, and the process-wide buffer and byte counters. */
#include "rt/rt.h"
#include "rt/track.h"
#include "rt/upload.h"
#include "rt/reap.h"
#include "rt/internal.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt_c_api.h"

static atomic_llong g_live_buffers;
static atomic_llong g_h2d_bytes, g_d2h_bytes;
/* Bytes of device memory held by live buffers, per device, and the peak
 * since the last reset: memory_reserved() where the plugin has no
 * PJRT_Device_MemoryStats. Global because a buffer is released without its rt. */
static atomic_llong g_dev_bytes[TPJ_MAX_DEVICES], g_dev_peak[TPJ_MAX_DEVICES];

void tpj_rt_count_bytes(int device, long long delta) {
  if (device < 0 || device >= TPJ_MAX_DEVICES) return;
  long long now = atomic_fetch_add(&g_dev_bytes[device], delta) + delta;
  long long peak = atomic_load(&g_dev_peak[device]);
  while (now > peak && !atomic_compare_exchange_weak(&g_dev_peak[device], &peak, now)) {
  }
}


/* ---- buffers --------------------------------------------------------- */

static PJRT_Buffer_Type tpj_rt_pjrt_type(tpj_dtype_t dt) {
  switch (dt) {
    case TPJ_BOOL: return PJRT_Buffer_Type_PRED;
    case TPJ_U8: return PJRT_Buffer_Type_U8;
    case TPJ_I8: return PJRT_Buffer_Type_S8;
    case TPJ_I16: return PJRT_Buffer_Type_S16;
    case TPJ_I32: return PJRT_Buffer_Type_S32;
    case TPJ_I64: return PJRT_Buffer_Type_S64;
    case TPJ_F16: return PJRT_Buffer_Type_F16;
    case TPJ_BF16: return PJRT_Buffer_Type_BF16;
    case TPJ_F32: return PJRT_Buffer_Type_F32;
    case TPJ_F64: return PJRT_Buffer_Type_F64;
    case TPJ_C64: return PJRT_Buffer_Type_C64;
    case TPJ_C128: return PJRT_Buffer_Type_C128;
    case TPJ_U16: return PJRT_Buffer_Type_U16;
    case TPJ_U32: return PJRT_Buffer_Type_U32;
    case TPJ_U64: return PJRT_Buffer_Type_U64;
    default: return PJRT_Buffer_Type_INVALID;
  }
}

tpj_rt_buffer_t* tpj_rt_buffer_wrap(const PJRT_Api* api, PJRT_Buffer* b, tpj_dtype_t dtype,
                                           const int64_t* dims, int ndim, int device) {
  tpj_rt_buffer_t* buf = (tpj_rt_buffer_t*)calloc(1, sizeof(*buf));
  if (!buf) return NULL;
  buf->refcount = 1;
  buf->pjrt = b;
  buf->dtype = dtype;
  buf->ndim = ndim;
  for (int i = 0; i < ndim; ++i) buf->dims[i] = dims[i];
  buf->device = device;
  buf->api = api;
  atomic_fetch_add(&g_live_buffers, 1);
  if (b) tpj_rt_count_bytes(device, (long long)tpj_rt_buffer_nbytes(buf));
  return buf;
}

tpj_rt_buffer_t* tpj_rt_buffer_placeholder(tpj_dtype_t dtype, const int64_t* dims, int ndim,
                                           int device, int64_t trace_id) {
  tpj_rt_buffer_t* buf = tpj_rt_buffer_wrap(NULL, NULL, dtype, dims, ndim, device);
  if (buf) buf->trace_id = trace_id;
  return buf;
}

/* The one message for a host-side use of a traced value. */
tpj_status_t tpj_rt_check_real(const tpj_rt_buffer_t* buf, const char* what) {
  if (buf->pjrt) return NULL;
  /* Only a reader racing the write that consumed it can see a donated
   * buffer (see tpj_rt_execute_donated): an error, not a crash. */
  if (!buf->trace_id)
    return tpj_status_make(TPJ_FAILED_PRECONDITION,
                           "%s read a buffer that an in-place write on another thread took over",
                           what);
  return tpj_status_make(TPJ_FAILED_PRECONDITION,
                         "%s needs the value of a tensor that torch.compile is tracing "
                         "(a data-dependent op inside a compiled graph)", what);
}

void tpj_rt_pjrt_buffer_destroy(const PJRT_Api* api, PJRT_Buffer* b) {
  if (!b) return;
  TPJ_ARGS(PJRT_Buffer_Destroy_Args, d);
  d.buffer = b;
  tpj_status_free(tpj_rt_status_from_pjrt(api, api->PJRT_Buffer_Destroy(&d),
                                          "PJRT_Buffer_Destroy"));
}

/* What an asynchronous upload calls when the plugin is done with the host
 * memory (PJRT_Event_OnReady). */
typedef struct {
  const PJRT_Api* api;
  void (*done)(void*);
  void* ctx;
} tpj_rt_upload_done_t;

static void tpj_rt_upload_ready(PJRT_Error* error, void* user_arg) {
  tpj_rt_upload_done_t* d = (tpj_rt_upload_done_t*)user_arg;
  /* The callback owns the error. A failed transfer also fails the buffer,
   * which reports it where the buffer is used; the host memory is released
   * either way. */
  if (error) tpj_status_free(tpj_rt_status_from_pjrt(d->api, error, "copying to the device"));
  d->done(d->ctx);
  free(d);
}

/* Uploads host data. With done == NULL the call waits until the plugin has
 * read the data (the caller may reuse it at once); otherwise it returns at
 * once and done(ctx) runs when the host memory may be reused (from a plugin
 * thread, or before returning). On failure done is not called. */
static tpj_status_t tpj_rt_upload(tpj_rt_t* rt, int device, tpj_dtype_t dtype,
                                  const int64_t* dims, int ndim, const void* data,
                                  void (*done)(void*), void* ctx, int zero_copy,
                                  tpj_rt_buffer_t** out_buf) {
  *out_buf = NULL;
  TPJ_RETURN_IF_ERROR(tpj_rt_check_device(rt, device));
  if (ndim < 0 || ndim > TPJ_MAX_DIMS)
    return tpj_status_make(TPJ_UNIMPLEMENTED, "tensors of rank %d are not supported (max %d)",
                           ndim, TPJ_MAX_DIMS);
  PJRT_Buffer_Type t = tpj_rt_pjrt_type(dtype);
  if (t == PJRT_Buffer_Type_INVALID)
    return tpj_status_make(TPJ_INVALID_ARGUMENT, "dtype %d has no PJRT buffer type", (int)dtype);
  static const char kDummy[16];
  const PJRT_Api* api = rt->api;
  int async = done && data && TPJ_RT_HAS(api, PJRT_Event_OnReady);
  TPJ_ARGS(PJRT_Client_BufferFromHostBuffer_Args, a);
  a.client = rt->client;
  a.data = data ? data : kDummy;
  a.type = t;
  a.dims = dims;
  a.num_dims = (size_t)ndim;
  /* Zero copy: the buffer may alias data for its whole life (the CPU plugin
   * does when data is aligned as it wants); done_with_host_buffer is then
   * ready when the buffer is freed, or at once where the plugin copied. */
  a.host_buffer_semantics =
      async && zero_copy ? PJRT_HostBufferSemantics_kImmutableZeroCopy
      : async            ? PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes
                         : PJRT_HostBufferSemantics_kImmutableOnlyDuringCall;
  a.device = rt->devices[device];
  TPJ_PJRT(api, api->PJRT_Client_BufferFromHostBuffer(&a), "copying to the device");
  tpj_status_t s = NULL;
  tpj_rt_upload_done_t* d = async ? (tpj_rt_upload_done_t*)malloc(sizeof(*d)) : NULL;
  if (d && a.done_with_host_buffer) {
    d->api = api;
    d->done = done;
    d->ctx = ctx;
    TPJ_ARGS(PJRT_Event_OnReady_Args, r);
    r.event = a.done_with_host_buffer;
    r.callback = tpj_rt_upload_ready;
    r.user_arg = d;
    s = tpj_rt_status_from_pjrt(api, api->PJRT_Event_OnReady(&r), "copying to the device");
    /* The callback holds the transfer's future, not the event. */
    tpj_rt_event_destroy(api, a.done_with_host_buffer);
    if (s) free(d);
  } else {
    free(d);
    s = tpj_rt_event_await(api, a.done_with_host_buffer, "copying to the device");
    if (!s && done) done(ctx);
  }
  if (s) {
    tpj_rt_pjrt_buffer_destroy(api, a.buffer);
    return s;
  }
  *out_buf = tpj_rt_buffer_wrap(api, a.buffer, dtype, dims, ndim, device);
  if (!*out_buf) {
    tpj_rt_pjrt_buffer_destroy(api, a.buffer);
    return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  }
  atomic_fetch_add(&g_h2d_bytes, (long long)tpj_rt_buffer_nbytes(*out_buf));
  return NULL;
}

tpj_status_t tpj_rt_buffer_from_host(tpj_rt_t* rt, int device, tpj_dtype_t dtype,
                                     const int64_t* dims, int ndim, const void* data,
                                     tpj_rt_buffer_t** out_buf) {
  return tpj_rt_upload(rt, device, dtype, dims, ndim, data, NULL, NULL, 0, out_buf);
}

tpj_status_t tpj_rt_buffer_from_host_async(tpj_rt_t* rt, int device, tpj_dtype_t dtype,
                                           const int64_t* dims, int ndim, const void* data,
                                           void (*done)(void*), void* ctx,
                                           tpj_rt_buffer_t** out_buf) {
  return tpj_rt_upload(rt, device, dtype, dims, ndim, data, done, ctx, 0, out_buf);
}

tpj_status_t tpj_rt_buffer_alias_host(tpj_rt_t* rt, int device, tpj_dtype_t dtype,
                                      const int64_t* dims, int ndim, const void* data,
                                      void (*done)(void*), void* ctx, tpj_rt_buffer_t** out_buf) {
  return tpj_rt_upload(rt, device, dtype, dims, ndim, data, done, ctx, 1, out_buf);
}

int64_t tpj_rt_buffer_numel(const tpj_rt_buffer_t* buf) {
  int64_t n = 1;
  for (int i = 0; i < buf->ndim; ++i) n *= buf->dims[i];
  return n;
}

size_t tpj_rt_buffer_nbytes(const tpj_rt_buffer_t* buf) {
  return (size_t)tpj_rt_buffer_numel(buf) * tpj_dtype_size(buf->dtype);
}

tpj_status_t tpj_rt_buffer_to_host(tpj_rt_t* rt, tpj_rt_buffer_t* buf, void* dst,
                                   size_t nbytes) {
  size_t want = tpj_rt_buffer_nbytes(buf);
  if (nbytes != want)
    return tpj_status_make(TPJ_INVALID_ARGUMENT,
                           "host copy of %zu bytes from a device buffer of %zu bytes", nbytes,
                           want);
  if (want == 0) return NULL;
  TPJ_RETURN_IF_ERROR(tpj_rt_check_real(buf, "copying to the host"));
  /* A copy to the host waits for the work launched before it on the device,
   * as CUDA's does on its stream; a failure there surfaces here, naming its op
   * (the buffer's own error would only say "copying to the host"). */
  TPJ_RETURN_IF_ERROR(tpj_rt_await_matching(rt, buf->device, -1));
  const PJRT_Api* api = rt->api;
  TPJ_ARGS(PJRT_Buffer_ToHostBuffer_Args, a);
  a.src = (PJRT_Buffer*)buf->pjrt;
  a.dst = dst;
  a.dst_size = nbytes;
  TPJ_PJRT(api, api->PJRT_Buffer_ToHostBuffer(&a), "copying to the host");
  atomic_fetch_add(&g_d2h_bytes, (long long)nbytes);
  return tpj_rt_event_await(api, a.event, "copying to the host");
}

tpj_status_t tpj_rt_buffer_host_memory(tpj_rt_t* rt, tpj_rt_buffer_t* buf, void** out_ptr) {
  *out_ptr = NULL;
  const PJRT_Api* api = rt->api;
  /* Only the CPU plugin's device memory is the process's own memory; other
   * plugins' addresses are device addresses, not for the host to touch. */
  if (strcmp(rt->platform_name, "cpu") != 0 || !TPJ_RT_HAS(api, PJRT_Buffer_UnsafePointer) ||
      !TPJ_RT_HAS(api, PJRT_Buffer_ReadyEvent))
    return tpj_status_make(TPJ_UNIMPLEMENTED, "this plugin's device memory is not host memory");
  TPJ_RETURN_IF_ERROR(tpj_rt_check_real(buf, "reading a buffer's host memory"));
  TPJ_RETURN_IF_ERROR(tpj_rt_await_matching(rt, buf->device, -1));
  TPJ_ARGS(PJRT_Buffer_ReadyEvent_Args, e);
  e.buffer = (PJRT_Buffer*)buf->pjrt;
  TPJ_PJRT(api, api->PJRT_Buffer_ReadyEvent(&e), "reading a buffer's host memory");
  TPJ_RETURN_IF_ERROR(tpj_rt_event_await(api, e.event, "reading a buffer's host memory"));
  TPJ_ARGS(PJRT_Buffer_UnsafePointer_Args, a);
  a.buffer = (PJRT_Buffer*)buf->pjrt;
  TPJ_PJRT(api, api->PJRT_Buffer_UnsafePointer(&a), "reading a buffer's host memory");
  if (!a.buffer_pointer && tpj_rt_buffer_nbytes(buf))
    return tpj_status_make(TPJ_UNIMPLEMENTED, "the plugin gave no address for a buffer");
  *out_ptr = (void*)a.buffer_pointer;
  return NULL;
}

tpj_status_t tpj_rt_buffer_copy_to_device(tpj_rt_t* rt, tpj_rt_buffer_t* buf, int device,
                                          tpj_rt_buffer_t** out_buf) {
  *out_buf = NULL;
  TPJ_RETURN_IF_ERROR(tpj_rt_check_device(rt, device));
  TPJ_RETURN_IF_ERROR(tpj_rt_check_real(buf, "copying between devices"));
  const PJRT_Api* api = rt->api;
  if (!TPJ_RT_HAS(api, PJRT_Buffer_CopyToDevice)) {
    /* Through the host: correct on every plugin. */
    size_t n = tpj_rt_buffer_nbytes(buf);
    void* host = malloc(n ? n : 1);
    if (!host) return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory (%zu bytes)", n);
    tpj_status_t s = tpj_rt_buffer_to_host(rt, buf, host, n);
    if (!s) s = tpj_rt_buffer_from_host(rt, device, buf->dtype, buf->dims, buf->ndim, host, out_buf);
    free(host);
    return s;
  }
  TPJ_ARGS(PJRT_Buffer_CopyToDevice_Args, a);
  a.buffer = (PJRT_Buffer*)buf->pjrt;
  a.dst_device = rt->devices[device];
  TPJ_PJRT(api, api->PJRT_Buffer_CopyToDevice(&a), "copying between devices");
  *out_buf = tpj_rt_buffer_wrap(api, a.dst_buffer, buf->dtype, buf->dims, buf->ndim, device);
  if (!*out_buf) {
    tpj_rt_pjrt_buffer_destroy(api, a.dst_buffer);
    return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  }
  return NULL;
}

void tpj_rt_buffer_retain(tpj_rt_buffer_t* buf) {
  if (buf) __atomic_add_fetch(&buf->refcount, 1, __ATOMIC_RELAXED);
}

/* Drops one reference; the last one destroys the PJRT buffer here or, with
 * later, on the reaper (rt/reap.h). */
static void tpj_rt_buffer_unref(tpj_rt_buffer_t* buf, int later) {
  if (!buf) return;
  if (__atomic_sub_fetch(&buf->refcount, 1, __ATOMIC_ACQ_REL) != 0) return;
  if (later && buf->pjrt) tpj_rt_reap_buffer((const PJRT_Api*)buf->api, (PJRT_Buffer*)buf->pjrt);
  else tpj_rt_pjrt_buffer_destroy((const PJRT_Api*)buf->api, (PJRT_Buffer*)buf->pjrt);
  atomic_fetch_sub(&g_live_buffers, 1);
  if (buf->pjrt) tpj_rt_count_bytes(buf->device, -(long long)tpj_rt_buffer_nbytes(buf));
  free(buf);
}

void tpj_rt_buffer_release(tpj_rt_buffer_t* buf) { tpj_rt_buffer_unref(buf, 0); }
void tpj_rt_buffer_release_later(tpj_rt_buffer_t* buf) { tpj_rt_buffer_unref(buf, 1); }

int64_t tpj_rt_live_buffers(void) { return atomic_load(&g_live_buffers); }

void tpj_rt_buffer_bytes(int device, int64_t* out_current, int64_t* out_peak) {
  int ok = device >= 0 && device < TPJ_MAX_DEVICES;
  *out_current = ok ? atomic_load(&g_dev_bytes[device]) : 0;
  *out_peak = ok ? atomic_load(&g_dev_peak[device]) : 0;
}

void tpj_rt_reset_peak_buffer_bytes(int device) {
  if (device < 0 || device >= TPJ_MAX_DEVICES) return;
  atomic_store(&g_dev_peak[device], atomic_load(&g_dev_bytes[device]));
}

void tpj_rt_transfer_bytes(int64_t* out_h2d, int64_t* out_d2h) {
  *out_h2d = atomic_load(&g_h2d_bytes);
  *out_d2h = atomic_load(&g_d2h_bytes);
}
