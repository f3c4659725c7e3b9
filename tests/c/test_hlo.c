/* hlo/builder: the exact text emitters write, the shape checks that stop a
 * bad module before it reaches the compiler, and the sticky-failure rule
 * (the first error wins, later emitters are no-ops, nothing crashes). A few
 * modules are also compiled on the plugin so the text is proven parseable. */
#include <stdlib.h>

#include "hlo/builder.h"
#include "rt/rt.h"
#include "tpj_test.h"

/* Finishes b into a malloc'd string (caller frees); NULL on failure, with
 * the failure passed to *out_status (or freed when out_status is NULL). */
static char* finish_text(tpj_hlo_builder_t* b, const tpj_hlo_value_t* res, int nres,
                         tpj_status_t* out_status) {
  tpj_strbuf_t out;
  tpj_strbuf_init(&out);
  tpj_status_t s = tpj_hlo_finish(b, res, nres, &out);
  char* text = NULL;
  if (!s) text = strdup(tpj_strbuf_cstr(&out));
  tpj_strbuf_free(&out);
  if (out_status) *out_status = s;
  else tpj_status_free(s);
  return text;
}

/* Compiles text on the test runtime; returns the compile status. */
static tpj_status_t compile_text(const char* text) {
  tpj_rt_t* rt = tpj_test_rt();
  if (!rt) return tpj_status_make(TPJ_NOT_FOUND, "no runtime");
  tpj_rt_exe_t* exe = NULL;
  tpj_status_t s = tpj_rt_compile(rt, text, strlen(text), &exe);
  tpj_rt_exe_release(exe);
  return s;
}

TPJ_TEST(hlo_add_module_text) {
  tpj_hlo_builder_t b;
  tpj_hlo_builder_init(&b);
  int64_t dims[2] = {2, 3};
  tpj_hlo_value_t x = tpj_hlo_arg(&b, TPJ_F32, dims, 2);
  tpj_hlo_value_t y = tpj_hlo_arg(&b, TPJ_F32, dims, 2);
  tpj_hlo_value_t r = tpj_hlo_emit_binary(&b, "stablehlo.add", x, y);
  TPJ_EXPECT(r.id >= 0 && !r.is_arg && r.dtype == TPJ_F32 && r.ndim == 2);
  char* t = finish_text(&b, &r, 1, NULL);
  TPJ_EXPECT(t != NULL);
  if (t) {
    TPJ_EXPECT_CONTAINS(t, "func.func public @main(%arg0: tensor<2x3xf32>, %arg1: tensor<2x3xf32>)"
                           " -> (tensor<2x3xf32>)");
    TPJ_EXPECT_CONTAINS(t, "\"stablehlo.add\"(%arg0, %arg1) : (tensor<2x3xf32>, "
                           "tensor<2x3xf32>) -> tensor<2x3xf32>");
    TPJ_EXPECT_CONTAINS(t, "return %v0 : tensor<2x3xf32>");
    TPJ_EXPECT_OK(compile_text(t));
  }
  free(t);
  tpj_hlo_builder_free(&b);
}

TPJ_TEST(hlo_type_printing) {
  tpj_strbuf_t sb;
  tpj_strbuf_init(&sb);
  tpj_hlo_print_type(&sb, TPJ_F32, NULL, 0); /* 0-d has no "x" at all */
  TPJ_EXPECT(strcmp(tpj_strbuf_cstr(&sb), "tensor<f32>") == 0);
  tpj_strbuf_clear(&sb);
  int64_t d3[3] = {4, 0, 7};
  tpj_hlo_print_type(&sb, TPJ_BOOL, d3, 3);
  TPJ_EXPECT(strcmp(tpj_strbuf_cstr(&sb), "tensor<4x0x7xi1>") == 0);
  tpj_strbuf_clear(&sb);
  int64_t d1 = 5;
  tpj_hlo_print_type(&sb, TPJ_C64, &d1, 1);
  TPJ_EXPECT(strcmp(tpj_strbuf_cstr(&sb), "tensor<5xcomplex<f32>>") == 0);
  tpj_strbuf_free(&sb);
}

