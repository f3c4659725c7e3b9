/* dist/xla: see xla.h. The group is a rendezvous: each rank leaves its part
 * of a collective in its slot and waits; the last to arrive checks that the
 * parts agree, launches the replicated program with every rank's buffer, and
 * hands each rank its result. Point-to-point messages need no program: a
 * sent buffer waits in a mailbox, and the receiver copies it to its device. */
#include "dist/xla.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/strbuf.h"
#include "hlo/builder.h"
#include "hlo/collective.h"
#include "rt/replicated.h"

typedef enum {
  K_ALL_REDUCE = 0,
  K_BROADCAST,
  K_REDUCE,
  K_ALL_GATHER,
  K_REDUCE_SCATTER,
  K_GATHER,
  K_SCATTER,
  K_ALL_TO_ALL,
  K_BARRIER,
} tpj_dist_kind_t;

static const char* const kKindNames[] = {"all_reduce", "broadcast", "reduce",
                                         "all_gather", "reduce_scatter", "gather",
                                         "scatter", "all_to_all", "barrier"};

/* One rank's part in a collective; lives on its caller's stack. */
typedef struct {
  tpj_dist_kind_t kind;
  int op;                /* tpj_dist_op_t, or -1 */
  int root;              /* or -1 */
  tpj_dtype_t dtype;
  int64_t numel;         /* of the program's input */
  tpj_rt_buffer_t* in;   /* borrowed; NULL: zeros (scatter's non-roots) */
  tpj_rt_buffer_t* out;  /* set by the launcher; owned by the caller */
  tpj_status_t status;   /* set by the launcher; owned by the caller */
} tpj_dist_call_t;

typedef struct tpj_dist_msg {
  int src, dst, tag;
  tpj_rt_buffer_t* buf;  /* owned reference */
  struct tpj_dist_msg* next;
} tpj_dist_msg_t;

struct tpj_dist_xla_group {
  int refcount;
  tpj_rt_t* rt;
  tpj_exec_t* ex;
  int size;
  int* devices;
  int64_t timeout_ms;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  tpj_dist_call_t** slots;  /* the current round's parts, one per rank */
  int arrived;
  uint64_t round;           /* bumped when a round has launched */
  tpj_dist_msg_t* mail;     /* oldest first */
};

/* ---- the programs --------------------------------------------------------- */

static const char* tpj_dist_body(int op) {
  switch (op) {
    case TPJ_DIST_PRODUCT: return "stablehlo.multiply";
    case TPJ_DIST_MIN: return "stablehlo.minimum";
    case TPJ_DIST_MAX: return "stablehlo.maximum";
    case TPJ_DIST_BAND: return "stablehlo.and";
    case TPJ_DIST_BOR: return "stablehlo.or";
    case TPJ_DIST_BXOR: return "stablehlo.xor";
    default: return "stablehlo.add";
  }
}

/* Elements of one rank's result. */
static int64_t tpj_dist_out_numel(const tpj_dist_call_t* c, int n) {
  switch (c->kind) {
    case K_ALL_GATHER:
    case K_GATHER: return c->numel * n;
    case K_REDUCE_SCATTER:
    case K_SCATTER: return c->numel / n;
    default: return c->numel;
  }
}

typedef struct {
  const tpj_dist_call_t* c;
  int n;
} tpj_dist_program_t;

/* Block `root` (of n) of x's dim 0. */
static tpj_hlo_value_t tpj_dist_block(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int n, int root) {
  int64_t m = x.dims[0] / n;
  int64_t start = root * m, limit = start + m, stride = 1;
  return tpj_hlo_emit_slice(b, x, &start, &limit, &stride);
}

/* XLA:CPU's collectives reduce only with add, multiply, minimum and
 * maximum ("Unsupported reduction computation" for and/or/xor). */
static int tpj_dist_is_bitwise(int op) {
  return op == TPJ_DIST_BAND || op == TPJ_DIST_BOR || op == TPJ_DIST_BXOR;
}

