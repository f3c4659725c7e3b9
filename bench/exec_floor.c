/* exec_floor: where the time of one cached eager op goes below the PyTorch
 * glue. Runs add(f32[16], f32[16]) N times at each layer and prints the
 * per-call wall and process-CPU time (all threads, so the plugin's worker
 * threads count; under a loaded machine the CPU time is the steadier number):
 *   raw PJRT execute  the plugin's own floor (our client, our executable)
 *   tpj_rt_execute    + our buffer wrapper and pending-event bookkeeping
 *   tpj_exec_run      + the call signature and the executable cache
 *   key only          building and hashing the signature, nothing launched
 * Not a test. Build and run (from the repository root, after make lib):
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Isrc -I$PJRT_INCLUDE bench/exec_floor.c \
 *      build/libtpj.a -ldl -lpthread -o build/exec_floor
 *   TORCH_PJRT_PLUGIN=.../xla_cpu_pjrt.so ./build/exec_floor [N]
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/strbuf.h"
#include "exec/exec.h"
#include "exec/internal.h"
#include "pjrt_c_api.h"
#include "rt/rt.h"

static double now(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void die(tpj_status_t s, const char* what) {
  if (!s) return;
  fprintf(stderr, "%s: %s\n", what, tpj_status_message(s));
  exit(1);
}

static void pjrt_check(const PJRT_Api* api, PJRT_Error* e, const char* what) {
  if (!e) return;
  PJRT_Error_Message_Args m;
  memset(&m, 0, sizeof(m));
  m.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE;
  m.error = e;
  api->PJRT_Error_Message(&m);
  fprintf(stderr, "%s: %.*s\n", what, (int)m.message_size, m.message);
  exit(1);
}

typedef struct {
  double wall, cpu;
} cost_t;

static void report(const char* name, cost_t c0, cost_t c1, int n) {
  printf("%-34s %8.2f us wall  %8.2f us cpu\n", name, (c1.wall - c0.wall) / n / 1e3,
         (c1.cpu - c0.cpu) / n / 1e3);
}

static cost_t stamp(void) {
  cost_t c = {now(CLOCK_MONOTONIC), now(CLOCK_PROCESS_CPUTIME_ID)};
  return c;
}

/* The raw PJRT floor: execute, keep the event like our runtime does, and
 * drop events and outputs in batches (destroying a buffer of a finished
 * launch is what a tensor's release does later). */
