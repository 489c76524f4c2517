"""Sub-aggregations several levels deep, and top_hits."""

import oracle


def search(es, body):
    return es.search(index="accounts", body=body).body


def test_three_level_sub_aggregations(es, accounts, corpus):
    resp = search(es, {"size": 0, "query": {"range": {"balance": {"gte": 0}}}, "aggs": {
        "type": {"terms": {"field": "acctType", "size": 3}, "aggs": {
            "status": {"terms": {"field": "status", "order": {"_key": "asc"}}, "aggs": {
                "st": {"stats": {"field": "balance"}},
                "accts": {"cardinality": {"field": "acctType"}}}}}}}})
    base = lambda d: d["balance"] >= 0
    top = oracle.terms_order_default(oracle.counts_by(corpus.values("acctType", base)))[:3]
    buckets = resp["aggregations"]["type"]["buckets"]
    assert [(b["key"], b["doc_count"]) for b in buckets] == top
    for b in buckets:
        p1 = lambda d: base(d) and d["acctType"] == b["key"]
        st_counts = oracle.counts_by(corpus.values("status", p1))
        assert [(x["key"], x["doc_count"]) for x in b["status"]["buckets"]] == sorted(st_counts.items())
        for x in b["status"]["buckets"]:
            vals = corpus.values("balance", lambda d: p1(d) and d["status"] == x["key"])
            exp = oracle.stats(vals)
            assert x["st"]["count"] == exp["count"]
            assert x["st"]["min"] == exp["min"] and x["st"]["max"] == exp["max"]
            oracle.assert_float(x["st"]["sum"], exp["sum"], "sum", scale=exp["scale"])
            assert x["accts"]["value"] == 1


def test_filter_then_terms_then_avg(es, accounts, corpus):
    resp = search(es, {"size": 0, "aggs": {"f": {"filter": {"match": {"userName.analyzed": "广东"}}, "aggs": {
        "t": {"terms": {"field": "balanceTypeName", "size": 3}, "aggs": {"a": {"avg": {"field": "balance"}}}}}}}})
    q = set(oracle.analyze("广东"))
    p = lambda d: bool(q & set(oracle.analyze(d["userName"])))
    f = resp["aggregations"]["f"]
    assert f["doc_count"] == corpus.count(p)
    top = oracle.terms_order_default(oracle.counts_by(corpus.values("balanceTypeName", p)))[:3]
    assert [(b["key"], b["doc_count"]) for b in f["t"]["buckets"]] == top
    for b in f["t"]["buckets"]:
        vals = corpus.values("balance", lambda d: p(d) and d["balanceTypeName"] == b["key"])
        oracle.assert_float(b["a"]["value"], oracle.fsum(vals) / len(vals), b["key"],
                            scale=oracle.fsum(abs(v) for v in vals) / len(vals))


def test_top_hits_sorted_with_source_filter(es, accounts, corpus):
    resp = search(es, {"size": 0, "aggs": {"t": {"terms": {"field": "acctType"}, "aggs": {"top": {"top_hits": {
        "size": 3, "sort": [{"balance": {"order": "desc"}}, {"createdTime": "asc"}],
        "_source": {"includes": ["acctId", "balance"]}}}}}}})
    for b in resp["aggregations"]["t"]["buckets"]:
        rows = sorted(((-d["balance"], d["createdTime"], i) for i, d in corpus.docs if d["acctType"] == b["key"]))
        hits = b["top"]["hits"]
        assert hits["total"] == {"value": b["doc_count"], "relation": "eq"}
        assert hits["max_score"] is None
        assert [h["_id"] for h in hits["hits"]] == [i for _, _, i in rows[:3]]
        for h, (nb, t, i) in zip(hits["hits"], rows[:3]):
            assert h["_index"] == "accounts"
            assert h["_score"] is None
            assert h["sort"] == [-nb, t]
            assert h["_source"] == {"acctId": corpus.by_id[i]["acctId"], "balance": corpus.by_id[i]["balance"]}


def test_top_hits_by_score(es, accounts, corpus):
    """Default top_hits order is _score; a constant_score query makes it all 1.0."""
    resp = search(es, {"size": 0, "query": {"constant_score": {"filter": {"term": {"acctId": "A00000000000"}}}},
                       "aggs": {"top": {"top_hits": {"size": 100}}}})
    hits = resp["aggregations"]["top"]["hits"]
    exp = corpus.ids(lambda d: d["acctId"] == "A00000000000")
    assert hits["total"] == {"value": len(exp), "relation": "eq"}
    assert sorted(h["_id"] for h in hits["hits"]) == sorted(exp)
    assert all(h["_score"] == 1.0 for h in hits["hits"])
    assert hits["max_score"] == 1.0
    for h in hits["hits"]:
        assert h["_source"] == corpus.by_id[h["_id"]]
