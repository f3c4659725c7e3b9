"""Batch norm (and _batch_norm_with_update), group norm, rms norm and layer
norm, forward and backward, against PyTorch's CPU kernels, and
running natively (no CPU fallback)."""
import copy

import pytest
import torch
import torch.nn.functional as F

import torch_pjrt
from conftest import assert_bitwise_equal, make
from _op_check import NativeOnly, check_close, same_as_cpu
from test_ops_activation import _no_fallback, _pair  # noqa: F401 (shared helpers)

pytestmark = pytest.mark.usefixtures("no_leaks")

TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float64: dict(rtol=1e-10, atol=1e-10),
       torch.float16: dict(rtol=1e-2, atol=1e-2), torch.bfloat16: dict(rtol=2e-2, atol=2e-2)}
# reductions over many elements round differently (pairwise vs tree)
NORM_TOL = {torch.float32: dict(rtol=1e-4, atol=1e-5), torch.float64: TOL[torch.float64],
            torch.bfloat16: dict(rtol=2e-2, atol=3e-2)}


def _native():
    assert torch_pjrt.fallbacks() == {}, f"fell back to the CPU: {torch_pjrt.fallbacks()}"


# ---- batch norm ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("affine,track", [(True, True), (False, True), (True, False)])
@pytest.mark.parametrize("dims", [1, 2])
def test_batch_norm_train_matches_cpu(dtype, affine, track, dims):
    torch.manual_seed(0)
    cls = torch.nn.BatchNorm1d if dims == 1 else torch.nn.BatchNorm2d
    bc = cls(3, affine=affine, track_running_stats=track, momentum=0.3)
    if affine:
        with torch.no_grad():
            bc.weight.normal_()
            bc.bias.normal_()
    bt = copy.deepcopy(bc).to("tpu")
    shape = (6, 3, 5) if dims == 1 else (4, 3, 3, 5)
    tol = NORM_TOL[dtype]
    torch_pjrt.reset_fallbacks()
    for step in range(3):
        x = (torch.randn(shape, dtype=torch.float64) * (step + 1) + step).to(dtype)
        g = torch.randn(shape, dtype=torch.float64).to(dtype)
        xc, xt = _pair(x)
        bcd, btd = (bc.to(dtype), bt.to(dtype)) if dtype != torch.float32 else (bc, bt)
        yc, yt = bcd(xc), btd(xt)
        torch.testing.assert_close(yt.cpu(), yc, **tol)
        (yc * g).sum().backward()
        (yt * g.to("tpu")).sum().backward()
        torch.testing.assert_close(xt.grad.cpu(), xc.grad, **tol)
    if affine:
        torch.testing.assert_close(bt.weight.grad.cpu(), bc.weight.grad, **tol)
        torch.testing.assert_close(bt.bias.grad.cpu(), bc.bias.grad, **tol)
    if track:
        torch.testing.assert_close(bt.running_mean.cpu(), bc.running_mean, **tol)
        torch.testing.assert_close(bt.running_var.cpu(), bc.running_var, **tol)
        assert bt.num_batches_tracked.item() == 3
    _native()


@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_eval_uses_running_stats(affine):
    torch.manual_seed(1)
    bc = torch.nn.BatchNorm2d(4, affine=affine)
    with torch.no_grad():
        bc.running_mean.normal_()
        bc.running_var.uniform_(0.5, 2.0)
        if affine:
            bc.weight.normal_()
            bc.bias.normal_()
    bc.eval()
    bt = copy.deepcopy(bc).to("tpu")
    x = torch.randn(2, 4, 3, 3)
    xc, xt = _pair(x)
    torch_pjrt.reset_fallbacks()
    yc, yt = bc(xc), bt(xt)
    torch.testing.assert_close(yt.cpu(), yc, **NORM_TOL[torch.float32])
    g = torch.randn(2, 4, 3, 3)
    (yc * g).sum().backward()
    (yt * g.to("tpu")).sum().backward()
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, **NORM_TOL[torch.float32])
    if affine:
        torch.testing.assert_close(bt.weight.grad.cpu(), bc.weight.grad, **NORM_TOL[torch.float32])
    # eval leaves the running stats alone
    torch.testing.assert_close(bt.running_mean.cpu(), bc.running_mean)
    torch.testing.assert_close(bt.running_var.cpu(), bc.running_var)
    _native()


