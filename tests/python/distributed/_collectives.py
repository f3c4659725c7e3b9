"""Every collective on tpu tensors, checked on each rank against the same
collective through gloo on CPU tensors where gloo has it, and against the
value computed locally (every rank can build every rank's input) where it
does not (AVG, PREMUL_SUM, bool). suite() returns {check: None or error}."""
import traceback

import torch
import torch.distributed as dist

from _launch import init

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.uint8,
          torch.int8, torch.int16, torch.int32, torch.int64, torch.bool, torch.complex64]
INT = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
FLOAT = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
# gloo reduces these on CPU tensors; the rest are checked against local values.
GLOO_REDUCES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.uint8,
                torch.int8, torch.int32, torch.int64]
R = dist.ReduceOp
TPU = "tpu"


def data(rank, n=12, dtype=torch.float32, shape=None):
    """Rank `rank`'s input: small integers (1..3), exact in every dtype even
    after a product over 4 ranks."""
    x = (torch.arange(n) * 7 + rank * 5) % 3 + 1
    if dtype == torch.bool:
        x = x % 2 == 0
    elif dtype.is_complex:
        x = torch.complex(x.float(), (x % 2).float()).to(dtype)
    else:
        x = x.to(dtype)
    return x.reshape(shape) if shape else x


def noncontig(x):
    """x's values behind a non-contiguous tpu view (every other column)."""
    big = torch.zeros(x.numel(), 2, dtype=x.dtype, device=TPU)
    big[:, 0] = x.reshape(-1).to(TPU)
    return big[:, 0]


def local_reduce(xs, op, dtype):
    x = torch.stack([v.to(torch.float64 if dtype.is_floating_point else
                          (torch.complex128 if dtype.is_complex else torch.int64)) for v in xs])
    if dtype == torch.bool:
        b = torch.stack(xs)
        return {R.SUM: b.any(0), R.MAX: b.any(0), R.BOR: b.any(0), R.PRODUCT: b.all(0),
                R.MIN: b.all(0), R.BAND: b.all(0), R.BXOR: b.sum(0) % 2 == 1}[op]
    if op == R.SUM:
        y = x.sum(0)
    elif op == R.PRODUCT:
        y = x.prod(0)
    elif op == R.MIN:
        y = x.min(0).values
    elif op == R.MAX:
        y = x.max(0).values
    elif op == R.AVG:
        y = x.sum(0) / len(xs) if not (dtype in INT) else torch.div(x.sum(0), len(xs), rounding_mode="trunc")
    elif op == R.BAND:
        y = functools_reduce(torch.bitwise_and, x)
    elif op == R.BOR:
        y = functools_reduce(torch.bitwise_or, x)
    elif op == R.BXOR:
        y = functools_reduce(torch.bitwise_xor, x)
    return y.to(dtype)


def functools_reduce(f, x):
    y = x[0]
    for v in x[1:]:
        y = f(y, v)
    return y


def close(got, want, what, dtype=None):
    got = got.cpu()
    dtype = dtype or want.dtype
    tol = {torch.float16: 1e-2, torch.bfloat16: 2e-2}.get(dtype, 1e-6)
    if got.dtype != want.dtype or got.shape != want.shape:
        raise AssertionError(f"{what}: got {got.dtype} {tuple(got.shape)}, want {want.dtype} {tuple(want.shape)}")
    if dtype == torch.bool or not (dtype.is_floating_point or dtype.is_complex):
        ok = torch.equal(got, want)
    else:
        ok = torch.allclose(got, want, rtol=tol, atol=tol)
    if not ok:
        raise AssertionError(f"{what}: got {got}\nwant {want}")


