/* ops/attrs: the attribute layouts of the lowerings that are not descriptor
 * rows, one struct per layout, so that the glue writing a call's attributes
 * (csrc/ops/<family>.cpp) and the lowering reading them name the same
 * fields. Every field is an int64_t: a struct overlays the call's int64
 * attribute words (tpj_op_ctx_t.attrs) exactly, in field order, and those
 * words are part of the executable cache's key. A lowering reads its layout
 * with TPJ_ATTRS(ctx, type) (ops/desc.h). */
#ifndef TPJ_OPS_ATTRS_H_
#define TPJ_OPS_ATTRS_H_

#include <stdint.h>

#include "ops/desc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The number of attribute words a layout fills (its flexible tail left out). */
#define TPJ_ATTRS_WORDS(type) ((int)(sizeof(type) / sizeof(int64_t)))

/* The layout of the lowerings whose one attribute is the compute dtype. */
typedef struct {
  int64_t compute; /* tpj_dtype_t (float32 for the half types, as CPU accumulates) */
} tpj_attrs_compute_t;

/* ---- reduction (ops/reduction.c): the non-row lowerings -------------------- */

/* segment_reduce and _segment_reduce_backward. */
typedef struct {
  int64_t compute;     /* tpj_dtype_t */
  int64_t kind;        /* the reduction: SEG_* of reduction.c (max, mean, min, sum, prod) */
  int64_t axis;        /* the segmented axis (= the batch dims before it) */
  int64_t by_lengths;  /* the segments are lengths (else offsets) */
  int64_t has_initial; /* an initial value is an operand */
} tpj_attrs_segment_reduce_t;

/* bincount. */
typedef struct {
  int64_t weighted; /* the weights are in[1] */
} tpj_attrs_bincount_t;

/* histc. */
typedef struct {
  int64_t bins;
} tpj_attrs_histc_t;

/* ---- attention (ops/attention.c) ------------------------------------------- */

/* _varlen_attn and its backward. */
typedef struct {
  int64_t compute; /* float32, or float64 for a float64 query */
  int64_t causal;
  int64_t left;    /* the sliding window's left extent, -1: none */
  int64_t right;   /* its right extent, -1: none */
} tpj_attrs_varlen_attn_t;

/* tpj::paged_attention (its shape contract: ops/paged.h). */
typedef struct {
  int64_t compute;      /* float32, or float64 for a float64 query */
  int64_t chunk_blocks; /* the blocks each loop step gathers per tile */
  int64_t window;       /* the sliding window, -1: none */
  int64_t has_soft_cap; /* in[7] is a logit soft cap */
} tpj_attrs_paged_attention_t;

/* ---- optim (ops/optim.c) --------------------------------------------------- */

/* One parameter's _fused_adam_ / _fused_adamw_ step. */
typedef struct {
  int64_t adamw;
  int64_t amsgrad;
  int64_t maximize;
  int64_t has_grad_scale;
  int64_t has_found_inf;
  int64_t compute; /* tpj_dtype_t the step computes in */
} tpj_attrs_fused_adam_t;

/* ---- norm (ops/norm.c) -------------------------------------------------- */

/* native_batch_norm. in: x, [weight], [bias], [running_mean, running_var],
 * momentum, eps. */
typedef struct {
  int64_t compute;     /* tpj_dtype_t the statistics are computed in */
  int64_t training;    /* batch statistics (else the running ones) */
  int64_t has_weight;
  int64_t has_bias;
  int64_t has_running; /* running_mean and running_var are operands */
} tpj_attrs_batch_norm_t;

/* native_batch_norm_backward. in: grad_out, x, [weight], mean,
 * var_or_invstd, eps. */
typedef struct {
  int64_t compute;
  int64_t training;  /* mean and invstd saved by training (else running stats) */
  int64_t has_weight;
  int64_t mask[3];   /* output mask: grad input, grad weight, grad bias */
} tpj_attrs_batch_norm_backward_t;

/* native_group_norm: x (N, C, *) seen as (N, group, C/group * HxW). in: x,
 * [weight], [bias], eps. */
typedef struct {
  int64_t compute;
  int64_t n;
  int64_t c;
  int64_t hxw; /* the product of x's dims past the channel dim */
  int64_t group;
  int64_t has_weight;
  int64_t has_bias;
} tpj_attrs_group_norm_t;

