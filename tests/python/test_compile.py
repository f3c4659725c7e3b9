"""torch.compile(backend="tpu"): whole graphs captured through the eager
kernels into one executable; results against eager and CPU."""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_pjrt
from _compile_fixtures import _fresh_dynamo  # noqa: F401 (autouse)


def test_backend_found_by_name_after_bare_import():
    from torch._dynamo import list_backends

    assert "tpu" in list_backends(exclude_tags=())


def test_function_matches_cpu_and_compiles_once():
    def f(x, w, b):
        return torch.relu(x @ w + b).sum(dim=1) * 0.5

    x, w, b = torch.randn(8, 16), torch.randn(16, 4), torch.randn(4)
    cf = torch.compile(f, backend="tpu")
    out = cf(x.to("tpu"), w.to("tpu"), b.to("tpu"))
    torch.testing.assert_close(out.cpu(), f(x, w, b), atol=1e-5, rtol=1e-5)
    m0 = torch_pjrt.metrics()
    assert m0["graph_compiles"] == 1 and m0["graph_traces"] == 1
    for _ in range(3):
        x2 = torch.randn(8, 16)
        out = cf(x2.to("tpu"), w.to("tpu"), b.to("tpu"))
        torch.testing.assert_close(out.cpu(), f(x2, w, b), atol=1e-5, rtol=1e-5)
    m1 = torch_pjrt.metrics()
    assert m1["graph_compiles"] == 1, "same shapes must not recompile"
    assert m1["graph_runs"] == 4
    # one launch per call: no per-op executions after the first
    assert m1["executions"] - m0["executions"] == 3
    assert torch_pjrt.fallbacks() == {}


def test_new_shape_is_a_new_executable():
    cf = torch.compile(lambda x: (x * 2).exp(), backend="tpu")
    for n in (3, 5, 3):
        x = torch.randn(n)
        torch.testing.assert_close(cf(x.to("tpu")).cpu(), (x * 2).exp())
    assert torch_pjrt.metrics()["graph_compiles"] == 2


def test_dynamic_true_recompiles_per_shape_and_stays_correct():
    cf = torch.compile(lambda x: x.sum(0) + 1, backend="tpu", dynamic=True)
    for n in (3, 4, 7):
        x = torch.randn(n, 2)
        torch.testing.assert_close(cf(x.to("tpu")).cpu(), x.sum(0) + 1)


def test_input_mutation_is_applied():
    def f(x, buf):
        buf.add_(x)
        return buf * 2

    x, buf = torch.randn(5), torch.randn(5)
    xt, bt = x.to("tpu"), buf.to("tpu")
    cf = torch.compile(f, backend="tpu")
    for _ in range(3):
        out = cf(xt, bt)
        buf.add_(x)
        torch.testing.assert_close(out.cpu(), buf * 2)
        torch.testing.assert_close(bt.cpu(), buf)


def test_overwritten_input_donates_its_buffer_when_sole_owner():
    def f(x, buf):
        buf.mul_(0.5).add_(x)
        return buf.sum()

    x, buf = torch.randn(64), torch.randn(64)
    xt, bt = x.to("tpu"), buf.to("tpu")
    view = bt[::2]  # a view shares the storage (and its box), not a second buffer
    cf = torch.compile(f, backend="tpu")
    for step in range(3):
        out = cf(xt, bt)
        buf.mul_(0.5).add_(x)
        torch.testing.assert_close(out.cpu(), buf.sum(), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(bt.cpu(), buf)
        torch.testing.assert_close(view.cpu(), buf[::2])
    assert torch_pjrt.metrics()["donated_buffers"] >= 2  # every run after the traced one


def test_input_sharing_its_buffer_is_not_donated():
    def f(buf):
        buf.add_(1)
        return buf * 2

    a = torch.randn(16, device="tpu")
    b = torch.empty(16, device="tpu")
    b.copy_(a)  # b may now share a's device buffer
    a_before = a.cpu()
    cf = torch.compile(f, backend="tpu")
    for _ in range(3):
        cf(b)
    torch.testing.assert_close(a.cpu(), a_before)  # a is untouched and still readable
    torch.testing.assert_close(b.cpu(), a_before + 3)


def test_output_aliasing_an_input_and_views():
    def f(x):
        y = x + 1
        return y.t(), y[1:], x.view(-1)

    x = torch.randn(3, 4)
    outs = torch.compile(f, backend="tpu")(x.to("tpu"))
    for got, want in zip(outs, f(x)):
        assert got.shape == want.shape and got.stride() == want.stride()
        torch.testing.assert_close(got.cpu(), want)


def _mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 4))


