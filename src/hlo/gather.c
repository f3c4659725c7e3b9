/* hlo/gather: the combining 1-D scatter and the 1-D sort used by the
 * indexing-by-tensor lowerings (src/ops/index_gather.c). Generic op syntax, as
 * in builder.c. */
#include "hlo/gather.h"

#include "hlo/internal.h"

tpj_hlo_value_t tpj_hlo_emit_scatter_1d_combine(tpj_hlo_builder_t* b, tpj_hlo_value_t flat,
                                                tpj_hlo_value_t idx, tpj_hlo_value_t upd,
                                                const char* body) {
  /* unique_indices = false: duplicates are combined (or, for an overwrite,
   * one of them wins), never undefined behaviour */
  return tpj_hlo_emit_scatter_1d_with(b, flat, idx, upd, body, 0);
}

tpj_hlo_value_t tpj_hlo_emit_sort_1d(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  if (!tpj_hlo_check_valid(b, &x)) return tpj_hlo_kInvalid;
  if (x.ndim != 1 || !tpj_dtype_is_int(x.dtype)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "sort_1d needs a 1-D integer operand"));
    return tpj_hlo_kInvalid;
  }
  tpj_hlo_value_t r = tpj_hlo_new_value(b, x.dtype, x.dims, 1);
  const tpj_hlo_value_t* ops[1] = {&x};
  tpj_hlo_begin_op(b, &r, "stablehlo.sort", ops, 1);
  tpj_strbuf_t* sb = &b->body;
  /* the comparator region: a < b */
  tpj_strbuf_printf(sb, " ({\n    ^bb0(%%ra%d: ", r.id);
  tpj_hlo_print_type(sb, x.dtype, NULL, 0);
  tpj_strbuf_printf(sb, ", %%rb%d: ", r.id);
  tpj_hlo_print_type(sb, x.dtype, NULL, 0);
  tpj_strbuf_puts(sb, "):\n");
  tpj_strbuf_printf(sb, "      %%rc%d = \"stablehlo.compare\"(%%ra%d, %%rb%d) "
                        "{comparison_direction = #stablehlo<comparison_direction LT>} : (",
                    r.id, r.id, r.id);
  tpj_hlo_print_type(sb, x.dtype, NULL, 0);
  tpj_strbuf_puts(sb, ", ");
  tpj_hlo_print_type(sb, x.dtype, NULL, 0);
  tpj_strbuf_puts(sb, ") -> tensor<i1>\n");
  tpj_strbuf_printf(sb, "      \"stablehlo.return\"(%%rc%d) : (tensor<i1>) -> ()\n    })", r.id);
  tpj_strbuf_puts(sb, " {dimension = 0 : i64, is_stable = false}");
  tpj_hlo_end_op(b, &r, ops, 1);
  return r;
}