/* native_group_norm_backward. in: grad_out, x, mean, rstd, [weight]. */
typedef struct {
  int64_t compute;
  int64_t n;
  int64_t c;
  int64_t hxw;
  int64_t group;
  int64_t has_weight;
  int64_t mask[3]; /* output mask: grad input, grad weight, grad bias */
} tpj_attrs_group_norm_backward_t;

/* native_layer_norm. in: x, [weight], [bias], eps. */
typedef struct {
  int64_t compute;
  int64_t axis; /* the first normalized dim */
  int64_t has_weight;
  int64_t has_bias;
} tpj_attrs_layer_norm_t;

/* native_layer_norm_backward. in: grad_out, x, mean, rstd, [weight]. */
typedef struct {
  int64_t compute;
  int64_t axis;
  int64_t has_weight;
  int64_t has_bias; /* 0: the backward reads no bias */
  int64_t mask[3];  /* output mask: grad input, grad weight, grad bias */
} tpj_attrs_layer_norm_backward_t;

/* ---- sort (ops/sort.c) -------------------------------------------------- */

/* aten::sort.stable */
typedef struct {
  int64_t dim; /* wrapped */
  int64_t descending;
} tpj_attrs_sort_t;

/* aten::topk; the result is always sorted */
typedef struct {
  int64_t k;
  int64_t dim; /* wrapped */
  int64_t largest;
} tpj_attrs_topk_t;

/* aten::kthvalue */
typedef struct {
  int64_t k;   /* 1-based, checked by the glue */
  int64_t dim; /* wrapped */
} tpj_attrs_kthvalue_t;

/* One dim to select along: median, max/min (with and without dim),
 * argmax/argmin, mode, tpj::unique_consecutive_count. */
typedef struct {
  int64_t dim; /* wrapped; -1: all elements, flattened (mode: never -1) */
} tpj_attrs_select_t;

/* aten::cumsum, cumprod, _logcumsumexp */
typedef struct {
  int64_t dim;     /* wrapped */
  int64_t compute; /* tpj_dtype_t (float32 for half outputs); 0: the output's */
} tpj_attrs_scan_t;

/* aten::nanmedian, nanmedian.dim */
typedef struct {
  int64_t dim; /* wrapped; -1: all elements, flattened */
  /* the index CPU's kernel reports for a slice of NaNs only
   * (std::nth_element's choice, from the slice length; the glue computes it) */
  int64_t nan_index;
} tpj_attrs_nanmedian_t;

/* aten::unique_consecutive */
typedef struct {
  int64_t dim;  /* wrapped; -1: flattened */
  int64_t runs; /* the run count, from tpj::unique_consecutive_count */
} tpj_attrs_unique_consecutive_t;

/* tpj::complex_scan (cumsum / cumprod of complex values) */
typedef struct {
  int64_t dim;     /* wrapped */
  int64_t product; /* 1: cumprod, 0: cumsum */
} tpj_attrs_complex_scan_t;

/* aten::_cummax_helper, _cummin_helper */
typedef struct {
  int64_t dim; /* wrapped */
  int64_t is_max;
} tpj_attrs_cummaxmin_t;

/* aten::isin.Tensor_Tensor */
typedef struct {
  int64_t invert;
} tpj_attrs_isin_t;

/* ---- shape (ops/shape.c) ------------------------------------------------ */

/* aten::cat */
typedef struct {
  int64_t dim; /* wrapped */
} tpj_attrs_cat_t;

/* aten::channel_shuffle */
typedef struct {
  int64_t groups;
} tpj_attrs_channel_shuffle_t;

/* aten::tril, triu: keep col - row <= diagonal (tril) or >= (triu) */
typedef struct {
  int64_t diagonal;
} tpj_attrs_tri_t;

/* aten::flip's attributes are a plain list, the dims to reverse (wrapped,
 * distinct), ctx->nattrs of them; aten::constant_pad_nd's are PyTorch's
 * pads (pairs, the last dim first; negative pads crop). */

/* aten::roll */
typedef struct {
  int64_t n; /* dims rolled; 0: the flattened tensor */
  /* n shifts, then n wrapped dims; n == 0: the one shift */
  int64_t shifts_dims[];
} tpj_attrs_roll_t;

