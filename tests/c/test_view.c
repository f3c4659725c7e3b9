/* view: tpj_view_emit_read end to end. Each case uploads a host array,
 * compiles `main(buf) = read(view)`, runs it on the plugin and compares every
 * element, byte for byte, with the host reference
 *   storage_as_view_dtype[offset + sum(i_k * stride_k)].
 * Cases also pin which path the reader took (plain slices, pad, gather), so
 * a regression that silently falls back to a gather is caught too. */
#include <stdlib.h>

#include "exec/exec.h"
#include "rt/rt.h"
#include "tpj_test.h"
#include "view/view.h"

static tpj_view_t mkview(tpj_dtype_t dt, int ndim, const int64_t* sizes, const int64_t* strides,
                         int64_t offset) {
  tpj_view_t v;
  memset(&v, 0, sizeof(v));
  v.dtype = dt;
  v.ndim = ndim;
  if (ndim) memcpy(v.sizes, sizes, (size_t)ndim * sizeof(int64_t));
  if (ndim) memcpy(v.strides, strides, (size_t)ndim * sizeof(int64_t));
  v.offset = offset;
  return v;
}
#define V(dt, nd, offset, ...) \
  mkview(dt, nd, (int64_t[]){__VA_ARGS__}, (int64_t[]){__VA_ARGS__} + (nd), offset)
/* V(dt, ndim, offset, sizes..., strides...): sizes then strides, ndim each */

/* Builds the module reading v out of a (bdt, bdims) argument; *out_text is
 * malloc'd on success. */
static tpj_status_t lower_read(tpj_dtype_t bdt, const int64_t* bdims, int bndim,
                               const tpj_view_t* v, tpj_hlo_value_t* out_val, char** out_text) {
  *out_text = NULL;
  tpj_hlo_builder_t b;
  tpj_hlo_builder_init(&b);
  tpj_hlo_value_t arg = tpj_hlo_arg(&b, bdt, bdims, bndim);
  tpj_hlo_value_t r = tpj_view_emit_read(&b, arg, v);
  if (out_val) *out_val = r;
  tpj_strbuf_t text;
  tpj_strbuf_init(&text);
  tpj_status_t s = tpj_hlo_finish(&b, &r, 1, &text);
  if (!s) *out_text = strdup(tpj_strbuf_cstr(&text));
  tpj_strbuf_free(&text);
  tpj_hlo_builder_free(&b);
  return s;
}

/* Compares out (the device result, row-major over v->sizes) with the host
 * reference read straight from the storage bytes. */
static int matches_reference(const void* storage, const tpj_view_t* v, const void* out) {
  size_t es = tpj_dtype_size(v->dtype);
  int64_t n = tpj_view_numel(v);
  for (int64_t lin = 0; lin < n; ++lin) {
    int64_t rem = lin, idx = v->offset;
    for (int k = v->ndim - 1; k >= 0; --k) {
      idx += (rem % v->sizes[k]) * v->strides[k];
      rem /= v->sizes[k];
    }
    if (memcmp((const char*)out + lin * es, (const char*)storage + idx * es, es) != 0) {
      fprintf(stderr, "  element %lld (storage index %lld) differs\n", (long long)lin,
              (long long)idx);
      return 0;
    }
  }
  return 1;
}

/* The whole round trip for one case. must_have / must_not: an op name the
 * program has to contain / must not contain (NULL: no check). */
