/* hlo/sampling: a dense constant written as MLIR's raw hex form
 * (dense<"0x...">), which holds the exact bits of every element and needs
 * no nesting by dims. */
#include "hlo/sampling.h"

#include "hlo/internal.h"

tpj_hlo_value_t tpj_hlo_emit_const_array(tpj_hlo_builder_t* b, tpj_dtype_t dt,
                                         const int64_t* dims, int ndim, const void* data) {
  if (b->status || !tpj_hlo_check_dims(b, dims, ndim)) return tpj_hlo_kInvalid;
  if (dt == TPJ_BOOL || !(tpj_dtype_is_float(dt) || tpj_dtype_is_int(dt))) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "const_array: unsupported dtype %s",
                                    tpj_dtype_name(dt)));
    return tpj_hlo_kInvalid;
  }
  tpj_hlo_value_t r = tpj_hlo_new_value(b, dt, dims, ndim);
  size_t n = (size_t)tpj_hlo_numel(&r) * tpj_dtype_size(dt);
  const unsigned char* p = (const unsigned char*)data;
  static const char kHex[] = "0123456789ABCDEF";
  tpj_hlo_begin_op(b, &r, "stablehlo.constant", NULL, 0);
  tpj_strbuf_puts(&b->body, " {value = dense<\"0x");
  char chunk[129];
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    chunk[k++] = kHex[p[i] >> 4];
    chunk[k++] = kHex[p[i] & 15];
    if (k == 128 || i + 1 == n) {
      chunk[k] = '\0';
      tpj_strbuf_puts(&b->body, chunk);
      k = 0;
    }
  }
  tpj_strbuf_puts(&b->body, "\"> : ");
  tpj_hlo_print_value_type(&b->body, &r);
  tpj_strbuf_puts(&b->body, "}");
  tpj_hlo_end_op(b, &r, NULL, 0);
  return r;
}
