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
import os

import numpy as np
import torch
from tqdm import tqdm
from vllm.logger import init_logger
from vllm.utils.mem_utils import format_gib
from vllm.utils.torch_utils import set_random_seed
from vllm.v1.outputs import LogprobsTensors
from vllm.v1.utils import CpuGpuBuffer
from vllm.v1.worker import gpu_input_batch
from vllm.v1.worker import gpu_model_runner as gmr
from vllm.v1.worker.gpu_model_runner import GPUModelRunner
from vllm.v1.worker.gpu_worker import Worker, init_worker_distributed_environment
from vllm.v1.worker.worker_base import CompilationTimes

from .. import deferred_index_checks
from .._compile import run_eagerly
from ..bucketing import DEFAULT_BUCKETS, bucket_size
from . import moe as _moe  # noqa: F401  (the MoE method vLLM builds models with on tpu)
from . import quant as _quant  # noqa: F401  (the weight-only quantized linear kernel)
from . import paged
from .kernels import whole
from .attention import (TpuAttentionImpl, TpuAttentionMetadataBuilder, block_buckets,
                        native_attention, register_host_table)
from .platform import DEFAULT_KV_CACHE_BYTES, TpuPlatform
from .sampler import PaddedSampler, request_bucket, request_buckets

# Prompt positions whose logprobs one program computes (prompt logprobs are
# computed in chunks of this many, whatever a prompt's length).
PROMPT_LOGPROB_ROWS = 64

logger = init_logger(__name__)


def _step_index_checks():
    """Deferred index checks for a step (and the warm-up), unless
    TORCH_PJRT_VLLM_INDEX_CHECKS=host."""
    mode = os.environ.get("TORCH_PJRT_VLLM_INDEX_CHECKS", "device")
    if mode not in ("device", "host"):
        raise ValueError(f"TORCH_PJRT_VLLM_INDEX_CHECKS must be 'device' or 'host', got {mode!r}")
    return deferred_index_checks() if mode == "device" else contextlib.nullcontext()


