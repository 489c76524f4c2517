#!/usr/bin/env python3
"""Sorted-page latency by query shape, two targets side by side (one connection each).

usage: bench-page-shapes.py URL_A URL_B [--index accounts] [--reps 5] [--top 20]

Every combination of: status (0: 70% of the documents, 2: 8%), a `createdTime` cut-off at 10%,
50% or 90% of the post-2020 span on either side (or none), the sort field (`createdTime`,
`createdTimeStr` -- the same instants in another field -- or `balance`) and order, and the page
(`from` 0 or 990). `request_cache=false`; each shape runs `--reps` times per target, alternating,
and the median wall time counts. Prints the shapes where B is slowest relative to A, the
geometric mean of B/A over all shapes, and how many shapes returned different hit ids (ties
in the sort value are ordered by internal doc id, which differs between engines).
Standard library only: runs anywhere the repository does.
"""
import argparse
import http.client
import itertools
import json
import statistics
import time
import urllib.parse

Y2020_MS = 1_577_808_000_000


class Target:
    def __init__(self, url, index):
        u = urllib.parse.urlparse(url)
        self.conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=60)
        self.path = f"/{index}/_search?request_cache=false"

    def search(self, body):
        data = json.dumps(body)
        t = time.perf_counter()
        self.conn.request("POST", self.path, data, {"Content-Type": "application/json"})
        resp = self.conn.getresponse()
        raw = resp.read()
        took = time.perf_counter() - t
        if resp.status != 200:
            raise SystemExit(f"HTTP {resp.status}: {raw[:300]!r}")
        return took, json.loads(raw)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("url_a")
    ap.add_argument("url_b")
    ap.add_argument("--index", default="accounts")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--top", type=int, default=20)
    args = ap.parse_args()
    a, b = Target(args.url_a, args.index), Target(args.url_b, args.index)
    _, r = b.search({"size": 0, "aggs": {"mx": {"max": {"field": "createdTime"}}}})
    mx = r["aggregations"]["mx"]["value"]
    cuts = [(f, int(Y2020_MS + (mx - Y2020_MS) * f)) for f in (0.1, 0.5, 0.9)]
    rows = []
    shapes = itertools.product(
        [0, 2], cuts, ["lt", "gte", None], ["createdTime", "createdTimeStr", "balance"],
        ["asc", "desc"], [0, 990])
    for status, (frac, cut), side, field, order, frm in shapes:
        if side is None and frac != cuts[0][0]:
            continue
        filters = [{"term": {"status": status}}]
        if side:
            filters.append({"range": {"createdTime": {side: cut}}})
        body = {"query": {"bool": {"filter": filters}}, "sort": [{field: {"order": order}}],
                "from": frm, "size": 10, "_source": False}
        times = {"a": [], "b": []}
        ids = {}
        for _ in range(args.reps):
            for name, t in (("a", a), ("b", b)):
                took, res = t.search(body)
                times[name].append(took)
                ids[name] = [h["_id"] for h in res["hits"]["hits"]]
        ma, mb = statistics.median(times["a"]) * 1000, statistics.median(times["b"]) * 1000
        shape = f"status={status} {side or '-'} {frac if side else ''} {field} {order} from={frm}"
        rows.append((mb / ma, mb, ma, shape, ids["a"] == ids["b"]))
    rows.sort(reverse=True)
    print(f"{'B/A':>5} {'B ms':>7} {'A ms':>7}  shape")
    for ratio, mb, ma, shape, same in rows[: args.top]:
        print(f"{ratio:5.2f} {mb:7.2f} {ma:7.2f}  {shape}{'' if same else '  (ids differ)'}")
    geo = statistics.geometric_mean([r[0] for r in rows])
    print(f"shapes {len(rows)}, geometric mean B/A {geo:.2f}, "
          f"worst {rows[0][0]:.2f}, different ids {sum(1 for r in rows if not r[4])}")


if __name__ == "__main__":
    main()
