"""`significant_terms` on numeric, date and boolean fields (ES's `SignificantLongTerms`:
typed key `siglterms`, keys as numbers, `key_as_string` for dates and booleans) and its
`missing`. Expected buckets are computed here from the documents this file indexes, with
ES's JLH and percentage heuristics."""

import datetime as dt
import random

import pytest
from elasticsearch import ApiError

from conftest import make_index

INDEX = "sig_numeric"
DAY = 86_400_000
BASE = int(dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc).timestamp() * 1000)


def _docs():
    rnd = random.Random(77)
    docs = []
    for i in range(240):
        group = rnd.choice("abc")
        bias = {"a": 0, "b": 3, "c": 6}[group]
        d = {"group": group,
             "n": sorted({(bias + int(rnd.expovariate(0.6))) % 10 for _ in range(2)}),
             "day": BASE + ((bias + int(rnd.expovariate(0.5))) % 9) * DAY,
             "x": rnd.random()}
        if rnd.random() < 0.8:
            d["flag"] = (group == "a") == (rnd.random() < 0.8)
        if group == "c" and rnd.random() < 0.3:
            del d["n"]
        docs.append(d)
    return docs


DOCS = _docs()


@pytest.fixture(scope="module")
def sig(es):
    body = {"settings": {"number_of_shards": 2}, "mappings": {"properties": {
        "group": {"type": "keyword"}, "n": {"type": "long"}, "day": {"type": "date"},
        "flag": {"type": "boolean"}, "x": {"type": "double"}}}}
    return make_index(es, INDEX, body, [(str(i), d) for i, d in enumerate(DOCS)])


def jlh(sf, sn, bf, bn):
    if sn == 0 or bn == 0:
        return 0.0
    bf = max(bf, 1)
    a, b = sf / sn, bf / bn
    return 0.0 if a - b <= 0 else (a - b) * (a / b)


def percentage(sf, sn, bf, bn):
    return 0.0 if bf == 0 else sf / bf


def values(d, field, missing=None):
    v = d.get(field, missing)
    if v is None:
        return set()
    return set(v) if isinstance(v, list) else {v}


def expected(fn, fg, bg, field, missing=None, bg_missing=False, size=10, min_doc_count=3):
    cf, cb = {}, {}
    for d in fg:
        for t in values(d, field, missing):
            cf[t] = cf.get(t, 0) + 1
    for d in bg:
        for t in values(d, field, missing if bg_missing else None):
            cb[t] = cb.get(t, 0) + 1
    out = []
    for t, n in cf.items():
        s = fn(n, len(fg), cb.get(t, 0), len(bg))
        if n >= min_doc_count and s > 0:
            out.append((t, n, cb.get(t, 0), s))
    out.sort(key=lambda x: (-x[3], x[0]))
    return out[:size]


def check(got, want, fg, bg, key=lambda k: k):
    assert got["doc_count"] == len(fg) and got["bg_count"] == len(bg)
    assert [(b["key"], b["doc_count"], b["bg_count"]) for b in got["buckets"]] == \
        [(key(k), n, c) for k, n, c, _ in want]
    for b, (_, _, _, s) in zip(got["buckets"], want):
        assert b["score"] == pytest.approx(s, rel=1e-9)


HEURISTICS = {"jlh": (jlh, {}), "percentage": (percentage, {"percentage": {}})}


@pytest.mark.parametrize("name", list(HEURISTICS))
@pytest.mark.parametrize("group", ["a", "c"])
def test_long_field(es, sig, name, group):
    fn, spec = HEURISTICS[name]
    r = es.search(index=INDEX, size=0, typed_keys=True, query={"term": {"group": group}}, aggs={
        "s": {"significant_terms": {"field": "n", **spec}}}).body["aggregations"]
    fg = [d for d in DOCS if d["group"] == group]
    want = expected(fn, fg, DOCS, "n")
    assert want
    check(r["siglterms#s"], want, fg, DOCS)
    assert all("key_as_string" not in b for b in r["siglterms#s"]["buckets"])


def test_date_field_keys_as_strings(es, sig):
    r = es.search(index=INDEX, size=0, query={"term": {"group": "b"}}, aggs={
        "s": {"significant_terms": {"field": "day", "format": "yyyy-MM-dd"}}}).body["aggregations"]
    fg = [d for d in DOCS if d["group"] == "b"]
    want = expected(jlh, fg, DOCS, "day")
    assert want
    check(r["s"], want, fg, DOCS)
    for b in r["s"]["buckets"]:
        day = dt.datetime.fromtimestamp(b["key"] / 1000, dt.timezone.utc)
        assert b["key_as_string"] == day.strftime("%Y-%m-%d")


def test_boolean_field(es, sig):
    r = es.search(index=INDEX, size=0, query={"term": {"group": "a"}}, aggs={
        "s": {"significant_terms": {"field": "flag"}}}).body["aggregations"]
    fg = [d for d in DOCS if d["group"] == "a"]
    want = expected(jlh, fg, DOCS, "flag")
    assert want
    check(r["s"], want, fg, DOCS, key=int)
    for b in r["s"]["buckets"]:
        assert b["key_as_string"] == ("true" if b["key"] else "false")


def test_background_filter_and_include(es, sig):
    bg = [d for d in DOCS if d["group"] != "b"]
    r = es.search(index=INDEX, size=0, query={"term": {"group": "c"}}, aggs={
        "s": {"significant_terms": {"field": "n", "background_filter": {
            "bool": {"must_not": {"term": {"group": "b"}}}}, "include": [6, 7, 8, 9]}}}).body
    fg = [d for d in DOCS if d["group"] == "c"]
    want = [w for w in expected(jlh, fg, bg, "n", size=100) if w[0] in (6, 7, 8, 9)][:10]
    assert want
    check(r["aggregations"]["s"], want, fg, bg)


def test_missing(es, sig):
    """Documents without a value count as having `missing` in the bucket; the background
    counts indexed values (ES reads the background frequency of the term from the index)."""
    r = es.search(index=INDEX, size=0, query={"term": {"group": "c"}}, aggs={
        "s": {"significant_terms": {"field": "n", "missing": 4, "size": 20}},
        "k": {"significant_terms": {"field": "group", "missing": "zz"}}}).body["aggregations"]
    fg = [d for d in DOCS if d["group"] == "c"]
    want = expected(jlh, fg, DOCS, "n", missing=4, size=20)
    assert any(k == 4 for k, *_ in want)
    check(r["s"], want, fg, DOCS)


def test_floating_point_is_refused_as_es_does(es, sig):
    with pytest.raises(ApiError) as e:
        es.search(index=INDEX, size=0, aggs={"s": {"significant_terms": {"field": "x"}}})
    assert "No support for examining floating point numerics" in str(e.value)
