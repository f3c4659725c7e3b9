"""DistributedDataParallel on tpu: losses and parameters after 10 steps
match one process on the same global batch; no_sync; the bf16 hook; a
compiled DDP model gives eager DDP's losses."""
import pytest

import _launch


@pytest.mark.parametrize("world", [2, 4])
def test_ddp_matches_single_process(world):
    for out in _launch.run(world, "_ddp", "train", timeout=300):
        assert out["losses"][-1] < out["losses"][0]


def test_ddp_no_sync_and_bf16_hook():
    _launch.run(2, "_ddp", "no_sync_and_hooks", timeout=300)


def test_compiled_ddp_matches_eager():
    for out in _launch.run(2, "_ddp", "compiled", timeout=300):
        assert out["losses"][-1] < out["losses"][0]
        assert out["metrics"]["graph_runs"] > 0, out["metrics"]
