"""The vLLM worker and model runner for the tpu device.

vLLM's GPUModelRunner is reused, as vllm-ascend does: its input
preparation, persistent batch, sampler and KV cache allocation are device
generic torch code, and they run on a PrivateUse1 device once the few CUDA
specific parts are stepped around (CUDA graphs, CUDA streams for async
output copies, the CUDA memory profiler). Our own: the worker's device
set-up and memory sizing, and compiling (torch.compile(backend="tpu") over
bucketed token counts, every bucket compiled at start-up).
"""
from __future__ import annotations

import contextlib
import dataclasses

import torch
from tqdm import tqdm
from vllm.logger import init_logger
from vllm.utils.mem_utils import format_gib
from vllm.utils.torch_utils import set_random_seed
from vllm.v1.utils import CpuGpuBuffer
from vllm.v1.worker.gpu_model_runner import GPUModelRunner
from vllm.v1.worker.gpu_worker import Worker, init_worker_distributed_environment
from vllm.v1.worker.worker_base import CompilationTimes

from .._compile import run_eagerly
from ..bucketing import DEFAULT_BUCKETS, bucket_size
from . import moe as _moe  # noqa: F401  (the MoE method vLLM builds models with on tpu)
from . import quant as _quant  # noqa: F401  (the weight-only quantized linear kernel)
from .attention import TpuAttentionMetadataBuilder, block_buckets, register_host_table
from .platform import DEFAULT_KV_CACHE_BYTES, TpuPlatform

logger = init_logger(__name__)


class TpuModelRunner(GPUModelRunner):
    def load_model(self, *args, **kwargs) -> None:
        super().load_model(*args, **kwargs)
        if not self.model_config.enforce_eager:
            # One graph per token bucket (dynamic=False: the shapes are the
            # buckets below); vLLM's attention op is left to eager by the
            # tpu backend and splits the graph around it.
            run_eagerly("vllm::unified_attention_with_output", "vllm::unified_kv_cache_update")
            # Module.compile keeps the model's class, which vLLM inspects.
            self.model.compile(backend="tpu", dynamic=False)

    def _determine_batch_execution_and_padding(self, num_tokens, *args, **kwargs):
        out = super()._determine_batch_execution_and_padding(num_tokens, *args, **kwargs)
        if self.model_config.enforce_eager:
            return out
        # Pad the batch's token count to a bucket, so a compiled graph serves
        # every count up to it; the padding tokens write to the null block and
        # their outputs are never read.
        mode, desc, *rest = out
        padded = min(bucket_size(desc.num_tokens), self.max_num_tokens)
        return (mode, dataclasses.replace(desc, num_tokens=padded), *rest)

    def _prepare_inputs(self, *args, **kwargs):
        # The attention metadata builder reads the block tables on the host.
        for t in self.input_batch.block_table.block_tables:
            register_host_table(t.block_table.gpu, t.block_table.np)
        return super()._prepare_inputs(*args, **kwargs)

    def _make_buffer(self, *size, dtype: torch.dtype, numpy: bool = True) -> CpuGpuBuffer:
        return _WholeCopyBuffer(*size, dtype=dtype, device=self.device, with_numpy=numpy)

    def _prepare_padding_mask(self, num_tokens_unpadded: int, num_tokens_padded: int):
        # The whole mask from a runtime scalar, then a view of the bucket's
        # rows: the same programs for every token count.
        mask = self.is_padding
        mask.copy_(torch.arange(mask.shape[0], device=mask.device) >= num_tokens_unpadded)
        return mask[:num_tokens_padded]

    def initialize_kv_cache_tensors(self, *args, **kwargs):
        # vLLM carves every layer's cache out of one raw int8 allocation. On
        # tpu a write into a view of a storage is a program over the whole
        # storage's buffer, and into this one (reinterpreted, shared by the
        # layers) it was not done in place: each layer's cache write copied
        # the whole allocation (190 ms per write for 256 MiB, 13 ms for
        # 16 MiB, 2026-12-05). Each layer gets a storage of its own instead.
        import vllm.v1.worker.gpu_model_runner as gmr

        allocate = gmr.allocate_kv_cache
        gmr.allocate_kv_cache = lambda *a, **k: _own_storages(allocate(*a, **k))
        try:
            return super().initialize_kv_cache_tensors(*args, **kwargs)
        finally:
            gmr.allocate_kv_cache = allocate

    def _sync_device(self) -> None:
        torch.tpu.synchronize(self.device)

    def _to_list(self, sampled_token_ids: torch.Tensor) -> list[list[int]]:
        # GPUModelRunner stages this copy through a pinned buffer and a CUDA
        # event; a plain device-to-host copy is synchronous and enough here.
        return sampled_token_ids.cpu().tolist()

    def capture_model(self) -> int:
        return 0  # no CUDA graphs


