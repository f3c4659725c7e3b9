/* rt/event: the work still running. Every launch's completion event waits
 * in a pending list, tagged with its stream, until a synchronize, a copy to
 * the host or a mark (torch.Event) awaits it; device-side checks are read then. */
#include "rt/rt.h"
#include "rt/track.h"
#include "rt/reap.h"
#include "rt/internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pjrt_c_api.h"

/* ---- completions, streams and marks ----------------------------------
 * Every launch leaves a pending entry holding its PJRT completion event.
 * Streams are tags on those entries: PJRT runs each device's executions as
 * their inputs become ready, and since buffers are immutable (every write
 * makes a new buffer) the only ordering that matters, data dependency, is
 * already enforced by PJRT. A stream is thus a way to name a subset of the
 * device's work to wait for; a mark (torch.Event) is "the work of a stream
 * launched so far". Done times come from PJRT_Event_OnReady callbacks once a
 * mark has been used (before that, launches pay nothing for them). */

/* This thread's current stream per device (0: the default stream). */
static _Thread_local int64_t t_stream[TPJ_MAX_DEVICES];

int64_t tpj_rt_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  int64_t t = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
  return t > 0 ? t : 1;
}

void tpj_rt_done_release(tpj_rt_done_t* d) {
  if (d && __atomic_sub_fetch(&d->refcount, 1, __ATOMIC_ACQ_REL) == 0) free(d);
}

/* Sets the done time unless one is already known (the first observer wins:
 * the OnReady callback, or a host wait that saw it first). */
static void tpj_rt_done_set(tpj_rt_done_t* d) {
  if (!d) return;
  int64_t zero = 0;
  __atomic_compare_exchange_n(&d->t_ns, &zero, tpj_rt_now_ns(), 0, __ATOMIC_ACQ_REL,
                              __ATOMIC_ACQUIRE);
}

int64_t tpj_rt_done_time(const tpj_rt_done_t* d) {
  return __atomic_load_n(&d->t_ns, __ATOMIC_ACQUIRE);
}

static void tpj_rt_on_ready(PJRT_Error* error, void* user_arg) {
  tpj_rt_done_t* d = (tpj_rt_done_t*)user_arg;
  if (error) {
    /* The failure itself is reported by whoever awaits the event. */
    TPJ_ARGS(PJRT_Error_Destroy_Args, a);
    a.error = error;
    d->api->PJRT_Error_Destroy(&a);
  }
  tpj_rt_done_set(d);
  tpj_rt_done_release(d);
}

/* A done record for entry p (created on demand), with a callback that times
 * the completion where the plugin can call back. Called with rt->mu held. */
tpj_rt_done_t* tpj_rt_done_of_locked(tpj_rt_t* rt, tpj_rt_pending_t* p) {
  if (p->done) return p->done;
  tpj_rt_done_t* d = (tpj_rt_done_t*)calloc(1, sizeof(*d));
  if (!d) return NULL;
  d->refcount = 1;
  d->api = rt->api;
  if (TPJ_RT_HAS(rt->api, PJRT_Event_OnReady)) {
    d->refcount = 2;
    TPJ_ARGS(PJRT_Event_OnReady_Args, a);
    a.event = p->event;
    a.callback = tpj_rt_on_ready;
    a.user_arg = d;
    PJRT_Error* e = rt->api->PJRT_Event_OnReady(&a);
    if (e) {
      d->refcount = 1;
      tpj_status_free(tpj_rt_status_from_pjrt(rt->api, e, "PJRT_Event_OnReady"));
    }
  }
  p->done = d;
  return d;
}

/* The injected failure of tpj_rt_inject_async_error, once, when op matches.
 * Called with rt->mu held. */
tpj_status_t tpj_rt_injected_locked(tpj_rt_t* rt, const char* op) {
  if (!rt->inject_op[0] || strcmp(rt->inject_op, op ? op : "op") != 0) return NULL;
  rt->inject_op[0] = 0;
  return tpj_status_make(TPJ_INTERNAL, "%s: asynchronous execution failed (injected by "
                         "tpj_rt_inject_async_error)", op);
}

void tpj_rt_inject_async_error(tpj_rt_t* rt, const char* op) {
  pthread_mutex_lock(&rt->mu);
  snprintf(rt->inject_op, sizeof(rt->inject_op), "%s", op ? op : "");
  pthread_mutex_unlock(&rt->mu);
}

