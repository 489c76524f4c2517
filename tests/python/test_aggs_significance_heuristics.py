"""The significance heuristics of `significant_terms` and `significant_text`, against scores
computed here in Python from the documents this file indexes, with the formulas of
Elasticsearch's `SignificanceHeuristic` subclasses (JLHScore, MutualInformation, ChiSquare,
GND, PercentageScore, ScriptHeuristic).

A term's counts: subset_freq = documents of the bucket (the query's matches) holding it,
subset_size = the bucket's documents, superset_freq = background documents holding it,
superset_size = the background's documents (every document, or a `background_filter`'s).
Buckets: at least `min_doc_count` documents and a score above 0 (ES's reduce), by score
descending then key, cut to `size`.
"""

import math
import random

import pytest
from elasticsearch import BadRequestError

from conftest import make_index

INDEX = "sig_heuristics"
TAGS = [f"t{i}" for i in range(12)]
WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota", "kappa"]


def _docs():
    rnd = random.Random(1126)
    docs = []
    for i in range(300):
        group = rnd.choice(["a", "b", "c"])
        # Each group leans to some tags and words, so some terms are over-represented in a
        # group (positive) and some under-represented (negative).
        bias = {"a": 0, "b": 4, "c": 8}[group]
        tags = {TAGS[(bias + int(rnd.expovariate(0.5))) % len(TAGS)] for _ in range(3)}
        words = [WORDS[(bias + int(rnd.expovariate(0.4))) % len(WORDS)] for _ in range(4)]
        docs.append({"group": group, "n": i, "tag": sorted(tags), "body": " ".join(words)})
    return docs


DOCS = _docs()


@pytest.fixture(scope="module")
def sig(es):
    body = {"settings": {"number_of_shards": 2}, "mappings": {"properties": {
        "group": {"type": "keyword"}, "n": {"type": "integer"}, "tag": {"type": "keyword"},
        "body": {"type": "text"}}}}
    return make_index(es, INDEX, body, [(str(i), d) for i, d in enumerate(DOCS)])


# --- The heuristics, from ES's formulas ------------------------------------------------------

def jlh(sf, sn, bf, bn, _p):
    if sn == 0 or bn == 0:
        return 0.0
    bf = max(bf, 1)
    a, b = sf / sn, bf / bn
    return 0.0 if a - b <= 0 else (a - b) * (a / b)


def table(sf, sn, bf, bn, superset):
    if superset:
        return dict(n00=bn - bf - (sn - sf), n01=sn - sf, n10=bf - sf, n11=sf, n0_=bn - bf,
                    n1_=bf, n_0=bn - sn, n_1=sn, n=bn)
    return dict(n00=bn - bf, n01=sn - sf, n10=bf, n11=sf, n0_=bn - bf + sn - sf, n1_=bf + sf,
                n_0=bn, n_1=sn, n=bn + sn)


def div(a, b):
    if b == 0:
        return math.nan if a == 0 else math.copysign(math.inf, a)
    return a / b


def negative(t, p):
    # Java compares doubles: NaN compares false.
    return not p.get("include_negatives", False) and div(t["n11"], t["n_1"]) < div(t["n10"], t["n_0"])


def mutual_information(sf, sn, bf, bn, p):
    t = table(sf, sn, bf, bn, p.get("background_is_superset", True))

    def term(nxy, nx_, n_y, n):
        num, den, f = abs(n * nxy), abs(nx_ * n_y), abs(nxy / n)
        return 0.0 if num < 1e-7 and f < 1e-7 else f * math.log(num / den)
    s = (term(t["n00"], t["n0_"], t["n_0"], t["n"]) + term(t["n01"], t["n0_"], t["n_1"], t["n"])
         + term(t["n10"], t["n1_"], t["n_0"], t["n"]) + term(t["n11"], t["n1_"], t["n_1"], t["n"]))
    s /= math.log(2.0)
    return -math.inf if math.isnan(s) or negative(t, p) else s


def chi_square(sf, sn, bf, bn, p):
    t = table(sf, sn, bf, bn, p.get("background_is_superset", True))
    if negative(t, p):
        return -math.inf
    return t["n"] * (t["n11"] * t["n00"] - t["n01"] * t["n10"]) ** 2 / (
        t["n_1"] * t["n1_"] * t["n0_"] * t["n_0"])


def gnd(sf, sn, bf, bn, p):
    t = table(sf, sn, bf, bn, p.get("background_is_superset", True))
    fx, fy, fxy = t["n1_"], t["n_1"], t["n11"]
    if fxy == 0:
        return 0.0
    if fx == fy == fxy:
        return 1.0
    s = (max(math.log(fx), math.log(fy)) - math.log(fxy)) / (
        math.log(t["n"]) - min(math.log(fx), math.log(fy)))
    return math.exp(-s)


def percentage(sf, sn, bf, bn, _p):
    return 0.0 if bf == 0 else sf / bf


