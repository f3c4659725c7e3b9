/* rt/box: the storage box behind every PyTorch storage. Its byte counters
 * are what torch.tpu.memory_allocated() reports, a never-written box reads
 * as zeros, and writes swap whole buffers without leaking the old one. */
#include <stdlib.h>

#include "rt/box.h"
#include "rt/rt.h"
#include "tpj_test.h"

/* The counters are process-wide per device, so each test measures deltas
 * and uses its own device index where it can. */

TPJ_TEST(box_stats_allocated_peak_reset) {
  const int dev = 200; /* a slot no other test touches; boxes need no runtime */
  tpj_box_stats_t s0, s;
  tpj_box_get_stats(dev, &s0);
  tpj_box_t* a = tpj_box_create(1000, dev);
  tpj_box_t* b = tpj_box_create(24, dev);
  TPJ_EXPECT(a != NULL && b != NULL);
  if (!a || !b) return;
  TPJ_EXPECT(a->nbytes == 1000 && a->device == dev && a->buf == NULL);
  tpj_box_get_stats(dev, &s);
  TPJ_EXPECT(s.allocated == s0.allocated + 1024);
  TPJ_EXPECT(s.peak >= s0.allocated + 1024);
  TPJ_EXPECT(s.num_allocs == s0.num_allocs + 2 && s.num_frees == s0.num_frees);
  tpj_box_destroy(a);
  tpj_box_get_stats(dev, &s);
  /* peak remembers the high-water mark until it is reset */
  TPJ_EXPECT(s.allocated == s0.allocated + 24);
  TPJ_EXPECT(s.peak >= s0.allocated + 1024);
  TPJ_EXPECT(s.num_frees == s0.num_frees + 1);
  tpj_box_reset_peak(dev);
  tpj_box_get_stats(dev, &s);
  TPJ_EXPECT(s.peak == s.allocated && s.allocated == s0.allocated + 24);
  tpj_box_destroy(b);
  tpj_box_get_stats(dev, &s);
  TPJ_EXPECT(s.allocated == s0.allocated && s.num_frees == s0.num_frees + 2);
  tpj_box_destroy(NULL); /* no-op */
}

TPJ_TEST(box_stats_are_per_device) {
  tpj_box_stats_t a0, b0, a, b;
  tpj_box_get_stats(201, &a0);
  tpj_box_get_stats(202, &b0);
  tpj_box_t* x = tpj_box_create(64, 201);
  tpj_box_get_stats(201, &a);
  tpj_box_get_stats(202, &b);
  TPJ_EXPECT(a.allocated == a0.allocated + 64);
  TPJ_EXPECT(b.allocated == b0.allocated && b.num_allocs == b0.num_allocs);
  tpj_box_destroy(x);
}

TPJ_TEST(box_stats_out_of_range_device_is_harmless) {
  /* An ordinal the counters have no slot for: no crash, zeros reported. */
  tpj_box_t* x = tpj_box_create(8, 100000);
  tpj_box_t* y = tpj_box_create(8, -1);
  TPJ_EXPECT(x != NULL && y != NULL);
  tpj_box_stats_t s;
  tpj_box_get_stats(100000, &s);
  TPJ_EXPECT(s.allocated == 0 && s.peak == 0 && s.num_allocs == 0);
  tpj_box_get_stats(-1, &s);
  TPJ_EXPECT(s.allocated == 0);
  tpj_box_reset_peak(-5);
  tpj_box_destroy(x);
  tpj_box_destroy(y);
}

TPJ_TEST(box_without_buffer_reads_zeros) {
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  tpj_box_t* box = tpj_box_create(37, 0); /* odd size: not a whole number of anything */
  unsigned char dst[38];
  memset(dst, 0xab, sizeof(dst));
  TPJ_EXPECT_OK(tpj_box_to_host(rt, box, dst));
  int zeros = 1;
  for (int i = 0; i < 37; ++i) zeros &= dst[i] == 0;
  TPJ_EXPECT(zeros);
  TPJ_EXPECT(dst[37] == 0xab); /* exactly nbytes written */
  tpj_box_destroy(box);
  /* a zero-byte box reads nothing, and dst may be NULL */
  box = tpj_box_create(0, 1);
  TPJ_EXPECT_OK(tpj_box_to_host(rt, box, NULL));
  tpj_box_destroy(box);
}

