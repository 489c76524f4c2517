"""Full-text and compound queries: match (operator, minimum_should_match),
match_phrase, multi_match, bool, query_string, simple_query_string, and
BM25 scores of the `standard` analyzer (one token per CJK character)."""

import math
import re

import pytest

import oracle


def total(es, query):
    resp = es.search(index="accounts", body={"size": 0, "track_total_hits": True, "query": query}).body
    assert resp["hits"]["total"]["relation"] == "eq"
    return resp["hits"]["total"]["value"]


def toks(d, field):
    src = d["userName"] if field == "userName.analyzed" else d[field]
    return oracle.analyze(src)


def match_pred(field, text, operator="or", msm=None):
    q = list(dict.fromkeys(oracle.analyze(text)))
    need = len(q) if operator == "and" else 1
    if msm is not None:
        if isinstance(msm, str) and msm.endswith("%"):
            need = max(1, math.floor(len(q) * int(msm[:-1]) / 100))
        else:
            need = int(msm)

    def pred(d):
        t = set(toks(d, field))
        return sum(1 for x in q if x in t) >= need
    return pred


def phrase_pred(field, text):
    p = oracle.analyze(text)
    return lambda d: oracle.contains_phrase(toks(d, field), p)


CASES = [
    ("match cjk or", {"match": {"userName.analyzed": "千米科技"}}, match_pred("userName.analyzed", "千米科技")),
    ("match cjk and", {"match": {"userName.analyzed": {"query": "江苏千米", "operator": "and"}}},
     match_pred("userName.analyzed", "江苏千米", "and")),
    ("match cjk msm percent", {"match": {"userName.analyzed": {"query": "广东深圳网络", "minimum_should_match": "75%"}}},
     match_pred("userName.analyzed", "广东深圳网络", msm="75%")),
    ("match english lowercased", {"match": {"remark": "REFUND Transfer"}}, match_pred("remark", "refund transfer")),
    ("match english and", {"match": {"remark": {"query": "transfer in", "operator": "AND"}}},
     match_pred("remark", "transfer in", "and")),
    ("match msm count", {"match": {"remark": {"query": "bank card top withdrawal", "minimum_should_match": 2}}},
     match_pred("remark", "bank card top withdrawal", msm=2)),
    ("match mixed cjk english", {"match": {"remark": "退款 refund"}}, match_pred("remark", "退款 refund")),
    ("match hyphenated", {"match": {"remark": "top-up"}}, match_pred("remark", "top up")),
    ("match on keyword is exact", {"match": {"acctType": "BASIC"}}, lambda d: d["acctType"] == "BASIC"),
    ("match on keyword no analysis", {"match": {"acctType": "basic"}}, lambda d: False),
    ("match_phrase cjk", {"match_phrase": {"userName.analyzed": "千米"}}, lambda d: "千米" in d["userName"]),
    ("match_phrase cjk remark", {"match_phrase": {"remark": "订单退款"}}, phrase_pred("remark", "订单退款")),
    ("match_phrase english", {"match_phrase": {"remark": "bank card"}}, phrase_pred("remark", "bank card")),
    ("match_phrase english no match across order", {"match_phrase": {"remark": "card bank"}}, lambda d: False),
    ("multi_match best_fields", {"multi_match": {"query": "退款 红", "fields": ["remark", "userName.analyzed"]}},
     lambda d: match_pred("remark", "退款 红")(d) or match_pred("userName.analyzed", "退款 红")(d)),
    ("multi_match operator and", {"multi_match": {"query": "江 苏", "fields": ["remark", "userName.analyzed"],
                                                   "operator": "and"}},
     lambda d: match_pred("remark", "江 苏", "and")(d) or match_pred("userName.analyzed", "江 苏", "and")(d)),
    ("bool must filter must_not", {"bool": {
        "must": [{"match": {"remark": "deposit"}}],
        "filter": [{"term": {"acctType": "BASIC"}}, {"range": {"balance": {"gt": 0}}}],
        "must_not": [{"term": {"status": 0}}]}},
     lambda d: "deposit" in oracle.analyze(d["remark"]) and d["acctType"] == "BASIC" and d["balance"] > 0
     and d["status"] != 0),
    ("bool should only needs one", {"bool": {"should": [{"term": {"status": 3}}, {"term": {"acctType": "ESCROW"}}]}},
     lambda d: d["status"] == 3 or d["acctType"] == "ESCROW"),
    ("bool should with filter is optional", {"bool": {
        "filter": [{"term": {"status": 2}}], "should": [{"term": {"acctType": "ESCROW"}}]}},
     lambda d: d["status"] == 2),
    ("bool minimum_should_match", {"bool": {"minimum_should_match": 2, "should": [
        {"term": {"status": 1}}, {"term": {"acctType": "BASIC"}}, {"range": {"balance": {"lt": 0}}}]}},
     lambda d: (d["status"] == 1) + (d["acctType"] == "BASIC") + (d["balance"] < 0) >= 2),
    ("bool nested", {"bool": {"must": [{"bool": {"should": [{"term": {"balanceTypeName": "消费"}},
                                                            {"term": {"balanceTypeName": "充值"}}]}}],
                              "must_not": [{"bool": {"filter": [{"range": {"balance": {"lt": 100}}}]}}]}},
     lambda d: d["balanceTypeName"] in ("消费", "充值") and not d["balance"] < 100),
    ("bool must_not only", {"bool": {"must_not": [{"term": {"status": 0}}]}}, lambda d: d["status"] != 0),
    ("query_string fields", {"query_string": {"query": "acctType:BASIC AND status:1"}},
     lambda d: d["acctType"] == "BASIC" and d["status"] == 1),
    ("query_string groups and NOT", {"query_string": {"query": "acctType:(CREDIT OR ESCROW) AND NOT status:0"}},
     lambda d: d["acctType"] in ("CREDIT", "ESCROW") and d["status"] != 0),
    ("query_string range syntax", {"query_string": {"query": "balance:[1000 TO 2000}"}},
     lambda d: 1000 <= d["balance"] < 2000),
    ("query_string wildcard", {"query_string": {"query": "acctId:A0000000*"}},
     lambda d: d["acctId"].startswith("A0000000")),
    ("query_string default_field and operator", {"query_string": {
        "query": "bank card", "default_field": "remark", "default_operator": "AND"}},
     match_pred("remark", "bank card", "and")),
    ("query_string phrase", {"query_string": {"query": "remark:\"to bank\""}}, phrase_pred("remark", "to bank")),
    ("simple_query_string or phrase", {"simple_query_string": {"query": "\"order payment\" | refund",
                                                                "fields": ["remark"]}},
     lambda d: phrase_pred("remark", "order payment")(d) or "refund" in oracle.analyze(d["remark"])),
    ("simple_query_string and", {"simple_query_string": {"query": "deposit + frozen", "fields": ["remark"]}},
     match_pred("remark", "deposit frozen", "and")),
    ("simple_query_string default_operator", {"simple_query_string": {
        "query": "monthly settlement", "fields": ["remark"], "default_operator": "and"}},
     match_pred("remark", "monthly settlement", "and")),
]


