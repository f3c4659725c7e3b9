"""Automatic mixed precision on tpu: torch.autocast("tpu") follows CUDA's
policy (matmul/conv/linear/SDPA in the autocast dtype; transcendental ops,
norms, losses and reductions in float32; mixed inputs promoted), and
torch.amp.GradScaler("tpu") trains in float16: its two kernels match the
CPU kernels exactly, the loss goes down, and an inf gradient skips the step
and backs the scale off."""
import warnings

import pytest
import torch
import torch.nn.functional as F

import torch_pjrt

pytestmark = pytest.mark.usefixtures("no_leaks", "native_only")

D0 = "tpu:0"
LOW = [torch.bfloat16, torch.float16]


def dtype_id(dt):
    return str(dt).replace("torch.", "")


def test_device_module_answers():
    assert torch.tpu.get_amp_supported_dtype() == [torch.float16, torch.bfloat16, torch.float32]
    assert torch.tpu.is_bf16_supported()
    assert torch.amp.is_autocast_available("tpu")
    with torch.autocast("tpu", dtype=torch.bfloat16):
        assert torch.is_autocast_enabled("tpu")
        assert torch.get_autocast_dtype("tpu") == torch.bfloat16
    assert not torch.is_autocast_enabled("tpu")
    # an unsupported dtype warns and disables autocast, as on CUDA
    with pytest.warns(UserWarning, match="tpu Autocast only supports dtypes of torch.float16, "
                                         "torch.bfloat16, torch.float32"):
        with torch.autocast("tpu", dtype=torch.float64):
            assert not torch.is_autocast_enabled("tpu")


def test_float32_region_runs_matmuls_in_float32():
    """autocast(dtype=float32), as CUDA accepts it (TorchTitan's MoE router
    computes its gate so under bfloat16 parameters): linear on bfloat16
    inputs gives float32, the product of the upcast inputs."""
    g = torch.Generator().manual_seed(3)
    x, w = torch.randn(4, 8, generator=g).bfloat16(), torch.randn(5, 8, generator=g).bfloat16()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with torch.autocast("tpu", dtype=torch.float32):
            assert torch.is_autocast_enabled("tpu")
            y = torch.nn.functional.linear(x.to(D0), w.to(D0))
    assert y.dtype == torch.float32
    torch.testing.assert_close(y.cpu(), x.float() @ w.float().T, rtol=1e-5, atol=1e-5)


# ---- the policy ---------------------------------------------------------------

def _inputs():
    g = torch.Generator().manual_seed(0)
    r = lambda *s: torch.randn(*s, generator=g)  # noqa: E731
    return {"a": r(4, 8), "b": r(8, 5), "c": r(4, 5), "x3": r(2, 4, 8), "y3": r(2, 8, 5),
            "c3": r(2, 4, 5), "w": r(5, 8), "bias": r(5), "img": r(2, 3, 8, 8),
            "k": r(4, 3, 3, 3), "seq": r(2, 3, 6), "k1": r(4, 3, 3), "q": r(2, 2, 4, 8),
            "t": torch.randint(0, 8, (4,), generator=g)}


