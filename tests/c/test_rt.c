/* rt: plugin loading failures, devices, exact host<->device byte transfer for
 * every dtype, device-to-device copies, a buffer's host memory, buffer
 * reference counting, compile errors and synchronisation, on the real CPU
 * plugin. */
#include <stdlib.h>
#include <unistd.h>

#include "rt/reap.h"
#include "rt/rt.h"
#include "rt/upload.h"
#include "tpj_test.h"

TPJ_TEST(rt_open_missing_file_names_path) {
  tpj_rt_t* rt = (tpj_rt_t*)1; /* must be reset to NULL on failure */
  const char* path = "/nonexistent/dir/libno_such_plugin.so";
  tpj_status_t s = tpj_rt_open(path, NULL, &rt);
  TPJ_EXPECT(s != NULL && rt == NULL);
  TPJ_EXPECT(tpj_status_code(s) == TPJ_NOT_FOUND);
  TPJ_EXPECT_CONTAINS(tpj_status_message(s), path);
  tpj_status_free(s);
  /* no path at all is the caller's mistake, not a missing file */
  s = tpj_rt_open("", NULL, &rt);
  TPJ_EXPECT(tpj_status_code(s) == TPJ_INVALID_ARGUMENT && rt == NULL);
  tpj_status_free(s);
  s = tpj_rt_open(NULL, NULL, &rt);
  TPJ_EXPECT(tpj_status_code(s) == TPJ_INVALID_ARGUMENT && rt == NULL);
  tpj_status_free(s);
}

TPJ_TEST(rt_open_shared_library_without_pjrt) {
  /* libc loads fine (by soname, wherever the distro keeps it) but has no
   * GetPjrtApi: the error must say so and name the library. */
  tpj_rt_t* rt = NULL;
  tpj_status_t s = tpj_rt_open("libc.so.6", NULL, &rt);
  TPJ_EXPECT(s != NULL && rt == NULL);
  TPJ_EXPECT(tpj_status_code(s) == TPJ_NOT_FOUND);
  TPJ_EXPECT_CONTAINS(tpj_status_message(s), "libc.so.6");
  TPJ_EXPECT_CONTAINS(tpj_status_message(s), "GetPjrtApi");
  tpj_status_free(s);
}

TPJ_TEST(rt_open_file_that_is_not_elf) {
  char path[] = "/tmp/tpj_not_a_plugin_XXXXXX.so";
  int fd = mkstemps(path, 3);
  TPJ_EXPECT(fd >= 0);
  if (fd < 0) return;
  TPJ_EXPECT(write(fd, "not an ELF file\n", 16) == 16);
  close(fd);
  tpj_rt_t* rt = NULL;
  tpj_status_t s = tpj_rt_open(path, NULL, &rt);
  unlink(path);
  TPJ_EXPECT(s != NULL && rt == NULL);
  TPJ_EXPECT_CONTAINS(tpj_status_message(s), path);
  tpj_status_free(s);
}

TPJ_TEST(rt_devices_and_metadata) {
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  TPJ_EXPECT(tpj_rt_device_count(rt) == 2); /* cpu_device_count = 2 took effect */
  TPJ_EXPECT(tpj_rt_device_count(NULL) == 0);
  TPJ_EXPECT_OK(tpj_rt_check_device(rt, 0));
  TPJ_EXPECT_OK(tpj_rt_check_device(rt, 1));
  const int bad[3] = {5, 2, -1};
  for (int i = 0; i < 3; ++i) {
    tpj_status_t s = tpj_rt_check_device(rt, bad[i]);
    TPJ_EXPECT(tpj_status_code(s) == TPJ_OUT_OF_RANGE);
    TPJ_EXPECT_CONTAINS(tpj_status_message(s), "invalid device ordinal");
    tpj_status_free(s);
  }
  TPJ_EXPECT(strcmp(tpj_rt_platform_name(rt), "cpu") == 0);
  TPJ_EXPECT(strlen(tpj_rt_device_kind(rt, 0)) > 0);
  TPJ_EXPECT(strcmp(tpj_rt_device_kind(rt, 9), "") == 0); /* out of range: "" not a crash */
  TPJ_EXPECT(strcmp(tpj_rt_device_description(rt, -1), "") == 0);
  TPJ_EXPECT(tpj_rt_plugin_attributes(rt) != NULL);
  int ma, mi, hma, hmi;
  tpj_rt_api_version(rt, &ma, &mi);
  tpj_rt_header_version(&hma, &hmi);
  TPJ_EXPECT(ma == hma); /* open checks this; the accessors must agree */
}

