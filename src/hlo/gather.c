/* hlo/gather: the combining 1-D scatter and the 1-D sort used by the
 * indexing-by-tensor lowerings (src/ops/gather.c). Generic op syntax, as
 * in builder.c. */
#include "hlo/gather.h"

#include "hlo/internal.h"

tpj_hlo_value_t tpj_hlo_emit_scatter_1d_combine(tpj_hlo_builder_t* b, tpj_hlo_value_t flat,
                                                tpj_hlo_value_t idx, tpj_hlo_value_t upd,
                                                const char* body) {
  if (!tpj_hlo_check_valid(b, &flat) || !tpj_hlo_check_valid(b, &idx) ||
      !tpj_hlo_check_valid(b, &upd))
    return tpj_hlo_kInvalid;
  if (flat.ndim != 1 || idx.dtype != TPJ_I64 || upd.dtype != flat.dtype ||
      !tpj_hlo_same_shape(&idx, &upd)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT,
                                    "scatter_1d_combine needs a 1-D operand, int64 indices and "
                                    "updates of the indices' shape and the operand's dtype"));
    return tpj_hlo_kInvalid;
  }
  tpj_hlo_value_t r = tpj_hlo_new_value(b, flat.dtype, flat.dims, 1);
  const tpj_hlo_value_t* ops[3] = {&flat, &idx, &upd};
  tpj_hlo_begin_op(b, &r, "stablehlo.scatter", ops, 3);
  tpj_strbuf_t* sb = &b->body;
  tpj_hlo_print_region(sb, r.id, flat.dtype, body);
  /* unique_indices = false: duplicates are combined (or, for an overwrite,
   * one of them wins), never undefined behaviour */
  tpj_strbuf_printf(sb,
                    " {indices_are_sorted = false, scatter_dimension_numbers = "
                    "#stablehlo.scatter<inserted_window_dims = [0], "
                    "scatter_dims_to_operand_dims = [0], index_vector_dim = %d>, "
                    "unique_indices = false}",
                    idx.ndim);
  tpj_hlo_end_op(b, &r, ops, 3);
  return r;
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
