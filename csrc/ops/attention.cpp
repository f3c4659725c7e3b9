// Kernel glue for PyTorch's fused transformer inference ops, the "fast path"
// nn.MultiheadAttention and nn.TransformerEncoderLayer take in eval mode
// without autograd (torchvision's ViT, any nn.TransformerEncoder at
// inference): _native_multi_head_attention, _masked_softmax and
// _transformer_encoder_layer_fwd. Each is composed of ops this backend
// lowers natively (linear, bmm, softmax, layer_norm, ...), in the order and
// with the rounding points of CPU's kernels (aten/src/ATen/native/
// transformers), so none of them runs on the CPU. Under torch.compile the
// same ops are traced into one graph.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cmath>
#include <limits>

#include "runtime.h"
#include "glue.h"
#include "tensor.h"

extern "C" {
#include "ops/attrs.h"
#include "ops/paged.h"
}

namespace torch_pjrt {
namespace {

using at::Tensor;
using OptTensor = std::optional<Tensor>;

// The mask as a boolean (true: masked out) broadcast to the scores
// (B, H, L, S): mask_type 0 is one (L, S) mask for every batch and head,
// 1 a (B, S) key-padding mask, anything else a mask that broadcasts.
Tensor expand_mask(const Tensor& mask, const Tensor& scores, std::optional<int64_t> mask_type) {
  Tensor m = mask.scalar_type() == at::kBool ? mask : mask.to(at::kBool);
  if (mask_type == 1 && scores.dim() == 4) {
    TORCH_CHECK(m.dim() == 2 && m.size(0) == scores.size(0) && m.size(1) == scores.size(3),
                "For mask_type == 1 mask shape should be (B, L)");
    m = m.view({m.size(0), 1, 1, m.size(1)});
  } else if (mask_type == 0) {
    TORCH_CHECK(m.dim() == 2 && m.size(0) == scores.size(-2) && m.size(1) == scores.size(-1),
                "For mask_type == 0 mask shape should be (L, L)");
  }
  return m.expand(scores.sizes());
}

// Softmax over `dim` with masked positions excluded; a row with every
// position masked is NaN, as CPU's kernel gives.
Tensor masked_softmax(const Tensor& scores, const Tensor& mask, std::optional<int64_t> dim,
                      std::optional<int64_t> mask_type) {
  TORCH_CHECK(scores.is_floating_point(), "masked_softmax: expected a floating input, got ",
              scores.scalar_type());
  int64_t d = dim.value_or(scores.dim() - 1);
  Tensor filled = scores.masked_fill(expand_mask(mask, scores, mask_type),
                                     -std::numeric_limits<double>::infinity());
  return at::softmax(filled, d);
}

// CPU's argument checks for _native_multi_head_attention, in its words.
void check_mha(const Tensor& query, const Tensor& key, const Tensor& value, int64_t D,
               int64_t num_head, const Tensor& qkv_weight, const Tensor& qkv_bias) {
  TORCH_CHECK(query.dim() == 3, "expected 3-D `query`, got ", query.dim(), "-D tensor");
  TORCH_CHECK(query.size(2) == D, "passed-in embed_dim ", D, " didn't match last dim of query ",
              query.size(2));
  TORCH_CHECK(key.dim() == 3, "expected 3-D `key`, got ", key.dim(), "-D tensor");
  TORCH_CHECK(value.dim() == 3, "expected 3-D `value`, got ", value.dim(), "-D tensor");
  TORCH_CHECK(query.sizes() == key.sizes() && key.sizes() == value.sizes(),
              "expected `query`/`key`/`value` shapes to match");
  TORCH_CHECK(qkv_weight.dim() == 2, "expected 2-D `qkv_weight`, got ", qkv_weight.dim(),
              "-D tensor");
  TORCH_CHECK(D * 3 == qkv_weight.size(0), "expected `qkv_weight` first dim to be 3x embed_dim");
  TORCH_CHECK(D == qkv_weight.size(1), "expected `qkv_weight` second dim to be embed_Dim");
  TORCH_CHECK(qkv_bias.dim() == 1, "expected 1-D `qkv_bias`, got ", qkv_bias.dim(), "-D tensor");
  TORCH_CHECK(qkv_bias.size(0) == 3 * D,
              "expected `qkv_bias` first dim and first dim of query to be equal");
  TORCH_CHECK(D % num_head == 0, "`embed_dim` must divide evenly by `num_heads`");
}

// (B, T, D) -> (B, H, T, D / H)
Tensor heads(const Tensor& x, int64_t num_head) {
  return x.view({x.size(0), x.size(1), num_head, x.size(2) / num_head}).transpose(1, 2);
}

std::tuple<Tensor, Tensor> native_mha(const Tensor& query, const Tensor& key, const Tensor& value,
                                      int64_t embed_dim, int64_t num_head,
                                      const Tensor& qkv_weight, const Tensor& qkv_bias,
                                      const Tensor& proj_weight, const Tensor& proj_bias,
                                      const OptTensor& mask, bool need_weights,
                                      bool average_attn_weights,
                                      std::optional<int64_t> mask_type) {
  const int64_t D = embed_dim;
  check_mha(query, key, value, D, num_head, qkv_weight, qkv_bias);
  // The projections, without bias (CPU adds it with the rescale below). One
  // product for self-attention, as CPU's kernel: rounding follows it.
  Tensor q, k, v;
  if (key.is_same(value) && query.is_same(key)) {
    auto qkv = at::matmul(query, qkv_weight.t()).chunk(3, -1);
    q = qkv[0], k = qkv[1], v = qkv[2];
  } else if (key.is_same(value)) {
    q = at::matmul(query, qkv_weight.narrow(0, 0, D).t());
    auto kv = at::matmul(key, qkv_weight.narrow(0, D, 2 * D).t()).chunk(2, -1);
    k = kv[0], v = kv[1];
  } else {
    auto w = qkv_weight.chunk(3, 0);
    q = at::matmul(query, w[0].t());
    k = at::matmul(key, w[1].t());
    v = at::matmul(value, w[2].t());
  }
  if (query.numel() == 0) return {at::empty_like(query), Tensor()};
  auto b = qkv_bias.chunk(3, 0);
  const int64_t dh = D / num_head;
  // q = (q + q_bias) / sqrt(dim_per_head): the factor rounded to the dtype,
  // as CPU computes it in scalar_t.
  double inv = 1.0 / std::sqrt(static_cast<double>(dh));
  Tensor qh = heads(at::add(q, b[0]), num_head).mul(at::scalar_tensor(inv, query.options()));
  Tensor kh = heads(at::add(k, b[1]), num_head);
  Tensor vh = heads(at::add(v, b[2]), num_head);
  Tensor scores = at::matmul(qh, kh.transpose(-2, -1));  // (B, H, T, S)
  Tensor attn = mask ? masked_softmax(scores, *mask, scores.dim() - 1, mask_type)
                     : at::softmax(scores, -1);
  Tensor ctx = at::matmul(attn, vh).transpose(1, 2).reshape({query.size(0), query.size(1), D});
  Tensor out = at::linear(ctx, proj_weight, proj_bias);
  if (!need_weights) return {out, Tensor()};
  if (average_attn_weights) attn = attn.sum(1).div_(num_head);
  return {out, attn};
}

Tensor encoder_layer_fwd(const Tensor& src, int64_t embed_dim, int64_t num_heads,
                         const Tensor& qkv_weight, const Tensor& qkv_bias,
                         const Tensor& proj_weight, const Tensor& proj_bias, bool use_gelu,
                         bool norm_first, double eps, const Tensor& norm_weight_1,
                         const Tensor& norm_bias_1, const Tensor& norm_weight_2,
                         const Tensor& norm_bias_2, const Tensor& ffn_weight_1,
                         const Tensor& ffn_bias_1, const Tensor& ffn_weight_2,
                         const Tensor& ffn_bias_2, const OptTensor& mask,
                         std::optional<int64_t> mask_type) {
  TORCH_CHECK(!src.is_nested(), "_transformer_encoder_layer_fwd: nested tensors are not "
              "supported on tpu (pass enable_nested_tensor=False to nn.TransformerEncoder)");
  auto norm = [&](const Tensor& x, const Tensor& w, const Tensor& b) {
    return at::layer_norm(x, {embed_dim}, w, b, eps);
  };
  Tensor x = norm_first ? norm(src, norm_weight_1, norm_bias_1) : src;
  x = std::get<0>(native_mha(x, x, x, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight,
                             proj_bias, mask, false, true, mask_type));
  x = x.add(src);
  if (!norm_first) x = norm(x, norm_weight_1, norm_bias_1);
  Tensor residual = x;
  Tensor h = norm_first ? norm(x, norm_weight_2, norm_bias_2) : x;
  h = at::linear(h, ffn_weight_1, ffn_bias_1);
  h = use_gelu ? at::gelu(h) : at::relu(h);
  h = at::linear(h, ffn_weight_2, ffn_bias_2);
  x = h.add(residual);
  if (!norm_first) x = norm(x, norm_weight_2, norm_bias_2);
  return x;
}

// nn.TransformerEncoder (enable_nested_tensor=True, the default) turns its
// input into a nested tensor in eval mode when given src_key_padding_mask.
// tpu has no nested tensors: say so, and how to avoid it, instead of the
// dispatcher's message about a missing NestedTensor kernel further on.
Tensor nested_from_mask(const Tensor& t, const Tensor& mask, bool mask_check) {
  (void)t, (void)mask, (void)mask_check;
  TORCH_CHECK_NOT_IMPLEMENTED(false, "nested tensors are not supported on tpu: "
                              "nn.TransformerEncoder makes one from src_key_padding_mask in eval "
                              "mode; build it with enable_nested_tensor=False");
}

// The check nn.TransformerEncoder runs before that: is every row of the
// (B, T) keep-mask a run of trues followed by falses (no false before a
// true)? Computed on the device, one value read back.
bool nested_mask_left_aligned(const Tensor& t, const Tensor& mask) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "mask must be a bool tensor");
  TORCH_CHECK(mask.dim() == 2, "mask must be 2-D, got ", mask.dim(), "-D");
  TORCH_CHECK(t.dim() >= 1 && t.size(0) == mask.size(0), "mask and input batch sizes differ");
  int64_t n = mask.size(1);
  if (n < 2) return true;
  return at::all(mask.narrow(1, 1, n - 1).le(mask.narrow(1, 0, n - 1))).item<bool>();
}


