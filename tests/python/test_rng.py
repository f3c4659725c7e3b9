"""Randomness on tpu: the per-device generator (seed + offset) and the random
ops drawn from stablehlo.rng_bit_generator. The generator differs from CPU's,
so values are checked statistically (n = 100k unless noted), plus
reproducibility (same seed, same numbers; state save/restore; a draw on
tpu:1 leaves tpu:0's stream alone), CPU's error messages, and that every op
ran natively."""
import math

import pytest
import torch
import torch.nn.functional as F

import torch_pjrt
from conftest import dtype_id

pytestmark = pytest.mark.usefixtures("no_leaks", "native_only")

N = 100_000
D0 = "tpu:0"
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def same_error(fn, match=None):
    """fn(device) raises on tpu what it raises on CPU: type and message."""
    with pytest.raises(Exception) as cpu:
        fn("cpu")
    with pytest.raises(type(cpu.value)) as tpu:
        fn(D0)
    assert str(tpu.value) == str(cpu.value)
    if match:
        assert match in str(tpu.value)


# ---- distributions -------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
def test_uniform(dtype):
    torch.manual_seed(0)
    x = torch.empty(N, device=D0, dtype=dtype).uniform_(-2, 3)
    assert x.device.type == "tpu" and x.dtype == dtype
    c = x.cpu().double()
    assert c.min() >= -2 and c.max() < 3
    assert abs(c.mean() - 0.5) < 0.03
    assert abs(c.var() - 25 / 12) < 0.05 * 25 / 12
    assert c.unique().numel() > (50 if dtype == torch.bfloat16 else 1000)


def test_rand_and_rand_like():
    torch.manual_seed(1)
    x = torch.rand(200, 500, device=D0)
    c = x.cpu()
    assert x.shape == (200, 500) and c.min() >= 0 and c.max() < 1
    assert abs(c.mean() - 0.5) < 0.01 and abs(c.var() - 1 / 12) < 0.005
    # no two rows alike: each element has its own bits
    assert c.unique().numel() > 0.99 * c.numel()
    # neighbours are independent (they come from one threefry block)
    flat = c.flatten()
    assert abs(torch.corrcoef(torch.stack([flat[0::2], flat[1::2]]))[0, 1]) < 0.02
    y = torch.rand_like(x)
    assert not torch.equal(y.cpu(), c)


def test_complex_uniform_and_normal():
    torch.manual_seed(1)
    x = torch.rand(N, dtype=torch.complex64, device=D0).cpu()
    assert x.dtype == torch.complex64
    assert 0 <= x.real.min() and x.real.max() < 1 and 0 <= x.imag.min() and x.imag.max() < 1
    z = torch.randn(N, dtype=torch.complex64, device=D0).cpu()
    # each part has variance 1/2, as on CPU
    assert abs(z.real.std() - 0.5 ** 0.5) < 0.01 and abs(z.imag.std() - 0.5 ** 0.5) < 0.01


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=dtype_id)
def test_normal(dtype):
    torch.manual_seed(2)
    x = torch.empty(N, device=D0, dtype=dtype).normal_(1.0, 2.0)
    c = x.cpu().double()
    assert torch.isfinite(c).all()
    assert abs(c.mean() - 1.0) < 0.03
    assert abs(c.std() - 2.0) < 0.03
    # the tails: about 4.55% beyond 2 sigma
    assert abs(((c - 1).abs() > 4).double().mean() - 0.0455) < 0.005
    z = torch.randn(N, device=D0, dtype=dtype).cpu().double()
    assert abs(z.mean()) < 0.02 and abs(z.std() - 1) < 0.02


def test_normal_tensor_overloads():
    torch.manual_seed(3)
    mean = torch.tensor([-10.0, 0.0, 10.0]).repeat(N // 3).to(D0)
    std = torch.tensor([1.0, 2.0, 0.0]).repeat(N // 3).to(D0)
    x = torch.normal(mean, std).cpu().view(-1, 3)
    assert abs(x[:, 0].mean() + 10) < 0.05 and abs(x[:, 0].std() - 1) < 0.05
    assert abs(x[:, 1].mean()) < 0.1 and abs(x[:, 1].std() - 2) < 0.1
    assert (x[:, 2] == 10).all()  # std 0
    y = torch.normal(mean, 0.5).cpu().view(-1, 3)
    assert abs(y[:, 2].mean() - 10) < 0.05 and abs(y[:, 2].std() - 0.5) < 0.05
    z = torch.normal(5.0, std).cpu().view(-1, 3)
    assert abs(z[:, 1].mean() - 5) < 0.1 and (z[:, 2] == 5).all()
    assert torch.normal(mean, std).dtype == torch.float32


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int64,
                                   torch.bool], ids=dtype_id)
