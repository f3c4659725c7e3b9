/* rt: plugin loading, client, devices, compile and execute over PJRT. */
#include "rt/rt.h"
#include "rt/open.h"
#include "rt/track.h"
#include "rt/upload.h"
#include "rt/donate.h"
#include "rt/reap.h"
#include "rt/internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/strbuf.h"
#include "pjrt_c_api.h"

/* The structs and helpers shared with replicated.c: rt/internal.h. */

static void tpj_rt_done_release(tpj_rt_done_t* d);

static atomic_llong g_live_buffers;
static atomic_llong g_h2d_bytes, g_d2h_bytes;
/* Bytes of device memory held by live buffers, per device, and the peak
 * since the last reset: memory_reserved() where the plugin has no
 * PJRT_Device_MemoryStats. Global because a buffer is released without its rt. */
static atomic_llong g_dev_bytes[TPJ_MAX_DEVICES], g_dev_peak[TPJ_MAX_DEVICES];
static atomic_llong g_ooms;

static void tpj_rt_count_bytes(int device, long long delta) {
  if (device < 0 || device >= TPJ_MAX_DEVICES) return;
  long long now = atomic_fetch_add(&g_dev_bytes[device], delta) + delta;
  long long peak = atomic_load(&g_dev_peak[device]);
  while (now > peak && !atomic_compare_exchange_weak(&g_dev_peak[device], &peak, now)) {
  }
}


static char* tpj_strndup(const char* s, size_t n) {
  char* p = (char*)malloc(n + 1);
  if (!p) return NULL;
  if (n) memcpy(p, s, n);
  p[n] = 0;
  return p;
}

/* The one function that turns a PJRT_Error into a status; destroys err. */
tpj_status_t tpj_rt_status_from_pjrt(const PJRT_Api* api, PJRT_Error* err,
                                            const char* what) {
  if (!err) return NULL;
  TPJ_ARGS(PJRT_Error_Message_Args, m);
  m.error = err;
  api->PJRT_Error_Message(&m);
  tpj_status_code_t code = TPJ_INTERNAL;
  if (TPJ_RT_HAS(api, PJRT_Error_GetCode)) {
    TPJ_ARGS(PJRT_Error_GetCode_Args, c);
    c.error = err;
    PJRT_Error* e2 = api->PJRT_Error_GetCode(&c);
    if (!e2) {
      switch (c.code) {
        case PJRT_Error_Code_INVALID_ARGUMENT: code = TPJ_INVALID_ARGUMENT; break;
        case PJRT_Error_Code_NOT_FOUND: code = TPJ_NOT_FOUND; break;
        case PJRT_Error_Code_RESOURCE_EXHAUSTED:
          code = TPJ_OUT_OF_MEMORY;
          atomic_fetch_add(&g_ooms, 1);
          break;
        case PJRT_Error_Code_UNIMPLEMENTED: code = TPJ_UNIMPLEMENTED; break;
        case PJRT_Error_Code_FAILED_PRECONDITION: code = TPJ_FAILED_PRECONDITION; break;
        case PJRT_Error_Code_OUT_OF_RANGE: code = TPJ_OUT_OF_RANGE; break;
        default: code = TPJ_INTERNAL; break;
      }
    } else {
      TPJ_ARGS(PJRT_Error_Destroy_Args, d2);
      d2.error = e2;
      api->PJRT_Error_Destroy(&d2);
    }
  }
  tpj_status_t s = tpj_status_make(code, "%s: %.*s", what, (int)m.message_size,
                                   m.message ? m.message : "");
  TPJ_ARGS(PJRT_Error_Destroy_Args, d);
  d.error = err;
  api->PJRT_Error_Destroy(&d);
  return s;
}


static void tpj_rt_event_destroy(const PJRT_Api* api, PJRT_Event* ev) {
  if (!ev) return;
  TPJ_ARGS(PJRT_Event_Destroy_Args, a);
  a.event = ev;
  PJRT_Error* e = api->PJRT_Event_Destroy(&a);
  tpj_status_free(tpj_rt_status_from_pjrt(api, e, "PJRT_Event_Destroy"));
}

/* Waits for ev, destroys it, returns its failure (if any). */
tpj_status_t tpj_rt_event_await(const PJRT_Api* api, PJRT_Event* ev,
                                       const char* what) {
  if (!ev) return NULL;
  TPJ_ARGS(PJRT_Event_Await_Args, a);
  a.event = ev;
  tpj_status_t s = tpj_rt_status_from_pjrt(api, api->PJRT_Event_Await(&a), what);
  tpj_rt_event_destroy(api, ev);
  return s;
}

/* ---- open / close ---------------------------------------------------- */

