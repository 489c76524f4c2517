"""Every reference query (crates/bench/workload/queries, the project's copy of
../shared/bench/queries), checked against the oracle."""

import json

import pytest
from elasticsearch import NotFoundError

import oracle

CST = oracle.CST


def search(es, body, **params):
    return es.search(index="accounts", body=body, **params).body


def total(resp):
    return resp["hits"]["total"]


def exact_total(n):
    """hits.total as ES reports it with the default track_total_hits (10,000)."""
    if n > 10000:
        return {"value": 10000, "relation": "gte"}
    return {"value": n, "relation": "eq"}


def load(name):
    return json.loads((oracle.QUERIES / name).read_text())


def test_every_seed_query_has_a_check():
    names = sorted(p.name for p in oracle.QUERIES.iterdir())
    checked = {"term.json", "range.json", "match.json", "metric.json", "bucket.json", "sum.json",
               "trend.json", "group.json", "page-1.json", "page-10.json", "page-100.json",
               "page-1000.json", "ids_range.json", "detail.get"}
    assert set(names) <= checked, "unchecked seed queries: %s" % sorted(set(names) - checked)


def test_term(es, accounts, corpus):
    resp = search(es, load("term.json"))
    n = corpus.count(lambda d: d["acctId"] == "A00000000000")
    assert total(resp) == {"value": n, "relation": "eq"}
    assert resp["hits"]["hits"] == []


def test_range_default_track_total_hits(es, accounts, corpus):
    resp = search(es, load("range.json"))
    n = corpus.count(lambda d: d["createdTime"] >= 1577808000000)
    assert n > 10000, "the corpus must exceed the default track_total_hits"
    assert total(resp) == {"value": 10000, "relation": "gte"}


def test_range_track_total_hits_true(es, accounts, corpus):
    body = load("range.json")
    body["track_total_hits"] = True
    resp = search(es, body)
    n = corpus.count(lambda d: d["createdTimeStr"] >= "2020-01-01T00:00:00.000+0800")
    assert total(resp) == {"value": n, "relation": "eq"}


def test_match(es, accounts, corpus):
    resp = search(es, load("match.json"))
    q = set(oracle.analyze("江苏千米"))
    assert q == {"江", "苏", "千", "米"}
    n = corpus.count(lambda d: q & set(oracle.analyze(d["userName"])))
    assert total(resp) == exact_total(n)


def test_metric_extended_stats(es, accounts, corpus):
    resp = search(es, load("metric.json"))
    got = resp["aggregations"]["balance_stats"]
    exp = oracle.extended_stats(corpus.values("balance"))
    assert got["count"] == exp["count"] == corpus.n
    assert got["min"] == exp["min"]
    assert got["max"] == exp["max"]
    sc = exp["scale"]
    oracle.assert_float(got["sum"], exp["sum"], "sum", scale=sc)
    oracle.assert_float(got["avg"], exp["avg"], "avg", scale=sc / corpus.n)
    oracle.assert_float(got["sum_of_squares"], exp["sum_of_squares"], "sum_of_squares")
    for k in ("variance", "variance_population", "variance_sampling",
              "std_deviation", "std_deviation_population", "std_deviation_sampling"):
        oracle.assert_float(got[k], exp[k], k, rel=1e-8)
    for k, v in exp["std_deviation_bounds"].items():
        oracle.assert_float(got["std_deviation_bounds"][k], v, "std_deviation_bounds." + k, rel=1e-8)


def test_bucket_terms(es, accounts, corpus):
    resp = search(es, load("bucket.json"))
    agg = resp["aggregations"]["typeName"]
    counts = oracle.counts_by(corpus.values("balanceTypeName"))
    assert len(counts) == 30
    exp = [{"key": k, "doc_count": c} for k, c in oracle.terms_order_default(counts)]
    assert agg["buckets"] == exp
    assert agg["sum_other_doc_count"] == 0
    assert agg["doc_count_error_upper_bound"] == 0


def test_sum(es, accounts, corpus):
    resp = search(es, load("sum.json"))
    vals = corpus.values("balance")
    oracle.assert_float(resp["aggregations"]["total_balance"]["value"], oracle.fsum(vals), "sum",
                        scale=oracle.fsum(abs(v) for v in vals))


