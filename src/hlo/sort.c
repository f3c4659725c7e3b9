/* hlo/sort: stablehlo.sort with PyTorch's key order, and inclusive scans
 * (cumsum, cumprod, logcumsumexp) as stablehlo.reduce_window over a window
 * that spans the whole dim, padded so window i ends (or starts) at i. */
#include "hlo/sort.h"

#include <stdio.h>
#include <string.h>

#include "hlo/internal.h"

#define kInvalid tpj_hlo_kInvalid

/* One scalar op inside a region: %<dst> = "name"(%<a>, %<b>) of type dt
 * operands; the result is bool when is_cmp (dir is then the direction). */
static void print_scalar_op(tpj_strbuf_t* sb, const char* dst, const char* name, const char* a,
                            const char* bb, tpj_dtype_t dt, const char* dir) {
  tpj_strbuf_printf(sb, "      %%%s = \"%s\"(%%%s", dst, name, a);
  if (bb) tpj_strbuf_printf(sb, ", %%%s", bb);
  tpj_strbuf_puts(sb, ")");
  if (dir)
    tpj_strbuf_printf(sb, " {comparison_direction = #stablehlo<comparison_direction %s>}", dir);
  tpj_strbuf_puts(sb, " : (");
  tpj_hlo_print_type(sb, dt, NULL, 0);
  if (bb) {
    tpj_strbuf_puts(sb, ", ");
    tpj_hlo_print_type(sb, dt, NULL, 0);
  }
  tpj_strbuf_puts(sb, ") -> ");
  tpj_hlo_print_type(sb, dir ? TPJ_BOOL : dt, NULL, 0);
  tpj_strbuf_puts(sb, "\n");
}

void tpj_hlo_emit_sort(tpj_hlo_builder_t* b, const tpj_hlo_value_t* xs, int n, int dim,
                       int descending, tpj_hlo_value_t* out) {
  for (int i = 0; i < n; ++i) out[i] = kInvalid;
  for (int i = 0; i < n; ++i)
    if (!tpj_hlo_check_valid(b, &xs[i])) return;
  if (n < 1 || dim < 0 || dim >= xs[0].ndim || xs[0].dtype == TPJ_BOOL ||
      tpj_dtype_is_complex(xs[0].dtype)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT,
                                    "sort: needs a real, non-bool key and a dim in range"));
    return;
  }
  for (int i = 1; i < n; ++i) {
    if (!tpj_hlo_same_shape(&xs[0], &xs[i])) {
      tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "sort: operands differ in shape"));
      return;
    }
  }
  const tpj_hlo_value_t* ops[TPJ_HLO_MAX_ARGS];
  for (int i = 0; i < n; ++i) {
    out[i] = tpj_hlo_new_value(b, xs[i].dtype, xs[i].dims, xs[i].ndim);
    ops[i] = &xs[i];
  }
  int id = out[0].id;
  tpj_strbuf_t* sb = &b->body;
  tpj_strbuf_puts(sb, "    ");
  for (int i = 0; i < n; ++i) {
    if (i) tpj_strbuf_puts(sb, ", ");
    tpj_hlo_print_ref(sb, &out[i]);
  }
  tpj_strbuf_puts(sb, " = \"stablehlo.sort\"(");
  for (int i = 0; i < n; ++i) {
    if (i) tpj_strbuf_puts(sb, ", ");
    tpj_hlo_print_ref(sb, ops[i]);
  }
  tpj_strbuf_puts(sb, ") ({\n    ^bb0(");
  for (int i = 0; i < n; ++i) {
    tpj_strbuf_printf(sb, "%s%%sa%d_%d: ", i ? ", " : "", id, i);
    tpj_hlo_print_type(sb, xs[i].dtype, NULL, 0);
    tpj_strbuf_printf(sb, ", %%sb%d_%d: ", id, i);
    tpj_hlo_print_type(sb, xs[i].dtype, NULL, 0);
  }
  tpj_strbuf_puts(sb, "):\n");
  /* The comparator is "a goes before b". Floats: NaN is the largest key, so
   * ascending puts a (not NaN) before b (NaN); descending the reverse. */
  tpj_dtype_t kd = xs[0].dtype;
  char a[32], bb[32], r[32], t1[32], t2[32], t3[32], t4[32];
  snprintf(a, sizeof a, "sa%d_0", id);
  snprintf(bb, sizeof bb, "sb%d_0", id);
  snprintf(r, sizeof r, "sr%d", id);
  print_scalar_op(sb, r, "stablehlo.compare", a, bb, kd, descending ? "GT" : "LT");
  if (tpj_dtype_is_float(kd)) {
    snprintf(t1, sizeof t1, "sn%d", id);
    snprintf(t2, sizeof t2, "sm%d", id);
    snprintf(t3, sizeof t3, "sk%d", id);
    snprintf(t4, sizeof t4, "so%d", id);
    const char* nan_side = descending ? a : bb;   /* must be NaN */
    const char* num_side = descending ? bb : a;   /* must not be */
    print_scalar_op(sb, t1, "stablehlo.compare", nan_side, nan_side, kd, "NE");
    print_scalar_op(sb, t2, "stablehlo.compare", num_side, num_side, kd, "EQ");
    print_scalar_op(sb, t3, "stablehlo.and", t1, t2, TPJ_BOOL, NULL);
    print_scalar_op(sb, t4, "stablehlo.or", r, t3, TPJ_BOOL, NULL);
    memcpy(r, t4, sizeof r);
  }
  tpj_strbuf_printf(sb, "      \"stablehlo.return\"(%%%s) : (tensor<i1>) -> ()\n    })", r);
  tpj_strbuf_printf(sb, " {dimension = %d : i64, is_stable = true} : (", dim);
  for (int i = 0; i < n; ++i) {
    if (i) tpj_strbuf_puts(sb, ", ");
    tpj_hlo_print_value_type(sb, ops[i]);
  }
  tpj_strbuf_puts(sb, ") -> (");
  for (int i = 0; i < n; ++i) {
    if (i) tpj_strbuf_puts(sb, ", ");
    tpj_hlo_print_value_type(sb, &out[i]);
  }
  tpj_strbuf_puts(sb, ")\n");
}

