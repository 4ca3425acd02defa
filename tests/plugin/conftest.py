"""Fixtures for the plugin-integration tests; the helpers live in plugin_helpers.py (a name
that cannot collide with tests/conftest.py when imported)."""

import pytest
from plugin_helpers import run_script


@pytest.fixture
def run_py():
    return run_script
