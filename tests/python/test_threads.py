"""Several Python threads using the device at once (issue 19, item 1).

Each scenario runs in a subprocess, so a crash fails the test instead of
taking pytest down, and is bounded in time (about 20 s in all). Every read
must see a whole write: a storage's buffer is swapped under its box's lock
(src/rt/box.h), and an in-place write donates the old buffer only while no
other thread holds it.
"""

import os
import subprocess
import sys
import textwrap

import pytest

SECONDS = float(os.environ.get("TORCH_PJRT_STRESS_SECONDS", "5"))


def run_script(body: str, timeout: float = 120.0) -> str:
    code = "import threading, time, random, torch, torch_pjrt\n" + textwrap.dedent(body)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=timeout, env={**os.environ, "STRESS_SECONDS": str(SECONDS)})
    assert p.returncode == 0, (
        f"exit {p.returncode} (a negative code is a signal: {-p.returncode} is SIGSEGV when 11)"
        f"\nstdout:\n{p.stdout[-2000:]}\nstderr:\n{p.stderr[-4000:]}")
    return p.stdout


def test_in_place_writer_with_readers():
    # The reproducer: a donating in-place add on a 4 MiB storage
    # while three threads read it. Each sum is a whole number of adds
    # (every element the same), and the final value counts every add.
    out = run_script("""
        import os
        n = 1 << 20
        w = torch.zeros(n, device="tpu")
        stop = time.time() + float(os.environ["STRESS_SECONDS"])
        adds = [0]
        bad = []
        def writer():
            while time.time() < stop:
                w.add_(1.0)
                adds[0] += 1
        def reader():
            while time.time() < stop:
                try:
                    s = w.sum().item()
                except Exception as e:  # a read must not fail either
                    bad.append(repr(e))
                    return
                if s != int(s / n) * n:
                    bad.append(s)
        ts = [threading.Thread(target=writer)] + [threading.Thread(target=reader) for _ in range(3)]
        for t in ts: t.start()
        for t in ts: t.join()
        assert not bad, bad[:5]
        assert adds[0] > 0
        assert torch.equal(w.cpu(), torch.full((n,), float(adds[0]))), (w[:4], adds[0])
        print("ok", adds[0])
    """)
    assert out.startswith("ok")


def test_mixed_ops_on_shared_tensors():
    # Four threads: in-place writes (whole storages and slices) and reads of
    # shared tensors, fresh tensors, transfers, random draws and syncs. The
    # private computation is checked against the CPU at the end.
    out = run_script("""
        import os
        shared = torch.randn(256, 256, device="tpu")
        big = torch.zeros(1 << 20, device="tpu")
        stop = time.time() + float(os.environ["STRESS_SECONDS"])
        errors = []
        def work(seed):
            rng = random.Random(seed)
            x = torch.randn(64, 64, generator=torch.Generator().manual_seed(seed))
            xt, steps = x.to("tpu"), 0
            while time.time() < stop:
                k = rng.randrange(9)
                try:
                    if k == 0: big.add_(1.0)
                    elif k == 1: big.sum().item()
                    elif k == 2: (shared @ shared).relu().mean().item()
                    elif k == 3: shared[rng.randrange(256)].mul_(1.0)
                    elif k == 4: xt = (xt * 0.5 + 1).tanh(); steps += 1
                    elif k == 5: torch.tensor([rng.random()] * 17, device="tpu").cpu()
                    elif k == 6: shared.t().contiguous()[3:9].sum(0).cpu()
                    elif k == 7: big[rng.randrange(1000):][:100].fill_(2.0)
                    elif k == 8: torch.empty(rng.randrange(1, 300), device="tpu").uniform_().max().item()
                except Exception as e:
                    errors.append(f"{k}: {e!r}")
            ref = x
            for _ in range(steps): ref = (ref * 0.5 + 1).tanh()
            if not torch.allclose(xt.cpu(), ref, rtol=1e-5, atol=1e-6):
                errors.append(f"thread {seed}: private result differs from the CPU")
        ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in ts: t.start()
        for t in ts: t.join()
        assert not errors, errors[:5]
        print("ok")
    """)
    assert out.startswith("ok")


def test_compiled_functions_in_threads():
    # Two threads each call a compiled function (the first call of each
    # traces) while a third runs eager ops: the trace records only its own
    # thread's ops, and every result matches the CPU.
    out = run_script("""
        import os
        @torch.compile(backend="tpu")
        def f(a, b):
            return (a @ b).sin() + b.sum()
        stop = time.time() + float(os.environ["STRESS_SECONDS"]) / 2
        errors = []
        def compiled(seed):
            g = torch.Generator().manual_seed(seed)
            while time.time() < stop:
                a, b = torch.randn(8, 8, generator=g), torch.randn(8, 8, generator=g)
                got = f(a.to("tpu"), b.to("tpu")).cpu()
                want = (a @ b).sin() + b.sum()
                if not torch.allclose(got, want, rtol=1e-4, atol=1e-4):
                    errors.append(f"compiled {seed}")
        def eager():
            y = torch.ones(32, device="tpu")
            n = 0
            while time.time() < stop:
                y = y + 1; n += 1
            if y[0].item() != 1 + n:
                errors.append("eager")
        ts = [threading.Thread(target=compiled, args=(i,)) for i in range(2)]
        ts.append(threading.Thread(target=eager))
        for t in ts: t.start()
        for t in ts: t.join()
        assert not errors, errors[:5]
        print("ok")
    """)
    assert out.startswith("ok")