static void check_read(int* tpj_failed_, tpj_dtype_t bdt, const int64_t* bdims, int bndim,
                       const void* host, tpj_view_t v, const char* must_have,
                       const char* must_not) {
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  tpj_hlo_value_t r;
  char* text = NULL;
  TPJ_EXPECT_OK(lower_read(bdt, bdims, bndim, &v, &r, &text));
  /* the reader's own idea of the result type */
  int same = r.dtype == v.dtype && r.ndim == v.ndim;
  for (int i = 0; same && i < v.ndim; ++i) same = r.dims[i] == v.sizes[i];
  TPJ_EXPECT(same);
  if (must_have) TPJ_EXPECT_CONTAINS(text, must_have);
  if (must_not && strstr(text, must_not)) {
    fprintf(stderr, "  \"%s\" unexpectedly in:\n%s\n", must_not, text);
    *tpj_failed_ = 1;
  }
  tpj_rt_exe_t* exe = NULL;
  tpj_status_t s = tpj_rt_compile(rt, text, strlen(text), &exe);
  if (s) fprintf(stderr, "%s", text);
  free(text);
  TPJ_EXPECT_OK(s);
  tpj_rt_buffer_t* in = NULL;
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, bdt, bdims, bndim, host, &in));
  tpj_rt_shape_t shape = {v.dtype, v.ndim, {0}};
  memcpy(shape.dims, v.sizes, sizeof(v.sizes));
  tpj_rt_buffer_t* out = NULL;
  s = tpj_rt_execute(rt, exe, 0, &in, 1, &shape, 1, &out, "view_read");
  size_t nbytes = (size_t)tpj_view_numel(&v) * tpj_dtype_size(v.dtype);
  void* got = malloc(nbytes ? nbytes : 1);
  if (!s) s = tpj_rt_buffer_to_host(rt, out, got, nbytes);
  if (!s) TPJ_EXPECT(matches_reference(host, &v, got));
  free(got);
  tpj_rt_buffer_release(out);
  tpj_rt_buffer_release(in);
  tpj_rt_exe_release(exe);
  TPJ_EXPECT_OK(s);
}

/* Expects the read to fail at build time with code and message `needle`. */
static void check_read_fails(int* tpj_failed_, tpj_dtype_t bdt, const int64_t* bdims, int bndim,
                             tpj_view_t v, tpj_status_code_t code, const char* needle) {
  char* text = NULL;
  tpj_status_t s = lower_read(bdt, bdims, bndim, &v, NULL, &text);
  TPJ_EXPECT(s != NULL && text == NULL);
  TPJ_EXPECT(tpj_status_code(s) == code);
  TPJ_EXPECT_CONTAINS(tpj_status_message(s), needle);
  tpj_status_free(s);
  free(text);
}

static float g_f32[64]; /* 0, 1, ..., 63 */
static int64_t g_i64[64]; /* 1000 + 7i + i<<40: wide values catch truncation */
__attribute__((constructor)) static void view_fill(void) {
  for (int i = 0; i < 64; ++i) {
    g_f32[i] = (float)i;
    g_i64[i] = 1000 + 7 * (int64_t)i + ((int64_t)i << 40);
  }
}

/* ---- regular views: slices, reshapes, transposes ---------------------- */

TPJ_TEST(view_read_natural_is_a_reshape) {
  int64_t d[2] = {3, 4};
  /* same dims, and a different but equal-count shape: no slice, no gather */
  check_read(tpj_failed_, TPJ_F32, d, 2, g_f32, V(TPJ_F32, 2, 0, 3, 4, 4, 1), NULL,
             "stablehlo.slice");
  check_read(tpj_failed_, TPJ_F32, d, 2, g_f32, V(TPJ_F32, 3, 0, 2, 6, 1, 6, 1, 1),
             "stablehlo.reshape", "stablehlo.slice");
}

TPJ_TEST(view_read_transposed_2d_and_permuted_3d) {
  int64_t d2[2] = {3, 4}, d3[3] = {2, 3, 4};
  check_read(tpj_failed_, TPJ_F32, d2, 2, g_f32, V(TPJ_F32, 2, 0, 4, 3, 1, 4),
             "stablehlo.transpose", "stablehlo.gather");
  check_read(tpj_failed_, TPJ_F32, d3, 3, g_f32, V(TPJ_F32, 3, 0, 4, 2, 3, 1, 12, 4),
             "stablehlo.transpose", "stablehlo.gather");
  check_read(tpj_failed_, TPJ_F32, d3, 3, g_f32, V(TPJ_F32, 3, 0, 3, 2, 4, 4, 12, 1),
             "stablehlo.transpose", "stablehlo.gather");
  /* int64 storage, transposed: 8-byte elements through the same path */
  check_read(tpj_failed_, TPJ_I64, d2, 2, g_i64, V(TPJ_I64, 2, 0, 4, 3, 1, 4), NULL,
             "stablehlo.gather");
}

