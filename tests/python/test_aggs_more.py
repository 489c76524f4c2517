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
        # Tags from a long-tailed distribution: many occur once or twice.
        if rnd.random() < 0.7:
            d["tag"] = f"t{int(rnd.paretovariate(0.9))}"
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
            "tag": {"type": "keyword"},
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


# ------------------------------------------------------------------------------------------
# multi_terms


def combos(docs, fields, missing=None):
    """Counter of key tuples: the cross product of the fields' values, per document."""
    from collections import Counter
    from itertools import product
    missing = missing or {}
    c = Counter()
    for d in docs:
        lists = []
        for f in fields:
            vs = sorted(set(as_list(d.get(f))))
            if not vs and f in missing:
                vs = [missing[f]]
            lists.append(vs)
        for key in set(product(*lists)):
            c[key] += 1
    return c


def expected_multi(counter, size, order="count"):
    items = list(counter.items())
    if order == "count":
        items.sort(key=lambda kv: (-kv[1], kv[0]))
    elif order == "key_desc":
        items.sort(key=lambda kv: kv[0], reverse=True)
    shown = items[:size]
    other = sum(n for _, n in items[size:])
    return shown, other


def test_multi_terms_count_order_and_cut(es, more):
    got = search(es, {"m": {"multi_terms": {
        "terms": [{"field": "color"}, {"field": "shape"}], "size": 5}}})["m"]
    shown, other = expected_multi(combos([d for _, d in DOCS], ["color", "shape"]), 5)
    assert [(tuple(b["key"]), b["doc_count"]) for b in got["buckets"]] == shown
    assert [b["key_as_string"] for b in got["buckets"]] == ["|".join(k) for k, _ in shown]
    assert got["sum_other_doc_count"] == other
    assert got["doc_count_error_upper_bound"] == 0


def test_multi_terms_numeric_missing_key_order(es, more):
    got = search(es, {"m": {"multi_terms": {
        "terms": [{"field": "n"}, {"field": "shape", "missing": "none"}],
        "size": 7, "order": {"_key": "desc"}}}}, typed_keys=True)["multi_terms#m"]
    c = combos([d for _, d in DOCS], ["n", "shape"], {"shape": "none"})
    shown, other = expected_multi(c, 7, "key_desc")
    assert [(tuple(b["key"]), b["doc_count"]) for b in got["buckets"]] == shown
    assert [b["key_as_string"] for b in got["buckets"]] == [f"{n}|{s}" for (n, s), _ in shown]
    assert got["sum_other_doc_count"] == other


def test_multi_terms_multi_valued_and_query(es, more):
    q = {"term": {"color": "red"}}
    got = search(es, {"m": {"multi_terms": {
        "terms": [{"field": "grades"}, {"field": "color"}], "size": 1000,
        "show_term_doc_count_error": True}}}, query=q)["m"]
    docs = [d for _, d in DOCS if d["color"] == "red"]
    shown, other = expected_multi(combos(docs, ["grades", "color"]), 1000)
    assert [(tuple(b["key"]), b["doc_count"]) for b in got["buckets"]] == shown
    assert other == 0 and got["sum_other_doc_count"] == 0
    assert all(b["doc_count_error_upper_bound"] == 0 for b in got["buckets"])


def test_multi_terms_sub_agg_and_order_by_it(es, more):
    got = search(es, {"m": {"multi_terms": {
        "terms": [{"field": "color"}, {"field": "shape"}], "size": 4,
        "order": {"mx": "desc"}},
        "aggs": {"mx": {"max": {"field": "price"}}}}})["m"]
    groups = {}
    for _, d in DOCS:
        if "shape" in d:
            groups.setdefault((d["color"], d["shape"]), []).append(d)
    maxes = {k: max([d["price"] for d in v if "price" in d], default=None)
             for k, v in groups.items()}
    ranked = sorted(((m, k) for k, m in maxes.items() if m is not None),
                    key=lambda mk: (-mk[0], mk[1]))[:4]
    assert [tuple(b["key"]) for b in got["buckets"]] == [k for _, k in ranked]
    assert [b["mx"]["value"] for b in got["buckets"]] == [m for m, _ in ranked]
    assert [b["doc_count"] for b in got["buckets"]] == [len(groups[k]) for _, k in ranked]


