"""The OpInfo conformance sweep: PyTorch's own op database run on `tpu` against the CPU.

    python tools/conformance.py [--quick] [--dtypes float32,...] [--ops NAME,...]
        [--jobs N] [--timeout S] [--out docs/coverage.json] [--update] [--compare OLD.json]
    python tools/conformance.py --markdown docs/coverage.json   # writes docs/COVERAGE.md

Every OpInfo of torch.testing._internal.common_methods_invocations.op_db (name and
variant) and every swept dtype the op supports on CPU is one row. Each sample of
op.sample_inputs("cpu", dtype) runs on CPU and on tpu and the results are compared the
way PyTorch's test_ops.py test_compare_cpu does (see tolerance()); a result outside
the tolerance still passes if it is no further from a float64 CPU result than twice
the CPU's own error (_no_worse_than_cpu); a random op's samples (two CPU runs
differ, or upstream reseeds per call) compare shapes and dtypes only; the indices of
sort/argsort/topk/kthvalue may name a different one of equal elements (_same_up_to_ties). Float32 rows of
differentiable ops also compare gradients for a random cotangent. A row is
  PASS      every sample matched and no aten op fell back to the CPU,
  FALLBACK  every sample matched but some aten ops ran on the CPU (listed),
  FAIL      a wrong answer, an exception on tpu where the CPU succeeded, a crash or a timeout,
  SKIP      nothing to compare (upstream skips test_compare_cpu, or every sample raised on CPU).
Rows run in worker processes (`--worker`), one row at a time; the parent restarts a
worker that crashed or ran past the per-row timeout and records that row as FAIL.
"""
from __future__ import annotations

import argparse
import collections
import datetime
import itertools
import json
import os
import select
import subprocess
import sys
import threading
import time
import traceback

DTYPES = ["float32", "bfloat16", "float16", "float64", "int64", "int32", "bool", "complex64"]
STATUSES = ["PASS", "FALLBACK", "FAIL", "SKIP"]
ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
_TAG = "@@ROW "
_BEAT = "@@BEAT"


# ---------------------------------------------------------------- op database

def _shim_expecttest() -> None:
    # torch/testing/_internal/common_utils.py imports expecttest (a test-only
    # dependency the torch wheel does not pull in) for its TestCase base class and
    # ACCEPT flag; op_db itself needs neither, so a stand-in is enough to load it.
    try:
        import expecttest  # noqa: F401
    except ImportError:
        import types
        import unittest

        m = types.ModuleType("expecttest")
        m.ACCEPT = False
        m.TestCase = unittest.TestCase
        sys.modules["expecttest"] = m


def load_op_db():
    _shim_expecttest()
    from torch.testing._internal.common_methods_invocations import op_db

    return op_db


def op_key(op) -> tuple[str, str]:
    return (op.name, op.variant_test_name or "")


def _dtype(name: str):
    import torch

    return getattr(torch, name)


def _compare_cpu_decorators(op, dtype):
    """The DecorateInfos upstream attaches to TestCommon.test_compare_cpu for this dtype."""
    from torch.testing._internal.opinfo.core import DecorateInfo

    for d in op.decorators:
        if not isinstance(d, DecorateInfo) or d.test_name != "test_compare_cpu":
            continue
        if d.cls_name not in (None, "TestCommon"):
            continue
        if d.dtypes is not None and dtype not in d.dtypes:
            continue
        if not all(a() if callable(a) else a for a in ([d.active_if] if d.active_if is not None else [])):
            continue
        yield d


def upstream_skip(op, dtype) -> str | None:
    """Why upstream skips test_compare_cpu for this op (random outputs, uninitialized
    memory, undefined float->int conversions), or None. Only skips for every device
    count: a skip for one device type (cuda, xpu) is that backend's own gap."""
    for d in _compare_cpu_decorators(op, dtype):
        if d.device_type is not None:
            continue
        for dec in d.decorators:
            if getattr(dec, "__qualname__", "").startswith("skip."):
                reason = next((c.cell_contents for c in (dec.__closure__ or ())
                               if isinstance(c.cell_contents, str)), "")
                return f"upstream skips test_compare_cpu: {reason}".rstrip(": ")
    return None


