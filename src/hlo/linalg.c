/* hlo/linalg: triangular_solve, multi-result custom_call, dynamic slices
 * and while loops (see linalg.h). A while loop's regions are printed into
 * the builder's body between begin/body/end, so the ordinary emitters build
 * them; block arguments are fresh %vN values, which MLIR scopes to their
 * region. */
#include "hlo/linalg.h"

#include <string.h>

#include "hlo/internal.h"

#define kInvalid tpj_hlo_kInvalid

static tpj_hlo_value_t linalg_fail(tpj_hlo_builder_t* b, const char* msg) {
  tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "%s", msg));
  return kInvalid;
}

tpj_hlo_value_t tpj_hlo_emit_triangular_solve(tpj_hlo_builder_t* b, tpj_hlo_value_t a,
                                              tpj_hlo_value_t x, int left_side, int lower,
                                              int unit_diagonal, int transpose_a) {
  if (!tpj_hlo_check_valid(b, &a) || !tpj_hlo_check_valid(b, &x)) return kInvalid;
  int nd = a.ndim;
  if (nd < 2 || x.ndim != nd || a.dtype != x.dtype || a.dims[nd - 1] != a.dims[nd - 2] ||
      x.dims[left_side ? nd - 2 : nd - 1] != a.dims[nd - 1])
    return linalg_fail(b, "triangular_solve: operand shapes do not match");
  for (int i = 0; i < nd - 2; ++i)
    if (a.dims[i] != x.dims[i]) return linalg_fail(b, "triangular_solve: batch dims differ");
  tpj_hlo_value_t r = tpj_hlo_new_value(b, x.dtype, x.dims, x.ndim);
  const tpj_hlo_value_t* ops[2] = {&a, &x};
  tpj_hlo_begin_op(b, &r, "stablehlo.triangular_solve", ops, 2);
  tpj_strbuf_printf(&b->body,
                    " {left_side = %s, lower = %s, transpose_a = #stablehlo<transpose %s>, "
                    "unit_diagonal = %s}",
                    left_side ? "true" : "false", lower ? "true" : "false",
                    transpose_a ? "TRANSPOSE" : "NO_TRANSPOSE", unit_diagonal ? "true" : "false");
  tpj_hlo_end_op(b, &r, ops, 2);
  return r;
}

/* "%v1, %v2" */
static void print_refs(tpj_strbuf_t* sb, const tpj_hlo_value_t* v, int n) {
  for (int i = 0; i < n; ++i) {
    if (i) tpj_strbuf_puts(sb, ", ");
    tpj_hlo_print_ref(sb, &v[i]);
  }
}

/* "(t1, t2)" */
static void print_types(tpj_strbuf_t* sb, const tpj_hlo_value_t* v, int n) {
  tpj_strbuf_puts(sb, "(");
  for (int i = 0; i < n; ++i) {
    if (i) tpj_strbuf_puts(sb, ", ");
    tpj_hlo_print_value_type(sb, &v[i]);
  }
  tpj_strbuf_puts(sb, ")");
}

void tpj_hlo_emit_custom_call(tpj_hlo_builder_t* b, const char* target,
                              const char* backend_config, const tpj_hlo_value_t* ins, int nin,
                              const tpj_hlo_value_t* types, int nout, tpj_hlo_value_t* out) {
  for (int i = 0; i < nout; ++i) out[i] = kInvalid;
  for (int i = 0; i < nin; ++i)
    if (!tpj_hlo_check_valid(b, &ins[i])) return;
  if (nout < 1 || nout > TPJ_HLO_MAX_ARGS || nin > TPJ_HLO_MAX_ARGS) {
    linalg_fail(b, "custom_call: bad operand or result count");
    return;
  }
  for (int i = 0; i < nout; ++i) {
    if (!tpj_hlo_check_dims(b, types[i].dims, types[i].ndim)) return;
    out[i] = tpj_hlo_new_value(b, types[i].dtype, types[i].dims, types[i].ndim);
  }
  tpj_strbuf_t* sb = &b->body;
  tpj_strbuf_puts(sb, "    ");
  print_refs(sb, out, nout);
  tpj_strbuf_puts(sb, " = \"stablehlo.custom_call\"(");
  print_refs(sb, ins, nin);
  tpj_strbuf_printf(sb, ") {call_target_name = \"%s\"", target);
  if (backend_config) tpj_strbuf_printf(sb, ", backend_config = \"%s\"", backend_config);
  tpj_strbuf_puts(sb, "} : ");
  print_types(sb, ins, nin);
  tpj_strbuf_puts(sb, " -> ");
  if (nout == 1)
    tpj_hlo_print_value_type(sb, &out[0]);
  else
    print_types(sb, out, nout);
  tpj_strbuf_puts(sb, "\n");
}

