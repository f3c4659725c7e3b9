/* view/box: whether a view is one axis-aligned block of a row-major buffer
 * of the same dtype. A write into such a view is one dynamic_update_slice on
 * the buffer's own shape, which XLA performs in place on a donated buffer
 * (through a flattening reshape, XLA:CPU rewrites the whole buffer and
 * copies it). */
#ifndef TPJ_VIEW_BOX_H_
#define TPJ_VIEW_BOX_H_

#include <stdint.h>

#include "view/view.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when the elements of v (non-empty), in row-major order, are those of the
 * block start[k] <= i_k < start[k] + sizes[k] of a row-major buffer with
 * dims[ndim], in row-major order: v's dims of size > 1 take, in order,
 * distinct buffer dims of the same stride, and the others are 1. Else 0. */
int tpj_view_as_box(const tpj_view_t* v, const int64_t* dims, int ndim, int64_t* start,
                    int64_t* sizes);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_VIEW_BOX_H_ */
