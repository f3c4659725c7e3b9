#include "base/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tpj_status {
  tpj_status_code_t code;
  int is_static;
  char* message;
};

static struct tpj_status tpj_oom_status = {TPJ_OUT_OF_MEMORY, 1,
                                           (char*)"out of host memory"};

static char* tpj_vformat(const char* fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) return NULL;
  char* buf = (char*)malloc((size_t)n + 1);
  if (!buf) return NULL;
  vsnprintf(buf, (size_t)n + 1, fmt, ap);
  return buf;
}

tpj_status_t tpj_status_make(tpj_status_code_t code, const char* fmt, ...) {
  if (code == TPJ_OK) return NULL;
  struct tpj_status* s = (struct tpj_status*)malloc(sizeof(*s));
  if (!s) return &tpj_oom_status;
  va_list ap;
  va_start(ap, fmt);
  s->message = tpj_vformat(fmt, ap);
  va_end(ap);
  if (!s->message) {
    free(s);
    return &tpj_oom_status;
  }
  s->code = code;
  s->is_static = 0;
  return s;
}

tpj_status_t tpj_status_annotate(tpj_status_t s, const char* fmt, ...) {
  if (!s || s->is_static) return s;
  va_list ap;
  va_start(ap, fmt);
  char* prefix = tpj_vformat(fmt, ap);
  va_end(ap);
  if (!prefix) return s;
  size_t n = strlen(prefix) + 2 + strlen(s->message) + 1;
  char* joined = (char*)malloc(n);
  if (joined) {
    snprintf(joined, n, "%s: %s", prefix, s->message);
    free(s->message);
    s->message = joined;
  }
  free(prefix);
  return s;
}

tpj_status_code_t tpj_status_code(tpj_status_t s) { return s ? s->code : TPJ_OK; }

const char* tpj_status_message(tpj_status_t s) { return s ? s->message : ""; }

void tpj_status_free(tpj_status_t s) {
  if (!s || s->is_static) return;
  free(s->message);
  free(s);
}

const char* tpj_status_code_name(tpj_status_code_t code) {
  switch (code) {
    case TPJ_OK: return "OK";
    case TPJ_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case TPJ_NOT_FOUND: return "NOT_FOUND";
    case TPJ_UNIMPLEMENTED: return "UNIMPLEMENTED";
    case TPJ_OUT_OF_MEMORY: return "OUT_OF_MEMORY";
    case TPJ_FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case TPJ_INTERNAL: return "INTERNAL";
    case TPJ_OUT_OF_RANGE: return "OUT_OF_RANGE";
    case TPJ_INDEX_ERROR: return "INDEX_ERROR";
  }
  return "UNKNOWN";
}
