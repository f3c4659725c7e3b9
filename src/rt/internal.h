/* rt/internal: what the files of src/rt that call PJRT (client.c, buffer.c,
 * executable.c, event.c, trace.c, replicated.c) share: the client and
 * executable structs, the PJRT call macros, and the helpers they call across
 * files. Not for outside src/rt. */
#ifndef TPJ_RT_INTERNAL_H_
#define TPJ_RT_INTERNAL_H_

#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "pjrt_c_api.h"
#include "base/strbuf.h"
#include "rt/rt.h"
#include "rt/track.h"

#define TPJ_MAX_DEVICES 256

/* When a launch finished, shared by its pending entry, the plugin's
 * OnReady callback and the marks (events) recorded while it ran.
 * t_ns == 0 means not known to be done yet. */
typedef struct {
  int refcount;
  int64_t t_ns;            /* CLOCK_MONOTONIC when done (atomic) */
  const PJRT_Api* api;     /* the callback destroys its PJRT_Error with it */
} tpj_rt_done_t;

typedef struct {
  PJRT_Event* event;
  int device;
  int64_t stream;
  tpj_rt_done_t* done;     /* NULL until a mark or stream query needs it */
  char op[64];
} tpj_rt_pending_t;

/* One launch seen while the profiler records (tpj_rt_trace_start). */
struct tpj_rt_trace_entry {
  tpj_rt_trace_record_t rec;
  tpj_rt_done_t* done;     /* owned reference */
};


struct tpj_rt {
  const PJRT_Api* api;
  PJRT_Client* client;
  char* plugin_path;
  char* platform_name;
  char* platform_version;
  char* attributes;
  int ndevices;
  PJRT_Device* devices[TPJ_MAX_DEVICES];
  char* device_kind[TPJ_MAX_DEVICES];
  char* device_desc[TPJ_MAX_DEVICES];
  int64_t device_id[TPJ_MAX_DEVICES];  /* PJRT's global id (device assignments) */
  int launch_blocking;
  pthread_mutex_t mu;          /* guards pending and deferred */
  tpj_rt_pending_t* pending;
  size_t npending, cap_pending;
  size_t prune_at;             /* npending at which the next launch prunes */
  tpj_status_t deferred;       /* first async failure seen while pruning */
  struct tpj_rt_check* checks; /* device-side checks read at the next wait */
  size_t nchecks, cap_checks;
  char inject_op[64];          /* testing: the next completion of this op fails */
  int track_done;              /* marks are alive: launches get done times (callbacks) */
  int tracing;                 /* the profiler is recording launches (trace below) */
  struct tpj_rt_trace_entry* trace;
  size_t ntrace, cap_trace;
};

struct tpj_rt_check {
  tpj_rt_buffer_t* flag;       /* owned reference: 0-d bool, true = failed */
  char* message;               /* owned */
};

struct tpj_rt_exe {
  int refcount;
  PJRT_LoadedExecutable* exe;
  const PJRT_Api* api;
  size_t num_outputs;
};

/* True when the plugin's PJRT_Api table is long enough to hold `field` and
 * fills it: plugins built against an older minor version have shorter
 * tables (the struct is append-only). */
#define TPJ_RT_HAS(api, field)                                              \
  ((api)->struct_size >= offsetof(PJRT_Api, field) + sizeof((api)->field) && \
   (api)->field != NULL)

#define TPJ_ARGS(type, name) \
  type name;                 \
  memset(&name, 0, sizeof(name)); \
  name.struct_size = type##_STRUCT_SIZE

#define TPJ_PJRT(rt_api, call, what) \
  TPJ_RETURN_IF_ERROR(tpj_rt_status_from_pjrt((rt_api), (call), (what)))

