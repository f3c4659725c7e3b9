"""Worker subprocesses: each runs programs on cpu then tpu and streams back
snapshots; a dead or hung worker is a crash or hang of the program it ran."""
import os
import pickle
import queue
import select
import struct
import subprocess
import sys
import tempfile
import threading
import time
import warnings

from .gen import _base_ns, steps_of

PROGRAM_TIMEOUT_S = 120
PACKAGE = os.path.dirname(os.path.abspath(__file__))


def _frame_write(f, obj):
    data = pickle.dumps(obj, protocol=4)
    f.write(struct.pack("<Q", len(data)) + data)
    f.flush()


def _frame_read(f):
    head = f.read(8)
    if len(head) < 8:
        return None
    (n,) = struct.unpack("<Q", head)
    return pickle.loads(f.read(n))


def _snap(v, torch):
    """What a value is, detached from the device: kind, meta, CPU values."""
    try:
        if isinstance(v, torch.Tensor):
            c = v.detach().to("cpu").clone(memory_format=torch.contiguous_format)
            if c.dtype == torch.complex32:  # does not pickle; complex64 holds it exactly
                c = c.to(torch.complex64)
            return ("T", str(v.dtype)[6:], tuple(v.shape), tuple(v.stride()),
                    v.storage_offset(), c)
        if isinstance(v, (tuple, list)):
            return ("L", [_snap(u, torch) for u in v])
        if isinstance(v, (bool, int, float, complex)) or v is None:
            return ("P", type(v).__name__, v)
        return ("O", type(v).__name__)
    except Exception as e:
        return ("E", type(e).__name__, str(e)[:500])


def run_side(steps, dev, torch):
    """Runs steps on dev: per step, its inputs' snapshots before and its results after;
    the first exception ends the run; then every name's final value."""
    ns = _base_ns(dev)
    rec = {"stmts": [], "exc": None}
    for i, (line, refs, post) in enumerate(steps):
        ins = [_snap(ns.get(r), torch) for r in refs]
        try:
            exec(line, ns)
        except Exception as e:
            rec["stmts"].append((ins, None))
            rec["exc"] = (i, type(e).__name__, str(e)[:2000])
            break
        rec["stmts"].append((ins, [_snap(ns.get(p), torch) for p in post]))
    names = [p for _, _, post in steps for p in post]
    rec["final"] = {n: _snap(ns[n], torch) for n in dict.fromkeys(names) if n in ns}
    return rec


def worker_main():
    """The worker loop: read (id, steps); run them on cpu, then tpu; write results."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray prints must not corrupt the result stream
    warnings.simplefilter("ignore")
    import torch
    import torch_pjrt
    torch.ones(1, device="tpu").cpu()
    _frame_write(out, ("ready",))
    while True:
        req = _frame_read(sys.stdin.buffer)
        if req is None:
            return
        pid, steps = req
        res = {}
        for dev in ("cpu", "tpu"):
            _frame_write(out, ("start", pid, dev))
            if dev == "tpu":
                torch_pjrt.reset_fallbacks()
            res[dev] = run_side(steps, dev, torch)
        torch.tpu.synchronize()
        res["fallbacks"] = torch_pjrt.fallbacks()
        _frame_write(out, ("done", pid, res))


class Worker:
    """One worker subprocess; run() returns ("ok", res), ("crash", ...) or ("hang", ...)."""

    def __init__(self, env=None):
        self.err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, PACKAGE, "--worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.err, env=env)
        self.buf = b""
        msg = self._read(PROGRAM_TIMEOUT_S)
        if not msg or msg[0] != "ready":
            raise RuntimeError("fuzz worker did not start: %s" % self.stderr_tail())

    def _read(self, timeout):
        deadline = time.time() + timeout
        fd = self.proc.stdout.fileno()
        while True:
            if len(self.buf) >= 8:
                (n,) = struct.unpack("<Q", self.buf[:8])
                if len(self.buf) >= 8 + n:
                    data, self.buf = self.buf[8:8 + n], self.buf[8 + n:]
                    try:
                        return pickle.loads(data)
                    except Exception as e:
                        return ("unreadable", "%s: %s" % (type(e).__name__, e))
            left = deadline - time.time()
            if left <= 0:
                return "timeout"
            r, _, _ = select.select([fd], [], [], left)
            if r:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    return None
                self.buf += chunk

    def stderr_tail(self):
        self.err.seek(0)
        return self.err.read().decode("utf-8", "replace")[-1500:]

    def run(self, prog):
        side = None
        try:
            _frame_write(self.proc.stdin, (prog["id"], steps_of(prog)))
        except (BrokenPipeError, OSError):
            return ("crash", "?", self.close())
        while True:
            msg = self._read(PROGRAM_TIMEOUT_S)
            if msg == "timeout":
                return ("hang", side, self.close())
            if msg is None:
                return ("crash", side, self.close())
            if msg[0] == "unreadable":
                return ("harness", side, "worker result unreadable: " + msg[1])
            if msg[0] == "start":
                side = msg[2]
            elif msg[0] == "done":
                return ("ok", msg[2])

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        tail = "exit status %s; stderr: %s" % (self.proc.returncode, self.stderr_tail())
        self.err.close()
        return tail


def run_programs(progs, jobs, log=None):
    """Runs every program; a crash restarts the worker and reruns that program alone."""
    todo = queue.Queue()
    for p in progs:
        todo.put(p)
    results = {}
    done = [0]
    lock = threading.Lock()

    def loop():
        w, history = None, []
        while True:
            try:
                p = todo.get_nowait()
            except queue.Empty:
                break
            try:
                w = w or Worker()
                r = w.run(p)
            except Exception as e:  # the harness's own failure: reported, never lost
                r = ("harness", None, "%s: %s" % (type(e).__name__, e))
            history.append(p["id"])
            if r[0] == "harness":
                if w:
                    w.close()
                w = None
            elif r[0] != "ok":
                w = None
                try:
                    w2 = Worker()
                    alone = w2.run(p)
                except Exception as e:
                    alone = ("harness", None, str(e))
                if alone[0] == "ok":
                    w2.close()
                    r = (r[0], r[1], r[2] + "\n(not reproduced alone; ran after %s)"
                         % ", ".join(history[-20:-1]))
                history = []
            with lock:
                results[p["id"]] = r
                done[0] += 1
                if log and done[0] % 50 == 0:
                    log("  %d/%d programs" % (done[0], len(progs)))
        if w:
            w.close()

    threads = [threading.Thread(target=loop) for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results
