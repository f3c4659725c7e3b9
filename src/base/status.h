/* base/status: the one error type of the C core.
 * A tpj_status_t is NULL on success; otherwise it owns a code and a message
 * and the caller that receives it must tpj_status_free() it (or pass it up). */
#ifndef TPJ_BASE_STATUS_H_
#define TPJ_BASE_STATUS_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  TPJ_OK = 0,
  TPJ_INVALID_ARGUMENT,  /* bad shapes, dtypes, indices from the caller */
  TPJ_NOT_FOUND,         /* no plugin, no symbol, no cache entry */
  TPJ_UNIMPLEMENTED,     /* an op or dtype this device or build lacks */
  TPJ_OUT_OF_MEMORY,     /* host or device allocation failed */
  TPJ_FAILED_PRECONDITION, /* wrong state: not initialised, version mismatch */
  TPJ_INTERNAL,          /* a PJRT failure or a bug */
  TPJ_OUT_OF_RANGE,      /* device ordinal or index out of range */
  TPJ_INDEX_ERROR,       /* a dim or index argument CPU refuses with IndexError */
} tpj_status_code_t;

/* The C++ glue raises TPJ_UNIMPLEMENTED as NotImplementedError, TPJ_INDEX_ERROR
 * as IndexError, TPJ_OUT_OF_MEMORY as torch.OutOfMemoryError, and every other
 * code as RuntimeError: a check written in C picks PyTorch's exception kind by
 * its code. */
typedef struct tpj_status* tpj_status_t;

/* Returns a new status (owned by the caller) with a printf-formatted message.
 * Never returns NULL for code != TPJ_OK, even when out of memory (a static
 * status is returned then; tpj_status_free knows not to free it). */
tpj_status_t tpj_status_make(tpj_status_code_t code, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Prepends "prefix: " to the message of s and returns s (ownership passes). */
tpj_status_t tpj_status_annotate(tpj_status_t s, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
tpj_status_code_t tpj_status_code(tpj_status_t s);
/* Borrowed; valid until s is freed. "" for NULL. */
const char* tpj_status_message(tpj_status_t s);
void tpj_status_free(tpj_status_t s);
const char* tpj_status_code_name(tpj_status_code_t code);

#define TPJ_RETURN_IF_ERROR(expr)            \
  do {                                       \
    tpj_status_t tpj_status_tmp_ = (expr);   \
    if (tpj_status_tmp_) return tpj_status_tmp_; \
  } while (0)

#ifdef __cplusplus
}
#endif
#endif /* TPJ_BASE_STATUS_H_ */
