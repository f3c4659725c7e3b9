/* ops/attention: variable-length ("varlen") attention over packed
 * documents, the math FlashAttention's varlen kernels compute, for
 * torch.nn.attention.varlen (torch_attn::_varlen_attn and its backward;
 * TorchTitan's varlen attention calls these).
 *
 * q is (Tq, Hq, D), k and v are (Tk, Hk, D) with Hq a multiple of Hk (query
 * head h reads key head h / (Hq / Hk), as SDPA's enable_gqa). cu_seq_q and
 * cu_seq_k (N + 1 offsets) cut the rows into N documents; a query attends
 * only to the keys of its own document, and with causal or a window only to
 * those the bottom-right aligned band allows (FlashAttention's convention:
 * the last query of a document sees the last key of it). Rows past the last
 * offset belong to no document: their output is 0 and their log-sum-exp is
 * +inf, as FlashAttention leaves them, so the backward gives them no
 * gradient.
 *
 * The scores are computed densely over all Tq x Tk pairs with the mask
 * built from the offsets on the device (no host round trip, one program per
 * shape whatever the document lengths), in the accumulation dtype. The
 * backward recomputes the probabilities from the saved log-sum-exp, as
 * FlashAttention does. */
#include <math.h>
#include <stdio.h>

#include "hlo/linalg.h"
#include "ops/attrs.h"
#include "ops/lower_util.h"
#include "ops/ops.h"
#include "ops/paged.h"
#include "ops/sugar.h"

/* Per row t of a packed sequence cut by cu (N + 1 offsets, i64): which
 * document it is in (N for none), its position in that document and that
 * document's length. */
typedef struct {
  tpj_hlo_value_t doc, rel, len;
} tpj_varlen_rows_t;

static tpj_varlen_rows_t tpj_varlen_rows(tpj_hlo_builder_t* b, tpj_hlo_value_t cu, int64_t t) {
  tpj_varlen_rows_t r;
  int64_t n = cu.dims[0] - 1;
  tpj_hlo_value_t cu64 = tpj_hlo_emit_convert(b, cu, TPJ_I64);
  tpj_hlo_value_t ends = tpj_ops_range_1d(b, cu64, 1, n + 1);
  int64_t tn[2] = {t, n}, d1 = 1;
  tpj_hlo_value_t pos = tpj_hlo_emit_iota(b, TPJ_I64, tn, 2, 0);
  tpj_hlo_value_t ends2 = tpj_hlo_emit_broadcast_in_dim(b, ends, tn, 2, &d1);
  /* doc = the number of documents that end at or before row t */
  tpj_hlo_value_t past = tpj_hlo_emit_convert(b, CMP(pos, ends2, "GE"), TPJ_I64);
  r.doc = tpj_hlo_emit_reduce(b, past, tpj_hlo_emit_zero(b, TPJ_I64), &d1, 1, "stablehlo.add");
  tpj_hlo_value_t row = tpj_hlo_emit_iota(b, TPJ_I64, &t, 1, 0);
  /* a row in no document reads the last offset twice: length 0 */
  tpj_hlo_value_t nxt = tpj_hlo_emit_select(b, CMP(r.doc, tpj_ops_i64_like(b, r.doc, n), "LT"),
                                            ADD(r.doc, tpj_ops_i64_like(b, r.doc, 1)), r.doc);
  tpj_hlo_value_t start = tpj_hlo_emit_gather_1d(b, cu64, r.doc);
  r.rel = SUB(row, start);
  r.len = SUB(tpj_hlo_emit_gather_1d(b, cu64, nxt), start);
  return r;
}

/* The (Tq, Tk) mask of allowed pairs. attrs: causal, window left, window
 * right (-1: unbounded). */
