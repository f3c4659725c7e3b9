"""torch.fft and stft on tpu: the native _fft_c2c / _fft_r2c / _fft_c2r
lowerings against PyTorch's CPU kernels (norm modes, n/s padding and
truncation, dims, odd sizes, more than three transformed dims, views,
gradients, out= forms) and CPU's errors for what CPU refuses."""
import pytest
import torch
import torch.fft as F

import torch_pjrt

REAL_IN = {"rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"}
ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
TWO_D = ["fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2"]
N_D = ["fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"]


def _close(actual, expected, rtol=1e-5):
    """Agreement relative to the size of the whole result: an FFT's rounding
    error scales with the norm of its output, not with each element."""
    assert actual.device.type == "tpu"
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    scale = max(expected.abs().max().item(), 1.0) if expected.numel() else 1.0
    torch.testing.assert_close(actual.cpu(), expected, atol=rtol * scale, rtol=rtol)


def _assert_native(name=""):
    fb = dict(torch_pjrt.fallbacks())
    if name in ("ihfft2", "ihfftn"):
        # these conjugate with conj_physical, whose lowering is not this
        # family's (its out= form still falls back)
        fb.pop("aten::conj_physical.out", None)
    assert fb == {}


def _input(name, shape, dtype=torch.float32):
    x = torch.randn(shape, dtype=torch.float64)
    if name not in REAL_IN:
        x = torch.complex(x, torch.randn(shape, dtype=torch.float64))
        return x.to(torch.complex128 if dtype == torch.float64 else torch.complex64)
    return x.to(dtype)


def _run(name, x, grad=False, rtol=1e-5, **kw):
    f = getattr(F, name)
    xc = x.clone().requires_grad_(grad)
    xt = x.to("tpu").requires_grad_(grad)
    yc, yt = f(xc, **kw), f(xt, **kw)
    _close(yt, yc.detach(), rtol)
    if grad:
        w = torch.randn(yc.shape, dtype=yc.dtype)
        (yc * w).real.sum().backward() if yc.is_complex() else (yc * w).sum().backward()
        wt = w.to("tpu")
        (yt * wt).real.sum().backward() if yt.is_complex() else (yt * wt).sum().backward()
        _close(xt.grad, xc.grad, rtol)


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("name", ONE_D + TWO_D + N_D)
def test_fft_functions_match_cpu_with_grads(name, norm):
    torch_pjrt.reset_fallbacks()
    _run(name, _input(name, (3, 6, 5)), grad=True, norm=norm)
    _assert_native(name)


@pytest.mark.parametrize("name,kw", [
    ("fft", dict(n=9)), ("fft", dict(n=3, dim=0)), ("ifft", dict(n=4, dim=1)),
    ("rfft", dict(n=11)), ("rfft", dict(n=2, dim=0)), ("irfft", dict(n=7)),
    ("irfft", dict(n=1)), ("hfft", dict(n=5, dim=1)), ("ihfft", dict(n=3)),
    ("fft2", dict(s=(5, 2))), ("rfft2", dict(s=(2, 9), dim=(0, 2))),
    ("irfft2", dict(s=(4, 7))), ("hfft2", dict(s=(3, 3))),
    ("fftn", dict(dim=(2, 0))), ("rfftn", dict(s=(7, 3), dim=(-1, 0))),
    ("irfftn", dict(s=(3, 5), dim=(0, 1))), ("ihfftn", dict(dim=(1,))),
])
def test_lengths_dims_and_odd_sizes(name, kw):
    torch_pjrt.reset_fallbacks()
    _run(name, _input(name, (3, 6, 5)), grad=True, norm="ortho", **kw)
    _assert_native(name)


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn", "ihfftn"])
def test_more_than_three_dims(name):
    # stablehlo.fft takes at most three dims: the rest run as a second FFT
    torch_pjrt.reset_fallbacks()
    _run(name, _input(name, (2, 3, 4, 5, 3)), grad=True)
    _assert_native(name)


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "fft2", "rfftn", "hfftn"])
def test_float64_and_complex128(name):
    torch_pjrt.reset_fallbacks()
    _run(name, _input(name, (4, 6, 5), torch.float64), rtol=1e-12)
    assert torch_pjrt.fallbacks() == {}


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool])
def test_integer_and_bool_inputs_promote(dtype):
    x = (torch.randn(4, 6) > 0).to(dtype)
    torch_pjrt.reset_fallbacks()
    for name in ("fft", "rfft2", "ihfft"):
        _close(getattr(F, name)(x.to("tpu")), getattr(F, name)(x))
    assert torch_pjrt.fallbacks() == {}


