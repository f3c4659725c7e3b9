/* ops/desc: an op's descriptor row, the one place that says what an aten
 * overload means on tpu besides its lowering: which lowering serves it, how
 * its output dtype follows from its inputs, which dtypes it computes and
 * CPU's refusal for the others, which forms (in place, out=) it has, the
 * attribute layout its lowering reads, and CPU's argument checks. A family
 * defines its rows beside its lowerings (src/ops/<family>.c); table.c gathers
 * them. The C++ glue registers every row with one generic boxed kernel
 * (csrc/ops/register.cpp) that asks these functions, never its own rules. */
#ifndef TPJ_OPS_DESC_H_
#define TPJ_OPS_DESC_H_

#include <stddef.h>
#include <stdint.h>

#include "base/dtype.h"
#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A row's rules; 0 is: the output from PyTorch's meta function, computed in
 * the accumulator of the output dtype (float32 for the half types), no
 * refusals, only the functional overload registered. */
typedef enum {
  /* forms registered besides the functional overload: name_ (in place) and
   * name.out / name.<overload>_out (PyTorch's naming) */
  TPJ_RULE_INPLACE = 1u << 0,
  TPJ_RULE_OUT = 1u << 1,
  TPJ_RULE_FORMS = TPJ_RULE_INPLACE | TPJ_RULE_OUT,
  /* type rule, no meta call: the output is the broadcast of the tensor
   * operands in their promoted dtype; with FLOAT_RESULT integers and bool
   * promote to the default float (erf, tan, ...); with BOOL_RESULT it is
   * bool (isnan) */
  TPJ_RULE_BROADCAST = 1u << 2,
  TPJ_RULE_FLOAT_RESULT = 1u << 3,
  TPJ_RULE_BOOL_RESULT = 1u << 4,
  /* type rule: shaped and typed like the last tensor operand (x of a
   * backward op's (grad_output, x)), where the meta kernel is Python (slow) */
  TPJ_RULE_LIKE_INPUT = 1u << 5,
  /* compute dtype: the output's own (sign, bitwise, nextafter) / the first
   * operand's (isnan and friends compare in the input's dtype) */
  TPJ_RULE_EXACT_COMPUTE = 1u << 6,
  TPJ_RULE_COMPUTE_INPUT = 1u << 7,
  /* CPU's refusals, NotImplementedError "\"cpu_kernel\" not implemented for
   * 'T'": T is the output dtype for NO_HALF, the operands' promoted dtype for
   * the others */
  TPJ_RULE_NO_HALF = 1u << 8,
  TPJ_RULE_NO_BOOL = 1u << 9,
  TPJ_RULE_NO_INTEGRAL = 1u << 10,   /* bool and integers */
  TPJ_RULE_INTEGRAL_ONLY = 1u << 11, /* bool and integers only (bitwise) */
  TPJ_RULE_NO_COMPLEX = 1u << 12,
  TPJ_RULE_FLOATING_ONLY = 1u << 13, /* float, double and the half types */
  /* CPU's kernel (counted as a fallback) for complex operands / for outputs
   * other than float64 */
  TPJ_RULE_COMPLEX_ON_CPU = 1u << 14,
  TPJ_RULE_DOUBLE_ONLY = 1u << 15,
  /* integer division: CPU raises ZeroDivisionError, XLA would not */
  TPJ_RULE_CHECK_DIVISOR = 1u << 16,
  /* Scalar arguments are runtime 0-d arguments in the compute dtype (with
   * SCALARS_AS_OUTPUT: the output's dtype, as CPU's kernel reads them), after
   * the tensors, not operands in schema order */
  TPJ_RULE_RUNTIME_SCALARS = 1u << 17,
  TPJ_RULE_SCALARS_AS_OUTPUT = 1u << 18,
  /* the input (see LIKE_INPUT) floating, or complex too, else CPU's refusal */
  TPJ_RULE_FLOATING_INPUT = 1u << 19,
  TPJ_RULE_COMPLEX_INPUT_OK = 1u << 20,
  /* the out= form is named name.grad_input (a backward op's) */
  TPJ_RULE_GRAD_INPUT_OUT = 1u << 21,
  /* an empty output runs no program (the lowering may not take zero sizes) */
  TPJ_RULE_SKIP_EMPTY = 1u << 22,
  /* complex operands: NotImplementedError "<name> is not supported for
   * complex inputs" (floor, ceil, trunc) */
  TPJ_RULE_NO_COMPLEX_BY_NAME = 1u << 23,
  /* Attribute layouts of ops that are not elementwise (the lowering computes
   * in logical order); without one the attributes are {compute dtype, [attr],
   * ints and bools in schema order}. REDUCE: tpj_attrs_reduce_t; LOSS:
   * tpj_attrs_loss_t; DIM: tpj_attrs_dim_t. */
  TPJ_RULE_REDUCE = 1u << 24,
  TPJ_RULE_LOSS = 1u << 25,
  /* the first two tensor operands broadcast, in CPU's TensorIterator wording,
   * checked before the meta function (whose wording differs) */
  TPJ_RULE_BROADCAST_CHECK = 1u << 26,
  /* the row's check runs after the meta function (its errors come first) */
  TPJ_RULE_CHECK_AFTER_META = 1u << 27,
  TPJ_RULE_DIM = 1u << 28,
  /* CPU's kernel (counted) when the operands' promoted dtype or the output's
   * is not floating: it computes in the operands' dtype and raises its own
   * error for integers, where the meta function would promote (igamma) */
  TPJ_RULE_NON_FLOATING_ON_CPU = 1u << 29,
} tpj_op_rule_t;

