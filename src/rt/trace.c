/* rt/trace: what the profiler sees: while it records, each launch's op,
 * device, stream, tag and launch and done times; this thread's trace tag;
 * the clock those times are read from. */
#include "rt/rt.h"
#include "rt/track.h"
#include "rt/internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local int64_t t_trace_tag;

/* Notes launch p for the profiler. Called with rt->mu held. */
void tpj_rt_trace_locked(tpj_rt_t* rt, tpj_rt_pending_t* p, int64_t t_launch) {
  if (rt->ntrace == rt->cap_trace) {
    size_t cap = rt->cap_trace ? rt->cap_trace * 2 : 256;
    struct tpj_rt_trace_entry* t = (struct tpj_rt_trace_entry*)realloc(
        rt->trace, cap * sizeof(*t));
    if (!t) return;  /* the trace misses a launch; the launch itself is fine */
    rt->trace = t;
    rt->cap_trace = cap;
  }
  tpj_rt_done_t* d = tpj_rt_done_of_locked(rt, p);
  if (!d) return;
  __atomic_add_fetch(&d->refcount, 1, __ATOMIC_RELAXED);
  struct tpj_rt_trace_entry* e = &rt->trace[rt->ntrace++];
  memset(e, 0, sizeof(*e));
  snprintf(e->rec.op, sizeof(e->rec.op), "%s", p->op);
  e->rec.device = p->device;
  e->rec.stream = p->stream;
  e->rec.tag = t_trace_tag;
  e->rec.t_launch_ns = t_launch;
  e->done = d;
}

void tpj_rt_set_trace_tag(int64_t tag) { t_trace_tag = tag; }
int64_t tpj_rt_trace_tag(void) { return t_trace_tag; }

int64_t tpj_rt_clock_ns(void) { return tpj_rt_now_ns(); }

void tpj_rt_trace_start(tpj_rt_t* rt) {
  pthread_mutex_lock(&rt->mu);
  rt->tracing = 1;
  pthread_mutex_unlock(&rt->mu);
}

tpj_status_t tpj_rt_trace_stop(tpj_rt_t* rt, tpj_rt_trace_record_t** out_records,
                               size_t* out_n) {
  *out_records = NULL;
  *out_n = 0;
  /* Every traced launch gets its done time; a failure stays for the next
   * synchronize (the profiler is not the place to raise it). */
  tpj_status_t s = tpj_rt_synchronize(rt, -1);
  pthread_mutex_lock(&rt->mu);
  if (s && !rt->deferred) rt->deferred = s;
  else tpj_status_free(s);
  rt->tracing = 0;
  size_t n = rt->ntrace;
  tpj_rt_trace_record_t* recs =
      n ? (tpj_rt_trace_record_t*)malloc(n * sizeof(tpj_rt_trace_record_t)) : NULL;
  for (size_t i = 0; i < n; ++i) {
    if (recs) {
      recs[i] = rt->trace[i].rec;
      recs[i].t_done_ns = tpj_rt_done_time(rt->trace[i].done);
    }
    tpj_rt_done_release(rt->trace[i].done);
  }
  rt->ntrace = 0;
  pthread_mutex_unlock(&rt->mu);
  if (n && !recs) return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  *out_records = recs;
  *out_n = n;
  return NULL;
}
