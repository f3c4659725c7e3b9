"""`torchrun -m torchtitan.train` on tpu, as a user runs it: TorchTitan
0.3.0's own trainer and configs (and torch_pjrt.titan's), the tokenizer and
dataset built by conftest.py. Every run sets TORCH_PJRT_FALLBACK=error, so an
op that would run on the CPU fails the run instead.

Runs that are compared start from one seed checkpoint (TorchTitan's
--checkpoint.create_seed_checkpoint, made once on one process), because a
sharded model initializes its DTensors with other random streams than an
unsharded one; each rank then reads the rows a single process reads
(_assets.py), so N processes and one must give the same losses."""
import math
import os
import shutil

import pytest

from _run import train
from _titan_fixtures import titan_assets  # noqa: F401 (fixture; skips without torchtitan)

LLAMA = dict(module="torch_pjrt.titan", config="llama3_debugmodel")
STEPS = 20


@pytest.fixture(scope="module")
def seed_checkpoint(titan_assets, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("seed"))
    train(titan_assets, out, "--checkpoint.enable", "--checkpoint.create_seed_checkpoint",
          steps=1, batch=1, args=(), **LLAMA)
    path = os.path.join(out, "checkpoint", "step-0")
    assert os.path.isdir(path)
    return os.path.join(out, "checkpoint")


def _from_seed(titan_assets, tmp_path_factory, seed_checkpoint, name, **kw):
    out = str(tmp_path_factory.mktemp(name))
    shutil.copytree(seed_checkpoint, os.path.join(out, "checkpoint"))
    # a constant learning rate after warmup: TorchTitan's default schedule
    # decays over the run's own length, which differs between the runs
    return train(titan_assets, out, "--checkpoint.enable", "--checkpoint.interval", "1000",
                 "--lr_scheduler.decay_ratio", "0.0", batch=1, **LLAMA, **kw)


@pytest.fixture(scope="module")
def llama_single(titan_assets, tmp_path_factory, seed_checkpoint):
    return _from_seed(titan_assets, tmp_path_factory, seed_checkpoint, "llama1", steps=STEPS)


def _losses(steps):
    return [steps[s]["loss"] for s in sorted(steps)]


def _assert_follows(run, single, nsteps, tol):
    """run (steps, output) has steps 1..nsteps, each loss within tol of the
    single-process run's."""
    steps, text = run
    assert sorted(steps) == list(range(1, nsteps + 1)), text[-3000:]
    for s in range(1, nsteps + 1):
        assert abs(steps[s]["loss"] - single[s]["loss"]) < tol, \
            (s, steps[s]["loss"], single[s]["loss"])


def test_llama3_varlen_trains_single_process(llama_single):
    steps, text = llama_single
    assert sorted(steps) == list(range(1, STEPS + 1)), text[-3000:]
    losses = _losses(steps)
    assert all(math.isfinite(x) for x in losses)
    # decreasing: the last five steps' mean well under the first step's
    assert sum(losses[-5:]) / 5 < losses[0] - 2.0, losses
    # TorchTitan's metrics line, with measured values
    last = steps[STEPS]
    assert last["tps"] > 0 and last["tflops"] > 0 and last["memory_gib"] > 0
    assert "has no tpu lowering" not in text


def test_llama3_unchanged_config_trains(titan_assets, tmp_path):
    """TorchTitan's own config, no torch_pjrt module: one process."""
    steps, text = train(titan_assets, str(tmp_path), steps=4, batch=1)
    assert sorted(steps) == [1, 2, 3, 4], text[-3000:]
    assert steps[4]["loss"] < steps[1]["loss"]


@pytest.mark.parametrize("nproc,nsteps", [(2, 4), (4, 2)])
def test_llama3_fsdp_matches_single_process(nproc, nsteps, llama_single, titan_assets,
                                            tmp_path_factory, seed_checkpoint):
    """FSDP2 over nproc processes (TorchTitan shards every parameter), each
    rank reading the single process's rows: the same losses."""
    single, _ = llama_single
    run = _from_seed(titan_assets, tmp_path_factory, seed_checkpoint, f"llama{nproc}",
                     steps=nsteps, nproc=nproc)
    _assert_follows(run, single, nsteps, 1e-3)