// torch.nn.attention.varlen's ops (torch_attn::_varlen_attn and
// _varlen_attn_backward; TorchTitan's "varlen" attention calls them): the
// lowering in src/ops/attention.c computes the per-document masked attention
// and its log-sum-exp in one program. Their defaults call
// aten::_flash_attention_forward, which has no CPU kernel. The paged-KV
// (block_table, seqused_k) and split-KV arguments are inference-only and
// refused here, by name.
constexpr const char* kVarlen = "torch_attn::_varlen_attn";
constexpr const char* kVarlenBwd = "torch_attn::_varlen_attn_backward";

void check_varlen(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                  const Tensor& cu_q, const Tensor& cu_k) {
  TORCH_CHECK(q.dim() == 3 && k.dim() == 3 && v.dim() == 3, op,
              ": expected query, key and value of shape (total, heads, head_dim), got ",
              q.sizes(), ", ", k.sizes(), " and ", v.sizes());
  TORCH_CHECK(q.scalar_type() == k.scalar_type() && q.scalar_type() == v.scalar_type(), op,
              ": query, key and value must have the same dtype, got ", q.scalar_type(), ", ",
              k.scalar_type(), " and ", v.scalar_type());
  TORCH_CHECK(at::isFloatingType(q.scalar_type()), op,
              ": expected a floating dtype, got ", q.scalar_type());
  TORCH_CHECK(k.sizes() == v.sizes(), op, ": key and value must have the same shape, got ",
              k.sizes(), " and ", v.sizes());
  TORCH_CHECK(q.size(2) == k.size(2), op, ": query and key head_dim differ: ", q.size(2),
              " and ", k.size(2));
  TORCH_CHECK(k.size(1) > 0 && q.size(1) % k.size(1) == 0, op, ": the query heads (",
              q.size(1), ") must be a multiple of the key/value heads (", k.size(1), ")");
  for (const Tensor* c : {&cu_q, &cu_k}) {
    TORCH_CHECK(c->dim() == 1 && c->size(0) >= 2, op,
                ": cu_seq_q and cu_seq_k must be 1-D with at least 2 offsets, got shape ",
                c->sizes());
    TORCH_CHECK(c->scalar_type() == at::kInt || c->scalar_type() == at::kLong, op,
                ": cu_seq_q and cu_seq_k must be int32 or int64, got ", c->scalar_type());
  }
  TORCH_CHECK(cu_q.size(0) == cu_k.size(0), op,
              ": cu_seq_q and cu_seq_k must have the same number of offsets, got ", cu_q.size(0),
              " and ", cu_k.size(0));
  (void)common_device(op, {&q, &k, &v, &cu_q, &cu_k});
}