static int check_starts(tpj_hlo_builder_t* b, const tpj_hlo_value_t* starts, int n) {
  for (int i = 0; i < n; ++i) {
    if (!tpj_hlo_check_valid(b, &starts[i])) return 0;
    if (starts[i].ndim != 0 || !tpj_dtype_is_int(starts[i].dtype) ||
        starts[i].dtype != starts[0].dtype) {
      linalg_fail(b, "dynamic slice: starts must be 0-d integers of one dtype");
      return 0;
    }
  }
  return 1;
}

tpj_hlo_value_t tpj_hlo_emit_dynamic_slice(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                           const tpj_hlo_value_t* starts, const int64_t* sizes) {
  if (!tpj_hlo_check_valid(b, &x) || !check_starts(b, starts, x.ndim)) return kInvalid;
  for (int i = 0; i < x.ndim; ++i)
    if (sizes[i] < 0 || sizes[i] > x.dims[i])
      return linalg_fail(b, "dynamic_slice: size larger than the operand");
  tpj_hlo_value_t r = tpj_hlo_new_value(b, x.dtype, sizes, x.ndim);
  const tpj_hlo_value_t* ops[TPJ_MAX_DIMS + 1];
  ops[0] = &x;
  for (int i = 0; i < x.ndim; ++i) ops[1 + i] = &starts[i];
  tpj_hlo_begin_op(b, &r, "stablehlo.dynamic_slice", ops, 1 + x.ndim);
  tpj_strbuf_puts(&b->body, " {slice_sizes = ");
  tpj_hlo_print_i64_array(&b->body, sizes, x.ndim);
  tpj_strbuf_puts(&b->body, "}");
  tpj_hlo_end_op(b, &r, ops, 1 + x.ndim);
  return r;
}

tpj_hlo_value_t tpj_hlo_emit_dynamic_update_slice(tpj_hlo_builder_t* b, tpj_hlo_value_t x,
                                                  tpj_hlo_value_t upd,
                                                  const tpj_hlo_value_t* starts) {
  if (!tpj_hlo_check_valid(b, &x) || !tpj_hlo_check_valid(b, &upd) ||
      !check_starts(b, starts, x.ndim))
    return kInvalid;
  if (upd.ndim != x.ndim || upd.dtype != x.dtype)
    return linalg_fail(b, "dynamic_update_slice: update differs in rank or dtype");
  for (int i = 0; i < x.ndim; ++i)
    if (upd.dims[i] > x.dims[i])
      return linalg_fail(b, "dynamic_update_slice: update larger than the operand");
  return tpj_hlo_dus_op(b, x, upd, starts);
}

/* "^bb0(%vA: t, %vB: t):" with fresh values typed like w->init. */
static void print_block_args(tpj_hlo_builder_t* b, tpj_hlo_while_t* w, tpj_hlo_value_t* args) {
  tpj_strbuf_t* sb = &b->body;
  tpj_strbuf_puts(sb, "    ^bb0(");
  for (int i = 0; i < w->n; ++i) {
    args[i] = tpj_hlo_new_value(b, w->init[i].dtype, w->init[i].dims, w->init[i].ndim);
    if (i) tpj_strbuf_puts(sb, ", ");
    tpj_hlo_print_ref(sb, &args[i]);
    tpj_strbuf_puts(sb, ": ");
    tpj_hlo_print_value_type(sb, &args[i]);
  }
  tpj_strbuf_puts(sb, "):\n");
}