/* reflection_pad / replication_pad (1d, 2d, 3d) */
typedef struct {
  int64_t reflect; /* 1: reflection, 0: replication */
  int64_t pads[];  /* PyTorch's pads (pairs, the last dim first), nattrs - 1 */
} tpj_attrs_edge_pad_t;

/* their backward */
typedef struct {
  int64_t reflect;
  int64_t compute; /* tpj_dtype_t */
  int64_t pads[];  /* nattrs - 2 */
} tpj_attrs_edge_pad_backward_t;

/* ---- index (ops/index.c, ops/index_gather.c) ---------------------------- */

/* How a scatter combines an update with what is there. */
typedef enum {
  TPJ_SCATTER_SET = 0,
  TPJ_SCATTER_SUM = 1,
  TPJ_SCATTER_PROD = 2,
  TPJ_SCATTER_MEAN = 3,
  TPJ_SCATTER_AMAX = 4,
  TPJ_SCATTER_AMIN = 5,
} tpj_scatter_mode_t;

/* aten::index_select, aten::gather */
typedef struct {
  int64_t dim; /* wrapped */
} tpj_attrs_index_dim_t;

/* aten::embedding_dense_backward */
typedef struct {
  int64_t padding_idx; /* < 0: none */
  int64_t compute;     /* tpj_dtype_t the rows are summed in */
} tpj_attrs_embedding_backward_t;

/* the scatter family (scatter, scatter_add, scatter_reduce) */
typedef struct {
  int64_t dim;  /* wrapped */
  int64_t mode; /* tpj_scatter_mode_t */
  int64_t include_self;
} tpj_attrs_scatter_t;

/* aten::index.Tensor and aten::take's attributes are a plain list: the dims
 * the index tensors index, ascending, one per index tensor. */

/* aten::index_put */
typedef struct {
  int64_t accumulate;
  int64_t dims[]; /* the indexed dims, ascending, one per index tensor */
} tpj_attrs_index_put_t;

/* index_add, index_copy, index_fill */
typedef struct {
  int64_t dim;  /* wrapped */
  int64_t mode; /* TPJ_SCATTER_SET or TPJ_SCATTER_SUM */
} tpj_attrs_index_along_t;

/* tpj::index_out_of_range: true when some index lies outside [lo, hi) */
typedef struct {
  int64_t lo;
  int64_t hi;
} tpj_attrs_index_range_t;

/* aten::nonzero_static */
typedef struct {
  int64_t fill_value; /* the rows past the nonzero elements */
} tpj_attrs_nonzero_static_t;

/* ---- pool (ops/pool.c; the 2-D pools in ops/conv.c) -------------------- */

/* aten::max_pool2d_with_indices */
typedef struct {
  int64_t kernel[2]; /* (h, w), as the other pairs */
  int64_t stride[2];
  int64_t padding[2];
  int64_t dilation[2];
} tpj_attrs_max_pool2d_t;

/* aten::avg_pool2d and its backward */
typedef struct {
  int64_t kernel[2];
  int64_t stride[2];
  int64_t padding[2];
  int64_t count_include_pad;
  int64_t divisor_override; /* 0: none */
  int64_t compute;          /* tpj_dtype_t */
} tpj_attrs_avg_pool2d_t;

/* max_pool2d_with_indices_backward, _adaptive_avg_pool2d and its backward:
 * tpj_attrs_compute_t. */

/* aten::max_pool3d_with_indices */
typedef struct {
  int64_t nsp;       /* spatial dims */
  int64_t windows[]; /* nsp each of kernel, stride, padding, dilation */
} tpj_attrs_max_pool_t;

/* aten::avg_pool3d and its backward */
typedef struct {
  int64_t nsp;
  /* nsp each of kernel, stride, padding, then tpj_attrs_avg_pool_end_t */
  int64_t windows[];
} tpj_attrs_avg_pool_t;
typedef struct {
  int64_t count_include_pad;
  int64_t divisor_override; /* 0: none */
  int64_t compute;          /* tpj_dtype_t */
} tpj_attrs_avg_pool_end_t;

/* adaptive_max_pool2d / 3d */
typedef struct {
  int64_t nsp;
} tpj_attrs_adaptive_max_pool_t;

/* The backward of max_pool3d and of the adaptive max pools (the indices say
 * where), _adaptive_avg_pool3d and its backward */
