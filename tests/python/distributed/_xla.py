"""The XLA-collectives transport: one process drives tpu:0..3 of the CPU
plugin (TORCH_PJRT_CPU_DEVICES=4), a rank per thread, through
torch_pjrt.distributed.local_groups(). Every collective is compared with the
same collective through gloo on CPU tensors (a gloo rank per thread too),
or with values every rank computes locally where gloo has no such op.
suite() returns {check: None or error text}."""
import datetime
import threading
import traceback
import warnings

import torch
import torch.distributed as dist

import torch_pjrt
import torch_pjrt.distributed as tpd
from _collectives import data, local_reduce

R = dist.ReduceOp


def on_threads(n, fn):
    """fn(rank) on n threads at once: [result or exception, ...]."""
    out = [None] * n

    def body(r):
        try:
            out[r] = fn(r)
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            out[r] = e

    ts = [threading.Thread(target=body, args=(r,)) for r in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    return out


def gloo_groups(n):
    """A process group per rank (per thread) over gloo, for CPU tensors."""
    store = dist.HashStore()

    def make(r):
        pg = dist.ProcessGroup(store, r, n)
        gloo = dist.ProcessGroupGloo(store, r, n, datetime.timedelta(seconds=60))
        pg._register_backend(torch.device("cpu"), dist.ProcessGroup.BackendType.GLOO, gloo)
        pg._set_default_backend(dist.ProcessGroup.BackendType.GLOO)
        return pg
    return on_threads(n, make)


class Checks:
    def __init__(self):
        self.results = {}

    def run(self, name, fn):
        try:
            fn()
            self.results[name] = None
        except Exception:  # noqa: BLE001 - reported by name
            self.results[name] = traceback.format_exc()


def ranks(n, fn):
    """fn(rank) on every rank; re-raises the first failure."""
    out = on_threads(n, fn)
    for r, v in enumerate(out):
        if isinstance(v, BaseException):
            raise AssertionError(f"rank {r}: {v!r}") from v
    return out


def same(got, want, what, exact=True):
    got = got.cpu()
    if exact:
        assert got.dtype == want.dtype and torch.equal(got, want), f"{what}: {got} != {want}"
    else:
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5, msg=what)