/* Uploads n elements of dt from src to device, reads them back, and
 * compares the bytes exactly. */
static void round_trip(int* tpj_failed_, tpj_dtype_t dt, const int64_t* dims, int ndim,
                       const void* src, int device) {
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= dims[i];
  size_t nb = (size_t)n * tpj_dtype_size(dt);
  tpj_rt_buffer_t* b = NULL;
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, device, dt, dims, ndim, src, &b));
  TPJ_EXPECT(b->refcount == 1 && b->dtype == dt && b->ndim == ndim && b->device == device);
  TPJ_EXPECT(tpj_rt_buffer_numel(b) == n && tpj_rt_buffer_nbytes(b) == nb);
  unsigned char* got = (unsigned char*)malloc(nb + 1);
  memset(got, 0xee, nb + 1);
  tpj_status_t s = tpj_rt_buffer_to_host(rt, b, got, nb);
  if (!s && nb) TPJ_EXPECT(memcmp(got, src, nb) == 0);
  TPJ_EXPECT(got[nb] == 0xee); /* nothing written past nbytes */
  if (s) fprintf(stderr, "  dtype %s\n", tpj_dtype_name(dt));
  free(got);
  tpj_rt_buffer_release(b);
  TPJ_EXPECT_OK(s);
}

TPJ_TEST(rt_round_trip_every_dtype) {
  int64_t d[2] = {2, 3};
  unsigned char bools[6] = {1, 0, 0, 1, 1, 0};
  unsigned char u8[6] = {0, 1, 127, 128, 254, 255};
  signed char i8[6] = {-128, -1, 0, 1, 100, 127};
  int16_t i16[6] = {-32768, -1, 0, 1, 12345, 32767};
  int32_t i32[6] = {INT32_MIN, -1, 0, 1, 123456789, INT32_MAX};
  int64_t i64[6] = {INT64_MIN, -1, 0, 1, (int64_t)1 << 53 | 1, INT64_MAX};
  /* f16 / bf16 as raw bits: +-0, 1, +-inf, a quiet NaN, a NaN with a
   * payload, the smallest subnormal; the device must not canonicalise. */
  uint16_t f16[6] = {0x0000, 0x8000, 0x3c00, 0x7c00, 0xfe01, 0x0001};
  uint16_t bf16[6] = {0x8000, 0x3f80, 0xff80, 0x7fc0, 0x7f81, 0x0001};
  float f32[6] = {0.0f, -0.0f, 1e-45f, 3.4e38f, -1.5f, 0.1f};
  double f64[6] = {0.0, -0.0, 5e-324, 1.7e308, -1.5, 0.1};
  float c64[12] = {1, -2, 0.5f, 0.25f, -0.0f, 0, 3, 4, 1e30f, -1e-30f, 7, 8};
  double c128[12] = {1, -2, 0.5, 0.25, -0.0, 0, 3, 4, 1e300, -1e-300, 7, 8};
  uint16_t u16[6] = {0, 1, 0x7fff, 0x8000, 0xfffe, 0xffff};
  uint32_t u32[6] = {0, 1, 0x7fffffffu, 0x80000000u, 0xfffffffeu, 0xffffffffu};
  uint64_t u64[6] = {0, 1, 0x7fffffffffffffffull, 0x8000000000000000ull, ~1ull, ~0ull};
  const struct {
    tpj_dtype_t dt;
    const void* p;
  } cases[] = {{TPJ_BOOL, bools}, {TPJ_U8, u8},   {TPJ_I8, i8},     {TPJ_I16, i16},
               {TPJ_I32, i32},    {TPJ_I64, i64}, {TPJ_F16, f16},   {TPJ_BF16, bf16},
               {TPJ_F32, f32},    {TPJ_F64, f64}, {TPJ_C64, c64},   {TPJ_C128, c128},
               {TPJ_U16, u16},    {TPJ_U32, u32}, {TPJ_U64, u64}};
  TPJ_EXPECT((int)(sizeof(cases) / sizeof(cases[0])) == TPJ_DTYPE_COUNT - 1);
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i)
    round_trip(tpj_failed_, cases[i].dt, d, 2, cases[i].p, (int)(i % 2));
}