static int tpj_rt_has_required(const PJRT_Api* api, const char** out_missing) {
#define TPJ_CHECK_FN(f) \
  if (!TPJ_RT_HAS(api, f)) { *out_missing = #f; return 0; }
  TPJ_CHECK_FN(PJRT_Error_Destroy);
  TPJ_CHECK_FN(PJRT_Error_Message);
  TPJ_CHECK_FN(PJRT_Client_Create);
  TPJ_CHECK_FN(PJRT_Client_Destroy);
  TPJ_CHECK_FN(PJRT_Client_AddressableDevices);
  TPJ_CHECK_FN(PJRT_Client_BufferFromHostBuffer);
  TPJ_CHECK_FN(PJRT_Buffer_ToHostBuffer);
  TPJ_CHECK_FN(PJRT_Buffer_Destroy);
  TPJ_CHECK_FN(PJRT_Client_Compile);
  TPJ_CHECK_FN(PJRT_LoadedExecutable_Execute);
  TPJ_CHECK_FN(PJRT_LoadedExecutable_Destroy);
  TPJ_CHECK_FN(PJRT_Event_Await);
  TPJ_CHECK_FN(PJRT_Event_Destroy);
#undef TPJ_CHECK_FN
  return 1;
}

static void tpj_rt_read_attributes(tpj_rt_t* rt) {
  tpj_strbuf_t sb;
  tpj_strbuf_init(&sb);
  if (TPJ_RT_HAS(rt->api, PJRT_Plugin_Attributes)) {
    TPJ_ARGS(PJRT_Plugin_Attributes_Args, a);
    PJRT_Error* e = rt->api->PJRT_Plugin_Attributes(&a);
    if (e) {
      tpj_status_free(tpj_rt_status_from_pjrt(rt->api, e, "attributes"));
    } else {
      for (size_t i = 0; i < a.num_attributes; ++i) {
        const PJRT_NamedValue* v = &a.attributes[i];
        tpj_strbuf_printf(&sb, "%.*s=", (int)v->name_size, v->name);
        switch (v->type) {
          case PJRT_NamedValue_kString:
            tpj_strbuf_printf(&sb, "%.*s", (int)v->value_size, v->string_value);
            break;
          case PJRT_NamedValue_kInt64:
            tpj_strbuf_printf(&sb, "%lld", (long long)v->int64_value);
            break;
          case PJRT_NamedValue_kInt64List:
            for (size_t j = 0; j < v->value_size; ++j)
              tpj_strbuf_printf(&sb, "%s%lld", j ? "," : "",
                                (long long)v->int64_array_value[j]);
            break;
          case PJRT_NamedValue_kFloat:
            tpj_strbuf_printf(&sb, "%g", (double)v->float_value);
            break;
          case PJRT_NamedValue_kBool:
            tpj_strbuf_puts(&sb, v->bool_value ? "true" : "false");
            break;
          default:
            tpj_strbuf_puts(&sb, "?");
        }
        tpj_strbuf_puts(&sb, "\n");
      }
    }
  }
  rt->attributes = tpj_strndup(tpj_strbuf_cstr(&sb), sb.len);
  tpj_strbuf_free(&sb);
}

static tpj_status_t tpj_rt_read_devices(tpj_rt_t* rt) {
  const PJRT_Api* api = rt->api;
  TPJ_ARGS(PJRT_Client_AddressableDevices_Args, a);
  a.client = rt->client;
  TPJ_PJRT(api, api->PJRT_Client_AddressableDevices(&a), "listing devices");
  if (a.num_addressable_devices > TPJ_MAX_DEVICES)
    return tpj_status_make(TPJ_UNIMPLEMENTED, "plugin reports %zu devices; at most %d supported",
                           a.num_addressable_devices, TPJ_MAX_DEVICES);
  rt->ndevices = (int)a.num_addressable_devices;
  for (int i = 0; i < rt->ndevices; ++i) {
    rt->devices[i] = a.addressable_devices[i];
    const char* kind = "unknown";
    size_t kind_len = strlen(kind);
    const char* desc = "";
    size_t desc_len = 0;
    rt->device_id[i] = i;
    if (TPJ_RT_HAS(api, PJRT_Device_GetDescription)) {
      TPJ_ARGS(PJRT_Device_GetDescription_Args, g);
      g.device = rt->devices[i];
      PJRT_Error* e = api->PJRT_Device_GetDescription(&g);
      if (e) {
        tpj_status_free(tpj_rt_status_from_pjrt(api, e, "device description"));
      } else {
        if (TPJ_RT_HAS(api, PJRT_DeviceDescription_Kind)) {
          TPJ_ARGS(PJRT_DeviceDescription_Kind_Args, k);
          k.device_description = g.device_description;
          e = api->PJRT_DeviceDescription_Kind(&k);
          if (!e) {
            kind = k.device_kind;
            kind_len = k.device_kind_size;
          } else {
            tpj_status_free(tpj_rt_status_from_pjrt(api, e, "device kind"));
          }
        }
        if (TPJ_RT_HAS(api, PJRT_DeviceDescription_Id)) {
          TPJ_ARGS(PJRT_DeviceDescription_Id_Args, d);
          d.device_description = g.device_description;
          e = api->PJRT_DeviceDescription_Id(&d);
          if (!e) rt->device_id[i] = d.id;
          else tpj_status_free(tpj_rt_status_from_pjrt(api, e, "device id"));
        }
        if (TPJ_RT_HAS(api, PJRT_DeviceDescription_DebugString)) {
          TPJ_ARGS(PJRT_DeviceDescription_DebugString_Args, d);
          d.device_description = g.device_description;
          e = api->PJRT_DeviceDescription_DebugString(&d);
          if (!e) {
            desc = d.debug_string;
            desc_len = d.debug_string_size;
          } else {
            tpj_status_free(tpj_rt_status_from_pjrt(api, e, "device string"));
          }
        }
      }
    }
    rt->device_kind[i] = tpj_strndup(kind, kind_len);
    rt->device_desc[i] = tpj_strndup(desc, desc_len);
    if (!rt->device_kind[i] || !rt->device_desc[i])
      return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  }
  if (rt->ndevices == 0)
    return tpj_status_make(TPJ_NOT_FOUND, "the PJRT plugin reports no addressable devices");
  return NULL;
}

static tpj_status_t tpj_rt_read_platform(tpj_rt_t* rt) {
  const PJRT_Api* api = rt->api;
  const char* name = "unknown";
  size_t name_len = strlen(name);
  if (TPJ_RT_HAS(api, PJRT_Client_PlatformName)) {
    TPJ_ARGS(PJRT_Client_PlatformName_Args, a);
    a.client = rt->client;
    TPJ_PJRT(api, api->PJRT_Client_PlatformName(&a), "platform name");
    name = a.platform_name;
    name_len = a.platform_name_size;
  }
  rt->platform_name = tpj_strndup(name, name_len);
  const char* ver = "";
  size_t ver_len = 0;
  if (TPJ_RT_HAS(api, PJRT_Client_PlatformVersion)) {
    TPJ_ARGS(PJRT_Client_PlatformVersion_Args, a);
    a.client = rt->client;
    TPJ_PJRT(api, api->PJRT_Client_PlatformVersion(&a), "platform version");
    ver = a.platform_version;
    ver_len = a.platform_version_size;
  }
  rt->platform_version = tpj_strndup(ver, ver_len);
  if (!rt->platform_name || !rt->platform_version)
    return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  return NULL;
}

tpj_status_t tpj_rt_open_with_options(const char* plugin_path, const tpj_rt_option_t* opts,
                                      size_t nopts, tpj_rt_t** out_rt) {
  *out_rt = NULL;
  if (!plugin_path || !*plugin_path)
    return tpj_status_make(TPJ_INVALID_ARGUMENT, "no PJRT plugin path given");
  if (nopts > TPJ_RT_MAX_OPTIONS)
    return tpj_status_make(TPJ_INVALID_ARGUMENT, "%zu client options given; at most %d",
                           nopts, TPJ_RT_MAX_OPTIONS);
  void* lib = dlopen(plugin_path, RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return tpj_status_make(TPJ_NOT_FOUND, "cannot load PJRT plugin %s: %s", plugin_path,
                           dlerror());
  typedef const PJRT_Api* (*get_api_fn)(void);
  get_api_fn get_api = (get_api_fn)dlsym(lib, "GetPjrtApi");
  if (!get_api) {
    dlclose(lib);
    return tpj_status_make(TPJ_NOT_FOUND, "%s is not a PJRT plugin: it has no GetPjrtApi symbol",
                           plugin_path);
  }
  const PJRT_Api* api = get_api();
  if (!api)
    return tpj_status_make(TPJ_INTERNAL, "GetPjrtApi() in %s returned NULL", plugin_path);
  int major = api->pjrt_api_version.major_version;
  int minor = api->pjrt_api_version.minor_version;
  if (major != PJRT_API_MAJOR)
    return tpj_status_make(TPJ_FAILED_PRECONDITION,
                           "PJRT plugin %s has PJRT C API version %d.%d, but torch_pjrt was "
                           "built with %d.%d; the major versions must match (rebuild "
                           "torch_pjrt against this plugin, or install a matching plugin)",
                           plugin_path, major, minor, PJRT_API_MAJOR, PJRT_API_MINOR);
  const char* missing = NULL;
  if (!tpj_rt_has_required(api, &missing))
    return tpj_status_make(TPJ_FAILED_PRECONDITION,
                           "PJRT plugin %s (PJRT C API %d.%d; torch_pjrt built with %d.%d) "
                           "lacks %s",
                           plugin_path, major, minor, PJRT_API_MAJOR, PJRT_API_MINOR, missing);
  if (TPJ_RT_HAS(api, PJRT_Plugin_Initialize)) {
    TPJ_ARGS(PJRT_Plugin_Initialize_Args, init);
    TPJ_PJRT(api, api->PJRT_Plugin_Initialize(&init), "initialising the PJRT plugin");
  }

  tpj_rt_t* rt = (tpj_rt_t*)calloc(1, sizeof(*rt));
  if (!rt) return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  rt->api = api;
  rt->prune_at = 64;
  pthread_mutex_init(&rt->mu, NULL);
  rt->plugin_path = tpj_strndup(plugin_path, strlen(plugin_path));

  PJRT_NamedValue options[TPJ_RT_MAX_OPTIONS];
  for (size_t i = 0; i < nopts; ++i) {
    PJRT_NamedValue* v = &options[i];
    memset(v, 0, sizeof(*v));
    v->struct_size = PJRT_NamedValue_STRUCT_SIZE;
    v->name = opts[i].name;
    v->name_size = strlen(opts[i].name);
    v->value_size = 1;
    switch (opts[i].type) {
      case TPJ_RT_OPTION_INT64:
        v->type = PJRT_NamedValue_kInt64;
        v->int64_value = opts[i].int_value;
        break;
      case TPJ_RT_OPTION_FLOAT:
        v->type = PJRT_NamedValue_kFloat;
        v->float_value = (float)opts[i].float_value;
        break;
      case TPJ_RT_OPTION_BOOL:
        v->type = PJRT_NamedValue_kBool;
        v->bool_value = opts[i].int_value != 0;
        break;
      case TPJ_RT_OPTION_STRING:
        v->type = PJRT_NamedValue_kString;
        v->string_value = opts[i].string_value ? opts[i].string_value : "";
        v->value_size = strlen(v->string_value);
        break;
    }
  }
  TPJ_ARGS(PJRT_Client_Create_Args, c);
  c.create_options = nopts ? options : NULL;
  c.num_options = nopts;
  tpj_status_t s = tpj_rt_status_from_pjrt(api, api->PJRT_Client_Create(&c),
                                           "creating the PJRT client");
  if (!s) {
    rt->client = c.client;
    s = tpj_rt_read_platform(rt);
  }
  if (!s) s = tpj_rt_read_devices(rt);
  if (!s) tpj_rt_read_attributes(rt);
  if (s) {
    tpj_rt_close(rt);
    return s;
  }
  *out_rt = rt;
  return NULL;
}

tpj_status_t tpj_rt_open(const char* plugin_path, const tpj_rt_options_t* opts,
                         tpj_rt_t** out_rt) {
  tpj_rt_option_t o = {"cpu_device_count", TPJ_RT_OPTION_INT64, 0, 0.0, NULL};
  if (opts && opts->cpu_device_count > 0) {
    o.int_value = opts->cpu_device_count;
    return tpj_rt_open_with_options(plugin_path, &o, 1, out_rt);
  }
  return tpj_rt_open_with_options(plugin_path, NULL, 0, out_rt);
}

void tpj_rt_close(tpj_rt_t* rt) {
  if (!rt) return;
  tpj_status_free(tpj_rt_synchronize(rt, -1));
  if (rt->client) {
    TPJ_ARGS(PJRT_Client_Destroy_Args, d);
    d.client = rt->client;
    tpj_status_free(tpj_rt_status_from_pjrt(rt->api, rt->api->PJRT_Client_Destroy(&d),
                                            "destroying the client"));
  }
  for (int i = 0; i < rt->ndevices; ++i) {
    free(rt->device_kind[i]);
    free(rt->device_desc[i]);
  }
  tpj_status_free(rt->deferred);
  for (size_t i = 0; i < rt->nchecks; ++i) {
    tpj_rt_buffer_release(rt->checks[i].flag);
    free(rt->checks[i].message);
  }
  free(rt->checks);
  free(rt->pending);
  for (size_t i = 0; i < rt->ntrace; ++i) tpj_rt_done_release(rt->trace[i].done);
  free(rt->trace);
  free(rt->plugin_path);
  free(rt->platform_name);
  free(rt->platform_version);
  free(rt->attributes);
  pthread_mutex_destroy(&rt->mu);
  free(rt);
}

int tpj_rt_device_count(const tpj_rt_t* rt) { return rt ? rt->ndevices : 0; }
const char* tpj_rt_plugin_path(const tpj_rt_t* rt) { return rt->plugin_path; }
const char* tpj_rt_platform_name(const tpj_rt_t* rt) { return rt->platform_name; }
const char* tpj_rt_platform_version(const tpj_rt_t* rt) { return rt->platform_version; }
const char* tpj_rt_plugin_attributes(const tpj_rt_t* rt) {
  return rt->attributes ? rt->attributes : "";
}
const char* tpj_rt_device_kind(const tpj_rt_t* rt, int device) {
  return (device >= 0 && device < rt->ndevices) ? rt->device_kind[device] : "";
}
const char* tpj_rt_device_description(const tpj_rt_t* rt, int device) {
  return (device >= 0 && device < rt->ndevices) ? rt->device_desc[device] : "";
}
void tpj_rt_api_version(const tpj_rt_t* rt, int* out_major, int* out_minor) {
  *out_major = rt->api->pjrt_api_version.major_version;
  *out_minor = rt->api->pjrt_api_version.minor_version;
}
void tpj_rt_header_version(int* out_major, int* out_minor) {
  *out_major = PJRT_API_MAJOR;
  *out_minor = PJRT_API_MINOR;
}
void tpj_rt_set_launch_blocking(tpj_rt_t* rt, int on) { rt->launch_blocking = on; }

tpj_status_t tpj_rt_check_device(const tpj_rt_t* rt, int device) {
  if (device < 0 || device >= rt->ndevices)
    return tpj_status_make(TPJ_OUT_OF_RANGE,
                           "invalid device ordinal %d (there are %d tpu devices)", device,
                           rt->ndevices);
  return NULL;
}

tpj_status_t tpj_rt_device_memory_stats(tpj_rt_t* rt, int device, int64_t* out_in_use,
                                        int64_t* out_peak, int64_t* out_limit) {
  TPJ_RETURN_IF_ERROR(tpj_rt_check_device(rt, device));
  if (!TPJ_RT_HAS(rt->api, PJRT_Device_MemoryStats))
    return tpj_status_make(TPJ_UNIMPLEMENTED, "plugin has no PJRT_Device_MemoryStats");
  TPJ_ARGS(PJRT_Device_MemoryStats_Args, a);
  a.device = rt->devices[device];
  TPJ_PJRT(rt->api, rt->api->PJRT_Device_MemoryStats(&a), "device memory stats");
  if (out_in_use) *out_in_use = a.bytes_in_use;
  if (out_peak) *out_peak = a.peak_bytes_in_use_is_set ? a.peak_bytes_in_use : -1;
  if (out_limit) *out_limit = a.bytes_limit_is_set ? a.bytes_limit : -1;
  return NULL;
}

/* ---- buffers --------------------------------------------------------- */

static PJRT_Buffer_Type tpj_rt_pjrt_type(tpj_dtype_t dt) {
  switch (dt) {
    case TPJ_BOOL: return PJRT_Buffer_Type_PRED;
    case TPJ_U8: return PJRT_Buffer_Type_U8;
    case TPJ_I8: return PJRT_Buffer_Type_S8;
    case TPJ_I16: return PJRT_Buffer_Type_S16;
    case TPJ_I32: return PJRT_Buffer_Type_S32;
    case TPJ_I64: return PJRT_Buffer_Type_S64;
    case TPJ_F16: return PJRT_Buffer_Type_F16;
    case TPJ_BF16: return PJRT_Buffer_Type_BF16;
    case TPJ_F32: return PJRT_Buffer_Type_F32;
    case TPJ_F64: return PJRT_Buffer_Type_F64;
    case TPJ_C64: return PJRT_Buffer_Type_C64;
    case TPJ_C128: return PJRT_Buffer_Type_C128;
    case TPJ_U16: return PJRT_Buffer_Type_U16;
    case TPJ_U32: return PJRT_Buffer_Type_U32;
    case TPJ_U64: return PJRT_Buffer_Type_U64;
    default: return PJRT_Buffer_Type_INVALID;
  }
}

tpj_rt_buffer_t* tpj_rt_buffer_wrap(const PJRT_Api* api, PJRT_Buffer* b, tpj_dtype_t dtype,
                                           const int64_t* dims, int ndim, int device) {
  tpj_rt_buffer_t* buf = (tpj_rt_buffer_t*)calloc(1, sizeof(*buf));
  if (!buf) return NULL;
  buf->refcount = 1;
  buf->pjrt = b;
  buf->dtype = dtype;
  buf->ndim = ndim;
  for (int i = 0; i < ndim; ++i) buf->dims[i] = dims[i];
  buf->device = device;
  buf->api = api;
  atomic_fetch_add(&g_live_buffers, 1);
  if (b) tpj_rt_count_bytes(device, (long long)tpj_rt_buffer_nbytes(buf));
  return buf;
}

tpj_rt_buffer_t* tpj_rt_buffer_placeholder(tpj_dtype_t dtype, const int64_t* dims, int ndim,
                                           int device, int64_t trace_id) {
  tpj_rt_buffer_t* buf = tpj_rt_buffer_wrap(NULL, NULL, dtype, dims, ndim, device);
  if (buf) buf->trace_id = trace_id;
  return buf;
}

/* The one message for a host-side use of a traced value. */
tpj_status_t tpj_rt_check_real(const tpj_rt_buffer_t* buf, const char* what) {
  if (buf->pjrt) return NULL;
  /* Only a reader racing the write that consumed it can see a donated
   * buffer (see tpj_rt_execute_donated): an error, not a crash. */
  if (!buf->trace_id)
    return tpj_status_make(TPJ_FAILED_PRECONDITION,
                           "%s read a buffer that an in-place write on another thread took over",
                           what);
  return tpj_status_make(TPJ_FAILED_PRECONDITION,
                         "%s needs the value of a tensor that torch.compile is tracing "
                         "(a data-dependent op inside a compiled graph)", what);
}

void tpj_rt_pjrt_buffer_destroy(const PJRT_Api* api, PJRT_Buffer* b) {
  if (!b) return;
  TPJ_ARGS(PJRT_Buffer_Destroy_Args, d);
  d.buffer = b;
  tpj_status_free(tpj_rt_status_from_pjrt(api, api->PJRT_Buffer_Destroy(&d),
                                          "PJRT_Buffer_Destroy"));
}

/* What an asynchronous upload calls when the plugin is done with the host
 * memory (PJRT_Event_OnReady). */
typedef struct {
  const PJRT_Api* api;
  void (*done)(void*);
  void* ctx;
} tpj_rt_upload_done_t;

static void tpj_rt_upload_ready(PJRT_Error* error, void* user_arg) {
  tpj_rt_upload_done_t* d = (tpj_rt_upload_done_t*)user_arg;
  /* The callback owns the error. A failed transfer also fails the buffer,
   * which reports it where the buffer is used; the host memory is released
   * either way. */
  if (error) tpj_status_free(tpj_rt_status_from_pjrt(d->api, error, "copying to the device"));
  d->done(d->ctx);
  free(d);
}

/* Uploads host data. With done == NULL the call waits until the plugin has
 * read the data (the caller may reuse it at once); otherwise it returns at
 * once and done(ctx) runs when the host memory may be reused (from a plugin
 * thread, or before returning). On failure done is not called. */
static tpj_status_t tpj_rt_upload(tpj_rt_t* rt, int device, tpj_dtype_t dtype,
                                  const int64_t* dims, int ndim, const void* data,
                                  void (*done)(void*), void* ctx, int zero_copy,
                                  tpj_rt_buffer_t** out_buf) {
  *out_buf = NULL;
  TPJ_RETURN_IF_ERROR(tpj_rt_check_device(rt, device));
  if (ndim < 0 || ndim > TPJ_MAX_DIMS)
    return tpj_status_make(TPJ_UNIMPLEMENTED, "tensors of rank %d are not supported (max %d)",
                           ndim, TPJ_MAX_DIMS);
  PJRT_Buffer_Type t = tpj_rt_pjrt_type(dtype);
  if (t == PJRT_Buffer_Type_INVALID)
    return tpj_status_make(TPJ_INVALID_ARGUMENT, "dtype %d has no PJRT buffer type", (int)dtype);
  static const char kDummy[16];
  const PJRT_Api* api = rt->api;
  int async = done && data && TPJ_RT_HAS(api, PJRT_Event_OnReady);
  TPJ_ARGS(PJRT_Client_BufferFromHostBuffer_Args, a);
  a.client = rt->client;
  a.data = data ? data : kDummy;
  a.type = t;
  a.dims = dims;
  a.num_dims = (size_t)ndim;
  /* Zero copy: the buffer may alias data for its whole life (the CPU plugin
   * does when data is aligned as it wants); done_with_host_buffer is then
   * ready when the buffer is freed, or at once where the plugin copied. */
  a.host_buffer_semantics =
      async && zero_copy ? PJRT_HostBufferSemantics_kImmutableZeroCopy
      : async            ? PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes
                         : PJRT_HostBufferSemantics_kImmutableOnlyDuringCall;
  a.device = rt->devices[device];
  TPJ_PJRT(api, api->PJRT_Client_BufferFromHostBuffer(&a), "copying to the device");
  tpj_status_t s = NULL;
  tpj_rt_upload_done_t* d = async ? (tpj_rt_upload_done_t*)malloc(sizeof(*d)) : NULL;
  if (d && a.done_with_host_buffer) {
    d->api = api;
    d->done = done;
    d->ctx = ctx;
    TPJ_ARGS(PJRT_Event_OnReady_Args, r);
    r.event = a.done_with_host_buffer;
    r.callback = tpj_rt_upload_ready;
    r.user_arg = d;
    s = tpj_rt_status_from_pjrt(api, api->PJRT_Event_OnReady(&r), "copying to the device");
    /* The callback holds the transfer's future, not the event. */
    tpj_rt_event_destroy(api, a.done_with_host_buffer);
    if (s) free(d);
  } else {
    free(d);
    s = tpj_rt_event_await(api, a.done_with_host_buffer, "copying to the device");
    if (!s && done) done(ctx);
  }
  if (s) {
    tpj_rt_pjrt_buffer_destroy(api, a.buffer);
    return s;
  }
  *out_buf = tpj_rt_buffer_wrap(api, a.buffer, dtype, dims, ndim, device);
  if (!*out_buf) {
    tpj_rt_pjrt_buffer_destroy(api, a.buffer);
    return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  }
  atomic_fetch_add(&g_h2d_bytes, (long long)tpj_rt_buffer_nbytes(*out_buf));
  return NULL;
}

tpj_status_t tpj_rt_buffer_from_host(tpj_rt_t* rt, int device, tpj_dtype_t dtype,
                                     const int64_t* dims, int ndim, const void* data,
                                     tpj_rt_buffer_t** out_buf) {
  return tpj_rt_upload(rt, device, dtype, dims, ndim, data, NULL, NULL, 0, out_buf);
}

tpj_status_t tpj_rt_buffer_from_host_async(tpj_rt_t* rt, int device, tpj_dtype_t dtype,
                                           const int64_t* dims, int ndim, const void* data,
                                           void (*done)(void*), void* ctx,
                                           tpj_rt_buffer_t** out_buf) {
  return tpj_rt_upload(rt, device, dtype, dims, ndim, data, done, ctx, 0, out_buf);
}

tpj_status_t tpj_rt_buffer_alias_host(tpj_rt_t* rt, int device, tpj_dtype_t dtype,
                                      const int64_t* dims, int ndim, const void* data,
                                      void (*done)(void*), void* ctx, tpj_rt_buffer_t** out_buf) {
  return tpj_rt_upload(rt, device, dtype, dims, ndim, data, done, ctx, 1, out_buf);
}

int64_t tpj_rt_buffer_numel(const tpj_rt_buffer_t* buf) {
  int64_t n = 1;
  for (int i = 0; i < buf->ndim; ++i) n *= buf->dims[i];
  return n;
}

size_t tpj_rt_buffer_nbytes(const tpj_rt_buffer_t* buf) {
  return (size_t)tpj_rt_buffer_numel(buf) * tpj_dtype_size(buf->dtype);
}

static tpj_status_t tpj_rt_await_matching(tpj_rt_t* rt, int device, int64_t stream);

tpj_status_t tpj_rt_buffer_to_host(tpj_rt_t* rt, tpj_rt_buffer_t* buf, void* dst,
                                   size_t nbytes) {
  size_t want = tpj_rt_buffer_nbytes(buf);
  if (nbytes != want)
    return tpj_status_make(TPJ_INVALID_ARGUMENT,
                           "host copy of %zu bytes from a device buffer of %zu bytes", nbytes,
                           want);
  if (want == 0) return NULL;
  TPJ_RETURN_IF_ERROR(tpj_rt_check_real(buf, "copying to the host"));
  /* A copy to the host waits for the work launched before it on the device,
   * as CUDA's does on its stream; a failure there surfaces here, naming its op
   * (the buffer's own error would only say "copying to the host"). */
  TPJ_RETURN_IF_ERROR(tpj_rt_await_matching(rt, buf->device, -1));
  const PJRT_Api* api = rt->api;
  TPJ_ARGS(PJRT_Buffer_ToHostBuffer_Args, a);
  a.src = (PJRT_Buffer*)buf->pjrt;
  a.dst = dst;
  a.dst_size = nbytes;
  TPJ_PJRT(api, api->PJRT_Buffer_ToHostBuffer(&a), "copying to the host");
  atomic_fetch_add(&g_d2h_bytes, (long long)nbytes);
  return tpj_rt_event_await(api, a.event, "copying to the host");
}

tpj_status_t tpj_rt_buffer_host_memory(tpj_rt_t* rt, tpj_rt_buffer_t* buf, void** out_ptr) {
  *out_ptr = NULL;
  const PJRT_Api* api = rt->api;
  /* Only the CPU plugin's device memory is the process's own memory; other
   * plugins' addresses are device addresses, not for the host to touch. */
  if (strcmp(rt->platform_name, "cpu") != 0 || !TPJ_RT_HAS(api, PJRT_Buffer_UnsafePointer) ||
      !TPJ_RT_HAS(api, PJRT_Buffer_ReadyEvent))
    return tpj_status_make(TPJ_UNIMPLEMENTED, "this plugin's device memory is not host memory");
  TPJ_RETURN_IF_ERROR(tpj_rt_check_real(buf, "reading a buffer's host memory"));
  TPJ_RETURN_IF_ERROR(tpj_rt_await_matching(rt, buf->device, -1));
  TPJ_ARGS(PJRT_Buffer_ReadyEvent_Args, e);
  e.buffer = (PJRT_Buffer*)buf->pjrt;
  TPJ_PJRT(api, api->PJRT_Buffer_ReadyEvent(&e), "reading a buffer's host memory");
  TPJ_RETURN_IF_ERROR(tpj_rt_event_await(api, e.event, "reading a buffer's host memory"));
  TPJ_ARGS(PJRT_Buffer_UnsafePointer_Args, a);
  a.buffer = (PJRT_Buffer*)buf->pjrt;
  TPJ_PJRT(api, api->PJRT_Buffer_UnsafePointer(&a), "reading a buffer's host memory");
  if (!a.buffer_pointer && tpj_rt_buffer_nbytes(buf))
    return tpj_status_make(TPJ_UNIMPLEMENTED, "the plugin gave no address for a buffer");
  *out_ptr = (void*)a.buffer_pointer;
  return NULL;
}

tpj_status_t tpj_rt_buffer_copy_to_device(tpj_rt_t* rt, tpj_rt_buffer_t* buf, int device,
                                          tpj_rt_buffer_t** out_buf) {
  *out_buf = NULL;
  TPJ_RETURN_IF_ERROR(tpj_rt_check_device(rt, device));
  TPJ_RETURN_IF_ERROR(tpj_rt_check_real(buf, "copying between devices"));
  const PJRT_Api* api = rt->api;
  if (!TPJ_RT_HAS(api, PJRT_Buffer_CopyToDevice)) {
    /* Through the host: correct on every plugin. */
    size_t n = tpj_rt_buffer_nbytes(buf);
    void* host = malloc(n ? n : 1);
    if (!host) return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory (%zu bytes)", n);
    tpj_status_t s = tpj_rt_buffer_to_host(rt, buf, host, n);
    if (!s) s = tpj_rt_buffer_from_host(rt, device, buf->dtype, buf->dims, buf->ndim, host, out_buf);
    free(host);
    return s;
  }
  TPJ_ARGS(PJRT_Buffer_CopyToDevice_Args, a);
  a.buffer = (PJRT_Buffer*)buf->pjrt;
  a.dst_device = rt->devices[device];
  TPJ_PJRT(api, api->PJRT_Buffer_CopyToDevice(&a), "copying between devices");
  *out_buf = tpj_rt_buffer_wrap(api, a.dst_buffer, buf->dtype, buf->dims, buf->ndim, device);
  if (!*out_buf) {
    tpj_rt_pjrt_buffer_destroy(api, a.dst_buffer);
    return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  }
  return NULL;
}

void tpj_rt_buffer_retain(tpj_rt_buffer_t* buf) {
  if (buf) __atomic_add_fetch(&buf->refcount, 1, __ATOMIC_RELAXED);
}

/* Drops one reference; the last one destroys the PJRT buffer here or, with
 * later, on the reaper (rt/reap.h). */
static void tpj_rt_buffer_unref(tpj_rt_buffer_t* buf, int later) {
  if (!buf) return;
  if (__atomic_sub_fetch(&buf->refcount, 1, __ATOMIC_ACQ_REL) != 0) return;
  if (later && buf->pjrt) tpj_rt_reap_buffer((const PJRT_Api*)buf->api, (PJRT_Buffer*)buf->pjrt);
  else tpj_rt_pjrt_buffer_destroy((const PJRT_Api*)buf->api, (PJRT_Buffer*)buf->pjrt);
  atomic_fetch_sub(&g_live_buffers, 1);
  if (buf->pjrt) tpj_rt_count_bytes(buf->device, -(long long)tpj_rt_buffer_nbytes(buf));
  free(buf);
}

void tpj_rt_buffer_release(tpj_rt_buffer_t* buf) { tpj_rt_buffer_unref(buf, 0); }
void tpj_rt_buffer_release_later(tpj_rt_buffer_t* buf) { tpj_rt_buffer_unref(buf, 1); }

int64_t tpj_rt_live_buffers(void) { return atomic_load(&g_live_buffers); }

void tpj_rt_buffer_bytes(int device, int64_t* out_current, int64_t* out_peak) {
  int ok = device >= 0 && device < TPJ_MAX_DEVICES;
  *out_current = ok ? atomic_load(&g_dev_bytes[device]) : 0;
  *out_peak = ok ? atomic_load(&g_dev_peak[device]) : 0;
}

void tpj_rt_reset_peak_buffer_bytes(int device) {
  if (device < 0 || device >= TPJ_MAX_DEVICES) return;
  atomic_store(&g_dev_peak[device], atomic_load(&g_dev_bytes[device]));
}

int64_t tpj_rt_oom_count(void) { return atomic_load(&g_ooms); }

void tpj_rt_transfer_bytes(int64_t* out_h2d, int64_t* out_d2h) {
  *out_h2d = atomic_load(&g_h2d_bytes);
  *out_d2h = atomic_load(&g_d2h_bytes);
}

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

tpj_status_t tpj_rt_compile(tpj_rt_t* rt, const char* mlir, size_t mlir_len,
                            tpj_rt_exe_t** out_exe) {
  return tpj_rt_compile_with(rt, mlir, mlir_len, kCompileOptions, sizeof(kCompileOptions),
                             out_exe);
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

/* ---- completions, streams and marks ----------------------------------
 * Every launch leaves a pending entry holding its PJRT completion event.
 * Streams are tags on those entries: PJRT runs each device's executions as
 * their inputs become ready, and since buffers are immutable (every write
 * makes a new buffer) the only ordering that matters, data dependency, is
 * already enforced by PJRT. A stream is thus a way to name a subset of the
 * device's work to wait for; a mark (torch.Event) is "the work of a stream
 * launched so far". Done times come from PJRT_Event_OnReady callbacks once a
 * mark has been used (before that, launches pay nothing for them). */

/* This thread's current stream per device (0: the default stream). */
static _Thread_local int64_t t_stream[TPJ_MAX_DEVICES];

static int64_t tpj_rt_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  int64_t t = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
  return t > 0 ? t : 1;
}

static void tpj_rt_done_release(tpj_rt_done_t* d) {
  if (d && __atomic_sub_fetch(&d->refcount, 1, __ATOMIC_ACQ_REL) == 0) free(d);
}

/* Sets the done time unless one is already known (the first observer wins:
 * the OnReady callback, or a host wait that saw it first). */
static void tpj_rt_done_set(tpj_rt_done_t* d) {
  if (!d) return;
  int64_t zero = 0;
  __atomic_compare_exchange_n(&d->t_ns, &zero, tpj_rt_now_ns(), 0, __ATOMIC_ACQ_REL,
                              __ATOMIC_ACQUIRE);
}

static int64_t tpj_rt_done_time(const tpj_rt_done_t* d) {
  return __atomic_load_n(&d->t_ns, __ATOMIC_ACQUIRE);
}

static void tpj_rt_on_ready(PJRT_Error* error, void* user_arg) {
  tpj_rt_done_t* d = (tpj_rt_done_t*)user_arg;
  if (error) {
    /* The failure itself is reported by whoever awaits the event. */
    TPJ_ARGS(PJRT_Error_Destroy_Args, a);
    a.error = error;
    d->api->PJRT_Error_Destroy(&a);
  }
  tpj_rt_done_set(d);
  tpj_rt_done_release(d);
}

/* A done record for entry p (created on demand), with a callback that times
 * the completion where the plugin can call back. Called with rt->mu held. */
static tpj_rt_done_t* tpj_rt_done_of_locked(tpj_rt_t* rt, tpj_rt_pending_t* p) {
  if (p->done) return p->done;
  tpj_rt_done_t* d = (tpj_rt_done_t*)calloc(1, sizeof(*d));
  if (!d) return NULL;
  d->refcount = 1;
  d->api = rt->api;
  if (TPJ_RT_HAS(rt->api, PJRT_Event_OnReady)) {
    d->refcount = 2;
    TPJ_ARGS(PJRT_Event_OnReady_Args, a);
    a.event = p->event;
    a.callback = tpj_rt_on_ready;
    a.user_arg = d;
    PJRT_Error* e = rt->api->PJRT_Event_OnReady(&a);
    if (e) {
      d->refcount = 1;
      tpj_status_free(tpj_rt_status_from_pjrt(rt->api, e, "PJRT_Event_OnReady"));
    }
  }
  p->done = d;
  return d;
}

/* Awaits and drops entry p; its failure becomes *first unless one is set. */
/* The injected failure of tpj_rt_inject_async_error, once, when op matches.
 * Called with rt->mu held. */
static tpj_status_t tpj_rt_injected_locked(tpj_rt_t* rt, const char* op) {
  if (!rt->inject_op[0] || strcmp(rt->inject_op, op ? op : "op") != 0) return NULL;
  rt->inject_op[0] = 0;
  return tpj_status_make(TPJ_INTERNAL, "%s: asynchronous execution failed (injected by "
                         "tpj_rt_inject_async_error)", op);
}

void tpj_rt_inject_async_error(tpj_rt_t* rt, const char* op) {
  pthread_mutex_lock(&rt->mu);
  snprintf(rt->inject_op, sizeof(rt->inject_op), "%s", op ? op : "");
  pthread_mutex_unlock(&rt->mu);
}

static void tpj_rt_retire(tpj_rt_t* rt, tpj_rt_pending_t* p, tpj_status_t* first) {
  tpj_status_t s = tpj_rt_event_await(rt->api, p->event, p->op);
  if (!s) s = tpj_rt_injected_locked(rt, p->op);
  tpj_rt_done_set(p->done);
  tpj_rt_done_release(p->done);
  if (s && !*first) *first = s;
  else tpj_status_free(s);
}

/* Drops pending completions that are done, keeping the first failure.
 * Called with rt->mu held. */
static void tpj_rt_prune_locked(tpj_rt_t* rt) {
  const PJRT_Api* api = rt->api;
  if (!TPJ_RT_HAS(api, PJRT_Event_IsReady)) return;
  size_t keep = 0;
  for (size_t i = 0; i < rt->npending; ++i) {
    tpj_rt_pending_t* p = &rt->pending[i];
    TPJ_ARGS(PJRT_Event_IsReady_Args, r);
    r.event = p->event;
    PJRT_Error* e = api->PJRT_Event_IsReady(&r);
    if (e) {
      tpj_status_free(tpj_rt_status_from_pjrt(api, e, ""));
      rt->pending[keep++] = *p;
      continue;
    }
    if (!r.is_ready) {
      rt->pending[keep++] = *p;
      continue;
    }
    tpj_rt_retire(rt, p, &rt->deferred);
  }
  rt->npending = keep;
}

static _Thread_local int64_t t_trace_tag;

/* Notes launch p for the profiler. Called with rt->mu held. */
static void tpj_rt_trace_locked(tpj_rt_t* rt, tpj_rt_pending_t* p, int64_t t_launch) {
  if (rt->ntrace == rt->cap_trace) {
    size_t cap = rt->cap_trace ? rt->cap_trace * 2 : 256;
    struct tpj_rt_trace_entry* t = (struct tpj_rt_trace_entry*)realloc(
        rt->trace, cap * sizeof(*t));
    if (!t) return;  /* the trace misses a launch; the launch itself is fine */
    rt->trace = t;
    rt->cap_trace = cap;
  }
  tpj_rt_done_t* d = tpj_rt_done_of_locked(rt, p);
  if (!d) return;
  __atomic_add_fetch(&d->refcount, 1, __ATOMIC_RELAXED);
  struct tpj_rt_trace_entry* e = &rt->trace[rt->ntrace++];
  memset(e, 0, sizeof(*e));
  snprintf(e->rec.op, sizeof(e->rec.op), "%s", p->op);
  e->rec.device = p->device;
  e->rec.stream = p->stream;
  e->rec.tag = t_trace_tag;
  e->rec.t_launch_ns = t_launch;
  e->done = d;
}

tpj_status_t tpj_rt_remember(tpj_rt_t* rt, PJRT_Event* ev, int device, int64_t stream,
                                    const char* op, int64_t t_launch) {
  pthread_mutex_lock(&rt->mu);
  /* Pruning asks every pending event whether it is ready; with work backed
   * up behind a slow op that would be each launch asking them all again, so
   * the next prune waits until the list has doubled. */
  if (rt->npending >= rt->prune_at) {
    tpj_rt_prune_locked(rt);
    rt->prune_at = rt->npending < 32 ? 64 : 2 * rt->npending;
  }
  if (rt->npending == rt->cap_pending) {
    size_t cap = rt->cap_pending ? rt->cap_pending * 2 : 64;
    tpj_rt_pending_t* p =
        (tpj_rt_pending_t*)realloc(rt->pending, cap * sizeof(tpj_rt_pending_t));
    if (!p) {
      pthread_mutex_unlock(&rt->mu);
      return tpj_rt_event_await(rt->api, ev, op);
    }
    rt->pending = p;
    rt->cap_pending = cap;
  }
  tpj_rt_pending_t* p = &rt->pending[rt->npending++];
  p->event = ev;
  p->device = device;
  p->stream = stream;
  p->done = NULL;
  /* a bounded copy, not snprintf: this runs on every launch */
  const char* name = op ? op : "op";
  size_t len = strnlen(name, sizeof(p->op) - 1);
  memcpy(p->op, name, len);
  p->op[len] = 0;
  if (rt->track_done) tpj_rt_done_of_locked(rt, p);
  if (rt->tracing) tpj_rt_trace_locked(rt, p, t_launch);
  pthread_mutex_unlock(&rt->mu);
  return NULL;
}

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
      tpj_status_t w = tpj_rt_remember(rt, done[0], device, t_stream[device], op_name,
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

tpj_status_t tpj_rt_check_later(tpj_rt_t* rt, tpj_rt_buffer_t* flag, const char* message) {
  if (!flag || !flag->pjrt || flag->dtype != TPJ_BOOL || flag->ndim != 0)
    return tpj_status_make(TPJ_INVALID_ARGUMENT, "a device-side check needs a 0-d bool buffer");
  char* msg = strdup(message ? message : "a device-side check failed");
  if (!msg) return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  pthread_mutex_lock(&rt->mu);
  if (rt->nchecks == rt->cap_checks) {
    size_t cap = rt->cap_checks ? 2 * rt->cap_checks : 16;
    struct tpj_rt_check* c =
        (struct tpj_rt_check*)realloc(rt->checks, cap * sizeof(*rt->checks));
    if (!c) {
      pthread_mutex_unlock(&rt->mu);
      free(msg);
      return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
    }
    rt->checks = c;
    rt->cap_checks = cap;
  }
  tpj_rt_buffer_retain(flag);
  rt->checks[rt->nchecks].flag = flag;
  rt->checks[rt->nchecks].message = msg;
  rt->nchecks++;
  pthread_mutex_unlock(&rt->mu);
  return NULL;
}

/* Reads the checks on device (-1: all), taken out of the list; the first
 * that failed (or could not be read) is returned unless *first is set. */
static void tpj_rt_read_checks(tpj_rt_t* rt, int device, tpj_status_t* first) {
  pthread_mutex_lock(&rt->mu);
  size_t n = 0, keep = 0;
  struct tpj_rt_check* mine = NULL;
  for (size_t i = 0; i < rt->nchecks; ++i)
    if (device < 0 || rt->checks[i].flag->device == device) n++;
  if (n) mine = (struct tpj_rt_check*)malloc(n * sizeof(*mine));
  n = 0;
  for (size_t i = 0; i < rt->nchecks; ++i) {
    struct tpj_rt_check c = rt->checks[i];
    if ((device >= 0 && c.flag->device != device) || !mine) rt->checks[keep++] = c;
    else mine[n++] = c;
  }
  rt->nchecks = keep;
  pthread_mutex_unlock(&rt->mu);
  const PJRT_Api* api = rt->api;
  for (size_t i = 0; i < n; ++i) {
    unsigned char bad = 0;
    if (!*first) {
      TPJ_ARGS(PJRT_Buffer_ToHostBuffer_Args, a);
      a.src = (PJRT_Buffer*)mine[i].flag->pjrt;
      a.dst = &bad;
      a.dst_size = 1;
      tpj_status_t s = tpj_rt_status_from_pjrt(api, api->PJRT_Buffer_ToHostBuffer(&a),
                                               "reading a device-side check");
      if (!s) s = tpj_rt_event_await(api, a.event, "reading a device-side check");
      if (s) *first = s;
      else if (bad) *first = tpj_status_make(TPJ_OUT_OF_RANGE, "%s", mine[i].message);
    }
    tpj_rt_buffer_release(mine[i].flag);
    free(mine[i].message);
  }
  free(mine);
}

/* Awaits (and drops) the pending entries on device (-1: all) and stream
 * (-1: all); returns the first failure, with the deferred one first. */
static tpj_status_t tpj_rt_await_matching(tpj_rt_t* rt, int device, int64_t stream) {
  pthread_mutex_lock(&rt->mu);
  tpj_status_t first = rt->deferred;
  rt->deferred = NULL;
  size_t keep = 0;
  for (size_t i = 0; i < rt->npending; ++i) {
    tpj_rt_pending_t* p = &rt->pending[i];
    if ((device >= 0 && p->device != device) || (stream >= 0 && p->stream != stream)) {
      rt->pending[keep++] = *p;
      continue;
    }
    tpj_rt_retire(rt, p, &first);
  }
  rt->npending = keep;
  if (keep < 32) rt->prune_at = 64;
  int has_checks = rt->nchecks > 0;
  pthread_mutex_unlock(&rt->mu);
  /* after the launches: each flag is computed by then */
  if (has_checks) tpj_rt_read_checks(rt, device, &first);
  tpj_rt_reap_drain();
  return first;
}

tpj_status_t tpj_rt_synchronize(tpj_rt_t* rt, int device) {
  return tpj_rt_await_matching(rt, device, -1);
}

void tpj_rt_set_thread_stream(int device, int64_t stream) {
  if (device >= 0 && device < TPJ_MAX_DEVICES) t_stream[device] = stream;
}

int64_t tpj_rt_thread_stream(int device) {
  return (device >= 0 && device < TPJ_MAX_DEVICES) ? t_stream[device] : 0;
}

tpj_status_t tpj_rt_stream_synchronize(tpj_rt_t* rt, int device, int64_t stream) {
  TPJ_RETURN_IF_ERROR(tpj_rt_check_device(rt, device));
  return tpj_rt_await_matching(rt, device, stream < 0 ? 0 : stream);
}

/* True when entry p has finished (without waiting). Called with rt->mu held. */
static int tpj_rt_entry_ready_locked(tpj_rt_t* rt, tpj_rt_pending_t* p) {
  if (p->done && tpj_rt_done_time(p->done)) return 1;
  if (!TPJ_RT_HAS(rt->api, PJRT_Event_IsReady)) return 0;
  TPJ_ARGS(PJRT_Event_IsReady_Args, r);
  r.event = p->event;
  PJRT_Error* e = rt->api->PJRT_Event_IsReady(&r);
  if (e) {
    tpj_status_free(tpj_rt_status_from_pjrt(rt->api, e, ""));
    return 0;
  }
  if (r.is_ready) tpj_rt_done_set(p->done);
  return r.is_ready;
}

int tpj_rt_stream_query(tpj_rt_t* rt, int device, int64_t stream) {
  int ready = 1;
  pthread_mutex_lock(&rt->mu);
  for (size_t i = 0; i < rt->npending && ready; ++i) {
    tpj_rt_pending_t* p = &rt->pending[i];
    if (p->device == device && p->stream == stream) ready = tpj_rt_entry_ready_locked(rt, p);
  }
  pthread_mutex_unlock(&rt->mu);
  return ready;
}

struct tpj_rt_mark {
  tpj_rt_t* rt;
  int device;
  int64_t stream;
  int64_t t_record_ns;
  size_t n;
  tpj_rt_done_t** done;    /* launches not yet known done at record time (owned refs) */
};

tpj_status_t tpj_rt_mark_record(tpj_rt_t* rt, int device, int64_t stream,
                                tpj_rt_mark_t** out_mark) {
  *out_mark = NULL;
  TPJ_RETURN_IF_ERROR(tpj_rt_check_device(rt, device));
  tpj_rt_mark_t* m = (tpj_rt_mark_t*)calloc(1, sizeof(*m));
  if (!m) return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  m->rt = rt;
  m->device = device;
  m->stream = stream;
  pthread_mutex_lock(&rt->mu);
  rt->track_done += 1;  /* a count of live marks */
  size_t want = 0;
  for (size_t i = 0; i < rt->npending; ++i)
    if (rt->pending[i].device == device && rt->pending[i].stream == stream) ++want;
  m->done = want ? (tpj_rt_done_t**)calloc(want, sizeof(tpj_rt_done_t*)) : NULL;
  for (size_t i = 0; i < rt->npending && m->done; ++i) {
    tpj_rt_pending_t* p = &rt->pending[i];
    if (p->device != device || p->stream != stream) continue;
    tpj_rt_done_t* d = tpj_rt_done_of_locked(rt, p);
    if (!d) continue;
    if (tpj_rt_done_time(d)) continue;
    __atomic_add_fetch(&d->refcount, 1, __ATOMIC_RELAXED);
    m->done[m->n++] = d;
  }
  pthread_mutex_unlock(&rt->mu);
  if (want && !m->done) {
    pthread_mutex_lock(&rt->mu);
    rt->track_done -= 1;
    pthread_mutex_unlock(&rt->mu);
    free(m);
    return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  }
  m->t_record_ns = tpj_rt_now_ns();
  *out_mark = m;
  return NULL;
}

void tpj_rt_mark_release(tpj_rt_mark_t* m) {
  if (!m) return;
  /* Launches stop paying for done times once no mark is left to ask. */
  pthread_mutex_lock(&m->rt->mu);
  m->rt->track_done -= 1;
  pthread_mutex_unlock(&m->rt->mu);
  for (size_t i = 0; i < m->n; ++i) tpj_rt_done_release(m->done[i]);
  free(m->done);
  free(m);
}

int tpj_rt_mark_query(tpj_rt_t* rt, tpj_rt_mark_t* m) {
  int ready = 1;
  pthread_mutex_lock(&rt->mu);
  for (size_t i = 0; i < m->n && ready; ++i) {
    if (tpj_rt_done_time(m->done[i])) continue;
    ready = 0;
    for (size_t j = 0; j < rt->npending; ++j)
      if (rt->pending[j].done == m->done[i]) ready = tpj_rt_entry_ready_locked(rt, &rt->pending[j]);
  }
  pthread_mutex_unlock(&rt->mu);
  return ready;
}

tpj_status_t tpj_rt_mark_wait(tpj_rt_t* rt, tpj_rt_mark_t* m) {
  tpj_status_t first = NULL;
  pthread_mutex_lock(&rt->mu);
  size_t keep = 0;
  for (size_t j = 0; j < rt->npending; ++j) {
    tpj_rt_pending_t* p = &rt->pending[j];
    int mine = 0;
    for (size_t i = 0; i < m->n && p->done && !mine; ++i) mine = p->done == m->done[i];
    if (!mine) {
      rt->pending[keep++] = *p;
      continue;
    }
    /* A failure is raised here, and again at the next synchronize (sticky,
     * like CUDA's asynchronous errors). */
    tpj_status_t s = NULL;
    tpj_rt_retire(rt, p, &s);
    if (s && !first) {
      first = s;
      if (!rt->deferred)
        rt->deferred = tpj_status_make(tpj_status_code(s), "%s", tpj_status_message(s));
    } else {
      tpj_status_free(s);
    }
  }
  rt->npending = keep;
  pthread_mutex_unlock(&rt->mu);
  /* Entries already awaited by someone else have their time set. */
  for (size_t i = 0; i < m->n; ++i) tpj_rt_done_set(m->done[i]);
  return first;
}

int64_t tpj_rt_mark_time_ns(const tpj_rt_mark_t* m) {
  int64_t t = m->t_record_ns;
  for (size_t i = 0; i < m->n; ++i) {
    int64_t d = tpj_rt_done_time(m->done[i]);
    if (d > t) t = d;
  }
  return t;
}

int tpj_rt_mark_device(const tpj_rt_mark_t* m) { return m->device; }

/* ---- profiler trace -------------------------------------------------- */

void tpj_rt_set_trace_tag(int64_t tag) { t_trace_tag = tag; }
int64_t tpj_rt_trace_tag(void) { return t_trace_tag; }

int64_t tpj_rt_clock_ns(void) { return tpj_rt_now_ns(); }

void tpj_rt_trace_start(tpj_rt_t* rt) {
  pthread_mutex_lock(&rt->mu);
  rt->tracing = 1;
  pthread_mutex_unlock(&rt->mu);
}

tpj_status_t tpj_rt_trace_stop(tpj_rt_t* rt, tpj_rt_trace_record_t** out_records,
                               size_t* out_n) {
  *out_records = NULL;
  *out_n = 0;
  /* Every traced launch gets its done time; a failure stays for the next
   * synchronize (the profiler is not the place to raise it). */
  tpj_status_t s = tpj_rt_synchronize(rt, -1);
  pthread_mutex_lock(&rt->mu);
  if (s && !rt->deferred) rt->deferred = s;
  else tpj_status_free(s);
  rt->tracing = 0;
  size_t n = rt->ntrace;
  tpj_rt_trace_record_t* recs =
      n ? (tpj_rt_trace_record_t*)malloc(n * sizeof(tpj_rt_trace_record_t)) : NULL;
  for (size_t i = 0; i < n; ++i) {
    if (recs) {
      recs[i] = rt->trace[i].rec;
      recs[i].t_done_ns = tpj_rt_done_time(rt->trace[i].done);
    }
    tpj_rt_done_release(rt->trace[i].done);
  }
  rt->ntrace = 0;
  pthread_mutex_unlock(&rt->mu);
  if (n && !recs) return tpj_status_make(TPJ_OUT_OF_MEMORY, "out of host memory");
  *out_records = recs;
  *out_n = n;
  return NULL;
}
