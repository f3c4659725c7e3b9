"""What a user reads about the engine: the fallback modes and metrics()."""
import torch

import torch_pjrt
from conftest import run_python

WARN_ONCE = """
import warnings, torch, torch_pjrt
x = torch.randn(4, 3).to("tpu")
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    # SVD stays on the CPU by design: a counted fallback
    a = torch.linalg.svdvals(x); b = torch.linalg.svdvals(x); c = torch.linalg.svdvals(x + 1)
    msgs = [str(m.message) for m in w if "no tpu lowering" in str(m.message)]
assert torch.allclose(a.cpu(), torch.linalg.svdvals(x.cpu()))
print(len(msgs), torch_pjrt.fallbacks().get("aten::_linalg_svd.U"), msgs[0] if msgs else "")
"""


def test_fallback_warns_once_per_op_by_default():
    r = run_python(WARN_ONCE, drop=("TORCH_PJRT_FALLBACK",))
    assert r.returncode == 0, r.stderr
    n, count, msg = r.stdout.strip().split(" ", 2)
    assert n == "1" and count == "3"
    assert "aten::_linalg_svd.U" in msg and "TORCH_PJRT_FALLBACK" in msg


def test_fallback_allow_is_silent_and_bad_mode_is_refused():
    r = run_python(WARN_ONCE, env_update={"TORCH_PJRT_FALLBACK": "allow"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[:2] == ["0", "3"]
    r = run_python("import torch; torch.linalg.svdvals(torch.ones(2, 2, device='tpu'))",
                   env_update={"TORCH_PJRT_FALLBACK": "sometimes"})
    assert r.returncode != 0 and "is not one of allow, warn, error" in r.stderr


def test_metrics_count_what_happened():
    torch_pjrt.reset_metrics()
    m0 = torch_pjrt.metrics()
    for key in ("compiles", "compile_seconds", "cache_hits_memory", "cache_hits_disk",
                "executions", "h2d_bytes", "d2h_bytes", "fallback_calls", "live_buffers",
                "live_bytes"):
        assert key in m0, key
    assert m0["executions"] == 0 and m0["h2d_bytes"] == 0 and m0["fallback_calls"] == 0
    x = torch.arange(1000, dtype=torch.float32).to("tpu")      # 4000 bytes up
    y = (x * 3 + 1).cpu()                                         # 4000 bytes down
    assert torch.equal(y, torch.arange(1000, dtype=torch.float32) * 3 + 1)
    m = torch_pjrt.metrics()
    assert m["h2d_bytes"] >= 4000 and m["d2h_bytes"] >= 4000
    assert m["executions"] >= 2
    assert m["live_bytes"] >= 4000 and m["live_buffers"] >= 1
    torch.linalg.svdvals(x.reshape(40, 25))  # SVD runs on the CPU by design
    assert torch_pjrt.metrics()["fallback_calls"] == 1
