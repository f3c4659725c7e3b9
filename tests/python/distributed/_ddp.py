"""DDP on tpu over "pjrt": 10 SGD steps of the test LM on shards of a global
batch, compared with one process training on the whole batch on tpu; then
no_sync accumulation and the bf16 compression hook."""
import copy

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from _launch import init
from models import TinyLM, lm_batches, lm_loss

STEPS = 10
GLOBAL_BATCH = 8


def _params(m):
    return {k: v.detach().cpu().clone() for k, v in m.named_parameters()}


def _train(model, batches, rank, world, ddp=None, lr=0.1):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    per = GLOBAL_BATCH // world
    for idx, tgt in batches:
        if ddp is not None:  # this rank's shard of the global batch
            idx, tgt = idx[rank * per:(rank + 1) * per], tgt[rank * per:(rank + 1) * per]
        opt.zero_grad()
        loss = lm_loss(model if ddp is None else ddp, idx.to("tpu"), tgt.to("tpu"))
        loss.backward()
        opt.step()
        if ddp is not None:  # the global batch's loss: the mean over shards
            loss = loss.detach().clone()
            dist.all_reduce(loss, op=dist.ReduceOp.AVG)
        losses.append(loss.item())
    return losses


def compare(a, b, atol, what):
    worst = max((a[k] - b[k]).abs().max().item() for k in a)
    assert worst <= atol, f"{what}: parameters differ by {worst} (atol {atol})"
    return worst


def train():
    rank, world = init()
    batches = lm_batches(STEPS, batch=GLOBAL_BATCH)
    base = TinyLM().to("tpu")

    ref = copy.deepcopy(base)
    ref_losses = _train(ref, batches, rank, world)

    # A small bucket cap: several buckets, so bucketing and its order are used.
    model = copy.deepcopy(base)
    ddp = DDP(model, bucket_cap_mb=0.02)
    losses = _train(model, batches, rank, world, ddp=ddp)
    for a, b in zip(losses, ref_losses):
        assert abs(a - b) <= 1e-4 * max(1.0, abs(b)), (losses, ref_losses)
    assert losses[-1] < losses[0], losses
    out = {"losses": losses, "ref_losses": ref_losses,
           "param_diff": compare(_params(model), _params(ref), 2e-4, "ddp")}
    # Every rank holds the same parameters.
    gathered = [None] * world
    dist.all_gather_object(gathered, _params(model))
    for g in gathered[1:]:
        compare(g, gathered[0], 0.0, "ranks")
    dist.barrier()
    dist.destroy_process_group()
    return out


def no_sync_and_hooks():
    rank, world = init()
    per = GLOBAL_BATCH // world
    (i1, t1), (i2, t2) = lm_batches(2, batch=GLOBAL_BATCH)
    base = TinyLM().to("tpu")

    # Reference: gradients of both micro-batches' global losses, summed.
    ref = copy.deepcopy(base)
    for idx, tgt in [(i1, t1), (i2, t2)]:
        lm_loss(ref, idx.to("tpu"), tgt.to("tpu")).backward()
    ref_grads = {k: p.grad.cpu() for k, p in ref.named_parameters()}

    shard = lambda x: x[rank * per:(rank + 1) * per].to("tpu")  # noqa: E731
    model = copy.deepcopy(base)
    ddp = DDP(model)
    with ddp.no_sync():
        lm_loss(ddp, shard(i1), shard(t1)).backward()
    # No communication yet: this rank's gradients are its shard's only.
    local = {k: p.grad.cpu().clone() for k, p in model.named_parameters()}
    lm_loss(ddp, shard(i2), shard(t2)).backward()
    grads = {k: p.grad.cpu() for k, p in model.named_parameters()}
    compare(grads, ref_grads, 1e-4, "no_sync accumulation")
    assert any((local[k] - ref_grads[k]).abs().max() > 1e-3 for k in local), "no_sync synced"

    # bf16 compression: gradients travel as bf16, so bf16's precision.
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    model = copy.deepcopy(base)
    ddp = DDP(model)
    ddp.register_comm_hook(dist.group.WORLD, default_hooks.bf16_compress_hook)
    ref = copy.deepcopy(base)
    lm_loss(ref, i1.to("tpu"), t1.to("tpu")).backward()
    lm_loss(ddp, shard(i1), shard(t1)).backward()
    for (k, p), q in zip(model.named_parameters(), ref.parameters()):
        a, b = p.grad.cpu(), q.grad.cpu()
        assert torch.allclose(a, b, rtol=2e-2, atol=2e-3), (k, (a - b).abs().max())
    dist.barrier()
    dist.destroy_process_group()
    return True


def compiled():
    """torch.compile(backend="tpu") of a DDP model (the gradient buckets'
    all_reduce runs through "pjrt" from DDP's hooks, around the compiled
    forward and backward): the losses and parameters of eager DDP. Default
    buckets: Dynamo's DDPOptimizer refuses a bucket cap under DDP's 1 MiB
    first bucket, and the test LM fits in one."""
    import torch_pjrt

    rank, world = init()
    batches = lm_batches(4, batch=GLOBAL_BATCH)
    base = TinyLM().to("tpu")

    eager = copy.deepcopy(base)
    eager_losses = _train(eager, batches, rank, world, ddp=DDP(eager))

    model = copy.deepcopy(base)
    cddp = torch.compile(DDP(model), backend="tpu")
    torch_pjrt.reset_metrics()
    losses = _train(model, batches, rank, world, ddp=cddp)
    m = torch_pjrt.metrics()
    assert m["graph_runs"] > 0 and m["graph_eager"] == 0, m
    for a, b in zip(losses, eager_losses):
        assert abs(a - b) <= 1e-4 * max(1.0, abs(b)), (losses, eager_losses)
    out = {"losses": losses, "eager_losses": eager_losses,
           "param_diff": compare(_params(model), _params(eager), 2e-4, "compiled ddp"),
           "metrics": {k: m[k] for k in ("graph_runs", "graph_splits", "graph_collectives")}}
    dist.barrier()
    dist.destroy_process_group()
    return out