@pytest.mark.parametrize("config", ["qwen3_debugmodel"])
def test_qwen3_trains_single_process(config, titan_assets, tmp_path):
    steps, text = train(titan_assets, str(tmp_path), steps=6, batch=1,
                        module="torch_pjrt.titan", config=config)
    assert sorted(steps) == list(range(1, 7)), text[-3000:]
    losses = _losses(steps)
    assert all(math.isfinite(x) for x in losses)
    assert losses[-1] < losses[0] - 0.5, losses


def test_qwen3_moe_trains_single_process(titan_assets, tmp_path):
    """The MoE model (torch_pjrt.titan's qwen3_moe_smallmodel: TorchTitan's
    Qwen 3 MoE classes, token-choice top-k routing, grouped GEMMs whose
    lowering keeps static shapes whatever the routing) for 20 steps; its
    model-level parity with the CPU is in test_titan_parity.py."""
    steps, text = train(titan_assets, str(tmp_path), steps=STEPS, batch=1,
                        module="torch_pjrt.titan", config="qwen3_moe_smallmodel")
    assert sorted(steps) == list(range(1, STEPS + 1)), text[-3000:]
    losses = _losses(steps)
    assert all(math.isfinite(x) for x in losses)
    assert sum(losses[-5:]) / 5 < losses[0] - 1.5, losses
    assert steps[STEPS]["tps"] > 0 and steps[STEPS]["memory_gib"] > 0


def test_llama3_compiled_matches_eager(llama_single, titan_assets, tmp_path_factory,
                                       seed_checkpoint):
    """`--compile.enable --compile.backend tpu`: TorchTitan compiles each
    block with our backend (ComplexRoPE's conj views in the backward graph
    included); the losses follow the eager run's."""
    single, _ = llama_single
    nsteps = 4
    run = _from_seed(titan_assets, tmp_path_factory, seed_checkpoint, "llama1c",
                     steps=nsteps, args=("--compile.enable", "--compile.backend", "tpu"))
    _assert_follows(run, single, nsteps, 2e-3)


def test_llama3_tensor_parallel_matches_single_process(llama_single, titan_assets,
                                                       tmp_path_factory, seed_checkpoint):
    """`--parallelism.tensor_parallel_degree 2` on 2 processes (TorchTitan's
    TP with sequence parallelism and loss parallelism over DTensors on tpu;
    data-parallel degree 1, so both ranks read the single process's rows):
    the same losses. Measured: at most 7.4e-4 apart over 6 steps (bfloat16
    products summed in another order across the two halves)."""
    single, _ = llama_single
    nsteps = 4
    run = _from_seed(titan_assets, tmp_path_factory, seed_checkpoint, "llama_tp2",
                     steps=nsteps, nproc=2, args=("--parallelism.tensor_parallel_degree", "2"))
    _assert_follows(run, single, nsteps, 2e-3)


def test_llama3_checkpoint_resume_matches_unbroken(llama_single, titan_assets,
                                                   tmp_path_factory, seed_checkpoint):
    """TorchTitan's own DCP checkpointing of tpu tensors (model, optimizer,
    lr scheduler, dataloader): a run that saves at step 10 and stops, then a
    second invocation in the same folder that resumes from step-10 to step
    20, gives the unbroken run's losses (llama_single, from the same seed)."""
    single, _ = llama_single
    out = str(tmp_path_factory.mktemp("llama_resume"))
    shutil.copytree(seed_checkpoint, os.path.join(out, "checkpoint"))
    flags = ("--checkpoint.enable", "--checkpoint.interval", "10",
             "--lr_scheduler.decay_ratio", "0.0")
    first, text = train(titan_assets, out, *flags, steps=10, batch=1, **LLAMA)
    assert sorted(first) == list(range(1, 11)), text[-3000:]
    assert os.path.isdir(os.path.join(out, "checkpoint", "step-10"))
    second, text = train(titan_assets, out, *flags, steps=STEPS, batch=1, **LLAMA)
    assert "Loading the checkpoint from" in text and "step-10" in text
    # resumed: it starts at step 11, not from the seed
    assert sorted(second) == list(range(11, STEPS + 1)), text[-3000:]
    for s in range(1, STEPS + 1):
        got = (first if s <= 10 else second)[s]["loss"]
        # TorchTitan prints 5 decimals; measured: equal to all of them
        assert abs(got - single[s]["loss"]) <= 1e-5, (s, got, single[s]["loss"])