// attrs shared by forward and backward: {accumulation dtype, causal, window
// left, window right}
tpj_attrs_varlen_attn_t varlen_attrs(const Tensor& q, bool is_causal,
                                     at::OptionalSymIntArrayRef window) {
  tpj_attrs_varlen_attn_t attr{};
  attr.left = attr.right = -1;
  if (window.has_value()) {
    TORCH_CHECK(window->size() == 2, "window_size must have length 2, got ", window->size());
    attr.left = (*window)[0].guard_int(__FILE__, __LINE__);
    attr.right = (*window)[1].guard_int(__FILE__, __LINE__);
  }
  attr.compute = to_tpj_dtype(q.scalar_type() == at::kDouble ? at::kDouble : at::kFloat);
  attr.causal = is_causal ? 1 : 0;
  return attr;
}

double varlen_scale(const Tensor& q, std::optional<double> scale) {
  return scale.has_value() ? *scale : 1.0 / std::sqrt(static_cast<double>(q.size(2)));
}

std::tuple<Tensor, Tensor, Tensor> varlen_attn(
    const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& cu_q, const OptTensor& cu_k,
    c10::SymInt max_q, c10::SymInt max_k, bool is_causal, std::optional<double> scale,
    at::OptionalSymIntArrayRef window, bool enable_gqa, const OptTensor& seqused_k,
    const OptTensor& block_table, std::optional<c10::SymInt> num_splits) {
  (void)max_q, (void)max_k, (void)num_splits;
  TORCH_CHECK_NOT_IMPLEMENTED(!(seqused_k && seqused_k->defined()) &&
                                  !(block_table && block_table->defined()),
                              kVarlen, ": seqused_k and block_table (paged KV) are not "
                              "supported on tpu");
  const Tensor& ck = cu_k && cu_k->defined() ? *cu_k : cu_q;
  check_varlen(kVarlen, q, k, v, cu_q, ck);
  TORCH_CHECK(enable_gqa || q.size(1) == k.size(1), kVarlen, ": query has ", q.size(1),
              " heads and key/value ", k.size(1), "; pass enable_gqa=True for GQA");
  c10::Device dev = q.device();
  c10::DeviceGuard guard(dev);
  Tensor out = new_output(q.sizes(), q.scalar_type(), dev);
  Tensor lse = new_output({q.size(1), q.size(0)}, at::kFloat, dev);
  tpj_attrs_varlen_attn_t attrs = varlen_attrs(q, is_causal, window);
  if (q.numel() > 0 && k.size(0) > 0) {
    OpArgs a;
    for (const Tensor* t : {&q, &k, &v, &cu_q, &ck}) a.tensor(*t);
    a.scalar(varlen_scale(q, scale), static_cast<at::ScalarType>(at::kDouble), dev.index());
    run_op(kVarlen, dev.index(), a, attrs_of(attrs), {out, lse});
  } else {
    out.zero_();
    lse.fill_(std::numeric_limits<double>::infinity());
  }
  // dropout is always 0 here, so the RNG state is unused, as on CUDA
  Tensor rng = at::zeros({2}, q.options().dtype(at::kUInt64));
  return {out, lse, rng};
}

