"""Ray on tpu: this host's tpu devices as a Ray resource, one device per
worker that asks for one, as Ray does for GPUs.

    import ray, torch_pjrt.ray
    ray.init(resources=torch_pjrt.ray.resources())

    @ray.remote(resources={torch_pjrt.ray.RESOURCE: 1})
    class Worker:
        def step(self):
            x = torch.ones(4, device="tpu")   # on the device Ray assigned

Ray's own "TPU" resource asks Cloud TPU metadata for chips, so the devices
are a custom resource, RESOURCE. resources() also lists it among Ray's unit-
instance resources (RAY_custom_unit_instance_resources, read when ray.init
starts the node), so Ray hands each worker device indices, not just a count.
When torch_pjrt loads in a Ray worker (the first `import torch` there), it
shows that worker only the devices Ray assigned, renumbered tpu:0, tpu:1, ...
(TORCH_PJRT_VISIBLE_DEVICES, set for its subprocesses too), as Ray's
CUDA_VISIBLE_DEVICES does for torch.cuda; device_ids() names them. A worker
that Ray reuses for another task keeps the devices it first loaded with, as
torch.cuda does.
"""
from __future__ import annotations

import os

from . import _plugin

RESOURCE = "torch_pjrt_tpu"

# Ray 2.60's default for RAY_custom_unit_instance_resources (its
# ray_config_def.h); the accelerators listed there keep their instance ids.
_RAY_UNIT_INSTANCE_DEFAULT = "neuron_cores,TPU,NPU,HPU,RBLN,FURIOSA,TTNPU,MBLT"
_UNIT_INSTANCE_VAR = "RAY_custom_unit_instance_resources"


def resources() -> dict[str, float]:
    """{RESOURCE: this host's tpu device count}, for ray.init(resources=...)
    on one host or `ray start --resources` on each. Call it before ray.init:
    it also makes Ray assign the resource by device index."""
    import ray
    import torch

    if ray.is_initialized():
        raise RuntimeError("torch_pjrt.ray.resources() must be called before ray.init(): Ray "
                           "reads which resources it assigns by index when the node starts")
    names = os.environ.get(_UNIT_INSTANCE_VAR, _RAY_UNIT_INSTANCE_DEFAULT)
    if RESOURCE not in names.split(","):
        os.environ[_UNIT_INSTANCE_VAR] = f"{names},{RESOURCE}" if names else RESOURCE
    return {RESOURCE: float(torch.tpu.device_count())}


def device_ids() -> list[int]:
    """The plugin's device indices this process sees (tpu:0 first), as
    ray.get_gpu_ids() names GPUs: the devices Ray assigned in a worker that
    asked for RESOURCE, else TORCH_PJRT_VISIBLE_DEVICES, else all of them."""
    import torch

    vis = _plugin.visible_devices()
    return list(vis) if vis is not None else list(range(torch.tpu.device_count()))


def _assigned(visible: list[int] | None, setting: str) -> tuple[list[int] | None, str]:
    """At load, in a Ray worker holding RESOURCE: the plugin's devices Ray
    assigned (indices into `visible` when the node's TORCH_PJRT_VISIBLE_DEVICES
    already narrowed them), exported for subprocesses, and the text errors
    name; else (`visible`, `setting`) as given."""
    try:
        from ray._private import worker as ray_worker

        w = ray_worker.global_worker
        if w.mode != ray_worker.WORKER_MODE:
            return visible, setting
        # in a placement group (Ray Train's workers) the resource is held
        # under RESOURCE_group_<pg id> names: Ray's own accelerators read
        # them this way
        assigned = sorted(int(i) for i in w.get_accelerator_ids_for_accelerator_resource(
            RESOURCE, f"^{RESOURCE}_group_[0-9A-Za-z]+$"))
    except Exception:  # not a connected Ray worker
        return visible, setting
    if not assigned:
        return visible, setting
    if visible is not None:
        missing = [i for i in assigned if i >= len(visible)]
        if missing:
            raise ValueError(f"Ray assigned {RESOURCE} {missing[0]}, but {setting} shows this "
                             f"worker only {len(visible)} device(s)")
        assigned = [visible[i] for i in assigned]
    os.environ[_plugin.VISIBLE_DEVICES] = ",".join(map(str, assigned))
    _install_train_device_manager()
    return assigned, f"the {RESOURCE} devices Ray assigned ({_plugin.VISIBLE_DEVICES}=" \
                     f"{os.environ[_plugin.VISIBLE_DEVICES]})"


def _install_train_device_manager() -> None:
    """Ray Train picks its torch device (get_device(), prepare_model,
    ACCELERATE_TORCH_DEVICE) through a device manager chosen from Ray's own
    accelerators, CPU otherwise; in a worker holding tpu devices it gets
    ours. Ray keeps the chosen manager in a module global, set here before
    its first use (Ray has no registration for another accelerator kind)."""
    try:
        from ray.air._internal import device_manager as dm
        from ray.air._internal.device_manager.torch_device_manager import TorchDeviceManager
    except Exception:  # Ray without Train
        return

    class PjrtTorchDeviceManager(TorchDeviceManager):
        """tpu devices for Ray Train: the ones this worker sees."""

        def is_available(self) -> bool:
            import torch

            return torch.tpu.is_available()

        def get_devices(self):
            import torch

            return [torch.device("tpu", i) for i in range(torch.tpu.device_count())]

        def set_device(self, device) -> None:
            import torch

            torch.tpu.set_device(device)

        def supports_stream(self) -> bool:
            return False

    with dm._torch_device_manager_lock:
        if dm._torch_device_manager is None:
            dm._torch_device_manager = PjrtTorchDeviceManager()
