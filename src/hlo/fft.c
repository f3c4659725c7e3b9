/* hlo/fft: stablehlo.fft (see fft.h). The emitter derives the result type
 * from the operand and the FFT type, so a lowering cannot print a type the
 * verifier would reject. */
#include "hlo/fft.h"

#include "hlo/internal.h"

static tpj_hlo_value_t tpj_fft_fail(tpj_hlo_builder_t* b, const char* msg) {
  tpj_hlo_fail(b, tpj_status_make(TPJ_INVALID_ARGUMENT, "fft: %s", msg));
  return tpj_hlo_kInvalid;
}

tpj_hlo_value_t tpj_hlo_emit_fft(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_fft_t type,
                                 const int64_t* len, int n) {
  static const char* const kNames[] = {"FFT", "IFFT", "RFFT", "IRFFT"};
  if (!tpj_hlo_check_valid(b, &x)) return tpj_hlo_kInvalid;
  if (n < 1 || n > 3 || n > x.ndim) return tpj_fft_fail(b, "1 to 3 transformed dims");
  if ((int)type < 0 || (int)type > 3) return tpj_fft_fail(b, "bad fft type");
  int real_in = type == TPJ_HLO_FFT_RFFT;
  if (real_in ? (x.dtype != TPJ_F32 && x.dtype != TPJ_F64) : !tpj_dtype_is_complex(x.dtype))
    return tpj_fft_fail(b, "operand dtype does not match the fft type");
  int64_t dims[TPJ_MAX_DIMS];
  for (int d = 0; d < x.ndim; ++d) dims[d] = x.dims[d];
  int first = x.ndim - n;
  for (int i = 0; i < n; ++i) {
    if (len[i] < 1) return tpj_fft_fail(b, "fft lengths must be positive");
    int64_t want = (type == TPJ_HLO_FFT_IRFFT && i == n - 1) ? len[i] / 2 + 1 : len[i];
    if (x.dims[first + i] != want) return tpj_fft_fail(b, "operand dims do not match fft_length");
  }
  tpj_dtype_t dt = x.dtype;
  if (type == TPJ_HLO_FFT_RFFT) {
    dt = x.dtype == TPJ_F32 ? TPJ_C64 : TPJ_C128;
    dims[x.ndim - 1] = len[n - 1] / 2 + 1;
  } else if (type == TPJ_HLO_FFT_IRFFT) {
    dt = x.dtype == TPJ_C64 ? TPJ_F32 : TPJ_F64;
    dims[x.ndim - 1] = len[n - 1];
  }
  tpj_hlo_value_t r = tpj_hlo_new_value(b, dt, dims, x.ndim);
  const tpj_hlo_value_t* ops[1] = {&x};
  tpj_hlo_begin_op(b, &r, "stablehlo.fft", ops, 1);
  tpj_strbuf_printf(&b->body, " {fft_length = ");
  tpj_hlo_print_i64_array(&b->body, len, n);
  tpj_strbuf_printf(&b->body, ", fft_type = #stablehlo<fft_type %s>}", kNames[type]);
  tpj_hlo_end_op(b, &r, ops, 1);
  return r;
}
