#include "exec/exec.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/strbuf.h"
#include "exec/donate.h"
#include "exec/internal.h"
#include "rt/replicated.h"
#include "hlo/target.h"
#include "rt/donate.h"

tpj_status_t tpj_exec_create(tpj_rt_t* rt, int capacity, tpj_exec_t** out) {
  *out = NULL;
  tpj_exec_t* ex = (tpj_exec_t*)calloc(1, sizeof(*ex));
  if (!ex) return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  ex->rt = rt;
  /* XLA:CPU needs its reductions written to vectorise (hlo/target.h);
   * TORCH_PJRT_PLAIN_REDUCE=1 keeps the plain form (for comparison). */
  const char* platform = rt ? tpj_rt_platform_name(rt) : NULL;
  const char* plain = getenv("TORCH_PJRT_PLAIN_REDUCE");
  tpj_hlo_set_cpu_target(platform && strcmp(platform, "cpu") == 0 && !(plain && plain[0] == '1'));
  ex->capacity = capacity < 1 ? 1 : capacity;
  ex->nbuckets = 1;
  while (ex->nbuckets < 2 * ex->capacity) ex->nbuckets *= 2;
  ex->buckets = (tpj_exec_entry_t**)calloc((size_t)ex->nbuckets, sizeof(void*));
  if (!ex->buckets) {
    free(ex);
    return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  }
  pthread_mutex_init(&ex->mu, NULL);
  *out = ex;
  return NULL;
}

static void tpj_exec_entry_free(tpj_exec_entry_t* e) {
  tpj_rt_exe_release(e->exe);
  free(e->key);
  free(e);
}

void tpj_exec_destroy(tpj_exec_t* ex) {
  if (!ex) return;
  tpj_exec_entry_t* e = ex->head;
  while (e) {
    tpj_exec_entry_t* n = e->next;
    tpj_exec_entry_free(e);
    e = n;
  }
  free(ex->buckets);
  tpj_exec_trace_free(ex->trace);
  free(ex->disk_dir);
  free(ex->disk_identity);
  pthread_mutex_destroy(&ex->mu);
  free(ex);
}

/* The signature: everything that changes the program, nothing that only
 * changes values. Binary, not text: one cached op's key is built and hashed
 * on every eager call, and formatting numbers cost most of that. Each piece
 * is fixed-width or counted, so the encoding is unambiguous (also when
 * graph.c joins node keys). */
static char* tpj_exec_put(char* p, int64_t v) {
  memcpy(p, &v, sizeof(v));
  return p + sizeof(v);
}

size_t tpj_exec_key_size(const char* op, const tpj_exec_arg_t* args, int nargs, int nattrs,
                         const tpj_rt_shape_t* outs, int nouts, const int64_t* refs) {
  size_t n = strlen(op) + 1 + 8 * (size_t)(2 + nattrs);
  for (int i = 0; i < nargs; ++i) {
    n += 8 * (size_t)((refs ? 1 : 0) + 1 + args[i].buf->ndim);
    if (args[i].has_view) n += 8 * (size_t)(2 + 2 * args[i].view.ndim);
  }
  for (int i = 0; i < nouts; ++i) n += 8 * (size_t)(1 + outs[i].ndim);
  return n;
}

