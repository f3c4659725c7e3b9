/* ops/decomp and hlo/linalg: LU with partial pivoting (a stablehlo.while
 * loop) gives LAPACK getrf's factors, 1-based pivots and info on small
 * matrices worked by hand, and the linalg emitters reject bad operands. */
#include <math.h>
#include <string.h>

#include "exec/exec.h"
#include "hlo/linalg.h"
#include "tpj_test.h"

/* Runs aten::linalg_lu_factor_ex on the n x n row-major matrix a. */
static tpj_status_t lu_factor(tpj_rt_t* rt, tpj_exec_t* ex, const float* a, int64_t n, float* lu,
                              int32_t* piv, int32_t* info) {
  int64_t d[2] = {n, n};
  tpj_rt_buffer_t* ba = NULL;
  tpj_status_t s = tpj_rt_buffer_from_host(rt, 0, TPJ_F32, d, 2, a, &ba);
  if (s) return s;
  tpj_exec_arg_t args[1] = {{ba, 0, {0}}};
  tpj_rt_shape_t outs[3] = {tpj_test_shape(TPJ_F32, d, 2), tpj_test_shape(TPJ_I32, &n, 1), tpj_test_shape(TPJ_I32, NULL, 0)};
  tpj_rt_buffer_t* r[3] = {NULL, NULL, NULL};
  s = tpj_exec_run(ex, "aten::linalg_lu_factor_ex", 0, args, 1, NULL, 0, outs, 3, r);
  if (!s) s = tpj_rt_buffer_to_host(rt, r[0], lu, (size_t)(n * n) * sizeof(float));
  if (!s) s = tpj_rt_buffer_to_host(rt, r[1], piv, (size_t)n * sizeof(int32_t));
  if (!s) s = tpj_rt_buffer_to_host(rt, r[2], info, sizeof(int32_t));
  for (int i = 0; i < 3; ++i) tpj_rt_buffer_release(r[i]);
  tpj_rt_buffer_release(ba);
  return s;
}

TPJ_TEST(exec_lu_factor_matches_getrf_by_hand) {
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  tpj_exec_t* ex = NULL;
  TPJ_EXPECT_OK(tpj_exec_create(rt, 8, &ex));
  /* rows swap 0<->2, then 1<->2: pivots 3, 3, 3 */
  float a[9] = {1, 2, 3, 4, 5, 6, 7, 8, 10}, lu[9] = {0};
  float want[9] = {7, 8, 10, 1.f / 7, 6.f / 7, 11.f / 7, 4.f / 7, 0.5f, -0.5f};
  int32_t piv[3] = {0}, info = -1;
  TPJ_EXPECT_OK(lu_factor(rt, ex, a, 3, lu, piv, &info));
  float worst = 0;
  for (int i = 0; i < 9; ++i) {
    float e = fabsf(lu[i] - want[i]);
    if (e > worst) worst = e;
  }
  TPJ_EXPECT(worst < 1e-6f);
  TPJ_EXPECT(piv[0] == 3 && piv[1] == 3 && piv[2] == 3 && info == 0);
  /* singular: the second pivot is exactly zero, so info = 2 (1-based) */
  float s[4] = {1, 2, 2, 4}, slu[4] = {0};
  int32_t spiv[2] = {0};
  TPJ_EXPECT_OK(lu_factor(rt, ex, s, 2, slu, spiv, &info));
  TPJ_EXPECT(spiv[0] == 2 && spiv[1] == 2 && info == 2);
  TPJ_EXPECT(slu[0] == 2 && slu[1] == 4 && slu[2] == 0.5f && slu[3] == 0);
  tpj_exec_destroy(ex);
}

TPJ_TEST(hlo_linalg_emitters_reject_bad_operands) {
  tpj_hlo_builder_t b;
  tpj_hlo_builder_init(&b);
  int64_t sq[2] = {3, 3}, rect[2] = {4, 2};
  tpj_hlo_value_t a = tpj_hlo_arg(&b, TPJ_F32, sq, 2), x = tpj_hlo_arg(&b, TPJ_F32, rect, 2);
  tpj_hlo_value_t r = tpj_hlo_emit_triangular_solve(&b, a, x, 1, 1, 0, 0);
  TPJ_EXPECT(r.id < 0 && !tpj_hlo_ok(&b));  /* 4 rows against a 3 x 3 matrix */
  tpj_hlo_builder_free(&b);
  /* a while body must return what it carries */
  tpj_hlo_builder_init(&b);
  tpj_hlo_value_t init[1] = {tpj_hlo_emit_const_i64(&b, 0)}, c[1], v[1], res[1];
  tpj_hlo_while_t w;
  tpj_hlo_while_begin(&b, &w, init, 1, c);
  tpj_hlo_while_body(&b, &w, tpj_hlo_emit_compare(&b, c[0], tpj_hlo_emit_const_i64(&b, 3), "LT"), v);
  tpj_hlo_value_t wrong = tpj_hlo_emit_convert(&b, v[0], TPJ_I32);
  tpj_hlo_while_end(&b, &w, &wrong, res);
  TPJ_EXPECT(res[0].id < 0 && !tpj_hlo_ok(&b));
  tpj_hlo_builder_free(&b);
}