TPJ_TEST(rt_round_trip_scalar_and_empty) {
  int64_t v = -42;
  round_trip(tpj_failed_, TPJ_I64, NULL, 0, &v, 0);
  double c[2] = {1.25, -3.5};
  round_trip(tpj_failed_, TPJ_C128, NULL, 0, c, 1);
  /* zero elements: no data pointer needed, no bytes copied */
  int64_t d0[2] = {0, 3};
  round_trip(tpj_failed_, TPJ_F32, d0, 2, NULL, 0);
  int64_t d1 = 0;
  round_trip(tpj_failed_, TPJ_BOOL, &d1, 1, NULL, 1);
}

TPJ_TEST(rt_buffer_argument_errors) {
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  float x[4] = {1, 2, 3, 4};
  int64_t n = 4;
  tpj_rt_buffer_t* b = (tpj_rt_buffer_t*)1;
  tpj_status_t s = tpj_rt_buffer_from_host(rt, 7, TPJ_F32, &n, 1, x, &b);
  TPJ_EXPECT(tpj_status_code(s) == TPJ_OUT_OF_RANGE && b == NULL);
  tpj_status_free(s);
  s = tpj_rt_buffer_from_host(rt, 0, TPJ_DTYPE_INVALID, &n, 1, x, &b);
  TPJ_EXPECT(tpj_status_code(s) == TPJ_INVALID_ARGUMENT && b == NULL);
  tpj_status_free(s);
  s = tpj_rt_buffer_from_host(rt, 0, TPJ_F32, &n, TPJ_MAX_DIMS + 1, x, &b);
  TPJ_EXPECT(tpj_status_code(s) == TPJ_UNIMPLEMENTED && b == NULL);
  tpj_status_free(s);
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, TPJ_F32, &n, 1, x, &b));
  float small[3];
  s = tpj_rt_buffer_to_host(rt, b, small, sizeof(small)); /* wrong size: refused, not truncated */
  TPJ_EXPECT(tpj_status_code(s) == TPJ_INVALID_ARGUMENT);
  TPJ_EXPECT_CONTAINS(tpj_status_message(s), "12 bytes");
  tpj_status_free(s);
  tpj_rt_buffer_t* c = (tpj_rt_buffer_t*)1;
  s = tpj_rt_buffer_copy_to_device(rt, b, 2, &c);
  TPJ_EXPECT(tpj_status_code(s) == TPJ_OUT_OF_RANGE && c == NULL);
  tpj_status_free(s);
  tpj_rt_buffer_release(b);
  tpj_rt_buffer_release(NULL); /* documented no-op */
}

TPJ_TEST(rt_copy_to_other_device_keeps_bytes) {
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  int64_t d[3] = {2, 3, 4};
  int32_t x[24];
  for (int i = 0; i < 24; ++i) x[i] = i * 1000003 - 7;
  tpj_rt_buffer_t *b0 = NULL, *b1 = NULL, *back = NULL;
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, TPJ_I32, d, 3, x, &b0));
  TPJ_EXPECT_OK(tpj_rt_buffer_copy_to_device(rt, b0, 1, &b1));
  TPJ_EXPECT(b1->device == 1 && b1->dtype == TPJ_I32 && b1->ndim == 3 && b1->dims[2] == 4);
  TPJ_EXPECT(b1->refcount == 1);
  TPJ_EXPECT_OK(tpj_rt_buffer_copy_to_device(rt, b1, 0, &back));
  tpj_rt_buffer_release(b0); /* the copies must not depend on the source */
  int32_t got[24];
  TPJ_EXPECT_OK(tpj_rt_buffer_to_host(rt, b1, got, sizeof(got)));
  TPJ_EXPECT(memcmp(got, x, sizeof(x)) == 0);
  memset(got, 0, sizeof(got));
  TPJ_EXPECT_OK(tpj_rt_buffer_to_host(rt, back, got, sizeof(got)));
  TPJ_EXPECT(memcmp(got, x, sizeof(x)) == 0 && back->device == 0);
  tpj_rt_buffer_release(b1);
  tpj_rt_buffer_release(back);
}

