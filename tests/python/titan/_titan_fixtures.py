"""The titan tests' shared fixture, imported by each test module (not a
conftest.py: a second conftest module would take the name `conftest` that
tests/python's own test files import helpers from)."""
import pytest

pytest.importorskip("torchtitan", reason="torchtitan is not installed (make titan)")


@pytest.fixture(scope="session")
def titan_assets(tmp_path_factory):
    """The tokenizer and dataset, built once per session in a temporary folder."""
    from _assets import build
    return build(str(tmp_path_factory.mktemp("titan-assets")))