TPJ_TEST(hlo_scalar_module_compiles) {
  tpj_hlo_builder_t b;
  tpj_hlo_builder_init(&b);
  tpj_hlo_value_t x = tpj_hlo_arg(&b, TPJ_F32, NULL, 0);
  tpj_hlo_value_t r = tpj_hlo_emit_unary(&b, "stablehlo.negate", x);
  char* t = finish_text(&b, &r, 1, NULL);
  TPJ_EXPECT(t != NULL);
  if (t) {
    TPJ_EXPECT_CONTAINS(t, "%arg0: tensor<f32>");
    TPJ_EXPECT_CONTAINS(t, "(%arg0) : (tensor<f32>) -> tensor<f32>");
    TPJ_EXPECT_OK(compile_text(t));
  }
  free(t);
  tpj_hlo_builder_free(&b);
}

TPJ_TEST(hlo_shape_op_attributes) {
  /* Dense i64 arrays must print as array<i64: a, b>, StableHLO's current
   * attribute form; the older dense<...> form is rejected by new parsers. */
  tpj_hlo_builder_t b;
  tpj_hlo_builder_init(&b);
  int64_t d23[2] = {2, 3}, d3 = 3;
  tpj_hlo_value_t v = tpj_hlo_arg(&b, TPJ_F32, &d3, 1);
  int64_t bd = 1;
  tpj_hlo_value_t bc = tpj_hlo_emit_broadcast_in_dim(&b, v, d23, 2, &bd);
  int64_t perm[2] = {1, 0};
  tpj_hlo_value_t tr = tpj_hlo_emit_transpose(&b, bc, perm);
  int64_t st[2] = {0, 1}, li[2] = {3, 2}, sd[2] = {2, 1};
  tpj_hlo_value_t sl = tpj_hlo_emit_slice(&b, tr, st, li, sd);
  TPJ_EXPECT(sl.ndim == 2 && sl.dims[0] == 2 && sl.dims[1] == 1);
  tpj_hlo_value_t s0 = tpj_hlo_arg(&b, TPJ_F32, NULL, 0);
  tpj_hlo_value_t bs = tpj_hlo_emit_broadcast_to(&b, s0, d23, 2); /* from 0-d */
  char* t = finish_text(&b, (tpj_hlo_value_t[]){sl, bs}, 2, NULL);
  TPJ_EXPECT(t != NULL);
  if (t) {
    TPJ_EXPECT_CONTAINS(t, "\"stablehlo.broadcast_in_dim\"(%arg0) {broadcast_dimensions = "
                           "array<i64: 1>} : (tensor<3xf32>) -> tensor<2x3xf32>");
    TPJ_EXPECT_CONTAINS(t, "{permutation = array<i64: 1, 0>} : (tensor<2x3xf32>) -> "
                           "tensor<3x2xf32>");
    TPJ_EXPECT_CONTAINS(t, "{start_indices = array<i64: 0, 1>, limit_indices = array<i64: 3, "
                           "2>, strides = array<i64: 2, 1>} : (tensor<3x2xf32>) -> "
                           "tensor<2x1xf32>");
    /* an empty array is `array<i64>`, not `array<i64: >` */
    TPJ_EXPECT_CONTAINS(t, "{broadcast_dimensions = array<i64>} : (tensor<f32>) -> "
                           "tensor<2x3xf32>");
    TPJ_EXPECT_CONTAINS(t, "-> (tensor<2x1xf32>, tensor<2x3xf32>)");
    TPJ_EXPECT_OK(compile_text(t));
  }
  free(t);
  tpj_hlo_builder_free(&b);
}