/* body over the n blocks of x's dim 0, in block order. */
static tpj_hlo_value_t tpj_dist_fold(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int n,
                                     const char* body) {
  tpj_hlo_value_t r = tpj_dist_block(b, x, n, 0);
  for (int i = 1; i < n; ++i) r = tpj_hlo_emit_binary(b, body, r, tpj_dist_block(b, x, n, i));
  return r;
}

static tpj_status_t tpj_dist_lower(void* user, tpj_strbuf_t* text) {
  const tpj_dist_program_t* p = (const tpj_dist_program_t*)user;
  const tpj_dist_call_t* c = p->c;
  int n = p->n;
  tpj_hlo_builder_t b;
  tpj_hlo_builder_init(&b);
  tpj_hlo_value_t x = tpj_hlo_arg(&b, c->dtype, &c->numel, 1), r;
  const char* body = tpj_dist_body(c->op);
  int bitwise = tpj_dist_is_bitwise(c->op);
  switch (c->kind) {
    case K_ALL_REDUCE:
    case K_REDUCE:
      /* Bitwise: every rank gathers every rank's x and folds them itself. */
      r = bitwise ? tpj_dist_fold(&b, tpj_hlo_emit_all_gather(&b, x, n), n, body)
                  : tpj_hlo_emit_all_reduce(&b, x, n, body);
      break;
    case K_BROADCAST: r = tpj_dist_block(&b, tpj_hlo_emit_all_gather(&b, x, n), n, c->root); break;
    case K_REDUCE_SCATTER:
      /* Bitwise: all_to_all brings every rank's block r to rank r. */
      r = bitwise ? tpj_dist_fold(&b, tpj_hlo_emit_all_to_all(&b, x, n), n, body)
                  : tpj_hlo_emit_reduce_scatter(&b, x, n, body);
      break;
    case K_SCATTER: r = tpj_dist_block(&b, tpj_hlo_emit_all_to_all(&b, x, n), n, c->root); break;
    case K_ALL_TO_ALL: r = tpj_hlo_emit_all_to_all(&b, x, n); break;
    default: r = tpj_hlo_emit_all_gather(&b, x, n); break;
  }
  tpj_status_t s = tpj_hlo_finish(&b, &r, 1, text);
  tpj_hlo_builder_free(&b);
  return s;
}

/* ---- the rendezvous ----------------------------------------------------------- */

/* NULL when every rank's part matches rank 0's, else the first mismatch. */
static tpj_status_t tpj_dist_agree(tpj_dist_xla_group_t* g) {
  const tpj_dist_call_t* a = g->slots[0];
  const char* what = kKindNames[a->kind];
  for (int r = 0; r < g->size; ++r) {
    const tpj_dist_call_t* c = g->slots[r];
    if (c->kind != a->kind)
      return tpj_status_make(TPJ_INVALID_ARGUMENT,
                             "pjrt %s: the ranks called different collectives: rank 0 called "
                             "%s, rank %d called %s", what, what, r, kKindNames[c->kind]);
    if (c->dtype != a->dtype || c->numel != a->numel)
      return tpj_status_make(TPJ_INVALID_ARGUMENT,
                             "pjrt %s: the ranks' tensors do not match: rank 0 passed %lld %s "
                             "elements, rank %d passed %lld %s elements (every rank must pass "
                             "tensors of the same shape and dtype)", what, (long long)a->numel,
                             tpj_dtype_name(a->dtype), r, (long long)c->numel,
                             tpj_dtype_name(c->dtype));
    if (c->root != a->root)
      return tpj_status_make(TPJ_INVALID_ARGUMENT,
                             "pjrt %s: the ranks disagree on the root (rank 0 says %d, rank %d "
                             "says %d)", what, a->root, r, c->root);
    if (c->op != a->op)
      return tpj_status_make(TPJ_INVALID_ARGUMENT,
                             "pjrt %s: the ranks disagree on the reduce op (rank 0 and rank %d)",
                             what, r);
    if (c->in && c->in->device != g->devices[r])
      return tpj_status_make(TPJ_INVALID_ARGUMENT,
                             "pjrt %s: rank %d's tensor is on tpu:%d, but rank %d of this group "
                             "drives tpu:%d", what, r, c->in->device, r, g->devices[r]);
  }
  return NULL;
}

