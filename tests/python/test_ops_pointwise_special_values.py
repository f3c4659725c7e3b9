"""Special values pinned against PyTorch's CPU kernels: erf's tails, pow's
special exponents and integer wrap-around, complex values at zero and
infinity, complex to bool, bool times a non-finite value, subnormal
flushing, writes into expanded tensors, and the order of CPU's checks."""
import pytest
import torch

from conftest import dtype_id
from _op_check import NativeOnly
from _pointwise_check import INF, NAN, check, raises_like_cpu, same, to_tpu

pytestmark = pytest.mark.usefixtures("no_leaks")


# ---- issue 19 item 7: erf's tails, pow's special exponents, integer pow ----


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16],
                         ids=dtype_id)
def test_erf_tails_reach_one_like_cpu(dtype):
    # XLA's float32 erf stopped at +-0.99999982: erf(-10) + 1 was 1.8e-7
    x = torch.tensor([-INF, -20, -10, -6, -4, 4, 6, 10, INF, NAN], dtype=dtype)
    with NativeOnly():
        r = torch.erf(x.to("tpu"))
        torch.testing.assert_close((r + 1).cpu(), torch.erf(x) + 1, rtol=0, atol=0, equal_nan=True)


def test_erf_float32_within_three_ulps_of_float64_and_one_past_3_92():
    # XLA's erf (about 3 ulps) below 3.9192059, where the true erf rounds
    # to +-1 in float32; exactly +-1 from there on
    x = torch.linspace(-6, 6, 20001, dtype=torch.float32)
    ref = torch.erf(x.double())
    with NativeOnly():
        r = torch.erf(x.to("tpu")).cpu()
    ulp = torch.finfo(torch.float32).eps * ref.abs().clamp(min=torch.finfo(torch.float32).tiny)
    assert ((r.double() - ref).abs() / ulp).max().item() <= 3.0
    tail = x.abs() >= 3.9192059
    assert torch.equal(r[tail], x[tail].sign())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16],
                         ids=dtype_id)
@pytest.mark.parametrize("exponent", [0.5, -0.5], ids=str)
def test_pow_half_exponent_at_negative_inf_and_zero_like_cpu(dtype, exponent):
    # CPU's pow(Tensor, Scalar) is sqrt / rsqrt for +-0.5 in float32, float64
    # and bfloat16 (NaN at -inf, -0 and -inf at -0); float16 and
    # pow(Tensor, Tensor) keep pow's inf and +0
    x = torch.tensor([-INF, -0.0, 0.0, 4.0, -4.0, INF, NAN], dtype=dtype)
    e = torch.full_like(x, exponent)
    for f, a in ((lambda t: t ** exponent, (x,)), (torch.pow, (x, e))):
        with NativeOnly():
            r = f(*[v.to("tpu") for v in a]).cpu()
        want = f(*a)
        torch.testing.assert_close(r, want, rtol=0, atol=0, equal_nan=True)
        keep = ~want.isnan()
        assert torch.equal(r.signbit()[keep], want.signbit()[keep])


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8],
                         ids=dtype_id)
def test_pow_int_wraps_like_cpu(dtype):
    # XLA's integer power reads 6 bits of the exponent: 2 ** 64 was 1
    lo = 0 if dtype == torch.uint8 else -60
    base = torch.arange(lo, lo + 120).to(dtype)
    for e in (0, 1, 3, 7, 8, 9, 31, 32, 33, 63, 64, 65, 100):
        same("aten::pow", lambda t: t ** e, base)
    same("aten::pow", torch.pow, base, torch.arange(0, 120).to(dtype))
    same("aten::pow", lambda t: torch.pow(3, t), torch.arange(0, 120).to(dtype))
    if dtype != torch.uint8:  # negative tensor exponents: 1, +-1 or 0, as CPU's powi
        b = torch.tensor([0, 1, 2, 3, -1, -1, -2, 1, -1], dtype=dtype)
        e = torch.tensor([-1, -5, -2, 64, -3, -4, 65, -128, -128], dtype=dtype)
        same("aten::pow", torch.pow, b, e)


