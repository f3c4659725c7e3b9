"""FSDP2 (fully_shard) on tpu over "pjrt": the test LM sharded per block,
trained on shards of a global batch and compared with one process training
on the whole batch: reshard_after_forward True and False, a bf16
MixedPrecisionPolicy, and a gradient divide factor (PREMUL_SUM)."""
import copy
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

from _launch import init
from models import TinyLM, lm_batches, lm_loss

STEPS = 5
GLOBAL_BATCH = 8


def _shard_model(base, **kw):
    model = copy.deepcopy(base)
    for blk in model.blocks:
        fully_shard(blk, **kw)
    fully_shard(model, **kw)
    return model


def _full(model):
    return {k: (v.full_tensor() if hasattr(v, "full_tensor") else v).detach().cpu()
            for k, v in model.named_parameters()}


def _train(model, batches, shard=None):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for idx, tgt in batches:
        if shard:
            idx, tgt = shard(idx), shard(tgt)
        opt.zero_grad()
        loss = lm_loss(model, idx.to("tpu"), tgt.to("tpu"))
        loss.backward()
        opt.step()
        if shard:
            loss = loss.detach().clone()
            dist.all_reduce(loss, op=dist.ReduceOp.AVG)
        losses.append(loss.item())
    return losses


def train():
    import torch_pjrt

    rank, world = init("pjrt")
    per = GLOBAL_BATCH // world
    shard = lambda x: x[rank * per:(rank + 1) * per]  # noqa: E731
    batches = lm_batches(STEPS, batch=GLOBAL_BATCH)
    base = TinyLM().to("tpu")
    ref = copy.deepcopy(base)
    ref_losses = _train(ref, batches)
    ref_params = _full(ref)
    out = {}
    torch_pjrt.reset_fallbacks()
    # At 4 ranks (2 cores) only the default resharding; 2 ranks run it all.
    full = world == 2
    for reshard in (True, False) if full else (True,):
        model = _shard_model(base, reshard_after_forward=reshard)
        losses = _train(model, batches, shard)
        for a, b in zip(losses, ref_losses):
            assert abs(a - b) <= 1e-4 * max(1.0, abs(b)), (reshard, losses, ref_losses)
        params = _full(model)
        worst = max((params[k] - ref_params[k]).abs().max().item() for k in params)
        assert worst <= 2e-4, (reshard, worst)
        out[f"reshard={reshard}"] = worst
    # What FSDP2 needed from the device ran there: no CPU fallbacks.
    out["fallbacks"] = torch_pjrt.fallbacks()
    if not full:
        if os.environ.get("TPJ_CKPT_DIR"):
            _save(model)
        dist.barrier()
        dist.destroy_process_group()
        return out

    # bf16 parameters and gradients in flight, f32 reduction.
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    model = _shard_model(base, mp_policy=mp)
    losses = _train(model, batches, shard)
    for a, b in zip(losses, ref_losses):
        assert abs(a - b) <= 3e-2 * max(1.0, abs(b)), ("bf16", losses, ref_losses)
    out["bf16_losses"] = losses

    # A divide factor of twice the group size: PREMUL_SUM(1 / factor), so the
    # gradients are half the mean.
    model = _shard_model(base)
    for m in [*model.blocks, model]:  # each fully_shard module has its own
        m.set_gradient_divide_factor(2.0 * world)
    (i, t), = lm_batches(1, batch=GLOBAL_BATCH)
    lm_loss(model, shard(i).to("tpu"), shard(t).to("tpu")).backward()
    ref2 = copy.deepcopy(base)
    lm_loss(ref2, i.to("tpu"), t.to("tpu")).backward()
    for (k, p), q in zip(model.named_parameters(), ref2.parameters()):
        g = p.grad.full_tensor().cpu()
        assert torch.allclose(g * 2, q.grad.cpu(), rtol=1e-4, atol=1e-5), (k, (g * 2 - q.grad.cpu()).abs().max())
    dist.barrier()
    dist.destroy_process_group()
    return out


def _save(model):
    """The sharded state through torch.distributed.checkpoint, and the full
    parameters for reference."""
    import torch.distributed.checkpoint as dcp

    path = os.environ["TPJ_CKPT_DIR"]
    dcp.save({"model": model.state_dict()}, checkpoint_id=path)
    full = _full(model)
    if dist.get_rank() == 0:
        torch.save(full, os.path.join(path, "reference.pt"))


def checkpoint_load():
    """World 2: load the world-4 checkpoint into a fresh sharding of another
    model; the full parameters are the saved ones."""
    import torch.distributed.checkpoint as dcp

    init("pjrt")
    model = _shard_model(TinyLM(seed=7).to("tpu"))
    state = {"model": model.state_dict()}
    path = os.environ["TPJ_CKPT_DIR"]
    dcp.load(state, checkpoint_id=path)
    model.load_state_dict(state["model"])
    ref = torch.load(os.path.join(path, "reference.pt"))
    got = _full(model)
    worst = max((got[k] - ref[k]).abs().max().item() for k in ref)
    assert worst == 0.0, worst
    dist.barrier()
    dist.destroy_process_group()
    return True


def compiled():
    """torch.compile(backend="tpu") of a fully_shard model (FSDP2's hooks run
    eagerly around the compiled blocks, their all-gathers and
    reduce-scatters through "pjrt"): the losses and parameters of eager
    FSDP2."""
    import torch_pjrt

    rank, world = init("pjrt")
    per = GLOBAL_BATCH // world
    shard = lambda x: x[rank * per:(rank + 1) * per]  # noqa: E731
    batches = lm_batches(3, batch=GLOBAL_BATCH)
    base = TinyLM().to("tpu")
    eager = _shard_model(base)
    eager_losses = _train(eager, batches, shard)

    model = _shard_model(base)
    torch_pjrt.reset_metrics()
    losses = _train(torch.compile(model, backend="tpu"), batches, shard)
    m = torch_pjrt.metrics()
    assert m["graph_runs"] > 0 and m["graph_eager"] == 0, m
    for a, b in zip(losses, eager_losses):
        assert abs(a - b) <= 1e-4 * max(1.0, abs(b)), (losses, eager_losses)
    a, b = _full(model), _full(eager)
    worst = max((a[k] - b[k]).abs().max().item() for k in a)
    assert worst <= 2e-4, worst
    dist.barrier()
    dist.destroy_process_group()
    return {"losses": losses, "eager_losses": eager_losses, "param_diff": worst,
            "metrics": {k: m[k] for k in ("graph_runs", "graph_splits", "graph_collectives")}}
