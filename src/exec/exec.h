/* exec: one op, eagerly. Builds the call signature (op, operand buffer types,
 * views, attrs, output types), looks it up in a bounded in-memory LRU of
 * loaded executables, lowers and compiles on a miss, and launches without
 * waiting. Runtime scalars are ordinary 0-d buffer arguments, so their
 * values never enter the key. */
#ifndef TPJ_EXEC_EXEC_H_
#define TPJ_EXEC_EXEC_H_

#include <stdint.h>

#include "base/strbuf.h"
#include "ops/limits.h"
#include "rt/rt.h"
#include "view/view.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tpj_exec tpj_exec_t;

/* One operand: a buffer, and how the op reads it. has_view == 0 means the
 * buffer is used as it is (runtime scalars, whole results). */
typedef struct {
  tpj_rt_buffer_t* buf;  /* borrowed */
  int has_view;
  tpj_view_t view;
} tpj_exec_arg_t;

typedef struct {
  int64_t compiles;        /* every compile: one-op and graph executables */
  int64_t graph_compiles;  /* traced graphs that were not in the cache */
  int64_t graph_runs;
  int64_t donated_buffers;  /* graph parameters whose buffer became a result */
  int64_t cache_hits_disk;  /* executables loaded from the on-disk cache */
  int64_t disk_writes;
  int64_t disk_errors;      /* unreadable or corrupt entries (recompiled), failed writes */
  int64_t cache_hits;
  int64_t cache_misses;
  int64_t executions;
  int64_t evictions;
  double compile_seconds;
} tpj_exec_metrics_t;

/* capacity: executables kept in memory (>= 1). *out owned by the caller. */
tpj_status_t tpj_exec_create(tpj_rt_t* rt, int capacity, tpj_exec_t** out);
void tpj_exec_destroy(tpj_exec_t* ex);
/* Keeps compiled executables under dir as well (created if missing; NULL or
 * "" turns the disk cache off). identity names the plugin and its version:
 * entries of another identity are never loaded. */
tpj_status_t tpj_exec_set_disk_cache(tpj_exec_t* ex, const char* dir, const char* identity);
/* 1 (once per process) after the first unreadable or corrupt disk entry,
 * with its path: the caller warns; the entry was recompiled and rewritten. */
int tpj_exec_take_disk_error(tpj_exec_t* ex, char* out_path, size_t cap);

/* Runs the table's op `op_name` on device. outs[i] receive new buffers of
 * out_shapes[i] (owned by the caller). Errors name the op. */
tpj_status_t tpj_exec_run(tpj_exec_t* ex, const char* op_name, int device,
                          const tpj_exec_arg_t* args, int nargs, const int64_t* attrs,
                          int nattrs, const tpj_rt_shape_t* out_shapes, int nouts,
                          tpj_rt_buffer_t** outs);

/* The module text the op would compile to (for tests and debugging);
 * *out_text is malloc'd and owned by the caller. */
tpj_status_t tpj_exec_lower_text(const char* op_name, const tpj_exec_arg_t* args, int nargs,
                                 const int64_t* attrs, int nattrs,
                                 const tpj_rt_shape_t* out_shapes, int nouts, char** out_text);

/* ---- graphs (torch.compile) -------------------------------------------
 * A graph is traced by running the ops eagerly with tracing on: each
 * tpj_exec_run then records a node and returns placeholder buffers
 * (rt's trace_id) instead of launching. The recorded nodes are lowered by
 * the same table functions into one StableHLO main and compiled once.
 * A trace belongs to the thread that began it: ops from other threads run
 * as usual meanwhile, and one trace is active at a time. */
typedef struct tpj_exec_graph tpj_exec_graph_t;

/* Starts a trace; TPJ_FAILED_PRECONDITION when one is already active. */
tpj_status_t tpj_exec_trace_begin(tpj_exec_t* ex);
/* 1 when the calling thread is tracing. */
int tpj_exec_tracing(tpj_exec_t* ex);
/* Ends the trace and builds its graph. params (real buffers) become the
 * graph's parameters in this order; results (placeholders of this trace or
 * params) its results. Any other real buffer a node read becomes a constant
 * the graph keeps. Compiles through the cache (the key is the whole graph's
 * signature). The trace is over either way; *out owned by the caller. */
tpj_status_t tpj_exec_trace_end(tpj_exec_t* ex, tpj_rt_buffer_t* const* params, int nparams,
                                tpj_rt_buffer_t* const* results, int nresults,
                                tpj_exec_graph_t** out);
/* trace_end, with donate_to[i] (one per param, -1 for none; NULL: none)
 * naming the result that param i's buffer may be donated to: a graph that
 * overwrites an input (optimizer state, running stats) then updates it in
 * place. A donation is dropped unless that result is computed by the graph
 * and has the param's type. At run time a buffer is donated only when its
 * refcount is 1 and it is passed once; donated buffers must not be read
 * again (the caller swaps the result in). */
tpj_status_t tpj_exec_trace_end_donating(tpj_exec_t* ex, tpj_rt_buffer_t* const* params,
                                         int nparams, tpj_rt_buffer_t* const* results,
                                         int nresults, const int* donate_to,
                                         tpj_exec_graph_t** out);
/* Drops the trace (after a failure). */
void tpj_exec_trace_abort(tpj_exec_t* ex);
/* Launches g on device without waiting: params of the types given at
 * trace_end; outs[nresults] receive new buffers owned by the caller. */
tpj_status_t tpj_exec_graph_run(tpj_exec_t* ex, const tpj_exec_graph_t* g, int device,
                                tpj_rt_buffer_t* const* params, int nparams,
                                tpj_rt_buffer_t** outs);
int tpj_exec_graph_num_nodes(const tpj_exec_graph_t* g);
int tpj_exec_graph_num_results(const tpj_exec_graph_t* g);
void tpj_exec_graph_release(tpj_exec_graph_t* g);

/* ---- replicated programs (dist/'s XLA collectives) ---------------------
 * Writes a program's StableHLO text into text (the caller frees nothing). */
typedef tpj_status_t (*tpj_exec_lower_fn)(void* user, tpj_strbuf_t* text);
/* The executable cached under key[key_len] (which must name the devices), or
 * lower(user) compiled for n replicas, replica i on devices[i], and cached.
 * Counted as one execution (the caller launches it with
 * tpj_rt_execute_replicated). *out_exe is a new reference. */
tpj_status_t tpj_exec_get_replicated(tpj_exec_t* ex, const char* key, size_t key_len,
                                     const char* name, tpj_exec_lower_fn lower, void* user,
                                     const int* devices, int n, tpj_rt_exe_t** out_exe);

void tpj_exec_get_metrics(tpj_exec_t* ex, tpj_exec_metrics_t* out);
int tpj_exec_cache_size(tpj_exec_t* ex);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_EXEC_EXEC_H_ */
