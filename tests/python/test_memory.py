"""Device memory accounting (torch.tpu.memory_* and torch.accelerator's
memory functions) and out-of-memory errors."""
import gc

import pytest
import torch

MiB = 1 << 20


def _settle():
    gc.collect()
    torch.tpu.synchronize()


def test_memory_allocated_grows_and_falls_back(no_leaks):
    _settle()
    base = torch.tpu.memory_allocated()
    x = torch.ones(MiB, dtype=torch.float32, device="tpu")  # 4 MiB
    assert torch.tpu.memory_allocated() >= base + 4 * MiB
    assert torch.tpu.memory_allocated("tpu:0") == torch.tpu.memory_allocated(0)
    assert torch.tpu.max_memory_allocated() >= base + 4 * MiB
    del x
    _settle()
    assert torch.tpu.memory_allocated() == base


def test_memory_is_counted_per_device(no_leaks):
    _settle()
    base0, base1 = torch.tpu.memory_allocated(0), torch.tpu.memory_allocated(1)
    y = torch.zeros(MiB // 2, dtype=torch.float32, device="tpu:1")
    assert torch.tpu.memory_allocated(1) >= base1 + 2 * MiB
    assert torch.tpu.memory_allocated(0) == base0
    del y
    _settle()
    assert torch.tpu.memory_allocated(1) == base1


def test_reset_peak_memory_stats(no_leaks):
    _settle()
    x = torch.ones(2 * MiB, dtype=torch.uint8, device="tpu")
    del x
    _settle()
    assert torch.tpu.max_memory_allocated() >= torch.tpu.memory_allocated() + 2 * MiB
    torch.tpu.reset_peak_memory_stats()
    assert torch.tpu.max_memory_allocated() == torch.tpu.memory_allocated()
    assert torch.tpu.max_memory_reserved() >= torch.tpu.memory_reserved()
    y = torch.ones(MiB, dtype=torch.uint8, device="tpu")
    assert torch.tpu.max_memory_allocated() >= torch.tpu.memory_allocated() >= MiB
    del y


def test_reserved_covers_allocated_and_device_buffers(no_leaks):
    _settle()
    x = torch.full((MiB,), 3.0, device="tpu")  # a written storage: 4 MiB of device buffer
    torch.tpu.synchronize()
    assert torch.tpu.memory_reserved() >= torch.tpu.memory_allocated() >= 4 * MiB
    assert torch.tpu.max_memory_reserved() >= torch.tpu.memory_reserved()
    del x


def test_memory_stats_has_cuda_keys(no_leaks):
    x = torch.ones(1000, device="tpu")
    s = torch.tpu.memory_stats()
    for key in ("active_bytes.all.current", "allocated_bytes.all.peak",
                "allocated_bytes.all.current", "allocated_bytes.all.allocated",
                "allocated_bytes.all.freed", "reserved_bytes.all.peak",
                "reserved_bytes.all.current", "allocation.all.current", "num_alloc_retries",
                "num_ooms", "requested_bytes.all.current", "segment.all.current"):
        assert key in s, key
        assert isinstance(s[key], int), (key, type(s[key]))
    assert list(s) == sorted(s)
    assert s["allocated_bytes.all.current"] == torch.tpu.memory_allocated()
    assert s["active_bytes.all.current"] == s["allocated_bytes.all.current"]
    assert s["allocated_bytes.all.allocated"] - s["allocated_bytes.all.freed"] == \
        s["allocated_bytes.all.current"]
    nested = torch.tpu.memory_stats_as_nested_dict()
    assert nested["allocated_bytes"]["all"]["current"] == s["allocated_bytes.all.current"]
    del x


def test_accelerator_memory_functions_answer_for_tpu(no_leaks):
    x = torch.ones(MiB, dtype=torch.uint8, device="tpu")
    assert torch.accelerator.memory_allocated() == torch.tpu.memory_allocated()
    assert torch.accelerator.memory_allocated(0) >= MiB
    assert torch.accelerator.max_memory_allocated() == torch.tpu.max_memory_allocated()
    assert torch.accelerator.memory_reserved() == torch.tpu.memory_reserved()
    assert torch.accelerator.memory_stats()["allocated_bytes.all.current"] == \
        torch.tpu.memory_allocated()
    torch.accelerator.reset_peak_memory_stats()
    assert torch.accelerator.max_memory_allocated() == torch.accelerator.memory_allocated()
    free, total = torch.accelerator.get_memory_info()
    assert 0 < free <= total
    torch.accelerator.empty_cache()
    del x


def test_mem_get_info_and_empty_cache():
    free, total = torch.tpu.mem_get_info()
    assert isinstance(free, int) and isinstance(total, int)
    assert 0 < free <= total
    if torch.tpu.device_count() > 1:
        assert torch.tpu.mem_get_info(1)[1] == total or torch.tpu.mem_get_info(1)[1] > 0
    torch.tpu.empty_cache()
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.tpu.mem_get_info(7)


def test_out_of_memory_raises_with_sizes(no_leaks):
    ooms = torch.tpu.memory_stats()["num_ooms"]
    before = torch.tpu.memory_allocated()
    with pytest.raises(torch.OutOfMemoryError,
                       match=r"tpu out of memory\. Tried to allocate 1\.00 PiB\. tpu 0 has a "
                             r"total capacity of .* \(requested 1125899906842624 bytes, "
                             r"available \d+ bytes\)"):
        torch.empty(2 ** 50, dtype=torch.uint8, device="tpu")
    with pytest.raises(torch.OutOfMemoryError, match="requested 4503599627370496 bytes"):
        torch.ones(2 ** 50, dtype=torch.float32, device="tpu:1")
    assert torch.tpu.memory_stats()["num_ooms"] == ooms + 2
    assert torch.tpu.memory_allocated() == before
    # The device is still usable.
    assert torch.equal((torch.ones(3, device="tpu") * 2).cpu(), torch.full((3,), 2.0))
