/* ops/paged: the shape contract of torch_pjrt::paged_attention, checked in
 * one place: by the glue before a call (PyTorch's exception, the op's name)
 * and by the lowering (attention.c) on what it is handed. */
#ifndef TPJ_OPS_PAGED_H_
#define TPJ_OPS_PAGED_H_

#include <stdint.h>

#include "base/dtype.h"
#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One operand's dtype and dims. */
typedef struct {
  tpj_dtype_t dtype;
  const char* dtype_name; /* PyTorch's name, for the message */
  int ndim;
  const int64_t* dims;
} tpj_paged_operand_t;

/* The operands and attributes of one call, in the op's order. */
typedef struct {
  tpj_paged_operand_t query;       /* (tokens, heads, head_size) */
  tpj_paged_operand_t kv_cache;    /* (blocks, block_size, kv_heads, 2 * head_size) */
  tpj_paged_operand_t tile_blocks; /* (tiles, width), width a multiple of chunk_blocks */
  tpj_paged_operand_t row_token;   /* (tiles * rows per tile) */
  tpj_paged_operand_t row_pos;     /* like row_token */
  tpj_paged_operand_t token_row;   /* (tokens) */
  int64_t chunk_blocks;            /* >= 1 */
  int has_window;
  int64_t window;                  /* >= 1 when has_window */
} tpj_paged_call_t;

/* NULL when the call's shapes and dtypes are what the lowering takes; else
 * an error (TPJ_INVALID_ARGUMENT) naming the op and what is wrong. */
tpj_status_t tpj_ops_paged_attention_check(const tpj_paged_call_t* call);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_OPS_PAGED_H_ */