TPJ_TEST(hlo_constants_iota_pad_gather_compile) {
  /* Every emitter the view reader uses, in one module the plugin must take. */
  tpj_hlo_builder_t b;
  tpj_hlo_builder_init(&b);
  int64_t n = 6, d23[2] = {2, 3};
  tpj_hlo_value_t x = tpj_hlo_arg(&b, TPJ_F32, &n, 1);
  int64_t lo = 1, hi = 2;
  tpj_hlo_value_t p = tpj_hlo_emit_pad(&b, x, tpj_hlo_emit_zero(&b, TPJ_F32), &lo, &hi);
  TPJ_EXPECT(p.dims[0] == 9);
  tpj_hlo_value_t io = tpj_hlo_emit_iota(&b, TPJ_I64, d23, 2, 1);
  tpj_hlo_value_t c = tpj_hlo_emit_broadcast_to(&b, tpj_hlo_emit_const_i64(&b, -4), d23, 2);
  tpj_hlo_value_t g = tpj_hlo_emit_gather_1d(&b, p, tpj_hlo_emit_binary(&b, "stablehlo.subtract",
                                                                       io, c));
  TPJ_EXPECT(g.dtype == TPJ_F32 && g.ndim == 2);
  tpj_hlo_value_t zb = tpj_hlo_emit_zero(&b, TPJ_BOOL);
  tpj_hlo_value_t zc = tpj_hlo_emit_zero(&b, TPJ_C128);
  tpj_hlo_value_t zh = tpj_hlo_emit_zero(&b, TPJ_BF16);
  tpj_hlo_value_t cv = tpj_hlo_emit_convert(&b, g, TPJ_F16);
  char* t = finish_text(&b, (tpj_hlo_value_t[]){cv, zb, zc, zh}, 4, NULL);
  TPJ_EXPECT(t != NULL);
  if (t) {
    TPJ_EXPECT_CONTAINS(t, "dense<-4> : tensor<i64>");
    TPJ_EXPECT_CONTAINS(t, "dense<false> : tensor<i1>");
    TPJ_EXPECT_CONTAINS(t, "{iota_dimension = 1 : i64}");
    TPJ_EXPECT_CONTAINS(t, "edge_padding_low = array<i64: 1>, edge_padding_high = array<i64: 2>");
    TPJ_EXPECT_CONTAINS(t, "\"stablehlo.gather\"");
    TPJ_EXPECT_OK(compile_text(t));
  }
  free(t);
  tpj_hlo_builder_free(&b);
}

TPJ_TEST(hlo_identity_ops_emit_nothing) {
  /* Identity reshape/transpose/slice/broadcast/convert return their operand
   * unchanged (same id, still an argument) and write no line: the view
   * reader leans on this to keep natural reads free. */
  tpj_hlo_builder_t b;
  tpj_hlo_builder_init(&b);
  int64_t d[3] = {2, 3, 4};
  tpj_hlo_value_t x = tpj_hlo_arg(&b, TPJ_I32, d, 3);
  tpj_hlo_value_t r = tpj_hlo_emit_reshape(&b, x, d, 3);
  int64_t perm[3] = {0, 1, 2};
  r = tpj_hlo_emit_transpose(&b, r, perm);
  int64_t st[3] = {0, 0, 0}, sd[3] = {1, 1, 1};
  r = tpj_hlo_emit_slice(&b, r, st, d, sd);
  int64_t bd[3] = {0, 1, 2};
  r = tpj_hlo_emit_broadcast_in_dim(&b, r, d, 3, bd);
  r = tpj_hlo_emit_convert(&b, r, TPJ_I32);
  TPJ_EXPECT(r.is_arg && r.id == x.id);
  TPJ_EXPECT(b.body.len == 0);
  TPJ_EXPECT(b.next_id == 0); /* no SSA ids were burnt either */
  char* t = finish_text(&b, &r, 1, NULL);
  TPJ_EXPECT(t != NULL);
  if (t) TPJ_EXPECT_CONTAINS(t, "return %arg0 : tensor<2x3x4xi32>");
  free(t);
  tpj_hlo_builder_free(&b);
}

/* Expects b to be failed with code and message containing `needle`, and
 * finish to return that same first failure. */
static void expect_failed(int* tpj_failed_, tpj_hlo_builder_t* b, tpj_hlo_value_t last,
                          tpj_status_code_t code, const char* needle) {
  TPJ_EXPECT(!tpj_hlo_ok(b));
  TPJ_EXPECT(last.id < 0);
  tpj_status_t s = NULL;
  char* t = finish_text(b, &last, 1, &s);
  TPJ_EXPECT(t == NULL);
  TPJ_EXPECT(s != NULL);
  TPJ_EXPECT(tpj_status_code(s) == code);
  TPJ_EXPECT_CONTAINS(tpj_status_message(s), needle);
  tpj_status_free(s);
  free(t);
}

TPJ_TEST(hlo_binary_dtype_mismatch_fails) {
  tpj_hlo_builder_t b;
  tpj_hlo_builder_init(&b);
  int64_t n = 4;
  tpj_hlo_value_t x = tpj_hlo_arg(&b, TPJ_F32, &n, 1);
  tpj_hlo_value_t y = tpj_hlo_arg(&b, TPJ_I32, &n, 1);
  tpj_hlo_value_t r = tpj_hlo_emit_binary(&b, "stablehlo.add", x, y);
  /* the message names the op and both dtypes */
  TPJ_EXPECT_CONTAINS(tpj_status_message(b.status), "stablehlo.add");
  TPJ_EXPECT_CONTAINS(tpj_status_message(b.status), "float32");
  TPJ_EXPECT_CONTAINS(tpj_status_message(b.status), "int32");
  expect_failed(tpj_failed_, &b, r, TPJ_INVALID_ARGUMENT, "differ");
  tpj_hlo_builder_free(&b);
}

