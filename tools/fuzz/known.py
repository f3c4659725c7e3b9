"""Failure classes the fuzzer expects: differences pinned on purpose.

Each entry: (tag, what it matches, predicate over a failure dict), matched
narrowly. Issue 19's open classes are all fixed; what is left are the cases
where CPU's answer is arguably wrong and tpu keeps its own, each pinned by a
test and documented in docs/COVERAGE.md. Anything not matched here fails the
run. A failure dict has: cat (crash, hang, harness, exception,
message, value, dtype, shape, stride, kind), op, kind (the op's family:
pointwise, reduction, view, shape, index, linalg, softmax, scan, sort,
inplace, item), detail, noncontig (an operand was non-contiguous), empty (an
input was empty), int_max (the largest magnitude in an integer input), line,
cpu and tpu (what each did).
"""

KNOWN = [
    # Where CPU's answer is arguably wrong and tpu keeps its own, pinned by a
    # test and documented (docs/COVERAGE.md, "Where tpu keeps its own answer").
    ("pinned", "subnormal floats are flushed to zero by XLA:CPU's arithmetic (a platform "
     "difference)",
     lambda f: f["cat"] == "value" and f.get("sig", "").startswith("value|(subnormal floats)|")),
    ("pinned", "complex products through an infinity in mm/bmm/matmul/mv and cumprod: XLA "
     "multiplies the parts as real matmuls, CPU's BLAS per element; where infinities meet, "
     "one side's inf is the other's NaN",
     lambda f: f["cat"] == "value" and f.get("sig", "").startswith("value|(complex inf/nan ")
     and f["op"] in ("mm", "bmm", "matmul", "@", "mv", "addmm", "cumprod")),
    ("pinned", "complex add/sub of an infinite part: CPU multiplies the other operand by "
     "alpha = 1 as a complex product (0 + inf i becomes NaN + inf i), tpu adds",
     lambda f: f["cat"] == "value" and f.get("sig", "").startswith("value|(complex inf/nan ")
     and f["op"] in ("add", "sub", "op+", "op-", "add_", "sub_", "op+=", "op-=")),
    ("pinned", "mixed-dtype mm/bmm/matmul with an empty operand: CPU skips its dtype check, "
     "tpu raises it",
     lambda f: f["cat"] == "exception" and f["op"] in ("mm", "bmm", "matmul", "@", "mv")
     and f["detail"] == "cpu ok, tpu RuntimeError" and f["empty"]
     and "to have the same dtype" in f["tpu"]),
    ("pinned", "index_fill_ into a dim of size 0: CPU fails inside setStorage, tpu raises "
     "IndexError",
     lambda f: f["cat"] == "exception" and f["op"] in ("index_fill_", "index_fill")
     and f["detail"] == "cpu RuntimeError, tpu IndexError" and "setStorage" in f["cpu"]),
]
