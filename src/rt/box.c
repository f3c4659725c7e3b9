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

void tpj_box_set_buffer(tpj_box_t* box, tpj_rt_buffer_t* buf) {
  tpj_rt_buffer_t* old = box->buf;
  box->buf = buf;
  tpj_rt_buffer_release(old);
}

tpj_status_t tpj_box_to_host(tpj_rt_t* rt, const tpj_box_t* box, void* dst) {
  if (box->nbytes == 0) return NULL;
  if (!box->buf) {
    memset(dst, 0, box->nbytes);
    return NULL;
  }
  size_t have = tpj_rt_buffer_nbytes(box->buf);
  if (have != box->nbytes)
    return tpj_status_make(TPJ_INTERNAL, "storage of %zu bytes holds a buffer of %zu bytes",
                           box->nbytes, have);
  return tpj_rt_buffer_to_host(rt, box->buf, dst, box->nbytes);
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