TPJ_TEST(view_read_slice_with_offset) {
  int64_t d[2] = {4, 5};
  /* x[1:3, 2:5] */
  check_read(tpj_failed_, TPJ_F32, d, 2, g_f32, V(TPJ_F32, 2, 7, 2, 3, 5, 1), "stablehlo.slice",
             "stablehlo.gather");
  /* x[1:, :].t(): an offset and a transpose together */
  check_read(tpj_failed_, TPJ_F32, d, 2, g_f32, V(TPJ_F32, 2, 5, 5, 3, 1, 5), NULL,
             "stablehlo.gather");
}

TPJ_TEST(view_read_step_slices) {
  int64_t n20 = 20, d66[2] = {6, 6};
  /* x[1::2] ends on the storage's last element but its stride span does
   * not; the storage splits evenly at the stride, so it is a box of the
   * (10, 2) reshape: no pad */
  check_read(tpj_failed_, TPJ_F32, &n20, 1, g_f32, V(TPJ_F32, 1, 1, 10, 2), NULL,
             "stablehlo.pad");
  /* x[::3] does not divide 20: the pad path */
  check_read(tpj_failed_, TPJ_F32, &n20, 1, g_f32, V(TPJ_F32, 1, 0, 7, 3), "stablehlo.pad",
             "stablehlo.gather");
  /* the middle third of each 12-wide row as (4, 2, 2), as a q/k/v split of
   * a fused projection reads: a box, one slice, no pad or gather */
  int64_t d412[2] = {4, 12};
  check_read(tpj_failed_, TPJ_F32, d412, 2, g_f32, V(TPJ_F32, 3, 4, 4, 2, 2, 12, 2, 1), NULL,
             "stablehlo.pad");
  check_read(tpj_failed_, TPJ_F32, d412, 2, g_f32, V(TPJ_F32, 3, 4, 4, 2, 2, 12, 2, 1), NULL,
             "stablehlo.gather");
  /* x[1:17:3] stays inside: no pad */
  check_read(tpj_failed_, TPJ_F32, &n20, 1, g_f32, V(TPJ_F32, 1, 1, 6, 3), NULL, "stablehlo.pad");
  /* x[::2, 1::3] on a 6x6 */
  check_read(tpj_failed_, TPJ_F32, d66, 2, g_f32, V(TPJ_F32, 2, 1, 3, 2, 12, 3), NULL,
             "stablehlo.gather");
  /* strides that nest with gaps in the order 8, 2, 1 but not in view order */
  int64_t n16 = 16;
  check_read(tpj_failed_, TPJ_F32, &n16, 1, g_f32, V(TPJ_F32, 3, 0, 2, 2, 2, 1, 8, 2), NULL,
             "stablehlo.gather");
}

TPJ_TEST(view_read_row_and_column) {
  int64_t d[2] = {3, 4};
  check_read(tpj_failed_, TPJ_F32, d, 2, g_f32, V(TPJ_F32, 1, 4, 4, 1), NULL, "stablehlo.gather");
  check_read(tpj_failed_, TPJ_F32, d, 2, g_f32, V(TPJ_F32, 1, 2, 3, 4), NULL, "stablehlo.gather");
  /* the last column: offset 3, stride 4, the last element is the storage's */
  check_read(tpj_failed_, TPJ_F32, d, 2, g_f32, V(TPJ_F32, 1, 3, 3, 4), NULL, "stablehlo.gather");
  /* x[2:3, :] keeps a size-1 dim */
  check_read(tpj_failed_, TPJ_F32, d, 2, g_f32, V(TPJ_F32, 2, 8, 1, 4, 4, 1), NULL,
             "stablehlo.gather");
}

TPJ_TEST(view_read_select_to_scalar) {
  int64_t d[2] = {3, 4};
  check_read(tpj_failed_, TPJ_F32, d, 2, g_f32, mkview(TPJ_F32, 0, NULL, NULL, 11), NULL,
             "stablehlo.gather");
  check_read(tpj_failed_, TPJ_I64, d, 2, g_i64, mkview(TPJ_I64, 0, NULL, NULL, 0), NULL, NULL);
  /* a 0-d storage read as 0-d */
  check_read(tpj_failed_, TPJ_F32, NULL, 0, g_f32 + 5, mkview(TPJ_F32, 0, NULL, NULL, 0), NULL,
             NULL);
}

