"""The vLLM Platform for the tpu device: which worker, attention backend and
settings vLLM uses on it. vLLM imports this class in every process through
the path that register() returns."""
from __future__ import annotations

import logging
import os
import warnings
from typing import TYPE_CHECKING

import torch
import torch_pjrt
from vllm.logger import init_logger
from vllm.platforms.interface import Platform, PlatformEnum

if TYPE_CHECKING:
    from vllm.config import VllmConfig

logger = init_logger(__name__)

ATTENTION_BACKEND = "torch_pjrt.vllm.attention.TpuAttentionBackend"

# The quantization methods whose layers run on tpu (quant.py) and are checked
# against vLLM's CPU backend (tests/python/vllm/test_vllm_quant.py).
SUPPORTED_QUANTIZATION = ("compressed-tensors",)

# The default KV cache when the user gives neither kv_cache_memory_bytes nor
# a reason to size it from free memory: on the CPU plugin "device memory" is
# the host's RAM, and 90% of it (vLLM's default gpu_memory_utilization)
# would be allocated up front and pushed out whatever else the machine runs.
DEFAULT_KV_CACHE_BYTES = 1 << 30


class TpuPlatform(Platform):
    _enum = PlatformEnum.OOT
    device_name: str = "tpu"
    device_type: str = "tpu"
    dispatch_key: str = "PrivateUse1"
    # Small helper functions that vLLM compiles on its own (outside the model)
    # run eagerly: each would otherwise be a compile of its own at start-up.
    simple_compile_backend: str = "eager"
    # gloo for vLLM's (CPU) groups; with several ranks (tensor parallelism)
    # the worker names "cpu:gloo,tpu:pjrt", so that the device groups run
    # their collectives through torch_pjrt's "pjrt" process group.
    dist_backend: str = "gloo"
    device_control_env_var: str = "TORCH_PJRT_VISIBLE_DEVICES"

    @property
    def supported_dtypes(self) -> list[torch.dtype]:
        return [torch.bfloat16, torch.float16, torch.float32]

    @classmethod
    def import_kernels(cls) -> None:
        # vLLM's compiled kernels (vllm._C) are built for CUDA and are not
        # used on tpu: every op runs through torch on the device.
        return

    @classmethod
    def register_triton_kernel_overrides(cls) -> None:
        from vllm.triton_utils.dispatcher import register_kernels

        from .kernels import compute_slot_mapping

        # register_kernels rebinds the kernel wherever it was imported by
        # reading every loaded module's attributes; deprecated ones among them
        # (torch.distributed.reduce_op) warn on read.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            register_kernels(
                {"vllm.v1.worker.block_table.ComputeSlotMappingKernel.kernel": compute_slot_mapping}
            )

    @classmethod
    def get_attn_backend_cls(cls, selected_backend, attn_selector_config, num_heads=None) -> str:
        if attn_selector_config.use_mla:
            raise NotImplementedError("MLA attention is not supported on tpu yet")
        if attn_selector_config.use_sparse:
            raise NotImplementedError("sparse attention is not supported on tpu yet")
        return ATTENTION_BACKEND

    @classmethod
    def get_device_name(cls, device_id: int = 0) -> str:
        if _host_is_device():  # as in get_device_total_memory
            return "cpu"
        return torch.tpu.get_device_name(device_id)

    @classmethod
    def get_device_total_memory(cls, device_id: int = 0) -> int:
        # vLLM's front end asks this before it starts the engine core. On the
        # CPU plugin device memory is host memory, known without opening the
        # client, which keeps the front end free to fork the engine core.
        if _host_is_device():
            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        return torch.tpu.mem_get_info(device_id)[1]

    @classmethod
    def set_device(cls, device: torch.device) -> None:
        torch.tpu.set_device(device)

    @classmethod
    def manual_seed_all(cls, seed: int) -> None:
        torch.tpu.manual_seed_all(seed)

    @classmethod
    def is_pin_memory_available(cls) -> bool:
        # vLLM pairs pinned host buffers with non_blocking copies and then
        # reuses the host buffer for the next step, relying on CUDA stream
        # order to have read it first. Plain copies are synchronous here, so
        # a reused buffer can never be read after it was overwritten.
        return False

    @classmethod
    def get_current_memory_usage(cls, device: torch.types.Device | None = None) -> float:
        return float(torch.tpu.memory_allocated(device))

    @classmethod
    def verify_quantization(cls, quant: str) -> None:
        # The methods whose layers run on tpu and were checked against
        # vLLM's CPU backend (quant.py); every other is refused with vLLM's
        # own message rather than run unchecked.
        if quant not in SUPPORTED_QUANTIZATION:
            raise ValueError(
                f"{quant} quantization is currently not supported in {cls.device_name}.")

    @classmethod
    def check_if_supports_dtype(cls, dtype: torch.dtype) -> None:
        if dtype not in (torch.bfloat16, torch.float16, torch.float32):
            raise ValueError(f"dtype {dtype} is not supported on tpu")

    @classmethod
    def opaque_attention_op(cls) -> bool:
        # Attention runs as vLLM's custom op (torch.ops.vllm.*), which
        # torch.compile keeps as one opaque call: the compiled graphs then hold
        # the layers between attentions, whose shapes are only the bucketed
        # token count, and not the per-batch paged-attention metadata.
        return True

    @classmethod
    def support_hybrid_kv_cache(cls) -> bool:
        return True

    @classmethod
    def check_and_update_config(cls, vllm_config: VllmConfig) -> None:
        from vllm.config import CompilationMode, CUDAGraphMode

        parallel = vllm_config.parallel_config
        if parallel.pipeline_parallel_size > 1:
            raise NotImplementedError("pipeline_parallel_size > 1 is not supported on tpu yet")
        if vllm_config.speculative_config is not None:
            # The runner's host-to-device copies send whole buffers
            # (worker._WholeCopyBuffer), which speculative decoding's device
            # writes into those buffers would not survive.
            raise NotImplementedError("speculative decoding is not supported on tpu yet")
        if parallel.worker_cls == "auto":
            parallel.worker_cls = "torch_pjrt.vllm.worker.TpuWorker"
        parallel.disable_custom_all_reduce = True
        parallel.enable_dbo = False

        cache = vllm_config.cache_config
        if not cache.user_specified_block_size:
            cache.block_size = 16
        if cache.kv_cache_memory_bytes is None and "TORCH_PJRT_VLLM_KV_CACHE_BYTES" in os.environ:
            cache.kv_cache_memory_bytes = int(os.environ["TORCH_PJRT_VLLM_KV_CACHE_BYTES"])

        # Async scheduling overlaps the next step's CPU work with the device
        # through a second CUDA stream and events; the runner here steps in order.
        vllm_config.scheduler_config.async_scheduling = False

        comp = vllm_config.compilation_config
        # vLLM's own compile path (piecewise Inductor graphs, CUDA graphs) is
        # CUDA's. Unless enforce_eager, the model runner compiles the model
        # itself with torch.compile(backend="tpu") over bucketed token counts.
        comp.mode = CompilationMode.NONE
        comp.cudagraph_mode = CUDAGraphMode.NONE
        comp.cudagraph_capture_sizes = []

        # The engine core runs in a child process. Fork (vLLM's default, and
        # what lets a script without a __main__ guard work) is safe while this
        # process has not opened the PJRT client; once it has, the child would
        # inherit a client it cannot use, so the child is spawned instead.
        if torch.tpu.is_initialized():
            os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = "spawn"


