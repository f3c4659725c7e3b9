"""The randomness API a CUDA user relies on, on tpu: torch.manual_seed seeds
every device; rng state save/restore reproduces draws; torch.Generator(
device="tpu") drives each random op through generator= and leaves the
default generator alone; a forked child of a process that used tpu gets
CUDA's "Cannot re-initialize" error instead of hanging. (test_rng.py checks
the distributions themselves.)"""
import os
import signal
import time

import pytest
import torch
import torch.nn.functional as F

import torch_pjrt
from conftest import run_python

pytestmark = pytest.mark.usefixtures("no_leaks", "native_only")

D0, D1 = "tpu:0", "tpu:1"


# Each random op that takes generator=, as a function of (device, generator).
DRAWS = {
    "rand": lambda d, g: torch.rand(40, device=d, generator=g),
    "randn": lambda d, g: torch.randn(5, 8, device=d, generator=g),
    "randint": lambda d, g: torch.randint(-5, 50, (40,), device=d, generator=g),
    "randint_like": lambda d, g: torch.randint_like(torch.empty(9, 2, device=d), 7, generator=g),
    "randperm": lambda d, g: torch.randperm(33, device=d, generator=g),
    "normal_": lambda d, g: torch.empty(40, device=d).normal_(2.0, 3.0, generator=g),
    "uniform_": lambda d, g: torch.empty(40, device=d, dtype=torch.bfloat16).uniform_(
        -1, 1, generator=g),
    "normal_tensor": lambda d, g: torch.normal(torch.arange(6.0, device=d), 1.0, generator=g),
    "bernoulli": lambda d, g: torch.bernoulli(torch.full((40,), 0.3, device=d), generator=g),
    "bernoulli_": lambda d, g: torch.empty(40, device=d).bernoulli_(0.7, generator=g),
    "exponential_": lambda d, g: torch.empty(40, device=d).exponential_(2.0, generator=g),
    "multinomial": lambda d, g: torch.multinomial(
        torch.arange(1.0, 31.0, device=d).expand(4, 30), 5, generator=g),
    "multinomial_repl": lambda d, g: torch.multinomial(torch.arange(1.0, 9.0, device=d), 40, True,
                                                       generator=g),
    "random_": lambda d, g: torch.empty(40, device=d, dtype=torch.int32).random_(0, 9,
                                                                                generator=g),
}


@pytest.mark.parametrize("name", list(DRAWS))
def test_generator_drives_each_op(name):
    draw = DRAWS[name]
    g = torch.Generator(device="tpu").manual_seed(1234)
    torch.manual_seed(7)
    ref_default = torch.rand(16, device=D0).cpu()
    torch.manual_seed(7)
    a = draw(D0, g).cpu()
    b = draw(D0, g).cpu()
    assert a.device.type == "cpu"
    # the draw moved g, not the default generator
    assert torch.equal(torch.rand(16, device=D0).cpu(), ref_default)
    assert not torch.equal(a, b) or name in ("bernoulli", "randint_like")
    g.manual_seed(1234)
    assert torch.equal(draw(D0, g).cpu(), a)
    assert torch.equal(draw(D0, g).cpu(), b)
    # another seed, other numbers
    g2 = torch.Generator(device="tpu").manual_seed(4321)
    assert not torch.equal(draw(D0, g2).cpu(), a)