def test_nan_to_num_complex_like_cpu():
    # Found by tools/fuzz: CPU replaces in the real and imaginary parts.
    inf, nan = float("inf"), float("nan")
    x = torch.tensor([complex(nan, 1), complex(2, inf), complex(-inf, nan), -0.75 + 0.5j],
                     dtype=torch.complex64)
    for kw in ({}, {"nan": 1.0, "posinf": 2.0, "neginf": -3.0}):
        torch.testing.assert_close(torch.nan_to_num(x.to("tpu"), **kw).cpu(),
                                   torch.nan_to_num(x, **kw))


# ---- issue 19: the fuzzer's wrong answers (tools/fuzz) --------------------------

def _same_as_cpu(f, *args):
    """f on tpu equals f on CPU: dtype, shape, values (NaN where CPU has NaN)
    and the sign of every zero."""
    want = f(*args)
    got = f(*[to_tpu(a) for a in args])
    assert got.device.type == "tpu"
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got.cpu(), want, equal_nan=True, rtol=1e-6, atol=0)
    w, g = (torch.view_as_real(want), torch.view_as_real(got.cpu())) if want.is_complex() \
        else (want, got.cpu())
    if w.is_floating_point():
        assert torch.equal(torch.signbit(g[w == 0]), torch.signbit(w[w == 0])), (g, w)
    return got


def test_complex_to_bool_reads_both_parts():
    z = torch.complex(torch.tensor([0.0, 0.0, 1.0, -0.0, 2.0]),
                      torch.tensor([1.0, 0.0, 0.0, -0.0, -3.0]))
    _same_as_cpu(lambda x: x.to(torch.bool), z)
    _same_as_cpu(lambda x: x.to(torch.complex128).to(torch.bool), z)
    # a complex value filled into a bool tensor is z != 0 too
    m = torch.tensor([True, False, True])
    _same_as_cpu(lambda x, k: x.masked_fill(k, 1 + 2j), torch.tensor([False, False, False]), m)
    _same_as_cpu(lambda x, k: x.masked_fill(k, 0j), torch.tensor([True, True, True]), m)


def test_bool_times_nonfinite_is_nan_like_cpu():
    b = torch.tensor([[True], [False]])
    f = torch.tensor([INF, -INF, NAN, 2.0])
    _same_as_cpu(torch.mul, b, f)
    _same_as_cpu(torch.mul, f, b)
    _same_as_cpu(lambda s, x, y: torch.addcmul(s, x, y, value=2), torch.tensor([True]), b, f)
    _same_as_cpu(lambda s, x, y: torch.addcmul(s, x, y), torch.zeros(4), f, b)


def test_int_operand_of_a_half_op_is_cast_to_half_first():
    # CPU casts 70000 to float16 (inf) before floor-dividing
    i = torch.tensor([70000, -3, 7, 65519], dtype=torch.int32)
    for dt in (torch.float16, torch.bfloat16):
        h = torch.tensor([2.0], dtype=dt)
        _same_as_cpu(torch.floor_divide, i, h)
        _same_as_cpu(lambda a, c: torch.div(a, c, rounding_mode="trunc"), i, h)
        _same_as_cpu(torch.remainder, i, h)
        _same_as_cpu(lambda s, a, c: torch.addcmul(s, a, c), h, i, h)


def test_complex_pow_at_zero_and_inf_like_cpu():
    base = torch.complex(torch.tensor([0.0, -0.0, INF, -INF, 2.0, 0.0, 0.0, 1.5]),
                         torch.tensor([0.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.5]))
    exp = torch.complex(torch.tensor([1.75, 2.0, 1.0, 1.75, 0.5, 0.0, -1.0, -2.0]),
                        torch.tensor([-0.75, 0.0, 0.0, -0.75, 0.25, 0.0, 0.0, 1.0]))
    for dt in (torch.complex64, torch.complex128):
        want = base.to(dt) ** exp.to(dt)
        got = (base.to(dt).to("tpu") ** exp.to(dt).to("tpu")).cpu()
        torch.testing.assert_close(got, want, equal_nan=True, rtol=1e-5, atol=1e-6)
    # a real base promoted to complex (the fuzzer's reproducer)
    x = torch.tensor([INF, -0.0, -0.4089970488271134], dtype=torch.float64)
    e = torch.complex(torch.tensor(1.75), torch.tensor(-0.75))
    torch.testing.assert_close((x.to("tpu") ** e.to("tpu")).cpu(), x ** e, equal_nan=True)


