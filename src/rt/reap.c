/* rt/reap: one thread that destroys dropped PJRT buffers (see reap.h).
 *
 * Releases arrive at op rate, so the reaper works in batches: the first
 * buffer into an empty queue wakes it, it then lets more gather for up to
 * TPJ_REAP_GATHER_NS (or until TPJ_REAP_BATCH are queued) and destroys them
 * all. A releasing thread pays a lock and a push, and a wake-up about once
 * per batch. A drain cuts the gathering short. */
#include "rt/reap.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#define TPJ_REAP_BATCH 64
#define TPJ_REAP_GATHER_NS 500000L

typedef struct {
  const PJRT_Api* api;
  PJRT_Buffer* buf;
} tpj_reap_item_t;

enum { REAP_OFF, REAP_IDLE, REAP_GATHER, REAP_BUSY };

static struct {
  pthread_mutex_t mu;
  pthread_cond_t work;  /* the reaper waits here */
  pthread_cond_t done;  /* drains wait here */
  tpj_reap_item_t* items;
  size_t n, cap;
  long queued, destroyed;  /* totals; a drain waits for destroyed >= its queued */
  int draining;
  int state;
} g_reap = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
            NULL, 0, 0, 0, 0, 0, REAP_OFF};

/* The reaper has no one to report a failure to: errors are dropped. */
static void tpj_reap_drop_error(const PJRT_Api* api, PJRT_Error* e) {
  if (!e) return;
  PJRT_Error_Destroy_Args x = {0};
  x.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE;
  x.error = e;
  api->PJRT_Error_Destroy(&x);
}

static void tpj_reap_destroy(const PJRT_Api* api, PJRT_Buffer* b) {
  PJRT_Buffer_Destroy_Args d = {0};
  d.struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE;
  d.buffer = b;
  tpj_reap_drop_error(api, api->PJRT_Buffer_Destroy(&d));
}

static void tpj_reap_deadline(struct timespec* ts) {
  clock_gettime(CLOCK_MONOTONIC, ts);
  ts->tv_nsec += TPJ_REAP_GATHER_NS;
  if (ts->tv_nsec >= 1000000000L) {
    ts->tv_sec += 1;
    ts->tv_nsec -= 1000000000L;
  }
}

static void* tpj_reap_main(void* arg) {
  (void)arg;
  pthread_mutex_lock(&g_reap.mu);
  for (;;) {
    while (g_reap.n == 0) {
      g_reap.state = REAP_IDLE;
      pthread_cond_wait(&g_reap.work, &g_reap.mu);
    }
    if (g_reap.n < TPJ_REAP_BATCH && !g_reap.draining) {
      struct timespec ts;
      tpj_reap_deadline(&ts);
      g_reap.state = REAP_GATHER;
      while (g_reap.n < TPJ_REAP_BATCH && !g_reap.draining &&
             pthread_cond_timedwait(&g_reap.work, &g_reap.mu, &ts) != ETIMEDOUT) {
      }
    }
    g_reap.state = REAP_BUSY;
    tpj_reap_item_t* batch = g_reap.items;
    size_t n = g_reap.n;
    g_reap.items = NULL;
    g_reap.n = g_reap.cap = 0;
    pthread_mutex_unlock(&g_reap.mu);
    for (size_t i = 0; i < n; ++i) tpj_reap_destroy(batch[i].api, batch[i].buf);
    free(batch);
    pthread_mutex_lock(&g_reap.mu);
    g_reap.destroyed += (long)n;
    pthread_cond_broadcast(&g_reap.done);
  }
  return NULL;
}

/* A forked child has no reaper thread (only the forking thread survives):
 * it starts its own on first use. The parent's queued buffers are not the
 * child's to destroy. */
static void tpj_reap_after_fork_child(void) {
  pthread_mutex_init(&g_reap.mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&g_reap.work, &ca);
  pthread_condattr_destroy(&ca);
  pthread_cond_init(&g_reap.done, NULL);
  g_reap.items = NULL;
  g_reap.n = g_reap.cap = 0;
  g_reap.queued = g_reap.destroyed = 0;
  g_reap.draining = 0;
  g_reap.state = REAP_OFF;
}

/* Set at exit: buffers are destroyed inline from then on. */
static atomic_int g_exiting;

/* At exit, before the plugin's own static objects go (their destructors
 * were registered before this, so run after it): destroy what is queued,
 * and let nothing reach the thread again. */
static void tpj_reap_at_exit(void) {
  atomic_store(&g_exiting, 1);
  tpj_rt_reap_drain();
}

