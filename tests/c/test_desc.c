/* ops/desc: the descriptor rows and the rules every call's plan comes from
 * (output dtypes, CPU's refusals in CPU's words, where a call runs). */
#include <string.h>

#include "ops/desc.h"
#include "ops/ops.h"
#include "tpj_test.h"

/* The status's code and message, then freed; NULL gives TPJ_OK and "". */
static tpj_status_code_t desc_take(tpj_status_t s, char* msg, size_t n) {
  tpj_status_code_t c = tpj_status_code(s);
  snprintf(msg, n, "%s", tpj_status_message(s));
  tpj_status_free(s);
  return c;
}

static tpj_op_plan_t desc_plan(const char* aten, tpj_dtype_t promoted, tpj_dtype_t out,
                               tpj_status_code_t* code, char* msg, size_t n) {
  const tpj_op_desc_t* d = tpj_ops_desc_lookup(aten);
  tpj_op_dtypes_t t = {promoted, promoted, promoted, out};
  tpj_op_plan_t p;
  memset(&p, 0, sizeof(p));
  if (!d) {
    *code = TPJ_NOT_FOUND;
    return p;
  }
  *code = desc_take(tpj_op_desc_plan(d, &t, &p), msg, n);
  return p;
}

TPJ_TEST(desc_rows_are_unique_and_lowered) {
  int n = tpj_ops_desc_count();
  TPJ_EXPECT(n > 100);
  for (int i = 0; i < n; ++i) {
    const tpj_op_desc_t* d = tpj_ops_desc_at(i);
    TPJ_EXPECT(d != NULL);
    if (!d) return;
    if (!tpj_ops_lookup(d->lowering)) {
      fprintf(stderr, "  row %s: no lowering %s\n", d->aten, d->lowering);
      *tpj_failed_ = 1;
    }
    TPJ_EXPECT(tpj_ops_desc_lookup(d->aten) == d);
    /* a refusal names CPU's kernel */
    if (d->rules & (TPJ_RULE_NO_HALF | TPJ_RULE_NO_BOOL | TPJ_RULE_NO_INTEGRAL |
                    TPJ_RULE_INTEGRAL_ONLY | TPJ_RULE_NO_COMPLEX | TPJ_RULE_FLOATING_ONLY |
                    TPJ_RULE_FLOATING_INPUT))
      TPJ_EXPECT(d->cpu_kernel != NULL);
  }
  TPJ_EXPECT(tpj_ops_desc_at(n) == NULL);
  TPJ_EXPECT(tpj_ops_desc_lookup("no_such_op") == NULL);
}

TPJ_TEST(desc_plan_refuses_in_cpus_words) {
  char msg[256];
  tpj_status_code_t code;
  desc_plan("erf", TPJ_C64, TPJ_C64, &code, msg, sizeof(msg));
  TPJ_EXPECT(code == TPJ_UNIMPLEMENTED);
  TPJ_EXPECT(strcmp(msg, "\"erf_vml_cpu\" not implemented for 'ComplexFloat'") == 0);
  desc_plan("special_ndtri", TPJ_F16, TPJ_F16, &code, msg, sizeof(msg));
  TPJ_EXPECT(code == TPJ_UNIMPLEMENTED);
  TPJ_EXPECT(strcmp(msg, "\"ndtri_cpu\" not implemented for 'Half'") == 0);
  desc_plan("bitwise_and.Tensor", TPJ_F32, TPJ_F32, &code, msg, sizeof(msg));
  TPJ_EXPECT(strcmp(msg, "\"bitwise_and_cpu\" not implemented for 'Float'") == 0);
  desc_plan("floor", TPJ_C128, TPJ_C128, &code, msg, sizeof(msg));
  TPJ_EXPECT(code == TPJ_UNIMPLEMENTED);
  TPJ_EXPECT(strcmp(msg, "floor is not supported for complex inputs") == 0);
  desc_plan("floor", TPJ_BOOL, TPJ_BOOL, &code, msg, sizeof(msg));
  TPJ_EXPECT(strcmp(msg, "\"floor_vml_cpu\" not implemented for 'Bool'") == 0);
  /* what CPU computes is planned natively */
  tpj_op_plan_t p = desc_plan("special_ndtri", TPJ_F32, TPJ_F32, &code, msg, sizeof(msg));
  TPJ_EXPECT(code == TPJ_OK && !p.on_cpu && p.compute == TPJ_F32);
}