TPJ_TEST(view_read_expanded_stride_zero) {
  int64_t d[2] = {3, 4}, n3 = 3;
  /* x.unsqueeze(1).expand(3, 2, 4): a stride-0 dim between real ones */
  check_read(tpj_failed_, TPJ_F32, d, 2, g_f32, V(TPJ_F32, 3, 0, 3, 2, 4, 4, 0, 1),
             "stablehlo.broadcast_in_dim", "stablehlo.gather");
  /* v[None, :, None].expand(2, 3, 4) */
  check_read(tpj_failed_, TPJ_F32, &n3, 1, g_f32, V(TPJ_F32, 3, 0, 2, 3, 4, 0, 1, 0),
             "stablehlo.broadcast_in_dim", "stablehlo.gather");
  /* x[2, 1].expand(2, 5): no real dim left at all */
  check_read(tpj_failed_, TPJ_F32, d, 2, g_f32, V(TPJ_F32, 2, 9, 2, 5, 0, 0),
             "stablehlo.broadcast_in_dim", "stablehlo.gather");
  /* expand of a transposed column: stride-0 outermost, stride 4 inner */
  check_read(tpj_failed_, TPJ_F32, d, 2, g_f32, V(TPJ_F32, 2, 1, 2, 3, 0, 4), NULL,
             "stablehlo.gather");
}

TPJ_TEST(view_read_size_one_dims_with_odd_strides) {
  int64_t d[2] = {3, 4};
  /* size-1 dims carry arbitrary strides in PyTorch; they must be ignored */
  check_read(tpj_failed_, TPJ_F32, d, 2, g_f32, V(TPJ_F32, 3, 4, 1, 4, 1, 99, 1, 7), NULL,
             "stablehlo.gather");
  /* the same with offset 0: contiguous, so a plain reshape */
  check_read(tpj_failed_, TPJ_F32, d, 2, g_f32, V(TPJ_F32, 3, 0, 3, 1, 4, 4, 123456, 1), NULL,
             "stablehlo.slice");
  /* a size-1 dim whose stride would run past the storage if it counted */
  check_read(tpj_failed_, TPJ_F32, d, 2, g_f32, V(TPJ_F32, 2, 8, 1, 4, 1000, 1), NULL,
             "stablehlo.gather");
}

TPJ_TEST(view_read_reaching_end_of_storage_pads) {
  int64_t n10 = 10;
  /* as_strided(x, (2, 3), (7, 1)): touches index 9, but its outer span is
   * 14 > 10 elements, so the reader must pad, not fail */
  check_read(tpj_failed_, TPJ_F32, &n10, 1, g_f32, V(TPJ_F32, 2, 0, 2, 3, 7, 1), "stablehlo.pad",
             "stablehlo.gather");
  check_read(tpj_failed_, TPJ_I64, &n10, 1, g_i64, V(TPJ_I64, 2, 1, 2, 3, 6, 1), "stablehlo.pad",
             "stablehlo.gather");
}

TPJ_TEST(view_read_max_rank_permuted) {
  /* A rank-16 (TPJ_MAX_DIMS) storage of 2s, read with every dim reversed,
   * and the same with the first dim selected away (15 real dims). Both are
   * regular views, so the reader must handle them without exceeding the
   * builder's rank limit in its intermediate values. */
  enum { R = TPJ_MAX_DIMS };
  int64_t n = (int64_t)1 << R;
  float* host = (float*)malloc((size_t)n * sizeof(float));
  for (int64_t i = 0; i < n; ++i) host[i] = (float)i;
  int64_t dims[R], sizes[R], strides[R];
  for (int i = 0; i < R; ++i) {
    dims[i] = 2;
    sizes[i] = 2;
    strides[i] = (int64_t)1 << i; /* view dim i walks storage dim R-1-i */
  }
  check_read(tpj_failed_, TPJ_F32, dims, R, host, mkview(TPJ_F32, R - 1, sizes, strides, 0),
             "stablehlo.transpose", "stablehlo.gather");
  check_read(tpj_failed_, TPJ_F32, dims, R, host, mkview(TPJ_F32, R, sizes, strides, 0),
             "stablehlo.transpose", "stablehlo.gather");
  free(host);
}

/* ---- irregular views: gathers ----------------------------------------- */

