/* dist/transport: how the "pjrt" process group moves bytes between ranks.
 * A transport is a filled table of functions (ggml-style); the c10d layer
 * (csrc/distributed/) calls only this table, so a faster transport (XLA's own
 * collectives compiled through exec/) is added without touching that layer.
 * Nothing in here knows about PyTorch. */
#ifndef TPJ_DIST_TRANSPORT_H_
#define TPJ_DIST_TRANSPORT_H_

#include <stdint.h>

#include "base/dtype.h"
#include "base/status.h"
#include "rt/rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The reductions a transport must provide. AVG and PREMUL_SUM are not here:
 * the c10d layer builds them from SUM (a scale before or after), because the
 * host transport's gloo has neither. */
typedef enum {
  TPJ_DIST_SUM = 0,
  TPJ_DIST_PRODUCT,
  TPJ_DIST_MIN,
  TPJ_DIST_MAX,
  TPJ_DIST_BAND,
  TPJ_DIST_BOR,
  TPJ_DIST_BXOR,
} tpj_dist_op_t;

/* One flat operand. A transport with stages_on_host reads and writes `host`
 * (numel elements of dtype, contiguous); a device transport reads `device`
 * and leaves its result in `out_device` (a new buffer, owned by the caller).
 * Data-movement collectives are given bytes (TPJ_U8): they never interpret
 * elements. */
typedef struct {
  void* host;
  tpj_rt_buffer_t* device;      /* borrowed */
  tpj_rt_buffer_t* out_device;  /* set by a device transport; owned by caller */
  tpj_dtype_t dtype;
  int64_t numel;
} tpj_dist_buf_t;

/* An operation in flight. Opaque; one per transport kind. */
typedef struct tpj_dist_work tpj_dist_work_t;

/* Called once when a work finishes: status NULL on success, otherwise owned by
 * the callee. May run on a transport thread, or before work_then returns. */
typedef void (*tpj_dist_done_fn)(void* user, tpj_status_t status);

/* Every collective starts an operation and returns at once with *out_work
 * (owned by the caller: work_release). Operands must stay alive until the
 * work has finished. Ranks are ranks in this transport's group. */
typedef struct tpj_dist_transport {
  const char* name;    /* "gloo (host staging)", "xla" */
  int stages_on_host;  /* 1: operands are host bytes; 0: device buffers */
  int rank, size;
  void* self;

  /* In place: every rank's buf becomes the reduction over ranks. */
  tpj_status_t (*all_reduce)(void* self, tpj_dist_buf_t* buf, tpj_dist_op_t op,
                             tpj_dist_work_t** out_work);
  /* In place: buf on root is copied into buf on every rank. */
  tpj_status_t (*broadcast)(void* self, tpj_dist_buf_t* buf, int root,
                            tpj_dist_work_t** out_work);
  /* In place on root; other ranks' buf is scratch afterwards. */
  tpj_status_t (*reduce)(void* self, tpj_dist_buf_t* buf, tpj_dist_op_t op, int root,
                         tpj_dist_work_t** out_work);
  /* out (size * in.numel) holds rank r's in at block r. */
  tpj_status_t (*all_gather)(void* self, tpj_dist_buf_t* in, tpj_dist_buf_t* out,
                             tpj_dist_work_t** out_work);
  /* in holds size blocks of out.numel; out gets the reduction of block `rank`. */
  tpj_status_t (*reduce_scatter)(void* self, tpj_dist_buf_t* in, tpj_dist_buf_t* out,
                                 tpj_dist_op_t op, tpj_dist_work_t** out_work);
  /* out (root only; NULL elsewhere) holds rank r's in at block r. */
  tpj_status_t (*gather)(void* self, tpj_dist_buf_t* in, tpj_dist_buf_t* out, int root,
                         tpj_dist_work_t** out_work);
  /* in (root only; NULL elsewhere) holds size blocks; rank r gets block r. */
  tpj_status_t (*scatter)(void* self, tpj_dist_buf_t* in, tpj_dist_buf_t* out, int root,
                          tpj_dist_work_t** out_work);
  /* in_counts[r] elements of in go to rank r, in rank order; out_counts[r]
   * elements arrive from rank r. Both arrays have size entries. */
  tpj_status_t (*all_to_all)(void* self, tpj_dist_buf_t* in, tpj_dist_buf_t* out,
                             const int64_t* in_counts, const int64_t* out_counts,
                             tpj_dist_work_t** out_work);
  /* peer -1 in recv: from any rank. */
  tpj_status_t (*send)(void* self, tpj_dist_buf_t* buf, int peer, int tag,
                       tpj_dist_work_t** out_work);
  tpj_status_t (*recv)(void* self, tpj_dist_buf_t* buf, int peer, int tag,
                       tpj_dist_work_t** out_work);
  tpj_status_t (*barrier)(void* self, tpj_dist_work_t** out_work);

  /* Blocks until w finishes or timeout_ms passes (< 0: the group's timeout). */
  tpj_status_t (*work_wait)(void* self, tpj_dist_work_t* w, int64_t timeout_ms);
  /* Arranges for fn(user, status) once w finishes. TPJ_UNIMPLEMENTED when this
   * kind of work cannot notify (then the caller finishes it in work_wait). */
  tpj_status_t (*work_then)(void* self, tpj_dist_work_t* w, tpj_dist_done_fn fn, void* user);
  /* The rank an any-source recv received from (-1 if unknown). */
  int (*work_source_rank)(void* self, tpj_dist_work_t* w);
  void (*work_release)(void* self, tpj_dist_work_t* w);

  /* Frees the transport (and self). */
  void (*destroy)(void* self);
} tpj_dist_transport_t;

#ifdef __cplusplus
}
#endif
#endif /* TPJ_DIST_TRANSPORT_H_ */
