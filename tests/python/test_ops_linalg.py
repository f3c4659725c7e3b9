"""Linear algebra against PyTorch's CPU kernels. Matrix products: mm, bmm,
addmm, matmul, linear (dtypes, sizes, views, devices, CPU's errors,
autograd), addbmm, trace, vdot, _grouped_mm; linalg_cross, matrix_exp.
Matrix decompositions and solves: Cholesky
(linalg.cholesky(_ex), cholesky, cholesky_solve, cholesky_inverse),
triangular solves, LU (lu_factor(_ex), lu, lu_unpack, lu_solve) and what is
built on it (solve, inv, det, slogdet, logdet), QR (geqrf, qr,
householder_product) and eigvalsh. float32/float64 run natively; LAPACK's
info values, pivots and error messages match CPU's; complex input runs CPU's
kernel (counted); gradients through the public functions match CPU's."""
import copy

import pytest
import torch

import torch_pjrt
import re
import torch.nn.functional as F
from conftest import dtype_id, make
from conftest import make
from _op_check import CHECK_TOL, NativeOnly, check_close  # noqa: F401 (shared helpers)
from conftest import assert_bitwise_equal, make
from _op_check import NativeOnly, check_close
from test_ops_activation import same_error as same_error_meta  # noqa: F401 (shared helpers)
from test_ops_conv import randn as randn_seeded  # noqa: F401 (shared helpers)
from test_ops_index import same_error  # noqa: F401 (shared helpers)

pytestmark = [pytest.mark.usefixtures("no_leaks"),
              pytest.mark.filterwarnings("ignore:torch.(cholesky|triangular_solve) is deprecated")]

FLOATS = [torch.float32, torch.float64]


def tol(dtype):
    return dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-10)


def check(actual, expected, exact=False, **kw):
    assert actual.device.type == "tpu", actual.device
    assert actual.dtype == expected.dtype, f"{actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{tuple(actual.shape)} != {tuple(expected.shape)}"
    kw = dict(rtol=0, atol=0) if exact else (kw or tol(expected.dtype))
    torch.testing.assert_close(actual.detach().cpu(), expected.detach(), equal_nan=True, **kw)


def tpu(*ts):
    return [t.to("tpu") for t in ts]


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def randn(*shape, dtype=torch.float32, seed=0):
    return torch.randn(*shape, generator=gen(seed), dtype=dtype)


def spd(*shape, dtype=torch.float32, seed=0):
    a = randn(*shape, dtype=dtype, seed=seed)
    return a @ a.mT + shape[-1] * torch.eye(shape[-1], dtype=dtype)


# ---- Cholesky -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_cholesky_family_matches_cpu(dtype, native_only):
    for upper in (False, True):
        A = spd(2, 3, 5, 5, dtype=dtype)
        # only the triangle named by upper is read
        if upper:
            A[..., 4, 0] = 100.0
        else:
            A[..., 0, 4] = 100.0
        (a,) = tpu(A)
        L, info = torch.linalg.cholesky_ex(a, upper=upper)
        eL, einfo = torch.linalg.cholesky_ex(A, upper=upper)
        check(L, eL)
        check(info, einfo, exact=True)
    S = spd(5, 5, dtype=dtype)
    Lc = torch.linalg.cholesky(S)
    B = randn(5, 3, dtype=dtype, seed=1)
    s, lc, b = tpu(S, Lc, B)
    check(torch.cholesky_solve(b, lc), torch.cholesky_solve(B, Lc))
    check(torch.cholesky_solve(b, lc.mT, upper=True), torch.cholesky_solve(B, Lc.mT, upper=True))
    out = torch.empty(0, dtype=dtype, device="tpu")
    torch.ops.aten._cholesky_solve_helper.out(b, lc, False, out=out)
    check(out, torch.cholesky_solve(B, Lc))
    inv = torch.cholesky_inverse(lc)
    check(inv, torch.cholesky_inverse(Lc))
    assert torch.equal(inv.cpu(), inv.cpu().mT)  # exactly symmetric, like LAPACK potri
    check(torch.cholesky_inverse(lc.mT, upper=True), torch.cholesky_inverse(Lc.mT, upper=True))


def test_cholesky_non_contiguous_and_out(native_only):
    A = spd(2, 4, 4)
    a = A.to("tpu").mT  # a transposed view
    check(torch.linalg.cholesky(a), torch.linalg.cholesky(A.mT))
    L = torch.empty(0, device="tpu")
    info = torch.empty(0, dtype=torch.int32, device="tpu")
    torch.linalg.cholesky_ex(A.to("tpu"), out=(L, info))
    check(L, torch.linalg.cholesky(A))
    out = torch.empty(0, device="tpu")
    torch.linalg.cholesky(A.to("tpu"), out=out)
    check(out, torch.linalg.cholesky(A))


def test_cholesky_not_positive_definite_info_and_errors():
    A = spd(3, 4, 4)
    A[1, 2, 2] = -50.0  # batch 1 fails at the minor of order 3
    A[2] = 0.0  # batch 2 fails at once
    a = A.to("tpu")
    check(torch.linalg.cholesky_ex(a).info, torch.linalg.cholesky_ex(A).info, exact=True)
    msg = ("linalg.cholesky: (Batch element 1): The factorization could not be completed "
           "because the input is not positive-definite (the leading minor of order 3 is "
           "not positive-definite).")
    with pytest.raises(torch.linalg.LinAlgError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        torch.linalg.cholesky(a)
    with pytest.raises(torch.linalg.LinAlgError, match=r"^linalg.cholesky_ex: \(Batch element 1\)"):
        torch.linalg.cholesky_ex(a, check_errors=True)
    with pytest.raises(torch.linalg.LinAlgError, match=r"^cholesky: The factorization .* order 2"):
        torch.cholesky(torch.tensor([[1.0, 2.0], [2.0, 1.0]], device="tpu"))


def test_cholesky_errors_match_cpu():
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. Got Long"):
        torch.linalg.cholesky(torch.ones(2, 2, dtype=torch.long, device="tpu"))
    with pytest.raises(RuntimeError, match="must be batches of square matrices"):
        torch.linalg.cholesky(torch.ones(2, 3, device="tpu"))
    with pytest.raises(NotImplementedError, match="\"cholesky_inverse_out_cpu\" not implemented for 'Long'"):
        torch.cholesky_inverse(torch.ones(2, 2, dtype=torch.long, device="tpu"))


# ---- triangular solves -------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_solve_triangular_matches_cpu(dtype, native_only):
    A = randn(2, 4, 4, dtype=dtype) + 4 * torch.eye(4, dtype=dtype)  # both triangles set
    B = randn(2, 4, 3, dtype=dtype, seed=1)
    a, b = tpu(A, B)
    for upper in (False, True):
        for unit in (False, True):
            check(torch.linalg.solve_triangular(a, b, upper=upper, unitriangular=unit),
                  torch.linalg.solve_triangular(A, B, upper=upper, unitriangular=unit))
            check(torch.linalg.solve_triangular(a, b.mT, upper=upper, left=False, unitriangular=unit),
                  torch.linalg.solve_triangular(A, B.mT, upper=upper, left=False, unitriangular=unit))
    # broadcast batch dims, out=
    out = torch.empty(0, dtype=dtype, device="tpu")
    torch.linalg.solve_triangular(a[0], b, upper=True, out=out)
    check(out, torch.linalg.solve_triangular(A[0], B, upper=True))
    x, m = torch.triangular_solve(b, a, upper=False, transpose=True)
    ex, em = torch.triangular_solve(B, A, upper=False, transpose=True)
    check(x, ex)
    check(m, em, exact=True)


# ---- LU ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype,shape", [
    (torch.float32, (2, 3, 5, 5)), (torch.float32, (4, 6, 4)), (torch.float32, (3, 4, 6)),
    (torch.float64, (3, 5, 5))], ids=str)
