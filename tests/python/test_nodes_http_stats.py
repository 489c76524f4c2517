"""`_nodes/stats/http` counts real HTTP connections: `total_opened` grows by one per new
connection and `current_open` follows the connections a client holds open."""

import http.client
import json
import time
import urllib.parse


def http_stats(url):
    u = urllib.parse.urlparse(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    c.request("GET", "/_nodes/stats/http")
    body = json.loads(c.getresponse().read())
    c.close()
    (node,) = body["nodes"].values()
    return node["http"]


def test_connections_are_counted(lode_url):
    u = urllib.parse.urlparse(lode_url)
    before = http_stats(lode_url)
    held = []
    for _ in range(5):
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        c.request("GET", "/")
        c.getresponse().read()  # keep-alive: the connection stays open
        held.append(c)
    during = http_stats(lode_url)
    # The five held connections, plus each stats request's own.
    assert during["total_opened"] >= before["total_opened"] + 6
    assert during["current_open"] >= 5 + 1
    for c in held:
        c.close()
    deadline = time.time() + 20
    while True:
        after = http_stats(lode_url)
        if after["current_open"] <= during["current_open"] - 5 or time.time() > deadline:
            break
        time.sleep(0.1)
    assert after["current_open"] <= during["current_open"] - 5
    assert after["total_opened"] >= during["total_opened"] + 1