/* With g->mu held and every rank arrived: runs the round; each part gets
 * its result or the round's failure. */
static void tpj_dist_launch_locked(tpj_dist_xla_group_t* g) {
  int n = g->size;
  const tpj_dist_call_t* c0 = g->slots[0];
  const char* what = kKindNames[c0->kind];
  tpj_status_t s = tpj_dist_agree(g);
  tpj_rt_buffer_t** args = NULL;
  tpj_rt_buffer_t** outs = NULL;
  tpj_rt_buffer_t** zeros = NULL;
  tpj_rt_exe_t* exe = NULL;
  if (!s && c0->kind != K_BARRIER) {
    args = (tpj_rt_buffer_t**)calloc((size_t)n, sizeof(*args));
    outs = (tpj_rt_buffer_t**)calloc((size_t)n, sizeof(*outs));
    zeros = (tpj_rt_buffer_t**)calloc((size_t)n, sizeof(*zeros));
    if (!args || !outs || !zeros) s = tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  }
  if (!s && c0->kind != K_BARRIER) {
    size_t nbytes = (size_t)c0->numel * tpj_dtype_size(c0->dtype);
    void* zero_host = NULL;
    for (int r = 0; r < n && !s; ++r) {
      args[r] = g->slots[r]->in;
      if (args[r]) continue;
      if (!zero_host) zero_host = calloc(nbytes ? nbytes : 1, 1);
      if (!zero_host) s = tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
      else s = tpj_rt_buffer_from_host(g->rt, g->devices[r], c0->dtype, &c0->numel, 1,
                                       zero_host, &zeros[r]);
      args[r] = zeros[r];
    }
    free(zero_host);
  }
  if (!s && c0->kind != K_BARRIER) {
    /* The key: what the program depends on, and the devices it is bound to. */
    tpj_strbuf_t key;
    tpj_strbuf_init(&key);
    tpj_strbuf_printf(&key, "dist.xla %s op=%d root=%d %s[%lld] on", what, c0->op, c0->root,
                      tpj_dtype_name(c0->dtype), (long long)c0->numel);
    for (int r = 0; r < n; ++r) tpj_strbuf_printf(&key, " %d", g->devices[r]);
    s = tpj_strbuf_status(&key);
    tpj_dist_program_t prog = {c0, n};
    if (!s) s = tpj_exec_get_replicated(g->ex, key.data, key.len, what, tpj_dist_lower, &prog,
                                        g->devices, n, &exe);
    tpj_strbuf_free(&key);
    tpj_rt_shape_t shape;
    memset(&shape, 0, sizeof(shape));
    shape.dtype = c0->dtype;
    shape.ndim = 1;
    shape.dims[0] = tpj_dist_out_numel(c0, n);
    if (!s) s = tpj_rt_execute_replicated(g->rt, exe, g->devices, n, args, 1, &shape, 1, outs,
                                          what);
    tpj_rt_exe_release(exe);
  }
  for (int r = 0; r < n; ++r) {
    tpj_dist_call_t* c = g->slots[r];
    if (s) {
      c->status = tpj_status_make(tpj_status_code(s), "%s", tpj_status_message(s));
    } else if (outs) {
      c->out = outs[r];
    }
    if (zeros) tpj_rt_buffer_release(zeros[r]);
    g->slots[r] = NULL;
  }
  tpj_status_free(s);
  free(args);
  free(outs);
  free(zeros);
  g->arrived = 0;
  g->round++;
  pthread_cond_broadcast(&g->cv);
}

