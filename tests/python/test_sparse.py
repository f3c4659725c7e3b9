"""Sparse COO tensors on tpu, compared with the same calls on CPU.

Native: construction, transfers, indices/values and the other structure
queries, dense <-> sparse, sparse @ dense (mm, addmm, torch.sparse.mm) and
sparse_mask. Every other op on a sparse tpu tensor runs CPU's kernel and is
counted in fallbacks() as "<op> (sparse)"."""
import re
import warnings

import pytest
import torch

import torch_pjrt
from conftest import run_python

pytestmark = pytest.mark.usefixtures("no_leaks")

TOL = dict(atol=1e-5, rtol=1e-5)


def _dense(shape=(4, 5), dtype=torch.float32, seed=0):
    """A CPU tensor with roughly half its entries zero (and a whole zero row)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g, dtype=torch.float64)
    x[torch.rand(shape, generator=g) < 0.5] = 0
    x[0] = 0
    return (x * 10).to(dtype) if not dtype.is_floating_point else x.to(dtype)


def _uncoalesced(device="cpu"):
    # (0, 1) twice and out of order: coalescing sums the duplicates.
    i = torch.tensor([[1, 0, 0, 2], [2, 1, 1, 0]])
    v = torch.tensor([3.0, 1.0, 2.0, -4.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.sparse_coo_tensor(i, v, (3, 4), device=device)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool,
                                   torch.complex64], ids=str)
def test_to_sparse_round_trip(dtype, native_only):
    x = _dense(dtype=dtype)
    s = x.to("tpu").to_sparse()
    ref = x.to_sparse()
    assert s.is_sparse and s.device.type == "tpu" and s.is_coalesced()
    assert (s.sparse_dim(), s.dense_dim(), s._nnz()) == (ref.sparse_dim(), ref.dense_dim(), ref._nnz())
    assert torch.equal(s.indices().cpu(), ref.indices())
    assert torch.equal(s.values().cpu(), ref.values())
    assert torch.equal(s.to_dense().cpu(), x)


def test_to_sparse_hybrid_and_specials(native_only):
    x = _dense((3, 4, 2))
    x[1, 2, 1] = float("nan")
    x[2, 0, 0] = -0.0  # a negative zero is a zero
    s = x.to("tpu").to_sparse(2)
    ref = x.to_sparse(2)
    assert (s.sparse_dim(), s.dense_dim()) == (2, 1)
    assert torch.equal(s.indices().cpu(), ref.indices())
    torch.testing.assert_close(s.values().cpu(), ref.values(), equal_nan=True, atol=0, rtol=0)
    torch.testing.assert_close(s.to_dense().cpu(), x, equal_nan=True, atol=0, rtol=0)


def test_to_sparse_non_contiguous_and_empty(native_only):
    x = _dense((5, 4)).t()
    assert torch.equal(x.to("tpu").to_sparse().to_dense().cpu(), x)
    z = torch.zeros(3, 2, device="tpu").to_sparse()
    assert z._nnz() == 0 and z.indices().shape == (2, 0)
    assert torch.equal(z.to_dense().cpu(), torch.zeros(3, 2))


def test_to_sparse_bad_sparse_dim_matches_cpu():
    x = torch.ones(2, 3)
    with pytest.raises(RuntimeError) as cpu:
        x.to_sparse(3)
    with pytest.raises(RuntimeError, match=re.escape(str(cpu.value)[:40])):
        x.to("tpu").to_sparse(3)


def test_transfers_keep_structure(native_only):
    ref = _uncoalesced()
    s = ref.to("tpu")
    assert s.device.type == "tpu" and s.is_sparse and not s.is_coalesced()
    assert torch.equal(s._indices().cpu(), ref._indices())
    assert torch.equal(s._values().cpu(), ref._values())
    back = s.cpu()
    assert back.device.type == "cpu" and back.is_sparse and back._nnz() == 4
    assert torch.equal(back.to_dense(), ref.to_dense())
    # Between tpu devices.
    s1 = s.to("tpu:1")
    assert s1.device == torch.device("tpu:1") and s1._values().device == torch.device("tpu:1")
    assert torch.equal(s1.to_dense().cpu(), ref.to_dense())


def test_sparse_coo_tensor_on_tpu(native_only):
    i = torch.tensor([[0, 1, 1], [2, 0, 2]], device="tpu")
    v = torch.tensor([3.0, 4.0, 5.0], device="tpu")
    s = torch.sparse_coo_tensor(i, v, (2, 3))
    assert s.device.type == "tpu" and s.shape == (2, 3)
    expect = torch.tensor([[0.0, 0, 3], [4, 0, 5]])
    assert torch.equal(s.to_dense().cpu(), expect)
    e = torch.empty(2, 2, layout=torch.sparse_coo, device="tpu")
    assert e.is_sparse and e._nnz() == 0
    assert torch.equal(e.to_dense().cpu(), torch.zeros(2, 2))
    c = s.clone()
    assert c.device.type == "tpu" and torch.equal(c.to_dense().cpu(), expect)


def test_to_dense_sums_duplicates(native_only):
    ref = _uncoalesced()
    assert torch.equal(ref.to("tpu").to_dense().cpu(), ref.to_dense())
    with pytest.raises(RuntimeError, match="dtype argument is not supported"):
        ref.to("tpu").to_dense(torch.float64)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32], ids=str)
def test_sparse_mm_matches_cpu(dtype, native_only):
    a = _dense((4, 5), dtype)
    b = _dense((5, 3), dtype, seed=1)
    sa = a.to_sparse()
    ref = torch.sparse.mm(sa, b)
    out = torch.sparse.mm(sa.to("tpu"), b.to("tpu"))
    torch.testing.assert_close(out.cpu(), ref, **TOL)
    torch.testing.assert_close((sa.to("tpu") @ b.to("tpu")).cpu(), sa @ b, **TOL)
    # Uncoalesced input: duplicates add up.
    u = _uncoalesced().to(dtype)
    c = _dense((4, 2), dtype, seed=2)
    torch.testing.assert_close(torch.mm(u.to("tpu"), c.to("tpu")).cpu(), torch.mm(u, c), **TOL)


def test_addmm_matches_cpu(native_only):
    s = _dense((4, 5)).to_sparse()
    d = _dense((5, 3), seed=1)
    t = torch.randn(4, 3)
    for beta, alpha in [(1, 1), (0.5, -2.0), (0, 3)]:
        ref = torch.addmm(t, s, d, beta=beta, alpha=alpha)
        out = torch.addmm(t.to("tpu"), s.to("tpu"), d.to("tpu"), beta=beta, alpha=alpha)
        torch.testing.assert_close(out.cpu(), ref, **TOL)
    # beta=0 ignores self, NaN included; a broadcast self.
    nan = torch.full((4, 3), float("nan"))
    out = torch.addmm(nan.to("tpu"), s.to("tpu"), d.to("tpu"), beta=0)
    torch.testing.assert_close(out.cpu(), s @ d, **TOL)
    si, di, ti = s.to(torch.int64), d.to(torch.int64), t.to(torch.int64)
    assert torch.equal(torch.addmm(ti.to("tpu"), si.to("tpu"), di.to("tpu"), beta=2, alpha=3).cpu(),
                       torch.addmm(ti, si, di, beta=2, alpha=3))
    row = torch.randn(3)
    torch.testing.assert_close(torch.addmm(row.to("tpu"), s.to("tpu"), d.to("tpu")).cpu(),
                               torch.addmm(row, s, d), **TOL)


def test_addmm_float_alpha_for_integers_runs_cpu_kernel():
    s = _dense((4, 5), torch.int64).to_sparse()
    d, t = _dense((5, 3), torch.int64, seed=1), torch.ones(4, 3, dtype=torch.int64)
    torch_pjrt.reset_fallbacks()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = torch.addmm(t.to("tpu"), s.to("tpu"), d.to("tpu"), alpha=0.5)
    assert torch.equal(out.cpu(), torch.addmm(t, s, d, alpha=0.5))
    assert torch_pjrt.fallbacks() == {"aten::addmm (sparse)": 1}


def test_mm_shape_error_matches_cpu():
    s = _dense((4, 5)).to_sparse()
    d = torch.randn(4, 3)
    with pytest.raises(RuntimeError) as cpu:
        torch.mm(s, d)
    with pytest.raises(RuntimeError, match=re.escape(str(cpu.value)[:40])):
        torch.mm(s.to("tpu"), d.to("tpu"))


def test_autograd_through_sparse_mm_and_to_dense(native_only):
    a = _dense((4, 5))
    b = torch.randn(5, 3)
    g = torch.randn(4, 3)

    def run(device):
        sa = a.to(device).to_sparse().requires_grad_()
        bb = b.clone().to(device).requires_grad_()
        torch.sparse.mm(sa, bb).backward(g.to(device))
        return sa.grad, bb.grad

    (ga, gb), (ta, tb) = run("cpu"), run("tpu")
    assert ta.is_sparse and ta.device.type == "tpu"
    torch.testing.assert_close(ta.to_dense().cpu(), ga.to_dense(), **TOL)
    torch.testing.assert_close(tb.cpu(), gb, **TOL)

    x = torch.randn(3, 4)
    x[x < 0] = 0
    xd = x.to("tpu").requires_grad_()
    (xd.to_sparse().to_dense() * 2).sum().backward()
    xc = x.clone().requires_grad_()
    (xc.to_sparse().to_dense() * 2).sum().backward()
    torch.testing.assert_close(xd.grad.cpu(), xc.grad, **TOL)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.complex64],
                         ids=str)
def test_coalesce_matches_cpu(dtype, native_only):
    ref = _uncoalesced().to(dtype)
    c = ref.to("tpu").coalesce()
    want = ref.coalesce()
    assert c.is_coalesced() and c.device.type == "tpu" and c._nnz() == want._nnz()
    assert torch.equal(c.indices().cpu(), want.indices())
    assert torch.equal(c.values().cpu(), want.values())
    # Hybrid (a dense dim per entry), and a tensor with one entry.
    h = torch.sparse_coo_tensor([[2, 0, 2]], torch.arange(6.0).view(3, 2), (4, 2))
    hc = h.to("tpu").coalesce()
    assert torch.equal(hc.indices().cpu(), h.coalesce().indices())
    assert torch.equal(hc.values().cpu(), h.coalesce().values())
    one = torch.sparse_coo_tensor([[1]], [5.0], (3,)).to("tpu").coalesce()
    assert one.is_coalesced() and torch.equal(one.to_dense().cpu(), torch.tensor([0.0, 5, 0]))


def test_add_sub_match_cpu(native_only):
    a = _dense((3, 4)).to_sparse()
    b = _dense((3, 4), seed=1).to_sparse()
    u = _uncoalesced()
    d = torch.randn(3, 4)
    ta, tb, tu, td = (t.to("tpu") for t in (a, b, u, d))
    # sparse + sparse: coalesced (entries merged) when both are, as on CPU.
    r = torch.add(ta, tb, alpha=2)
    assert r.is_coalesced()
    want = torch.add(a, b, alpha=2)
    assert torch.equal(r.indices().cpu(), want.indices())
    torch.testing.assert_close(r.values().cpu(), want.values(), **TOL)
    r = tu - ta
    assert not r.is_coalesced()
    torch.testing.assert_close(r.to_dense().cpu(), (u - a).to_dense(), **TOL)
    # dense + sparse, functional and in place (duplicates add up).
    torch.testing.assert_close((td + tu).cpu(), d + u, **TOL)
    torch.testing.assert_close(torch.sub(td, tu, alpha=0.5).cpu(), torch.sub(d, u, alpha=0.5), **TOL)
    x = td.clone()
    x.add_(tu, alpha=-3)
    torch.testing.assert_close(x.cpu(), d.clone().add_(u, alpha=-3), **TOL)
    # Into a non-contiguous view.
    base = torch.zeros(4, 3, device="tpu")
    base.t().add_(tu)
    assert torch.equal(base.t().cpu(), u.to_dense())
    # Integers.
    i = torch.arange(12).view(3, 4)
    ui = u.to(torch.int64)
    assert torch.equal((i.to("tpu") + ui.to("tpu")).cpu(), i + ui)


def test_add_errors_match_cpu():
    u = _uncoalesced()
    ui = u.to(torch.int64)
    cases = [
        (lambda dev: u.to(dev) + torch.ones(3, 4, device=dev)),  # sparse + dense
        (lambda dev: torch.ones(2, 4, device=dev) + u.to(dev)),  # sizes differ
        (lambda dev: torch.add(torch.ones(3, 4, dtype=torch.int64, device=dev), ui.to(dev),
                               alpha=1.5)),                      # float alpha for ints
    ]
    for f in cases:
        with pytest.raises(RuntimeError) as cpu:
            f("cpu")
        with pytest.raises(RuntimeError, match=re.escape(str(cpu.value)[:40])):
            f("tpu")


def test_fallback_ops_match_cpu_and_are_counted():
    ref = _uncoalesced()
    s = ref.to("tpu")
    torch_pjrt.reset_fallbacks()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # In place on a sparse tensor: the CPU result is written back.
        m = s.clone()
        m.mul_(m)
        assert m.device.type == "tpu" and torch.equal(m.to_dense().cpu(), (ref * ref).to_dense())
        # A sparse result comes back sparse.
        p = s * s
        assert p.is_sparse and p.device.type == "tpu"
        assert torch.equal(p.to_dense().cpu(), (ref * ref).to_dense())
        # bool values coalesce on the CPU.
        b = ref.bool().to("tpu").coalesce()
        assert torch.equal(b.to_dense().cpu(), ref.bool().coalesce().to_dense())
    fb = torch_pjrt.fallbacks()
    assert fb.get("aten::mul_.Tensor (sparse)", 0) >= 1, fb
    assert fb.get("aten::mul.Tensor (sparse)", 0) >= 1, fb
    assert fb.get("aten::_coalesce (sparse)", 0) >= 1, fb


def test_reductions_and_shape_ops_match_cpu(native_only):
    # Ops with a strided composite kernel besides their sparse one (sum() of
    # a sparse tensor must not be the composite's answer).
    ref = _uncoalesced()
    s = ref.to("tpu")
    torch.testing.assert_close(s.sum().cpu(), ref.sum(), **TOL)
    torch.testing.assert_close(torch.sparse.sum(s, 1).to_dense().cpu(),
                               torch.sparse.sum(ref, 1).to_dense(), **TOL)
    for f in (lambda t: t.abs(), lambda t: t.unsqueeze(1), lambda t: t.permute(1, 0),
              lambda t: t.t(), lambda t: t.narrow_copy(1, 1, 2), lambda t: t.double()):
        r = f(s)
        assert r.is_sparse and r.device.type == "tpu"
        torch.testing.assert_close(r.to_dense().cpu(), f(ref).to_dense(), **TOL)
    v = torch.randn(4)
    torch.testing.assert_close(s.matmul(v.to("tpu")).cpu(), ref.matmul(v), **TOL)


@pytest.mark.parametrize("name", ["neg", "sin", "sqrt", "tanh", "relu", "sgn", "isnan"])
def test_unary_ops_match_cpu(name, native_only):
    ref = _uncoalesced().abs()
    s = ref.to("tpu")
    r = getattr(torch, name)(s)
    assert r.is_sparse and r.device.type == "tpu"
    torch.testing.assert_close(r.to_dense().cpu(), getattr(torch, name)(ref).to_dense(), **TOL)
    if name != "isnan":
        c, cc = s.coalesce(), ref.coalesce()
        getattr(c, name + "_")()
        getattr(cc, name + "_")()
        torch.testing.assert_close(c.to_dense().cpu(), cc.to_dense(), **TOL)


def test_scalar_mul_div_match_cpu(native_only):
    ref = _uncoalesced()
    s = ref.to("tpu")
    ri, si = ref.to(torch.int64), ref.to(torch.int64).to("tpu")
    cases = [
        (lambda t: t * 2), (lambda t: 2.5 * t), (lambda t: t * torch.tensor(-1.5)),
        (lambda t: t / 4), (lambda t: torch.div(t, 3, rounding_mode="floor")),
    ]
    for f in cases:
        r, want = f(s), f(ref)
        assert r.is_sparse and r.device.type == "tpu" and r.dtype == want.dtype
        assert r.is_coalesced() == want.is_coalesced()
        torch.testing.assert_close(r.to_dense().cpu(), want.to_dense(), **TOL)
    r = si * 2.5  # integers times a float: promoted as on CPU
    assert r.dtype == (ri * 2.5).dtype
    torch.testing.assert_close(r.to_dense().cpu(), (ri * 2.5).to_dense(), **TOL)
    r = s * torch.tensor(3.0, device="tpu")
    torch.testing.assert_close(r.to_dense().cpu(), (ref * 3).to_dense(), **TOL)
    m, mc = s.clone(), ref.clone()
    m.mul_(3)
    mc.mul_(3)
    m.div_(2)
    mc.div_(2)
    torch.testing.assert_close(m.to_dense().cpu(), mc.to_dense(), **TOL)


def test_uncoalesced_indices_error_matches_cpu():
    s = _uncoalesced("tpu")
    with pytest.raises(RuntimeError, match="Cannot get indices on an uncoalesced tensor"):
        s.indices()


def test_fallback_error_mode_names_the_op():
    code = ("import warnings, torch\n"
            "warnings.simplefilter('ignore')\n"
            "s = torch.sparse_coo_tensor([[0, 0]], [1.0, 2.0], (3,)).to('tpu')\n"
            "print(s.to_dense().cpu().tolist())\n"
            "try:\n"
            "    s * s\n"
            "except NotImplementedError as e:\n"
            "    print('refused:', e)\n")
    r = run_python(code, env_update={"TORCH_PJRT_FALLBACK": "error"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "[3.0, 0.0, 0.0]" in r.stdout, r.stdout
    assert "refused: aten::mul.Tensor on a sparse tensor has no tpu lowering" in r.stdout, r.stdout
    assert "TORCH_PJRT_FALLBACK=error" in r.stdout, r.stdout


def test_sparse_csr_structure_and_conversions():
    # CSR: structure, transfers, conversions and the common ops (CPU's
    # kernels, counted); other structured ops are refused clearly.
    x = torch.tensor([[0.0, 1, 0], [2, 0, 3]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = x.to_sparse_csr()
        c = x.to("tpu").to_sparse_csr()
        assert c.layout == torch.sparse_csr and c.device.type == "tpu" and c._nnz() == 3
        assert torch.equal(c.crow_indices().cpu(), ref.crow_indices())
        assert torch.equal(c.col_indices().cpu(), ref.col_indices())
        assert torch.equal(c.values().cpu(), ref.values())
        assert torch.equal(ref.to("tpu").cpu().to_dense(), x)
        assert torch.equal(c.to_dense().cpu(), x)
        assert torch.equal(c.to("tpu:1").to_dense().cpu(), x)
        m1, m2 = torch.randn(2, 4), torch.randn(4, 3)
        out = torch.sparse.sampled_addmm(c, m1.to("tpu"), m2.to("tpu"))
        torch.testing.assert_close(out.cpu().to_dense(),
                                   torch.sparse.sampled_addmm(ref, m1, m2).to_dense(), **TOL)
        d = torch.randn(3, 2)
        torch.testing.assert_close((c @ d.to("tpu")).cpu(), ref @ d, **TOL)
        assert torch.equal((c + c).cpu().to_dense(), (ref + ref).to_dense())
        assert torch.equal(c.sum().cpu(), ref.sum())
        assert torch.equal((c * 2).cpu().to_dense(), (ref * 2).to_dense())
        # A structured op without a CSR registration: refused, not miscomputed.
        with pytest.raises((NotImplementedError, RuntimeError), match="(?i)sparse ?compressed|SparseCsr"):
            torch.sin(c)
        with pytest.raises(NotImplementedError, match="sparse compressed.*not supported on tpu"):
            torch.sin(c, out=torch.empty_like(c))


def test_sparse_embedding_training_step(native_only):
    # nn.Embedding(sparse=True) gives a sparse COO gradient; SGD adds it to
    # the dense weight (dense.add_(sparse)).
    def run(device):
        torch.manual_seed(0)
        emb = torch.nn.Embedding(10, 3, sparse=True).to(device)
        opt = torch.optim.SGD(emb.parameters(), lr=0.1)
        idx = torch.tensor([[1, 2, 1], [4, 1, 9]], device=device)
        for _ in range(2):
            opt.zero_grad()
            emb(idx).pow(2).sum().backward()
            assert emb.weight.grad.is_sparse
            opt.step()
        return emb.weight.detach().cpu()

    torch.testing.assert_close(run("tpu"), run("cpu"), **TOL)
