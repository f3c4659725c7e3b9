"""Prefill/decode disaggregation on tpu: a prefill and a decode instance
(`vllm serve`, TORCH_PJRT_FALLBACK=error) with KV blocks moved between them
by torch_pjrt.vllm.kv_connector.TpuKVConnector (loaded by vLLM through
kv_connector_module_path), vllm-router's P/D mode in front.

Why our connector: vLLM's NixlConnector needs the platform's host-buffer
hooks and nixl's UCX transport (docs/ARCHITECTURE.md, "Serving stack");
the shared-storage (example) connector moves KV through files and never
talks to its peer, so a decode instance cannot tell that the prefill is gone.

Greedy float32 outputs through the router equal a single instance's token for
token (the reference run uses its own cache_salt: no prefix-cache blocks
shared with the P/D run), and the decode instance's external prefix-cache
counter shows the blocks came from the prefill. With the prefill instance
gone, the decode instance fails the request with an error (HTTP 500 and the
reason in its log) and the router with its own; nothing hangs."""
import json
import urllib.error

import importlib.util

import pytest

if importlib.util.find_spec("vllm") is None or importlib.util.find_spec("vllm_router") is None:
    pytest.skip("vllm or vllm-router is not installed (make vllm)", allow_module_level=True)

import torch  # noqa: E402

import _serving  # noqa: E402

MAX_TOKENS = 8
PROMPTS = [list(range(3, 103)), [7, 8, 9], "the quick brown fox jumps over the lazy dog " * 6,
           list(range(150, 300))]


def _kv_config(port):
    return json.dumps({"kv_connector": "TpuKVConnector",
                       "kv_connector_module_path": "torch_pjrt.vllm.kv_connector",
                       "kv_role": "kv_both", "kv_connector_extra_config": {"port": port}})


@pytest.fixture(scope="module")
def pd(tmp_path_factory):
    root = tmp_path_factory.mktemp("pd")
    model = _serving.build_model(str(root / "model"))
    procs = []
    try:
        prefill_port = _serving.free_port()
        prefill = _serving.vllm_serve("prefill", model, str(root), "--kv-transfer-config",
                                      _kv_config(prefill_port))
        # No port: the decode instance serves no blocks of its own.
        decode = _serving.vllm_serve("decode", model, str(root), "--kv-transfer-config",
                                     _kv_config(0))
        procs += [prefill, decode]
        prefill.wait_ready()
        decode.wait_ready()
        router = _serving.vllm_router(str(root), "--vllm-pd-disaggregation", "--prefill",
                                      prefill.url, "--decode", decode.url, "--policy",
                                      "round_robin")
        procs.append(router)
        router.wait_ready(60)
        yield model, prefill, decode, router, prefill_port
    finally:
        for p in reversed(procs):
            p.stop()


def _body(model, prompt, **kw):
    return dict({"model": model, "prompt": prompt, "max_tokens": MAX_TOKENS, "temperature": 0,
                 "ignore_eos": True, "return_token_ids": True}, **kw)


def test_transfer_path_alone():
    """tpu caches -> host store -> TCP on 127.0.0.1 -> tpu caches, without
    vLLM: the blocks land at other block ids of another cache, bit for bit,
    float32 and bfloat16; errors are ConnectionErrors that say why."""
    from torch_pjrt.vllm.kv_connector import (TpuKVStore, fetch_blocks, gather_blocks,
                                              scatter_blocks)

    for dtype in (torch.float32, torch.bfloat16):
        # vLLM hands each layer a [blocks, heads, block_size, 2*head] view of
        # [blocks, block_size, heads, 2*head] memory (LBNHC).
        src = [torch.randn(8, 4, 2, 32).to(dtype).to("tpu").transpose(1, 2) for _ in range(2)]
        dst = [torch.zeros(8, 4, 2, 32, dtype=dtype).to("tpu").transpose(1, 2) for _ in range(2)]
        store = TpuKVStore()
        try:
            store.put("req-1", gather_blocks(src, [5, 2, 7]))
            got = fetch_blocks(store.host, store.port, "req-1", 1, 2)  # blocks 2 and 7
            assert got.dtype == dtype and tuple(got.shape) == (2, 2, 4, 2, 32)
            scatter_blocks(dst, [0, 3], got)
            for s, d in zip(src, dst):
                assert torch.equal(d[0].cpu(), s[2].cpu()) and torch.equal(d[3].cpu(), s[7].cpu())
                assert not d[1].cpu().any()
            with pytest.raises(ConnectionError, match="no KV blocks for request 'req-2'"):
                fetch_blocks(store.host, store.port, "req-2", 0, 1)
            with pytest.raises(ConnectionError, match="has 3 blocks here"):
                fetch_blocks(store.host, store.port, "req-1", 2, 2)
        finally:
            store.close()
        with pytest.raises(ConnectionError, match=f"127.0.0.1:{store.port} failed"):
            fetch_blocks(store.host, store.port, "req-1", 0, 1, timeout=5)


def test_pd_through_the_router_equals_a_single_instance(pd):
    model, prefill, decode, router, _ = pd
    before = _serving.metric(decode.url, "vllm:external_prefix_cache_hits_total")
    routed = [_serving.post(router.url + "/v1/completions", _body(model, p)) for p in PROMPTS]
    moved = _serving.metric(decode.url, "vllm:external_prefix_cache_hits_total") - before
    # One instance, no transfer, and nothing shared with the run above.
    single = [_serving.post(prefill.url + "/v1/completions",
                            _body(model, p, cache_salt="single-instance")) for p in PROMPTS]
    for r, s in zip(routed, single):
        assert r["choices"][0]["token_ids"] == s["choices"][0]["token_ids"]
        assert len(r["choices"][0]["token_ids"]) == MAX_TOKENS
    # The full blocks of every prompt but the last token came from the
    # prefill instance (block size 16): 96 + 0 + the text's + 144.
    prompt_lens = [r["usage"]["prompt_tokens"] for r in routed]
    assert moved == sum((n - 1) // 16 * 16 for n in prompt_lens), (moved, prompt_lens)


def test_decode_with_its_prefill_gone_fails_clearly(pd):
    model, prefill, decode, router, prefill_port = pd
    body = _body(model, list(range(20, 120)))
    params = _serving.post(prefill.url + "/v1/completions",
                           dict(body, max_tokens=1,
                                kv_transfer_params={"do_remote_decode": True}))["kv_transfer_params"]
    assert params["do_remote_prefill"] and params["remote_port"] == prefill_port
    prefill.kill()
    # The decode instance, asked directly (as vLLM's proxy pattern does).
    with pytest.raises(urllib.error.HTTPError) as e:
        _serving.post(decode.url + "/v1/completions", dict(body, kv_transfer_params=params),
                      timeout=60)
    assert e.value.code == 500
    log = decode.tail(20000)
    assert f"KV transfer from prefill instance 127.0.0.1:{prefill_port} failed" in log
    assert "Failing 1 request(s) due to KV load failure" in log
    # Through the router: its own error, naming the prefill.
    with pytest.raises(urllib.error.HTTPError) as e:
        _serving.post(router.url + "/v1/completions", body, timeout=60)
    assert e.value.code >= 500 and "Prefill request" in e.value.read().decode()
    # The decode instance itself still serves.
    ok = _serving.post(decode.url + "/v1/completions", body, timeout=60)
    assert len(ok["choices"][0]["token_ids"]) == MAX_TOKENS
