/* ops/activation: activations and their backward ops (silu, hardtanh,
 * leaky_relu, elu, softplus, hardsigmoid, hardswish, mish, and the
 * tanh/sigmoid backward that autograd of tanh and sigmoid emits); further
 * down, with their own layouts: glu, prelu, softmax / log_softmax /
 * _safe_softmax, threshold(_backward), gelu, hardshrink and softshrink.
 * Layout shared by the first group: attrs[0] is the compute dtype (float32 for
 * half inputs, as CPU's kernels use opmath); in[] holds the tensor operands
 * in schema order, then the op's numeric parameters as 0-d runtime scalars
 * (so a new slope or beta does not recompile). Every operand is converted
 * to the compute dtype and broadcast to the output's dims; the formulas
 * follow CPU's kernels branch for branch, so NaN and the boundary points
 * (x == threshold) take the same side as on CPU. */
#include <math.h>

#include "hlo/sort.h"
#include "ops/desc.h"
#include "ops/lower_util.h"
#include "ops/ops.h"

typedef struct {
  tpj_hlo_builder_t* b;
  tpj_dtype_t cd;
  const tpj_rt_shape_t* o;
  tpj_hlo_value_t v[8];
} tpj_act_t;

/* Loads the n operands; 0 (and a recorded failure) when they are missing. */
static int tpj_act_load(tpj_op_ctx_t* ctx, int n, const char* name, tpj_act_t* a) {
  a->b = ctx->b;
  if (ctx->nin < n || ctx->nattrs < 1 || n > 8) {
    tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "%s: bad operands", name));
    return 0;
  }
  a->cd = (tpj_dtype_t)ctx->attrs[0];
  a->o = &ctx->outs[0];
  for (int i = 0; i < n; ++i)
    a->v[i] = tpj_ops_cast_to(ctx->b, ctx->in[i], a->cd, a->o->dims, a->o->ndim);
  return tpj_hlo_ok(ctx->b);
}

static void tpj_act_done(tpj_act_t* a, tpj_hlo_value_t r, tpj_hlo_value_t* results) {
  results[0] = tpj_hlo_emit_convert(a->b, r, a->o->dtype);
}

/* A constant of the compute dtype at the output's dims. */
static tpj_hlo_value_t tpj_act_c(tpj_act_t* a, double v) {
  return tpj_hlo_emit_broadcast_to(a->b, tpj_hlo_emit_const_f64(a->b, a->cd, v), a->o->dims,
                                   a->o->ndim);
}

#define ADD(x, y) tpj_hlo_emit_binary(a.b, "stablehlo.add", x, y)
#define SUB(x, y) tpj_hlo_emit_binary(a.b, "stablehlo.subtract", x, y)
#define MUL(x, y) tpj_hlo_emit_binary(a.b, "stablehlo.multiply", x, y)
#define DIV(x, y) tpj_hlo_emit_binary(a.b, "stablehlo.divide", x, y)
#define UN(name, x) tpj_hlo_emit_unary(a.b, "stablehlo." name, x)
#define CMP(x, y, dir) tpj_hlo_emit_compare(a.b, x, y, dir)
#define SEL(c, x, y) tpj_hlo_emit_select(a.b, c, x, y)
#define AND(x, y) tpj_hlo_emit_binary(a.b, "stablehlo.and", x, y)
#define OR(x, y) tpj_hlo_emit_binary(a.b, "stablehlo.or", x, y)
#define C(v) tpj_act_c(&a, v)

/* 1 / (1 + exp(-x)) */
static tpj_hlo_value_t tpj_act_sigmoid(tpj_act_t* p, tpj_hlo_value_t x) {
  tpj_act_t a = *p;
  return DIV(C(1.0), ADD(C(1.0), UN("exponential", UN("negate", x))));
}

/* silu(x) = x / (1 + exp(-x)) */
void tpj_lower_silu(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_act_t a;
  if (!tpj_act_load(ctx, 1, "silu", &a)) return;
  tpj_hlo_value_t x = a.v[0];
  tpj_act_done(&a, DIV(x, ADD(C(1.0), UN("exponential", UN("negate", x)))), results);
}

/* in: grad, self. grad * s * (1 + x (1 - s)) */
void tpj_lower_silu_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_act_t a;
  if (!tpj_act_load(ctx, 2, "silu_backward", &a)) return;
  tpj_hlo_value_t g = a.v[0], x = a.v[1], s = tpj_act_sigmoid(&a, x);
  tpj_act_done(&a, MUL(MUL(g, s), ADD(C(1.0), MUL(x, SUB(C(1.0), s)))), results);
}

/* in: self, min, max. A NaN stays NaN, as with CPU's clamp. */
void tpj_lower_hardtanh(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_act_t a;
  if (!tpj_act_load(ctx, 3, "hardtanh", &a)) return;
  tpj_hlo_value_t x = a.v[0], lo = a.v[1], hi = a.v[2];
  tpj_act_done(&a, SEL(CMP(x, hi, "GT"), hi, SEL(CMP(x, lo, "LT"), lo, x)), results);
}

/* in: grad, self, min, max: 0 where self <= min or self >= max */
void tpj_lower_hardtanh_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_act_t a;
  if (!tpj_act_load(ctx, 4, "hardtanh_backward", &a)) return;
  tpj_hlo_value_t g = a.v[0], x = a.v[1];
  tpj_hlo_value_t out = OR(CMP(x, a.v[2], "LE"), CMP(x, a.v[3], "GE"));
  tpj_act_done(&a, SEL(out, C(0.0), g), results);
}

