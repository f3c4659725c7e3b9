"""Matrix decompositions and solves against PyTorch's CPU kernels: Cholesky
(linalg.cholesky(_ex), cholesky, cholesky_solve, cholesky_inverse),
triangular solves, LU (lu_factor(_ex), lu, lu_unpack, lu_solve) and what is
built on it (solve, inv, det, slogdet, logdet), QR (geqrf, qr,
householder_product) and eigvalsh. float32/float64 run natively; LAPACK's
info values, pivots and error messages match CPU's; complex input runs CPU's
kernel (counted); gradients through the public functions match CPU's."""
import pytest
import torch

import torch_pjrt

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
