/* exec: ops run end to end on the plugin, results checked on the host. */
#include <stdlib.h>

#include "exec/exec.h"
#include "rt/rt.h"
#include "tpj_test.h"

static tpj_rt_shape_t shape1(tpj_dtype_t dt, int64_t n) {
  tpj_rt_shape_t s;
  memset(&s, 0, sizeof(s));
  s.dtype = dt;
  s.ndim = 1;
  s.dims[0] = n;
  return s;
}

TPJ_TEST(exec_add_f32_with_alpha_and_cache_hit) {
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  tpj_exec_t* ex = NULL;
  TPJ_EXPECT_OK(tpj_exec_create(rt, 8, &ex));
  float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40}, alpha = 2;
  int64_t n = 4;
  tpj_rt_buffer_t *ba, *bb, *bal;
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, TPJ_F32, &n, 1, a, &ba));
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, TPJ_F32, &n, 1, b, &bb));
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, TPJ_F32, NULL, 0, &alpha, &bal));
  tpj_exec_arg_t args[3] = {{ba, 0, {0}}, {bb, 0, {0}}, {bal, 0, {0}}};
  int64_t attrs[2] = {0, 1};
  tpj_rt_shape_t out = shape1(TPJ_F32, 4);
  for (int rep = 0; rep < 2; ++rep) {
    tpj_rt_buffer_t* r = NULL;
    TPJ_EXPECT_OK(tpj_exec_run(ex, "aten::add.Tensor", 0, args, 3, attrs, 2, &out, 1, &r));
    float got[4];
    TPJ_EXPECT_OK(tpj_rt_buffer_to_host(rt, r, got, sizeof(got)));
    for (int i = 0; i < 4; ++i) TPJ_EXPECT(got[i] == a[i] + 2 * b[i]);
    tpj_rt_buffer_release(r);
  }
  tpj_exec_metrics_t m;
  tpj_exec_get_metrics(ex, &m);
  TPJ_EXPECT(m.compiles == 1);
  TPJ_EXPECT(m.cache_hits == 1);
  tpj_rt_buffer_release(ba);
  tpj_rt_buffer_release(bb);
  tpj_rt_buffer_release(bal);
  tpj_exec_destroy(ex);
}

/* A traced graph: (a + b) * a, with b a constant the graph keeps. Recording
 * launches nothing; the graph runs in one execute; a second identical trace
 * hits the cache; placeholders refuse host reads. */
TPJ_TEST(exec_graph_trace_run_and_cache) {
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  tpj_exec_t* ex = NULL;
  TPJ_EXPECT_OK(tpj_exec_create(rt, 8, &ex));
  float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40}, a2[4] = {-1, 0, 0.5f, 2};
  int64_t n = 4;
  tpj_rt_buffer_t *ba, *bb, *ba2;
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, TPJ_F32, &n, 1, a, &ba));
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, TPJ_F32, &n, 1, b, &bb));
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, TPJ_F32, &n, 1, a2, &ba2));
  int64_t attrs[2] = {TPJ_F32, 0};
  tpj_rt_shape_t out = shape1(TPJ_F32, 4);
  for (int rep = 0; rep < 2; ++rep) {
    TPJ_EXPECT_OK(tpj_exec_trace_begin(ex));
    TPJ_EXPECT(tpj_exec_tracing(ex));
    tpj_rt_buffer_t *s = NULL, *p = NULL;
    tpj_exec_arg_t add_args[2] = {{ba, 0, {0}}, {bb, 0, {0}}};
    TPJ_EXPECT_OK(tpj_exec_run(ex, "aten::add.Tensor", 0, add_args, 2, attrs, 2, &out, 1, &s));
    TPJ_EXPECT(s && s->trace_id > 0 && s->pjrt == NULL);
    float host[4];
    tpj_status_t st = tpj_rt_buffer_to_host(rt, s, host, sizeof(host));
    TPJ_EXPECT(tpj_status_code(st) == TPJ_FAILED_PRECONDITION);
    tpj_status_free(st);
    tpj_exec_arg_t mul_args[2] = {{s, 0, {0}}, {ba, 0, {0}}};
    TPJ_EXPECT_OK(tpj_exec_run(ex, "aten::mul.Tensor", 0, mul_args, 2, attrs, 2, &out, 1, &p));
    tpj_exec_graph_t* g = NULL;
    TPJ_EXPECT_OK(tpj_exec_trace_end(ex, &ba, 1, &p, 1, &g));
    TPJ_EXPECT(!tpj_exec_tracing(ex));
    tpj_rt_buffer_release(s);
    tpj_rt_buffer_release(p);
    if (!g) break;
    TPJ_EXPECT(tpj_exec_graph_num_nodes(g) == 2);
    tpj_rt_buffer_t* r = NULL;
    TPJ_EXPECT_OK(tpj_exec_graph_run(ex, g, 0, &ba2, 1, &r));
    float got[4];
    TPJ_EXPECT_OK(tpj_rt_buffer_to_host(rt, r, got, sizeof(got)));
    for (int i = 0; i < 4; ++i) TPJ_EXPECT(got[i] == (a2[i] + b[i]) * a2[i]);
    tpj_rt_buffer_release(r);
    tpj_exec_graph_release(g);
  }
  tpj_exec_metrics_t m;
  tpj_exec_get_metrics(ex, &m);
  TPJ_EXPECT(m.graph_compiles == 1);
  TPJ_EXPECT(m.compiles == 1);
  TPJ_EXPECT(m.graph_runs == 2);
  tpj_rt_buffer_release(ba);
  tpj_rt_buffer_release(bb);
  tpj_rt_buffer_release(ba2);
  tpj_exec_destroy(ex);
}

