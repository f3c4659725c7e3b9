/* hlo/update: dynamic_update_slice at run-time positions (see update.h). */
#include "hlo/update.h"

#include "hlo/internal.h"

tpj_hlo_value_t tpj_hlo_emit_update_slice_at(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                             tpj_hlo_value_t update,
                                             const tpj_hlo_value_t* starts) {
  if (!tpj_hlo_check_valid(b, &x) || !tpj_hlo_check_valid(b, &update)) return tpj_hlo_kInvalid;
  int ok = x.dtype == update.dtype && x.ndim == update.ndim && x.ndim >= 1;
  for (int i = 0; ok && i < x.ndim; ++i)
    ok = update.dims[i] <= x.dims[i] && tpj_hlo_check_valid(b, &starts[i]) &&
         starts[i].ndim == 0 && starts[i].dtype == TPJ_I64;
  if (!ok) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT,
                                    "dynamic_update_slice: the update, or its 0-d i64 starts, "
                                    "do not match the operand"));
    return tpj_hlo_kInvalid;
  }
  return tpj_hlo_dus_op(b, x, update, starts);
}