/* in: self, negative_slope */
void tpj_lower_leaky_relu(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_act_t a;
  if (!tpj_act_load(ctx, 2, "leaky_relu", &a)) return;
  tpj_hlo_value_t x = a.v[0];
  tpj_act_done(&a, SEL(CMP(x, C(0.0), "GT"), x, MUL(x, a.v[1])), results);
}

/* in: grad, self, negative_slope */
void tpj_lower_leaky_relu_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_act_t a;
  if (!tpj_act_load(ctx, 3, "leaky_relu_backward", &a)) return;
  tpj_hlo_value_t g = a.v[0], x = a.v[1];
  tpj_act_done(&a, SEL(CMP(x, C(0.0), "GT"), g, MUL(g, a.v[2])), results);
}

/* in: self, alpha, scale, input_scale:
 * x > 0 ? x * scale : expm1(x * input_scale) * alpha * scale */
void tpj_lower_elu(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_act_t a;
  if (!tpj_act_load(ctx, 4, "elu", &a)) return;
  tpj_hlo_value_t x = a.v[0], alpha = a.v[1], scale = a.v[2], iscale = a.v[3];
  tpj_hlo_value_t neg = MUL(MUL(UN("exponential_minus_one", MUL(x, iscale)), alpha), scale);
  tpj_act_done(&a, SEL(CMP(x, C(0.0), "GT"), MUL(x, scale), neg), results);
}

/* in: grad, self_or_result, alpha, scale, input_scale; attrs[1] is_result.
 * CPU's kernel: x <= 0 ? grad * input_scale * (is_result ? y + alpha*scale
 * : alpha*scale*exp(x * input_scale)) : grad * scale */
void tpj_lower_elu_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_act_t a;
  if (!tpj_act_load(ctx, 5, "elu_backward", &a) || ctx->nattrs < 2) return;
  tpj_hlo_value_t g = a.v[0], x = a.v[1], alpha = a.v[2], scale = a.v[3], iscale = a.v[4];
  tpj_hlo_value_t negcoef = MUL(alpha, scale);
  tpj_hlo_value_t neg = ctx->attrs[1]
                            ? MUL(MUL(g, iscale), ADD(x, negcoef))
                            : MUL(MUL(MUL(g, iscale), negcoef), UN("exponential", MUL(x, iscale)));
  tpj_act_done(&a, SEL(CMP(x, C(0.0), "LE"), neg, MUL(g, scale)), results);
}

/* in: self, beta, threshold: x*beta > threshold ? x : log1p(exp(x*beta))/beta */
void tpj_lower_softplus(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_act_t a;
  if (!tpj_act_load(ctx, 3, "softplus", &a)) return;
  tpj_hlo_value_t x = a.v[0], beta = a.v[1], xb = MUL(x, beta);
  tpj_hlo_value_t soft = DIV(UN("log_plus_one", UN("exponential", xb)), beta);
  tpj_act_done(&a, SEL(CMP(xb, a.v[2], "GT"), x, soft), results);
}

/* in: grad, self, beta, threshold: z = exp(x*beta);
 * x*beta > threshold ? grad : grad * z / (z + 1) */
void tpj_lower_softplus_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_act_t a;
  if (!tpj_act_load(ctx, 4, "softplus_backward", &a)) return;
  tpj_hlo_value_t g = a.v[0], xb = MUL(a.v[1], a.v[2]);
  tpj_hlo_value_t z = UN("exponential", xb);
  tpj_act_done(&a, SEL(CMP(xb, a.v[3], "GT"), g, DIV(MUL(g, z), ADD(z, C(1.0)))), results);
}

/* min(max(x + 3, 0), 6) / 6, NaN kept */
static tpj_hlo_value_t tpj_act_relu6_3(tpj_act_t* p, tpj_hlo_value_t x) {
  tpj_act_t a = *p;
  tpj_hlo_value_t s = ADD(x, C(3.0));
  s = SEL(CMP(s, C(0.0), "LT"), C(0.0), SEL(CMP(s, C(6.0), "GT"), C(6.0), s));
  return DIV(s, C(6.0));
}

void tpj_lower_hardsigmoid(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_act_t a;
  if (!tpj_act_load(ctx, 1, "hardsigmoid", &a)) return;
  tpj_act_done(&a, tpj_act_relu6_3(&a, a.v[0]), results);
}

/* in: grad, self: (x > -3 && x < 3) ? grad / 6 : 0 */
void tpj_lower_hardsigmoid_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_act_t a;
  if (!tpj_act_load(ctx, 2, "hardsigmoid_backward", &a)) return;
  tpj_hlo_value_t g = a.v[0], x = a.v[1];
  tpj_hlo_value_t in = AND(CMP(x, C(-3.0), "GT"), CMP(x, C(3.0), "LT"));
  tpj_act_done(&a, SEL(in, DIV(g, C(6.0)), C(0.0)), results);
}

void tpj_lower_hardswish(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_act_t a;
  if (!tpj_act_load(ctx, 1, "hardswish", &a)) return;
  tpj_act_done(&a, MUL(a.v[0], tpj_act_relu6_3(&a, a.v[0])), results);
}

/* in: grad, self: x <= -3 ? 0 : x < 3 ? grad * (x / 3 + 0.5) : grad */
void tpj_lower_hardswish_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_act_t a;
  if (!tpj_act_load(ctx, 2, "hardswish_backward", &a)) return;
  tpj_hlo_value_t g = a.v[0], x = a.v[1];
  tpj_hlo_value_t mid = MUL(g, ADD(DIV(x, C(3.0)), C(0.5)));
  tpj_act_done(&a, SEL(CMP(x, C(-3.0), "LE"), C(0.0), SEL(CMP(x, C(3.0), "LT"), mid, g)), results);
}

