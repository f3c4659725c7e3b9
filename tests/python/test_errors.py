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


def _same_error(fn, *cpu_args, match_text=True):
    """fn raises the same exception type (and text) on tpu as on the CPU."""
    with pytest.raises(Exception) as cpu:
        fn(*cpu_args)
    tpu_args = [a.to("tpu") if isinstance(a, torch.Tensor) else a for a in cpu_args]
    with pytest.raises(Exception) as tpu:
        fn(*tpu_args)
    assert type(tpu.value) is type(cpu.value), (tpu.value, cpu.value)
    if match_text:
        assert str(tpu.value) == str(cpu.value)
    return str(tpu.value), str(cpu.value)


F = torch.nn.functional
L, B = torch.long, torch.bool

# Issue 19, item 2: a dtype CPU's kernel refuses raises CPU's error on tpu
# (XLA would compute it, or fail to compile with an internal message).
REFUSED_DTYPES = {
    "mm_bool": (torch.mm, torch.ones(2, 2, dtype=B), torch.ones(2, 2, dtype=B)),
    "matmul_bool": (torch.matmul, torch.ones(2, 2, dtype=B), torch.ones(2, 2, dtype=B)),
    "bmm_bool": (torch.bmm, torch.ones(2, 2, 2, dtype=B), torch.ones(2, 2, 2, dtype=B)),
    "mv_bool": (torch.mv, torch.ones(2, 2, dtype=B), torch.ones(2, dtype=B)),
    "dot_bool": (torch.dot, torch.ones(2, dtype=B), torch.ones(2, dtype=B)),
    "addmm_bool": (torch.addmm, torch.ones(2, 2, dtype=B), torch.ones(2, 2, dtype=B),
                   torch.ones(2, 2, dtype=B)),
    "lerp_long_scalar": (lambda a, b: torch.lerp(a, b, 0.5), torch.ones(3, dtype=L),
                         torch.ones(3, dtype=L)),
    "lerp_long_tensor": (torch.lerp, torch.ones(3, dtype=L), torch.ones(3, dtype=L),
                         torch.ones(3, dtype=L)),
    "pow_negative_int": (lambda a: torch.pow(a, -1), torch.tensor([2, 3])),
    "pow_negative_uint8": (lambda a: a ** -2, torch.tensor([2, 3], dtype=torch.uint8)),
    "layer_norm_long": (lambda a: F.layer_norm(a, (3,)), torch.ones(2, 3, dtype=L)),
    "layer_norm_bool": (lambda a: F.layer_norm(a, (3,)), torch.ones(2, 3, dtype=B)),
    "layer_norm_complex": (lambda a: F.layer_norm(a, (3,)),
                           torch.ones(2, 3, dtype=torch.complex64)),
    "group_norm_long": (lambda a: F.group_norm(a, 2), torch.ones(2, 4, 3, dtype=L)),
    "batch_norm_long": (lambda a: F.batch_norm(a, None, None, training=True),
                        torch.ones(2, 4, 3, dtype=L)),
    "batch_norm_bool": (lambda a: F.batch_norm(a, None, None, training=True),
                        torch.ones(2, 4, 3, dtype=B)),
}


@pytest.mark.parametrize("case", sorted(REFUSED_DTYPES))
def test_refused_dtype_raises_cpu_error(case):
    fn, *args = REFUSED_DTYPES[case]
    _same_error(fn, *args)


def test_pow_negative_tensor_exponent_still_computes():
    # Only a negative integer *scalar* exponent is refused (CPU computes a
    # tensor exponent, and a float scalar one).
    a, e = torch.tensor([2, 3]), torch.tensor([-1, 2])
    torch.testing.assert_close(torch.pow(a.to("tpu"), e.to("tpu")).cpu(), torch.pow(a, e))
    torch.testing.assert_close(torch.pow(a.to("tpu"), -2.0).cpu(), torch.pow(a, -2.0))


# Issue 19, item 12: CPU's exception type and message.
def test_copy_shape_mismatch_message():
    _same_error(lambda d, s: d.copy_(s), torch.zeros(3, 4), torch.ones(5))
    _same_error(lambda d, s: d.copy_(s), torch.zeros(3, 1), torch.ones(3, 4))


def test_addmm_bias_of_higher_rank_raises():
    tpu, cpu = _same_error(torch.addmm, torch.zeros(2, 3, 3), torch.ones(3, 3), torch.ones(3, 3),
                           match_text=False)
    assert "the number of sizes provided (2) must be greater or equal" in tpu, tpu


def test_index_add_out_of_range_matches_cpu():
    # CPU raises IndexError for a vector self, RuntimeError naming the index
    # for higher ranks (test_ops_index.py checks the latter's text).
    for bad in (7, -1):
        _same_error(lambda s, i, v: s.index_add(0, i, v), torch.zeros(5), torch.tensor([bad]),
                    torch.ones(1))
        _same_error(lambda s, i, v: s.index_add(0, i, v), torch.zeros(5, 2), torch.tensor([bad]),
                    torch.ones(1, 2))


def test_index_select_negative_index_matches_cpu():
    _same_error(lambda s, i: s.index_select(0, i), torch.zeros(5), torch.tensor([-1]))


def test_addr_out_on_another_device_raises():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.addr(torch.zeros(2, 2, device="tpu"), torch.ones(2, device="tpu"),
                   torch.ones(2, device="tpu"), out=torch.zeros(2, 2))
    out = torch.empty(2, 2, device="tpu")
    torch.addr(torch.zeros(2, 2, device="tpu"), torch.ones(2, device="tpu"),
               torch.tensor([1.0, 2.0], device="tpu"), out=out)
    torch.testing.assert_close(out.cpu(), torch.tensor([[1.0, 2.0], [1.0, 2.0]]))


@pytest.mark.parametrize("case", ["mm_k0", "mm_m0", "bmm_k0", "mv_m0"])
def test_empty_bool_products_return_like_cpu(case):
    # CPU returns before its typed kernel when an operand is empty: no error.
    B = torch.bool
    fns = {
        "mm_k0": (torch.mm, torch.ones(1, 0, dtype=B), torch.ones(0, 2, dtype=B)),
        "mm_m0": (torch.mm, torch.ones(0, 3, dtype=B), torch.ones(3, 2, dtype=B)),
        "bmm_k0": (torch.bmm, torch.ones(2, 1, 0, dtype=B), torch.ones(2, 0, 3, dtype=B)),
        "mv_m0": (torch.mv, torch.ones(0, 2, dtype=B), torch.ones(2, dtype=B)),
    }
    fn, *args = fns[case]
    want = fn(*args)
    got = fn(*[a.to("tpu") for a in args])
    assert got.dtype == want.dtype and got.shape == want.shape
    assert torch.equal(got.cpu(), want)