def tolerance(op, dtype) -> tuple[float, float]:
    """(atol, rtol) for one row.

    test_compare_cpu calls assertEqual(tpu, cpu, atol=1e-3, rtol=1e-3); assertEqual
    takes the max of those and any toleranceOverride/precisionOverride the OpInfo
    attaches to that test (for any device type: overrides describe the other device's
    arithmetic, which is what ours is). One documented change: bfloat16 uses
    torch.testing's bfloat16 default rtol (1.6e-2) when larger, because one bf16
    rounding step is 2**-8 relative and XLA may round a fused expression once where
    the CPU kernel rounds each step (or the other way round). Integer and bool results
    are compared exactly."""
    import torch
    from torch.testing._comparison import _DTYPE_PRECISIONS
    from torch.testing._internal.common_device_type import precisionOverride, toleranceOverride

    if not (dtype.is_floating_point or dtype.is_complex):
        return 0.0, 0.0
    atol, rtol = 1e-3, 1e-3
    if dtype == torch.bfloat16:
        rtol = max(rtol, _DTYPE_PRECISIONS[dtype][0])
    for d in _compare_cpu_decorators(op, dtype):
        for dec in d.decorators:
            if isinstance(dec, toleranceOverride) and dtype in dec.d:
                atol = max(atol, dec.d[dtype].atol)
                rtol = max(rtol, dec.d[dtype].rtol)
            elif isinstance(dec, precisionOverride) and dtype in dec.d:
                atol = max(atol, dec.d[dtype])
    return atol, rtol


def rows_for(op_db, dtypes: list[str], only: set[str] | None = None) -> list[tuple[str, str, str]]:
    rows = []
    for op in op_db:
        if only and op.name not in only and f"{op.name}.{op.variant_test_name}" not in only:
            continue
        supported = op.supported_dtypes("cpu")
        for dt in dtypes:
            if _dtype(dt) in supported:
                rows.append((op.name, op.variant_test_name or "", dt))
    return rows


# ---------------------------------------------------------------- one row

def _map(x, fn, memo):
    """Applies fn to every tensor in nested args; a tensor seen twice maps to the
    same result (samples that alias an input must alias on tpu too)."""
    import torch

    if isinstance(x, torch.Tensor):
        if id(x) not in memo:
            memo[id(x)] = fn(x)
        return memo[id(x)]
    if isinstance(x, list):
        return [_map(v, fn, memo) for v in x]
    if isinstance(x, tuple) and not hasattr(x, "_fields"):
        return tuple(_map(v, fn, memo) for v in x)
    if isinstance(x, tuple):
        return type(x)(*[_map(v, fn, memo) for v in x])
    if isinstance(x, dict):
        return {k: _map(v, fn, memo) for k, v in x.items()}
    return x


def _leaf_copy(device):
    # Samples are made on tpu (as upstream makes them on the device under test); the
    # CPU reference gets copies, the tpu run the sample's own tensors as fresh leaves.
    # A tensor a sample builder put on the CPU on purpose (tensor_split's indices)
    # stays on the CPU in both runs.
    # A view keeps its place in its base's storage (as_strided partial_views reads
    # outside the view's own elements), so a view's CPU copy is the same view of a
    # CPU copy of its base.
    def f(t):
        if device != "cpu":
            c = t.detach()
        elif t._base is not None and t.device.type != "cpu":
            base = t._base.detach().cpu().clone()
            c = base.as_strided(t.size(), t.stride(), t.storage_offset())
        else:
            c = t.detach().cpu().clone()
        return c.requires_grad_(t.requires_grad)
    return f


def _tensors(x, out):
    import torch

    if isinstance(x, torch.Tensor):
        out.append(x)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _tensors(v, out)
    elif isinstance(x, dict):
        for v in x.values():
            _tensors(v, out)
    return out


def _same_policy(kwargs, dtype):
    """F.linear_cross_entropy's chunked options resolve "auto" per device type: the
    CPU accumulates bf16/f16 in float32 ("accurate"), every other device (CUDA, tpu)
    in the input dtype ("compact"), a different algorithm with a different answer
    (0.0 against 0.0033 for a confident bf16 sample). Both runs get tpu's explicit
    pick, so the comparison is of the kernels, not of the library's policy."""
    import dataclasses

    opts = kwargs.get("options")
    if getattr(opts, "acc_policy", None) != "auto" or dtype is None:
        return kwargs
    from torch.nn.modules import linear_cross_entropy_options as lceo

    # Only the accumulation policy: chunking_method must stay "auto" where the
    # sample gives batch_chunk_size, and chunk sizes do not change the answer.
    pick = lceo._AUTO_DEFAULTS.get(("tpu", dtype), lceo._AUTO_FALLBACK)
    opts = dataclasses.replace(opts, acc_policy=pick.acc_policy)
    return {**kwargs, "options": opts}


def _run(op, sample, device):
    memo: dict = {}
    mv = _leaf_copy(device)
    inp = _map(sample.input, mv, memo)
    args = _map(sample.args, mv, memo)
    kwargs = _same_policy(_map(sample.kwargs, mv, memo), getattr(sample.input, "dtype", None))
    out = op(inp, *args, **kwargs)
    leaves = [t for t in _tensors([inp, args, kwargs], []) if t.requires_grad]
    return out, leaves


def _grads(out, leaves, cotangents):
    import torch

    outs = [t for t in _tensors(out, []) if t.requires_grad]
    if not outs or not leaves:
        return None, []
    if cotangents is None:
        cotangents = [torch.randn(t.shape, dtype=t.dtype) for t in outs]
    dev = outs[0].device
    cots = [c.to(dev) for c in cotangents]
    g = torch.autograd.grad(outs, leaves, cots, allow_unused=True)
    return g, cotangents


