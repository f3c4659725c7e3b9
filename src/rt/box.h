/* rt/box: the storage box. A PyTorch storage on `tpu` is one box: it owns the
 * storage's current (immutable) device buffer and knows its byte size. The
 * c10 DataPtr points at the box, never at device memory. A box with no
 * buffer reads as zeros. Writing a storage swaps in a new buffer, so every
 * alias of the storage sees it. The per-device byte counters here are what
 * torch.tpu.memory_allocated() reports. */
#ifndef TPJ_RT_BOX_H_
#define TPJ_RT_BOX_H_

#include <stddef.h>
#include <stdint.h>

#include "rt/rt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  tpj_rt_buffer_t* buf;  /* owned reference; NULL until first written */
  size_t nbytes;
  int device;
} tpj_box_t;

/* A new box (owned by the caller, tpj_box_destroy); NULL when out of memory. */
tpj_box_t* tpj_box_create(size_t nbytes, int device);
void tpj_box_destroy(tpj_box_t* box);
/* Threads. Another thread may swap a box's buffer at any time, releasing
 * the old one, so `box->buf` is read only under the box's lock: through
 * tpj_box_acquire_buffer (a reference of the reader's own) or between
 * tpj_box_lock/unlock. A writer that donates the buffer holds the lock from
 * its "sole holder" check through installing the result, so no reader can
 * take a reference to a buffer that is being donated. The locks are a fixed
 * set of stripes (recursive); a thread never holds two unless it takes them
 * with tpj_box_lock_many (in address order). */

/* A new reference to the box's buffer (the caller releases it); NULL when
 * the box has none. */
tpj_rt_buffer_t* tpj_box_acquire_buffer(tpj_box_t* box);
/* Installs buf (the caller's reference passes to the box), releasing the
 * previous buffer. */
void tpj_box_set_buffer(tpj_box_t* box, tpj_rt_buffer_t* buf);
/* Installs buf only if the box has no buffer yet; returns 1 when it did
 * (the reference passed to the box), 0 otherwise (the caller keeps it). */
int tpj_box_set_buffer_if_empty(tpj_box_t* box, tpj_rt_buffer_t* buf);
void tpj_box_lock(const tpj_box_t* box);
void tpj_box_unlock(const tpj_box_t* box);
/* Locks the boxes' stripes, each once, in a fixed order; unlock_many undoes
 * it. boxes may repeat and hold NULLs. */
void tpj_box_lock_many(tpj_box_t* const* boxes, int n);
void tpj_box_unlock_many(tpj_box_t* const* boxes, int n);

/* Copies the storage's bytes to dst (box->nbytes), waiting; zeros when the
 * box has no buffer. */
tpj_status_t tpj_box_to_host(tpj_rt_t* rt, const tpj_box_t* box, void* dst);
/* Replaces the storage's contents with nbytes of host data laid out as
 * (dtype, dims); the bytes must equal box->nbytes. */
tpj_status_t tpj_box_from_host(tpj_rt_t* rt, tpj_box_t* box, tpj_dtype_t dtype,
                               const int64_t* dims, int ndim, const void* data);

typedef struct {
  int64_t allocated;       /* bytes in live boxes */
  int64_t peak;            /* since the last reset */
  int64_t num_allocs;      /* boxes ever created */
  int64_t num_frees;
} tpj_box_stats_t;

void tpj_box_get_stats(int device, tpj_box_stats_t* out);
void tpj_box_reset_peak(int device);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_RT_BOX_H_ */
