"""Fixtures of the elasticsearch-py 9 suite: a client for the `lode serve` at LODE_URL
(scripts/test-clients.sh starts one and sets it)."""

import os
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "common"))


@pytest.fixture(scope="session")
def lode_url():
    url = os.environ.get("LODE_URL")
    if not url:
        pytest.exit("LODE_URL is not set: run scripts/test-clients.sh", returncode=2)
    return url.rstrip("/")


@pytest.fixture(scope="session")
def es(lode_url):
    from elasticsearch import Elasticsearch

    # no retries: a failing request must fail the test that sent it
    client = Elasticsearch(lode_url, request_timeout=60, max_retries=0)
    yield client
    client.close()
