/* hlo/cpu_reduce: reductions written so that XLA:CPU vectorises them (see
 * target.h for why and when). */
#include <string.h>

#include "hlo/internal.h"
#include "hlo/target.h"

/* Below this many reduced elements per output the in-order chain is short
 * and the plain reduce is as fast. */
#define TPJ_CPU_REDUCE_MIN 32
/* The width a trailing fold stops at: the rest is one short chain. */
#define TPJ_CPU_REDUCE_LANES 16
/* Folds per reduction at most (each doubles the straight-line code that
 * computes one folded value). */
#define TPJ_CPU_FOLD_LEVELS 6
/* Leading reductions of up to this many rows fold down to one row. */
#define TPJ_CPU_FOLD_ALL 1024

static int g_cpu_target;

void tpj_hlo_set_cpu_target(int on) { g_cpu_target = on != 0; }
int tpj_hlo_cpu_target(void) { return g_cpu_target; }

/* Keeps XLA from fusing x's producer into its consumer: the folded rows
 * are computed by one vectorised loop, not again inside the reduce, whose
 * emitter would evaluate them one output element at a time. */
static tpj_hlo_value_t tpj_hlo_barrier(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  if (!tpj_hlo_check_valid(b, &x)) return x;
  tpj_hlo_value_t r = tpj_hlo_new_value(b, x.dtype, x.dims, x.ndim);
  const tpj_hlo_value_t* ops[1] = {&x};
  tpj_hlo_begin_op(b, &r, "stablehlo.optimization_barrier", ops, 1);
  tpj_hlo_end_op(b, &r, ops, 1);
  return r;
}

int tpj_hlo_cpu_reduce(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t init,
                       const int64_t* dims, int ndims, const char* body, tpj_hlo_value_t* out) {
  if (!g_cpu_target || ndims == 0 || !body) return 0;
  if (x.dtype != TPJ_F32 && x.dtype != TPJ_F64) return 0;
  /* associative and commutative bodies only: the folds reorder them */
  if (strcmp(body, "stablehlo.add") != 0 && strcmp(body, "stablehlo.maximum") != 0 &&
      strcmp(body, "stablehlo.minimum") != 0)
    return 0;
  int lead = 1, trail = 1;
  for (int i = 0; i < ndims; ++i) {
    lead &= dims[i] == i;
    trail &= dims[i] == x.ndim - ndims + i;
  }
  int64_t k = 1, m = 1, kept[TPJ_MAX_DIMS];
  int nkept = 0;
  for (int d = 0; d < x.ndim; ++d) {
    int reduced = lead ? d < ndims : d >= x.ndim - ndims;
    if (reduced) k *= x.dims[d];
    else {
      m *= x.dims[d];
      kept[nkept++] = x.dims[d];
    }
  }
  if (!(lead || trail) || m == 0 || k < 2) return 0;
  int all = lead && k <= TPJ_CPU_FOLD_ALL;
  if (!all && k < TPJ_CPU_REDUCE_MIN) return 0;
  int axis = all || !trail ? 0 : 1;
  int64_t shape[2] = {axis ? m : k, axis ? k : m};
  tpj_hlo_value_t v = tpj_hlo_emit_reshape(b, x, shape, 2);
  int64_t st[2] = {1, 1};
  if (all) {
    /* Fold the rows all the way: straight-line adds over contiguous rows,
     * one vectorised loop over the kept extent, no reduce kernel. An odd
     * row count sets its last row aside, combined at the end. */
    tpj_hlo_value_t acc = tpj_hlo_emit_broadcast_in_dim(b, init, &m, 1, NULL);
    int64_t w = k;
    while (w > 1) {
      if (w % 2 != 0) {
        int64_t s0[2] = {w - 1, 0}, l0[2] = {w, m}, row[1] = {m};
        tpj_hlo_value_t last = tpj_hlo_emit_reshape(b, tpj_hlo_emit_slice(b, v, s0, l0, st),
                                                    row, 1);
        acc = tpj_hlo_emit_binary(b, body, acc, last);
        w -= 1;
      }
      int64_t s0[2] = {0, 0}, l0[2] = {w / 2, m}, s1[2] = {w / 2, 0}, l1[2] = {w, m};
      v = tpj_hlo_emit_binary(b, body, tpj_hlo_emit_slice(b, v, s0, l0, st),
                              tpj_hlo_emit_slice(b, v, s1, l1, st));
      w /= 2;
    }
    v = tpj_hlo_emit_binary(b, body, tpj_hlo_emit_reshape(b, v, &m, 1), acc);
    *out = tpj_hlo_emit_reshape(b, v, kept, nkept);
    return 1;
  }
  /* Fold the reduced extent in halves with elementwise ops (vectorised
   * along the contiguous extent) a few times, then reduce what is left in
   * its own kernel: fused into the reduce, the folded values would be
   * computed one output element at a time again. */
  int64_t w = k;
  for (int level = 0; level < TPJ_CPU_FOLD_LEVELS && w > TPJ_CPU_REDUCE_LANES && w % 2 == 0;
       ++level) {
    int64_t s0[2] = {0, 0}, l0[2] = {shape[0], shape[1]}, s1[2] = {0, 0}, l1[2];
    l0[axis] = w / 2;
    s1[axis] = w / 2;
    l1[0] = shape[0];
    l1[1] = shape[1];
    l1[axis] = w;
    v = tpj_hlo_emit_binary(b, body, tpj_hlo_emit_slice(b, v, s0, l0, st),
                            tpj_hlo_emit_slice(b, v, s1, l1, st));
    w /= 2;
    shape[axis] = w;
  }
  if (w == k) return 0;
  int64_t red = axis;
  v = tpj_hlo_reduce_plain(b, tpj_hlo_barrier(b, v), init, &red, 1, body);
  *out = tpj_hlo_emit_reshape(b, v, kept, nkept);
  return 1;
}