size_t tpj_exec_key_write(char* dst, const char* op, const tpj_exec_arg_t* args, int nargs,
                          const int64_t* attrs, int nattrs, const tpj_rt_shape_t* outs,
                          int nouts, const int64_t* refs) {
  size_t oplen = strlen(op) + 1;
  memcpy(dst, op, oplen);
  char* p = dst + oplen;
  p = tpj_exec_put(p, ((int64_t)nargs << 32) | ((int64_t)nattrs << 16) | nouts);
  for (int i = 0; i < nargs; ++i) {
    const tpj_rt_buffer_t* bf = args[i].buf;
    if (refs) p = tpj_exec_put(p, refs[i]);
    p = tpj_exec_put(p, ((int64_t)bf->dtype << 32) | ((int64_t)bf->ndim << 8) |
                            (args[i].has_view ? 1 : 0));
    for (int d = 0; d < bf->ndim; ++d) p = tpj_exec_put(p, bf->dims[d]);
    if (args[i].has_view) {
      const tpj_view_t* v = &args[i].view;
      p = tpj_exec_put(p, ((int64_t)v->dtype << 32) | v->ndim);
      p = tpj_exec_put(p, v->offset);
      for (int d = 0; d < v->ndim; ++d) {
        p = tpj_exec_put(p, v->sizes[d]);
        p = tpj_exec_put(p, v->strides[d]);
      }
    }
  }
  for (int i = 0; i < nattrs; ++i) p = tpj_exec_put(p, attrs[i]);
  for (int i = 0; i < nouts; ++i) {
    p = tpj_exec_put(p, ((int64_t)outs[i].dtype << 32) | outs[i].ndim);
    for (int d = 0; d < outs[i].ndim; ++d) p = tpj_exec_put(p, outs[i].dims[d]);
  }
  p = tpj_exec_put(p, -1);  /* end mark */
  return (size_t)(p - dst);
}

void tpj_exec_key(tpj_strbuf_t* k, const char* op, const tpj_exec_arg_t* args, int nargs,
                  const int64_t* attrs, int nattrs, const tpj_rt_shape_t* outs, int nouts,
                  const int64_t* refs) {
  size_t n = tpj_exec_key_size(op, args, nargs, nattrs, outs, nouts, refs);
  char* tmp = (char*)malloc(n);
  if (!tmp) {
    k->failed = 1;
    return;
  }
  tpj_strbuf_append(k, tmp, tpj_exec_key_write(tmp, op, args, nargs, attrs, nattrs, outs, nouts,
                                                refs));
  free(tmp);
}

/* The cache's hash: eight bytes a step (FNV-1a's byte loop was a visible
 * part of a cached call). Keys are compared in full on a hit. */
static uint64_t tpj_exec_hash(const char* p, size_t n) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  uint64_t w = 0;
  memcpy(&w, p, n);
  h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 29);
}

tpj_status_t tpj_exec_lower_node(tpj_hlo_builder_t* b, const char* op_name,
                                 const tpj_hlo_value_t* in, int nin, const int64_t* attrs,
                                 int nattrs, const tpj_rt_shape_t* out_shapes, int nouts,
                                 tpj_hlo_value_t* results) {
  const tpj_op_def_t* def = tpj_ops_lookup(op_name);
  if (!def) return tpj_status_make(TPJ_UNIMPLEMENTED, "%s has no lowering", op_name);
  if (nin > TPJ_OP_MAX_IN || nattrs > TPJ_OP_MAX_ATTRS || nouts > TPJ_OP_MAX_OUT)
    return tpj_status_make(TPJ_UNIMPLEMENTED, "%s: too many operands", op_name);
  tpj_op_ctx_t ctx;
  memset(&ctx, 0, sizeof(ctx));
  ctx.b = b;
  ctx.nin = nin;
  for (int i = 0; i < nin; ++i) ctx.in[i] = in[i];
  ctx.nattrs = nattrs;
  for (int i = 0; i < nattrs; ++i) ctx.attrs[i] = attrs[i];
  ctx.nouts = nouts;
  for (int i = 0; i < nouts; ++i) ctx.outs[i] = out_shapes[i];
  for (int i = 0; i < nouts; ++i) results[i].id = -1;
  def->lower(&ctx, results);
  /* the lowering must produce exactly the types PyTorch expects */
  for (int i = 0; i < nouts && tpj_hlo_ok(b); ++i) {
    const tpj_rt_shape_t* o = &out_shapes[i];
    int same = results[i].id >= 0 && results[i].dtype == o->dtype && results[i].ndim == o->ndim;
    for (int d = 0; same && d < o->ndim; ++d) same = results[i].dims[d] == o->dims[d];
    if (!same)
      tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL,
                                      "lowering of %s produced the wrong type for output %d",
                                      op_name, i));
  }
  return NULL;
}

