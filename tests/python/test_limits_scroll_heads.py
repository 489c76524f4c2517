"""Limits read from node settings and scroll contexts: a node started with
`http.max_initial_line_length=1kb`, `http.max_header_size=2kb` and a 1mb request breaker
refuses longer request lines and headers with ES's error JSON (never an empty body), charges
open scroll contexts to the `request` breaker (released when cleared or expired), and enforces
`search.max_open_scroll_context` with ES's 429 `too_many_scroll_contexts_exception`.

This module starts its own `lode serve`. Expected values are computed from the settings and
documents this module chooses.
"""

import json
import socket
import time

import pytest
from elasticsearch import ApiError, Elasticsearch

from conftest import LodeServer, lode_binary

LINE_LIMIT = 1024
HEADER_LIMIT = 2048
SMALL = 50            # documents of the small index
BIG = 50000           # documents of the big index: its scroll (24 bytes a hit) cannot be held under 1mb


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = LodeServer(lode_binary(), str(tmp_path_factory.mktemp("limits")), settings=[
        "http.max_initial_line_length=1kb",
        "http.max_header_size=2kb",
        "indices.breaker.request.limit=1mb",
        "indices.breaker.total.use_real_memory=false",
    ])
    s.start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture(scope="module")
def client(server):
    return Elasticsearch(server.url, request_timeout=120, max_retries=0, retry_on_status=())


@pytest.fixture(scope="module")
def loaded(client):
    client.indices.create(index="small", settings={"number_of_shards": 1})
    client.indices.create(index="two", settings={"number_of_shards": 2})
    client.indices.create(index="big", settings={"number_of_shards": 1})
    for name, n in (("small", SMALL), ("two", SMALL), ("big", BIG)):
        for lo in range(0, n, 5000):
            ops = []
            for i in range(lo, min(lo + 5000, n)):
                ops.append({"index": {"_index": name, "_id": str(i)}})
                ops.append({"n": i})
            assert not client.bulk(operations=ops)["errors"]
    client.indices.refresh(index="small,two,big")
    return True