typedef struct {
  int64_t compute; /* tpj_dtype_t */
  int64_t nsp;
} tpj_attrs_pool_planes_t;

/* ---- conv (ops/conv.c) -------------------------------------------------- */

/* aten::convolution and convolution_backward: this head, nsp each of
 * stride, padding, dilation, output_padding (windows[]), then
 * tpj_attrs_conv_bias_t (forward) or tpj_attrs_conv_mask_t (backward). */
typedef struct {
  int64_t compute; /* tpj_dtype_t */
  int64_t transposed;
  int64_t groups;
  int64_t nsp; /* spatial dims, 1 to 3 */
  int64_t windows[];
} tpj_attrs_conv_t;
typedef struct {
  int64_t has_bias; /* the bias is in[2] */
  int64_t zero[2];
} tpj_attrs_conv_bias_t;
typedef struct {
  int64_t mask[3]; /* output mask: grad input, grad weight, grad bias */
} tpj_attrs_conv_mask_t;

/* ---- loss (ops/loss.c) -------------------------------------------------- */

/* nll_loss, nll_loss2d and their backward */
typedef struct {
  int64_t compute;   /* tpj_dtype_t */
  int64_t reduction; /* 0 none, 1 mean, 2 sum */
  int64_t ignore_index;
  int64_t has_weight;
} tpj_attrs_nll_loss_t;

/* ---- loss_margin (ops/loss_margin.c) ------------------------------------ */

/* multi_margin_loss and its backward */
typedef struct {
  int64_t compute;   /* tpj_dtype_t */
  int64_t reduction; /* 0 none, 1 mean, 2 sum */
  int64_t p;         /* 1 or 2 */
  int64_t has_weight;
} tpj_attrs_multi_margin_t;

/* multilabel_margin_loss_forward and its backward */
typedef struct {
  int64_t compute;
  int64_t reduction;
} tpj_attrs_multilabel_margin_t;

/* ---- linalg (ops/linalg.c, ops/linalg_decomp.c) ------------------------ */

/* aten::mm, bmm, mv, dot: tpj_attrs_compute_t (the lowering computes in the
 * output's dtype). aten::addmm, addmv, baddbmm: */
typedef struct {
  int64_t compute;   /* tpj_dtype_t */
  int64_t has_bias;  /* beta != 0: beta * in[0] is added */
  int64_t has_beta;  /* beta != 1: a runtime scalar, in[3] */
  int64_t has_alpha; /* alpha != 1: a runtime scalar, in[4] (in[3] without beta) */
} tpj_attrs_addmm_t;

/* aten::linalg_cross */
typedef struct {
  int64_t dim; /* wrapped, of the broadcast shape */
} tpj_attrs_linalg_cross_t;

/* aten::linalg_matrix_exp */
typedef struct {
  /* the squarings s: the glue picks the smallest with ||A||_1 / 2^s <= 1
   * over the batch */
  int64_t squarings;
  int64_t compute; /* tpj_dtype_t */
} tpj_attrs_matrix_exp_t;

/* aten::_grouped_mm */
typedef struct {
  int64_t layout; /* 0: a 2-D x b 3-D with offs, 1: batched, 2: a 2-D x b 2-D with offs */
  int64_t has_bias;
  int64_t compute; /* tpj_dtype_t the products accumulate in */
} tpj_attrs_grouped_mm_t;

/* linalg_cholesky_ex (optional: no attribute reads the lower triangle),
 * _cholesky_solve_helper, cholesky_inverse */
typedef struct {
  int64_t upper; /* the factor is upper triangular (A's upper triangle is read) */
} tpj_attrs_cholesky_t;

/* aten::linalg_solve_triangular */
typedef struct {
  int64_t upper;
  int64_t left;
  int64_t unitriangular;
} tpj_attrs_solve_triangular_t;

/* aten::triangular_solve */
typedef struct {
  int64_t upper;
  int64_t transpose;
  int64_t unitriangular;
} tpj_attrs_triangular_solve_t;

/* aten::lu_unpack */
typedef struct {
  int64_t unpack_data;
  int64_t unpack_pivots;
} tpj_attrs_lu_unpack_t;

/* aten::linalg_lu_solve */
typedef struct {
  int64_t left;
  int64_t adjoint;
} tpj_attrs_lu_solve_t;