def _train(model, opt, steps, device, compiled_step=False):
    torch.manual_seed(1)
    data = [(torch.randn(8, 16), torch.randint(0, 4, (8,))) for _ in range(steps)]

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    fn = torch.compile(step, backend="tpu") if compiled_step else step
    losses = []
    for x, y in data:
        losses.append(fn(x.to(device), y.to(device)).item())
    return losses


def test_compiled_model_trains_like_cpu_with_eager_optimizer():
    ref = _mlp()
    ref_losses = _train(ref, torch.optim.AdamW(ref.parameters(), lr=1e-2), 6, "cpu")
    model = _mlp().to("tpu")
    cmodel = torch.compile(model, backend="tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = _train(cmodel, opt, 6, "tpu")
    torch.testing.assert_close(torch.tensor(losses), torch.tensor(ref_losses), atol=1e-4, rtol=1e-4)
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.detach().cpu(), q.detach(), atol=1e-4, rtol=1e-4)
    m = torch_pjrt.metrics()
    assert m["graph_compiles"] >= 2  # forward and backward
    assert torch_pjrt.fallbacks() == {}


def test_compiled_step_with_optimizer_inside():
    ref = _mlp()
    ref_losses = _train(ref, torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9), 5, "cpu")
    model = _mlp().to("tpu")
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = _train(model, opt, 5, "tpu", compiled_step=True)
    torch.testing.assert_close(torch.tensor(losses), torch.tensor(ref_losses), atol=1e-4, rtol=1e-4)
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.detach().cpu(), q.detach(), atol=1e-4, rtol=1e-4)


def test_compiled_adamw_step_keeps_cpu_step_counters_on_the_host():
    # AdamW (foreach, not capturable) keeps each `step` as a CPU scalar, as
    # on CUDA: the CPU arithmetic on it runs before the device graph and the
    # new step is written back after it -- host work, not graph splits.
    ref = _mlp()
    ref_opt = torch.optim.AdamW(ref.parameters(), lr=1e-2)
    ref_losses = _train(ref, ref_opt, 5, "cpu")
    model = _mlp().to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = _train(model, opt, 5, "tpu", compiled_step=True)
    torch.testing.assert_close(torch.tensor(losses), torch.tensor(ref_losses), atol=1e-4, rtol=1e-4)
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.detach().cpu(), q.detach(), atol=1e-4, rtol=1e-4)
        assert opt.state[p]["step"].device.type == "cpu"
        assert opt.state[p]["step"].item() == ref_opt.state[q]["step"].item() == 5
        torch.testing.assert_close(opt.state[p]["exp_avg_sq"].cpu(), ref_opt.state[q]["exp_avg_sq"],
                                   atol=1e-6, rtol=1e-4)
    m = torch_pjrt.metrics()
    assert m["graph_splits"] == 0
    assert torch_pjrt.fallbacks() == {}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64], ids=str)
def test_host_prologue_foreach_ops_run_stacked_with_the_same_values(dtype):
    # An optimizer's host prologue (foreach ops on one 0-d CPU step per
    # parameter) runs each op once over the stacked values; the values, the
    # dtypes and the 0-d results are those of the per-tensor ops.
    from torch.fx.experimental.proxy_tensor import make_fx

    from torch_pjrt import _compile

    def prologue(*steps):
        s = torch._foreach_add(list(steps), 1)
        b1 = torch._foreach_neg(torch._foreach_sub(torch._foreach_pow(0.9, s), 1))
        size = torch._foreach_reciprocal(torch._foreach_div(b1, 1e-3))
        b2 = torch._foreach_sqrt(torch._foreach_pow(0.999, s))
        return s + size + b2 + torch._foreach_mul(s, 2)

    steps = [torch.tensor(i % 3 + 1, dtype=dtype) for i in range(7)]
    gm = make_fx(prologue, tracing_mode="fake")(*steps)
    expected = gm(*steps)
    _compile._stack_host_foreach(gm)
    assert not [n for n in gm.graph.nodes if str(n.target).startswith("aten._foreach")]
    got = gm(*steps)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.dim() == 0 and g.dtype == e.dtype
        torch.testing.assert_close(g, e, rtol=1e-6, atol=0)


