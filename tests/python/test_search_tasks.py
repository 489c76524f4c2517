"""Searches as cancellable tasks (ES 8's `TransportSearchAction` tasks): a running search is
listed by `GET /_tasks`, `_cancel` stops it with ES's `task_cancelled_exception` (a 400), and a
client that closes its connection cancels its search (ES's `RestCancellableNodeClient`). The
slow search is a script filter looping per document over a bounded index, so it runs for
seconds in a debug build and ends on its own if not cancelled."""
import json
import socket
import threading
import time
from urllib.parse import urlparse

import pytest
from elasticsearch import ApiError

import conftest

INDEX = "slow_tasks"
N = 5000


@pytest.fixture(scope="module")
def slow(es):
    conftest.make_index(es, INDEX, {"settings": {"number_of_shards": 1}},
                        [(str(i), {"n": i}) for i in range(N)])
    return INDEX


def slow_body(tag):
    # `tag` keeps each script distinct, so no request cache answers it.
    src = "long s = %d; for (int i = 0; i < 3000; ++i) { s += i; } return s > 0;" % tag
    return {"size": 0, "track_total_hits": True,
            "query": {"bool": {"filter": {"script": {"script": {"source": src}}}}}}


def search_tasks(es):
    nodes = es.tasks.list(actions="*search*", detailed=True)["nodes"]
    return {tid: t for n in nodes.values() for tid, t in n["tasks"].items()
            if t["action"] == "indices:data/read/search"}


def wait_for(pred, bound=60):
    end = time.time() + bound
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    return None


def test_a_running_search_is_listed_and_cancelled(es, slow):
    out = {}

    def run():
        try:
            out["resp"] = es.options(opaque_id="cancel-me").search(index=slow, body=slow_body(1))
        except ApiError as e:
            out["err"] = e

    th = threading.Thread(target=run)
    th.start()
    tasks = wait_for(lambda: {k: t for k, t in search_tasks(es).items()
                              if t["headers"].get("X-Opaque-Id") == "cancel-me"})
    assert tasks, "the running search is listed by GET /_tasks"
    tid, task = next(iter(tasks.items()))
    assert task["cancellable"] is True and task["cancelled"] is False
    assert task["description"].startswith("indices[%s], search_type[QUERY_THEN_FETCH], source[" % slow)
    assert task["running_time_in_nanos"] > 0
    got = es.tasks.get(task_id=tid)
    assert got["completed"] is False and got["task"]["action"] == "indices:data/read/search"
    cancelled = es.tasks.cancel(task_id=tid)
    assert next(iter(cancelled["nodes"].values()))["tasks"][tid]["cancelled"] is True
    th.join(120)
    assert not th.is_alive()
    err = out.get("err")
    assert err is not None, "a cancelled search fails"
    assert err.meta.status == 400
    assert err.body["error"]["type"] == "search_phase_execution_exception"
    assert err.body["error"]["root_cause"][0] == {
        "type": "task_cancelled_exception", "reason": "task cancelled [by user request]"}
    assert wait_for(lambda: tid not in search_tasks(es))
    assert es.count(index=slow)["count"] == N


def test_cancel_by_actions(es, slow):
    out = {}

    def run():
        try:
            out["resp"] = es.search(index=slow, body=slow_body(2))
        except ApiError as e:
            out["err"] = e

    th = threading.Thread(target=run)
    th.start()
    assert wait_for(lambda: search_tasks(es))
    resp = es.tasks.cancel(actions="*search*")
    assert any(t["cancelled"] for n in resp["nodes"].values() for t in n["tasks"].values())
    th.join(120)
    assert out["err"].body["error"]["root_cause"][0]["type"] == "task_cancelled_exception"


def test_a_closed_connection_cancels_its_search(es, slow, lode_url):
    u = urlparse(lode_url)
    body = json.dumps(slow_body(3)).encode()
    sock = socket.create_connection((u.hostname, u.port))
    sock.sendall(b"POST /%s/_search HTTP/1.1\r\nHost: x\r\nX-Opaque-Id: closer\r\n"
                 b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                 % (slow.encode(), len(body), body))
    mine = lambda: {k: t for k, t in search_tasks(es).items()
                    if t["headers"].get("X-Opaque-Id") == "closer"}
    if not wait_for(mine):
        sock.settimeout(120)
        pytest.fail("the search never showed as a task; the connection got: %r"
                    % sock.recv(4096)[:600])
    sock.close()
    assert wait_for(lambda: not mine()), "closing the connection ends the search's task"
    assert es.cluster.health()["status"] in ("green", "yellow")


def test_msearch_items_are_child_tasks(es, slow):
    out = {}
    lines = [{"index": slow}, slow_body(4)]

    def run():
        out["resp"] = es.msearch(body=lines)

    th = threading.Thread(target=run)
    th.start()
    parent = wait_for(lambda: [k for n in es.tasks.list(actions="*msearch*")["nodes"].values()
                               for k in n["tasks"]])
    assert parent
    child = wait_for(lambda: [t for t in search_tasks(es).values()
                              if t.get("parent_task_id") == parent[0]])
    assert child
    es.tasks.cancel(task_id=parent[0])
    th.join(120)
    item = out["resp"]["responses"][0]
    assert item["status"] == 400
    assert item["error"]["root_cause"][0]["type"] == "task_cancelled_exception"
