"""A KV connector for prefill/decode disaggregation between vLLM instances on
tpu: the prefill instance keeps each finished prompt's KV blocks on the host
and serves them over TCP on 127.0.0.1; the decode instance pulls them before
the step that continues the request, and writes them into its own cache.

vLLM loads it by module path:

    --kv-transfer-config '{"kv_connector": "TpuKVConnector",
      "kv_connector_module_path": "torch_pjrt.vllm.kv_connector",
      "kv_role": "kv_both", "kv_connector_extra_config": {"port": 27001}}'

The request flow is vLLM's (and vllm-router's P/D mode, and vLLM's toy
proxy): the prefill instance gets the request with
`kv_transfer_params={"do_remote_decode": true}` and max_tokens=1; its
response carries the params this connector returns (`do_remote_prefill`,
`remote_host`, `remote_port`, `remote_request_id`, `remote_num_blocks`), which
the proxy passes to the decode instance with the original request.

- Prefill side: the step in which a request's prompt completes copies the
  prompt's full blocks, every layer, to the host (one gather and one copy per
  layer, after the step's forward, wait_for_save) into a bounded LRU store;
  blocks are freed as usual (no delayed free), and they stay in the prefix
  cache.
- Decode side: the scheduler counts the remote full blocks beyond the local
  prefix-cache hit as external tokens (a synchronous load: vLLM schedules the
  rest of the prompt in the same step); the worker fetches them before the
  forward (start_load_kv) and writes them at the request's new blocks
  (index_copy_ into the cache's memory-order view, as attention's own cache
  writes). The last prompt token is always computed locally, for its logits.
- Faults: a fetch that fails (prefill instance gone, request unknown there,
  a short read) marks the request's blocks as load errors; with vLLM's
  default kv_load_failure_policy="fail" the request ends with an error
  (the HTTP client gets it), and nothing waits without a bound (the socket
  has a timeout).

The transfer path (gather_blocks from tpu caches, TpuKVStore on the host
and its server, fetch_blocks its client, scatter_blocks into tpu caches)
works on plain tensors and is tested on its own
(tests/python/serving/test_pd.py)."""
from __future__ import annotations

import json
import socket
import socketserver
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from vllm.distributed.kv_transfer.kv_connector.v1.base import (
    KVConnectorBase_V1,
    KVConnectorMetadata,
    KVConnectorRole,
)
from vllm.logger import init_logger

from .attention import _memory_order

if TYPE_CHECKING:
    from vllm.config import VllmConfig
    from vllm.forward_context import ForwardContext
    from vllm.v1.core.kv_cache_manager import KVCacheBlocks
    from vllm.v1.core.sched.output import SchedulerOutput
    from vllm.v1.request import Request

logger = init_logger(__name__)

FETCH_TIMEOUT_S = 30.0


# ---------------------------------------------------------------------------
# The transfer path: a host store served over TCP, and its client.


class TpuKVStore:
    """Each request's KV blocks on the host, [layers, blocks, block_size,
    heads, 2 * head_size] (one tensor), at most `entries` requests (least
    recently stored dropped first), served on host:port by a thread."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, entries: int = 64):
        self._data: OrderedDict[str, torch.Tensor] = OrderedDict()
        self._lock = threading.Lock()
        self._entries = entries
        store = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                try:
                    ask = json.loads(self.rfile.readline())
                    blocks = store.get(ask["req_id"], ask["first_block"], ask["num_blocks"])
                except Exception as e:  # a clear answer, never a dropped socket
                    self.wfile.write((json.dumps({"ok": False, "error": str(e)}) + "\n").encode())
                    return
                raw = blocks.contiguous().view(torch.uint8).numpy()
                head = {"ok": True, "shape": list(blocks.shape),
                        "dtype": str(blocks.dtype).removeprefix("torch."), "nbytes": raw.nbytes}
                self.wfile.write((json.dumps(head) + "\n").encode())
                self.wfile.write(memoryview(raw))

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self._server = Server((host, port), Handler)
        self.host, self.port = self._server.server_address[:2]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        name="tpu-kv-store")
        self._thread.start()

    def put(self, req_id: str, blocks: torch.Tensor) -> None:
        with self._lock:
            self._data[req_id] = blocks
            self._data.move_to_end(req_id)
            while len(self._data) > self._entries:
                self._data.popitem(last=False)

    def get(self, req_id: str, first_block: int, num_blocks: int) -> torch.Tensor:
        with self._lock:
            blocks = self._data.get(req_id)
        if blocks is None:
            raise KeyError(f"no KV blocks for request {req_id!r} on this prefill instance")
        if first_block < 0 or first_block + num_blocks > blocks.shape[1]:
            raise IndexError(f"request {req_id!r} has {blocks.shape[1]} blocks here, asked "
                             f"for {num_blocks} from block {first_block}")
        return blocks[:, first_block:first_block + num_blocks]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def fetch_blocks(host: str, port: int, req_id: str, first_block: int, num_blocks: int,
                 timeout: float = FETCH_TIMEOUT_S) -> torch.Tensor:
    """The blocks [first_block, first_block + num_blocks) of req_id from the
    store at host:port, as a CPU tensor. Raises ConnectionError with the
    reason when the peer is gone, does not know the request, or stops short."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall((json.dumps({"req_id": req_id, "first_block": first_block,
                                   "num_blocks": num_blocks}) + "\n").encode())
            f = s.makefile("rb")
            head = json.loads(f.readline() or b"null")
            if head is None:
                raise ConnectionError("the peer closed the connection without an answer")
            if not head["ok"]:
                raise ConnectionError(head["error"])
            buf = bytearray(head["nbytes"])
            view, got = memoryview(buf), 0
            while got < len(buf):
                n = f.readinto(view[got:])
                if not n:
                    raise ConnectionError(f"short read: {got} of {len(buf)} bytes")
                got += n
    except OSError as e:  # refused, reset, timed out: ConnectionError is one too
        raise ConnectionError(f"KV transfer from prefill instance {host}:{port} failed for "
                              f"request {req_id!r}: {e}") from e
    dtype = getattr(torch, head["dtype"])
    return torch.frombuffer(buf, dtype=torch.uint8).view(dtype).reshape(head["shape"])