def test_host_prologue_leaves_mixed_lists_per_tensor():
    # Lists that mix dtypes (or hold a non-scalar) stay per-tensor foreach ops.
    from torch.fx.experimental.proxy_tensor import make_fx

    from torch_pjrt import _compile

    def prologue(a, b, c):
        return torch._foreach_add([a, b], 1) + torch._foreach_mul([a, c], 2)

    args = (torch.tensor(1.0), torch.tensor(2.0, dtype=torch.float64), torch.ones(3))
    gm = make_fx(prologue, tracing_mode="fake")(*args)
    expected = gm(*args)
    _compile._stack_host_foreach(gm)
    assert len([n for n in gm.graph.nodes if str(n.target).startswith("aten._foreach")]) == 2
    for g, e in zip(gm(*args), expected):
        torch.testing.assert_close(g, e, rtol=0, atol=0)


def test_equal_cpu_scalar_arguments_are_uploaded_once_per_run():
    # An optimizer step passes one CPU scalar per parameter (step counts and
    # the factors made from them), mostly the same value: each distinct value
    # goes up once per run. Equal values of different dtypes stay apart.
    def f(x, scalars):
        for s in scalars:
            x = x * s
        return x

    g = torch.compile(f, backend="tpu")
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    scalars = [torch.tensor(1.5)] * 4 + [torch.tensor(1.5, dtype=torch.float64),
                                         torch.tensor(2.0), torch.tensor(1.5)]
    scalars = [s.clone() for s in scalars]  # distinct tensors, equal values
    xt = x.to("tpu")
    torch.testing.assert_close(g(xt, scalars).cpu(), f(x, scalars))  # traces and compiles
    torch.tpu.synchronize()
    before = torch_pjrt.metrics()["h2d_bytes"]
    out = g(xt, scalars)
    torch.tpu.synchronize()
    uploaded = torch_pjrt.metrics()["h2d_bytes"] - before
    # 1.5 (float32), 1.5 (float64), 2.0 (float32): 4 + 8 + 4 bytes, not 7 uploads
    assert uploaded == 16
    torch.testing.assert_close(out.cpu(), f(x, scalars))
    scalars[0].fill_(3.0)  # a new value is seen, not the old buffer reused
    torch.testing.assert_close(g(xt, scalars).cpu(), f(x, scalars))


def test_inference_no_grad_matches_eager():
    model = _mlp().eval()
    x = torch.randn(4, 16)
    with torch.no_grad():
        want = model(x)
        cm = torch.compile(copy.deepcopy(model).to("tpu"), backend="tpu")
        got = cm(x.to("tpu"))
        got2 = cm(x.to("tpu"))
    torch.testing.assert_close(got.cpu(), want, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got2.cpu(), want, atol=1e-5, rtol=1e-5)
    assert torch_pjrt.metrics()["graph_compiles"] == 1


def _no_tpu_kernel(x):
    # histogram has no tpu kernel: it splits the graph
    return torch.histogram(x, bins=3)[0].sum(0) * 2 + x


def test_graph_split_runs_the_missing_op_eagerly(monkeypatch):
    monkeypatch.setenv("TORCH_PJRT_FALLBACK", "allow")
    x = torch.rand(6)
    got = torch.compile(_no_tpu_kernel, backend="tpu")(x.to("tpu"))
    torch.testing.assert_close(got.cpu(), _no_tpu_kernel(x), atol=1e-5, rtol=1e-5)
    assert torch_pjrt.metrics()["graph_splits"] >= 1
    assert any("histogram" in k for k in torch_pjrt.fallbacks())


def test_graph_split_is_an_error_in_strict_mode(monkeypatch):
    monkeypatch.setenv("TORCH_PJRT_FALLBACK", "error")
    with pytest.raises(Exception, match="histogram"):
        torch.compile(_no_tpu_kernel, backend="tpu")(torch.rand(6).to("tpu"))


class _Decoder(nn.Module):
    """One attention layer with a static KV cache, updated in place."""

    def __init__(self, d=16, max_len=12):
        super().__init__()
        torch.manual_seed(0)
        self.emb = nn.Embedding(32, d)
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, 32)
        self.register_buffer("k", torch.zeros(1, max_len, d))
        self.register_buffer("v", torch.zeros(1, max_len, d))
        self.register_buffer("slots", torch.arange(max_len).view(1, max_len, 1))

    def forward(self, tok, pos):
        h = self.emb(tok)                       # (1, 1, d)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        here = self.slots == pos                # (1, L, 1) one-hot of the position
        self.k.copy_(torch.where(here, k, self.k))
        self.v.copy_(torch.where(here, v, self.v))
        att = (q @ self.k.transpose(1, 2)) / 4.0
        att = att.masked_fill(self.slots.transpose(1, 2) > pos, float("-inf"))
        y = torch.softmax(att, dim=-1) @ self.v
        return self.out(y)[:, -1].argmax(-1)


