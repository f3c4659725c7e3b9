/* ops: the lowering table. One entry per aten overload (plus a few internal
 * "tpj::" ops), each a C function that emits the op's StableHLO from values
 * that are already read out of their views. The eager engine, the
 * torch.compile path and the coverage report all read this one table. */
#ifndef TPJ_OPS_OPS_H_
#define TPJ_OPS_OPS_H_

#include "hlo/builder.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TPJ_OP_MAX_IN 64
#define TPJ_OP_MAX_ATTRS 64
#define TPJ_OP_MAX_OUT 8

/* What a lowering sees. Inputs are the op's tensor arguments in schema
 * order, then its runtime scalars (0-d values); attrs are the non-tensor
 * arguments that change the program; outs are the result types PyTorch's
 * meta functions computed. */
typedef struct {
  tpj_hlo_builder_t* b;
  int nin;
  tpj_hlo_value_t in[TPJ_OP_MAX_IN];
  int nattrs;
  int64_t attrs[TPJ_OP_MAX_ATTRS];
  int nouts;
  tpj_rt_shape_t outs[TPJ_OP_MAX_OUT];
} tpj_op_ctx_t;

/* Writes ctx->nouts results. Failures go into ctx->b (sticky). */
typedef void (*tpj_lower_fn_t)(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);

typedef struct {
  const char* name;      /* "aten::add.Tensor" */
  tpj_lower_fn_t lower;
} tpj_op_def_t;

/* NULL when the table has no such op. */
const tpj_op_def_t* tpj_ops_lookup(const char* name);
int tpj_ops_count(void);
const tpj_op_def_t* tpj_ops_at(int i);

/* Helpers shared by lowerings: convert x to dt and broadcast it to dims. */
tpj_hlo_value_t tpj_ops_cast_to(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_dtype_t dt,
                                const int64_t* dims, int ndim);

/* Per-family lowering functions, declared for the table in table.c. */
void tpj_lower_add_tensor(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_mul_tensor(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_sub_tensor(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_div_tensor(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_maximum(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_minimum(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_pow(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_exp(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_log(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_sin(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_cos(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_tanh(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_sqrt(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_rsqrt(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_sigmoid(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_log1p(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_expm1(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_neg(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_abs(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_relu(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_where(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_eq(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_ne(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_lt(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_le(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_gt(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_ge(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_sum(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_mean(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_prod(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_amax(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_amin(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_any(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_all(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_mm(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_addmm(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_softmax(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_log_softmax(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_softmax_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_log_softmax_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_threshold_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_clamp(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_masked_fill(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_cat(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_gelu(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_gelu_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_layer_norm(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_layer_norm_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_addcmul(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_addcdiv(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_lerp(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_index_select(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_embedding_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_nll_loss(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_nll_loss_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_full(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_view_copy(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_write_view(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);

/* Indexing by tensors (ops/gather.c). */
void tpj_lower_gather(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_scatter(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_index(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_index_put(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_index_along(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_count_nonzero(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_nonzero(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_nonzero_static(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_OPS_OPS_H_ */
