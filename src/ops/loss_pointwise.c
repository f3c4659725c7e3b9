/* ops/loss_pointwise: losses that are an elementwise term of (input,
 * target) and a reduction: mse_loss, smooth_l1_loss, huber_loss,
 * binary_cross_entropy, with their backward ops: descriptor rows (bottom of
 * this file) of the LOSS layout, tpj_attrs_loss_t (ops/desc.h): the compute
 * dtype, the reduction (0 none, 1 mean, 2 sum), has_weight (bce only).
 * Forward in: self, target, [weight], [beta/delta as a 0-d runtime scalar];
 * backward in: grad_output, self, target, [weight], [beta/delta]. The
 * formulas follow CPU's kernels branch for branch (which side x == beta
 * falls on, bce's log clamp at -100 and its 1e-12 floor in the backward). */
#include <string.h>

#include "ops/desc.h"
#include "ops/ops.h"
#include "ops/sugar.h"

#define C(v) tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_f64(b, L->cd, v), L->dims, L->ndim)

typedef enum { TPJ_LOSS_MSE, TPJ_LOSS_SMOOTH_L1, TPJ_LOSS_HUBER, TPJ_LOSS_BCE } tpj_loss_kind_t;

typedef struct {
  tpj_hlo_builder_t* b;
  tpj_dtype_t cd;
  int64_t reduction;
  int ndim;
  int64_t dims[TPJ_MAX_DIMS];  /* where the elementwise term is computed */
  tpj_hlo_value_t x, t, w, p;  /* w: weight or invalid; p: beta/delta or invalid */
} tpj_loss_t;

/* the NumPy/PyTorch broadcast of two shapes; 0 when they do not broadcast */
static int tpj_loss_broadcast(const tpj_hlo_value_t* x, const tpj_hlo_value_t* y, int64_t* dims,
                              int* ndim) {
  int n = x->ndim > y->ndim ? x->ndim : y->ndim;
  for (int i = 0; i < n; ++i) {
    int xi = i - (n - x->ndim), yi = i - (n - y->ndim);
    int64_t a = xi >= 0 ? x->dims[xi] : 1, c = yi >= 0 ? y->dims[yi] : 1;
    if (a != c && a != 1 && c != 1) return 0;
    dims[i] = a == 1 ? c : a;
  }
  *ndim = n;
  return 1;
}

/* Reads the operands from first (self) on; dims: the broadcast shape of
 * self and target, or the output's for a backward. */
static int tpj_loss_load(tpj_op_ctx_t* ctx, int first, tpj_loss_kind_t kind, const char* name,
                         const tpj_rt_shape_t* at, tpj_loss_t* L) {
  tpj_hlo_builder_t* b = ctx->b;
  L->b = b;
  const tpj_attrs_loss_t* la = TPJ_ATTRS(ctx, tpj_attrs_loss_t);
  int hw = ctx->nattrs > 2 && la->has_weight;
  int hp = kind == TPJ_LOSS_SMOOTH_L1 || kind == TPJ_LOSS_HUBER;
  if (ctx->nattrs < 2 || ctx->nin < first + 2 + hw + hp) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "%s: bad operands", name));
    return 0;
  }
  L->cd = (tpj_dtype_t)la->compute;
  L->reduction = la->reduction;
  if (at) {
    L->ndim = at->ndim;
    for (int i = 0; i < at->ndim; ++i) L->dims[i] = at->dims[i];
  } else if (!tpj_loss_broadcast(&ctx->in[first], &ctx->in[first + 1], L->dims, &L->ndim)) {
    tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "%s: shapes do not broadcast", name));
    return 0;
  }
  L->x = tpj_ops_cast_to(b, ctx->in[first], L->cd, L->dims, L->ndim);
  L->t = tpj_ops_cast_to(b, ctx->in[first + 1], L->cd, L->dims, L->ndim);
  int next = first + 2;
  L->w = hw ? tpj_ops_cast_to(b, ctx->in[next++], L->cd, L->dims, L->ndim) : (tpj_hlo_value_t){-1, 0, 0, 0, {0}};
  L->p = hp ? tpj_ops_cast_to(b, ctx->in[next], L->cd, L->dims, L->ndim) : (tpj_hlo_value_t){-1, 0, 0, 0, {0}};
  return tpj_hlo_ok(b);
}

/* max(log(v), -100): CPU's clamp that keeps bce finite at 0 and 1 */
static tpj_hlo_value_t tpj_loss_clamped_log(tpj_loss_t* L, tpj_hlo_value_t v) {
  tpj_hlo_builder_t* b = L->b;
  tpj_hlo_value_t l = tpj_hlo_emit_unary(b, "stablehlo.log", v);
  return SEL(CMP(l, C(-100.0), "LT"), C(-100.0), l);
}