def test_views_and_conjugate_inputs():
    x = torch.randn(5, 8, 6, dtype=torch.complex64)
    r = torch.randn(5, 8, 6)
    xt, rt = x.to("tpu"), r.to("tpu")
    torch_pjrt.reset_fallbacks()
    _close(F.fft(xt.transpose(0, 2), dim=1), F.fft(x.transpose(0, 2), dim=1))
    _close(F.rfft2(rt[:, ::2, 1:]), F.rfft2(r[:, ::2, 1:]))
    _close(F.irfft(xt[1:, :, ::2]), F.irfft(x[1:, :, ::2]))
    _close(F.fft(xt.conj()), F.fft(x.conj()))
    _close(F.hfft(xt.conj(), dim=0), F.hfft(x.conj(), dim=0))
    _close(F.ifftn(xt.expand(2, 5, 8, 6)), F.ifftn(x.expand(2, 5, 8, 6)))
    assert torch_pjrt.fallbacks() == {}


def test_conjugate_view_is_not_resolved_through_the_host():
    # hfft hands _fft_c2r a conjugate view; the program conjugates it
    x = torch.randn(4, 6, dtype=torch.complex64)
    xt = x.to("tpu")
    torch.tpu.synchronize()
    before = torch_pjrt.metrics()
    y, z = F.hfft(xt), F.fft(xt.conj(), dim=0)
    torch.tpu.synchronize()
    after = torch_pjrt.metrics()
    assert after["h2d_bytes"] == before["h2d_bytes"]
    assert after["d2h_bytes"] == before["d2h_bytes"]
    _close(y, F.hfft(x))
    _close(z, F.fft(x.conj(), dim=0))


def test_c2r_ignores_imaginary_edge_bins_like_cpu():
    # irfft reads only the real part of bin 0 and (even n) bin n/2
    x = torch.randn(3, 5, dtype=torch.complex64)
    torch_pjrt.reset_fallbacks()
    for n in (8, 9):
        _close(F.irfft(x.to("tpu"), n=n), F.irfft(x, n=n))
        _close(F.irfft2(x.to("tpu"), s=(3, n)), F.irfft2(x, s=(3, n)))
    assert torch_pjrt.fallbacks() == {}


def test_aten_ops_directly_and_two_sided_r2c():
    r = torch.randn(4, 6)
    c = torch.randn(4, 6, dtype=torch.complex64)
    rt, ct = r.to("tpu"), c.to("tpu")
    torch_pjrt.reset_fallbacks()
    for norm in (0, 1, 2):
        _close(torch._fft_r2c(rt, [1, 0], norm, False), torch._fft_r2c(r, [1, 0], norm, False))
        _close(torch._fft_r2c(rt, [0], norm, True), torch._fft_r2c(r, [0], norm, True))
        _close(torch._fft_c2c(ct, [0, 1], norm, False), torch._fft_c2c(c, [0, 1], norm, False))
        _close(torch._fft_c2r(ct[:, :4], [0, 1], norm, 7), torch._fft_c2r(c[:, :4], [0, 1], norm, 7))
    _close(torch._fft_c2c(ct, [], 0, True), torch._fft_c2c(c, [], 0, True))
    assert torch_pjrt.fallbacks() == {}


def test_out_forms():
    x = torch.randn(4, 6, dtype=torch.complex64)
    r = torch.randn(4, 6)
    torch_pjrt.reset_fallbacks()
    out = torch.empty(0, dtype=torch.complex64, device="tpu")
    F.fft(x.to("tpu"), norm="ortho", out=out)
    _close(out, F.fft(x, norm="ortho"))
    out = torch.empty(0, dtype=torch.complex64, device="tpu")
    F.rfft(r.to("tpu"), out=out)
    _close(out, F.rfft(r))
    out = torch.empty(0, device="tpu")
    F.irfft(x.to("tpu"), n=9, out=out)
    _close(out, F.irfft(x, n=9))
    assert torch_pjrt.fallbacks() == {}


