"""How a process group comes to route tpu tensors to "pjrt": every way of
asking for it, each followed by a collective, barrier and the object
collectives; and what a group reports about itself."""
import os

import torch
import torch.distributed as dist

from _launch import init


def _exercise():
    rank, world = dist.get_rank(), dist.get_world_size()
    t = torch.full((3,), float(rank + 1), device="tpu")
    dist.all_reduce(t)
    assert t.cpu().tolist() == [world * (world + 1) / 2] * 3, t
    dist.barrier()
    objs = [None] * world
    dist.all_gather_object(objs, ("r", rank))
    assert objs == [("r", k) for k in range(world)], objs
    lst = [{"root": rank}]
    dist.broadcast_object_list(lst, src=0)
    assert lst == [{"root": 0}], lst
    return dist.get_backend(), dist.get_default_backend_for_device("tpu") if hasattr(
        dist, "get_default_backend_for_device") else None


def variants():
    import torch_pjrt.distributed as tpd

    out = {}
    for i, backend in enumerate([None, "pjrt", "cpu:gloo,tpu:pjrt"]):
        init(backend, name=f"store{i}")
        out[str(backend)] = _exercise() + (tpd.transport(), dist.group.WORLD._get_backend_name())
        if backend and "cpu" in backend:
            c = torch.ones(2)
            dist.all_reduce(c)  # CPU tensors still go to gloo
            assert c.tolist() == [float(dist.get_world_size())] * 2
        dist.barrier()
        dist.destroy_process_group()
    out["device"] = str(torch.tpu.current_device())
    return out


def mesh():
    from torch.distributed.device_mesh import init_device_mesh

    os.environ["MASTER_PORT"] = os.environ.get("TPJ_TEST_PORT", "29531")
    world = int(os.environ["WORLD_SIZE"])
    shape = (2, world // 2) if world == 4 else (world,)
    m = init_device_mesh("tpu", shape)
    res = _exercise()
    # A collective over each mesh dimension's subgroup.
    for d in range(len(shape)):
        g = m.get_group(d)
        t = torch.ones(2, device="tpu")
        dist.all_reduce(t, group=g)
        assert t.cpu().tolist() == [float(shape[d])] * 2, (d, t)
    dist.destroy_process_group()
    return res
