"""The ops Hugging Face models reach that src/ops/hf.c lowers: isin
(generate()'s stopping criteria), histc and _grouped_mm (mixture-of-experts
routing), against PyTorch's CPU kernels."""
import pytest
import torch

import torch_pjrt

pytestmark = pytest.mark.usefixtures("no_leaks")


@pytest.fixture(autouse=True)
def _reset():
    torch_pjrt.reset_metrics()
    yield


def no_fallbacks():
    assert torch_pjrt.fallbacks() == {}


# ---- isin -----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32, torch.bfloat16])
def test_isin_matches_cpu(dtype):
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 12, (3, 5), generator=g).to(dtype)
    t = torch.tensor([2, 7, 7, 11]).to(dtype)
    for invert in (False, True):
        got = torch.isin(x.to("tpu"), t.to("tpu"), invert=invert)
        assert got.dtype == torch.bool and got.device.type == "tpu"
        assert torch.equal(got.cpu(), torch.isin(x, t, invert=invert))
    no_fallbacks()


def test_isin_promotes_and_nan_and_views():
    x = torch.tensor([1, 2, 3, 4])
    t = torch.tensor([1.5, 2.0, 4.0])
    assert torch.equal(torch.isin(x.to("tpu"), t.to("tpu")).cpu(), torch.isin(x, t))
    f = torch.tensor([float("nan"), 1.0, -0.0])
    tf = torch.tensor([float("nan"), 0.0])
    assert torch.equal(torch.isin(f.to("tpu"), tf.to("tpu")).cpu(), torch.isin(f, tf))
    big = torch.arange(24).view(4, 6)
    v = big.to("tpu").t()[1:, ::2]  # a non-contiguous view
    assert torch.equal(torch.isin(v, torch.tensor([3, 8, 13], device="tpu")).cpu(),
                       torch.isin(big.t()[1:, ::2], torch.tensor([3, 8, 13])))
    no_fallbacks()


def test_isin_scalar_forms_out_and_empty():
    x = torch.tensor([[1, 2], [3, 2]])
    xt = x.to("tpu")
    assert torch.equal(torch.isin(xt, 2).cpu(), torch.isin(x, 2))
    assert torch.equal(torch.isin(xt, 2.5).cpu(), torch.isin(x, 2.5))
    assert torch.isin(3, torch.tensor([1, 3], device="tpu")).item() is True
    out = torch.empty(0, dtype=torch.bool, device="tpu")
    torch.isin(xt, torch.tensor([3], device="tpu"), out=out)
    assert torch.equal(out.cpu(), torch.isin(x, torch.tensor([3])))
    empty = torch.tensor([], dtype=torch.long, device="tpu")
    assert torch.equal(torch.isin(xt, empty).cpu(), torch.zeros(2, 2, dtype=torch.bool))
    assert torch.equal(torch.isin(xt, empty, invert=True).cpu(), torch.ones(2, 2, dtype=torch.bool))
    assert torch.isin(empty, xt).shape == (0,)
    no_fallbacks()


def test_isin_errors():
    c = torch.tensor([1 + 1j])
    with pytest.raises(RuntimeError, match="Unsupported input type encountered for isin"):
        torch.isin(c.to("tpu"), c.to("tpu"))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.isin(torch.tensor([1, 2], device="tpu"), torch.tensor([1, 2]))


# ---- histc ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_histc_matches_cpu(dtype):
    g = torch.Generator().manual_seed(1)
    x = (torch.randn(200, generator=g) * 3).to(dtype)
    x[:3] = torch.tensor([-2.0, 2.0, 0.0]).to(dtype)  # on the range's ends and an inner edge
    for bins, lo, hi in [(10, -2, 2), (7, 0, 0), (1, -1, 1), (16, -5, 3)]:
        got = torch.histc(x.to("tpu"), bins=bins, min=lo, max=hi)
        assert got.dtype == dtype and got.device.type == "tpu"
        torch.testing.assert_close(got.cpu(), torch.histc(x, bins=bins, min=lo, max=hi),
                                   atol=0, rtol=0)
    no_fallbacks()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_histc_half_types_run_cpu_kernel_and_count_it(dtype):
    # CPU's half-precision bin edges round at every step, which XLA does not
    # reproduce exactly (an element near an edge could land a bin away), so
    # half types run CPU's kernel, counted as a fallback. Random data hits
    # edges: the answer must still be exact.
    x = (torch.randn(1000, generator=torch.Generator().manual_seed(3)) * 3).to(dtype)
    torch_pjrt.reset_metrics()
    got = torch.histc(x.to("tpu"), bins=37, min=-4, max=4)
    assert got.dtype == dtype and got.device.type == "tpu"
    torch.testing.assert_close(got.cpu(), torch.histc(x, bins=37, min=-4, max=4), atol=0, rtol=0)
    assert torch_pjrt.fallbacks() == {"aten::histc": 1}