static tpj_hlo_value_t tpj_varlen_mask(tpj_hlo_builder_t* b, tpj_hlo_value_t cu_q,
                                       tpj_hlo_value_t cu_k, int64_t tq, int64_t tk,
                                       int64_t causal, int64_t left, int64_t right) {
  int64_t n = cu_q.dims[0] - 1;
  tpj_varlen_rows_t q = tpj_varlen_rows(b, cu_q, tq), k = tpj_varlen_rows(b, cu_k, tk);
  int64_t qk[2] = {tq, tk}, d0 = 0, d1 = 1;
#define ROWS(x) tpj_hlo_emit_broadcast_in_dim(b, x, qk, 2, &d0)
#define COLS(x) tpj_hlo_emit_broadcast_in_dim(b, x, qk, 2, &d1)
  tpj_hlo_value_t dq = ROWS(q.doc);
  tpj_hlo_value_t m = AND(CMP(dq, COLS(k.doc), "EQ"),
                          CMP(dq, tpj_ops_i64_like(b, dq, n), "LT"));
  if (causal) right = 0;
  if (left >= 0 || right >= 0) {
    /* the key position that lines up with query row i of the same document:
     * rel_q + (len_k - len_q), the bottom-right alignment */
    tpj_hlo_value_t klen = tpj_hlo_emit_gather_1d(
        b, tpj_hlo_emit_convert(b, SUB(tpj_ops_range_1d(b, cu_k, 1, n + 1),
                                       tpj_ops_range_1d(b, cu_k, 0, n)), TPJ_I64),
        tpj_hlo_emit_select(b, CMP(q.doc, tpj_ops_i64_like(b, q.doc, n), "LT"), q.doc,
                            tpj_ops_i64_like(b, q.doc, 0)));
    tpj_hlo_value_t diag = ROWS(ADD(q.rel, SUB(klen, q.len)));
    tpj_hlo_value_t kr = COLS(k.rel);
    if (right >= 0) m = AND(m, CMP(kr, ADD(diag, tpj_ops_i64_like(b, diag, right)), "LE"));
    if (left >= 0) m = AND(m, CMP(kr, SUB(diag, tpj_ops_i64_like(b, diag, left)), "GE"));
  }
#undef ROWS
#undef COLS
  return m;
}

/* q (Tq, Hk*G, D) as (Tq, Hk, G, D), k (Tk, Hk, D): the scores (Hk, G, Tq, Tk). */
static tpj_hlo_value_t tpj_varlen_scores(tpj_hlo_builder_t* b, tpj_hlo_value_t q4,
                                         tpj_hlo_value_t k, tpj_dtype_t cd) {
  int64_t qb = 1, kb = 1, qc = 3, kc = 2;
  /* batch Hk; q's free (Tq, G), k's free (Tk): (Hk, Tq, G, Tk) */
  tpj_hlo_value_t s = tpj_hlo_emit_dot_general(b, q4, k, &qb, &kb, 1, &qc, &kc, 1, cd);
  int64_t perm[4] = {0, 2, 1, 3};
  return tpj_hlo_emit_transpose(b, s, perm);
}

typedef struct {
  tpj_dtype_t cd;
  int64_t tq, tk, hq, hk, g, d;
  tpj_hlo_value_t q4, k, v, scale, mask4;
} tpj_varlen_t;

/* Reads the operands shared by forward and backward: q, k, v at in[qi..],
 * cu_q, cu_k at in[ci..], the scale at in[si]; tpj_attrs_varlen_attn_t. */
static int tpj_varlen_setup(tpj_op_ctx_t* ctx, int qi, int ci, int si, tpj_varlen_t* p) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_hlo_value_t q = ctx->in[qi], k = ctx->in[qi + 1], v = ctx->in[qi + 2];
  if (q.ndim != 3 || k.ndim != 3 || v.ndim != 3 || ctx->in[ci].ndim != 1 ||
      ctx->in[ci + 1].ndim != 1 || ctx->in[ci].dims[0] != ctx->in[ci + 1].dims[0] ||
      ctx->in[ci].dims[0] < 1 || k.dims[1] == 0 || q.dims[1] % k.dims[1] != 0)
    return tpj_ops_fail_operands(ctx, "torch_attn::_varlen_attn");
  const tpj_attrs_varlen_attn_t* at = TPJ_ATTRS(ctx, tpj_attrs_varlen_attn_t);
  p->cd = (tpj_dtype_t)at->compute;
  p->tq = q.dims[0];
  p->tk = k.dims[0];
  p->hq = q.dims[1];
  p->hk = k.dims[1];
  p->g = p->hq / p->hk;
  p->d = q.dims[2];
  int64_t q4d[4] = {p->tq, p->hk, p->g, p->d};
  p->q4 = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, q, p->cd), q4d, 4);
  p->k = tpj_hlo_emit_convert(b, k, p->cd);
  p->v = tpj_hlo_emit_convert(b, v, p->cd);
  p->scale = tpj_hlo_emit_convert(b, ctx->in[si], p->cd);
  tpj_hlo_value_t m = tpj_varlen_mask(b, ctx->in[ci], ctx->in[ci + 1], p->tq, p->tk,
                                      at->causal, at->left, at->right);
  int64_t sd[4] = {p->hk, p->g, p->tq, p->tk}, md[2] = {2, 3};
  p->mask4 = tpj_hlo_emit_broadcast_in_dim(b, m, sd, 4, md);
  return tpj_hlo_ok(b);
}