# op name -> (function of the inputs dict, dtype class): "low" runs in the
# autocast dtype, "f32" in float32, whatever the float32 inputs.
LOWER = {
    "mm": lambda d: torch.mm(d["a"], d["b"]),
    "matmul": lambda d: torch.matmul(d["x3"], d["y3"]),
    "bmm": lambda d: torch.bmm(d["x3"], d["y3"]),
    "addmm": lambda d: torch.addmm(d["c"], d["a"], d["b"]),
    "baddbmm": lambda d: torch.baddbmm(d["c3"], d["x3"], d["y3"]),
    "linear": lambda d: F.linear(d["a"], d["w"], d["bias"]),
    "conv1d": lambda d: F.conv1d(d["seq"], d["k1"]),
    "conv2d": lambda d: F.conv2d(d["img"], d["k"], padding=1),
    "sdpa": lambda d: F.scaled_dot_product_attention(d["q"], d["q"], d["q"]),
}
FP32 = {
    "softmax": lambda d: torch.softmax(d["a"], -1),
    "log_softmax": lambda d: F.log_softmax(d["a"], -1),
    "layer_norm": lambda d: F.layer_norm(d["a"], (8,)),
    "group_norm": lambda d: F.group_norm(d["img"], 3),
    "mse_loss": lambda d: F.mse_loss(d["a"], d["a"] * 2),
    "cross_entropy": lambda d: F.cross_entropy(d["a"], d["t"]),
    "sum": lambda d: d["a"].sum(),
    "prod": lambda d: d["a"].prod(dim=1),
    "exp": lambda d: d["a"].exp(),
    "log": lambda d: d["a"].abs().log(),
    "pow": lambda d: d["a"].pow(2),
    "rsqrt": lambda d: d["a"].abs().rsqrt(),
    "cumsum": lambda d: d["a"].cumsum(0),
    "bce_with_logits": lambda d: F.binary_cross_entropy_with_logits(d["a"], d["a"].sigmoid()),
}


@pytest.mark.parametrize("dtype", LOW, ids=dtype_id)
def test_policy_dtypes(dtype):
    d = {k: v.to(D0) for k, v in _inputs().items()}
    with torch.autocast("tpu", dtype=dtype):
        for name, fn in LOWER.items():
            assert fn(d).dtype == dtype, name
        for name, fn in FP32.items():
            assert fn(d).dtype == torch.float32, name
        # float32 ops also take low-precision inputs up to float32
        h = d["a"].to(dtype)
        assert h.exp().dtype == torch.float32 and h.sum().dtype == torch.float32
        assert torch.softmax(h, 0).dtype == torch.float32
        # an op outside the lists runs in its input dtype (as on CUDA)
        assert h.mean().dtype == dtype and d["a"].mean().dtype == torch.float32
        assert (d["a"] + 1).dtype == torch.float32 and torch.relu(h).dtype == dtype
        # promote: the widest input dtype wins
        assert torch.addcmul(d["a"], h, h).dtype == torch.float32
        # nested autocast(enabled=False) runs in the inputs' dtypes
        with torch.autocast("tpu", enabled=False):
            assert torch.mm(d["a"], d["b"]).dtype == torch.float32
    # outside the region nothing is cast
    assert torch.mm(d["a"], d["b"]).dtype == torch.float32


@pytest.mark.parametrize("dtype", LOW, ids=dtype_id)
@pytest.mark.parametrize("name", ["mm", "linear", "conv2d", "bmm", "baddbmm"])
def test_lower_precision_matches_cpu_autocast(name, dtype):
    # CPU's autocast policy casts these ops the same way: same dtype, and
    # values that agree to the low precision's rounding.
    cpu_in = _inputs()
    tpu_in = {k: v.to(D0) for k, v in cpu_in.items()}
    with torch.autocast("cpu", dtype=dtype):
        exp = LOWER[name](cpu_in)
    with torch.autocast("tpu", dtype=dtype):
        got = LOWER[name](tpu_in)
    assert got.dtype == exp.dtype == dtype
    torch.testing.assert_close(got.cpu().float(), exp.float(), atol=5e-2, rtol=2e-2)