def test_histc_nan_constant_views_and_out():
    x = torch.tensor([1.0, float("nan"), 3.0, 3.0, 5.0, float("inf")])
    torch.testing.assert_close(torch.histc(x.to("tpu"), 4, 0, 5).cpu(), torch.histc(x, 4, 0, 5))
    c = torch.full((5,), 2.0)  # min == max == the data's range: widened to [1, 3]
    torch.testing.assert_close(torch.histc(c.to("tpu"), 4).cpu(), torch.histc(c, 4))
    m = torch.arange(12.0).view(3, 4)
    torch.testing.assert_close(torch.histc(m.to("tpu").t()[:, 1:], 5, 0, 12).cpu(),
                               torch.histc(m.t()[:, 1:], 5, 0, 12))
    out = torch.empty(6, device="tpu")
    torch.histc(m.to("tpu"), 6, 0, 11, out=out)
    torch.testing.assert_close(out.cpu(), torch.histc(m, 6, 0, 11))
    assert torch.equal(torch.histc(torch.zeros(0, device="tpu"), 4).cpu(), torch.zeros(4))
    no_fallbacks()


def test_histc_integers_count_expert_ids():
    # What a MoE layer does on an accelerator (CPU refuses integer input).
    ids = torch.tensor([0, 3, 3, 1, 7, 7, 7, 2, 9], dtype=torch.int32)
    got = torch.histc(ids.to("tpu"), bins=8, min=0, max=7)
    assert got.dtype == torch.int32
    expect = torch.histc(ids.float(), bins=8, min=0, max=7).to(torch.int32)
    assert torch.equal(got.cpu(), expect)  # 9 is past max: not counted
    with pytest.raises(NotImplementedError, match="not implemented for 'Int'"):
        torch.histc(ids, bins=8, min=0, max=7)
    no_fallbacks()


def test_histc_errors_match_cpu():
    x = torch.randn(8)
    for kw, err, msg in [
        (dict(bins=0), RuntimeError, "bins must be > 0, but got 0"),
        (dict(bins=4, min=3, max=1), RuntimeError, "max must be larger than min"),
        (dict(bins=4, min=float("-inf"), max=1), RuntimeError, r"range of \[-inf, 1\] is not finite"),
    ]:
        with pytest.raises(err, match=msg):
            torch.histc(x, **kw)
        with pytest.raises(err, match=msg):
            torch.histc(x.to("tpu"), **kw)
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        torch.histc(torch.tensor([True], device="tpu"), 4)


# ---- _grouped_mm ----------------------------------------------------------------

def _grouped(dtype, bias=False, offs=(2, 2, 5, 7)):
    g = torch.Generator().manual_seed(2)
    a = torch.randn(8, 16, generator=g).to(dtype)
    w = torch.randn(len(offs), 16, 8, generator=g).to(dtype)
    o = torch.tensor(offs, dtype=torch.int32)
    bb = torch.randn(len(offs), 8, generator=g).to(dtype) if bias else None
    return a, w, o, bb


