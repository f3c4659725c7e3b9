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
