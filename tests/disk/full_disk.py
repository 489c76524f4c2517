#!/usr/bin/env python3
"""Fills a real, small disk under a running `lode serve` and checks ES's promises about it.

    full_disk.py URL PHASE STATE_FILE

Phase `fill`: bulk-indexes incompressible 2 KB documents, recording every acknowledged id
(item status 201) in STATE_FILE, until the node refuses writes for 20 s in a row. Passes when
the refusals are ES's flood-stage block (429 `cluster_block_exception`, "disk usage exceeded
flood-stage watermark, index has read-only-allow-delete block") or, when the disk filled
between two watermark checks, an error answer (never a 2xx for a write that was not kept),
and when the node still answers searches.

Phase `verify` (after a kill -9 and a restart on the same data; BALLAST names a file the
script put on the disk before filling it): when the restarted node could not open the index
(its writer must write, and the disk is full), the index is there and red, as Elasticsearch
keeps an unassigned shard: `_cluster/health` red, `_cat/shards` UNASSIGNED with
`ALLOCATION_FAILED`, a search answers 503 `search_phase_execution_exception` and a GET 503
`no_shard_available_action_exception`. Then the ballast is deleted (space freed) and the index
must come back without a restart (the node's automatic retries; after 40 s the script asks
`POST _cluster/reroute?retry_failed=true`, as an operator would, and says so). Then every
acknowledged id is there (`_count` and `ids` queries after `_refresh`, or a realtime GET per
id when the disk is too full to refresh), and deleting the index works.
Standard library only.
"""
import json
import os
import sys
import time
import urllib.error
import urllib.request

INDEX = "fill"


