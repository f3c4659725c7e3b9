"""Fixtures shared by the torch.compile(backend="tpu") test files. Importing
the autouse fixture into a test module turns it on there (conftest.py stays
the suite's own)."""
import pytest
import torch

import torch_pjrt


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Each test starts from an empty dynamo cache and zeroed metrics, and
    leaves no compiled graph behind for the next one."""
    torch._dynamo.reset()
    torch_pjrt.reset_metrics()
    yield
    torch._dynamo.reset()