def test_bernoulli_float_p(dtype):
    torch.manual_seed(4)
    x = torch.empty(N, device=D0, dtype=dtype).bernoulli_(0.3)
    c = x.cpu()
    assert c.dtype == dtype
    assert set(c.double().unique().tolist()) == {0.0, 1.0}
    assert abs(c.double().mean() - 0.3) < 0.01
    assert (torch.ones(1000, device=D0, dtype=dtype).bernoulli_(0.0).cpu() == 0).all()
    assert (torch.zeros(1000, device=D0, dtype=dtype).bernoulli_(1.0).cpu() == 1).all()


def test_bernoulli_tensor_p():
    torch.manual_seed(5)
    p = torch.tensor([0.0, 0.25, 0.9, 1.0]).repeat(N // 4, 1).to(D0)
    x = torch.bernoulli(p)  # functional: arrives as bernoulli_.Tensor
    c = x.cpu()
    assert x.dtype == torch.float32 and x.shape == p.shape
    assert (c[:, 0] == 0).all() and (c[:, 3] == 1).all()
    assert abs(c[:, 1].mean() - 0.25) < 0.01 and abs(c[:, 2].mean() - 0.9) < 0.01
    # p broadcasts to self; self keeps its dtype
    y = torch.empty(N // 4, 4, device=D0, dtype=torch.int32).bernoulli_(p[0])
    assert y.dtype == torch.int32 and (y.cpu()[:, 3] == 1).all()
    z = torch.full((N,), 0.5, device=D0).bernoulli(0.7)  # bernoulli.p
    assert abs(z.cpu().mean() - 0.7) < 0.01


def test_exponential():
    torch.manual_seed(6)
    x = torch.empty(N, device=D0).exponential_(2.0).cpu().double()
    assert x.min() > 0 and torch.isfinite(x).all()
    assert abs(x.mean() - 0.5) < 0.01 and abs(x.std() - 0.5) < 0.015


# ---- random_ / randint ----------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32,
                                   torch.int64, torch.bool, torch.float32, torch.float16],
                         ids=dtype_id)
def test_random_full_range(dtype):
    torch.manual_seed(7)
    x = torch.empty(20_000, device=D0, dtype=dtype).random_().cpu()
    if dtype == torch.bool:
        assert abs(x.double().mean() - 0.5) < 0.02
        return
    if dtype.is_floating_point:
        hi = 2 ** {torch.float32: 24, torch.float16: 11}[dtype]
        assert (x == x.round()).all()
    else:
        hi = torch.iinfo(dtype).max
    assert x.min() >= 0 and x.double().max() <= hi
    # spread over the whole range: the top quarter is reached
    assert x.double().max() > 0.75 * hi
    assert abs(x.double().mean() / hi - 0.5) < 0.02


def test_random_to_and_from():
    torch.manual_seed(8)
    x = torch.empty(N, device=D0, dtype=torch.int64).random_(10).cpu()
    assert x.min() == 0 and x.max() == 9
    assert (torch.bincount(x, minlength=10).double() / N - 0.1).abs().max() < 0.01
    y = torch.empty(N, device=D0, dtype=torch.int32).random_(-5, 3).cpu()
    assert y.min() == -5 and y.max() == 2
    f = torch.empty(N, device=D0).random_(-3, 4).cpu()
    assert f.min() == -3 and f.max() == 3 and (f == f.round()).all()
    # a range wider than 32 bits
    big = torch.empty(N, device=D0, dtype=torch.int64).random_(-(2 ** 40), 2 ** 40).cpu().double()
    assert big.min() >= -(2 ** 40) and big.max() < 2 ** 40
    assert abs(big.mean()) < 0.02 * 2 ** 40 and big.max() > 0.9 * 2 ** 40
    # from with no to: [from, max]
    u = torch.empty(N, device=D0, dtype=torch.uint8).random_(200, None).cpu()
    assert u.min() == 200 and u.max() == 255
    # the whole int64 range: negative and positive, reaching far out
    w = torch.empty(N, device=D0, dtype=torch.int64).random_(-(2 ** 63), None).cpu()
    assert (w < 0).double().mean().item() == pytest.approx(0.5, abs=0.01)
    assert w.double().abs().max() > 2 ** 62