def test_batch_norm_functional_and_saved_stats():
    torch.manual_seed(2)
    x = torch.randn(5, 3, 4)
    rm, rv = torch.randn(3), torch.rand(3) + 0.5
    w, b = torch.randn(3), torch.randn(3)
    torch_pjrt.reset_fallbacks()
    for training in (True, False):
        rmc, rvc = rm.clone(), rv.clone()
        rmt, rvt = rm.to("tpu"), rv.to("tpu")
        yc = F.batch_norm(x, rmc, rvc, w, b, training=training, momentum=0.2, eps=1e-3)
        yt = F.batch_norm(x.to("tpu"), rmt, rvt, w.to("tpu"), b.to("tpu"), training=training,
                          momentum=0.2, eps=1e-3)
        torch.testing.assert_close(yt.cpu(), yc, **NORM_TOL[torch.float32])
        torch.testing.assert_close(rmt.cpu(), rmc, **NORM_TOL[torch.float32])
        torch.testing.assert_close(rvt.cpu(), rvc, **NORM_TOL[torch.float32])
        oc = torch.ops.aten.native_batch_norm(x, w, b, rm.clone(), rv.clone(), training, 0.1, 1e-5)
        ot = torch.ops.aten.native_batch_norm(x.to("tpu"), w.to("tpu"), b.to("tpu"), rm.to("tpu"),
                                              rv.to("tpu"), training, 0.1, 1e-5)
        for a, e in zip(ot, oc):
            assert a.shape == e.shape
            torch.testing.assert_close(a.cpu(), e, **NORM_TOL[torch.float32])
    # the running var update uses the unbiased variance
    rvt = torch.zeros(3, device="tpu")
    F.batch_norm(x.to("tpu"), torch.zeros(3, device="tpu"), rvt, training=True, momentum=1.0)
    torch.testing.assert_close(rvt.cpu(), x.transpose(0, 1).reshape(3, -1).var(1), **TOL[torch.float32])
    _native()


def test_batch_norm_legit_variants():
    """The overloads torch.compile's decompositions call run the same kernel."""
    torch.manual_seed(8)
    x, w, b = torch.randn(4, 3, 5), torch.randn(3), torch.randn(3)
    rm, rv = torch.randn(3), torch.rand(3) + 0.5
    xt, wt, bt = x.to("tpu"), w.to("tpu"), b.to("tpu")
    aten = torch.ops.aten
    tol = NORM_TOL[torch.float32]
    torch_pjrt.reset_fallbacks()
    rmc, rvc, rmt, rvt = rm.clone(), rv.clone(), rm.to("tpu"), rv.to("tpu")
    oc = aten._native_batch_norm_legit(x, w, b, rmc, rvc, True, 0.25, 1e-5)
    ot = aten._native_batch_norm_legit(xt, wt, bt, rmt, rvt, True, 0.25, 1e-5)
    for a, e in list(zip(ot, oc)) + [(rmt, rmc), (rvt, rvc)]:
        torch.testing.assert_close(a.cpu(), e, **tol)
    oc = aten._native_batch_norm_legit.no_stats(x, w, b, True, 0.1, 1e-5)
    ot = aten._native_batch_norm_legit.no_stats(xt, wt, bt, True, 0.1, 1e-5)
    for a, e in zip(ot, oc):
        torch.testing.assert_close(a.cpu(), e, **tol)
    oc = aten._native_batch_norm_legit_no_training(x, w, b, rm, rv, 0.1, 1e-5)
    ot = aten._native_batch_norm_legit_no_training(xt, wt, bt, rm.to("tpu"), rv.to("tpu"), 0.1, 1e-5)
    torch.testing.assert_close(ot[0].cpu(), oc[0], **tol)
    _native()


def test_batch_norm_errors_match_cpu():
    x = torch.randn(4, 3, 2)
    xt = x.to("tpu")
    with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 4"):
        F.batch_norm(xt, torch.zeros(4, device="tpu"), torch.ones(3, device="tpu"), training=True)
    with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 4"):
        F.batch_norm(x, torch.zeros(4), torch.ones(3), training=True)
    with pytest.raises(RuntimeError, match="running_mean must be defined in evaluation mode"):
        F.batch_norm(xt, None, None, training=False)
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        F.batch_norm(torch.randn(1, 3).to("tpu"), None, None, training=True)


