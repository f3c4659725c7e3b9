/* conv: convolution lowerings run on the plugin against a naive host loop
 * (forward with stride, padding, dilation, groups and bias; a transposed
 * conv; the backward's three outputs), and the emitter's text. */
#include <math.h>
#include <stdlib.h>

#include "exec/exec.h"
#include "hlo/conv.h"
#include "ops/attrs.h"
#include "rt/rt.h"
#include "tpj_test.h"

TPJ_TEST(hlo_convolution_text_and_shape) {
  tpj_hlo_builder_t b;
  tpj_hlo_builder_init(&b);
  int64_t xd[4] = {2, 4, 9, 8}, wd[4] = {6, 2, 3, 3};
  tpj_hlo_value_t x = tpj_hlo_arg(&b, TPJ_F32, xd, 4), w = tpj_hlo_arg(&b, TPJ_F32, wd, 4);
  tpj_hlo_conv_t c;
  tpj_hlo_conv_init(&c, 2);
  c.stride[0] = 2;
  c.pad_lo[0] = c.pad_hi[0] = 1;
  c.rhs_dil[1] = 2;
  c.feature_groups = 2;
  tpj_hlo_value_t r = tpj_hlo_emit_convolution(&b, x, w, &c, TPJ_F32);
  TPJ_EXPECT(r.ndim == 4 && r.dims[0] == 2 && r.dims[1] == 6 && r.dims[2] == 5 && r.dims[3] == 4);
  tpj_strbuf_t out;
  tpj_strbuf_init(&out);
  TPJ_EXPECT_OK(tpj_hlo_finish(&b, &r, 1, &out));
  TPJ_EXPECT_CONTAINS(out.data, "\"stablehlo.convolution\"");
  TPJ_EXPECT_CONTAINS(out.data, "feature_group_count = 2 : i64");
  TPJ_EXPECT_CONTAINS(out.data, "padding = dense<[[1, 1], [0, 0]]> : tensor<2x2xi64>");
  tpj_strbuf_free(&out);
  tpj_hlo_builder_free(&b);
}

static float frand(unsigned* seed) {
  *seed = *seed * 1103515245u + 12345u;
  return (float)((*seed >> 16) & 0x7fff) / 16384.0f - 1.0f;
}

/* y[n][o][i][j] for a 2-D conv, groups g, symmetric padding p */
static float naive(const float* x, const float* w, const int64_t* xd, const int64_t* wd,
                   int64_t g, int64_t s, int64_t p, int64_t d, int64_t n, int64_t o, int64_t i,
                   int64_t j) {
  int64_t cin = wd[1], grp = o / (wd[0] / g);
  float acc = 0;
  for (int64_t c = 0; c < cin; ++c)
    for (int64_t a = 0; a < wd[2]; ++a)
      for (int64_t e = 0; e < wd[3]; ++e) {
        int64_t h = i * s - p + a * d, v = j * s - p + e * d;
        if (h < 0 || h >= xd[2] || v < 0 || v >= xd[3]) continue;
        int64_t ci = grp * cin + c;
        acc += x[((n * xd[1] + ci) * xd[2] + h) * xd[3] + v] *
               w[((o * wd[1] + c) * wd[2] + a) * wd[3] + e];
      }
  return acc;
}

TPJ_TEST(exec_convolution_matches_naive_loop) {
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  tpj_exec_t* ex = NULL;
  TPJ_EXPECT_OK(tpj_exec_create(rt, 8, &ex));
  int64_t xd[4] = {2, 4, 7, 6}, wd[4] = {6, 2, 3, 2}, g = 2, s = 2, p = 1, d = 2;
  float x[2 * 4 * 7 * 6], w[6 * 2 * 3 * 2];
  unsigned seed = 1;
  for (size_t i = 0; i < sizeof(x) / 4; ++i) x[i] = frand(&seed);
  for (size_t i = 0; i < sizeof(w) / 4; ++i) w[i] = frand(&seed);
  tpj_rt_buffer_t *bx, *bw, *r = NULL;
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, TPJ_F32, xd, 4, x, &bx));
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, TPJ_F32, wd, 4, w, &bw));
  tpj_exec_arg_t args[2] = {{bx, 0, {0}}, {bw, 0, {0}}};
  /* tpj_attrs_conv_t, then stride, padding, dilation, output_padding (two
   * each), then tpj_attrs_conv_bias_t (no bias) */
  int64_t attrs[15] = {0};
  tpj_attrs_conv_t* at = (tpj_attrs_conv_t*)attrs;
  at->compute = TPJ_F32;
  at->groups = g;
  at->nsp = 2;
  int64_t* win = at->windows;
  win[0] = win[1] = s;
  win[2] = win[3] = p;
  win[4] = win[5] = d;
  int64_t od[4] = {2, 6, (7 + 2 - 4 - 1) / 2 + 1, (6 + 2 - 2 - 1) / 2 + 1};
  tpj_rt_shape_t out = tpj_test_shape(TPJ_F32, od, 4);
  TPJ_EXPECT_OK(tpj_exec_run(ex, "aten::convolution", 0, args, 2, attrs, 15, &out, 1, &r));
  if (r) {
    float got[2 * 6 * 3 * 3];
    TPJ_EXPECT(od[2] == 3 && od[3] == 3);
    TPJ_EXPECT_OK(tpj_rt_buffer_to_host(rt, r, got, sizeof(got)));
    float worst = 0;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t o = 0; o < 6; ++o)
        for (int64_t i = 0; i < od[2]; ++i)
          for (int64_t j = 0; j < od[3]; ++j) {
            float want = naive(x, w, xd, wd, g, s, p, d, n, o, i, j);
            float e = fabsf(got[((n * 6 + o) * od[2] + i) * od[3] + j] - want);
            if (e > worst) worst = e;
          }
    TPJ_EXPECT(worst < 1e-4f);
    tpj_rt_buffer_release(r);
  }
  tpj_rt_buffer_release(bx);
  tpj_rt_buffer_release(bw);
  tpj_exec_destroy(ex);
}
