/* view: a tensor view (dtype, sizes, strides, offset, all in elements of the
 * view's dtype) over a storage whose current device buffer has its own dtype
 * and dims. Emits the HLO that reads the view out of that buffer:
 * reshape/slice/transpose/broadcast where the strides allow, a gather only
 * where they are irregular (overlapping windows, non-nesting strides). */
#ifndef TPJ_VIEW_VIEW_H_
#define TPJ_VIEW_VIEW_H_

#include <stdint.h>

#include "hlo/builder.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  tpj_dtype_t dtype;
  int ndim;
  int64_t sizes[TPJ_MAX_DIMS];
  int64_t strides[TPJ_MAX_DIMS];
  int64_t offset;
} tpj_view_t;

int64_t tpj_view_numel(const tpj_view_t* v);
/* True when the view is row-major contiguous (size-1 dims ignored). */
int tpj_view_is_contiguous(const tpj_view_t* v);
/* True when reading v from a buffer of (dtype, dims) is a plain reshape:
 * same dtype, contiguous, offset 0, same element count. */
int tpj_view_is_natural(const tpj_view_t* v, tpj_dtype_t buf_dtype, const int64_t* buf_dims,
                        int buf_ndim);
/* True when the view's strides nest (each stride a multiple of the next
 * smaller one and at least as long as its span), so it reads with slices
 * and reshapes; false means a gather. */
int tpj_view_is_regular(const tpj_view_t* v);
/* Largest element index the view touches + 1 (0 for an empty view). */
int64_t tpj_view_extent(const tpj_view_t* v);

/* Emits HLO that reads v out of buf (a value holding the whole storage).
 * The result has dims v->sizes and dtype v->dtype. Fails (sticky in b) when
 * the view reaches past the storage. */
tpj_hlo_value_t tpj_view_emit_read(tpj_hlo_builder_t* b, tpj_hlo_value_t buf,
                                   const tpj_view_t* v);

/* Emits HLO that writes x (dims v->sizes, dtype v->dtype) into view v of
 * the storage held by buf, returning the whole new storage as a 1-D array of
 * v->dtype: a dynamic_update_slice when the view is one contiguous block, a
 * scatter otherwise. A view whose elements overlap (stride 0 on a dim of
 * size > 1) cannot be written and fails. */
tpj_hlo_value_t tpj_view_emit_write(tpj_hlo_builder_t* b, tpj_hlo_value_t buf,
                                    const tpj_view_t* v, tpj_hlo_value_t x);

/* The view packed into / unpacked from op attributes (2 * ndim + 3 values),
 * so a lowering can carry a destination view. Returns the count used, or -1
 * when it does not fit in cap / the attributes are malformed. */
int tpj_view_to_attrs(const tpj_view_t* v, int64_t* attrs, int cap);
int tpj_view_from_attrs(const int64_t* attrs, int n, tpj_view_t* out_v);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_VIEW_VIEW_H_ */