def _reference(a, w, offs, bias):
    """Group by group on the CPU in float64; rows past the last group are 0."""
    out = torch.zeros(a.shape[0], w.shape[2], dtype=torch.float64)
    start = 0
    for e, end in enumerate(offs.tolist()):
        out[start:end] = a[start:end].double() @ w[e].double()
        if bias is not None:
            out[start:end] += bias[e].double()
        start = end
    return out


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.bfloat16, 2e-2)])
def test_grouped_mm_jagged_rows(dtype, tol):
    # an empty group (2, 2) and rows past offs[-1] (row 7), as routing makes them
    a, w, o, _ = _grouped(dtype)
    got = torch._grouped_mm(a.to("tpu"), w.to("tpu"), offs=o.to("tpu"))
    assert got.dtype == dtype and got.shape == (8, 8)
    expect = _reference(a, w, o, None)
    torch.testing.assert_close(got.cpu().double(), expect, atol=tol * 4, rtol=tol)
    assert torch.equal(got.cpu()[7], torch.zeros(8, dtype=dtype))
    f = torch.nn.functional.grouped_mm(a.to("tpu"), w.to("tpu"), offs=o.to("tpu"))
    assert torch.equal(f.cpu(), got.cpu())
    no_fallbacks()


def test_grouped_mm_bias_batched_and_out_dtype():
    a, w, o, bb = _grouped(torch.float32, bias=True, offs=(3, 5, 6, 8))
    got = torch._grouped_mm(a.to("tpu"), w.to("tpu"), offs=o.to("tpu"), bias=bb.to("tpu"))
    torch.testing.assert_close(got.cpu().double(), _reference(a, w, o, bb), atol=1e-4, rtol=1e-5)
    a3 = torch.randn(3, 4, 16)
    w3 = torch.randn(3, 16, 8)
    got3 = torch._grouped_mm(a3.to("tpu"), w3.to("tpu"))
    torch.testing.assert_close(got3.cpu(), torch.bmm(a3, w3), atol=1e-5, rtol=1e-5)
    ab, wb = a.bfloat16(), w.bfloat16()
    f32 = torch._grouped_mm(ab.to("tpu"), wb.to("tpu"), offs=o.to("tpu"), out_dtype=torch.float32)
    assert f32.dtype == torch.float32
    torch.testing.assert_close(f32.cpu().double(), _reference(ab, wb, o, None), atol=1e-4,
                               rtol=1e-5)
    no_fallbacks()


def test_grouped_mm_jagged_contraction_and_gradients():
    # a (m, s) x b (s, n) with groups over s: out[e] = a[:, group e] @ b[group e]
    g = torch.Generator().manual_seed(6)
    a, b = torch.randn(4, 8, generator=g), torch.randn(8, 4, generator=g)
    offs = torch.tensor([3, 3, 6], dtype=torch.int32)  # an empty group; columns 6, 7 unused
    got = torch._grouped_mm(a.to("tpu"), b.to("tpu"), offs=offs.to("tpu"))
    expect = torch.stack([a[:, 0:3] @ b[0:3], torch.zeros(4, 4), a[:, 3:6] @ b[3:6]])
    torch.testing.assert_close(got.cpu(), expect, atol=1e-5, rtol=1e-5)
    # The MoE forward's gradients (which use this layout for the weights).
    x, w, o, bb = _grouped(torch.float32, bias=False, offs=(3, 5, 6, 8))
    res = {}
    for dev in ("cpu", "tpu"):
        xd, wd = x.detach().to(dev).requires_grad_(), w.detach().to(dev).requires_grad_()
        torch._grouped_mm(xd, wd, offs=o.to(dev)).square().sum().backward()
        res[dev] = (xd.grad.cpu(), wd.grad.cpu())
    for t, c in zip(res["tpu"], res["cpu"]):
        torch.testing.assert_close(t, c, atol=1e-4, rtol=1e-5)
    no_fallbacks()


def test_grouped_mm_matches_cpu_kernel_and_errors():
    a, w, o, _ = _grouped(torch.float32, offs=(1, 4, 8, 8))
    expect = torch._grouped_mm(a, w, offs=o)
    got = torch._grouped_mm(a.to("tpu"), w.to("tpu"), offs=o.to("tpu"))
    torch.testing.assert_close(got.cpu(), expect, atol=1e-5, rtol=1e-5)
    with pytest.raises(RuntimeError, match="offs has to be int32"):
        torch._grouped_mm(a.to("tpu"), w.to("tpu"), offs=o.long().to("tpu"))
    with pytest.raises(RuntimeError, match="contraction dimension"):
        torch._grouped_mm(a[:, :8].to("tpu"), w.to("tpu"), offs=o.to("tpu"))
    with pytest.raises(RuntimeError, match="same dtype"):
        torch._grouped_mm(a.to("tpu"), w.double().to("tpu"), offs=o.to("tpu"))