/* The attribute layouts, as the lowering reads them: named fields over the
 * int64 attribute words (tpj_op_ctx_t.attrs), in this order. */
typedef struct {
  int64_t compute; /* tpj_dtype_t */
  int64_t keepdim;
  int64_t ndims;   /* dims reduced: wrapped, sorted, distinct */
  int64_t dims[];
} tpj_attrs_reduce_t;
typedef struct {
  int64_t compute;
  int64_t reduction; /* 0 none, 1 mean, 2 sum */
  int64_t has_weight;
} tpj_attrs_loss_t;
typedef struct {
  int64_t compute;
  int64_t dim; /* wrapped */
} tpj_attrs_dim_t;
#define TPJ_ATTRS(ctx, type) ((const type*)(const void*)(ctx)->attrs)

/* One argument of a call, in schema order, as the checks see it. */
typedef enum {
  TPJ_ARG_NONE = 0, /* an absent optional */
  TPJ_ARG_TENSOR,
  TPJ_ARG_SCALAR, /* a Scalar or float argument: f (and i when integral) */
  TPJ_ARG_INT,
  TPJ_ARG_BOOL,
  TPJ_ARG_INTS,   /* an int list: n, ints */
  TPJ_ARG_DTYPE,  /* a ScalarType: dtype, dtype_name */
} tpj_op_arg_kind_t;

typedef struct {
  tpj_op_arg_kind_t kind;
  tpj_dtype_t dtype;      /* a tensor's, a scalar's, a ScalarType argument's */
  const char* dtype_name; /* PyTorch's name of it ("Half"): also for dtypes tpu lacks */
  int ndim;
  const int64_t* dims;
  int64_t numel;
  double f;
  int64_t i;
  int n;
  const int64_t* ints;
} tpj_op_arg_t;

#define TPJ_OP_MAX_ARGS 12

typedef struct tpj_op_call tpj_op_call_t;
struct tpj_op_call {
  int nargs;
  tpj_op_arg_t args[TPJ_OP_MAX_ARGS];
  tpj_dtype_t promoted; /* the tensor operands' promoted dtype */
  const char* promoted_name;
  /* The smallest and largest value of tensor argument arg, read on the host
   * (a wait). *out_known is 0 where values cannot be read (a traced graph) or
   * the tensor is empty; the check then skips its value rule. */
  tpj_status_t (*value_range)(const tpj_op_call_t* call, int arg, double* out_lo,
                              double* out_hi, int* out_known);
  void* glue; /* value_range's context */
};

