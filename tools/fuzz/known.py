"""Failure classes the fuzzer expects: open, filed items of issue 19.

Each entry: (item, what it matches, predicate over a failure dict), matched
narrowly. Remove an entry when its item is fixed; anything not matched here
fails the run. A failure dict has: cat (crash, hang, harness, exception,
message, value, dtype, shape, stride, kind), op, kind (the op's family:
pointwise, reduction, view, shape, index, linalg, softmax, scan, sort,
inplace, item), detail, noncontig (an operand was non-contiguous), empty (an
input was empty), int_max (the largest magnitude in an integer input), line,
cpu and tpu (what each did).
"""
import re

KNOWN = [
    ("issue 19 item 4", "stride mismatch on the output of a pointwise op or reduction "
     "with a non-contiguous input (an out= tensor it resizes included)",
     lambda f: f["cat"] == "stride" and f["noncontig"] and (
         f["kind"] in ("pointwise", "reduction") or f["kind"] == "out" and f["op"] in
         ("add(out=)", "mul(out=)", "exp(out=)", "neg(out=)", "eq(out=)", "where(out=)",
          "clamp(out=)", "sum(out=)", "amax(out=)"))),
    ("issue 19 item 8", "index_add / index_add_ with an empty index raises where CPU returns",
     lambda f: f["cat"] == "exception" and f["op"] in ("index_add", "index_add_")
     and f["detail"].startswith("cpu ok") and f["empty"]),
    ("issue 19 item 8", "softmax / log_softmax of an empty tensor of a dtype softmax refuses "
     "raises where CPU returns it",
     lambda f: f["cat"] == "exception" and f["op"] in ("softmax", "log_softmax")
     and f["detail"] == "cpu ok, tpu NotImplementedError" and f["empty"]),
    ("issue 19 item 7", "integer pow with an exponent of 64 or more (CPU wraps: 2**64 is 0)",
     lambda f: f["cat"] == "value" and f["op"] in ("pow", "pow_", "op**")
     and f["detail"] in ("uint8", "int8", "int32", "int64") and f["int_max"] >= 64),
    ("issue 19 item 2", "CPU's kernel refuses the dtype (NotImplementedError: not implemented "
     "/ not supported for it); tpu computes, or raises another type",
     lambda f: f["cat"] == "exception" and f["detail"].startswith("cpu NotImplementedError,")
     and f["detail"] != "cpu NotImplementedError, tpu NotImplementedError"
     and re.search(r"not implemented for '|is not supported for", f["cpu"]) is not None),
    ("issue 19 item 8", "topk with k=0 of a 0-d tensor raises where CPU returns",
     lambda f: f["cat"] == "exception" and f["op"] == "topk" and f["detail"].startswith("cpu ok")
     and "reshape of 0 elements into 1 elements" in f["tpu"]),
    ("issue 19 item 12", "index_add out of range raises RuntimeError where CPU raises IndexError",
     lambda f: f["cat"] == "exception" and f["op"] in ("index_add", "index_add_")
     and f["detail"] == "cpu IndexError, tpu RuntimeError"),
    ("issue 19 item 12", "index_select out of range raises IndexError where CPU raises "
     "RuntimeError",
     lambda f: f["cat"] == "exception" and f["op"] == "index_select"
     and f["detail"] == "cpu RuntimeError, tpu IndexError"),
    ("issue 19 item 4", "stride mismatch on the output of flip, sort/argsort, cat, roll or "
     "advanced indexing of a permuted input: the layout rule covers elementwise ops, conv, "
     "norms and pooling so far (docs/ARCHITECTURE.md, Output layout)",
     lambda f: f["cat"] == "stride" and f["noncontig"] and f["op"] in (
         "flip", "sort", "argsort", "cat", "roll", "getitem", "index")),
    ("issue 19 item 7", "subnormal floats are flushed to zero by XLA:CPU (a platform "
     "difference, docs/COVERAGE.md)",
     lambda f: f["cat"] == "value" and f.get("sig", "").startswith("value|(subnormal floats)|")),
    ("issue 19 item 8", "x[idx] whose result is empty raises (an index check) where CPU returns",
     lambda f: f["cat"] == "exception" and f["op"] in ("getitem", "mask")
     and f["detail"].startswith("cpu ok") and f["empty"]),
]