/* (Hk, G, Tq) -> (Hq, Tq): query head h = hk * G + g */
static tpj_hlo_value_t tpj_varlen_heads_rows(tpj_hlo_builder_t* b, const tpj_varlen_t* p,
                                             tpj_hlo_value_t x) {
  int64_t d[2] = {p->hq, p->tq};
  return tpj_hlo_emit_reshape(b, x, d, 2);
}

/* inputs: q, k, v, cu_q, cu_k, scale; outs: out (Tq, Hq, D), lse (Hq, Tq) */
void tpj_lower_varlen_attn(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_varlen_t p;
  if (!tpj_ops_need(ctx, 6, 4, 2, "torch_attn::_varlen_attn") ||
      !tpj_varlen_setup(ctx, 0, 3, 5, &p))
    return;
  tpj_hlo_value_t s = tpj_varlen_scores(b, p.q4, p.k, p.cd);
  s = MUL(s, tpj_ops_fill_like(b, p.scale, &s));
  tpj_hlo_value_t ninf = tpj_ops_full_like(b, s, p.cd, -INFINITY);
  s = SEL(p.mask4, s, ninf);
  int64_t last = 3, sd[4] = {p.hk, p.g, p.tq, p.tk}, keep[3] = {0, 1, 2};
  tpj_hlo_value_t mx = tpj_hlo_emit_reduce(b, s, tpj_hlo_emit_extreme(b, p.cd, 0), &last, 1,
                                           "stablehlo.maximum");
  /* a row with no allowed key: max -inf, shifted by 0 so exp gives 0s */
  tpj_hlo_value_t empty = CMP(mx, tpj_ops_full_like(b, mx, p.cd, -INFINITY), "EQ");
  mx = SEL(empty, tpj_ops_full_like(b, mx, p.cd, 0.0), mx);
  tpj_hlo_value_t e = tpj_hlo_emit_unary(
      b, "stablehlo.exponential", SUB(s, tpj_hlo_emit_broadcast_in_dim(b, mx, sd, 4, keep)));
  tpj_hlo_value_t l = tpj_hlo_emit_reduce(b, e, tpj_hlo_emit_zero(b, p.cd), &last, 1,
                                          "stablehlo.add");
  tpj_hlo_value_t one = tpj_ops_full_like(b, l, p.cd, 1.0);
  tpj_hlo_value_t lsafe = SEL(empty, one, l);
  tpj_hlo_value_t lse = SEL(empty, tpj_ops_full_like(b, l, p.cd, INFINITY),
                            ADD(mx, tpj_hlo_emit_unary(b, "stablehlo.log", lsafe)));
  /* (Hk, G, Tq, Tk) . (Tk, Hk, D): batch Hk, contract Tk -> (Hk, G, Tq, D) */
  int64_t pb = 0, vb = 1, pc = 3, vc = 0;
  tpj_hlo_value_t o = tpj_hlo_emit_dot_general(b, e, p.v, &pb, &vb, 1, &pc, &vc, 1, p.cd);
  int64_t od[4] = {p.hk, p.g, p.tq, p.d};
  o = DIV(o, tpj_hlo_emit_broadcast_in_dim(b, lsafe, od, 4, keep));
  int64_t perm[4] = {2, 0, 1, 3}, outd[3] = {p.tq, p.hq, p.d};
  o = tpj_hlo_emit_reshape(b, tpj_hlo_emit_transpose(b, o, perm), outd, 3);
  results[0] = tpj_hlo_emit_convert(b, o, ctx->outs[0].dtype);
  results[1] = tpj_hlo_emit_convert(b, tpj_varlen_heads_rows(b, &p, lse), ctx->outs[1].dtype);
}

