"""FSDP2 fully_shard on tpu: reshard_after_forward True/False, bf16 mixed
precision and a PREMUL_SUM divide factor match one process on the global
batch; FSDP2's device ops (all_gather_copy_in, split_with_sizes_copy,
chunk_cat, storage resize) run natively; a checkpoint saved through
torch.distributed.checkpoint at 4 ranks loads at 2; a compiled fully_shard
model gives eager FSDP2's losses."""
import pytest

import _launch


@pytest.fixture(scope="module")
def ckpt_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("fsdp-ckpt"))


@pytest.fixture(scope="module")
def trained_at_4(ckpt_dir):
    # The 4-rank run also saves its trained model (one launch for both).
    return _launch.run(4, "_fsdp", "train", timeout=400, env={"TPJ_CKPT_DIR": ckpt_dir})


def test_fully_shard_matches_single_process_2_ranks():
    for out in _launch.run(2, "_fsdp", "train", timeout=400):
        assert out["fallbacks"] == {}, out["fallbacks"]


def test_fully_shard_matches_single_process_4_ranks(trained_at_4):
    for out in trained_at_4:
        assert out["fallbacks"] == {}, out["fallbacks"]


def test_checkpoint_saved_at_4_ranks_loads_at_2(trained_at_4, ckpt_dir):
    _launch.run(2, "_fsdp", "checkpoint_load", env={"TPJ_CKPT_DIR": ckpt_dir})


def test_compiled_fully_shard_matches_eager():
    for out in _launch.run(2, "_fsdp", "compiled", timeout=300):
        assert out["losses"][-1] < out["losses"][0]
        assert out["metrics"]["graph_runs"] > 0, out["metrics"]
