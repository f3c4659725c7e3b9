"""add and mul (the first lowered ops) against PyTorch's CPU kernels: dtypes,
broadcasting, scalars, promotion, views; device checks; autograd; the
executable cache; the CPU fallback and its strict mode."""
import pytest
import torch

import torch_pjrt
from conftest import ALL_DTYPES, COMPLEX_DTYPES, INT_DTYPES, dtype_id, make, run_python

pytestmark = pytest.mark.usefixtures("no_leaks")

# Explicit tolerances per dtype; integers and bool are exact.
TOL = {
    torch.float16: dict(rtol=1e-3, atol=1e-3),
    torch.bfloat16: dict(rtol=8e-3, atol=8e-3),
    torch.float32: dict(rtol=1.3e-6, atol=1e-5),
    torch.float64: dict(rtol=1e-12, atol=1e-12),
    torch.complex64: dict(rtol=1.3e-6, atol=1e-5),
    torch.complex128: dict(rtol=1e-12, atol=1e-12),
}


def check(actual: torch.Tensor, expected: torch.Tensor):
    """actual (tpu) matches expected (cpu): device type, dtype, shape, values."""
    assert actual.device.type == "tpu", actual.device
    assert actual.dtype == expected.dtype, f"{actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{tuple(actual.shape)} != {tuple(expected.shape)}"
    tol = TOL.get(expected.dtype, dict(rtol=0, atol=0))
    torch.testing.assert_close(actual.cpu(), expected, equal_nan=True, **tol)


def operands(dtype, shape_a, shape_b, seed=0):
    """Moderate values (no overflow for any dtype, products exact enough)."""
    def one(shape, s):
        if dtype == torch.bool:
            return make(dtype, shape, seed=s)
        if dtype in INT_DTYPES:
            lo = 0 if dtype == torch.uint8 else -11
            g = torch.Generator().manual_seed(s)
            return torch.randint(lo, 12, shape, generator=g).to(dtype)
        x = make(dtype, shape, seed=s, specials=False)
        return (x.to(torch.complex128 if dtype in COMPLEX_DTYPES else torch.float64) / 10).to(dtype)
    return one(shape_a, seed), one(shape_b, seed + 100)


OPS = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
}
OP = pytest.mark.parametrize("op", list(OPS), ids=list(OPS))
DT = pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)


# ---- same shapes, every dtype -------------------------------------------------

@OP
@DT
def test_same_shape(op, dtype):
    a, b = operands(dtype, (4, 5), (4, 5))
    f = OPS[op]
    check(f(a.to("tpu"), b.to("tpu")), f(a, b))


@OP
@DT
def test_on_second_device(op, dtype):
    a, b = operands(dtype, (3, 3), (3, 3), seed=1)
    f = OPS[op]
    r = f(a.to("tpu:1"), b.to("tpu:1"))
    assert r.device == torch.device("tpu:1")
    check(r, f(a, b))


@DT
def test_torch_functions_and_out_of_place_methods(dtype):
    a, b = operands(dtype, (6,), (6,), seed=2)
    ta, tb = a.to("tpu"), b.to("tpu")
    check(torch.add(ta, tb), torch.add(a, b))
    check(torch.mul(ta, tb), torch.mul(a, b))
    check(ta.add(tb), a.add(b))
    check(ta.mul(tb), a.mul(b))


# ---- broadcasting --------------------------------------------------------------

BROADCASTS = [
    ((3, 1), (1, 4)),
    ((2, 3, 4), (4,)),
    ((2, 3, 4), (3, 1)),
    ((5,), ()),
    ((), (2, 2)),
    ((1,), (7,)),
    ((4, 1, 3), (1, 5, 1)),
]


@OP
@pytest.mark.parametrize("dtype", [torch.int32, torch.float32, torch.bfloat16, torch.complex64,
                                   torch.bool], ids=dtype_id)
@pytest.mark.parametrize("shapes", BROADCASTS, ids=[f"{a}x{b}" for a, b in BROADCASTS])
def test_broadcasting(op, dtype, shapes):
    a, b = operands(dtype, *shapes, seed=3)
    f = OPS[op]
    check(f(a.to("tpu"), b.to("tpu")), f(a, b))


