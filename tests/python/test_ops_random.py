"""Random draws beyond the generator tests (test_rng.py): log_normal_,
cauchy_ and geometric_ on tpu: native draws (no CPU
fallback), the right distribution (moments and quantiles against the exact
ones, n = 200k, tolerances several standard errors wide; the generator is
seeded so the draw is fixed), reproducible under torch.manual_seed, CPU's
argument errors."""
import math

import pytest
import torch

import torch_pjrt

pytestmark = pytest.mark.usefixtures("no_leaks", "native_only")

N = 200_000


def _draw(fn, dtype=torch.float32):
    torch.manual_seed(0)
    t = torch.empty(N, dtype=dtype, device="tpu")
    fn(t)
    return t.cpu().double()


def test_log_normal_matches_the_distribution():
    x = _draw(lambda t: t.log_normal_(0.5, 0.4))
    assert (x > 0).all()
    logs = x.log()
    assert abs(logs.mean().item() - 0.5) < 0.01
    assert abs(logs.std().item() - 0.4) < 0.01
    # median of a log-normal is exp(mean)
    assert abs(x.median().item() - math.exp(0.5)) < 0.02


def test_cauchy_matches_the_distribution():
    x = _draw(lambda t: t.cauchy_(2.0, 3.0))
    assert torch.isfinite(x).all()
    q = torch.quantile(x[:100_000], torch.tensor([0.25, 0.5, 0.75], dtype=torch.float64))
    # quartiles of Cauchy(m, s): m - s, m, m + s
    torch.testing.assert_close(q, torch.tensor([-1.0, 2.0, 5.0], dtype=torch.float64),
                               atol=0.1, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.float64])
def test_geometric_matches_the_distribution(dtype):
    p = 0.3
    x = _draw(lambda t: t.geometric_(p), dtype)
    assert (x >= 1).all() and (x == x.round()).all()
    assert abs(x.mean().item() - 1 / p) < 0.03               # mean 1/p
    assert abs((x == 1).double().mean().item() - p) < 0.005  # P(X = 1) = p
    assert abs((x == 2).double().mean().item() - p * (1 - p)) < 0.005


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_types_draw_in_float(dtype):
    x = _draw(lambda t: t.log_normal_(0.0, 0.25), dtype)
    assert abs(x.log().mean().item()) < 0.01


def test_seeded_draws_repeat():
    for fn in (lambda t: t.log_normal_(), lambda t: t.cauchy_(), lambda t: t.geometric_(0.5)):
        a, b = _draw(fn), _draw(fn)
        assert torch.equal(a, b)
        assert not torch.equal(a[: N // 2], a[N // 2:])


def test_generator_argument_is_used():
    g1 = torch.Generator(device="tpu").manual_seed(7)
    g2 = torch.Generator(device="tpu").manual_seed(7)
    a = torch.empty(64, device="tpu").cauchy_(generator=g1)
    b = torch.empty(64, device="tpu").cauchy_(generator=g2)
    assert torch.equal(a.cpu(), b.cpu())


def test_in_place_on_a_view():
    x = torch.zeros(4, 6, device="tpu")
    x[:, 1:3].log_normal_()
    c = x.cpu()
    assert (c[:, 1:3] > 0).all()
    assert (c[:, 0] == 0).all() and (c[:, 3:] == 0).all()


def test_errors_match_cpu():
    t = torch.empty(3, device="tpu")
    with pytest.raises(RuntimeError, match="log_normal_ expects std > 0.0"):
        t.log_normal_(1, -1)
    with pytest.raises(RuntimeError, match="cauchy_ expects sigma > 0.0"):
        t.cauchy_(0, 0)
    with pytest.raises(RuntimeError, match=r"geometric_ expects p to be in \(0, 1\)"):
        t.geometric_(1.5)
    with pytest.raises(NotImplementedError, match="log_normal_cpu"):
        torch.empty(3, dtype=torch.int64, device="tpu").log_normal_()
    with pytest.raises(RuntimeError, match="Cauchy distribution is a continuous"):
        torch.empty(3, dtype=torch.int64, device="tpu").cauchy_()
    assert torch_pjrt.fallbacks() == {}
