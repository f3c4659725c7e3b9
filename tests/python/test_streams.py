"""torch.Stream / torch.Event on tpu, torch.tpu.Stream / Event, and the
stream context managers. Results never depend on streams (PJRT orders a
device's work by data dependency); what a stream changes is which work
synchronize() and query() cover, and an event marks its stream's work."""
import pytest
import torch

import torch_pjrt


def _heavy(device="tpu"):
    a = torch.randn(384, 384, device=device)
    for _ in range(6):
        a = a @ a
        a = a / a.abs().amax()
    return a


def test_torch_stream_on_tpu(no_leaks):
    s = torch.Stream(device="tpu")
    assert s.device == torch.device("tpu:0")
    assert s.stream_id != 0
    assert torch.Stream(device="tpu").stream_id != s.stream_id
    assert torch.Stream(device="tpu:1").device_index == 1
    d = torch.tpu.default_stream()
    assert d.stream_id == 0 and isinstance(d, torch.tpu.Stream)
    assert torch.tpu.current_stream() == d


def test_stream_context_sets_current_stream(no_leaks):
    s = torch.tpu.Stream()
    assert isinstance(s, torch.Stream)
    with torch.tpu.stream(s):
        assert torch.tpu.current_stream() == s
        assert torch.accelerator.current_stream() == s
        x = torch.arange(10.0, device="tpu") * 2 + 1
    assert torch.tpu.current_stream() == torch.tpu.default_stream()
    s.synchronize()
    assert s.query()
    torch.testing.assert_close(x.cpu(), torch.arange(10.0) * 2 + 1, atol=0, rtol=0)


def test_stream_on_other_device_switches_device(no_leaks):
    s1 = torch.tpu.Stream(1)
    with torch.tpu.stream(s1):
        assert torch.tpu.current_device() == 1
        assert torch.tpu.current_stream() == s1
        y = torch.ones(3, device="tpu")
    assert y.device == torch.device("tpu:1")
    assert torch.tpu.current_device() == 0
    assert torch.tpu.current_stream(1).stream_id == 0


def test_accelerator_set_stream(no_leaks):
    s = torch.Stream(device="tpu")
    prev = torch.accelerator.current_stream()
    try:
        torch.accelerator.set_stream(s)
        assert torch.accelerator.current_stream() == s
    finally:
        torch.accelerator.set_stream(prev)
    assert torch.accelerator.current_stream().stream_id == 0


def test_event_marks_only_its_streams_work(no_leaks):
    # Work pending on stream a is not work of stream b: b's event and b
    # itself are done at once, whatever a is doing.
    a, b = torch.tpu.Stream(), torch.tpu.Stream()
    with torch.tpu.stream(a):
        big = _heavy()
    eb = torch.Event(device="tpu")
    eb.record(b)
    assert eb.query()
    assert b.query()
    ea = a.record_event()
    ea.synchronize()
    assert ea.query() and a.query()
    assert torch.isfinite(big).all().item()


def test_event_timing(no_leaks):
    for make in (lambda: torch.Event(device="tpu", enable_timing=True),
                 lambda: torch.tpu.Event(enable_timing=True)):
        start, end = make(), make()
        start.record()
        y = _heavy()
        end.record()
        end.synchronize()
        assert end.query() and start.query()
        ms = start.elapsed_time(end)
        assert isinstance(ms, float) and ms >= 0.0
        assert isinstance(end, torch.tpu.Event) and isinstance(end, torch.Event)
        assert end.elapsed_time(start) == pytest.approx(-ms)
        assert y.shape == (384, 384)


def test_event_errors(no_leaks):
    untimed = torch.Event(device="tpu")
    timed = torch.Event(device="tpu", enable_timing=True)
    timed2 = torch.Event(device="tpu", enable_timing=True)
    assert untimed.query()  # never recorded: nothing to wait for, as on CUDA
    untimed.synchronize()
    timed.record()
    with pytest.raises(ValueError, match="Both events must be recorded"):
        timed.elapsed_time(timed2)
    untimed.record()
    with pytest.raises(ValueError, match="enable_timing=True"):
        timed.elapsed_time(untimed)


def test_wait_event_orders_consumers(no_leaks):
    # Producer on one stream, consumer on another after wait_event: the
    # consumer sees the producer's values (compared with the CPU).
    prod, cons = torch.tpu.Stream(), torch.tpu.Stream()
    cpu = torch.randn(64, 64)
    with torch.tpu.stream(prod):
        x = cpu.to("tpu")
        x = x @ x + 1
        done = torch.tpu.Event()
        done.record()
    cons.wait_event(done)
    cons.wait_stream(prod)
    with torch.tpu.stream(cons):
        y = x.relu() * 2
    cons.synchronize()
    torch.testing.assert_close(y.cpu(), (cpu @ cpu + 1).relu() * 2, atol=1e-4, rtol=1e-4)
    ev = torch.Event(device="tpu")
    ev.record(prod)
    ev.wait(cons)
    torch.tpu.synchronize()
    assert prod.query() and cons.query()


def test_event_record_on_other_devices_stream_raises(no_leaks):
    ev = torch.Event(device="tpu")
    ev.record(torch.tpu.Stream(0))
    with pytest.raises(RuntimeError, match="Event device"):
        ev.record(torch.tpu.Stream(1))


def test_record_stream_is_native(no_leaks):
    torch_pjrt.reset_fallbacks()
    s = torch.tpu.Stream()
    with torch.tpu.stream(s):
        x = torch.ones(4, device="tpu") * 3
    x.record_stream(s)
    x.record_stream(torch.tpu.current_stream())
    assert torch_pjrt.fallbacks() == {}
    with pytest.raises(RuntimeError, match="the tensor is on tpu:0 but the stream is on tpu:1"):
        x.record_stream(torch.tpu.Stream(1))
    del x
    s.synchronize()