/* The scan's region: (a, b) -> a op b. logaddexp is written so that -inf
 * terms, +inf and NaN come out as in PyTorch's logcumsumexp. */
static void print_scan_region(tpj_strbuf_t* sb, int id, tpj_dtype_t dt, tpj_hlo_scan_t op) {
  char a[32], bb[32], r[32];
  snprintf(a, sizeof a, "wa%d", id);
  snprintf(bb, sizeof bb, "wb%d", id);
  snprintf(r, sizeof r, "wr%d", id);
  tpj_strbuf_printf(sb, " ({\n    ^bb0(%%%s: ", a);
  tpj_hlo_print_type(sb, dt, NULL, 0);
  tpj_strbuf_printf(sb, ", %%%s: ", bb);
  tpj_hlo_print_type(sb, dt, NULL, 0);
  tpj_strbuf_puts(sb, "):\n");
  if (op == TPJ_HLO_SCAN_ADD) {
    print_scalar_op(sb, r, dt == TPJ_BOOL ? "stablehlo.or" : "stablehlo.add", a, bb, dt, NULL);
  } else if (op == TPJ_HLO_SCAN_MUL) {
    print_scalar_op(sb, r, dt == TPJ_BOOL ? "stablehlo.and" : "stablehlo.multiply", a, bb, dt,
                    NULL);
  } else {
    /* hi + log1p(exp(lo - hi)), with hi = max, lo = min; when lo is -inf
     * (both -inf too) the answer is hi, when hi is +inf it is +inf (the
     * formula would give NaN from inf - inf); NaN in, NaN out. */
    char mx[32], mn[32], d[32], e[32], l[32], s[32], c1[32], c2[32], c3[32], s1[32], ninf[32],
        pinf[32], na[32], nb[32], nn[32], sum[32];
#define N(v, tag) snprintf(v, sizeof v, "w" tag "%d", id)
    N(mx, "mx"); N(mn, "mn"); N(d, "d"); N(e, "e"); N(l, "l"); N(s, "s"); N(c1, "c1");
    N(c2, "c2"); N(c3, "c3"); N(s1, "s1"); N(ninf, "ni"); N(pinf, "pi");
    N(na, "na"); N(nb, "nb"); N(nn, "nn"); N(sum, "sm");
#undef N
    print_scalar_op(sb, mx, "stablehlo.maximum", a, bb, dt, NULL);
    print_scalar_op(sb, mn, "stablehlo.minimum", a, bb, dt, NULL);
    print_scalar_op(sb, d, "stablehlo.subtract", mn, mx, dt, NULL);
    print_scalar_op(sb, e, "stablehlo.exponential", d, NULL, dt, NULL);
    print_scalar_op(sb, l, "stablehlo.log_plus_one", e, NULL, dt, NULL);
    print_scalar_op(sb, s, "stablehlo.add", mx, l, dt, NULL);
    tpj_strbuf_printf(sb, "      %%%s = \"stablehlo.constant\"() {value = dense<0x%s> : ", ninf,
                      dt == TPJ_F64 ? "FFF0000000000000"
                      : dt == TPJ_F16 ? "FC00" : dt == TPJ_BF16 ? "FF80" : "FF800000");
    tpj_hlo_print_type(sb, dt, NULL, 0);
    tpj_strbuf_puts(sb, "} : () -> ");
    tpj_hlo_print_type(sb, dt, NULL, 0);
    tpj_strbuf_puts(sb, "\n");
    print_scalar_op(sb, pinf, "stablehlo.negate", ninf, NULL, dt, NULL);
    print_scalar_op(sb, c1, "stablehlo.compare", mn, ninf, dt, "EQ");
    print_scalar_op(sb, c2, "stablehlo.compare", mx, pinf, dt, "EQ");
    print_scalar_op(sb, c3, "stablehlo.or", c1, c2, TPJ_BOOL, NULL);
    tpj_strbuf_printf(sb, "      %%%s = \"stablehlo.select\"(%%%s, %%%s, %%%s) : (tensor<i1>, ",
                      s1, c3, mx, s);
    tpj_hlo_print_type(sb, dt, NULL, 0);
    tpj_strbuf_puts(sb, ", ");
    tpj_hlo_print_type(sb, dt, NULL, 0);
    tpj_strbuf_puts(sb, ") -> ");
    tpj_hlo_print_type(sb, dt, NULL, 0);
    tpj_strbuf_puts(sb, "\n");
    /* a NaN operand: a + b is NaN, whatever max/min made of it */
    print_scalar_op(sb, na, "stablehlo.compare", a, a, dt, "NE");
    print_scalar_op(sb, nb, "stablehlo.compare", bb, bb, dt, "NE");
    print_scalar_op(sb, nn, "stablehlo.or", na, nb, TPJ_BOOL, NULL);
    print_scalar_op(sb, sum, "stablehlo.add", a, bb, dt, NULL);
    tpj_strbuf_printf(sb, "      %%%s = \"stablehlo.select\"(%%%s, %%%s, %%%s) : (tensor<i1>, ",
                      r, nn, sum, s1);
    tpj_hlo_print_type(sb, dt, NULL, 0);
    tpj_strbuf_puts(sb, ", ");
    tpj_hlo_print_type(sb, dt, NULL, 0);
    tpj_strbuf_puts(sb, ") -> ");
    tpj_hlo_print_type(sb, dt, NULL, 0);
    tpj_strbuf_puts(sb, "\n");
  }
  tpj_strbuf_printf(sb, "      \"stablehlo.return\"(%%%s) : (", r);
  tpj_hlo_print_type(sb, dt, NULL, 0);
  tpj_strbuf_puts(sb, ") -> ()\n    })");
}

