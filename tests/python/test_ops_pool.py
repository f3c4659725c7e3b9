"""Pooling against PyTorch's CPU kernels: max_pool1d/2d/3d (values,
indices, gradients), avg_pool2d/3d (out= too), adaptive max and average
pooling, integer pooling, and CPU's errors."""
import pytest
import torch
import torch.nn.functional as F
import torch_pjrt
from conftest import assert_bitwise_equal, make
from _op_check import NativeOnly, check_close
import torch.nn as nn
from conftest import dtype_id
from test_ops_conv import TOL as TOL_conv, check as check_conv, native, randn, run_both  # noqa: F401 (shared helpers)
from test_ops_distance import check  # noqa: F401 (shared helpers)
from test_ops_fold import ties  # noqa: F401 (shared helpers)

pytestmark = pytest.mark.usefixtures("no_leaks")


DEV = "tpu"


def t(x):
    return x.to(DEV)


def test_int_pooling_is_exact():
    g = torch.Generator().manual_seed(1)
    x = torch.randint(-2 ** 62, 2 ** 62, (2, 3, 7, 6), generator=g)  # window sums wrap
    small = torch.randint(-9, 9, (2, 3, 7, 6), generator=g)  # ties and negative quotients
    with NativeOnly():
        a = F.avg_pool2d(t(x), 3, stride=2, padding=1)
        b = F.avg_pool2d(t(small), 2, count_include_pad=False, ceil_mode=True)
        c = F.avg_pool2d(t(small), 2, divisor_override=-3)
        m, i = F.max_pool2d(t(small.int()), 3, stride=2, padding=1, return_indices=True)
    assert torch.equal(a.cpu(), F.avg_pool2d(x, 3, stride=2, padding=1))
    assert torch.equal(b.cpu(), F.avg_pool2d(small, 2, count_include_pad=False, ceil_mode=True))
    assert torch.equal(c.cpu(), F.avg_pool2d(small, 2, divisor_override=-3))
    with NativeOnly():
        d = F.avg_pool3d(t(x.view(1, 2, 3, 7, 6)), 2, stride=1, padding=1)
        e = F.avg_pool3d(t(small.view(2, 3, 7, 6)), 2, count_include_pad=False, divisor_override=-4)
    assert torch.equal(d.cpu(), F.avg_pool3d(x.view(1, 2, 3, 7, 6), 2, stride=1, padding=1))
    assert torch.equal(e.cpu(), F.avg_pool3d(small.view(2, 3, 7, 6), 2, count_include_pad=False,
                                             divisor_override=-4))
    em, ei = F.max_pool2d(small.int(), 3, stride=2, padding=1, return_indices=True)
    assert torch.equal(m.cpu(), em) and torch.equal(i.cpu(), ei)


TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float64: dict(rtol=1e-9, atol=1e-9),
       torch.bfloat16: dict(rtol=2e-2, atol=2e-2), torch.float16: dict(rtol=2e-3, atol=2e-3)}


def test_max_pool3d_values_indices_grads():
    torch.manual_seed(0)
    check(lambda x: F.max_pool3d(x, 2, return_indices=True), torch.randn(2, 3, 4, 5, 6))
    check(lambda x: F.max_pool3d(x, (3, 2, 2), stride=(2, 1, 2), padding=1, dilation=(1, 2, 1),
                                 ceil_mode=True, return_indices=True), torch.randn(1, 2, 7, 6, 5))
    check(lambda x: F.max_pool3d(x, 2, stride=1, return_indices=True), ties((2, 4, 4, 4)))
    x = torch.randn(2, 5, 4, 6, 3).transpose(1, 4)  # non-contiguous
    x[0, 0, 0, 0, :2] = float("nan")
    check(lambda x: F.max_pool3d(x, 2, return_indices=True), x)
    check(lambda x: F.max_pool3d(x, 2, return_indices=True), torch.randn(1, 2, 4, 4, 4).bfloat16(),
          dtype=torch.bfloat16)
    xi = torch.randint(-50, 50, (1, 2, 4, 4, 4))
    v, i = F.max_pool3d(xi.to("tpu"), 2, return_indices=True)
    ve, ie = F.max_pool3d(xi, 2, return_indices=True)
    assert torch.equal(v.cpu(), ve) and torch.equal(i.cpu(), ie)


def test_avg_pool3d():
    torch.manual_seed(1)
    x = torch.randn(2, 3, 5, 6, 7)
    check(lambda x: F.avg_pool3d(x, 2), x)
    check(lambda x: F.avg_pool3d(x, 3, stride=2, padding=1, ceil_mode=True), x)
    check(lambda x: F.avg_pool3d(x, (3, 2, 3), stride=(1, 2, 2), padding=(1, 0, 1),
                                 count_include_pad=False), x.transpose(2, 4))
    check(lambda x: F.avg_pool3d(x, 2, divisor_override=3), x[0])
    check(lambda x: F.avg_pool3d(x, 2), x.double(), dtype=torch.float64)
    for dev in ("cpu", "tpu"):  # CPU has no half kernel
        with pytest.raises(NotImplementedError, match="\"avg_pool3d_out_frame\" not implemented for 'Half'"):
            F.avg_pool3d(x.half().to(dev), 2)
    out = torch.empty(0, device="tpu")
    torch._C._nn.avg_pool3d(x.to("tpu"), 2, out=out)
    torch.testing.assert_close(out.cpu(), F.avg_pool3d(x, 2))


