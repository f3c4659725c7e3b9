/* rt: the only place that calls the PJRT C API. It loads a plugin, owns the
 * client and its devices, wraps buffers (reference-counted, immutable) and
 * loaded executables, and turns every PJRT_Error into a tpj_status_t.
 * Nothing in here knows about PyTorch. */
#ifndef TPJ_RT_RT_H_
#define TPJ_RT_RT_H_

#include <stddef.h>
#include <stdint.h>

#include "base/dtype.h"
#include "base/shape.h"
#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tpj_rt tpj_rt_t;
typedef struct tpj_rt_exe tpj_rt_exe_t;

/* A device buffer. Immutable once created; shared by reference count.
 * The fields are read-only to callers. */
typedef struct tpj_rt_buffer {
  int refcount;
  void* pjrt;            /* PJRT_Buffer*, owned */
  tpj_dtype_t dtype;
  int ndim;
  int64_t dims[TPJ_MAX_DIMS];
  int device;            /* index into tpj_rt's addressable devices */
  const void* api;       /* the PJRT_Api that destroys it (c10 deleters have no rt) */
  int64_t trace_id;      /* > 0: a placeholder for a value that a graph trace will
                            compute (pjrt is NULL); see exec's tracing */
} tpj_rt_buffer_t;

typedef struct {
  int cpu_device_count;  /* CPU plugin only; <= 0 means 1 */
} tpj_rt_options_t;

/* Loads the plugin at plugin_path, checks its PJRT API version against the
 * header this library was built with, initialises it and creates a client.
 * On success *out_rt is owned by the caller (tpj_rt_close). */
tpj_status_t tpj_rt_open(const char* plugin_path, const tpj_rt_options_t* opts,
                         tpj_rt_t** out_rt);
/* Waits for pending work, releases the client and unloads nothing (plugins
 * are not safe to dlclose). NULL is a no-op. */
void tpj_rt_close(tpj_rt_t* rt);

int tpj_rt_device_count(const tpj_rt_t* rt);
/* Keeps only the plugin's devices visible[0..n) (indices in the plugin's
 * order), renumbered 0..n-1 in that order, as CUDA_VISIBLE_DEVICES does.
 * Call once, right after tpj_rt_open and before any other use. A visible
 * list naming a device twice or one the plugin does not have is
 * TPJ_INVALID_ARGUMENT, and rt is unchanged. n = 0 hides every device. */
tpj_status_t tpj_rt_restrict_devices(tpj_rt_t* rt, const int* visible, int n);
/* Borrowed strings, valid while rt lives. */
const char* tpj_rt_plugin_path(const tpj_rt_t* rt);
const char* tpj_rt_platform_name(const tpj_rt_t* rt);
const char* tpj_rt_platform_version(const tpj_rt_t* rt);
const char* tpj_rt_device_kind(const tpj_rt_t* rt, int device);
const char* tpj_rt_device_description(const tpj_rt_t* rt, int device);
void tpj_rt_api_version(const tpj_rt_t* rt, int* out_major, int* out_minor);
void tpj_rt_header_version(int* out_major, int* out_minor);
/* Plugin attributes ("xla_version", ...) formatted "name=value" one per line;
 * borrowed. */
const char* tpj_rt_plugin_attributes(const tpj_rt_t* rt);

/* Device memory statistics from PJRT_Device_MemoryStats; returns
 * TPJ_UNIMPLEMENTED where the plugin lacks it. Any out pointer may be NULL;
 * a value the plugin does not report is -1. */
tpj_status_t tpj_rt_device_memory_stats(tpj_rt_t* rt, int device,
                                        int64_t* out_in_use, int64_t* out_peak,
                                        int64_t* out_limit);

tpj_status_t tpj_rt_check_device(const tpj_rt_t* rt, int device);

/* ---- buffers ---------------------------------------------------------- */

/* Copies nbytes of dense row-major host data into a new device buffer of
 * the given dtype and dims. The host memory may be reused when this returns.
 * *out_buf has refcount 1 and is owned by the caller. */
tpj_status_t tpj_rt_buffer_from_host(tpj_rt_t* rt, int device, tpj_dtype_t dtype,
                                     const int64_t* dims, int ndim,
                                     const void* data, tpj_rt_buffer_t** out_buf);
/* Copies the buffer's bytes (dense row-major) into dst and waits for them.
 * nbytes must equal the buffer's size. Surfaces an asynchronous error from
 * the computation that produced the buffer. */
tpj_status_t tpj_rt_buffer_to_host(tpj_rt_t* rt, tpj_rt_buffer_t* buf, void* dst,
                                   size_t nbytes);
/* A new buffer with the same contents on another device (owned by caller). */
tpj_status_t tpj_rt_buffer_copy_to_device(tpj_rt_t* rt, tpj_rt_buffer_t* buf,
                                          int device, tpj_rt_buffer_t** out_buf);