def test_multi_terms_under_terms(es, more):
    got = search(es, {"c": {"terms": {"field": "color"}, "aggs": {
        "m": {"multi_terms": {"terms": [{"field": "shape"}, {"field": "n"}], "size": 3}}}}})
    for b in got["c"]["buckets"]:
        docs = [d for _, d in DOCS if d["color"] == b["key"]]
        shown, other = expected_multi(combos(docs, ["shape", "n"]), 3)
        assert [(tuple(x["key"]), x["doc_count"]) for x in b["m"]["buckets"]] == shown
        assert b["m"]["sum_other_doc_count"] == other


@pytest.mark.parametrize("body,etype", [
    ({"terms": [{"field": "color"}]}, "illegal_argument_exception"),
    ({"size": 3}, "illegal_argument_exception"),
    ({"terms": [{"field": "color"}, {"field": "shape"}], "bogus": 1},
     "x_content_parse_exception"),
    ({"terms": [{"field": "color"}, {"field": "shape", "bogus": 1}]},
     "x_content_parse_exception"),
    ({"terms": [{"field": "color"}, {"field": "shape"}], "size": 0},
     "illegal_argument_exception"),
])
def test_multi_terms_refused(es, more, body, etype):
    with pytest.raises(BadRequestError) as e:
        search(es, {"m": {"multi_terms": body}})
    assert e.value.status_code == 400
    assert e.value.body["error"]["type"] == etype


# ------------------------------------------------------------------------------------------
# rare_terms


def rare(docs, field, max_doc_count, missing=None, keep=lambda k: True):
    from collections import Counter
    c = Counter()
    for d in docs:
        vs = set(as_list(d.get(field)))
        if not vs and missing is not None:
            vs = {missing}
        for v in vs:
            c[v] += 1
    out = [(k, n) for k, n in c.items() if n <= max_doc_count and keep(k)]
    out.sort(key=lambda kn: (kn[1], kn[0]))
    return out


def test_rare_terms_default_max_doc_count(es, more):
    got = search(es, {"r": {"rare_terms": {"field": "tag"}}}, typed_keys=True)["srare_terms#r"]
    exp = rare([d for _, d in DOCS], "tag", 1)
    assert exp
    assert [(b["key"], b["doc_count"]) for b in got["buckets"]] == exp
    assert set(got) == {"buckets"}


def test_rare_terms_max_doc_count_include_exclude_missing(es, more):
    got = search(es, {"r": {"rare_terms": {
        "field": "tag", "max_doc_count": 3, "exclude": "t1.*", "missing": "zz",
        "precision": 0.01}}})["r"]
    exp = rare([d for _, d in DOCS], "tag", 3, missing="zz",
               keep=lambda k: not k.startswith("t1"))
    assert [(b["key"], b["doc_count"]) for b in got["buckets"]] == exp


def test_rare_terms_numeric_with_sub_agg(es, more):
    q = {"term": {"color": "blue"}}
    got = search(es, {"r": {"rare_terms": {"field": "grades", "max_doc_count": 2},
                            "aggs": {"mx": {"max": {"field": "price"}}}}},
                 query=q, typed_keys=True)["lrare_terms#r"]
    docs = [d for _, d in DOCS if d["color"] == "blue"]
    exp = rare(docs, "grades", 2)
    assert [(b["key"], b["doc_count"]) for b in got["buckets"]] == exp
    for b in got["buckets"]:
        prices = [d["price"] for d in docs if b["key"] in as_list(d.get("grades")) and "price" in d]
        assert b["max#mx"]["value"] == (max(prices) if prices else None)


def test_rare_terms_under_terms(es, more):
    got = search(es, {"c": {"terms": {"field": "color"}, "aggs": {
        "r": {"rare_terms": {"field": "tag", "max_doc_count": 2}}}}})
    for b in got["c"]["buckets"]:
        docs = [d for _, d in DOCS if d["color"] == b["key"]]
        assert [(x["key"], x["doc_count"]) for x in b["r"]["buckets"]] == rare(docs, "tag", 2)


@pytest.mark.parametrize("body,etype,reason", [
    ({"field": "tag", "max_doc_count": 0}, "x_content_parse_exception",
     "[max_doc_count] must be greater than 0. Found [0] in [r]"),
    ({"field": "tag", "max_doc_count": 101}, "x_content_parse_exception",
     "[max_doc_count] must be smallerthan 100in [r]"),
    ({"field": "tag", "precision": 0.000001}, "x_content_parse_exception",
     "[precision] must be greater than 0.00001"),
    ({"field": "tag", "size": 3}, "x_content_parse_exception", None),
    ({"field": "price"}, "search_phase_execution_exception", None),
])
def test_rare_terms_refused(es, more, body, etype, reason):
    with pytest.raises(BadRequestError) as e:
        search(es, {"r": {"rare_terms": body}})
    assert e.value.status_code == 400
    err = e.value.body["error"]
    assert err["type"] == etype
    if reason is not None:
        assert err["caused_by"]["reason"] == reason


