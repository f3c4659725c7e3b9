"""Shared setup for the torch-pjrt pytest suite.

TORCH_PJRT_CPU_DEVICES must be set before torch is imported: `import torch`
autoloads torch_pjrt, which reads it to decide how many virtual CPU devices
the XLA CPU plugin exposes (tpu:0 and tpu:1 here).
"""
import os

os.environ.setdefault("TORCH_PJRT_CPU_DEVICES", "2")
# A fresh executable cache per test session: compile counts are part of what
# the tests assert, and a warm cache from an earlier run would hide them.
import tempfile  # noqa: E402

os.environ.setdefault("TORCH_PJRT_CACHE_DIR", tempfile.mkdtemp(prefix="torch-pjrt-cache-"))

import gc  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

import torch_pjrt  # noqa: E402

# Every dense dtype the design promises on tpu.
ALL_DTYPES = [
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.float16, torch.bfloat16, torch.float32, torch.float64,
    torch.complex64, torch.complex128,
]
FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
COMPLEX_DTYPES = [torch.complex64, torch.complex128]
INT_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]

# The integer dtype with the same element size, for bitwise comparisons.
_BITS = {
    torch.float16: torch.int16, torch.bfloat16: torch.int16,
    torch.float32: torch.int32, torch.float64: torch.int64,
    torch.complex64: torch.int32, torch.complex128: torch.int64,
}


def dtype_id(dt):
    return str(dt).replace("torch.", "")


def live_buffers(full: bool = True) -> int:
    gc.collect(2 if full else 1)
    return torch_pjrt._C._live_buffers()


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


def _drop_last_traceback():
    # pytest keeps the last failure's traceback (for post-mortem debugging),
    # and with it the failed test's frame and tensors. After a failure, also
    # collect fully: those tensors may sit in an old generation, and a later
    # collection would free them mid-test, which no_leaks would misreport.
    names = ("last_type", "last_value", "last_traceback", "last_exc")
    failed = any(getattr(sys, n, None) is not None for n in names)
    for name in names:
        if hasattr(sys, name):
            setattr(sys, name, None)
    if failed:
        gc.collect()


@pytest.fixture
def native_only():
    """The test body must run without a CPU fallback (checked after the
    device has finished its work)."""
    torch.tpu.synchronize()
    torch_pjrt.reset_fallbacks()
    yield
    torch.tpu.synchronize()
    assert torch_pjrt.fallbacks() == {}


@pytest.fixture
def no_leaks(request):
    """Asserts the number of live PJRT buffers is back where it started.

    The test's own tensors are gone once its frame is; anything left is a
    buffer the C core or the glue forgot to release. Not checked after a
    failed test, whose traceback still holds its tensors."""
    _drop_last_traceback()
    torch.tpu.synchronize()
    # A young-generation collection is enough almost always and costs
    # microseconds; a full one (tens of ms) only settles a mismatch.
    before = live_buffers(full=False)
    yield
    rep = getattr(request.node, "rep_call", None)
    if rep is None or not rep.passed:
        return
    torch.tpu.synchronize()
    after = live_buffers(full=False)
    if after > before:
        after = live_buffers(full=True)
    # Fewer after than before is not this test's leak: an older cycle (a
    # compiled graph of an earlier module, say) was collected meanwhile.
    assert after <= before, f"PJRT buffers leaked: {before} live before the test, {after} after"


def bits(t: torch.Tensor) -> torch.Tensor:
    """A CPU integer tensor with t's exact bit pattern (NaN payloads, -0.0)."""
    t = t.detach()
    if t.dtype in COMPLEX_DTYPES:
        return torch.view_as_real(t.resolve_conj()).contiguous().view(_BITS[t.dtype])
    if t.dtype in _BITS:
        return t.contiguous().view(_BITS[t.dtype])
    return t


def assert_bitwise_equal(actual: torch.Tensor, expected: torch.Tensor):
    """Same device type (cpu), dtype, shape and bits."""
    assert actual.device.type == "cpu", f"expected a CPU tensor, got {actual.device}"
    assert actual.dtype == expected.dtype, f"dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    a, e = bits(actual), bits(expected)
    if not torch.equal(a, e):
        bad = (a != e).nonzero()[:5].tolist()
        raise AssertionError(
            f"values differ at (first indices) {bad}:\nactual   {actual.flatten()[:16]}\n"
            f"expected {expected.flatten()[:16]}")


def make(dtype, shape, seed=0, specials=True) -> torch.Tensor:
    """Deterministic CPU data of dtype and shape; floats include NaN, +-inf,
    -0.0 and a subnormal when specials is set and there is room."""
    g = torch.Generator().manual_seed(seed)
    n = 1
    for s in shape:
        n *= s
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype in INT_DTYPES:
        info = torch.iinfo(dtype)
        lo, hi = max(info.min, -(2 ** 62)), min(info.max, 2 ** 62)
        return torch.randint(lo, hi, shape, generator=g, dtype=torch.int64).to(dtype)
    if dtype in COMPLEX_DTYPES:
        real = {torch.complex64: torch.float32, torch.complex128: torch.float64}[dtype]
        return torch.complex(make(real, shape, seed, specials), make(real, shape, seed + 1, specials))
    x = torch.randn(shape, generator=g, dtype=torch.float64) * 100
    if specials and n >= 6:
        flat = x.view(-1)
        tiny = torch.finfo(dtype).tiny / 4  # a subnormal of dtype
        flat[:6] = torch.tensor([float("nan"), float("inf"), float("-inf"), -0.0, 0.0, tiny],
                                dtype=torch.float64)
        # Spread them out so slices and transposes still see some.
        x = flat[torch.randperm(n, generator=g)].view(shape)
    return x.to(dtype)


def run_python(code: str, env_update=None, drop=(), timeout=120):
    """Runs code in a fresh interpreter; returns CompletedProcess (text)."""
    env = dict(os.environ)
    for k in drop:
        env.pop(k, None)
    env.update(env_update or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=timeout)


def pytest_collection_modifyitems(config, items):
    """Tests written for the suite's two CPU-plugin devices name "tpu:1";
    on a machine with one real device (one GPU) they skip, as CUDA tests
    that need two GPUs do."""
    import inspect

    # The CPU plugin gives the suite its two devices (TORCH_PJRT_CPU_DEVICES
    # above); only elsewhere is the runtime opened here to count them.
    if torch_pjrt.plugin()["platform"] == "cpu":
        return
    try:
        n = torch.tpu.device_count()
    except Exception:
        return
    if n >= 2:
        return
    skip = pytest.mark.skip(reason=f"needs 2 tpu devices; this machine has {n}")
    for item in items:
        fn = getattr(item, "function", None)
        try:
            src = inspect.getsource(fn) if fn is not None else ""
        except (OSError, TypeError):
            src = ""
        if '"tpu:1"' in src or "'tpu:1'" in src or "tpu:1" in src:
            item.add_marker(skip)