# ---- group norm and rms norm -----------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("shape,groups", [((2, 6, 5), 3), ((3, 4, 2, 3), 2), ((2, 4), 2)])
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_forward_backward(dtype, shape, groups, affine):
    torch.manual_seed(3)
    gc = torch.nn.GroupNorm(groups, shape[1], affine=affine, dtype=dtype)
    if affine:
        with torch.no_grad():
            gc.weight.normal_()
            gc.bias.normal_()
    gt = copy.deepcopy(gc).to("tpu")
    x = (torch.randn(shape, dtype=torch.float64) * 2 + 1).to(dtype)
    xc, xt = _pair(x)
    torch_pjrt.reset_fallbacks()
    yc, yt = gc(xc), gt(xt)
    tol = NORM_TOL[dtype]
    torch.testing.assert_close(yt.cpu(), yc, **tol)
    g = torch.randn(shape, dtype=torch.float64).to(dtype)
    (yc * g).sum().backward()
    (yt * g.to("tpu")).sum().backward()
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, **tol)
    if affine:
        torch.testing.assert_close(gt.weight.grad.cpu(), gc.weight.grad, **tol)
        torch.testing.assert_close(gt.bias.grad.cpu(), gc.bias.grad, **tol)
    mc = torch.ops.aten.native_group_norm(x, None, None, shape[0], shape[1], x[0, 0].numel(),
                                          groups, 1e-5)
    mt = torch.ops.aten.native_group_norm(x.to("tpu"), None, None, shape[0], shape[1],
                                          x[0, 0].numel(), groups, 1e-5)
    for a, e in zip(mt, mc):
        torch.testing.assert_close(a.cpu(), e, **tol)
    _native()


