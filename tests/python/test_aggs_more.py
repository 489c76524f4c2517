"""More aggregations: `weighted_avg` (then `multi_terms`, ...).

Expected answers are computed here, in Python, from the documents this file indexes:
a weighted average is sum(value * weight) / sum(weight) over the documents that have a weight
(or the weight's `missing`), each value of a multi-valued field counting with the document's
weight, as Elasticsearch's `WeightedAvgAggregator`; null when the weights sum to 0.
"""

import random

import pytest
from elasticsearch import BadRequestError

from conftest import make_index

INDEX = "aggs_more"
COLORS = ["red", "green", "blue", "black"]
SHAPES = ["circle", "square", "star"]


def _docs():
    rnd = random.Random(20251125)
    docs = []
    for i in range(600):
        d = {"color": COLORS[rnd.randrange(len(COLORS))], "n": rnd.randrange(0, 5)}
        if rnd.random() < 0.85:
            d["shape"] = SHAPES[rnd.randrange(len(SHAPES))]
        if rnd.random() < 0.9:
            d["price"] = round(rnd.uniform(-20, 200), 2)
        if rnd.random() < 0.8:
            d["qty"] = rnd.randrange(0, 10)
        if rnd.random() < 0.3:
            d["grades"] = [rnd.randrange(0, 100) for _ in range(rnd.randrange(1, 4))]
        docs.append((str(i), d))
    return docs


DOCS = _docs()


@pytest.fixture(scope="module")
def more(es):
    body = {
        "settings": {"number_of_shards": 3},
        "mappings": {"properties": {
            "color": {"type": "keyword"},
            "shape": {"type": "keyword"},
            "n": {"type": "integer"},
            "price": {"type": "double"},
            "qty": {"type": "long"},
            "grades": {"type": "integer"},
        }},
    }
    return make_index(es, INDEX, body, DOCS)


def search(es, aggs, query=None, **kw):
    body = {"size": 0, "aggs": aggs}
    if query is not None:
        body["query"] = query
    return es.search(index=INDEX, body=body, **kw).body["aggregations"]


def close(a, b):
    if a is None or b is None:
        return a is None and b is None
    return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1.0)


def as_list(v):
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


def weighted(docs, value, weight, vmissing=None, wmissing=None):
    num = den = 0.0
    for d in docs:
        ws = as_list(d.get(weight)) or ([] if wmissing is None else [wmissing])
        vs = as_list(d.get(value)) or ([] if vmissing is None else [vmissing])
        if not ws:
            continue
        for v in vs:
            num += v * ws[0]
            den += ws[0]
    return num / den if den != 0 else None


# ------------------------------------------------------------------------------------------
# weighted_avg


def test_weighted_avg_top_level(es, more):
    got = search(es, {"w": {"weighted_avg": {"value": {"field": "price"},
                                             "weight": {"field": "qty"}}}})["w"]
    assert close(got["value"], weighted([d for _, d in DOCS], "price", "qty"))


def test_weighted_avg_missing_and_multi_valued(es, more):
    got = search(es, {
        "a": {"weighted_avg": {"value": {"field": "price", "missing": 7.5},
                               "weight": {"field": "qty", "missing": 2}}},
        "b": {"weighted_avg": {"value": {"field": "grades"}, "weight": {"field": "n"}}},
    })
    docs = [d for _, d in DOCS]
    assert close(got["a"]["value"], weighted(docs, "price", "qty", 7.5, 2))
    assert close(got["b"]["value"], weighted(docs, "grades", "n"))


def test_weighted_avg_under_terms_and_query(es, more):
    q = {"range": {"n": {"gte": 1}}}
    got = search(es, {"c": {"terms": {"field": "color"}, "aggs": {
        "w": {"weighted_avg": {"value": {"field": "price"}, "weight": {"field": "qty"}}}}}},
        query=q)
    buckets = got["c"]["buckets"]
    assert {b["key"] for b in buckets} == set(COLORS)
    for b in buckets:
        docs = [d for _, d in DOCS if d["color"] == b["key"] and d["n"] >= 1]
        assert b["doc_count"] == len(docs)
        assert close(b["w"]["value"], weighted(docs, "price", "qty"))


def test_weighted_avg_order_by_it(es, more):
    got = search(es, {"c": {"terms": {"field": "color", "order": {"w": "asc"}}, "aggs": {
        "w": {"weighted_avg": {"value": {"field": "price"}, "weight": {"field": "qty"}}}}}})
    values = [b["w"]["value"] for b in got["c"]["buckets"]]
    assert values == sorted(values)


def test_weighted_avg_no_weight_is_null(es, more):
    got = search(es, {"w": {"weighted_avg": {"value": {"field": "price"},
                                             "weight": {"field": "qty"},
                                             "format": "0.00"}}},
                 query={"term": {"qty": 0}})["w"]
    assert got == {"value": None}


def test_weighted_avg_format_and_typed_keys(es, more):
    got = search(es, {"w": {"weighted_avg": {"value": {"field": "price"},
                                             "weight": {"field": "qty"},
                                             "format": "0.00"}}}, typed_keys=True)
    w = got["weighted_avg#w"]
    exp = weighted([d for _, d in DOCS], "price", "qty")
    assert close(w["value"], exp)
    assert w["value_as_string"] == f"{exp:.2f}"


@pytest.mark.parametrize("body,etype", [
    ({"value": {"field": "price"}}, "illegal_argument_exception"),
    ({"value": {"field": "price"}, "weight": {"field": "qty"}, "bogus": 1},
     "x_content_parse_exception"),
    ({"value": {"field": "price", "bogus": 1}, "weight": {"field": "qty"}},
     "x_content_parse_exception"),
    ({"value": {"field": "color"}, "weight": {"field": "qty"}},
     "search_phase_execution_exception"),
])
def test_weighted_avg_refused(es, more, body, etype):
    with pytest.raises(BadRequestError) as e:
        search(es, {"w": {"weighted_avg": body}})
    assert e.value.status_code == 400
    assert e.value.body["error"]["type"] == etype


def test_weighted_avg_takes_no_sub_aggs(es, more):
    with pytest.raises(BadRequestError) as e:
        search(es, {"w": {"weighted_avg": {"value": {"field": "price"},
                                           "weight": {"field": "qty"}},
                          "aggs": {"x": {"max": {"field": "price"}}}}})
    assert e.value.body["error"]["type"] == "aggregation_initialization_exception"
