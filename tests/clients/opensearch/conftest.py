"""Fixtures of the opensearch-py suite: a client for the `lode serve` at LODE_URL
(scripts/test-clients.sh starts one and sets it)."""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "common"))

from lode_url import lode_url  # noqa: E402,F401  (the shared fixture)


@pytest.fixture(scope="session")
def client(lode_url):
    from opensearchpy import OpenSearch

    # no retries: a failing request must fail the test that sent it
    c = OpenSearch(hosts=[lode_url], timeout=60, max_retries=0, retry_on_timeout=False)
    yield c
    c.close()