def test_stft():
    x = torch.randn(2, 200, dtype=torch.float64)
    w = torch.hann_window(32, dtype=torch.float64)
    torch_pjrt.reset_fallbacks()
    kw = dict(n_fft=32, hop_length=8, return_complex=True, center=False)
    _close(torch.stft(x.to("tpu"), window=w.to("tpu"), **kw), torch.stft(x, window=w, **kw))
    xc = torch.randn(150, dtype=torch.complex64)
    kw = dict(n_fft=16, hop_length=4, return_complex=True, onesided=False)
    kw_t = dict(kw, window=torch.ones(16, device="tpu"))
    kw = dict(kw, window=torch.ones(16))
    _close(torch.stft(xc.to("tpu"), **kw_t), torch.stft(xc, **kw))
    assert torch_pjrt.fallbacks() == {}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_raises_like_cpu(dtype):
    x = torch.randn(8).to(dtype)
    with pytest.raises(RuntimeError, match="Unsupported dtype"):
        F.fft(x)
    with pytest.raises(RuntimeError, match="Unsupported dtype"):
        F.fft(x.to("tpu"))
    with pytest.raises(RuntimeError, match="doesn't support tensors of type"):
        torch._fft_r2c(x.to("tpu"), [0], 0, True)


def test_bad_arguments_raise_like_cpu():
    x = torch.randn(4, device="tpu")
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\)"):
        F.fft(torch.randn(0, device="tpu"))
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\)"):
        F.rfft(x, n=0)
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(-1\)"):
        F.irfft(x.to(torch.complex64), n=-1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.fft(x, dim=3)


def test_out_of_contract_c2r_size_runs_cpu_kernel_counted():
    # _fft_c2r with more bins than last_dim_size / 2 + 1: CPU's kernel has a
    # behaviour of its own; it runs there, counted, rather than approximated
    c = torch.tensor([1 + 1j, 2 + 3j, 4 + 5j], dtype=torch.complex64)
    torch_pjrt.reset_fallbacks()
    r = torch._fft_c2r(c.to("tpu"), [0], 0, 2)
    assert r.device.type == "tpu"
    torch.testing.assert_close(r.cpu(), torch._fft_c2r(c, [0], 0, 2))
    assert torch_pjrt.fallbacks() == {"aten::_fft_c2r": 1}


def test_compiled_graph_runs_fft_without_splits():
    def f(x):
        return F.irfft(F.rfft(x, norm="ortho") * 2, n=x.shape[-1]).sum(-1)

    x = torch.randn(3, 10)
    torch_pjrt.reset_metrics()
    r = torch.compile(f, backend="tpu")(x.to("tpu"))
    _close(r, f(x))
    m = torch_pjrt.metrics()
    assert m["graph_runs"] == 1 and m["graph_splits"] == 0 and m["graph_eager"] == 0
    assert torch_pjrt.fallbacks() == {}


def test_ihfft_backward_under_composite_compliance_subclass():
    # The Conjugate-key kernels took a wrapper subclass on tpu (no storage of
    # its own) straight to the tpu kernel: "tpu storage has no box". They now
    # leave subclasses to their __torch_dispatch__, as PyTorch's fallback does.
    from torch.testing._internal import composite_compliance
    from torch.testing._internal.common_methods_invocations import op_db

    for name in ("fft.ihfft", "fft.hfft"):
        op = next(o for o in op_db if o.name == name)
        n = 0
        for s in op.sample_inputs("tpu", torch.float64, requires_grad=True):
            composite_compliance.check_backward_formula(
                op.get_op(), (s.input,) + tuple(s.args), s.kwargs, s.output_process_fn_grad,
                op.gradcheck_wrapper, torch.testing.assert_close)
            # and the gradient is CPU's
            x = s.input.detach().cpu().requires_grad_(True)
            xt = s.input.detach().clone().requires_grad_(True)
            want = torch.autograd.grad(op.get_op()(x, *s.args, **s.kwargs).abs().sum(), x)[0]
            got = torch.autograd.grad(op.get_op()(xt, *s.args, **s.kwargs).abs().sum(), xt)[0]
            torch.testing.assert_close(got.cpu(), want, rtol=1e-7, atol=1e-9)
            n += 1
            if n == 4:
                break
        assert n > 0
