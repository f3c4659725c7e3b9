"""Pure-torch stand-ins for the Triton kernels vLLM's model runner launches.
vLLM routes each launch here through its kernel-override registry
(Platform.register_triton_kernel_overrides); the arguments keep the Triton
kernel's names and order, and its constexprs arrive as keywords."""
from __future__ import annotations

import torch


def compute_slot_mapping(num_tokens, max_num_tokens, query_start_loc_ptr, positions_ptr,
                         block_table_ptr, block_table_stride, slot_mapping_ptr, *,
                         KV_CACHE_BLOCK_SIZE, TOTAL_CP_WORLD_SIZE=1, TOTAL_CP_RANK=0,
                         CP_KV_CACHE_INTERLEAVE_SIZE=1, PAD_ID=-1, BLOCK_SIZE=None):
    """slot_mapping[t] = block_table[req(t), pos(t) // B] * B + pos(t) % B for
    the batch's tokens, PAD_ID for the rest of the buffer (padded tokens then
    write nowhere). Same contract as block_table.ComputeSlotMappingKernel."""
    if TOTAL_CP_WORLD_SIZE != 1:
        raise NotImplementedError("context parallelism is not supported on tpu")
    B = KV_CACHE_BLOCK_SIZE
    n = int(num_tokens)
    dev = slot_mapping_ptr.device
    if n > 0:
        pos = positions_ptr[:n].to(torch.int64)
        tokens = torch.arange(n, device=dev, dtype=torch.int64)
        # query_start_loc is [num_reqs + 1], ascending: a token belongs to the
        # last request whose start is <= its index.
        starts = query_start_loc_ptr[1:].to(torch.int64)
        req = torch.searchsorted(starts, tokens, right=True)
        flat = block_table_ptr.reshape(-1)
        block = flat[req * block_table_stride + pos // B].to(torch.int64)
        slot_mapping_ptr[:n].copy_(block * B + pos % B)
    if max_num_tokens > n:
        slot_mapping_ptr[n:max_num_tokens].fill_(PAD_ID)