static struct timespec tpj_dist_deadline(int64_t timeout_ms) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  t.tv_sec += timeout_ms / 1000;
  t.tv_nsec += (timeout_ms % 1000) * 1000000;
  if (t.tv_nsec >= 1000000000) {
    t.tv_sec++;
    t.tv_nsec -= 1000000000;
  }
  return t;
}

/* Rank `rank`'s part in the next round: returns once the round has run. */
static tpj_status_t tpj_dist_meet(tpj_dist_xla_group_t* g, int rank, tpj_dist_call_t* c) {
  pthread_mutex_lock(&g->mu);
  if (g->slots[rank]) {
    pthread_mutex_unlock(&g->mu);
    return tpj_status_make(TPJ_FAILED_PRECONDITION,
                           "pjrt %s: rank %d is already in a collective (one thread per rank)",
                           kKindNames[c->kind], rank);
  }
  g->slots[rank] = c;
  uint64_t mine = g->round;
  if (++g->arrived == g->size) {
    tpj_dist_launch_locked(g);
    pthread_mutex_unlock(&g->mu);
    return c->status;
  }
  struct timespec deadline = tpj_dist_deadline(g->timeout_ms);
  while (g->round == mine) {
    if (pthread_cond_timedwait(&g->cv, &g->mu, &deadline) == ETIMEDOUT && g->round == mine) {
      tpj_strbuf_t missing;
      tpj_strbuf_init(&missing);
      for (int r = 0, k = 0; r < g->size; ++r)
        if (!g->slots[r]) tpj_strbuf_printf(&missing, k++ ? ", %d" : "%d", r);
      tpj_status_t s = tpj_status_make(
          TPJ_FAILED_PRECONDITION,
          "pjrt %s: timed out after %lld ms on rank %d waiting for rank(s) %s to join",
          kKindNames[c->kind], (long long)g->timeout_ms, rank,
          missing.data ? missing.data : "?");
      tpj_strbuf_free(&missing);
      g->slots[rank] = NULL;
      g->arrived--;
      pthread_mutex_unlock(&g->mu);
      return s;
    }
  }
  pthread_mutex_unlock(&g->mu);
  return c->status;
}

/* ---- the transport table ---------------------------------------------------------- */

typedef struct {
  tpj_dist_transport_t table;
  tpj_dist_xla_group_t* g;  /* owned reference */
  int rank;
} tpj_dist_xla_rank_t;

/* Every work has finished when it is made: it remembers the source of a
 * receive, nothing else. */
struct tpj_dist_work {
  int source;
};

static tpj_status_t tpj_dist_done(int source, tpj_dist_work_t** out_work) {
  tpj_dist_work_t* w = (tpj_dist_work_t*)malloc(sizeof(*w));
  if (!w) return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  w->source = source;
  *out_work = w;
  return NULL;
}

static tpj_status_t tpj_dist_run(void* self, tpj_dist_kind_t kind, int op, int root,
                                 tpj_dist_buf_t* in, tpj_dist_buf_t* out,
                                 tpj_dist_work_t** out_work) {
  tpj_dist_xla_rank_t* x = (tpj_dist_xla_rank_t*)self;
  *out_work = NULL;
  tpj_dist_call_t c;
  memset(&c, 0, sizeof(c));
  c.kind = kind;
  c.op = op;
  c.root = root;
  if (in) {
    c.dtype = in->dtype;
    c.numel = in->numel;
    c.in = in->device;
  } else if (out) {  /* scatter on a non-root: zeros of the root's shape */
    c.dtype = out->dtype;
    c.numel = out->numel * x->g->size;
  }
  TPJ_RETURN_IF_ERROR(tpj_dist_meet(x->g, x->rank, &c));
  tpj_dist_buf_t* dst = out ? out : in;
  if (dst) dst->out_device = c.out;
  else tpj_rt_buffer_release(c.out);
  return tpj_dist_done(-1, out_work);
}

