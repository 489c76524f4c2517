"""Answers Lode may take from segment metadata: `min`/`max` from a column's stored bounds in
segments the query matches entirely (and that hold no deleted documents), and `exists`
counts from norms and column indexes. The oracle is the live documents, in Python; the
same answers are asked through queries that cannot take the shortcuts (a `bool` whose
`must_not` matches nothing), over several segments (one batch and refresh each), with a
field missing from some segments, multi-valued, negative, double and date fields, and
after deleting the documents holding the bounds.
"""

import datetime
import random

import pytest

from conftest import make_index

INDEX = "metadata_shortcuts"
MAPPING = {"properties": {
    "n": {"type": "long"}, "d": {"type": "double"}, "t": {"type": "date"},
    "multi": {"type": "long"}, "sparse": {"type": "integer"}, "never": {"type": "long"},
    "remark": {"type": "text"}, "tag": {"type": "keyword"},
}}
WORDS = ["alpha", "beta", "gamma", "delta"]
NUMERIC = ["n", "d", "t", "multi", "sparse", "never"]
QUERIES = [
    {"match_all": {}},
    {"bool": {"must_not": {"term": {"tag": "no-such-tag"}}}},
]


def batch_doc(rng, seg, i):
    src = {"n": rng.randint(-10_000, 10_000), "d": rng.uniform(-1e6, 1e6),
           "t": 1_600_000_000_000 + rng.randint(-10**10, 10**10),
           "multi": [rng.randint(-500, 500) for _ in range(rng.randint(1, 3))],
           "tag": rng.choice(WORDS)}
    if seg == 0:
        # Every document of the first segment has a token in `remark`.
        src["remark"] = " ".join(rng.sample(WORDS, 2))
    elif seg == 1:
        src["sparse"] = rng.randint(-50, 50)
        if rng.random() < 0.5:
            src["remark"] = rng.choice(WORDS)
    else:
        # Values that yield no token still exist; some documents lack the field.
        src["remark"] = rng.choice(["", "gamma", None, "the"])
        if src["remark"] is None:
            del src["remark"]
        if rng.random() < 0.3:
            del src["tag"]
    return src


@pytest.fixture(scope="module")
def live(es):
    rng = random.Random(20)
    make_index(es, INDEX, {"settings": {"number_of_shards": 1}, "mappings": MAPPING}, [])
    docs = {}
    doc_id = 0
    for seg in range(3):
        ops = []
        for _ in range(120 + 40 * seg):
            src = batch_doc(rng, seg, doc_id)
            ops += [{"index": {"_index": INDEX, "_id": str(doc_id)}}, src]
            docs[str(doc_id)] = src
            doc_id += 1
        assert es.bulk(operations=ops, refresh=True)["errors"] is False
    yield docs
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def values(docs, field):
    out = []
    for src in docs.values():
        v = src.get(field)
        out += v if isinstance(v, list) else ([] if v is None else [v])
    return out


def date_string(ms):
    t = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(
        milliseconds=ms)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def bounds_body(query):
    aggs = {}
    for f in NUMERIC:
        aggs[f"min_{f}"] = {"min": {"field": f}}
        aggs[f"max_{f}"] = {"max": {"field": f}}
    return {"size": 0, "query": query, "aggs": aggs}


def check_bounds(es, docs, query):
    got = es.search(index=INDEX, body=bounds_body(query), request_cache=False)["aggregations"]
    for f in NUMERIC:
        vals = values(docs, f)
        for kind, pick in (("min", min), ("max", max)):
            res = got[f"{kind}_{f}"]
            if not vals:
                assert res["value"] is None, (kind, f)
                continue
            assert res["value"] == pytest.approx(pick(vals)), (kind, f)
            if f == "t":
                assert res["value_as_string"] == date_string(pick(vals))


def doc_holding(docs, field, pick):
    target = pick(values(docs, field))
    return next(i for i, s in docs.items()
                if target in (s.get(field) if isinstance(s.get(field), list) else [s.get(field)]))


def exists_count(es, field):
    return es.search(index=INDEX, body={"size": 0, "track_total_hits": True,
                                        "query": {"exists": {"field": field}}},
                     request_cache=False)["hits"]["total"]["value"]


def has(src, field):
    v = src.get(field)
    return v is not None and v != []


def test_bounds_over_segments(es, live):
    segments = es.indices.segments(index=INDEX)["indices"][INDEX]["shards"]["0"][0]["segments"]
    assert len(segments) >= 2
    for q in QUERIES:
        check_bounds(es, live, q)


def test_exists_counts(es, live):
    for f in ["remark", "tag", "n", "sparse", "multi", "never"]:
        assert exists_count(es, f) == sum(has(s, f) for s in live.values()), f


def test_bounds_under_exists_on_a_segment_wide_field(es, live):
    # `remark` is on every document of the first segment only.
    body = bounds_body({"exists": {"field": "remark"}})
    got = es.search(index=INDEX, body=body, request_cache=False)["aggregations"]
    sel = {i: s for i, s in live.items() if has(s, "remark")}
    for f in ["n", "d", "multi"]:
        assert got[f"min_{f}"]["value"] == pytest.approx(min(values(sel, f)))
        assert got[f"max_{f}"]["value"] == pytest.approx(max(values(sel, f)))


def test_deleting_the_bounds_moves_them(es, live):
    doomed = {doc_holding(live, "n", min), doc_holding(live, "d", max),
              doc_holding(live, "t", min), doc_holding(live, "multi", max),
              doc_holding(live, "sparse", min)}
    # And a document of every segment's first batch whose `remark` had a token.
    doomed.add("3")
    ops = [{"delete": {"_index": INDEX, "_id": i}} for i in sorted(doomed)]
    assert es.bulk(operations=ops, refresh=True)["errors"] is False
    before = {f: (min(values(live, f)), max(values(live, f))) for f in ["n", "d", "t"]}
    for i in doomed:
        del live[i]
    assert min(values(live, "n")) > before["n"][0]
    assert max(values(live, "d")) < before["d"][1]
    for q in QUERIES:
        check_bounds(es, live, q)
    for f in ["remark", "tag", "n", "sparse", "multi"]:
        assert exists_count(es, f) == sum(has(s, f) for s in live.values()), f


def test_bounds_over_several_shards(es):
    name = INDEX + "_shards"
    rng = random.Random(7)
    docs = {str(i): {"n": rng.randint(-99, 99), "d": rng.uniform(-5, 5)} for i in range(90)}
    make_index(es, name, {"settings": {"number_of_shards": 3}, "mappings": MAPPING},
               list(docs.items()))
    try:
        body = {"size": 0, "aggs": {"lo": {"min": {"field": "n"}}, "hi": {"max": {"field": "d"}},
                                    "g": {"global": {}, "aggs": {"lo": {"min": {"field": "d"}}}}}}
        got = es.search(index=name, body=body, request_cache=False)["aggregations"]
        assert got["lo"]["value"] == min(s["n"] for s in docs.values())
        assert got["hi"]["value"] == pytest.approx(max(s["d"] for s in docs.values()))
        assert got["g"]["lo"]["value"] == pytest.approx(min(s["d"] for s in docs.values()))
    finally:
        es.indices.delete(index=name, ignore_unavailable=True)