static void raw_floor(const char* plugin, const char* mlir, size_t mlir_len, int n,
                      int with_events) {
  void* lib = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
  const PJRT_Api* (*get)(void) = (const PJRT_Api* (*)(void))dlsym(lib, "GetPjrtApi");
  const PJRT_Api* api = get();
  PJRT_Client_Create_Args c;
  memset(&c, 0, sizeof(c));
  c.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE;
  pjrt_check(api, api->PJRT_Client_Create(&c), "client");
  PJRT_Client_AddressableDevices_Args d;
  memset(&d, 0, sizeof(d));
  d.struct_size = PJRT_Client_AddressableDevices_Args_STRUCT_SIZE;
  d.client = c.client;
  pjrt_check(api, api->PJRT_Client_AddressableDevices(&d), "devices");
  PJRT_Device* dev = d.addressable_devices[0];
  static const char opts[] = {0x1a, 0x04, 0x20, 0x01, 0x28, 0x01, 0x20, 0x01};
  PJRT_Program p;
  memset(&p, 0, sizeof(p));
  p.struct_size = PJRT_Program_STRUCT_SIZE;
  p.code = (char*)mlir;
  p.code_size = mlir_len;
  p.format = "mlir";
  p.format_size = 4;
  PJRT_Client_Compile_Args ca;
  memset(&ca, 0, sizeof(ca));
  ca.struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE;
  ca.client = c.client;
  ca.program = &p;
  ca.compile_options = opts;
  ca.compile_options_size = sizeof(opts);
  pjrt_check(api, api->PJRT_Client_Compile(&ca), "compile");
  float host[16] = {0};
  int64_t dims[1] = {16};
  PJRT_Buffer* in[2];
  for (int i = 0; i < 2; ++i) {
    PJRT_Client_BufferFromHostBuffer_Args b;
    memset(&b, 0, sizeof(b));
    b.struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE;
    b.client = c.client;
    b.data = host;
    b.type = PJRT_Buffer_Type_F32;
    b.dims = dims;
    b.num_dims = 1;
    b.host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall;
    b.device = dev;
    pjrt_check(api, api->PJRT_Client_BufferFromHostBuffer(&b), "upload");
    PJRT_Event_Await_Args w;
    memset(&w, 0, sizeof(w));
    w.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE;
    w.event = b.done_with_host_buffer;
    pjrt_check(api, api->PJRT_Event_Await(&w), "await");
    in[i] = b.buffer;
  }
  enum { kBatch = 64 };
  PJRT_Buffer* outs[kBatch];
  PJRT_Event* evs[kBatch];
  for (int pass = 0; pass < 2; ++pass) {
    cost_t c0 = stamp();
    for (int i = 0; i < n; ++i) {
      int slot = i % kBatch;
      PJRT_Buffer* outv[1] = {NULL};
      PJRT_Buffer* const* arg_lists[1] = {in};
      PJRT_Buffer** out_lists[1] = {outv};
      PJRT_Event* done[1] = {NULL};
      PJRT_ExecuteOptions eo;
      memset(&eo, 0, sizeof(eo));
      eo.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE;
      PJRT_LoadedExecutable_Execute_Args a;
      memset(&a, 0, sizeof(a));
      a.struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE;
      a.executable = ca.executable;
      a.options = &eo;
      a.argument_lists = arg_lists;
      a.num_devices = 1;
      a.num_args = 2;
      a.output_lists = out_lists;
      a.device_complete_events = with_events ? done : NULL;
      a.execute_device = dev;
      pjrt_check(api, api->PJRT_LoadedExecutable_Execute(&a), "execute");
      outs[slot] = outv[0];
      evs[slot] = done[0];
      if (slot == kBatch - 1 || i == n - 1) {
        for (int j = 0; j <= slot; ++j) {
          if (evs[j]) {
            PJRT_Event_Await_Args w;
            memset(&w, 0, sizeof(w));
            w.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE;
            w.event = evs[j];
            pjrt_check(api, api->PJRT_Event_Await(&w), "await");
            PJRT_Event_Destroy_Args e;
            memset(&e, 0, sizeof(e));
            e.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE;
            e.event = evs[j];
            api->PJRT_Event_Destroy(&e);
          }
          PJRT_Buffer_Destroy_Args bd;
          memset(&bd, 0, sizeof(bd));
          bd.struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE;
          bd.buffer = outs[j];
          api->PJRT_Buffer_Destroy(&bd);
        }
      }
    }
    cost_t c1 = stamp();
    if (pass == 1)
      report(with_events ? "raw PJRT execute (+event)" : "raw PJRT execute (no event)", c0, c1,
             n);
  }
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 20000;
  const char* plugin = getenv("TORCH_PJRT_PLUGIN");
  if (!plugin) {
    fprintf(stderr, "set TORCH_PJRT_PLUGIN\n");
    return 2;
  }
  tpj_rt_options_t o = {1};
  tpj_rt_t* rt = NULL;
  die(tpj_rt_open(plugin, &o, &rt), "open");
  tpj_exec_t* ex = NULL;
  die(tpj_exec_create(rt, 64, &ex), "exec");
  float host[16];
  for (int i = 0; i < 16; ++i) host[i] = (float)i;
  int64_t dims[1] = {16};
  tpj_rt_buffer_t *a = NULL, *b = NULL;
  die(tpj_rt_buffer_from_host(rt, 0, TPJ_F32, dims, 1, host, &a), "upload");
  die(tpj_rt_buffer_from_host(rt, 0, TPJ_F32, dims, 1, host, &b), "upload");
  /* as the glue passes them: each operand read through its (natural) view */
  tpj_exec_arg_t args[2];
  memset(args, 0, sizeof(args));
  args[0].buf = a;
  args[1].buf = b;
  for (int i = 0; i < 2; ++i) {
    args[i].has_view = 1;
    args[i].view.dtype = TPJ_F32;
    args[i].view.ndim = 1;
    args[i].view.sizes[0] = 16;
    args[i].view.strides[0] = 1;
  }
  int64_t attrs[2] = {TPJ_F32, 0};
  tpj_rt_shape_t out;
  memset(&out, 0, sizeof(out));
  out.dtype = TPJ_F32;
  out.ndim = 1;
  out.dims[0] = 16;
  const char* op = "aten::add.Tensor";

  char* text = NULL;
  die(tpj_exec_lower_text(op, args, 2, attrs, 2, &out, 1, &text), "lower");
  raw_floor(plugin, text, strlen(text), n, 0);
  raw_floor(plugin, text, strlen(text), n, 1);

  tpj_rt_exe_t* exe = NULL;
  die(tpj_rt_compile(rt, text, strlen(text), &exe), "compile");
  free(text);
  tpj_rt_buffer_t* bufs[2] = {a, b};
  for (int pass = 0; pass < 2; ++pass) {
    cost_t c0 = stamp();
    for (int i = 0; i < n; ++i) {
      tpj_rt_buffer_t* r = NULL;
      die(tpj_rt_execute(rt, exe, 0, bufs, 2, &out, 1, &r, op), "execute");
      tpj_rt_buffer_release(r);
      if (i % 2000 == 1999) die(tpj_rt_synchronize(rt, -1), "sync");
    }
    die(tpj_rt_synchronize(rt, -1), "sync");
    cost_t c1 = stamp();
    if (pass == 1) report("tpj_rt_execute", c0, c1, n);
  }
  for (int pass = 0; pass < 2; ++pass) {
    cost_t c0 = stamp();
    for (int i = 0; i < n; ++i) {
      tpj_rt_buffer_t* r = NULL;
      die(tpj_exec_run(ex, op, 0, args, 2, attrs, 2, &out, 1, &r), "run");
      tpj_rt_buffer_release(r);
      if (i % 2000 == 1999) die(tpj_rt_synchronize(rt, -1), "sync");
    }
    die(tpj_rt_synchronize(rt, -1), "sync");
    cost_t c1 = stamp();
    if (pass == 1) report("tpj_exec_run (cached)", c0, c1, n);
  }
  {
    tpj_strbuf_t k;
    tpj_strbuf_init(&k);
    uint64_t sink = 0;
    cost_t c0 = stamp();
    for (int i = 0; i < n; ++i) {
      tpj_strbuf_clear(&k);
      tpj_exec_key(&k, op, args, 2, attrs, 2, &out, 1, NULL);
      sink ^= tpj_hash_bytes(k.data, k.len, TPJ_HASH_SEED);
    }
    cost_t c1 = stamp();
    report("key build + hash only", c0, c1, n);
    printf("(key %zu bytes, %llx)\n", k.len, (unsigned long long)sink & 0xf);
    tpj_strbuf_free(&k);
  }
  tpj_rt_exe_release(exe);
  tpj_rt_buffer_release(a);
  tpj_rt_buffer_release(b);
  tpj_exec_destroy(ex);
  tpj_rt_close(rt);
  return 0;
}