/* aten::_linalg_solve_ex */
typedef struct {
  int64_t left;
  int64_t vector_case; /* B is a vector (PyTorch's linalg_solve_is_vector_rhs) */
} tpj_attrs_solve_ex_t;

/* aten::_linalg_det, _linalg_slogdet (optional: no attribute factors A) */
typedef struct {
  /* factor A^T, as CPU's kernels do for a contiguous A (the backward
   * formulas read the LU they return that way) */
  int64_t transposed;
} tpj_attrs_det_t;

/* aten::linalg_qr */
typedef struct {
  int64_t mode; /* 0 reduced, 1 complete, 2 r */
} tpj_attrs_qr_t;

/* aten::_linalg_eigh (eigenvalues only) */
typedef struct {
  int64_t lower; /* UPLO 'L' */
} tpj_attrs_eigh_t;

/* ---- reduction_stats (ops/reduction_stats.c) ---------------------------- */

/* var, std, var_mean and std_mean (.correction). in[1] is the divisor
 * max(0, N - correction), a 0-d runtime scalar of the real compute dtype. */
typedef struct {
  int64_t compute; /* tpj_dtype_t */
  int64_t is_std;
  int64_t ndims;   /* dims reduced: wrapped, sorted, distinct; every dim when none named */
  int64_t dims[];
} tpj_attrs_var_t;

/* aten::logsumexp */
typedef struct {
  int64_t compute;
  int64_t zero; /* 0 (the word var's is_std takes) */
  int64_t ndims;
  int64_t dims[];
} tpj_attrs_logsumexp_t;

/* The order of a vector norm: p (in[1], a 0-d runtime scalar of the compute
 * dtype) or one of the orders computed on their own. */
typedef enum {
  TPJ_NORM_P = 0,
  TPJ_NORM_ZERO,
  TPJ_NORM_ONE,
  TPJ_NORM_TWO,
  TPJ_NORM_INF,
  TPJ_NORM_NEG_INF,
} tpj_norm_kind_t;

/* aten::linalg_vector_norm */
typedef struct {
  int64_t compute;
  int64_t kind; /* tpj_norm_kind_t */
  int64_t ndims;
  int64_t dims[];
} tpj_attrs_vector_norm_t;

/* ---- fold (ops/fold.c) -------------------------------------------------- */

/* aten::im2col (PyTorch's kernel_size, dilation, padding, stride) */
typedef struct {
  int64_t kernel[2]; /* (h, w), as the other pairs */
  int64_t dilation[2];
  int64_t padding[2];
  int64_t stride[2];
} tpj_attrs_im2col_t;

/* aten::col2im */
typedef struct {
  tpj_attrs_im2col_t window;
  int64_t compute; /* tpj_dtype_t */
} tpj_attrs_col2im_t;

/* aten::unfold_backward */
typedef struct {
  int64_t dim; /* wrapped */
  int64_t size;
  int64_t step;
  int64_t compute; /* tpj_dtype_t */
} tpj_attrs_unfold_backward_t;

/* max_unpool2d / 3d */
typedef struct {
  int64_t nsp; /* spatial dims */
} tpj_attrs_max_unpool_t;

/* ---- upsample (ops/upsample.c, upsample_bicubic.c, upsample_aa.c) ------ */

/* The user's scale factor along one spatial dim. */
typedef struct {
  int64_t has_scale;
  int64_t bits; /* the IEEE-754 bits of the scale (a double) */
} tpj_attrs_scale_t;

/* F.interpolate's modes in ops/upsample.c */
typedef enum {
  TPJ_UPSAMPLE_NEAREST = 0,
  TPJ_UPSAMPLE_NEAREST_EXACT = 1,
  TPJ_UPSAMPLE_LINEAR = 2,
} tpj_upsample_mode_t;

/* upsample_{nearest,linear,bilinear,trilinear}*, _upsample_nearest_exact*
 * and their backward */
typedef struct {
  int64_t compute; /* tpj_dtype_t */
  int64_t mode;    /* tpj_upsample_mode_t */
  int64_t align_corners;
  int64_t nsp;                /* spatial dims, 1 to 3 */
  tpj_attrs_scale_t scales[]; /* one per spatial dim */
} tpj_attrs_upsample_t;

/* upsample_bicubic2d and its backward */
typedef struct {
  int64_t compute; /* tpj_dtype_t */
  int64_t align_corners;
  tpj_attrs_scale_t scales[2]; /* H, W */
} tpj_attrs_upsample_bicubic_t;