/* The one function that turns a PJRT_Error into a status; destroys err. */
tpj_status_t tpj_rt_status_from_pjrt(const PJRT_Api* api, PJRT_Error* err, const char* what);
/* Waits for ev (NULL: nothing) and destroys it; its error, named `what`. */
tpj_status_t tpj_rt_event_await(const PJRT_Api* api, PJRT_Event* ev, const char* what);
/* A new tpj_rt_buffer_t (refcount 1) over b, counted; NULL when out of memory. */
tpj_rt_buffer_t* tpj_rt_buffer_wrap(const PJRT_Api* api, PJRT_Buffer* b, tpj_dtype_t dtype,
                                    const int64_t* dims, int ndim, int device);
/* TPJ_FAILED_PRECONDITION for a placeholder or donated buffer. */
tpj_status_t tpj_rt_check_real(const tpj_rt_buffer_t* buf, const char* what);
void tpj_rt_pjrt_buffer_destroy(const PJRT_Api* api, PJRT_Buffer* b);
/* Takes over a loaded executable (destroyed on failure). */
tpj_status_t tpj_rt_exe_wrap(const PJRT_Api* api, PJRT_LoadedExecutable* loaded,
                             tpj_rt_exe_t** out_exe);
/* Compiles StableHLO text with a serialized xla.CompileOptionsProto. */
tpj_status_t tpj_rt_compile_with(tpj_rt_t* rt, const char* mlir, size_t mlir_len,
                                 const char* options, size_t options_len, tpj_rt_exe_t** out_exe);
/* Protobuf wire helpers for the hand-written xla.CompileOptionsProto: a
 * varint, and a length-delimited field (tag, length, bytes). */
void tpj_rt_put_varint(tpj_strbuf_t* sb, uint64_t v);
void tpj_rt_put_message(tpj_strbuf_t* sb, int field, const tpj_strbuf_t* m);
/* Appends the plugin's option overrides (CompileOptionsProto field 7,
 * env_option_overrides) that every compile of this client carries; nothing
 * on a plugin that needs none. */
void tpj_rt_put_overrides(const tpj_rt_t* rt, tpj_strbuf_t* opts);
/* Keeps a launch's completion event as pending work on device and stream. */
tpj_status_t tpj_rt_remember(tpj_rt_t* rt, PJRT_Event* ev, int device, int64_t stream,
                             const char* op, int64_t t_launch);

/* ---- across the files of src/rt ----------------------------------------
 * Helpers one file of src/rt defines and another calls; each is named by
 * the file that defines it. */

/* client.c: destroys ev (NULL: nothing) without waiting for it. */
void tpj_rt_event_destroy(const PJRT_Api* api, PJRT_Event* ev);

/* buffer.c: adds delta to device's count of bytes held by live buffers
 * (tpj_rt_buffer_bytes), raising its peak. */
void tpj_rt_count_bytes(int device, long long delta);

/* event.c: CLOCK_MONOTONIC in ns, never 0 (0 means "not done yet"). */
int64_t tpj_rt_now_ns(void);
/* event.c: drops one reference to d (NULL: nothing). */
void tpj_rt_done_release(tpj_rt_done_t* d);
/* event.c: when d finished, 0 while not known to be done. */
int64_t tpj_rt_done_time(const tpj_rt_done_t* d);
/* event.c: the done record of pending entry p (created on demand; NULL when
 * out of memory), owned by p. Called with rt->mu held. */
tpj_rt_done_t* tpj_rt_done_of_locked(tpj_rt_t* rt, tpj_rt_pending_t* p);
/* event.c: the failure tpj_rt_inject_async_error asked for, once, when op
 * matches; NULL otherwise. Called with rt->mu held. */
tpj_status_t tpj_rt_injected_locked(tpj_rt_t* rt, const char* op);
/* event.c: awaits (and drops) the pending launches on device (-1: all) and
 * stream (-1: all), then reads the device-side checks; returns the first
 * failure, the deferred one first. */
tpj_status_t tpj_rt_await_matching(tpj_rt_t* rt, int device, int64_t stream);

/* trace.c: notes launch p for the profiler. Called with rt->mu held. */
void tpj_rt_trace_locked(tpj_rt_t* rt, tpj_rt_pending_t* p, int64_t t_launch);

#endif /* TPJ_RT_INTERNAL_H_ */
