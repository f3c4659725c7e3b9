/* rt/track: what a device is doing and holding, for torch.tpu's streams,
 * events and memory statistics: stream tags on launches, marks (events) over
 * them, and per-device byte counts of buffers and storages. Kept apart from
 * rt.h so the glue that does not use them does not depend on them. */
#ifndef TPJ_RT_TRACK_H_
#define TPJ_RT_TRACK_H_

#include <stdint.h>

#include "rt/rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of device memory held by live buffers on device, and their peak
 * since the last tpj_rt_reset_peak_buffer_bytes (0 for an unknown device). */
void tpj_rt_buffer_bytes(int device, int64_t* out_current, int64_t* out_peak);
void tpj_rt_reset_peak_buffer_bytes(int device);
/* PJRT calls that failed with RESOURCE_EXHAUSTED since the process began. */
int64_t tpj_rt_oom_count(void);
/* ---- streams and marks (torch.Stream / torch.Event) ------------------- */
/* A stream is a tag (0: the default stream) that launches carry. PJRT
 * orders each device's work by data dependency (buffers are immutable), so
 * streams never reorder results; they name a subset of the device's work to
 * query or wait for. */

/* The stream the calling thread's launches on device are tagged with. */
void tpj_rt_set_thread_stream(int device, int64_t stream);
int64_t tpj_rt_thread_stream(int device);
/* Waits for the work launched on (device, stream); returns the first
 * asynchronous failure among it (and any deferred one). */
tpj_status_t tpj_rt_stream_synchronize(tpj_rt_t* rt, int device, int64_t stream);
/* 1 when all work launched on (device, stream) has finished; never waits. */
int tpj_rt_stream_query(tpj_rt_t* rt, int device, int64_t stream);

/* A mark: the work launched on (device, stream) up to the moment it was
 * recorded. Owned by the caller (tpj_rt_mark_release, before rt is closed).
 * While any mark lives, launches register completion callbacks for it. */
typedef struct tpj_rt_mark tpj_rt_mark_t;
tpj_status_t tpj_rt_mark_record(tpj_rt_t* rt, int device, int64_t stream,
                                tpj_rt_mark_t** out_mark);
void tpj_rt_mark_release(tpj_rt_mark_t* m);
/* 1 when the mark's work has finished; never waits. */
int tpj_rt_mark_query(tpj_rt_t* rt, tpj_rt_mark_t* m);
/* Waits for the mark's work; returns its first failure (also kept for the
 * next tpj_rt_synchronize, as asynchronous errors are sticky). */
tpj_status_t tpj_rt_mark_wait(tpj_rt_t* rt, tpj_rt_mark_t* m);
/* When the mark's work finished (CLOCK_MONOTONIC ns): the latest done time of
 * its launches (from the plugin's completion callbacks where it has them,
 * else when the host saw them done), or the record time when nothing was
 * pending. Meaningful after tpj_rt_mark_wait. */
int64_t tpj_rt_mark_time_ns(const tpj_rt_mark_t* m);
int tpj_rt_mark_device(const tpj_rt_mark_t* m);


/* ---- profiler trace ---------------------------------------------------- */
/* Launches recorded between tpj_rt_trace_start and tpj_rt_trace_stop, with
 * when they were launched and finished (CLOCK_MONOTONIC ns, tpj_rt_clock_ns)
 * and the calling thread's tag at launch (the profiler's correlation id). */
typedef struct {
  char op[64];
  int device;
  int64_t stream;
  int64_t tag;
  int64_t t_launch_ns;
  int64_t t_done_ns;
} tpj_rt_trace_record_t;

void tpj_rt_set_trace_tag(int64_t tag);
int64_t tpj_rt_trace_tag(void);
int64_t tpj_rt_clock_ns(void);
void tpj_rt_trace_start(tpj_rt_t* rt);
/* Stops recording and waits for the recorded launches; *out_records is
 * malloc'd (the caller frees it), NULL when none. */
tpj_status_t tpj_rt_trace_stop(tpj_rt_t* rt, tpj_rt_trace_record_t** out_records,
                               size_t* out_n);

/* Total bytes of storage boxes ever created and destroyed on device. */
void tpj_box_byte_totals(int device, int64_t* out_allocated, int64_t* out_freed);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_RT_TRACK_H_ */
