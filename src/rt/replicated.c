/* rt/replicated: see replicated.h. */
#include "rt/replicated.h"

#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "rt/internal.h"
#include "rt/reap.h"
#include "rt/track.h"

tpj_status_t tpj_rt_compile_replicated(tpj_rt_t* rt, const char* mlir, size_t mlir_len,
                                       const int* devices, int n, tpj_rt_exe_t** out_exe) {
  *out_exe = NULL;
  if (n < 1) return tpj_status_make(TPJ_INVALID_ARGUMENT, "a replicated program needs a device");
  for (int i = 0; i < n; ++i) TPJ_RETURN_IF_ERROR(tpj_rt_check_device(rt, devices[i]));
  /* xla.CompileOptionsProto by hand, as kCompileOptions: build options (3) {
   * num_replicas (4) = n, num_partitions (5) = 1, device_assignment (9) {
   * replica_count (1) = n, computation_count (2) = 1, computation_devices (3)
   * { replica_device_ids (1): the devices' global ids } } }. Replica i runs
   * on devices[i]; not portable. */
  tpj_strbuf_t ids, comp, assign, build, opts;
  tpj_strbuf_init(&ids);
  tpj_strbuf_init(&comp);
  tpj_strbuf_init(&assign);
  tpj_strbuf_init(&build);
  tpj_strbuf_init(&opts);
  for (int i = 0; i < n; ++i) tpj_rt_put_varint(&ids, (uint64_t)rt->device_id[devices[i]]);
  tpj_rt_put_message(&comp, 1, &ids);
  tpj_rt_put_varint(&assign, 1 << 3);
  tpj_rt_put_varint(&assign, (uint64_t)n);
  tpj_rt_put_varint(&assign, 2 << 3);
  tpj_rt_put_varint(&assign, 1);
  tpj_rt_put_message(&assign, 3, &comp);
  tpj_rt_put_varint(&build, 4 << 3);
  tpj_rt_put_varint(&build, (uint64_t)n);
  tpj_rt_put_varint(&build, 5 << 3);
  tpj_rt_put_varint(&build, 1);
  tpj_rt_put_message(&build, 9, &assign);
  tpj_rt_put_message(&opts, 3, &build);
  tpj_rt_put_overrides(rt, &opts);
  tpj_status_t s = tpj_strbuf_status(&opts);
  if (!s) s = tpj_rt_compile_with(rt, mlir, mlir_len, opts.data, opts.len, out_exe);
  tpj_strbuf_free(&ids);
  tpj_strbuf_free(&comp);
  tpj_strbuf_free(&assign);
  tpj_strbuf_free(&build);
  tpj_strbuf_free(&opts);
  return s;
}

tpj_status_t tpj_rt_execute_replicated(tpj_rt_t* rt, tpj_rt_exe_t* exe, const int* devices,
                                       int n, tpj_rt_buffer_t* const* args, size_t nargs,
                                       const tpj_rt_shape_t* out_shapes, size_t nouts,
                                       tpj_rt_buffer_t** outs, const char* op_name) {
  const char* what = op_name ? op_name : "execute";
  for (int i = 0; i < n; ++i) TPJ_RETURN_IF_ERROR(tpj_rt_check_device(rt, devices[i]));
  for (size_t i = 0; i < (size_t)n * nargs; ++i) {
    TPJ_RETURN_IF_ERROR(tpj_rt_check_real(args[i], what));
    if (args[i]->device != devices[i / (nargs ? nargs : 1)])
      return tpj_status_make(TPJ_INVALID_ARGUMENT, "%s: replica %zu's argument is on device %d, "
                             "not %d", what, i / nargs, args[i]->device, devices[i / nargs]);
  }
  if (exe->num_outputs != (size_t)-1 && exe->num_outputs != nouts)
    return tpj_status_make(TPJ_INTERNAL, "%s: executable has %zu outputs, caller expects %zu",
                           what, exe->num_outputs, nouts);
  const PJRT_Api* api = rt->api;
  size_t nin = (size_t)n * nargs, nout = (size_t)n * nouts;
  PJRT_Buffer** argv = (PJRT_Buffer**)calloc(nin ? nin : 1, sizeof(void*));
  PJRT_Buffer** outv = (PJRT_Buffer**)calloc(nout ? nout : 1, sizeof(void*));
  PJRT_Buffer** arg_lists[TPJ_MAX_DEVICES];
  PJRT_Buffer** out_lists[TPJ_MAX_DEVICES];
  PJRT_Event* done[TPJ_MAX_DEVICES];
  if (!argv || !outv || n > TPJ_MAX_DEVICES) {
    free(argv);
    free(outv);
    return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  }
  for (size_t i = 0; i < nin; ++i) argv[i] = (PJRT_Buffer*)args[i]->pjrt;
  for (int d = 0; d < n; ++d) {
    arg_lists[d] = argv + (size_t)d * nargs;
    out_lists[d] = outv + (size_t)d * nouts;
    done[d] = NULL;
  }
  TPJ_ARGS(PJRT_ExecuteOptions, eo);
  TPJ_ARGS(PJRT_LoadedExecutable_Execute_Args, a);
  a.executable = exe->exe;
  a.options = &eo;
  a.argument_lists = (PJRT_Buffer* const* const*)arg_lists;
  a.num_devices = (size_t)n;
  a.num_args = nargs;
  a.output_lists = out_lists;
  a.device_complete_events = done;
  tpj_status_t s = tpj_rt_status_from_pjrt(api, api->PJRT_LoadedExecutable_Execute(&a), what);
  if (!s) {
    int events = TPJ_RT_HAS(api, PJRT_Event_IsReady) && TPJ_RT_HAS(api, PJRT_Event_OnReady);
    for (size_t i = 0; i < nout; ++i) {
      const tpj_rt_shape_t* sh = &out_shapes[i % nouts];
      outs[i] = tpj_rt_buffer_wrap(api, outv[i], sh->dtype, sh->dims, sh->ndim,
                                   devices[i / nouts]);
      if (!outs[i]) {
        tpj_rt_pjrt_buffer_destroy(api, outv[i]);
        if (!s) s = tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
      }
    }
    for (int d = 0; d < n; ++d) {
      if (!done[d]) continue;
      tpj_rt_reap_track_launch(api, events ? done[d] : NULL);
      tpj_status_t w = rt->launch_blocking
                           ? tpj_rt_event_await(api, done[d], what)
                           : tpj_rt_remember(rt, done[d], devices[d], tpj_rt_thread_stream(devices[d]), what, 0);
      if (!s) s = w;
      else tpj_status_free(w);
    }
    if (s) {
      for (size_t i = 0; i < nout; ++i) {
        tpj_rt_buffer_release(outs[i]);
        outs[i] = NULL;
      }
    }
  }
  free(argv);
  free(outv);
  return s;
}