def call(url, method, path, body=None, ndjson=False, timeout=60):
    data = None
    headers = {}
    if body is not None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        headers["Content-Type"] = "application/x-ndjson" if ndjson else "application/json"
    req = urllib.request.Request(url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, {"raw": raw[:300].decode(errors="replace")}


def fill(url, state_file):
    status, _ = call(url, "PUT", f"/{INDEX}", {
        "settings": {"number_of_shards": 1, "refresh_interval": "1s"},
        "mappings": {"properties": {"blob": {"type": "keyword", "index": False,
                                              "doc_values": False}}}})
    assert status == 200, status
    acked = []
    refusals = {}
    next_id = 0
    refused_since = None
    blocked_seen = False
    while True:
        lines = []
        ids = []
        for _ in range(100):
            ids.append(str(next_id))
            lines.append(json.dumps({"index": {"_index": INDEX, "_id": str(next_id)}}))
            lines.append(json.dumps({"blob": os.urandom(1024).hex()}))
            next_id += 1
        status, body = call(url, "POST", "/_bulk", "\n".join(lines) + "\n", ndjson=True)
        ok_now = []
        if status == 200:
            for doc_id, item in zip(ids, body["items"]):
                r = item["index"]
                if r["status"] in (200, 201):
                    ok_now.append(doc_id)
                else:
                    err = r.get("error", {})
                    key = f'{r["status"]} {err.get("type")}: {err.get("reason", "")[:160]}'
                    refusals[key] = refusals.get(key, 0) + 1
                    blocked_seen |= "flood-stage" in err.get("reason", "")
        else:
            err = body.get("error", {}) if isinstance(body, dict) else {}
            reason = err.get("reason", "") if isinstance(err, dict) else str(err)
            key = f'{status} {err.get("type") if isinstance(err, dict) else ""}: {reason[:160]}'
            refusals[key] = refusals.get(key, 0) + 1
            blocked_seen |= "flood-stage" in reason
        acked.extend(ok_now)
        if ok_now:
            refused_since = None
        elif refused_since is None:
            refused_since = time.time()
        elif time.time() - refused_since > 20:
            break
        if not ok_now:
            time.sleep(0.5)
    with open(state_file, "w") as f:
        json.dump({"acked": acked}, f)
    print(f"fill: {len(acked)} documents acknowledged; refusals:")
    for k, n in sorted(refusals.items(), key=lambda kv: -kv[1]):
        print(f"  {n:6d} x {k}")
    status, _ = call(url, "POST", f"/{INDEX}/_search", {"size": 0})
    print(f"fill: search on the full disk answers {status}")
    if status != 200:
        sys.exit("fill: the node stopped answering searches")
    if not blocked_seen:
        print("fill: no flood-stage block seen (the disk filled between two checks): "
              "writes were refused with the errors above")


def index_health(url):
    status, body = call(url, "GET", f"/_cluster/health/{INDEX}?timeout=1s")
    return body.get("status") if isinstance(body, dict) else None


def check_red(url):
    """The index failed to open: it must be there, red, and answer ES's errors."""
    print("verify: the index is red after the restart (its shard could not open)")
    status, body = call(url, "GET", "/_cluster/health")
    assert body["status"] == "red" and body["unassigned_primary_shards"] >= 1, body
    status, rows = call(url, "GET", f"/_cat/shards/{INDEX}?format=json"
                                    "&h=shard,prirep,state,unassigned.reason,unassigned.details")
    rows = [r for r in rows if r["prirep"] == "p"]
    assert status == 200 and rows, rows
    for r in rows:
        assert (r["state"], r["unassigned.reason"]) == ("UNASSIGNED", "ALLOCATION_FAILED"), r
    print(f"verify: _cat/shards: {rows[0]['state']} {rows[0]['unassigned.reason']}: "
          f"{(rows[0]['unassigned.details'] or '')[:200]}")
    status, body = call(url, "POST", f"/{INDEX}/_search", {"size": 0})
    assert status == 503 and body["error"]["type"] == "search_phase_execution_exception", body
    status, body = call(url, "GET", f"/{INDEX}/_doc/0")
    assert status == 503 and body["error"]["type"] == "no_shard_available_action_exception", body
    print("verify: search 503 search_phase_execution_exception, "
          "GET 503 no_shard_available_action_exception")


def verify(url, state_file, ballast=None):
    with open(state_file) as f:
        acked = json.load(f)["acked"]
    health = index_health(url)
    if health is None:
        sys.exit("verify: the index is gone after the restart (ES keeps it, red)")
    was_red = health == "red"
    if was_red:
        check_red(url)
    else:
        print(f"verify: the index opened after the restart ({health}): its writer found room")
    if ballast and os.path.exists(ballast):
        os.remove(ballast)
        print("verify: ballast deleted: space freed")
    if was_red:
        started = time.time()
        rerouted = False
        while index_health(url) == "red":
            if time.time() - started > 40 and not rerouted:
                print("verify: still red after 40 s: POST _cluster/reroute?retry_failed=true")
                call(url, "POST", "/_cluster/reroute?retry_failed=true&metric=none")
                rerouted = True
            if time.time() - started > 100:
                sys.exit("verify: the index did not come back once space was freed")
            time.sleep(0.5)
        how = "after the reroute" if rerouted else "by the node's own retries"
        print(f"verify: the index came back {how} in {time.time() - started:.1f} s, no restart")
    status, _ = call(url, "POST", f"/{INDEX}/_refresh")
    print(f"verify: refresh after restart answers {status}")
    status, body = call(url, "GET", f"/{INDEX}/_count")
    count = body.get("count") if status == 200 else None
    print(f"verify: _count {count}, acknowledged {len(acked)}")
    missing = []
    for i in range(0, len(acked), 500):
        chunk = acked[i:i + 500]
        status, body = call(url, "POST", f"/{INDEX}/_search",
                            {"size": 0, "track_total_hits": True,
                             "query": {"ids": {"values": chunk}}})
        found = body["hits"]["total"]["value"] if status == 200 else 0
        if found != len(chunk):
            for doc_id in chunk:
                s, b = call(url, "GET", f"/{INDEX}/_doc/{doc_id}")
                if s != 200 or not b.get("found"):
                    missing.append(doc_id)
    if missing:
        sys.exit(f"verify: {len(missing)} acknowledged documents lost, e.g. {missing[:10]}")
    print("verify: every acknowledged document is there")
    status, _ = call(url, "DELETE", f"/{INDEX}")
    print(f"verify: deleting the index answers {status}")
    if status != 200:
        sys.exit("verify: a full disk must still allow deleting an index")


def main():
    url, phase, state = sys.argv[1], sys.argv[2], sys.argv[3]
    if phase == "verify":
        verify(url, state, sys.argv[4] if len(sys.argv) > 4 else None)
    else:
        fill(url, state)


if __name__ == "__main__":
    main()
