/* exec/graph: traced graphs for torch.compile. While a trace is active,
 * tpj_exec_run records each table op as a node and hands out placeholder
 * buffers; trace_end lowers all nodes, with the same table functions as the
 * eager path, into one StableHLO main, compiles it through the executable
 * cache, and returns a graph that later calls launch with one Execute. */
#include <stdlib.h>
#include <string.h>

#include "exec/internal.h"

typedef struct {
  char* op;                 /* owned */
  int device;
  int nargs;
  tpj_exec_arg_t* args;     /* buffers retained */
  int64_t* refs;            /* > 0 trace id; < 0: -(1 + index into real[]) */
  int nattrs;
  int64_t* attrs;
  int nouts;
  tpj_rt_shape_t* outs;
  int64_t first_id;         /* outputs have trace ids first_id .. + nouts - 1 */
} tpj_exec_node_t;

struct tpj_exec_trace {
  int64_t first_id;         /* trace ids of this trace start here */
  int64_t next_id;
  int nnodes, cap_nodes;
  tpj_exec_node_t* nodes;
  int nreal, cap_real;
  tpj_rt_buffer_t** real;   /* retained: every real buffer a node read */
};

struct tpj_exec_graph {
  tpj_rt_exe_t* exe;        /* owned reference */
  int nnodes;
  int nparams;
  tpj_rt_shape_t* param_shapes;
  int nconsts;
  tpj_rt_buffer_t** consts; /* retained */
  int nresults;
  tpj_rt_shape_t* result_shapes;
  int device;               /* where the constants live */
  int* donate_to;           /* per param: the result its buffer may become, or -1 */
};

/* Trace ids are unique in the process, so a placeholder that leaks out of
 * one trace is never mistaken for a value of another. */
static int64_t g_next_trace_id = 1;

static void tpj_exec_node_free(tpj_exec_node_t* n) {
  for (int i = 0; i < n->nargs; ++i) tpj_rt_buffer_release(n->args[i].buf);
  free(n->op);
  free(n->args);
  free(n->refs);
  free(n->attrs);
  free(n->outs);
}

void tpj_exec_trace_free(tpj_exec_trace_t* t) {
  if (!t) return;
  for (int i = 0; i < t->nnodes; ++i) tpj_exec_node_free(&t->nodes[i]);
  for (int i = 0; i < t->nreal; ++i) tpj_rt_buffer_release(t->real[i]);
  free(t->nodes);
  free(t->real);
  free(t);
}

tpj_status_t tpj_exec_trace_begin(tpj_exec_t* ex) {
  pthread_mutex_lock(&ex->mu);
  tpj_status_t s = NULL;
  if (ex->trace) {
    s = tpj_status_make(TPJ_FAILED_PRECONDITION, "a graph is already being traced");
  } else {
    ex->trace = (tpj_exec_trace_t*)calloc(1, sizeof(*ex->trace));
    if (!ex->trace) s = tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
    else ex->trace->first_id = ex->trace->next_id = g_next_trace_id;
    ex->trace_owner = pthread_self();
  }
  pthread_mutex_unlock(&ex->mu);
  return s;
}

int tpj_exec_tracing(tpj_exec_t* ex) {
  pthread_mutex_lock(&ex->mu);
  int on = ex->trace != NULL && pthread_equal(ex->trace_owner, pthread_self());
  pthread_mutex_unlock(&ex->mu);
  return on;
}

void tpj_exec_trace_abort(tpj_exec_t* ex) {
  pthread_mutex_lock(&ex->mu);
  tpj_exec_trace_t* t = ex->trace;
  ex->trace = NULL;
  if (t) g_next_trace_id = t->next_id;
  pthread_mutex_unlock(&ex->mu);
  tpj_exec_trace_free(t);
}

static void* tpj_exec_dup(const void* p, size_t n) {
  void* q = malloc(n ? n : 1);
  if (q && n) memcpy(q, p, n);
  return q;
}

/* The ref of a real buffer: its index in t->real, adding it on first use. */
static int tpj_exec_trace_real(tpj_exec_trace_t* t, tpj_rt_buffer_t* buf, int64_t* out_ref) {
  for (int i = 0; i < t->nreal; ++i) {
    if (t->real[i] == buf) {
      *out_ref = -(1 + (int64_t)i);
      return 1;
    }
  }
  if (t->nreal == t->cap_real) {
    int cap = t->cap_real ? 2 * t->cap_real : 16;
    tpj_rt_buffer_t** r = (tpj_rt_buffer_t**)realloc(t->real, (size_t)cap * sizeof(*r));
    if (!r) return 0;
    t->real = r;
    t->cap_real = cap;
  }
  tpj_rt_buffer_retain(buf);
  t->real[t->nreal] = buf;
  *out_ref = -(1 + (int64_t)t->nreal++);
  return 1;
}

