/* ops/limits: the operand limits of one table op, apart from ops.h so that
 * code which only calls ops (exec.h, the C++ glue) does not depend on the
 * table's declarations and rebuild whenever a lowering is added. */
#ifndef TPJ_OPS_LIMITS_H_
#define TPJ_OPS_LIMITS_H_

#define TPJ_OP_MAX_IN 64
#define TPJ_OP_MAX_ATTRS 64
#define TPJ_OP_MAX_OUT 8

#endif /* TPJ_OPS_LIMITS_H_ */
