"""Differential fuzzer: random short ATen programs run on CPU and on tpu, compared.

    .venv/bin/python tools/fuzz --seed 0                   # quick mode: 400 programs
    .venv/bin/python tools/fuzz --seed 7 --long --out r.json   # 5,000 programs
    .venv/bin/python tools/fuzz --seed 0 --program 123     # one program, printed and run
    (options: --count N, --jobs J worker processes, --start I, --shrink-budget S)

A program is data: inputs (shape, dtype, data seed, sometimes a strided view)
and 1-6 statements (1-8 with --long), each one line of Python over the common
ATen ops: pointwise with broadcasting, scalars and type promotion,
comparisons, where/clamp, reductions, matmul, softmax, views and shape ops,
index ops, cumsum, sort/topk, in-place ops on views, copy_, dtype
conversions. Shapes include 0-size dims and 0-d tensors. The generator runs
each candidate statement on the CPU to learn its result's shape, so most
statements are valid; some that raise are kept, to compare exceptions.
Program I of seed S depends on nothing else: rerun it with --program I.

Each program runs in a worker subprocess (worker.py), on "cpu" then on
"tpu", many programs per worker; a worker that dies (segfault, abort) or
hangs is reported as a crash or hang of the program it was running, and a
fresh worker reruns that program alone to tell whether it crashes by itself.
Before each statement its inputs are snapshotted, after it its outputs, and
check.py finds the statements that diverge: dtype, shape, strides (dims of
size > 1), values (exact for integers and bool, per-dtype tolerances for
floats, NaN and inf positions must match), and exceptions (type; a message
mismatch is a separate, lower class that does not fail the run). A value or
exception difference counts only where the statement's inputs were bitwise
equal on both sides: rounding noise from an earlier statement (exp, then
floor) is not a bug. Results PyTorch leaves undefined (float -> int casts
out of range, scatter with duplicate indices, ties in topk and unstable
sort) are not compared.

Every failure class is shrunk (shrink.py: statements dropped or replaced by
inputs, shapes and dtypes simplified) to a runnable reproducer that prints
what CPU and tpu do. A difference tpu keeps on purpose (CPU's answer
arguably wrong, pinned by a test and documented in docs/COVERAGE.md) matches
the KNOWN table (known.py) and does not fail the run; any other crash, hang
or wrong answer exits 1. tests/python/test_fuzz.py runs the quick mode.

Files: gen.py (programs), worker.py (subprocesses), check.py (comparison),
shrink.py (shrinking, reproducers), known.py (KNOWN), cli.py (this command).
"""
