"""Every way of asking for the tpu backend routes tpu tensors to "pjrt"
(init_process_group() with no backend, "pjrt", "cpu:gloo,tpu:pjrt",
init_device_mesh), with barrier and object collectives working in each."""
import socket

import pytest

import _launch


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_init_variants():
    for rank, out in enumerate(_launch.run(2, "_setup", "variants")):
        for backend in ["None", "pjrt", "cpu:gloo,tpu:pjrt"]:
            name, default_for_tpu, transport, group_backend = out[backend]
            # pytorch#179901 would leave "undefined" here for the mixed string.
            assert group_backend == "custom", out
            assert transport == "gloo (host staging)", out
            assert default_for_tpu == "pjrt", out
        # As with NCCL, a group made with no backend named reports "undefined".
        assert out["pjrt"][0] == "pjrt" and out["cpu:gloo,tpu:pjrt"][0] == "cpu:gloo,tpu:pjrt", out
        assert out["device"] == "0"  # LOCAL_RANK % device_count, one device each


@pytest.mark.parametrize("world", [2, 4])
def test_init_device_mesh(world):
    _launch.run(world, "_setup", "mesh", env={"TPJ_TEST_PORT": str(free_port())})


def test_info_names_the_transport():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "torch_pjrt", "info"], capture_output=True,
                         text=True, check=True).stdout
    assert ('c10d backend "pjrt", transport gloo (host staging) across processes, xla '
            "between this process's devices (local_groups)") in out, out
