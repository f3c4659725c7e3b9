"""torch.tpu as a device module with torch.cuda's names and return types,
and torch.accelerator answering for tpu."""
import pytest
import torch

CUDA_NAMES = [
    "is_available", "device_count", "current_device", "set_device", "device", "device_of",
    "synchronize", "memory_allocated", "max_memory_allocated", "memory_reserved",
    "max_memory_reserved", "reset_peak_memory_stats", "memory_stats", "mem_get_info",
    "empty_cache", "get_device_name", "get_device_properties", "get_device_capability",
    "Stream", "Event", "current_stream", "default_stream", "stream", "set_stream",
    "is_initialized", "init",
]


def test_cuda_names_exist():
    missing = [n for n in CUDA_NAMES if not callable(getattr(torch.tpu, n, None))]
    assert missing == []
    assert set(CUDA_NAMES) <= set(torch.tpu.__all__) | {"init"}


def test_get_device_properties():
    p = torch.tpu.get_device_properties()
    assert isinstance(p.name, str) and p.name == torch.tpu.get_device_name()
    assert isinstance(p.total_memory, int) and p.total_memory == torch.tpu.mem_get_info()[1]
    assert torch.tpu.get_device_properties("tpu:1").index == 1
    assert "total_memory=" in repr(p)
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.tpu.get_device_properties(9)


def test_get_device_capability():
    cap = torch.tpu.get_device_capability()
    assert isinstance(cap, tuple) and len(cap) == 2 and all(isinstance(v, int) for v in cap)
    acc = torch.accelerator.get_device_capability("tpu:0")
    dts = acc["supported_dtypes"]
    for dt in (torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.bool,
               torch.complex64):
        assert dt in dts
    assert torch.qint8 not in dts


def test_device_of():
    x = torch.ones(2, device="tpu:1")
    assert torch.tpu.current_device() == 0
    with torch.tpu.device_of(x):
        assert torch.tpu.current_device() == 1
        y = torch.zeros(2, device="tpu")
        assert y.device == torch.device("tpu:1")
    assert torch.tpu.current_device() == 0
    with torch.tpu.device_of(torch.ones(2)):  # a CPU tensor changes nothing
        assert torch.tpu.current_device() == 0


def test_accelerator_answers_for_tpu():
    assert torch.accelerator.current_accelerator() == torch.device("tpu")
    assert torch.accelerator.is_available()
    assert torch.accelerator.device_count() == torch.tpu.device_count() == 2
    try:
        torch.accelerator.set_device_index("tpu:1")
        assert torch.tpu.current_device() == torch.accelerator.current_device_index() == 1
        assert torch.ones(1, device="tpu").device.index == 1
    finally:
        torch.accelerator.set_device_index(0)
    with torch.accelerator.device_index(1):
        assert torch.tpu.current_device() == 1
    assert torch.tpu.current_device() == 0
    x = torch.arange(4.0, device="tpu") * 3
    torch.accelerator.synchronize()
    torch.accelerator.synchronize(1)
    assert torch.equal(x.cpu(), torch.arange(4.0) * 3)
    s = torch.accelerator.current_stream()
    assert s.device == torch.device("tpu:0") and s.stream_id == 0


def test_numpy_of_tpu_tensor_tells_to_copy_first():
    with pytest.raises(TypeError, match=r"can't convert tpu:0 device type tensor to numpy\. "
                                        r"Use Tensor\.cpu\(\) to copy the tensor to host memory first"):
        torch.ones(2, device="tpu").numpy()
    assert torch.ones(2, device="tpu").cpu().numpy().tolist() == [1.0, 1.0]