tpj_hlo_value_t tpj_hlo_emit_cumulative(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int dim,
                                        tpj_hlo_scan_t op, int reverse) {
  if (!tpj_hlo_check_valid(b, &x)) return kInvalid;
  if (dim < 0 || dim >= x.ndim || x.dims[dim] < 1 || tpj_dtype_is_complex(x.dtype) ||
      (op == TPJ_HLO_SCAN_LOGADDEXP && !tpj_dtype_is_float(x.dtype))) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT,
                                    "cumulative: needs a non-empty dim in range and a real "
                                    "operand (floating for logaddexp)"));
    return kInvalid;
  }
  tpj_hlo_value_t init = op == TPJ_HLO_SCAN_ADD   ? tpj_hlo_emit_zero(b, x.dtype)
                         : op == TPJ_HLO_SCAN_MUL ? tpj_hlo_emit_one(b, x.dtype)
                                                  : tpj_hlo_emit_extreme(b, x.dtype, 0);
  if (!tpj_hlo_check_valid(b, &init)) return kInvalid;
  tpj_hlo_value_t r = tpj_hlo_new_value(b, x.dtype, x.dims, x.ndim);
  const tpj_hlo_value_t* ops[2] = {&x, &init};
  tpj_hlo_begin_op(b, &r, "stablehlo.reduce_window", ops, 2);
  tpj_strbuf_t* sb = &b->body;
  print_scan_region(sb, r.id, x.dtype, op);
  int64_t win[TPJ_MAX_DIMS], ones[TPJ_MAX_DIMS];
  for (int i = 0; i < x.ndim; ++i) {
    win[i] = i == dim ? x.dims[dim] : 1;
    ones[i] = 1;
  }
  tpj_strbuf_puts(sb, " {padding = dense<[");
  for (int i = 0; i < x.ndim; ++i) {
    int64_t pad = i == dim ? x.dims[dim] - 1 : 0;
    tpj_strbuf_printf(sb, "%s[%lld, %lld]", i ? ", " : "", (long long)(reverse ? 0 : pad),
                      (long long)(reverse ? pad : 0));
  }
  tpj_strbuf_printf(sb, "]> : tensor<%dx2xi64>, window_dimensions = ", x.ndim);
  tpj_hlo_print_i64_array(sb, win, x.ndim);
  tpj_strbuf_puts(sb, ", window_strides = ");
  tpj_hlo_print_i64_array(sb, ones, x.ndim);
  tpj_strbuf_puts(sb, "}");
  tpj_hlo_end_op(b, &r, ops, 2);
  return r;
}
