/* rt/executable: compiling StableHLO into loaded executables, serializing
 * and loading them (the on-disk cache), their reference counts, and the
 * launch of one on a device (execute, keeping or donating arguments). */
#include "rt/rt.h"
#include "rt/donate.h"
#include "rt/track.h"
#include "rt/reap.h"
#include "base/strbuf.h"
#include "rt/internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt_c_api.h"

/* ---- compile and execute --------------------------------------------- */

/* A serialized xla.CompileOptionsProto, written by hand so that no protobuf
 * library is linked: executable_build_options (field 3) { num_replicas (4) = 1,
 * num_partitions (5) = 1 }, compile_portable_executable (field 4) = true, so
 * one executable runs on any device we name at execute time. An empty string
 * aborts the CPU plugin. */
static const char kCompileOptions[] = {0x1a, 0x04, 0x20, 0x01, 0x28, 0x01, 0x20, 0x01};

/* Takes over a loaded executable (destroyed on failure) and learns its
 * output count where the plugin says. */
tpj_status_t tpj_rt_exe_wrap(const PJRT_Api* api, PJRT_LoadedExecutable* loaded,
                                    tpj_rt_exe_t** out_exe) {
  tpj_rt_exe_t* exe = (tpj_rt_exe_t*)calloc(1, sizeof(*exe));
  if (!exe) {
    TPJ_ARGS(PJRT_LoadedExecutable_Destroy_Args, d);
    d.executable = loaded;
    tpj_status_free(tpj_rt_status_from_pjrt(api, api->PJRT_LoadedExecutable_Destroy(&d), ""));
    return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  }
  exe->refcount = 1;
  exe->exe = loaded;
  exe->api = api;
  exe->num_outputs = (size_t)-1;
  if (TPJ_RT_HAS(api, PJRT_LoadedExecutable_GetExecutable) &&
      TPJ_RT_HAS(api, PJRT_Executable_NumOutputs)) {
    TPJ_ARGS(PJRT_LoadedExecutable_GetExecutable_Args, g);
    g.loaded_executable = loaded;
    PJRT_Error* e = api->PJRT_LoadedExecutable_GetExecutable(&g);
    if (!e) {
      TPJ_ARGS(PJRT_Executable_NumOutputs_Args, n);
      n.executable = g.executable;
      e = api->PJRT_Executable_NumOutputs(&n);
      if (!e) exe->num_outputs = n.num_outputs;
      if (TPJ_RT_HAS(api, PJRT_Executable_Destroy)) {
        TPJ_ARGS(PJRT_Executable_Destroy_Args, d);
        d.executable = g.executable;
        tpj_status_free(tpj_rt_status_from_pjrt(api, api->PJRT_Executable_Destroy(&d), ""));
      }
    }
    tpj_status_free(tpj_rt_status_from_pjrt(api, e, "executable outputs"));
  }
  *out_exe = exe;
  return NULL;
}

/* Compiles StableHLO text with a serialized xla.CompileOptionsProto. */
tpj_status_t tpj_rt_compile_with(tpj_rt_t* rt, const char* mlir, size_t mlir_len,
                                        const char* options, size_t options_len,
                                        tpj_rt_exe_t** out_exe) {
  *out_exe = NULL;
  const PJRT_Api* api = rt->api;
  TPJ_ARGS(PJRT_Program, prog);
  prog.code = (char*)mlir;
  prog.code_size = mlir_len;
  prog.format = "mlir";
  prog.format_size = 4;
  TPJ_ARGS(PJRT_Client_Compile_Args, a);
  a.client = rt->client;
  a.program = &prog;
  a.compile_options = options;
  a.compile_options_size = options_len;
  TPJ_PJRT(api, api->PJRT_Client_Compile(&a), "compiling");
  return tpj_rt_exe_wrap(api, a.executable, out_exe);
}

void tpj_rt_put_varint(tpj_strbuf_t* sb, uint64_t v) {
  do {
    unsigned char c = (unsigned char)(v & 0x7f);
    v >>= 7;
    if (v) c |= 0x80;
    tpj_strbuf_append(sb, (const char*)&c, 1);
  } while (v);
}

void tpj_rt_put_message(tpj_strbuf_t* sb, int field, const tpj_strbuf_t* m) {
  tpj_rt_put_varint(sb, ((uint64_t)field << 3) | 2);
  tpj_rt_put_varint(sb, m->len);
  tpj_strbuf_append(sb, m->data, m->len);
}