def test_fp32_ops_match_float32_results():
    cpu_in = _inputs()
    h = cpu_in["a"].to(torch.float16)
    with torch.autocast("tpu", dtype=torch.float16):
        got = torch.softmax(h.to(D0), -1)
        got_ln = F.layer_norm(h.to(D0), (8,))
    torch.testing.assert_close(got.cpu(), torch.softmax(h.float(), -1), atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(got_ln.cpu(), F.layer_norm(h.float(), (8,)), atol=1e-5, rtol=1e-5)


def test_binary_cross_entropy_is_refused():
    p = torch.rand(4, device=D0)
    with torch.autocast("tpu", dtype=torch.float16):
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            F.binary_cross_entropy(p, p)
    # outside autocast it runs
    assert F.binary_cross_entropy(p, p).dtype == torch.float32


def test_autocast_backward_gives_float32_grads():
    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 4).to(D0)
    x = torch.randn(3, 8, device=D0)
    with torch.autocast("tpu", dtype=torch.bfloat16):
        out = lin(x)
        assert out.dtype == torch.bfloat16
        loss = out.float().pow(2).mean()
    loss.backward()
    assert lin.weight.grad.dtype == torch.float32 and lin.bias.grad.dtype == torch.float32
    # the same computation in float32 on CPU, to bf16 accuracy
    lc = torch.nn.Linear(8, 4)
    lc.load_state_dict({k: v.cpu() for k, v in lin.state_dict().items()})
    lc(x.cpu()).pow(2).mean().backward()
    torch.testing.assert_close(lin.weight.grad.cpu(), lc.weight.grad, atol=3e-2, rtol=3e-2)


# ---- GradScaler's kernels ----------------------------------------------------------

def _grads():
    g = torch.Generator().manual_seed(1)
    out = []
    dts = [torch.float32] * 10 + [torch.float16, torch.bfloat16, torch.float64] * 2
    for i, dt in enumerate(dts):
        out.append((torch.randn(3 + i, 4, generator=g) * 1000).to(dt))
    return out


@pytest.mark.parametrize("poison", [None, "inf", "nan"])
def test_unscale_matches_cpu(poison):
    grads = _grads()  # 10 float32 grads: more than one program's worth
    if poison:
        grads[9].view(-1)[5] = float(poison)  # float32, in the second program
        grads[13].view(-1)[0] = float(poison)  # float16
    inv = torch.tensor([1 / 1024.0])
    for dt in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        cpu = [g.clone() for g in grads if g.dtype == dt]
        tpu = [g.to(D0) for g in cpu]
        f_cpu = torch.zeros(1)
        f_tpu = f_cpu.to(D0)
        torch._amp_foreach_non_finite_check_and_unscale_(cpu, f_cpu, inv)
        torch._amp_foreach_non_finite_check_and_unscale_(tpu, f_tpu, inv.to(D0))
        assert f_tpu.item() == f_cpu.item()
        for a, e in zip(tpu, cpu):
            torch.testing.assert_close(a.cpu(), e, atol=0, rtol=0, equal_nan=True)
        assert f_cpu.item() == (1.0 if poison and dt in (torch.float32, torch.float16) else 0.0)


def test_unscale_keeps_found_inf_and_writes_views():
    base = torch.full((4, 6), 8.0, device=D0)
    view = base[:, ::2]  # a strided view: the write lands in base
    found = torch.ones((), device=D0)  # already set: stays set, 0-d works
    torch._amp_foreach_non_finite_check_and_unscale_([view], found, torch.full((1,), 0.5,
                                                                                device=D0))
    assert found.item() == 1.0
    exp = torch.full((4, 6), 8.0)
    exp[:, ::2] = 4.0
    assert torch.equal(base.cpu(), exp)
    torch._amp_foreach_non_finite_check_and_unscale_([], found, torch.ones(1, device=D0))


def test_update_scale_matches_cpu():
    scale_c, track_c = torch.full((), 1024.0), torch.zeros((), dtype=torch.int32)
    scale_t, track_t = scale_c.to(D0), track_c.to(D0)
    for inf in [0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 0]:
        f = torch.full((), float(inf))
        torch._amp_update_scale_(scale_c, track_c, f, 2.0, 0.25, 3)
        r = torch._amp_update_scale_(scale_t, track_t, f.to(D0), 2.0, 0.25, 3)
        assert r is scale_t
        assert scale_t.item() == scale_c.item() and track_t.item() == track_c.item()
    # growing past float32's range keeps the scale and restarts the count
    big_c, tr_c = torch.full((1,), 3e38), torch.full((1,), 1, dtype=torch.int32)
    big_t, tr_t = big_c.to(D0), tr_c.to(D0)
    torch._amp_update_scale_(big_c, tr_c, torch.zeros(1), 2.0, 0.5, 2)
    torch._amp_update_scale_(big_t, tr_t, torch.zeros(1, device=D0), 2.0, 0.5, 2)
    assert big_t.item() == big_c.item() == pytest.approx(3e38) and tr_t.item() == tr_c.item() == 0


