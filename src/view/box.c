/* view/box: a view as a block of a buffer (see box.h). */
#include "view/box.h"

int tpj_view_as_box(const tpj_view_t* v, const int64_t* dims, int ndim, int64_t* start,
                    int64_t* sizes) {
  if (ndim < 1 || ndim > TPJ_MAX_DIMS || v->offset < 0 || tpj_view_numel(v) <= 0) return 0;
  int64_t stride[TPJ_MAX_DIMS];
  int64_t s = 1;
  for (int k = ndim - 1; k >= 0; --k) {
    if (dims[k] <= 0) return 0;
    stride[k] = s;
    s *= dims[k];
  }
  /* the offset names the block's first element */
  int64_t rem = v->offset;
  for (int k = 0; k < ndim; ++k) {
    start[k] = rem / stride[k];
    rem %= stride[k];
    sizes[k] = 1;
    if (start[k] >= dims[k]) return 0;
  }
  /* Buffer dims longer than 1 have strictly decreasing strides, so each view
   * dim can only take the one of its stride. */
  int k = 0;
  for (int i = 0; i < v->ndim; ++i) {
    if (v->sizes[i] == 1) continue;
    while (k < ndim && !(dims[k] > 1 && stride[k] == v->strides[i])) ++k;
    if (k == ndim || start[k] + v->sizes[i] > dims[k]) return 0;
    sizes[k++] = v->sizes[i];
  }
  return 1;
}
