/* ops/fft: the three aten ops every torch.fft function (and stft/istft)
 * reaches: _fft_c2c, _fft_r2c and _fft_c2r, lowered to stablehlo.fft.
 *
 * stablehlo.fft transforms the up to 3 innermost dims, so each group of at
 * most 3 requested dims is moved innermost (in the order PyTorch lists them:
 * the last one is the halved dim of r2c/c2r), transformed, and moved back.
 * Scaling follows PyTorch's fft_norm_mode (0 none, 1 1/sqrt(n), 2 1/n, n the
 * signal size: the input's sizes for c2c/r2c, the output's for c2r); XLA's
 * IFFT/IRFFT already divide by their lengths, which the final scale undoes.
 *
 * c2r follows CPU's kernels (MKL and pocketfft): an inverse c2c over all
 * but the last dim, then a 1-D c2r over the last, which reads the real part
 * only of bin 0 and (even sizes) bin n/2 — those imaginary parts are zeroed
 * here, so an input that is not Hermitian gives CPU's answer too.
 *
 * attrs: tpj_attrs_fft_c2c_t, tpj_attrs_fft_r2c_t, tpj_attrs_fft_c2r_t. */
#include "hlo/fft.h"
#include "ops/attrs.h"
#include "ops/ops.h"

typedef enum { TPJ_FFT_C2C, TPJ_FFT_R2C, TPJ_FFT_C2R } tpj_fft_kind_t;

/* stablehlo.fft of x over its dims ax[0..n) (n <= 3; ax[n-1] innermost):
 * moves them innermost, transforms, and moves them back. IRFFT's innermost
 * length is irfft_len (the real output's size); the others are x's sizes. */
static tpj_hlo_value_t tpj_fft_on(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_fft_t type,
                                  const int64_t* ax, int n, int64_t irfft_len) {
  int64_t perm[TPJ_MAX_DIMS], inv[TPJ_MAX_DIMS], len[3];
  int in_ax[TPJ_MAX_DIMS] = {0};
  int k = 0;
  for (int i = 0; i < n; ++i) in_ax[ax[i]] = 1;
  for (int d = 0; d < x.ndim; ++d)
    if (!in_ax[d]) perm[k++] = d;
  for (int i = 0; i < n; ++i) {
    perm[k++] = ax[i];
    len[i] = x.dims[ax[i]];
  }
  if (type == TPJ_HLO_FFT_IRFFT) len[n - 1] = irfft_len;
  for (int d = 0; d < x.ndim; ++d) inv[perm[d]] = d;
  tpj_hlo_value_t t = tpj_hlo_emit_transpose(b, x, perm);
  t = tpj_hlo_emit_fft(b, t, type, len, n);
  return tpj_hlo_emit_transpose(b, t, inv);
}

/* c2c over dims ax[0..n), in groups of at most 3. *div collects the lengths
 * an inverse transform divided by. */
static tpj_hlo_value_t tpj_fft_c2c_dims(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int forward,
                                        const int64_t* ax, int n, double* div) {
  for (int i = n; i > 0;) {
    int c = i < 3 ? i : 3;
    i -= c;
    if (!forward)
      for (int j = 0; j < c; ++j) *div *= (double)x.dims[ax[i + j]];
    x = tpj_fft_on(b, x, forward ? TPJ_HLO_FFT_FFT : TPJ_HLO_FFT_IFFT, ax + i, c, 0);
  }
  return x;
}

/* x with the imaginary part of bins 0 and (even len) len/2 along dim zeroed. */
static tpj_hlo_value_t tpj_fft_real_edges(tpj_hlo_builder_t* b, tpj_hlo_value_t x, int dim,
                                          int64_t len) {
  tpj_hlo_value_t re = tpj_hlo_emit_real(b, x), im = tpj_hlo_emit_imag(b, x);
  tpj_hlo_value_t pos = tpj_hlo_emit_iota(b, TPJ_I64, x.dims, x.ndim, dim);
  tpj_hlo_value_t zero_i = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, 0), x.dims,
                                                     x.ndim);
  tpj_hlo_value_t edge = tpj_hlo_emit_compare(b, pos, zero_i, "EQ");
  if (len % 2 == 0) {
    tpj_hlo_value_t half = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_const_i64(b, len / 2),
                                                     x.dims, x.ndim);
    edge = tpj_hlo_emit_binary(b, "stablehlo.or", edge, tpj_hlo_emit_compare(b, pos, half, "EQ"));
  }
  tpj_hlo_value_t zero = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, im.dtype), x.dims,
                                                   x.ndim);
  return tpj_hlo_emit_complex(b, re, tpj_hlo_emit_select(b, edge, zero, im));
}