/* Awaits and drops entry p; its failure becomes *first unless one is set. */
static void tpj_rt_retire(tpj_rt_t* rt, tpj_rt_pending_t* p, tpj_status_t* first) {
  tpj_status_t s = tpj_rt_event_await(rt->api, p->event, p->op);
  if (!s) s = tpj_rt_injected_locked(rt, p->op);
  tpj_rt_done_set(p->done);
  tpj_rt_done_release(p->done);
  if (s && !*first) *first = s;
  else tpj_status_free(s);
}

/* Drops pending completions that are done, keeping the first failure.
 * Called with rt->mu held. */
static void tpj_rt_prune_locked(tpj_rt_t* rt) {
  const PJRT_Api* api = rt->api;
  if (!TPJ_RT_HAS(api, PJRT_Event_IsReady)) return;
  size_t keep = 0;
  for (size_t i = 0; i < rt->npending; ++i) {
    tpj_rt_pending_t* p = &rt->pending[i];
    TPJ_ARGS(PJRT_Event_IsReady_Args, r);
    r.event = p->event;
    PJRT_Error* e = api->PJRT_Event_IsReady(&r);
    if (e) {
      tpj_status_free(tpj_rt_status_from_pjrt(api, e, ""));
      rt->pending[keep++] = *p;
      continue;
    }
    if (!r.is_ready) {
      rt->pending[keep++] = *p;
      continue;
    }
    tpj_rt_retire(rt, p, &rt->deferred);
  }
  rt->npending = keep;
}

tpj_status_t tpj_rt_remember(tpj_rt_t* rt, PJRT_Event* ev, int device, int64_t stream,
                                    const char* op, int64_t t_launch) {
  pthread_mutex_lock(&rt->mu);
  /* Pruning asks every pending event whether it is ready; with work backed
   * up behind a slow op that would be each launch asking them all again, so
   * the next prune waits until the list has doubled. */
  if (rt->npending >= rt->prune_at) {
    tpj_rt_prune_locked(rt);
    rt->prune_at = rt->npending < 32 ? 64 : 2 * rt->npending;
  }
  if (rt->npending == rt->cap_pending) {
    size_t cap = rt->cap_pending ? rt->cap_pending * 2 : 64;
    tpj_rt_pending_t* p =
        (tpj_rt_pending_t*)realloc(rt->pending, cap * sizeof(tpj_rt_pending_t));
    if (!p) {
      pthread_mutex_unlock(&rt->mu);
      return tpj_rt_event_await(rt->api, ev, op);
    }
    rt->pending = p;
    rt->cap_pending = cap;
  }
  tpj_rt_pending_t* p = &rt->pending[rt->npending++];
  p->event = ev;
  p->device = device;
  p->stream = stream;
  p->done = NULL;
  /* a bounded copy, not snprintf: this runs on every launch */
  const char* name = op ? op : "op";
  size_t len = strnlen(name, sizeof(p->op) - 1);
  memcpy(p->op, name, len);
  p->op[len] = 0;
  if (rt->track_done) tpj_rt_done_of_locked(rt, p);
  if (rt->tracing) tpj_rt_trace_locked(rt, p, t_launch);
  pthread_mutex_unlock(&rt->mu);
  return NULL;
}

tpj_status_t tpj_rt_check_later(tpj_rt_t* rt, tpj_rt_buffer_t* flag, const char* message) {
  if (!flag || !flag->pjrt || flag->dtype != TPJ_BOOL || flag->ndim != 0)
    return tpj_status_make(TPJ_INVALID_ARGUMENT, "a device-side check needs a 0-d bool buffer");
  char* msg = strdup(message ? message : "a device-side check failed");
  if (!msg) return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  pthread_mutex_lock(&rt->mu);
  if (rt->nchecks == rt->cap_checks) {
    size_t cap = rt->cap_checks ? 2 * rt->cap_checks : 16;
    struct tpj_rt_check* c =
        (struct tpj_rt_check*)realloc(rt->checks, cap * sizeof(*rt->checks));
    if (!c) {
      pthread_mutex_unlock(&rt->mu);
      free(msg);
      return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
    }
    rt->checks = c;
    rt->cap_checks = cap;
  }
  tpj_rt_buffer_retain(flag);
  rt->checks[rt->nchecks].flag = flag;
  rt->checks[rt->nchecks].message = msg;
  rt->nchecks++;
  pthread_mutex_unlock(&rt->mu);
  return NULL;
}

/* Reads the checks on device (-1: all), taken out of the list; the first
 * that failed (or could not be read) is returned unless *first is set. */