def _same_error(fn):
    with pytest.raises(RuntimeError) as cpu:
        fn("cpu")
    with pytest.raises(RuntimeError) as tpu:
        fn(D0)
    assert str(tpu.value) == str(cpu.value)


def test_kernel_errors_match_cpu():
    g = lambda d: [torch.ones(3, device=d)]  # noqa: E731
    _same_error(lambda d: torch._amp_foreach_non_finite_check_and_unscale_(
        g(d), torch.zeros(1, device=d), torch.ones(2, device=d)))
    _same_error(lambda d: torch._amp_foreach_non_finite_check_and_unscale_(
        g(d), torch.zeros(2, device=d), torch.ones(1, device=d)))
    _same_error(lambda d: torch._amp_foreach_non_finite_check_and_unscale_(
        g(d), torch.zeros(1, device=d), torch.ones(1, device=d, dtype=torch.float64)))
    s = lambda d, dt=torch.float32: torch.ones(1, device=d, dtype=dt)  # noqa: E731
    i = lambda d: torch.zeros(1, device=d, dtype=torch.int32)  # noqa: E731
    _same_error(lambda d: torch._amp_update_scale_(s(d), s(d), s(d), 2.0, 0.5, 2))
    _same_error(lambda d: torch._amp_update_scale_(s(d, torch.float64), i(d), s(d), 2.0, 0.5, 2))
    _same_error(lambda d: torch._amp_update_scale_(torch.ones(2, device=d), i(d), s(d), 2., .5, 2))
    with pytest.raises(RuntimeError, match="same tpu device"):
        torch._amp_foreach_non_finite_check_and_unscale_(
            [torch.ones(2)], torch.zeros(1, device=D0), torch.ones(1, device=D0))


# ---- float16 training ---------------------------------------------------------------

def test_gradscaler_float16_training():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 1)).to(D0)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, foreach=False)
    scaler = torch.amp.GradScaler("tpu", init_scale=2.0 ** 12, growth_interval=4)
    x = torch.randn(64, 16, device=D0)
    y = x[:, :1] * 2 - x[:, 1:2]

    def step(inp):
        opt.zero_grad()
        with torch.autocast("tpu", dtype=torch.float16):
            out = model(inp)
            assert out.dtype == torch.float16
            loss = F.mse_loss(out, y)
            assert loss.dtype == torch.float32
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss.item()

    losses = [step(x) for _ in range(25)]
    assert losses[-1] < 0.5 * losses[0], losses
    assert all(p.grad.dtype == torch.float32 for p in model.parameters())
    # 25 clean steps, growth_interval 4: the scale doubled six times
    assert scaler.get_scale() == 2.0 ** 18

    before = [p.detach().cpu().clone() for p in model.parameters()]
    bad = x.clone()
    bad[0, 0] = float("inf")  # an inf input makes inf/NaN gradients
    step(bad)
    assert scaler.get_scale() == 2.0 ** 17  # backed off by 0.5
    for p, b in zip(model.parameters(), before):
        assert torch.equal(p.detach().cpu(), b)  # the step was skipped
    # training resumes
    assert step(x) < losses[0]


def test_gradscaler_unscale_then_clip():
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 2).to(D0)
    opt = torch.optim.SGD(lin.parameters(), lr=0.1, foreach=False)
    scaler = torch.amp.GradScaler("tpu", init_scale=256.0)
    with torch.autocast("tpu", dtype=torch.float16):
        loss = lin(torch.randn(8, 4, device=D0)).float().sum()
    scaler.scale(loss).backward()
    scaled = lin.weight.grad.cpu().clone()
    scaler.unscale_(opt)
    torch.testing.assert_close(lin.weight.grad.cpu(), scaled / 256.0, atol=0, rtol=0)
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 256.0
