"""Tensors the tpu device does not hold, and misuse: each must fail with a
Python exception whose message names the problem (the layout, the dtype),
never with a crash or a dispatcher message about internal kernels."""
import warnings

import pytest
import torch

from conftest import run_python

pytestmark = pytest.mark.usefixtures("no_leaks")

# What a clear refusal looks like: NotImplementedError (PyTorch's convention
# for "this backend lacks it") or RuntimeError, naming the kind of tensor and
# saying tpu does not support it.
REFUSED = (NotImplementedError, RuntimeError)


def _quantized():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.quantize_per_tensor(torch.tensor([0.5, -1.0]), 0.1, 0, torch.quint8)


# Sparse tensors on tpu (COO, and CSR structure): tests/python/test_sparse.py.


def test_quantized_to_tpu():
    q = _quantized()
    with pytest.raises(REFUSED) as ei:
        q.to("tpu")
    msg = str(ei.value)
    assert "quantized" in msg.lower(), msg
    assert "not supported on tpu" in msg, msg


# uint16/32/64 and complex32 are held on tpu (test_dtypes_storage.py).
@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2],
                         ids=lambda d: str(d).replace("torch.", ""))
def test_unsupported_dtype_empty(dtype):
    name = {torch.float8_e4m3fn: "Float8_e4m3fn", torch.float8_e5m2: "Float8_e5m2"}[dtype]
    with pytest.raises(NotImplementedError) as ei:
        torch.empty(2, dtype=dtype, device="tpu")
    msg = str(ei.value)
    assert name in msg and "not supported on tpu" in msg, msg


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2],
                         ids=lambda d: str(d).replace("torch.", ""))
def test_unsupported_dtype_transfer_and_conversion(dtype):
    name = {torch.float8_e4m3fn: "Float8_e4m3fn", torch.float8_e5m2: "Float8_e5m2"}[dtype]
    with pytest.raises(NotImplementedError, match=f"{name}.*not supported on tpu"):
        torch.zeros(2, dtype=dtype).to("tpu")
    with pytest.raises(NotImplementedError, match=f"{name}.*not supported on tpu"):
        torch.zeros(2, device="tpu").to(dtype)
    with pytest.raises(NotImplementedError, match=f"{name}.*not supported on tpu"):
        torch.zeros(2, dtype=dtype, device="tpu")


def test_numpy_of_tpu_tensor():
    # PyTorch's own message for a non-CPU tensor, as for CUDA.
    with pytest.raises(TypeError, match=r"can't convert tpu:0 device type tensor to numpy"):
        torch.ones(2, device="tpu").numpy()
    with pytest.raises(TypeError, match=r"tpu:1 device type tensor"):
        torch.ones(2, device="tpu:1").numpy()
    # and the CPU copy works
    assert torch.ones(2, device="tpu").cpu().numpy().tolist() == [1.0, 1.0]


def test_pin_memory_on_tpu_empty():
    with pytest.raises(RuntimeError, match="only CPU tensors can be pinned"):
        torch.empty(2, device="tpu", pin_memory=True)
    with pytest.raises(RuntimeError, match="only CPU tensors can be pinned"):
        torch.empty_strided((2, 2), (2, 1), device="tpu", pin_memory=True)


def test_pin_memory_of_tpu_tensor():
    # PyTorch's own check: only dense CPU tensors can be pinned.
    with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
        torch.ones(2, device="tpu").pin_memory()


def test_shape_mismatch_names_sizes():
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of "
                                           r"tensor b \(4\)"):
        torch.ones(3, device="tpu") + torch.ones(4, device="tpu")
    with pytest.raises(RuntimeError, match="size"):
        torch.ones(3, device="tpu").copy_(torch.ones(4))


def test_errors_do_not_break_later_work():
    with pytest.raises(NotImplementedError):
        torch.empty(2, dtype=torch.float8_e5m2, device="tpu")
    with pytest.raises(RuntimeError):
        torch.ones(3, device="tpu") + torch.ones(4, device="tpu")
    x = torch.arange(4.0).to("tpu")
    assert torch.equal((x + x).cpu(), torch.arange(4.0) * 2)


def test_unsupported_tensors_in_subprocess_do_not_crash():
    # Whatever the message, none of these may take the interpreter down.
    code = ("import warnings, torch\n"
            "warnings.simplefilter('ignore')\n"
            "cases = {\n"
            "  'sparse': lambda: torch.eye(2).to_sparse_csr().to('tpu').sin(),\n"
            "  'quantized': lambda: torch.quantize_per_tensor(torch.ones(2), 0.1, 0,"
            " torch.quint8).to('tpu'),\n"
            "  'f8': lambda: torch.zeros(2, dtype=torch.float8_e4m3fn).to('tpu'),\n"
            "  'f8e5': lambda: torch.empty(2, dtype=torch.float8_e5m2, device='tpu'),\n"
            "}\n"
            "for k, f in cases.items():\n"
            "    try:\n"
            "        f()\n"
            "    except (NotImplementedError, RuntimeError) as e:\n"
            "        print(k, 'raised', type(e).__name__)\n"
            "    else:\n"
            "        print(k, 'NO ERROR')\n")
    r = run_python(code)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.splitlines()
    assert [ln.split()[0] for ln in lines] == ["sparse", "quantized", "f8", "f8e5"], r.stdout
    assert all(" raised " in ln for ln in lines), r.stdout


@pytest.mark.parametrize("op", [torch.remainder, torch.fmod])
@pytest.mark.parametrize("shape", [(), (3,)])
def test_complex_remainder_raises_cpu_error(op, shape):
    """XLA:CPU segfaulted compiling a complex remainder; CPU's kernels refuse
    complex inputs with NotImplementedError."""
    a = torch.ones(shape, dtype=torch.complex64)
    with pytest.raises(NotImplementedError) as cpu:
        op(a, a)
    t = a.to("tpu")
    with pytest.raises(NotImplementedError) as tpu:
        op(t, t)
    assert str(tpu.value) == str(cpu.value)
