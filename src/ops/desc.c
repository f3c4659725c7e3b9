/* The rules of descriptor rows (desc.h): output dtypes, CPU's refusals and
 * the plan of a call, written once for eager, compile and the sweep. */
#include "ops/desc.h"

#include <string.h>

tpj_dtype_t tpj_dtype_accumulator(tpj_dtype_t dt) {
  return (dt == TPJ_F16 || dt == TPJ_BF16) ? TPJ_F32 : dt;
}

static int tpj_desc_integral(tpj_dtype_t t) { return t == TPJ_BOOL || tpj_dtype_is_int(t); }

tpj_status_t tpj_op_refuse(const char* kernel, tpj_dtype_t t) {
  return tpj_status_make(TPJ_UNIMPLEMENTED, "\"%s\" not implemented for '%s'",
                         kernel ? kernel : "?", tpj_dtype_c10_name(t));
}

tpj_dtype_t tpj_op_desc_out_dtype(const tpj_op_desc_t* d, tpj_dtype_t promoted,
                                  tpj_dtype_t input, tpj_dtype_t default_float) {
  if (d->rules & TPJ_RULE_LIKE_INPUT) return input;
  tpj_dtype_t t = promoted;
  if ((d->rules & TPJ_RULE_FLOAT_RESULT) && tpj_desc_integral(t)) t = default_float;
  if (d->rules & TPJ_RULE_BOOL_RESULT) t = TPJ_BOOL;
  return t;
}

tpj_status_t tpj_op_desc_plan(const tpj_op_desc_t* d, const tpj_op_dtypes_t* t,
                              tpj_op_plan_t* out_plan) {
  const uint32_t r = d->rules;
  memset(out_plan, 0, sizeof(*out_plan));
  if ((r & TPJ_RULE_NO_COMPLEX_BY_NAME) && tpj_dtype_is_complex(t->first)) {
    size_t n = strcspn(d->aten, ".");
    return tpj_status_make(TPJ_UNIMPLEMENTED, "%.*s is not supported for complex inputs",
                           (int)n, d->aten);
  }
  tpj_dtype_t p = t->promoted;
  if (((r & TPJ_RULE_NO_BOOL) && p == TPJ_BOOL) ||
      ((r & TPJ_RULE_NO_INTEGRAL) && tpj_desc_integral(p)) ||
      ((r & TPJ_RULE_INTEGRAL_ONLY) && !tpj_desc_integral(p)) ||
      ((r & TPJ_RULE_NO_COMPLEX) && tpj_dtype_is_complex(p)) ||
      ((r & TPJ_RULE_FLOATING_ONLY) && !tpj_dtype_is_float(p)))
    return tpj_op_refuse(d->cpu_kernel, p);
  if ((r & TPJ_RULE_FLOATING_INPUT) && !tpj_dtype_is_float(t->input) &&
      !((r & TPJ_RULE_COMPLEX_INPUT_OK) && tpj_dtype_is_complex(t->input)))
    return tpj_op_refuse(d->cpu_kernel, t->input);
  if ((r & TPJ_RULE_NO_HALF) && (t->out == TPJ_F16 || t->out == TPJ_BF16))
    return tpj_op_refuse(d->cpu_kernel, t->out);
  if ((r & TPJ_RULE_COMPLEX_ON_CPU) && tpj_dtype_is_complex(p)) {
    out_plan->on_cpu = 1;
    out_plan->cpu_dtype = p;
  } else if ((r & TPJ_RULE_DOUBLE_ONLY) && t->out != TPJ_F64) {
    out_plan->on_cpu = 1;
    out_plan->cpu_dtype = p;
  } else if ((r & TPJ_RULE_NON_FLOATING_ON_CPU) &&
             !(tpj_dtype_is_float(p) && tpj_dtype_is_float(t->out))) {
    out_plan->on_cpu = 1;
    out_plan->cpu_dtype = t->out;
  }
  out_plan->compute = (r & TPJ_RULE_EXACT_COMPUTE)   ? t->out
                      : (r & TPJ_RULE_COMPUTE_INPUT) ? t->first
                                                     : tpj_dtype_accumulator(t->out);
  out_plan->scalars = (r & TPJ_RULE_SCALARS_AS_OUTPUT) ? t->out : out_plan->compute;
  return NULL;
}

tpj_status_t tpj_op_wrap_dim(int64_t dim, int ndim, int64_t* out_dim) {
  int64_t n = ndim > 0 ? ndim : 1;
  if (dim < -n || dim > n - 1)
    return tpj_status_make(TPJ_INDEX_ERROR,
                           "Dimension out of range (expected to be in range of [%lld, %lld], but "
                           "got %lld)",
                           (long long)-n, (long long)(n - 1), (long long)dim);
  *out_dim = dim < 0 ? dim + n : dim;
  return NULL;
}