def gather_blocks(caches: list[torch.Tensor], block_ids: list[int]) -> torch.Tensor:
    """The blocks block_ids of every layer's cache (vLLM's per-layer views of
    tpu caches in LBNHC memory order), on the host: [layers, blocks,
    block_size, heads, 2 * head_size]."""
    layers = []
    for cache in caches:
        mem = _memory_order(cache)
        ids = torch.tensor(block_ids, dtype=torch.int64, device=mem.device)
        layers.append(mem.index_select(0, ids).cpu())
    return torch.stack(layers)


def scatter_blocks(caches: list[torch.Tensor], block_ids: list[int], blocks: torch.Tensor) -> None:
    """Writes blocks ([layers, n, ...] from gather_blocks) at block_ids of
    every layer's cache, in place (index_copy_ into the memory-order view, as
    attention's own cache writes)."""
    for cache, layer in zip(caches, blocks):
        mem = _memory_order(cache)
        ids = torch.tensor(block_ids, dtype=torch.int64, device=mem.device)
        mem.index_copy_(0, ids, layer.to(mem.device, mem.dtype))


# ---------------------------------------------------------------------------
# The connector.


@dataclass
class _Save:
    req_id: str
    block_ids: list[int]


@dataclass
class _Load:
    req_id: str
    host: str
    port: int
    remote_req_id: str
    first_block: int
    block_ids: list[int]


@dataclass
class TpuKVConnectorMetadata(KVConnectorMetadata):
    saves: list[_Save] = field(default_factory=list)
    loads: list[_Load] = field(default_factory=list)