/* A placeholder: a buffer's type with no device memory, standing for the
 * trace_id-th value of a graph being traced (trace_id > 0). Reading it to the
 * host, copying or executing on it fails with TPJ_FAILED_PRECONDITION.
 * Refcount 1, owned by the caller; NULL when out of host memory. */
tpj_rt_buffer_t* tpj_rt_buffer_placeholder(tpj_dtype_t dtype, const int64_t* dims, int ndim,
                                           int device, int64_t trace_id);
void tpj_rt_buffer_retain(tpj_rt_buffer_t* buf);
/* Drops one reference; the PJRT buffer is destroyed at zero. NULL is ok. */
void tpj_rt_buffer_release(tpj_rt_buffer_t* buf);
int64_t tpj_rt_buffer_numel(const tpj_rt_buffer_t* buf);
size_t tpj_rt_buffer_nbytes(const tpj_rt_buffer_t* buf);
/* Number of live tpj_rt_buffer_t in the process (for leak tests). */
int64_t tpj_rt_live_buffers(void);
/* Bytes copied host-to-device and device-to-host since the process began. */
void tpj_rt_transfer_bytes(int64_t* out_h2d, int64_t* out_d2h);

/* ---- compile and execute --------------------------------------------- */

/* Compiles StableHLO text (format "mlir") for any single device (a portable
 * executable). *out_exe is owned by the caller (tpj_rt_exe_release). */
tpj_status_t tpj_rt_compile(tpj_rt_t* rt, const char* mlir, size_t mlir_len,
                            tpj_rt_exe_t** out_exe);
/* What this client's compile options add to the plugin's defaults, as text
 * for the on-disk cache's identity ("" when nothing): an executable compiled
 * under other options is another entry. */
const char* tpj_rt_compile_options_tag(const tpj_rt_t* rt);
/* The executable's bytes for the on-disk cache (*out_bytes malloc'd, owned by
 * the caller); TPJ_UNIMPLEMENTED where the plugin cannot. */
tpj_status_t tpj_rt_exe_serialize(tpj_rt_t* rt, const tpj_rt_exe_t* exe, char** out_bytes,
                                  size_t* out_len);
/* Loads bytes made by tpj_rt_exe_serialize with the same plugin version. */
tpj_status_t tpj_rt_exe_deserialize(tpj_rt_t* rt, const char* bytes, size_t len,
                                    tpj_rt_exe_t** out_exe);
/* Executables are reference-counted; compile returns one reference. */
void tpj_rt_exe_retain(tpj_rt_exe_t* exe);
void tpj_rt_exe_release(tpj_rt_exe_t* exe);

/* tpj_rt_shape_t, an output's dtype and dims, is in base/shape.h. */

/* Launches exe on device with args; does not wait. The caller states the
 * output shapes (they come from the lowering); outs[i] receive new buffers
 * owned by the caller. The completion is remembered under op_name (copied)
 * so an asynchronous failure can name the op at the next synchronize. With
 * launch-blocking set, waits and returns the failure here. */
tpj_status_t tpj_rt_execute(tpj_rt_t* rt, tpj_rt_exe_t* exe, int device,
                            tpj_rt_buffer_t* const* args, size_t nargs,
                            const tpj_rt_shape_t* out_shapes, size_t nouts,
                            tpj_rt_buffer_t** outs, const char* op_name);
/* tpj_rt_execute for an executable with input/output aliases: every aliased
 * argument is donated (its buffer becomes the aliased output and must not be
 * used again except to release it) unless its index is in keep[nkeep]. */
tpj_status_t tpj_rt_execute_donating(tpj_rt_t* rt, tpj_rt_exe_t* exe, int device,
                                     tpj_rt_buffer_t* const* args, size_t nargs,
                                     const int64_t* keep, size_t nkeep,
                                     const tpj_rt_shape_t* out_shapes, size_t nouts,
                                     tpj_rt_buffer_t** outs, const char* op_name);
/* Waits for everything launched on device (-1: every device). Returns the
 * first asynchronous failure since the last synchronize, naming its op. */
tpj_status_t tpj_rt_synchronize(tpj_rt_t* rt, int device);
/* A device-side check: flag (a 0-d bool buffer a launch computes; retained
 * here) is read at the next wait on its device -- synchronize, a copy to
 * the host -- and when it is true that wait fails with message, as an
 * asynchronous failure does (TPJ_OUT_OF_RANGE). A compiled graph's index
 * bounds are checked this way: it cannot read its indices on the host. */
tpj_status_t tpj_rt_check_later(tpj_rt_t* rt, tpj_rt_buffer_t* flag, const char* message);
void tpj_rt_set_launch_blocking(tpj_rt_t* rt, int on);
/* Testing hook (the CPU plugin has no way to make an execution fail after
 * its launch): the next completed execution named op reports a failure, as a
 * failed PJRT completion event would, at the next wait. "" cancels. */
void tpj_rt_inject_async_error(tpj_rt_t* rt, const char* op);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_RT_RT_H_ */