def suite():
    # torch 2.13 renames all_gather_into_tensor and friends; the old names
    # are what users (and the issue) call.
    warnings.filterwarnings("ignore", category=FutureWarning, module="torch.distributed")
    c = Checks()
    n = torch.tpu.device_count()
    assert n == 4, n
    xla = tpd.local_groups()
    gloo = gloo_groups(n)
    dev = [torch.device("tpu", r) for r in range(n)]

    c.run("transport name", lambda: ranks(n, lambda r: (
        tpd.transport(xla[r]) == "xla" or (_ for _ in ()).throw(AssertionError(tpd.transport(xla[r]))))))

    def vs_gloo(name, dtype, op, shape=(12,), noncontig=False):
        def body(r):
            x = data(r, dtype=dtype).reshape(shape)
            t = x.to(dev[r])
            if noncontig:
                big = torch.zeros(*shape, 2, dtype=dtype, device=dev[r])
                big[..., 1] = t
                t = big[..., 1]
            dist.all_reduce(t, op=op, group=xla[r])
            h = x.clone()
            dist.all_reduce(h, op=op, group=gloo[r])
            same(t, h, f"rank {r}")
        c.run(name, lambda: ranks(n, body))

    for dtype in [torch.float32, torch.int32, torch.bfloat16, torch.float64, torch.int64]:
        for op in [R.SUM, R.PRODUCT, R.MIN, R.MAX]:
            vs_gloo(f"all_reduce {op} {dtype}", dtype, op)
    for op in [R.BAND, R.BOR, R.BXOR]:
        vs_gloo(f"all_reduce {op} int32", torch.int32, op)
        vs_gloo(f"all_reduce {op} uint8", torch.uint8, op)
    vs_gloo("all_reduce non-contiguous 2-d", torch.float32, R.SUM, shape=(3, 4), noncontig=True)

    def vs_local(name, dtype, op):
        def body(r):
            t = data(r, dtype=dtype).to(dev[r])
            dist.all_reduce(t, op=op, group=xla[r])
            same(t, local_reduce([data(q, dtype=dtype) for q in range(n)], op, dtype), f"rank {r}")
        c.run(name, lambda: ranks(n, body))

    vs_local("all_reduce AVG float32", torch.float32, R.AVG)
    vs_local("all_reduce AVG int64", torch.int64, R.AVG)
    vs_local("all_reduce SUM bool", torch.bool, R.SUM)
    vs_local("all_reduce PRODUCT bool", torch.bool, R.PRODUCT)

    def premul(r):
        t = data(r).to(dev[r])
        dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5), group=xla[r])
        same(t, local_reduce([data(q) for q in range(n)], R.SUM, torch.float32) * 0.5, f"rank {r}")
    c.run("all_reduce PREMUL_SUM", lambda: ranks(n, premul))

    def async_op(r):
        t = data(r).to(dev[r])
        w = dist.all_reduce(t, group=xla[r], async_op=True)
        w.wait()
        got = w.get_future().value()[0]
        h = data(r)
        dist.all_reduce(h, group=gloo[r])
        same(t, h, "tensor")
        same(got, h, "future")
    c.run("all_reduce async_op future", lambda: ranks(n, async_op))

    def broadcast(r):
        t = data(r, dtype=torch.float16).to(dev[r])
        dist.broadcast(t, 2, group=xla[r])
        same(t, data(2, dtype=torch.float16), f"rank {r}")
    c.run("broadcast", lambda: ranks(n, broadcast))

    def reduce(r):
        t = data(r).to(dev[r])
        dist.reduce(t, 1, op=R.MAX, group=xla[r])
        if r == 1:
            same(t, local_reduce([data(q) for q in range(n)], R.MAX, torch.float32), "root")
    c.run("reduce", lambda: ranks(n, reduce))

    def all_gather(r):
        outs = [torch.empty(2, 3, device=dev[r]) for _ in range(n)]
        dist.all_gather(outs, data(r, 6).reshape(2, 3).to(dev[r]), group=xla[r])
        want = [torch.empty(2, 3) for _ in range(n)]
        dist.all_gather(want, data(r, 6).reshape(2, 3), group=gloo[r])
        for q in range(n):
            same(outs[q], want[q], f"block {q}")
    c.run("all_gather list", lambda: ranks(n, all_gather))

    def all_gather_tensor(r):
        out = torch.empty(n * 6, dtype=torch.int8, device=dev[r])
        dist.all_gather_into_tensor(out, data(r, 6, torch.int8).to(dev[r]), group=xla[r])
        want = torch.empty(n * 6, dtype=torch.int8)
        dist.all_gather_into_tensor(want, data(r, 6, torch.int8), group=gloo[r])
        same(out, want, "gathered")
    c.run("all_gather_into_tensor", lambda: ranks(n, all_gather_tensor))

    def reduce_scatter_tensor(r):
        out = torch.empty(3, device=dev[r])
        dist.reduce_scatter_tensor(out, data(r, 3 * n).to(dev[r]), group=xla[r])
        want = torch.empty(3)
        dist.reduce_scatter_tensor(want, data(r, 3 * n), group=gloo[r])
        same(out, want, "scattered")
    c.run("reduce_scatter_tensor", lambda: ranks(n, reduce_scatter_tensor))

    def reduce_scatter_avg(r):
        out = torch.empty(3, device=dev[r])
        dist.reduce_scatter_tensor(out, data(r, 3 * n).to(dev[r]), op=R.AVG, group=xla[r])
        full = local_reduce([data(q, 3 * n) for q in range(n)], R.AVG, torch.float32)
        same(out, full[3 * r:3 * r + 3], "scattered")
    c.run("reduce_scatter_tensor AVG", lambda: ranks(n, reduce_scatter_avg))

    def reduce_scatter_bitwise(r):
        out = torch.empty(3, dtype=torch.int16, device=dev[r])
        x = data(r, 3 * n, torch.int16) * (r + 1)
        dist.reduce_scatter_tensor(out, x.to(dev[r]), op=R.BXOR, group=xla[r])
        want = torch.stack([data(q, 3 * n, torch.int16) * (q + 1) for q in range(n)])
        acc = want[0]
        for q in range(1, n):
            acc = acc ^ want[q]
        same(out, acc[3 * r:3 * r + 3], "scattered")
    c.run("reduce_scatter_tensor BXOR int16", lambda: ranks(n, reduce_scatter_bitwise))

    def reduce_scatter_list(r):
        out = torch.empty(2, dtype=torch.int64, device=dev[r])
        ins = [data(r * 10 + q, 2, torch.int64).to(dev[r]) for q in range(n)]
        dist.reduce_scatter(out, ins, group=xla[r])
        want = torch.stack([data(q * 10 + r, 2, torch.int64) for q in range(n)]).sum(0)
        same(out, want, "scattered")
    c.run("reduce_scatter list", lambda: ranks(n, reduce_scatter_list))

    def all_to_all_single(r):
        x = torch.arange(4 * n, dtype=torch.float32).reshape(2 * n, 2) + 100 * r
        out = torch.empty(2 * n, 2, device=dev[r])
        dist.all_to_all_single(out, x.to(dev[r]), group=xla[r])
        want = torch.empty(2 * n, 2)
        dist.all_to_all_single(want, x, group=gloo[r])
        same(out, want, "exchanged")
    c.run("all_to_all_single even", lambda: ranks(n, all_to_all_single))

    def all_to_all_list(r):
        ins = [torch.full((3,), 10.0 * r + q, device=dev[r]) for q in range(n)]
        outs = [torch.empty(3, device=dev[r]) for _ in range(n)]
        dist.all_to_all(outs, ins, group=xla[r])
        for q in range(n):
            same(outs[q], torch.full((3,), 10.0 * q + r), f"from {q}")
    c.run("all_to_all list", lambda: ranks(n, all_to_all_list))

    def gather(r):
        outs = [torch.empty(4, device=dev[r]) for _ in range(n)] if r == 0 else None
        dist.gather(data(r, 4).to(dev[r]), outs, dst=0, group=xla[r])
        if r == 0:
            for q in range(n):
                same(outs[q], data(q, 4), f"from {q}")
    c.run("gather", lambda: ranks(n, gather))

    def scatter(r):
        out = torch.empty(4, device=dev[r])
        ins = [data(10 + q, 4).to(dev[r]) for q in range(n)] if r == 3 else None
        dist.scatter(out, ins, src=3, group=xla[r])
        same(out, data(10 + r, 4), "piece")
    c.run("scatter", lambda: ranks(n, scatter))

    def ring(r):
        t = data(r, 5).to(dev[r])
        got = torch.empty(5, device=dev[r])
        w = dist.isend(t, (r + 1) % n, group=xla[r])
        dist.recv(got, (r - 1) % n, group=xla[r])
        w.wait()
        same(got, data((r - 1) % n, 5), "received")
    c.run("send/recv ring", lambda: ranks(n, ring))

    def barrier(r):
        dist.barrier(group=xla[r])
    c.run("barrier", lambda: ranks(n, barrier))

    def no_recompile(r):
        t = data(r).to(dev[r])
        dist.all_reduce(t, group=xla[r])  # warm (compiled above already)
        torch.tpu.synchronize(r)
        return torch_pjrt.metrics()["compiles"]

    def cached():
        before = ranks(n, no_recompile)
        after = ranks(n, no_recompile)
        assert max(after) == max(before), (before, after)
    c.run("programs are cached", cached)

    # A subgroup: ranks on tpu:1 and tpu:3 (a program bound to those devices).
    sub = tpd.local_groups([1, 3])

    def subgroup(r):
        d = torch.device("tpu", [1, 3][r])
        t = data(r).to(d)
        dist.all_reduce(t, group=sub[r])
        same(t, data(0) + data(1), f"rank {r}")
        assert t.device == d
    c.run("subgroup on tpu:1 and tpu:3", lambda: ranks(2, subgroup))

    # Errors: on every rank, by type and message.
    def mismatch(r):
        t = torch.ones(4 if r != 2 else 5, device=dev[r])
        try:
            dist.all_reduce(t, group=xla[r])
        except (RuntimeError, ValueError) as e:
            assert "tensors do not match" in str(e) and "rank 2 passed 5" in str(e), str(e)
            return
        raise AssertionError("no error")
    c.run("shape mismatch raises on every rank", lambda: ranks(n, mismatch))

    # Uneven splits: rank r sends (r + q) % 3 + (q == 0) rows to rank q (some
    # pairs none), so rank 0's input splits differ from its output splits.
    def rows(src, dst):
        return (src + dst) % 3 + (dst == 0)

    def uneven(r, dtype):
        ins = [rows(r, q) for q in range(n)]
        outs = [rows(q, r) for q in range(n)]
        x = data(r, sum(ins) * 2, dtype, (sum(ins), 2))
        out = torch.empty(sum(outs), 2, dtype=dtype, device=dev[r])
        dist.all_to_all_single(out, x.to(dev[r]), outs, ins, group=xla[r])
        # what every rank sent to r, computed here ...
        want = torch.cat([data(q, sum(rows(q, k) for k in range(n)) * 2, dtype,
                               (-1, 2))[sum(rows(q, k) for k in range(r)):][:outs[q]]
                          for q in range(n)])
        same(out, want, "exchanged")
        if dtype != torch.bool:  # ... and by gloo on CPU tensors
            ref = torch.empty(sum(outs), 2, dtype=dtype)
            dist.all_to_all_single(ref, x, outs, ins, group=gloo[r])
            same(out, ref, "exchanged (gloo)")
        # the list form, with a pair that sends nothing
        lin = [data(10 * r + q, rows(r, q), dtype) for q in range(n)]
        lout = [torch.empty(rows(q, r), dtype=dtype, device=dev[r]) for q in range(n)]
        dist.all_to_all(lout, [t.to(dev[r]) for t in lin], group=xla[r])
        for q in range(n):
            same(lout[q], data(10 * q + r, rows(q, r), dtype), f"list from {q}")
    for dt in (torch.float32, torch.int64, torch.bool):
        c.run(f"all_to_all uneven {dt}", lambda dt=dt: ranks(n, lambda r: uneven(r, dt)))

    def uneven_one_rank(r):
        # only rank 3 is uneven (it keeps 5 rows for itself); the others'
        # own splits are even, so every rank must still take the same path.
        ins = [2] * n if r != 3 else [2] * (n - 1) + [5]
        x = data(r, sum(ins), torch.float32)
        out = torch.empty(sum(ins), device=dev[r])
        dist.all_to_all_single(out, x.to(dev[r]), ins, ins, group=xla[r])
        want = torch.empty(sum(ins))
        dist.all_to_all_single(want, x, ins, ins, group=gloo[r])
        same(out, want, "exchanged")
    c.run("all_to_all one rank uneven", lambda: ranks(n, uneven_one_rank))

    def splits_disagree(r):
        # rank 1 expects 2 elements from rank 0, which sends 1: every rank
        # raises the same error, none hangs
        outs = [1] * n if r != 1 else [2] + [1] * (n - 1)
        try:
            dist.all_to_all_single(torch.empty(sum(outs), device=dev[r]),
                                   torch.ones(n, device=dev[r]), outs, [1] * n, group=xla[r])
        except RuntimeError as e:
            assert "rank 0 sends 1 elements to rank 1, which expects 2" in str(e), str(e)
            return
        raise AssertionError("no error")
    c.run("all_to_all splits that disagree raise on every rank", lambda: ranks(n, splits_disagree))

    def wrong_device(r):
        try:
            dist.all_reduce(torch.ones(2, device=dev[(r + 1) % n]), group=xla[r])
        except (RuntimeError, ValueError) as e:
            assert "drives tpu:" in str(e), str(e)
            return
        raise AssertionError("no error")
    c.run("a tensor on another rank's device", lambda: ranks(n, wrong_device))

    def after_errors(r):
        t = data(r).to(dev[r])
        dist.all_reduce(t, group=xla[r])
        same(t, local_reduce([data(q) for q in range(n)], R.SUM, torch.float32), "sum")
    c.run("the group works after errors", lambda: ranks(n, after_errors))

    short = tpd.local_groups(timeout=datetime.timedelta(seconds=2))
    start = threading.Barrier(n - 1)

    def timeout(r):
        if r == 3:
            return  # never joins
        t = torch.ones(2, device=dev[r])
        start.wait()
        try:
            dist.all_reduce(t, group=short[r])
        except Exception as e:  # noqa: BLE001 - checked by message
            assert "timed out after 2000 ms" in str(e) and "3 to join" in str(e), str(e)
            return
        raise AssertionError("no error")
    c.run("a missing rank times out", lambda: ranks(n, timeout))
    return c.results
