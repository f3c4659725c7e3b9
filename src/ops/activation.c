/* ops/activation: pointwise activations and their backward ops (silu,
 * hardtanh, leaky_relu, elu, softplus, hardsigmoid, hardswish, mish, and
 * the tanh/sigmoid backward that autograd of tanh and sigmoid emits).
 * Layout shared by every op here: attrs[0] is the compute dtype (float32 for
 * half inputs, as CPU's kernels use opmath); in[] holds the tensor operands
 * in schema order, then the op's numeric parameters as 0-d runtime scalars
 * (so a new slope or beta does not recompile). Every operand is converted
 * to the compute dtype and broadcast to the output's dims; the formulas
 * follow CPU's kernels branch for branch, so NaN and the boundary points
 * (x == threshold) take the same side as on CPU. */
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