static tpj_hlo_value_t tpj_loss_term(tpj_loss_t* L, tpj_loss_kind_t kind) {
  tpj_hlo_builder_t* b = L->b;
  tpj_hlo_value_t d = SUB(L->x, L->t);
  tpj_hlo_value_t z = tpj_hlo_emit_unary(b, "stablehlo.abs", d);
  switch (kind) {
    case TPJ_LOSS_MSE:
      return MUL(d, d);
    case TPJ_LOSS_SMOOTH_L1:
      /* beta == 0 is l1: z < 0 never holds, and z - 0 is z */
      return SEL(CMP(z, L->p, "LT"), DIV(MUL(C(0.5), MUL(z, z)), L->p),
                 SUB(z, MUL(C(0.5), L->p)));
    case TPJ_LOSS_HUBER:
      return SEL(CMP(z, L->p, "LT"), MUL(C(0.5), MUL(z, z)),
                 MUL(L->p, SUB(z, MUL(C(0.5), L->p))));
    case TPJ_LOSS_BCE: {
      tpj_hlo_value_t r = SUB(MUL(SUB(L->t, C(1.0)), tpj_loss_clamped_log(L, SUB(C(1.0), L->x))),
                              MUL(L->t, tpj_loss_clamped_log(L, L->x)));
      return L->w.id >= 0 ? MUL(r, L->w) : r;
    }
  }
  return d;
}

static void tpj_loss_forward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, tpj_loss_kind_t kind,
                             const char* name) {
  tpj_loss_t Ls, *L = &Ls;
  if (!tpj_loss_load(ctx, 0, kind, name, NULL, L)) return;
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t r = tpj_loss_term(L, kind);
  if (L->reduction != 0) {
    int64_t all[TPJ_MAX_DIMS];
    for (int i = 0; i < r.ndim; ++i) all[i] = i;
    int64_t n = tpj_hlo_numel(&r);
    r = tpj_hlo_emit_reduce(b, r, tpj_hlo_emit_zero(b, L->cd), all, r.ndim, "stablehlo.add");
    /* mean of nothing is NaN, as on CPU (0 / 0) */
    if (L->reduction == 1) r = DIV(r, tpj_hlo_emit_const_f64(b, L->cd, (double)n));
  }
  const tpj_rt_shape_t* o = &ctx->outs[0];
  results[0] = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, r, o->dtype), o->dims, o->ndim);
}

static void tpj_loss_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, tpj_loss_kind_t kind,
                              const char* name) {
  const tpj_rt_shape_t* o = &ctx->outs[0];
  tpj_loss_t Ls, *L = &Ls;
  if (!tpj_loss_load(ctx, 1, kind, name, o, L)) return;
  tpj_hlo_builder_t* b = ctx->b;
  /* mean divides by self's numel, as CPU's backward does */
  int64_t n = 1;
  for (int i = 0; i < ctx->in[1].ndim; ++i) n *= ctx->in[1].dims[i];
  double norm = L->reduction == 1 ? 1.0 / (double)n : 1.0;
  tpj_hlo_value_t g = tpj_ops_cast_to(b, ctx->in[0], L->cd, L->dims, L->ndim);
  g = MUL(g, C(norm));
  tpj_hlo_value_t d = SUB(L->x, L->t), r;
  switch (kind) {
    case TPJ_LOSS_MSE:
      r = MUL(MUL(C(2.0), d), g);
      break;
    case TPJ_LOSS_SMOOTH_L1:
      r = SEL(CMP(d, tpj_hlo_emit_unary(b, "stablehlo.negate", L->p), "LE"),
              tpj_hlo_emit_unary(b, "stablehlo.negate", g),
              SEL(CMP(d, L->p, "GE"), g, DIV(MUL(d, g), L->p)));
      break;
    case TPJ_LOSS_HUBER:
      r = SEL(CMP(d, tpj_hlo_emit_unary(b, "stablehlo.negate", L->p), "LE"),
              tpj_hlo_emit_unary(b, "stablehlo.negate", MUL(g, L->p)),
              SEL(CMP(d, L->p, "GE"), MUL(g, L->p), MUL(d, g)));
      break;
    case TPJ_LOSS_BCE:
    default: {
      /* g * (x - t) / max((1 - x) x, 1e-12) * w */
      tpj_hlo_value_t den = MUL(SUB(C(1.0), L->x), L->x);
      den = SEL(CMP(den, C(1e-12), "LT"), C(1e-12), den);
      r = DIV(MUL(g, d), den);
      if (L->w.id >= 0) r = MUL(r, L->w);
      break;
    }
  }
  results[0] = tpj_hlo_emit_convert(b, r, o->dtype);
}