def test_group_norm_errors_match_cpu():
    xt = torch.randn(2, 6, 4).to("tpu")
    with pytest.raises(RuntimeError, match="Expected number of channels in input to be divisible"):
        F.group_norm(xt, 4)
    with pytest.raises(RuntimeError, match="Expected weight to be a vector of size equal"):
        F.group_norm(xt, 3, torch.ones(5, device="tpu"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("affine", [True, False])
def test_rms_norm_forward_backward(dtype, affine):
    torch.manual_seed(4)
    rc = torch.nn.RMSNorm((4, 6), elementwise_affine=affine, dtype=dtype)
    if affine:
        with torch.no_grad():
            rc.weight.normal_()
    rt = copy.deepcopy(rc).to("tpu")
    x = torch.randn(3, 4, 6, dtype=torch.float64).to(dtype)
    xc, xt = _pair(x)
    torch_pjrt.reset_fallbacks()
    yc, yt = rc(xc), rt(xt)
    tol = NORM_TOL[dtype]
    torch.testing.assert_close(yt.cpu(), yc, **tol)
    g = torch.randn(3, 4, 6, dtype=torch.float64).to(dtype)
    (yc * g).sum().backward()
    (yt * g.to("tpu")).sum().backward()
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, **tol)
    if affine:
        torch.testing.assert_close(rt.weight.grad.cpu(), rc.weight.grad, **tol)
    _native()


# ---- losses ----------------------------------------------------------------------


# ---- activations -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_group_norm_mixed_types_keeps_float_statistics_as_cpu(dtype):
    # a half-type input with float weight: CPU saves mean and rstd in float
    torch.manual_seed(0)
    x, w, b = torch.randn(2, 4, 3, 3, dtype=dtype), torch.randn(4), torch.randn(4)
    want = torch.ops.aten.native_group_norm(x, w, b, 2, 4, 9, 2, 1e-5)
    got = torch.ops.aten.native_group_norm(x.to("tpu"), w.to("tpu"), b.to("tpu"), 2, 4, 9, 2, 1e-5)
    assert [g.dtype for g in got] == [c.dtype for c in want] == [dtype, torch.float32, torch.float32]
    for g, c in zip(got, want):
        torch.testing.assert_close(g.cpu(), c, atol=1e-2, rtol=1e-2)


DEV = "tpu"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_batch_norm_with_update(dtype):
    def run(dev):
        g = torch.Generator().manual_seed(0)
        x = torch.randn(4, 3, 5, generator=g).to(dtype).to(dev).requires_grad_()
        w = torch.randn(3, generator=g).to(dtype).to(dev).requires_grad_()
        b = torch.randn(3, generator=g).to(dtype).to(dev).requires_grad_()
        rm = torch.zeros(3, dtype=dtype, device=dev)
        rv = torch.ones(3, dtype=dtype, device=dev)
        out = torch.ops.aten._batch_norm_with_update(x, w, b, rm, rv, 0.1, 1e-5)
        out[0].backward(torch.linspace(-1, 1, 60).view(4, 3, 5).to(dtype).to(dev))
        return list(out) + [rm, rv, x.grad, w.grad, b.grad]

    with NativeOnly():
        got = run(DEV)
    tol = dict(rtol=2e-2, atol=2e-2) if dtype == torch.bfloat16 else None
    for a, e in zip(got, run("cpu")):
        check_close(a, e.detach(), tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
@pytest.mark.parametrize("shape,normalized", [((4, 8), (8,)), ((2, 3, 8), (8,)),
                                              ((2, 3, 4, 5), (4, 5)), ((6,), (6,))])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_forward_backward(dtype, shape, normalized, affine):
    torch.manual_seed(1)
    ln = torch.nn.LayerNorm(normalized, elementwise_affine=affine, dtype=dtype)
    if affine:
        with torch.no_grad():
            ln.weight.normal_()
            ln.bias.normal_()
    lt = copy.deepcopy(ln).to("tpu")
    x = torch.randn(shape, dtype=torch.float64).to(dtype) * 2 + 1
    xc = x.clone().requires_grad_()
    xt = x.to("tpu").requires_grad_()
    torch_pjrt.reset_fallbacks()
    yt, yc = lt(xt), ln(xc)
    tol = TOL[dtype] if dtype != torch.float32 else dict(rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(yt.cpu(), yc, **tol)
    g = torch.randn(shape, dtype=torch.float64).to(dtype)
    (yt * g.to("tpu")).sum().backward()
    (yc * g).sum().backward()
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, **tol)
    if affine:
        torch.testing.assert_close(lt.weight.grad.cpu(), ln.weight.grad, **tol)
        torch.testing.assert_close(lt.bias.grad.cpu(), ln.bias.grad, **tol)
    _no_fallback("aten::native_layer_norm")


def test_layer_norm_stats_match_cpu():
    x = torch.randn(3, 4, 5)
    out_t, mean_t, rstd_t = torch.native_layer_norm(x.to("tpu"), (5,), None, None, 1e-5)
    out_c, mean_c, rstd_c = torch.native_layer_norm(x, (5,), None, None, 1e-5)
    for t, c in [(out_t, out_c), (mean_t, mean_c), (rstd_t, rstd_c)]:
        assert t.shape == c.shape and t.dtype == c.dtype
        torch.testing.assert_close(t.cpu(), c, rtol=1e-5, atol=1e-5)


def test_layer_norm_eps_is_a_runtime_value():
    x = torch.randn(4, 8).to("tpu")
    F.layer_norm(x, (8,), eps=1e-5)
    before = torch_pjrt.metrics()["compiles"]
    y = F.layer_norm(x, (8,), eps=1e-3)
    assert torch_pjrt.metrics()["compiles"] == before
    torch.testing.assert_close(y.cpu(), F.layer_norm(x.cpu(), (8,), eps=1e-3), rtol=1e-5, atol=1e-5)


def test_layer_norm_shape_mismatch_raises_like_cpu():
    x = torch.randn(4, 8)
    with pytest.raises(RuntimeError) as cpu:
        F.layer_norm(x, (7,))
    with pytest.raises(RuntimeError) as tpu:
        F.layer_norm(x.to("tpu"), (7,))
    assert str(cpu.value).splitlines()[0] in str(tpu.value)


# ---- issue 19 item 7: accuracy with a mean offset; overflow and inf weights ----


def _rel_err(a, ref):
    return ((a.detach().double().cpu() - ref).abs().max() / ref.abs().max()).item()


@pytest.mark.parametrize("shape", [(8, 16, 32, 32), (64, 8, 7, 7), (4, 8, 300)], ids=str)
def test_batch_norm_train_accuracy_with_mean_offset(shape):
    # One reduce over dims (0, 2, 3) summed in one float32 chain per channel:
    # the mean was 20-80x and y and weight's gradient up to 60x further from
    # float64 than CPU's (which accumulates in double); now within 4x.
    g = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=g) + 10
    gy = torch.randn(shape, generator=g)
    w, b = torch.randn(shape[1], generator=g), torch.randn(shape[1], generator=g)
    res = {}
    for dev, dt in (("cpu", torch.float64), ("cpu", torch.float32), ("tpu", torch.float32)):
        xx = x.to(dt).to(dev).detach().clone().requires_grad_()
        ww = w.to(dt).to(dev).detach().clone().requires_grad_()
        y, mean, invstd = torch.ops.aten.native_batch_norm(xx, ww, b.to(dt).to(dev), None, None,
                                                           True, 0.1, 1e-5)
        y.backward(gy.to(dt).to(dev))
        res[(dev, dt)] = [t.detach().double().cpu() for t in (mean, invstd, y, xx.grad, ww.grad)]
    ref = res[("cpu", torch.float64)]
    for k, name in enumerate(["mean", "invstd", "y", "grad_input", "grad_weight"]):
        cpu_err = _rel_err(res[("cpu", torch.float32)][k], ref[k])
        tpu_err = _rel_err(res[("tpu", torch.float32)][k], ref[k])
        assert tpu_err <= 4 * max(cpu_err, 3e-8), (name, tpu_err, cpu_err)


def test_layer_and_group_norm_overflowing_variance_pinned():
    # Pinned (docs/COVERAGE.md): a variance past float32's range gives rstd 0
    # and y 0, as CPU's batch norm does and its layer/group norm do when only
    # the variance overflows (|x| ~ 2e19); CPU's layer/group norm give NaN
    # only when a difference of two inputs inside its Welford update
    # overflows too (|x| ~ 3e38).
    x = torch.tensor([[2e19, -2e19, 1.0, 2.0]])
    cpu = torch.native_layer_norm(x, (4,), None, None, 1e-5)
    with NativeOnly():
        tpu = torch.native_layer_norm(x.to("tpu"), (4,), None, None, 1e-5)
    for a, e in zip(tpu, cpu):
        torch.testing.assert_close(a.cpu(), e, rtol=1e-6, atol=0)
    big = torch.tensor([[3e38, -3e38, 1.0, 2.0]])
    with NativeOnly():
        y, mean, rstd = torch.native_layer_norm(big.to("tpu"), (4,), None, None, 1e-5)
        gy = F.group_norm(big.reshape(1, 2, 2).to("tpu"), 1)
    assert torch.equal(y.cpu().abs(), torch.zeros(1, 4)) and rstd.item() == 0.0
    assert torch.equal(gy.cpu().abs(), torch.zeros(1, 2, 2))
    assert F.layer_norm(big, (4,)).isnan().all()  # CPU's, for the record


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
def test_layer_norm_inf_weight_on_a_zero_xhat_is_nan(dtype):
    # Pinned (docs/COVERAGE.md): where x equals its row's mean, xhat is
    # exactly 0 and 0 * inf is NaN. CPU computes x * rstd - mean * rstd with
    # a fused multiply-add, whose rounding residue turns some of these into
    # +-inf.
    x = torch.tensor([[3.0, 3.0, 3.0], [1.0, 2.0, 3.0]], dtype=dtype)
    w = torch.tensor([INF_W, -INF_W, 1.0], dtype=dtype)
    with NativeOnly():
        y = F.layer_norm(x.to("tpu"), (3,), w.to("tpu")).cpu()
    assert y[0, :2].isnan().all() and y[1, 1].isnan()
    assert y[1, 0].item() == -INF_W and y[1, 2].item() == pytest.approx(1.2247, rel=1e-2)
    cpu = F.layer_norm(x, (3,), w)
    keep = cpu.isfinite()
    torch.testing.assert_close(y[keep], cpu[keep], **TOL[dtype])


INF_W = float("inf")


# ---- issue 19 item 8: a zero-size normalized shape ----


@pytest.mark.parametrize("shape,normalized", [((2, 0), (0,)), ((2, 3, 0), (3, 0)), ((0, 3), (3,))],
                         ids=str)
def test_layer_norm_zero_size_like_cpu(shape, normalized):
    # the lowering sliced element 0 of the empty normalized dims and failed;
    # CPU gives an empty y, mean 0 and rstd NaN
    same_as_cpu(lambda d: torch.native_layer_norm(torch.zeros(shape, device=d), normalized, None,
                                                  None, 1e-5))

    def f(d):
        x = torch.zeros(shape, device=d, requires_grad=True)
        w = torch.ones(normalized, device=d, requires_grad=True)
        b = torch.zeros(normalized, device=d, requires_grad=True)
        y = F.layer_norm(x, normalized, w, b)
        y.sum().backward()
        return [y, x.grad, w.grad, b.grad]
    same_as_cpu(f)
