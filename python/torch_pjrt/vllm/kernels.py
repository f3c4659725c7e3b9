"""Pure-torch stand-ins for the Triton kernels vLLM's model runner launches.
vLLM routes each launch here through its kernel-override registry
(Platform.register_triton_kernel_overrides); the arguments keep the Triton
kernel's names and order, and its constexprs arrive as keywords."""
from __future__ import annotations

import torch


def whole(t: torch.Tensor) -> torch.Tensor:
    """The buffer that t is a leading slice of (vLLM passes `buf[:n]`), else t.

    On tpu an op's program is keyed by the shapes of the views it reads, so
    an op over `buf[:n]` compiles once per n; over the whole buffer, with n a
    runtime scalar, it compiles once."""
    base = t._base
    if (base is not None and t.storage_offset() == 0 and base.dim() == t.dim()
            and base.shape[1:] == t.shape[1:] and base.is_contiguous() and t.is_contiguous()):
        return base
    # A leading slice that is not a view with a _base (vLLM's hidden[:n] of
    # the model's output): the whole storage's rows, as a fresh view with t's
    # strides, read as the buffer it is.
    if base is None and t.dim() >= 1 and t.storage_offset() == 0 and t.is_contiguous():
        row = t[0].numel() * t.element_size() if t.shape[0] else 0
        rows = t.untyped_storage().nbytes() // row if row else 0
        if rows > t.shape[0]:
            return t.as_strided((rows, *t.shape[1:]), t.stride(), 0)
    return t


def compute_slot_mapping(num_tokens, max_num_tokens, query_start_loc_ptr, positions_ptr,
                         block_table_ptr, block_table_stride, slot_mapping_ptr, *,
                         KV_CACHE_BLOCK_SIZE, TOTAL_CP_WORLD_SIZE=1, TOTAL_CP_RANK=0,
                         CP_KV_CACHE_INTERLEAVE_SIZE=1, PAD_ID=-1, BLOCK_SIZE=None):
    """slot_mapping[t] = block_table[req(t), pos(t) // B] * B + pos(t) % B for
    the batch's tokens, PAD_ID for the rest of the buffer (padded tokens then
    write nowhere). Same contract as block_table.ComputeSlotMappingKernel.

    Computed over the whole buffers with the token count as a runtime scalar,
    so every batch runs the same programs (no compile per token count)."""
    if TOTAL_CP_WORLD_SIZE != 1:
        raise NotImplementedError("context parallelism is not supported on tpu")
    B = KV_CACHE_BLOCK_SIZE
    n = int(num_tokens)
    m = min(int(max_num_tokens), slot_mapping_ptr.shape[0])
    dev = slot_mapping_ptr.device
    pos = whole(positions_ptr)
    # vLLM fills query_start_loc past the last request with the token total,
    # so the whole buffer stays ascending and the count below is exact for
    # the batch's tokens.
    starts = whole(query_start_loc_ptr)[1:]
    if pos.shape[0] < m:  # not a slice of a long enough buffer: compute n rows
        m = n
        pos = positions_ptr
        starts = query_start_loc_ptr[1:]
    tokens = torch.arange(m, device=dev, dtype=torch.int64)
    pos = pos[:m].to(torch.int64)
    # A token belongs to the request after every one that ends at or before
    # it: a count of those ends (one compare and a sum; searchsorted is a
    # dozen small ops per halving).
    req = (starts.to(torch.int64).unsqueeze(0) <= tokens.unsqueeze(1)).sum(1)
    table = block_table_ptr.view(-1, block_table_stride)
    req = req.clamp(max=table.shape[0] - 1)
    # Rows past the batch hold stale positions: clamp them into the table
    # (their result is replaced by PAD_ID below).
    col = torch.div(pos, B, rounding_mode="floor").clamp(0, table.shape[1] - 1)
    slots = table[req, col].to(torch.int64) * B + pos.remainder(B)
    slots = torch.where(tokens < n, slots, PAD_ID)
    if m == slot_mapping_ptr.shape[0]:
        slot_mapping_ptr.copy_(slots)
    else:
        slot_mapping_ptr[:m].copy_(slots)
        if max_num_tokens > m:
            slot_mapping_ptr[m:max_num_tokens].fill_(PAD_ID)