TPJ_TEST(desc_plan_places_cpu_only_dtypes_on_cpu) {
  char msg[256];
  tpj_status_code_t code;
  tpj_op_plan_t p = desc_plan("special_airy_ai", TPJ_F32, TPJ_F32, &code, msg, sizeof(msg));
  TPJ_EXPECT(code == TPJ_OK && p.on_cpu && p.cpu_dtype == TPJ_F32);
  p = desc_plan("special_airy_ai", TPJ_F64, TPJ_F64, &code, msg, sizeof(msg));
  TPJ_EXPECT(code == TPJ_OK && !p.on_cpu);
  /* igamma of integers: CPU's kernel, counted under the output dtype */
  p = desc_plan("igamma", TPJ_I64, TPJ_F32, &code, msg, sizeof(msg));
  TPJ_EXPECT(code == TPJ_OK && p.on_cpu && p.cpu_dtype == TPJ_F32);
  p = desc_plan("logaddexp", TPJ_C64, TPJ_C64, &code, msg, sizeof(msg));
  TPJ_EXPECT(code == TPJ_OK && p.on_cpu && p.cpu_dtype == TPJ_C64);
}

TPJ_TEST(desc_type_rules_and_compute_dtypes) {
  const tpj_op_desc_t* tan = tpj_ops_desc_lookup("tan");
  const tpj_op_desc_t* isnan = tpj_ops_desc_lookup("isnan");
  const tpj_op_desc_t* hardswish = tpj_ops_desc_lookup("hardswish");
  TPJ_EXPECT(tan && isnan && hardswish);
  if (!tan || !isnan || !hardswish) return;
  TPJ_EXPECT(tpj_op_desc_out_dtype(tan, TPJ_I64, TPJ_I64, TPJ_F32) == TPJ_F32);
  TPJ_EXPECT(tpj_op_desc_out_dtype(tan, TPJ_I64, TPJ_I64, TPJ_F64) == TPJ_F64);
  TPJ_EXPECT(tpj_op_desc_out_dtype(tan, TPJ_BF16, TPJ_BF16, TPJ_F32) == TPJ_BF16);
  TPJ_EXPECT(tpj_op_desc_out_dtype(isnan, TPJ_F16, TPJ_F16, TPJ_F32) == TPJ_BOOL);
  TPJ_EXPECT(tpj_op_desc_out_dtype(hardswish, TPJ_F32, TPJ_F64, TPJ_F32) == TPJ_F64);
  char msg[256];
  tpj_status_code_t code;
  /* half types accumulate in float32; exact rows compute in the output's
   * dtype; isnan compares in the input's */
  tpj_op_plan_t p = desc_plan("tan", TPJ_BF16, TPJ_BF16, &code, msg, sizeof(msg));
  TPJ_EXPECT(p.compute == TPJ_F32);
  p = desc_plan("nextafter", TPJ_BF16, TPJ_BF16, &code, msg, sizeof(msg));
  TPJ_EXPECT(code == TPJ_OK && p.compute == TPJ_BF16);
  const tpj_op_desc_t* d = tpj_ops_desc_lookup("isnan");
  tpj_op_dtypes_t t = {TPJ_F16, TPJ_F16, TPJ_F16, TPJ_BOOL};
  TPJ_EXPECT(tpj_op_desc_plan(d, &t, &p) == NULL && p.compute == TPJ_F16);
  /* hardshrink reads its lambd in the output dtype */
  p = desc_plan("hardshrink", TPJ_F16, TPJ_F16, &code, msg, sizeof(msg));
  TPJ_EXPECT(p.compute == TPJ_F32 && p.scalars == TPJ_F16);
}