def _generate(model, device, n=8, compiled=False, compiles=None):
    model = model.to(device)
    step = torch.compile(model, backend="tpu") if compiled else model
    tok = torch.tensor([[3]], device=device)
    out = []
    with torch.no_grad():
        for i in range(n):
            nxt = step(tok, torch.tensor(i, device=device))
            out.append(int(nxt.item()))
            tok = nxt.view(1, 1)
            if compiles is not None:
                compiles.append(torch_pjrt.metrics()["graph_compiles"])
    return out


def test_decode_loop_with_static_kv_cache_compiles_once():
    want = _generate(_Decoder(), "cpu")
    torch_pjrt.reset_metrics()
    compiles = []
    got = _generate(_Decoder(), "tpu", compiled=True, compiles=compiles)
    assert got == want
    # The first token comes from a fresh tensor, later ones from argmax's
    # output (another buffer layout): one capture each, then none.
    assert compiles[1] <= 2 and compiles[-1] == compiles[1], compiles
    m = torch_pjrt.metrics()
    assert m["graph_runs"] == 8 and m["graph_splits"] == 0


def test_bucketing_bounds_the_number_of_executables():
    torch.manual_seed(0)
    ref = nn.Sequential(nn.Embedding(50, 8), nn.Linear(8, 50)).eval()
    model = copy.deepcopy(ref).to("tpu")
    cm = torch.compile(model, backend="tpu")
    buckets = (4, 8, 16)
    with torch.no_grad():
        for n in range(1, 17):
            ids = torch.randint(0, 50, (1, n))
            padded, length = torch_pjrt.pad_to_bucket(ids.to("tpu"), 1, buckets)
            assert padded.shape[1] == torch_pjrt.bucket_size(n, buckets) and length == n
            got = cm(padded)[:, :length]
            torch.testing.assert_close(got.cpu(), ref(ids), atol=1e-5, rtol=1e-5)
    assert torch_pjrt.metrics()["graph_compiles"] <= 2 * len(buckets)


def test_bucket_size_rejects_negative():
    with pytest.raises(ValueError, match="non-negative"):
        torch_pjrt.bucket_size(-1)
    assert torch_pjrt.bucket_size(9, (4, 8, 16)) == 16
    assert torch_pjrt.bucket_size(40, (4, 8, 16)) == 40


def test_process_exits_cleanly_with_compiled_runs_in_flight():
    # A compiled run's dropped inputs go to the reaper thread (src/rt/reap.h);
    # a script that ends without synchronizing must still exit with status 0,
    # the queued buffers destroyed before the plugin's own statics go.
    from conftest import run_python
    r = run_python(
        "import torch, torch_pjrt\n"
        "m = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(),\n"
        "                        torch.nn.LayerNorm(256), torch.nn.Linear(256, 64)).to('tpu')\n"
        "opt = torch.optim.AdamW(m.parameters(), lr=1e-3)\n"
        "x = torch.randn(128, 64, device='tpu')\n"
        "def step():\n"
        "    m(x).square().mean().backward(); opt.step(); opt.zero_grad()\n"
        "step = torch.compile(step, backend='tpu')\n"
        "for _ in range(5):\n"
        "    step()\n"
        "print('done')\n")
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().endswith("done")


class _MadeConstants(torch.nn.Module):
    """Tensors made inside forward: on the device, on the CPU then moved,
    and a CPU 0-d computed from constants (log, sqrt of a torch.tensor)."""

    def forward(self, x):
        a = torch.tensor([1.0, 2.0], device=x.device)
        b = torch.tensor(3.0)
        scale = torch.sqrt(torch.log(torch.tensor(8.0)))
        return ((x + a) * b + torch.tensor([[0.5, 0.5]]).to(x.device)) / scale


def test_constants_made_in_forward_do_not_split():
    # Issue 19, item 10: lift_fresh_copy and the CPU ops on constants are
    # folded at compile time: one graph, no splits, CPU's values.
    torch_pjrt.reset_metrics()
    m = _MadeConstants()
    x = torch.randn(3, 2)
    got = torch.compile(m, backend="tpu")(x.to("tpu")).cpu()
    torch.testing.assert_close(got, m(x), rtol=1e-6, atol=1e-6)
    assert torch_pjrt.metrics()["graph_splits"] == 0