def _to_cpu(x):
    return _map(x, lambda t: t.detach().cpu(), {})


def _ref64(op, sample, cots):
    """The op (and, with cotangents, its grads) on CPU with floating tensors in float64."""
    import torch

    def up(t):
        c = t.detach().cpu().clone()
        if c.is_floating_point():
            c = c.double()
        elif c.is_complex():
            c = c.to(torch.complex128)
        return c.requires_grad_(t.requires_grad)

    memo: dict = {}
    inp, args, kwargs = (_map(x, up, memo) for x in (sample.input, sample.args, sample.kwargs))
    res = sample.output_process_fn_grad(op(inp, *args, **kwargs))
    grads = None
    if cots is not None:
        leaves = [t for t in _tensors([inp, args, kwargs], []) if t.requires_grad]
        outs = [t for t in _tensors(res, []) if t.requires_grad]
        grads = torch.autograd.grad(outs, leaves, [c.to(o.dtype) for c, o in zip(cots, outs)],
                                    allow_unused=True)
    return res, grads


def _no_worse_than_cpu(actual, expected, ref, atol, rtol) -> bool:
    """The float64 tie-break: a result that misses the CPU's by more than the tolerance
    still passes when its largest error against the float64 result is at most twice
    the CPU's own plus atol (ill-conditioned inputs: logcumsumexp of 1e4, a near-
    singular solve), with NaN and infinities where the CPU has them. One exception:
    where the CPU's NaN is its own overflow (the float64 result is finite: bfloat16
    6.4 % 1.2e-38 is exactly 0, CPU's a - b * floor(a / b) makes inf - inf), a result
    within atol + rtol of the float64 one is right."""
    import torch

    if ref is None or not (expected.is_floating_point() or expected.is_complex()):
        return False
    if ref.shape != expected.shape or actual.shape != expected.shape:
        return False
    a, e, r = (x.detach().to(torch.complex128 if x.is_complex() else torch.float64)
               for x in (actual, expected, ref))
    cpu_lost = torch.isnan(e) & torch.isfinite(r) & ((a - r).abs() <= atol + rtol * r.abs())
    fin = torch.isfinite(e) & torch.isfinite(r)
    nan_a = torch.isnan(a) | cpu_lost
    if not torch.equal(nan_a, torch.isnan(e)) or not torch.equal(a[~fin & ~torch.isnan(e)],
                                                                  e[~fin & ~torch.isnan(e)]):
        return False
    if not fin.any():
        return True
    ea = (a - r).abs()[fin].max().item()
    ee = (e - r).abs()[fin].max().item()
    return ea <= 2 * ee + atol


def _compare(actual, expected, op, ref=None) -> None:
    """assert_close over nested results, each tensor with the tolerance of its own
    dtype (an integer-input row can have float outputs: softmax with dtype=). ref,
    when given, is a callable giving the float64 result for the tie-break."""
    import torch

    if isinstance(expected, torch.Tensor) and isinstance(actual, torch.Tensor):
        atol, rtol = tolerance(op, expected.dtype)
        try:
            torch.testing.assert_close(actual, expected, atol=atol, rtol=rtol, equal_nan=True,
                                       check_device=False, check_stride=False, check_layout=False)
        except AssertionError:
            try:
                r = ref() if ref is not None else None
            except Exception:  # noqa: BLE001  (no float64 kernel: no tie-break)
                r = None
            if (not isinstance(r, torch.Tensor) or actual.dtype != expected.dtype
                    or not _no_worse_than_cpu(actual, expected, r, atol, rtol)):
                raise
    elif isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        if len(actual) != len(expected):
            raise AssertionError(f"{len(actual)} outputs, expected {len(expected)}")
        refs = None
        for i, (a, b) in enumerate(zip(actual, expected)):
            def sub(i=i):
                nonlocal refs
                if refs is None:
                    refs = ref()
                return refs[i]
            _compare(a, b, op, sub if ref is not None else None)
    elif isinstance(expected, dict) and isinstance(actual, dict):
        if actual.keys() != expected.keys():
            raise AssertionError(f"output keys {sorted(actual)}, expected {sorted(expected)}")
        for k in expected:
            _compare(actual[k], expected[k], op,
                     (lambda k=k: ref()[k]) if ref is not None else None)
    else:
        torch.testing.assert_close(actual, expected, equal_nan=True, check_device=False)


_TIE_OPS = ("sort", "argsort", "topk", "kthvalue")


