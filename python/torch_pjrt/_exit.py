"""Process exit after a backward pass on tpu.

PyTorch runs a backward whose graph lives on a non-CPU device on that device's
autograd worker thread. The GraphTask copies the caller's thread-local state,
which on the main thread holds Python objects (2.13 stashes the caller's
contextvars there, among others), and
the worker drops its last reference to the GraphTask a moment *after* waking
the caller. If the caller's script ends in that moment, the worker needs the
GIL during interpreter finalisation, Python ends the thread with a forced
unwind through a noexcept destructor, and the process aborts ("terminate
called without an active exception", exit status 134) after a run that
otherwise succeeded.

At exit we run one tiny backward per initialised device from a fresh thread
(whose thread-local state holds no Python object). The worker handles it
only after it has released every earlier GraphTask, while the interpreter is
still alive; the one it releases late holds nothing that needs the GIL.
"""
from __future__ import annotations

import atexit
import threading

import torch

from . import _C


def _backward_per_device() -> None:
    engine = torch.autograd.Variable._execution_engine
    for index in range(torch.tpu.device_count()):
        leaf = torch.zeros((), device=f"tpu:{index}", requires_grad=True)
        out = leaf * 1.0
        grad = torch.ones((), device=f"tpu:{index}")
        engine.run_backward((out,), (grad,), False, False, (), True, True)


def _drain_autograd_workers() -> None:
    try:
        if not _C._is_initialized():
            return
        # A fresh thread: its thread-local state holds no Python object, so
        # neither does the GraphTask the worker releases last.
        worker = threading.Thread(target=_backward_per_device, name="torch_pjrt-exit")
        worker.start()
        worker.join()
    except Exception:  # exit must never fail because of this courtesy
        pass


atexit.register(_drain_autograd_workers)