/* alias (NULL: none): per argument, the result its buffer may become. */
static tpj_status_t tpj_exec_lower(const char* op_name, const tpj_exec_arg_t* args, int nargs,
                                   const int64_t* attrs, int nattrs,
                                   const tpj_rt_shape_t* out_shapes, int nouts, const int* alias,
                                   tpj_strbuf_t* text) {
  if (nargs > TPJ_OP_MAX_IN)
    return tpj_status_make(TPJ_UNIMPLEMENTED, "%s: too many operands", op_name);
  tpj_hlo_builder_t b;
  tpj_hlo_builder_init(&b);
  tpj_hlo_value_t in[TPJ_OP_MAX_IN];
  for (int i = 0; i < nargs; ++i) {
    const tpj_rt_buffer_t* bf = args[i].buf;
    tpj_hlo_value_t a = tpj_hlo_arg(&b, bf->dtype, bf->dims, bf->ndim);
    in[i] = args[i].has_view ? tpj_view_emit_read(&b, a, &args[i].view) : a;
  }
  tpj_hlo_value_t results[TPJ_OP_MAX_OUT];
  tpj_status_t s = tpj_exec_lower_node(&b, op_name, in, nargs, attrs, nattrs, out_shapes, nouts,
                                       results);
  if (!s) s = tpj_hlo_finish_aliased(&b, results, nouts, alias, text);
  tpj_hlo_builder_free(&b);
  return s ? tpj_status_annotate(s, "%s", op_name) : NULL;
}

tpj_status_t tpj_exec_lower_text(const char* op_name, const tpj_exec_arg_t* args, int nargs,
                                 const int64_t* attrs, int nattrs,
                                 const tpj_rt_shape_t* out_shapes, int nouts, char** out_text) {
  *out_text = NULL;
  tpj_strbuf_t text;
  tpj_strbuf_init(&text);
  tpj_status_t s =
      tpj_exec_lower(op_name, args, nargs, attrs, nattrs, out_shapes, nouts, NULL, &text);
  if (!s) {
    *out_text = text.data;
    text.data = NULL;
  }
  tpj_strbuf_free(&text);
  return s;
}

static void tpj_exec_unlink(tpj_exec_t* ex, tpj_exec_entry_t* e) {
  if (e->prev) e->prev->next = e->next;
  else ex->head = e->next;
  if (e->next) e->next->prev = e->prev;
  else ex->tail = e->prev;
  e->prev = e->next = NULL;
}

static void tpj_exec_push_front(tpj_exec_t* ex, tpj_exec_entry_t* e) {
  e->prev = NULL;
  e->next = ex->head;
  if (ex->head) ex->head->prev = e;
  ex->head = e;
  if (!ex->tail) ex->tail = e;
}

static void tpj_exec_unchain(tpj_exec_t* ex, tpj_exec_entry_t* e) {
  tpj_exec_entry_t** p = &ex->buckets[e->hash & (uint64_t)(ex->nbuckets - 1)];
  while (*p && *p != e) p = &(*p)->chain;
  if (*p) *p = e->chain;
}

/* Returns the executable for key, retained in the cache; with mu held. */
static tpj_exec_entry_t* tpj_exec_find_locked(tpj_exec_t* ex, uint64_t h, const char* key,
                                              size_t len) {
  for (tpj_exec_entry_t* e = ex->buckets[h & (uint64_t)(ex->nbuckets - 1)]; e; e = e->chain)
    if (e->hash == h && e->key_len == len && memcmp(e->key, key, len) == 0) return e;
  return NULL;
}

static double tpj_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
  const char* op_name;
  const tpj_exec_arg_t* args;
  int nargs;
  const int64_t* attrs;
  int nattrs;
  const tpj_rt_shape_t* out_shapes;
  int nouts;
  const int* alias;
} tpj_exec_call_t;