TPJ_TEST(hlo_binary_shape_mismatch_fails) {
  tpj_hlo_builder_t b;
  tpj_hlo_builder_init(&b);
  int64_t n4 = 4, n5 = 5;
  tpj_hlo_value_t x = tpj_hlo_arg(&b, TPJ_F32, &n4, 1);
  tpj_hlo_value_t y = tpj_hlo_arg(&b, TPJ_F32, &n5, 1);
  expect_failed(tpj_failed_, &b, tpj_hlo_emit_binary(&b, "stablehlo.multiply", x, y),
                TPJ_INVALID_ARGUMENT, "stablehlo.multiply");
  tpj_hlo_builder_free(&b);
}

TPJ_TEST(hlo_bad_permutations_fail) {
  int64_t d[3] = {2, 3, 4};
  const int64_t bad[][3] = {{0, 0, 1}, {0, 1, 3}, {-1, 0, 1}, {2, 1, 99}};
  for (int i = 0; i < 4; ++i) {
    tpj_hlo_builder_t b;
    tpj_hlo_builder_init(&b);
    tpj_hlo_value_t x = tpj_hlo_arg(&b, TPJ_F32, d, 3);
    expect_failed(tpj_failed_, &b, tpj_hlo_emit_transpose(&b, x, bad[i]), TPJ_INVALID_ARGUMENT,
                  "permutation");
    tpj_hlo_builder_free(&b);
  }
}

TPJ_TEST(hlo_reshape_count_change_fails) {
  tpj_hlo_builder_t b;
  tpj_hlo_builder_init(&b);
  int64_t d[2] = {2, 3}, to[2] = {4, 2};
  tpj_hlo_value_t x = tpj_hlo_arg(&b, TPJ_F32, d, 2);
  expect_failed(tpj_failed_, &b, tpj_hlo_emit_reshape(&b, x, to, 2), TPJ_INVALID_ARGUMENT,
                "reshape of 6 elements into 8 elements");
  tpj_hlo_builder_free(&b);
}

TPJ_TEST(hlo_slice_out_of_range_fails) {
  int64_t d[2] = {4, 5};
  /* limit past the end, start past limit, negative start, zero stride */
  const int64_t starts[][2] = {{0, 0}, {3, 0}, {-1, 0}, {0, 0}};
  const int64_t limits[][2] = {{4, 6}, {2, 5}, {2, 5}, {4, 5}};
  const int64_t strides[][2] = {{1, 1}, {1, 1}, {1, 1}, {1, 0}};
  for (int i = 0; i < 4; ++i) {
    tpj_hlo_builder_t b;
    tpj_hlo_builder_init(&b);
    tpj_hlo_value_t x = tpj_hlo_arg(&b, TPJ_F32, d, 2);
    expect_failed(tpj_failed_, &b, tpj_hlo_emit_slice(&b, x, starts[i], limits[i], strides[i]),
                  TPJ_INVALID_ARGUMENT, "out of range");
    tpj_hlo_builder_free(&b);
  }
}

