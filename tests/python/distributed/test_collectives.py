"""Every collective of the "pjrt" backend on tpu tensors, at 2 and 4 ranks
(one process each): all reduce ops over every dtype, async forms and their
futures, non-contiguous tensors, gathers, scatters, all-to-all (even and
uneven), point to point, coalescing, subgroups, barrier, object collectives,
the functional collectives DTensor uses, and errors that name what is wrong.
_collectives.py holds the checks; each compares with gloo on CPU tensors or
with values every rank computes locally."""
import pytest

import _launch


@pytest.mark.parametrize("world", [2, 4])
def test_collectives(world):
    results = _launch.run(world, "_collectives", "suite", timeout=300)
    for rank, checks in enumerate(results):
        assert len(checks) >= 100, sorted(checks)
        bad = {k: v for k, v in checks.items() if v}
        assert not bad, f"rank {rank}: " + "\n".join(f"{k}:\n{v}" for k, v in bad.items())