def test_randint():
    torch.manual_seed(9)
    x = torch.randint(-5, 7, (N,), device=D0)
    assert x.dtype == torch.int64
    c = x.cpu()
    assert c.min() == -5 and c.max() == 6 and c.unique().numel() == 12
    y = torch.randint(3, (1000,), device=D0, dtype=torch.int16).cpu()
    assert y.dtype == torch.int16 and set(y.tolist()) == {0, 1, 2}
    z = torch.randint_like(x, 100, 200).cpu()
    assert z.min() >= 100 and z.max() < 200


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32], ids=dtype_id)
def test_randperm(dtype):
    torch.manual_seed(10)
    p = torch.randperm(1000, device=D0, dtype=dtype)
    assert p.dtype == dtype and p.shape == (1000,)
    c = p.cpu()
    assert torch.equal(c.sort().values, torch.arange(1000, dtype=dtype))
    assert not torch.equal(c, torch.arange(1000, dtype=dtype))
    q = torch.randperm(1000, device=D0, dtype=dtype).cpu()
    assert not torch.equal(c, q)
    assert torch.randperm(0, device=D0).shape == (0,)
    assert torch.randperm(1, device=D0).cpu().tolist() == [0]


def test_randperm_is_uniform():
    torch.manual_seed(11)
    first = torch.stack([torch.randperm(4, device=D0)[0] for _ in range(400)]).cpu()
    counts = torch.bincount(first, minlength=4)
    assert counts.min() > 60  # 100 expected each


# ---- dropout --------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=dtype_id)
def test_dropout_training(dtype):
    torch.manual_seed(12)
    x = torch.randn(N, dtype=torch.float64).to(dtype)
    xt = x.to(D0).requires_grad_()
    y = F.dropout(xt, p=0.3, training=True)
    assert y.dtype == dtype
    c = y.detach().cpu()
    kept = c != 0
    assert abs(1 - kept.double().mean() - 0.3) < 0.01
    scale = 1 / 0.7
    torch.testing.assert_close(c[kept], (x[kept].float() * scale).to(dtype), rtol=1e-2 if
                               dtype == torch.bfloat16 else 1e-6, atol=0)
    y.backward(torch.ones_like(y))
    g = xt.grad.cpu()
    torch.testing.assert_close(g, (kept.to(dtype) * scale).to(dtype), rtol=1e-2 if
                               dtype == torch.bfloat16 else 1e-6, atol=0)


def test_dropout_edge_cases():
    torch.manual_seed(13)
    x = torch.randn(1000, device=D0)
    assert torch.equal(F.dropout(x, p=0.0, training=True).cpu(), x.cpu())
    assert (F.dropout(x, p=1.0, training=True).cpu() == 0).all()
    assert torch.equal(F.dropout(x, p=0.5, training=False).cpu(), x.cpu())
    out, mask = torch.native_dropout(x, 0.5, False)
    assert torch.equal(out.cpu(), x.cpu()) and mask.dtype == torch.bool and mask.cpu().all()
    # p = 1 through native_dropout itself: zeros, not NaN
    out, mask = torch.native_dropout(x, 1.0, True)
    assert (out.cpu() == 0).all() and not mask.cpu().any()
    # a dropped inf becomes NaN, as on CPU (inf * 0)
    inf = torch.full((1000,), float("inf"), device=D0)
    out, mask = torch.native_dropout(inf, 0.5, True)
    o, m = out.cpu(), mask.cpu()
    assert torch.isnan(o[~m]).all() and torch.isinf(o[m]).all()
    m = torch.nn.Dropout(0.25).to(D0).train()
    z = m(torch.ones(N, device=D0)).cpu()
    assert abs((z == 0).double().mean() - 0.25) < 0.01
    assert z.unique().tolist() == [0.0, pytest.approx(1 / 0.75)]


def test_native_dropout_backward_vs_cpu():
    g = torch.randn(64, 33, dtype=torch.float32)
    mask = torch.rand(64, 33) < 0.6
    exp = torch.ops.aten.native_dropout_backward(g, mask, 2.5)
    got = torch.ops.aten.native_dropout_backward(g.to(D0), mask.to(D0), 2.5)
    torch.testing.assert_close(got.cpu(), exp, rtol=0, atol=0)


