/* The lowering table: sorted by name, searched by bisection. */
#include <string.h>

#include "ops/ops.h"

static const tpj_op_def_t kOps[] = {
    {"aten::add.Tensor", tpj_lower_add_tensor},
    {"aten::mul.Tensor", tpj_lower_mul_tensor},
    {"tpj::full", tpj_lower_full},
    {"tpj::view_copy", tpj_lower_view_copy},
    {"tpj::write_view", tpj_lower_write_view},
};

int tpj_ops_count(void) { return (int)(sizeof(kOps) / sizeof(kOps[0])); }

const tpj_op_def_t* tpj_ops_at(int i) {
  return (i >= 0 && i < tpj_ops_count()) ? &kOps[i] : NULL;
}

const tpj_op_def_t* tpj_ops_lookup(const char* name) {
  int lo = 0, hi = tpj_ops_count() - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    int c = strcmp(name, kOps[mid].name);
    if (c == 0) return &kOps[mid];
    if (c < 0) hi = mid - 1;
    else lo = mid + 1;
  }
  return NULL;
}
