/* ops: the lowering table. One entry per aten overload (plus a few internal
 * "tpj::" ops), each a C function that emits the op's StableHLO from values
 * that are already read out of their views. The eager engine, the
 * torch.compile path and the coverage report all read this one table. */
#ifndef TPJ_OPS_OPS_H_
#define TPJ_OPS_OPS_H_

#include "hlo/builder.h"
#include "ops/limits.h"

#ifdef __cplusplus
extern "C" {
#endif


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
/* The op's position in the table (tpj_ops_at), or -1. */
int tpj_ops_index(const char* name);

/* tpj::laid_out: another table op whose chosen outputs come out transposed
 * into a memory order (an output PyTorch lays out channels_last, say), in
 * the same program. attrs: {op's index (tpj_ops_index), mask of the outputs
 * to transpose, ndim, perm[ndim], the op's own attrs...}; those outputs'
 * types are the transposed ones: dims[k] = logical dims[perm[k]]. */
void tpj_lower_laid_out(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);

/* Helpers shared by lowerings: convert x to dt and broadcast it to dims. */
tpj_hlo_value_t tpj_ops_cast_to(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_dtype_t dt,
                                const int64_t* dims, int ndim);
/* erf of a floating value, rounded as CPU's (ops/pointwise.c) */
tpj_hlo_value_t tpj_ops_erf(tpj_hlo_builder_t* b, tpj_hlo_value_t x);

/* Per-family lowering functions, declared for the table in table.c. */
void tpj_lower_add_tensor(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_mul_tensor(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_sub_tensor(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_div_tensor(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_maximum(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_minimum(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_pow(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_pow_scalar(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
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
void tpj_lower_safe_softmax(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
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

/* varlen attention over packed documents (ops/attention.c) */
void tpj_lower_varlen_attn(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_varlen_attn_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
/* paged attention over a block cache, for serving (ops/attention.c) */
void tpj_lower_paged_attention(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);

/* batch/group/layer norm (norm.c), activations (activation.c), pointwise
 * losses (loss_pointwise.c). */
void tpj_lower_silu(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_silu_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_hardtanh(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_hardtanh_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_leaky_relu(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_leaky_relu_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_elu(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_elu_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_softplus(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_softplus_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_hardsigmoid(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_hardsigmoid_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_hardswish(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_hardswish_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_mish(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_mish_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_tanh_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_sigmoid_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_log_sigmoid_forward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_log_sigmoid_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_batch_norm(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_batch_norm_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_group_norm(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_group_norm_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_mse_loss(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_mse_loss_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_smooth_l1_loss(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_smooth_l1_loss_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_huber_loss(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_huber_loss_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_binary_cross_entropy(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_binary_cross_entropy_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
/* convolution and 2-D pooling (ops/conv.c) */
void tpj_lower_convolution(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_convolution_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_max_pool2d(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_max_pool2d_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_avg_pool2d(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_avg_pool2d_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_adaptive_avg_pool2d(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_adaptive_avg_pool2d_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
/* upsample (ops/upsample.c): every upsample_* overload and its backward. */
void tpj_lower_upsample(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_upsample_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
/* Sorting, selection, scans (ops/sort.c) and statistics
 * (ops/reduction_stats.c). */
/* r (x reduced over rdims, sorted) broadcast back to x's dims. */
tpj_hlo_value_t tpj_ops_unreduce(tpj_hlo_builder_t* b, tpj_hlo_value_t r, const int64_t* dims,
                                 int ndim, const int64_t* rdims, int nrdims);
tpj_hlo_value_t tpj_ops_is_nan(tpj_hlo_builder_t* b, tpj_hlo_value_t x);
void tpj_lower_sort(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_topk(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_kthvalue(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_median(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_max_dim(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_min_dim(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_max_all(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_min_all(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_argmax(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_argmin(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_cumsum(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_cumprod(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_logcumsumexp(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_var(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_logsumexp(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_vector_norm(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
/* random (ops/random.c) */
void tpj_lower_uniform(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_normal(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_bernoulli_float(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_bernoulli_tensor(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_random(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_exponential(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_native_dropout(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_native_dropout_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_randperm(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_multinomial(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
/* more pointwise math (ops/pointwise.c) */
void tpj_lower_erf(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_erfc(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_erfinv(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_tan(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_asin(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_acos(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_atan(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_sinh(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_cosh(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_asinh(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_acosh(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_atanh(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_bitwise_not(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_floor(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_ceil(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_trunc(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_frac(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_round(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_sign(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_isnan(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_isposinf(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_isneginf(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_reciprocal(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_log2(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_log10(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_exp2(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_nan_to_num(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_bitwise_and(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_bitwise_or(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_bitwise_xor(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_atan2(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_fmod(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_logical_and(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_logical_or(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_logical_xor(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_logical_not(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_remainder(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_div_mode(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_hypot(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);

/* creation (ops/create.c) and shape ops (ops/shape.c) */
void tpj_lower_eye(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_arange(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_linspace(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_tril(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_triu(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_flip(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_roll(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_constant_pad_nd(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_edge_pad(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
/* Indexing by tensors (ops/index_gather.c). */
void tpj_lower_gather(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_scatter(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_index(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_index_put(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_index_along(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_count_nonzero(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_index_out_of_range(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_nonzero(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_nonzero_static(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
/* GradScaler's unscale and scale update (ops/amp.c). */
void tpj_lower_amp_unscale(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_amp_update_scale(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
/* isin (ops/sort.c), histc (ops/reduction.c), _grouped_mm (ops/linalg.c). */
void tpj_lower_isin(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_histc(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_grouped_mm(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
/* One parameter's fused Adam/AdamW step (ops/optim.c). */
void tpj_lower_fused_adam(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
/* _fft_c2c, _fft_r2c, _fft_c2r: torch.fft and stft (ops/fft.c). */
void tpj_lower_fft_c2c(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_fft_c2r(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_fft_r2c(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
/* Matrix decompositions and solves (ops/linalg_decomp.c). */
void tpj_lower_cholesky_inverse(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_cholesky_solve_helper(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_geqrf(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_linalg_cholesky_ex(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_linalg_det(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_linalg_eigvalsh(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_linalg_householder_product(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_linalg_inv_ex(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_linalg_lu(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_linalg_lu_factor_ex(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_linalg_lu_solve(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_linalg_qr(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_linalg_slogdet(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_linalg_solve_ex(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_linalg_solve_triangular(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_lu_unpack(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_triangular_solve(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);

/* special-function family (src/ops/special.c) */
void tpj_lower_lgamma(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_digamma(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_polygamma(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_special_zeta(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_nextafter(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_special_xlog1py(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_special_entr(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_i0(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_special_i0e(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_special_i1(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_special_i1e(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_sinc(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_special_modified_bessel_i1(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_special_ndtri(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_special_erfcx(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_special_log_ndtr(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
/* the orthogonal polynomials (ops/special_orthopoly.c); attrs[1] names which */
void tpj_lower_orthopoly(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_special_airy_ai(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_special_modified_bessel_k0(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_special_modified_bessel_k1(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_special_scaled_modified_bessel_k0(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_special_scaled_modified_bessel_k1(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_special_bessel_j0(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_special_bessel_j1(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_special_bessel_y0(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_special_bessel_y1(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_special_spherical_bessel_j0(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);

/* more pointwise ops (ops/pointwise.c); cummax/cummin (ops/sort.c) */
void tpj_lower_signbit(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_copysign(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_fmax(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_fmin(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_heaviside(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_logaddexp(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_logaddexp2(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_xlogy(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_angle(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_complex(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_polar(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_cummaxmin(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_frexp(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
/* nll_loss2d (ops/loss.c), pad backward and channel_shuffle (ops/shape.c),
 * shrink/threshold (ops/activation.c), logit (ops/special.c). */
void tpj_lower_nll_loss2d(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_nll_loss2d_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_edge_pad_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_logit(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_logit_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_hardshrink(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_softshrink(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_shrink_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_threshold(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_channel_shuffle(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);

/* pooling over 1-3 spatial dims (ops/pool.c) */
void tpj_lower_max_pool_nd(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_max_pool_nd_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_avg_pool_nd(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_avg_pool_nd_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_adaptive_max_pool(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_adaptive_avg_pool_nd(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_adaptive_avg_pool_nd_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);

/* sliding blocks (ops/fold.c): F.unfold / F.fold, Tensor.unfold's backward,
 * max_unpool */
void tpj_lower_im2col(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_col2im(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_unfold_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_max_unpool(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);

/* margin losses (ops/loss_margin.c) */
void tpj_lower_multi_margin_loss(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_multi_margin_loss_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_multilabel_margin_loss(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_multilabel_margin_loss_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);

/* p-norm distances (ops/distance.c) */
void tpj_lower_cdist(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_cdist_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_pdist(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_pdist_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);

/* bicubic upsampling (ops/upsample_bicubic.c) */
void tpj_lower_upsample_bicubic(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_upsample_bicubic_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);

/* antialiased resizing (ops/upsample_aa.c) and the grid samplers
 * (ops/sampling.c) */
void tpj_lower_upsample_aa(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_upsample_aa_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_grid_sampler(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_grid_sampler_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
/* regularized incomplete gamma (ops/special_igamma.c) */
void tpj_lower_igamma(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
/* linalg_cross and matrix_exp (ops/linalg.c); nanmedian, mode,
 * unique_consecutive, complex scans and the sort order key (ops/sort.c);
 * glu and prelu (ops/activation.c); gcd/lcm (ops/pointwise.c);
 * tril/triu_indices (ops/create.c); segment_reduce and bincount
 * (ops/reduction.c). */
tpj_hlo_value_t tpj_ops_order_key(tpj_hlo_builder_t* b, tpj_hlo_value_t x);
void tpj_lower_prelu(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_prelu_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_gcd(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_glu(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_glu_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_lcm(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_tri_indices(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_segment_reduce(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_segment_reduce_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_complex_scan(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_bincount(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_matrix_exp(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_linalg_cross(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_mode(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_nanmedian(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_unique_consecutive(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);
void tpj_lower_unique_consecutive_count(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);

/* in-place writes (inplace.c): a block of a storage's buffer updated at
 * run-time positions. */
void tpj_lower_write_block(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_OPS_OPS_H_ */