static int tpj_rt_platform_is_cpu(const tpj_rt_t* rt) {
  return rt->platform_name && strcmp(rt->platform_name, "cpu") == 0;
}

/* One env_option_overrides entry, a bool: { key (1): name, value (2):
 * OptionOverrideProto { bool_field (2): on } }. */
static void tpj_rt_put_bool_override(tpj_strbuf_t* opts, const char* name, int on) {
  tpj_strbuf_t entry, value, key;
  tpj_strbuf_init(&entry);
  tpj_strbuf_init(&value);
  tpj_strbuf_init(&key);
  tpj_strbuf_append(&key, name, strlen(name));
  tpj_rt_put_message(&entry, 1, &key);
  tpj_rt_put_varint(&value, 2 << 3);
  tpj_rt_put_varint(&value, on ? 1 : 0);
  tpj_rt_put_message(&entry, 2, &value);
  tpj_rt_put_message(opts, 7, &entry);
  tpj_strbuf_free(&entry);
  tpj_strbuf_free(&value);
  tpj_strbuf_free(&key);
}

/* XLA's CPU backend runs dots through XNNPACK, whose runtime keeps what it
 * packed from an argument while that argument's address stays the same. An
 * eager tensor's buffer is often a new value at an old address (a freed
 * buffer reused, an in-place write into a donated one): a matmul then read
 * the weights of an earlier call (measured with the xla-cpu-pjrt 0.0.1
 * plugin on an AVX2 host: a linear layer's input gradient from the weight
 * before the optimizer step; test_ops_linalg.py, test_eager_donation.py). Every
 * program this client compiles turns XNNPACK off (XLA's own dot emitter). */
void tpj_rt_put_overrides(const tpj_rt_t* rt, tpj_strbuf_t* opts) {
  if (tpj_rt_platform_is_cpu(rt)) tpj_rt_put_bool_override(opts, "xla_cpu_use_xnnpack", 0);
}

const char* tpj_rt_compile_options_tag(const tpj_rt_t* rt) {
  return tpj_rt_platform_is_cpu(rt) ? "xnnpack=off" : "";
}

tpj_status_t tpj_rt_compile(tpj_rt_t* rt, const char* mlir, size_t mlir_len,
                            tpj_rt_exe_t** out_exe) {
  tpj_strbuf_t opts;
  tpj_strbuf_init(&opts);
  tpj_strbuf_append(&opts, kCompileOptions, sizeof(kCompileOptions));
  tpj_rt_put_overrides(rt, &opts);
  tpj_status_t s = tpj_strbuf_status(&opts);
  if (!s) s = tpj_rt_compile_with(rt, mlir, mlir_len, opts.data, opts.len, out_exe);
  tpj_strbuf_free(&opts);
  return s;
}

tpj_status_t tpj_rt_exe_serialize(tpj_rt_t* rt, const tpj_rt_exe_t* exe, char** out_bytes,
                                  size_t* out_len) {
  *out_bytes = NULL;
  *out_len = 0;
  const PJRT_Api* api = rt->api;
  if (!TPJ_RT_HAS(api, PJRT_LoadedExecutable_GetExecutable) ||
      !TPJ_RT_HAS(api, PJRT_Executable_Serialize))
    return tpj_status_make(TPJ_UNIMPLEMENTED, "the plugin cannot serialize executables");
  TPJ_ARGS(PJRT_LoadedExecutable_GetExecutable_Args, g);
  g.loaded_executable = exe->exe;
  TPJ_PJRT(api, api->PJRT_LoadedExecutable_GetExecutable(&g), "serializing an executable");
  TPJ_ARGS(PJRT_Executable_Serialize_Args, a);
  a.executable = g.executable;
  tpj_status_t s =
      tpj_rt_status_from_pjrt(api, api->PJRT_Executable_Serialize(&a), "serializing an executable");
  if (!s) {
    *out_bytes = (char*)malloc(a.serialized_bytes_size ? a.serialized_bytes_size : 1);
    if (*out_bytes) {
      memcpy(*out_bytes, a.serialized_bytes, a.serialized_bytes_size);
      *out_len = a.serialized_bytes_size;
    } else {
      s = tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
    }
    if (a.serialized_executable_deleter) a.serialized_executable_deleter(a.serialized_executable);
  }
  if (TPJ_RT_HAS(api, PJRT_Executable_Destroy)) {
    TPJ_ARGS(PJRT_Executable_Destroy_Args, d);
    d.executable = g.executable;
    tpj_status_free(tpj_rt_status_from_pjrt(api, api->PJRT_Executable_Destroy(&d), ""));
  }
  return s;
}