tpj_status_t tpj_exec_trace_record_locked(tpj_exec_t* ex, const char* op_name, int device,
                                          const tpj_exec_arg_t* args, int nargs,
                                          const int64_t* attrs, int nattrs,
                                          const tpj_rt_shape_t* out_shapes, int nouts,
                                          tpj_rt_buffer_t** outs) {
  tpj_exec_trace_t* t = ex->trace;
  if (!tpj_ops_lookup(op_name))
    return tpj_status_make(TPJ_UNIMPLEMENTED, "%s has no lowering", op_name);
  for (int i = 0; i < nargs; ++i) {
    int64_t id = args[i].buf->trace_id;
    if (id && (id < t->first_id || id >= t->next_id))
      return tpj_status_make(TPJ_FAILED_PRECONDITION,
                             "%s: operand %d is a value of another traced graph", op_name, i);
  }
  if (t->nnodes == t->cap_nodes) {
    int cap = t->cap_nodes ? 2 * t->cap_nodes : 64;
    tpj_exec_node_t* n = (tpj_exec_node_t*)realloc(t->nodes, (size_t)cap * sizeof(*n));
    if (!n) return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
    t->nodes = n;
    t->cap_nodes = cap;
  }
  tpj_exec_node_t n;
  memset(&n, 0, sizeof(n));
  n.op = (char*)tpj_exec_dup(op_name, strlen(op_name) + 1);
  n.device = device;
  n.args = (tpj_exec_arg_t*)tpj_exec_dup(args, (size_t)nargs * sizeof(*args));
  n.refs = (int64_t*)calloc((size_t)(nargs ? nargs : 1), sizeof(int64_t));
  n.attrs = (int64_t*)tpj_exec_dup(attrs, (size_t)nattrs * sizeof(*attrs));
  n.outs = (tpj_rt_shape_t*)tpj_exec_dup(out_shapes, (size_t)nouts * sizeof(*out_shapes));
  n.nattrs = nattrs;
  n.nouts = nouts;
  n.first_id = t->next_id;
  int ok = n.op && n.args && n.refs && n.attrs && n.outs;
  for (int i = 0; ok && i < nargs; ++i) {
    tpj_rt_buffer_retain(args[i].buf);
    n.nargs = i + 1;
    if (args[i].buf->trace_id) n.refs[i] = args[i].buf->trace_id;
    else ok = tpj_exec_trace_real(t, args[i].buf, &n.refs[i]);
  }
  for (int i = 0; ok && i < nouts; ++i) {
    outs[i] = tpj_rt_buffer_placeholder(out_shapes[i].dtype, out_shapes[i].dims,
                                        out_shapes[i].ndim, device, n.first_id + i);
    if (!outs[i]) {
      for (int j = 0; j < i; ++j) {
        tpj_rt_buffer_release(outs[j]);
        outs[j] = NULL;
      }
      ok = 0;
    }
  }
  if (!ok) {
    tpj_exec_node_free(&n);
    return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  }
  t->next_id += nouts;
  t->nodes[t->nnodes++] = n;
  return NULL;
}

/* What lowering a trace needs besides the trace itself. */
typedef struct {
  const tpj_exec_trace_t* t;
  const int64_t* real_slot;   /* per t->real[i]: its graph parameter index */
  int nslots;                 /* params + constants */
  tpj_rt_buffer_t* const* slot_bufs;
  const int64_t* result_refs;
  int nresults;
  const char* name;
  const int* alias;           /* per slot: aliased result or -1 (NULL: none) */
} tpj_exec_graph_lowering_t;