def suite():
    rank, world = init()
    checks = {}

    def check(name):
        def deco(fn):
            try:
                fn()
                checks[name] = None
            except Exception:
                checks[name] = traceback.format_exc()
            return fn
        return deco

    everyone = lambda **kw: [data(k, **kw) for k in range(world)]  # noqa: E731

    # ---- all_reduce: every op on every dtype it is defined for ----
    for dt in DTYPES:
        ops = [R.SUM, R.PRODUCT, R.MIN, R.MAX]
        if dt in FLOAT or dt.is_complex or dt in INT:
            ops.append(R.AVG)
        if dt in INT or dt == torch.bool:
            ops += [R.BAND, R.BOR, R.BXOR]
        if dt.is_complex:
            ops = [R.SUM, R.AVG]
        for op in ops:
            @check(f"all_reduce_{op}_{dt}")
            def _(dt=dt, op=op):
                t = data(rank, dtype=dt).to(TPU)
                dist.all_reduce(t, op=op)
                close(t, local_reduce(everyone(dtype=dt), op, dt), "tpu vs local")
                if dt in GLOO_REDUCES and op != R.AVG:
                    c = data(rank, dtype=dt)
                    dist.all_reduce(c, op=op)
                    close(t, c, "tpu vs gloo")

    for dt in FLOAT:
        @check(f"all_reduce_premul_sum_{dt}")
        def _(dt=dt):
            t = data(rank, dtype=dt).to(TPU)
            dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5))
            close(t, (local_reduce(everyone(dtype=dt), R.SUM, dt).double() * 0.5).to(dt), "premul")

    @check("all_reduce_noncontiguous_async_future")
    def _():
        t = noncontig(data(rank, shape=(4, 3)))
        w = dist.all_reduce(t, async_op=True)
        fut = w.get_future()
        w.wait()
        want = local_reduce(everyone(), R.SUM, torch.float32)
        close(t, want, "in place through the view")
        vals = fut.value()
        assert isinstance(vals, list) and vals[0].device.type == TPU, vals
        close(vals[0], want, "future value")

    @check("all_reduce_future_then")
    def _():
        t = data(rank).to(TPU)
        fut = dist.all_reduce(t, async_op=True).get_future().then(lambda f: f.value()[0] * 2)
        close(fut.wait(), 2 * local_reduce(everyone(), R.SUM, torch.float32), "then")

    @check("all_reduce_2d_int64_max")
    def _():
        t = data(rank, dtype=torch.int64, shape=(3, 4)).to(TPU)
        dist.all_reduce(t, op=R.MAX)
        close(t, local_reduce(everyone(dtype=torch.int64, shape=(3, 4)), R.MAX, torch.int64), "2d")

    @check("all_reduce_coalesced")
    def _():
        ts = [data(rank, n=5).to(TPU), data(rank + 1, n=7).to(TPU)]
        with dist._coalescing_manager(async_ops=True) as cm:
            for t in ts:
                dist.all_reduce(t)
        cm.wait()
        close(ts[0], local_reduce(everyone(n=5), R.SUM, torch.float32), "first")
        close(ts[1], local_reduce([data(k + 1, n=7) for k in range(world)], R.SUM, torch.float32), "second")

    # ---- gathers and scatters ----
    for dt in [torch.float32, torch.bfloat16, torch.float16, torch.bool, torch.int64, torch.complex64]:
        @check(f"all_gather_list_{dt}")
        def _(dt=dt):
            outs = [torch.empty(6, dtype=dt, device=TPU) for _ in range(world)]
            dist.all_gather(outs, data(rank, n=6, dtype=dt).to(TPU))
            for k in range(world):
                close(outs[k], data(k, n=6, dtype=dt), f"block {k}")

        @check(f"all_gather_into_tensor_{dt}")
        def _(dt=dt):
            out = torch.empty(world * 6, dtype=dt, device=TPU)
            dist.all_gather_into_tensor(out, data(rank, n=6, dtype=dt).to(TPU))
            close(out, torch.cat(everyone(n=6, dtype=dt)), "flat")

    @check("all_gather_into_tensor_noncontiguous_2d")
    def _():
        out = torch.zeros(world * 2, 3, 2, device=TPU)[:, :, 0]
        inp = data(rank, n=6, shape=(2, 3)).to(TPU)
        dist.all_gather_into_tensor(out, inp)
        c = torch.empty(world * 2, 3)
        dist.all_gather_into_tensor(c, data(rank, n=6, shape=(2, 3)))
        close(out, c, "tpu vs gloo")

    @check("reduce_scatter_list_and_tensor")
    def _():
        ins = [data(rank + k, n=4).to(TPU) for k in range(world)]
        out = torch.empty(4, device=TPU)
        dist.reduce_scatter(out, ins)
        close(out, local_reduce([data(j + rank, n=4) for j in range(world)], R.SUM, torch.float32), "list")
        big = data(rank, n=4 * world).to(TPU)
        out2 = torch.empty(4, device=TPU)
        dist.reduce_scatter_tensor(out2, big)
        c_out = torch.empty(4)
        dist.reduce_scatter_tensor(c_out, data(rank, n=4 * world))
        close(out2, c_out, "tensor vs gloo")

    for op in [R.SUM, R.AVG, R.MAX]:
        for dt in [torch.float32, torch.bfloat16]:
            @check(f"reduce_scatter_tensor_{op}_{dt}")
            def _(op=op, dt=dt):
                big = data(rank, n=3 * world, dtype=dt).to(TPU)
                out = torch.empty(3, dtype=dt, device=TPU)
                dist.reduce_scatter_tensor(out, big, op=op)
                full = local_reduce(everyone(n=3 * world, dtype=dt), op, dt)
                close(out, full[rank * 3:(rank + 1) * 3], "shard")

    @check("reduce_scatter_tensor_premul")
    def _():
        big = data(rank, n=2 * world).to(TPU)
        out = torch.empty(2, device=TPU)
        dist.reduce_scatter_tensor(out, big, op=dist._make_nccl_premul_sum(0.25))
        full = local_reduce(everyone(n=2 * world), R.SUM, torch.float32) * 0.25
        close(out, full[rank * 2:(rank + 1) * 2], "premul shard")

    @check("broadcast")
    def _():
        for root in range(world):
            t = (data(rank, n=5, dtype=torch.bfloat16) if rank == root else torch.zeros(5, dtype=torch.bfloat16)).to(TPU)
            dist.broadcast(t, src=root)
            close(t, data(root, n=5, dtype=torch.bfloat16), f"root {root}")

    @check("broadcast_noncontiguous")
    def _():
        t = noncontig(data(rank, n=6) if rank == 0 else torch.zeros(6))
        dist.broadcast(t, src=0)
        close(t, data(0, n=6), "view")

    @check("reduce")
    def _():
        dst = world - 1
        t = data(rank).to(TPU)
        dist.reduce(t, dst=dst, op=R.MAX)
        if rank == dst:
            close(t, local_reduce(everyone(), R.MAX, torch.float32), "root")

    @check("gather_scatter")
    def _():
        root = world - 1
        outs = [torch.empty(3, device=TPU) for _ in range(world)] if rank == root else None
        dist.gather(data(rank, n=3).to(TPU), outs, dst=root)
        if rank == root:
            for k in range(world):
                close(outs[k], data(k, n=3), f"gathered {k}")
        out = torch.empty(3, dtype=torch.int32, device=TPU)
        src = [data(k, n=3, dtype=torch.int32).to(TPU) * 10 for k in range(world)] if rank == 0 else None
        dist.scatter(out, src, src=0)
        close(out, data(rank, n=3, dtype=torch.int32) * 10, "scattered")

    # ---- all to all ----
    @check("all_to_all_single_even")
    def _():
        inp = data(rank, n=2 * world, shape=(2 * world,)).to(TPU)
        out = torch.empty(2 * world, device=TPU)
        dist.all_to_all_single(out, inp)
        c = torch.empty(2 * world)
        dist.all_to_all_single(c, data(rank, n=2 * world))
        close(out, c, "tpu vs gloo")

    @check("all_to_all_single_uneven_2d")
    def _():
        # rank r sends (k + 1) rows to rank k; receives (r + 1) rows from each.
        in_splits = [k + 1 for k in range(world)]
        out_splits = [rank + 1] * world
        rows = sum(in_splits)
        inp = (torch.arange(rows * 3, dtype=torch.float32).view(rows, 3) + 100 * rank)
        out = torch.empty(sum(out_splits), 3, device=TPU)
        dist.all_to_all_single(out, inp.to(TPU), out_splits, in_splits)
        c = torch.empty(sum(out_splits), 3)
        dist.all_to_all_single(c, inp, out_splits, in_splits)
        close(out, c, "tpu vs gloo")

    @check("all_to_all_list")
    def _():
        ins = [torch.full((k + 1,), float(rank * 10 + k), device=TPU) for k in range(world)]
        outs = [torch.empty(rank + 1, device=TPU) for _ in range(world)]
        dist.all_to_all(outs, ins)
        for k in range(world):
            close(outs[k], torch.full((rank + 1,), float(k * 10 + rank)), f"from {k}")

    # ---- point to point ----
    @check("send_recv")
    def _():
        nxt, prv = (rank + 1) % world, (rank - 1) % world
        if rank % 2 == 0:
            dist.send(data(rank, dtype=torch.float16).to(TPU), nxt)
            got = torch.empty(12, dtype=torch.float16, device=TPU)
            dist.recv(got, prv)
        else:
            got = torch.empty(12, dtype=torch.float16, device=TPU)
            dist.recv(got, prv)
            dist.send(data(rank, dtype=torch.float16).to(TPU), nxt)
        close(got, data(prv, dtype=torch.float16), "ring")

    @check("isend_irecv_batch")
    def _():
        nxt, prv = (rank + 1) % world, (rank - 1) % world
        got = torch.empty(12, device=TPU)
        ops = [dist.P2POp(dist.isend, data(rank).to(TPU), nxt),
               dist.P2POp(dist.irecv, got, prv)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        close(got, data(prv), "batch")
        got2 = torch.empty(12, device=TPU)
        reqs = [dist.irecv(got2, prv), dist.isend(data(rank + 7).to(TPU), nxt)]
        for w in reqs:
            w.wait()
        close(got2, data(prv + 7), "isend/irecv")

    # ---- groups, barrier, objects ----
    @check("new_group_subgroup")
    def _():
        evens = [k for k in range(world) if k % 2 == 0]
        g = dist.new_group(evens)
        if rank in evens:
            t = data(rank).to(TPU)
            dist.all_reduce(t, group=g)
            close(t, local_reduce([data(k) for k in evens], R.SUM, torch.float32), "evens")
        dist.barrier()

    @check("barrier_and_objects")
    def _():
        dist.barrier()
        objs = [None] * world
        dist.all_gather_object(objs, {"rank": rank, "s": "x" * rank})
        assert objs == [{"rank": k, "s": "x" * k} for k in range(world)], objs
        lst = [("hello", rank)] if rank == 0 else [None]
        dist.broadcast_object_list(lst, src=0)
        assert lst == [("hello", 0)], lst

    @check("functional_collectives")
    def _():
        import torch.distributed._functional_collectives as fc
        t = data(rank).to(TPU)
        y = fc.all_reduce(t, "sum", dist.group.WORLD)
        close(y, local_reduce(everyone(), R.SUM, torch.float32), "all_reduce")
        g = fc.all_gather_tensor(data(rank, n=4).to(TPU), 0, dist.group.WORLD)
        close(g, torch.cat(everyone(n=4)), "all_gather_tensor")
        rs = fc.reduce_scatter_tensor(data(rank, n=2 * world).to(TPU), "sum", 0, dist.group.WORLD)
        close(rs, local_reduce(everyone(n=2 * world), R.SUM, torch.float32)[2 * rank:2 * rank + 2], "rs")
        a2a = fc.all_to_all_single(data(rank, n=world).to(TPU), None, None, dist.group.WORLD)
        close(a2a, torch.stack([data(k, n=world)[rank] for k in range(world)]), "a2a")

    @check("all_reduce_in_place_sharing")
    def _():
        # On the CPU plugin a tensor whose buffer no one else holds is reduced
        # in the buffer's own memory: its views see the result, and a clone, a
        # tensor sharing its buffer, or an op launched before keep their values.
        want = local_reduce([data(k, n=16) for k in range(world)], R.SUM, torch.float32)
        a = data(rank, n=16).to(TPU)
        v = a.view(4, 4)
        before = a * 1  # launched before the collective: reads the old values
        c = a.clone()  # shares a's buffer until one is written
        version = a._version
        dist.all_reduce(a)
        close(a, want, "a")
        close(v.reshape(-1), want, "view of a")
        close(before, data(rank, n=16), "op launched before")
        close(c, data(rank, n=16), "clone of a")
        # As gloo's and NCCL's: a collective's result bumps no version counter
        # (TorchTitan's selective activation checkpointing relies on it).
        assert a._version == version, (version, a._version)
        import torch_pjrt
        d = data(rank, n=16).to(TPU)
        m0 = torch_pjrt.metrics()
        dist.all_reduce(d, op=R.AVG)
        m1 = torch_pjrt.metrics()
        if torch_pjrt.info()["platform"] == "cpu":  # d's buffer is its own: nothing staged
            moved = (m1["d2h_bytes"] - m0["d2h_bytes"], m1["h2d_bytes"] - m0["h2d_bytes"])
            assert moved == (0, 0), moved
        close(d, want / world, "AVG in place")
        # reduce_scatter and all_gather read their input's memory: no
        # download, and the input is unchanged
        x = data(rank, n=4 * world).to(TPU)
        o = torch.empty(4, device=TPU)
        g = torch.empty(4 * world * world, device=TPU)
        m0 = torch_pjrt.metrics()
        dist.reduce_scatter_tensor(o, x)
        dist.all_gather_into_tensor(g, x)
        m1 = torch_pjrt.metrics()
        if torch_pjrt.info()["platform"] == "cpu":
            assert m1["d2h_bytes"] == m0["d2h_bytes"], (m0["d2h_bytes"], m1["d2h_bytes"])
        close(x, data(rank, n=4 * world), "reduce_scatter's input")
        close(o, local_reduce([data(k, n=4 * world) for k in range(world)], R.SUM,
                              torch.float32)[4 * rank:4 * rank + 4], "reduce_scatter")
        close(g, torch.cat([data(k, n=4 * world) for k in range(world)]), "all_gather")
        e = data(rank, n=16).to(TPU)
        work = dist.all_reduce(e, async_op=True)
        fut = work.get_future()
        work.wait()
        close(fut.value()[0], want, "future's tensor")

    @check("compiled_functional_collective")
    def _():
        # torch.compile(backend="tpu") on graphs holding functional
        # collectives: the compute around each collective runs as captured
        # tpu executables, each collective through "pjrt" (counted in
        # metrics()["graph_collectives"]); one graph, and nothing traced or
        # compiled again after the first call.
        import torch._dynamo.utils as du
        import torch.distributed._functional_collectives as fc
        import torch_pjrt

        g = dist.group.WORLD

        def f(x):
            return fc.all_reduce(x * 2, "sum", g) + 1

        def h(x, w):
            # two collectives, with compute between them that does not wait
            y = fc.all_gather_tensor(torch.tanh(x), 0, g)
            z = (w @ w.t()).sum(0)
            s = fc.reduce_scatter_tensor(y * 3 + z[0], "sum", 0, g)
            return s - 1, z

        w = torch.arange(16.0).reshape(4, 4) / 16
        for fn, ncoll in ((f, 1), (h, 2)):
            cf = torch.compile(fn, backend="tpu")
            before = du.counters["stats"]["unique_graphs"]
            for i in range(4):
                if i == 1:  # warm-up done: count from here
                    m0 = torch_pjrt.metrics()
                x = data(rank + i, n=8)
                if fn is f:
                    y = cf(x.to(TPU))
                    want = local_reduce([data(k + i, n=8) for k in range(world)], R.SUM,
                                        torch.float32) * 2 + 1
                else:
                    y, z = cf(x.to(TPU), w.to(TPU))
                    zz = (w @ w.t()).sum(0)
                    close(z, zz, f"h call {i}: z")
                    # every rank gathers the same tensor; the sum over ranks
                    # is world times it, and this rank keeps its chunk
                    full = torch.cat([torch.tanh(data(k + i, n=8)) for k in range(world)])
                    want = (world * (full * 3 + zz[0])).reshape(world, -1)[rank] - 1
                assert torch.allclose(y.cpu(), want, rtol=1e-5, atol=1e-5), \
                    (fn.__name__, i, y.cpu(), want)
            m1 = torch_pjrt.metrics()
            d = {k: m1[k] - m0[k] for k in ("graph_collectives", "graph_traces", "graph_eager",
                                            "graph_compiles", "graph_runs", "graph_splits")}
            assert du.counters["stats"]["unique_graphs"] - before == 1, dict(du.counters["stats"])
            assert d["graph_collectives"] == 3 * ncoll, d
            # the compute ran as captured graphs, none traced or compiled anew
            assert d["graph_runs"] >= 3 * 2, d
            assert d["graph_traces"] == d["graph_compiles"] == d["graph_eager"] == 0, d
            assert d["graph_splits"] == 0, d

    @check("unsupported_names_op_and_dtype")
    def _():
        t = torch.ones(3, device=TPU)
        try:
            dist.all_reduce(t, op=R.BAND)
        except Exception as e:
            assert "BAND" in str(e) and "Float" in str(e), str(e)
        else:
            raise AssertionError("BAND on float32 did not raise")

    @check("wrong_list_length_raises")
    def _():
        try:
            dist.all_gather([torch.empty(3, device=TPU)] * (world + 1), torch.ones(3, device=TPU))
        except Exception as e:
            assert "pjrt all_gather" in str(e) or "list" in str(e), str(e)
        else:
            raise AssertionError("no error")

    dist.barrier()
    dist.destroy_process_group()
    return checks

