/* hlo/conv: emitters for the convolution and pooling family —
 * stablehlo.convolution with explicit dimension numbers, stablehlo.reverse,
 * and stablehlo.pad with interior (dilation) and negative (cropping) edges.
 * Same conventions as builder.h: checked, sticky failures, generic syntax. */
#ifndef TPJ_HLO_CONV_H_
#define TPJ_HLO_CONV_H_

#include "hlo/builder.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TPJ_HLO_CONV_MAX_SPATIAL 3

/* Everything stablehlo.convolution takes besides its two operands. Each
 * *_spatial array has nsp entries naming dims of lhs / rhs / result. */
typedef struct {
  int nsp;
  int64_t in_batch, in_feature, in_spatial[TPJ_HLO_CONV_MAX_SPATIAL];
  int64_t k_in, k_out, k_spatial[TPJ_HLO_CONV_MAX_SPATIAL];
  int64_t out_batch, out_feature, out_spatial[TPJ_HLO_CONV_MAX_SPATIAL];
  int64_t stride[TPJ_HLO_CONV_MAX_SPATIAL];
  int64_t pad_lo[TPJ_HLO_CONV_MAX_SPATIAL], pad_hi[TPJ_HLO_CONV_MAX_SPATIAL];
  int64_t lhs_dil[TPJ_HLO_CONV_MAX_SPATIAL], rhs_dil[TPJ_HLO_CONV_MAX_SPATIAL];
  int64_t feature_groups, batch_groups;
} tpj_hlo_conv_t;

/* The standard layout for nsp spatial dims: lhs and result (N, C, spatial...),
 * rhs (O, I, spatial...); strides and dilations 1, no padding, one group. */
void tpj_hlo_conv_init(tpj_hlo_conv_t* c, int nsp);

/* stablehlo.convolution of lhs (input) and rhs (kernel), same dtype; the
 * result (of out_dtype) has the size the spec implies. Pads must be >= 0:
 * crop first with tpj_hlo_emit_pad_general. */
tpj_hlo_value_t tpj_hlo_emit_convolution(tpj_hlo_builder_t* b, tpj_hlo_value_t lhs,
                                         tpj_hlo_value_t rhs, const tpj_hlo_conv_t* c,
                                         tpj_dtype_t out_dtype);


#ifdef __cplusplus
}
#endif
#endif /* TPJ_HLO_CONV_H_ */
