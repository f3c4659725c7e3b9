/* base/dtype: the dense element types the core knows, with their sizes and
 * StableHLO spellings. The numbering is ours; csrc/ maps c10::ScalarType to it
 * and rt/ maps it to PJRT_Buffer_Type. */
#ifndef TPJ_BASE_DTYPE_H_
#define TPJ_BASE_DTYPE_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  TPJ_DTYPE_INVALID = 0,
  TPJ_BOOL,
  TPJ_U8,
  TPJ_I8,
  TPJ_I16,
  TPJ_I32,
  TPJ_I64,
  TPJ_F16,
  TPJ_BF16,
  TPJ_F32,
  TPJ_F64,
  TPJ_C64,
  TPJ_C128,
  /* PyTorch's "limited support" unsigned types: held and moved on the device
   * (copies, views, fill); the glue sends every computation on them to the
   * CPU kernel, so no lowering written for the types above meets them. */
  TPJ_U16,
  TPJ_U32,
  TPJ_U64,
  TPJ_DTYPE_COUNT
} tpj_dtype_t;

/* Bytes per element; 0 for TPJ_DTYPE_INVALID. */
size_t tpj_dtype_size(tpj_dtype_t dt);
/* StableHLO element type, e.g. "f32", "i1", "ui8", "complex<f32>". */
const char* tpj_dtype_hlo_name(tpj_dtype_t dt);
/* PyTorch-style name, e.g. "float32", for error messages. */
const char* tpj_dtype_name(tpj_dtype_t dt);
/* c10::ScalarType's name, e.g. "Half", as PyTorch's own errors print it. */
const char* tpj_dtype_c10_name(tpj_dtype_t dt);
int tpj_dtype_is_float(tpj_dtype_t dt);   /* f16, bf16, f32, f64 */
int tpj_dtype_is_complex(tpj_dtype_t dt);
/* u8..i64, not bool: the integer types the lowerings compute in. u16, u32
 * and u64 are not among them (storage only, see above). */
int tpj_dtype_is_int(tpj_dtype_t dt);
/* u16, u32, u64: bytes the device holds and moves but never computes on. */
int tpj_dtype_is_storage_only(tpj_dtype_t dt);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_BASE_DTYPE_H_ */