def test_complex_square_through_an_infinity_like_cpu():
    # CPU's pow(x, 2) is x * x: (inf + 100i)^2 is inf + inf i, not NaN
    z = torch.complex(torch.tensor([INF, 1.5, -INF, 2.0]), torch.tensor([100.0, INF, 1.0, -0.5]))
    for f in (torch.square, lambda x: x ** 2, lambda x: torch.pow(x, 2)):
        want = f(z)
        torch.testing.assert_close(f(z.to("tpu")).cpu(), want, equal_nan=True)


def test_complex_sqrt_keeps_the_sign_of_a_zero_imaginary_part():
    z = torch.complex(torch.tensor([-1.0, -1.0, 4.0, -4.0, 0.0, -0.0, -2.5]),
                      torch.tensor([-0.0, 0.0, -0.0, -0.0, -0.0, 0.0, -0.0]))
    for dt in (torch.complex64, torch.complex128):
        _same_as_cpu(torch.sqrt, z.to(dt))
    x = torch.tensor([-0.21804587, 2.8123217, -2.0316570, 0.49605766]).to(torch.complex64)
    _same_as_cpu(lambda v: v.sin().sqrt(), x)


def test_writes_into_expanded_tensors_like_cpu():
    # fill_, zero_, index_fill_ and x[i] = v write through stride-0 views on CPU
    def fill(x):
        return x.expand(4, 2).fill_(5)

    def zero(x):
        return x.flatten().expand(2, 2).zero_()

    def ifill(x):
        return x.expand(3, 2).index_fill_(0, torch.tensor([2], device=x.device), 7.0)

    def setitem(x):
        y = x.expand(3, 2)
        y[0] = 3.0
        y[1, 1] = -1.0
        return y

    for f in (fill, zero, ifill, setitem):
        base = torch.tensor([[0.5, -1.5]])
        want = f(base.clone())
        got = f(base.clone().to("tpu"))
        assert got.stride() == want.stride()
        check(got, want)
    # bool (the fuzzer's index_fill_ reproducer)
    b = torch.tensor([[True]])
    idx = torch.tensor([6])
    check(b.to("tpu").expand(7, 3).index_fill_(0, idx.to("tpu"), 0.001),
          b.expand(7, 3).index_fill_(0, idx, 0.001))
    # ...while ops CPU refuses to write through them still raise its error
    for f in (lambda x: x.expand(2, 2).add_(1), lambda x: x.expand(2, 2).copy_(torch.ones(2, 2, device=x.device)),
              lambda x: x.expand(2, 2).clamp_(1), lambda x: x.expand(2, 2).exp_(),
              lambda x: x.expand(2, 2).scatter_(0, torch.zeros(1, 1, dtype=torch.long, device=x.device), 1.0)):
        raises_like_cpu(f, torch.zeros(2), match="single memory location")


def test_out_dtype_checks_of_unary_ops_like_cpu():
    # TensorIterator's unary_op wants out= of the input's dtype
    raises_like_cpu(lambda a, o: torch.neg(a, out=o), torch.tensor([5]), torch.empty(1))
    raises_like_cpu(lambda a, o: torch.neg(a, out=o), torch.tensor([5.0]),
                    torch.empty(1, dtype=torch.int32))
    raises_like_cpu(lambda a, o: torch.clamp(a, 5, out=o), torch.tensor([[[5]]], dtype=torch.int8),
                    torch.tensor([[[-1.25]]]))
    # complex abs into a float out is fine, and so is clamp into its promoted dtype
    z = torch.complex(torch.tensor([3.0]), torch.tensor([4.0]))
    o = torch.empty(1, device="tpu")
    check(torch.abs(z.to("tpu"), out=o), torch.abs(z))
    o2 = torch.empty(2, device="tpu")
    check(torch.clamp(torch.tensor([1, 5]).to("tpu"), 2.5, out=o2), torch.clamp(torch.tensor([1, 5]), 2.5))