class TpuModelRunner(GPUModelRunner):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.padded_sampler = PaddedSampler(self.sampler, self.model_config.get_vocab_size(),
                                            self.model_config.max_logprobs, self.device)

    # A step's eager index ops (the slot mapping's table reads, the KV cache
    # writes, the sampler's scatters) check their device index tensors on
    # the device: on the host each check waited for the queue before the op
    # could launch. A bad index still fails the step, at its next wait.
    # TORCH_PJRT_VLLM_INDEX_CHECKS=host keeps the host checks (to measure
    # against).
    def execute_model(self, *args, **kwargs):
        with _step_index_checks():
            return super().execute_model(*args, **kwargs)

    def sample_tokens(self, *args, **kwargs):
        with _step_index_checks():
            return super().sample_tokens(*args, **kwargs)

    def _pads_requests(self) -> bool:
        """Whether steps run on a padded request count (our input
        preparation and sampler): compiled serving without the features
        whose inputs vLLM prepares itself."""
        return not (self.model_config.enforce_eager or self.speculative_config is not None
                    or self.uses_mrope or self.enable_prompt_embeds or self.lora_config
                    or self.use_async_scheduling or self.is_pooling_model
                    or self.supports_mm_inputs or self.model_config.is_encoder_decoder)

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

    def _prepare_inputs(self, scheduler_output, num_scheduled_tokens: np.ndarray):
        # The attention metadata builder reads the block tables on the host.
        for t in self.input_batch.block_table.block_tables:
            register_host_table(t.block_table.gpu, t.block_table.np)
        if not self._pads_requests():
            return super()._prepare_inputs(scheduler_output, num_scheduled_tokens)
        return self._prepare_padded_inputs(scheduler_output, num_scheduled_tokens)

    def _prepare_padded_inputs(self, scheduler_output, num_scheduled_tokens: np.ndarray):
        """GPUModelRunner._prepare_inputs without its device ops on the first
        n rows of a buffer (each n a program of its own): everything is
        worked out on the host, and every device buffer is uploaded whole.
        Returns the logits indices padded to the request bucket (padding
        rows read token 0; their samples are dropped)."""
        batch = self.input_batch
        R = batch.num_reqs
        T = scheduler_output.total_num_scheduled_tokens
        for t in batch.block_table.block_tables:  # vLLM sends the first R rows
            t.block_table.gpu.copy_(t.block_table.cpu)

        req_indices = np.repeat(self.arange_np[:R], num_scheduled_tokens)
        cu = self._get_cumsum_and_arange(num_scheduled_tokens, self.query_pos.np)
        computed = batch.num_computed_tokens_cpu[:R]
        positions = computed[req_indices] + self.query_pos.np[:T]
        token_indices = positions + req_indices * batch.token_ids_cpu.shape[1]
        torch.index_select(batch.token_ids_cpu_tensor.flatten(), 0,
                           torch.from_numpy(token_indices), out=self.input_ids.cpu[:T])

        qsl = self.query_start_loc
        qsl.np[0] = 0
        qsl.np[1:R + 1] = cu
        qsl.np[R + 1:] = cu[-1]
        qsl.copy_to_gpu()
        seq = self.optimistic_seq_lens_cpu
        seq[:R] = torch.from_numpy(computed + num_scheduled_tokens)
        seq[R:] = 0
        self._compute_prev_positions(R)
        num_tokens = np.array([self.requests[r].num_tokens for r in batch.req_ids], np.int32)
        self.discard_request_mask.np[:R] = seq[:R].numpy() < num_tokens
        self.discard_request_mask.copy_to_gpu()
        self.num_accepted_tokens.np.fill(1)
        self.num_accepted_tokens.copy_to_gpu()

        self.req_indices.np[:T] = req_indices
        self.req_indices.copy_to_gpu()
        self.query_pos.copy_to_gpu()
        self.num_scheduled_tokens.np[:R] = num_scheduled_tokens
        self.num_scheduled_tokens.np[R:] = 0
        self.num_scheduled_tokens.copy_to_gpu()
        self.num_computed_tokens.copy_(_host_whole(self.num_computed_tokens, computed))
        self.positions.copy_(_host_whole(self.positions, positions))
        self.seq_lens.copy_(seq)
        batch.block_table.compute_slot_mapping(R, qsl.gpu[:R + 1], self.positions[:T])
        self._prepare_input_ids(scheduler_output, R, T, cu)

        # On the host: the hidden-state gather checks host indices where they
        # are and uploads them with the op; a device index would make the
        # host wait for the whole forward pass queued before it.
        padded = request_bucket(R, self.max_num_reqs)
        logits_indices = np.zeros(padded, dtype=np.int64)
        logits_indices[:R] = cu - 1
        return torch.from_numpy(logits_indices), None, 1

    def _preprocess(self, scheduler_output, num_input_tokens, intermediate_tensors=None):
        if not self._pads_requests():
            return super()._preprocess(scheduler_output, num_input_tokens, intermediate_tensors)
        # GPUModelRunner._preprocess's text-only path, less its zeroing of
        # the padding tokens' positions (a program per token count): the
        # whole-buffer upload of _prepare_padded_inputs wrote them as zeros.
        return (self.input_ids.gpu[:num_input_tokens], None, self.positions[:num_input_tokens],
                None, self._init_model_kwargs(), None)

    def _get_slot_mappings(self, num_tokens_padded, num_reqs_padded, num_tokens_unpadded,
                           ubatch_slices=None):
        if self._pads_requests():
            # vLLM fills the padding rows' slots with -1, a program per
            # token count; compute_slot_mapping (kernels.py) has already
            # written -1 past the batch's tokens, over the whole buffer.
            num_tokens_unpadded = num_tokens_padded
        return super()._get_slot_mappings(num_tokens_padded, num_reqs_padded,
                                          num_tokens_unpadded, ubatch_slices)

    def _sample(self, logits, spec_decode_metadata):
        md = self.input_batch.sampling_metadata
        R = self.input_batch.num_reqs
        if logits is None or not self._pads_requests():
            return super()._sample(logits, spec_decode_metadata)
        if spec_decode_metadata is None and self.padded_sampler.covers(md):
            return self.padded_sampler.sample(logits, md, self.input_batch, R,
                                              not self.input_batch.no_top_k,
                                              not self.input_batch.no_top_p)
        # What the padded sampler does not cover: vLLM's sampler on the
        # real rows (which may compile for this request count).
        return super()._sample(logits[:R], spec_decode_metadata)

    def _get_prompt_logprobs_dict(self, hidden_states, num_scheduled_tokens):
        """vLLM's prompt logprobs, in fixed chunks of PROMPT_LOGPROB_ROWS
        prompt positions: vLLM slices each request's rows and asks for its
        own top-k, a program per (prompt chunk length, k); here every chunk
        has the same shape (rows picked by a host index, targets padded on
        the host), the top-k is gathered at the sampler's largest k and both
        are cut on the host. Warmed up with the request buckets."""
        want = self.num_prompt_logprobs
        k = self.padded_sampler.k if self._pads_requests() else None
        if not want or k is None or any(not 0 <= n <= k for n in want.values()):
            return super()._get_prompt_logprobs_dict(hidden_states, num_scheduled_tokens)
        out, done = {}, []
        for req_id, n_lp in want.items():
            num_tokens = num_scheduled_tokens.get(req_id)
            if num_tokens is None:
                continue  # preempted in its prefill
            request = self.requests[req_id]
            if request.prompt_token_ids is None:
                continue  # prompt embeddings have no prompt logprobs
            prompt = request.prompt_token_ids
            tensors = request.in_progress_prompt_logprobs_cpu
            if tensors is None:
                tensors = LogprobsTensors.empty_cpu(len(prompt) - 1, n_lp + 1)
                request.in_progress_prompt_logprobs_cpu = tensors
            start = request.num_computed_tokens
            remaining = len(prompt) - start - 1
            n = num_tokens
            if num_tokens > remaining:  # the last chunk of the prompt
                n = remaining
                done.append(req_id)
                out[req_id] = tensors
            offset = int(self.query_start_loc.np[self.input_batch.req_id_to_index[req_id]])
            for c0 in range(0, max(n, 0), PROMPT_LOGPROB_ROWS):
                m = min(PROMPT_LOGPROB_ROWS, n - c0)
                ids, vals, ranks = self._prompt_logprobs_chunk(
                    hidden_states, offset + c0, prompt[start + 1 + c0: start + 1 + c0 + m], k)
                rows = slice(start + c0, start + c0 + m)
                tensors.logprob_token_ids[rows] = ids[:m, : n_lp + 1]
                tensors.logprobs[rows] = vals[:m, : n_lp + 1]
                tensors.selected_token_ranks[rows] = ranks[:m]
        for req_id in done:
            del want[req_id]
            self.requests[req_id].in_progress_prompt_logprobs_cpu = None
        return out

    def _prompt_logprobs_chunk(self, hidden_states, first: int, targets, k: int):
        """Logprobs of PROMPT_LOGPROB_ROWS rows of hidden_states from `first`
        (rows past its end repeat the last) with targets padded by 0: host
        tensors of the top-k ids, values and the targets' ranks."""
        rows = PROMPT_LOGPROB_ROWS
        # vLLM passes the step's rows, hidden[:num_tokens]: read the whole
        # [token bucket, hidden] output instead (a program per bucket, not
        # per token count)
        hidden_states = whole(hidden_states)
        idx = np.minimum(first + np.arange(rows), hidden_states.shape[0] - 1)
        tgt = np.zeros(rows, dtype=np.int64)
        tgt[: len(targets)] = targets
        logits = self.model.compute_logits(hidden_states[torch.from_numpy(idx)])
        if self.model_config.logprobs_mode in ("raw_logits", "processed_logits"):
            scores = logits.to(torch.float32)
        else:
            scores = self.sampler.compute_logprobs(logits)
        t = self.sampler.gather_logprobs(scores, k, torch.from_numpy(tgt).to(self.device))
        return t.logprob_token_ids.cpu(), t.logprobs.cpu(), t.selected_token_ranks.cpu()

    def _make_buffer(self, *size, dtype: torch.dtype, numpy: bool = True) -> CpuGpuBuffer:
        return _WholeCopyBuffer(*size, dtype=dtype, device=self.device, with_numpy=numpy)

    def _prepare_padding_mask(self, num_tokens_unpadded: int, num_tokens_padded: int):
        # The whole mask from a runtime scalar, then a view of the bucket's
        # rows: the same programs for every token count.
        mask = self.is_padding
        mask.copy_(torch.arange(mask.shape[0], device=mask.device) >= num_tokens_unpadded)
        return mask[:num_tokens_padded]

    def warm_up_requests(self, token_sizes: list[int]) -> None:
        """Compiles what a step runs per request bucket: picking the
        sampled tokens' hidden states (per token bucket too), the logits,
        and the padded sampler's op sequences."""
        hidden_size = self.model_config.get_hidden_size()
        for padded in request_buckets(self.max_num_reqs):
            idx = torch.zeros(padded, dtype=torch.int64)  # on the host, as in serving
            for n in token_sizes:
                hidden = torch.zeros(n, hidden_size, dtype=self.model_config.dtype,
                                     device=self.device)
                picked = hidden[idx]
            logits = self.model.compute_logits(picked)
            self.padded_sampler.warm_up(logits, self.input_batch.logitsprocs,
                                        self.input_batch.token_ids_cpu.shape[1],
                                        self.max_num_reqs)
        # prompt logprobs: one chunk from a step of each token bucket
        for n in token_sizes:
            hidden = torch.zeros(n, hidden_size, dtype=self.model_config.dtype, device=self.device)
            self._prompt_logprobs_chunk(hidden, 0, [], self.padded_sampler.k)

    def _sync_device(self) -> None:
        torch.tpu.synchronize(self.device)

    def _to_list(self, sampled_token_ids: torch.Tensor) -> list[list[int]]:
        # GPUModelRunner stages this copy through a pinned buffer and a CUDA
        # event; a plain device-to-host copy is synchronous and enough here.
        return sampled_token_ids.cpu().tolist()

    def capture_model(self) -> int:
        return 0  # no CUDA graphs