static tpj_status_t tpj_exec_graph_lower(void* user, tpj_strbuf_t* text) {
  const tpj_exec_graph_lowering_t* L = (const tpj_exec_graph_lowering_t*)user;
  const tpj_exec_trace_t* t = L->t;
  int64_t nvals = t->next_id - t->first_id;
  tpj_hlo_value_t* vals = (tpj_hlo_value_t*)calloc((size_t)(nvals ? nvals : 1), sizeof(*vals));
  tpj_hlo_value_t* slots = (tpj_hlo_value_t*)calloc((size_t)(L->nslots ? L->nslots : 1),
                                                    sizeof(*slots));
  tpj_hlo_value_t* results = (tpj_hlo_value_t*)calloc((size_t)(L->nresults ? L->nresults : 1),
                                                      sizeof(*results));
  tpj_status_t s = NULL;
  if (!vals || !slots || !results) s = tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  tpj_hlo_builder_t b;
  tpj_hlo_builder_init(&b);
  for (int i = 0; !s && i < L->nslots; ++i) {
    const tpj_rt_buffer_t* bf = L->slot_bufs[i];
    slots[i] = tpj_hlo_arg(&b, bf->dtype, bf->dims, bf->ndim);
  }
  for (int k = 0; !s && k < t->nnodes && tpj_hlo_ok(&b); ++k) {
    const tpj_exec_node_t* n = &t->nodes[k];
    tpj_hlo_value_t in[TPJ_OP_MAX_IN];
    for (int i = 0; i < n->nargs; ++i) {
      int64_t r = n->refs[i];
      tpj_hlo_value_t base = r > 0 ? vals[r - t->first_id] : slots[L->real_slot[-r - 1]];
      in[i] = n->args[i].has_view ? tpj_view_emit_read(&b, base, &n->args[i].view) : base;
    }
    tpj_hlo_value_t out[TPJ_OP_MAX_OUT];
    s = tpj_exec_lower_node(&b, n->op, in, n->nargs, n->attrs, n->nattrs, n->outs, n->nouts, out);
    for (int i = 0; !s && i < n->nouts; ++i) vals[n->first_id - t->first_id + i] = out[i];
    if (!s && !tpj_hlo_ok(&b)) {
      s = b.status;
      b.status = NULL;
      s = tpj_status_annotate(s, "%s (node %d of %d)", n->op, k + 1, t->nnodes);
    }
  }
  for (int i = 0; !s && i < L->nresults; ++i) {
    int64_t r = L->result_refs[i];
    results[i] = r > 0 ? vals[r - t->first_id] : slots[-r - 1];
  }
  if (!s) s = tpj_hlo_finish_aliased(&b, results, L->nresults, L->alias, text);
  tpj_hlo_builder_free(&b);
  free(vals);
  free(slots);
  free(results);
  return s;
}

tpj_status_t tpj_exec_trace_end(tpj_exec_t* ex, tpj_rt_buffer_t* const* params, int nparams,
                                tpj_rt_buffer_t* const* results, int nresults,
                                tpj_exec_graph_t** out) {
  return tpj_exec_trace_end_donating(ex, params, nparams, results, nresults, NULL, out);
}

