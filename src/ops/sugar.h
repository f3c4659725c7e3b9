/* ops/sugar: shorthand for lowering bodies that compose many StableHLO ops.
 * Include after ops/ops.h in a lowering file whose builder is a local named
 * `b`; the macros only spell the builder calls shorter, so a formula reads
 * like CPU's kernel it follows. */
#ifndef TPJ_OPS_SUGAR_H_
#define TPJ_OPS_SUGAR_H_

#include "ops/ops.h"

#define ADD(x, y) tpj_hlo_emit_binary(b, "stablehlo.add", x, y)
#define SUB(x, y) tpj_hlo_emit_binary(b, "stablehlo.subtract", x, y)
#define MUL(x, y) tpj_hlo_emit_binary(b, "stablehlo.multiply", x, y)
#define DIV(x, y) tpj_hlo_emit_binary(b, "stablehlo.divide", x, y)
#define AND(x, y) tpj_hlo_emit_binary(b, "stablehlo.and", x, y)
#define OR(x, y) tpj_hlo_emit_binary(b, "stablehlo.or", x, y)
#define CMP(x, y, d) tpj_hlo_emit_compare(b, x, y, d)
#define SEL(c, x, y) tpj_hlo_emit_select(b, c, x, y)

/* the constant v in x's dtype, broadcast to x's dims */
static inline tpj_hlo_value_t tpj_ops_const_like(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                                 double v) {
  return tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_f64(b, x.dtype, v), x.dims, x.ndim);
}

#endif /* TPJ_OPS_SUGAR_H_ */