# ---- the generator ----------------------------------------------------------------

def test_same_seed_same_numbers():
    torch.manual_seed(123)
    a = [torch.rand(100, device=D0).cpu(), torch.randn(7, 3, device=D0).cpu(),
         torch.randint(0, 10, (50,), device=D0).cpu(), torch.randperm(20, device=D0).cpu()]
    torch.manual_seed(123)
    b = [torch.rand(100, device=D0).cpu(), torch.randn(7, 3, device=D0).cpu(),
         torch.randint(0, 10, (50,), device=D0).cpu(), torch.randperm(20, device=D0).cpu()]
    for x, y in zip(a, b):
        assert torch.equal(x, y)
    torch.manual_seed(124)
    assert not torch.equal(torch.rand(100, device=D0).cpu(), a[0])
    # consecutive draws differ
    assert not torch.equal(torch.rand(100, device=D0).cpu(), torch.rand(100, device=D0).cpu())


def test_other_device_does_not_disturb():
    torch.manual_seed(5)
    a1, a2 = torch.rand(64, device=D0).cpu(), torch.rand(64, device=D0).cpu()
    torch.manual_seed(5)
    b1 = torch.rand(64, device=D0).cpu()
    for _ in range(3):
        torch.rand(1000, device="tpu:1")
        torch.randn(10, device="tpu:1")
    b2 = torch.rand(64, device=D0).cpu()
    assert torch.equal(a1, b1) and torch.equal(a2, b2)
    # tpu:1 seeded alike draws the same stream as tpu:0
    torch.manual_seed(5)
    assert torch.equal(torch.rand(64, device="tpu:1").cpu(), a1)


def test_seed_functions():
    torch.tpu.manual_seed(77)
    assert torch.tpu.initial_seed() == 77
    torch.tpu.manual_seed_all(78)
    with torch.tpu.device(1):
        assert torch.tpu.initial_seed() == 78
    torch.tpu.manual_seed(-1)  # wraps like torch.Generator.manual_seed
    assert torch.tpu.initial_seed() == torch.Generator().manual_seed(-1).initial_seed()
    torch.tpu.seed()
    s = torch.tpu.initial_seed()
    assert 0 <= s < 2 ** 64
    torch.manual_seed(99)
    assert torch.tpu.initial_seed() == 99
    with pytest.raises(RuntimeError):
        torch.tpu.manual_seed(2 ** 64)


def test_rng_state_round_trip():
    torch.manual_seed(31)
    torch.rand(10, device=D0)
    state = torch.tpu.get_rng_state()
    assert state.dtype == torch.uint8 and state.device.type == "cpu" and state.numel() == 16
    a = torch.randn(100, device=D0).cpu()
    b = torch.rand(5, device=D0).cpu()
    torch.tpu.set_rng_state(state)
    assert torch.equal(torch.randn(100, device=D0).cpu(), a)
    assert torch.equal(torch.rand(5, device=D0).cpu(), b)
    states = torch.tpu.get_rng_state_all()
    assert len(states) == torch.tpu.device_count()
    c = torch.rand(5, device="tpu:1").cpu()
    torch.tpu.set_rng_state_all(states)
    assert torch.equal(torch.rand(5, device="tpu:1").cpu(), c)
    with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
        torch.tpu.set_rng_state(torch.zeros(16))
    with pytest.raises(RuntimeError, match="RNG state is wrong size"):
        torch.tpu.set_rng_state(torch.zeros(3, dtype=torch.uint8))


def test_fork_rng():
    torch.manual_seed(41)
    with torch.random.fork_rng(devices=[0], device_type="tpu"):
        a = torch.rand(10, device=D0).cpu()
    b = torch.rand(10, device=D0).cpu()
    assert torch.equal(a, b)