def test_adaptive_max_pool():
    torch.manual_seed(2)
    check(lambda x: F.adaptive_max_pool1d(x, 3, return_indices=True), torch.randn(2, 3, 8))
    check(lambda x: F.adaptive_max_pool2d(x, (3, 4), return_indices=True), torch.randn(2, 3, 7, 9))
    check(lambda x: F.adaptive_max_pool2d(x, (5, 2), return_indices=True), ties((2, 3, 6, 5)))
    check(lambda x: F.adaptive_max_pool2d(x, (9, 11), return_indices=True), torch.randn(1, 5, 7))
    check(lambda x: F.adaptive_max_pool3d(x, (2, 3, 2), return_indices=True),
          torch.randn(1, 2, 5, 7, 4).transpose(2, 3))
    check(lambda x: F.adaptive_max_pool2d(x, 2, return_indices=True),
          torch.randn(1, 2, 5, 5).bfloat16(), dtype=torch.bfloat16)
    for dev in ("cpu", "tpu"):
        with pytest.raises(NotImplementedError, match="\"adaptive_max_pool2d\" not implemented for 'Long'"):
            F.adaptive_max_pool2d(torch.ones(1, 4, 4, dtype=torch.long, device=dev), 2)


def test_adaptive_avg_pool3d_and_area_interpolate():
    torch.manual_seed(3)
    check(lambda x: F.adaptive_avg_pool3d(x, (2, 3, 4)), torch.randn(2, 3, 5, 7, 9))
    check(lambda x: F.adaptive_avg_pool3d(x, (6, 1, 5)), torch.randn(2, 4, 3, 6).transpose(1, 3))
    check(lambda x: F.interpolate(x, size=(3, 2, 5), mode="area"), torch.randn(1, 2, 7, 5, 8))
    check(lambda x: F.adaptive_avg_pool3d(x, 2), torch.randn(1, 2, 5, 5, 5).bfloat16(),
          dtype=torch.bfloat16)
    x = torch.zeros(1, 1, 4, 4, 4)
    x[0, 0, 0, 0, 0] = float("inf")  # an inf stays in its own cell
    check(lambda x: F.adaptive_avg_pool3d(x, 2), x, grad=False)


FLOATS = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


MAXPOOL = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), dilation=(2, 1)),
    dict(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True),
]


@pytest.mark.parametrize("kw", MAXPOOL, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_max_pool2d(kw):
    x = randn((2, 3, 9, 10), 1)
    x[0, 0, 1, 1] = x[0, 0, 1, 2] = 9.0  # a tie: the first wins
    run_both(lambda x: F.max_pool2d(x, **kw), x)
    xd = x.to("tpu")
    with native():
        v, i = F.max_pool2d(xd, return_indices=True, **kw)
    cv, ci = F.max_pool2d(x, return_indices=True, **kw)
    check_conv(v, cv)
    check_conv(i, ci)


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
def test_max_pool2d_dtypes_nan_unbatched(dtype):
    x = randn((3, 8, 8), 2).to(dtype)
    x[0, 0, 0] = float("nan")
    x[0, 0, 1] = float("nan")
    x[1, 2:4, 2:4] = float("-inf")
    xd = x.to("tpu")
    with native():
        v, i = F.max_pool2d(xd, 2, return_indices=True)
    cv, ci = F.max_pool2d(x, 2, return_indices=True)
    check_conv(v, cv)
    check_conv(i, ci)
    run_both(lambda x: F.max_pool2d(x, 3, 2, 1), randn((2, 2, 7, 7), 3), dtype=dtype)


def test_max_pool1d():
    run_both(lambda x: F.max_pool1d(x, 3, 2, 1), randn((2, 3, 11), 1))
    run_both(lambda x: F.max_pool1d(x, 2, ceil_mode=True), randn((3, 9), 1))


AVGPOOL = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=(2, 3), stride=(3, 1), padding=(1, 0), divisor_override=5),
]


@pytest.mark.parametrize("kw", AVGPOOL, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_avg_pool2d(kw):
    run_both(lambda x: F.avg_pool2d(x, **kw), randn((2, 3, 9, 10), 1))


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
def test_avg_pool2d_dtypes(dtype):
    run_both(lambda x: F.avg_pool2d(x, 3, 2, 1), randn((2, 8, 7), 1), dtype=dtype)


def test_avg_pool2d_out():
    x = randn((1, 2, 6, 6), 1)
    out = torch.empty(0, device="tpu")
    with native():
        torch._C._nn.avg_pool2d(x.to("tpu"), 2, out=out)
    check_conv(out, F.avg_pool2d(x, 2))


@pytest.mark.parametrize("size", [(1, 1), (3, 5), (4, None)])
def test_adaptive_avg_pool2d(size):
    # (3, 5) from (7, 10): windows of uneven sizes that overlap
    run_both(lambda x: F.adaptive_avg_pool2d(x, size), randn((2, 3, 7, 10), 1))
    run_both(lambda x: F.adaptive_avg_pool2d(x, size), randn((3, 8, 6), 2))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float64], ids=dtype_id)
def test_adaptive_avg_pool2d_dtypes(dtype):
    run_both(lambda x: F.adaptive_avg_pool2d(x, (2, 2)), randn((2, 3, 6, 4), 1), dtype=dtype)


def test_pool_errors():
    x = randn((1, 2, 6, 6))
    cases = [
        (lambda x: F.max_pool2d(x, 2, padding=2)),
        (lambda x: F.avg_pool2d(x, 2, padding=2)),
        (lambda x: F.max_pool2d(x, 7)),
        (lambda x: F.adaptive_avg_pool2d(x.long(), 2)),
        (lambda x: F.avg_pool2d(x, 2, divisor_override=0)),
    ]
    for fn in cases:
        with pytest.raises(Exception) as cpu_err:
            fn(x)
        with pytest.raises(type(cpu_err.value)) as dev_err:
            fn(x.to("tpu"))
        assert str(dev_err.value).split("\n")[0] == str(cpu_err.value).split("\n")[0]
