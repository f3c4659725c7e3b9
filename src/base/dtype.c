#include "base/dtype.h"

typedef struct {
  size_t size;
  const char* hlo;
  const char* name;
  const char* c10; /* c10::ScalarType's name, as PyTorch's errors print it */
} tpj_dtype_info_t;

static const tpj_dtype_info_t kInfo[TPJ_DTYPE_COUNT] = {
    [TPJ_DTYPE_INVALID] = {0, "invalid", "invalid", "Undefined"},
    [TPJ_BOOL] = {1, "i1", "bool", "Bool"},
    [TPJ_U8] = {1, "ui8", "uint8", "Byte"},
    [TPJ_I8] = {1, "i8", "int8", "Char"},
    [TPJ_I16] = {2, "i16", "int16", "Short"},
    [TPJ_I32] = {4, "i32", "int32", "Int"},
    [TPJ_I64] = {8, "i64", "int64", "Long"},
    [TPJ_F16] = {2, "f16", "float16", "Half"},
    [TPJ_BF16] = {2, "bf16", "bfloat16", "BFloat16"},
    [TPJ_F32] = {4, "f32", "float32", "Float"},
    [TPJ_F64] = {8, "f64", "float64", "Double"},
    [TPJ_C64] = {8, "complex<f32>", "complex64", "ComplexFloat"},
    [TPJ_C128] = {16, "complex<f64>", "complex128", "ComplexDouble"},
    [TPJ_U16] = {2, "ui16", "uint16", "UInt16"},
    [TPJ_U32] = {4, "ui32", "uint32", "UInt32"},
    [TPJ_U64] = {8, "ui64", "uint64", "UInt64"},
};

static const tpj_dtype_info_t* tpj_dtype_info(tpj_dtype_t dt) {
  if ((int)dt < 0 || dt >= TPJ_DTYPE_COUNT) return &kInfo[TPJ_DTYPE_INVALID];
  return &kInfo[dt];
}

size_t tpj_dtype_size(tpj_dtype_t dt) { return tpj_dtype_info(dt)->size; }
const char* tpj_dtype_hlo_name(tpj_dtype_t dt) { return tpj_dtype_info(dt)->hlo; }
const char* tpj_dtype_name(tpj_dtype_t dt) { return tpj_dtype_info(dt)->name; }
const char* tpj_dtype_c10_name(tpj_dtype_t dt) { return tpj_dtype_info(dt)->c10; }

int tpj_dtype_is_float(tpj_dtype_t dt) {
  return dt == TPJ_F16 || dt == TPJ_BF16 || dt == TPJ_F32 || dt == TPJ_F64;
}
int tpj_dtype_is_complex(tpj_dtype_t dt) { return dt == TPJ_C64 || dt == TPJ_C128; }
int tpj_dtype_is_int(tpj_dtype_t dt) { return dt >= TPJ_U8 && dt <= TPJ_I64; }
int tpj_dtype_is_storage_only(tpj_dtype_t dt) { return dt >= TPJ_U16 && dt <= TPJ_U64; }