def test_cpu_zero_dim_tensor_mixes_in():
    # As on CUDA, a 0-d CPU tensor acts like a scalar.
    a = make(torch.float32, (3, 4), seed=4, specials=False)
    s = torch.tensor(2.5)
    check(a.to("tpu") + s, a + s)
    check(s * a.to("tpu"), s * a)
    si = torch.tensor(3)
    ai = torch.arange(6, dtype=torch.int16)
    check(ai.to("tpu") * si, ai * si)


def test_cpu_nonscalar_operand_rejected():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.ones(3, device="tpu") + torch.ones(3)


# ---- Python scalars and alpha ---------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.uint8, torch.int32, torch.int64, torch.float16,
                                   torch.float32, torch.float64, torch.complex64], ids=dtype_id)
def test_python_scalars(dtype):
    a, _ = operands(dtype, (3, 4), (1,), seed=5)
    t = a.to("tpu")
    check(t + 1, a + 1)
    check(1 + t, 1 + a)
    check(2 * t, 2 * a)
    check(t * 3, a * 3)
    check(t + 1.5, a + 1.5)       # an int tensor promotes to the default float
    check(t * 0.5, a * 0.5)
    check(t + True, a + True)
    if dtype != torch.float16:  # float16 * complex is complex32, not a tpu dtype
        check(t * (1 + 2j), a * (1 + 2j))


def test_int_plus_float_scalar_promotes():
    a = torch.arange(5, dtype=torch.int32)
    r = a.to("tpu") + 1.5
    assert r.dtype == torch.float32
    check(r, a + 1.5)
    r = torch.arange(5, dtype=torch.int64).to("tpu") * 2.0
    assert r.dtype == torch.float32
    check(r, torch.arange(5) * 2.0)
    r = torch.tensor([True, False]).to("tpu") + 1
    assert r.dtype == torch.int64
    check(r, torch.tensor([True, False]) + 1)


@pytest.mark.parametrize("dtype", [torch.int8, torch.int32, torch.int64, torch.float32,
                                   torch.float64, torch.bfloat16, torch.complex128],
                         ids=dtype_id)
def test_alpha(dtype):
    a, b = operands(dtype, (4, 3), (4, 3), seed=6)
    ta, tb = a.to("tpu"), b.to("tpu")
    check(torch.add(ta, tb, alpha=3), torch.add(a, b, alpha=3))
    check(torch.add(ta, tb, alpha=-2), torch.add(a, b, alpha=-2))
    check(torch.add(ta, tb, alpha=1), torch.add(a, b, alpha=1))
    check(torch.add(ta, 2, alpha=5), torch.add(a, 2, alpha=5))
    if dtype.is_floating_point or dtype.is_complex:
        check(torch.add(ta, tb, alpha=0.25), torch.add(a, b, alpha=0.25))


def test_alpha_bool():
    a, b = operands(torch.bool, (8,), (8,), seed=7)
    check(torch.add(a.to("tpu"), b.to("tpu"), alpha=True), torch.add(a, b, alpha=True))


def test_alpha_float_on_int_rejected():
    with pytest.raises(RuntimeError, match="alpha"):
        torch.add(torch.ones(2, dtype=torch.int32, device="tpu"),
                  torch.ones(2, dtype=torch.int32, device="tpu"), alpha=1.5)


# ---- type promotion ------------------------------------------------------------

PROMOTIONS = [
    (torch.int32, torch.float16),
    (torch.bool, torch.bool),
    (torch.uint8, torch.int8),
    (torch.int64, torch.float32),
    (torch.int16, torch.int64),
    (torch.bfloat16, torch.float16),
    (torch.float32, torch.float64),
    (torch.bool, torch.uint8),
    (torch.float32, torch.complex64),
    (torch.float64, torch.complex64),
    (torch.int8, torch.bfloat16),
    (torch.uint8, torch.bool),
]


