#include <stdlib.h>

#include "rt/rt.h"
#include "tpj_test.h"

#define TPJ_MAX_TESTS 512

static struct {
  const char* name;
  tpj_test_fn fn;
} g_tests[TPJ_MAX_TESTS];
static int g_ntests;

void tpj_test_register(const char* name, tpj_test_fn fn) {
  if (g_ntests < TPJ_MAX_TESTS) {
    g_tests[g_ntests].name = name;
    g_tests[g_ntests].fn = fn;
    g_ntests++;
  }
}

static tpj_rt_t* g_rt;

struct tpj_rt* tpj_test_rt(void) {
  if (g_rt) return g_rt;
  const char* path = getenv("TORCH_PJRT_PLUGIN");
  if (!path) {
    fprintf(stderr, "  TORCH_PJRT_PLUGIN is not set\n");
    return NULL;
  }
  tpj_rt_options_t opts = {2};
  tpj_status_t s = tpj_rt_open(path, &opts, &g_rt);
  if (s) {
    fprintf(stderr, "  tpj_rt_open: %s\n", tpj_status_message(s));
    tpj_status_free(s);
    return NULL;
  }
  return g_rt;
}

int main(int argc, char** argv) {
  int passed = 0, failed = 0;
  for (int i = 0; i < g_ntests; ++i) {
    if (argc > 1 && !strstr(g_tests[i].name, argv[1])) continue;
    int f = 0;
    g_tests[i].fn(&f);
    printf("%s %s\n", f ? "FAIL" : "ok  ", g_tests[i].name);
    if (f) failed++;
    else passed++;
  }
  tpj_rt_close(g_rt);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
