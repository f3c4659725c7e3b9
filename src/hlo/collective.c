/* hlo/collective: see collective.h. Written without a channel handle, so the
 * replica groups name replica ids (cross-replica mode, one partition). */
#include "hlo/collective.h"

#include "hlo/internal.h"

/* `replica_groups = dense<[[0, 1, ...]]> : tensor<1xNxi64>` */
static void tpj_hlo_print_groups(tpj_strbuf_t* sb, int n) {
  tpj_strbuf_puts(sb, "replica_groups = dense<[[");
  for (int i = 0; i < n; ++i) tpj_strbuf_printf(sb, i ? ", %d" : "%d", i);
  tpj_strbuf_printf(sb, "]]> : tensor<1x%dxi64>", n);
}

/* x must be valid, rank >= 1 where the op splits or joins dim 0, and n >= 1. */
static int tpj_hlo_collective_check(tpj_hlo_builder_t* b, const tpj_hlo_value_t* x, int n,
                                    int needs_dim, const char* what) {
  if (!tpj_hlo_check_valid(b, x)) return 0;
  if (n < 1 || (needs_dim && x->ndim < 1)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "%s: needs %s", what,
                                    n < 1 ? "a replica" : "a dimension 0"));
    return 0;
  }
  return 1;
}

tpj_hlo_value_t tpj_hlo_emit_all_reduce(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int n,
                                        const char* body) {
  if (!tpj_hlo_collective_check(b, &x, n, 0, "all_reduce")) return tpj_hlo_kInvalid;
  tpj_hlo_value_t r = tpj_hlo_new_value(b, x.dtype, x.dims, x.ndim);
  const tpj_hlo_value_t* ops[1] = {&x};
  tpj_hlo_begin_op(b, &r, "stablehlo.all_reduce", ops, 1);
  tpj_hlo_print_region(&b->body, r.id, x.dtype, body);
  tpj_strbuf_puts(&b->body, " {");
  tpj_hlo_print_groups(&b->body, n);
  tpj_strbuf_puts(&b->body, "}");
  tpj_hlo_end_op(b, &r, ops, 1);
  return r;
}

tpj_hlo_value_t tpj_hlo_emit_all_gather(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int n) {
  if (!tpj_hlo_collective_check(b, &x, n, 1, "all_gather")) return tpj_hlo_kInvalid;
  int64_t dims[TPJ_MAX_DIMS];
  for (int i = 0; i < x.ndim; ++i) dims[i] = x.dims[i];
  dims[0] *= n;
  tpj_hlo_value_t r = tpj_hlo_new_value(b, x.dtype, dims, x.ndim);
  const tpj_hlo_value_t* ops[1] = {&x};
  tpj_hlo_begin_op(b, &r, "stablehlo.all_gather", ops, 1);
  tpj_strbuf_puts(&b->body, " {all_gather_dim = 0 : i64, ");
  tpj_hlo_print_groups(&b->body, n);
  tpj_strbuf_puts(&b->body, "}");
  tpj_hlo_end_op(b, &r, ops, 1);
  return r;
}

tpj_hlo_value_t tpj_hlo_emit_reduce_scatter(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int n,
                                            const char* body) {
  if (!tpj_hlo_collective_check(b, &x, n, 1, "reduce_scatter")) return tpj_hlo_kInvalid;
  if (x.dims[0] % n) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT,
                                    "reduce_scatter: dimension 0 (%lld) does not divide by %d",
                                    (long long)x.dims[0], n));
    return tpj_hlo_kInvalid;
  }
  int64_t dims[TPJ_MAX_DIMS];
  for (int i = 0; i < x.ndim; ++i) dims[i] = x.dims[i];
  dims[0] /= n;
  tpj_hlo_value_t r = tpj_hlo_new_value(b, x.dtype, dims, x.ndim);
  const tpj_hlo_value_t* ops[1] = {&x};
  tpj_hlo_begin_op(b, &r, "stablehlo.reduce_scatter", ops, 1);
  tpj_hlo_print_region(&b->body, r.id, x.dtype, body);
  tpj_strbuf_puts(&b->body, " {");
  tpj_hlo_print_groups(&b->body, n);
  tpj_strbuf_puts(&b->body, ", scatter_dimension = 0 : i64}");
  tpj_hlo_end_op(b, &r, ops, 1);
  return r;
}

tpj_hlo_value_t tpj_hlo_emit_all_to_all(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int n) {
  if (!tpj_hlo_collective_check(b, &x, n, 1, "all_to_all")) return tpj_hlo_kInvalid;
  if (x.dims[0] % n) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT,
                                    "all_to_all: dimension 0 (%lld) does not divide by %d",
                                    (long long)x.dims[0], n));
    return tpj_hlo_kInvalid;
  }
  tpj_hlo_value_t r = tpj_hlo_new_value(b, x.dtype, x.dims, x.ndim);
  const tpj_hlo_value_t* ops[1] = {&x};
  tpj_hlo_begin_op(b, &r, "stablehlo.all_to_all", ops, 1);
  tpj_strbuf_printf(&b->body, " {concat_dimension = 0 : i64, ");
  tpj_hlo_print_groups(&b->body, n);
  tpj_strbuf_printf(&b->body, ", split_count = %d : i64, split_dimension = 0 : i64}", n);
  tpj_hlo_end_op(b, &r, ops, 1);
  return r;
}