# ------------------------------------------------------------------------------------------
# top_metrics


def top(docs, sort_field, desc, size, metrics):
    have = [(i, d) for i, d in docs if sort_field in d]
    def sv(d):
        vs = as_list(d[sort_field])
        return max(vs) if desc else min(vs)
    have.sort(key=lambda idd: sv(idd[1]), reverse=desc)
    out = []
    for _, d in have[:size]:
        out.append((sv(d), {m: (as_list(d.get(m)) or [None])[0] for m in metrics}))
    return out


def test_top_metrics_default_size(es, more):
    got = search(es, {"t": {"top_metrics": {"metrics": {"field": "qty"},
                                            "sort": {"price": "desc"}}}},
                 typed_keys=True)["top_metrics#t"]
    exp = top(DOCS, "price", True, 1, ["qty"])
    assert [(x["sort"][0], x["metrics"]) for x in got["top"]] == exp


def test_top_metrics_size_and_several_metrics(es, more):
    got = search(es, {"t": {"top_metrics": {
        "metrics": [{"field": "qty"}, {"field": "color"}, {"field": "price"}],
        "sort": [{"price": {"order": "asc"}}], "size": 4}}})["t"]
    exp = top(DOCS, "price", False, 4, ["qty", "color", "price"])
    assert [(x["sort"][0], x["metrics"]) for x in got["top"]] == exp


def test_top_metrics_under_terms(es, more):
    got = search(es, {"c": {"terms": {"field": "color"}, "aggs": {
        "t": {"top_metrics": {"metrics": {"field": "price"}, "sort": {"qty": "desc"},
                              "size": 1}}}}})
    for b in got["c"]["buckets"]:
        docs = [(i, d) for i, d in DOCS if d["color"] == b["key"]]
        [(s, m)] = [(x["sort"][0], x["metrics"]) for x in b["t"]["top"]]
        exp = top(docs, "qty", True, 1, ["price"])
        # Ties on qty: any of the tied documents may come first, as in ES.
        assert s == exp[0][0]
        tied = {(as_list(d.get("price")) or [None])[0] for _, d in docs if d.get("qty") == s}
        assert m["price"] in tied


def test_top_metrics_score_sort(es, more):
    got = search(es, {"t": {"top_metrics": {"metrics": {"field": "n"}, "sort": "_score"}}},
                 query={"constant_score": {"filter": {"term": {"color": "red"}}, "boost": 2.5}})["t"]
    assert len(got["top"]) == 1
    assert got["top"][0]["sort"] == [2.5]


def test_top_metrics_no_docs(es, more):
    got = search(es, {"t": {"top_metrics": {"metrics": {"field": "n"},
                                            "sort": {"price": "asc"}}}},
                 query={"term": {"color": "nope"}})["t"]
    assert got == {"top": []}


@pytest.mark.parametrize("body,etype", [
    ({"metrics": {"field": "n"}}, "illegal_argument_exception"),
    ({"sort": {"price": "asc"}}, "illegal_argument_exception"),
    ({"metrics": {"field": "n"}, "sort": [{"price": "asc"}, {"n": "asc"}]},
     "x_content_parse_exception"),
    ({"metrics": {"field": "n"}, "sort": {"price": "asc"}, "size": 0},
     "x_content_parse_exception"),
    ({"metrics": {"field": "n", "bogus": 1}, "sort": {"price": "asc"}},
     "x_content_parse_exception"),
    ({"metrics": {"field": "n"}, "sort": {"price": "asc"}, "size": 11},
     "search_phase_execution_exception"),
])
def test_top_metrics_refused(es, more, body, etype):
    with pytest.raises(BadRequestError) as e:
        search(es, {"t": {"top_metrics": body}})
    assert e.value.status_code == 400
    assert e.value.body["error"]["type"] == etype


# ------------------------------------------------------------------------------------------
# Pipelines over the new aggregations


def test_pipeline_reads_weighted_avg_and_multi_terms(es, more):
    got = search(es, {
        "c": {"terms": {"field": "color"}, "aggs": {
            "w": {"weighted_avg": {"value": {"field": "price"}, "weight": {"field": "qty"}}}}},
        "best": {"max_bucket": {"buckets_path": "c>w"}},
        "m": {"multi_terms": {"terms": [{"field": "color"}, {"field": "shape"}], "size": 3},
              "aggs": {"s": {"sum": {"field": "qty"}},
                       "half": {"bucket_script": {"buckets_path": {"x": "s"},
                                                  "script": "params.x / 2"}}}},
    })
    values = {b["key"]: b["w"]["value"] for b in got["c"]["buckets"]}
    top = max(values.values())
    assert close(got["best"]["value"], top)
    assert got["best"]["keys"] == [k for k, v in values.items() if v == top]
    for b in got["m"]["buckets"]:
        assert close(b["half"]["value"], b["s"]["value"] / 2)