/* inputs: grad_out, q, k, v, out, lse, cu_q, cu_k, scale; outs: dq, dk, dv */
void tpj_lower_varlen_attn_backward(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_hlo_builder_t* b = ctx->b;
  tpj_varlen_t p;
  if (!tpj_ops_need(ctx, 9, 4, 3, "torch_attn::_varlen_attn_backward") ||
      !tpj_varlen_setup(ctx, 1, 6, 8, &p))
    return;
  int64_t q4d[4] = {p.tq, p.hk, p.g, p.d}, sd[4] = {p.hk, p.g, p.tq, p.tk};
  int64_t keep[3] = {0, 1, 2}, hd[3] = {p.hk, p.g, p.tq};
  tpj_hlo_value_t go = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, ctx->in[0], p.cd), q4d, 4);
  tpj_hlo_value_t out = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, ctx->in[4], p.cd), q4d, 4);
  tpj_hlo_value_t lse = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, ctx->in[5], p.cd), hd, 3);
  tpj_hlo_value_t s = tpj_varlen_scores(b, p.q4, p.k, p.cd);
  s = MUL(s, tpj_ops_fill_like(b, p.scale, &s));
  /* P = exp(s - lse) on allowed pairs; rows with lse +inf give 0 */
  tpj_hlo_value_t pr = tpj_hlo_emit_unary(
      b, "stablehlo.exponential", SUB(s, tpj_hlo_emit_broadcast_in_dim(b, lse, sd, 4, keep)));
  pr = SEL(p.mask4, pr, tpj_ops_full_like(b, pr, p.cd, 0.0));
  /* dV = P^T dO: batch Hk, contract (G, Tq) -> (Hk, Tk, D) */
  int64_t pb = 0, ob = 1, pc2[2] = {1, 2}, oc2[2] = {2, 0};
  tpj_hlo_value_t dv = tpj_hlo_emit_dot_general(b, pr, go, &pb, &ob, 1, pc2, oc2, 2, p.cd);
  /* dP = dO V^T: batch Hk, contract D -> (Hk, Tq, G, Tk) -> (Hk, G, Tq, Tk) */
  int64_t vb = 1, oc = 3, vc = 2, perm_s[4] = {0, 2, 1, 3};
  tpj_hlo_value_t dp = tpj_hlo_emit_transpose(
      b, tpj_hlo_emit_dot_general(b, go, p.v, &ob, &vb, 1, &oc, &vc, 1, p.cd), perm_s);
  /* delta = rowsum(dO * O): (Tq, Hk, G) -> (Hk, G, Tq) */
  int64_t dlast = 3, perm_r[3] = {1, 2, 0};
  tpj_hlo_value_t delta = tpj_hlo_emit_transpose(
      b, tpj_hlo_emit_reduce(b, MUL(go, out), tpj_hlo_emit_zero(b, p.cd), &dlast, 1,
                             "stablehlo.add"),
      perm_r);
  tpj_hlo_value_t ds = MUL(pr, SUB(dp, tpj_hlo_emit_broadcast_in_dim(b, delta, sd, 4, keep)));
  ds = MUL(ds, tpj_ops_fill_like(b, p.scale, &ds));
  /* dQ = dS K: batch Hk, contract Tk -> (Hk, G, Tq, D) -> (Tq, Hq, D) */
  int64_t sb = 0, kb = 1, sc = 3, kc = 0;
  tpj_hlo_value_t dq = tpj_hlo_emit_dot_general(b, ds, p.k, &sb, &kb, 1, &sc, &kc, 1, p.cd);
  int64_t perm_q[4] = {2, 0, 1, 3}, qd[3] = {p.tq, p.hq, p.d};
  dq = tpj_hlo_emit_reshape(b, tpj_hlo_emit_transpose(b, dq, perm_q), qd, 3);
  /* dK = dS^T Q: batch Hk, contract (G, Tq) -> (Hk, Tk, D) */
  int64_t qb = 1, qc2[2] = {2, 0};
  tpj_hlo_value_t dk = tpj_hlo_emit_dot_general(b, ds, p.q4, &sb, &qb, 1, pc2, qc2, 2, p.cd);
  int64_t perm_k[3] = {1, 0, 2};
  results[0] = tpj_hlo_emit_convert(b, dq, ctx->outs[0].dtype);
  results[1] = tpj_hlo_emit_convert(b, tpj_hlo_emit_transpose(b, dk, perm_k), ctx->outs[1].dtype);
  results[2] = tpj_hlo_emit_convert(b, tpj_hlo_emit_transpose(b, dv, perm_k), ctx->outs[2].dtype);
}