@pytest.mark.parametrize("name,query,pred", CASES, ids=[c[0] for c in CASES])
def test_fulltext_counts(es, accounts, corpus, name, query, pred):
    assert total(es, query) == corpus.count(pred)


def test_match_returns_matching_docs(es, accounts, corpus):
    pred = match_pred("userName.analyzed", "江苏千米", "and")
    resp = es.search(index="accounts", body={"size": 1000, "query": {
        "match": {"userName.analyzed": {"query": "江苏千米", "operator": "and"}}}}).body
    assert sorted(h["_id"] for h in resp["hits"]["hits"]) == sorted(corpus.ids(pred))


def lucene_bm25(corpus, field, term):
    """ES BM25 for a single term, per doc id: k1=1.2, b=0.75, and ES keeps the
    (k1+1) numerator factor that Lucene 8 dropped (LegacyBM25Similarity)."""
    lengths = {i: len(oracle.analyze(d[field])) for i, d in corpus.docs}
    avgdl = sum(lengths.values()) / len(lengths)
    df = sum(1 for i, d in corpus.docs if term in oracle.analyze(d[field]))
    idf = math.log(1 + (corpus.n - df + 0.5) / (df + 0.5))
    out = {}
    for i, d in corpus.docs:
        t = oracle.analyze(d[field])
        tf = t.count(term)
        if tf:
            out[i] = idf * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * lengths[i] / avgdl))
    return out