def _warm_up_paged(runner, sizes: list[int], widths: list[int]) -> None:
    """Compiles torch_pjrt::paged_attention for every (token bucket, tile
    shape) each distinct attention layer can meet (paged.tile_shapes)."""
    layers, seen = [], set()
    for layer in runner.compilation_config.static_forward_context.values():
        impl = getattr(layer, "impl", None)
        cache = getattr(layer, "kv_cache", None)
        if not isinstance(impl, TpuAttentionImpl) or not isinstance(cache, torch.Tensor) \
                or cache.numel() == 0 or impl.kv_sharing_target_layer_name is not None:
            continue
        key = (impl.num_heads, impl.num_kv_heads, impl.head_size, impl.logits_soft_cap,
               impl.sliding_window, tuple(cache.shape), cache.dtype)
        if key not in seen:
            seen.add(key)
            layers.append((impl, cache))
    work, prev = [], 0
    for n in sizes:
        work.append((n, paged.tile_shapes(n, prev, runner.max_num_reqs)))
        prev = n
    total = len(layers) * len(widths) * sum(len(shapes) for _, shapes in work)
    with tqdm(total=total, desc="Compiling paged attention on tpu", unit="shape") as bar:
        for impl, cache in layers:
            for w in widths:
                for n, shapes in work:
                    impl.warm_up(cache, runner.model_config.dtype, n, w, shapes)
                    bar.update(len(shapes))


