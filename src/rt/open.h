/* rt/open: opening a plugin with named client-create options.
 *
 * PJRT_Client_Create takes a list of PJRT_NamedValue; which names a plugin
 * accepts is the plugin's own business (the CPU plugin: cpu_device_count;
 * the XLA GPU plugin: preallocate, memory_fraction, allocator, ...). The
 * choice of options is policy and lives above (python/torch_pjrt/_plugin.py);
 * this layer only carries them through. A plugin refuses a name it does not
 * know with an error that names it. */
#ifndef TPJ_RT_OPEN_H_
#define TPJ_RT_OPEN_H_

#include <stddef.h>
#include <stdint.h>

#include "rt/rt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  TPJ_RT_OPTION_INT64 = 0,
  TPJ_RT_OPTION_FLOAT = 1,
  TPJ_RT_OPTION_BOOL = 2,
  TPJ_RT_OPTION_STRING = 3,
} tpj_rt_option_type_t;

/* One create option. Borrowed: the strings must live for the call. */
typedef struct {
  const char* name;
  tpj_rt_option_type_t type;
  int64_t int_value;   /* INT64, and BOOL as 0/1 */
  double float_value;  /* FLOAT (PJRT carries it as a C float) */
  const char* string_value;
} tpj_rt_option_t;

#define TPJ_RT_MAX_OPTIONS 32

/* tpj_rt_open, with these create options passed to PJRT_Client_Create as
 * given (at most TPJ_RT_MAX_OPTIONS). */
tpj_status_t tpj_rt_open_with_options(const char* plugin_path, const tpj_rt_option_t* options,
                                      size_t num_options, tpj_rt_t** out_rt);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_RT_OPEN_H_ */
