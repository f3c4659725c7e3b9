"""Convolution against PyTorch's CPU kernels: conv1d/2d/3d (stride, padding
incl. 'same', dilation, groups, bias), conv_transpose1d/2d
(output_padding, groups), their gradients through autograd, exact int64
convolution, a small CNN trained one step, CPU's errors, and that all of it ran
natively (no CPU fallback)."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_pjrt
from conftest import dtype_id
from conftest import assert_bitwise_equal, make
from _op_check import NativeOnly, check_close, same_as_cpu

pytestmark = pytest.mark.usefixtures("no_leaks")

TOL = {
    torch.float32: dict(rtol=1e-4, atol=1e-4),
    torch.float64: dict(rtol=1e-10, atol=1e-10),
    torch.bfloat16: dict(rtol=2e-2, atol=5e-2),
    torch.float16: dict(rtol=2e-3, atol=5e-3),
}
FLOATS = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


def randn(shape, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)


def check(actual, expected, tol=None):
    assert actual.device.type == "tpu", actual.device
    assert actual.dtype == expected.dtype, f"{actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{tuple(actual.shape)} != {tuple(expected.shape)}"
    tol = tol or TOL.get(expected.dtype, dict(rtol=0, atol=0))
    torch.testing.assert_close(actual.detach().cpu(), expected.detach(), equal_nan=True, **tol)


class native:
    """Asserts no CPU fallback at all happened inside the block."""

    def __enter__(self):
        torch.tpu.synchronize()
        torch_pjrt.reset_fallbacks()
        return self

    def __exit__(self, exc_type, *exc):
        torch.tpu.synchronize()
        if exc_type is None:
            assert torch_pjrt.fallbacks() == {}, torch_pjrt.fallbacks()
        return False


def run_both(fn, *cpu_args, dtype=torch.float32, grad=True, tol=None):
    """fn on CPU and on tpu from the same data; compares outputs and (with
    grad) the gradients of every floating argument for a random cotangent.
    half dtypes are compared with a float32 CPU reference rounded to dtype."""
    ref_dtype = torch.float32 if dtype in (torch.bfloat16, torch.float16) else dtype
    cpu = [a.to(dtype).to(ref_dtype).detach().clone().requires_grad_(grad) if isinstance(a, torch.Tensor) else a
           for a in cpu_args]
    dev = [a.to(dtype).to("tpu").detach().requires_grad_(grad) if isinstance(a, torch.Tensor)
           else a for a in cpu_args]
    with native():
        out = fn(*dev)
        if grad:
            cot = randn(out.shape, seed=99)
            cot = cot.to(dtype)
            out.backward(cot.to("tpu"))
        torch.tpu.synchronize()
    ref = fn(*cpu)
    check(out, ref.to(dtype).detach(), tol)
    if grad:
        ref.backward(cot.to(ref_dtype))
        for c, d in zip(cpu, dev):
            if isinstance(c, torch.Tensor):
                check(d.grad, c.grad.to(dtype), tol)
    return out


# ---- convolution -------------------------------------------------------------

CONV2D = [
    dict(),
    dict(stride=2, padding=1),
    dict(stride=(2, 1), padding=(0, 2), dilation=(1, 2)),
    dict(padding="same", dilation=2),
    dict(padding="valid", stride=3),
    dict(groups=2, padding=1),
    dict(groups=4, stride=2),  # depthwise
]


@pytest.mark.parametrize("kw", CONV2D, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items())
                         or "default")
def test_conv2d(kw):
    g = kw.get("groups", 1)
    x = randn((2, 4, 9, 8), seed=1)
    w = randn((6 if g != 4 else 8, 4 // g, 3, 3), seed=2)
    b = randn((w.shape[0],), seed=3)
    run_both(lambda x, w, b: F.conv2d(x, w, b, **kw), x, w, b)


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
def test_conv2d_dtypes(dtype):
    x, w, b = randn((2, 3, 7, 7), 1), randn((4, 3, 3, 3), 2), randn((4,), 3)
    run_both(lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1), x, w, b, dtype=dtype)


def test_conv2d_no_bias_input_only_grad():
    x, w = randn((1, 2, 6, 6), 1), randn((3, 2, 1, 1), 2)
    # padding larger than the kernel's reach: the backward crops
    run_both(lambda x, w: F.conv2d(x, w, padding=1, stride=2), x, w)
    xt = x.to("tpu").requires_grad_()
    with native():
        F.conv2d(xt, w.to("tpu")).sum().backward()  # weight needs no grad
    xc = x.clone().requires_grad_()
    F.conv2d(xc, w).sum().backward()
    check(xt.grad, xc.grad)


def test_conv1d_and_conv3d():
    run_both(lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=2, dilation=2, groups=2),
             randn((2, 4, 17), 1), randn((6, 2, 3), 2), randn((6,), 3))
    run_both(lambda x, w, b: F.conv3d(x, w, b, stride=(1, 2, 2), padding=1),
             randn((1, 2, 5, 6, 6), 1), randn((3, 2, 3, 3, 3), 2), randn((3,), 3))


def test_conv_unbatched_and_noncontiguous():
    x = randn((3, 8, 8), 1)  # unbatched: conv2d adds the batch dim
    run_both(lambda x, w: F.conv2d(x, w, padding=1), x, randn((2, 3, 3, 3), 2))
    xt = randn((2, 8, 8, 3), 4)
    w = randn((5, 3, 3, 3), 5)
    with native():
        y = F.conv2d(xt.to("tpu").permute(0, 3, 1, 2), w.to("tpu").transpose(2, 3))
    check(y, F.conv2d(xt.permute(0, 3, 1, 2), w.transpose(2, 3)))


CONVT = [
    dict(),
    dict(stride=2, padding=1, output_padding=1),
    dict(stride=3, padding=2, output_padding=2, dilation=1),
    dict(stride=2, dilation=3, output_padding=2),  # output_padding < dilation only
    dict(stride=2, groups=2, padding=1),
]


@pytest.mark.parametrize("kw", CONVT, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items())
                         or "default")
def test_conv_transpose2d(kw):
    g = kw.get("groups", 1)
    x, w, b = randn((2, 4, 5, 6), 1), randn((4, 6 // g, 3, 2), 2), randn((6,), 3)
    run_both(lambda x, w, b: F.conv_transpose2d(x, w, b, **kw), x, w, b)


def test_conv_transpose1d_dtypes():
    for dt in (torch.float32, torch.bfloat16):
        run_both(lambda x, w: F.conv_transpose1d(x, w, stride=2, output_padding=1, groups=3),
                 randn((2, 6, 7), 1), randn((6, 2, 4), 2), dtype=dt)


def test_conv_modules():
    torch.manual_seed(0)
    for m in [nn.Conv1d(3, 4, 3, padding=1), nn.Conv2d(3, 4, 3, stride=2, bias=False),
              nn.Conv3d(2, 2, 2), nn.ConvTranspose2d(3, 2, 3, stride=2, output_padding=1)]:
        nd = {nn.Conv1d: 1, nn.Conv2d: 2, nn.Conv3d: 3, nn.ConvTranspose2d: 2}[type(m)]
        x = randn((2, m.in_channels) + (6,) * nd, 7)
        md = type(m)(m.in_channels, m.out_channels, m.kernel_size, stride=m.stride,
                     padding=m.padding, output_padding=m.output_padding,
                     bias=m.bias is not None) if isinstance(m, nn.ConvTranspose2d) else None
        md = md or type(m)(m.in_channels, m.out_channels, m.kernel_size, stride=m.stride,
                           padding=m.padding, bias=m.bias is not None)
        md.load_state_dict(m.state_dict())
        md = md.to("tpu")
        xd = x.to("tpu").requires_grad_()
        xc = x.clone().requires_grad_()
        with native():
            md(xd).square().sum().backward()
        m(xc).square().sum().backward()
        check(xd.grad, xc.grad)
        for pd, pc in zip(md.parameters(), m.parameters()):
            check(pd.grad, pc.grad)


def test_conv_errors():
    x, w = randn((1, 3, 8, 8)), randn((4, 2, 3, 3))
    cases = [
        lambda x, w: F.conv2d(x, w),                      # channel mismatch
        lambda x, w: F.conv2d(x, w[:, :, 0]),             # wrong weight rank
        lambda x, w: F.conv2d(x, w.repeat(1, 2, 1, 1)[:, :3], padding=-1),
        lambda x, w: F.conv2d(x, w.repeat(1, 2, 1, 1)[:, :3], stride=0),
        lambda x, w: F.conv2d(x[:, :, :2, :2], w.repeat(1, 2, 1, 1)[:, :3]),  # kernel too big
        lambda x, w: F.conv2d(x, w.repeat(1, 2, 1, 1)[:, :3], torch.ones(5, device=x.device)),
        lambda x, w: F.conv_transpose2d(x, w.transpose(0, 1)[:3], stride=2, output_padding=2),
        lambda x, w: F.conv2d(x, w.repeat(1, 2, 1, 1)[:, :3].bfloat16()),
    ]
    for fn in cases:
        with pytest.raises(Exception) as cpu_err:
            fn(x, w)
        with pytest.raises(type(cpu_err.value)) as dev_err:
            fn(x.to("tpu"), w.to("tpu"))
        assert str(dev_err.value).split("\n")[0] == str(cpu_err.value).split("\n")[0]


def test_conv_integer_falls_back_correctly():
    # int32 (int64 is native: test_int64_convolution_is_exact)
    x = torch.randint(-3, 4, (1, 2, 5, 5), dtype=torch.int32)
    w = torch.randint(-3, 4, (3, 2, 3, 3), dtype=torch.int32)
    torch_pjrt.reset_fallbacks()
    y = F.conv2d(x.to("tpu"), w.to("tpu"))
    assert torch.equal(y.cpu(), F.conv2d(x, w))
    assert "aten::convolution" in torch_pjrt.fallbacks()


# ---- pooling ---------------------------------------------------------------------


# ---- a small CNN -------------------------------------------------------------------

class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.adaptive_avg_pool2d(self.c2(x), 1).flatten(1)
        return self.fc(x)


def test_small_cnn_forward_backward():
    torch.manual_seed(0)
    cpu = SmallCNN()
    dev = SmallCNN()
    dev.load_state_dict(cpu.state_dict())
    dev = dev.to("tpu")
    x = randn((4, 3, 16, 16), 1)
    target = torch.tensor([1, 0, 3, 9])
    torch_pjrt.reset_metrics()
    with native():
        loss_d = F.cross_entropy(dev(x.to("tpu")), target.to("tpu"))
        loss_d.backward()
    loss_c = F.cross_entropy(cpu(x), target)
    loss_c.backward()
    check(loss_d, loss_c)
    for (name, pd), pc in zip(dev.named_parameters(), cpu.parameters()):
        check(pd.grad, pc.grad)


DEV = "tpu"


def t(x):
    return x.to(DEV)


def test_int64_convolution_is_exact():
    g = torch.Generator().manual_seed(0)
    x = torch.randint(-2 ** 40, 2 ** 40, (2, 4, 9, 7), generator=g)
    w = torch.randint(-2 ** 30, 2 ** 30, (6, 2, 3, 2), generator=g)  # products wrap
    b = torch.randint(-100, 100, (6,), generator=g)
    wt = torch.randint(-50, 50, (4, 3, 3, 2), generator=g)
    with NativeOnly():
        r = F.conv2d(t(x), t(w), t(b), stride=2, padding=1, groups=2)
        r1 = F.conv1d(t(x[:, :, 0]), t(w[:, :, 0]), groups=2, dilation=2)
        rt = F.conv_transpose2d(t(x), t(wt), t(b[:3]), stride=2, padding=1)
    assert torch.equal(r.cpu(), F.conv2d(x, w, b, stride=2, padding=1, groups=2))
    assert torch.equal(r1.cpu(), F.conv1d(x[:, :, 0], w[:, :, 0], groups=2, dilation=2))
    assert torch.equal(rt.cpu(), F.conv_transpose2d(x, wt, b[:3], stride=2, padding=1))


# ---- issue 19 item 8: empty inputs ----


@pytest.mark.parametrize("case", ["1d_pad", "1d_same", "2d_pad", "3d_pad", "1d_no_pad", "t2d"])
def test_conv_zero_length_input_raises_like_cpu(case):
    # CPU refuses an empty input unless its batch or channels are 0 (a 1-d
    # convolution names its input as the 2-d one it runs); tpu returned values
    def f(d):
        z = lambda *s: torch.zeros(s, device=d)  # noqa: E731
        return {"1d_pad": lambda: F.conv1d(z(1, 2, 0), z(3, 2, 1), padding=1),
                "1d_same": lambda: F.conv1d(z(1, 2, 0), z(3, 2, 1), padding="same"),
                "2d_pad": lambda: F.conv2d(z(1, 2, 0, 4), z(3, 2, 1, 1), padding=1),
                "3d_pad": lambda: F.conv3d(z(1, 2, 0, 2, 2), z(3, 2, 1, 1, 1), padding=1),
                "1d_no_pad": lambda: F.conv1d(z(1, 2, 0), z(3, 2, 1)),
                "t2d": lambda: F.conv_transpose2d(z(1, 2, 0, 3), z(2, 3, 1, 1), padding=0)}[case]()
    same_as_cpu(f)


@pytest.mark.parametrize("case", ["2d", "2d_bias", "1d", "3d", "zero_batch"])
def test_conv_zero_input_channels_or_batch_like_cpu(case):
    # no input channels: CPU's (and the meta function's) output has 0
    # channels; tpu gave (N, C_out, ...) of bias values
    xs, ws = {"2d": ((1, 0, 4, 4), (3, 0, 2, 2)), "2d_bias": ((2, 0, 4, 4), (3, 0, 2, 2)),
              "1d": ((2, 0, 4), (3, 0, 2)), "3d": ((1, 0, 3, 3, 3), (2, 0, 2, 2, 2)),
              "zero_batch": ((0, 2, 4, 4), (3, 2, 2, 2))}[case]
    conv = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}[len(xs)]

    def f(d):
        x = torch.zeros(xs, device=d, requires_grad=True)
        w = torch.ones(ws, device=d, requires_grad=True)
        b = torch.ones(ws[0], device=d, requires_grad=True)
        y = conv(x, w, b if case != "2d" else None)
        y.sum().backward()
        return [y, x.grad, w.grad] + ([b.grad] if case != "2d" else [])
    same_as_cpu(f)