static tpj_status_t tpj_exec_lower_call(void* user, tpj_strbuf_t* text) {
  const tpj_exec_call_t* c = (const tpj_exec_call_t*)user;
  return tpj_exec_lower(c->op_name, c->args, c->nargs, c->attrs, c->nattrs, c->out_shapes,
                        c->nouts, c->alias, text);
}

/* tpj_exec_get_locked, for n replicas on devices[n] when n > 0. */
static tpj_status_t tpj_exec_get_for_locked(tpj_exec_t* ex, const char* key, size_t key_len,
                                            const char* name, tpj_exec_lower_fn lower,
                                            void* user, const int* devices, int n,
                                            tpj_rt_exe_t** out_exe) {
  *out_exe = NULL;
  uint64_t h = tpj_exec_hash(key, key_len);
  tpj_exec_entry_t* e = tpj_exec_find_locked(ex, h, key, key_len);
  if (e) {
    ex->m.cache_hits++;
    if (ex->head != e) {
      tpj_exec_unlink(ex, e);
      tpj_exec_push_front(ex, e);
    }
    tpj_rt_exe_retain(e->exe);
    *out_exe = e->exe;
    return NULL;
  }
  ex->m.cache_misses++;
  tpj_rt_exe_t* exe = NULL;
  tpj_status_t s = NULL;
  /* The disk cache is keyed by the program text itself (lowering is cheap
   * next to compiling), so a changed lowering can never load a stale entry. */
  tpj_strbuf_t text;
  tpj_strbuf_init(&text);
  s = lower(user, &text);
  if (!s) s = tpj_strbuf_status(&text);
  /* A replicated executable is bound to its devices, which the program
   * text does not name: it is not kept on disk. */
  if (!s && (n > 0 || !tpj_exec_disk_load_locked(ex, &text, &exe))) {
    double t0 = tpj_now();
    s = n > 0 ? tpj_rt_compile_replicated(ex->rt, text.data, text.len, devices, n, &exe)
              : tpj_rt_compile(ex->rt, text.data, text.len, &exe);
    ex->m.compile_seconds += tpj_now() - t0;
    ex->m.compiles++;
    if (s) s = tpj_status_annotate(s, "%s", name);
    else if (n == 0) tpj_exec_disk_store_locked(ex, &text, exe);
  }
  tpj_strbuf_free(&text);
  if (s) return s;
  e = (tpj_exec_entry_t*)calloc(1, sizeof(*e));
  if (!e) {
    tpj_rt_exe_release(exe);
    return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  }
  e->key = (char*)malloc(key_len ? key_len : 1);
  if (!e->key) {
    free(e);
    tpj_rt_exe_release(exe);
    return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  }
  memcpy(e->key, key, key_len);
  e->hash = h;
  e->exe = exe;
  e->key_len = key_len;
  tpj_exec_entry_t** bucket = &ex->buckets[h & (uint64_t)(ex->nbuckets - 1)];
  e->chain = *bucket;
  *bucket = e;
  tpj_exec_push_front(ex, e);
  ex->size++;
  while (ex->size > ex->capacity && ex->tail != e) {
    tpj_exec_entry_t* old = ex->tail;
    tpj_exec_unlink(ex, old);
    tpj_exec_unchain(ex, old);
    tpj_exec_entry_free(old);
    ex->size--;
    ex->m.evictions++;
  }
  tpj_rt_exe_retain(exe);
  *out_exe = exe;
  return NULL;
}

tpj_status_t tpj_exec_get_locked(tpj_exec_t* ex, const char* key, size_t key_len,
                                 const char* name, tpj_exec_lower_fn lower, void* user,
                                 tpj_rt_exe_t** out_exe) {
  return tpj_exec_get_for_locked(ex, key, key_len, name, lower, user, NULL, 0, out_exe);
}

