"""torch.profiler on tpu: every tpu op shows up by name with its device
time (Kineto: a tpu kernel per launch, linked to its op; legacy: device
events around each op), and the chrome trace is valid JSON."""
import json

import torch
from torch.profiler import ProfilerActivity, profile, record_function


def _work():
    x = torch.randn(32, 32, device="tpu")
    y = torch.relu(x @ x + 1)
    return y.sum().item()


def _names(prof):
    return {e.key for e in prof.key_averages()}


def test_profile_cpu_and_privateuse1_records_tpu_ops(tmp_path, no_leaks):
    _work()  # compile outside the profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        with record_function("my_region"):
            _work()
    names = _names(prof)
    for op in ("aten::mm", "aten::add", "aten::relu", "aten::sum", "my_region"):
        assert op in names, (op, sorted(names))
    mm = [e for e in prof.events() if e.name == "aten::mm"]
    assert any(e.device_type == torch.autograd.DeviceType.CPU for e in mm)
    # one device kernel per launch, on the tpu, linked to its op
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.PrivateUse1]
    assert {"aten::mm", "aten::relu"} <= {e.name for e in kernels}, [e.name for e in kernels]
    assert all(e.device_time_total >= 0 for e in kernels)
    # A 32x32 matmul or relu can finish within the clock's microsecond, so one
    # kernel's time may round to 0; the ops' kernels together cannot.
    ops = ("aten::mm", "aten::add", "aten::relu", "aten::sum")
    assert sum(e.device_time_total for e in prof.key_averages() if e.key in ops) > 0
    avg = {e.key: e for e in prof.key_averages()}
    assert avg["my_region"].device_time_total > 0
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    traced = {ev.get("name") for ev in trace["traceEvents"]}
    assert {"aten::mm", "aten::relu", "my_region"} <= traced
    dev = [ev for ev in trace["traceEvents"] if ev.get("cat") == "kernel"]
    assert {"aten::mm", "aten::relu"} <= {ev["name"] for ev in dev}
    assert all(ev["dur"] >= 0 and ev["pid"] == 0 for ev in dev)


def test_cpu_only_profile_has_no_device_events(no_leaks):
    _work()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        _work()
    assert "aten::mm" in _names(prof)
    assert all(e.device_type == torch.autograd.DeviceType.CPU for e in prof.events())


def test_profile_on_second_device(no_leaks):
    with torch.tpu.device(1):
        _work()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
            _work()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.PrivateUse1]
    assert kernels and all(e.device_index == 1 for e in kernels)


def test_profile_use_device_tpu(no_leaks):
    _work()
    with torch.autograd.profiler.profile(use_device="tpu") as prof:
        _work()
    assert "aten::mm" in {e.key for e in prof.key_averages()}


def test_legacy_profiler_reports_device_time(no_leaks):
    # Without Kineto the profiler times each op on the device through the
    # PrivateUse1 stubs (csrc/device/profiler.cpp): tpu events around every op.
    # The input is made and finished before the profiled ops: a device
    # event's time is when the host saw the work finish, and PJRT may report
    # a slow producer's completion only after its consumers' (they run in its
    # completion callbacks), which would put every op's start and end event
    # at that one late time (0 device time for each).
    x = torch.randn(256, 256, device="tpu")
    torch.tpu.synchronize()

    def work():  # a matmul long enough (~0.1 ms) to time on the host's clock
        return torch.relu(x @ x + 1).sum().item()

    work()
    with torch.autograd.profiler.profile(use_device="tpu", use_kineto=False) as prof:
        work()
    avg = {e.key: e for e in prof.key_averages()}
    ops = ("aten::mm", "aten::relu", "aten::add")
    for op in ops:
        assert op in avg, (op, sorted(avg))
        assert avg[op].device_time_total >= 0, op
    # A tiny add or relu can take under the 1 us resolution, and a device
    # event's time is when the host saw the work finish; together with the
    # matmul they cannot all be 0 if device time is recorded at all.
    assert sum(avg[op].device_time_total for op in ops) > 0
    assert "TPU total" in prof.key_averages().table(row_limit=5)
