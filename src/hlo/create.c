/* hlo/create: emitters for the tensor creation and shape family. */
#include "hlo/create.h"

#include "hlo/internal.h"

tpj_hlo_value_t tpj_hlo_emit_reverse(tpj_hlo_builder_t* b, tpj_hlo_value_t x, const int64_t* dims,
                                     int ndims) {
  if (!tpj_hlo_check_valid(b, &x)) return tpj_hlo_kInvalid;
  int seen[TPJ_MAX_DIMS] = {0};
  for (int i = 0; i < ndims; ++i) {
    if (dims[i] < 0 || dims[i] >= x.ndim || seen[dims[i]]) {
      tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "reverse: bad dimension %lld",
                                      (long long)dims[i]));
      return tpj_hlo_kInvalid;
    }
    seen[dims[i]] = 1;
  }
  if (ndims == 0) return x;
  tpj_hlo_value_t r = tpj_hlo_new_value(b, x.dtype, x.dims, x.ndim);
  const tpj_hlo_value_t* ops[1] = {&x};
  tpj_hlo_begin_op(b, &r, "stablehlo.reverse", ops, 1);
  tpj_strbuf_puts(&b->body, " {dimensions = ");
  tpj_hlo_print_i64_array(&b->body, dims, ndims);
  tpj_strbuf_puts(&b->body, "}");
  tpj_hlo_end_op(b, &r, ops, 1);
  return r;
}