std::tuple<Tensor, Tensor, Tensor> varlen_attn_backward(
    const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
    const Tensor& lse, const Tensor& cu_q, const Tensor& cu_k, c10::SymInt max_q,
    c10::SymInt max_k, bool is_causal, const Tensor& rng_state, std::optional<double> scale,
    at::OptionalSymIntArrayRef window) {
  (void)max_q, (void)max_k, (void)rng_state;
  check_varlen(kVarlenBwd, q, k, v, cu_q, cu_k);
  TORCH_CHECK(grad_out.sizes() == q.sizes() && out.sizes() == q.sizes(), kVarlenBwd,
              ": grad_out and out must have query's shape ", q.sizes());
  TORCH_CHECK(lse.dim() == 2 && lse.size(0) == q.size(1) && lse.size(1) == q.size(0), kVarlenBwd,
              ": lse must have shape (heads, total_q) = [", q.size(1), ", ", q.size(0), "], got ",
              lse.sizes());
  c10::Device dev = q.device();
  c10::DeviceGuard guard(dev);
  Tensor dq = new_output(q.sizes(), q.scalar_type(), dev);
  Tensor dk = new_output(k.sizes(), k.scalar_type(), dev);
  Tensor dv = new_output(v.sizes(), v.scalar_type(), dev);
  if (q.numel() > 0 && k.size(0) > 0) {
    // the operands in the lowering's dtype: grad_out and out may come back
    // from autograd in another one (float32 grads of a bf16 model)
    Tensor go = grad_out.scalar_type() == q.scalar_type() ? grad_out : grad_out.to(q.scalar_type());
    Tensor o = out.scalar_type() == q.scalar_type() ? out : out.to(q.scalar_type());
    OpArgs a;
    for (const Tensor* t : std::initializer_list<const Tensor*>{&go, &q, &k, &v, &o, &lse, &cu_q, &cu_k})
      a.tensor(*t);
    a.scalar(varlen_scale(q, scale), static_cast<at::ScalarType>(at::kDouble), dev.index());
    tpj_attrs_varlen_attn_t attrs = varlen_attrs(q, is_causal, window);
    run_op(kVarlenBwd, dev.index(), a, attrs_of(attrs), {dq, dk, dv});
  } else {
    dq.zero_();
    dk.zero_();
    dv.zero_();
  }
  return {dq, dk, dv};
}

