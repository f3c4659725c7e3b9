"""Dtypes tpu holds but does not compute in: uint16, uint32, uint64 and
complex32 (torch.chalf). Creation, copies both ways, views, fill_/zero_,
clone and item() are native byte moves (bit-exact, no fallback); every
computation on them runs PyTorch's CPU kernel, counted under the op's name,
so values and errors are CPU's. Conversions to and from them are CPU's too."""
import pytest
import torch

import torch_pjrt

pytestmark = pytest.mark.usefixtures("no_leaks")

DEV = "tpu"
UINTS = [torch.uint16, torch.uint32, torch.uint64]
STORAGE_ONLY = UINTS + [torch.chalf]
BITS = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64,
        torch.chalf: torch.int32, torch.float16: torch.int16}


def ident(dt):
    return str(dt).replace("torch.", "")


def sample(dt, shape=(4, 6)):
    """Values that show a signed or float reading: the top bit, all ones,
    and for complex32 infinities, NaN, -0.0 and a subnormal."""
    n = 1
    for s in shape:
        n *= s
    if dt == torch.chalf:
        re = torch.tensor([0.0, -0.0, 1.5, -2.25, float("inf"), float("nan"), 6e-8, 65504.0] * n)[:n]
        im = torch.tensor([1.0, -3.0, float("-inf"), 0.5, -0.0, 2.0, 7.0, -1e-3] * n)[:n]
        return torch.complex(re.half(), im.half()).reshape(shape)
    bits = {torch.uint16: 16, torch.uint32: 32, torch.uint64: 64}[dt]
    vals = [0, 1, 2**(bits - 1), 2**bits - 1, 2**(bits - 1) - 1, 12345, 7, 2**bits - 2]
    signed = [v - 2**bits if v >= 2**(bits - 1) else v for v in vals]
    return torch.tensor((signed * n)[:n], dtype=BITS[dt]).view(dt).reshape(shape)


def same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape and a.device == b.device
    assert torch.equal(a.contiguous().view(BITS[a.dtype]), b.contiguous().view(BITS[b.dtype]))


def ran_on_cpu(op):
    """The CPU kernel ran for op (any overload: a structured op reaches the
    CPU through its out= form, e.g. aten::mul.out for a * b)."""
    counts = torch_pjrt.fallbacks()
    return any(k == op or k.startswith(op + ".") for k in counts), counts


@pytest.fixture
def counted():
    torch.tpu.synchronize()
    torch_pjrt.reset_fallbacks()
    yield
    torch.tpu.synchronize()


@pytest.mark.parametrize("dt", STORAGE_ONLY, ids=ident)
def test_storage_ops_are_native_and_bit_exact(dt, counted):
    x = sample(dt)
    d = x.to(DEV)
    assert d.dtype == dt and d.device.type == DEV
    same_bits(d.cpu(), x)
    same_bits(d.clone().cpu(), x)
    same_bits(d.t().contiguous().cpu(), x.t().contiguous())   # a transposed read
    same_bits(d[1:, ::2].cpu(), x[1:, ::2])                    # a strided view
    same_bits(d.t()[2].cpu(), x.t()[2])                        # a column
    # writes into part of a storage, every alias sees them
    y = torch.zeros(4, 6, dtype=dt, device=DEV)
    yc = torch.zeros(4, 6, dtype=dt)
    y[1] = d[0]
    yc[1] = x[0]
    y[:, 2].copy_(x[:, 3])                                     # host -> a column view
    yc[:, 2].copy_(x[:, 3])
    y.t()[5] = d[:, 4]
    yc.t()[5] = x[:, 4]
    same_bits(y.cpu(), yc)
    # tpu -> a CPU view, tpu:0 -> tpu:1
    h = torch.zeros(6, 4, dtype=dt)
    h.t().copy_(d)
    same_bits(h.t(), x)
    same_bits(d.to("tpu:1").cpu(), x)
    # item() and empty
    assert torch.empty(3, 2, dtype=dt, device=DEV).shape == (3, 2)
    if dt == torch.chalf:
        assert d[0, 2].item() == x[0, 2].item()
    else:
        assert d[0, 3].item() == x[0, 3].item() == 2 ** (8 * x.element_size()) - 1
    assert torch_pjrt.fallbacks() == {}


