"""PyTorch's own device-generic test machinery, instantiated for tpu.

`instantiate_device_type_tests` with PrivateUse1TestBase turns each test
template below into one test per OpInfo of op_db (and dtype) for the tpu
device, exactly as PyTorch's test suite does for cuda. The class is named
TestCommon and two templates test_compare_cpu and
test_noncontiguous_samples, as upstream's, so the skips and expected failures
that op_db itself declares for those tests (DecorateInfo('TestCommon', ...))
apply here too. The error test has its own name: it skips the expectations
CPU itself does not meet, where upstream's xfails would misfire.

  test_compare_cpu            every reference input of the op gives CPU's answer
                              (float32; upstream's tolerance atol=rtol=1e-3)
  test_errors_match_cpu       every error input that makes CPU raise raises the
                              same exception type and message on tpu (op_db's
                              expectations, checked against CPU first)
  test_noncontiguous_samples  non-contiguous inputs give the contiguous answer

It is the upstream-shaped view of what `python tools/conformance.py`
sweeps in more depth (eight dtypes, gradients, the fallback report). Run by
hand; docs/COVERAGE.md gives the last pass counts and the command:

    .venv/bin/python -m pytest -q tests/opinfo -p no:cacheprovider
"""
import os

os.environ.setdefault("TORCH_PJRT_FALLBACK", "allow")

import pytest  # noqa: E402
import torch  # noqa: E402
from torch.testing._internal.common_device_type import (  # noqa: E402
    OpDTypes,
    instantiate_device_type_tests,
    ops,
)
from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402
from torch.testing._internal.common_utils import TestCase, run_tests  # noqa: E402

import torch_pjrt  # noqa: E402,F401  (registers the tpu device)

# Ops whose results are random draws: two runs never agree, on any device.
_RANDOM = {op.name for op in op_db if "random" in (op.name + op.variant_test_name)
           or op.name in ("bernoulli", "multinomial", "normal", "rand_like", "randint_like",
                          "randn_like", "nn.functional.dropout", "nn.functional.alpha_dropout",
                          "nn.functional.feature_alpha_dropout", "nn.functional.dropout2d",
                          "nn.functional.dropout3d", "nn.functional.rrelu", "uniform",
                          "exponential", "geometric", "log_normal", "cauchy")}
_COMPARABLE = [op for op in op_db if op.name not in _RANDOM]


# Error inputs tpu does not yet answer like CPU, and why.
_KNOWN_ERRORS = {
    # the generators build a rank-25..65 tensor on the device; tpu tensors
    # have at most 16 dims (TPJ_MAX_DIMS) and the ops say so instead
    "amax": "rank > 16", "amin": "rank > 16", "aminmax": "rank > 16", "median": "rank > 16",
    # out= forms that run CPU's kernel on copies: an out that overlaps an
    # input is no longer the same memory there, so CPU's overlap check passes
    "cat": "out= overlap through the CPU fallback",
    "index_select": "out= overlap through the CPU fallback",
    "take": "out= overlap through the CPU fallback",
}


def _to_cpu(x):
    return x.detach().cpu().requires_grad_(x.requires_grad) if isinstance(x, torch.Tensor) else x


class TestCommon(TestCase):
    exact_dtype = True

    @ops(_COMPARABLE, allowed_dtypes=(torch.float32,))
    def test_compare_cpu(self, device, dtype, op):
        for sample in op.reference_inputs(device, dtype):
            cpu_sample = sample.transform(_to_cpu)
            got = sample.output_process_fn_grad(op(sample.input, *sample.args, **sample.kwargs))
            want = cpu_sample.output_process_fn_grad(
                op(cpu_sample.input, *cpu_sample.args, **cpu_sample.kwargs))
            self.assertEqual(got, want, atol=1e-3, rtol=1e-3, exact_device=False)

    @ops([op for op in op_db if op.error_inputs_func is not None], dtypes=OpDTypes.none)
    def test_errors_match_cpu(self, device, op):
        if op.name in _KNOWN_ERRORS and not os.environ.get("TPJ_IGNORE_KNOWN"):
            pytest.xfail(_KNOWN_ERRORS[op.name])
        # What CPU raises, matched to the tpu inputs by expectation (some
        # generators yield extra inputs for CPU only).
        cpu = []
        for ei in op.error_inputs("cpu"):
            si = ei.sample_input
            try:
                op(si.input, *si.args, **si.kwargs)
                raised = False
            except ei.error_type:
                raised = True
            cpu.append((ei.error_type, ei.error_regex, raised))
        pos = 0
        for ei in op.error_inputs(device):
            on_cpu = False
            for k in range(pos, len(cpu)):
                if cpu[k][:2] == (ei.error_type, ei.error_regex):
                    on_cpu, pos = cpu[k][2], k + 1
                    break
            if not on_cpu:  # an expectation CPU itself does not meet
                continue
            si = ei.sample_input
            with self.assertRaisesRegex(ei.error_type, ei.error_regex):
                out = op(si.input, *si.args, **si.kwargs)
                # an error found on the device surfaces at the next wait
                if isinstance(out, torch.Tensor):
                    out.cpu()

    @ops(_COMPARABLE, allowed_dtypes=(torch.float32,))
    def test_noncontiguous_samples(self, device, dtype, op):
        for sample in op.sample_inputs(device, dtype, requires_grad=False):
            nc = sample.noncontiguous()
            want = sample.output_process_fn_grad(op(sample.input, *sample.args, **sample.kwargs))
            got = nc.output_process_fn_grad(op(nc.input, *nc.args, **nc.kwargs))
            self.assertEqual(got, want, atol=1e-5, rtol=1e-5)


instantiate_device_type_tests(TestCommon, globals(), only_for="privateuse1")

if __name__ == "__main__":
    run_tests()
