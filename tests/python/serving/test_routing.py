"""Prefix-cache-aware routing (llm-d's second idea) across two vLLM tpu
replicas, separate `vllm serve` processes with TORCH_PJRT_FALLBACK=error,
behind vllm-router (requirements-serving.txt): its cache_aware policy (a
prefix tree of the requests it routed), and its kv_aware policy, which
indexes the replicas' own KV-cache events (llm-d's precise routing).

Which replica served a request is read from the replicas' own Prometheus
counters (vllm:prefix_cache_queries / _hits, in tokens): the one whose
queries counter moved. Requests that share a long system prompt must go to
the replica that already holds it, and hit its prefix cache there; outputs
equal a single replica's. Then one replica is killed under bounded load:
every request ends, served by the other or failed with an HTTP error, and
none hangs."""
import json
import threading
import time
import urllib.error
from concurrent.futures import ThreadPoolExecutor

import importlib.util

import pytest

if importlib.util.find_spec("vllm") is None or importlib.util.find_spec("vllm_router") is None:
    pytest.skip("vllm or vllm-router is not installed (make vllm)", allow_module_level=True)

import _serving  # noqa: E402

SYSTEM = ["the quick brown fox jumps over the lazy dog. " * 7,
          "a paged cache keeps keys and values in blocks. " * 7]
QUESTIONS = ["question one?", "what of two", "and three"]
MAX_TOKENS = 8


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    root = tmp_path_factory.mktemp("routing")
    model = _serving.build_model(str(root / "model"))
    logs = str(root)
    procs, bridges = [], []
    try:
        # --enable-scale-out: the render endpoints the router tokenizes text
        # prompts with (its cache-aware policy matches token prefixes).
        # Each replica publishes its KV-cache events on an ipc endpoint.
        ipc = [f"ipc://{root}/events{i}.ipc" for i in range(2)]
        replicas = [_serving.vllm_serve(
            f"replica{i}", model, logs, "--enable-scale-out", "--kv-events-config",
            json.dumps({"enable_kv_cache_events": True, "publisher": "zmq",
                        "endpoint": ipc[i]})) for i in range(2)]
        procs += replicas
        for r in replicas:
            r.wait_ready()
        router = _serving.vllm_router(logs, "--worker-urls", *[r.url for r in replicas],
                                      "--policy", "cache_aware")
        procs.append(router)
        bridges += [_serving.KVEventsBridge(e) for e in ipc]
        kv_router = _serving.vllm_router(
            logs, "--worker-urls", *[r.url for r in replicas], "--policy", "kv_aware",
            *[a for r, b in zip(replicas, bridges) for a in ("--kv-event-source",
                                                             f"{r.url}={b.endpoint}")],
            "--kv-event-block-size", "16", "--kv-event-model", model, name="kv-router")
        procs.append(kv_router)
        router.wait_ready(60)
        kv_router.wait_ready(60)
        yield model, replicas, router, kv_router, bridges
    finally:
        for p in reversed(procs):
            p.stop()
        for b in bridges:
            b.close()


def _complete(base, model, prompt, max_tokens=MAX_TOKENS, timeout=120):
    body = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
            "ignore_eos": True, "return_token_ids": True}
    return _serving.post(base + "/v1/completions", body, timeout)


def _counters(replicas):
    return [(_serving.metric(r.url, "vllm:prefix_cache_queries_total"),
             _serving.metric(r.url, "vllm:prefix_cache_hits_total")) for r in replicas]


def _served_by(replicas, before):
    """(replica index, hit tokens) of the one request sent since `before`:
    the replica whose queries counter moved (the counters are updated just
    after the response: wait for it, bounded)."""
    deadline = time.time() + 10
    while True:
        after = _counters(replicas)
        moved = [i for i, (a, b) in enumerate(zip(after, before)) if a[0] > b[0]]
        if moved or time.time() > deadline:
            break
        time.sleep(0.05)
    assert len(moved) == 1, f"one request moved {len(moved)} replicas' counters"
    i = moved[0]
    return i, after[i][1] - before[i][1]


