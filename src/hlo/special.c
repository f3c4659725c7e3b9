/* hlo/special: stablehlo.while with callback-written regions (see
 * special.h). The op is printed in generic form with one result per state
 * value: `%v1, %v2 = "stablehlo.while"(%a, %b) ({cond}, {body}) : ...`. */
#include "hlo/special.h"

#include "hlo/internal.h"

#define TPJ_HLO_WHILE_MAX 8

/* `^bb0(%vA: type, ...)`, the region's body, its return, for one region */
static int tpj_hlo_while_region(tpj_hlo_builder_t* b, const tpj_hlo_value_t* init, int n,
                                tpj_hlo_region_fn_t fn, void* ctx, int is_cond) {
  int nret = is_cond ? 1 : n;
  tpj_strbuf_t* sb = &b->body;
  tpj_hlo_value_t args[TPJ_HLO_WHILE_MAX], ret[TPJ_HLO_WHILE_MAX];
  tpj_strbuf_puts(sb, "    ^bb0(");
  for (int i = 0; i < n; ++i) {
    args[i] = tpj_hlo_new_value(b, init[i].dtype, init[i].dims, init[i].ndim);
    if (i) tpj_strbuf_puts(sb, ", ");
    tpj_hlo_print_ref(sb, &args[i]);
    tpj_strbuf_puts(sb, ": ");
    tpj_hlo_print_value_type(sb, &args[i]);
  }
  tpj_strbuf_puts(sb, "):\n");
  fn(b, args, n, ctx, ret);
  for (int i = 0; i < nret; ++i)
    if (!tpj_hlo_check_valid(b, &ret[i])) return 0;
  tpj_strbuf_puts(sb, "      \"stablehlo.return\"(");
  for (int i = 0; i < nret; ++i) {
    if (i) tpj_strbuf_puts(sb, ", ");
    tpj_hlo_print_ref(sb, &ret[i]);
  }
  tpj_strbuf_puts(sb, ") : (");
  for (int i = 0; i < nret; ++i) {
    if (i) tpj_strbuf_puts(sb, ", ");
    tpj_hlo_print_value_type(sb, &ret[i]);
  }
  tpj_strbuf_puts(sb, ") -> ()\n");
  /* a condition gives a 0-d bool; a body the state's types */
  int ok = 1;
  if (nret == 1 && is_cond) ok = ret[0].dtype == TPJ_BOOL && ret[0].ndim == 0;
  for (int i = 0; !is_cond && i < nret; ++i)
    ok = ok && ret[i].dtype == init[i].dtype && tpj_hlo_same_shape(&ret[i], &init[i]);
  if (!ok) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT,
                                    "while: a region returned a value of the wrong type"));
    return 0;
  }
  return 1;
}

void tpj_hlo_emit_while(tpj_hlo_builder_t* b, const tpj_hlo_value_t* init, int n,
                        tpj_hlo_region_fn_t cond, tpj_hlo_region_fn_t body, void* ctx,
                        tpj_hlo_value_t* out) {
  for (int i = 0; i < n; ++i) out[i] = tpj_hlo_kInvalid;
  if (n < 1 || n > TPJ_HLO_WHILE_MAX) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "while: 1 to %d state values",
                                    TPJ_HLO_WHILE_MAX));
    return;
  }
  for (int i = 0; i < n; ++i)
    if (!tpj_hlo_check_valid(b, &init[i])) return;
  tpj_hlo_value_t res[TPJ_HLO_WHILE_MAX];
  for (int i = 0; i < n; ++i)
    res[i] = tpj_hlo_new_value(b, init[i].dtype, init[i].dims, init[i].ndim);
  tpj_strbuf_t* sb = &b->body;
  tpj_strbuf_puts(sb, "    ");
  for (int i = 0; i < n; ++i) {
    if (i) tpj_strbuf_puts(sb, ", ");
    tpj_hlo_print_ref(sb, &res[i]);
  }
  tpj_strbuf_puts(sb, " = \"stablehlo.while\"(");
  for (int i = 0; i < n; ++i) {
    if (i) tpj_strbuf_puts(sb, ", ");
    tpj_hlo_print_ref(sb, &init[i]);
  }
  tpj_strbuf_puts(sb, ") ({\n");
  if (!tpj_hlo_while_region(b, init, n, cond, ctx, 1)) return;
  tpj_strbuf_puts(sb, "    }, {\n");
  if (!tpj_hlo_while_region(b, init, n, body, ctx, 0)) return;
  tpj_strbuf_puts(sb, "    }) : (");
  for (int i = 0; i < n; ++i) {
    if (i) tpj_strbuf_puts(sb, ", ");
    tpj_hlo_print_value_type(sb, &init[i]);
  }
  tpj_strbuf_puts(sb, ") -> (");
  for (int i = 0; i < n; ++i) {
    if (i) tpj_strbuf_puts(sb, ", ");
    tpj_hlo_print_value_type(sb, &init[i]);
  }
  tpj_strbuf_puts(sb, ")\n");
  for (int i = 0; i < n; ++i) out[i] = res[i];
}