/* Starts the thread; called with the lock held. 0 on failure. */
static int tpj_reap_start_locked(void) {
  static int registered;
  if (!registered) {
    atexit(tpj_reap_at_exit);
    /* timed waits on CLOCK_MONOTONIC: re-create the condition with it */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_destroy(&g_reap.work);
    pthread_cond_init(&g_reap.work, &ca);
    pthread_condattr_destroy(&ca);
    pthread_atfork(NULL, NULL, tpj_reap_after_fork_child);
    registered = 1;
  }
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t th;
  int rc = pthread_create(&th, &attr, tpj_reap_main, NULL);
  pthread_attr_destroy(&attr);
  if (rc != 0) return 0;
  pthread_setname_np(th, "tpj_reap");
  g_reap.state = REAP_BUSY;  /* it looks at the queue before it sleeps */
  return 1;
}

/* Launches that had not finished when PJRT_LoadedExecutable_Execute
 * returned and have not finished since (their OnReady callback). */
static atomic_long g_running;

static void tpj_reap_launch_done(PJRT_Error* error, void* user_arg) {
  tpj_reap_drop_error((const PJRT_Api*)user_arg, error);
  atomic_fetch_sub(&g_running, 1);
}

void tpj_rt_reap_track_launch(const PJRT_Api* api, PJRT_Event* done) {
  if (!done) {
    atomic_fetch_add(&g_running, 1);  /* unknown: count it running for good */
    return;
  }
  PJRT_Event_IsReady_Args r = {0};
  r.struct_size = PJRT_Event_IsReady_Args_STRUCT_SIZE;
  r.event = done;
  PJRT_Error* e = api->PJRT_Event_IsReady(&r);
  if (!e && r.is_ready) return;
  tpj_reap_drop_error(api, e);  /* not known to be done: count it until the callback */
  atomic_fetch_add(&g_running, 1);
  PJRT_Event_OnReady_Args a = {0};
  a.struct_size = PJRT_Event_OnReady_Args_STRUCT_SIZE;
  a.event = done;
  a.callback = tpj_reap_launch_done;
  a.user_arg = (void*)api;
  /* on failure no callback will come: it stays counted (buffers go to the
   * reaper, which is only slower) */
  tpj_reap_drop_error(api, api->PJRT_Event_OnReady(&a));
}

void tpj_rt_reap_buffer(const PJRT_Api* api, PJRT_Buffer* b) {
  /* Nothing running: no launch can hold the buffer, and destroying it here
   * is cheaper than handing it over (and lets the allocator reuse the
   * memory at once, which small eager ops depend on). */
  if (atomic_load_explicit(&g_running, memory_order_acquire) == 0 || atomic_load(&g_exiting)) {
    tpj_reap_destroy(api, b);
    return;
  }
  pthread_mutex_lock(&g_reap.mu);
  if (g_reap.state == REAP_OFF && !tpj_reap_start_locked()) {
    pthread_mutex_unlock(&g_reap.mu);
    tpj_reap_destroy(api, b);
    return;
  }
  if (g_reap.n == g_reap.cap) {
    size_t cap = g_reap.cap ? 2 * g_reap.cap : 64;
    tpj_reap_item_t* p = (tpj_reap_item_t*)realloc(g_reap.items, cap * sizeof(*p));
    if (!p) {
      pthread_mutex_unlock(&g_reap.mu);
      tpj_reap_destroy(api, b);
      return;
    }
    g_reap.items = p;
    g_reap.cap = cap;
  }
  g_reap.items[g_reap.n].api = api;
  g_reap.items[g_reap.n].buf = b;
  g_reap.n++;
  g_reap.queued++;
  /* one wake-up per batch: when the first buffer arrives, and when the
   * gathering one fills (the reaper may take a while to run: no more
   * signals meanwhile) */
  if (g_reap.state == REAP_IDLE || (g_reap.state == REAP_GATHER && g_reap.n == TPJ_REAP_BATCH)) {
    g_reap.state = REAP_BUSY;
    pthread_cond_signal(&g_reap.work);
  }
  pthread_mutex_unlock(&g_reap.mu);
}

void tpj_rt_reap_drain(void) {
  pthread_mutex_lock(&g_reap.mu);
  if (g_reap.state != REAP_OFF) {
    long target = g_reap.queued;
    g_reap.draining++;
    pthread_cond_signal(&g_reap.work);
    while (g_reap.destroyed < target) pthread_cond_wait(&g_reap.done, &g_reap.mu);
    g_reap.draining--;
  }
  pthread_mutex_unlock(&g_reap.mu);
}

long tpj_rt_reap_pending(void) {
  pthread_mutex_lock(&g_reap.mu);
  long n = g_reap.queued - g_reap.destroyed;
  pthread_mutex_unlock(&g_reap.mu);
  return n;
}