static void while_invalid(tpj_hlo_while_t* w, tpj_hlo_value_t* args, int n) {
  for (int i = 0; i < n; ++i) args[i] = kInvalid;
  w->n = 0;
}

void tpj_hlo_while_begin(tpj_hlo_builder_t* b, tpj_hlo_while_t* w, const tpj_hlo_value_t* init,
                         int n, tpj_hlo_value_t* cond_args) {
  if (n < 1 || n > TPJ_HLO_WHILE_MAX) {
    linalg_fail(b, "while: bad number of carried values");
    while_invalid(w, cond_args, n < 0 ? 0 : n > TPJ_HLO_WHILE_MAX ? TPJ_HLO_WHILE_MAX : n);
    return;
  }
  for (int i = 0; i < n; ++i) {
    if (!tpj_hlo_check_valid(b, &init[i])) {
      while_invalid(w, cond_args, n);
      return;
    }
  }
  w->n = n;
  for (int i = 0; i < n; ++i) {
    w->init[i] = init[i];
    w->res[i] = tpj_hlo_new_value(b, init[i].dtype, init[i].dims, init[i].ndim);
  }
  tpj_strbuf_t* sb = &b->body;
  tpj_strbuf_puts(sb, "    ");
  print_refs(sb, w->res, n);
  tpj_strbuf_puts(sb, " = \"stablehlo.while\"(");
  print_refs(sb, w->init, n);
  tpj_strbuf_puts(sb, ") ({\n");
  print_block_args(b, w, cond_args);
}

void tpj_hlo_while_body(tpj_hlo_builder_t* b, tpj_hlo_while_t* w, tpj_hlo_value_t cond,
                        tpj_hlo_value_t* body_args) {
  if (w->n == 0 || !tpj_hlo_check_valid(b, &cond)) {
    while_invalid(w, body_args, w->n);
    return;
  }
  if (cond.ndim != 0 || cond.dtype != TPJ_BOOL) {
    linalg_fail(b, "while: the condition must be a 0-d bool");
    while_invalid(w, body_args, w->n);
    return;
  }
  tpj_strbuf_t* sb = &b->body;
  tpj_strbuf_puts(sb, "      \"stablehlo.return\"(");
  tpj_hlo_print_ref(sb, &cond);
  tpj_strbuf_puts(sb, ") : (tensor<i1>) -> ()\n    }, {\n");
  print_block_args(b, w, body_args);
}

void tpj_hlo_while_end(tpj_hlo_builder_t* b, tpj_hlo_while_t* w, const tpj_hlo_value_t* next,
                       tpj_hlo_value_t* results) {
  int n = w->n;
  for (int i = 0; i < n; ++i) {
    if (!tpj_hlo_check_valid(b, &next[i])) {
      while_invalid(w, results, n);
      return;
    }
    if (!tpj_hlo_same_shape(&next[i], &w->init[i]) || next[i].dtype != w->init[i].dtype) {
      linalg_fail(b, "while: the body must return values typed like the carried ones");
      while_invalid(w, results, n);
      return;
    }
  }
  tpj_strbuf_t* sb = &b->body;
  tpj_strbuf_puts(sb, "      \"stablehlo.return\"(");
  print_refs(sb, next, n);
  tpj_strbuf_puts(sb, ") : ");
  print_types(sb, next, n);
  tpj_strbuf_puts(sb, " -> ()\n    }) : ");
  print_types(sb, w->init, n);
  tpj_strbuf_puts(sb, " -> ");
  print_types(sb, w->res, n);
  tpj_strbuf_puts(sb, "\n");
  for (int i = 0; i < n; ++i) results[i] = w->res[i];
}