/* tanh(log1p(exp(x))) */
static tpj_hlo_value_t tpj_act_tanh_softplus(tpj_act_t* p, tpj_hlo_value_t x) {
  tpj_act_t a = *p;
  return UN("tanh", UN("log_plus_one", UN("exponential", x)));
}

void tpj_lower_mish(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_act_t a;
  if (!tpj_act_load(ctx, 1, "mish", &a)) return;
  tpj_act_done(&a, MUL(a.v[0], tpj_act_tanh_softplus(&a, a.v[0])), results);
}

/* in: grad, self: grad * (t + x * sigmoid(x) * (1 - t^2)), t = tanh(softplus(x)) */
void tpj_lower_mish_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_act_t a;
  if (!tpj_act_load(ctx, 2, "mish_backward", &a)) return;
  tpj_hlo_value_t g = a.v[0], x = a.v[1];
  tpj_hlo_value_t t = tpj_act_tanh_softplus(&a, x), s = tpj_act_sigmoid(&a, x);
  tpj_act_done(&a, MUL(g, ADD(t, MUL(MUL(x, s), SUB(C(1.0), MUL(t, t))))), results);
}

/* in: grad, output: grad * (1 - y^2) */
void tpj_lower_tanh_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_act_t a;
  if (!tpj_act_load(ctx, 2, "tanh_backward", &a)) return;
  tpj_hlo_value_t g = a.v[0], y = a.v[1];
  tpj_act_done(&a, MUL(g, SUB(C(1.0), MUL(y, y))), results);
}

/* in: grad, output: grad * (1 - y) * y */
void tpj_lower_sigmoid_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_act_t a;
  if (!tpj_act_load(ctx, 2, "sigmoid_backward", &a)) return;
  tpj_hlo_value_t g = a.v[0], y = a.v[1];
  tpj_act_done(&a, MUL(MUL(g, SUB(C(1.0), y)), y), results);
}

/* log_sigmoid_forward: in: self; outs: output, buffer. output =
 * min(x, 0) - log1p(exp(-|x|)); the buffer (CPU keeps exp(-|x|) there) is
 * filled the same way, though the backward below does not read it. */
void tpj_lower_log_sigmoid_forward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_act_t a;
  if (!tpj_act_load(ctx, 1, "log_sigmoid_forward", &a) || ctx->nouts < 2) return;
  tpj_hlo_value_t x = a.v[0];
  tpj_hlo_value_t z = UN("exponential", UN("negate", UN("abs", x)));
  tpj_hlo_value_t mn = SEL(CMP(x, C(0.0), "LT"), x, C(0.0));
  tpj_act_done(&a, SUB(mn, UN("log_plus_one", z)), results);
  results[1] = tpj_hlo_emit_convert(a.b, z, ctx->outs[1].dtype);
}

/* in: grad, self (the buffer is not passed): z = exp(-|x|);
 * grad * ((x < 0 ? 1 : 0) - (x < 0 ? 1 : -1) * z / (1 + z)) */
void tpj_lower_log_sigmoid_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_act_t a;
  if (!tpj_act_load(ctx, 2, "log_sigmoid_backward", &a)) return;
  tpj_hlo_value_t g = a.v[0], x = a.v[1];
  tpj_hlo_value_t neg = CMP(x, C(0.0), "LT");
  tpj_hlo_value_t z = UN("exponential", UN("negate", UN("abs", x)));
  tpj_hlo_value_t q = DIV(z, ADD(C(1.0), z));
  tpj_act_done(&a, MUL(g, SUB(SEL(neg, C(1.0), C(0.0)), MUL(SEL(neg, C(1.0), C(-1.0)), q))),
               results);
}

#undef SUB
#define SUB(x, y) tpj_hlo_emit_binary(b, "stablehlo.subtract", x, y)
#undef MUL
#define MUL(x, y) tpj_hlo_emit_binary(b, "stablehlo.multiply", x, y)
#undef CMP
#define CMP(x, y, d) tpj_hlo_emit_compare(b, x, y, d)
#undef SEL
#define SEL(c, x, y) tpj_hlo_emit_select(b, c, x, y)

/* ---- glu, prelu ------------------------------------------------------------ */

/* glu's halves a and b of x along dim, in the compute dtype cd. */
static void halves(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int dim, tpj_dtype_t cd,
                   tpj_hlo_value_t* lo_half, tpj_hlo_value_t* hi_half) {
  int64_t lo[TPJ_MAX_DIMS] = {0}, hi[TPJ_MAX_DIMS], st[TPJ_MAX_DIMS];
  for (int d = 0; d < x.ndim; ++d) hi[d] = x.dims[d], st[d] = 1;
  int64_t h = x.dims[dim] / 2;
  hi[dim] = h;
  *lo_half = tpj_hlo_emit_convert(b, tpj_hlo_emit_slice(b, x, lo, hi, st), cd);
  lo[dim] = h;
  hi[dim] = 2 * h;
  *hi_half = tpj_hlo_emit_convert(b, tpj_hlo_emit_slice(b, x, lo, hi, st), cd);
}

/* aten::glu: attrs[0] compute dtype (float32 for half types, as CPU's
 * kernel computes), attrs[1] dim (wrapped). a * sigmoid(b). */
void tpj_lower_glu(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_ops_need(ctx, 1, 2, 1, "glu")) return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t x, y;
  halves(b, ctx->in[0], (int)ctx->attrs[1], (tpj_dtype_t)ctx->attrs[0], &x, &y);
  tpj_hlo_value_t r = MUL(x, tpj_hlo_emit_unary(b, "stablehlo.logistic", y));
  results[0] = tpj_hlo_emit_convert(b, r, ctx->outs[0].dtype);
}

