/* hlo/fft: the stablehlo.fft emitter writes modules the plugin compiles for
 * each FFT type (result types derived from the operand), and rejects
 * operands whose dtype or dims do not fit the type. */
#include <string.h>

#include "hlo/fft.h"
#include "rt/rt.h"
#include "tpj_test.h"

TPJ_TEST(hlo_fft_each_type_compiles) {
  struct {
    tpj_hlo_fft_t type;
    tpj_dtype_t in, out;
    int64_t dims[3], len[2];
    int n;
    int64_t out_last;
  } cases[] = {
      {TPJ_HLO_FFT_FFT, TPJ_C64, TPJ_C64, {2, 4, 6}, {4, 6}, 2, 6},
      {TPJ_HLO_FFT_IFFT, TPJ_C128, TPJ_C128, {2, 4, 6}, {6, 0}, 1, 6},
      {TPJ_HLO_FFT_RFFT, TPJ_F32, TPJ_C64, {2, 4, 7}, {4, 7}, 2, 4},
      {TPJ_HLO_FFT_IRFFT, TPJ_C64, TPJ_F32, {2, 4, 5}, {4, 9}, 2, 9},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    tpj_hlo_builder_t b;
    tpj_hlo_builder_init(&b);
    tpj_hlo_value_t x = tpj_hlo_arg(&b, cases[i].in, cases[i].dims, 3);
    tpj_hlo_value_t r = tpj_hlo_emit_fft(&b, x, cases[i].type, cases[i].len, cases[i].n);
    TPJ_EXPECT(r.dtype == cases[i].out && r.ndim == 3 && r.dims[2] == cases[i].out_last);
    TPJ_EXPECT(strstr(b.body.data, "fft_type = #stablehlo<fft_type") != NULL);
    tpj_strbuf_t text;
    tpj_strbuf_init(&text);
    tpj_rt_exe_t* exe = NULL;
    tpj_rt_t* rt = tpj_test_rt();
    tpj_status_t s = rt ? tpj_hlo_finish(&b, &r, 1, &text)
                        : tpj_status_make(TPJ_NOT_FOUND, "no runtime");
    if (!s) s = tpj_rt_compile(rt, tpj_strbuf_cstr(&text), text.len, &exe);
    tpj_rt_exe_release(exe);
    tpj_strbuf_free(&text);
    tpj_hlo_builder_free(&b);
    TPJ_EXPECT_OK(s);
  }
}

TPJ_TEST(hlo_fft_rejects_mismatched_operands) {
  int64_t dims[2] = {3, 8}, len8 = 8, len5 = 5, len3[4] = {3, 8, 1, 1};
  struct {
    tpj_dtype_t dt;
    tpj_hlo_fft_t type;
    const int64_t* len;
    int n;
  } bad[] = {
      {TPJ_C64, TPJ_HLO_FFT_RFFT, &len8, 1},  /* RFFT of a complex operand */
      {TPJ_F32, TPJ_HLO_FFT_FFT, &len8, 1},   /* FFT of a real operand */
      {TPJ_C64, TPJ_HLO_FFT_FFT, &len5, 1},   /* length differs from the dim */
      {TPJ_C64, TPJ_HLO_FFT_IRFFT, &len8, 1}, /* IRFFT wants 8/2+1 bins */
      {TPJ_C64, TPJ_HLO_FFT_FFT, len3, 4},    /* more than 3 dims */
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
    tpj_hlo_builder_t b;
    tpj_hlo_builder_init(&b);
    tpj_hlo_value_t x = tpj_hlo_arg(&b, bad[i].dt, dims, 2);
    tpj_hlo_value_t r = tpj_hlo_emit_fft(&b, x, bad[i].type, bad[i].len, bad[i].n);
    TPJ_EXPECT(r.id < 0 && !tpj_hlo_ok(&b));
    tpj_hlo_builder_free(&b);
  }
}
