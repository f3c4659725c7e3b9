/* hlo/collective and rt/replicated: the collective emitters write the
 * replica groups and shapes XLA expects and reject shapes they cannot split;
 * a replicated program compiles with a device assignment and runs (one
 * replica on device 0 here; tests/python/distributed/test_xla.py runs four). */
#include <string.h>

#include "hlo/collective.h"
#include "rt/replicated.h"
#include "rt/rt.h"
#include "tpj_test.h"

TPJ_TEST(hlo_collective_text_and_shapes) {
  tpj_hlo_builder_t b;
  tpj_hlo_builder_init(&b);
  int64_t dims[2] = {8, 3};
  tpj_hlo_value_t x = tpj_hlo_arg(&b, TPJ_F32, dims, 2);
  tpj_hlo_value_t r = tpj_hlo_emit_all_reduce(&b, x, 4, "stablehlo.maximum");
  TPJ_EXPECT(r.ndim == 2 && r.dims[0] == 8);
  tpj_hlo_value_t g = tpj_hlo_emit_all_gather(&b, x, 4);
  TPJ_EXPECT(g.dims[0] == 32 && g.dims[1] == 3);
  tpj_hlo_value_t s = tpj_hlo_emit_reduce_scatter(&b, x, 4, "stablehlo.add");
  TPJ_EXPECT(s.dims[0] == 2 && s.dims[1] == 3);
  tpj_hlo_value_t a = tpj_hlo_emit_all_to_all(&b, x, 4);
  TPJ_EXPECT(a.dims[0] == 8);
  TPJ_EXPECT(tpj_hlo_ok(&b));
  const char* text = b.body.data;
  TPJ_EXPECT(strstr(text, "\"stablehlo.all_reduce\"") && strstr(text, "stablehlo.maximum"));
  TPJ_EXPECT(strstr(text, "replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>"));
  TPJ_EXPECT(strstr(text, "all_gather_dim = 0 : i64"));
  TPJ_EXPECT(strstr(text, "scatter_dimension = 0 : i64"));
  TPJ_EXPECT(strstr(text, "split_count = 4 : i64"));
  tpj_hlo_builder_free(&b);
}

TPJ_TEST(hlo_collective_rejects_indivisible_dim) {
  tpj_hlo_builder_t b;
  tpj_hlo_builder_init(&b);
  int64_t dims[1] = {6};
  tpj_hlo_value_t x = tpj_hlo_arg(&b, TPJ_I32, dims, 1);
  TPJ_EXPECT(tpj_hlo_emit_reduce_scatter(&b, x, 4, "stablehlo.add").id < 0 && !tpj_hlo_ok(&b));
  tpj_hlo_builder_free(&b);
  tpj_hlo_builder_init(&b);
  x = tpj_hlo_arg(&b, TPJ_I32, dims, 1);
  TPJ_EXPECT(tpj_hlo_emit_all_to_all(&b, x, 4).id < 0 && !tpj_hlo_ok(&b));
  tpj_hlo_builder_free(&b);
}

TPJ_TEST(rt_replicated_program_runs) {
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  tpj_hlo_builder_t b;
  tpj_hlo_builder_init(&b);
  int64_t dims[1] = {3};
  tpj_hlo_value_t x = tpj_hlo_arg(&b, TPJ_F32, dims, 1);
  tpj_hlo_value_t r = tpj_hlo_emit_all_reduce(&b, x, 1, "stablehlo.add");
  tpj_strbuf_t text;
  tpj_strbuf_init(&text);
  TPJ_EXPECT_OK(tpj_hlo_finish(&b, &r, 1, &text));
  tpj_hlo_builder_free(&b);
  int devices[1] = {0};
  tpj_rt_exe_t* exe = NULL;
  TPJ_EXPECT_OK(tpj_rt_compile_replicated(rt, text.data, text.len, devices, 1, &exe));
  tpj_strbuf_free(&text);
  float in[3] = {1.5f, -2.0f, 4.0f}, out[3] = {0};
  tpj_rt_buffer_t* arg = NULL;
  tpj_rt_buffer_t* res = NULL;
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, TPJ_F32, dims, 1, in, &arg));
  tpj_rt_shape_t shape = {TPJ_F32, 1, {3}};
  TPJ_EXPECT_OK(tpj_rt_execute_replicated(rt, exe, devices, 1, &arg, 1, &shape, 1, &res, "t"));
  TPJ_EXPECT(res && res->device == 0);
  if (res) TPJ_EXPECT_OK(tpj_rt_buffer_to_host(rt, res, out, sizeof(out)));
  TPJ_EXPECT(out[0] == 1.5f && out[1] == -2.0f && out[2] == 4.0f);
  /* A device the client does not have is refused, not launched. */
  int bad[1] = {tpj_rt_device_count(rt)};
  tpj_rt_exe_t* none = NULL;
  tpj_status_t s = tpj_rt_compile_replicated(rt, "", 0, bad, 1, &none);
  TPJ_EXPECT(s != NULL && none == NULL);
  tpj_status_free(s);
  tpj_rt_buffer_release(arg);
  tpj_rt_buffer_release(res);
  tpj_rt_exe_release(exe);
}
