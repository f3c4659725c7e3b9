/* hlo/cpu_reduce: with the CPU target on, tpj_hlo_emit_reduce writes sums,
 * maxima and minima as folds XLA:CPU vectorises. Each case runs the same
 * reduction written both ways on the plugin and compares: max/min must be
 * identical, sums equal within rounding (NaN where the plain form has it). The text checks
 * pin which form each case takes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/builder.h"
#include "hlo/target.h"
#include "rt/rt.h"
#include "tpj_test.h"

/* reduce(x: dt[dims]) over rdims with body; *out_text malloc'd. */
static tpj_status_t reduce_module(int cpu, tpj_dtype_t dt, const int64_t* dims, int ndim,
                                  const int64_t* rdims, int nr, const char* body,
                                  tpj_rt_shape_t* out_shape, char** out_text) {
  int was = tpj_hlo_cpu_target();
  tpj_hlo_set_cpu_target(cpu);
  tpj_hlo_builder_t b;
  tpj_hlo_builder_init(&b);
  tpj_hlo_value_t x = tpj_hlo_arg(&b, dt, dims, ndim);
  tpj_hlo_value_t init = strcmp(body, "stablehlo.add") == 0
                             ? tpj_hlo_emit_zero(&b, dt)
                             : tpj_hlo_emit_extreme(&b, dt, strcmp(body, "stablehlo.minimum") == 0);
  tpj_hlo_value_t r = tpj_hlo_emit_reduce(&b, x, init, rdims, nr, body);
  out_shape->dtype = r.dtype;
  out_shape->ndim = r.ndim;
  memcpy(out_shape->dims, r.dims, sizeof(int64_t) * (size_t)(r.ndim > 0 ? r.ndim : 0));
  tpj_strbuf_t sb;
  tpj_strbuf_init(&sb);
  tpj_status_t s = tpj_hlo_finish(&b, &r, 1, &sb);
  *out_text = s ? NULL : strdup(tpj_strbuf_cstr(&sb));
  tpj_strbuf_free(&sb);
  tpj_hlo_builder_free(&b);
  tpj_hlo_set_cpu_target(was);
  return s;
}

/* Runs text on x (n elements of dt) into out (m elements). */
static tpj_status_t run_module(const char* text, tpj_dtype_t dt, const int64_t* dims, int ndim,
                               const void* x, const tpj_rt_shape_t* shape, void* out,
                               size_t out_bytes) {
  tpj_rt_t* rt = tpj_test_rt();
  if (!rt) return tpj_status_make(TPJ_NOT_FOUND, "no runtime");
  tpj_rt_exe_t* exe = NULL;
  tpj_rt_buffer_t *in = NULL, *res = NULL;
  tpj_status_t s = tpj_rt_compile(rt, text, strlen(text), &exe);
  if (!s) s = tpj_rt_buffer_from_host(rt, 0, dt, dims, ndim, x, &in);
  if (!s) s = tpj_rt_execute(rt, exe, 0, &in, 1, shape, 1, &res, "cpu_reduce");
  if (!s) s = tpj_rt_buffer_to_host(rt, res, out, out_bytes);
  tpj_rt_buffer_release(res);
  tpj_rt_buffer_release(in);
  tpj_rt_exe_release(exe);
  return s;
}

/* TPJ_EXPECT_OK for a helper that must go on (and free) after a failure. */
static int expect_ok(int* tpj_failed_, tpj_status_t s, const char* what) {
  if (!s) return 1;
  fprintf(stderr, "  %s failed: %s\n", what, tpj_status_message(s));
  tpj_status_free(s);
  *tpj_failed_ = 1;
  return 0;
}

/* One case, f32 or f64: both forms on the same data; returns the CPU form's
 * text (malloc'd) for the caller's form checks. */