static tpj_status_t tpj_dist_xla_all_reduce(void* self, tpj_dist_buf_t* buf, tpj_dist_op_t op,
                                            tpj_dist_work_t** w) {
  return tpj_dist_run(self, K_ALL_REDUCE, op, -1, buf, NULL, w);
}
static tpj_status_t tpj_dist_xla_broadcast(void* self, tpj_dist_buf_t* buf, int root,
                                           tpj_dist_work_t** w) {
  return tpj_dist_run(self, K_BROADCAST, -1, root, buf, NULL, w);
}
static tpj_status_t tpj_dist_xla_reduce(void* self, tpj_dist_buf_t* buf, tpj_dist_op_t op,
                                        int root, tpj_dist_work_t** w) {
  return tpj_dist_run(self, K_REDUCE, op, root, buf, NULL, w);
}
static tpj_status_t tpj_dist_xla_all_gather(void* self, tpj_dist_buf_t* in, tpj_dist_buf_t* out,
                                            tpj_dist_work_t** w) {
  return tpj_dist_run(self, K_ALL_GATHER, -1, -1, in, out, w);
}
static tpj_status_t tpj_dist_xla_reduce_scatter(void* self, tpj_dist_buf_t* in,
                                                tpj_dist_buf_t* out, tpj_dist_op_t op,
                                                tpj_dist_work_t** w) {
  return tpj_dist_run(self, K_REDUCE_SCATTER, op, -1, in, out, w);
}
static tpj_status_t tpj_dist_xla_gather(void* self, tpj_dist_buf_t* in, tpj_dist_buf_t* out,
                                        int root, tpj_dist_work_t** w) {
  /* Every rank computes the gather; only the root keeps it. */
  tpj_dist_buf_t scratch;
  memset(&scratch, 0, sizeof(scratch));
  tpj_status_t s = tpj_dist_run(self, K_GATHER, -1, root, in, out ? out : &scratch, w);
  tpj_rt_buffer_release(scratch.out_device);
  return s;
}
static tpj_status_t tpj_dist_xla_scatter(void* self, tpj_dist_buf_t* in, tpj_dist_buf_t* out,
                                         int root, tpj_dist_work_t** w) {
  return tpj_dist_run(self, K_SCATTER, -1, root, in, out, w);
}
static tpj_status_t tpj_dist_xla_all_to_all(void* self, tpj_dist_buf_t* in, tpj_dist_buf_t* out,
                                            const int64_t* in_counts, const int64_t* out_counts,
                                            tpj_dist_work_t** w) {
  tpj_dist_xla_rank_t* x = (tpj_dist_xla_rank_t*)self;
  int n = x->g->size;
  for (int r = 0; r < n; ++r) {
    if (in_counts[r] * n != in->numel || out_counts[r] * n != out->numel)
      return tpj_status_make(TPJ_UNIMPLEMENTED,
                             "pjrt all_to_all: the xla transport needs even splits (every rank "
                             "sends and receives numel / group size elements)");
  }
  return tpj_dist_run(self, K_ALL_TO_ALL, -1, -1, in, out, w);
}
static tpj_status_t tpj_dist_xla_barrier(void* self, tpj_dist_work_t** w) {
  return tpj_dist_run(self, K_BARRIER, -1, -1, NULL, NULL, w);
}

static tpj_status_t tpj_dist_xla_send(void* self, tpj_dist_buf_t* buf, int peer, int tag,
                                      tpj_dist_work_t** w) {
  tpj_dist_xla_rank_t* x = (tpj_dist_xla_rank_t*)self;
  tpj_dist_xla_group_t* g = x->g;
  *w = NULL;
  if (peer < 0 || peer >= g->size || peer == x->rank)
    return tpj_status_make(TPJ_INVALID_ARGUMENT, "pjrt send: invalid destination rank %d", peer);
  tpj_dist_msg_t* m = (tpj_dist_msg_t*)calloc(1, sizeof(*m));
  if (!m) return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  m->src = x->rank;
  m->dst = peer;
  m->tag = tag;
  m->buf = buf->device;
  tpj_rt_buffer_retain(m->buf);  /* immutable: later writes to the tensor make new buffers */
  pthread_mutex_lock(&g->mu);
  tpj_dist_msg_t** tail = &g->mail;
  while (*tail) tail = &(*tail)->next;
  *tail = m;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
  return tpj_dist_done(-1, w);
}