def test_trend_date_histogram(es, accounts, corpus):
    body = load("trend.json")
    resp = search(es, body)
    rng = body["query"]["bool"]["filter"][0]["range"]["createdTime"]
    times = [t for t in corpus.values("createdTime") if rng["gte"] <= t < rng["lt"]]
    assert total(resp) == exact_total(len(times))
    counts = oracle.counts_by(oracle.local_midnight(t, CST) for t in times)
    # min_doc_count 0: every day between the first and last non-empty bucket
    keys = sorted(counts)
    exp = []
    k = keys[0]
    while k <= keys[-1]:
        exp.append({"key_as_string": oracle.from_ms(k, CST).strftime("%Y-%m-%d"), "key": k,
                    "doc_count": counts.get(k, 0)})
        k += oracle.DAY_MS
    assert [b["key_as_string"] for b in exp] == ["2021-12-27", "2021-12-28", "2021-12-29",
                                                 "2021-12-30", "2021-12-31"]
    assert resp["aggregations"]["per_day"]["buckets"] == exp


def test_group_terms_sum(es, accounts, corpus):
    resp = search(es, load("group.json"))
    buckets = resp["aggregations"]["by_acct_type"]["buckets"]
    counts = oracle.counts_by(corpus.values("acctType"))
    order = oracle.terms_order_default(counts)
    assert [(b["key"], b["doc_count"]) for b in buckets] == order
    for b in buckets:
        vals = corpus.values("balance", lambda d: d["acctType"] == b["key"])
        oracle.assert_float(b["total_balance"]["value"], oracle.fsum(vals), "sum " + b["key"],
                            scale=oracle.fsum(abs(v) for v in vals))
    agg = resp["aggregations"]["by_acct_type"]
    assert agg["sum_other_doc_count"] == 0


@pytest.mark.parametrize("name", ["page-1.json", "page-10.json", "page-100.json", "page-1000.json"])
def test_page(es, accounts, corpus, name):
    body = load(name)
    resp = search(es, body)
    ordered = sorted((d["createdTime"], i) for i, d in corpus.docs if d["status"] == 0)
    ordered.reverse()
    assert len(ordered) > 10000
    assert total(resp) == {"value": 10000, "relation": "gte"}
    frm, size = body["from"], body["size"]
    exp = ordered[frm:frm + size]
    hits = resp["hits"]["hits"]
    assert [h["_id"] for h in hits] == [i for _, i in exp]
    assert [h["sort"] for h in hits] == [[t] for t, _ in exp]
    for h in hits:
        assert h["_index"] == "accounts"
        assert h["_score"] is None
        assert h["_source"] == corpus.by_id[h["_id"]]
    assert resp["hits"]["max_score"] is None


def test_ids_range(es, accounts, corpus):
    body = load("ids_range.json")
    resp = search(es, body)
    f = body["query"]["bool"]["filter"]
    ids = set(f[0]["terms"]["_id"])
    gte = f[1]["range"]["createdTime"]["gte"]
    exp = {i for i in ids if i in corpus.by_id and corpus.by_id[i]["createdTime"] >= gte}
    assert total(resp) == {"value": len(exp), "relation": "eq"}
    assert {h["_id"] for h in resp["hits"]["hits"]} == exp
    for h in resp["hits"]["hits"]:
        assert h["_source"] == corpus.by_id[h["_id"]]
        assert h["_score"] == 0.0  # filter context only


def test_ids_range_within_corpus(es, accounts, corpus):
    """The same shape with ids that exist in a 20k corpus."""
    ids = [str(i) for i in range(7, corpus.n + 1, corpus.n // 50)][:50]
    body = {"size": 50, "query": {"bool": {"filter": [
        {"terms": {"_id": ids}}, {"range": {"createdTime": {"gte": 1577808000000}}}]}}}
    resp = search(es, body)
    exp = {i for i in ids if corpus.by_id[i]["createdTime"] >= 1577808000000}
    assert 10 < len(exp) < 40
    assert total(resp) == {"value": len(exp), "relation": "eq"}
    assert {h["_id"] for h in resp["hits"]["hits"]} == exp


def test_detail_get(es, accounts, corpus):
    path = (oracle.QUERIES / "detail.get").read_text().strip()
    _, index, _doc, doc_id = path.split("/")
    assert (index, _doc) == ("accounts", "_doc")
    if doc_id in corpus.by_id:
        resp = es.get(index=index, id=doc_id)
        assert resp["found"] is True and resp["_source"] == corpus.by_id[doc_id]
    else:
        with pytest.raises(NotFoundError) as ei:
            es.get(index=index, id=doc_id)
        assert ei.value.body == {"_index": "accounts", "_id": doc_id, "found": False}
    # and one that exists in any corpus of >= 20k docs
    resp = es.get(index="accounts", id="15000")
    assert resp["found"] is True
    assert resp["_id"] == "15000" and resp["_index"] == "accounts"
    assert resp["_source"] == corpus.by_id["15000"]
    assert resp["_version"] == 1
