"""The vLLM worker and model runner for the tpu device.

vLLM's GPUModelRunner is reused, as vllm-ascend does: its input
preparation, persistent batch, sampler and KV cache allocation are device
generic torch code, and they run on a PrivateUse1 device once the few CUDA
specific parts are stepped around (CUDA graphs, CUDA streams for async
output copies, the CUDA memory profiler). Only the worker's device set-up and
memory sizing are our own.
"""
from __future__ import annotations

import contextlib

import torch
from vllm.logger import init_logger
from vllm.utils.mem_utils import format_gib
from vllm.utils.torch_utils import set_random_seed
from vllm.v1.worker.gpu_model_runner import GPUModelRunner
from vllm.v1.worker.gpu_worker import Worker, init_worker_distributed_environment
from vllm.v1.worker.worker_base import CompilationTimes

from .platform import DEFAULT_KV_CACHE_BYTES, TpuPlatform

logger = init_logger(__name__)


class TpuModelRunner(GPUModelRunner):
    def _sync_device(self) -> None:
        torch.tpu.synchronize(self.device)

    def _to_list(self, sampled_token_ids: torch.Tensor) -> list[list[int]]:
        # GPUModelRunner stages this copy through a pinned buffer and a CUDA
        # event; a plain device-to-host copy is synchronous and enough here.
        return sampled_token_ids.cpu().tolist()

    def capture_model(self) -> int:
        return 0  # no CUDA graphs


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