# ---- fused Adam / AdamW (Trainer's default optimizer) ------------------------------

def _params(seed=4, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(5, 3, generator=g).to(dtype), torch.randn(7, generator=g).to(dtype)]


def _run_fused(cls, device, steps=3, dtype=torch.float32, lr=1e-2, **kw):
    ps = [p.to(device).requires_grad_() for p in _params(dtype=dtype)]
    opt = cls(ps, lr=lr, fused=True, **kw)
    g = torch.Generator().manual_seed(5)
    for _ in range(steps):
        for p in ps:
            p.grad = torch.randn(p.shape, generator=g).to(dtype).to(device)
        opt.step()
    state = [opt.state[p] for p in ps]
    return [p.detach().cpu() for p in ps], state


@pytest.mark.parametrize("cls,kw", [
    (torch.optim.AdamW, dict(weight_decay=0.1)),
    (torch.optim.AdamW, dict(weight_decay=0.0, amsgrad=True, maximize=True)),
    (torch.optim.Adam, dict(weight_decay=0.05, betas=(0.8, 0.95), eps=1e-6)),
])
def test_fused_adam_matches_cpu(cls, kw):
    expect, es = _run_fused(cls, "cpu", **kw)
    got, gs = _run_fused(cls, "tpu", **kw)
    for a, b in zip(got, expect):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)
    for a, b in zip(gs, es):
        for k in b:
            torch.testing.assert_close(a[k].cpu(), b[k], atol=1e-6, rtol=1e-5)
    no_fallbacks()


def test_fused_adamw_bf16_tensor_lr_and_scheduler():
    expect, _ = _run_fused(torch.optim.AdamW, "cpu", dtype=torch.bfloat16)
    got, _ = _run_fused(torch.optim.AdamW, "tpu", dtype=torch.bfloat16)
    for a, b in zip(got, expect):
        assert a.dtype == torch.bfloat16
        torch.testing.assert_close(a, b, atol=1e-2, rtol=1e-2)
    expect, _ = _run_fused(torch.optim.AdamW, "cpu", lr=torch.tensor(0.02))
    got, _ = _run_fused(torch.optim.AdamW, "tpu", lr=torch.tensor(0.02))
    for a, b in zip(got, expect):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)
    no_fallbacks()


def test_fused_adamw_grad_scale_and_found_inf():
    """What GradScaler passes: grads are unscaled in place; found_inf == 1
    leaves parameters and moments untouched."""
    for inf in (0.0, 1.0):
        res = {}
        for dev in ("cpu", "tpu"):
            ps = [p.to(dev) for p in _params()]
            gs = [torch.full_like(p, 4.0) for p in ps]
            m = [torch.zeros_like(p) for p in ps]
            v = [torch.zeros_like(p) for p in ps]
            steps = [torch.tensor(1.0, device=dev) for _ in ps]
            torch._fused_adamw_(ps, gs, m, v, [], steps, lr=0.1, beta1=0.9, beta2=0.999,
                                weight_decay=0.01, eps=1e-8, amsgrad=False, maximize=False,
                                grad_scale=torch.tensor(2.0, device=dev),
                                found_inf=torch.tensor(inf, device=dev))
            res[dev] = [t.cpu() for t in ps + gs + m + v]
        for a, b in zip(res["tpu"], res["cpu"]):
            torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)
        if inf:
            assert torch.equal(res["tpu"][0], _params()[0])
    no_fallbacks()


def test_fused_adamw_errors():
    p = torch.zeros(3, device="tpu")
    with pytest.raises(RuntimeError, match="same number of params"):
        torch._fused_adamw_([p], [], [p], [p], [], [torch.tensor(1.0, device="tpu")], lr=0.1,
                            beta1=0.9, beta2=0.99, weight_decay=0.0, eps=1e-8, amsgrad=False,
                            maximize=False)
    with pytest.raises(RuntimeError, match="parameter's sizes"):
        torch._fused_adamw_([p], [torch.zeros(4, device="tpu")], [p.clone()], [p.clone()], [],
                            [torch.tensor(1.0, device="tpu")], lr=0.1, beta1=0.9, beta2=0.99,
                            weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)
