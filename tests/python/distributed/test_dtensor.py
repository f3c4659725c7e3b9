"""DTensor on init_device_mesh("tpu", (2,)) and (2, 2): placements,
redistribution, sharded matmul, tensor parallelism on the MLP and the attention, the RNG tracker."""
import pytest

import _launch
from test_setup import free_port


@pytest.mark.parametrize("world", [2, 4])
def test_dtensor(world):
    for out in _launch.run(world, "_dtensor", "run", env={"TPJ_TEST_PORT": str(free_port())}):
        assert out["redistributions"] >= 12
        assert out["tp_attention"] == 4