TPJ_TEST(view_read_overlapping_windows_gather) {
  int64_t n8 = 8;
  /* x.unfold(0, 3, 1) and x.unfold(0, 3, 2): windows overlap */
  check_read(tpj_failed_, TPJ_F32, &n8, 1, g_f32, V(TPJ_F32, 2, 0, 6, 3, 1, 1),
             "stablehlo.gather", NULL);
  check_read(tpj_failed_, TPJ_F32, &n8, 1, g_f32, V(TPJ_F32, 2, 0, 3, 3, 2, 1),
             "stablehlo.gather", NULL);
  /* unfold of an int64 row with an offset and a stride-0 dim mixed in */
  int64_t d[2] = {4, 8};
  check_read(tpj_failed_, TPJ_I64, d, 2, g_i64, V(TPJ_I64, 3, 8, 2, 5, 4, 0, 1, 1),
             "stablehlo.gather", NULL);
}

TPJ_TEST(view_read_non_nesting_strides_gather) {
  int64_t n30 = 30;
  check_read(tpj_failed_, TPJ_F32, &n30, 1, g_f32, V(TPJ_F32, 2, 0, 3, 4, 7, 3),
             "stablehlo.gather", NULL);
  check_read(tpj_failed_, TPJ_F32, &n30, 1, g_f32, V(TPJ_F32, 2, 2, 4, 3, 3, 7),
             "stablehlo.gather", NULL);
  /* ends exactly on the storage's last element (no pad on this path) */
  check_read(tpj_failed_, TPJ_F32, &n30, 1, g_f32, V(TPJ_F32, 2, 5, 3, 4, 7, 3),
             "stablehlo.gather", NULL);
}

/* ---- reinterpreting the storage's bytes ------------------------------- */

TPJ_TEST(view_read_bitcast_same_size) {
  int64_t n6 = 6;
  float f[6] = {1.5f, -2.0f, 0.0f, -0.0f, 3.25e10f, 1e-40f /* subnormal */};
  check_read(tpj_failed_, TPJ_F32, &n6, 1, f, V(TPJ_I32, 2, 0, 2, 3, 3, 1),
             "stablehlo.bitcast_convert", "stablehlo.gather");
  check_read(tpj_failed_, TPJ_F32, &n6, 1, f, V(TPJ_I32, 2, 1, 2, 2, 1, 3), NULL, NULL);
  /* and back: int64 bits read as float64 */
  check_read(tpj_failed_, TPJ_I64, &n6, 1, g_i64, V(TPJ_F64, 1, 0, 6, 1), NULL, NULL);
}

TPJ_TEST(view_read_bitcast_narrow_to_wide) {
  /* 16 bytes of a uint8 storage read as float32[4] */
  float f[4] = {1.0f, -2.5f, 1e20f, 0.125f};
  int64_t n16 = 16;
  check_read(tpj_failed_, TPJ_U8, &n16, 1, f, V(TPJ_F32, 1, 0, 4, 1), "stablehlo.bitcast_convert",
             NULL);
  check_read(tpj_failed_, TPJ_U8, &n16, 1, f, V(TPJ_F32, 2, 0, 2, 2, 1, 2), NULL, NULL);
  /* int16[8] as int64[2] */
  int64_t n8 = 8;
  check_read(tpj_failed_, TPJ_I16, &n8, 1, g_i64, V(TPJ_I64, 1, 0, 2, 1), NULL, NULL);
}

TPJ_TEST(view_read_bitcast_wide_to_narrow) {
  float f[4] = {1.0f, -2.5f, 1e20f, 0.125f};
  int64_t n4 = 4;
  /* float32[4] as uint8[16], then only byte 1 of every float */
  check_read(tpj_failed_, TPJ_F32, &n4, 1, f, V(TPJ_U8, 1, 0, 16, 1), "stablehlo.bitcast_convert",
             NULL);
  check_read(tpj_failed_, TPJ_F32, &n4, 1, f, V(TPJ_U8, 1, 1, 4, 4), NULL, NULL);
  /* float64 as int16, transposed [4 x 3] of the first 12 shorts */
  int64_t n3 = 3;
  check_read(tpj_failed_, TPJ_F64, &n3, 1, g_i64, V(TPJ_I16, 2, 0, 4, 3, 1, 4), NULL, NULL);
}

/* ---- errors ----------------------------------------------------------- */