tpj_status_t tpj_rt_exe_deserialize(tpj_rt_t* rt, const char* bytes, size_t len,
                                    tpj_rt_exe_t** out_exe) {
  *out_exe = NULL;
  const PJRT_Api* api = rt->api;
  if (!TPJ_RT_HAS(api, PJRT_Executable_DeserializeAndLoad))
    return tpj_status_make(TPJ_UNIMPLEMENTED, "the plugin cannot load serialized executables");
  TPJ_ARGS(PJRT_Executable_DeserializeAndLoad_Args, a);
  a.client = rt->client;
  a.serialized_executable = bytes;
  a.serialized_executable_size = len;
  TPJ_PJRT(api, api->PJRT_Executable_DeserializeAndLoad(&a), "loading a cached executable");
  return tpj_rt_exe_wrap(api, a.loaded_executable, out_exe);
}

void tpj_rt_exe_retain(tpj_rt_exe_t* exe) {
  if (exe) __atomic_add_fetch(&exe->refcount, 1, __ATOMIC_RELAXED);
}

void tpj_rt_exe_release(tpj_rt_exe_t* exe) {
  if (!exe) return;
  if (__atomic_sub_fetch(&exe->refcount, 1, __ATOMIC_ACQ_REL) != 0) return;
  TPJ_ARGS(PJRT_LoadedExecutable_Destroy_Args, d);
  d.executable = exe->exe;
  tpj_status_free(tpj_rt_status_from_pjrt(exe->api, exe->api->PJRT_LoadedExecutable_Destroy(&d),
                                          "destroying an executable"));
  free(exe);
}

/* ---- launch ------------------------------------------------------------ */

tpj_status_t tpj_rt_execute(tpj_rt_t* rt, tpj_rt_exe_t* exe, int device,
                            tpj_rt_buffer_t* const* args, size_t nargs,
                            const tpj_rt_shape_t* out_shapes, size_t nouts,
                            tpj_rt_buffer_t** outs, const char* op_name) {
  return tpj_rt_execute_donating(rt, exe, device, args, nargs, NULL, 0, out_shapes, nouts, outs,
                                 op_name);
}

/* The launch behind every execute. donated (NULL, or one flag per argument)
 * names the arguments whose buffers the caller hands over: after a
 * successful launch each gives up its PJRT buffer (its memory now holds an
 * output) and its bytes, before the outputs are counted, so the byte counts
 * never see the storage twice. */