/* Paged attention for serving (vLLM's tpu backend, python/torch_pjrt/vllm):
 * query tokens attend to keys and values kept in a block cache, read through
 * each request's block table, without gathering a whole context per token.
 *
 * The step's query rows are laid out on the host in P tiles of T rows; the
 * rows of one tile belong to one request (decode steps use T = 1, steps with
 * prefills a larger T, so that one gathered block serves T queries). A
 * stablehlo.while walks the context c blocks at a time: each tile gathers
 * its request's next c blocks, [P, c * block, Hk, 2D], and folds their
 * scores into a running maximum, sum and weighted value sum (the online
 * softmax), so memory stays O(P * c * block) whatever the context length.
 * The trip count comes from the rows' positions on the device (the longest
 * context of the step), not from the table's width.
 *
 * Inputs: q (N, Hq, D); cache (blocks, block, Hk, 2D), keys then values in
 * the last dim (vLLM's LBNHC); tile_blocks (P, W) integer block ids, W a
 * multiple of c; row_token (P*T) the query token of each tile row;
 * row_pos (P*T) its position in its sequence, -1 for a padding row;
 * token_row (N) each token's row; scale and soft_cap (0-d);
 * tpj_attrs_paged_attention_t. A key at position k is visible to a row
 * at position p when k <= p (and k > p - window). A row that sees no key
 * gives 0. */