@OP
@pytest.mark.parametrize("dta,dtb", PROMOTIONS,
                         ids=[f"{dtype_id(a)}-{dtype_id(b)}" for a, b in PROMOTIONS])
def test_type_promotion(op, dta, dtb):
    a, _ = operands(dta, (3, 4), (1,), seed=8)
    b, _ = operands(dtb, (3, 4), (1,), seed=9)
    f = OPS[op]
    expected = f(a, b)
    r = f(a.to("tpu"), b.to("tpu"))
    assert r.dtype == expected.dtype == torch.result_type(a, b)
    check(r, expected)


def test_zero_dim_tensor_promotion():
    # A 0-d tensor of a higher category still promotes; same category does not.
    a = torch.arange(4, dtype=torch.int8)
    s = torch.tensor(100, dtype=torch.int64)
    check(a.to("tpu") + s.to("tpu"), a + s)
    f = torch.tensor(0.5, dtype=torch.float64)
    check(a.to("tpu") * f.to("tpu"), a * f)
    h = torch.ones(3, dtype=torch.float16)
    check(h.to("tpu") + f.to("tpu"), h + f)


# ---- non-contiguous operands ------------------------------------------------------

@OP
@pytest.mark.parametrize("dtype", [torch.int64, torch.float32, torch.float64, torch.complex64],
                         ids=dtype_id)
def test_noncontiguous_operands(op, dtype):
    f = OPS[op]
    a, b = operands(dtype, (6, 8), (8, 6), seed=10)
    ta, tb = a.to("tpu"), b.to("tpu")
    check(f(ta, tb.t()), f(a, b.t()))                                # transposed
    check(f(ta[::2], tb.t()[1::2]), f(a[::2], b.t()[1::2]))          # stepped slices
    check(f(ta[:, 1::3], tb[2:5].t()[:, :3]),                        # column steps
          f(a[:, 1::3], b[2:5].t()[:, :3]))
    check(f(ta[2], tb[:, 3]), f(a[2], b[:, 3]))                      # row and column
    check(f(ta[:1].expand(6, 8), ta), f(a[:1].expand(6, 8), a))      # stride-0 expand
    check(f(ta.t().contiguous(), tb), f(a.t().contiguous(), b))
    p, q = operands(dtype, (2, 3, 4), (4, 2, 3), seed=11)
    check(f(p.to("tpu").permute(2, 0, 1), q.to("tpu")), f(p.permute(2, 0, 1), q))
    c, d = operands(dtype, (2, 3, 4, 5), (2, 3, 4, 5), seed=12)
    cl = c.contiguous(memory_format=torch.channels_last).to("tpu")
    check(f(cl, d.to("tpu")), f(c, d))


def test_result_of_view_inputs_is_fresh():
    a = torch.arange(12, dtype=torch.float32).view(3, 4)
    t = a.to("tpu")
    r = t[1:] + 1
    r.fill_(0)
    assert torch.equal(t.cpu(), a)  # the input was not aliased by the output


# ---- 0-d and zero-element ---------------------------------------------------------

@OP
@DT
def test_zero_dim(op, dtype):
    a, b = operands(dtype, (), (), seed=13)
    f = OPS[op]
    r = f(a.to("tpu"), b.to("tpu"))
    assert r.dim() == 0
    check(r, f(a, b))


@OP
@pytest.mark.parametrize("dtype", [torch.bool, torch.int32, torch.float32, torch.complex128],
                         ids=dtype_id)
@pytest.mark.parametrize("shapes", [((0,), (0,)), ((3, 0), (3, 0)), ((3, 0), (1,)), ((0,), ())],
                         ids=str)
def test_zero_elements(op, dtype, shapes):
    a, b = operands(dtype, *shapes, seed=14)
    f = OPS[op]
    check(f(a.to("tpu"), b.to("tpu")), f(a, b))


# ---- inplace and out= (reach add/mul through other overloads) ---------------------

