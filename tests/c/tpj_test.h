/* A minimal C test harness: TPJ_TEST(name) registers a test; TPJ_EXPECT
 * records a failure and continues; the runner prints `N passed, N failed`. */
#ifndef TPJ_TEST_H_
#define TPJ_TEST_H_

#include <stdio.h>
#include <string.h>

#include "base/status.h"
#include "rt/rt.h"

typedef void (*tpj_test_fn)(int* failed);
void tpj_test_register(const char* name, tpj_test_fn fn);

#define TPJ_TEST(name)                                              \
  static void name(int* tpj_failed_);                               \
  __attribute__((constructor)) static void name##_register(void) {  \
    tpj_test_register(#name, name);                                 \
  }                                                                 \
  static void name(int* tpj_failed_)

#define TPJ_EXPECT(cond)                                                      \
  do {                                                                        \
    if (!(cond)) {                                                            \
      fprintf(stderr, "  %s:%d: expected %s\n", __FILE__, __LINE__, #cond);   \
      *tpj_failed_ = 1;                                                       \
    }                                                                         \
  } while (0)

/* Fails the test (and returns from it) when s is an error; frees s. */
#define TPJ_EXPECT_OK(expr)                                                        \
  do {                                                                             \
    tpj_status_t tpj_s_ = (expr);                                                  \
    if (tpj_s_) {                                                                  \
      fprintf(stderr, "  %s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr,        \
              tpj_status_message(tpj_s_));                                         \
      tpj_status_free(tpj_s_);                                                     \
      *tpj_failed_ = 1;                                                            \
      return;                                                                      \
    }                                                                              \
  } while (0)

#define TPJ_EXPECT_CONTAINS(hay, needle)                                            \
  do {                                                                              \
    if (!strstr((hay), (needle))) {                                                 \
      fprintf(stderr, "  %s:%d: \"%s\" not in:\n%s\n", __FILE__, __LINE__, (needle),  \
              (hay));                                                               \
      *tpj_failed_ = 1;                                                             \
    }                                                                               \
  } while (0)

/* The process-wide runtime on the plugin named by TORCH_PJRT_PLUGIN (opened
 * on first use with 2 CPU devices); NULL when there is none, and the test
 * should then fail. */
struct tpj_rt;
struct tpj_rt* tpj_test_rt(void);

/* An op result's shape: dtype dt, dims d[0..n), the rest zero. */
static inline tpj_rt_shape_t tpj_test_shape(tpj_dtype_t dt, const int64_t* d, int n) {
  tpj_rt_shape_t s;
  memset(&s, 0, sizeof(s));
  s.dtype = dt;
  s.ndim = n;
  for (int i = 0; i < n; ++i) s.dims[i] = d[i];
  return s;
}

#endif /* TPJ_TEST_H_ */