static char* check_case(int* tpj_failed_, tpj_dtype_t dt, const int64_t* dims, int ndim,
                        const int64_t* rdims, int nr, const char* body, int with_nan) {
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= dims[i];
  size_t es = dt == TPJ_F64 ? 8 : 4;
  unsigned char* x = (unsigned char*)malloc((size_t)n * es);
  uint32_t seed = 12345;
  for (int64_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    double v = ((double)(seed >> 8) / (double)(1u << 24)) * 4.0 - 2.0;
    /* NaN only in sums: XLA:CPU's maximum/minimum do not order NaN (the
     * lowerings of amax and friends add their own NaN test) */
    if (with_nan && i % 97 == 5 && strcmp(body, "stablehlo.add") == 0) v = NAN;
    if (dt == TPJ_F64) memcpy(x + (size_t)i * 8, &v, 8);
    else {
      float f = (float)v;
      memcpy(x + (size_t)i * 4, &f, 4);
    }
  }
  tpj_rt_shape_t sp, sc;
  char *plain = NULL, *cpu = NULL;
  expect_ok(tpj_failed_, reduce_module(0, dt, dims, ndim, rdims, nr, body, &sp, &plain), "plain");
  expect_ok(tpj_failed_, reduce_module(1, dt, dims, ndim, rdims, nr, body, &sc, &cpu), "cpu");
  int same_shape = sp.ndim == sc.ndim && sp.dtype == sc.dtype;
  for (int i = 0; same_shape && i < sp.ndim; ++i) same_shape = sp.dims[i] == sc.dims[i];
  TPJ_EXPECT(same_shape);
  int64_t m = 1;
  for (int i = 0; i < sp.ndim; ++i) m *= sp.dims[i];
  double* a = (double*)calloc((size_t)m, sizeof(double));
  double* c = (double*)calloc((size_t)m, sizeof(double));
  void* ra = malloc((size_t)m * es);
  void* rc = malloc((size_t)m * es);
  if (plain && cpu && same_shape) {
    int ran = expect_ok(tpj_failed_, run_module(plain, dt, dims, ndim, x, &sp, ra,
                                                (size_t)m * es), "running plain");
    ran &= expect_ok(tpj_failed_, run_module(cpu, dt, dims, ndim, x, &sc, rc, (size_t)m * es),
                     "running cpu");
    for (int64_t i = 0; ran && i < m; ++i) {
      a[i] = dt == TPJ_F64 ? ((double*)ra)[i] : ((float*)ra)[i];
      c[i] = dt == TPJ_F64 ? ((double*)rc)[i] : ((float*)rc)[i];
    }
    int exact = strcmp(body, "stablehlo.add") != 0;
    double tol = dt == TPJ_F64 ? 1e-12 : 1e-5;
    int64_t bad = 0;
    for (int64_t i = 0; ran && i < m; ++i) {
      if (isnan(a[i]) || isnan(c[i])) bad += !(isnan(a[i]) && isnan(c[i]));
      else if (exact) bad += a[i] != c[i];
      else bad += fabs(a[i] - c[i]) > tol * (1.0 + fabs(a[i])) * 64;
    }
    if (bad) {
      fprintf(stderr, "  %lld of %lld results differ (%s, nan %d)", (long long)bad,
              (long long)m, body, with_nan);
      for (int64_t i = 0; i < m; ++i)
        if ((isnan(a[i]) != isnan(c[i])) || (!isnan(a[i]) && a[i] != c[i])) {
          fprintf(stderr, ": [%lld] plain %g, cpu %g", (long long)i, a[i], c[i]);
          break;
        }
      fprintf(stderr, "\n");
    }
    TPJ_EXPECT(bad == 0);
  }
  free(a);
  free(c);
  free(ra);
  free(rc);
  free(x);
  free(plain);
  return cpu;
}