/* Donation: a graph computing x + b that overwrites x gives x's buffer to
 * the result when x is held once (the donated_buffers metric counts it), and
 * reads it without donating while someone else still holds it. */
TPJ_TEST(exec_graph_donates_sole_owner_only) {
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  tpj_exec_t* ex = NULL;
  TPJ_EXPECT_OK(tpj_exec_create(rt, 8, &ex));
  float x[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40};
  int64_t n = 4;
  tpj_rt_buffer_t *bx, *bb;
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, TPJ_F32, &n, 1, x, &bx));
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, TPJ_F32, &n, 1, b, &bb));
  int64_t attrs[2] = {TPJ_F32, 0};
  tpj_rt_shape_t out = shape1(TPJ_F32, 4);
  TPJ_EXPECT_OK(tpj_exec_trace_begin(ex));
  tpj_rt_buffer_t* s = NULL;
  tpj_exec_arg_t add_args[2] = {{bx, 0, {0}}, {bb, 0, {0}}};
  TPJ_EXPECT_OK(tpj_exec_run(ex, "aten::add.Tensor", 0, add_args, 2, attrs, 2, &out, 1, &s));
  tpj_exec_graph_t* g = NULL;
  int donate_to[1] = {0};
  TPJ_EXPECT_OK(tpj_exec_trace_end_donating(ex, &bx, 1, &s, 1, donate_to, &g));
  tpj_rt_buffer_release(s);
  if (g) {
    /* shared: bx is also held by `extra`, so it is read, not donated */
    tpj_rt_buffer_retain(bx);
    tpj_rt_buffer_t* extra = bx;
    tpj_rt_buffer_t* r1 = NULL;
    TPJ_EXPECT_OK(tpj_exec_graph_run(ex, g, 0, &bx, 1, &r1));
    tpj_exec_metrics_t m;
    tpj_exec_get_metrics(ex, &m);
    TPJ_EXPECT(m.donated_buffers == 0);
    float got[4];
    TPJ_EXPECT_OK(tpj_rt_buffer_to_host(rt, extra, got, sizeof(got)));
    for (int i = 0; i < 4; ++i) TPJ_EXPECT(got[i] == x[i]);
    tpj_rt_buffer_release(extra);
    /* sole owner: r1 is held once, so it is donated to r2 */
    tpj_rt_buffer_t* r2 = NULL;
    TPJ_EXPECT_OK(tpj_exec_graph_run(ex, g, 0, &r1, 1, &r2));
    tpj_exec_get_metrics(ex, &m);
    TPJ_EXPECT(m.donated_buffers == 1);
    if (r2) TPJ_EXPECT_OK(tpj_rt_buffer_to_host(rt, r2, got, sizeof(got)));
    for (int i = 0; i < 4; ++i) TPJ_EXPECT(got[i] == x[i] + 2 * b[i]);
    /* really donated: PJRT refuses to read r1 now */
    tpj_status_t st = tpj_rt_buffer_to_host(rt, r1, got, sizeof(got));
    TPJ_EXPECT(st != NULL);
    tpj_status_free(st);
    tpj_rt_buffer_release(r1);
    tpj_rt_buffer_release(r2);
    tpj_exec_graph_release(g);
  }
  tpj_rt_buffer_release(bx);
  tpj_rt_buffer_release(bb);
  tpj_exec_destroy(ex);
}

