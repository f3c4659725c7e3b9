/* hlo/random: rng_bit_generator and sort-by-key emitters write modules the
 * plugin compiles, and reject bad operands without crashing. */
#include <stdlib.h>
#include <string.h>

#include "hlo/random.h"
#include "rt/rt.h"
#include "tpj_test.h"

static char* rng_finish(tpj_hlo_builder_t* b, tpj_hlo_value_t r) {
  tpj_strbuf_t out;
  tpj_strbuf_init(&out);
  tpj_status_t s = tpj_hlo_finish(b, &r, 1, &out);
  char* text = s ? NULL : strdup(tpj_strbuf_cstr(&out));
  tpj_status_free(s);
  tpj_strbuf_free(&out);
  return text;
}

static tpj_status_t rng_compile(const char* text) {
  tpj_rt_t* rt = tpj_test_rt();
  if (!rt) return tpj_status_make(TPJ_NOT_FOUND, "no runtime");
  tpj_rt_exe_t* exe = NULL;
  tpj_status_t s = tpj_rt_compile(rt, text, strlen(text), &exe);
  tpj_rt_exe_release(exe);
  return s;
}

TPJ_TEST(random_rng_bits_text_and_compile) {
  int64_t two = 2, dims[2] = {3, 5};
  for (int wide = 0; wide < 2; ++wide) {
    tpj_hlo_builder_t b;
    tpj_hlo_builder_init(&b);
    tpj_hlo_value_t key = tpj_hlo_arg(&b, TPJ_I64, &two, 1);
    tpj_hlo_value_t r = tpj_hlo_emit_rng_bits(&b, key, wide ? TPJ_I64 : TPJ_I32, dims, 2);
    TPJ_EXPECT(r.dtype == (wide ? TPJ_I64 : TPJ_I32) && r.ndim == 2 && r.dims[1] == 5);
    char* text = rng_finish(&b, r);
    TPJ_EXPECT(text != NULL);
    if (text) {
      TPJ_EXPECT_CONTAINS(text, "rng_algorithm THREE_FRY");
      TPJ_EXPECT_CONTAINS(text, wide ? "tensor<3x5xui64>" : "tensor<3x5xui32>");
      TPJ_EXPECT_OK(rng_compile(text));
    }
    free(text);
    tpj_hlo_builder_free(&b);
  }
}

TPJ_TEST(random_rng_bits_rejects_bad_key) {
  tpj_hlo_builder_t b;
  tpj_hlo_builder_init(&b);
  int64_t three = 3, n = 4;
  tpj_hlo_value_t key = tpj_hlo_arg(&b, TPJ_I64, &three, 1);
  tpj_hlo_value_t r = tpj_hlo_emit_rng_bits(&b, key, TPJ_I32, &n, 1);
  TPJ_EXPECT(r.id < 0 && !tpj_hlo_ok(&b));
  tpj_hlo_builder_free(&b);
}

TPJ_TEST(random_sort_by_key_compiles) {
  tpj_hlo_builder_t b;
  tpj_hlo_builder_init(&b);
  int64_t n = 6;
  tpj_hlo_value_t keys = tpj_hlo_arg(&b, TPJ_I64, &n, 1);
  tpj_hlo_value_t vals = tpj_hlo_emit_iota(&b, TPJ_I32, &n, 1, 0);
  tpj_hlo_value_t r = tpj_hlo_emit_sort_by_key(&b, keys, vals, 0);
  TPJ_EXPECT(r.dtype == TPJ_I32 && r.ndim == 1 && r.dims[0] == 6);
  char* text = rng_finish(&b, r);
  TPJ_EXPECT(text != NULL);
  if (text) {
    TPJ_EXPECT_CONTAINS(text, "stablehlo.sort");
    TPJ_EXPECT_OK(rng_compile(text));
  }
  free(text);
  tpj_hlo_builder_free(&b);
  /* mismatched shapes fail cleanly */
  tpj_hlo_builder_init(&b);
  int64_t m = 5;
  keys = tpj_hlo_arg(&b, TPJ_I64, &n, 1);
  vals = tpj_hlo_arg(&b, TPJ_I64, &m, 1);
  r = tpj_hlo_emit_sort_by_key(&b, keys, vals, 0);
  TPJ_EXPECT(r.id < 0 && !tpj_hlo_ok(&b));
  tpj_hlo_builder_free(&b);
}
