"""The `lode_url` fixture both Python client suites share: the `lode serve` at LODE_URL
(scripts/test-clients.sh starts one and sets it)."""

import os

import pytest


@pytest.fixture(scope="session")
def lode_url():
    url = os.environ.get("LODE_URL")
    if not url:
        pytest.exit("LODE_URL is not set: run scripts/test-clients.sh", returncode=2)
    return url.rstrip("/")
