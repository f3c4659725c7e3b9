/* hlo/cpu_reduce: reductions written so that XLA:CPU vectorises them (see
 * target.h for why and when). */
#include <string.h>

#include "hlo/internal.h"
#include "hlo/target.h"

/* Below this many reduced elements per output the in-order chain is short
 * and the plain reduce is as fast. */
#define TPJ_CPU_REDUCE_MIN 32
/* The width max/min folding stops at: the rest is one short chain. */
#define TPJ_CPU_REDUCE_LANES 16

static int g_cpu_target;

void tpj_hlo_set_cpu_target(int on) { g_cpu_target = on != 0; }
int tpj_hlo_cpu_target(void) { return g_cpu_target; }

int tpj_hlo_cpu_reduce(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t init,
                       const int64_t* dims, int ndims, const char* body, tpj_hlo_value_t* out) {
  if (!g_cpu_target || ndims == 0 || !body) return 0;
  if (x.dtype != TPJ_F32 && x.dtype != TPJ_F64) return 0;
  int add = strcmp(body, "stablehlo.add") == 0;
  int fold = strcmp(body, "stablehlo.maximum") == 0 || strcmp(body, "stablehlo.minimum") == 0;
  if (!add && !fold) return 0;
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
  if (!(lead || trail) || k < TPJ_CPU_REDUCE_MIN || m == 0) return 0;
  /* Fold the reduced extent in halves with elementwise ops (vectorised
   * along the kept, contiguous extent), then reduce what is left. */
  if (k % 2 != 0) return 0;
  int axis = trail ? 1 : 0;
  int64_t shape[2] = {trail ? m : k, trail ? k : m};
  tpj_hlo_value_t v = tpj_hlo_emit_reshape(b, x, shape, 2);
  int64_t w = k;
  while (w > TPJ_CPU_REDUCE_LANES && w % 2 == 0) {
    int64_t s0[2] = {0, 0}, l0[2] = {shape[0], shape[1]}, s1[2] = {0, 0}, l1[2];
    l0[axis] = w / 2;
    s1[axis] = w / 2;
    l1[0] = shape[0];
    l1[1] = shape[1];
    l1[axis] = w;
    int64_t st[2] = {1, 1};
    v = tpj_hlo_emit_binary(b, body, tpj_hlo_emit_slice(b, v, s0, l0, st),
                            tpj_hlo_emit_slice(b, v, s1, l1, st));
    w /= 2;
    shape[axis] = w;
  }
  int64_t red = axis;
  v = tpj_hlo_reduce_plain(b, v, init, &red, 1, body);
  *out = tpj_hlo_emit_reshape(b, v, kept, nkept);
  return 1;
}
