/* base/shape: a dense array's type (dtype and dims) and the most dims the
 * core handles. Shared by the builder (hlo/), which needs the bound, and by
 * the runtime (rt/), whose launches take their output shapes in it. */
#ifndef TPJ_BASE_SHAPE_H_
#define TPJ_BASE_SHAPE_H_

#include <stdint.h>

#include "base/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TPJ_MAX_DIMS 16

/* The name keeps its rt_ prefix: rt.h's launch API and every caller spell it
 * so, from before it moved here. */
typedef struct {
  tpj_dtype_t dtype;
  int ndim;
  int64_t dims[TPJ_MAX_DIMS];
} tpj_rt_shape_t;

#ifdef __cplusplus
}
#endif
#endif /* TPJ_BASE_SHAPE_H_ */