/* aten::glu_backward(grad, self, dim): attrs as glu. The gradient of a is
 * grad * sigmoid(b), of b grad * a * sigmoid(b) * (1 - sigmoid(b)). */
void tpj_lower_glu_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_ops_need(ctx, 2, 2, 1, "glu_backward")) return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[0];
  int dim = (int)ctx->attrs[1];
  tpj_hlo_value_t x, y;
  halves(b, ctx->in[1], dim, cd, &x, &y);
  tpj_hlo_value_t g = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  tpj_hlo_value_t sig = tpj_hlo_emit_unary(b, "stablehlo.logistic", y);
  tpj_hlo_value_t ga = MUL(sig, g);
  tpj_hlo_value_t gb = MUL(MUL(SUB(tpj_ops_full_like(b, sig, cd, 1.0), sig), sig), MUL(x, g));
  tpj_hlo_value_t parts[2] = {ga, gb};
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_concatenate(b, parts, 2, dim),
                                    ctx->outs[0].dtype);
}

/* aten::_prelu_kernel(self, weight): self > 0 ? self : weight * self, in
 * the output dtype (CPU's kernel computes in it too), weight broadcast. */
void tpj_lower_prelu(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_ops_need(ctx, 2, 0, 1, "_prelu_kernel")) return;
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[0], o->dtype, o->dims, o->ndim);
  tpj_hlo_value_t w = tpj_ops_cast_to(b, ctx->in[1], o->dtype, o->dims, o->ndim);
  results[0] = SEL(CMP(x, tpj_ops_full_like(b, x, x.dtype, 0.0), "GT"), x, MUL(w, x));
}

/* aten::_prelu_kernel_backward(grad, self, weight): both gradients over
 * the broadcast shape (autograd sums the weight's): grad_self is
 * self > 0 ? grad : weight * grad, grad_weight self > 0 ? 0 : self * grad. */
void tpj_lower_prelu_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  if (!tpj_ops_need(ctx, 3, 0, 2, "_prelu_kernel_backward")) return;
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_hlo_value_t g = tpj_ops_cast_to(b, ctx->in[0], o->dtype, o->dims, o->ndim);
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[1], o->dtype, o->dims, o->ndim);
  tpj_hlo_value_t w = tpj_ops_cast_to(b, ctx->in[2], o->dtype, o->dims, o->ndim);
  tpj_hlo_value_t pos = CMP(x, tpj_ops_full_like(b, x, x.dtype, 0.0), "GT");
  results[0] = SEL(pos, g, MUL(w, g));
  results[1] = SEL(pos, tpj_ops_full_like(b, x, x.dtype, 0.0), MUL(x, g));
}

/* reduce x over dim d and broadcast the result back to x's dims */
static tpj_hlo_value_t tpj_reduce_keep(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int64_t d,
                                       int is_max) {
  tpj_hlo_value_t init = is_max ? tpj_hlo_emit_extreme(b, x.dtype, 0) : tpj_hlo_emit_zero(b, x.dtype);
  tpj_hlo_value_t r = tpj_hlo_emit_reduce(b, x, init, &d, 1, is_max ? "stablehlo.maximum"
                                                                     : "stablehlo.add");
  int64_t bdims[TPJ_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < x.ndim; ++i)
    if (i != d) bdims[n++] = i;
  return tpj_hlo_emit_broadcast_in_dim(b, r, x.dims, x.ndim, bdims);
}

static int tpj_softmax_args(tpj_op_ctx_t* ctx, int nin, tpj_dtype_t* cd, int64_t* d) {
  if (ctx->nin < nin || ctx->nattrs < 2) {
    tpj_hlo_fail(ctx->b, tpj_status_make(TPJ_INTERNAL, "softmax: bad operands"));
    return 0;
  }
  *cd = (tpj_dtype_t)ctx->attrs[0];
  *d = ctx->attrs[1];
  return 1;
}

/* kind: 0 softmax, 1 log_softmax, 2 _safe_softmax (softmax, but a row whose
 * elements are all -inf gives zeros, as scaled_dot_product_attention's math
 * path wants for fully masked rows). */
static void tpj_lower_softmax_common(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, int kind) {
  int log = kind == 1;
  tpj_dtype_t cd;
  int64_t d;
  if (!tpj_softmax_args(ctx, 1, &cd, &d)) return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  if (x.ndim == 0) {
    /* softmax of a scalar is 1, log_softmax 0, and NaN for an infinite or NaN
     * scalar as on CPU (its x - max(x) is inf - inf): x - x gives both. */
    tpj_hlo_value_t v = tpj_hlo_emit_binary(b, "stablehlo.subtract", x, x);
    if (!log) v = tpj_hlo_emit_unary(b, "stablehlo.exponential", v);
    results[0] = tpj_hlo_emit_convert(b, v, ctx->outs[0].dtype);
    return;
  }
  tpj_hlo_value_t m = tpj_reduce_keep(b, x, d, 1);
  /* an all -inf row: subtract 0 instead of -inf, so the row gives NaN/-inf
   * like PyTorch rather than NaN from (-inf) - (-inf) everywhere */
  tpj_hlo_value_t finite = tpj_hlo_emit_compare(
      b, m, tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_extreme(b, cd, 0), m.dims, m.ndim), "NE");
  m = tpj_hlo_emit_select(b, finite, m,
                          tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, cd), m.dims, m.ndim));
  tpj_hlo_value_t shifted = tpj_hlo_emit_binary(b, "stablehlo.subtract", x, m);
  tpj_hlo_value_t e = tpj_hlo_emit_unary(b, "stablehlo.exponential", shifted);
  tpj_hlo_value_t s = tpj_reduce_keep(b, e, d, 0);
  tpj_hlo_value_t r = log ? tpj_hlo_emit_binary(b, "stablehlo.subtract", shifted,
                                                tpj_hlo_emit_unary(b, "stablehlo.log", s))
                          : tpj_hlo_emit_binary(b, "stablehlo.divide", e, s);
  if (kind == 2) {
    /* The sum is 0 exactly for an all -inf row: its max was replaced by 0
     * above, so every exp is 0. Any other row has an exp(0) = 1 term, or a
     * NaN (a NaN or +inf element), and keeps softmax's value. This needs no
     * second reduction, unlike testing every element against -inf. */
    tpj_hlo_value_t z = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, cd), r.dims, r.ndim);
    r = tpj_hlo_emit_select(b, tpj_hlo_emit_compare(b, s, z, "EQ"), z, r);
  }
  results[0] = tpj_hlo_emit_convert(b, r, ctx->outs[0].dtype);
}

