"""The reference client workflow's data set and its oracle, shared by the Python client suites
(tests/clients/py9, tests/clients/opensearch).

The documents are generated here from a fixed seed; every expected answer (hits per query,
buckets per term and per month, sums, maxima) is computed from them in Python, never taken
from a server's answer. The JavaScript suite (tests/clients/js) has its own generator and
oracle, written independently in JavaScript.
"""

import datetime as _dt
import random

UTC = _dt.timezone.utc
N_DOCS = 600
TAGS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"]
WORDS = ["quick", "brown", "fox", "lazy", "dog", "river", "stone", "cloud", "amber", "north"]

MAPPING = {
    "properties": {
        "title": {"type": "text"},
        "tag": {"type": "keyword"},
        "qty": {"type": "integer"},
        "price": {"type": "double"},
        "ts": {"type": "date"},
    }
}

# The filter every aggregation search uses: documents with qty >= QTY_MIN.
QTY_MIN = 20


def generate(seed):
    """[(id, source)]: N_DOCS documents, tags skewed so that bucket counts differ, dates over
    2024 (every month has documents, the oracle does not rely on it)."""
    rng = random.Random(seed)
    start = _dt.datetime(2024, 1, 1, tzinfo=UTC)
    docs = []
    for i in range(N_DOCS):
        # skewed: tag k is chosen with weight 7 - k
        tag = rng.choices(TAGS, weights=[7 - k for k in range(len(TAGS))])[0]
        ts = start + _dt.timedelta(seconds=rng.randrange(366 * 86400))
        docs.append((
            "d%04d" % i,
            {
                "title": " ".join(rng.choice(WORDS) for _ in range(4)),
                "tag": tag,
                "qty": rng.randrange(0, 50),
                "price": rng.randrange(100, 100000) / 100.0,
                "ts": ts.strftime("%Y-%m-%dT%H:%M:%SZ"),
            },
        ))
    return docs


def parse_ts(s):
    return _dt.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def epoch_ms(d):
    return int(d.timestamp() * 1000)


def month_start(d):
    return d.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def next_month(d):
    return d.replace(year=d.year + 1, month=1) if d.month == 12 else d.replace(month=d.month + 1)


def aggs_request():
    """The search body of the aggregation step (as keyword arguments of `search`)."""
    return {
        "query": {"range": {"qty": {"gte": QTY_MIN}}},
        "size": 0,
        "track_total_hits": True,
        "aggs": {
            "tags": {
                "terms": {"field": "tag", "size": 10},
                "aggs": {"qty_sum": {"sum": {"field": "qty"}}},
            },
            "per_month": {"date_histogram": {"field": "ts", "calendar_interval": "month"}},
            "qty_sum": {"sum": {"field": "qty"}},
            "price_max": {"max": {"field": "price"}},
        },
    }


def expected_aggs(docs):
    """The oracle of aggs_request(): (total, tag buckets, month buckets, qty sum, price max)."""
    matched = [d for _, d in docs if d["qty"] >= QTY_MIN]
    per_tag = {}
    for d in matched:
        c, s = per_tag.get(d["tag"], (0, 0))
        per_tag[d["tag"]] = (c + 1, s + d["qty"])
    # terms order: count descending, then key ascending
    tags = [
        {"key": k, "doc_count": c, "qty_sum": s}
        for k, (c, s) in sorted(per_tag.items(), key=lambda kv: (-kv[1][0], kv[0]))
    ][:10]
    months = {}
    for d in matched:
        m = month_start(parse_ts(d["ts"]))
        months[m] = months.get(m, 0) + 1
    buckets = []
    if months:
        # min_doc_count defaults to 0: every month between the first and the last is a bucket
        m, last = min(months), max(months)
        while m <= last:
            buckets.append({
                "key": epoch_ms(m),
                "key_as_string": m.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
                "doc_count": months.get(m, 0),
            })
            m = next_month(m)
    return {
        "total": len(matched),
        "tags": tags,
        "months": buckets,
        "qty_sum": float(sum(d["qty"] for d in matched)),
        "price_max": max(d["price"] for d in matched),
    }


def check_aggs(resp, docs):
    """Asserts a response to aggs_request() against the oracle."""
    exp = expected_aggs(docs)
    assert resp["hits"]["total"] == {"value": exp["total"], "relation": "eq"}
    assert resp["hits"]["hits"] == []
    aggs = resp["aggregations"]
    got_tags = [
        {"key": b["key"], "doc_count": b["doc_count"], "qty_sum": b["qty_sum"]["value"]}
        for b in aggs["tags"]["buckets"]
    ]
    assert got_tags == exp["tags"]
    assert aggs["tags"]["sum_other_doc_count"] == 0
    assert aggs["tags"]["doc_count_error_upper_bound"] == 0
    assert aggs["per_month"]["buckets"] == exp["months"]
    assert aggs["qty_sum"]["value"] == exp["qty_sum"]
    assert aggs["price_max"]["value"] == exp["price_max"]