/* Sum (with and without NaN), max and min of one case, both forms. */
static void check_bodies(int* tpj_failed_, tpj_dtype_t dt, const int64_t* dims, int ndim,
                         const int64_t* rdims, int nr) {
  free(check_case(tpj_failed_, dt, dims, ndim, rdims, nr, "stablehlo.add", 0));
  free(check_case(tpj_failed_, dt, dims, ndim, rdims, nr, "stablehlo.add", 1));
  free(check_case(tpj_failed_, dt, dims, ndim, rdims, nr, "stablehlo.maximum", 0));
  free(check_case(tpj_failed_, dt, dims, ndim, rdims, nr, "stablehlo.minimum", 0));
}

TPJ_TEST(cpu_reduce_trailing_sums_and_extremes_match_plain) {
  int64_t d2[2] = {256, 256}, d3[3] = {8, 32, 64}, dodd[2] = {5, 96}, dwide[2] = {3, 4096};
  int64_t last = 1, last2[2] = {1, 2};
  check_bodies(tpj_failed_, TPJ_F32, d2, 2, &last, 1);
  check_bodies(tpj_failed_, TPJ_F32, d3, 3, last2, 2);
  check_bodies(tpj_failed_, TPJ_F64, dodd, 2, &last, 1);
  check_bodies(tpj_failed_, TPJ_F32, dwide, 2, &last, 1);
  /* a row of 256 folds (slices) and reduces the last lanes behind a barrier */
  char* t = check_case(tpj_failed_, TPJ_F32, d2, 2, &last, 1, "stablehlo.add", 0);
  if (t) {
    TPJ_EXPECT_CONTAINS(t, "stablehlo.slice");
    TPJ_EXPECT_CONTAINS(t, "stablehlo.optimization_barrier");
  }
  free(t);
}

TPJ_TEST(cpu_reduce_leading_and_full_reductions_match_plain) {
  int64_t d2[2] = {256, 192}, d3[3] = {8, 32, 64}, dodd[2] = {7, 33}, dvec[1] = {1000};
  int64_t dbig[2] = {3000, 4}, first = 0, first2[2] = {0, 1}, all3[3] = {0, 1, 2};
  check_bodies(tpj_failed_, TPJ_F32, d2, 2, &first, 1);
  check_bodies(tpj_failed_, TPJ_F32, d3, 3, first2, 2);
  check_bodies(tpj_failed_, TPJ_F64, dodd, 2, &first, 1);
  check_bodies(tpj_failed_, TPJ_F32, dvec, 1, &first, 1);
  check_bodies(tpj_failed_, TPJ_F32, d3, 3, all3, 3);
  check_bodies(tpj_failed_, TPJ_F32, dbig, 2, &first, 1);
  /* up to 1024 rows fold all the way: no reduce op is left */
  char* t = check_case(tpj_failed_, TPJ_F32, d2, 2, &first, 1, "stablehlo.add", 0);
  if (t) {
    TPJ_EXPECT_CONTAINS(t, "stablehlo.slice");
    TPJ_EXPECT(strstr(t, "stablehlo.reduce") == NULL);
  }
  free(t);
}

TPJ_TEST(cpu_reduce_leaves_other_reductions_plain) {
  /* a middle dim, an integer sum, a product: the plain reduce */
  int64_t d3[3] = {4, 64, 8}, mid = 1, last = 1;
  char* t = check_case(tpj_failed_, TPJ_F32, d3, 3, &mid, 1, "stablehlo.add", 0);
  if (t) TPJ_EXPECT(strstr(t, "stablehlo.slice") == NULL);
  free(t);
  tpj_rt_shape_t s;
  char* text = NULL;
  int64_t d2[2] = {16, 64};
  TPJ_EXPECT_OK(reduce_module(1, TPJ_I32, d2, 2, &last, 1, "stablehlo.add", &s, &text));
  if (text) TPJ_EXPECT(strstr(text, "stablehlo.slice") == NULL);
  free(text);
  TPJ_EXPECT_OK(reduce_module(1, TPJ_F32, d2, 2, &last, 1, "stablehlo.multiply", &s, &text));
  if (text) TPJ_EXPECT(strstr(text, "stablehlo.slice") == NULL);
  free(text);
}