// torch_pjrt::paged_attention, the attention of vLLM's tpu backend
// (python/torch_pjrt/vllm/attention.py): query rows laid out in tiles, each
// tile reading its request's blocks of the cache (src/ops/attention.c says
// how). The index tensors may be on the host, where their values are checked
// and then uploaded with the call, or on the device (the serving path uploads
// them once per step for every layer), where they are taken as they are:
// XLA clamps an index out of range, so a device caller must build them right.
constexpr const char* kPaged = "torch_pjrt::paged_attention";

// The values of a host index tensor lie in [lo, hi) (a device one is taken
// as it is: XLA clamps an index out of range, so a device caller must build
// them right).
void check_index_values(const Tensor& t, const char* name, int64_t lo, int64_t hi) {
  if (!t.device().is_cpu() || t.numel() == 0) return;
  int64_t mn = t.min().item<int64_t>(), mx = t.max().item<int64_t>();
  TORCH_CHECK_INDEX(mn >= lo && mx < hi, kPaged, ": ", name, " has values in [", mn, ", ", mx,
                    "], outside [", lo, ", ", hi, ")");
}

tpj_paged_operand_t paged_operand(const Tensor& t) {
  return {to_tpj_dtype(t.scalar_type()), c10::toString(t.scalar_type()),
          static_cast<int>(t.dim()), t.sizes().data()};
}

