"""Runs a function in N fresh processes, one per rank, as torchrun would
(RANK, WORLD_SIZE, LOCAL_RANK set; a FileStore under a temporary folder for
the rendezvous), and returns what each rank's function returned. A rank that
raises or hangs past the deadline fails the caller with that rank's output."""
import os
import pickle
import subprocess
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)

_MAIN = textwrap.dedent("""
    import importlib, os, pickle, sys, traceback
    sys.path[:0] = [{here!r}, {tests!r}]
    mod, fn, out = sys.argv[1:4]
    try:
        result = ("ok", getattr(importlib.import_module(mod), fn)())
    except BaseException:
        result = ("error", traceback.format_exc())
    with open(out, "wb") as f:
        pickle.dump(result, f)
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown (gloo threads, atexit hooks)
""").format(here=HERE, tests=TESTS)


class RankFailed(AssertionError):
    pass


def run(world, module, fn, timeout=180, env=None, allow_errors=False):
    """Returns [rank 0's result, ...]. allow_errors: a rank's exception text
    is returned (as ("error", text)) instead of failing the caller."""
    tmp = tempfile.mkdtemp(prefix="tpj-dist-")
    procs = []
    for rank in range(world):
        e = dict(os.environ)
        e.update({"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank),
                  "LOCAL_WORLD_SIZE": str(world), "TPJ_DIST_STORE": os.path.join(tmp, "store"),
                  "TPJ_DIST_TMP": tmp, "TORCH_PJRT_CPU_DEVICES": "1",
                  "MASTER_ADDR": "127.0.0.1", "OMP_NUM_THREADS": "1"})
        e.update(env or {})
        out = os.path.join(tmp, f"rank{rank}.pkl")
        log = open(os.path.join(tmp, f"rank{rank}.log"), "w+b")
        p = subprocess.Popen([sys.executable, "-c", _MAIN, module, fn, out], env=e,
                             stdout=log, stderr=subprocess.STDOUT)
        procs.append((p, out, log))
    results = []
    for rank, (p, out, log) in enumerate(procs):
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q, _, _ in procs:
                q.kill()
            log.seek(0)
            raise RankFailed(f"rank {rank} hung past {timeout}s:\n" + log.read().decode()[-4000:])
        log.seek(0)
        text = log.read().decode()
        if not os.path.exists(out):
            if allow_errors:
                results.append(("died", text))
                continue
            raise RankFailed(f"rank {rank} exited {p.returncode} without a result:\n{text[-4000:]}")
        with open(out, "rb") as f:
            status, value = pickle.load(f)
        if status != "ok" and not allow_errors:
            raise RankFailed(f"rank {rank} raised:\n{value}\n{text[-2000:]}")
        results.append(value if not allow_errors else (status, value, text))
    return results


def init(backend="cpu:gloo,tpu:pjrt", timeout_s=60, name="store"):
    """init_process_group from the launcher's environment (FileStore)."""
    import datetime

    import torch.distributed as dist

    path = os.path.join(os.environ["TPJ_DIST_TMP"], name)
    kw = {} if backend is None else {"backend": backend}
    dist.init_process_group(init_method=f"file://{path}", rank=int(os.environ["RANK"]),
                            world_size=int(os.environ["WORLD_SIZE"]),
                            timeout=datetime.timedelta(seconds=timeout_s), **kw)
    return dist.get_rank(), dist.get_world_size()
