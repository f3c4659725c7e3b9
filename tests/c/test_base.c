/* base: status, strbuf, dtypes and hashing. No device needed; these are the
 * contracts every other module leans on (NULL means OK, messages survive
 * annotation, text buffers grow without truncating, cache-key hashes are
 * stable across runs and builds). */
#include <stdint.h>
#include <stdlib.h>

#include "base/dtype.h"
#include "base/status.h"
#include "base/strbuf.h"
#include "tpj_test.h"

/* ---- status ----------------------------------------------------------- */

TPJ_TEST(base_status_make_code_message) {
  tpj_status_t s = tpj_status_make(TPJ_INVALID_ARGUMENT, "bad %s %d", "dim", 3);
  TPJ_EXPECT(s != NULL);
  TPJ_EXPECT(tpj_status_code(s) == TPJ_INVALID_ARGUMENT);
  TPJ_EXPECT(strcmp(tpj_status_message(s), "bad dim 3") == 0);
  tpj_status_free(s);
}

TPJ_TEST(base_status_ok_is_null) {
  /* The whole core relies on "NULL is success": make(OK) must not allocate. */
  TPJ_EXPECT(tpj_status_make(TPJ_OK, "ignored %d", 1) == NULL);
  TPJ_EXPECT(tpj_status_code(NULL) == TPJ_OK);
  TPJ_EXPECT(strcmp(tpj_status_message(NULL), "") == 0);
  TPJ_EXPECT(tpj_status_annotate(NULL, "ctx") == NULL);
  tpj_status_free(NULL); /* no-op, must not crash */
}

TPJ_TEST(base_status_annotate_prepends_and_keeps_code) {
  tpj_status_t s = tpj_status_make(TPJ_NOT_FOUND, "no symbol");
  s = tpj_status_annotate(s, "loading %s", "x.so");
  s = tpj_status_annotate(s, "open");
  TPJ_EXPECT(tpj_status_code(s) == TPJ_NOT_FOUND);
  TPJ_EXPECT(strcmp(tpj_status_message(s), "open: loading x.so: no symbol") == 0);
  tpj_status_free(s);
}

TPJ_TEST(base_status_long_message) {
  /* Messages are sized with vsnprintf, not a fixed buffer: nothing is cut. */
  char big[1001];
  memset(big, 'q', 1000);
  big[1000] = 0;
  tpj_status_t s = tpj_status_make(TPJ_INTERNAL, "%s!", big);
  TPJ_EXPECT(strlen(tpj_status_message(s)) == 1001);
  TPJ_EXPECT(tpj_status_message(s)[1000] == '!');
  tpj_status_free(s);
}

TPJ_TEST(base_status_code_names) {
  TPJ_EXPECT(strcmp(tpj_status_code_name(TPJ_OK), "OK") == 0);
  TPJ_EXPECT(strcmp(tpj_status_code_name(TPJ_INVALID_ARGUMENT), "INVALID_ARGUMENT") == 0);
  TPJ_EXPECT(strcmp(tpj_status_code_name(TPJ_NOT_FOUND), "NOT_FOUND") == 0);
  TPJ_EXPECT(strcmp(tpj_status_code_name(TPJ_UNIMPLEMENTED), "UNIMPLEMENTED") == 0);
  TPJ_EXPECT(strcmp(tpj_status_code_name(TPJ_OUT_OF_MEMORY), "OUT_OF_MEMORY") == 0);
  TPJ_EXPECT(strcmp(tpj_status_code_name(TPJ_FAILED_PRECONDITION), "FAILED_PRECONDITION") == 0);
  TPJ_EXPECT(strcmp(tpj_status_code_name(TPJ_INTERNAL), "INTERNAL") == 0);
  TPJ_EXPECT(strcmp(tpj_status_code_name(TPJ_OUT_OF_RANGE), "OUT_OF_RANGE") == 0);
  TPJ_EXPECT(strcmp(tpj_status_code_name((tpj_status_code_t)99), "UNKNOWN") == 0);
}

static tpj_status_t fails_then_passes(int fail) {
  TPJ_RETURN_IF_ERROR(fail ? tpj_status_make(TPJ_OUT_OF_RANGE, "first") : NULL);
  return tpj_status_make(TPJ_INTERNAL, "second");
}

TPJ_TEST(base_status_return_if_error) {
  tpj_status_t s = fails_then_passes(1);
  TPJ_EXPECT(strcmp(tpj_status_message(s), "first") == 0);
  tpj_status_free(s);
  s = fails_then_passes(0);
  TPJ_EXPECT(strcmp(tpj_status_message(s), "second") == 0);
  tpj_status_free(s);
}

/* ---- strbuf ----------------------------------------------------------- */