/* _upsample_{bilinear,bicubic}2d_aa and their backward */
typedef struct {
  int64_t compute; /* TPJ_F32 or TPJ_F64 */
  int64_t bicubic; /* 1: bicubic, 0: bilinear */
  int64_t align_corners;
  tpj_attrs_scale_t scales[2]; /* H, W */
} tpj_attrs_upsample_aa_t;

/* ---- sampling (ops/sampling.c) ------------------------------------------ */

/* grid_sampler's interpolation modes (PyTorch's GridSamplerInterpolation) */
typedef enum {
  TPJ_GS_BILINEAR = 0,
  TPJ_GS_NEAREST = 1,
  TPJ_GS_BICUBIC = 2,
} tpj_grid_sample_mode_t;

/* grid_sampler_2d / 3d */
typedef struct {
  int64_t compute;       /* TPJ_F32 or TPJ_F64 */
  int64_t interpolation; /* tpj_grid_sample_mode_t */
  int64_t padding;       /* 0 zeros, 1 border, 2 reflection */
  int64_t align_corners;
} tpj_attrs_grid_sampler_t;

/* grid_sampler_2d_backward / 3d_backward */
typedef struct {
  tpj_attrs_grid_sampler_t sampler;
  int64_t want_input; /* the input's gradient is an output */
} tpj_attrs_grid_sampler_backward_t;

/* ---- random (ops/random.c) ---------------------------------------------- */

/* aten::random_ (from, range as runtime scalars) */
typedef struct {
  /* the random bits drawn: 0 when range < 2^32 (32 bits modulo range, like
   * CPU), 1 when range < 2^63 (63 bits modulo range), 2 otherwise (64 bits,
   * less range once when they reach it) */
  int64_t mode;
} tpj_attrs_random_t;

/* native_dropout and its backward: tpj_attrs_compute_t. */

/* aten::multinomial */
typedef struct {
  int64_t replacement; /* with replacement and more than one sample (the glue's sampling kernel) */
} tpj_attrs_multinomial_t;

/* ---- fft (ops/fft.c) ---------------------------------------------------- */

/* _fft_c2c, _fft_r2c and _fft_c2r: the three layouts differ in their second
 * word only. */
typedef struct {
  int64_t norm;    /* PyTorch's fft_norm_mode: 0 none, 1 1/sqrt(n), 2 1/n */
  int64_t forward;
  int64_t conj;    /* the input is a conjugate view, read as its stored values */
  int64_t ndims;
  int64_t dims[];  /* wrapped */
} tpj_attrs_fft_c2c_t;
typedef struct {
  int64_t norm;
  int64_t onesided;
  int64_t conj;
  int64_t ndims;
  int64_t dims[];
} tpj_attrs_fft_r2c_t;
typedef struct {
  int64_t norm;
  int64_t last_dim_size;
  int64_t conj;
  int64_t ndims;
  int64_t dims[];
} tpj_attrs_fft_c2r_t;

/* ---- create (ops/create.c) ---------------------------------------------- */

/* arange (compute: CPU's accumulate type, double for float32, float for
 * half types, int64 for integers) and linspace (compute: the step's dtype,
 * double for integer outputs): tpj_attrs_compute_t. */

/* aten::tril_indices, triu_indices */
typedef struct {
  int64_t rows;
  int64_t cols;
  int64_t offset;
  int64_t upper; /* triu_indices */
} tpj_attrs_tri_indices_t;

/* ---- distance (ops/distance.c) ------------------------------------------ */

/* The norm of a p-norm distance, as CPU's kernels dispatch on p */
typedef enum {
  TPJ_DIST_ZERO = 0,
  TPJ_DIST_ONE,
  TPJ_DIST_TWO,
  TPJ_DIST_INF,
  TPJ_DIST_P, /* any other p: a runtime scalar, the last operand */
} tpj_dist_kind_t;

/* _cdist_forward / _cdist_backward, _pdist_forward / _pdist_backward */
typedef struct {
  int64_t compute; /* tpj_dtype_t */
  int64_t kind;    /* tpj_dist_kind_t */
} tpj_attrs_dist_t;

#ifdef __cplusplus
}
#endif
#endif /* TPJ_OPS_ATTRS_H_ */