def raw(server, head):
    """Sends a raw request head; returns (status, parsed JSON body)."""
    port = int(server.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(head.encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            if b"\r\n\r\n" in data:
                h, _, body = data.partition(b"\r\n\r\n")
                length = [int(l.split(b":")[1]) for l in h.split(b"\r\n")
                          if l.lower().startswith(b"content-length:")]
                if length and len(body) >= length[0]:
                    break
    h, _, body = data.partition(b"\r\n\r\n")
    status = int(h.split(b" ")[1])
    return status, json.loads(body) if body else None


def test_request_line_limit_comes_from_settings(server):
    # a request line one byte over the limit: "GET /" + path + " HTTP/1.1"
    path = "a" * (LINE_LIMIT - len("GET / HTTP/1.1") + 1)
    line = "GET /%s HTTP/1.1" % path
    assert len(line) == LINE_LIMIT + 1
    status, body = raw(server, line + "\r\nHost: x\r\n\r\n")
    assert status == 400
    assert body["error"]["type"] == "too_long_http_line_exception"
    assert body["error"]["reason"] == "An HTTP line is larger than %d bytes." % LINE_LIMIT
    assert body["status"] == 400
    # exactly at the limit: routed (an unknown index), not refused as too long
    path = "a" * (LINE_LIMIT - len("GET / HTTP/1.1"))
    status, body = raw(server, "GET /%s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path)
    assert body["error"]["type"] != "too_long_http_line_exception"


def test_header_size_limit_comes_from_settings(server):
    value = "v" * HEADER_LIMIT
    status, body = raw(server, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n" % value)
    assert status == 400
    assert body["error"]["type"] == "too_long_http_header_exception"
    assert body["error"]["reason"] == "HTTP header is larger than %d bytes." % HEADER_LIMIT
    # well under the limit: answered
    status, body = raw(server, "GET / HTTP/1.1\r\nHost: x\r\nX-Small: %s\r\nConnection: close\r\n\r\n"
                       % ("v" * 100))
    assert status == 200


def request_breaker(client):
    stats = client.nodes.stats(metric="breaker")
    node = next(iter(stats["nodes"].values()))
    return node["breakers"]["request"]


def wait_for(pred, what, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.2)
    raise AssertionError("timed out waiting for " + what)


def test_scroll_contexts_are_charged_to_the_request_breaker(client, loaded):
    base = request_breaker(client)["estimated_size_in_bytes"]
    r = client.search(index="small", scroll="1m", size=5, query={"match_all": {}})
    assert len(r["hits"]["hits"]) == 5
    held = request_breaker(client)["estimated_size_in_bytes"]
    assert held > base
    client.clear_scroll(scroll_id=r["_scroll_id"])
    assert request_breaker(client)["estimated_size_in_bytes"] == base
    # an expired scroll releases its memory without being cleared
    r = client.search(index="small", scroll="1s", size=5)
    assert request_breaker(client)["estimated_size_in_bytes"] > base
    wait_for(lambda: request_breaker(client)["estimated_size_in_bytes"] == base,
             "the expired scroll to be released")
    with pytest.raises(ApiError) as e:
        client.scroll(scroll_id=r["_scroll_id"], scroll="1m")
    assert e.value.status_code == 404
    # a scroll whose remaining hits do not fit under the 1mb limit trips the breaker
    tripped = request_breaker(client)["tripped"]
    with pytest.raises(ApiError) as e:
        client.search(index="big", scroll="1m", size=10)
    assert e.value.status_code == 429
    assert e.value.body["error"]["type"] == "circuit_breaking_exception"
    assert request_breaker(client)["tripped"] == tripped + 1
    assert request_breaker(client)["estimated_size_in_bytes"] == base
    # and the node keeps answering
    assert client.count(index="big")["count"] == BIG


def test_a_scroll_gives_memory_back_as_its_pages_are_returned(client, loaded):
    client.cluster.put_settings(transient={"indices.breaker.request.limit": "10mb"})
    try:
        base = request_breaker(client)["estimated_size_in_bytes"]
        r = client.search(index="big", scroll="1m", size=10000, sort=["_doc"])
        seen = [h["_id"] for h in r["hits"]["hits"]]
        first = request_breaker(client)["estimated_size_in_bytes"] - base
        assert first > 0
        held = [first]
        while True:
            r = client.scroll(scroll_id=r["_scroll_id"], scroll="1m")
            if not r["hits"]["hits"]:
                break
            seen += [h["_id"] for h in r["hits"]["hits"]]
            held.append(request_breaker(client)["estimated_size_in_bytes"] - base)
        # every document once, and the memory held shrinks as the hits are returned
        assert sorted(seen, key=int) == [str(i) for i in range(BIG)]
        assert held == sorted(held, reverse=True)
        assert held[-1] < first / 4
        client.clear_scroll(scroll_id=r["_scroll_id"])
        assert request_breaker(client)["estimated_size_in_bytes"] == base
    finally:
        client.cluster.put_settings(transient={"indices.breaker.request.limit": None})


def test_max_open_scroll_context(client, loaded):
    client.cluster.put_settings(transient={"search.max_open_scroll_context": 3})
    try:
        ids = [client.search(index="small", scroll="1m", size=1)["_scroll_id"] for _ in range(3)]
        with pytest.raises(ApiError) as e:
            client.search(index="small", scroll="1m", size=1)
        assert e.value.status_code == 429
        err = e.value.body["error"]
        assert err["type"] == "search_phase_execution_exception"
        assert err["root_cause"][0]["type"] == "too_many_scroll_contexts_exception"
        assert err["root_cause"][0]["reason"] == (
            "Trying to create too many scroll contexts. Must be less than or equal to: [3]. "
            "This limit can be set by changing the [search.max_open_scroll_context] setting.")
        # a search without scroll is not limited
        assert client.search(index="small", size=0)["hits"]["total"]["value"] == SMALL
        # clearing one frees its context
        client.clear_scroll(scroll_id=ids.pop())
        ids.append(client.search(index="small", scroll="1m", size=1)["_scroll_id"])
        # a scroll over a two-shard index holds two contexts: 2 + 2 > 3
        client.clear_scroll(scroll_id=ids.pop())
        client.clear_scroll(scroll_id=ids.pop())
        ids.append(client.search(index="two", scroll="1m", size=1)["_scroll_id"])
        with pytest.raises(ApiError) as e:
            client.search(index="two", scroll="1m", size=1)
        assert e.value.status_code == 429
    finally:
        client.clear_scroll(scroll_id="_all")
        client.cluster.put_settings(transient={"search.max_open_scroll_context": None})
