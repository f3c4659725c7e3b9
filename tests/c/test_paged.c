/* ops/attention: tpj::paged_attention (vLLM's paged KV cache read through
 * tiles of one request) on a case worked by hand: one query head of size 1
 * over keys 0, 0, ln 2 (values 4, 8, 12) in two blocks, softmax weights
 * 1/4, 1/4, 1/2, so the output is 9; the key after the query's position
 * (100, value 1000) is masked, a padding row gives 0, and a window of 1
 * leaves the last key alone (12). Loop steps of one block and of two. */
#include <math.h>
#include <string.h>

#include "exec/exec.h"
#include "tpj_test.h"

/* Runs the op with chunk c and window (-1: none); out gets 2 rows. */
static tpj_status_t paged(tpj_rt_t* rt, tpj_exec_t* ex, int64_t c, int64_t window, float* out) {
  /* blocks x block 2 x 1 head x (key, value); the request holds blocks 3, 1 */
  float cache[4][2][2] = {{{0, 0}, {0, 0}},
                          {{(float)log(2.0), 12}, {100, 1000}},
                          {{0, 0}, {0, 0}},
                          {{0, 4}, {0, 8}}};
  float q[2] = {1, 5};
  int32_t tiles[2][2] = {{3, 1}, {0, 0}}, row_token[2] = {0, 1}, row_pos[2] = {2, -1},
          token_row[2] = {0, 1};
  double scale = 1, cap = 0;
  int64_t dq[3] = {2, 1, 1}, dc[4] = {4, 2, 1, 2}, dt[2] = {2, 2}, two = 2;
  struct { tpj_dtype_t dt; const int64_t* d; int n; const void* p; } in[8] = {
      {TPJ_F32, dq, 3, q}, {TPJ_F32, dc, 4, cache}, {TPJ_I32, dt, 2, tiles},
      {TPJ_I32, &two, 1, row_token}, {TPJ_I32, &two, 1, row_pos}, {TPJ_I32, &two, 1, token_row},
      {TPJ_F64, NULL, 0, &scale}, {TPJ_F64, NULL, 0, &cap}};
  tpj_rt_buffer_t* b[8] = {NULL};
  tpj_exec_arg_t args[8];
  memset(args, 0, sizeof(args));
  tpj_status_t s = NULL;
  for (int i = 0; i < 8 && !s; ++i) {
    s = tpj_rt_buffer_from_host(rt, 0, in[i].dt, in[i].d, in[i].n, in[i].p, &b[i]);
    args[i].buf = b[i];
  }
  int64_t attrs[4] = {TPJ_F32, c, window, 0};
  tpj_rt_shape_t o = tpj_test_shape(TPJ_F32, dq, 3);
  tpj_rt_buffer_t* r = NULL;
  if (!s) s = tpj_exec_run(ex, "tpj::paged_attention", 0, args, 8, attrs, 4, &o, 1, &r);
  if (!s) s = tpj_rt_buffer_to_host(rt, r, out, 2 * sizeof(float));
  tpj_rt_buffer_release(r);
  for (int i = 0; i < 8; ++i) tpj_rt_buffer_release(b[i]);
  return s;
}

TPJ_TEST(exec_paged_attention_by_hand) {
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  tpj_exec_t* ex = NULL;
  TPJ_EXPECT_OK(tpj_exec_create(rt, 8, &ex));
  for (int64_t c = 1; c <= 2; ++c) {
    float out[2] = {-1, -1};
    TPJ_EXPECT_OK(paged(rt, ex, c, -1, out));
    TPJ_EXPECT(fabsf(out[0] - 9.0f) < 1e-5f);
    TPJ_EXPECT(out[1] == 0.0f);
    TPJ_EXPECT_OK(paged(rt, ex, c, 1, out));
    TPJ_EXPECT(fabsf(out[0] - 12.0f) < 1e-5f);
    TPJ_EXPECT(out[1] == 0.0f);
  }
  tpj_exec_destroy(ex);
}
