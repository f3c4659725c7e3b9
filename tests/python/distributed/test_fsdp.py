"""FSDP2 fully_shard on tpu: reshard_after_forward True/False, bf16 mixed
precision and a PREMUL_SUM divide factor match one process on the global
batch; FSDP2's device ops (all_gather_copy_in, split_with_sizes_copy,
chunk_cat, storage resize) run natively."""
import pytest

import _launch


@pytest.mark.parametrize("world", [2, 4])
def test_fully_shard_matches_single_process(world):
    for out in _launch.run(world, "_fsdp", "train", timeout=400):
        assert out["fallbacks"] == {}, out["fallbacks"]


def test_checkpoint_saved_at_4_ranks_loads_at_2(tmp_path):
    env = {"TPJ_CKPT_DIR": str(tmp_path)}
    _launch.run(4, "_fsdp", "checkpoint_save", env=env)
    _launch.run(2, "_fsdp", "checkpoint_load", env=env)