def _host_is_device() -> bool:
    """True for the CPU plugin while this process has not opened the client:
    what a question about the device would learn is the host's to answer."""
    return not torch.tpu.is_initialized() and torch_pjrt.plugin()["platform"] == "cpu"


def _register_attention_backend() -> None:
    from vllm.v1.attention.backends.registry import AttentionBackendEnum, register_backend

    register_backend(AttentionBackendEnum.CUSTOM, ATTENTION_BACKEND)


class _DropTritonNotices(logging.Filter):
    """vLLM's MoE modules log an ERROR at import when its bundled Triton
    kernels cannot load, and torch warns when vLLM's custom ops look for
    Triton kernels: Triton is never used on tpu, so each start would print
    lines the user cannot act on. Only those records are dropped."""

    def filter(self, record) -> bool:
        msg = str(record.msg)
        return not (msg.startswith("Failed to import Triton kernels") or
                    msg.startswith("Triton not available"))


for _name in ("vllm.model_executor.layers.fused_moe.config",
              "vllm.model_executor.layers.fused_moe.oracle.mxfp4",
              "vllm.model_executor.layers.fused_moe.experts.gpt_oss_triton_kernels_moe",
              "torch._library.triton"):
    logging.getLogger(_name).addFilter(_DropTritonNotices())

# At import: every vLLM process imports the platform class before it picks
# a backend by name, or a model runner.
_register_attention_backend()
# Model Runner V2 needs Triton; vLLM would fall back to V1 itself, with a
# warning at every start. V1 is the runner this plugin subclasses.
os.environ.setdefault("VLLM_USE_V2_MODEL_RUNNER", "0")