static tpj_status_t tpj_rt_launch(tpj_rt_t* rt, tpj_rt_exe_t* exe, int device,
                                  tpj_rt_buffer_t* const* args, size_t nargs,
                                  const int64_t* keep, size_t nkeep, const unsigned char* donated,
                                  const tpj_rt_shape_t* out_shapes, size_t nouts,
                                  tpj_rt_buffer_t** outs, const char* op_name) {
  TPJ_RETURN_IF_ERROR(tpj_rt_check_device(rt, device));
  for (size_t i = 0; i < nargs; ++i)
    TPJ_RETURN_IF_ERROR(tpj_rt_check_real(args[i], op_name ? op_name : "execute"));
  if (exe->num_outputs != (size_t)-1 && exe->num_outputs != nouts)
    return tpj_status_make(TPJ_INTERNAL, "%s: executable has %zu outputs, caller expects %zu",
                           op_name, exe->num_outputs, nouts);
  const PJRT_Api* api = rt->api;
  PJRT_Buffer* arg_small[16];
  PJRT_Buffer* out_small[16];
  PJRT_Buffer** argv = nargs <= 16 ? arg_small : (PJRT_Buffer**)malloc(nargs * sizeof(void*));
  PJRT_Buffer** outv = nouts <= 16 ? out_small : (PJRT_Buffer**)malloc(nouts * sizeof(void*));
  if (!argv || !outv) {
    if (argv != arg_small) free(argv);
    if (outv != out_small) free(outv);
    return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  }
  for (size_t i = 0; i < nargs; ++i) argv[i] = (PJRT_Buffer*)args[i]->pjrt;
  for (size_t i = 0; i < nouts; ++i) outv[i] = NULL;
  PJRT_Buffer* const* arg_lists[1] = {argv};
  PJRT_Buffer** out_lists[1] = {outv};
  PJRT_Event* done[1] = {NULL};

  int64_t t_launch = __atomic_load_n(&rt->tracing, __ATOMIC_RELAXED) ? tpj_rt_now_ns() : 0;
  TPJ_ARGS(PJRT_ExecuteOptions, eo);
  eo.non_donatable_input_indices = keep;
  eo.num_non_donatable_input_indices = nkeep;
  TPJ_ARGS(PJRT_LoadedExecutable_Execute_Args, a);
  a.executable = exe->exe;
  a.options = &eo;
  a.argument_lists = arg_lists;
  a.num_devices = 1;
  a.num_args = nargs;
  a.output_lists = out_lists;
  a.device_complete_events = done;
  a.execute_device = rt->devices[device];
  tpj_status_t s = tpj_rt_status_from_pjrt(api, api->PJRT_LoadedExecutable_Execute(&a),
                                           op_name ? op_name : "execute");
  if (!s) {
    int events = TPJ_RT_HAS(api, PJRT_Event_IsReady) && TPJ_RT_HAS(api, PJRT_Event_OnReady);
    tpj_rt_reap_track_launch(api, events ? done[0] : NULL);
    for (size_t i = 0; donated && i < nargs; ++i) {
      tpj_rt_buffer_t* d = args[i];
      if (!donated[i] || !d->pjrt) continue;
      tpj_rt_count_bytes(d->device, -(long long)tpj_rt_buffer_nbytes(d));
      tpj_rt_reap_buffer(api, (PJRT_Buffer*)d->pjrt);
      d->pjrt = NULL;
    }
    for (size_t i = 0; i < nouts; ++i) {
      outs[i] = tpj_rt_buffer_wrap(api, outv[i], out_shapes[i].dtype, out_shapes[i].dims,
                                   out_shapes[i].ndim, device);
      if (!outs[i]) {
        tpj_rt_pjrt_buffer_destroy(api, outv[i]);
        if (!s) s = tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
      }
    }
    if (s) {
      for (size_t i = 0; i < nouts; ++i) {
        tpj_rt_buffer_release(outs[i]);
        outs[i] = NULL;
      }
    }
    if (rt->launch_blocking) {
      tpj_status_t w = tpj_rt_event_await(api, done[0], op_name);
      if (!w) {
        pthread_mutex_lock(&rt->mu);
        w = tpj_rt_injected_locked(rt, op_name);
        pthread_mutex_unlock(&rt->mu);
      }
      if (!s) s = w; else tpj_status_free(w);
    } else if (done[0]) {
      tpj_status_t w = tpj_rt_remember(rt, done[0], device, tpj_rt_thread_stream(device), op_name,
                                       t_launch);
      if (!s) s = w; else tpj_status_free(w);
    }
  }
  if (argv != arg_small) free(argv);
  if (outv != out_small) free(outv);
  return s;
}

tpj_status_t tpj_rt_execute_donating(tpj_rt_t* rt, tpj_rt_exe_t* exe, int device,
                                     tpj_rt_buffer_t* const* args, size_t nargs,
                                     const int64_t* keep, size_t nkeep,
                                     const tpj_rt_shape_t* out_shapes, size_t nouts,
                                     tpj_rt_buffer_t** outs, const char* op_name) {
  return tpj_rt_launch(rt, exe, device, args, nargs, keep, nkeep, NULL, out_shapes, nouts, outs,
                       op_name);
}

tpj_status_t tpj_rt_execute_donated(tpj_rt_t* rt, tpj_rt_exe_t* exe, int device,
                                    tpj_rt_buffer_t* const* args, size_t nargs,
                                    const unsigned char* donated,
                                    const tpj_rt_shape_t* out_shapes, size_t nouts,
                                    tpj_rt_buffer_t** outs, const char* op_name) {
  return tpj_rt_launch(rt, exe, device, args, nargs, NULL, 0, donated, out_shapes, nouts, outs,
                       op_name);
}