TPJ_TEST(rt_live_buffers_return_to_start) {
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  int64_t start = tpj_rt_live_buffers();
  float x = 3;
  tpj_rt_buffer_t *a = NULL, *c = NULL;
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, TPJ_F32, NULL, 0, &x, &a));
  TPJ_EXPECT_OK(tpj_rt_buffer_copy_to_device(rt, a, 1, &c));
  TPJ_EXPECT(tpj_rt_live_buffers() == start + 2);
  tpj_rt_buffer_retain(a); /* a second owner keeps it alive */
  tpj_rt_buffer_release(a);
  TPJ_EXPECT(tpj_rt_live_buffers() == start + 2);
  float got = 0;
  TPJ_EXPECT_OK(tpj_rt_buffer_to_host(rt, a, &got, sizeof(got)));
  TPJ_EXPECT(got == 3);
  tpj_rt_buffer_release(a);
  tpj_rt_buffer_release(c);
  TPJ_EXPECT(tpj_rt_live_buffers() == start);
}

static const char kDoubleMlir[] =
    "module @m {\n"
    "  func.func public @main(%arg0: tensor<4xf32>) -> (tensor<4xf32>) {\n"
    "    %0 = \"stablehlo.add\"(%arg0, %arg0) : (tensor<4xf32>, tensor<4xf32>) -> "
    "tensor<4xf32>\n"
    "    return %0 : tensor<4xf32>\n"
    "  }\n"
    "}\n";

TPJ_TEST(rt_compile_garbage_fails_cleanly) {
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  const char* bad[3] = {"this is not mlir {{{", "", "module @m { func.func @main() -> () }"};
  for (int i = 0; i < 3; ++i) {
    tpj_rt_exe_t* exe = (tpj_rt_exe_t*)1;
    tpj_status_t s = tpj_rt_compile(rt, bad[i], strlen(bad[i]), &exe);
    TPJ_EXPECT(s != NULL && exe == NULL);
    TPJ_EXPECT_CONTAINS(tpj_status_message(s), "compiling");
    tpj_status_free(s);
  }
  /* the runtime still works afterwards */
  tpj_rt_exe_t* exe = NULL;
  TPJ_EXPECT_OK(tpj_rt_compile(rt, kDoubleMlir, strlen(kDoubleMlir), &exe));
  tpj_rt_exe_release(exe);
  tpj_rt_exe_release(NULL);
}

TPJ_TEST(rt_execute_on_both_devices_and_synchronize) {
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  int64_t start = tpj_rt_live_buffers();
  tpj_rt_exe_t* exe = NULL;
  TPJ_EXPECT_OK(tpj_rt_compile(rt, kDoubleMlir, strlen(kDoubleMlir), &exe));
  float x[4] = {1, -2, 3.5f, 0};
  int64_t n = 4;
  tpj_rt_shape_t shape;
  memset(&shape, 0, sizeof(shape));
  shape.dtype = TPJ_F32;
  shape.ndim = 1;
  shape.dims[0] = 4;
  /* one portable executable, run on each device; launches do not wait */
  for (int dev = 0; dev < 2; ++dev) {
    tpj_rt_buffer_t *in = NULL, *out = NULL;
    TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, dev, TPJ_F32, &n, 1, x, &in));
    tpj_rt_set_launch_blocking(rt, dev == 1); /* and once with waiting */
    TPJ_EXPECT_OK(tpj_rt_execute(rt, exe, dev, &in, 1, &shape, 1, &out, "double"));
    TPJ_EXPECT(out->device == dev && out->refcount == 1);
    tpj_rt_buffer_release(in); /* the launch holds what it needs */
    float got[4];
    TPJ_EXPECT_OK(tpj_rt_buffer_to_host(rt, out, got, sizeof(got)));
    for (int i = 0; i < 4; ++i) TPJ_EXPECT(got[i] == 2 * x[i]);
    tpj_rt_buffer_release(out);
  }
  tpj_rt_set_launch_blocking(rt, 0);
  TPJ_EXPECT_OK(tpj_rt_synchronize(rt, 0));
  TPJ_EXPECT_OK(tpj_rt_synchronize(rt, -1));
  TPJ_EXPECT_OK(tpj_rt_synchronize(rt, -1)); /* idempotent with nothing pending */
  /* a wrong output count is refused before launching */
  tpj_rt_buffer_t* in = NULL;
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, TPJ_F32, &n, 1, x, &in));
  tpj_rt_buffer_t* outs[2] = {NULL, NULL};
  tpj_rt_shape_t shapes[2] = {shape, shape};
  tpj_status_t s = tpj_rt_execute(rt, exe, 0, &in, 1, shapes, 2, outs, "double");
  TPJ_EXPECT(s != NULL && outs[0] == NULL);
  TPJ_EXPECT_CONTAINS(tpj_status_message(s), "double");
  tpj_status_free(s);
  s = tpj_rt_execute(rt, exe, 3, &in, 1, &shape, 1, outs, "double");
  TPJ_EXPECT(tpj_status_code(s) == TPJ_OUT_OF_RANGE);
  tpj_status_free(s);
  tpj_rt_buffer_release(in);
  tpj_rt_exe_release(exe);
  TPJ_EXPECT(tpj_rt_live_buffers() == start);
}