TPJ_TEST(desc_wrap_dim_as_pytorch) {
  int64_t d = -9;
  TPJ_EXPECT(tpj_op_wrap_dim(-1, 3, &d) == NULL && d == 2);
  TPJ_EXPECT(tpj_op_wrap_dim(0, 0, &d) == NULL && d == 0);
  TPJ_EXPECT(tpj_op_wrap_dim(-1, 0, &d) == NULL && d == 0);
  char msg[256];
  TPJ_EXPECT(desc_take(tpj_op_wrap_dim(3, 3, &d), msg, sizeof(msg)) == TPJ_INDEX_ERROR);
  TPJ_EXPECT(strcmp(msg, "Dimension out of range (expected to be in range of [-3, 2], but got 3)") ==
             0);
}

/* A call of one tensor argument and the given int list / dtype. */
static tpj_op_call_t desc_call(tpj_dtype_t dt, const char* name, const int64_t* dims, int ndim) {
  tpj_op_call_t c;
  memset(&c, 0, sizeof(c));
  c.nargs = 4;
  c.args[0].kind = TPJ_ARG_TENSOR;
  c.args[0].dtype = dt;
  c.args[0].dtype_name = name;
  c.args[0].ndim = ndim;
  c.args[0].dims = dims;
  c.args[0].numel = 1;
  for (int i = 0; i < ndim; ++i) c.args[0].numel *= dims[i];
  c.promoted = dt;
  c.promoted_name = name;
  return c;
}

TPJ_TEST(desc_checks_speak_cpus_words) {
  char msg[512];
  const tpj_op_desc_t* mean = tpj_ops_desc_lookup("mean.dim");
  const tpj_op_desc_t* amax = tpj_ops_desc_lookup("amax");
  TPJ_EXPECT(mean && mean->check && amax && amax->check);
  if (!mean || !amax) return;
  int64_t dims[2] = {2, 0};
  tpj_op_call_t c = desc_call(TPJ_I64, "Long", dims, 2);
  TPJ_EXPECT(desc_take(mean->check(&c), msg, sizeof(msg)) == TPJ_INVALID_ARGUMENT);
  TPJ_EXPECT(strcmp(msg, "mean(): could not infer output dtype. Input dtype must be either a "
                         "floating point or complex dtype. Got: Long") == 0);
  c.args[3].kind = TPJ_ARG_DTYPE;
  c.args[3].dtype = TPJ_F32;
  c.args[3].dtype_name = "Float";
  TPJ_EXPECT(mean->check(&c) == NULL);
  /* amax of an empty tensor: a dim must be named, and it must not be empty */
  c = desc_call(TPJ_F32, "Float", dims, 2);
  c.args[1].kind = TPJ_ARG_INTS;
  TPJ_EXPECT(desc_take(amax->check(&c), msg, sizeof(msg)) == TPJ_INVALID_ARGUMENT);
  TPJ_EXPECT_CONTAINS(msg, "amax(): Expected reduction dim to be specified");
  int64_t one = -1;
  c.args[1].n = 1;
  c.args[1].ints = &one;
  TPJ_EXPECT(desc_take(amax->check(&c), msg, sizeof(msg)) == TPJ_INDEX_ERROR);
  TPJ_EXPECT(strcmp(msg, "amax(): Expected reduction dim 1 to have non-zero size.") == 0);
  c = desc_call(TPJ_C64, "ComplexFloat", dims, 1);
  TPJ_EXPECT(desc_take(amax->check(&c), msg, sizeof(msg)) == TPJ_UNIMPLEMENTED);
  TPJ_EXPECT(strcmp(msg, "\"max_values_cpu\" not implemented for 'ComplexFloat'") == 0);
}