@pytest.mark.parametrize("arch", ["mistral_sliding_window", "deberta_v2_relative"])
def test_hf_models_with_constants_compile_whole(arch):
    transformers = pytest.importorskip("transformers")
    if arch == "mistral_sliding_window":
        cfg = transformers.MistralConfig(vocab_size=64, hidden_size=32, intermediate_size=64,
                                         num_hidden_layers=2, num_attention_heads=4,
                                         num_key_value_heads=2, sliding_window=8)
        cls = transformers.MistralForCausalLM
    else:
        cfg = transformers.DebertaV2Config(vocab_size=64, hidden_size=32, intermediate_size=64,
                                           num_hidden_layers=2, num_attention_heads=4,
                                           relative_attention=True, position_buckets=8,
                                           pos_att_type=["p2c", "c2p"],
                                           max_relative_positions=16)
        cls = transformers.DebertaV2Model
    torch.manual_seed(0)
    m = cls(cfg).eval()
    ids = torch.randint(0, 64, (1, 12))
    with torch.no_grad():
        want = m(ids)[0]
        torch_pjrt.reset_metrics()
        got = torch.compile(m.to("tpu"), backend="tpu")(ids.to("tpu"))[0].cpu()
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert torch_pjrt.metrics()["graph_splits"] == 0


@pytest.mark.parametrize("case", ["index_select", "embedding", "gather", "index"])
def test_compiled_out_of_range_index_is_reported_at_the_next_wait(case):
    # Issue 19, item 5: a compiled graph cannot read its indices on the host,
    # so it computes a device-side check; a bad index fails the next wait
    # (.cpu(), .item(), synchronize), as eager's async errors do, instead of
    # XLA's silent clamp.
    table = torch.arange(12.0).reshape(6, 2)
    fns = {
        "index_select": lambda t, i: t.index_select(0, i) * 2,
        "embedding": lambda t, i: F.embedding(i, t) + 1,
        "gather": lambda t, i: t.gather(0, i.view(-1, 1).expand(-1, 2)) - 1,
        "index": lambda t, i: t[i] * 3,
    }
    f = torch.compile(fns[case], backend="tpu")
    tt = table.to("tpu")
    good = torch.tensor([0, 5, 2])
    torch.testing.assert_close(f(tt, good.to("tpu")).cpu(), fns[case](table, good))
    out = f(tt, torch.tensor([0, 6, 2]).to("tpu"))  # same graph, one index out of range
    with pytest.raises(RuntimeError, match="out of (bounds|range).*device-side check"):
        out.cpu()
    # reported once; the next runs are fine again
    torch.testing.assert_close(f(tt, good.to("tpu")).cpu(), fns[case](table, good))
    torch.tpu.synchronize()


@pytest.mark.parametrize("accumulate", [False, True])
def test_compiled_put_writes_and_checks_its_indices(accumulate):
    # put_ read its indices on the host to check them; in a traced graph it
    # cannot, and it used to skip the write altogether (a graph of zeros).
    def f(x, i, s):
        y = x.clone()
        y.put_(i, s, accumulate=accumulate)
        return y * 2

    x = torch.arange(12.0).reshape(3, 4)
    idx = torch.tensor([1, 5, -1, 7])  # a negative index counts from the end
    src = torch.tensor([10.0, 20.0, 30.0, 40.0])
    cf = torch.compile(f, backend="tpu")
    torch.testing.assert_close(cf(x.to("tpu"), idx.to("tpu"), src.to("tpu")).cpu(),
                               f(x, idx, src), rtol=0, atol=0)
    out = cf(x.to("tpu"), torch.tensor([1, 12, 0, 2]).to("tpu"), src.to("tpu"))
    with pytest.raises(RuntimeError, match="out of bounds for dimension 0 with size 12 .*device-side"):
        out.cpu()


def test_compiled_index_check_surfaces_at_synchronize():
    f = torch.compile(lambda t, i: t.index_select(0, i), backend="tpu")
    tt = torch.ones(4, 3, device="tpu")
    f(tt, torch.tensor([1, 2], device="tpu")).cpu()
    f(tt, torch.tensor([-1], device="tpu"))
    with pytest.raises(RuntimeError, match="device-side check"):
        torch.tpu.synchronize()
    torch.tpu.synchronize()  # once


def test_conj_views_in_a_compiled_function_match_cpu():
    # AOTAutograd runs the graph under a dispatch mode, where a copy from a
    # conj view reached the tpu kernel with the bit set (it gave the
    # unconjugated values; test_transfers has the eager form)
    x = torch.randn(3, 4, dtype=torch.complex64)
    t = x.to("tpu")
    for fn in (lambda a: torch.conj(a).clone(), lambda a: torch.conj(a) * 2,
               lambda a: (torch.conj(a) + a).imag):
        f = torch.compile(fn, backend="tpu")
        torch.testing.assert_close(f(t).cpu(), fn(x), rtol=1e-6, atol=1e-6)