/* CPU's argument checks in CPU's words and exception kind. */
typedef tpj_status_t (*tpj_op_check_fn)(const tpj_op_call_t* call);

typedef struct {
  const char* aten;       /* the functional overload: "special_i0e", "bitwise_and.Scalar" */
  const char* lowering;   /* its entry in the lowering table (table.c): "aten::special_i0e" */
  uint32_t rules;         /* tpj_op_rule_t bits */
  const char* cpu_kernel; /* CPU's kernel name in refusals, or NULL */
  int64_t attr;           /* an attribute after the compute dtype, or -1 */
  tpj_op_check_fn check;  /* or NULL; runs before the meta function (CHECK_AFTER_META: after) */
} tpj_op_desc_t;

/* A family's rows, gathered by table.c. */
typedef struct {
  const tpj_op_desc_t* rows;
  size_t n;
} tpj_op_desc_list_t;

/* Every row of every family, in family order; NULL past the end. */
int tpj_ops_desc_count(void);
const tpj_op_desc_t* tpj_ops_desc_at(int i);
/* The row of a functional overload ("special_i0e"), or NULL. */
const tpj_op_desc_t* tpj_ops_desc_lookup(const char* aten);

/* The output dtype of a BROADCAST or LIKE_INPUT row: promoted (or input for
 * LIKE_INPUT) with FLOAT_RESULT / BOOL_RESULT applied; default_float is
 * torch.get_default_dtype(). */
tpj_dtype_t tpj_op_desc_out_dtype(const tpj_op_desc_t* d, tpj_dtype_t promoted,
                                  tpj_dtype_t input, tpj_dtype_t default_float);

/* The dtypes a call's plan is decided from. */
typedef struct {
  tpj_dtype_t promoted; /* the tensor operands' promoted dtype (the one operand's) */
  tpj_dtype_t first;    /* the first tensor operand's */
  tpj_dtype_t input;    /* the last tensor operand's */
  tpj_dtype_t out;      /* the output's */
} tpj_op_dtypes_t;

typedef struct {
  int on_cpu;              /* run CPU's kernel (counted as a fallback) */
  tpj_dtype_t cpu_dtype;   /* the dtype fallbacks() counts it under */
  tpj_dtype_t compute;     /* the lowering's compute dtype (attrs[0]) */
  tpj_dtype_t scalars;     /* the dtype runtime scalars are passed in */
} tpj_op_plan_t;

/* CPU's refusal for the call's dtypes (TPJ_UNIMPLEMENTED, CPU's message), or
 * the plan: natively in which compute dtype, or on CPU's kernel. */
tpj_status_t tpj_op_desc_plan(const tpj_op_desc_t* d, const tpj_op_dtypes_t* t,
                              tpj_op_plan_t* out_plan);

/* The accumulator of a dtype: float32 for the half types, else itself. */
tpj_dtype_t tpj_dtype_accumulator(tpj_dtype_t dt);
/* NotImplementedError "\"kernel\" not implemented for 'T'". */
tpj_status_t tpj_op_refuse(const char* kernel, tpj_dtype_t t);

/* dim wrapped against ndim as c10::maybe_wrap_dim does (a 0-d tensor takes
 * -1 and 0), or IndexError in its words. */
tpj_status_t tpj_op_wrap_dim(int64_t dim, int ndim, int64_t* out_dim);

/* The families' rows (defined beside their lowerings). */
extern const tpj_op_desc_list_t tpj_pointwise_rows;
extern const tpj_op_desc_list_t tpj_special_rows;
extern const tpj_op_desc_list_t tpj_activation_rows;
extern const tpj_op_desc_list_t tpj_loss_pointwise_rows;
extern const tpj_op_desc_list_t tpj_reduction_rows;

/* A row whose overload and lowering share fn's name. */
#define TPJ_ROW(fn, rules, kernel, attr) {#fn, "aten::" #fn, (rules), (kernel), (attr), NULL}

#define TPJ_DESC_LIST(name, rows) \
  const tpj_op_desc_list_t name = {rows, sizeof(rows) / sizeof((rows)[0])}

#ifdef __cplusplus
}
#endif
#endif /* TPJ_OPS_DESC_H_ */