def test_lu_matches_cpu(dtype, shape, native_only):
    A = randn(*shape, dtype=dtype)
    (a,) = tpu(A)
    LU, piv, info = torch.linalg.lu_factor_ex(a)
    eLU, epiv, einfo = torch.linalg.lu_factor_ex(A)
    check(LU, eLU)
    check(piv, epiv, exact=True)  # the first row of largest |a|, 1-based, int32
    check(info, einfo, exact=True)
    for r, e in zip(torch.linalg.lu(a), torch.linalg.lu(A)):
        check(r, e)
    for r, e in zip(torch.lu_unpack(LU, piv), torch.lu_unpack(eLU, epiv)):
        check(r, e)
    P, L, U = torch.lu_unpack(LU, piv, unpack_data=False)
    assert L.numel() == 0 and U.numel() == 0
    check(P, torch.lu_unpack(eLU, epiv)[0])


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_lu_solve_solve_inv_det_match_cpu(dtype, native_only):
    """float64 checks the functions once; float32 also their variants."""
    A = randn(2, 5, 5, dtype=dtype)
    B = randn(2, 5, 3, dtype=dtype, seed=1)
    LU, piv = torch.linalg.lu_factor(A)
    a, b, lu, p = tpu(A, B, LU, piv)
    variants = [(True, False)] if dtype == torch.float64 else [
        (True, False), (True, True), (False, False), (False, True)]
    for left, adjoint in variants:
        rhs, erhs = (b, B) if left else (b.mT, B.mT)
        check(torch.linalg.lu_solve(lu, p, rhs, left=left, adjoint=adjoint),
              torch.linalg.lu_solve(LU, piv, erhs, left=left, adjoint=adjoint))
    check(torch.linalg.solve(a, b), torch.linalg.solve(A, B))
    check(torch.linalg.inv(a), torch.linalg.inv(A))
    check(torch.linalg.det(a), torch.linalg.det(A))
    if dtype == torch.float64:
        return
    check(torch.linalg.solve(a, b.mT, left=False), torch.linalg.solve(A, B.mT, left=False))
    check(torch.linalg.solve(a, b[:, :, 0]), torch.linalg.solve(A, B[:, :, 0]))  # vector rhs
    check(torch.linalg.solve(a[0], b), torch.linalg.solve(A[0], B))  # broadcast A
    check(torch.linalg.inv(a.mT), torch.linalg.inv(A.mT))
    check(torch.linalg.det(a.mT), torch.linalg.det(A.mT))
    for r, e in zip(torch.linalg.slogdet(a), torch.linalg.slogdet(A)):
        check(r, e)
    S = spd(5, 5, dtype=dtype)
    check(torch.logdet(S.to("tpu")), torch.logdet(S))
    out = torch.empty(0, dtype=dtype, device="tpu")
    torch.linalg.inv(a, out=out)
    check(out, torch.linalg.inv(A))
    check(torch.linalg.matrix_power(a, -2), torch.linalg.matrix_power(A, -2))


def test_singular_info_and_errors():
    A = torch.tensor([[[1.0, 2.0], [2.0, 4.0]], [[0.0, 1.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]]])
    a = A.to("tpu")
    for r, e in zip(torch.linalg.lu_factor_ex(a), torch.linalg.lu_factor_ex(A)):
        check(r, e, exact=True)
    check(torch.linalg.inv_ex(a).info, torch.linalg.inv_ex(A).info, exact=True)
    check(torch.linalg.det(a), torch.linalg.det(A), exact=True)
    for r, e in zip(torch.linalg.slogdet(a), torch.linalg.slogdet(A)):
        check(r, e, exact=True)
    with pytest.raises(torch.linalg.LinAlgError,
                       match=r"linalg.inv: \(Batch element 0\): The diagonal element 2 is zero"):
        torch.linalg.inv(a)
    with pytest.raises(torch.linalg.LinAlgError, match="torch.linalg.solve: .*singular"):
        torch.linalg.solve(a, torch.ones(3, 2, device="tpu"))
    with pytest.raises(RuntimeError, match=r"torch.linalg.lu_factor: \(Batch element 0\): U\[2,2\] is zero"):
        torch.linalg.lu_factor(a)
    with pytest.raises(RuntimeError, match="LU without pivoting is not implemented on the CPU"):
        torch.linalg.lu_factor(a, pivot=False)
    LU, piv = torch.linalg.lu_factor(torch.randn(3, 3, device="tpu"))
    bad = piv.clone()
    bad[1] = 7
    with pytest.raises(RuntimeError, match="pivots passed to lu_unpack must be between 1 and LU.size"):
        torch.lu_unpack(LU, bad)
    with pytest.raises(RuntimeError, match="Pivots given to lu_solve must all be smaller or equal"):
        torch.linalg.lu_solve(LU, bad, torch.ones(3, 1, device="tpu"))


def test_empty_matrices(native_only):
    for shape in [(0, 0), (2, 0, 0), (0, 3, 3)]:
        A = torch.randn(*shape)
        a = A.to("tpu")
        check(torch.linalg.det(a), torch.linalg.det(A))
        check(torch.linalg.inv(a), torch.linalg.inv(A))
        check(torch.linalg.cholesky(a), torch.linalg.cholesky(A))
        for r, e in zip(torch.linalg.lu_factor_ex(a), torch.linalg.lu_factor_ex(A)):
            check(r, e)


# ---- QR, eigvalsh ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype,shapes", [
    (torch.float32, [(2, 6, 4), (4, 4), (3, 4, 6)]), (torch.float64, [(2, 6, 4)])], ids=str)