static tpj_status_t tpj_dist_xla_recv(void* self, tpj_dist_buf_t* buf, int peer, int tag,
                                      tpj_dist_work_t** w) {
  tpj_dist_xla_rank_t* x = (tpj_dist_xla_rank_t*)self;
  tpj_dist_xla_group_t* g = x->g;
  *w = NULL;
  struct timespec deadline = tpj_dist_deadline(g->timeout_ms);
  tpj_dist_msg_t* m = NULL;
  pthread_mutex_lock(&g->mu);
  for (;;) {
    for (tpj_dist_msg_t** p = &g->mail; *p; p = &(*p)->next) {
      tpj_dist_msg_t* q = *p;
      if (q->dst == x->rank && q->tag == tag && (peer < 0 || q->src == peer)) {
        *p = q->next;
        m = q;
        break;
      }
    }
    if (m) break;
    if (pthread_cond_timedwait(&g->cv, &g->mu, &deadline) == ETIMEDOUT) {
      pthread_mutex_unlock(&g->mu);
      return tpj_status_make(TPJ_FAILED_PRECONDITION,
                             "pjrt recv: timed out after %lld ms on rank %d waiting for rank %d",
                             (long long)g->timeout_ms, x->rank, peer);
    }
  }
  pthread_mutex_unlock(&g->mu);
  tpj_status_t s = NULL;
  if (m->buf->dtype != buf->dtype || tpj_rt_buffer_numel(m->buf) != buf->numel) {
    s = tpj_status_make(TPJ_INVALID_ARGUMENT,
                        "pjrt recv: rank %d sent %lld %s elements, rank %d expects %lld %s",
                        m->src, (long long)tpj_rt_buffer_numel(m->buf),
                        tpj_dtype_name(m->buf->dtype), x->rank, (long long)buf->numel,
                        tpj_dtype_name(buf->dtype));
  } else if (m->buf->device == g->devices[x->rank]) {
    tpj_rt_buffer_retain(m->buf);
    buf->out_device = m->buf;
  } else {
    s = tpj_rt_buffer_copy_to_device(g->rt, m->buf, g->devices[x->rank], &buf->out_device);
  }
  int src = m->src;
  tpj_rt_buffer_release(m->buf);
  free(m);
  TPJ_RETURN_IF_ERROR(s);
  return tpj_dist_done(src, w);
}

static tpj_status_t tpj_dist_xla_work_wait(void* self, tpj_dist_work_t* w, int64_t timeout_ms) {
  (void)self, (void)w, (void)timeout_ms;
  return NULL;
}
static tpj_status_t tpj_dist_xla_work_then(void* self, tpj_dist_work_t* w, tpj_dist_done_fn fn,
                                           void* user) {
  (void)self, (void)w;
  fn(user, NULL);
  return NULL;
}
static int tpj_dist_xla_work_source_rank(void* self, tpj_dist_work_t* w) {
  (void)self;
  return w->source;
}
static void tpj_dist_xla_work_release(void* self, tpj_dist_work_t* w) {
  (void)self;
  free(w);
}

static void tpj_dist_xla_destroy(void* self) {
  tpj_dist_xla_rank_t* x = (tpj_dist_xla_rank_t*)self;
  tpj_dist_xla_group_release(x->g);
  free(x);
}

/* ---- the group -------------------------------------------------------------------- */

