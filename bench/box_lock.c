/* box_lock: what the thread safety of storage boxes costs one eager op.
 * Since issue 19 (item 1) a reader takes its reference to a storage's
 * buffer under the box's lock (tpj_box_acquire_buffer) instead of reading
 * box->buf and retaining it; a write installs under the same lock. This
 * times, side by side in one run, per call:
 *   old read      box->buf, retain, release (no lock: the racy path)
 *   acquire       tpj_box_acquire_buffer, release
 *   install       tpj_box_set_buffer (lock, swap, unlock, release)
 * single-threaded, and acquire with 4 threads on 4 boxes (stripe sharing).
 * An eager op takes one or two references per tensor operand and installs
 * one buffer per output. No plugin needed: the buffers are placeholders.
 * Not a test. Build and run (from the repository root, after make lib):
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Isrc -I$PJRT_INCLUDE bench/box_lock.c \
 *      build/libtpj.a -ldl -lpthread -o build/box_lock && ./build/box_lock
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "rt/box.h"
#include "rt/rt.h"

#define N 20000000L

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void* acquire_loop(void* arg) {
  tpj_box_t* box = (tpj_box_t*)arg;
  for (long i = 0; i < N / 4; ++i) tpj_rt_buffer_release(tpj_box_acquire_buffer(box));
  return NULL;
}

int main(void) {
  int64_t dims[1] = {4};
  tpj_box_t* box = tpj_box_create(16, 0);
  tpj_box_set_buffer(box, tpj_rt_buffer_placeholder(TPJ_F32, dims, 1, 0, 1));

  double t0 = now_ns();
  for (long i = 0; i < N; ++i) {
    tpj_rt_buffer_t* b = box->buf;
    tpj_rt_buffer_retain(b);
    tpj_rt_buffer_release(b);
  }
  double t1 = now_ns();
  for (long i = 0; i < N; ++i) tpj_rt_buffer_release(tpj_box_acquire_buffer(box));
  double t2 = now_ns();
  tpj_rt_buffer_t* spare = tpj_rt_buffer_placeholder(TPJ_F32, dims, 1, 0, 1);
  for (long i = 0; i < N; ++i) {
    tpj_rt_buffer_retain(spare);
    tpj_box_set_buffer(box, spare);  /* releases the previous (spare again after the first) */
  }
  double t3 = now_ns();
  printf("old read (no lock)   %6.1f ns\n", (t1 - t0) / N);
  printf("acquire (locked)     %6.1f ns\n", (t2 - t1) / N);
  printf("install (locked)     %6.1f ns\n", (t3 - t2) / N);

  tpj_box_t* boxes[4];
  pthread_t th[4];
  for (int k = 0; k < 4; ++k) {
    boxes[k] = tpj_box_create(16, 0);
    tpj_box_set_buffer(boxes[k], tpj_rt_buffer_placeholder(TPJ_F32, dims, 1, 0, 1));
  }
  double t4 = now_ns();
  for (int k = 0; k < 4; ++k) pthread_create(&th[k], NULL, acquire_loop, boxes[k]);
  for (int k = 0; k < 4; ++k) pthread_join(th[k], NULL);
  double t5 = now_ns();
  printf("acquire, 4 threads   %6.1f ns per call (wall / all calls)\n", (t5 - t4) / N);
  for (int k = 0; k < 4; ++k) tpj_box_destroy(boxes[k]);
  tpj_rt_buffer_release(spare);
  tpj_box_destroy(box);
  return 0;
}