def test_shared_prefix_goes_to_the_replica_holding_it(stack):
    model, replicas, router = stack[:3]
    # The first request of each system prompt, the second while the first is
    # in flight: nothing is cached yet, so the policy takes the less loaded
    # replica and the two prompts land on different replicas.
    before = _counters(replicas)
    first = threading.Thread(target=_complete, args=(router.url, model, SYSTEM[0] + QUESTIONS[0]),
                             kwargs={"max_tokens": 64})
    first.start()
    time.sleep(0.5)
    _complete(router.url, model, SYSTEM[1] + QUESTIONS[0])
    first.join(120)
    after = _counters(replicas)
    assert all(a[0] > b[0] for a, b in zip(after, before)), "the two prompts shared a replica"

    # Every later question goes to the replica holding its system prompt and
    # hits its prefix cache for (at least) the system prompt's full blocks.
    holder = {}
    for q in QUESTIONS[1:]:
        for s, system in enumerate(SYSTEM):
            before = _counters(replicas)
            out = _complete(router.url, model, system + q)
            i, hits = _served_by(replicas, before)
            holder.setdefault(s, i)
            assert i == holder[s], f"system prompt {s} moved from replica {holder[s]} to {i}"
            assert hits >= 0.8 * out["usage"]["prompt_tokens"], (s, q, hits, out["usage"])
    assert sorted(holder.values()) == [0, 1]


def test_outputs_equal_a_single_replicas(stack):
    model, replicas, router = stack[:3]
    prompts = [s + q for s in SYSTEM for q in QUESTIONS] + ["hello world", "tokens are written"]
    with ThreadPoolExecutor(4) as pool:
        routed = list(pool.map(lambda p: _complete(router.url, model, p), prompts))
    single = [_complete(replicas[0].url, model, p) for p in prompts]
    for r, s in zip(routed, single):
        assert r["choices"][0]["token_ids"] == s["choices"][0]["token_ids"]
        assert len(r["choices"][0]["token_ids"]) == MAX_TOKENS


def test_kv_events_route_to_the_replica_holding_the_prefix(stack):
    """llm-d's way: the router's kv_aware policy indexes the replicas' own
    BlockStored events (through KVEventsBridge), so it knows a prefix that
    reached a replica without passing through it."""
    model, replicas, _, kv_router, bridges = stack
    prompts = {1: list(range(40, 240)), 0: list(range(60, 260))}  # replica -> its prefix
    for i, prompt in prompts.items():
        watch = bridges[i].watch()
        _serving.post(replicas[i].url + "/v1/completions",
                      {"model": model, "prompt": prompt, "max_tokens": 1})
        _serving.wait_stored(watch, prompt[:16])
        watch.close(0)
    time.sleep(1)  # the router's subscriber got the same message: let it index it
    for i, prompt in prompts.items():
        for q in ([7], [8, 9]):
            before = _counters(replicas)
            # No return_token_ids: with it, kv_aware scores no prefix
            # credit (vllm-router 0.1.17).
            out = _serving.post(kv_router.url + "/v1/completions",
                                {"model": model, "prompt": prompt + q, "max_tokens": 4,
                                 "temperature": 0})
            served, hits = _served_by(replicas, before)
            assert served == i, f"a prefix held by replica {i} went to replica {served}"
            assert hits >= 0.8 * out["usage"]["prompt_tokens"], (i, q, hits, out["usage"])


def test_killing_a_replica_under_load(stack):
    """24 requests, 4 at a time, each bounded by 60 s; replica 1 is killed
    (SIGKILL, engine core too) once a few have finished. Each request must end
    served (the right tokens) or with an HTTP error; none hangs, and the
    requests after the kill are served by replica 0."""
    model, replicas, router = stack[:3]
    prompts = [SYSTEM[i % 2] + f" request {i}" for i in range(24)]
    expected = {p: _complete(replicas[0].url, model, p)["choices"][0]["token_ids"]
                for p in prompts}
    done = []
    killed_at = []

    def one(i):
        t0 = time.time()
        try:
            out = _complete(router.url, model, prompts[i], timeout=60)
            result = ("ok", out["choices"][0]["token_ids"] == expected[prompts[i]])
        except urllib.error.HTTPError as e:
            result = ("http", e.code)
        except OSError as e:  # a timeout or a dropped connection: the router hung or died
            result = ("error", repr(e))
        done.append((i, t0, result))
        if len(done) == 6 and not killed_at:
            killed_at.append(time.time())
            replicas[1].kill()

    start = time.time()
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(one, range(len(prompts))))
    assert len(done) == len(prompts)
    assert time.time() - start < 240
    bad = [d for d in done if d[2][0] == "error" or (d[2][0] == "ok" and not d[2][1])]
    assert not bad, bad
    assert any(d[2][0] == "ok" for d in done if d[1] > killed_at[0]), done
    # Then a second bounded batch: all of it served, by the remaining replica.
    done.clear()
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(one, range(8)))
    assert [d[2] for d in sorted(done)] == [("ok", True)] * 8
