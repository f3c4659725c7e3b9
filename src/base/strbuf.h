/* base/strbuf: a growable, always NUL-terminated text buffer used to emit
 * StableHLO and cache keys. An allocation failure is sticky: later appends
 * are no-ops and tpj_strbuf_status() reports it once, at the end. */
#ifndef TPJ_BASE_STRBUF_H_
#define TPJ_BASE_STRBUF_H_

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  char* data;   /* owned; NUL-terminated once anything was appended */
  size_t len;
  size_t cap;
  int failed;
} tpj_strbuf_t;

void tpj_strbuf_init(tpj_strbuf_t* sb);
void tpj_strbuf_free(tpj_strbuf_t* sb);
void tpj_strbuf_clear(tpj_strbuf_t* sb);
void tpj_strbuf_append(tpj_strbuf_t* sb, const char* s, size_t n);
void tpj_strbuf_puts(tpj_strbuf_t* sb, const char* s);
void tpj_strbuf_printf(tpj_strbuf_t* sb, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* "" when empty; borrowed. */
const char* tpj_strbuf_cstr(const tpj_strbuf_t* sb);
tpj_status_t tpj_strbuf_status(const tpj_strbuf_t* sb);

/* 64-bit FNV-1a, used for cache keys. */
uint64_t tpj_hash_bytes(const void* data, size_t n, uint64_t seed);
#define TPJ_HASH_SEED 0xcbf29ce484222325ull

#ifdef __cplusplus
}
#endif
#endif /* TPJ_BASE_STRBUF_H_ */
