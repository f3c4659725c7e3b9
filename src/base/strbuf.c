#include "base/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tpj_strbuf_init(tpj_strbuf_t* sb) { memset(sb, 0, sizeof(*sb)); }

void tpj_strbuf_free(tpj_strbuf_t* sb) {
  free(sb->data);
  memset(sb, 0, sizeof(*sb));
}

void tpj_strbuf_clear(tpj_strbuf_t* sb) {
  sb->len = 0;
  if (sb->data) sb->data[0] = 0;
}

static int tpj_strbuf_reserve(tpj_strbuf_t* sb, size_t extra) {
  if (sb->failed) return 0;
  size_t need = sb->len + extra + 1;
  if (need <= sb->cap) return 1;
  size_t cap = sb->cap ? sb->cap : 256;
  while (cap < need) cap *= 2;
  char* p = (char*)realloc(sb->data, cap);
  if (!p) {
    sb->failed = 1;
    return 0;
  }
  sb->data = p;
  sb->cap = cap;
  return 1;
}

void tpj_strbuf_append(tpj_strbuf_t* sb, const char* s, size_t n) {
  if (!tpj_strbuf_reserve(sb, n)) return;
  memcpy(sb->data + sb->len, s, n);
  sb->len += n;
  sb->data[sb->len] = 0;
}

void tpj_strbuf_puts(tpj_strbuf_t* sb, const char* s) {
  tpj_strbuf_append(sb, s, strlen(s));
}

void tpj_strbuf_printf(tpj_strbuf_t* sb, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n > 0 && tpj_strbuf_reserve(sb, (size_t)n)) {
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
  }
  va_end(ap);
}

const char* tpj_strbuf_cstr(const tpj_strbuf_t* sb) {
  return sb->data ? sb->data : "";
}

tpj_status_t tpj_strbuf_status(const tpj_strbuf_t* sb) {
  return sb->failed ? tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory building text")
                    : NULL;
}

uint64_t tpj_hash_bytes(const void* data, size_t n, uint64_t seed) {
  const unsigned char* p = (const unsigned char*)data;
  uint64_t h = seed;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}