def _own_storages(kv_caches: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The same caches (shapes, strides, dtype, zeros), each in a fresh
    storage; a tensor shared by several layers stays shared. The raw
    allocation is freed once its views are dropped (briefly, both exist)."""
    fresh: dict[int, torch.Tensor] = {}
    out = {}
    for name, t in kv_caches.items():
        if id(t) not in fresh:
            # vLLM's caches are permuted views of memory-order tensors: make
            # the memory-order tensor, then the same permuted view of it.
            order = sorted(range(t.dim()), key=lambda d: -t.stride()[d])
            base = torch.zeros([t.shape[d] for d in order], dtype=t.dtype, device=t.device)
            new = base.permute([order.index(d) for d in range(t.dim())])
            fresh[id(t)] = new if new.stride() == t.stride() else t
        out[name] = fresh[id(t)]
    return out


class _WholeCopyBuffer(CpuGpuBuffer):
    """A host/device buffer pair whose host-to-device copy always sends the
    whole buffer. vLLM copies the batch's first n rows (`gpu[:n].copy_`): on
    tpu a write into a slice is a program per n, while a whole-buffer copy is
    an upload that compiles nothing. The rows past n are the host's stale
    rows, where the device had its own stale rows: this relies on nothing
    writing these buffers on the device, which holds while async scheduling
    and speculative decoding are off (the platform refuses the latter).
    The buffers are small (one row per token or request)."""

    def copy_to_gpu(self, n: int | None = None) -> torch.Tensor:
        self.gpu.copy_(self.cpu)
        return self.gpu if n is None else self.gpu[:n]


class TpuWorker(Worker):
    def init_device(self) -> None:
        self.device = torch.device("tpu", self.local_rank)
        torch.tpu.set_device(self.device)
        TpuPlatform.check_if_supports_dtype(self.model_config.dtype)
        init_worker_distributed_environment(
            self.vllm_config, self.rank, self.distributed_init_method, self.local_rank,
            TpuPlatform.dist_backend)
        set_random_seed(self.model_config.seed)
        self._init_workspace_and_model_runner()

    def _maybe_get_memory_pool_context(self, tag: str):
        # vLLM's memory pools (sleep mode) are CUDA's cumem allocator.
        return contextlib.nullcontext()

    def _make_model_runner(self) -> GPUModelRunner:
        return TpuModelRunner(self.vllm_config, self.device)

    def determine_available_memory(self) -> int:
        """The bytes given to the KV cache: kv_cache_memory_bytes when set, else
        DEFAULT_KV_CACHE_BYTES, bounded by gpu_memory_utilization of what the
        device has free after the weights are loaded."""
        free, total = torch.tpu.mem_get_info(self.device)
        requested = self.cache_config.kv_cache_memory_bytes
        if requested:
            if requested > free:
                raise ValueError(
                    f"kv_cache_memory_bytes ({format_gib(requested)} GiB) is more than the "
                    f"tpu device has free ({format_gib(free)} GiB)")
            return int(requested)
        budget = int(free * self.cache_config.gpu_memory_utilization)
        size = min(DEFAULT_KV_CACHE_BYTES, budget)
        logger.info("KV cache: %s GiB on %s (set kv_cache_memory_bytes to change it)",
                    format_gib(size), self.device)
        return size

    def compile_or_warm_up_model(self) -> CompilationTimes:
        runner = self.model_runner
        if not self.model_config.enforce_eager:
            # Compile every token bucket now, so serving never compiles; the
            # executables also land in the disk cache for the next start.
            # Attention's eager ops are shaped by (token bucket, block
            # bucket): each pair runs once, so a step of any length finds
            # its programs compiled.
            sizes = sorted({min(bucket_size(n), runner.max_num_tokens)
                            for n in (1, runner.max_num_tokens)} |
                           {b for b in DEFAULT_BUCKETS if b <= runner.max_num_tokens})
            blocks = sorted({nb for t in runner.input_batch.block_table.block_tables
                             for nb in block_buckets(t.block_table.gpu.shape[1])})
            steps = [(s, nb) for s in sizes for nb in blocks]
            try:
                for size, nb in tqdm(steps, desc="Compiling token buckets on tpu", unit="shape"):
                    TpuAttentionMetadataBuilder.warm_blocks = nb
                    runner._dummy_run(size, skip_eplb=True, remove_lora=False,
                                      force_attention=True)
            finally:
                TpuAttentionMetadataBuilder.warm_blocks = None
            # The slot-mapping kernel (not run by dummy steps) works on whole
            # buffers: one call compiles its programs for every batch.
            runner.input_batch.block_table.compute_slot_mapping(
                1, runner.query_start_loc.gpu[:2], runner.positions[:1])
        # Restore the seed that start-up draws (dummy weights, profiling) moved.
        set_random_seed(self.model_config.seed)
        return CompilationTimes(
            language_model=self.compilation_config.compilation_time,
            encoder=self.compilation_config.encoder_compilation_time,
        )

    def sleep(self, level: int = 1) -> None:
        raise NotImplementedError("sleep mode is not supported on tpu")

    def wake_up(self, tags: list[str] | None = None) -> None:
        raise NotImplementedError("sleep mode is not supported on tpu")