def test_multi_terms_date_and_bool_keys(es):
    body = {"mappings": {"properties": {"d": {"type": "date"}, "b": {"type": "boolean"},
                                        "k": {"type": "keyword"}}}}
    docs = [("1", {"d": "2024-01-02", "b": True, "k": "x"}),
            ("2", {"d": "2024-01-02", "b": True, "k": "x"}),
            ("3", {"d": "2024-01-03", "b": False, "k": "y"})]
    make_index(es, "aggs_more_dates", body, docs)
    got = es.search(index="aggs_more_dates", body={"size": 0, "aggs": {"m": {"multi_terms": {
        "terms": [{"field": "d"}, {"field": "k"}]}}}}).body["aggregations"]["m"]
    assert got["buckets"][0]["key"] == [1704153600000, "x"]
    assert got["buckets"][0]["key_as_string"] == "2024-01-02T00:00:00.000Z|x"
    assert got["buckets"][0]["doc_count"] == 2


# ------------------------------------------------------------------------------------------
# significant_terms (JLH)


def jlh(sub_f, sub_n, sup_f, sup_n):
    if sub_n == 0 or sup_n == 0:
        return 0.0
    sup_f = max(sup_f, 1)  # ES's JLHScore: a term missing from the background counts once
    a, b = sub_f / sub_n, sup_f / sup_n
    return 0.0 if a - b <= 0 else (a - b) * (a / b)


def significant(fg, bg, field, size=10, min_doc_count=3):
    from collections import Counter
    cf, cb = Counter(), Counter()
    for d in fg:
        for v in set(as_list(d.get(field))):
            cf[v] += 1
    for d in bg:
        for v in set(as_list(d.get(field))):
            cb[v] += 1
    out = []
    for k, n in cf.items():
        s = jlh(n, len(fg), cb[k], len(bg))
        if n >= min_doc_count and s > 0:
            out.append((k, n, s, cb[k]))
    out.sort(key=lambda x: (-x[2], x[0]))
    return out[:size]


def check_sig(got, exp, fg, bg):
    assert got["doc_count"] == len(fg) and got["bg_count"] == len(bg)
    assert [(b["key"], b["doc_count"], b["bg_count"]) for b in got["buckets"]] == \
        [(k, n, c) for k, n, _, c in exp]
    for b, (_, _, s, _) in zip(got["buckets"], exp):
        assert close(b["score"], s)


def test_significant_terms_top_level(es, more):
    got = search(es, {"s": {"significant_terms": {"field": "tag"}}},
                 query={"term": {"shape": "star"}}, typed_keys=True)["sigsterms#s"]
    fg = [d for _, d in DOCS if d.get("shape") == "star"]
    bg = [d for _, d in DOCS]
    exp = significant(fg, bg, "tag")
    check_sig(got, exp, fg, bg)


def test_significant_terms_under_terms_with_background_filter(es, more):
    got = search(es, {"c": {"terms": {"field": "color"}, "aggs": {
        "s": {"significant_terms": {"field": "shape", "min_doc_count": 1, "size": 2,
                                    "background_filter": {"range": {"n": {"gte": 1}}}}}}}})
    bg = [d for _, d in DOCS if d["n"] >= 1]
    for b in got["c"]["buckets"]:
        fg = [d for _, d in DOCS if d["color"] == b["key"]]
        check_sig(b["s"], significant(fg, bg, "shape", size=2, min_doc_count=1), fg, bg)


@pytest.mark.parametrize("body,etype", [
    ({"field": "tag", "chi_square": {"bogus": True}}, "x_content_parse_exception"),
    # ES 8's JLHScore is an ObjectParser ("[jlh] unknown field [x]")
    ({"field": "tag", "jlh": {"x": 1}}, "x_content_parse_exception"),
    ({"field": "tag", "bogus": 1}, "x_content_parse_exception"),
])
def test_significant_terms_refused(es, more, body, etype):
    with pytest.raises(BadRequestError) as e:
        search(es, {"s": {"significant_terms": body}})
    assert e.value.status_code == 400
    assert e.value.body["error"]["type"] == etype