static void tpj_lower_fft(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results, tpj_fft_kind_t kind) {
  tpj_hlo_builder_t* b = ctx->b;
  /* the words the three layouts share, read through c2c's */
  const tpj_attrs_fft_c2c_t* at = TPJ_ATTRS(ctx, tpj_attrs_fft_c2c_t);
  int words = TPJ_ATTRS_WORDS(tpj_attrs_fft_c2c_t);
  if (ctx->nin < 1 || ctx->nattrs < words || ctx->nouts < 1 || at->ndims < 0 ||
      ctx->nattrs < words + at->ndims)
    goto bad;
  tpj_hlo_value_t x = ctx->in[0];
  int64_t norm = at->norm;
  int64_t arg = kind == TPJ_FFT_C2C   ? at->forward
                : kind == TPJ_FFT_R2C ? TPJ_ATTRS(ctx, tpj_attrs_fft_r2c_t)->onesided
                                      : TPJ_ATTRS(ctx, tpj_attrs_fft_c2r_t)->last_dim_size;
  int n = (int)at->ndims;
  const int64_t* ax = at->dims;
  int seen[TPJ_MAX_DIMS] = {0};
  for (int i = 0; i < n; ++i) {
    if (ax[i] < 0 || ax[i] >= x.ndim || seen[ax[i]]) goto bad;
    seen[ax[i]] = 1;
  }
  if (norm < 0 || norm > 2 || (kind != TPJ_FFT_C2C && n < 1)) goto bad;
  if (at->conj)
    x = tpj_hlo_emit_complex(b, tpj_hlo_emit_real(b, x),
                             tpj_hlo_emit_unary(b, "stablehlo.negate", tpj_hlo_emit_imag(b, x)));
  double signal = 1.0, div = 1.0;
  for (int i = 0; i < n; ++i) signal *= (double)x.dims[ax[i]];
  switch (kind) {
    case TPJ_FFT_C2C:
      x = tpj_fft_c2c_dims(b, x, (int)arg, ax, n, &div);
      break;
    case TPJ_FFT_R2C:
      if (!arg) {
        /* Two-sided: the full complex transform of the real signal. */
        tpj_hlo_value_t zero = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_zero(b, x.dtype),
                                                         x.dims, x.ndim);
        x = tpj_fft_c2c_dims(b, tpj_hlo_emit_complex(b, x, zero), 1, ax, n, &div);
      } else {
        int c = n < 3 ? n : 3;
        x = tpj_fft_on(b, x, TPJ_HLO_FFT_RFFT, ax + n - c, c, 0);
        x = tpj_fft_c2c_dims(b, x, 1, ax, n - c, &div);
      }
      break;
    case TPJ_FFT_C2R: {
      int last = (int)ax[n - 1];
      if (arg < 1 || x.dims[last] != arg / 2 + 1) goto bad;
      signal = signal / (double)x.dims[last] * (double)arg;
      x = tpj_fft_c2c_dims(b, x, 0, ax, n - 1, &div);
      x = tpj_fft_real_edges(b, x, last, arg);
      div *= (double)arg;
      x = tpj_fft_on(b, x, TPJ_HLO_FFT_IRFFT, ax + n - 1, 1, arg);
      break;
    }
  }
  /* The scale is computed in f64 (the square root inside the program, which
   * folds it) and rounded once to the result's precision. */
  double scale = norm == 2 ? div / signal : div;
  if (scale != 1.0 || (norm == 1 && signal != 1.0)) {
    tpj_hlo_value_t s = tpj_hlo_emit_const_f64(b, TPJ_F64, scale);
    if (norm == 1)
      s = tpj_hlo_emit_binary(b, "stablehlo.divide", s,
                              tpj_hlo_emit_unary(b, "stablehlo.sqrt",
                                                 tpj_hlo_emit_const_f64(b, TPJ_F64, signal)));
    s = tpj_hlo_emit_broadcast_to(b, tpj_hlo_emit_convert(b, s, x.dtype), x.dims, x.ndim);
    x = tpj_hlo_emit_binary(b, "stablehlo.multiply", x, s);
  }
  if (tpj_hlo_ok(b) && (x.dtype != ctx->outs[0].dtype || x.ndim != ctx->outs[0].ndim)) goto bad;
  for (int d = 0; tpj_hlo_ok(b) && d < x.ndim; ++d)
    if (x.dims[d] != ctx->outs[0].dims[d]) goto bad;
  results[0] = x;
  return;
bad:
  tpj_hlo_fail(b, tpj_status_make(TPJ_INTERNAL, "fft: bad operands"));
}

void tpj_lower_fft_c2c(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_lower_fft(ctx, results, TPJ_FFT_C2C);
}

void tpj_lower_fft_r2c(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_lower_fft(ctx, results, TPJ_FFT_R2C);
}

void tpj_lower_fft_c2r(tpj_op_ctx_t* ctx, tpj_hlo_value_t* results) {
  tpj_lower_fft(ctx, results, TPJ_FFT_C2R);
}
