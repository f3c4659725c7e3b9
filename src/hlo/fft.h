/* hlo/fft: the stablehlo.fft emitter (FFT, IFFT, RFFT, IRFFT over the up to
 * three innermost dims). Used by src/ops/fft.c. Same conventions as
 * builder.h: checked, sticky failures, generic syntax. */
#ifndef TPJ_HLO_FFT_H_
#define TPJ_HLO_FFT_H_

#include "hlo/builder.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  TPJ_HLO_FFT_FFT,   /* complex -> complex, forward (exp(-i...)), unscaled */
  TPJ_HLO_FFT_IFFT,  /* complex -> complex, inverse, scaled by 1/prod(len) */
  TPJ_HLO_FFT_RFFT,  /* real -> complex; innermost dim becomes len[n-1]/2 + 1 */
  TPJ_HLO_FFT_IRFFT, /* complex (innermost len[n-1]/2 + 1) -> real, 1/prod(len) */
} tpj_hlo_fft_t;

/* stablehlo.fft of x over its n (1..3) innermost dims with fft_length len.
 * x's innermost dims must equal len (IRFFT: the last one len[n-1]/2 + 1).
 * Real operands are f32/f64, complex ones complex64/complex128. */
tpj_hlo_value_t tpj_hlo_emit_fft(tpj_hlo_builder_t* b, tpj_hlo_value_t x, tpj_hlo_fft_t type,
                                 const int64_t* len, int n);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_HLO_FFT_H_ */
