"""Bucket aggregations on non-date keys: terms (size, order, min_doc_count,
missing, include/exclude), histogram, range, filter, filters."""

import math
import re

import pytest
from elasticsearch import BadRequestError

import oracle


def aggs(es, aggs, query=None, index="accounts", **extra):
    body = {"size": 0, "aggs": aggs, **extra}
    if query is not None:
        body["query"] = query
    return es.search(index=index, body=body).body["aggregations"]


def buckets_kc(agg):
    return [(b["key"], b["doc_count"]) for b in agg["buckets"]]


# ---------------------------------------------------------------------------
# terms
# ---------------------------------------------------------------------------

def test_terms_size_and_other_count(es, accounts, corpus):
    agg = aggs(es, {"t": {"terms": {"field": "balanceTypeName", "size": 5}}})["t"]
    counts = oracle.counts_by(corpus.values("balanceTypeName"))
    order = oracle.terms_order_default(counts)
    assert buckets_kc(agg) == order[:5]
    assert agg["sum_other_doc_count"] == sum(c for _, c in order[5:])
    assert agg["doc_count_error_upper_bound"] == 0


def test_terms_default_size_is_10(es, accounts, corpus):
    agg = aggs(es, {"t": {"terms": {"field": "balanceTypeName"}}})["t"]
    order = oracle.terms_order_default(oracle.counts_by(corpus.values("balanceTypeName")))
    assert buckets_kc(agg) == order[:10]


def test_terms_order_key_asc_desc(es, accounts, corpus):
    a = aggs(es, {"asc": {"terms": {"field": "acctType", "order": {"_key": "asc"}}},
                  "desc": {"terms": {"field": "acctType", "order": {"_key": "desc"}}}})
    counts = oracle.counts_by(corpus.values("acctType"))
    assert buckets_kc(a["asc"]) == sorted(counts.items())
    assert buckets_kc(a["desc"]) == sorted(counts.items(), reverse=True)


def test_terms_order_count_asc(es, accounts, corpus):
    agg = aggs(es, {"t": {"terms": {"field": "balanceTypeName", "size": 7, "order": {"_count": "asc"}}}})["t"]
    counts = oracle.counts_by(corpus.values("balanceTypeName"))
    exp = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]))
    assert buckets_kc(agg) == exp[:7]


def test_terms_order_by_sub_aggregation(es, accounts, corpus):
    agg = aggs(es, {"t": {"terms": {"field": "balanceTypeName", "size": 4, "order": {"bal": "desc"}},
                          "aggs": {"bal": {"sum": {"field": "balance"}}}}})["t"]
    sums = {}
    for d in (d for _, d in corpus.docs):
        sums.setdefault(d["balanceTypeName"], []).append(d["balance"])
    exp = sorted(sums, key=lambda k: -oracle.fsum(sums[k]))[:4]
    assert [b["key"] for b in agg["buckets"]] == exp
    for b in agg["buckets"]:
        assert b["doc_count"] == len(sums[b["key"]])
        oracle.assert_float(b["bal"]["value"], oracle.fsum(sums[b["key"]]), b["key"],
                            scale=oracle.fsum(abs(v) for v in sums[b["key"]]))


def test_terms_numeric_field(es, accounts, corpus):
    agg = aggs(es, {"t": {"terms": {"field": "status"}}})["t"]
    counts = oracle.counts_by(corpus.values("status"))
    assert buckets_kc(agg) == oracle.terms_order_default(counts)
    for b in agg["buckets"]:
        assert isinstance(b["key"], int)
        assert "key_as_string" not in b


def test_terms_min_doc_count_zero(es, accounts, corpus):
    """min_doc_count 0 also returns terms of the index that match no document."""
    agg = aggs(es, {"t": {"terms": {"field": "acctType", "min_doc_count": 0, "size": 10}}},
               {"term": {"acctId": "A00000000000"}})["t"]
    all_types = set(corpus.values("acctType"))
    matched = oracle.counts_by(corpus.values("acctType", lambda d: d["acctId"] == "A00000000000"))
    exp = oracle.terms_order_default({k: matched.get(k, 0) for k in all_types})
    assert buckets_kc(agg) == exp


def test_terms_min_doc_count_filters_small_buckets(es, accounts, corpus):
    counts = oracle.counts_by(corpus.values("balanceTypeName"))
    threshold = sorted(counts.values())[10]
    agg = aggs(es, {"t": {"terms": {"field": "balanceTypeName", "size": 50, "min_doc_count": threshold}}})["t"]
    exp = [(k, c) for k, c in oracle.terms_order_default(counts) if c >= threshold]
    assert buckets_kc(agg) == exp


