"""Ray with tpu devices as a resource (torch_pjrt.ray): the suite's two
CPU-plugin devices declared with ray.init(resources=torch_pjrt.ray.resources()),
on a local node bound to 127.0.0.1. An actor or task that asks for devices
sees exactly the ones Ray assigned (distinct between concurrent holders),
renumbered from tpu:0, and computes there as on CPU."""

import pytest
import torch

import torch_pjrt

ray = pytest.importorskip("ray", reason="ray is not installed (make ray)")
import torch_pjrt.ray  # noqa: E402
from _ray_cluster import cluster  # noqa: E402,F401  (the module's Ray node)

pytestmark = pytest.mark.skipif(torch_pjrt.plugin()["platform"] != "cpu",
                                reason="the suite's two CPU-plugin devices")


def _where_and_what(seed):
    """Runs in a worker: what it sees, and a product on its tpu:0."""
    import torch
    import torch_pjrt
    import torch_pjrt.ray

    g = torch.Generator().manual_seed(seed)
    a, b = torch.randn(8, 16, generator=g), torch.randn(16, 4, generator=g)
    return {"count": torch.tpu.device_count(), "current": torch.tpu.current_device(),
            "names": [d["description"] for d in torch_pjrt._C._info()["devices"]],
            "ids": torch_pjrt.ray.device_ids(),
            "product": (a.to("tpu") @ b.to("tpu")).cpu(), "expected": a @ b}


def test_resources_declares_the_hosts_devices():
    assert torch_pjrt.ray.RESOURCE == "torch_pjrt_tpu"
    if ray.is_initialized():
        pytest.skip("Ray already runs in this process")
    assert torch_pjrt.ray.resources() == {"torch_pjrt_tpu": 2.0}


def test_actors_get_a_device_each(cluster):
    assert ray.cluster_resources()[torch_pjrt.ray.RESOURCE] == 2

    @ray.remote(num_cpus=0, resources={torch_pjrt.ray.RESOURCE: 1})
    class Worker:
        def run(self, seed):
            return _where_and_what(seed)

    workers = [Worker.remote() for _ in range(2)]
    seen = ray.get([w.run.remote(i) for i, w in enumerate(workers)])
    for s in seen:
        assert s["count"] == 1 and s["current"] == 0
        torch.testing.assert_close(s["product"], s["expected"], rtol=1e-5, atol=1e-5)
    assert sorted(s["names"][0] for s in seen) == ["TFRT_CPU_0", "TFRT_CPU_1"]
    assert sorted(s["ids"][0] for s in seen) == [0, 1]
    for w in workers:
        ray.kill(w)


def test_a_task_asking_for_two_sees_both(cluster):
    @ray.remote(num_cpus=0, resources={torch_pjrt.ray.RESOURCE: 2})
    def both():
        return _where_and_what(7)

    s = ray.get(both.remote())
    assert s["count"] == 2 and s["ids"] == [0, 1]
    assert s["names"] == ["TFRT_CPU_0", "TFRT_CPU_1"]
    torch.testing.assert_close(s["product"], s["expected"], rtol=1e-5, atol=1e-5)


def test_resources_after_ray_init_is_an_error(cluster):
    with pytest.raises(RuntimeError, match=r"must be called before ray.init\(\)"):
        torch_pjrt.ray.resources()
