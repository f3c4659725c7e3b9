"""Batch norm, group norm, rms norm, the pointwise losses and the pointwise
activations, forward and backward, against PyTorch's CPU kernels, and
running natively (no CPU fallback)."""
import copy

import pytest
import torch
import torch.nn.functional as F

import torch_pjrt

pytestmark = pytest.mark.usefixtures("no_leaks")

TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float64: dict(rtol=1e-10, atol=1e-10),
       torch.float16: dict(rtol=1e-2, atol=1e-2), torch.bfloat16: dict(rtol=2e-2, atol=2e-2)}
# reductions over many elements round differently (pairwise vs tree)
NORM_TOL = {torch.float32: dict(rtol=1e-4, atol=1e-5), torch.float64: TOL[torch.float64],
            torch.bfloat16: dict(rtol=2e-2, atol=3e-2)}


def _native():
    assert torch_pjrt.fallbacks() == {}, f"fell back to the CPU: {torch_pjrt.fallbacks()}"


def _pair(x):
    """A CPU leaf and a tpu leaf holding the same values."""
    return x.clone().requires_grad_(), x.to("tpu").requires_grad_()


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

LOSSES = [
    ("mse", lambda x, t, r: F.mse_loss(x, t, reduction=r)),
    ("smooth_l1", lambda x, t, r: F.smooth_l1_loss(x, t, reduction=r, beta=0.7)),
    ("smooth_l1_beta0", lambda x, t, r: F.smooth_l1_loss(x, t, reduction=r, beta=0.0)),
    ("huber", lambda x, t, r: F.huber_loss(x, t, reduction=r, delta=0.6)),
]


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("name,fn", LOSSES, ids=[n for n, _ in LOSSES])
def test_regression_losses(name, fn, reduction):
    torch.manual_seed(5)
    x = torch.randn(4, 5)
    t = torch.randn(4, 5)
    t[0, :2] = x[0, :2] + torch.tensor([0.7, -0.6])  # the branch points
    xc, xt = _pair(x)
    torch_pjrt.reset_fallbacks()
    lc, lt = fn(xc, t, reduction), fn(xt, t.to("tpu"), reduction)
    assert lt.shape == lc.shape
    torch.testing.assert_close(lt.cpu(), lc, **TOL[torch.float32])
    g = torch.randn(lc.shape)
    (lc * g).sum().backward()
    (lt * g.to("tpu")).sum().backward()
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, **TOL[torch.float32])
    if name == "smooth_l1_beta0":
        # beta == 0 is l1_loss, which PyTorch decomposes into abs, sub and
        # mean, and its gradient into sgn (not yet native: elementwise family)
        assert set(torch_pjrt.fallbacks()) <= {"aten::sgn.out"}
    else:
        _native()


def test_mse_loss_bf16_and_target_grad():
    x = torch.randn(3, 7, dtype=torch.bfloat16)
    t = torch.randn(3, 7, dtype=torch.bfloat16)
    xc, xt = _pair(x)
    tc, tt = _pair(t)
    torch_pjrt.reset_fallbacks()
    lc, lt = F.mse_loss(xc, tc), F.mse_loss(xt, tt)
    torch.testing.assert_close(lt.cpu(), lc, **TOL[torch.bfloat16])
    lc.backward()
    lt.backward()
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, **TOL[torch.bfloat16])
    torch.testing.assert_close(tt.grad.cpu(), tc.grad, **TOL[torch.bfloat16])
    _native()


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy(reduction, weighted):
    torch.manual_seed(6)
    x = torch.rand(4, 5)
    x[0, 0], x[0, 1] = 0.0, 1.0  # log clamped at -100 on CPU
    t = torch.rand(4, 5)
    w = torch.rand(4, 5) if weighted else None
    xc, xt = _pair(x)
    torch_pjrt.reset_fallbacks()
    lc = F.binary_cross_entropy(xc, t, w, reduction=reduction)
    lt = F.binary_cross_entropy(xt, t.to("tpu"), None if w is None else w.to("tpu"),
                                reduction=reduction)
    torch.testing.assert_close(lt.cpu(), lc, **TOL[torch.float32])
    g = torch.randn(lc.shape)
    (lc * g).sum().backward()
    (lt * g.to("tpu")).sum().backward()
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, rtol=1e-5, atol=1e-3)
    _native()


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_binary_cross_entropy_with_logits(reduction):
    torch.manual_seed(9)
    x = torch.randn(4, 5) * 5
    t = torch.rand(4, 5)
    w, pw = torch.rand(4, 5), torch.rand(5) + 0.5
    for kw in ({}, {"weight": w, "pos_weight": pw}):
        xc, xt = _pair(x)
        torch_pjrt.reset_fallbacks()
        lc = F.binary_cross_entropy_with_logits(xc, t, reduction=reduction, **kw)
        lt = F.binary_cross_entropy_with_logits(xt, t.to("tpu"), reduction=reduction,
                                                **{k: v.to("tpu") for k, v in kw.items()})
        torch.testing.assert_close(lt.cpu(), lc, **TOL[torch.float32])
        g = torch.randn(lc.shape)
        (lc * g).sum().backward()
        (lt * g.to("tpu")).sum().backward()
        torch.testing.assert_close(xt.grad.cpu(), xc.grad, **TOL[torch.float32])
        _native()


