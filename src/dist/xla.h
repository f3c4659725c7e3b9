/* dist/xla: the XLA-collectives transport (transport.h). The ranks of a
 * group are devices of this process's one PJRT client, each rank driven by
 * its own thread. A collective is one replicated program (hlo/collective.h:
 * stablehlo.all_reduce and its siblings) compiled once per (op, dtype,
 * numel, devices) through exec's cache, and launched for every rank at once
 * by the last rank to arrive. Nothing in here knows about PyTorch. */
#ifndef TPJ_DIST_XLA_H_
#define TPJ_DIST_XLA_H_

#include <stdint.h>

#include "dist/transport.h"
#include "exec/exec.h"
#include "rt/rt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tpj_dist_xla_group tpj_dist_xla_group_t;

/* A group of size ranks: rank r drives devices[r] (distinct addressable
 * devices of rt). A rank that waits longer than timeout_ms for the others
 * fails with a message naming the missing ranks. *out has one reference
 * (tpj_dist_xla_group_release). */
tpj_status_t tpj_dist_xla_group_create(tpj_rt_t* rt, tpj_exec_t* ex, const int* devices,
                                       int size, int64_t timeout_ms,
                                       tpj_dist_xla_group_t** out);
void tpj_dist_xla_group_release(tpj_dist_xla_group_t* g);

/* Rank `rank`'s transport over g (which it holds a reference to); every call
 * on it must come from one thread at a time. Device operands only
 * (stages_on_host = 0): a collective blocks until every rank has called it,
 * launches, and returns a work that has finished (its results are device
 * buffers PJRT computes asynchronously). Owned by the caller (destroy). */
tpj_status_t tpj_dist_xla_transport_create(tpj_dist_xla_group_t* g, int rank,
                                           tpj_dist_transport_t** out);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_DIST_XLA_H_ */