@pytest.mark.parametrize("dtype", [torch.int32, torch.float32, torch.complex64], ids=dtype_id)
def test_inplace_and_out(dtype):
    a, b = operands(dtype, (4, 4), (4, 4), seed=15)
    ta, tb = a.to("tpu"), b.to("tpu")
    ta.add_(tb)
    check(ta, a + b)
    ta = a.to("tpu")
    ta[1:3].mul_(tb[1:3])
    e = a.clone()
    e[1:3].mul_(b[1:3])
    check(ta, e)
    out = torch.empty(4, 4, dtype=dtype, device="tpu")
    torch.add(a.to("tpu"), tb, alpha=2, out=out)
    check(out, torch.add(a, b, alpha=2))


# ---- devices ---------------------------------------------------------------------

@OP
def test_mixed_devices_rejected(op):
    a = torch.ones(3, device="tpu:0")
    b = torch.ones(3, device="tpu:1")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        OPS[op](a, b)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        OPS[op](b, a)


def test_result_on_operand_device_not_current():
    a = torch.arange(4.0)
    t = a.to("tpu:1")
    with torch.tpu.device(0):
        r = t + t
    assert r.device == torch.device("tpu:1")
    check(r, a + a)


# ---- autograd ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=dtype_id)
def test_autograd_add_mul(dtype):
    a0, b0 = operands(dtype, (3, 4), (3, 4), seed=16)
    ac, bc = a0.clone().requires_grad_(), b0.clone().requires_grad_()
    (ac * bc + ac).sum().backward()

    at = a0.to("tpu").requires_grad_()
    bt = b0.to("tpu").requires_grad_()
    assert at.is_leaf and bt.is_leaf
    loss = (at * bt + at).sum()
    assert loss.device.type == "tpu"
    loss.backward()
    assert at.grad is not None and bt.grad is not None
    check(at.grad, ac.grad)
    check(bt.grad, bc.grad)
    torch.testing.assert_close(loss.detach().cpu(), (a0 * b0 + a0).sum(), **TOL[dtype])


def test_autograd_broadcast_and_scalar():
    a0 = make(torch.float32, (3, 1), seed=17, specials=False)
    b0 = make(torch.float32, (1, 4), seed=18, specials=False)
    ac, bc = a0.clone().requires_grad_(), b0.clone().requires_grad_()
    (torch.add(ac * 2, bc, alpha=3) * bc).sum().backward()
    at, bt = a0.to("tpu").requires_grad_(), b0.to("tpu").requires_grad_()
    (torch.add(at * 2, bt, alpha=3) * bt).sum().backward()
    check(at.grad, ac.grad)
    check(bt.grad, bc.grad)


# ---- executable cache -------------------------------------------------------------

def test_same_op_and_shapes_do_not_recompile():
    a = make(torch.float32, (13, 17), seed=19, specials=False).to("tpu")
    b = make(torch.float32, (13, 17), seed=20, specials=False).to("tpu")
    torch.tpu.synchronize()
    (a + b).cpu()
    (a * b).cpu()
    m0 = torch_pjrt.metrics()
    for _ in range(3):
        r = a + b
        s = a * b
    torch.tpu.synchronize()
    m1 = torch_pjrt.metrics()
    assert m1["compiles"] == m0["compiles"], (m0, m1)
    assert m1["cache_hits"] >= m0["cache_hits"] + 6, (m0, m1)
    assert m1["executions"] >= m0["executions"] + 6, (m0, m1)
    # fresh tensors with the same signature hit the cache too
    c = make(torch.float32, (13, 17), seed=21, specials=False).to("tpu")
    m2 = torch_pjrt.metrics()
    check(c + a, c.cpu() + a.cpu())
    assert torch_pjrt.metrics()["compiles"] == m2["compiles"]
    del r, s


@pytest.mark.parametrize("dtype,vals", [(torch.float32, (1, 2, -7)),
                                        (torch.float32, (1.5, 2.25, -0.125)),
                                        (torch.int32, (1, 2, 100))],
                         ids=["float-int", "float-float", "int-int"])