def test_loss_errors_match_cpu():
    x, t = torch.rand(3), torch.rand(3)
    for dev in ("cpu", "tpu"):
        xd, td = x.to(dev), t.to(dev)
        with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
            F.binary_cross_entropy(xd * 2 + 1, td)
        with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
            F.binary_cross_entropy(torch.full_like(xd, float("nan")), td)
        with pytest.raises(RuntimeError, match="huber_loss does not support non-positive"):
            F.huber_loss(xd, td, delta=0.0)
        with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative"):
            F.smooth_l1_loss(xd, td, beta=-1.0)
        with pytest.raises(RuntimeError, match="The size of tensor a"):
            torch.ops.aten.mse_loss(xd, torch.rand(4).to(dev), 1)


# ---- activations -----------------------------------------------------------------

ACTS = [
    ("silu", F.silu),
    ("hardtanh", lambda x: F.hardtanh(x, -0.5, 1.5)),
    ("relu6", F.relu6),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2)),
    ("elu", lambda x: F.elu(x, 0.8)),
    ("selu", F.selu),
    ("celu", lambda x: F.celu(x, 1.3)),
    ("softplus", lambda x: F.softplus(x, beta=2.0, threshold=3.0)),
    ("hardsigmoid", F.hardsigmoid),
    ("hardswish", F.hardswish),
    ("mish", F.mish),
    ("tanh", torch.tanh),
    ("sigmoid", torch.sigmoid),
    ("logsigmoid", F.logsigmoid),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("name,fn", ACTS, ids=[n for n, _ in ACTS])
def test_activation_forward_backward(name, fn, dtype):
    torch.manual_seed(7)
    x = torch.randn(6, 9, dtype=torch.float64) * 4
    # the branch points of the piecewise ones
    x[0, :8] = torch.tensor([-3.0, 3.0, 0.0, -0.5, 1.5, 6.0, 1.5, 30.0], dtype=torch.float64)
    x = x.to(dtype)
    xc, xt = _pair(x)
    torch_pjrt.reset_fallbacks()
    yc, yt = fn(xc), fn(xt)
    torch.testing.assert_close(yt.cpu(), yc, **TOL[dtype])
    g = torch.randn(6, 9, dtype=torch.float64).to(dtype)
    (yc * g).sum().backward()
    (yt * g.to("tpu")).sum().backward()
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, **TOL[dtype])
    _native()


def test_activation_noncontiguous_nan_and_inplace():
    x = torch.randn(5, 8) * 3
    x[1, 1] = float("nan")
    base = x.to("tpu")
    torch_pjrt.reset_fallbacks()
    for fn in (F.silu, lambda v: F.hardtanh(v, -1, 1), F.hardswish, lambda v: F.leaky_relu(v, 0.1)):
        torch.testing.assert_close(fn(base.t()).cpu(), fn(x.t()), equal_nan=True,
                                   **TOL[torch.float32])
        torch.testing.assert_close(fn(base[:, ::2]).cpu(), fn(x[:, ::2]), equal_nan=True,
                                   **TOL[torch.float32])
    inplace = [
        lambda v: F.silu(v, inplace=True), lambda v: F.hardtanh(v, -1, 2, inplace=True),
        lambda v: F.relu6(v, inplace=True), lambda v: F.leaky_relu(v, 0.3, inplace=True),
        lambda v: F.elu(v, 0.5, inplace=True), lambda v: F.hardsigmoid(v, inplace=True),
        lambda v: F.hardswish(v, inplace=True), lambda v: F.mish(v, inplace=True),
    ]
    for fn in inplace:
        for part in (slice(None), slice(1, 4)):  # a whole storage, and part of one
            xc, xt = x.clone(), base.clone()
            fn(xc[part])
            fn(xt[part])
            torch.testing.assert_close(xt.cpu(), xc, equal_nan=True, **TOL[torch.float32])
    o = torch.empty(0, device="tpu")
    torch.ops.aten.silu.out(base, out=o)
    torch.testing.assert_close(o.cpu(), F.silu(x), equal_nan=True, **TOL[torch.float32])
    _native()


def test_silu_takes_complex_like_cpu():
    # CPU's silu computes x / (1 + exp(-x)) for complex inputs too (forward only).
    torch_pjrt.reset_fallbacks()
    for dt, tol in ((torch.complex64, 1e-5), (torch.complex128, 1e-12)):
        x = torch.randn(4, 6, dtype=dt) * 3
        torch.testing.assert_close(F.silu(x.to("tpu")).cpu(), F.silu(x), atol=tol, rtol=tol)
        xt = x.to("tpu")
        F.silu(xt[:, 1:4], inplace=True)
        xc = x.clone()
        F.silu(xc[:, 1:4], inplace=True)
        torch.testing.assert_close(xt.cpu(), xc, atol=tol, rtol=tol)
    _native()


def test_activation_errors_match_cpu():
    for dev in ("cpu", "tpu"):
        i = torch.arange(4).to(dev)
        with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
            F.silu(i)
        with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
            F.elu(i)
        with pytest.raises(RuntimeError, match="Bool inputs not supported for hardtanh"):
            F.hardtanh(torch.ones(2, dtype=torch.bool, device=dev))
        x = torch.randn(3).to(dev).requires_grad_()
        y = F.leaky_relu(x.clone(), -0.1, inplace=True)
        with pytest.raises(RuntimeError, match="In-place leakyReLu backward calculation"):
            y.sum().backward()
        y = F.elu(x.clone(), -0.1, inplace=True)
        with pytest.raises(RuntimeError, match="In-place elu backward calculation"):
            y.sum().backward()
    assert torch.equal(F.hardtanh(torch.arange(5).to("tpu"), 1, 3).cpu(),
                       torch.tensor([1, 1, 2, 3, 3]))


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
