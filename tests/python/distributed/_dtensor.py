"""DTensor on a tpu mesh over "pjrt": distribute_tensor with each placement,
redistribute between placements, sharded matmuls, tensor parallelism on the
test LM's MLP, and the RNG tracker (torch.tpu's 16-byte seed+offset state)."""
import os

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor


def _close(a, b, what, tol=1e-5):
    a, b = a.detach().cpu(), b.detach().cpu()
    assert a.shape == b.shape and torch.allclose(a, b, rtol=tol, atol=tol), (what, (a - b).abs().max())


def _placements_1d(mesh, x):
    checks = 0
    places = [Shard(0), Shard(1), Replicate(), Partial()]
    for src in places:
        # A Partial(sum) tensor: every rank holds x / size.
        d = distribute_tensor(x, mesh, [src]) if not isinstance(src, Partial) else \
            DTensor.from_local(x / mesh.size(), mesh, [Partial()])
        _close(d.full_tensor(), x, f"distribute {src}")
        for dst in places:
            if isinstance(dst, Partial) and not isinstance(src, Partial):
                continue  # redistributing to Partial is DTensor-internal
            _close(d.redistribute(mesh, [dst]).full_tensor(), x, f"{src} -> {dst}")
            checks += 1
    return checks


def run():
    os.environ["MASTER_PORT"] = os.environ["TPJ_TEST_PORT"]
    world = int(os.environ["WORLD_SIZE"])
    torch.manual_seed(0)
    x = torch.randn(8, 12)
    w = torch.randn(12, 8)
    out = {}
    if world == 4:
        mesh2 = init_device_mesh("tpu", (2, 2), mesh_dim_names=("dp", "tp"))
        mesh = mesh2["tp"]
        d = distribute_tensor(x, mesh2, [Shard(0), Shard(1)])
        _close(d.full_tensor(), x, "2d shard")
        _close(d.redistribute(mesh2, [Replicate(), Shard(0)]).full_tensor(), x, "2d redistribute")
        p = DTensor.from_local(x / 2, mesh2, [Partial(), Replicate()])
        _close(p.redistribute(mesh2, [Shard(0), Shard(1)]).full_tensor(), x, "2d partial")
    else:
        mesh = init_device_mesh("tpu", (world,))
    x, w = x.to("tpu"), w.to("tpu")
    out["redistributions"] = _placements_1d(mesh, x)

    # Sharded matmuls: row-sharded by replicated; inner-dim sharded (Partial).
    a, b = distribute_tensor(x, mesh, [Shard(0)]), distribute_tensor(w, mesh, [Replicate()])
    _close((a @ b).full_tensor(), x @ w, "Shard(0) @ Replicate", 1e-4)
    a, b = distribute_tensor(x, mesh, [Shard(1)]), distribute_tensor(w, mesh, [Shard(0)])
    y = a @ b
    assert isinstance(y.placements[0], Partial), y.placements
    _close(y.full_tensor(), x @ w, "Shard(1) @ Shard(0)", 1e-4)

    # Tensor parallelism on the LM's MLP: colwise then rowwise, forward and
    # backward against the unsharded block.
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    from models import TinyLM
    ref = TinyLM().to("tpu")
    tp = TinyLM().to("tpu")
    for blk in tp.blocks:
        parallelize_module(blk.mlp, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    idx = torch.randint(0, 64, (2, 16), generator=torch.Generator().manual_seed(3)).to("tpu")
    y_ref, y_tp = ref(idx), tp(idx)
    _close(y_tp, y_ref, "tp forward", 1e-4)
    y_ref.sum().backward()
    y_tp.sum().backward()
    g = tp.blocks[0].mlp[0].weight.grad
    _close(g.full_tensor(), ref.blocks[0].mlp[0].weight.grad, "tp colwise grad", 1e-3)

    # RNG: a sharded random tensor draws different values per shard, the same
    # as a replicated one would hold everywhere (offset-based tracker).
    from torch.distributed.tensor import randn as dt_randn
    state = torch.tpu.get_rng_state()
    assert state.dtype == torch.uint8 and state.numel() == 16, state
    torch.manual_seed(5)
    r = dt_randn(4 * world, 4, device_mesh=mesh, placements=[Shard(0)])
    full = r.full_tensor().cpu()
    chunks = full.chunk(world)
    assert all(not torch.equal(chunks[0], c) for c in chunks[1:]), "shards drew the same values"
    torch.manual_seed(5)
    rep = dt_randn(4 * world, 4, device_mesh=mesh, placements=[Replicate()]).to_local().cpu()
    everyone = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, rep)
    assert all(torch.equal(everyone[0], e) for e in everyone), "replicas differ"
    dist.barrier()
    dist.destroy_process_group()
    return out