def test_generator_object():
    g = torch.Generator(device="tpu")
    assert g.device.type == "tpu"
    g.manual_seed(2024)
    assert g.initial_seed() == 2024
    torch.manual_seed(1)
    ref = torch.rand(10, device=D0).cpu()
    torch.manual_seed(1)
    a = torch.rand(100, device=D0, generator=g).cpu()
    # drawing from g leaves the default generator alone
    assert torch.equal(torch.rand(10, device=D0).cpu(), ref)
    g.manual_seed(2024)
    assert torch.equal(torch.rand(100, device=D0, generator=g).cpu(), a)
    st = g.get_state()
    x = torch.empty(50, device=D0).normal_(generator=g).cpu()
    g.set_state(st)
    assert torch.equal(torch.empty(50, device=D0).normal_(generator=g).cpu(), x)
    h = g.clone_state()
    assert torch.equal(torch.randperm(30, device=D0, generator=g).cpu(),
                       torch.randperm(30, device=D0, generator=h).cpu())
    with pytest.raises(RuntimeError, match="device type for generator"):
        torch.rand(3, device=D0, generator=torch.Generator())


def test_draws_do_not_recompile():
    torch.manual_seed(0)
    torch.rand(33, device=D0)
    torch.tpu.synchronize()
    before = torch_pjrt.metrics()["compiles"]
    xs = [torch.rand(33, device=D0) for _ in range(5)]
    torch.manual_seed(3)
    xs.append(torch.rand(33, device=D0))
    torch.tpu.synchronize()
    assert torch_pjrt.metrics()["compiles"] == before
    assert len({tuple(x.cpu().tolist()) for x in xs}) == 6


def test_in_place_on_views():
    torch.manual_seed(0)
    x = torch.zeros(4, 6, device=D0)
    x[:, ::2].uniform_(1, 2)
    c = x.cpu()
    assert (c[:, 1::2] == 0).all() and (c[:, ::2] >= 1).all() and (c[:, ::2] < 2).all()
    y = torch.zeros(5, 4, device=D0).t()
    y.normal_()
    assert (y.cpu() != 0).all()
    z = torch.zeros(3, 3, dtype=torch.int64, device=D0)
    z.diagonal().random_(5, 9)
    zc = z.cpu()
    assert (zc.diagonal() >= 5).all() and (zc - torch.diag(zc.diagonal()) == 0).all()


def test_zero_element_and_scalar():
    assert torch.rand(0, 3, device=D0).shape == (0, 3)
    assert torch.randn((), device=D0).shape == ()
    assert 0 <= torch.rand((), device=D0).item() < 1


# ---- errors ---------------------------------------------------------------------

def test_errors_match_cpu():
    same_error(lambda d: torch.empty(3, device=d).uniform_(1, 0), "uniform_ expects")
    same_error(lambda d: torch.empty(3, device=d, dtype=torch.int32).uniform_())
    same_error(lambda d: torch.empty(3, device=d).normal_(0, -1), "normal expects std >= 0.0")
    same_error(lambda d: torch.empty(3, device=d).bernoulli_(1.5), "bernoulli_ expects p")
    same_error(lambda d: torch.empty(3, device=d).bernoulli_(-0.1))
    same_error(lambda d: torch.bernoulli(torch.full((3,), 1.5, device=d)), "p_in >= 0")
    same_error(lambda d: torch.empty(3, device=d).bernoulli_(torch.full((3,), -0.5, device=d)))
    same_error(lambda d: torch.empty(3, device=d).random_(5, 2), "'from' to be less than 'to'")
    same_error(lambda d: torch.empty(3, device=d).random_(0))
    same_error(lambda d: torch.empty(3, device=d, dtype=torch.uint8).random_(0, 300),
               "out of bounds")
    same_error(lambda d: torch.empty(3, device=d, dtype=torch.bool).random_(0, 3))
    same_error(lambda d: torch.empty(3, device=d).exponential_(0), "lambda > 0.0")
    same_error(lambda d: torch.empty(3, device=d, dtype=torch.int32).exponential_())
    same_error(lambda d: torch.randint(5, 2, (3,), device=d))
    same_error(lambda d: torch.randperm(300, device=d, dtype=torch.uint8))
    same_error(lambda d: torch.randperm(3000, device=d, dtype=torch.float16))
    same_error(lambda d: torch.normal(torch.zeros(3, device=d), -torch.ones(3, device=d)))


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool, torch.float16])
def test_native_dropout_backward_dtype_matches_cpu(dtype):
    g = torch.tensor([1, 2, 3, 0]).to(dtype)
    m = torch.tensor([True, False, True, True])
    want = torch.ops.aten.native_dropout_backward(g, m, 2.0)
    got = torch.ops.aten.native_dropout_backward(g.to("tpu"), m.to("tpu"), 2.0)
    assert got.dtype == want.dtype
    torch.testing.assert_close(got.cpu(), want)
