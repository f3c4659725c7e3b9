"""The OpInfo conformance sweep (tools/conformance.py) and its CI guard.

test_quick_sweep_no_regressions runs the quick sweep (float32, first sample of
every OpInfo) and fails on any row that docs/coverage.json records as PASS and
that is not PASS now. It takes minutes; the other tests here check the tool
itself on a few ops in seconds.
"""
import json
import os
import subprocess
import sys

import pytest
import torch

import torch_pjrt

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "conformance.py")
COVERAGE = os.path.join(ROOT, "docs", "coverage.json")

# A developer tool, not part of the package: imported from tools/.
sys.path.insert(0, os.path.dirname(TOOL))
try:
    import conformance  # noqa: E402
finally:
    sys.path.pop(0)


def _sweep(tmp_path, *args, env=None):
    e = dict(os.environ)
    # Compiled executables shared across runs of this file (the suite's own cache dir is
    # fresh per session); TORCH_PJRT_CONFORMANCE_CACHE_DIR overrides.
    e["TORCH_PJRT_CACHE_DIR"] = os.environ.get(
        "TORCH_PJRT_CONFORMANCE_CACHE_DIR",
        os.path.join(os.path.expanduser("~"), ".cache", "torch_pjrt-conformance"))
    e["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "python"), e.get("PYTHONPATH", "")])
    e.update(env or {})
    out = tmp_path / "cov.json"
    p = subprocess.run([sys.executable, TOOL, "--out", str(out), *args],
                       env=e, capture_output=True, text=True, timeout=900)
    doc = json.loads(out.read_text()) if out.exists() else None
    return p, doc


def _row(doc, op, dtype="float32", variant=""):
    return next(r for r in doc["rows"] if (r["op"], r["variant"], r["dtype"]) == (op, variant, dtype))


def test_rows_statuses_and_isolation(tmp_path):
    # abs is native (PASS); a crash in one row is recorded as FAIL with the signal,
    # and the restarted worker finishes the rest; a hung row times out.
    p, doc = _sweep(tmp_path, "--ops", "abs,neg,sgn,bernoulli", "--dtypes", "float32",
                    "--timeout", "20",
                    env={"TORCH_PJRT_CONFORMANCE_CRASH": "neg", "TORCH_PJRT_CONFORMANCE_HANG": "sgn"})
    assert p.returncode == 0, p.stderr[-2000:]
    assert _row(doc, "abs")["status"] == "PASS", _row(doc, "abs")
    neg = _row(doc, "neg")
    assert neg["status"] == "FAIL" and "SIGSEGV" in neg["detail"]
    sgn = _row(doc, "sgn")
    assert sgn["status"] == "FAIL" and "timeout" in sgn["detail"]
    assert _row(doc, "bernoulli")["status"] == "SKIP"
    assert "non-deterministic" in _row(doc, "bernoulli")["detail"]
    assert doc["dtypes"] == ["float32"] and doc["mode"] == "full"
    assert doc["torch_version"] == torch.__version__
    assert sum(doc["totals"].values()) == len(doc["rows"]) == 4
    assert doc["totals_by_dtype"]["float32"] == {"PASS": 1, "FALLBACK": 0, "FAIL": 2, "SKIP": 1,
                                                 "rows": 4}


def test_fallback_rows_name_the_aten_ops(tmp_path):
    # A real fallback row: the sweep must say which aten ops ran on the CPU, and that
    # the answer was still right. Uses linalg.svdvals: SVD stays on the CPU by design
    # (docs/ARCHITECTURE.md); if it gains a lowering, pick another from docs/COVERAGE.md.
    p, doc = _sweep(tmp_path, "--quick", "--ops", "nn.functional.conv2d,linalg.svdvals",
                    "--dtypes", "float32")
    assert p.returncode == 0, p.stderr[-2000:]
    r = _row(doc, "linalg.svdvals")
    assert r["status"] == "FALLBACK" and r["fallbacks"], r
    assert _row(doc, "nn.functional.conv2d")["status"] == "PASS"


def test_tolerance_follows_test_compare_cpu():
    ops = {conformance.op_key(o): o for o in conformance.load_op_db()}
    add = ops[("add", "")]
    assert conformance.tolerance(add, torch.float32) == (1e-3, 1e-3)
    assert conformance.tolerance(add, torch.bfloat16) == (1e-3, 1.6e-2)
    assert conformance.tolerance(add, torch.int64) == (0.0, 0.0)
    assert conformance.upstream_skip(ops[("bernoulli", "")], torch.float32)
    assert conformance.upstream_skip(add, torch.float32) is None


def test_compare_lists_regressions():
    def doc(*rows):
        return conformance.summarize({"dtypes": ["float32"], "rows": [
            {"op": o, "variant": "", "dtype": "float32", "status": s, "detail": ""}
            for o, s in rows]})

    old = doc(("a", "PASS"), ("b", "PASS"), ("c", "FAIL"), ("d", "PASS"))
    new = doc(("a", "PASS"), ("b", "FALLBACK"), ("c", "PASS"))  # d not swept now
    reg = conformance.regressions(old, new)
    assert len(reg) == 1 and reg[0].startswith("b float32: PASS -> FALLBACK")
    assert new["totals"] == {"PASS": 2, "FALLBACK": 1, "FAIL": 0, "SKIP": 0}


def test_markdown_from_committed_json():
    with open(COVERAGE) as f:
        doc = json.load(f)
    md = conformance.markdown(doc)
    assert md.startswith("# Coverage")
    for section in ("## Totals", "## Fallbacks", "## Per op", "## Native aten overloads"):
        assert section in md
    assert md.index("## Totals") < md.index("## Fallbacks") < md.index("## Per op")


def test_quick_sweep_no_regressions(tmp_path):
    jobs = os.environ.get("TORCH_PJRT_CONFORMANCE_JOBS", "2")
    p, doc = _sweep(tmp_path, "--quick", "--jobs", jobs, "--compare", COVERAGE)
    assert p.returncode == 0, (p.stdout[-6000:] + p.stderr[-2000:])
    assert doc["totals_by_dtype"]["float32"]["rows"] > 600


# ---- wrong answers the sweep found (each fixed in the lowering named) ----------------

@pytest.mark.parametrize("k", [-2, -1, 0, 1, 2])
@pytest.mark.parametrize("shape", [(1, 1), (2, 1, 1), (1, 3), (3, 1)])
def test_tril_triu_constant_compare(shape, k, no_leaks):
    # hlo/builder.c compare: a 1x1 matrix makes the row/col iotas constants, and the
    # StableHLO folder compared them with the negative diagonal as unsigned.
    x = torch.randn(shape)
    for fn in (torch.tril, torch.triu):
        torch.testing.assert_close(fn(x.to("tpu"), k).cpu(), fn(x, k), atol=0, rtol=0)


@pytest.mark.parametrize("pad", [(-1, 1), (1, -2), (-1, -1, 2, -1), (2, -3)])
@pytest.mark.parametrize("mode", ["replicate", "reflect"])
def test_edge_pad_negative_crops(pad, mode, no_leaks):
    # ops/create.c edge_pad: a negative pad crops that side (it used to build a
    # program of the wrong shape and raise).
    x = torch.randn(2, 4, 6)  # 3-d: 2 pads are 1-d padding, 4 pads 2-d
    torch_pjrt.reset_metrics()
    got = torch.nn.functional.pad(x.to("tpu"), pad, mode=mode)
    torch.testing.assert_close(got.cpu(), torch.nn.functional.pad(x, pad, mode=mode), atol=0, rtol=0)
    assert torch_pjrt.fallbacks() == {}


@pytest.mark.parametrize("divisor", [-2, 3])
def test_avg_pool2d_divisor_override_any_sign(divisor, no_leaks):
    # ops/conv.c avg divisor: a negative divisor_override was ignored (CPU divides by it).
    x = torch.randn(1, 2, 4, 4, requires_grad=True)
    xt = x.detach().to("tpu").requires_grad_()
    y = torch.nn.functional.avg_pool2d(x, 2, divisor_override=divisor)
    yt = torch.nn.functional.avg_pool2d(xt, 2, divisor_override=divisor)
    torch.testing.assert_close(yt.cpu(), y.detach(), atol=1e-6, rtol=1e-6)
    g = torch.randn_like(y)
    y.backward(g)
    yt.backward(g.to("tpu"))
    torch.testing.assert_close(xt.grad.cpu(), x.grad, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("fn", [torch.softmax, torch.log_softmax], ids=["softmax", "log_softmax"])
def test_softmax_of_a_scalar(fn, no_leaks):
    # ops/activation.c: a 0-d softmax was the constant 1 (log: 0); CPU gives NaN for +-inf and NaN.
    x = torch.tensor([1.5, float("-inf"), float("inf"), float("nan")])
    for v in x:
        torch.testing.assert_close(fn(v.to("tpu"), 0).cpu(), fn(v, 0), equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_div_trunc_half_rounds_quotient_first(dtype, no_leaks):
    # ops/pointwise.c div_mode: CPU rounds a/b to the half dtype before truncating.
    g = torch.Generator().manual_seed(0)
    a = (torch.randn(4096, generator=g) * 10).to(dtype)
    b = torch.randn(4096, generator=g).to(dtype)
    got = torch.div(a.to("tpu"), b.to("tpu"), rounding_mode="trunc").cpu()
    torch.testing.assert_close(got, torch.div(a, b, rounding_mode="trunc"), atol=0, rtol=0)


def test_sort_indices_may_differ_only_between_equal_values():
    from torch.testing._internal.opinfo.core import SampleInput

    ops = {conformance.op_key(o): o for o in conformance.load_op_db()}
    x = torch.tensor([3.0, 1.0, 3.0, 2.0])
    cpu = torch.sort(x)
    sample = SampleInput(x)
    ties = torch.return_types.sort((cpu.values, torch.tensor([1, 3, 2, 0])))  # 3.0 at 0 and 2
    wrong = torch.return_types.sort((cpu.values, torch.tensor([1, 3, 0, 1])))  # not a permutation
    assert conformance._same_up_to_ties(ops[("sort", "")], sample, ties, cpu)
    assert not conformance._same_up_to_ties(ops[("sort", "")], sample, wrong, cpu)
    assert not conformance._same_up_to_ties(ops[("add", "")], sample, ties, cpu)


def test_linear_cross_entropy_compared_under_one_policy(no_leaks):
    from torch.nn.modules.linear_cross_entropy_options import LinearCrossEntropyOptions

    auto = LinearCrossEntropyOptions(batch_chunk_size=2)
    kw = conformance._same_policy({"options": auto}, torch.bfloat16)
    assert kw["options"].acc_policy == "compact"  # what tpu (and CUDA) resolve "auto" to
    fixed = {"options": LinearCrossEntropyOptions(acc_policy="accurate")}
    assert conformance._same_policy(fixed, torch.bfloat16) is fixed
    # Under the same explicit policy, tpu's loss is CPU's.
    g = torch.Generator().manual_seed(3)
    x = torch.randn(6, 3, generator=g).bfloat16()
    w = torch.randn(5, 3, generator=g).bfloat16()
    t = torch.randint(0, 5, (6,), generator=g)
    cpu = torch.nn.functional.linear_cross_entropy(x, w, t, **kw)
    tpu = torch.nn.functional.linear_cross_entropy(x.to("tpu"), w.to("tpu"), t.to("tpu"), **kw)
    torch.testing.assert_close(tpu.cpu(), cpu, atol=4e-3, rtol=2e-2)


def test_float64_tie_break_forgives_only_cpus_own_overflow_nan():
    # bfloat16 6.40625 % 2**-126 is exactly 0; CPU's kernel overflows a / b and says NaN.
    cpu = torch.tensor([float("nan"), 1.0], dtype=torch.bfloat16)
    ref = torch.tensor([0.0, 1.0], dtype=torch.float64)
    ok = torch.tensor([0.0, 1.0], dtype=torch.bfloat16)
    assert conformance._no_worse_than_cpu(ok, cpu, ref, 1e-3, 1.6e-2)
    off = torch.tensor([0.5, 1.0], dtype=torch.bfloat16)  # finite but not the exact answer
    assert not conformance._no_worse_than_cpu(off, cpu, ref, 1e-3, 1.6e-2)
    # where float64 says NaN too, NaN is required
    assert not conformance._no_worse_than_cpu(ok, cpu, torch.tensor([float("nan"), 1.0],
                                                                    dtype=torch.float64), 1e-3, 1.6e-2)


@pytest.mark.parametrize("dtype", [torch.float16])  # bf16: a few cancellations still differ
def test_addcmul_addcdiv_lerp_half_compute_in_float(dtype, no_leaks):
    # ops/pointwise.c: CPU computes these fused ops in float32 and rounds once.
    g = torch.Generator().manual_seed(0)
    s, t1, t2, w = (torch.randn(4096, generator=g).to(dtype) for _ in range(4))
    t2 = t2.abs() + 0.5
    tp = [v.to("tpu") for v in (s, t1, t2, w)]
    torch_pjrt.reset_metrics()
    for fn in (lambda a, b, c, d: torch.addcmul(a, b, c, value=0.7),
               lambda a, b, c, d: torch.addcdiv(a, b, c, value=-1.3),
               lambda a, b, c, d: torch.lerp(a, b, d)):
        # the sweep's tolerances: a float32 evaluation order may move one half ulp
        torch.testing.assert_close(fn(*tp).cpu(), fn(s, t1, t2, w), atol=1e-3,
                                   rtol=1.6e-2 if dtype == torch.bfloat16 else 1e-3)
    assert torch_pjrt.fallbacks() == {}


def test_matmul_reads_conjugate_and_negative_views(no_leaks):
    # csrc/device/tensor.cpp OpArgs::tensor: mm & co. receive conj/neg views unresolved
    # (PyTorch lets them through for BLAS); x @ x.conj().T and torch.cov were wrong.
    x = torch.randn(3, 4, dtype=torch.complex64)
    t = x.to("tpu")
    torch.testing.assert_close(torch.mm(t, t.conj().T).cpu(), torch.mm(x, x.conj().T))
    torch.testing.assert_close(torch.cov(t).cpu(), torch.cov(x))
    y = torch.randn(3, 4)
    u = y.to("tpu")
    torch.testing.assert_close(torch.mm(u._neg_view(), u.T).cpu(), torch.mm(y._neg_view(), y.T))