void tpj_lower_softmax(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) { tpj_lower_softmax_common(ctx, r, 0); }
void tpj_lower_log_softmax(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_lower_softmax_common(ctx, r, 1);
}
void tpj_lower_safe_softmax(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_lower_softmax_common(ctx, r, 2);
}

/* in[0] grad_output, in[1] output (of softmax / log_softmax) */
static void tpj_lower_softmax_bwd_common(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, int log) {
  tpj_dtype_t cd;
  int64_t d;
  if (!tpj_softmax_args(ctx, 2, &cd, &d)) return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t g = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  tpj_hlo_value_t y = tpj_hlo_emit_convert(b, ctx->in[1], cd);
  tpj_hlo_value_t r;
  if (g.ndim == 0) {
    r = log ? tpj_hlo_emit_binary(b, "stablehlo.subtract", g,
                                  tpj_hlo_emit_binary(b, "stablehlo.multiply",
                                                      tpj_hlo_emit_unary(b, "stablehlo.exponential", y), g))
            : tpj_hlo_emit_binary(b, "stablehlo.multiply", y,
                                  tpj_hlo_emit_binary(b, "stablehlo.subtract", g,
                                                      tpj_hlo_emit_binary(b, "stablehlo.multiply", g, y)));
  } else if (log) {
    /* g - exp(y) * sum(g) */
    tpj_hlo_value_t s = tpj_reduce_keep(b, g, d, 0);
    r = tpj_hlo_emit_binary(b, "stablehlo.subtract", g,
                            tpj_hlo_emit_binary(b, "stablehlo.multiply",
                                                tpj_hlo_emit_unary(b, "stablehlo.exponential", y), s));
  } else {
    /* y * (g - sum(g * y)) */
    tpj_hlo_value_t s = tpj_reduce_keep(b, tpj_hlo_emit_binary(b, "stablehlo.multiply", g, y), d, 0);
    r = tpj_hlo_emit_binary(b, "stablehlo.multiply", y,
                            tpj_hlo_emit_binary(b, "stablehlo.subtract", g, s));
  }
  results[0] = tpj_hlo_emit_convert(b, r, ctx->outs[0].dtype);
}

void tpj_lower_softmax_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_lower_softmax_bwd_common(ctx, r, 0);
}
void tpj_lower_log_softmax_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_lower_softmax_bwd_common(ctx, r, 1);
}

/* threshold_backward: in[0] grad, in[1] self, in[2] threshold (0-d);
 * grad where self > threshold, else 0. attrs[0] compute dtype. */
void tpj_lower_threshold_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nin < 3 || ctx->nattrs < 1) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "threshold_backward: bad operands"));
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[0];
  tpj_hlo_value_t g = tpj_ops_cast_to(b, ctx->in[0], cd, o->dims, o->ndim);
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[1], cd, o->dims, o->ndim);
  tpj_hlo_value_t t = tpj_ops_cast_to(b, ctx->in[2], cd, o->dims, o->ndim);
  tpj_hlo_value_t z = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, cd), o->dims, o->ndim);
  tpj_hlo_value_t r = tpj_hlo_emit_select(b, tpj_hlo_emit_compare(b, x, t, "LE"), z, g);
  results[0] = tpj_hlo_emit_convert(b, r, o->dtype);
}

/* ---- gelu ---------------------------------------------------------------
 * attrs[0] compute dtype, attrs[1] 1 for approximate="tanh". gelu: in[0] x;
 * gelu_backward: in[0] grad, in[1] x. */

static tpj_hlo_value_t tpj_c(tpj_hlo_builder_t* b, tpj_dtype_t dt, double v, const tpj_hlo_value_t* like) {
  return tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_f64(b, dt, v), like->dims, like->ndim);
}

#define TPJ_MUL(x, y) tpj_hlo_emit_binary(b, "stablehlo.multiply", x, y)
#define TPJ_ADD(x, y) tpj_hlo_emit_binary(b, "stablehlo.add", x, y)
#define TPJ_SUB(x, y) tpj_hlo_emit_binary(b, "stablehlo.subtract", x, y)

static const double kSqrt1_2 = 0.70710678118654752440;   /* 1/sqrt(2) */
static const double kSqrt2_Pi = 0.79788456080286535588;  /* sqrt(2/pi) */
static const double kInvSqrt2Pi = 0.39894228040143267794; /* 1/sqrt(2*pi) */
static const double kGeluC = 0.044715;

/* tanh(sqrt(2/pi) * (x + c x^3)) */
static tpj_hlo_value_t tpj_gelu_tanh_inner(tpj_hlo_builder_t* b, tpj_hlo_value_t x) {
  tpj_hlo_value_t x3 = TPJ_MUL(TPJ_MUL(x, x), x);
  tpj_hlo_value_t in = TPJ_MUL(tpj_c(b, x.dtype, kSqrt2_Pi, &x),
                               TPJ_ADD(x, TPJ_MUL(tpj_c(b, x.dtype, kGeluC, &x), x3)));
  return tpj_hlo_emit_unary(b, "stablehlo.tanh", in);
}