/* count doublings of *cur on device, each input dropped with drop as soon
 * as its launch is made (the pattern of eager ops and graph runs). */
static void double_chain(int* tpj_failed_, tpj_rt_t* rt, tpj_rt_exe_t* exe, int device,
                         int count, void (*drop)(tpj_rt_buffer_t*), tpj_rt_buffer_t** cur) {
  tpj_rt_shape_t shape = {TPJ_F32, 1, {4}};
  for (int i = 0; i < count; ++i) {
    tpj_rt_buffer_t* next = NULL;
    TPJ_EXPECT_OK(tpj_rt_execute(rt, exe, device, cur, 1, &shape, 1, &next, "double"));
    drop(*cur);
    *cur = next;
  }
}

TPJ_TEST(rt_many_launches_then_synchronize) {
  /* More launches than the pending list's first block (64) so pruning and
   * growth both run; every result must still be right. */
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  tpj_rt_exe_t* exe = NULL;
  TPJ_EXPECT_OK(tpj_rt_compile(rt, kDoubleMlir, strlen(kDoubleMlir), &exe));
  float x[4] = {1, 2, 3, 4};
  int64_t n = 4;
  tpj_rt_buffer_t* cur = NULL;
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 1, TPJ_F32, &n, 1, x, &cur));
  double_chain(tpj_failed_, rt, exe, 1, 110, tpj_rt_buffer_release, &cur);
  /* restart from x: 40 more doublings stay finite */
  tpj_rt_buffer_release(cur);
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 1, TPJ_F32, &n, 1, x, &cur));
  double_chain(tpj_failed_, rt, exe, 1, 40, tpj_rt_buffer_release, &cur);
  TPJ_EXPECT_OK(tpj_rt_synchronize(rt, 1));
  float got[4];
  TPJ_EXPECT_OK(tpj_rt_buffer_to_host(rt, cur, got, sizeof(got)));
  for (int i = 0; i < 4; ++i) TPJ_EXPECT(got[i] == x[i] * 1099511627776.0f); /* 2^(150-110) */
  tpj_rt_buffer_release(cur);
  tpj_rt_exe_release(exe);
}

/* Dropping the input of a launch still running does not wait for it: the
 * PJRT buffer goes to the reaper, which destroys it once the plugin is done
 * (rt/reap.h). The result is still right, and a synchronize leaves nothing
 * queued. A chain of launches, each input dropped at once, is the pattern. */
TPJ_TEST(rt_dropped_inputs_are_reaped_after_their_launches) {
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  int64_t start = tpj_rt_live_buffers();
  tpj_rt_exe_t* exe = NULL;
  TPJ_EXPECT_OK(tpj_rt_compile(rt, kDoubleMlir, strlen(kDoubleMlir), &exe));
  float x[4] = {1, 2, 3, 4};
  int64_t n = 4;
  tpj_rt_buffer_t* cur = NULL;
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, TPJ_F32, &n, 1, x, &cur));
  /* each launch may still run when its input is dropped */
  double_chain(tpj_failed_, rt, exe, 0, 20, tpj_rt_buffer_release_later, &cur);
  TPJ_EXPECT(tpj_rt_live_buffers() == start + 1);
  TPJ_EXPECT_OK(tpj_rt_synchronize(rt, -1));
  TPJ_EXPECT(tpj_rt_reap_pending() == 0);
  float got[4] = {0};
  TPJ_EXPECT_OK(tpj_rt_buffer_to_host(rt, cur, got, sizeof(got)));
  for (int i = 0; i < 4; ++i) TPJ_EXPECT(got[i] == x[i] * 1048576.0f);
  tpj_rt_buffer_release(cur);
  tpj_rt_exe_release(exe);
  TPJ_EXPECT_OK(tpj_rt_synchronize(rt, -1));
  TPJ_EXPECT(tpj_rt_reap_pending() == 0);
  TPJ_EXPECT(tpj_rt_live_buffers() == start);
}