TPJ_TEST(hlo_other_invalid_inputs_fail) {
  int64_t d[2] = {2, 3}, neg[1] = {-2}, big[2] = {2, 3};
  tpj_hlo_builder_t b;
  /* broadcast to a dim that does not fit */
  tpj_hlo_builder_init(&b);
  int64_t to[2] = {4, 3}, bd[2] = {0, 1};
  tpj_hlo_value_t x = tpj_hlo_arg(&b, TPJ_F32, d, 2);
  expect_failed(tpj_failed_, &b, tpj_hlo_emit_broadcast_in_dim(&b, x, to, 2, bd),
                TPJ_INVALID_ARGUMENT, "does not fit");
  tpj_hlo_builder_free(&b);
  /* a negative dimension */
  tpj_hlo_builder_init(&b);
  expect_failed(tpj_failed_, &b, tpj_hlo_arg(&b, TPJ_F32, neg, 1), TPJ_INVALID_ARGUMENT,
                "negative dimension");
  tpj_hlo_builder_free(&b);
  /* rank beyond TPJ_MAX_DIMS: rejected before the dims are read */
  tpj_hlo_builder_init(&b);
  expect_failed(tpj_failed_, &b, tpj_hlo_arg(&b, TPJ_F32, big, TPJ_MAX_DIMS + 1),
                TPJ_UNIMPLEMENTED, "rank");
  tpj_hlo_builder_free(&b);
  /* bitcast that changes the byte count */
  tpj_hlo_builder_init(&b);
  x = tpj_hlo_arg(&b, TPJ_F32, d, 2);
  expect_failed(tpj_failed_, &b, tpj_hlo_emit_bitcast_convert(&b, x, TPJ_F64, d, 2),
                TPJ_INVALID_ARGUMENT, "bitcast");
  tpj_hlo_builder_free(&b);
  /* gather from a 2-D operand */
  tpj_hlo_builder_init(&b);
  x = tpj_hlo_arg(&b, TPJ_F32, d, 2);
  tpj_hlo_value_t idx = tpj_hlo_arg(&b, TPJ_I64, d, 1);
  expect_failed(tpj_failed_, &b, tpj_hlo_emit_gather_1d(&b, x, idx), TPJ_INVALID_ARGUMENT,
                "gather_1d");
  tpj_hlo_builder_free(&b);
}

TPJ_TEST(hlo_failure_is_sticky_and_first_wins) {
  tpj_hlo_builder_t b;
  tpj_hlo_builder_init(&b);
  int64_t d[2] = {2, 3}, to[1] = {7};
  tpj_hlo_value_t x = tpj_hlo_arg(&b, TPJ_F32, d, 2);
  tpj_hlo_value_t bad = tpj_hlo_emit_reshape(&b, x, to, 1);
  size_t len = b.body.len;
  /* every emitter after the failure, even on valid operands, is a no-op
   * that returns an invalid value; none of them may crash on `bad` */
  int64_t perm[2] = {1, 0}, st[2] = {0, 0}, sd[2] = {1, 1}, bd[2] = {0, 1};
  TPJ_EXPECT(tpj_hlo_emit_unary(&b, "stablehlo.negate", x).id < 0);
  TPJ_EXPECT(tpj_hlo_emit_binary(&b, "stablehlo.add", x, bad).id < 0);
  TPJ_EXPECT(tpj_hlo_emit_transpose(&b, bad, perm).id < 0);
  TPJ_EXPECT(tpj_hlo_emit_slice(&b, bad, st, d, sd).id < 0);
  TPJ_EXPECT(tpj_hlo_emit_broadcast_in_dim(&b, bad, d, 2, bd).id < 0);
  TPJ_EXPECT(tpj_hlo_emit_convert(&b, bad, TPJ_I32).id < 0);
  TPJ_EXPECT(tpj_hlo_emit_zero(&b, TPJ_F32).id < 0);
  TPJ_EXPECT(tpj_hlo_emit_iota(&b, TPJ_I64, d, 2, 0).id < 0);
  TPJ_EXPECT(tpj_hlo_emit_gather_1d(&b, bad, bad).id < 0);
  TPJ_EXPECT(tpj_hlo_arg(&b, TPJ_F32, d, 2).id < 0);
  tpj_hlo_fail(&b, tpj_status_make(TPJ_INTERNAL, "a later failure")); /* freed, not kept */
  TPJ_EXPECT(b.body.len == len);
  expect_failed(tpj_failed_, &b, bad, TPJ_INVALID_ARGUMENT, "reshape of 6 elements");
  tpj_hlo_builder_free(&b);
}

TPJ_TEST(hlo_finish_rejects_invalid_result) {
  /* A lowering that forgot to set its result (id -1) must be an error, not
   * a module returning %v-1. */
  tpj_hlo_builder_t b;
  tpj_hlo_builder_init(&b);
  tpj_hlo_value_t none;
  memset(&none, 0, sizeof(none));
  none.id = -1;
  tpj_status_t s = NULL;
  char* t = finish_text(&b, &none, 1, &s);
  TPJ_EXPECT(t == NULL);
  TPJ_EXPECT(tpj_status_code(s) == TPJ_INTERNAL);
  TPJ_EXPECT_CONTAINS(tpj_status_message(s), "invalid HLO value");
  tpj_status_free(s);
  free(t);
  tpj_hlo_builder_free(&b);
}