def _host_whole(device_buf: torch.Tensor, head: np.ndarray) -> torch.Tensor:
    """A host tensor shaped as device_buf whose first rows are head, the rest
    zeros: copying it into device_buf is an upload of the whole buffer."""
    out = torch.zeros(device_buf.shape, dtype=device_buf.dtype)
    out[: len(head)] = torch.from_numpy(np.ascontiguousarray(head))
    return out


def _on_tpu(t) -> bool:
    return isinstance(t, torch.Tensor) and t.device.type == "tpu"


def _whole_copy_slice(original):
    """vLLM's copy_slice (the first `length` rows of to_tensor get
    from_tensor's), which the persistent batch uses for its sampling
    parameters: onto a tpu tensor of the host buffer's shape it uploads the
    whole buffer (a write into the first n rows is a program per n; an
    upload compiles nothing). Other devices keep vLLM's."""
    def copy_slice(from_tensor: torch.Tensor, to_tensor: torch.Tensor, length: int):
        if _on_tpu(to_tensor) and from_tensor.shape == to_tensor.shape:
            to_tensor.copy_(from_tensor)
            return to_tensor[:length]
        return original(from_tensor, to_tensor, length)
    copy_slice.tpu_original = original
    return copy_slice


def _own_storage_caches(original):
    """vLLM's allocate_kv_cache, each tpu layer's cache then moved to a
    storage of its own (_own_storages). vLLM carves every layer's cache out
    of one raw int8 allocation. On tpu a write into a view of a storage is a
    program over the whole storage's buffer, and into this one
    (reinterpreted, shared by the layers) it was not done in place: each
    layer's cache write copied the whole allocation (190 ms per write for
    256 MiB, 13 ms for 16 MiB, 2026-12-05)."""
    def allocate_kv_cache(*args, **kwargs):
        caches = original(*args, **kwargs)
        if any(_on_tpu(t) for t in caches.values()):
            caches = _own_storages(caches)
        return caches
    allocate_kv_cache.tpu_original = original
    return allocate_kv_cache