TPJ_TEST(view_read_past_storage_fails) {
  int64_t n10 = 10, d[2] = {3, 4};
  check_read_fails(tpj_failed_, TPJ_F32, &n10, 1, V(TPJ_F32, 1, 2, 4, 3), TPJ_OUT_OF_RANGE,
                   "reaches past its storage");
  check_read_fails(tpj_failed_, TPJ_F32, &n10, 1, V(TPJ_F32, 1, 0, 11, 1), TPJ_OUT_OF_RANGE,
                   "reaches past");
  check_read_fails(tpj_failed_, TPJ_F32, &n10, 1, V(TPJ_F32, 1, -1, 3, 1), TPJ_OUT_OF_RANGE,
                   "reaches past");
  check_read_fails(tpj_failed_, TPJ_F32, d, 2, mkview(TPJ_F32, 0, NULL, NULL, 12),
                   TPJ_OUT_OF_RANGE, "reaches past");
  /* overlapping windows past the end must fail too, not gather garbage */
  check_read_fails(tpj_failed_, TPJ_F32, &n10, 1, V(TPJ_F32, 2, 0, 9, 3, 1, 1), TPJ_OUT_OF_RANGE,
                   "reaches past");
  /* a float32 view over 4 bytes of an 8-byte storage counts in float32s */
  int64_t n8 = 8;
  check_read_fails(tpj_failed_, TPJ_U8, &n8, 1, V(TPJ_F32, 1, 0, 3, 1), TPJ_OUT_OF_RANGE,
                   "reaches past");
}

TPJ_TEST(view_read_bytes_not_divisible_fails) {
  int64_t n15 = 15;
  check_read_fails(tpj_failed_, TPJ_U8, &n15, 1, V(TPJ_F32, 1, 0, 3, 1), TPJ_INVALID_ARGUMENT,
                   "cannot be read as float32");
}

TPJ_TEST(view_read_empty_view_of_nonempty_storage) {
  /* x[3:3] and x[:, 2:2] are legal PyTorch views that read nothing; they lie
   * inside the storage, so reading them must give an empty result, not the
   * "reaches past its storage" error. */
  int64_t n10 = 10, d[2] = {3, 4};
  check_read(tpj_failed_, TPJ_F32, &n10, 1, g_f32, V(TPJ_F32, 1, 3, 0, 1), NULL, NULL);
  check_read(tpj_failed_, TPJ_F32, d, 2, g_f32, V(TPJ_F32, 2, 2, 3, 0, 4, 1), NULL, NULL);
}

/* ---- the predicates --------------------------------------------------- */

