/* exec: one op, eagerly. Builds the call signature (op, operand buffer types,
 * views, attrs, output types), looks it up in a bounded in-memory LRU of
 * loaded executables, lowers and compiles on a miss, and launches without
 * waiting. Runtime scalars are ordinary 0-d buffer arguments, so their
 * values never enter the key. */
#ifndef TPJ_EXEC_EXEC_H_
#define TPJ_EXEC_EXEC_H_

#include <stdint.h>

#include "ops/ops.h"
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
  int64_t compiles;
  int64_t cache_hits;
  int64_t cache_misses;
  int64_t executions;
  int64_t evictions;
  double compile_seconds;
} tpj_exec_metrics_t;

/* capacity: executables kept in memory (>= 1). *out owned by the caller. */
tpj_status_t tpj_exec_create(tpj_rt_t* rt, int capacity, tpj_exec_t** out);
void tpj_exec_destroy(tpj_exec_t* ex);

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

void tpj_exec_get_metrics(tpj_exec_t* ex, tpj_exec_metrics_t* out);
int tpj_exec_cache_size(tpj_exec_t* ex);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_EXEC_EXEC_H_ */