def test_generator_state_and_offset():
    g = torch.Generator(device="tpu").manual_seed(5)
    assert g.device == torch.device(D0) and g.initial_seed() == 5
    st = g.get_state()
    assert st.dtype == torch.uint8 and st.device.type == "cpu"
    x = torch.randn(100, device=D0, generator=g).cpu()
    assert g.get_offset() > 0
    g.set_state(st)
    assert g.get_offset() == 0
    assert torch.equal(torch.randn(100, device=D0, generator=g).cpu(), x)
    # graphsafe state: a clone continues the same stream
    h = g.clone_state()
    assert torch.equal(torch.rand(7, device=D0, generator=g).cpu(),
                       torch.rand(7, device=D0, generator=h).cpu())
    # a generator for tpu:1 draws on tpu:1
    g1 = torch.Generator(device=D1).manual_seed(5)
    assert g1.device == torch.device(D1)
    assert torch.equal(torch.randn(100, device=D1, generator=g1).cpu(), x)
    msg = "Expected a 'cpu' device type for generator but found 'tpu'"
    with pytest.raises(RuntimeError, match=msg):
        torch.rand(3, device="cpu", generator=torch.Generator(device="tpu"))


def test_manual_seed_seeds_every_device():
    torch.manual_seed(2024)
    assert torch.tpu.initial_seed() == 2024
    with torch.tpu.device(1):
        assert torch.tpu.initial_seed() == 2024
    a0 = torch.randn(50, device=D0).cpu()
    a1 = torch.randn(50, device=D1).cpu()
    assert torch.equal(a0, a1)  # same seed, same stream on each device
    torch.manual_seed(2024)
    torch.randn(50, device=D1)  # drawing on tpu:1 first changes nothing on tpu:0
    assert torch.equal(torch.randn(50, device=D0).cpu(), a0)
    # torch.tpu.manual_seed seeds only the current device
    torch.manual_seed(1)
    torch.tpu.manual_seed(2)
    assert torch.tpu.initial_seed() == 2
    with torch.tpu.device(1):
        assert torch.tpu.initial_seed() == 1


def test_rng_state_round_trips_on_each_device():
    torch.manual_seed(11)
    states = torch.tpu.get_rng_state_all()
    assert len(states) == torch.tpu.device_count() == 2
    draws = [[torch.rand(20, device=d).cpu(), torch.randint(0, 100, (20,), device=d).cpu()]
             for d in (D0, D1)]
    torch.tpu.set_rng_state_all(states)
    for d, (r, i) in zip((D0, D1), draws):
        assert torch.equal(torch.rand(20, device=d).cpu(), r)
        assert torch.equal(torch.randint(0, 100, (20,), device=d).cpu(), i)
    s1 = torch.tpu.get_rng_state(D1)
    x = torch.randn(9, device=D1).cpu()
    torch.tpu.set_rng_state(s1, device=1)
    assert torch.equal(torch.randn(9, device=D1).cpu(), x)
    # torch.random.fork_rng restores the tpu state afterwards
    torch.manual_seed(3)
    with torch.random.fork_rng(devices=[0, 1], device_type="tpu"):
        inside = torch.rand(5, device=D0).cpu()
    assert torch.equal(torch.rand(5, device=D0).cpu(), inside)


def test_dropout_reproducible_with_seed():
    x = torch.ones(1000, device=D0)
    torch.manual_seed(9)
    a = F.dropout(x, 0.3, training=True).cpu()
    torch.manual_seed(9)
    assert torch.equal(F.dropout(x, 0.3, training=True).cpu(), a)
    assert not torch.equal(F.dropout(x, 0.3, training=True).cpu(), a)
    assert torch.equal(F.dropout(x, 0.3, training=False).cpu(), x.cpu())