TPJ_TEST(view_predicates) {
  tpj_view_t v = V(TPJ_F32, 2, 0, 3, 4, 4, 1);
  int64_t d34[2] = {3, 4}, d12 = 12, d43[2] = {4, 3}, d10 = 10;
  TPJ_EXPECT(tpj_view_is_contiguous(&v) && tpj_view_is_regular(&v));
  TPJ_EXPECT(tpj_view_is_natural(&v, TPJ_F32, d34, 2));
  TPJ_EXPECT(tpj_view_is_natural(&v, TPJ_F32, &d12, 1));   /* shape may differ */
  TPJ_EXPECT(tpj_view_is_natural(&v, TPJ_F32, d43, 2));
  TPJ_EXPECT(!tpj_view_is_natural(&v, TPJ_I32, d34, 2));   /* dtype must match */
  TPJ_EXPECT(!tpj_view_is_natural(&v, TPJ_F32, &d10, 1));  /* count must match */
  TPJ_EXPECT(tpj_view_extent(&v) == 12 && tpj_view_numel(&v) == 12);
  v.offset = 1;
  TPJ_EXPECT(tpj_view_is_contiguous(&v) && !tpj_view_is_natural(&v, TPJ_F32, d34, 2));
  TPJ_EXPECT(tpj_view_extent(&v) == 13);

  v = V(TPJ_F32, 2, 0, 4, 3, 1, 4); /* transposed */
  TPJ_EXPECT(!tpj_view_is_contiguous(&v) && tpj_view_is_regular(&v));
  TPJ_EXPECT(!tpj_view_is_natural(&v, TPJ_F32, d34, 2));
  TPJ_EXPECT(tpj_view_extent(&v) == 12);

  v = V(TPJ_F32, 3, 0, 3, 1, 4, 4, 777, 1); /* size-1 dim, odd stride */
  TPJ_EXPECT(tpj_view_is_contiguous(&v) && tpj_view_is_natural(&v, TPJ_F32, d34, 2));
  TPJ_EXPECT(tpj_view_extent(&v) == 12);

  v = V(TPJ_F32, 2, 0, 6, 3, 1, 1); /* unfold: overlapping */
  TPJ_EXPECT(!tpj_view_is_regular(&v) && !tpj_view_is_contiguous(&v));
  TPJ_EXPECT(tpj_view_extent(&v) == 8);
  v = V(TPJ_F32, 2, 0, 3, 4, 7, 3); /* non-nesting */
  TPJ_EXPECT(!tpj_view_is_regular(&v));
  v = V(TPJ_F32, 2, 0, 3, 4, 8, 2); /* nesting with gaps */
  TPJ_EXPECT(tpj_view_is_regular(&v) && !tpj_view_is_contiguous(&v));
  TPJ_EXPECT(tpj_view_extent(&v) == 23);

  v = V(TPJ_F32, 2, 5, 3, 4, 0, 1); /* expanded */
  TPJ_EXPECT(tpj_view_is_regular(&v) && !tpj_view_is_contiguous(&v));
  TPJ_EXPECT(tpj_view_extent(&v) == 9 && tpj_view_numel(&v) == 12);

  v = mkview(TPJ_F32, 0, NULL, NULL, 7); /* 0-d */
  TPJ_EXPECT(tpj_view_is_contiguous(&v) && tpj_view_is_regular(&v));
  TPJ_EXPECT(tpj_view_extent(&v) == 8 && tpj_view_numel(&v) == 1);

  v = V(TPJ_F32, 2, 4, 3, 0, 4, 1); /* empty */
  TPJ_EXPECT(tpj_view_extent(&v) == 0 && tpj_view_numel(&v) == 0);
}

/* ---- through the eager engine ----------------------------------------- */

TPJ_TEST(view_copy_through_exec) {
  /* tpj::view_copy is how the engine materialises a view: the same reader,
   * reached through the cache, with the result converted to the out dtype. */
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  tpj_exec_t* ex = NULL;
  TPJ_EXPECT_OK(tpj_exec_create(rt, 4, &ex));
  int64_t d[2] = {4, 5};
  tpj_rt_buffer_t* in = NULL;
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 1, TPJ_F32, d, 2, g_f32, &in));
  const tpj_view_t all[3] = {
      V(TPJ_F32, 2, 1, 4, 3, 1, 5), /* x[:3, 1:].t(): slices + transpose */
      V(TPJ_F32, 2, 2, 3, 4, 5, 1), /* as_strided rows that wrap: slices */
      V(TPJ_F32, 2, 0, 8, 3, 2, 1), /* overlapping windows: gather */
  };
  for (int c = 0; c < 3; ++c) {
    tpj_exec_arg_t arg = {in, 1, all[c]};
    /* converted on the way out: 2.0f -> 2 */
    tpj_rt_shape_t out = {TPJ_I32, 2, {all[c].sizes[0], all[c].sizes[1]}};
    tpj_rt_buffer_t* r = NULL;
    TPJ_EXPECT_OK(tpj_exec_run(ex, "tpj::view_copy", 1, &arg, 1, NULL, 0, &out, 1, &r));
    TPJ_EXPECT(r->device == 1);
    int32_t got[32];
    int64_t n = out.dims[0] * out.dims[1];
    TPJ_EXPECT_OK(tpj_rt_buffer_to_host(rt, r, got, (size_t)n * 4));
    for (int64_t i = 0; i < out.dims[0]; ++i)
      for (int64_t j = 0; j < out.dims[1]; ++j) {
        int64_t idx = all[c].offset + i * all[c].strides[0] + j * all[c].strides[1];
        TPJ_EXPECT(got[i * out.dims[1] + j] == (int32_t)idx); /* g_f32[idx] == idx */
      }
    tpj_rt_buffer_release(r);
  }
  tpj_exec_metrics_t m;
  tpj_exec_get_metrics(ex, &m);
  TPJ_EXPECT(m.compiles == 3); /* the view is part of the key */
  tpj_rt_buffer_release(in);
  tpj_exec_destroy(ex);
}