void tpj_lower_paged_attention(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  static const char* kOp = "tpj::paged_attention";
  tpj_hlo_builder_t* b = ctx->b;
  if (!tpj_ops_need(ctx, 8, 4, 1, kOp)) return;
  tpj_hlo_value_t q = ctx->in[0], cache = ctx->in[1], tb = ctx->in[2];
  tpj_hlo_value_t row_tok = ctx->in[3], row_pos = ctx->in[4], tok_row = ctx->in[5];
  const tpj_attrs_paged_attention_t* at = TPJ_ATTRS(ctx, tpj_attrs_paged_attention_t);
  tpj_dtype_t cd = (tpj_dtype_t)at->compute;
  int64_t c = at->chunk_blocks, window = at->window, has_cap = at->has_soft_cap;
  {
    const tpj_hlo_value_t* vs[6] = {&q, &cache, &tb, &row_tok, &row_pos, &tok_row};
    tpj_paged_operand_t ops[6];
    for (int i = 0; i < 6; ++i)
      ops[i] = (tpj_paged_operand_t){vs[i]->dtype, tpj_dtype_c10_name(vs[i]->dtype), vs[i]->ndim,
                                     vs[i]->dims};
    tpj_paged_call_t call = {ops[0], ops[1], ops[2], ops[3], ops[4], ops[5], c, window != -1,
                             window};
    tpj_status_t st = tpj_ops_paged_attention_check(&call);
    if (st) {
      tpj_hlo_fail(b, st);
      return;
    }
  }
  int64_t hq = q.dims[1], d = q.dims[2];
  int64_t bs = cache.dims[1], hk = cache.dims[2], g = hq / hk;
  int64_t np = tb.dims[0], w = tb.dims[1], t = row_tok.dims[0] / np, tg = t * g, ck = c * bs;

  /* the tiles' queries, (P, Hk, T*G, D): row r = t*G + g of key head h */
  tpj_hlo_value_t qt = tpj_hlo_emit_take(b, tpj_hlo_emit_convert(b, q, cd), row_tok, 0);
  int64_t q5[5] = {np, t, hk, g, d}, p5[5] = {0, 2, 1, 3, 4}, q4[4] = {np, hk, tg, d};
  qt = tpj_hlo_emit_reshape(
      b, tpj_hlo_emit_transpose(b, tpj_hlo_emit_reshape(b, qt, q5, 5), p5), q4, 4);
  int64_t pt[2] = {np, t};
  tpj_hlo_value_t qpos = tpj_hlo_emit_reshape(b, tpj_hlo_emit_convert(b, row_pos, TPJ_I64), pt, 2);
  tpj_hlo_value_t tbl = tpj_hlo_emit_convert(b, tb, TPJ_I64);

  /* chunks to walk: enough for the furthest row, at most the table's */
  int64_t d0 = 0;
  tpj_hlo_value_t far = tpj_hlo_emit_reduce(b, tpj_hlo_emit_convert(b, row_pos, TPJ_I64),
                                            tpj_hlo_emit_extreme(b, TPJ_I64, 0), &d0, 1,
                                            "stablehlo.maximum");
  tpj_hlo_value_t nch = tpj_hlo_emit_binary(
      b, "stablehlo.divide", ADD(far, tpj_hlo_emit_const_i64(b, ck)), tpj_hlo_emit_const_i64(b, ck));
  nch = tpj_hlo_emit_binary(b, "stablehlo.minimum", nch, tpj_hlo_emit_const_i64(b, w / c));

  int64_t st[3] = {np, hk, tg};
  tpj_hlo_value_t m0 = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_extreme(b, cd, 0), st, 3);
  tpj_hlo_value_t l0 = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, cd), st, 3);
  tpj_hlo_value_t a0 = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, cd), q4, 4);
  tpj_hlo_value_t scale = tpj_hlo_emit_convert(b, ctx->in[6], cd);
  tpj_hlo_value_t cap = tpj_hlo_emit_convert(b, ctx->in[7], cd);
  enum { J, M, L, ACC, CACHE, TBL, QT, QPOS, NCH, SCALE, CAP, NV };
  tpj_hlo_value_t init[NV] = {tpj_hlo_emit_const_i64(b, 0), m0, l0, a0, cache, tbl, qt, qpos,
                              nch, scale, cap};
  tpj_hlo_value_t cv[NV], v[NV], res[NV];
  tpj_hlo_while_t lp;
  tpj_hlo_while_begin(b, &lp, init, NV, cv);
  tpj_hlo_while_body(b, &lp, CMP(cv[J], cv[NCH], "LT"), v);
  {
    tpj_hlo_value_t z = tpj_hlo_emit_const_i64(b, 0);
    /* the c blocks of each tile at this step: (P, c) -> (P*c, block, Hk, 2D) */
    tpj_hlo_value_t off[2] = {z, MUL(v[J], tpj_hlo_emit_const_i64(b, c))};
    int64_t pc[2] = {np, c}, pcn = np * c;
    tpj_hlo_value_t ids = tpj_hlo_emit_reshape(b, tpj_hlo_emit_dynamic_slice(b, v[TBL], off, pc),
                                               &pcn, 1);
    int64_t kv4[4] = {np, ck, hk, 2 * d};
    tpj_hlo_value_t kv = tpj_hlo_emit_convert(
        b, tpj_hlo_emit_reshape(b, tpj_hlo_emit_take(b, v[CACHE], ids, 0), kv4, 4), cd);
    int64_t lo_k[4] = {0, 0, 0, 0}, hi_k[4] = {np, ck, hk, d}, lo_v[4] = {0, 0, 0, d},
            hi_v[4] = {np, ck, hk, 2 * d}, one[4] = {1, 1, 1, 1};
    tpj_hlo_value_t k = tpj_hlo_emit_slice(b, kv, lo_k, hi_k, one);
    tpj_hlo_value_t vv = tpj_hlo_emit_slice(b, kv, lo_v, hi_v, one);
    /* scores (P, Hk, T*G, c*block) */
    int64_t qb[2] = {0, 1}, kb[2] = {0, 2}, qc = 3, kc = 3;
    tpj_hlo_value_t s = tpj_hlo_emit_dot_general(b, v[QT], k, qb, kb, 2, &qc, &kc, 1, cd);
    s = MUL(s, tpj_ops_fill_like(b, v[SCALE], &s));
    if (has_cap) {
      tpj_hlo_value_t capb = tpj_ops_fill_like(b, v[CAP], &s);
      s = MUL(tpj_hlo_emit_unary(b, "stablehlo.tanh", DIV(s, capb)), capb);
    }
    /* visible keys: position j*c*block + i <= the row's position */
    int64_t ptk[3] = {np, t, ck}, d01[2] = {0, 1};
    tpj_hlo_value_t kpos = ADD(tpj_hlo_emit_iota(b, TPJ_I64, ptk, 3, 2),
                               tpj_hlo_emit_broadcast_to(b, MUL(v[J], tpj_hlo_emit_const_i64(b, ck)), ptk, 3));
    tpj_hlo_value_t rp = tpj_hlo_emit_broadcast_in_dim(b, v[QPOS], ptk, 3, d01);
    tpj_hlo_value_t vis = CMP(kpos, rp, "LE");
    if (window >= 0)
      vis = AND(vis, CMP(kpos, SUB(rp, tpj_ops_i64_like(b, rp, window)), "GT"));
    int64_t v5[5] = {np, hk, t, g, ck}, vd[3] = {0, 2, 4}, s4[4] = {np, hk, tg, ck};
    vis = tpj_hlo_emit_reshape(b, tpj_hlo_emit_broadcast_in_dim(b, vis, v5, 5, vd), s4, 4);
    s = SEL(vis, s, tpj_ops_full_like(b, s, cd, -INFINITY));
    /* the online softmax update */
    int64_t last = 3, keep[3] = {0, 1, 2};
    tpj_hlo_value_t bm = tpj_hlo_emit_reduce(b, s, tpj_hlo_emit_extreme(b, cd, 0), &last, 1,
                                             "stablehlo.maximum");
    tpj_hlo_value_t mn = tpj_hlo_emit_binary(b, "stablehlo.maximum", v[M], bm);
    tpj_hlo_value_t msafe = SEL(CMP(mn, tpj_ops_full_like(b, mn, cd, -INFINITY), "EQ"),
                                tpj_ops_full_like(b, mn, cd, 0.0), mn);
    tpj_hlo_value_t p = tpj_hlo_emit_unary(
        b, "stablehlo.exponential", SUB(s, tpj_hlo_emit_broadcast_in_dim(b, msafe, s4, 4, keep)));
    tpj_hlo_value_t alpha = tpj_hlo_emit_unary(b, "stablehlo.exponential", SUB(v[M], msafe));
    tpj_hlo_value_t l = ADD(MUL(v[L], alpha), tpj_hlo_emit_reduce(b, p, tpj_hlo_emit_zero(b, cd),
                                                                  &last, 1, "stablehlo.add"));
    /* (P, Hk, T*G, c*block) . (P, c*block, Hk, D) -> (P, Hk, T*G, D) */
    int64_t pb[2] = {0, 1}, vb[2] = {0, 2}, pcc = 3, vc = 1;
    tpj_hlo_value_t pv = tpj_hlo_emit_dot_general(b, p, vv, pb, vb, 2, &pcc, &vc, 1, cd);
    tpj_hlo_value_t acc = ADD(MUL(v[ACC], tpj_hlo_emit_broadcast_in_dim(b, alpha, q4, 4, keep)), pv);
    tpj_hlo_value_t next[NV] = {ADD(v[J], tpj_hlo_emit_const_i64(b, 1)), mn, l, acc, v[CACHE],
                                v[TBL], v[QT], v[QPOS], v[NCH], v[SCALE], v[CAP]};
    tpj_hlo_while_end(b, &lp, next, res);
  }
  /* out = acc / sum (0 for a row that saw nothing), back to (N, Hq, D) */
  int64_t keep[3] = {0, 1, 2};
  tpj_hlo_value_t l = res[L];
  tpj_hlo_value_t lsafe = SEL(CMP(l, tpj_ops_full_like(b, l, cd, 0.0), "EQ"),
                              tpj_ops_full_like(b, l, cd, 1.0), l);
  tpj_hlo_value_t o = DIV(res[ACC], tpj_hlo_emit_broadcast_in_dim(b, lsafe, q4, 4, keep));
  int64_t o5[5] = {np, hk, t, g, d}, rows[3] = {np * t, hq, d};
  o = tpj_hlo_emit_reshape(b, tpj_hlo_emit_transpose(b, tpj_hlo_emit_reshape(b, o, o5, 5), p5),
                           rows, 3);
  o = tpj_hlo_emit_take(b, o, tok_row, 0);
  results[0] = tpj_hlo_emit_convert(b, o, ctx->outs[0].dtype);
}