TPJ_TEST(rt_buffer_host_memory_is_the_bytes) {
  /* The CPU plugin's device memory is host memory: the address holds the
   * buffer's row-major bytes, and a write there (by the one holder) is what
   * the next read of the buffer sees. */
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  int64_t d[2] = {3, 5};
  float x[15];
  for (int i = 0; i < 15; ++i) x[i] = (float)i * 0.5f - 3.0f;
  tpj_rt_buffer_t* b = NULL;
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, TPJ_F32, d, 2, x, &b));
  void* p = NULL;
  TPJ_EXPECT_OK(tpj_rt_buffer_host_memory(rt, b, &p));
  TPJ_EXPECT(p != NULL && p != (void*)x);
  if (p) {
    TPJ_EXPECT(memcmp(p, x, sizeof(x)) == 0);
    ((float*)p)[7] = 42.0f;
  }
  float got[15];
  TPJ_EXPECT_OK(tpj_rt_buffer_to_host(rt, b, got, sizeof(got)));
  TPJ_EXPECT(got[7] == 42.0f && got[6] == x[6] && got[8] == x[8]);
  tpj_rt_buffer_release(b);
}

TPJ_TEST(rt_restrict_devices_keeps_the_named_ones_in_order) {
  const char* path = getenv("TORCH_PJRT_PLUGIN");
  TPJ_EXPECT(path != NULL);
  if (!path) return;
  tpj_rt_options_t opts = {4};
  tpj_rt_t* rt = NULL;
  TPJ_EXPECT_OK(tpj_rt_open(path, &opts, &rt));
  if (!rt) return;
  /* refusals leave the client as it was */
  const int twice[2] = {1, 1}, missing[2] = {0, 4};
  tpj_status_t s = tpj_rt_restrict_devices(rt, twice, 2);
  TPJ_EXPECT(tpj_status_code(s) == TPJ_INVALID_ARGUMENT);
  TPJ_EXPECT_CONTAINS(tpj_status_message(s), "device 1 is named twice");
  tpj_status_free(s);
  s = tpj_rt_restrict_devices(rt, missing, 2);
  TPJ_EXPECT(tpj_status_code(s) == TPJ_INVALID_ARGUMENT);
  TPJ_EXPECT_CONTAINS(tpj_status_message(s), "device 4 does not exist: the plugin has 4 devices (0-3)");
  tpj_status_free(s);
  TPJ_EXPECT(tpj_rt_device_count(rt) == 4);
  const int keep[2] = {3, 1};
  TPJ_EXPECT_OK(tpj_rt_restrict_devices(rt, keep, 2));
  TPJ_EXPECT(tpj_rt_device_count(rt) == 2);
  TPJ_EXPECT(strcmp(tpj_rt_device_description(rt, 0), "TFRT_CPU_3") == 0);
  TPJ_EXPECT(strcmp(tpj_rt_device_description(rt, 1), "TFRT_CPU_1") == 0);
  TPJ_EXPECT_OK(tpj_rt_check_device(rt, 1));
  s = tpj_rt_check_device(rt, 2);
  TPJ_EXPECT(tpj_status_code(s) == TPJ_OUT_OF_RANGE);
  tpj_status_free(s);
  /* a buffer lands on the renumbered device and reads back */
  const float host[3] = {1.f, 2.f, 3.f};
  const int64_t dims[1] = {3};
  tpj_rt_buffer_t* b = NULL;
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 1, TPJ_F32, dims, 1, host, &b));
  float back[3] = {0};
  if (b) {
    TPJ_EXPECT_OK(tpj_rt_buffer_to_host(rt, b, back, sizeof(back)));
    tpj_rt_buffer_release(b);
  }
  TPJ_EXPECT(back[0] == 1.f && back[2] == 3.f);
  tpj_rt_close(rt);
}