TPJ_TEST(base_strbuf_empty_is_empty_string) {
  tpj_strbuf_t sb;
  tpj_strbuf_init(&sb);
  TPJ_EXPECT(strcmp(tpj_strbuf_cstr(&sb), "") == 0);
  tpj_strbuf_printf(&sb, "%s", ""); /* zero-length printf writes nothing */
  TPJ_EXPECT(sb.len == 0);
  TPJ_EXPECT(strcmp(tpj_strbuf_cstr(&sb), "") == 0);
  TPJ_EXPECT(tpj_strbuf_status(&sb) == NULL);
  tpj_strbuf_clear(&sb); /* clear with no storage must not crash */
  tpj_strbuf_free(&sb);
  TPJ_EXPECT(sb.data == NULL && sb.len == 0);
}

TPJ_TEST(base_strbuf_append_grows_past_first_block) {
  /* The first block is 256 bytes; 1000 single-byte appends force several
   * reallocations and the contents must survive each one. */
  tpj_strbuf_t sb;
  tpj_strbuf_init(&sb);
  for (int i = 0; i < 1000; ++i) {
    char c = (char)('a' + i % 26);
    tpj_strbuf_append(&sb, &c, 1);
  }
  TPJ_EXPECT(sb.len == 1000);
  TPJ_EXPECT(strlen(tpj_strbuf_cstr(&sb)) == 1000);
  TPJ_EXPECT(sb.cap > 1000);
  int same = 1;
  for (int i = 0; i < 1000; ++i) same &= tpj_strbuf_cstr(&sb)[i] == (char)('a' + i % 26);
  TPJ_EXPECT(same);
  tpj_strbuf_free(&sb);
}

TPJ_TEST(base_strbuf_printf_grows_in_one_call) {
  /* One printf longer than the first block: the size comes from vsnprintf,
   * so the whole string must land, NUL-terminated. */
  char big[700];
  memset(big, 'x', 699);
  big[699] = 0;
  tpj_strbuf_t sb;
  tpj_strbuf_init(&sb);
  tpj_strbuf_puts(&sb, "<");
  tpj_strbuf_printf(&sb, "%s|%d|%lld", big, 42, (long long)-7);
  tpj_strbuf_puts(&sb, ">");
  TPJ_EXPECT(sb.len == 1 + 699 + strlen("|42|-7") + 1);
  TPJ_EXPECT(strlen(tpj_strbuf_cstr(&sb)) == sb.len);
  TPJ_EXPECT(sb.data[0] == '<' && sb.data[699] == 'x' && sb.data[700] == '|');
  TPJ_EXPECT_CONTAINS(tpj_strbuf_cstr(&sb), "x|42|-7>");
  TPJ_EXPECT(tpj_strbuf_status(&sb) == NULL);
  tpj_strbuf_free(&sb);
}

TPJ_TEST(base_strbuf_clear_keeps_capacity) {
  tpj_strbuf_t sb;
  tpj_strbuf_init(&sb);
  for (int i = 0; i < 100; ++i) tpj_strbuf_printf(&sb, "%08d", i);
  size_t cap = sb.cap;
  tpj_strbuf_clear(&sb);
  TPJ_EXPECT(sb.len == 0 && sb.cap == cap);
  TPJ_EXPECT(strcmp(tpj_strbuf_cstr(&sb), "") == 0);
  tpj_strbuf_puts(&sb, "again");
  TPJ_EXPECT(strcmp(tpj_strbuf_cstr(&sb), "again") == 0);
  tpj_strbuf_free(&sb);
}

TPJ_TEST(base_strbuf_append_embedded_bytes) {
  /* append takes a length, so it must copy exactly n bytes (cache keys can
   * be built from non-text). */
  tpj_strbuf_t sb;
  tpj_strbuf_init(&sb);
  tpj_strbuf_append(&sb, "ab\0cd", 5);
  TPJ_EXPECT(sb.len == 5);
  TPJ_EXPECT(memcmp(sb.data, "ab\0cd", 6) == 0); /* and a NUL after them */
  tpj_strbuf_free(&sb);
}

/* ---- dtype ------------------------------------------------------------ */

TPJ_TEST(base_dtype_sizes_and_names) {
  static const struct {
    tpj_dtype_t dt;
    size_t size;
    const char* hlo;
    const char* name;
  } want[] = {
      {TPJ_BOOL, 1, "i1", "bool"},          {TPJ_U8, 1, "ui8", "uint8"},
      {TPJ_I8, 1, "i8", "int8"},            {TPJ_I16, 2, "i16", "int16"},
      {TPJ_I32, 4, "i32", "int32"},         {TPJ_I64, 8, "i64", "int64"},
      {TPJ_F16, 2, "f16", "float16"},       {TPJ_BF16, 2, "bf16", "bfloat16"},
      {TPJ_F32, 4, "f32", "float32"},       {TPJ_F64, 8, "f64", "float64"},
      {TPJ_C64, 8, "complex<f32>", "complex64"},
      {TPJ_C128, 16, "complex<f64>", "complex128"},
      {TPJ_U16, 2, "ui16", "uint16"},       {TPJ_U32, 4, "ui32", "uint32"},
      {TPJ_U64, 8, "ui64", "uint64"},
  };
  int n = (int)(sizeof(want) / sizeof(want[0]));
  /* every valid dtype is listed once */
  TPJ_EXPECT(n == TPJ_DTYPE_COUNT - 1);
  for (int i = 0; i < n; ++i) {
    if (tpj_dtype_size(want[i].dt) != want[i].size ||
        strcmp(tpj_dtype_hlo_name(want[i].dt), want[i].hlo) != 0 ||
        strcmp(tpj_dtype_name(want[i].dt), want[i].name) != 0) {
      fprintf(stderr, "  dtype %d: size %zu hlo %s name %s\n", (int)want[i].dt,
              tpj_dtype_size(want[i].dt), tpj_dtype_hlo_name(want[i].dt),
              tpj_dtype_name(want[i].dt));
      *tpj_failed_ = 1;
    }
  }
}

