"""Sorting: field asc/desc, several keys, keyword (CJK) order, dates,
`_score`, `_doc`, `missing`, multi-valued `mode`."""

import pytest

import oracle


def search(es, body, index="accounts"):
    return es.search(index=index, body=body).body


def ids_of(resp):
    return [h["_id"] for h in resp["hits"]["hits"]]


def test_sort_double_desc(es, accounts, corpus):
    resp = search(es, {"size": 50, "sort": [{"balance": "desc"}, {"createdTime": "asc"}], "_source": False})
    rows = sorted((-d["balance"], d["createdTime"], i) for i, d in corpus.docs)[:50]
    assert ids_of(resp) == [i for _, _, i in rows]
    assert [h["sort"] for h in resp["hits"]["hits"]] == [[-b, t] for b, t, _ in rows]


def test_sort_double_asc_with_query(es, accounts, corpus):
    resp = search(es, {"size": 40, "query": {"term": {"acctType": "DEPOSIT"}},
                       "sort": [{"balance": {"order": "asc"}}, {"createdTime": {"order": "desc"}}]})
    rows = sorted((d["balance"], -d["createdTime"], i) for i, d in corpus.docs if d["acctType"] == "DEPOSIT")[:40]
    assert ids_of(resp) == [i for _, _, i in rows]


def test_sort_multiple_keys(es, accounts, corpus):
    resp = search(es, {"size": 100, "query": {"range": {"balance": {"lt": 0}}},
                       "sort": [{"acctType": "asc"}, {"status": "desc"}, {"createdTimeStr": "asc"}]})
    rows = sorted((d["acctType"], -d["status"], d["createdTime"], i) for i, d in corpus.docs if d["balance"] < 0)
    assert ids_of(resp) == [r[-1] for r in rows[:100]]
    assert [h["sort"] for h in resp["hits"]["hits"]] == [[a, -s, t] for a, s, t, _ in rows[:100]]


def test_sort_keyword_cjk_code_point_order(es, accounts, corpus):
    resp = search(es, {"size": 30, "sort": [{"userName": "desc"}, {"createdTime": "desc"}]})
    # Lucene compares UTF-8 bytes == code point order == Python str order
    rows = sorted(((d["userName"], d["createdTime"], i) for i, d in corpus.docs), reverse=True)[:30]
    assert ids_of(resp) == [i for _, _, i in rows]
    assert [h["sort"][0] for h in resp["hits"]["hits"]] == [u for u, _, _ in rows]


def test_sort_date_with_custom_format_field(es, accounts, corpus):
    resp = search(es, {"size": 20, "sort": [{"createdTimeStr": "desc"}]})
    rows = sorted(((d["createdTime"], i) for i, d in corpus.docs), reverse=True)[:20]
    assert ids_of(resp) == [i for _, i in rows]
    # date sort values are epoch millis
    assert [h["sort"] for h in resp["hits"]["hits"]] == [[t] for t, _ in rows]


def test_sort_string_shorthand_is_asc(es, accounts, corpus):
    resp = search(es, {"size": 10, "sort": ["createdTime"]})
    assert ids_of(resp) == [i for _, i in sorted((d["createdTime"], i) for i, d in corpus.docs)[:10]]


def test_sort_score_then_field(es, accounts, corpus):
    q = {"bool": {"should": [
        {"constant_score": {"filter": {"term": {"acctType": "ESCROW"}}, "boost": 2}},
        {"constant_score": {"filter": {"term": {"status": 3}}, "boost": 1}}]}}
    resp = search(es, {"size": 300, "query": q, "sort": [{"_score": "desc"}, {"createdTime": "asc"}]})
    score = lambda d: 2.0 * (d["acctType"] == "ESCROW") + 1.0 * (d["status"] == 3)
    rows = sorted((-score(d), d["createdTime"], i) for i, d in corpus.docs if score(d) > 0)
    hits = resp["hits"]["hits"]
    assert ids_of(resp) == [i for _, _, i in rows[:300]]
    assert [h["_score"] for h in hits] == [-s for s, _, _ in rows[:300]]
    assert [h["sort"] for h in hits] == [[-s, t] for s, t, _ in rows[:300]]


def test_sort_score_asc(es, accounts, corpus):
    q = {"bool": {"should": [
        {"constant_score": {"filter": {"term": {"acctType": "ESCROW"}}, "boost": 2}},
        {"constant_score": {"filter": {"term": {"status": 3}}, "boost": 1}}]}}
    resp = search(es, {"size": 50, "query": q, "sort": [{"_score": "asc"}, {"createdTime": "desc"}]})
    score = lambda d: 2.0 * (d["acctType"] == "ESCROW") + 1.0 * (d["status"] == 3)
    rows = sorted((score(d), -d["createdTime"], i) for i, d in corpus.docs if score(d) > 0)
    assert ids_of(resp) == [i for _, _, i in rows[:50]]


def test_track_scores_with_field_sort(es, accounts):
    resp = search(es, {"size": 5, "query": {"match": {"remark": "refund"}}, "sort": [{"createdTime": "asc"}],
                       "track_scores": True})
    assert all(isinstance(h["_score"], float) and h["_score"] > 0 for h in resp["hits"]["hits"])
    resp = search(es, {"size": 5, "query": {"match": {"remark": "refund"}}, "sort": [{"createdTime": "asc"}]})
    assert all(h["_score"] is None for h in resp["hits"]["hits"])