def test_qr_matches_cpu(dtype, shapes, native_only):
    for shape in shapes:
        A = randn(*shape, dtype=dtype)
        (a,) = tpu(A)
        g, tau = torch.geqrf(a)
        eg, etau = torch.geqrf(A)
        check(g, eg)
        check(tau, etau)
        for mode in ("reduced", "complete", "r"):
            for r, e in zip(torch.linalg.qr(a, mode=mode), torch.linalg.qr(A, mode=mode)):
                check(r, e)  # R's signs follow LAPACK's Householder convention
        k = min(shape[-2:]) - 1  # fewer reflectors than columns
        check(torch.linalg.householder_product(g[..., :k], tau[..., :k]),
              torch.linalg.householder_product(eg[..., :k], etau[..., :k]))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_eigvalsh_matches_cpu(dtype, native_only):
    A = randn(3, 6, 6, dtype=dtype)
    A[..., 0, 5] = 100.0  # only the named triangle is read
    (a,) = tpu(A)
    for uplo in ("L", "U"):
        check(torch.linalg.eigvalsh(a, UPLO=uplo), torch.linalg.eigvalsh(A, UPLO=uplo))


@pytest.mark.filterwarnings("ignore:.*has no tpu lowering")
def test_eigenvectors_and_complex_run_cpu_kernel_counted():
    torch_pjrt.reset_fallbacks()
    S = spd(4, 4)
    w, v = torch.linalg.eigh(S.to("tpu"))
    ew, ev = torch.linalg.eigh(S)
    check(w, ew)
    check(v, ev)
    C = torch.randn(3, 3, dtype=torch.complex64, generator=gen())
    check(torch.linalg.inv(C.to("tpu")), torch.linalg.inv(C))
    torch.tpu.synchronize()
    fb = torch_pjrt.fallbacks()
    assert fb.get("aten::_linalg_eigh", 0) >= 1 and fb.get("aten::linalg_inv_ex", 0) >= 1, fb
    with pytest.raises(NotImplementedError, match="\"linalg_eigh_cpu\" not implemented for 'Half'"):
        torch.linalg.eigvalsh(torch.eye(2, dtype=torch.half, device="tpu"))


# ---- gradients ----------------------------------------------------------------------------


def grads(f, *inputs):
    """f's input gradients for a fixed random cotangent, on CPU and on tpu."""
    out = []
    for dev in ("cpu", "tpu"):
        xs = [x.detach().to(dev).requires_grad_() for x in inputs]
        r = f(*xs)
        rs = r if isinstance(r, tuple) else (r,)
        cot = [torch.randn(t.shape, generator=gen(7), dtype=t.dtype).to(dev) for t in rs]
        torch.autograd.backward(rs, cot)
        out.append([x.grad for x in xs])
    return out


@pytest.mark.parametrize("name,f,make", [
    ("solve", torch.linalg.solve, lambda: (randn(2, 4, 4), randn(2, 4, 3, seed=1))),
    ("inv", torch.linalg.inv, lambda: (randn(2, 4, 4),)),
    ("det", torch.linalg.det, lambda: (randn(2, 4, 4),)),
    ("slogdet", lambda a: torch.linalg.slogdet(a)[1], lambda: (randn(2, 4, 4),)),
    ("cholesky", torch.linalg.cholesky, lambda: (spd(2, 4, 4),)),
    ("qr", torch.linalg.qr, lambda: (randn(2, 5, 3),)),
    ("solve_triangular", lambda a, b: torch.linalg.solve_triangular(a, b, upper=True),
     lambda: (randn(4, 4) + 4 * torch.eye(4), randn(4, 2, seed=1))),
    ("lu", lambda a: torch.linalg.lu(a)[1:], lambda: (randn(2, 4, 4),)),
])
def test_gradients_match_cpu(name, f, make, native_only):
    cpu, dev = grads(f, *make())
    for e, r in zip(cpu, dev):
        check(r, e, rtol=1e-3, atol=1e-3)


TOL = {
    torch.float16: dict(rtol=1e-2, atol=1e-2),
    torch.bfloat16: dict(rtol=1e-2, atol=1e-2),
    torch.float32: dict(rtol=1.3e-6, atol=1e-5),
    torch.float64: dict(rtol=1e-12, atol=1e-12),
    torch.complex64: dict(rtol=1.3e-6, atol=1e-5),
    torch.complex128: dict(rtol=1e-12, atol=1e-12),
}


# Larger float32 reductions and matmuls: different summation orders.
BIG = dict(rtol=1e-5, atol=1e-4)


# Every matmul-family aten op a matmul/linear call may decompose into.
MATMUL_OPS = ("aten::mm", "aten::bmm", "aten::addmm", "aten::matmul", "aten::mv",
              "aten::addmv", "aten::dot", "aten::baddbmm", "aten::linear")


def check_close_to(actual, expected, tol=None):
    """actual (tpu) matches expected (cpu): device type, dtype, shape, values."""
    assert actual.device.type == "tpu", actual.device
    assert actual.dtype == expected.dtype, f"{actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{tuple(actual.shape)} != {tuple(expected.shape)}"
    if tol is None:
        tol = TOL.get(expected.dtype, dict(rtol=0, atol=0))
    torch.testing.assert_close(actual.detach().cpu(), expected.detach(), equal_nan=True, **tol)


class Fallbacks:
    """Records the CPU fallbacks taken inside the block, for ops named `ops`
    (an op name matches every overload: "aten::sum" covers
    "aten::sum.IntList_out")."""

    def __init__(self, *ops):
        self.ops = ops
        self.seen = {}

    def __enter__(self):
        torch.tpu.synchronize()
        torch_pjrt.reset_fallbacks()
        return self

    def __exit__(self, *exc):
        torch.tpu.synchronize()
        self.seen = {k: v for k, v in torch_pjrt.fallbacks().items()
                     if k.split(".")[0] in self.ops}
        return False

    def assert_native(self):
        assert not self.seen, f"ran on the CPU fallback (not native): {self.seen}"