tpj_status_t tpj_exec_get_replicated(tpj_exec_t* ex, const char* key, size_t key_len,
                                     const char* name, tpj_exec_lower_fn lower, void* user,
                                     const int* devices, int n, tpj_rt_exe_t** out_exe) {
  pthread_mutex_lock(&ex->mu);
  tpj_status_t s =
      tpj_exec_get_for_locked(ex, key, key_len, name, lower, user, devices, n, out_exe);
  if (!s) ex->m.executions++;
  pthread_mutex_unlock(&ex->mu);
  return s;
}

/* tpj_exec_run, with alias (NULL: none) naming per argument the output
 * its buffer becomes (those arguments are donated; see exec/donate.h). An
 * aliased call has its own executable: its key is the plain key followed by
 * the aliases, which no plain key can equal (plain keys are self-delimiting).
 * *out_aliased (may be NULL) is 1 when the aliased executable ran. */
static tpj_status_t tpj_exec_run_aliased(tpj_exec_t* ex, const char* op_name, int device,
                                         const tpj_exec_arg_t* args, int nargs,
                                         const int64_t* attrs, int nattrs,
                                         const tpj_rt_shape_t* out_shapes, int nouts,
                                         const int* alias, tpj_rt_buffer_t** outs,
                                         int* out_aliased) {
  if (out_aliased) *out_aliased = 0;
  if (nargs > TPJ_OP_MAX_IN || nouts > TPJ_OP_MAX_OUT || nattrs > TPJ_OP_MAX_ATTRS)
    return tpj_status_make(TPJ_UNIMPLEMENTED, "%s: too many operands", op_name);
  for (int i = 0; i < nargs; ++i) {
    if (!args[i].buf)
      return tpj_status_make(TPJ_INTERNAL, "%s: operand %d has no buffer", op_name, i);
    if (args[i].buf->device != device)
      return tpj_status_make(TPJ_INVALID_ARGUMENT,
                             "%s: operand %d is on tpu:%d but the op runs on tpu:%d", op_name, i,
                             args[i].buf->device, device);
  }
  /* The key is built before taking the lock (one lock per call; a traced
   * call builds it for nothing, but tracing is not the hot path). Small
   * keys, every eager op's, live on the stack. */
  char small[1024];
  size_t cap = tpj_exec_key_size(op_name, args, nargs, nattrs, out_shapes, nouts, NULL) +
               (alias ? 8 * (size_t)(1 + nargs) : 0);
  char* key = cap <= sizeof(small) ? small : (char*)malloc(cap);
  if (!key) return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  size_t key_len =
      tpj_exec_key_write(key, op_name, args, nargs, attrs, nattrs, out_shapes, nouts, NULL);
  if (alias) {
    char* p = tpj_exec_put(key + key_len, -2);
    for (int i = 0; i < nargs; ++i) p = tpj_exec_put(p, alias[i]);
    key_len = (size_t)(p - key);
  }
  tpj_exec_call_t call = {op_name, args, nargs, attrs, nattrs, out_shapes, nouts, alias};
  tpj_rt_exe_t* exe = NULL;
  tpj_status_t s;
  pthread_mutex_lock(&ex->mu);
  if (ex->trace && pthread_equal(ex->trace_owner, pthread_self())) {
    /* a traced graph has its own donation (trace_end_donating) */
    s = tpj_exec_trace_record_locked(ex, op_name, device, args, nargs, attrs, nattrs,
                                     out_shapes, nouts, outs);
    pthread_mutex_unlock(&ex->mu);
    if (key != small) free(key);
    return s;
  }
  s = tpj_exec_get_locked(ex, key, key_len, op_name, tpj_exec_lower_call, &call, &exe);
  pthread_mutex_unlock(&ex->mu);
  if (key != small) free(key);
  if (s) return s;
  tpj_rt_buffer_t* bufs[TPJ_OP_MAX_IN];
  for (int i = 0; i < nargs; ++i) bufs[i] = args[i].buf;
  /* our reference keeps the executable alive even if the LRU evicts it */
  if (alias) {
    unsigned char donated[TPJ_OP_MAX_IN];
    for (int i = 0; i < nargs; ++i) donated[i] = alias[i] >= 0;
    s = tpj_rt_execute_donated(ex->rt, exe, device, bufs, (size_t)nargs, donated, out_shapes,
                               (size_t)nouts, outs, op_name);
    if (!s && out_aliased) *out_aliased = 1;
  } else {
    s = tpj_rt_execute(ex->rt, exe, device, bufs, (size_t)nargs, out_shapes, (size_t)nouts, outs,
                       op_name);
  }
  __atomic_add_fetch(&ex->m.executions, 1, __ATOMIC_RELAXED);
  tpj_rt_exe_release(exe);
  return s;
}