static void tpj_rt_read_checks(tpj_rt_t* rt, int device, tpj_status_t* first) {
  pthread_mutex_lock(&rt->mu);
  size_t n = 0, keep = 0;
  struct tpj_rt_check* mine = NULL;
  for (size_t i = 0; i < rt->nchecks; ++i)
    if (device < 0 || rt->checks[i].flag->device == device) n++;
  if (n) mine = (struct tpj_rt_check*)malloc(n * sizeof(*mine));
  n = 0;
  for (size_t i = 0; i < rt->nchecks; ++i) {
    struct tpj_rt_check c = rt->checks[i];
    if ((device >= 0 && c.flag->device != device) || !mine) rt->checks[keep++] = c;
    else mine[n++] = c;
  }
  rt->nchecks = keep;
  pthread_mutex_unlock(&rt->mu);
  const PJRT_Api* api = rt->api;
  for (size_t i = 0; i < n; ++i) {
    unsigned char bad = 0;
    if (!*first) {
      TPJ_ARGS(PJRT_Buffer_ToHostBuffer_Args, a);
      a.src = (PJRT_Buffer*)mine[i].flag->pjrt;
      a.dst = &bad;
      a.dst_size = 1;
      tpj_status_t s = tpj_rt_status_from_pjrt(api, api->PJRT_Buffer_ToHostBuffer(&a),
                                               "reading a device-side check");
      if (!s) s = tpj_rt_event_await(api, a.event, "reading a device-side check");
      if (s) *first = s;
      else if (bad) *first = tpj_status_make(TPJ_OUT_OF_RANGE, "%s", mine[i].message);
    }
    tpj_rt_buffer_release(mine[i].flag);
    free(mine[i].message);
  }
  free(mine);
}

/* Awaits (and drops) the pending entries on device (-1: all) and stream
 * (-1: all); returns the first failure, with the deferred one first. */
tpj_status_t tpj_rt_await_matching(tpj_rt_t* rt, int device, int64_t stream) {
  pthread_mutex_lock(&rt->mu);
  tpj_status_t first = rt->deferred;
  rt->deferred = NULL;
  size_t keep = 0;
  for (size_t i = 0; i < rt->npending; ++i) {
    tpj_rt_pending_t* p = &rt->pending[i];
    if ((device >= 0 && p->device != device) || (stream >= 0 && p->stream != stream)) {
      rt->pending[keep++] = *p;
      continue;
    }
    tpj_rt_retire(rt, p, &first);
  }
  rt->npending = keep;
  if (keep < 32) rt->prune_at = 64;
  int has_checks = rt->nchecks > 0;
  pthread_mutex_unlock(&rt->mu);
  /* after the launches: each flag is computed by then */
  if (has_checks) tpj_rt_read_checks(rt, device, &first);
  tpj_rt_reap_drain();
  return first;
}

tpj_status_t tpj_rt_synchronize(tpj_rt_t* rt, int device) {
  return tpj_rt_await_matching(rt, device, -1);
}

void tpj_rt_set_thread_stream(int device, int64_t stream) {
  if (device >= 0 && device < TPJ_MAX_DEVICES) t_stream[device] = stream;
}

int64_t tpj_rt_thread_stream(int device) {
  return (device >= 0 && device < TPJ_MAX_DEVICES) ? t_stream[device] : 0;
}

tpj_status_t tpj_rt_stream_synchronize(tpj_rt_t* rt, int device, int64_t stream) {
  TPJ_RETURN_IF_ERROR(tpj_rt_check_device(rt, device));
  return tpj_rt_await_matching(rt, device, stream < 0 ? 0 : stream);
}

/* True when entry p has finished (without waiting). Called with rt->mu held. */
static int tpj_rt_entry_ready_locked(tpj_rt_t* rt, tpj_rt_pending_t* p) {
  if (p->done && tpj_rt_done_time(p->done)) return 1;
  if (!TPJ_RT_HAS(rt->api, PJRT_Event_IsReady)) return 0;
  TPJ_ARGS(PJRT_Event_IsReady_Args, r);
  r.event = p->event;
  PJRT_Error* e = rt->api->PJRT_Event_IsReady(&r);
  if (e) {
    tpj_status_free(tpj_rt_status_from_pjrt(rt->api, e, ""));
    return 0;
  }
  if (r.is_ready) tpj_rt_done_set(p->done);
  return r.is_ready;
}

int tpj_rt_stream_query(tpj_rt_t* rt, int device, int64_t stream) {
  int ready = 1;
  pthread_mutex_lock(&rt->mu);
  for (size_t i = 0; i < rt->npending && ready; ++i) {
    tpj_rt_pending_t* p = &rt->pending[i];
    if (p->device == device && p->stream == stream) ready = tpj_rt_entry_ready_locked(rt, p);
  }
  pthread_mutex_unlock(&rt->mu);
  return ready;
}