# Installed once, when vLLM imports this worker in its worker process (the
# tpu platform's): module functions of vLLM that its runner calls by name.
# They act only on tpu tensors, so they hold whatever thread calls them.
if not hasattr(gpu_input_batch.copy_slice, "tpu_original"):
    gpu_input_batch.copy_slice = _whole_copy_slice(gpu_input_batch.copy_slice)
if not hasattr(gmr.allocate_kv_cache, "tpu_original"):
    gmr.allocate_kv_cache = _own_storage_caches(gmr.allocate_kv_cache)


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
            # A dim of size 1 (one KV head per rank under tensor parallelism)
            # may carry any stride: only the others must agree, and the new
            # view then takes t's strides exactly.
            same = all(a == b for n, a, b in zip(t.shape, new.stride(), t.stride()) if n > 1)
            fresh[id(t)] = new.as_strided(t.shape, t.stride()) if same else t
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
        self.device = torch.device("tpu", self.local_rank % torch.tpu.device_count())
        torch.tpu.set_device(self.device)
        TpuPlatform.check_if_supports_dtype(self.model_config.dtype)
        backend = TpuPlatform.dist_backend
        if self.parallel_config.world_size > 1:
            backend = "cpu:gloo,tpu:pjrt"
        init_worker_distributed_environment(
            self.vllm_config, self.rank, self.distributed_init_method, self.local_rank, backend)
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
        # With a step's deferred index checks (TpuModelRunner.execute_model):
        # the checks' own programs are compiled here too.
        with _step_index_checks():
            return self._compile_or_warm_up_model()

    def _compile_or_warm_up_model(self) -> CompilationTimes:
        runner = self.model_runner
        if not self.model_config.enforce_eager:
            # Compile every token bucket now, so serving never compiles; the
            # executables also land in the disk cache for the next start.
            sizes = sorted({min(bucket_size(n), runner.max_num_tokens)
                            for n in (1, runner.max_num_tokens)} |
                           {b for b in DEFAULT_BUCKETS if b <= runner.max_num_tokens})
            native = native_attention()
            widths = sorted({t.block_table.gpu.shape[1]
                             for t in runner.input_batch.block_table.block_tables})
            if native:
                # The model's graphs per token bucket; attention's own
                # programs (token bucket, tile shape) are compiled directly
                # below, without running the model for each.
                steps = [(s, None) for s in sizes]
            else:
                # Attention's eager ops are shaped by (token bucket, block
                # bucket): each pair runs once.
                steps = [(s, nb) for s in sizes for w in widths for nb in block_buckets(w)]
            # The first write into a layer's cache leaves its buffer in the
            # flat slot layout that every later write and read sees (the
            # write before it sees the allocation's layout: another program).
            # One step first, so each step below compiles serving's programs.
            steps = [steps[0]] + steps
            try:
                for size, nb in tqdm(steps, desc="Compiling token buckets on tpu", unit="shape"):
                    TpuAttentionMetadataBuilder.warm_blocks = nb
                    runner._dummy_run(size, skip_eplb=True, remove_lora=False,
                                      force_attention=True)
            finally:
                TpuAttentionMetadataBuilder.warm_blocks = None
            if native:
                _warm_up_paged(runner, sizes, widths)
            # The slot-mapping kernel (not run by dummy steps) works on whole
            # buffers: one call compiles its programs for every batch.
            runner.input_batch.block_table.compute_slot_mapping(
                1, runner.query_start_loc.gpu[:2], runner.positions[:1])
            if runner._pads_requests():
                runner.warm_up_requests(sizes)
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
