"""`string_stats` over a keyword field, against values computed here in Python from the
documents this file indexes: `count` is the number of values, lengths are Java string
lengths (UTF-16 units), `entropy` is the base-2 Shannon entropy of the characters of all
values, `distribution` each character's probability."""

import math
import random

import pytest
from elasticsearch import BadRequestError

from conftest import make_index

INDEX = "sstats"
WORDS = ["alpha", "be", "ção", "日本語", "z", "longer-word", "MiXeD"]


def _docs():
    rnd = random.Random(404)
    docs = []
    for i in range(400):
        d = {"g": "even" if i % 2 == 0 else "odd", "n": i}
        k = rnd.randrange(0, 3)
        if k:
            d["w"] = [rnd.choice(WORDS) for _ in range(k)] if k > 1 else rnd.choice(WORDS)
        docs.append((str(i), d))
    return docs


DOCS = _docs()


@pytest.fixture(scope="module")
def sstats(es):
    body = {"settings": {"number_of_shards": 2}, "mappings": {"properties": {
        "g": {"type": "keyword"}, "w": {"type": "keyword"}, "n": {"type": "long"}}}}
    return make_index(es, INDEX, body, DOCS)


def values(pred=lambda d: True, missing=None):
    out = []
    for _, d in DOCS:
        if not pred(d):
            continue
        w = d.get("w")
        if w is None:
            if missing is not None:
                out.append(missing)
        elif isinstance(w, list):
            # A keyword column keeps each distinct value of a document once.
            out.extend(sorted(set(w)))
        else:
            out.append(w)
    return out


def expected(vals):
    lens = [len(v.encode("utf-16-le")) // 2 for v in vals]
    chars = {}
    for v in vals:
        for c in v:
            chars[c] = chars.get(c, 0) + 1
    total = sum(chars.values())
    dist = {c: n / total for c, n in chars.items()}
    entropy = -sum(p * math.log2(p) for p in dist.values())
    return {"count": len(vals), "min_length": min(lens), "max_length": max(lens),
            "avg_length": sum(lens) / len(vals), "entropy": entropy}, dist


def close(a, b):
    return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def check(got, vals, show=False):
    want, dist = expected(vals)
    for k, v in want.items():
        assert close(got[k], v), (k, got[k], v)
    if show:
        assert set(got["distribution"]) == set(dist)
        for c, p in dist.items():
            assert close(got["distribution"][c], p)
        ps = list(got["distribution"].values())
        assert ps == sorted(ps, reverse=True)


def test_top_level_and_distribution(es, sstats):
    r = es.search(index=INDEX, size=0, typed_keys=True, aggs={
        "s": {"string_stats": {"field": "w", "show_distribution": True}}}).body["aggregations"]
    check(r["string_stats#s"], values(), show=True)


def test_under_terms_with_missing_and_query(es, sstats):
    r = es.search(index=INDEX, size=0, query={"range": {"n": {"lt": 300}}}, aggs={
        "t": {"terms": {"field": "g"}, "aggs": {
            "s": {"string_stats": {"field": "w", "missing": "??"}}}}}).body["aggregations"]
    for b in r["t"]["buckets"]:
        vals = values(lambda d: d["g"] == b["key"] and d["n"] < 300, missing="??")
        check(b["s"], vals)


def test_empty_and_errors(es, sstats):
    r = es.search(index=INDEX, size=0, aggs={
        "f": {"filter": {"term": {"g": "none"}}, "aggs": {
            "s": {"string_stats": {"field": "w", "show_distribution": True}}}}}).body["aggregations"]
    assert r["f"]["s"] == {"count": 0, "min_length": None, "max_length": None,
                           "avg_length": None, "entropy": 0.0, "distribution": None}
    for agg in ({"field": "n"}, {"field": "w", "script": "1"}, {"field": "w", "bogus": 1}):
        with pytest.raises(BadRequestError):
            es.search(index=INDEX, size=0, aggs={"s": {"string_stats": agg}})