tpj_status_t tpj_exec_trace_end_donating(tpj_exec_t* ex, tpj_rt_buffer_t* const* params,
                                         int nparams, tpj_rt_buffer_t* const* results,
                                         int nresults, const int* donate_to,
                                         tpj_exec_graph_t** out) {
  *out = NULL;
  pthread_mutex_lock(&ex->mu);
  tpj_exec_trace_t* t = ex->trace;
  ex->trace = NULL;
  if (t) g_next_trace_id = t->next_id;
  pthread_mutex_unlock(&ex->mu);
  if (!t) return tpj_status_make(TPJ_FAILED_PRECONDITION, "no graph is being traced");

  tpj_status_t s = NULL;
  tpj_exec_graph_t* g = (tpj_exec_graph_t*)calloc(1, sizeof(*g));
  int64_t* real_slot = (int64_t*)calloc((size_t)(t->nreal ? t->nreal : 1), sizeof(int64_t));
  int64_t* result_refs = (int64_t*)calloc((size_t)(nresults ? nresults : 1), sizeof(int64_t));
  tpj_rt_buffer_t** slot_bufs =
      (tpj_rt_buffer_t**)calloc((size_t)(nparams + t->nreal + 1), sizeof(void*));
  int* alias = (int*)malloc((size_t)(nparams + t->nreal + 1) * sizeof(int));
  if (alias)
    for (int i = 0; i < nparams + t->nreal + 1; ++i) alias[i] = -1;
  if (!g || !real_slot || !result_refs || !slot_bufs || !alias)
    s = tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  int nslots = nparams;
  for (int i = 0; !s && i < nparams; ++i) {
    if (!params[i] || params[i]->trace_id)
      s = tpj_status_make(TPJ_INVALID_ARGUMENT, "graph parameter %d is not a device buffer", i);
    else slot_bufs[i] = params[i];
  }
  /* each real buffer read: a parameter when it is one, else a constant */
  for (int i = 0; !s && i < t->nreal; ++i) {
    int slot = -1;
    for (int p = 0; p < nparams && slot < 0; ++p)
      if (params[p] == t->real[i]) slot = p;
    if (slot < 0) {
      slot = nslots++;
      slot_bufs[slot] = t->real[i];
    }
    real_slot[i] = slot;
  }
  for (int i = 0; !s && i < nresults; ++i) {
    int64_t id = results[i] ? results[i]->trace_id : 0;
    if (id >= t->first_id && id < t->next_id) {
      result_refs[i] = id;
      continue;
    }
    int slot = -1;
    for (int p = 0; p < nslots && slot < 0; ++p)
      if (results[i] && slot_bufs[p] == results[i]) slot = p;
    if (slot < 0)
      s = tpj_status_make(TPJ_INVALID_ARGUMENT,
                          "graph result %d is neither a traced value nor a parameter", i);
    result_refs[i] = -(1 + (int64_t)slot);
  }
  /* Donation: a parameter may give its buffer to a result the graph
   * computes (not one that passes a parameter through) of the same type;
   * each result takes at most one. */
  for (int i = 0; !s && donate_to && i < nparams; ++i) {
    int r = donate_to[i];
    if (r < 0 || r >= nresults || result_refs[r] <= 0) continue;
    int same = results[r]->dtype == params[i]->dtype && results[r]->ndim == params[i]->ndim;
    for (int d = 0; same && d < params[i]->ndim; ++d)
      same = results[r]->dims[d] == params[i]->dims[d];
    for (int j = 0; same && j < i; ++j) same = alias[j] != r;
    if (same) alias[i] = r;
  }

  /* The signature: parameter and constant types, every node with its
   * operands named by value, and the results. */
  tpj_strbuf_t key;
  tpj_strbuf_init(&key);
  if (!s) {
    tpj_strbuf_puts(&key, "graph");
    for (int i = 0; i < nslots; ++i) {
      tpj_strbuf_printf(&key, "|%c%d:", i < nparams ? 'p' : 'c', (int)slot_bufs[i]->dtype);
      for (int d = 0; d < slot_bufs[i]->ndim; ++d)
        tpj_strbuf_printf(&key, "%lld,", (long long)slot_bufs[i]->dims[d]);
    }
    int64_t refs[TPJ_OP_MAX_IN];
    for (int k = 0; k < t->nnodes; ++k) {
      const tpj_exec_node_t* n = &t->nodes[k];
      for (int i = 0; i < n->nargs; ++i)
        refs[i] = n->refs[i] > 0 ? n->refs[i] - t->first_id : -(1 + real_slot[-n->refs[i] - 1]);
      tpj_strbuf_puts(&key, "\n");
      tpj_exec_key(&key, n->op, n->args, n->nargs, n->attrs, n->nattrs, n->outs, n->nouts, refs);
    }
    tpj_strbuf_puts(&key, "\nresults");
    for (int i = 0; i < nresults; ++i)
      tpj_strbuf_printf(&key, "|%lld",
                        (long long)(result_refs[i] > 0 ? result_refs[i] - t->first_id
                                                       : result_refs[i]));
    for (int i = 0; i < nparams; ++i)
      if (alias[i] >= 0) tpj_strbuf_printf(&key, "|donate%d>%d", i, alias[i]);
  }
  if (!s) {
    tpj_exec_graph_lowering_t L = {t,        real_slot, nslots, slot_bufs, result_refs,
                                   nresults, "graph", alias};
    pthread_mutex_lock(&ex->mu);
    int64_t compiles = ex->m.compiles;
    s = tpj_strbuf_status(&key);
    if (!s)
      s = tpj_exec_get_locked(ex, key.data, key.len, "compiled graph", tpj_exec_graph_lower, &L,
                              &g->exe);
    if (ex->m.compiles != compiles) ex->m.graph_compiles++;
    pthread_mutex_unlock(&ex->mu);
  }
  tpj_strbuf_free(&key);
  if (!s) {
    g->nnodes = t->nnodes;
    g->nparams = nparams;
    g->nconsts = nslots - nparams;
    g->nresults = nresults;
    g->device = nparams ? params[0]->device : (t->nreal ? t->real[0]->device : 0);
    g->param_shapes = (tpj_rt_shape_t*)calloc((size_t)(nparams + 1), sizeof(tpj_rt_shape_t));
    g->consts = (tpj_rt_buffer_t**)calloc((size_t)(g->nconsts + 1), sizeof(void*));
    g->result_shapes = (tpj_rt_shape_t*)calloc((size_t)(nresults + 1), sizeof(tpj_rt_shape_t));
    g->donate_to = alias;
    alias = NULL;
    if (!g->param_shapes || !g->consts || !g->result_shapes)
      s = tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  }
  for (int i = 0; !s && i < nparams; ++i) {
    g->param_shapes[i].dtype = params[i]->dtype;
    g->param_shapes[i].ndim = params[i]->ndim;
    memcpy(g->param_shapes[i].dims, params[i]->dims, sizeof(int64_t) * (size_t)params[i]->ndim);
  }
  for (int i = 0; !s && i < g->nconsts; ++i) {
    g->consts[i] = slot_bufs[nparams + i];
    tpj_rt_buffer_retain(g->consts[i]);
  }
  for (int i = 0; !s && i < nresults; ++i) {
    const tpj_rt_buffer_t* r = results[i];
    g->result_shapes[i].dtype = r->dtype;
    g->result_shapes[i].ndim = r->ndim;
    memcpy(g->result_shapes[i].dims, r->dims, sizeof(int64_t) * (size_t)r->ndim);
  }
  free(real_slot);
  free(result_refs);
  free(slot_bufs);
  free(alias);
  tpj_exec_trace_free(t);
  if (s) {
    tpj_exec_graph_release(g);
    return s;
  }
  *out = g;
  return NULL;
}

