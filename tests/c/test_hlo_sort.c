/* hlo/sort: the sort and scan emitters write modules the plugin compiles
 * (multi-result sort with its comparator region, reduce_window scans with
 * each body), and reject operands they cannot handle. */
#include <stdlib.h>

#include "hlo/sort.h"
#include "rt/rt.h"
#include "tpj_test.h"

static tpj_status_t compile_module(tpj_hlo_builder_t* b, const tpj_hlo_value_t* res, int n) {
  tpj_strbuf_t out;
  tpj_strbuf_init(&out);
  tpj_status_t s = tpj_hlo_finish(b, res, n, &out);
  if (!s) {
    tpj_rt_t* rt = tpj_test_rt();
    if (!rt) {
      s = tpj_status_make(TPJ_NOT_FOUND, "no runtime");
    } else {
      tpj_rt_exe_t* exe = NULL;
      s = tpj_rt_compile(rt, tpj_strbuf_cstr(&out), out.len, &exe);
      tpj_rt_exe_release(exe);
    }
  }
  tpj_strbuf_free(&out);
  return s;
}

TPJ_TEST(hlo_sort_float_key_with_payload_compiles) {
  for (int desc = 0; desc < 2; ++desc) {
    tpj_hlo_builder_t b;
    tpj_hlo_builder_init(&b);
    int64_t dims[2] = {3, 5};
    tpj_hlo_value_t xs[2] = {tpj_hlo_arg(&b, TPJ_BF16, dims, 2),
                             tpj_hlo_emit_iota(&b, TPJ_I64, dims, 2, 1)};
    tpj_hlo_value_t out[2];
    tpj_hlo_emit_sort(&b, xs, 2, 1, desc, out);
    TPJ_EXPECT(out[0].dtype == TPJ_BF16 && out[1].dtype == TPJ_I64 && out[1].dims[1] == 5);
    TPJ_EXPECT(strstr(b.body.data, "is_stable = true") != NULL);
    TPJ_EXPECT_OK(compile_module(&b, out, 2));
    tpj_hlo_builder_free(&b);
  }
}

TPJ_TEST(hlo_sort_rejects_bool_key_and_bad_dim) {
  tpj_hlo_builder_t b;
  tpj_hlo_builder_init(&b);
  int64_t dims[1] = {4};
  tpj_hlo_value_t x = tpj_hlo_arg(&b, TPJ_BOOL, dims, 1), out[1];
  tpj_hlo_emit_sort(&b, &x, 1, 0, 0, out);
  TPJ_EXPECT(out[0].id < 0 && !tpj_hlo_ok(&b));
  tpj_hlo_builder_free(&b);
  tpj_hlo_builder_init(&b);
  x = tpj_hlo_arg(&b, TPJ_I32, dims, 1);
  tpj_hlo_emit_sort(&b, &x, 1, 1, 0, out);
  TPJ_EXPECT(out[0].id < 0 && !tpj_hlo_ok(&b));
  tpj_hlo_builder_free(&b);
}

TPJ_TEST(hlo_cumulative_bodies_compile) {
  tpj_hlo_scan_t ops[3] = {TPJ_HLO_SCAN_ADD, TPJ_HLO_SCAN_MUL, TPJ_HLO_SCAN_LOGADDEXP};
  for (int i = 0; i < 3; ++i) {
    tpj_hlo_builder_t b;
    tpj_hlo_builder_init(&b);
    int64_t dims[3] = {2, 6, 3};
    tpj_hlo_value_t x = tpj_hlo_arg(&b, TPJ_F32, dims, 3);
    tpj_hlo_value_t r = tpj_hlo_emit_cumulative(&b, x, 1, ops[i], i == 1);
    TPJ_EXPECT(r.ndim == 3 && r.dims[1] == 6);
    TPJ_EXPECT(strstr(b.body.data, i == 1 ? "[0, 5]" : "[5, 0]") != NULL);
    TPJ_EXPECT_OK(compile_module(&b, &r, 1));
    tpj_hlo_builder_free(&b);
  }
}

TPJ_TEST(hlo_cumulative_rejects_empty_dim) {
  tpj_hlo_builder_t b;
  tpj_hlo_builder_init(&b);
  int64_t dims[1] = {0};
  tpj_hlo_value_t x = tpj_hlo_arg(&b, TPJ_F32, dims, 1);
  tpj_hlo_value_t r = tpj_hlo_emit_cumulative(&b, x, 0, TPJ_HLO_SCAN_ADD, 0);
  TPJ_EXPECT(r.id < 0 && !tpj_hlo_ok(&b));
  tpj_hlo_builder_free(&b);
}