TPJ_TEST(base_dtype_invalid_is_harmless) {
  /* Out-of-range values come from C++ casts; they must not index past the
   * table. */
  TPJ_EXPECT(tpj_dtype_size(TPJ_DTYPE_INVALID) == 0);
  TPJ_EXPECT(tpj_dtype_size(TPJ_DTYPE_COUNT) == 0);
  TPJ_EXPECT(tpj_dtype_size((tpj_dtype_t)-3) == 0);
  TPJ_EXPECT(tpj_dtype_size((tpj_dtype_t)1000) == 0);
  TPJ_EXPECT(strcmp(tpj_dtype_name((tpj_dtype_t)1000), "invalid") == 0);
  TPJ_EXPECT(strcmp(tpj_dtype_hlo_name((tpj_dtype_t)-1), "invalid") == 0);
}

TPJ_TEST(base_dtype_classes) {
  for (int d = TPJ_BOOL; d < TPJ_DTYPE_COUNT; ++d) {
    tpj_dtype_t dt = (tpj_dtype_t)d;
    int classes = !!tpj_dtype_is_float(dt) + !!tpj_dtype_is_complex(dt) + !!tpj_dtype_is_int(dt) +
                  !!tpj_dtype_is_storage_only(dt);
    /* bool is in no class; everything else is in exactly one */
    TPJ_EXPECT(classes == (dt == TPJ_BOOL ? 0 : 1));
  }
  /* the wide unsigned types are storage only: no lowering computes in them */
  TPJ_EXPECT(tpj_dtype_is_storage_only(TPJ_U16) && tpj_dtype_is_storage_only(TPJ_U64));
  TPJ_EXPECT(!tpj_dtype_is_int(TPJ_U32) && !tpj_dtype_is_storage_only(TPJ_U8));
  TPJ_EXPECT(tpj_dtype_is_float(TPJ_BF16) && tpj_dtype_is_float(TPJ_F16));
  TPJ_EXPECT(tpj_dtype_is_int(TPJ_U8) && tpj_dtype_is_int(TPJ_I64));
  TPJ_EXPECT(!tpj_dtype_is_int(TPJ_BOOL));
  TPJ_EXPECT(tpj_dtype_is_complex(TPJ_C64) && !tpj_dtype_is_float(TPJ_C128));
}

/* ---- hash ------------------------------------------------------------- */

TPJ_TEST(base_hash_fnv1a_reference_values) {
  /* Published FNV-1a 64 test vectors: keys written to the on-disk cache
   * must hash the same in every build. */
  TPJ_EXPECT(tpj_hash_bytes("", 0, TPJ_HASH_SEED) == 0xcbf29ce484222325ull);
  TPJ_EXPECT(tpj_hash_bytes("a", 1, TPJ_HASH_SEED) == 0xaf63dc4c8601ec8cull);
  TPJ_EXPECT(tpj_hash_bytes("foobar", 6, TPJ_HASH_SEED) == 0x85944171f73967e8ull);
}

TPJ_TEST(base_hash_chains_and_distinguishes) {
  /* Hashing in pieces with the running hash as seed equals hashing at once,
   * so a key can be hashed as it is built. */
  uint64_t h = tpj_hash_bytes("foo", 3, TPJ_HASH_SEED);
  TPJ_EXPECT(tpj_hash_bytes("bar", 3, h) == tpj_hash_bytes("foobar", 6, TPJ_HASH_SEED));
  TPJ_EXPECT(tpj_hash_bytes("ab", 2, TPJ_HASH_SEED) != tpj_hash_bytes("ba", 2, TPJ_HASH_SEED));
  /* bytes past n are not read */
  TPJ_EXPECT(tpj_hash_bytes("abc", 2, TPJ_HASH_SEED) == tpj_hash_bytes("abd", 2, TPJ_HASH_SEED));
  int64_t dims[2] = {3, 4};
  TPJ_EXPECT(tpj_hash_bytes(dims, sizeof(dims), TPJ_HASH_SEED) ==
             tpj_hash_bytes(dims, sizeof(dims), TPJ_HASH_SEED));
}