tpj_status_t tpj_exec_graph_run(tpj_exec_t* ex, const tpj_exec_graph_t* g, int device,
                                tpj_rt_buffer_t* const* params, int nparams,
                                tpj_rt_buffer_t** outs) {
  if (nparams != g->nparams)
    return tpj_status_make(TPJ_INVALID_ARGUMENT, "compiled graph: %d inputs given, %d expected",
                           nparams, g->nparams);
  if (g->nconsts && device != g->device)
    return tpj_status_make(TPJ_INVALID_ARGUMENT,
                           "compiled graph: traced on tpu:%d, run on tpu:%d", g->device, device);
  for (int i = 0; i < nparams; ++i) {
    const tpj_rt_shape_t* want = &g->param_shapes[i];
    int same = params[i] && params[i]->dtype == want->dtype && params[i]->ndim == want->ndim &&
               params[i]->device == device;
    for (int d = 0; same && d < want->ndim; ++d) same = params[i]->dims[d] == want->dims[d];
    if (!same)
      return tpj_status_make(TPJ_INVALID_ARGUMENT,
                             "compiled graph: input %d differs from the traced one", i);
  }
  int n = nparams + g->nconsts;
  tpj_rt_buffer_t** bufs = (tpj_rt_buffer_t**)malloc((size_t)(n ? n : 1) * sizeof(void*));
  int64_t* keep = (int64_t*)malloc((size_t)(nparams ? nparams : 1) * sizeof(int64_t));
  if (!bufs || !keep) {
    free(bufs);
    free(keep);
    return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  }
  for (int i = 0; i < nparams; ++i) bufs[i] = params[i];
  for (int i = 0; i < g->nconsts; ++i) bufs[nparams + i] = g->consts[i];
  /* A parameter's buffer is donated only when its holder is the single
   * owner (refcount 1: no other storage, view or pending copy shares it)
   * and it is passed once; the others are read and left intact. */
  size_t nkeep = 0;
  int64_t donated = 0;
  for (int i = 0; i < nparams; ++i) {
    if (!g->donate_to || g->donate_to[i] < 0) continue;
    int sole = params[i]->refcount == 1;
    for (int j = 0; sole && j < n; ++j) sole = j == i || bufs[j] != params[i];
    if (sole) donated++;
    else keep[nkeep++] = i;
  }
  tpj_status_t s = tpj_rt_execute_donating(ex->rt, g->exe, device, bufs, (size_t)n, keep, nkeep,
                                           g->result_shapes, (size_t)g->nresults, outs,
                                           "compiled graph");
  free(bufs);
  free(keep);
  pthread_mutex_lock(&ex->mu);
  if (!s) ex->m.donated_buffers += donated;
  ex->m.executions++;
  ex->m.graph_runs++;
  pthread_mutex_unlock(&ex->mu);
  return s;
}

int tpj_exec_graph_num_nodes(const tpj_exec_graph_t* g) { return g->nnodes; }
int tpj_exec_graph_num_results(const tpj_exec_graph_t* g) { return g->nresults; }

void tpj_exec_graph_release(tpj_exec_graph_t* g) {
  if (!g) return;
  tpj_rt_exe_release(g->exe);
  for (int i = 0; i < g->nconsts; ++i) tpj_rt_buffer_release(g->consts[i]);
  free(g->consts);
  free(g->param_shapes);
  free(g->result_shapes);
  free(g->donate_to);
  free(g);
}
