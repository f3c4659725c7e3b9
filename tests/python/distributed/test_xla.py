"""The XLA-collectives transport, in one process that drives four CPU-plugin
devices, a rank per thread (_xla.py holds the checks; each compares with
gloo on CPU tensors or with values computed locally)."""
import _launch


def test_xla_transport():
    [checks] = _launch.run(1, "_xla", "suite", timeout=300,
                           env={"TORCH_PJRT_CPU_DEVICES": "4", "OMP_NUM_THREADS": "2"})
    assert len(checks) >= 40, sorted(checks)
    bad = {k: v for k, v in checks.items() if v}
    assert not bad, "\n".join(f"{k}:\n{v}" for k, v in bad.items())
