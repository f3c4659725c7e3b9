/* view writes: tpj::write_view puts a value into a view of a storage on the
 * device; checked against the same write done on the host. */
#include <stdlib.h>

#include "exec/exec.h"
#include "rt/rt.h"
#include "tpj_test.h"

#define N 48

/* Writes 1000 + i (row-major over the view) into view v of a storage holding
 * 0..N-1 as float32, on the device and on the host, and compares. */
static int check_write(const tpj_view_t* v, int expect_ok) {
  tpj_rt_t* rt = tpj_test_rt();
  if (!rt) return 0;
  static tpj_exec_t* ex;
  if (!ex && tpj_exec_create(rt, 64, &ex)) return 0;
  float store[N], ref[N];
  for (int i = 0; i < N; ++i) store[i] = ref[i] = (float)i;
  int64_t numel = 1;
  for (int k = 0; k < v->ndim; ++k) numel *= v->sizes[k];
  float* val = (float*)malloc(sizeof(float) * (size_t)(numel ? numel : 1));
  for (int64_t i = 0; i < numel; ++i) val[i] = 1000.0f + (float)i;
  /* host reference: walk the view in row-major order */
  int64_t idx[TPJ_MAX_DIMS] = {0};
  for (int64_t i = 0; i < numel; ++i) {
    int64_t off = v->offset;
    for (int k = 0; k < v->ndim; ++k) off += idx[k] * v->strides[k];
    ref[off] = val[i];
    for (int k = v->ndim - 1; k >= 0; --k) {
      if (++idx[k] < v->sizes[k]) break;
      idx[k] = 0;
    }
  }
  int64_t n = N;
  tpj_rt_buffer_t *bs = NULL, *bv = NULL, *out = NULL;
  int ok = 1;
  tpj_status_t s = tpj_rt_buffer_from_host(rt, 0, TPJ_F32, &n, 1, store, &bs);
  if (!s) s = tpj_rt_buffer_from_host(rt, 0, TPJ_F32, v->sizes, v->ndim, val, &bv);
  tpj_exec_arg_t args[2];
  memset(args, 0, sizeof(args));
  args[0].buf = bs;
  args[1].buf = bv;
  int64_t attrs[64];
  int na = tpj_view_to_attrs(v, attrs, 64);
  tpj_rt_shape_t shp;
  memset(&shp, 0, sizeof(shp));
  shp.dtype = TPJ_F32;
  shp.ndim = 1;
  shp.dims[0] = N;
  if (!s) s = tpj_exec_run(ex, "tpj::write_view", 0, args, 2, attrs, na, &shp, 1, &out);
  if (s) {
    if (expect_ok) fprintf(stderr, "  write_view failed: %s\n", tpj_status_message(s));
    ok = !expect_ok;
    tpj_status_free(s);
  } else if (!expect_ok) {
    fprintf(stderr, "  write_view should have failed\n");
    ok = 0;
  } else {
    float got[N];
    s = tpj_rt_buffer_to_host(rt, out, got, sizeof(got));
    if (s) {
      ok = 0;
      tpj_status_free(s);
    }
    for (int i = 0; ok && i < N; ++i) {
      if (got[i] != ref[i]) {
        fprintf(stderr, "  element %d: got %g want %g\n", i, got[i], ref[i]);
        ok = 0;
      }
    }
  }
  tpj_rt_buffer_release(bs);
  tpj_rt_buffer_release(bv);
  tpj_rt_buffer_release(out);
  free(val);
  return ok;
}

static tpj_view_t mkview(int ndim, const int64_t* sizes, const int64_t* strides, int64_t off) {
  tpj_view_t v;
  memset(&v, 0, sizeof(v));
  v.dtype = TPJ_F32;
  v.ndim = ndim;
  v.offset = off;
  for (int i = 0; i < ndim; ++i) {
    v.sizes[i] = sizes[i];
    v.strides[i] = strides[i];
  }
  return v;
}

TPJ_TEST(view_write_whole_storage) {
  int64_t sz[2] = {6, 8}, st[2] = {8, 1};
  tpj_view_t v = mkview(2, sz, st, 0);
  TPJ_EXPECT(check_write(&v, 1));
}

TPJ_TEST(view_write_contiguous_rows) {  /* x.view(6, 8)[1:3] */
  int64_t sz[2] = {2, 8}, st[2] = {8, 1};
  tpj_view_t v = mkview(2, sz, st, 8);
  TPJ_EXPECT(check_write(&v, 1));
}

TPJ_TEST(view_write_column_block) {  /* x.view(6, 8)[:, 1:3] */
  int64_t sz[2] = {6, 2}, st[2] = {8, 1};
  tpj_view_t v = mkview(2, sz, st, 1);
  TPJ_EXPECT(check_write(&v, 1));
}

TPJ_TEST(view_write_transposed) {  /* x.view(6, 8).t() */
  int64_t sz[2] = {8, 6}, st[2] = {1, 8};
  tpj_view_t v = mkview(2, sz, st, 0);
  TPJ_EXPECT(check_write(&v, 1));
}

TPJ_TEST(view_write_step_slice) {  /* x[::3] of the flat storage, from 2 */
  int64_t sz[1] = {15}, st[1] = {3};
  tpj_view_t v = mkview(1, sz, st, 2);
  TPJ_EXPECT(check_write(&v, 1));
}

TPJ_TEST(view_write_single_element_0d) {
  tpj_view_t v = mkview(0, NULL, NULL, 47);
  TPJ_EXPECT(check_write(&v, 1));
}

TPJ_TEST(view_write_size1_dims_odd_strides) {
  int64_t sz[3] = {1, 4, 1}, st[3] = {99, 5, 7};
  tpj_view_t v = mkview(3, sz, st, 3);
  TPJ_EXPECT(check_write(&v, 1));
}

TPJ_TEST(view_write_overlap_scatters_and_rejects_out_of_range) {
  /* expanded: elements alias. Written by scatter (as CPU's fill_ writes
   * through it); the ops CPU refuses to write so refuse in the glue. */
  int64_t sz[2] = {3, 4}, st[2] = {0, 1};
  tpj_view_t v = mkview(2, sz, st, 0);
  TPJ_EXPECT(check_write(&v, 1));
  int64_t sz2[1] = {10}, st2[1] = {5};  /* reaches element 45 + 5 */
  tpj_view_t w = mkview(1, sz2, st2, 5);
  TPJ_EXPECT(check_write(&w, 0));
}

TPJ_TEST(view_attrs_round_trip) {
  int64_t sz[3] = {2, 3, 4}, st[3] = {12, 1, 3};
  tpj_view_t v = mkview(3, sz, st, 5), w;
  int64_t attrs[16];
  TPJ_EXPECT(tpj_view_to_attrs(&v, attrs, 16) == 9);
  TPJ_EXPECT(tpj_view_from_attrs(attrs, 9, &w) == 9);
  TPJ_EXPECT(memcmp(&v, &w, sizeof(v)) == 0);
  TPJ_EXPECT(tpj_view_to_attrs(&v, attrs, 8) == -1);
  TPJ_EXPECT(tpj_view_from_attrs(attrs, 4, &w) == -1);
}