def data(dtype, shape, seed=0, lo=-5, hi=6):
    """Moderate deterministic CPU data. Floats are multiples of 0.25 in
    [-2, 2] (low-precision sums of them are exact or nearly so); ints are in
    [lo, hi); bool is random."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if not (dtype.is_floating_point or dtype.is_complex):
        return torch.randint(lo, hi, shape, generator=g).to(dtype)
    if dtype.is_complex:
        re_ = torch.randint(-8, 9, shape, generator=g).double() / 4
        im = torch.randint(-8, 9, shape, generator=g).double() / 4
        return torch.complex(re_, im).to(dtype)
    return (torch.randint(-8, 9, shape, generator=g).double() / 4).to(dtype)


def raises_like_cpu(fn, cpu_args, tpu_args, accept=()):
    """fn(*tpu_args) raises the same exception type as fn(*cpu_args), with
    the CPU message (first line) or one of `accept` in its message."""
    with pytest.raises(Exception) as cpu_exc:
        fn(*cpu_args)
    cpu_msg = str(cpu_exc.value).splitlines()[0]
    with pytest.raises(type(cpu_exc.value)) as tpu_exc:
        r = fn(*tpu_args)
        torch.tpu.synchronize()
        del r
    msg = str(tpu_exc.value)
    # Break the traceback -> frame -> tensors cycles now rather than at some
    # later collection.
    cpu_exc.value.__traceback__ = None
    tpu_exc.value.__traceback__ = None
    del cpu_exc, tpu_exc, tpu_args, cpu_args
    assert cpu_msg in msg or any(a in msg for a in accept), (
        f"tpu message {msg!r} lacks CPU's {cpu_msg!r}" + (f" or any of {accept}" if accept else ""))


MM_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
             torch.int64]


@pytest.mark.parametrize("dtype", MM_DTYPES, ids=dtype_id)
def test_mm(dtype):
    a, b = data(dtype, (5, 7), seed=28), data(dtype, (7, 3), seed=29)
    ta, tb = a.to("tpu"), b.to("tpu")
    with Fallbacks("aten::mm") as fb:
        rs = [(torch.mm(ta, tb), torch.mm(a, b)), (ta.mm(tb), a.mm(b)), (ta @ tb, a @ b)]
    for r, e in rs:
        check_close_to(r, e)
    fb.assert_native()


def test_mm_large_float32():
    a, b = randn_seeded((64, 128), seed=30), randn_seeded((128, 32), seed=31)
    with Fallbacks(*MATMUL_OPS) as fb:
        r = a.to("tpu") @ b.to("tpu")
        r2 = torch.mm(a.to("tpu"), b.to("tpu"))
    check_close_to(r, a @ b, BIG)
    check_close_to(r2, a @ b, BIG)
    fb.assert_native()


def test_mm_noncontiguous():
    a, b = randn_seeded((8, 6), seed=32), randn_seeded((10, 8), seed=33)
    ta, tb = a.to("tpu"), b.to("tpu")
    with Fallbacks(*MATMUL_OPS) as fb:
        rs = [
            (ta.t() @ tb.t(), a.t() @ b.t()),                        # (6,8) @ (8,10)
            (ta[::2] @ tb[1::2, :6].t(), a[::2] @ b[1::2, :6].t()),     # (4,6) @ (6,5)
            (ta[:, 1:5].t() @ ta[:, :3], a[:, 1:5].t() @ a[:, :3]),
            (torch.mm(tb[:, ::2], ta[1::2]), torch.mm(b[:, ::2], a[1::2])),
            (ta[:1].expand(4, 6) @ ta.t(), a[:1].expand(4, 6) @ a.t()),
        ]
    for r, e in rs:
        check_close_to(r, e, BIG)
    fb.assert_native()


def test_mm_zero_sizes():
    with Fallbacks(*MATMUL_OPS) as fb:
        rs = []
        for (m, k, n) in [(0, 3, 4), (3, 0, 4), (3, 4, 0)]:
            a, b = randn_seeded((m, k), seed=34), randn_seeded((k, n), seed=35)
            rs.append((a.to("tpu") @ b.to("tpu"), a @ b))  # k == 0: zeros
    for r, e in rs:
        check_close_to(r, e)
    fb.assert_native()


def test_mm_on_second_device():
    a, b = data(torch.float32, (4, 3), seed=36), data(torch.float32, (3, 2), seed=37)
    with Fallbacks("aten::mm") as fb:
        r = a.to("tpu:1") @ b.to("tpu:1")
    assert r.device == torch.device("tpu:1")
    check_close_to(r, a @ b)
    fb.assert_native()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.bfloat16],
                         ids=dtype_id)
def test_bmm(dtype):
    a, b = data(dtype, (3, 4, 5), seed=38), data(dtype, (3, 5, 2), seed=39)
    ta, tb = a.to("tpu"), b.to("tpu")
    with Fallbacks("aten::bmm") as fb:
        rs = [(torch.bmm(ta, tb), torch.bmm(a, b)),
              (torch.bmm(tb.transpose(1, 2), ta.transpose(1, 2)),
               torch.bmm(b.transpose(1, 2), a.transpose(1, 2))),
              (torch.bmm(ta[::2], tb[::2]), torch.bmm(a[::2], b[::2]))]
    for r, e in rs:
        check_close_to(r, e)
    fb.assert_native()


ADDMM_CASES = [(1, 1), (0.5, 2.0), (0, 1), (1, 0), (-1.5, 0.25)]


@pytest.mark.parametrize("beta,alpha", ADDMM_CASES, ids=[f"b{b}-a{a}" for b, a in ADDMM_CASES])
@pytest.mark.parametrize("bias_shape", [(4,), (3, 4), (1, 4), (3, 1), ()], ids=str)
def test_addmm(beta, alpha, bias_shape):
    m1, m2 = randn_seeded((3, 5), seed=40), randn_seeded((5, 4), seed=41)
    bias = randn_seeded(bias_shape, seed=42)
    with Fallbacks("aten::addmm") as fb:
        r = torch.addmm(bias.to("tpu"), m1.to("tpu"), m2.to("tpu"), beta=beta, alpha=alpha)
    check_close_to(r, torch.addmm(bias, m1, m2, beta=beta, alpha=alpha))
    fb.assert_native()


def test_addmm_beta_zero_ignores_nan_bias():
    m1, m2 = randn_seeded((3, 5), seed=43), randn_seeded((5, 4), seed=44)
    bias = torch.full((3, 4), float("nan"))
    bias[0, 0] = float("inf")
    with Fallbacks("aten::addmm") as fb:
        r = torch.addmm(bias.to("tpu"), m1.to("tpu"), m2.to("tpu"), beta=0)
        r2 = torch.addmm(bias[0].to("tpu"), m1.to("tpu"), m2.to("tpu"), beta=0, alpha=2)
    e = torch.addmm(bias, m1, m2, beta=0)
    assert not torch.isnan(e).any()
    check_close_to(r, e)
    check_close_to(r2, torch.addmm(bias[0], m1, m2, beta=0, alpha=2))
    assert not torch.isnan(r.cpu()).any()
    fb.assert_native()


def test_addmm_int_and_noncontiguous():
    m1, m2 = data(torch.int64, (4, 3), seed=45), data(torch.int64, (3, 5), seed=46)
    bias = data(torch.int64, (5,), seed=47)
    f1, f2 = randn_seeded((6, 4), seed=48), randn_seeded((5, 6), seed=49)
    fb_ = randn_seeded((5, 4), seed=50)
    with Fallbacks("aten::addmm") as fb:
        r = torch.addmm(bias.to("tpu"), m1.to("tpu"), m2.to("tpu"), beta=2, alpha=3)
        r2 = torch.addmm(fb_.to("tpu").t(), f1.to("tpu").t(), f2.to("tpu").t(), alpha=0.5)
    check_close_to(r, torch.addmm(bias, m1, m2, beta=2, alpha=3))
    check_close_to(r2, torch.addmm(fb_.t(), f1.t(), f2.t(), alpha=0.5))
    fb.assert_native()


MATMUL_SHAPES = [
    ((7,), (7, 4)),            # 1-D @ 2-D
    ((3, 7), (7,)),            # 2-D @ 1-D
    ((5, 3, 7), (7, 4)),       # batched 3-D @ 2-D
    ((3, 7), (5, 7, 4)),       # 2-D @ batched 3-D
    ((2, 5, 3, 7), (2, 5, 7, 4)),  # 4-D @ 4-D
    ((2, 1, 3, 7), (1, 5, 7, 4)),  # broadcast batch dims
    ((5, 3, 7), (7,)),         # 3-D @ 1-D
    ((7,), (2, 7, 4)),         # 1-D @ 3-D
    ((7,), (7,)),              # dot
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=dtype_id)
@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=[f"{a}@{b}" for a, b in MATMUL_SHAPES])
def test_matmul_broadcasting(dtype, shapes):
    a, b = data(dtype, shapes[0], seed=51), data(dtype, shapes[1], seed=52)
    with Fallbacks(*MATMUL_OPS) as fb:
        r = torch.matmul(a.to("tpu"), b.to("tpu"))
        r2 = a.to("tpu") @ b.to("tpu")
    check_close_to(r, torch.matmul(a, b))
    check_close_to(r2, a @ b)
    fb.assert_native()


def test_matmul_transposed_and_sliced_batched():
    a, b = randn_seeded((4, 6, 5), seed=53), randn_seeded((4, 6, 3), seed=54)
    ta, tb = a.to("tpu"), b.to("tpu")
    with Fallbacks(*MATMUL_OPS) as fb:
        rs = [
            (ta.transpose(1, 2) @ tb, a.transpose(1, 2) @ b),           # (4,5,6)@(4,6,3)
            (ta[::2, 1:, ::2].transpose(-1, -2) @ tb[::2, 1:],
             a[::2, 1:, ::2].transpose(-1, -2) @ b[::2, 1:]),
            (ta.permute(2, 0, 1) @ tb[1][:, ::2], a.permute(2, 0, 1) @ b[1][:, ::2]),
        ]
    for r, e in rs:
        check_close_to(r, e, BIG)
    fb.assert_native()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=dtype_id)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("xshape", [(6, 5), (2, 3, 5), (5,)], ids=str)
def test_linear(dtype, bias, xshape):
    x = data(dtype, xshape, seed=55)
    w = data(dtype, (4, 5), seed=56)
    b = data(dtype, (4,), seed=57) if bias else None
    with Fallbacks(*MATMUL_OPS) as fb:
        r = F.linear(x.to("tpu"), w.to("tpu"), b.to("tpu") if bias else None)
    check_close_to(r, F.linear(x, w, b))
    fb.assert_native()


def test_linear_module():
    torch.manual_seed(0)
    lin = torch.nn.Linear(12, 7)
    x = randn_seeded((9, 12), seed=58)
    e = lin(x)
    lin_t = lin.to("tpu")
    with Fallbacks(*MATMUL_OPS) as fb:
        r = lin_t(x.to("tpu"))
    check_close_to(r, e.detach())
    fb.assert_native()


DTYPE_MISMATCH = {
    "mm": lambda a, b: torch.mm(a, b),
    "matmul-2d": lambda a, b: a @ b,
    "matmul-3d@2d": lambda a, b: a.expand(2, 2, 3) @ b,
    "matmul-2d@1d": lambda a, b: a @ b[:, 0],
    "bmm": lambda a, b: torch.bmm(a[None], b[None]),
    "linear": lambda a, b: F.linear(a, b.t()),
    "addmm": lambda a, b: torch.addmm(a[0, :2], a, b),
}


@pytest.mark.parametrize("case", list(DTYPE_MISMATCH))
def test_matmul_dtype_mismatch_raises_like_cpu(case):
    a, b = torch.ones(2, 3), torch.ones(3, 2, dtype=torch.float64)
    f = DTYPE_MISMATCH[case]
    raises_like_cpu(f, (a, b), (a.to("tpu"), b.to("tpu")), accept=("same dtype",))


SHAPE_MISMATCH = {
    "mm": (lambda a, b: torch.mm(a, b), (2, 3), (2, 2)),
    "matmul-2d": (lambda a, b: a @ b, (2, 3), (4, 2)),
    "matmul-1d@2d": (lambda a, b: a @ b, (3,), (4, 2)),
    "matmul-3d@2d": (lambda a, b: a @ b, (2, 2, 3), (4, 2)),
    "linear": (lambda a, b: F.linear(a, b), (2, 3), (4, 5)),
    "addmm": (lambda a, b: torch.addmm(torch.zeros(2, device=a.device), a, b), (2, 3), (2, 2)),
}


@pytest.mark.parametrize("case", list(SHAPE_MISMATCH))
def test_matmul_shape_mismatch_raises_like_cpu(case):
    f, sa, sb = SHAPE_MISMATCH[case]
    a, b = torch.ones(sa), torch.ones(sb)
    with pytest.raises(RuntimeError, match=re.escape("cannot be multiplied")):
        f(a, b)  # what CPU says
    raises_like_cpu(f, (a, b), (a.to("tpu"), b.to("tpu")))


def test_bmm_shape_mismatch_raises_like_cpu():
    a, b = torch.ones(2, 2, 3), torch.ones(2, 2, 2)
    raises_like_cpu(torch.bmm, (a, b), (a.to("tpu"), b.to("tpu")))


def test_matmul_mixed_devices_rejected():
    a = torch.ones(2, 3, device="tpu:0")
    b = torch.ones(3, 2, device="tpu:1")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.mm(a, b)


def leaf(t, dev):
    """A fresh leaf on dev (t.to("cpu") would return t itself)."""
    return t.detach().to(dev, copy=True).requires_grad_()


def test_autograd_tiny_mlp():
    x0 = randn_seeded((8, 16), seed=60)
    w10, b10 = randn_seeded((32, 16), seed=61) * 0.25, randn_seeded((32,), seed=62) * 0.1
    w20 = randn_seeded((4, 32), seed=63) * 0.25

    def run(dev):
        x = leaf(x0, dev)
        w1 = leaf(w10, dev)
        b1 = leaf(b10, dev)
        w2 = leaf(w20, dev)
        loss = F.linear(F.relu(F.linear(x, w1, b1)), w2).sum()
        loss.backward()
        return loss, x, w1, b1, w2

    lc, *pc = run("cpu")
    with Fallbacks(*MATMUL_OPS, "aten::sum") as fb:
        lt, *pt = run("tpu")
    tol = dict(rtol=1e-5, atol=1e-5)
    assert lt.device.type == "tpu"
    check_close_to(lt, lc.detach(), tol)
    for name, c, t in zip(["x", "w1", "b1", "w2"], pc, pt):
        assert t.is_leaf and t.grad is not None, name
        assert t.grad.device.type == "tpu", name
        check_close_to(t.grad, c.grad, tol)
    fb.assert_native()


def test_autograd_mse():
    x0 = randn_seeded((10, 6), seed=64)
    w0 = randn_seeded((6, 3), seed=65)
    t0 = randn_seeded((10, 3), seed=66)

    def run(dev):
        x = x0.to(dev)
        w = leaf(w0, dev)
        t = t0.to(dev)
        y = x @ w
        loss = ((y - t) ** 2).mean()
        loss.backward()
        return loss, w

    lc, wc = run("cpu")
    with Fallbacks(*MATMUL_OPS, "aten::mean", "aten::sum") as fb:
        lt, wt = run("tpu")
    tol = dict(rtol=1e-5, atol=1e-5)
    check_close_to(lt, lc.detach(), tol)
    check_close_to(wt.grad, wc.grad, tol)
    fb.assert_native()


DEV = "tpu"


def t(x):
    return x.to(DEV)


def test_count_nonzero_trace_vdot():
    x = make(torch.float32, (4, 5))
    x[x.abs() < 50] = 0
    i = torch.randint(-3, 3, (4, 5), dtype=torch.int32)
    with NativeOnly():
        check_close(torch.count_nonzero(t(x), dim=1), torch.count_nonzero(x, dim=1))
        check_close(torch.count_nonzero(t(i), dim=(0, 1)), torch.count_nonzero(i, dim=(0, 1)))
        y = make(torch.float32, (4, 5), specials=False)
        check_close(torch.trace(t(y)), torch.trace(y))
        check_close(torch.trace(t(y).t()), torch.trace(y.t()))
        check_close(torch.trace(t(i)), torch.trace(i))
        v, w = y[0], y[1]
        check_close(torch.vdot(t(v), t(w)), torch.vdot(v, w))
        check_close(torch.vdot(t(v.half()), t(w.half())), torch.vdot(v.half(), w.half()),
              dict(rtol=1e-2, atol=1e-1))
        check_close(torch.vdot(t(i[0]), t(i[1])), torch.vdot(i[0], i[1]))
        check_close(torch.vdot(t(y)[:, 0], t(y)[:, 1]), torch.vdot(y[:, 0], y[:, 1]))
    same_error(torch.trace, (torch.ones(2, 2, 2),))
    same_error(torch.vdot, (torch.ones(3), torch.ones(3).double()))
    same_error(torch.vdot, (torch.ones(2), torch.ones(3)))
    same_error(torch.vdot, (torch.ones(2, 2), torch.ones(3)))


def test_trace_and_vdot_grad():
    y = make(torch.float32, (4, 4), specials=False)
    yc, yt = y.clone().requires_grad_(), t(y).requires_grad_()
    torch.trace(yc).backward()
    with NativeOnly():
        torch.trace(yt).backward()
    check_close(yt.grad, yc.grad)


def test_addbmm():
    m = make(torch.float32, (3, 5), specials=False)
    b1 = make(torch.float32, (2, 3, 4), seed=1, specials=False) / 100
    b2 = make(torch.float32, (2, 4, 5), seed=2, specials=False) / 100
    with NativeOnly():
        check_close(torch.addbmm(t(m), t(b1), t(b2)), torch.addbmm(m, b1, b2), dict(rtol=1e-4, atol=1e-3))
        check_close(torch.addbmm(t(m[0]), t(b1), t(b2), beta=0.5, alpha=2),
              torch.addbmm(m[0], b1, b2, beta=0.5, alpha=2), dict(rtol=1e-4, atol=1e-3))
        check_close(torch.addbmm(t(m), t(b1).transpose(1, 2).contiguous().transpose(1, 2), t(b2)),
              torch.addbmm(m, b1, b2), dict(rtol=1e-4, atol=1e-3))
        x, xt = m.clone(), t(m)
        x.addbmm_(b1, b2)
        xt.addbmm_(t(b1), t(b2))
        check_close(xt, x, dict(rtol=1e-4, atol=1e-3))
        mc, b1c, b2c = (v.clone().requires_grad_() for v in (m, b1, b2))
        mt, b1t, b2t = (t(v).requires_grad_() for v in (m, b1, b2))
        torch.addbmm(mt, b1t, b2t).sum().backward()
    torch.addbmm(mc, b1c, b2c).sum().backward()
    for a, e in [(mt, mc), (b1t, b1c), (b2t, b2c)]:
        check_close(a.grad, e.grad, dict(rtol=1e-4, atol=1e-3))
    same_error(torch.addbmm, (m, b1[0], b2))
    same_error(torch.addbmm, (m, b1, b2[:1]))
    same_error(torch.addbmm, (m, b1, b2.transpose(1, 2)))


def test_vdot_complex():
    a = torch.complex(make(torch.float32, (6,), specials=False), make(torch.float32, (6,), 1,
                                                                    specials=False))
    b = torch.complex(make(torch.float32, (6,), 2, specials=False), make(torch.float32, (6,), 3,
                                                                       specials=False))
    tol = dict(rtol=1e-4, atol=1e-2)
    with NativeOnly():
        check_close(torch.vdot(t(a), t(b)), torch.vdot(a, b), tol)
        check_close(torch.vdot(t(a).conj(), t(b)), torch.vdot(a.conj(), b), tol)
        check_close(torch.vdot(t(a), t(b).conj()), torch.vdot(a, b.conj()), tol)
        check_close(torch.linalg.vecdot(t(a), t(b)), torch.linalg.vecdot(a, b), tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.complex64])
def test_cross_matches_cpu(dtype):
    a = make(dtype, (4, 3, 5), seed=1, specials=False)
    b = make(dtype, (4, 3, 5), seed=2, specials=False)
    with NativeOnly():
        r = torch.linalg.cross(t(a), t(b), dim=1)
        r2 = torch.cross(t(a).transpose(0, 2), t(b).transpose(0, 2), dim=1)  # non-contiguous
    check_close(r, torch.linalg.cross(a, b, dim=1))
    check_close(r2, torch.cross(a.transpose(0, 2), b.transpose(0, 2), dim=1))


def test_cross_broadcast_out_and_grad():
    a = torch.randn(2, 1, 3, requires_grad=True)
    b = torch.randn(1, 4, 3, requires_grad=True)
    ta, tb = t(a.detach()).requires_grad_(), t(b.detach()).requires_grad_()
    g = torch.randn(2, 4, 3)
    with NativeOnly():
        r = torch.linalg.cross(ta, tb)
        r.backward(t(g))
        out = torch.empty(0, device=DEV)
        torch.linalg.cross(ta.detach(), tb.detach(), out=out)
    e = torch.linalg.cross(a, b)
    e.backward(g)
    check_close(r, e)
    check_close(out, e.detach())
    check_close(ta.grad, a.grad)
    check_close(tb.grad, b.grad)


def test_cross_errors():
    same_error_meta(torch.linalg.cross, [torch.zeros(3, 2), torch.zeros(3, 2)],
               match="must have length 3")
    same_error_meta(torch.linalg.cross, [torch.zeros(3, 3), torch.zeros(3, 3, dtype=torch.int64)])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64])
def test_matrix_exp_matches_cpu(dtype):
    a = make(dtype, (2, 4, 4), seed=12, specials=False) / 40  # norms from ~1 to ~10
    a[1] *= 4
    with NativeOnly():
        r = torch.linalg.matrix_exp(t(a))
    tol = dict(rtol=1e-4, atol=1e-4) if dtype != torch.float64 else dict(rtol=1e-10, atol=1e-10)
    check_close(r, torch.linalg.matrix_exp(a), tol)


def test_matrix_exp_grad():
    a = torch.randn(3, 3, generator=torch.Generator().manual_seed(3))
    ta = t(a).requires_grad_()
    ca = a.clone().requires_grad_()
    with NativeOnly():
        torch.linalg.matrix_exp(ta).sum().backward()
    torch.linalg.matrix_exp(ca).sum().backward()
    check_close(ta.grad, ca.grad, dict(rtol=1e-4, atol=1e-4))


def test_matrix_exp_half_runs_cpus_kernel():
    # CPU computes in half precision (overflowing to NaN here): its kernel, counted
    a = torch.randn(5, 5, generator=torch.Generator().manual_seed(4)).to(torch.bfloat16) * 4
    torch_pjrt.reset_fallbacks()
    r = torch.linalg.matrix_exp(t(a))
    assert torch_pjrt.fallbacks() == {"aten::linalg_matrix_exp": 1}
    assert_bitwise_equal(r.cpu(), torch.linalg.matrix_exp(a))


@pytest.fixture
def _reset():
    torch_pjrt.reset_metrics()
    yield


def no_fallbacks():
    assert torch_pjrt.fallbacks() == {}


def _grouped(dtype, bias=False, offs=(2, 2, 5, 7)):
    g = torch.Generator().manual_seed(2)
    a = torch.randn(8, 16, generator=g).to(dtype)
    w = torch.randn(len(offs), 16, 8, generator=g).to(dtype)
    o = torch.tensor(offs, dtype=torch.int32)
    bb = torch.randn(len(offs), 8, generator=g).to(dtype) if bias else None
    return a, w, o, bb


def _reference(a, w, offs, bias):
    """Group by group on the CPU in float64; rows past the last group are 0."""
    out = torch.zeros(a.shape[0], w.shape[2], dtype=torch.float64)
    start = 0
    for e, end in enumerate(offs.tolist()):
        out[start:end] = a[start:end].double() @ w[e].double()
        if bias is not None:
            out[start:end] += bias[e].double()
        start = end
    return out


@pytest.mark.usefixtures("_reset")
@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.bfloat16, 2e-2)])
def test_grouped_mm_jagged_rows(dtype, tol):
    # an empty group (2, 2) and rows past offs[-1] (row 7), as routing makes them
    a, w, o, _ = _grouped(dtype)
    got = torch._grouped_mm(a.to("tpu"), w.to("tpu"), offs=o.to("tpu"))
    assert got.dtype == dtype and got.shape == (8, 8)
    expect = _reference(a, w, o, None)
    torch.testing.assert_close(got.cpu().double(), expect, atol=tol * 4, rtol=tol)
    assert torch.equal(got.cpu()[7], torch.zeros(8, dtype=dtype))
    f = torch.nn.functional.grouped_mm(a.to("tpu"), w.to("tpu"), offs=o.to("tpu"))
    assert torch.equal(f.cpu(), got.cpu())
    no_fallbacks()


@pytest.mark.usefixtures("_reset")
def test_grouped_mm_bias_batched_and_out_dtype():
    a, w, o, bb = _grouped(torch.float32, bias=True, offs=(3, 5, 6, 8))
    got = torch._grouped_mm(a.to("tpu"), w.to("tpu"), offs=o.to("tpu"), bias=bb.to("tpu"))
    torch.testing.assert_close(got.cpu().double(), _reference(a, w, o, bb), atol=1e-4, rtol=1e-5)
    a3 = torch.randn(3, 4, 16)
    w3 = torch.randn(3, 16, 8)
    got3 = torch._grouped_mm(a3.to("tpu"), w3.to("tpu"))
    torch.testing.assert_close(got3.cpu(), torch.bmm(a3, w3), atol=1e-5, rtol=1e-5)
    ab, wb = a.bfloat16(), w.bfloat16()
    f32 = torch._grouped_mm(ab.to("tpu"), wb.to("tpu"), offs=o.to("tpu"), out_dtype=torch.float32)
    assert f32.dtype == torch.float32
    torch.testing.assert_close(f32.cpu().double(), _reference(ab, wb, o, None), atol=1e-4,
                               rtol=1e-5)
    no_fallbacks()


@pytest.mark.usefixtures("_reset")
def test_grouped_mm_jagged_contraction_and_gradients():
    # a (m, s) x b (s, n) with groups over s: out[e] = a[:, group e] @ b[group e]
    g = torch.Generator().manual_seed(6)
    a, b = torch.randn(4, 8, generator=g), torch.randn(8, 4, generator=g)
    offs = torch.tensor([3, 3, 6], dtype=torch.int32)  # an empty group; columns 6, 7 unused
    got = torch._grouped_mm(a.to("tpu"), b.to("tpu"), offs=offs.to("tpu"))
    expect = torch.stack([a[:, 0:3] @ b[0:3], torch.zeros(4, 4), a[:, 3:6] @ b[3:6]])
    torch.testing.assert_close(got.cpu(), expect, atol=1e-5, rtol=1e-5)
    # The MoE forward's gradients (which use this layout for the weights).
    x, w, o, bb = _grouped(torch.float32, bias=False, offs=(3, 5, 6, 8))
    res = {}
    for dev in ("cpu", "tpu"):
        xd, wd = x.detach().to(dev).requires_grad_(), w.detach().to(dev).requires_grad_()
        torch._grouped_mm(xd, wd, offs=o.to(dev)).square().sum().backward()
        res[dev] = (xd.grad.cpu(), wd.grad.cpu())
    for t, c in zip(res["tpu"], res["cpu"]):
        torch.testing.assert_close(t, c, atol=1e-4, rtol=1e-5)
    no_fallbacks()


@pytest.mark.usefixtures("_reset")
def test_grouped_mm_matches_cpu_kernel_and_errors():
    a, w, o, _ = _grouped(torch.float32, offs=(1, 4, 8, 8))
    expect = torch._grouped_mm(a, w, offs=o)
    got = torch._grouped_mm(a.to("tpu"), w.to("tpu"), offs=o.to("tpu"))
    torch.testing.assert_close(got.cpu(), expect, atol=1e-5, rtol=1e-5)
    with pytest.raises(RuntimeError, match="offs has to be int32"):
        torch._grouped_mm(a.to("tpu"), w.to("tpu"), offs=o.long().to("tpu"))
    with pytest.raises(RuntimeError, match="contraction dimension"):
        torch._grouped_mm(a[:, :8].to("tpu"), w.to("tpu"), offs=o.to("tpu"))
    with pytest.raises(RuntimeError, match="same dtype"):
        torch._grouped_mm(a.to("tpu"), w.double().to("tpu"), offs=o.to("tpu"))



@pytest.mark.usefixtures("_reset")
@pytest.mark.parametrize("m,counts", [
    (96, [9, 0, 0, 30, 1, 2, 5, 0, 17, 8, 0, 3, 4, 6, 1, 6]),  # uneven; 4 empty; 4 rows past
    (5, [0, 2, 0, 0, 1, 0, 1, 1]),  # fewer rows than groups (decode-sized)
    (64, [64]),  # one group
])
def test_grouped_mm_routed_shapes_match_cpu(m, counts):
    """The segment-by-segment lowering (src/ops/linalg.c) at MoE-like
    shapes: groups of any size (empty, longer than a block, spanning block
    boundaries), rows past the last group; the forward, its bias, and both
    gradients (layout 2 for the weights) against a group-by-group float64
    reference (CPU's kernel leaves the rows past the last group unwritten)."""
    g = torch.Generator().manual_seed(7)
    k, n, e = 16, 12, len(counts)
    a = torch.randn(m, k, generator=g)
    w = torch.randn(e, k, n, generator=g)
    bias = torch.randn(e, n, generator=g)
    offs = torch.tensor(counts, dtype=torch.int32).cumsum(0, dtype=torch.int32)
    torch.testing.assert_close(
        torch._grouped_mm(a.to("tpu"), w.to("tpu"), offs=offs.to("tpu"), bias=bias.to("tpu")).cpu(),
        _reference(a, w, offs, bias).float(), atol=1e-4, rtol=1e-5)
    scale = torch.linspace(-1, 1, n)
    res = {}
    for dev in ("cpu", "tpu"):
        ad = a.double() if dev == "cpu" else a.to(dev)
        wd = w.double() if dev == "cpu" else w.to(dev)
        ad, wd = ad.requires_grad_(), wd.requires_grad_()
        if dev == "cpu":
            ends = offs.tolist()
            pieces = [ad[s:t] @ wd[i] for i, (s, t) in enumerate(zip([0] + ends[:-1], ends))]
            out = torch.cat(pieces + [ad.new_zeros(m - ends[-1], n)])
        else:
            out = torch._grouped_mm(ad, wd, offs=offs.to(dev))
        (out * scale.to(out)).square().sum().backward()
        res[dev] = (out.detach().cpu().float(), ad.grad.cpu().float(), wd.grad.cpu().float())
    for t, c in zip(res["tpu"], res["cpu"]):
        torch.testing.assert_close(t, c, atol=1e-4, rtol=1e-5)
    no_fallbacks()


# ---- pinned (docs/COVERAGE.md, "Where tpu keeps its own answer") ---------------

def test_mixed_dtype_matmul_of_empty_operands_raises_pinned():
    # CPU's batched kernels skip their dtype check when the reduced dim is
    # empty (bmm returns zeros, matmul an empty result of one operand's
    # dtype); tpu raises the error CPU raises for non-empty operands.
    cases = [(torch.bmm, torch.empty((2, 1, 0), dtype=torch.float64), torch.empty((2, 0, 1))),
             (torch.matmul, torch.tensor([[[2.0], [-1.75]]]).mT,
              torch.empty((2, 0), dtype=torch.int64))]
    for op, a, b in cases:
        op(a, b)  # CPU answers, without its dtype check
        with pytest.raises(RuntimeError) as nonempty:
            op(torch.ones([max(s, 1) for s in a.shape], dtype=a.dtype),
               torch.ones([max(s, 1) for s in b.shape], dtype=b.dtype))
        with pytest.raises(RuntimeError) as tpu:
            op(a.to("tpu"), b.to("tpu"))
        # the same check: CPU's words vary by kernel ("expected scalar type ...")
        assert re.search(r"same dtype|expected scalar type", str(nonempty.value))
        assert re.search(r"same dtype", str(tpu.value))


def test_complex_matmul_through_an_infinity_pinned():
    INF = float("inf")
    # tpu sums the products (ac - bd) + (ad + bc)i: (1 + inf i)(-0.5 - i) is
    # inf - inf i and stays so. CPU's BLAS kernel gives NaN + NaN i.
    a = torch.complex(torch.tensor([[1.0, 2.0]]), torch.tensor([[INF, 1.0]]))
    b = torch.complex(torch.tensor([[-0.5], [1.0]]), torch.tensor([[-1.0], [0.0]]))
    got = torch.mm(a.to("tpu"), b.to("tpu")).cpu()
    assert got.real.item() == INF and got.imag.item() == -INF
    # finite operands agree with CPU
    af = torch.complex(torch.randn(3, 4), torch.randn(3, 4))
    bf = torch.complex(torch.randn(4, 2), torch.randn(4, 2))
    torch.testing.assert_close(torch.mm(af.to("tpu"), bf.to("tpu")).cpu(), af @ bf,
                               rtol=1e-5, atol=1e-5)


def test_matmuls_of_new_values_at_a_reused_address():
    # Each weight is a new buffer, freed after its product, so the allocator
    # hands the next one the same address. The CPU plugin's XNNPACK dots kept
    # what they had packed from an argument at an unchanged address and
    # returned an earlier weight's product (most of these 20, on an AVX2 host); the runtime's
    # compile options turn XNNPACK off (src/rt/executable.c).
    x_cpu = torch.randn(64, 2048, generator=torch.Generator().manual_seed(0))
    x = x_cpu.to("tpu")
    for i in range(20):
        w = torch.ones(2048, 256, device="tpu") * float(i)
        got = torch.mm(x, w).cpu()
        del w
        torch.testing.assert_close(got, x_cpu @ torch.full((2048, 256), float(i)),
                                   rtol=1e-4, atol=1e-2, msg=lambda m: f"product {i}: {m}")


def test_linear_gradients_after_an_optimizer_step_match_cpu():
    # The model-level symptom: SGD updates a weight in place (a donated
    # buffer, same address), and the next backward's input gradient used the
    # weight from before the step (TorchTitan's Qwen 3 parity, 0.6% in loss).
    torch.manual_seed(0)
    cpu = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.Tanh(), torch.nn.Linear(256, 2048))
    tpu = copy.deepcopy(cpu).to("tpu")
    x, target = torch.randn(64, 256), torch.randn(64, 2048)
    grads = {}
    for name, model, dev in (("cpu", cpu, "cpu"), ("tpu", tpu, "tpu")):
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        inp = x.to(dev).detach().requires_grad_()
        for _ in range(3):
            (model(inp) * target.to(dev)).sum().backward()
            opt.step()
            opt.zero_grad()
            inp.grad = None
        (model(inp) * target.to(dev)).sum().backward()
        grads[name] = inp.grad.cpu()
    # values up to ~350; measured 0.02 apart (the stale weight: 345)
    torch.testing.assert_close(grads["tpu"], grads["cpu"], rtol=1e-4, atol=0.1)