def test_lerp_weight_and_check_order_like_cpu():
    s, e = torch.tensor(1.25), torch.tensor(-0.5)
    # a 0-d weight tensor of another dtype takes part in promotion
    for w in (torch.tensor(-2, dtype=torch.int8), torch.tensor(0.25, dtype=torch.float64),
              torch.tensor(2.0 + 1j)):
        _same_as_cpu(torch.lerp, s, e, w)
        _same_as_cpu(torch.lerp, s.expand(3).clone(), e, w)
    raises_like_cpu(torch.lerp, torch.tensor([1.25]), torch.tensor([-0.5]),
                    torch.tensor([-2], dtype=torch.int8), match="for `weight` but got dtype")
    # in place: the broadcast shape is checked before the dtype
    raises_like_cpu(lambda a, b: a.lerp_(b, 0.5), torch.tensor(True), torch.tensor([False]))
    raises_like_cpu(lambda a, b: a.lerp_(b, b), torch.tensor(1.0), torch.tensor([0.0]))


def test_inplace_cast_is_checked_before_the_dtype_kernel():
    raises_like_cpu(lambda x: x.view(torch.int32).bitwise_and_(x), torch.tensor(1.5))
    raises_like_cpu(lambda x: x.view(torch.int32).bitwise_or_(1.5), torch.tensor(1.5))


def test_subnormal_floats_are_flushed_to_zero_pinned():
    # XLA:CPU runs with flush-to-zero / denormals-are-zero: a subnormal input
    # or result of arithmetic is 0 (CPU keeps it). Moving the bits is exact
    # (view, copy, to("cpu")); only arithmetic flushes. Documented in
    # docs/COVERAGE.md (Differential fuzzing).
    bits = torch.tensor([5, 1 << 20], dtype=torch.int32)
    sub = bits.view(torch.float32)
    assert (sub != 0).all()
    moved = bits.to("tpu").view(torch.float32)
    assert torch.equal(moved.cpu().view(torch.int32), bits)  # no flush when moving
    got = (moved * 1).cpu()
    assert torch.equal(got, torch.zeros(2))
    assert torch.equal(sub * 1, sub)  # CPU keeps them


def test_dtypes_cpu_refuses_raise_cpus_error():
    # issue 19 item 2, the cases the fuzzer found: complex erf family,
    # rounding, atan2, hypot, amax/amin; bool pow and bool scans
    z = torch.complex(torch.tensor([1.5, -0.5]), torch.tensor([0.25, 2.0]))
    b = torch.tensor([True, False])
    cases = [(f, (z,)) for f in (torch.erf, torch.erfc, torch.erfinv, torch.trunc, torch.floor,
                                 torch.ceil, torch.round, torch.frac,
                                 lambda x: torch.amax(x, 0), lambda x: torch.amin(x, 0))]
    cases += [(torch.atan2, (z, z)), (torch.hypot, (z, z)), (torch.pow, (b, b)),
              (lambda x: torch.cumsum(x, 0, dtype=torch.bool), (b,)),
              (lambda x: torch.cumprod(x, 0, out=torch.empty(2, dtype=torch.bool, device=x.device)),
               (b,))]
    for f, args in cases:
        with pytest.raises(NotImplementedError) as cpu:
            f(*args)
        with pytest.raises(NotImplementedError) as tpu:
            f(*[a.to("tpu") for a in args])
        assert str(tpu.value).splitlines()[0] == str(cpu.value).splitlines()[0]


def test_complex_add_of_an_infinite_part_pinned():
    # tpu adds; CPU multiplies b by alpha = 1 as a complex product first,
    # (0 + inf i)(1 + 0i) = NaN + inf i (docs/COVERAGE.md)
    a = torch.tensor([0.25, -1.0])
    b = torch.complex(torch.tensor([0.0, 2.0]), torch.tensor([INF, 1.0]))
    assert torch.isnan((a + b)[0].real)  # CPU's answer, pinned against
    got = (a.to("tpu") + b.to("tpu")).cpu()
    assert got[0].real.item() == 0.25 and got[0].imag.item() == INF
    torch.testing.assert_close(got[1], (a + b)[1])
