/* exec/internal: what exec.c (one op) and graph.c (traced graphs) share: the
 * executable cache and its lock, the call-signature writer, and the lowering
 * of one table node into a builder. */
#ifndef TPJ_EXEC_INTERNAL_H_
#define TPJ_EXEC_INTERNAL_H_

#include <pthread.h>

#include "base/strbuf.h"
#include "exec/exec.h"
#include "ops/ops.h"

typedef struct tpj_exec_entry {
  uint64_t hash;
  char* key;               /* owned, key_len bytes */
  size_t key_len;
  tpj_rt_exe_t* exe;       /* owned reference */
  struct tpj_exec_entry* prev;  /* LRU list, most recent first */
  struct tpj_exec_entry* next;
  struct tpj_exec_entry* chain; /* hash bucket */
} tpj_exec_entry_t;

typedef struct tpj_exec_trace tpj_exec_trace_t;

struct tpj_exec {
  tpj_rt_t* rt;
  int capacity;
  int size;
  int nbuckets;
  tpj_exec_entry_t** buckets;
  tpj_exec_entry_t* head;
  tpj_exec_entry_t* tail;
  pthread_mutex_t mu;
  tpj_exec_metrics_t m;
  tpj_exec_trace_t* trace;  /* non-NULL while a graph is being traced */
  pthread_t trace_owner;    /* the thread tracing it: only its ops are recorded,
                             * other threads' ops run as usual meanwhile */
  char* disk_dir;           /* on-disk cache directory, or NULL (owned) */
  char* disk_identity;      /* plugin identity that keys disk entries (owned) */
  int disk_error_unreported; /* set at the first disk error; taken once */
  char disk_error_path[4200];
};

/* With ex->mu held: the executable stored on disk for this program text (1, *out_exe a
 * new reference), or 0 (absent, or unreadable: counted in disk_errors). */
int tpj_exec_disk_load_locked(tpj_exec_t* ex, const tpj_strbuf_t* text, tpj_rt_exe_t** out_exe);
/* With ex->mu held: writes exe for this program text; failures only count. */
void tpj_exec_disk_store_locked(tpj_exec_t* ex, const tpj_strbuf_t* text, const tpj_rt_exe_t* exe);

/* One op call's signature (binary; see exec.c). refs, when not NULL, names
 * each argument's value inside a graph (nargs entries). key_size is an upper
 * bound of what key_write writes to dst; key_write returns the length.
 * tpj_exec_key appends the same bytes to k. */
size_t tpj_exec_key_size(const char* op, const tpj_exec_arg_t* args, int nargs, int nattrs,
                         const tpj_rt_shape_t* outs, int nouts, const int64_t* refs);
size_t tpj_exec_key_write(char* dst, const char* op, const tpj_exec_arg_t* args, int nargs,
                          const int64_t* attrs, int nattrs, const tpj_rt_shape_t* outs,
                          int nouts, const int64_t* refs);
void tpj_exec_key(tpj_strbuf_t* k, const char* op, const tpj_exec_arg_t* args, int nargs,
                  const int64_t* attrs, int nattrs, const tpj_rt_shape_t* outs, int nouts,
                  const int64_t* refs);

/* Lowers the table op into b from inputs already read out of their views;
 * results[nouts] receive its values. Lowering failures are left in b. */
tpj_status_t tpj_exec_lower_node(tpj_hlo_builder_t* b, const char* op_name,
                                 const tpj_hlo_value_t* in, int nin, const int64_t* attrs,
                                 int nattrs, const tpj_rt_shape_t* out_shapes, int nouts,
                                 tpj_hlo_value_t* results);

/* With ex->mu held: the executable cached under key[key_len], or
 * lower(user) compiled and cached (the cache copies the key). *out_exe is a
 * new reference. */
tpj_status_t tpj_exec_get_locked(tpj_exec_t* ex, const char* key, size_t key_len,
                                 const char* name, tpj_exec_lower_fn lower, void* user,
                                 tpj_rt_exe_t** out_exe);

/* With ex->mu held and a trace active: appends the call as a node and gives
 * its outputs placeholder buffers (owned by the caller). */
tpj_status_t tpj_exec_trace_record_locked(tpj_exec_t* ex, const char* op_name, int device,
                                          const tpj_exec_arg_t* args, int nargs,
                                          const int64_t* attrs, int nattrs,
                                          const tpj_rt_shape_t* out_shapes, int nouts,
                                          tpj_rt_buffer_t** outs);
void tpj_exec_trace_free(tpj_exec_trace_t* t);

#endif /* TPJ_EXEC_INTERNAL_H_ */