def script(sf, sn, bf, bn, _p):
    # "params._subset_freq / (params._superset_freq - params._subset_freq + 1)", long division.
    return float(sf // (bf - sf + 1))


SCRIPT = {"script_heuristic": {"script": {
    "source": "params._subset_freq / (params._superset_freq - params._subset_freq + 1)"}}}

HEURISTICS = {
    "jlh": (jlh, {"jlh": {}}),
    "mi": (mutual_information, {"mutual_information": {}}),
    "mi_neg": (mutual_information, {"mutual_information": {"include_negatives": True}}),
    "chi": (chi_square, {"chi_square": {}}),
    "chi_neg": (chi_square, {"chi_square": {"include_negatives": True}}),
    "gnd": (gnd, {"gnd": {}}),
    "percentage": (percentage, {"percentage": {}}),
    "script": (script, SCRIPT),
}


def tags_of(d):
    return set(d["tag"])


def words_of(d):
    return set(d["body"].split())


def expected(fn, params, fg, bg, terms_of, size=10, min_doc_count=3):
    cf, cb = {}, {}
    for d in fg:
        for t in terms_of(d):
            cf[t] = cf.get(t, 0) + 1
    for d in bg:
        for t in terms_of(d):
            cb[t] = cb.get(t, 0) + 1
    out = []
    for t, n in cf.items():
        s = fn(n, len(fg), cb.get(t, 0), len(bg), params)
        if n >= min_doc_count and s > 0:
            out.append((t, n, cb.get(t, 0), s))
    out.sort(key=lambda x: (-x[3], x[0]))
    return out[:size]


def check(got, want, fg, bg):
    assert got["doc_count"] == len(fg) and got["bg_count"] == len(bg)
    assert [(b["key"], b["doc_count"], b["bg_count"]) for b in got["buckets"]] == \
        [(k, n, c) for k, n, c, _ in want]
    for b, (_, _, _, s) in zip(got["buckets"], want):
        assert b["score"] == pytest.approx(s, rel=1e-9)


def params_of(spec):
    return next(iter(spec.values()))


@pytest.mark.parametrize("name", list(HEURISTICS))
@pytest.mark.parametrize("group", ["a", "c"])
def test_significant_terms(es, sig, name, group):
    fn, spec = HEURISTICS[name]
    got = es.search(index=INDEX, size=0, query={"term": {"group": group}}, aggs={
        "s": {"significant_terms": {"field": "tag", "size": 20, **spec}}}).body
    fg = [d for d in DOCS if d["group"] == group]
    want = expected(fn, params_of(spec), fg, DOCS, tags_of, size=20)
    assert want, "the data gives every heuristic some term to score"
    check(got["aggregations"]["s"], want, fg, DOCS)


@pytest.mark.parametrize("name", list(HEURISTICS))
def test_significant_text(es, sig, name):
    fn, spec = HEURISTICS[name]
    got = es.search(index=INDEX, size=0, query={"term": {"group": "b"}}, aggs={
        "s": {"significant_text": {"field": "body", **spec}}}).body
    fg = [d for d in DOCS if d["group"] == "b"]
    check(got["aggregations"]["s"], expected(fn, params_of(spec), fg, DOCS, words_of), fg, DOCS)


@pytest.mark.parametrize("spec", [
    {"mutual_information": {"background_is_superset": False}},
    {"chi_square": {"background_is_superset": False, "include_negatives": True}},
    {"gnd": {"background_is_superset": False}},
], ids=["mi", "chi", "gnd"])
def test_background_not_a_superset(es, sig, spec):
    """The background is the other groups' documents: the subset is added to it."""
    fn = {"mutual_information": mutual_information, "chi_square": chi_square, "gnd": gnd}[
        next(iter(spec))]
    got = es.search(index=INDEX, size=0, query={"term": {"group": "a"}}, aggs={
        "c": {"terms": {"field": "group"}, "aggs": {
            "s": {"significant_terms": {
                "field": "tag", "min_doc_count": 1,
                "background_filter": {"bool": {"must_not": {"term": {"group": "a"}}}},
                **spec}}}}}).body
    fg = [d for d in DOCS if d["group"] == "a"]
    bg = [d for d in DOCS if d["group"] != "a"]
    [bucket] = got["aggregations"]["c"]["buckets"]
    check(bucket["s"], expected(fn, params_of(spec), fg, bg, tags_of, min_doc_count=1), fg, bg)


def test_background_that_is_not_a_superset_is_refused_by_default(es, sig):
    with pytest.raises(BadRequestError) as e:
        es.search(index=INDEX, size=0, query={"term": {"group": "a"}}, aggs={
            "s": {"significant_terms": {
                "field": "tag", "chi_square": {},
                "background_filter": {"bool": {"must_not": {"term": {"group": "a"}}}}}}})
    assert e.value.status_code == 400
    err = e.value.body["error"]
    # A shard failure in ES: the heuristic's IllegalArgumentException, grouped.
    assert err["type"] == "search_phase_execution_exception"
    assert err["caused_by"]["type"] == "illegal_argument_exception"
    assert err["caused_by"]["reason"].endswith(
        ", does your background filter not include all documents in the bucket? If so and it "
        'is intentional, set "background_is_superset": false')


@pytest.mark.parametrize("spec,etype", [
    ({"gnd": {"include_negatives": True}}, "x_content_parse_exception"),
    ({"chi_square": {"include_negatives": "maybe"}}, "x_content_parse_exception"),
    ({"mutual_information": {"bogus": 1}}, "x_content_parse_exception"),
    ({"percentage": {"x": 1}}, "x_content_parse_exception"),
    ({"percentage": 1}, "x_content_parse_exception"),
    ({"script_heuristic": {}}, "illegal_argument_exception"),
])
@pytest.mark.parametrize("agg,field", [("significant_terms", "tag"), ("significant_text", "body")])
def test_parse_errors(es, sig, spec, etype, agg, field):
    with pytest.raises(BadRequestError) as e:
        es.search(index=INDEX, size=0, aggs={"s": {agg: {"field": field, **spec}}})
    assert e.value.status_code == 400
    assert e.value.body["error"]["type"] == etype