/* ---- paged attention's shape contract (paged.h) ---------------------------- */

#define TPJ_PAGED "torch_pjrt::paged_attention"

/* "[a, b, c]", as PyTorch prints sizes */
static const char* tpj_paged_dims(const tpj_paged_operand_t* t, char* buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < t->ndim && k < n; ++i)
    k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
  if (k < n) snprintf(buf + k, n - k, "]");
  return buf;
}

static tpj_status_t tpj_paged_index(const tpj_paged_operand_t* t, const char* name, int ndim) {
  char s[160];
  if (t->ndim != ndim)
    return tpj_status_make(TPJ_INVALID_ARGUMENT, TPJ_PAGED ": %s must be %d-D, got shape %s",
                           name, ndim, tpj_paged_dims(t, s, sizeof(s)));
  if (t->dtype != TPJ_I32 && t->dtype != TPJ_I64)
    return tpj_status_make(TPJ_INVALID_ARGUMENT, TPJ_PAGED ": %s must be int32 or int64, got %s",
                           name, t->dtype_name);
  return NULL;
}

tpj_status_t tpj_ops_paged_attention_check(const tpj_paged_call_t* c) {
  char s[160], s2[160];
  const tpj_paged_operand_t *q = &c->query, *kv = &c->kv_cache, *tb = &c->tile_blocks;
  const tpj_paged_operand_t *rt = &c->row_token, *rp = &c->row_pos, *tr = &c->token_row;
  if (q->ndim != 3)
    return tpj_status_make(TPJ_INVALID_ARGUMENT,
                           TPJ_PAGED ": query must be (tokens, heads, head_size), got shape %s",
                           tpj_paged_dims(q, s, sizeof(s)));
  if (kv->ndim != 4)
    return tpj_status_make(
        TPJ_INVALID_ARGUMENT,
        TPJ_PAGED ": kv_cache must be (blocks, block_size, kv_heads, 2 * head_size), got shape %s",
        tpj_paged_dims(kv, s, sizeof(s)));
  if (!tpj_dtype_is_float(q->dtype) || !tpj_dtype_is_float(kv->dtype))
    return tpj_status_make(TPJ_INVALID_ARGUMENT,
                           TPJ_PAGED ": query and kv_cache must be floating, got %s and %s",
                           q->dtype_name, kv->dtype_name);
  if (kv->dims[3] != 2 * q->dims[2])
    return tpj_status_make(TPJ_INVALID_ARGUMENT,
                           TPJ_PAGED ": kv_cache's last dim (%lld) must be twice the head size "
                           "(%lld)",
                           (long long)kv->dims[3], (long long)q->dims[2]);
  if (!(kv->dims[2] > 0 && q->dims[1] % kv->dims[2] == 0))
    return tpj_status_make(TPJ_INVALID_ARGUMENT,
                           TPJ_PAGED ": the query heads (%lld) must be a multiple of the kv heads "
                           "(%lld)",
                           (long long)q->dims[1], (long long)kv->dims[2]);
  if (c->chunk_blocks < 1)
    return tpj_status_make(TPJ_INVALID_ARGUMENT,
                           TPJ_PAGED ": chunk_blocks must be at least 1, got %lld",
                           (long long)c->chunk_blocks);
  if (!(tb->ndim == 2 && tb->dims[0] >= 1 && tb->dims[1] % c->chunk_blocks == 0))
    return tpj_status_make(TPJ_INVALID_ARGUMENT,
                           TPJ_PAGED ": tile_blocks must be (tiles, width) with width a multiple "
                           "of chunk_blocks (%lld), got shape %s",
                           (long long)c->chunk_blocks, tpj_paged_dims(tb, s, sizeof(s)));
  int64_t tiles = tb->dims[0];
  int64_t rows = 1;
  for (int i = 0; i < rt->ndim; ++i) rows *= rt->dims[i];
  int same = rp->ndim == rt->ndim;
  for (int i = 0; same && i < rt->ndim; ++i) same = rp->dims[i] == rt->dims[i];
  if (!(rt->ndim == 1 && rows % tiles == 0 && same))
    return tpj_status_make(TPJ_INVALID_ARGUMENT,
                           TPJ_PAGED ": row_token and row_pos must be 1-D, of the same length, a "
                           "multiple of the %lld tiles; got shapes %s and %s",
                           (long long)tiles, tpj_paged_dims(rt, s, sizeof(s)),
                           tpj_paged_dims(rp, s2, sizeof(s2)));
  if (!(tr->ndim == 1 && tr->dims[0] == q->dims[0]))
    return tpj_status_make(TPJ_INVALID_ARGUMENT,
                           TPJ_PAGED ": token_row must have one entry per query token (%lld), got "
                           "shape %s",
                           (long long)q->dims[0], tpj_paged_dims(tr, s, sizeof(s)));
  if (c->has_window && c->window < 1)
    return tpj_status_make(TPJ_INVALID_ARGUMENT, TPJ_PAGED ": window must be positive, got %lld",
                           (long long)c->window);
  TPJ_RETURN_IF_ERROR(tpj_paged_index(tb, "tile_blocks", 2));
  TPJ_RETURN_IF_ERROR(tpj_paged_index(rt, "row_token", 1));
  TPJ_RETURN_IF_ERROR(tpj_paged_index(rp, "row_pos", 1));
  return tpj_paged_index(tr, "token_row", 1);
}