TPJ_TEST(box_from_host_to_host_round_trip) {
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  int64_t live = tpj_rt_live_buffers();
  tpj_box_t* box = tpj_box_create(6 * sizeof(double), 1);
  double x[6] = {1, -2, 3.5, 1e300, -0.0, 5e-324};
  int64_t d[2] = {2, 3};
  TPJ_EXPECT_OK(tpj_box_from_host(rt, box, TPJ_F64, d, 2, x));
  TPJ_EXPECT(box->buf != NULL && box->buf->device == 1 && box->buf->dtype == TPJ_F64);
  double got[6];
  TPJ_EXPECT_OK(tpj_box_to_host(rt, box, got));
  TPJ_EXPECT(memcmp(got, x, sizeof(x)) == 0);
  /* a second write with another dtype and shape of the same byte size
   * replaces the buffer, and the old one is released */
  int32_t y[12];
  for (int i = 0; i < 12; ++i) y[i] = -i * 99991;
  int64_t n = 12;
  TPJ_EXPECT_OK(tpj_box_from_host(rt, box, TPJ_I32, &n, 1, y));
  TPJ_EXPECT(tpj_rt_live_buffers() == live + 1);
  int32_t goty[12];
  TPJ_EXPECT_OK(tpj_box_to_host(rt, box, goty));
  TPJ_EXPECT(memcmp(goty, y, sizeof(y)) == 0);
  tpj_box_destroy(box); /* releases the box's buffer */
  TPJ_EXPECT(tpj_rt_live_buffers() == live);
}

TPJ_TEST(box_set_buffer_shares_and_releases) {
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  int64_t live = tpj_rt_live_buffers();
  float x[4] = {1, 2, 3, 4};
  int64_t n = 4;
  tpj_rt_buffer_t* buf = NULL;
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, TPJ_F32, &n, 1, x, &buf));
  /* two storages holding the same immutable buffer, one reference each */
  tpj_box_t* a = tpj_box_create(16, 0);
  tpj_box_t* b = tpj_box_create(16, 0);
  tpj_rt_buffer_retain(buf);
  tpj_box_set_buffer(a, buf);
  tpj_box_set_buffer(b, buf);
  TPJ_EXPECT(buf->refcount == 2);
  tpj_box_destroy(a);
  float got[4];
  TPJ_EXPECT_OK(tpj_box_to_host(rt, b, got)); /* still alive through b */
  TPJ_EXPECT(memcmp(got, x, sizeof(x)) == 0);
  tpj_box_set_buffer(b, NULL); /* back to "never written": zeros again */
  TPJ_EXPECT(tpj_rt_live_buffers() == live);
  TPJ_EXPECT_OK(tpj_box_to_host(rt, b, got));
  TPJ_EXPECT(got[0] == 0 && got[3] == 0);
  tpj_box_destroy(b);
}

TPJ_TEST(box_from_host_wrong_byte_count_fails) {
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  int64_t live = tpj_rt_live_buffers();
  tpj_box_t* box = tpj_box_create(16, 0);
  float x[5] = {1, 2, 3, 4, 5};
  int64_t n5 = 5, n2 = 2;
  tpj_status_t s = tpj_box_from_host(rt, box, TPJ_F32, &n5, 1, x); /* 20 bytes into 16 */
  TPJ_EXPECT(s != NULL);
  TPJ_EXPECT_CONTAINS(tpj_status_message(s), "20 bytes");
  TPJ_EXPECT_CONTAINS(tpj_status_message(s), "16 bytes");
  tpj_status_free(s);
  s = tpj_box_from_host(rt, box, TPJ_F32, &n2, 1, x); /* 8 bytes: too few */
  TPJ_EXPECT(s != NULL);
  tpj_status_free(s);
  /* the failed writes changed nothing: still unwritten, still zeros */
  TPJ_EXPECT(box->buf == NULL);
  TPJ_EXPECT(tpj_rt_live_buffers() == live);
  float got[4] = {9, 9, 9, 9};
  TPJ_EXPECT_OK(tpj_box_to_host(rt, box, got));
  TPJ_EXPECT(got[0] == 0 && got[3] == 0);
  tpj_box_destroy(box);
}

TPJ_TEST(box_holding_wrong_sized_buffer_reports_it) {
  /* A buffer whose size disagrees with the storage is a bug upstream; the
   * box must say so instead of copying past dst. */
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  int64_t n = 8;
  float x[8] = {0};
  tpj_rt_buffer_t* buf = NULL;
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, TPJ_F32, &n, 1, x, &buf));
  tpj_box_t* box = tpj_box_create(16, 0);
  tpj_box_set_buffer(box, buf);
  float got[4];
  tpj_status_t s = tpj_box_to_host(rt, box, got);
  TPJ_EXPECT(tpj_status_code(s) == TPJ_INTERNAL);
  TPJ_EXPECT_CONTAINS(tpj_status_message(s), "32 bytes");
  tpj_status_free(s);
  tpj_box_destroy(box);
}