void tpj_lower_gelu(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (ctx->nin < 1 || ctx->nattrs < 2) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "gelu: bad operands"));
    return;
  }
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], (tpj_dtype_t)ctx->attrs[0]);
  tpj_hlo_value_t cdf;
  if (ctx->attrs[1]) {
    cdf = TPJ_MUL(tpj_c(b, x.dtype, 0.5, &x), TPJ_ADD(tpj_c(b, x.dtype, 1.0, &x),
                                                       tpj_gelu_tanh_inner(b, x)));
  } else {
    tpj_hlo_value_t e = tpj_ops_erf(b, TPJ_MUL(x, tpj_c(b, x.dtype, kSqrt1_2, &x)));
    cdf = TPJ_MUL(tpj_c(b, x.dtype, 0.5, &x), TPJ_ADD(tpj_c(b, x.dtype, 1.0, &x), e));
  }
  results[0] = tpj_hlo_emit_convert(b, TPJ_MUL(x, cdf), ctx->outs[0].dtype);
}

void tpj_lower_gelu_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nin < 2 || ctx->nattrs < 2) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "gelu_backward: bad operands"));
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[0];
  tpj_hlo_value_t g = tpj_ops_cast_to(b, ctx->in[0], cd, o->dims, o->ndim);
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[1], cd, o->dims, o->ndim);
  tpj_hlo_value_t d;
  if (ctx->attrs[1]) {
    /* 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 c x^2) */
    tpj_hlo_value_t t = tpj_gelu_tanh_inner(b, x);
    tpj_hlo_value_t one = tpj_c(b, cd, 1.0, &x), half = tpj_c(b, cd, 0.5, &x);
    tpj_hlo_value_t left = TPJ_MUL(half, TPJ_ADD(one, t));
    tpj_hlo_value_t dinner = TPJ_MUL(tpj_c(b, cd, kSqrt2_Pi, &x),
                                     TPJ_ADD(one, TPJ_MUL(tpj_c(b, cd, 3.0 * kGeluC, &x), TPJ_MUL(x, x))));
    tpj_hlo_value_t right = TPJ_MUL(TPJ_MUL(half, x), TPJ_MUL(TPJ_SUB(one, TPJ_MUL(t, t)), dinner));
    d = TPJ_ADD(left, right);
  } else {
    /* Phi(x) + x phi(x) */
    tpj_hlo_value_t e = tpj_ops_erf(b, TPJ_MUL(x, tpj_c(b, cd, kSqrt1_2, &x)));
    tpj_hlo_value_t cdf = TPJ_MUL(tpj_c(b, cd, 0.5, &x), TPJ_ADD(tpj_c(b, cd, 1.0, &x), e));
    tpj_hlo_value_t pdf = TPJ_MUL(tpj_c(b, cd, kInvSqrt2Pi, &x),
                                  tpj_hlo_emit_unary(b, "stablehlo.exponential",
                                                     TPJ_MUL(tpj_c(b, cd, -0.5, &x), TPJ_MUL(x, x))));
    d = TPJ_ADD(cdf, TPJ_MUL(x, pdf));
  }
  results[0] = tpj_hlo_emit_convert(b, TPJ_MUL(g, d), o->dtype);
}

#define TPJ_ADD(x, y) tpj_hlo_emit_binary(b, "stablehlo.add", x, y)
#define TPJ_SUB(x, y) tpj_hlo_emit_binary(b, "stablehlo.subtract", x, y)

/* |x| <= lambd as CPU tests it: x >= -lambd && x <= lambd (false for NaN) */
static tpj_hlo_value_t tpj_shrink_inside(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_value_t l) {
  tpj_hlo_value_t nl = tpj_hlo_emit_unary(b, "stablehlo.negate", l);
  return tpj_hlo_emit_binary(b, "stablehlo.and", tpj_hlo_emit_compare(b, x, nl, "GE"),
                             tpj_hlo_emit_compare(b, x, l, "LE"));
}

/* hardshrink: in[0] x, in[1] lambd; attrs[0] compute dtype. 0 inside. */
void tpj_lower_hardshrink(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (ctx->nin < 2 || ctx->nattrs < 1) {
    tpj_ops_fail_operands(ctx, "hardshrink");
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[0];
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  tpj_hlo_value_t l = tpj_ops_fill_like(b, tpj_hlo_emit_convert(b, ctx->in[1], cd), &x);
  tpj_hlo_value_t z = tpj_ops_fill_like(b, tpj_hlo_emit_zero(b, cd), &x);
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_select(b, tpj_shrink_inside(b, x, l), z, x),
                                    ctx->outs[0].dtype);
}

/* hardshrink_backward and softshrink_backward: in[0] grad, in[1] x,
 * in[2] lambd; grad where x < -lambd or x > lambd, else 0 (0 for a NaN x,
 * as CPU). */
void tpj_lower_shrink_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nin < 3 || ctx->nattrs < 1) {
    tpj_ops_fail_operands(ctx, "shrink_backward");
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[0];
  tpj_hlo_value_t g = tpj_ops_cast_to(b, ctx->in[0], cd, o->dims, o->ndim);
  tpj_hlo_value_t x = tpj_ops_cast_to(b, ctx->in[1], cd, o->dims, o->ndim);
  tpj_hlo_value_t l = tpj_ops_fill_like(b, tpj_hlo_emit_convert(b, ctx->in[2], cd), &x);
  tpj_hlo_value_t z = tpj_ops_fill_like(b, tpj_hlo_emit_zero(b, cd), &x);
  tpj_hlo_value_t out = tpj_hlo_emit_binary(
      b, "stablehlo.or", tpj_hlo_emit_compare(b, x, tpj_hlo_emit_unary(b, "stablehlo.negate", l), "LT"),
      tpj_hlo_emit_compare(b, x, l, "GT"));
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_select(b, out, g, z), o->dtype);
}

