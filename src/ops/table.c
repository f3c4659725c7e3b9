/* The lowering table: sorted by name, searched by bisection. */
#include <string.h>

#include "ops/ops.h"

static const tpj_op_def_t kOps[] = {
    {"aten::_log_softmax", tpj_lower_log_softmax},
    {"aten::_log_softmax_backward_data", tpj_lower_log_softmax_backward},
    {"aten::_softmax", tpj_lower_softmax},
    {"aten::_softmax_backward_data", tpj_lower_softmax_backward},
    {"aten::abs", tpj_lower_abs},
    {"aten::add.Scalar", tpj_lower_add_tensor},
    {"aten::add.Tensor", tpj_lower_add_tensor},
    {"aten::addcdiv", tpj_lower_addcdiv},
    {"aten::addcmul", tpj_lower_addcmul},
    {"aten::addmm", tpj_lower_addmm},
    {"aten::addmv", tpj_lower_addmm},
    {"aten::all.dims", tpj_lower_all},
    {"aten::amax", tpj_lower_amax},
    {"aten::amin", tpj_lower_amin},
    {"aten::any.dims", tpj_lower_any},
    {"aten::baddbmm", tpj_lower_addmm},
    {"aten::bmm", tpj_lower_mm},
    {"aten::cat", tpj_lower_cat},
    {"aten::clamp", tpj_lower_clamp},
    {"aten::clamp_max", tpj_lower_clamp},
    {"aten::clamp_min", tpj_lower_clamp},
    {"aten::cos", tpj_lower_cos},
    {"aten::div.Scalar", tpj_lower_div_tensor},
    {"aten::div.Tensor", tpj_lower_div_tensor},
    {"aten::dot", tpj_lower_mm},
    {"aten::embedding_dense_backward", tpj_lower_embedding_backward},
    {"aten::eq.Scalar", tpj_lower_eq},
    {"aten::eq.Tensor", tpj_lower_eq},
    {"aten::exp", tpj_lower_exp},
    {"aten::expm1", tpj_lower_expm1},
    {"aten::gather", tpj_lower_gather},
    {"aten::ge.Scalar", tpj_lower_ge},
    {"aten::ge.Tensor", tpj_lower_ge},
    {"aten::gelu", tpj_lower_gelu},
    {"aten::gelu_backward", tpj_lower_gelu_backward},
    {"aten::gt.Scalar", tpj_lower_gt},
    {"aten::gt.Tensor", tpj_lower_gt},
    {"aten::index.Tensor", tpj_lower_index},
    {"aten::index_add", tpj_lower_index_along},
    {"aten::index_copy", tpj_lower_index_along},
    {"aten::index_fill.int_Scalar", tpj_lower_index_along},
    {"aten::index_put", tpj_lower_index_put},
    {"aten::index_select", tpj_lower_index_select},
    {"aten::le.Scalar", tpj_lower_le},
    {"aten::le.Tensor", tpj_lower_le},
    {"aten::lerp.Scalar", tpj_lower_lerp},
    {"aten::lerp.Tensor", tpj_lower_lerp},
    {"aten::log", tpj_lower_log},
    {"aten::log1p", tpj_lower_log1p},
    {"aten::lt.Scalar", tpj_lower_lt},
    {"aten::lt.Tensor", tpj_lower_lt},
    {"aten::masked_fill.Scalar", tpj_lower_masked_fill},
    {"aten::masked_fill.Tensor", tpj_lower_masked_fill},
    {"aten::maximum", tpj_lower_maximum},
    {"aten::mean.dim", tpj_lower_mean},
    {"aten::minimum", tpj_lower_minimum},
    {"aten::mm", tpj_lower_mm},
    {"aten::mul.Scalar", tpj_lower_mul_tensor},
    {"aten::mul.Tensor", tpj_lower_mul_tensor},
    {"aten::mv", tpj_lower_mm},
    {"aten::native_layer_norm", tpj_lower_layer_norm},
    {"aten::native_layer_norm_backward", tpj_lower_layer_norm_backward},
    {"aten::ne.Scalar", tpj_lower_ne},
    {"aten::ne.Tensor", tpj_lower_ne},
    {"aten::neg", tpj_lower_neg},
    {"aten::nll_loss_backward", tpj_lower_nll_loss_backward},
    {"aten::nll_loss_forward", tpj_lower_nll_loss},
    {"aten::nonzero", tpj_lower_nonzero},
    {"aten::nonzero_static", tpj_lower_nonzero_static},
    {"aten::pow.Tensor_Scalar", tpj_lower_pow},
    {"aten::pow.Tensor_Tensor", tpj_lower_pow},
    {"aten::prod.dim_int", tpj_lower_prod},
    {"aten::relu", tpj_lower_relu},
    {"aten::rsqrt", tpj_lower_rsqrt},
    {"aten::scatter.reduce", tpj_lower_scatter},
    {"aten::scatter.src", tpj_lower_scatter},
    {"aten::scatter.value", tpj_lower_scatter},
    {"aten::scatter.value_reduce", tpj_lower_scatter},
    {"aten::scatter_add", tpj_lower_scatter},
    {"aten::scatter_reduce.two", tpj_lower_scatter},
    {"aten::sigmoid", tpj_lower_sigmoid},
    {"aten::sin", tpj_lower_sin},
    {"aten::sqrt", tpj_lower_sqrt},
    {"aten::sub.Scalar", tpj_lower_sub_tensor},
    {"aten::sub.Tensor", tpj_lower_sub_tensor},
    {"aten::sum.dim_IntList", tpj_lower_sum},
    {"aten::take", tpj_lower_index},
    {"aten::tanh", tpj_lower_tanh},
    {"aten::threshold_backward", tpj_lower_threshold_backward},
    {"aten::where.self", tpj_lower_where},
    {"tpj::count_nonzero", tpj_lower_count_nonzero},
    {"tpj::full", tpj_lower_full},
    {"tpj::view_copy", tpj_lower_view_copy},
    {"tpj::write_view", tpj_lower_write_view},
};

int tpj_ops_count(void) { return (int)(sizeof(kOps) / sizeof(kOps[0])); }

const tpj_op_def_t* tpj_ops_at(int i) {
  return (i >= 0 && i < tpj_ops_count()) ? &kOps[i] : NULL;
}

const tpj_op_def_t* tpj_ops_lookup(const char* name) {
  int lo = 0, hi = tpj_ops_count() - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    int c = strcmp(name, kOps[mid].name);
    if (c == 0) return &kOps[mid];
    if (c < 0) hi = mid - 1;
    else lo = mid + 1;
  }
  return NULL;
}