def _same_up_to_ties(op, sample, tpu, cpu) -> bool:
    """sort/argsort/topk/kthvalue: which of several equal elements an index names is
    unspecified (CPU's default sort is not even stable), so indices pass when the
    values agree and the input read at the tpu's indices equals the input read at
    the CPU's (and for sort, the indices are a permutation)."""
    import torch

    if op.name not in _TIE_OPS:
        return False
    x = sample.input.detach().cpu()
    a, k = sample.args, sample.kwargs
    if x.dim() == 0:
        return False
    if op.name in ("sort", "argsort"):
        dim = k.get("dim", a[0] if a else -1)
    else:
        dim = k.get("dim", a[1] if len(a) > 1 else -1)
    keep = op.name != "kthvalue" or k.get("keepdim", a[2] if len(a) > 2 else False)
    if isinstance(cpu, torch.Tensor) != isinstance(tpu, torch.Tensor):
        return False
    if not isinstance(cpu, torch.Tensor):
        _compare(tpu[0], cpu[0], op)  # the values themselves must agree
        it, ic = tpu[1], cpu[1]
    else:
        it, ic = tpu, cpu
    if it.dtype != torch.int64 or it.shape != ic.shape:
        return False
    if not keep:
        it, ic = it.unsqueeze(dim), ic.unsqueeze(dim)
    if op.name in ("sort", "argsort") and not torch.equal(it.sort(dim).values, ic.sort(dim).values):
        return False
    try:
        torch.testing.assert_close(torch.take_along_dim(x, it, dim), torch.take_along_dim(x, ic, dim),
                                   atol=0, rtol=0, equal_nan=True)
    except (AssertionError, RuntimeError, IndexError):
        return False
    return True


def _is_random(op, sample, cpu_res) -> bool:
    import torch

    # OpInfos of random ops that upstream wraps in wrapper_set_seed reseed the RNG on
    # every call, so two CPU runs agree; tpu's generator is a different algorithm.
    if "wrapper_set_seed" in getattr(getattr(op.op, "__code__", None), "co_names", ()):
        return True
    try:
        torch.manual_seed(2)
        again = sample.output_process_fn_grad(_run(op, sample, "cpu")[0])
        _compare(_to_cpu(again), _to_cpu(cpu_res), op)
        return False
    except Exception:
        return True


def _compare_meta(actual, expected) -> None:
    import torch

    a, e = _tensors(actual, []), _tensors(expected, [])
    if len(a) != len(e):
        raise AssertionError(f"{len(a)} output tensors, expected {len(e)}")
    for x, y in zip(a, e):
        if x.shape != y.shape or x.dtype != y.dtype:
            raise AssertionError(f"output {tuple(x.shape)} {x.dtype}, expected {tuple(y.shape)} {y.dtype}")


def _brief(e: BaseException) -> str:
    msg = str(e).strip().splitlines()
    first = msg[0] if msg else ""
    # assert_close puts the useful line (mismatch counts) after a header line.
    extra = [m.strip() for m in msg[1:4] if m.strip()]
    text = f"{type(e).__name__}: {first}" + (" | " + " | ".join(extra) if extra else "")
    return text[:400]


def run_row(op, dtype_name: str, quick: bool, beat=None) -> dict:
    import torch

    import torch_pjrt

    dtype = _dtype(dtype_name)
    reason = upstream_skip(op, dtype)
    if reason:
        return {"status": "SKIP", "detail": reason}
    grad = (dtype == torch.float32 and op.supports_autograd
            and dtype in op.supported_backward_dtypes("cpu"))
    torch.manual_seed(0)
    compared = 0
    randoms = 0
    cpu_errors = 0
    checked_grads = 0
    try:
        samples = op.sample_inputs("tpu", dtype, requires_grad=grad)
        samples = list(itertools.islice(samples, 1) if quick else samples)
        # Fallbacks while building samples (make_tensor's RNG, masks) are not the op's.
        torch_pjrt.reset_fallbacks()
        for i, sample in enumerate(samples):
            if beat:
                beat()
            try:
                torch.manual_seed(1)
                cpu_out, cpu_leaves = _run(op, sample, "cpu")
                cpu_res = sample.output_process_fn_grad(cpu_out)
                cpu_g, cots = _grads(cpu_res, cpu_leaves, None) if grad else (None, None)
            except Exception:
                cpu_errors += 1  # an input the op itself rejects: nothing to compare
                continue
            random = _is_random(op, sample, cpu_res)
            where = f"sample {i}"
            try:
                tpu_out, tpu_leaves = _run(op, sample, "tpu")
                tpu_res = sample.output_process_fn_grad(tpu_out)
                if random:
                    # Two CPU runs under different seeds differ (dropout in training mode):
                    # only the structure, shapes and dtypes can be compared.
                    _compare_meta(_to_cpu(tpu_res), _to_cpu(cpu_res))
                    randoms += 1
                else:
                    ref = lambda: _ref64(op, sample, None)[0]  # noqa: E731
                    try:
                        _compare(_to_cpu(tpu_res), _to_cpu(cpu_res), op, ref)
                    except AssertionError:
                        if not _same_up_to_ties(op, sample, _to_cpu(tpu_res), _to_cpu(cpu_res)):
                            raise
                if cpu_g is not None and not random:
                    where = f"sample {i} grad"
                    tpu_g, _ = _grads(tpu_res, tpu_leaves, cots)
                    ref_g = []

                    def ref(k):
                        if not ref_g:
                            ref_g.append(_ref64(op, sample, cots)[1])
                        return ref_g[0][k]

                    for k, (a, b) in enumerate(zip(tpu_g, cpu_g)):
                        if (a is None) != (b is None):
                            raise AssertionError("grad defined on one device only")
                        if a is not None:
                            _compare(a.cpu(), b, op, lambda k=k: ref(k))
                    checked_grads += 1
            except Exception as e:
                return {"status": "FAIL", "detail": f"{where}: {_brief(e)}",
                        "fallbacks": sorted(torch_pjrt.fallbacks())}
            compared += 1
    except Exception as e:
        return {"status": "FAIL", "detail": f"sample generation: {_brief(e)}"}
    fb = sorted(torch_pjrt.fallbacks())
    if compared == 0:
        return {"status": "SKIP", "detail": f"every sample ({cpu_errors}) raised on CPU"
                if cpu_errors else "no samples"}
    note = f"{compared} samples" + (f", grads {checked_grads}" if grad else "") + (
        f", {randoms} random (shapes and dtypes compared)" if randoms else "")
    if fb:
        return {"status": "FALLBACK", "detail": note, "fallbacks": fb}
    return {"status": "PASS", "detail": note}


