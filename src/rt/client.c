/* rt/client: loading a PJRT plugin (dlopen, version and required-entry
 * checks), the client and its devices, plugin attributes and device memory
 * statistics; and the one function that turns a PJRT_Error into a status. */
#include "rt/rt.h"
#include "rt/open.h"
#include "rt/track.h"
#include "rt/internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "pjrt_c_api.h"

/* Failures the plugin reported as RESOURCE_EXHAUSTED (tpj_rt_oom_count),
 * counted where every PJRT_Error is converted. */
static atomic_llong g_ooms;

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

void tpj_rt_event_destroy(const PJRT_Api* api, PJRT_Event* ev) {
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

tpj_status_t tpj_rt_restrict_devices(tpj_rt_t* rt, const int* visible, int n) {
  if (n < 0 || n > rt->ndevices)
    return tpj_status_make(TPJ_INVALID_ARGUMENT, "%d visible devices named; the plugin has %d",
                           n, rt->ndevices);
  unsigned char kept[TPJ_MAX_DEVICES] = {0};
  for (int i = 0; i < n; ++i) {
    int d = visible[i];
    if (d < 0 || d >= rt->ndevices)
      return tpj_status_make(TPJ_INVALID_ARGUMENT,
                             "device %d does not exist: the plugin has %d device%s (0-%d)", d,
                             rt->ndevices, rt->ndevices == 1 ? "" : "s", rt->ndevices - 1);
    if (kept[d])
      return tpj_status_make(TPJ_INVALID_ARGUMENT, "device %d is named twice", d);
    kept[d] = 1;
  }
  PJRT_Device* devices[TPJ_MAX_DEVICES];
  char* kind[TPJ_MAX_DEVICES];
  char* desc[TPJ_MAX_DEVICES];
  int64_t id[TPJ_MAX_DEVICES];
  for (int i = 0; i < n; ++i) {
    devices[i] = rt->devices[visible[i]];
    kind[i] = rt->device_kind[visible[i]];
    desc[i] = rt->device_desc[visible[i]];
    id[i] = rt->device_id[visible[i]];
  }
  for (int d = 0; d < rt->ndevices; ++d) {
    if (kept[d]) continue;
    free(rt->device_kind[d]);
    free(rt->device_desc[d]);
  }
  for (int i = 0; i < n; ++i) {
    rt->devices[i] = devices[i];
    rt->device_kind[i] = kind[i];
    rt->device_desc[i] = desc[i];
    rt->device_id[i] = id[i];
  }
  rt->ndevices = n;
  return NULL;
}
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

int64_t tpj_rt_oom_count(void) { return atomic_load(&g_ooms); }