tpj_status_t tpj_dist_xla_group_create(tpj_rt_t* rt, tpj_exec_t* ex, const int* devices,
                                       int size, int64_t timeout_ms,
                                       tpj_dist_xla_group_t** out) {
  *out = NULL;
  if (size < 1) return tpj_status_make(TPJ_INVALID_ARGUMENT, "pjrt: a group needs a rank");
  for (int r = 0; r < size; ++r) {
    TPJ_RETURN_IF_ERROR(tpj_rt_check_device(rt, devices[r]));
    for (int q = 0; q < r; ++q)
      if (devices[q] == devices[r])
        return tpj_status_make(TPJ_INVALID_ARGUMENT,
                               "pjrt: ranks %d and %d both drive tpu:%d (one device per rank)",
                               q, r, devices[r]);
  }
  tpj_dist_xla_group_t* g = (tpj_dist_xla_group_t*)calloc(1, sizeof(*g));
  if (g) {
    g->devices = (int*)malloc((size_t)size * sizeof(int));
    g->slots = (tpj_dist_call_t**)calloc((size_t)size, sizeof(*g->slots));
  }
  if (!g || !g->devices || !g->slots) {
    if (g) {
      free(g->devices);
      free(g->slots);
    }
    free(g);
    return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  }
  memcpy(g->devices, devices, (size_t)size * sizeof(int));
  g->refcount = 1;
  g->rt = rt;
  g->ex = ex;
  g->size = size;
  g->timeout_ms = timeout_ms > 0 ? timeout_ms : 1800000;
  pthread_mutex_init(&g->mu, NULL);
  pthread_cond_init(&g->cv, NULL);
  *out = g;
  return NULL;
}

void tpj_dist_xla_group_release(tpj_dist_xla_group_t* g) {
  if (!g || __atomic_sub_fetch(&g->refcount, 1, __ATOMIC_ACQ_REL) != 0) return;
  while (g->mail) {
    tpj_dist_msg_t* m = g->mail;
    g->mail = m->next;
    tpj_rt_buffer_release(m->buf);
    free(m);
  }
  pthread_mutex_destroy(&g->mu);
  pthread_cond_destroy(&g->cv);
  free(g->devices);
  free(g->slots);
  free(g);
}

tpj_status_t tpj_dist_xla_transport_create(tpj_dist_xla_group_t* g, int rank,
                                           tpj_dist_transport_t** out) {
  *out = NULL;
  if (rank < 0 || rank >= g->size)
    return tpj_status_make(TPJ_INVALID_ARGUMENT, "pjrt: rank %d is not in a group of %d", rank,
                           g->size);
  tpj_dist_xla_rank_t* x = (tpj_dist_xla_rank_t*)calloc(1, sizeof(*x));
  if (!x) return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  __atomic_add_fetch(&g->refcount, 1, __ATOMIC_RELAXED);
  x->g = g;
  x->rank = rank;
  tpj_dist_transport_t* t = &x->table;
  t->name = "xla";
  t->stages_on_host = 0;
  t->rank = rank;
  t->size = g->size;
  t->self = x;
  t->all_reduce = tpj_dist_xla_all_reduce;
  t->broadcast = tpj_dist_xla_broadcast;
  t->reduce = tpj_dist_xla_reduce;
  t->all_gather = tpj_dist_xla_all_gather;
  t->reduce_scatter = tpj_dist_xla_reduce_scatter;
  t->gather = tpj_dist_xla_gather;
  t->scatter = tpj_dist_xla_scatter;
  t->all_to_all = tpj_dist_xla_all_to_all;
  t->send = tpj_dist_xla_send;
  t->recv = tpj_dist_xla_recv;
  t->barrier = tpj_dist_xla_barrier;
  t->work_wait = tpj_dist_xla_work_wait;
  t->work_then = tpj_dist_xla_work_then;
  t->work_source_rank = tpj_dist_xla_work_source_rank;
  t->work_release = tpj_dist_xla_work_release;
  t->destroy = tpj_dist_xla_destroy;
  *out = t;
  return NULL;
}