def worker() -> int:
    """Reads one row per line ({"op", "variant", "dtype", "quick"}) from stdin and
    answers each with one tagged JSON line on stdout."""
    os.environ.setdefault("TORCH_PJRT_FALLBACK", "allow")
    import warnings

    warnings.filterwarnings("ignore")
    import torch  # noqa: F401  (autoloads torch_pjrt)

    ops = {op_key(op): op for op in load_op_db()}
    out = sys.stdout

    def beat():  # progress: the parent's timeout counts from the last sample started
        out.write(_BEAT + "\n")
        out.flush()

    out.write(_TAG + json.dumps({"ready": True}) + "\n")
    out.flush()
    for line in sys.stdin:
        req = json.loads(line)
        t0 = time.time()
        op = ops.get((req["op"], req["variant"]))
        if req["op"] == os.environ.get("TORCH_PJRT_CONFORMANCE_CRASH"):
            # Test hook: the isolation path (a row that takes its worker down).
            import signal

            os.kill(os.getpid(), signal.SIGSEGV)
        if req["op"] == os.environ.get("TORCH_PJRT_CONFORMANCE_HANG"):
            time.sleep(3600)  # Test hook: the per-row timeout.
        try:
            res = run_row(op, req["dtype"], req["quick"], beat) if op else {
                "status": "SKIP", "detail": "not in this torch's op_db"}
        except BaseException as e:  # noqa: BLE001  (one row never ends the worker)
            res = {"status": "FAIL", "detail": f"harness: {_brief(e)}",
                   "trace": traceback.format_exc()[-600:]}
        res["seconds"] = round(time.time() - t0, 2)
        out.write(_TAG + json.dumps(res) + "\n")
        out.flush()
    return 0


# ---------------------------------------------------------------- parent