def test_terms_include_exclude_regex(es, accounts, corpus):
    agg = aggs(es, {"t": {"terms": {"field": "balanceTypeName", "size": 50,
                                    "include": "转账.*|退款.*", "exclude": ".*冲正"}}})["t"]
    counts = oracle.counts_by(corpus.values("balanceTypeName"))
    keep = {k: c for k, c in counts.items()
            if re.fullmatch("转账.*|退款.*", k) and not re.fullmatch(".*冲正", k)}
    assert set(keep) == {"转账转入", "转账转出", "退款"}
    assert buckets_kc(agg) == oracle.terms_order_default(keep)


def test_terms_include_exclude_exact_values(es, accounts, corpus):
    agg = aggs(es, {"t": {"terms": {"field": "acctType", "include": ["BASIC", "CREDIT", "ESCROW"],
                                    "exclude": ["CREDIT"]}}})["t"]
    counts = oracle.counts_by(corpus.values("acctType"))
    assert buckets_kc(agg) == oracle.terms_order_default({k: counts[k] for k in ("BASIC", "ESCROW")})


def test_terms_missing(es, sparse):
    name, docs = sparse
    agg = aggs(es, {"t": {"terms": {"field": "tags", "missing": "none", "size": 10}}}, index=name)["t"]
    counts = {}
    for _, d in docs:
        for t in set(d.get("tags", ["none"])):
            counts[t] = counts.get(t, 0) + 1
    assert buckets_kc(agg) == oracle.terms_order_default(counts)


def test_terms_on_multi_valued_field(es, sparse):
    name, docs = sparse
    agg = aggs(es, {"t": {"terms": {"field": "tags"}}}, index=name)["t"]
    counts = {}
    for _, d in docs:
        for t in set(d.get("tags", [])):
            counts[t] = counts.get(t, 0) + 1
    assert buckets_kc(agg) == oracle.terms_order_default(counts)


# ---------------------------------------------------------------------------
# histogram
# ---------------------------------------------------------------------------

def hist_expected(values, interval, offset=0.0, min_doc_count=0, bounds=None):
    counts = oracle.counts_by(math.floor((v - offset) / interval) * interval + offset for v in values)
    if min_doc_count > 0:
        return sorted((k, c) for k, c in counts.items() if c >= min_doc_count)
    lo, hi = min(counts), max(counts)
    if bounds:
        lo = min(lo, math.floor((bounds[0] - offset) / interval) * interval + offset)
        hi = max(hi, math.floor((bounds[1] - offset) / interval) * interval + offset)
    out = []
    k = lo
    while k <= hi + 1e-9:
        out.append((k, counts.get(k, 0)))
        k += interval
    return out


def test_histogram_fills_empty_buckets(es, accounts, corpus):
    q = {"range": {"balance": {"gte": 10000, "lt": 60000}}}
    agg = aggs(es, {"h": {"histogram": {"field": "balance", "interval": 2500}}}, q)["h"]
    vals = corpus.values("balance", lambda d: 10000 <= d["balance"] < 60000)
    assert buckets_kc(agg) == hist_expected(vals, 2500)


def test_histogram_min_doc_count_and_offset(es, accounts, corpus):
    q = {"range": {"balance": {"gte": -2000, "lt": 3000}}}
    agg = aggs(es, {"h": {"histogram": {"field": "balance", "interval": 1000, "offset": 250,
                                        "min_doc_count": 1}}}, q)["h"]
    vals = corpus.values("balance", lambda d: -2000 <= d["balance"] < 3000)
    assert buckets_kc(agg) == hist_expected(vals, 1000, offset=250, min_doc_count=1)


def test_histogram_extended_bounds(es, accounts, corpus):
    q = {"term": {"acctId": "A00000000000"}}
    agg = aggs(es, {"h": {"histogram": {"field": "status", "interval": 1, "min_doc_count": 0,
                                        "extended_bounds": {"min": 0, "max": 5}}}}, q)["h"]
    vals = corpus.values("status", lambda d: d["acctId"] == "A00000000000")
    counts = oracle.counts_by(float(v) for v in vals)
    assert buckets_kc(agg) == [(float(k), counts.get(float(k), 0)) for k in range(0, 6)]


