"""Ray Train on tpu: TorchTrainer with two workers, each holding one of the
suite's two CPU-plugin devices (torch_pjrt.ray.RESOURCE), trains a small
model with DDP (ray.train.torch.prepare_model) and with FSDP2 (fully_shard
on a tpu mesh), each worker on its half of the batch. The mean loss per step
equals one process training on the whole batch on the CPU (1e-4)."""
import json

import pytest
import torch

import torch_pjrt

ray = pytest.importorskip("ray", reason="ray is not installed (make ray)")
pytest.importorskip("ray.train", reason="Ray Train is not installed")
import torch_pjrt.ray  # noqa: E402
from _ray_cluster import cluster  # noqa: E402,F401  (the module's Ray node)

pytestmark = pytest.mark.skipif(torch_pjrt.plugin()["platform"] != "cpu",
                                reason="the suite's two CPU-plugin devices")

STEPS, BATCH, LR = 5, 16, 0.1


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))


def _batch():
    g = torch.Generator().manual_seed(1)
    return torch.randn(BATCH, 16, generator=g), torch.randn(BATCH, 4, generator=g)


def _steps(model, x, y, mean=lambda loss: loss):
    """STEPS of SGD; each step's loss, through `mean` (the ranks' average)."""
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    losses = []
    for _ in range(STEPS):
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(mean(loss.detach().clone()).item())
    return losses


def _single_process_losses():
    return _steps(_model(), *_batch())


def _train_loop(config):
    """Runs in each Ray Train worker."""
    import torch
    import torch.distributed as dist
    import ray.train
    import ray.train.torch

    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    device = ray.train.torch.get_device()
    model = _model()
    if config["strategy"] == "ddp":
        model = ray.train.torch.prepare_model(model)
    else:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        model = fully_shard(model.to(device), mesh=init_device_mesh("tpu", (world,)))
    x, y = _batch()
    part = BATCH // world
    x, y = x[rank * part:(rank + 1) * part].to(device), y[rank * part:(rank + 1) * part].to(device)

    def mean(loss):
        dist.all_reduce(loss, op=dist.ReduceOp.AVG)
        return loss

    losses = _steps(model, x, y, mean)
    import json, os

    import torch_pjrt

    seen = {"losses": losses, "device": str(device),
            "plugin_device": torch_pjrt._C._info()["devices"][0]["description"],
            "param_device": str(next(model.parameters()).device),
            "accelerate": os.environ.get("ACCELERATE_TORCH_DEVICE")}
    # Ray Train 2.60 keeps reported metrics only with a checkpoint: each
    # worker writes what it saw where the test reads it (one host)
    with open(os.path.join(config["out"], f"rank{rank}.json"), "w") as f:
        json.dump(seen, f)
    ray.train.report({"loss": losses[-1]})


@pytest.mark.parametrize("strategy", ["ddp", "fsdp2"])
def test_torch_trainer_on_two_devices_matches_one_process(cluster, strategy, tmp_path):
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchConfig, TorchTrainer

    trainer = TorchTrainer(
        _train_loop, train_loop_config={"strategy": strategy, "out": str(tmp_path)},
        scaling_config=ScalingConfig(num_workers=2,
                                     resources_per_worker={torch_pjrt.ray.RESOURCE: 1, "CPU": 0}),
        torch_config=TorchConfig(backend="cpu:gloo,tpu:pjrt"),
        run_config=RunConfig(storage_path=str(tmp_path), name=strategy))
    trainer.fit()
    seen = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    for m in seen:
        assert m["device"] == "tpu:0" and m["param_device"] == "tpu:0"
        assert m["accelerate"] == "tpu:0"  # for Hugging Face Accelerate
    # each worker on a device of its own
    assert sorted(m["plugin_device"] for m in seen) == ["TFRT_CPU_0", "TFRT_CPU_1"]
    expected = _single_process_losses()
    assert expected[-1] < expected[0]
    for m in seen:
        torch.testing.assert_close(torch.tensor(m["losses"]), torch.tensor(expected),
                                   rtol=1e-4, atol=1e-4)
