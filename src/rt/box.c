#include "rt/box.h"
#include "rt/track.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define TPJ_BOX_MAX_DEVICES 256

static pthread_mutex_t g_box_mu = PTHREAD_MUTEX_INITIALIZER;
static tpj_box_stats_t g_stats[TPJ_BOX_MAX_DEVICES];
static int64_t g_totals[TPJ_BOX_MAX_DEVICES][2];  /* bytes created, bytes destroyed */

static tpj_box_stats_t* tpj_box_slot(int device) {
  if (device < 0 || device >= TPJ_BOX_MAX_DEVICES) return NULL;
  return &g_stats[device];
}

tpj_box_t* tpj_box_create(size_t nbytes, int device) {
  tpj_box_t* box = (tpj_box_t*)calloc(1, sizeof(*box));
  if (!box) return NULL;
  box->nbytes = nbytes;
  box->device = device;
  pthread_mutex_lock(&g_box_mu);
  tpj_box_stats_t* s = tpj_box_slot(device);
  if (s) {
    s->allocated += (int64_t)nbytes;
    s->num_allocs += 1;
    g_totals[device][0] += (int64_t)nbytes;
    if (s->allocated > s->peak) s->peak = s->allocated;
  }
  pthread_mutex_unlock(&g_box_mu);
  return box;
}

void tpj_box_destroy(tpj_box_t* box) {
  if (!box) return;
  pthread_mutex_lock(&g_box_mu);
  tpj_box_stats_t* s = tpj_box_slot(box->device);
  if (s) {
    s->allocated -= (int64_t)box->nbytes;
    s->num_frees += 1;
    g_totals[box->device][1] += (int64_t)box->nbytes;
  }
  pthread_mutex_unlock(&g_box_mu);
  tpj_rt_buffer_release(box->buf);
  free(box);
}

/* The buffer locks: a few stripes, chosen by the box's address. Recursive,
 * so a writer holding its box's lock may install, read or acquire through
 * the same calls everyone uses. */
#define TPJ_BOX_STRIPES 64
static pthread_mutex_t g_stripes[TPJ_BOX_STRIPES];
static pthread_once_t g_stripes_once = PTHREAD_ONCE_INIT;

static void tpj_box_stripes_init(void) {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  for (int i = 0; i < TPJ_BOX_STRIPES; ++i) pthread_mutex_init(&g_stripes[i], &a);
  pthread_mutexattr_destroy(&a);
}

static int tpj_box_stripe(const tpj_box_t* box) {
  uint64_t h = (uint64_t)(uintptr_t)box * 0x9e3779b97f4a7c15ull;
  return (int)(h >> 58); /* the top 6 bits: 0 .. 63 */
}

void tpj_box_lock(const tpj_box_t* box) {
  pthread_once(&g_stripes_once, tpj_box_stripes_init);
  pthread_mutex_lock(&g_stripes[tpj_box_stripe(box)]);
}

void tpj_box_unlock(const tpj_box_t* box) { pthread_mutex_unlock(&g_stripes[tpj_box_stripe(box)]); }

static void tpj_box_stripe_set(tpj_box_t* const* boxes, int n, unsigned char* used) {
  memset(used, 0, TPJ_BOX_STRIPES);
  for (int i = 0; i < n; ++i)
    if (boxes[i]) used[tpj_box_stripe(boxes[i])] = 1;
}

void tpj_box_lock_many(tpj_box_t* const* boxes, int n) {
  unsigned char used[TPJ_BOX_STRIPES];
  pthread_once(&g_stripes_once, tpj_box_stripes_init);
  tpj_box_stripe_set(boxes, n, used);
  for (int i = 0; i < TPJ_BOX_STRIPES; ++i)
    if (used[i]) pthread_mutex_lock(&g_stripes[i]);
}

void tpj_box_unlock_many(tpj_box_t* const* boxes, int n) {
  unsigned char used[TPJ_BOX_STRIPES];
  tpj_box_stripe_set(boxes, n, used);
  for (int i = TPJ_BOX_STRIPES - 1; i >= 0; --i)
    if (used[i]) pthread_mutex_unlock(&g_stripes[i]);
}

tpj_rt_buffer_t* tpj_box_acquire_buffer(tpj_box_t* box) {
  tpj_box_lock(box);
  tpj_rt_buffer_t* b = box->buf;
  tpj_rt_buffer_retain(b);
  tpj_box_unlock(box);
  return b;
}

void tpj_box_set_buffer(tpj_box_t* box, tpj_rt_buffer_t* buf) {
  tpj_box_lock(box);
  tpj_rt_buffer_t* old = box->buf;
  box->buf = buf;
  tpj_box_unlock(box);
  tpj_rt_buffer_release(old);
}

int tpj_box_set_buffer_if_empty(tpj_box_t* box, tpj_rt_buffer_t* buf) {
  tpj_box_lock(box);
  int empty = box->buf == NULL;
  if (empty) box->buf = buf;
  tpj_box_unlock(box);
  return empty;
}

tpj_status_t tpj_box_to_host(tpj_rt_t* rt, const tpj_box_t* box, void* dst) {
  if (box->nbytes == 0) return NULL;
  tpj_rt_buffer_t* buf = tpj_box_acquire_buffer((tpj_box_t*)box);
  if (!buf) {
    memset(dst, 0, box->nbytes);
    return NULL;
  }
  size_t have = tpj_rt_buffer_nbytes(buf);
  tpj_status_t s =
      have != box->nbytes
          ? tpj_status_make(TPJ_INTERNAL, "storage of %zu bytes holds a buffer of %zu bytes",
                            box->nbytes, have)
          : tpj_rt_buffer_to_host(rt, buf, dst, box->nbytes);
  tpj_rt_buffer_release(buf);
  return s;
}

tpj_status_t tpj_box_from_host(tpj_rt_t* rt, tpj_box_t* box, tpj_dtype_t dtype,
                               const int64_t* dims, int ndim, const void* data) {
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= dims[i];
  if ((size_t)n * tpj_dtype_size(dtype) != box->nbytes)
    return tpj_status_make(TPJ_INVALID_ARGUMENT, "writing %lld bytes into a storage of %zu bytes",
                           (long long)((size_t)n * tpj_dtype_size(dtype)), box->nbytes);
  tpj_rt_buffer_t* buf = NULL;
  TPJ_RETURN_IF_ERROR(tpj_rt_buffer_from_host(rt, box->device, dtype, dims, ndim, data, &buf));
  tpj_box_set_buffer(box, buf);
  return NULL;
}

void tpj_box_get_stats(int device, tpj_box_stats_t* out) {
  memset(out, 0, sizeof(*out));
  pthread_mutex_lock(&g_box_mu);
  tpj_box_stats_t* s = tpj_box_slot(device);
  if (s) *out = *s;
  pthread_mutex_unlock(&g_box_mu);
}

void tpj_box_reset_peak(int device) {
  pthread_mutex_lock(&g_box_mu);
  tpj_box_stats_t* s = tpj_box_slot(device);
  if (s) s->peak = s->allocated;
  pthread_mutex_unlock(&g_box_mu);
}

void tpj_box_byte_totals(int device, int64_t* out_allocated, int64_t* out_freed) {
  *out_allocated = *out_freed = 0;
  pthread_mutex_lock(&g_box_mu);
  if (tpj_box_slot(device)) {
    *out_allocated = g_totals[device][0];
    *out_freed = g_totals[device][1];
  }
  pthread_mutex_unlock(&g_box_mu);
}