static void run_add_once(int* tpj_failed_, tpj_rt_t* rt, tpj_exec_t* ex,
                         tpj_exec_metrics_t* out_m) {
  float a[3] = {1, 2, 3}, b[3] = {4, 5, 6};
  int64_t n = 3;
  tpj_rt_buffer_t *ba, *bb, *r = NULL;
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, TPJ_F32, &n, 1, a, &ba));
  TPJ_EXPECT_OK(tpj_rt_buffer_from_host(rt, 0, TPJ_F32, &n, 1, b, &bb));
  tpj_exec_arg_t args[2] = {{ba, 0, {0}}, {bb, 0, {0}}};
  int64_t attrs[2] = {TPJ_F32, 0};
  tpj_rt_shape_t out = shape1(TPJ_F32, 3);
  TPJ_EXPECT_OK(tpj_exec_run(ex, "aten::add.Tensor", 0, args, 2, attrs, 2, &out, 1, &r));
  float got[3] = {0};
  if (r) TPJ_EXPECT_OK(tpj_rt_buffer_to_host(rt, r, got, sizeof(got)));
  for (int i = 0; i < 3; ++i) TPJ_EXPECT(got[i] == a[i] + b[i]);
  tpj_rt_buffer_release(r);
  tpj_rt_buffer_release(ba);
  tpj_rt_buffer_release(bb);
  tpj_exec_get_metrics(ex, out_m);
}

/* The disk cache: a second cache (a new process, in effect) loads instead of
 * compiling; a corrupt entry is recompiled, rewritten and reported once; an
 * entry of another plugin identity is never loaded. */
TPJ_TEST(exec_disk_cache_reuse_and_corruption) {
  tpj_rt_t* rt = tpj_test_rt();
  TPJ_EXPECT(rt != NULL);
  if (!rt) return;
  char dir[] = "/tmp/tpj-disk-XXXXXX";
  TPJ_EXPECT(mkdtemp(dir) != NULL);
  tpj_exec_metrics_t m;
  tpj_exec_t* ex = NULL;
  char path[4200];

  TPJ_EXPECT_OK(tpj_exec_create(rt, 8, &ex));
  TPJ_EXPECT_OK(tpj_exec_set_disk_cache(ex, dir, "plugin-a"));
  run_add_once(tpj_failed_, rt, ex, &m);
  TPJ_EXPECT(m.compiles == 1 && m.disk_writes == 1 && m.cache_hits_disk == 0);
  tpj_exec_destroy(ex);

  TPJ_EXPECT_OK(tpj_exec_create(rt, 8, &ex));
  TPJ_EXPECT_OK(tpj_exec_set_disk_cache(ex, dir, "plugin-a"));
  run_add_once(tpj_failed_, rt, ex, &m);
  TPJ_EXPECT(m.compiles == 0 && m.cache_hits_disk == 1);
  tpj_exec_destroy(ex);

  TPJ_EXPECT_OK(tpj_exec_create(rt, 8, &ex));
  TPJ_EXPECT_OK(tpj_exec_set_disk_cache(ex, dir, "plugin-b"));
  run_add_once(tpj_failed_, rt, ex, &m);
  TPJ_EXPECT(m.compiles == 1 && m.cache_hits_disk == 0 && m.disk_errors == 0);
  tpj_exec_destroy(ex);

  /* truncate every entry to half its size */
  char cmd[4400];
  snprintf(cmd, sizeof(cmd),
           "for f in %s/*.tpjx; do s=$(stat -c %%s \"$f\"); truncate -s $((s / 2)) \"$f\"; done",
           dir);
  TPJ_EXPECT(system(cmd) == 0);
  TPJ_EXPECT_OK(tpj_exec_create(rt, 8, &ex));
  TPJ_EXPECT_OK(tpj_exec_set_disk_cache(ex, dir, "plugin-a"));
  run_add_once(tpj_failed_, rt, ex, &m);
  TPJ_EXPECT(m.compiles == 1 && m.disk_errors == 1 && m.disk_writes == 1);
  TPJ_EXPECT(tpj_exec_take_disk_error(ex, path, sizeof(path)) == 1);
  TPJ_EXPECT(strstr(path, dir) == path);
  TPJ_EXPECT(tpj_exec_take_disk_error(ex, path, sizeof(path)) == 0);
  tpj_exec_destroy(ex);

  /* rewritten: loads again */
  TPJ_EXPECT_OK(tpj_exec_create(rt, 8, &ex));
  TPJ_EXPECT_OK(tpj_exec_set_disk_cache(ex, dir, "plugin-a"));
  run_add_once(tpj_failed_, rt, ex, &m);
  TPJ_EXPECT(m.compiles == 0 && m.cache_hits_disk == 1);
  tpj_exec_destroy(ex);
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  TPJ_EXPECT(system(cmd) == 0);
}