@pytest.mark.parametrize("dt", STORAGE_ONLY, ids=ident)
def test_fill_and_zero_native(dt, counted):
    v = 3 + 2j if dt == torch.chalf else 2 ** (8 * torch.empty(0, dtype=dt).element_size()) - 1
    x = sample(dt).to(DEV)
    xc = sample(dt)
    x[1:3, ::2].fill_(v)           # part of a storage
    xc[1:3, ::2].fill_(v)
    x[3].zero_()
    xc[3].zero_()
    same_bits(x.cpu(), xc)
    f = torch.full((2, 3), v, dtype=dt, device=DEV)
    same_bits(f.cpu(), torch.full((2, 3), v, dtype=dt))
    z = torch.zeros(5, dtype=dt, device=DEV)
    same_bits(z.cpu(), torch.zeros(5, dtype=dt))
    assert torch_pjrt.fallbacks() == {}


def test_complex32_views_native(counted):
    x = sample(torch.chalf)
    d = x.to(DEV)
    r = torch.view_as_real(d)
    assert r.dtype == torch.float16 and r.shape == (4, 6, 2)
    assert torch.equal(r.cpu().view(torch.int16), torch.view_as_real(x).view(torch.int16))
    # a write through the real view shows in the complex tensor
    r[0, 0, 1] = 5.0
    assert d[0, 0].item() == complex(x[0, 0].real.item(), 5.0)
    # view_as_complex of float16 pairs, and reading it back
    p = torch.randn(3, 4, 2).half()
    c = torch.view_as_complex(p.to(DEV))
    assert c.dtype == torch.chalf
    same_bits(c.cpu(), torch.view_as_complex(p))
    assert torch_pjrt.fallbacks() == {}


def test_dtype_views_native(counted):
    i = torch.tensor([-1, 0, 7, -2**31], dtype=torch.int32)
    u = i.to(DEV).view(torch.uint32)
    assert u.dtype == torch.uint32
    assert u.cpu().tolist() == i.view(torch.uint32).tolist()
    back = u.view(torch.int32)
    assert back.cpu().tolist() == i.tolist()
    # int32 arithmetic on the int32 view stays native
    assert (back + 1).cpu().tolist() == (i + 1).tolist()
    assert torch_pjrt.fallbacks() == {}


@pytest.mark.parametrize("dt", UINTS, ids=ident)
def test_unsigned_compute_runs_cpu_kernels(dt, counted):
    x = sample(dt)
    d = x.to(DEV)
    same_bits((d * d).cpu(), x * x)                       # wraps as CPU does
    assert torch.equal((d == d[0]).cpu(), x == x[0])
    s = d.sum(1)
    assert s.dtype == x.sum(1).dtype and s.device.type == DEV
    assert torch.equal(s.cpu(), x.sum(1))
    v, idx = d.sort(1)                                    # unsigned order: 2**(n-1) is large
    same_bits(v.cpu(), x.sort(1).values)
    assert torch.equal(idx.cpu(), x.sort(1).indices)
    same_bits(torch.cat([d, d[:1]]).cpu(), torch.cat([x, x[:1]]))
    f = d.float()                                          # conversion: CPU's rounding
    assert torch.equal(f.cpu(), x.float())
    for op in ("aten::mul", "aten::eq", "aten::sum", "aten::sort", "aten::cat", "aten::_copy_from"):
        assert ran_on_cpu(op)[0], (op, ran_on_cpu(op)[1])


@pytest.mark.parametrize("dt", UINTS, ids=ident)
def test_unsigned_in_place_on_views(dt, counted):
    x = sample(dt)
    d = x.to(DEV)
    d[1:3].mul_(3)                                          # a CPU kernel writing a tpu view
    x[1:3].mul_(3)
    same_bits(d.cpu(), x)
    out = torch.empty(0, dtype=dt, device=DEV)
    torch.mul(d, d, out=out)
    same_bits(out.cpu(), x * x)
    assert ran_on_cpu("aten::mul")[0]


def test_complex32_compute_runs_cpu_kernels(counted):
    x = sample(torch.chalf)
    d = x.to(DEV)
    same_bits((d + d).cpu(), x + x)
    same_bits((d * d[0]).cpu(), x * x[0])
    same_bits(torch.cat([d, d]).cpu(), torch.cat([x, x]))
    d[2:].mul_(2)
    x[2:].mul_(2)
    same_bits(d.cpu(), x)
    torch.testing.assert_close(d.abs().cpu(), x.abs(), equal_nan=True, atol=0, rtol=0)
    for op in ("aten::add", "aten::mul", "aten::cat", "aten::abs"):
        assert ran_on_cpu(op)[0], (op, ran_on_cpu(op)[1])


@pytest.mark.parametrize("src", [torch.float32, torch.float16, torch.int64, torch.bool,
                                 torch.complex64], ids=ident)