def test_score_order_shorter_field_ranks_higher(es, accounts, corpus):
    resp = es.search(index="accounts", body={"size": 300, "query": {"match": {"remark": "refund"}},
                                             "sort": ["_score", {"createdTime": "asc"}]}).body
    rows = sorted((len(oracle.analyze(d["remark"])), d["createdTime"], i)
                  for i, d in corpus.docs if "refund" in oracle.analyze(d["remark"]))
    assert [h["_id"] for h in resp["hits"]["hits"]] == [i for _, _, i in rows[:300]]
    scores = [h["_score"] for h in resp["hits"]["hits"]]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("field,term", [("remark", "refund"), ("userName.analyzed", "米")])
def test_bm25_scores_match_elasticsearch(es, accounts, corpus, field, term):
    src = "userName" if field == "userName.analyzed" else field
    exp = lucene_bm25(corpus, src, term)
    resp = es.search(index="accounts", body={"size": 50, "query": {"match": {field: term}}}).body
    assert resp["hits"]["total"] == {"value": len(exp), "relation": "eq"}
    for h in resp["hits"]["hits"]:
        assert h["_score"] == pytest.approx(exp[h["_id"]], rel=1e-5), h["_id"]
    assert resp["hits"]["max_score"] == pytest.approx(max(exp.values()), rel=1e-5)


def test_boost_scales_score(es, accounts):
    a = es.search(index="accounts", body={"size": 1, "query": {"match": {"remark": "refund"}}}).body
    b = es.search(index="accounts", body={"size": 1, "query": {"match": {"remark": {"query": "refund", "boost": 3}}}}).body
    assert b["hits"]["max_score"] == pytest.approx(3 * a["hits"]["max_score"], rel=1e-6)


def keyword_bm25(corpus, field, value):
    """ES BM25 of a term on a keyword (no norms: every length is the average, tf 1)."""
    df = sum(1 for _, d in corpus.docs if d[field] == value)
    return math.log(1 + (corpus.n - df + 0.5) / (df + 0.5))


def test_minimum_should_match_scores_and_top_hits(es, accounts, corpus):
    """A `minimum_should_match` disjunction scores the sum of its matching clauses (a keyword
    term's BM25, a numeric term's constant 1, a text match's BM25); its top hits are the
    best-scoring documents, whatever clauses the scorer skips to find them."""
    query = {"bool": {"should": [{"term": {"acctType": "BASIC"}}, {"term": {"status": 1}},
                                 {"match": {"remark": "refund"}}], "minimum_should_match": 2}}
    basic = keyword_bm25(corpus, "acctType", "BASIC")
    refund = lucene_bm25(corpus, "remark", "refund")
    exp = {}
    for i, d in corpus.docs:
        parts = [basic if d["acctType"] == "BASIC" else None, 1.0 if d["status"] == 1 else None,
                 refund.get(i)]
        if sum(p is not None for p in parts) >= 2:
            exp[i] = sum(p for p in parts if p is not None)
    assert 10 < len(exp) < 10000
    for size in (10, 100):
        resp = es.search(index="accounts", body={"size": size, "query": query}).body
        assert resp["hits"]["total"] == {"value": len(exp), "relation": "eq"}
        hits = resp["hits"]["hits"]
        assert len(hits) == size
        for h in hits:
            assert h["_score"] == pytest.approx(exp[h["_id"]], rel=1e-5), h["_id"]
        scores = [h["_score"] for h in hits]
        assert scores == sorted(scores, reverse=True)
        # Every document scoring clearly above the last hit is among the hits.
        last = scores[-1]
        better = {i for i, s in exp.items() if s > last * (1 + 1e-5)}
        assert better <= {h["_id"] for h in hits}
