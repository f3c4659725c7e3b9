"""Helpers the op tests share: CPU's results compared with tolerances per
dtype (check_close), and a block that asserts nothing fell back to the CPU
(NativeOnly)."""
import torch

import torch_pjrt

CHECK_TOL = {
    torch.float32: dict(rtol=1e-5, atol=1e-5),
    torch.float64: dict(rtol=1e-12, atol=1e-12),
    torch.float16: dict(rtol=1e-2, atol=1e-2),
    torch.bfloat16: dict(rtol=2e-2, atol=2e-2),
    torch.complex64: dict(rtol=1e-5, atol=1e-5),
}


def check_close(actual, expected, tol=None):
    assert actual.device.type == "tpu", actual.device
    assert actual.dtype == expected.dtype, f"{actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{tuple(actual.shape)} != {tuple(expected.shape)}"
    tol = tol or CHECK_TOL.get(expected.dtype, dict(rtol=0, atol=0))
    torch.testing.assert_close(actual.detach().cpu(), expected.detach(), equal_nan=True, **tol)


class NativeOnly:
    """Asserts no op at all fell back to the CPU inside the block."""

    def __enter__(self):
        torch.tpu.synchronize()
        torch_pjrt.reset_fallbacks()
        return self

    def __exit__(self, *exc):
        torch.tpu.synchronize()
        if exc[0] is None:
            assert torch_pjrt.fallbacks() == {}, torch_pjrt.fallbacks()
        return False


def same_as_cpu(fn, tol=None):
    """fn(device) builds its inputs on that device and returns a tensor or a
    list of tensors. On tpu it gives CPU's results (device, dtype, shape,
    values within tol) natively, or raises CPU's exception type with CPU's
    first line."""
    try:
        want = fn("cpu")
    except Exception as e:  # noqa: BLE001 - the tpu run must raise the same
        want_exc = (type(e), str(e).splitlines()[0])
        e.__traceback__ = None
    else:
        want_exc = None
    try:
        with NativeOnly():
            got = fn("tpu")
    except Exception as e:  # noqa: BLE001 - compared with CPU's below
        assert want_exc is not None, f"CPU gave a result, tpu raised {type(e).__name__}: {e}"
        assert (type(e), str(e).splitlines()[0]) == want_exc, (type(e), str(e), want_exc)
        return None
    assert want_exc is None, f"CPU raised {want_exc}, tpu gave a result"
    listed = isinstance(want, (list, tuple))
    for a, w in zip(got if listed else [got], want if listed else [want]):
        check_close(a, w, tol)
    return got
