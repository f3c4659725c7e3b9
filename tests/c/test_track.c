/* rt/track: stream tags, marks (events) and per-device byte counts, on the
 * real CPU plugin. */
#include <stdlib.h>

#include "rt/box.h"
#include "rt/rt.h"
#include "rt/track.h"
#include "tpj_test.h"

static const char kTwiceMlir[] =
    "module @m {\n"
    "  func.func public @main(%arg0: tensor<64xf32>) -> (tensor<64xf32>) {\n"
    "    %0 = \"stablehlo.add\"(%arg0, %arg0) : (tensor<64xf32>, tensor<64xf32>) -> "
    "tensor<64xf32>\n"
    "    return %0 : tensor<64xf32>\n"
    "  }\n"
    "}\n";

TPJ_TEST(track_buffer_bytes_follow_buffers) {
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  TPJ_EXPECT_OK(tpj_rt_synchronize(rt, -1));
  int64_t cur0, peak0, cur, peak;
  tpj_rt_buffer_bytes(1, &cur0, &peak0);
  float x[64] = {0};
  int64_t n = 64;
  tpj_rt_buffer_t* b = NULL;
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 1, TPJ_F32, &n, 1, x, &b));
  tpj_rt_buffer_bytes(1, &cur, &peak);
  TPJ_EXPECT(cur == cur0 + 256 && peak >= cur);
  tpj_rt_buffer_release(b);
  tpj_rt_buffer_bytes(1, &cur, &peak);
  TPJ_EXPECT(cur == cur0 && peak >= cur0 + 256);
  tpj_rt_reset_peak_buffer_bytes(1);
  tpj_rt_buffer_bytes(1, &cur, &peak);
  TPJ_EXPECT(peak == cur);
  tpj_rt_buffer_bytes(-1, &cur, &peak); /* unknown device: zeros, no crash */
  TPJ_EXPECT(cur == 0 && peak == 0);
}

TPJ_TEST(track_box_byte_totals) {
  int64_t a0, f0, a1, f1;
  tpj_box_byte_totals(0, &a0, &f0);
  tpj_box_t* box = tpj_box_create(1000, 0);
  TPJ_EXPECT(box != NULL);
  tpj_box_destroy(box);
  tpj_box_byte_totals(0, &a1, &f1);
  TPJ_EXPECT(a1 == a0 + 1000 && f1 == f0 + 1000);
}

TPJ_TEST(track_marks_cover_their_stream) {
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  int64_t live = tpj_rt_live_buffers();
  tpj_rt_exe_t* exe = NULL;
  TPJ_EXPECT_OK(tpj_rt_compile(rt, kTwiceMlir, strlen(kTwiceMlir), &exe));
  float x[64];
  for (int i = 0; i < 64; ++i) x[i] = (float)i;
  int64_t n = 64;
  tpj_rt_shape_t shape;
  memset(&shape, 0, sizeof(shape));
  shape.dtype = TPJ_F32;
  shape.ndim = 1;
  shape.dims[0] = 64;
  tpj_rt_buffer_t* cur = NULL;
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, TPJ_F32, &n, 1, x, &cur));

  /* nothing launched on stream 7 yet: its mark is done at once */
  tpj_rt_mark_t* empty = NULL;
  TPJ_EXPECT_OK(tpj_rt_mark_record(rt, 0, 7, &empty));
  TPJ_EXPECT(tpj_rt_mark_query(rt, empty) == 1);
  TPJ_EXPECT(tpj_rt_mark_device(empty) == 0);

  tpj_rt_set_thread_stream(0, 7);
  TPJ_EXPECT(tpj_rt_thread_stream(0) == 7);
  for (int k = 0; k < 20; ++k) {
    tpj_rt_buffer_t* out = NULL;
    TPJ_EXPECT_OK(tpj_rt_execute(rt, exe, 0, &cur, 1, &shape, 1, &out, "twice"));
    tpj_rt_buffer_release(cur);
    cur = out;
  }
  tpj_rt_set_thread_stream(0, 0);
  tpj_rt_mark_t* after = NULL;
  TPJ_EXPECT_OK(tpj_rt_mark_record(rt, 0, 7, &after));
  /* the default stream has none of that work */
  TPJ_EXPECT(tpj_rt_stream_query(rt, 0, 0) == 1);
  TPJ_EXPECT_OK(tpj_rt_mark_wait(rt, after));
  TPJ_EXPECT(tpj_rt_mark_query(rt, after) == 1);
  TPJ_EXPECT(tpj_rt_stream_query(rt, 0, 7) == 1);
  TPJ_EXPECT(tpj_rt_mark_time_ns(after) >= tpj_rt_mark_time_ns(empty));
  TPJ_EXPECT_OK(tpj_rt_stream_synchronize(rt, 0, 7));
  float got[64];
  TPJ_EXPECT_OK(tpj_rt_buffer_to_host(rt, cur, got, sizeof(got)));
  for (int i = 0; i < 64; ++i) TPJ_EXPECT(got[i] == x[i] * 1048576.0f);
  tpj_rt_mark_release(empty);
  tpj_rt_mark_release(after);
  tpj_rt_mark_release(NULL);
  tpj_rt_buffer_release(cur);
  tpj_rt_exe_release(exe);
  TPJ_EXPECT_OK(tpj_rt_synchronize(rt, -1));
  TPJ_EXPECT(tpj_rt_live_buffers() == live);
  /* a bad device is refused */
  tpj_rt_mark_t* m = (tpj_rt_mark_t*)1;
  tpj_status_t s = tpj_rt_mark_record(rt, 9, 0, &m);
  TPJ_EXPECT(s != NULL && m == NULL);
  tpj_status_free(s);
}
