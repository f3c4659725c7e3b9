/* hlo/random: rng_bit_generator and sort-by-key emitters (see random.h). */
#include "hlo/random.h"

#include "hlo/internal.h"

/* "tensor<2x3xui32>": a type with an element name tpj_dtype_t lacks. */
static void tpj_hlo_print_named_type(tpj_strbuf_t* sb, const char* elt, const int64_t* dims,
                                     int ndim) {
  tpj_strbuf_puts(sb, "tensor<");
  for (int i = 0; i < ndim; ++i) tpj_strbuf_printf(sb, "%lldx", (long long)dims[i]);
  tpj_strbuf_puts(sb, elt);
  tpj_strbuf_puts(sb, ">");
}

tpj_hlo_value_t tpj_hlo_emit_rng_bits(tpj_hlo_builder_t* b, tpj_hlo_value_t key, tpj_dtype_t dt,
                                      const int64_t* dims, int ndim) {
  if (!tpj_hlo_check_valid(b, &key) || !tpj_hlo_check_dims(b, dims, ndim))
    return tpj_hlo_kInvalid;
  if (key.dtype != TPJ_I64 || key.ndim != 1 || key.dims[0] != 2 ||
      (dt != TPJ_I32 && dt != TPJ_I64)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT,
                                    "rng_bits needs an int64[2] key and int32 or int64 bits"));
    return tpj_hlo_kInvalid;
  }
  const char* ubits = dt == TPJ_I32 ? "ui32" : "ui64";
  int state = b->next_id++;
  int new_state = b->next_id++; /* unused: the host advances the counter */
  int raw = b->next_id++;
  tpj_hlo_value_t r = tpj_hlo_new_value(b, dt, dims, ndim);
  tpj_strbuf_t* sb = &b->body;
  tpj_strbuf_printf(sb, "    %%v%d = \"stablehlo.bitcast_convert\"(", state);
  tpj_hlo_print_ref(sb, &key);
  tpj_strbuf_puts(sb, ") : (tensor<2xi64>) -> tensor<2xui64>\n");
  tpj_strbuf_printf(sb,
                    "    %%v%d, %%v%d = \"stablehlo.rng_bit_generator\"(%%v%d) {rng_algorithm = "
                    "#stablehlo<rng_algorithm THREE_FRY>} : (tensor<2xui64>) -> "
                    "(tensor<2xui64>, ",
                    new_state, raw, state);
  tpj_hlo_print_named_type(sb, ubits, dims, ndim);
  tpj_strbuf_puts(sb, ")\n    ");
  tpj_hlo_print_ref(sb, &r);
  tpj_strbuf_printf(sb, " = \"stablehlo.bitcast_convert\"(%%v%d) : (", raw);
  tpj_hlo_print_named_type(sb, ubits, dims, ndim);
  tpj_strbuf_puts(sb, ") -> ");
  tpj_hlo_print_value_type(sb, &r);
  tpj_strbuf_puts(sb, "\n");
  return r;
}

tpj_hlo_value_t tpj_hlo_emit_sort_by_key(tpj_hlo_builder_t* b, tpj_hlo_value_t keys,
                                         tpj_hlo_value_t values, int dim) {
  if (!tpj_hlo_check_valid(b, &keys) || !tpj_hlo_check_valid(b, &values))
    return tpj_hlo_kInvalid;
  if (!tpj_hlo_same_shape(&keys, &values) || dim < 0 || dim >= keys.ndim ||
      !(tpj_dtype_is_int(keys.dtype) || tpj_dtype_is_float(keys.dtype))) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT,
                                    "sort_by_key needs real keys and values of one shape"));
    return tpj_hlo_kInvalid;
  }
  int sorted_keys = b->next_id++; /* unused */
  tpj_hlo_value_t r = tpj_hlo_new_value(b, values.dtype, values.dims, values.ndim);
  int id = r.id;
  tpj_strbuf_t* sb = &b->body;
  tpj_strbuf_printf(sb, "    %%v%d, ", sorted_keys);
  tpj_hlo_print_ref(sb, &r);
  tpj_strbuf_puts(sb, " = \"stablehlo.sort\"(");
  tpj_hlo_print_ref(sb, &keys);
  tpj_strbuf_puts(sb, ", ");
  tpj_hlo_print_ref(sb, &values);
  /* the comparator sees (key a, key b, value a, value b) as 0-d tensors */
  tpj_strbuf_printf(sb, ") ({\n    ^bb0(%%sa%d: ", id);
  tpj_hlo_print_type(sb, keys.dtype, NULL, 0);
  tpj_strbuf_printf(sb, ", %%sb%d: ", id);
  tpj_hlo_print_type(sb, keys.dtype, NULL, 0);
  tpj_strbuf_printf(sb, ", %%sc%d: ", id);
  tpj_hlo_print_type(sb, values.dtype, NULL, 0);
  tpj_strbuf_printf(sb, ", %%sd%d: ", id);
  tpj_hlo_print_type(sb, values.dtype, NULL, 0);
  tpj_strbuf_printf(sb,
                    "):\n      %%se%d = \"stablehlo.compare\"(%%sa%d, %%sb%d) "
                    "{comparison_direction = #stablehlo<comparison_direction LT>} : (",
                    id, id, id);
  tpj_hlo_print_type(sb, keys.dtype, NULL, 0);
  tpj_strbuf_puts(sb, ", ");
  tpj_hlo_print_type(sb, keys.dtype, NULL, 0);
  tpj_strbuf_printf(sb, ") -> tensor<i1>\n      \"stablehlo.return\"(%%se%d) : (tensor<i1>) -> ()\n"
                        "    }) {dimension = %d : i64, is_stable = true} : (",
                    id, dim);
  tpj_hlo_print_value_type(sb, &keys);
  tpj_strbuf_puts(sb, ", ");
  tpj_hlo_print_value_type(sb, &values);
  tpj_strbuf_puts(sb, ") -> (");
  tpj_hlo_print_value_type(sb, &keys);
  tpj_strbuf_puts(sb, ", ");
  tpj_hlo_print_value_type(sb, &values);
  tpj_strbuf_puts(sb, ")\n");
  return r;
}