def test_multinomial_distribution():
    g = torch.Generator(device="tpu").manual_seed(3)
    p = torch.tensor([0.1, 0.0, 0.3, 0.6], device=D0)
    n = 40_000
    s = torch.multinomial(p, n, replacement=True, generator=g)
    assert s.dtype == torch.int64 and s.shape == (n,) and s.device == torch.device(D0)
    freq = torch.bincount(s.cpu(), minlength=4).double() / n
    torch.testing.assert_close(freq, torch.tensor([0.1, 0.0, 0.3, 0.6], dtype=torch.float64),
                               atol=0.01, rtol=0)
    # without replacement: distinct categories, never a zero-probability one
    # while positive ones remain; the first pick follows p
    w = torch.multinomial(p.expand(4000, 4), 3, generator=g).cpu()
    assert w.shape == (4000, 3)
    assert (w.sort(1).values == torch.tensor([0, 2, 3])).all()
    first = torch.bincount(w[:, 0], minlength=4).double() / 4000
    torch.testing.assert_close(first, torch.tensor([0.1, 0.0, 0.3, 0.6], dtype=torch.float64),
                               atol=0.03, rtol=0)
    # all categories of each row, in half precision and unnormalised weights
    q = torch.rand(3, 50, device=D0, dtype=torch.float16) + 0.5
    full = torch.multinomial(q, 50).cpu()
    assert (full.sort(1).values == torch.arange(50)).all()
    out = torch.empty(0, dtype=torch.int64, device=D0)
    r = torch.multinomial(q, 2, out=out)
    assert r is out and out.shape == (3, 2)


def test_multinomial_errors_match_cpu():
    def same(fn):
        with pytest.raises(RuntimeError) as cpu:
            fn("cpu")
        with pytest.raises(RuntimeError) as tpu:
            fn(D0)
        assert str(tpu.value) == str(cpu.value)

    t = lambda d, v: torch.tensor(v, device=d)  # noqa: E731
    same(lambda d: torch.multinomial(t(d, [1.0, 2.0]), 3))
    same(lambda d: torch.multinomial(t(d, [1.0, 2.0]), 0))
    same(lambda d: torch.multinomial(t(d, [1, 2]), 1))
    for repl, n in ((False, 1), (True, 1), (True, 2)):
        same(lambda d: torch.multinomial(t(d, [1.0, -1.0]), n, repl))
        same(lambda d: torch.multinomial(t(d, [[1.0, 0.0], [0.0, 0.0]]), n, repl))
        same(lambda d: torch.multinomial(t(d, [1.0, float("inf")]), n, repl))
        same(lambda d: torch.multinomial(t(d, [1.0, float("nan")]), n, repl))


def _fork_and_check(child_body):
    """Runs child_body() in a forked child; returns its exit status. The child
    exits with os._exit so it runs no pytest or interpreter teardown."""
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            code = child_body()
        except BaseException:  # noqa: BLE001 - anything else is a failure code
            code = 4
        finally:
            os._exit(code)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # a child that hangs is a failure, not a hung suite
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return "hung"


MSG = ("Cannot re-initialize tpu in forked subprocess. To use tpu with multiprocessing, "
       "you must use the 'spawn' start method")


def test_forked_child_gets_cuda_like_error():
    x = torch.ones(3, device=D0)  # the parent has used tpu
    assert torch.tpu.is_initialized() and not torch.tpu._is_in_bad_fork()

    def child():
        if not torch.tpu._is_in_bad_fork():
            return 10
        torch.manual_seed(0)  # skips tpu in a bad fork, as for cuda; CPU still seeded
        for fn in (lambda: torch.ones(2, device=D0), lambda: x + 1, lambda: x.cpu()):
            try:
                fn()
                return 11
            except RuntimeError as e:
                if MSG not in str(e):
                    return 12
        # CPU work is unaffected
        return 0 if torch.ones(2).sum().item() == 2 else 13

    assert _fork_and_check(child) == 0
    # the parent goes on using tpu
    assert torch.equal((x + 1).cpu(), torch.full((3,), 2.0))


def test_forked_child_exits_cleanly():
    # a child that ends normally runs the atexit hooks, which must leave tpu alone
    code = """
import os, sys, torch
x = torch.ones(3, device="tpu", requires_grad=True)
(x * 2).sum().backward()
pid = os.fork()
if pid == 0:
    sys.exit(0)
_, st = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(st))
"""
    r = run_python(code)
    assert r.returncode == 0 and r.stdout.strip() == "child 0", r.stderr[-2000:]
    assert "Traceback" not in r.stderr and "Cannot re-initialize" not in r.stderr, r.stderr