void tpj_lower_mse_loss(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_loss_forward(ctx, r, TPJ_LOSS_MSE, "mse_loss");
}
void tpj_lower_mse_loss_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_loss_backward(ctx, r, TPJ_LOSS_MSE, "mse_loss_backward");
}
void tpj_lower_smooth_l1_loss(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_loss_forward(ctx, r, TPJ_LOSS_SMOOTH_L1, "smooth_l1_loss");
}
void tpj_lower_smooth_l1_loss_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_loss_backward(ctx, r, TPJ_LOSS_SMOOTH_L1, "smooth_l1_loss_backward");
}
void tpj_lower_huber_loss(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_loss_forward(ctx, r, TPJ_LOSS_HUBER, "huber_loss");
}
void tpj_lower_huber_loss_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_loss_backward(ctx, r, TPJ_LOSS_HUBER, "huber_loss_backward");
}
void tpj_lower_binary_cross_entropy(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_loss_forward(ctx, r, TPJ_LOSS_BCE, "binary_cross_entropy");
}
void tpj_lower_binary_cross_entropy_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* r) {
  tpj_loss_backward(ctx, r, TPJ_LOSS_BCE, "binary_cross_entropy_backward");
}

/* ---- descriptor rows (desc.h) ---------------------------------------------
 * An empty result runs no program. The forwards check that self and target
 * broadcast in CPU's words; meta functions give the shapes. */

/* the parameter's argument index in (self, target, reduction, beta) and in
 * the backward's (grad_output, self, target, reduction, beta) */
static tpj_status_t tpj_check_beta_at(const tpj_op_call_t* c, int at) {
  if (!(c->args[at].f >= 0))
    return tpj_status_make(TPJ_INVALID_ARGUMENT,
                           "smooth_l1_loss does not support negative values for beta.");
  return NULL;
}
static tpj_status_t tpj_check_delta_at(const tpj_op_call_t* c, int at) {
  if (!(c->args[at].f > 0))
    return tpj_status_make(TPJ_INVALID_ARGUMENT,
                           "huber_loss does not support non-positive values for delta.");
  return NULL;
}
static tpj_status_t tpj_check_beta(const tpj_op_call_t* c) { return tpj_check_beta_at(c, 3); }
static tpj_status_t tpj_check_beta_bw(const tpj_op_call_t* c) { return tpj_check_beta_at(c, 4); }
static tpj_status_t tpj_check_delta(const tpj_op_call_t* c) { return tpj_check_delta_at(c, 3); }
static tpj_status_t tpj_check_delta_bw(const tpj_op_call_t* c) { return tpj_check_delta_at(c, 4); }

/* CPU's kernel raises when an input lies outside [0, 1] (NaN included); XLA
 * cannot raise, so the values are read on the host: one wait. */
static tpj_status_t tpj_check_bce(const tpj_op_call_t* c) {
  const tpj_op_arg_t* self = &c->args[0];
  const tpj_op_arg_t* target = &c->args[1];
  if (self->dtype != target->dtype || strcmp(self->dtype_name, target->dtype_name) != 0)
    return tpj_status_make(TPJ_INVALID_ARGUMENT, "Found dtype %s but expected %s",
                           target->dtype_name, self->dtype_name);
  double lo, hi;
  int known = 0;
  TPJ_RETURN_IF_ERROR(c->value_range(c, 0, &lo, &hi, &known));
  if (known && !(lo >= 0 && hi <= 1))
    return tpj_status_make(TPJ_INVALID_ARGUMENT, "all elements of input should be between 0 and 1");
  return NULL;
}

#define TPJ_L (TPJ_RULE_LOSS | TPJ_RULE_SKIP_EMPTY)
#define TPJ_LF (TPJ_L | TPJ_RULE_BROADCAST_CHECK)
static const tpj_op_desc_t kLossPointwiseRows[] = {
    TPJ_ROW(mse_loss, TPJ_LF, NULL, -1),
    TPJ_ROW(mse_loss_backward, TPJ_L, NULL, -1),
    {"smooth_l1_loss", "aten::smooth_l1_loss", TPJ_LF, NULL, -1, tpj_check_beta},
    {"smooth_l1_loss_backward", "aten::smooth_l1_loss_backward", TPJ_L, NULL, -1,
     tpj_check_beta_bw},
    {"huber_loss", "aten::huber_loss", TPJ_LF, NULL, -1, tpj_check_delta},
    {"huber_loss_backward", "aten::huber_loss_backward", TPJ_L, NULL, -1, tpj_check_delta_bw},
    {"binary_cross_entropy", "aten::binary_cross_entropy", TPJ_L | TPJ_RULE_CHECK_AFTER_META, NULL,
     -1, tpj_check_bce},
    TPJ_ROW(binary_cross_entropy_backward, TPJ_L, NULL, -1),
};
TPJ_DESC_LIST(tpj_loss_pointwise_rows, kLossPointwiseRows);
