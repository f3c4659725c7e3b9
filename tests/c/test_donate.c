/* Eager donation: tpj_view_as_box (which writes are one update of the
 * buffer's own shape) and tpj_exec_run_donating (a write that hands the old
 * storage buffer to the new one when nothing else holds it). */
#include <stdlib.h>

#include "exec/donate.h"
#include "rt/track.h"
#include "tpj_test.h"
#include "view/box.h"

#define F32_VIEW(nd, off, ...) \
  ((tpj_view_t){.dtype = TPJ_F32, .ndim = (nd), .offset = (off), __VA_ARGS__})

/* The (6, 8) float32 type of the storages below. */
static tpj_rt_shape_t f32_6x8(void) {
  tpj_rt_shape_t shp;
  memset(&shp, 0, sizeof(shp));
  shp.dtype = TPJ_F32;
  shp.ndim = 2;
  shp.dims[0] = 6;
  shp.dims[1] = 8;
  return shp;
}

TPJ_TEST(view_as_box_finds_blocks) {
  int64_t dims[4] = {1, 4, 32, 8}, start[4], sizes[4];
  /* cache[:, :, 5:6] of (1, 4, 32, 8) */
  tpj_view_t v = F32_VIEW(4, 5 * 8, .sizes = {1, 4, 1, 8}, .strides = {1024, 256, 8, 1});
  TPJ_EXPECT(tpj_view_as_box(&v, dims, 4, start, sizes));
  TPJ_EXPECT(start[0] == 0 && start[1] == 0 && start[2] == 5 && start[3] == 0);
  TPJ_EXPECT(sizes[0] == 1 && sizes[1] == 4 && sizes[2] == 1 && sizes[3] == 8);
  /* x[:, 3] of (6, 8), a 1-D view of stride 8 */
  int64_t d2[2] = {6, 8};
  v = F32_VIEW(1, 3, .sizes = {6}, .strides = {8});
  TPJ_EXPECT(tpj_view_as_box(&v, d2, 2, start, sizes));
  TPJ_EXPECT(start[0] == 0 && start[1] == 3 && sizes[0] == 6 && sizes[1] == 1);
  /* x[2:4, 1:7] of (6, 8), viewed with an extra size-1 dim of any stride */
  v = F32_VIEW(3, 2 * 8 + 1, .sizes = {2, 1, 6}, .strides = {8, 77, 1});
  TPJ_EXPECT(tpj_view_as_box(&v, d2, 2, start, sizes));
  TPJ_EXPECT(start[0] == 2 && start[1] == 1 && sizes[0] == 2 && sizes[1] == 6);
}

TPJ_TEST(view_as_box_rejects_what_is_not_a_block) {
  int64_t d2[2] = {6, 8}, start[2], sizes[2];
  const tpj_view_t not_blocks[] = {
      F32_VIEW(2, 0, .sizes = {8, 6}, .strides = {1, 8}),      /* transposed */
      F32_VIEW(2, 0, .sizes = {3, 4}, .strides = {16, 1}),     /* x[::2] */
      F32_VIEW(2, 0, .sizes = {2, 4}, .strides = {8, 2}),      /* x[:2, ::2] */
      F32_VIEW(2, 8 + 3, .sizes = {2, 6}, .strides = {8, 1}),  /* past the row */
      F32_VIEW(2, 4 * 8, .sizes = {3, 8}, .strides = {8, 1}),  /* past the end */
      F32_VIEW(2, 0, .sizes = {3, 8}, .strides = {0, 1}),      /* expanded: aliases */
  };
  for (size_t i = 0; i < sizeof(not_blocks) / sizeof(not_blocks[0]); ++i)
    TPJ_EXPECT(!tpj_view_as_box(&not_blocks[i], d2, 2, start, sizes));
}

/* Writes 1000 + i into column `col` of a (6, 8) float32 storage holding
 * 0..47 through tpj_exec_run_donating; *out_buf receives the new storage. */
static tpj_status_t write_column(tpj_exec_t* ex, tpj_rt_buffer_t* store, int64_t col,
                                 tpj_rt_buffer_t** out_buf, int* donated) {
  tpj_rt_t* rt = tpj_test_rt();
  float val[6];
  for (int i = 0; i < 6; ++i) val[i] = 1000.0f + (float)i;
  int64_t vd[2] = {6, 1};
  tpj_rt_buffer_t* bv = NULL;
  TPJ_RETURN_IF_ERROR(tpj_rt_buffer_from_host(rt, 0, TPJ_F32, vd, 2, val, &bv));
  tpj_exec_arg_t args[2];
  memset(args, 0, sizeof(args));
  args[0].buf = store;
  args[1].buf = bv;
  tpj_view_t v = F32_VIEW(2, col, .sizes = {6, 1}, .strides = {8, 1});
  int64_t attrs[64];
  int na = tpj_view_to_attrs(&v, attrs, 64);
  tpj_rt_shape_t shp = f32_6x8();
  int donate_to[2] = {0, -1};
  tpj_status_t s = tpj_exec_run_donating(ex, "tpj::write_view", 0, args, 2, attrs, na, &shp, 1,
                                         donate_to, out_buf, donated);
  tpj_rt_buffer_release(bv);
  return s;
}

static int column_written(tpj_rt_buffer_t* b, int64_t col, float first) {
  float got[48];
  tpj_status_t s = tpj_rt_buffer_to_host(tpj_test_rt(), b, got, sizeof(got));
  if (s) {
    tpj_status_free(s);
    return 0;
  }
  for (int i = 0; i < 48; ++i) {
    float want = (i % 8 == col) ? first + (float)(i / 8) : (float)i;
    if (got[i] != want) return 0;
  }
  return 1;
}