def test_conversions_to_and_from_complex32(src, counted):
    x = torch.tensor([[1.5, -2.0, 0.0], [65504.0, 1e-8, -7.25]]).to(src)
    if src == torch.complex64:
        x = x + 1j * x.flip(1)
    d = x.to(DEV)
    same_bits(d.to(torch.chalf).cpu(), x.to(torch.chalf))
    same_bits(d.chalf().cpu(), x.chalf())
    c = x.to(torch.chalf)
    back = c.to(DEV).to(src)
    assert back.dtype == src
    assert torch.equal(back.cpu(), c.to(src))
    assert torch_pjrt.fallbacks().get("aten::_copy_from", 0) >= 2


@pytest.mark.parametrize("pair", [(torch.int64, torch.uint16), (torch.uint64, torch.int32),
                                  (torch.float32, torch.uint32), (torch.uint32, torch.uint64),
                                  (torch.uint16, torch.float16)], ids=lambda p: ident(p))
def test_unsigned_conversions(pair):
    a, b = pair
    x = torch.tensor([0, 1, 255, 65535, 70000, 2**31 - 1], dtype=torch.int64).to(a)
    assert torch.equal(x.to(DEV).to(b).cpu(), x.to(b))


def test_complex_of_half_and_view_as_complex(counted):
    re, im = torch.randn(5).half(), torch.randn(5).half()
    c = torch.complex(re.to(DEV), im.to(DEV))
    assert c.dtype == torch.chalf and c.device.type == DEV
    same_bits(c.cpu(), torch.complex(re, im))
    assert torch_pjrt.fallbacks().get("aten::complex", 0) == 1
    pairs = torch.stack([re, im], -1)
    v = torch.view_as_complex(pairs.to(DEV))
    same_bits(v.cpu(), torch.view_as_complex(pairs))
    same_bits(torch.view_as_real(v).cpu(), pairs)


def test_hash_tensor_uint64_result():
    x = torch.randn(4, 5)
    h = torch.hash_tensor(x.to(DEV), dim=1)
    assert h.dtype == torch.uint64 and h.device.type == DEV
    assert torch.equal(h.cpu(), torch.hash_tensor(x, dim=1))


@pytest.mark.parametrize("fn", [lambda x: x + x, lambda x: x << 1, lambda x: x.max(),
                                lambda x: x.abs()], ids=["add", "lshift", "max", "abs"])
def test_ops_cpu_refuses_raise_cpus_error(fn):
    x = sample(torch.uint32)
    with pytest.raises(Exception) as cpu:
        fn(x)
    with pytest.raises(type(cpu.value)) as tpu:
        fn(x.to(DEV))
    assert str(tpu.value).split("\n")[0] == str(cpu.value).split("\n")[0]


def test_strict_mode_refuses_the_cpu_kernel(monkeypatch):
    d = sample(torch.uint32).to(DEV)
    c = sample(torch.chalf).to(DEV)
    monkeypatch.setenv("TORCH_PJRT_FALLBACK", "error")
    with pytest.raises(NotImplementedError, match=r"aten::mul.out for UInt32 has no tpu lowering"):
        d * d
    with pytest.raises(NotImplementedError, match=r"aten::_copy_from for ComplexHalf"):
        c.to(torch.complex64)
    # storage ops stay allowed
    same_bits(d.clone().cpu(), sample(torch.uint32))
    d[0].fill_(3)
    assert d[0].cpu().tolist() == [3] * 6


def test_storage_only_result_of_a_lowering_raises():
    # A table op asked for a storage-only result from other dtypes (no
    # operand carries the routing key) raises instead of computing in u32.
    x = torch.randn(3, 4).to(DEV)
    with pytest.raises(NotImplementedError, match="a dtype tpu holds but does not compute in"):
        torch.sum(x, 1, dtype=torch.uint32)


def test_half_with_a_complex_number_gives_complex32_on_cpus_kernel(counted):
    # float16 (op) a Python complex promotes to complex32, which tpu holds but
    # does not compute in: CPU's kernel runs (counted) and the result lives on tpu.
    x = torch.tensor([1.5, -2.0, 0.25, 65504.0], dtype=torch.float16)
    d = x.to(DEV)
    for got, want in ((d * 1j, x * 1j), (d + 2j, x + 2j), (d - 1j, x - 1j),
                      (torch.add(d, 1j, alpha=2), torch.add(x, 1j, alpha=2))):
        assert got.device.type == "tpu" and got.dtype == torch.chalf
        same_bits(got.cpu(), want)
    assert ran_on_cpu("aten::mul")[0] and ran_on_cpu("aten::add")[0]
    # CPU has no complex32 division: its error, not a silent complex64
    with pytest.raises(NotImplementedError, match="not implemented for 'ComplexHalf'"):
        d / (1 + 1j)
    # in place, the complex result cannot be cast back to float16: CPU's error
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Half"):
        d.mul_(1j)