def test_histogram_with_sub_stats(es, accounts, corpus):
    agg = aggs(es, {"h": {"histogram": {"field": "status", "interval": 2},
                          "aggs": {"s": {"stats": {"field": "balance"}}}}})["h"]
    assert [b["key"] for b in agg["buckets"]] == [0.0, 2.0]
    for b in agg["buckets"]:
        vals = corpus.values("balance", lambda d: d["status"] // 2 * 2 == b["key"])
        exp = oracle.stats(vals)
        assert b["doc_count"] == b["s"]["count"] == exp["count"]
        oracle.assert_float(b["s"]["sum"], exp["sum"], "sum", scale=exp["scale"])
        assert b["s"]["min"] == exp["min"] and b["s"]["max"] == exp["max"]


# ---------------------------------------------------------------------------
# range
# ---------------------------------------------------------------------------

def test_range_agg_default_keys(es, accounts, corpus):
    ranges = [{"to": 0}, {"from": 0, "to": 1000}, {"from": 1000, "to": 10000}, {"from": 10000}]
    agg = aggs(es, {"r": {"range": {"field": "balance", "ranges": ranges}}})["r"]
    vals = corpus.values("balance")
    exp = [
        {"key": "*-0.0", "to": 0.0, "doc_count": sum(1 for v in vals if v < 0)},
        {"key": "0.0-1000.0", "from": 0.0, "to": 1000.0, "doc_count": sum(1 for v in vals if 0 <= v < 1000)},
        {"key": "1000.0-10000.0", "from": 1000.0, "to": 10000.0,
         "doc_count": sum(1 for v in vals if 1000 <= v < 10000)},
        {"key": "10000.0-*", "from": 10000.0, "doc_count": sum(1 for v in vals if v >= 10000)},
    ]
    assert agg["buckets"] == exp


def test_range_agg_custom_keys_keyed_and_sub_agg(es, accounts, corpus):
    ranges = [{"key": "low", "to": 1}, {"key": "mid", "from": 1, "to": 3}, {"key": "high", "from": 3}]
    agg = aggs(es, {"r": {"range": {"field": "status", "ranges": ranges, "keyed": True},
                          "aggs": {"avg": {"avg": {"field": "balance"}}}}})["r"]
    assert list(agg["buckets"]) == ["low", "mid", "high"]
    preds = {"low": lambda d: d["status"] < 1, "mid": lambda d: 1 <= d["status"] < 3,
             "high": lambda d: d["status"] >= 3}
    for k, p in preds.items():
        vals = corpus.values("balance", p)
        b = agg["buckets"][k]
        assert b["doc_count"] == len(vals)
        oracle.assert_float(b["avg"]["value"], oracle.fsum(vals) / len(vals), k,
                            scale=oracle.fsum(abs(v) for v in vals) / len(vals))


def test_range_agg_overlapping_ranges(es, accounts, corpus):
    ranges = [{"from": 0, "to": 500}, {"from": 100, "to": 200}, {"from": 100, "to": 5000}]
    agg = aggs(es, {"r": {"range": {"field": "balance", "ranges": ranges}}})["r"]
    vals = corpus.values("balance")
    got = [(b.get("from"), b.get("to"), b["doc_count"]) for b in agg["buckets"]]
    exp = [(float(r["from"]), float(r["to"]), sum(1 for v in vals if r["from"] <= v < r["to"])) for r in ranges]
    assert got == exp


# ---------------------------------------------------------------------------
# filter, filters
# ---------------------------------------------------------------------------

def test_filter_agg(es, accounts, corpus):
    agg = aggs(es, {"f": {"filter": {"range": {"balance": {"lt": 0}}},
                          "aggs": {"n": {"value_count": {"field": "balance"}},
                                   "t": {"terms": {"field": "acctType", "size": 3}}}}},
               {"term": {"status": 0}})["f"]
    p = lambda d: d["status"] == 0 and d["balance"] < 0
    n = corpus.count(p)
    assert agg["doc_count"] == n and agg["n"]["value"] == n
    assert buckets_kc(agg["t"]) == oracle.terms_order_default(oracle.counts_by(corpus.values("acctType", p)))[:3]


def test_filters_agg_keyed_with_other_bucket(es, accounts, corpus):
    agg = aggs(es, {"f": {"filters": {"other_bucket": True, "filters": {
        "negative": {"range": {"balance": {"lt": 0}}},
        "basic": {"term": {"acctType": "BASIC"}},
        "refund": {"match": {"remark": "refund"}},
    }}}})["f"]
    b = agg["buckets"]
    neg = lambda d: d["balance"] < 0
    basic = lambda d: d["acctType"] == "BASIC"
    refund = lambda d: "refund" in oracle.analyze(d["remark"])
    assert b["negative"]["doc_count"] == corpus.count(neg)
    assert b["basic"]["doc_count"] == corpus.count(basic)
    assert b["refund"]["doc_count"] == corpus.count(refund)
    assert b["_other_"]["doc_count"] == corpus.count(lambda d: not (neg(d) or basic(d) or refund(d)))


def test_filters_agg_anonymous_list(es, accounts, corpus):
    agg = aggs(es, {"f": {"filters": {"filters": [
        {"term": {"status": 2}}, {"terms": {"acctType": ["VIRTUAL", "ESCROW"]}}]},
        "aggs": {"s": {"sum": {"field": "balance"}}}}})["f"]
    preds = [lambda d: d["status"] == 2, lambda d: d["acctType"] in ("VIRTUAL", "ESCROW")]
    assert isinstance(agg["buckets"], list) and len(agg["buckets"]) == 2
    for b, p in zip(agg["buckets"], preds):
        vals = corpus.values("balance", p)
        assert b["doc_count"] == len(vals)
        oracle.assert_float(b["s"]["value"], oracle.fsum(vals), "sum", scale=oracle.fsum(abs(v) for v in vals))


def test_filters_agg_counted_filter_by_filter(es, accounts, corpus):
    """Without sub-aggregations under match_all, each filter is counted on its own."""
    agg = aggs(es, {"f": {"filters": {"filters": {
        "negative": {"range": {"balance": {"lt": 0}}},
        "basic": {"term": {"acctType": "BASIC"}},
        "refund": {"match": {"remark": "refund"}},
        "both": {"bool": {"filter": [{"term": {"status": 1}}, {"range": {"balance": {"gte": 100}}}]}},
    }}}, "one": {"filter": {"term": {"acctType": "ESCROW"}}}})
    b = agg["f"]["buckets"]
    assert b["negative"]["doc_count"] == corpus.count(lambda d: d["balance"] < 0)
    assert b["basic"]["doc_count"] == corpus.count(lambda d: d["acctType"] == "BASIC")
    assert b["refund"]["doc_count"] == corpus.count(lambda d: "refund" in oracle.analyze(d["remark"]))
    assert b["both"]["doc_count"] == corpus.count(lambda d: d["status"] == 1 and d["balance"] >= 100)
    assert agg["one"]["doc_count"] == corpus.count(lambda d: d["acctType"] == "ESCROW")


def test_filters_agg_counts_over_segments_with_deletes(es):
    """Overlapping filters on multi-valued fields over several segments, some documents
    deleted and some updated: each bucket counts the live documents its filter matches."""
    import random
    rnd = random.Random(5)
    name = "filters_counted"
    es.indices.create(index=name, settings={"number_of_shards": 1},
                      mappings={"properties": {"k": {"type": "keyword"}, "n": {"type": "long"}}})
    try:
        docs = {}
        for batch in range(3):
            ops = []
            for i in range(batch * 400, batch * 400 + 400):
                docs[str(i)] = {"k": rnd.sample("abcde", rnd.randint(0, 3)), "n": rnd.randint(0, 99)}
                ops += [{"index": {"_index": name, "_id": str(i)}}, docs[str(i)]]
            es.bulk(operations=ops, refresh=True)
        for i in rnd.sample(sorted(docs), 200):
            es.delete(index=name, id=i)
            del docs[i]
        for i in rnd.sample(sorted(docs), 100):
            docs[i] = {"k": ["e"], "n": 50}
            es.index(index=name, id=i, document=docs[i])
        es.indices.refresh(index=name)
        filters = {
            "a": ({"term": {"k": "a"}}, lambda d: "a" in d["k"]),
            "a_or_e": ({"terms": {"k": ["a", "e"]}}, lambda d: {"a", "e"} & set(d["k"])),
            "low": ({"range": {"n": {"lt": 30}}}, lambda d: d["n"] < 30),
            "no_k": ({"bool": {"must_not": {"exists": {"field": "k"}}}}, lambda d: not d["k"]),
            "all": ({"match_all": {}}, lambda d: True),
        }
        for body in ({"match_all": {}}, None):
            r = es.search(index=name, size=0, query=body, aggs={"f": {"filters": {
                "filters": {k: q for k, (q, _) in filters.items()}}}}).body
            got = {k: v["doc_count"] for k, v in r["aggregations"]["f"]["buckets"].items()}
            assert got == {k: sum(1 for d in docs.values() if p(d)) for k, (_, p) in filters.items()}
    finally:
        es.indices.delete(index=name)


@pytest.mark.parametrize("order", ["asc", "desc"])
@pytest.mark.parametrize("missing_order", ["default", "first", "last"])
def test_composite_missing_order(es, order, missing_order):
    name = "composite_missing_order"
    if not es.indices.exists(index=name):
        es.indices.create(index=name, mappings={"properties": {"k": {"type": "keyword"}}})
        docs = [{"k": "b"}, {"k": "a"}, {}, {"k": "c"}, {}, {"k": "a"}]
        ops = []
        for i, d in enumerate(docs):
            ops += [{"index": {"_index": name, "_id": str(i)}}, d]
        es.bulk(operations=ops, refresh=True)
    src = {"terms": {"field": "k", "order": order, "missing_bucket": True, "missing_order": missing_order}}
    r = es.search(index=name, size=0, aggs={"c": {"composite": {"sources": [{"k": src}]}}})
    keys = [b["key"]["k"] for b in r["aggregations"]["c"]["buckets"]]
    present = sorted(["a", "b", "c"], reverse=order == "desc")
    first = missing_order == "first" or (missing_order == "default" and order == "asc")
    assert keys == ([None] + present if first else present + [None])
    counts = {b["key"]["k"]: b["doc_count"] for b in r["aggregations"]["c"]["buckets"]}
    assert counts == {"a": 2, "b": 1, "c": 1, None: 2}
    with pytest.raises(BadRequestError):
        es.search(index=name, size=0, aggs={"c": {"composite": {"sources": [
            {"k": {"terms": {"field": "k", "missing_order": "first"}}}]}}})
    with pytest.raises(BadRequestError):
        es.search(index=name, size=0, aggs={"c": {"composite": {"sources": [
            {"k": {"terms": {"field": "k"}}}, {"k": {"terms": {"field": "k"}}}]}}})


def test_ip_range(es):
    import ipaddress
    name = "ip_ranges"
    if not es.indices.exists(index=name):
        es.indices.create(index=name, mappings={"properties": {"ip": {"type": "ip"}, "k": {"type": "keyword"}}})
        ips = ["10.0.0.1", "10.0.0.200", "10.0.1.5", "192.168.0.1", "192.168.255.255", "::1", "2001:db8::5"]
        ops = []
        for i, ip in enumerate(ips):
            ops += [{"index": {"_index": name, "_id": str(i)}}, {"ip": ip, "k": "x"}]
        es.bulk(operations=ops, refresh=True)
    ips = [ipaddress.ip_address(h["_source"]["ip"]) for h in es.search(index=name, size=100)["hits"]["hits"]]

    def v6(a):
        return int(ipaddress.IPv6Address(f"::ffff:{a}") if isinstance(a, ipaddress.IPv4Address) else a)

    ranges = [{"to": "10.0.0.128"}, {"from": "10.0.0.128", "to": "192.168.0.0"}, {"from": "192.168.0.0"},
              {"mask": "10.0.0.0/24"}, {"mask": "2001:db8::/32", "key": "doc"}]
    r = es.search(index=name, size=0, aggs={"r": {"ip_range": {"field": "ip", "ranges": ranges}}})
    buckets = {b["key"]: b for b in r["aggregations"]["r"]["buckets"]}

    def count(lo, hi):
        return sum(1 for a in ips if (lo is None or v6(a) >= lo) and (hi is None or v6(a) < hi))

    ip = lambda s: v6(ipaddress.ip_address(s))
    assert buckets["*-10.0.0.128"]["doc_count"] == count(None, ip("10.0.0.128"))
    assert buckets["10.0.0.128-192.168.0.0"]["doc_count"] == count(ip("10.0.0.128"), ip("192.168.0.0"))
    # IPv6 addresses above the IPv4-mapped range count too, as in ES.
    assert buckets["192.168.0.0-*"]["doc_count"] == count(ip("192.168.0.0"), None) == 3
    assert buckets["10.0.0.0/24"] == {"key": "10.0.0.0/24", "from": "10.0.0.0", "to": "10.0.1.0", "doc_count": 2}
    assert buckets["doc"]["doc_count"] == 1 and buckets["doc"]["from"] == "2001:db8::"
    keyed = es.search(index=name, size=0, aggs={"r": {"ip_range": {"field": "ip", "keyed": True, "ranges": ranges}}})
    assert keyed["aggregations"]["r"]["buckets"]["10.0.0.0/24"]["doc_count"] == 2
    with pytest.raises(BadRequestError):
        es.search(index=name, size=0, aggs={"r": {"ip_range": {"field": "k", "ranges": ranges}}})
    with pytest.raises(BadRequestError):
        es.search(index=name, size=0, aggs={"r": {"ip_range": {"field": "ip", "ranges": [{"mask": "10.0.0.0/40"}]}}})