def test_sort_doc_order(es, accounts, corpus):
    resp = search(es, {"size": 500, "sort": ["_doc"], "_source": False, "query": {"term": {"status": 3}}})
    sv = [h["sort"][0] for h in resp["hits"]["hits"]]
    assert sv == sorted(sv) and len(set(sv)) == len(sv)
    exp = corpus.count(lambda d: d["status"] == 3)
    assert len(sv) == min(500, exp)


def test_sort_missing_first_last_custom(es, sparse):
    name, docs = sparse
    present = [(d["score"], i) for i, d in docs if "score" in d]
    absent = [i for i, d in docs if "score" not in d]
    tiebreak = {"name": "asc"}

    def run(spec):
        return ids_of(search(es, {"size": 100, "sort": [{"score": spec}, tiebreak]}, index=name))

    name_of = {i: d["name"] for i, d in docs}
    asc = [i for _, i in sorted(present, key=lambda r: (r[0], name_of[r[1]]))]
    desc = [i for _, i in sorted(present, key=lambda r: (-r[0], name_of[r[1]]))]
    miss = sorted(absent, key=lambda i: name_of[i])
    assert run({"order": "asc"}) == asc + miss                 # default missing: _last
    assert run({"order": "desc"}) == desc + miss               # _last for desc too
    assert run({"order": "asc", "missing": "_first"}) == miss + asc
    assert run({"order": "desc", "missing": "_last"}) == desc + miss
    # a custom missing value sorts the docs as if they had it
    rows = sorted([(d.get("score", 10), d["name"], i) for i, d in docs])
    assert run({"order": "asc", "missing": 10}) == [i for _, _, i in rows]


def test_sort_missing_sort_values(es, sparse):
    name, docs = sparse
    resp = search(es, {"size": 100, "sort": [{"price": {"order": "asc", "missing": "_first"}}, {"name": "asc"}]},
                  index=name)
    hits = resp["hits"]["hits"]
    n_missing = sum(1 for _, d in docs if "price" not in d)
    # ES reports -Infinity as the sort value of a missing double sorted first
    assert all(h["sort"][0] in (None, float("-inf"), "-Infinity") for h in hits[:n_missing])


def test_sort_multi_valued_mode(es, sparse):
    name, docs = sparse
    with_tags = [(i, d) for i, d in docs if "tags" in d]

    def run(spec):
        body = {"size": 100, "query": {"exists": {"field": "tags"}}, "sort": [{"tags": spec}, {"name": "asc"}]}
        return ids_of(search(es, body, index=name))

    # asc uses the minimum value by default, desc the maximum
    assert run("asc") == [i for _, _, i in sorted((min(d["tags"]), d["name"], i) for i, d in with_tags)]
    desc = sorted(with_tags, key=lambda r: r[1]["name"])
    desc = sorted(desc, key=lambda r: max(r[1]["tags"]), reverse=True)
    assert run("desc") == [i for i, _ in desc]
    mx = sorted((max(d["tags"]), d["name"], i) for i, d in with_tags)
    assert run({"order": "asc", "mode": "max"}) == [i for _, _, i in mx]


def test_sort_on_text_field_is_rejected(es, accounts):
    from elasticsearch import BadRequestError
    with pytest.raises(BadRequestError) as ei:
        search(es, {"size": 1, "sort": [{"remark": "asc"}]})
    assert ei.value.body["error"]["root_cause"][0]["type"] == "illegal_argument_exception"


@pytest.mark.parametrize("body", [
    {"size": 1, "sort": [{"_id": "asc"}]},
    {"size": 0, "aggs": {"ids": {"terms": {"field": "_id"}}}},
    {"size": 0, "aggs": {"ids": {"cardinality": {"field": "_id"}}}},
])
def test_id_fielddata_is_disallowed_as_in_es8(es, accounts, body):
    # ES 8 refuses sorting and aggregating on `_id` (indices.id_field_data.enabled: false).
    from elasticsearch import BadRequestError
    with pytest.raises(BadRequestError) as ei:
        search(es, body)
    cause = ei.value.body["error"]["root_cause"][0]
    assert cause["type"] == "illegal_argument_exception"
    assert "Fielddata access on the _id field is disallowed" in cause["reason"]


def test_exists_on_columns_and_listed_fields(es, sparse):
    # Numbers and dates answer `exists` from their column; keywords and text from
    # `_field_names`: both must agree with the generated documents.
    name, docs = sparse
    for f in ["name", "score", "price", "tags", "day", "note"]:
        want = sorted(i for i, src in docs if src.get(f) not in (None, []))
        resp = es.search(index=name, size=100, query={"exists": {"field": f}}, source=False)
        assert sorted(h["_id"] for h in resp["hits"]["hits"]) == want, f
        resp = es.search(index=name, size=100, source=False,
                         query={"bool": {"must_not": {"exists": {"field": f}}}})
        assert len(resp["hits"]["hits"]) == len(docs) - len(want), f
