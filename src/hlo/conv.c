/* hlo/conv: stablehlo.convolution, reverse and general pad (see conv.h).
 * The convolution's dimension numbers are printed in StableHLO's "raw"
 * attribute form, which names every dim explicitly, so backward passes can
 * use layouts (batch as feature, spatial as kernel) the short form cannot. */
#include "hlo/conv.h"

#include "hlo/internal.h"

static tpj_hlo_value_t tpj_conv_fail(tpj_hlo_builder_t* b, const char* msg) {
  tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "convolution: %s", msg));
  return tpj_hlo_kInvalid;
}

void tpj_hlo_conv_init(tpj_hlo_conv_t* c, int nsp) {
  c->nsp = nsp;
  c->in_batch = c->out_batch = 0;
  c->in_feature = c->out_feature = 1;
  c->k_out = 0;
  c->k_in = 1;
  for (int i = 0; i < TPJ_HLO_CONV_MAX_SPATIAL; ++i) {
    c->in_spatial[i] = c->k_spatial[i] = c->out_spatial[i] = 2 + i;
    c->stride[i] = c->lhs_dil[i] = c->rhs_dil[i] = 1;
    c->pad_lo[i] = c->pad_hi[i] = 0;
  }
  c->feature_groups = c->batch_groups = 1;
}

/* 1 when the nsp + 2 dims named are a permutation of 0..nsp+1. */
static int tpj_conv_perm_ok(int64_t a, int64_t b, const int64_t* sp, int nsp) {
  int seen[TPJ_HLO_CONV_MAX_SPATIAL + 2] = {0};
  int64_t all[TPJ_HLO_CONV_MAX_SPATIAL + 2];
  all[0] = a;
  all[1] = b;
  for (int i = 0; i < nsp; ++i) all[2 + i] = sp[i];
  for (int i = 0; i < nsp + 2; ++i) {
    if (all[i] < 0 || all[i] >= nsp + 2 || seen[all[i]]) return 0;
    seen[all[i]] = 1;
  }
  return 1;
}

tpj_hlo_value_t tpj_hlo_emit_convolution(tpj_hlo_builder_t* b, tpj_hlo_value_t lhs,
                                         tpj_hlo_value_t rhs, const tpj_hlo_conv_t* c,
                                         tpj_dtype_t out_dtype) {
  if (!tpj_hlo_check_valid(b, &lhs) || !tpj_hlo_check_valid(b, &rhs)) return tpj_hlo_kInvalid;
  int nsp = c->nsp, rank = c->nsp + 2;
  if (nsp < 1 || nsp > TPJ_HLO_CONV_MAX_SPATIAL || lhs.ndim != rank || rhs.ndim != rank)
    return tpj_conv_fail(b, "operand ranks do not match the spatial dims");
  if (lhs.dtype != rhs.dtype) return tpj_conv_fail(b, "operand dtypes differ");
  if (!tpj_conv_perm_ok(c->in_batch, c->in_feature, c->in_spatial, nsp) ||
      !tpj_conv_perm_ok(c->k_in, c->k_out, c->k_spatial, nsp) ||
      !tpj_conv_perm_ok(c->out_batch, c->out_feature, c->out_spatial, nsp))
    return tpj_conv_fail(b, "bad dimension numbers");
  int64_t fg = c->feature_groups, bg = c->batch_groups;
  if (fg < 1 || bg < 1 || (fg > 1 && bg > 1)) return tpj_conv_fail(b, "bad group counts");
  if (lhs.dims[c->in_feature] != rhs.dims[c->k_in] * fg || rhs.dims[c->k_out] % fg != 0 ||
      rhs.dims[c->k_out] % bg != 0 || lhs.dims[c->in_batch] % bg != 0)
    return tpj_conv_fail(b, "feature or batch sizes do not match the groups");
  int64_t out[TPJ_MAX_DIMS];
  out[c->out_batch] = lhs.dims[c->in_batch] / bg;
  out[c->out_feature] = rhs.dims[c->k_out];
  for (int i = 0; i < nsp; ++i) {
    if (c->stride[i] < 1 || c->lhs_dil[i] < 1 || c->rhs_dil[i] < 1 || c->pad_lo[i] < 0 ||
        c->pad_hi[i] < 0)
      return tpj_conv_fail(b, "strides and dilations must be positive, pads non-negative");
    int64_t in = lhs.dims[c->in_spatial[i]], k = rhs.dims[c->k_spatial[i]];
    int64_t din = in ? (in - 1) * c->lhs_dil[i] + 1 : 0;
    int64_t dk = k ? (k - 1) * c->rhs_dil[i] + 1 : 0;
    int64_t padded = din + c->pad_lo[i] + c->pad_hi[i];
    out[c->out_spatial[i]] = (padded < dk || k == 0) ? 0 : (padded - dk) / c->stride[i] + 1;
  }
  tpj_hlo_value_t r = tpj_hlo_new_value(b, out_dtype, out, rank);
  const tpj_hlo_value_t* ops[2] = {&lhs, &rhs};
  tpj_hlo_begin_op(b, &r, "stablehlo.convolution", ops, 2);
  tpj_strbuf_t* sb = &b->body;
  tpj_strbuf_printf(sb, " {batch_group_count = %lld : i64, dimension_numbers = "
                    "#stablehlo.conv<raw input_batch_dimension = %lld, input_feature_dimension = "
                    "%lld, input_spatial_dimensions = ",
                    (long long)bg, (long long)c->in_batch, (long long)c->in_feature);
  tpj_hlo_print_i64_list(sb, c->in_spatial, nsp);
  tpj_strbuf_printf(sb, ", kernel_input_feature_dimension = %lld, "
                    "kernel_output_feature_dimension = %lld, kernel_spatial_dimensions = ",
                    (long long)c->k_in, (long long)c->k_out);
  tpj_hlo_print_i64_list(sb, c->k_spatial, nsp);
  tpj_strbuf_printf(sb, ", output_batch_dimension = %lld, output_feature_dimension = %lld, "
                    "output_spatial_dimensions = ",
                    (long long)c->out_batch, (long long)c->out_feature);
  tpj_hlo_print_i64_list(sb, c->out_spatial, nsp);
  tpj_strbuf_printf(sb, ">, feature_group_count = %lld : i64, lhs_dilation = ", (long long)fg);
  tpj_hlo_print_i64_array(sb, c->lhs_dil, nsp);
  tpj_strbuf_puts(sb, ", padding = dense<[");
  for (int i = 0; i < nsp; ++i)
    tpj_strbuf_printf(sb, "%s[%lld, %lld]", i ? ", " : "", (long long)c->pad_lo[i],
                      (long long)c->pad_hi[i]);
  tpj_strbuf_printf(sb, "]> : tensor<%dx2xi64>, rhs_dilation = ", nsp);
  tpj_hlo_print_i64_array(sb, c->rhs_dil, nsp);
  tpj_strbuf_puts(sb, ", window_strides = ");
  tpj_hlo_print_i64_array(sb, c->stride, nsp);
  tpj_hlo_print_precision(sb, lhs.dtype);
  tpj_strbuf_puts(sb, "}");
  tpj_hlo_end_op(b, &r, ops, 2);
  return r;
}