/* softshrink: in[0] x, in[1] lambd; attrs[0] compute dtype.
 * x - lambd above, x + lambd below, +0 between; NaN stays NaN (as CPU). */
void tpj_lower_softshrink(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  if (ctx->nin < 2 || ctx->nattrs < 1) {
    tpj_ops_fail_operands(ctx, "softshrink");
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[0];
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  tpj_hlo_value_t l = tpj_ops_fill_like(b, tpj_hlo_emit_convert(b, ctx->in[1], cd), &x);
  tpj_hlo_value_t nl = tpj_hlo_emit_unary(b, "stablehlo.negate", l);
  tpj_hlo_value_t r = tpj_hlo_emit_select(b, tpj_hlo_emit_compare(b, x, x, "NE"), x,
                                         tpj_ops_fill_like(b, tpj_hlo_emit_zero(b, cd), &x));
  r = tpj_hlo_emit_select(b, tpj_hlo_emit_compare(b, x, nl, "LT"), TPJ_ADD(x, l), r);
  r = tpj_hlo_emit_select(b, tpj_hlo_emit_compare(b, x, l, "GT"), TPJ_SUB(x, l), r);
  results[0] = tpj_hlo_emit_convert(b, r, ctx->outs[0].dtype);
}

/* threshold: in[0] x, in[1] threshold, in[2] value; attrs[0] compute dtype
 * (float32 for half x: CPU compares with the unrounded threshold). value
 * where x <= threshold, else x. */
void tpj_lower_threshold(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  const tpj_rt_shape_t* o = &ctx->outs[0];
  if (ctx->nin < 3 || ctx->nattrs < 1) {
    tpj_ops_fail_operands(ctx, "threshold");
    return;
  }
  tpj_dtype_t cd = (tpj_dtype_t)ctx->attrs[0];
  tpj_hlo_value_t x = tpj_hlo_emit_convert(b, ctx->in[0], cd);
  tpj_hlo_value_t t = tpj_ops_fill_like(b, tpj_hlo_emit_convert(b, ctx->in[1], cd), &x);
  tpj_hlo_value_t v = tpj_ops_fill_like(b, tpj_hlo_emit_convert(b, ctx->in[2], cd), &x);
  results[0] = tpj_hlo_emit_convert(b, tpj_hlo_emit_select(b, tpj_hlo_emit_compare(b, x, t, "LE"), v, x),
                                    o->dtype);
}

/* ---- descriptor rows (desc.h) ---------------------------------------------
 * Numeric parameters are runtime scalars in the compute dtype
 * (RUNTIME_SCALARS); CPU's kernels take floating inputs only and say so
 * (FLOATING_INPUT with CPU's kernel name). The .out/.grad_input forms not
 * registered here are served by the glue's out= fallback (the functional
 * kernel, then CPU's out= rules); hardshrink, softshrink and threshold
 * register theirs: their CPU kernels (TensorIterator) check the out against
 * every input for overlap, which that fallback does only for ops tagged
 * pointwise, and these are not. */

/* CPU's checks in CPU's words (the meta functions do not make them). */
static tpj_status_t tpj_check_hardtanh(const tpj_op_call_t* c) {
  if (c->args[0].dtype == TPJ_BOOL)
    return tpj_status_make(TPJ_INVALID_ARGUMENT, "Bool inputs not supported for hardtanh");
  return NULL;
}
/* (grad_output, self, negative_slope, self_is_result) */
static tpj_status_t tpj_check_leaky_relu_backward(const tpj_op_call_t* c) {
  if (c->args[3].i && !(c->args[2].f >= 0.0))
    return tpj_status_make(
        TPJ_INVALID_ARGUMENT,
        "In-place leakyReLu backward calculation is triggered with a negative slope which is not "
        "supported. This is caused by calling in-place forward function with a negative slope, "
        "please call out-of-place version instead. File an issue at "
        "https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu "
        "backward calculation with negative slope");
  return NULL;
}
/* (grad_output, alpha, scale, input_scale, is_result, self_or_result) */
static tpj_status_t tpj_check_elu_backward(const tpj_op_call_t* c) {
  if (c->args[4].i && !(c->args[1].f >= 0.0))
    return tpj_status_make(
        TPJ_INVALID_ARGUMENT,
        "In-place elu backward calculation is triggered with a negative slope which is not "
        "supported. This is caused by calling in-place forward function with a negative slope, "
        "please call out-of-place version instead.");
  return NULL;
}
/* (self, dim, half_to_float): CPU's kernels take floating inputs only, and
 * name the last-dim kernel when dim is the last one. */
static tpj_status_t tpj_check_softmax_named(const tpj_op_call_t* c, const char* name) {
  const tpj_op_arg_t* self = &c->args[0];
  int64_t d;
  TPJ_RETURN_IF_ERROR(tpj_op_wrap_dim(c->args[1].i, self->ndim, &d));
  int last = self->ndim == 0 || d == self->ndim - 1;
  if (self->numel != 0 && !tpj_dtype_is_float(self->dtype))
    return tpj_status_make(TPJ_UNIMPLEMENTED, "\"%s%s\" not implemented for '%s'", name,
                           last ? "_lastdim_kernel_impl" : "_kernel_impl", self->dtype_name);
  return NULL;
}
static tpj_status_t tpj_check_softmax(const tpj_op_call_t* c) {
  return tpj_check_softmax_named(c, "softmax");
}
static tpj_status_t tpj_check_log_softmax(const tpj_op_call_t* c) {
  return tpj_check_softmax_named(c, "log_softmax");
}

#define TPJ_ACT (TPJ_RULE_FLOATING_INPUT | TPJ_RULE_RUNTIME_SCALARS)
#define TPJ_SHRINK_OUT (TPJ_RULE_OUT | TPJ_RULE_GRAD_INPUT_OUT | TPJ_ACT | TPJ_RULE_SCALARS_AS_OUTPUT)
static const tpj_op_desc_t kActivationRows[] = {
    /* CPU's silu also takes complex (x / (1 + exp(-x)) holds there too) */
    TPJ_ROW(silu, TPJ_RULE_FORMS | TPJ_RULE_FLOATING_INPUT | TPJ_RULE_COMPLEX_INPUT_OK, "silu_cpu",
            -1),
    TPJ_ROW(silu_backward, TPJ_RULE_FLOATING_INPUT, "silu_backward_cpu", -1),
    /* broadcast / like the input, without a meta call: PyTorch's meta kernel
     * for these is a Python decomposition costing about 1 ms a call */
    TPJ_ROW(hardtanh_backward, TPJ_RULE_BROADCAST | TPJ_RULE_RUNTIME_SCALARS, NULL, -1),
    TPJ_ROW(hardswish, TPJ_RULE_INPLACE | TPJ_RULE_FLOATING_INPUT | TPJ_RULE_LIKE_INPUT,
            "hardswish_cpu", -1),
    TPJ_ROW(hardswish_backward, TPJ_RULE_FLOATING_INPUT | TPJ_RULE_LIKE_INPUT,
            "hardswish_backward_cpu", -1),
    TPJ_ROW(mish_backward, TPJ_RULE_FLOATING_INPUT | TPJ_RULE_LIKE_INPUT, "mish_backward_cpu", -1),
    {"hardtanh", "aten::hardtanh",
     TPJ_RULE_FORMS | TPJ_RULE_LIKE_INPUT | TPJ_RULE_RUNTIME_SCALARS, NULL, -1, tpj_check_hardtanh},
    {"leaky_relu_backward", "aten::leaky_relu_backward", TPJ_ACT, "leaky_relu_backward_cpu", -1,
     tpj_check_leaky_relu_backward},
    {"elu_backward", "aten::elu_backward", TPJ_ACT, "elu_backward_cpu", -1,
     tpj_check_elu_backward},
    TPJ_ROW(leaky_relu, TPJ_RULE_FORMS | TPJ_ACT, "leaky_relu_cpu", -1),
    TPJ_ROW(elu, TPJ_RULE_FORMS | TPJ_ACT, "elu_cpu", -1),
    TPJ_ROW(softplus, TPJ_RULE_OUT | TPJ_ACT, "softplus_cpu", -1),
    TPJ_ROW(softplus_backward, TPJ_ACT, "softplus_backward_cpu", -1),
    TPJ_ROW(hardsigmoid, TPJ_RULE_INPLACE | TPJ_RULE_FLOATING_INPUT, "hardsigmoid_cpu", -1),
    TPJ_ROW(hardsigmoid_backward, TPJ_RULE_FLOATING_INPUT, "hardsigmoid_backward_cpu", -1),
    TPJ_ROW(mish, TPJ_RULE_INPLACE | TPJ_RULE_FLOATING_INPUT, "mish_cpu", -1),
    TPJ_ROW(tanh_backward, 0, NULL, -1),
    TPJ_ROW(sigmoid_backward, 0, NULL, -1),
    /* half types compare in float against the unrounded threshold, as CPU's
     * kernel does (bf16(0.3) <= 0.3 is false there, true in bf16) */
    TPJ_ROW(threshold_backward, TPJ_RULE_RUNTIME_SCALARS, NULL, -1),
    TPJ_ROW(threshold, TPJ_RULE_FORMS | TPJ_RULE_RUNTIME_SCALARS | TPJ_RULE_NO_BOOL,
            "threshold_cpu", -1),
    /* CPU's hardshrink reads lambd in the output dtype, softshrink in the
     * compute dtype */
    TPJ_ROW(hardshrink, TPJ_RULE_OUT | TPJ_ACT | TPJ_RULE_SCALARS_AS_OUTPUT, "hardshrink_cpu", -1),
    TPJ_ROW(hardshrink_backward, TPJ_SHRINK_OUT, "hardshrink_backward_cpu", -1),
    TPJ_ROW(softshrink, TPJ_RULE_OUT | TPJ_ACT, "softshrink_check", -1),
    TPJ_ROW(softshrink_backward, TPJ_SHRINK_OUT, "softshrink_backward_cpu", -1),
    /* softmax and log_softmax over one dim (DIM), their backward too: the
     * compute dtype is the output's accumulator (that of the input, too) */
    {"_softmax", "aten::_softmax", TPJ_RULE_DIM | TPJ_RULE_SKIP_EMPTY, NULL, -1, tpj_check_softmax},
    {"_log_softmax", "aten::_log_softmax", TPJ_RULE_DIM | TPJ_RULE_SKIP_EMPTY, NULL, -1,
     tpj_check_log_softmax},
    TPJ_ROW(_softmax_backward_data, TPJ_RULE_DIM, NULL, -1),
    TPJ_ROW(_log_softmax_backward_data, TPJ_RULE_DIM, NULL, -1),
};
TPJ_DESC_LIST(tpj_activation_rows, kActivationRows);