class TpuKVConnector(KVConnectorBase_V1):
    def __init__(self, vllm_config: "VllmConfig", role: KVConnectorRole,
                 kv_cache_config=None):
        super().__init__(vllm_config=vllm_config, role=role, kv_cache_config=kv_cache_config)
        cfg = vllm_config.kv_transfer_config
        self._block_size = vllm_config.cache_config.block_size
        self._host = cfg.get_from_extra_config("host", "127.0.0.1")
        self._port = int(cfg.get_from_extra_config("port", 0))
        self._engine_id = cfg.engine_id
        # Scheduler side.
        self._producing: dict[str, dict] = {}  # req_id -> {"n": prompt len, "blocks": [...]}
        self._saved_blocks: dict[str, int] = {}  # req_id -> full blocks stored
        self._pending_loads: dict[str, tuple[dict, int, int]] = {}  # params, local, count
        self._loads: dict[str, tuple[dict, int, int]] = {}
        # Worker side.
        self._store: TpuKVStore | None = None
        self._caches: list[torch.Tensor] = []
        self._invalid: set[int] = set()
        if role == KVConnectorRole.WORKER and self._port:
            self._store = TpuKVStore(self._host, self._port,
                                     int(cfg.get_from_extra_config("store_entries", 64)))

    # -- worker side --------------------------------------------------------

    def register_kv_caches(self, kv_caches: dict[str, torch.Tensor]) -> None:
        # One order on both instances: the same model names its layers alike.
        self._caches = [kv_caches[name] for name in sorted(kv_caches)]

    def start_load_kv(self, forward_context: "ForwardContext", **kwargs: Any) -> None:
        meta = self._get_connector_metadata()
        assert isinstance(meta, TpuKVConnectorMetadata)
        for load in meta.loads:
            try:
                blocks = fetch_blocks(load.host, load.port, load.remote_req_id, load.first_block,
                                      len(load.block_ids))
                if blocks.shape[0] != len(self._caches):
                    raise ConnectionError(f"the prefill instance sent {blocks.shape[0]} layers, "
                                          f"this model has {len(self._caches)}")
            except ConnectionError as e:
                logger.error("%s", e)
                self._invalid.update(load.block_ids)
                continue
            scatter_blocks(self._caches, load.block_ids, blocks)

    def wait_for_layer_load(self, layer_name: str) -> None:
        return

    def save_kv_layer(self, layer_name: str, kv_layer: torch.Tensor, attn_metadata,
                      **kwargs: Any) -> None:
        return  # saved whole, after the forward (wait_for_save)

    def wait_for_save(self) -> None:
        meta = self._get_connector_metadata()
        assert isinstance(meta, TpuKVConnectorMetadata)
        if self._store is None or not meta.saves:
            return
        for save in meta.saves:
            self._store.put(save.req_id, gather_blocks(self._caches, save.block_ids))

    def get_block_ids_with_load_errors(self) -> set[int]:
        out, self._invalid = self._invalid, set()
        return out

    def shutdown(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    # -- scheduler side -----------------------------------------------------

    def _full_blocks(self, prompt_len: int) -> int:
        # The last prompt token is computed on the decode side (its logits).
        return max(0, prompt_len - 1) // self._block_size

    def get_num_new_matched_tokens(self, request: "Request",
                                   num_computed_tokens: int) -> tuple[int | None, bool]:
        params = request.kv_transfer_params or {}
        if params.get("do_remote_decode") and self._port:
            self._producing[request.request_id] = {"n": len(request.prompt_token_ids or []),
                                                   "blocks": []}
        if params.get("do_remote_prefill") and params.get("remote_port"):
            count = int(params.get("remote_num_blocks", 0)) * self._block_size - num_computed_tokens
            if count > 0:
                self._pending_loads[request.request_id] = (params, num_computed_tokens, count)
                return count, False
        return 0, False

    def update_state_after_alloc(self, request: "Request", blocks: "KVCacheBlocks",
                                 num_external_tokens: int) -> None:
        pending = self._pending_loads.pop(request.request_id, None)
        if pending is not None and num_external_tokens > 0:
            self._loads[request.request_id] = pending
            # Loaded once: a preempted request recomputes or hits its own cache.
            request.kv_transfer_params = dict(pending[0], do_remote_prefill=False)

    def build_connector_meta(self, scheduler_output: "SchedulerOutput") -> KVConnectorMetadata:
        meta = TpuKVConnectorMetadata()
        scheduled = scheduler_output.num_scheduled_tokens
        B = self._block_size
        for new in scheduler_output.scheduled_new_reqs:
            load = self._loads.pop(new.req_id, None)
            if load is not None:
                params, local, count = load
                first = local // B
                meta.loads.append(_Load(new.req_id, params["remote_host"],
                                        int(params["remote_port"]),
                                        params["remote_request_id"], first,
                                        list(new.block_ids[0][first:first + count // B])))
            prod = self._producing.get(new.req_id)
            if prod is not None:
                prod["blocks"] = list(new.block_ids[0])
                self._maybe_save(meta, new.req_id, new.num_computed_tokens + scheduled[new.req_id])
        cached = scheduler_output.scheduled_cached_reqs
        for i, req_id in enumerate(cached.req_ids):
            prod = self._producing.get(req_id)
            if prod is None:
                continue
            new_ids = cached.new_block_ids[i]
            if new_ids is not None:
                if req_id in cached.resumed_req_ids:
                    prod["blocks"] = list(new_ids[0])
                else:
                    prod["blocks"].extend(new_ids[0])
            self._maybe_save(meta, req_id, cached.num_computed_tokens[i] + scheduled[req_id])
        return meta

    def _maybe_save(self, meta: TpuKVConnectorMetadata, req_id: str, computed: int) -> None:
        prod = self._producing[req_id]
        if computed < prod["n"]:
            return  # a chunked prefill: the prompt completes in a later step
        nb = self._full_blocks(prod["n"])
        meta.saves.append(_Save(req_id, prod["blocks"][:nb]))
        self._saved_blocks[req_id] = nb
        del self._producing[req_id]

    def request_finished(self, request: "Request",
                         block_ids: list[int]) -> tuple[bool, dict[str, Any] | None]:
        self._producing.pop(request.request_id, None)
        self._pending_loads.pop(request.request_id, None)
        self._loads.pop(request.request_id, None)
        nb = self._saved_blocks.pop(request.request_id, None)
        if nb is None:
            return False, None
        return False, {"do_remote_prefill": True, "do_remote_decode": False,
                       "remote_host": self._host, "remote_port": self._port,
                       "remote_request_id": request.request_id, "remote_num_blocks": nb,
                       "remote_engine_id": self._engine_id, "remote_block_ids": []}