def test_scalar_value_change_does_not_recompile(dtype, vals):
    x0 = operands(dtype, (7, 3), (1,), seed=22)[0]
    x = x0.to("tpu")
    check(x + vals[0], x0 + vals[0])
    check(x * vals[0], x0 * vals[0])
    check(torch.add(x, x, alpha=vals[0] + 1), torch.add(x0, x0, alpha=vals[0] + 1))
    m0 = torch_pjrt.metrics()
    for v in vals[1:]:
        check(x + v, x0 + v)
        check(x * v, x0 * v)
        check(torch.add(x, x, alpha=v + 1), torch.add(x0, x0, alpha=v + 1))
    m1 = torch_pjrt.metrics()
    assert m1["compiles"] == m0["compiles"], (m0, m1)


def test_new_shape_compiles_once():
    x = torch.ones(29, 31, device="tpu")
    m0 = torch_pjrt.metrics()
    y = x + x
    m1 = torch_pjrt.metrics()
    assert m1["cache_misses"] >= m0["cache_misses"] + 1  # a never-seen signature
    check(y, torch.full((29, 31), 2.0))
    check(x + x, torch.full((29, 31), 2.0))
    assert torch_pjrt.metrics()["compiles"] == m1["compiles"]


# ---- CPU fallback ------------------------------------------------------------------

def _count(prefix):
    return sum(v for k, v in torch_pjrt.fallbacks().items() if k.split(".")[0] == prefix)


def _unlowered(t):
    # SVD stays on the CPU by design (docs/ARCHITECTURE.md): a counted fallback
    return torch.linalg.svdvals(t)


def test_fallback_recorded_and_correct():
    x0 = make(torch.float32, (5, 4), seed=23, specials=False)
    x = x0.to("tpu")
    torch_pjrt.reset_fallbacks()
    assert _count("aten::_linalg_svd") == 0
    r = _unlowered(x)
    assert r.device == x.device
    n1 = _count("aten::_linalg_svd")
    assert n1 >= 1, torch_pjrt.fallbacks()
    check(r, _unlowered(x0))
    _unlowered(x)
    assert _count("aten::_linalg_svd") == 2 * n1
    # on a non-contiguous view, and on the second device
    check(_unlowered(x.t()[1:]), _unlowered(x0.t()[1:]))
    r1 = _unlowered(x0.to("tpu:1"))
    assert r1.device == torch.device("tpu:1")
    check(r1, _unlowered(x0))
    torch_pjrt.reset_fallbacks()
    assert torch_pjrt.fallbacks() == {}


def test_fallbacks_do_not_count_lowered_ops():
    x = torch.ones(4, device="tpu")
    torch_pjrt.reset_fallbacks()
    y = x + x
    z = y * 3
    torch.tpu.synchronize()
    fb = torch_pjrt.fallbacks()
    assert not any(k.startswith(("aten::add", "aten::mul")) for k in fb), fb
    assert "aten::add.Tensor" in torch_pjrt.lowered_ops()
    assert "aten::mul.Tensor" in torch_pjrt.lowered_ops()
    del z


def test_fallback_inplace_writes_back():
    x0 = make(torch.float32, (4, 6), seed=24, specials=False)
    x = x0.to("tpu")
    v = x[:, 1::2]
    v.sin_()
    e = x0.clone()
    e[:, 1::2].sin_()
    check(x, e)


def test_fallback_error_mode_in_subprocess():
    code = ("import torch\n"
            "x = torch.ones(3, device='tpu')\n"
            "print('add ok', (x + x).cpu().tolist())\n"
            "try:\n"
            "    torch.linalg.svdvals(x.unsqueeze(0))\n"
            "except NotImplementedError as e:\n"
            "    print('NotImplementedError:', str(e).splitlines()[0])\n"
            "except Exception as e:\n"
            "    print('OTHER', type(e).__name__, e)\n"
            "else:\n"
            "    print('NO ERROR')\n")
    r = run_python(code, env_update={"TORCH_PJRT_FALLBACK": "error"})
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.splitlines()
    assert lines[0] == "add ok [2.0, 2.0, 2.0]", r.stdout
    assert lines[1].startswith("NotImplementedError:"), r.stdout
    assert "aten::_linalg_svd" in lines[1]
    assert "TORCH_PJRT_FALLBACK" in lines[1]