class _Worker:
    def __init__(self, log):
        env = dict(os.environ)
        env.setdefault("TORCH_PJRT_FALLBACK", "allow")
        env.setdefault("TORCH_PJRT_CACHE_DIR", os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "torch_pjrt"))
        self.p = subprocess.Popen([sys.executable, os.path.realpath(__file__), "--worker"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                  env=env, text=True, bufsize=1)
        self.buf = ""

    def read(self, timeout: float):
        """The next tagged reply, or ("timeout"|"exit", None); timeout counts from the
        request or from the worker's last heartbeat (one per sample)."""
        deadline = time.time() + timeout
        fd = self.p.stdout.fileno()
        while True:
            while "\n" in self.buf:
                line, self.buf = self.buf.split("\n", 1)
                if line.startswith(_TAG):
                    return "ok", json.loads(line[len(_TAG):])
                if line.startswith(_BEAT):
                    deadline = time.time() + timeout
            left = deadline - time.time()
            if left <= 0:
                return "timeout", None
            r, _, _ = select.select([fd], [], [], left)
            if r:
                chunk = os.read(fd, 65536)
                if not chunk:
                    return "exit", None
                self.buf += chunk.decode(errors="replace")

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()

    def exit_reason(self) -> str:
        rc = self.p.wait()
        if rc < 0:
            import signal

            return f"worker killed by signal {signal.Signals(-rc).name}"
        return f"worker exited with status {rc}"


def sweep(rows, quick: bool, jobs: int, timeout: float, progress=True) -> list[dict]:
    todo = collections.deque(enumerate(rows))
    results: list[dict | None] = [None] * len(rows)
    lock = threading.Lock()
    log_path = os.environ.get("TORCH_PJRT_CONFORMANCE_LOG", os.devnull)
    log = open(log_path, "a")
    done = [0]
    t0 = time.time()

    def start():
        while True:
            w = _Worker(log)
            st, _ = w.read(300)
            if st == "ok":
                return w
            w.kill()
            raise RuntimeError(f"conformance worker failed to start ({st}); see {log_path}")

    def loop():
        w = start()
        while True:
            with lock:
                if not todo:
                    break
                i, (name, variant, dt) = todo.popleft()
            w.p.stdin.write(json.dumps({"op": name, "variant": variant, "dtype": dt,
                                        "quick": quick}) + "\n")
            w.p.stdin.flush()
            st, res = w.read(timeout)
            if st != "ok":
                if st == "timeout":
                    w.kill()
                    res = {"status": "FAIL", "detail": f"timeout: one sample ran over {timeout:.0f} s"}
                else:
                    res = {"status": "FAIL", "detail": w.exit_reason()}
                w = start()
            res.update(op=name, variant=variant, dtype=dt)
            with lock:
                results[i] = res
                done[0] += 1
                if progress:
                    sys.stderr.write(f"\r[{done[0]}/{len(rows)} {time.time() - t0:.0f}s] "
                                     f"{name}{'.' + variant if variant else ''} {dt}: "
                                     f"{res['status']}\x1b[K")
                    if res["status"] == "FAIL":
                        sys.stderr.write(f"\n  {res['detail'][:200]}\n")
        w.p.stdin.close()
        w.kill()

    threads = [threading.Thread(target=loop) for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if progress:
        sys.stderr.write("\n")
    log.close()
    return [r for r in results if r is not None]


def _record(r: dict) -> dict:
    rec = {"op": r["op"], "variant": r["variant"], "dtype": r["dtype"], "status": r["status"],
           "detail": r.get("detail", "")}
    if r.get("fallbacks"):
        rec["fallbacks"] = r["fallbacks"]
    return rec


def summarize(doc: dict) -> dict:
    rows = doc["rows"]
    doc["totals"] = {s: sum(1 for r in rows if r["status"] == s) for s in STATUSES}
    by = {}
    for dt in doc["dtypes"]:
        rs = [r for r in rows if r["dtype"] == dt]
        by[dt] = {s: sum(1 for r in rs if r["status"] == s) for s in STATUSES}
        by[dt]["rows"] = len(rs)
    doc["totals_by_dtype"] = by
    return doc


def build_doc(rows: list[dict], dtypes: list[str], mode: str, seconds: float) -> dict:
    import torch

    import torch_pjrt

    try:
        info = torch_pjrt.info()
        plugin = {"path": info.get("plugin_path"), "platform": info.get("platform"),
                  "version": info.get("platform_version")}
    except Exception as e:  # noqa: BLE001
        plugin = {"error": str(e)}
    doc = {
        "torch_version": torch.__version__,
        "torch_pjrt_version": torch_pjrt.__version__,
        "plugin": plugin,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "mode": mode,
        "dtypes": dtypes,
        "seconds": {mode + ":" + ",".join(dtypes): round(seconds)},
        "rows": [_record(r) for r in rows],
    }
    return summarize(doc)


def merge(old: dict, new: dict) -> dict:
    """new's rows replace old's rows of the same op, variant and dtype; the rest of
    old stays (a partial re-run, --ops or --dtypes, updates just its rows)."""
    key = lambda r: (r["op"], r["variant"], r["dtype"])  # noqa: E731
    fresh = {key(r) for r in new["rows"]}
    keep = [r for r in old["rows"] if key(r) not in fresh]
    order = {dt: i for i, dt in enumerate(DTYPES)}
    doc = dict(new)
    doc["dtypes"] = sorted(set(old["dtypes"]) | set(new["dtypes"]), key=lambda d: order.get(d, 99))
    doc["seconds"] = {**old.get("seconds", {}), **new.get("seconds", {})}
    doc["rows"] = sorted(keep + new["rows"],
                         key=lambda r: (r["op"], r["variant"], order.get(r["dtype"], 99)))
    if old.get("mode") != new.get("mode"):
        doc["mode"] = "mixed"
    if "device_generic" in old and "device_generic" not in new:
        doc["device_generic"] = old["device_generic"]  # written by hand, see markdown()
    return summarize(doc)


def regressions(old: dict, new: dict) -> list[str]:
    """Rows PASS in old and present but not PASS in new."""
    now = {(r["op"], r["variant"], r["dtype"]): r for r in new["rows"]}
    out = []
    for r in old["rows"]:
        k = (r["op"], r["variant"], r["dtype"])
        if r["status"] == "PASS" and k in now and now[k]["status"] != "PASS":
            n = now[k]
            extra = ", ".join(n.get("fallbacks", [])) or n.get("detail", "")
            out.append(f"{k[0]}{'.' + k[1] if k[1] else ''} {k[2]}: PASS -> {n['status']} ({extra})")
    return out


# ---------------------------------------------------------------- markdown

def native_section() -> str:
    """The aten overloads of the C lowering table (what tools/coverage.py used to write)."""
    import torch_pjrt

    ops = torch_pjrt.lowered_ops()
    aten = [o for o in ops if o.startswith("aten::")]
    internal = [o for o in ops if not o.startswith("aten::")]
    lines = ["## Native aten overloads", "",
             f"The C lowering table (`src/ops/table.c`) has **{len(aten)} native aten overloads**"
             f" and {len(internal)} internal ops; every other aten op runs on the CPU through the",
             "counted fallback (`torch_pjrt.fallbacks()`).", "", "| op |", "|---|"]
    lines += [f"| `{o}` |" for o in aten]
    lines += ["", "Internal ops (used by the engine itself): " +
              ", ".join(f"`{o}`" for o in internal)]
    return "\n".join(lines)


def markdown(doc: dict) -> str:
    rows = doc["rows"]
    t = doc["totals"]
    ops_cpu = len({(r["op"], r["variant"]) for r in rows})
    lines = [
        "# Coverage",
        "",
        "Generated by `python tools/conformance.py --markdown docs/coverage.json` from",
        "`docs/coverage.json`, which `python tools/conformance.py` writes: every OpInfo of",
        "PyTorch's `op_db` (name.variant) and dtype the op supports on CPU, every sample run on",
        "CPU and on tpu and compared with test_compare_cpu's tolerances; float32 rows of",
        "differentiable ops also compare gradients. Two documented departures: bfloat16 uses",
        "rtol 1.6e-2 (torch.testing's bf16 default; one bf16 rounding is 2**-8), and a result",
        "outside the tolerance passes if its largest error against a float64 CPU result is at",
        "most twice the CPU's own plus atol (ill-conditioned samples). Random ops compare",
        "shapes and dtypes; sort/argsort/topk/kthvalue indices may pick another of equal",
        "elements (the input read at both sets of indices must agree). PASS: right answer,",
        "every aten op native.",
        "FALLBACK: right answer, some aten ops ran on the CPU (listed). FAIL: wrong answer,",
        "exception, crash or timeout. SKIP: nothing comparable (reason given).",
        "",
        f"torch {doc['torch_version']}, torch_pjrt {doc['torch_pjrt_version']}, plugin "
        f"{doc['plugin'].get('platform', '?')} {doc['plugin'].get('version', '') or ''}".rstrip()
        + f", {doc['date']}, mode {doc['mode']}, dtypes swept: {', '.join(doc['dtypes'])}.",
        "",
    ]
    if doc.get("notes"):
        lines += [f"Notes: {doc['notes']}.", ""]
    lines += [
        "## Totals",
        "",
        f"{len(rows)} rows over {ops_cpu} OpInfos: " +
        ", ".join(f"{s} {t[s]}" for s in STATUSES) + ".",
        "",
        "| dtype | rows | PASS | FALLBACK | FAIL | SKIP | PASS % |",
        "|---|---|---|---|---|---|---|",
    ]
    for dt, b in doc["totals_by_dtype"].items():
        pct = 100.0 * b["PASS"] / b["rows"] if b["rows"] else 0.0
        lines.append(f"| {dt} | {b['rows']} | {b['PASS']} | {b['FALLBACK']} | {b['FAIL']} | "
                     f"{b['SKIP']} | {pct:.1f} |")
    fb = collections.Counter(a for r in rows for a in r.get("fallbacks", []))
    lines += ["", "## Fallbacks", "",
              "aten ops that ran on the CPU, with the number of rows in which they did.", "",
              "| aten op | rows |", "|---|---|"]
    for a, n in fb.most_common():
        lines.append(f"| `{a}` | {n} |")
    fails = [r for r in rows if r["status"] == "FAIL"]
    lines += ["", f"## Failures ({len(fails)})", ""]
    for r in fails:
        v = "." + r["variant"] if r["variant"] else ""
        lines.append(f"- `{r['op']}{v}` {r['dtype']}: {r['detail'].replace('|', '/')}")
    lines += ["", "## Per op", "",
              "P = PASS, F = FALLBACK (see the fallback list), **X** = FAIL, s = SKIP, "
              "blank = the op does not support that dtype on CPU.", "",
              "| op | " + " | ".join(doc["dtypes"]) + " |",
              "|---|" + "---|" * len(doc["dtypes"])]
    cell = {"PASS": "P", "FALLBACK": "F", "FAIL": "**X**", "SKIP": "s"}
    by_op: dict = collections.OrderedDict()
    for r in sorted(rows, key=lambda r: (r["op"], r["variant"])):
        by_op.setdefault((r["op"], r["variant"]), {})[r["dtype"]] = r
    for (name, variant), d in by_op.items():
        label = f"`{name}`" + (f" ({variant})" if variant else "")
        lines.append(f"| {label} | " + " | ".join(cell[d[dt]["status"]] if dt in d else ""
                                                for dt in doc["dtypes"]) + " |")
    skips = [r for r in rows if r["status"] == "SKIP"]
    lines += ["", f"## Skipped rows ({len(skips)})", ""]
    for r in skips:
        v = "." + r["variant"] if r["variant"] else ""
        lines.append(f"- `{r['op']}{v}` {r['dtype']}: {r['detail']}")
    dg = doc.get("device_generic")
    if dg:
        lines += ["", "## PyTorch's device-generic OpInfo tests", "",
                  "`tests/opinfo/test_device_generic.py` instantiates PyTorch's own machinery,",
                  "`instantiate_device_type_tests(TestCommon, globals(), only_for=\"privateuse1\")`",
                  "with PrivateUse1TestBase over op_db, so each template runs once per OpInfo on the",
                  "tpu device with op_db's own skips and expected failures for TestCommon:",
                  "test_compare_cpu (every reference input against CPU, float32, atol = rtol = 1e-3,",
                  "upstream's check), test_noncontiguous_samples (non-contiguous inputs give the",
                  "contiguous answer) and test_errors_match_cpu (every error input that makes CPU",
                  "raise must raise the same type and message on tpu; CI runs this one).", "",
                  f"Command: `{dg['command']}` ({dg['date']}).", "",
                  "| test | passed | failed | skipped | xfailed |", "|---|---|---|---|---|"]
        for name, c in dg["results"].items():
            lines.append(f"| {name} | {c.get('passed', 0)} | {c.get('failed', 0)} | "
                         f"{c.get('skipped', 0)} | {c.get('xfailed', 0)} |")
        if dg.get("notes"):
            lines += ["", dg["notes"]]
    pinned = os.path.join(ROOT, "docs", "coverage_pinned.md")
    if os.path.exists(pinned):  # written by hand: where tpu keeps its own answer
        with open(pinned) as f:
            lines += ["", f.read().strip()]
    lines += ["", native_section(), ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- main

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python tools/conformance.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="float32 only, first sample per op")
    ap.add_argument("--dtypes", default=None, help="comma list (default: all eight)")
    ap.add_argument("--ops", default=None, help="comma list of op names or name.variant")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per sample (60, quick 30)")
    ap.add_argument("--out", default=None, help="json to write (default: none in quick mode, "
                    "docs/coverage.json otherwise)")
    ap.add_argument("--update", action="store_true",
                    help="merge into --out: replace only the rows swept now")
    ap.add_argument("--compare", default=None, help="OLD.json: list PASS rows that are not PASS now")
    ap.add_argument("--markdown", default=None, metavar="JSON",
                    help="write docs/COVERAGE.md from JSON and exit")
    a = ap.parse_args(argv)
    if a.worker:
        return worker()
    if a.markdown:
        with open(a.markdown) as f:
            doc = json.load(f)
        with open(os.path.join(ROOT, "docs", "COVERAGE.md"), "w") as f:
            f.write(markdown(doc))
        return 0
    dtypes = ["float32"] if a.quick else (a.dtypes.split(",") if a.dtypes else list(DTYPES))
    for d in dtypes:
        if d not in DTYPES:
            ap.error(f"unknown dtype {d}; choose from {','.join(DTYPES)}")
    timeout = a.timeout or (30.0 if a.quick else 60.0)
    os.environ.setdefault("TORCH_PJRT_FALLBACK", "allow")
    import torch  # noqa: F401

    rows = rows_for(load_op_db(), dtypes, set(a.ops.split(",")) if a.ops else None)
    t0 = time.time()
    res = sweep(rows, a.quick, a.jobs, timeout, progress=sys.stderr.isatty() or True)
    doc = build_doc(res, dtypes, "quick" if a.quick else "full", time.time() - t0)
    out = a.out or (None if a.quick else os.path.join(ROOT, "docs", "coverage.json"))
    if out:
        if a.update and os.path.exists(out):
            with open(out) as f:
                doc = merge(json.load(f), doc)
        with open(out, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    t = doc["totals"]
    print(f"{len(doc['rows'])} rows in {time.time() - t0:.0f} s: " +
          ", ".join(f"{s} {t[s]}" for s in STATUSES))
    for r in res:
        if r["status"] == "FAIL":
            print(f"FAIL {r['op']}{'.' + r['variant'] if r['variant'] else ''} {r['dtype']}: "
                  f"{r.get('detail', '')}")
    if a.compare:
        with open(a.compare) as f:
            old = json.load(f)
        reg = regressions(old, doc)
        for line in reg:
            print("REGRESSION " + line)
        print(f"{len(reg)} regressions against {a.compare}")
        return 1 if reg else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
