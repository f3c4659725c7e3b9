"""DTensor on a tpu mesh over "pjrt": distribute_tensor with each placement,
redistribute between placements, sharded matmuls, tensor parallelism on the
test LM's MLP and attention, and the RNG tracker (torch.tpu's 16-byte seed+offset state)."""
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


class _Attention(torch.nn.Module):
    """The attention of the test LM's block (models.Block: causal SDPA over a
    fused qkv projection), with q, k and v as three Linears: the layout
    tensor parallelism shards (a fused qkv would put q, k and v columns on
    different ranks). Heads are counted from the local width, as TorchTitan's
    attention does, so the same code runs sharded and whole."""

    def __init__(self, blk):
        import copy

        super().__init__()
        d = blk.qkv.in_features
        self.head_dim = d // blk.heads
        self.q, self.k, self.v = (torch.nn.Linear(d, d) for _ in range(3))
        with torch.no_grad():
            for i, m in enumerate((self.q, self.k, self.v)):
                m.weight.copy_(blk.qkv.weight[i * d:(i + 1) * d])
                m.bias.copy_(blk.qkv.bias[i * d:(i + 1) * d])
        self.proj = copy.deepcopy(blk.proj)

    def forward(self, x):
        import torch.nn.functional as F

        b, t, _ = x.shape
        q, k, v = (m(x).view(b, t, -1, self.head_dim).transpose(1, 2) for m in (self.q, self.k, self.v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, -1))


def _tp_attention(mesh):
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    from models import TinyLM
    blk = TinyLM(heads=4).blocks[0]
    ref, tp = _Attention(blk).to("tpu"), _Attention(blk).to("tpu")
    parallelize_module(tp, mesh, {"q": ColwiseParallel(), "k": ColwiseParallel(),
                                  "v": ColwiseParallel(), "proj": RowwiseParallel()})
    x = torch.randn(2, 16, 32, generator=torch.Generator().manual_seed(4)).to("tpu")
    # The block's own attention path on CPU, to pin the reference module.
    with torch.no_grad():
        h = x.cpu()
        q, k, v = blk.qkv(h).split(32, dim=-1)
        q, k, v = (z.view(2, 16, 4, 8).transpose(1, 2) for z in (q, k, v))
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        want = blk.proj(y.transpose(1, 2).reshape(2, 16, 32))
    y_ref, y_tp = ref(x), tp(x)
    _close(y_ref, want, "unsharded attention vs the block's", 1e-4)
    _close(y_tp, y_ref, "tp attention forward", 1e-4)
    assert tp.q.weight.to_local().shape[0] == 32 // mesh.size(), tp.q.weight.to_local().shape
    (y_ref ** 2).sum().backward()
    (y_tp ** 2).sum().backward()
    for name in ("q", "k", "v", "proj"):
        g = getattr(tp, name).weight.grad
        _close(g.full_tensor(), getattr(ref, name).weight.grad, f"tp attention {name} grad", 1e-3)
    return 4


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

    # Tensor parallelism on the LM's attention (Megatron's layout): q, k and
    # v colwise (each rank holds heads / world heads), the output projection
    # rowwise; forward and backward against the same module unsharded.
    out["tp_attention"] = _tp_attention(mesh)

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
