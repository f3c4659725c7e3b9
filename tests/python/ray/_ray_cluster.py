"""The Ray tests' local node: the suite's tpu devices declared with
torch_pjrt.ray.resources(), bound to 127.0.0.1, no dashboard, every worker
with TORCH_PJRT_FALLBACK=error. A test module imports `cluster`; its own
functions are pickled by value, since Ray's workers cannot import it."""
import pytest
import ray

import torch_pjrt.ray


@pytest.fixture(scope="module")
def cluster(request):
    ray.cloudpickle.register_pickle_by_value(request.module)
    if not ray.is_initialized():
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
                 _node_ip_address="127.0.0.1", resources=torch_pjrt.ray.resources(),
                 runtime_env={"env_vars": {"TORCH_PJRT_FALLBACK": "error"}})
    yield
    ray.shutdown()