Tensor paged_attention(const Tensor& q, const Tensor& cache, const Tensor& tile_blocks,
                       const Tensor& row_token, const Tensor& row_pos, const Tensor& token_row,
                       double scale, std::optional<double> soft_cap, std::optional<int64_t> window,
                       int64_t chunk_blocks) {
  // the shape contract, in C (src/ops/paged.h), which the lowering checks too
  tpj_paged_call_t call = {paged_operand(q),         paged_operand(cache),
                           paged_operand(tile_blocks), paged_operand(row_token),
                           paged_operand(row_pos),   paged_operand(token_row),
                           chunk_blocks,             window.has_value(),
                           window.value_or(-1)};
  TPJ_CHECK(tpj_ops_paged_attention_check(&call));
  int64_t rows = row_token.numel();
  check_index_values(tile_blocks, "tile_blocks", 0, cache.size(0));
  check_index_values(row_token, "row_token", 0, std::max<int64_t>(q.size(0), 1));
  check_index_values(row_pos, "row_pos", -1, std::numeric_limits<int32_t>::max());
  check_index_values(token_row, "token_row", 0, rows);
  TORCH_CHECK(q.device().is_privateuseone(), kPaged, ": query must be on tpu, got ", q.device());
  // host index tensors (checked above) travel with the call
  Tensor idx[4] = {tile_blocks, row_token, row_pos, token_row};
  for (Tensor& t : idx)
    if (t.device().is_cpu()) t = t.to(q.device());
  c10::Device dev =
      common_device(kPaged, {&q, &cache, &idx[0], &idx[1], &idx[2], &idx[3]});
  c10::DeviceGuard guard(dev);
  Tensor out = new_output(q.sizes(), q.scalar_type(), dev);
  if (q.numel() == 0) return out;
  OpArgs a;
  a.tensor(q);
  a.tensor(cache);
  for (const Tensor& t : idx) a.tensor(t);
  a.scalar(scale, at::kDouble, dev.index());
  a.scalar(soft_cap.value_or(0.0), at::kDouble, dev.index());
  tpj_attrs_paged_attention_t attr{};
  attr.compute = to_tpj_dtype(q.scalar_type() == at::kDouble ? at::kDouble : at::kFloat);
  attr.chunk_blocks = chunk_blocks;
  attr.window = window.value_or(-1);
  attr.has_soft_cap = soft_cap.has_value() ? 1 : 0;
  run_op("tpj::paged_attention", dev.index(), a, attrs_of(attr), {out});
  return out;
}

Tensor paged_attention_meta(const Tensor& q, const Tensor&, const Tensor&, const Tensor&,
                            const Tensor&, const Tensor&, double, std::optional<double>,
                            std::optional<int64_t>, int64_t) {
  return at::empty_like(q, at::MemoryFormat::Contiguous);
}

}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  m.impl("_native_multi_head_attention", TORCH_FN(native_mha));
  m.impl("_masked_softmax", TORCH_FN(masked_softmax));
  m.impl("_transformer_encoder_layer_fwd", TORCH_FN(encoder_layer_fwd));
  m.impl("_nested_tensor_from_mask", TORCH_FN(nested_from_mask));
  m.impl("_nested_tensor_from_mask_left_aligned", TORCH_FN(nested_mask_left_aligned));
}

// torch.nn.attention.varlen defines the torch_attn library when it is
// imported; the dispatcher keeps these kernels until then.
TORCH_LIBRARY_IMPL(torch_attn, PrivateUse1, m) {
  using namespace torch_pjrt;
  m.impl("_varlen_attn", TORCH_FN(varlen_attn));
  m.impl("_varlen_attn_backward", TORCH_FN(varlen_attn_backward));
}

// The backward takes the forward's uint64 RNG state (never read: dropout is
// always 0 here). A uint64 tensor carries the storage-only dtypes' key
// (FPGA, csrc/device/storage_dtypes.cpp), and for this op that key's slot
// holds the op's CompositeExplicitAutograd default (FlashAttention), not the
// storage-only fallback: the tpu kernel is registered there too.
TORCH_LIBRARY_IMPL(torch_attn, FPGA, m) {
  using namespace torch_pjrt;
  m.impl("_varlen_attn_backward", TORCH_FN(varlen_attn_backward));
}

// The op is ours: vLLM's tpu backend calls it (python/torch_pjrt/vllm).
TORCH_LIBRARY(torch_pjrt, m) {
  m.def("paged_attention(Tensor query, Tensor kv_cache, Tensor tile_blocks, Tensor row_token, "
        "Tensor row_pos, Tensor token_row, float scale, float? soft_cap=None, int? window=None, "
        "int chunk_blocks=1) -> Tensor");
}

TORCH_LIBRARY_IMPL(torch_pjrt, PrivateUse1, m) {
  m.impl("paged_attention", TORCH_FN(torch_pjrt::paged_attention));
}

TORCH_LIBRARY_IMPL(torch_pjrt, Meta, m) {
  m.impl("paged_attention", TORCH_FN(torch_pjrt::paged_attention_meta));
}