struct tpj_rt_mark {
  tpj_rt_t* rt;
  int device;
  int64_t stream;
  int64_t t_record_ns;
  size_t n;
  tpj_rt_done_t** done;    /* launches not yet known done at record time (owned refs) */
};

tpj_status_t tpj_rt_mark_record(tpj_rt_t* rt, int device, int64_t stream,
                                tpj_rt_mark_t** out_mark) {
  *out_mark = NULL;
  TPJ_RETURN_IF_ERROR(tpj_rt_check_device(rt, device));
  tpj_rt_mark_t* m = (tpj_rt_mark_t*)calloc(1, sizeof(*m));
  if (!m) return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  m->rt = rt;
  m->device = device;
  m->stream = stream;
  pthread_mutex_lock(&rt->mu);
  rt->track_done += 1;  /* a count of live marks */
  size_t want = 0;
  for (size_t i = 0; i < rt->npending; ++i)
    if (rt->pending[i].device == device && rt->pending[i].stream == stream) ++want;
  m->done = want ? (tpj_rt_done_t**)calloc(want, sizeof(tpj_rt_done_t*)) : NULL;
  for (size_t i = 0; i < rt->npending && m->done; ++i) {
    tpj_rt_pending_t* p = &rt->pending[i];
    if (p->device != device || p->stream != stream) continue;
    tpj_rt_done_t* d = tpj_rt_done_of_locked(rt, p);
    if (!d) continue;
    if (tpj_rt_done_time(d)) continue;
    __atomic_add_fetch(&d->refcount, 1, __ATOMIC_RELAXED);
    m->done[m->n++] = d;
  }
  pthread_mutex_unlock(&rt->mu);
  if (want && !m->done) {
    pthread_mutex_lock(&rt->mu);
    rt->track_done -= 1;
    pthread_mutex_unlock(&rt->mu);
    free(m);
    return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  }
  m->t_record_ns = tpj_rt_now_ns();
  *out_mark = m;
  return NULL;
}

void tpj_rt_mark_release(tpj_rt_mark_t* m) {
  if (!m) return;
  /* Launches stop paying for done times once no mark is left to ask. */
  pthread_mutex_lock(&m->rt->mu);
  m->rt->track_done -= 1;
  pthread_mutex_unlock(&m->rt->mu);
  for (size_t i = 0; i < m->n; ++i) tpj_rt_done_release(m->done[i]);
  free(m->done);
  free(m);
}

int tpj_rt_mark_query(tpj_rt_t* rt, tpj_rt_mark_t* m) {
  int ready = 1;
  pthread_mutex_lock(&rt->mu);
  for (size_t i = 0; i < m->n && ready; ++i) {
    if (tpj_rt_done_time(m->done[i])) continue;
    ready = 0;
    for (size_t j = 0; j < rt->npending; ++j)
      if (rt->pending[j].done == m->done[i]) ready = tpj_rt_entry_ready_locked(rt, &rt->pending[j]);
  }
  pthread_mutex_unlock(&rt->mu);
  return ready;
}

tpj_status_t tpj_rt_mark_wait(tpj_rt_t* rt, tpj_rt_mark_t* m) {
  tpj_status_t first = NULL;
  pthread_mutex_lock(&rt->mu);
  size_t keep = 0;
  for (size_t j = 0; j < rt->npending; ++j) {
    tpj_rt_pending_t* p = &rt->pending[j];
    int mine = 0;
    for (size_t i = 0; i < m->n && p->done && !mine; ++i) mine = p->done == m->done[i];
    if (!mine) {
      rt->pending[keep++] = *p;
      continue;
    }
    /* A failure is raised here, and again at the next synchronize (sticky,
     * like CUDA's asynchronous errors). */
    tpj_status_t s = NULL;
    tpj_rt_retire(rt, p, &s);
    if (s && !first) {
      first = s;
      if (!rt->deferred)
        rt->deferred = tpj_status_make(tpj_status_code(s), "%s", tpj_status_message(s));
    } else {
      tpj_status_free(s);
    }
  }
  rt->npending = keep;
  pthread_mutex_unlock(&rt->mu);
  /* Entries already awaited by someone else have their time set. */
  for (size_t i = 0; i < m->n; ++i) tpj_rt_done_set(m->done[i]);
  return first;
}

int64_t tpj_rt_mark_time_ns(const tpj_rt_mark_t* m) {
  int64_t t = m->t_record_ns;
  for (size_t i = 0; i < m->n; ++i) {
    int64_t d = tpj_rt_done_time(m->done[i]);
    if (d > t) t = d;
  }
  return t;
}

int tpj_rt_mark_device(const tpj_rt_mark_t* m) { return m->device; }