tpj_status_t tpj_exec_run(tpj_exec_t* ex, const char* op_name, int device,
                          const tpj_exec_arg_t* args, int nargs, const int64_t* attrs,
                          int nattrs, const tpj_rt_shape_t* out_shapes, int nouts,
                          tpj_rt_buffer_t** outs) {
  return tpj_exec_run_aliased(ex, op_name, device, args, nargs, attrs, nattrs, out_shapes, nouts,
                              NULL, outs, NULL);
}

tpj_status_t tpj_exec_run_donating(tpj_exec_t* ex, const char* op_name, int device,
                                   const tpj_exec_arg_t* args, int nargs, const int64_t* attrs,
                                   int nattrs, const tpj_rt_shape_t* out_shapes, int nouts,
                                   const int* donate_to, tpj_rt_buffer_t** outs,
                                   int* out_donated) {
  *out_donated = 0;
  if (nargs > TPJ_OP_MAX_IN || nouts > TPJ_OP_MAX_OUT)
    return tpj_status_make(TPJ_UNIMPLEMENTED, "%s: too many operands", op_name);
  /* Donate only what no one else can see: a buffer held once (by the
   * caller's storage: no other storage, clone, pending copy, cached scalar
   * or graph constant shares it), passed once, real, and exactly the type
   * of the output it becomes. A launch still reading it is no obstacle:
   * PJRT runs the donating launch after the buffer's earlier uses. */
  int alias[TPJ_OP_MAX_IN];
  int n = 0;
  for (int i = 0; i < nargs; ++i) {
    alias[i] = -1;
    int r = donate_to ? donate_to[i] : -1;
    const tpj_rt_buffer_t* bf = args[i].buf;
    if (r < 0 || r >= nouts || !bf || !bf->pjrt || bf->trace_id ||
        __atomic_load_n(&bf->refcount, __ATOMIC_ACQUIRE) != 1)
      continue;
    const tpj_rt_shape_t* o = &out_shapes[r];
    int ok = bf->dtype == o->dtype && bf->ndim == o->ndim;
    for (int d = 0; ok && d < o->ndim; ++d) ok = bf->dims[d] == o->dims[d];
    for (int j = 0; ok && j < nargs; ++j) ok = j == i || args[j].buf != bf;
    for (int j = 0; ok && j < i; ++j) ok = alias[j] != r;
    if (!ok) continue;
    alias[i] = r;
    n++;
  }
  int aliased = 0;
  tpj_status_t s = tpj_exec_run_aliased(ex, op_name, device, args, nargs, attrs, nattrs,
                                        out_shapes, nouts, n ? alias : NULL, outs, &aliased);
  if (aliased) {
    *out_donated = n;
    pthread_mutex_lock(&ex->mu);
    ex->m.donated_buffers += n;
    pthread_mutex_unlock(&ex->mu);
  }
  return s;
}

void tpj_exec_get_metrics(tpj_exec_t* ex, tpj_exec_metrics_t* out) {
  pthread_mutex_lock(&ex->mu);
  *out = ex->m;
  pthread_mutex_unlock(&ex->mu);
}

int tpj_exec_cache_size(tpj_exec_t* ex) { return ex->size; }
