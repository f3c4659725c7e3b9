"""Fork safety for torch.tpu, named as torch.cuda's: a process forked after
its parent used tpu cannot use tpu (the PJRT client's threads do not survive
fork); csrc/device/fork.cpp detects it and makes every use raise."""
from __future__ import annotations

import torch

_FORK_MESSAGE = ("Cannot re-initialize tpu in forked subprocess. To use tpu with "
                 "multiprocessing, you must use the 'spawn' start method")


def _is_in_bad_fork() -> bool:
    """True in a child forked after the parent initialised tpu."""
    return bool(torch.ops.tpj_fork.in_bad_fork())


def _lazy_init() -> None:
    """Called by PyTorch before it first creates a tpu tensor from Python; the
    plugin itself opens on first use."""
    if _is_in_bad_fork():
        raise RuntimeError(_FORK_MESSAGE)