TPJ_TEST(exec_run_donating_donates_a_sole_buffer) {
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  tpj_exec_t* ex = NULL;
  TPJ_EXPECT_OK(tpj_exec_create(rt, 8, &ex));
  float init[48];
  for (int i = 0; i < 48; ++i) init[i] = (float)i;
  int64_t dims[2] = {6, 8};
  tpj_rt_buffer_t *store = NULL, *out = NULL, *out2 = NULL;
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, TPJ_F32, dims, 2, init, &store));
  int64_t bytes0 = 0, peak = 0;
  tpj_rt_buffer_bytes(0, &bytes0, &peak);

  /* shared (a clone holds it too): not donated, and left intact */
  tpj_rt_buffer_retain(store);
  int donated = -1;
  TPJ_EXPECT_OK(write_column(ex, store, 2, &out, &donated));
  TPJ_EXPECT(donated == 0);
  TPJ_EXPECT(column_written(out, 2, 1000.0f));
  tpj_rt_buffer_release(store);
  float check[48];
  TPJ_EXPECT_OK(tpj_rt_buffer_to_host(rt, store, check, sizeof(check)));
  TPJ_EXPECT(check[2] == 2.0f && check[47] == 47.0f);

  /* sole holder: donated; its bytes pass to the result */
  tpj_rt_buffer_release(store);
  int64_t before = 0;
  tpj_rt_buffer_bytes(0, &before, &peak);
  TPJ_EXPECT_OK(write_column(ex, out, 5, &out2, &donated));
  TPJ_EXPECT(donated == 1);
  int64_t after = 0;
  tpj_rt_buffer_bytes(0, &after, &peak);
  TPJ_EXPECT(after == before);  /* the new storage took the old one's memory */
  /* the donated buffer cannot be read again: an error, not a crash */
  tpj_status_t s = tpj_rt_buffer_to_host(rt, out, check, sizeof(check));
  TPJ_EXPECT(s && tpj_status_code(s) == TPJ_FAILED_PRECONDITION);
  tpj_status_free(s);
  tpj_rt_buffer_release(out);
  float got[48];
  TPJ_EXPECT_OK(tpj_rt_buffer_to_host(rt, out2, got, sizeof(got)));
  for (int i = 0; i < 48; ++i) {
    float want = (i % 8 == 2 || i % 8 == 5) ? 1000.0f + (float)(i / 8) : (float)i;
    TPJ_EXPECT(got[i] == want);
  }
  tpj_exec_metrics_t m;
  tpj_exec_get_metrics(ex, &m);
  TPJ_EXPECT(m.donated_buffers == 1);
  TPJ_EXPECT(m.compiles == 2);  /* the donating executable is its own entry */
  tpj_rt_buffer_release(out2);
  tpj_exec_destroy(ex);
}

/* tpj::write_block: one executable for every position (the starts are
 * run-time operands), the old buffer donated. */
TPJ_TEST(exec_write_block_at_run_time_positions) {
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  tpj_exec_t* ex = NULL;
  TPJ_EXPECT_OK(tpj_exec_create(rt, 8, &ex));
  float init[48], ref[48];
  for (int i = 0; i < 48; ++i) init[i] = ref[i] = (float)i;
  int64_t dims[2] = {6, 8}, vd[1] = {6};
  tpj_rt_buffer_t* store = NULL;
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, TPJ_F32, dims, 2, init, &store));
  /* the view x[:, c] (rank 1, 6 elements) is the block (6, 1) at (0, c) */
  int64_t attrs[5] = {TPJ_F32, 1, 6, 6, 1};
  tpj_rt_shape_t shp = f32_6x8();
  for (int64_t c = 1; c < 8; c += 3) {
    float val[6];
    for (int i = 0; i < 6; ++i) val[i] = ref[i * 8 + c] = 100.0f * (float)c + (float)i;
    int64_t zero = 0;
    tpj_rt_buffer_t *bv = NULL, *s0 = NULL, *s1 = NULL, *out = NULL;
    TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, TPJ_F32, vd, 1, val, &bv));
    TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, TPJ_I64, NULL, 0, &zero, &s0));
    TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, TPJ_I64, NULL, 0, &c, &s1));
    tpj_exec_arg_t args[4];
    memset(args, 0, sizeof(args));
    args[0].buf = store;
    args[1].buf = bv;
    args[2].buf = s0;
    args[3].buf = s1;
    int donate_to[4] = {0, -1, -1, -1};
    int donated = 0;
    TPJ_EXPECT_OK(tpj_exec_run_donating(ex, "tpj::write_block", 0, args, 4, attrs, 5, &shp, 1,
                                        donate_to, &out, &donated));
    TPJ_EXPECT(donated == 1);
    tpj_rt_buffer_release(store);
    store = out;
    tpj_rt_buffer_release(bv);
    tpj_rt_buffer_release(s0);
    tpj_rt_buffer_release(s1);
  }
  float got[48];
  TPJ_EXPECT_OK(tpj_rt_buffer_to_host(rt, store, got, sizeof(got)));
  for (int i = 0; i < 48; ++i) TPJ_EXPECT(got[i] == ref[i]);
  tpj_exec_metrics_t m;
  tpj_exec_get_metrics(ex, &m);
  TPJ_EXPECT(m.cache_misses == 1);  /* three positions, one executable */
  tpj_rt_buffer_release(store);
  tpj_exec_destroy(ex);
}
