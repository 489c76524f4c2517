"""Runtime fields in `runtime_mappings`: a script's `emit(...)` values queried, sorted and
returned in `fields`, checked against answers computed here from the indexed documents."""

import random

import pytest
from elasticsearch import ApiError

import conftest

INDEX = "runtime_fields"
MAPPING = {"properties": {"first": {"type": "keyword"}, "last": {"type": "keyword"},
                          "a": {"type": "long"}}}
RT = {"full": {"type": "keyword",
               "script": {"source": "emit(doc['first'].value + ' ' + doc['last'].value)"}},
      "twice": {"type": "long", "script": {"source": "emit(doc['a'].value * params.k)",
                                            "params": {"k": 2}}},
      "multi": {"type": "long", "script": "emit(doc['a'].value); emit(doc['a'].value + 100)"}}


@pytest.fixture(scope="module")
def docs(es):
    rng = random.Random(3)
    docs = {str(i): {"first": rng.choice(["ann", "bob", "cy"]),
                     "last": rng.choice(["xu", "yi"]), "a": rng.randrange(0, 30)}
            for i in range(60)}
    conftest.make_index(es, INDEX, {"settings": {"number_of_shards": 2}, "mappings": MAPPING},
                        list(docs.items()))
    yield docs
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def search(es, body):
    body = dict(body, runtime_mappings=RT)
    return es.perform_request("POST", f"/{INDEX}/_search", body=body,
                              headers={"content-type": "application/json",
                                       "accept": "application/json"}).body


def ids(r):
    return {h["_id"] for h in r["hits"]["hits"]}


def test_term_on_runtime_keyword_and_sort(es, docs):
    r = search(es, {"query": {"term": {"full": "bob xu"}}, "size": 100,
                    "sort": [{"full": "desc"}, "_doc"], "fields": ["full"]})
    assert ids(r) == {i for i, d in docs.items() if d["first"] == "bob" and d["last"] == "xu"}
    for h in r["hits"]["hits"]:
        assert h["fields"]["full"] == ["bob xu"]
        assert h["sort"][0] == "bob xu"
    r = search(es, {"size": 100, "sort": [{"full": "asc"}, {"a": "asc"}]})
    want = sorted((d["first"] + " " + d["last"], d["a"]) for d in docs.values())
    assert [tuple(h["sort"]) for h in r["hits"]["hits"]] == want


def test_terms_range_exists_match(es, docs):
    r = search(es, {"query": {"terms": {"full": ["ann yi", "cy xu"]}}, "size": 100})
    assert ids(r) == {i for i, d in docs.items()
                      if d["first"] + " " + d["last"] in ("ann yi", "cy xu")}
    r = search(es, {"query": {"range": {"twice": {"gte": 10, "lt": 30}}}, "size": 100})
    assert ids(r) == {i for i, d in docs.items() if 10 <= d["a"] * 2 < 30}
    r = search(es, {"query": {"exists": {"field": "twice"}}, "size": 0,
                    "track_total_hits": True})
    assert r["hits"]["total"]["value"] == len(docs)
    r = search(es, {"query": {"match": {"full": "ann xu"}}, "size": 100})
    assert ids(r) == {i for i, d in docs.items() if (d["first"], d["last"]) == ("ann", "xu")}


def test_multi_valued_and_shadowing(es, docs):
    r = search(es, {"query": {"term": {"multi": 105}}, "size": 100, "fields": ["multi"]})
    assert ids(r) == {i for i, d in docs.items() if d["a"] == 5}
    for h in r["hits"]["hits"]:
        assert h["fields"]["multi"] == [5, 105]
    # `last` is shadowed by a runtime field emitting `first`, in queries and in `doc[...]`
    # of the other scripts (here `full`), as in ES.
    rt = dict(RT, last={"type": "keyword", "script": "emit(doc['first'].value)"})
    r = req(es, "POST", f"/{INDEX}/_search", {"query": {"term": {"last": "ann"}}, "size": 100,
                                              "runtime_mappings": rt, "fields": ["full"]})
    assert ids(r) == {i for i, d in docs.items() if d["first"] == "ann"}
    assert all(h["fields"]["full"] == ["ann ann"] for h in r["hits"]["hits"])


@pytest.mark.parametrize("body", [
    {"aggs": {"x": {"terms": {"field": "full", "include": "a.*"}}}},
    {"aggs": {"x": {"terms": {"field": "full", "min_doc_count": 0}}}},
    {"aggs": {"x": {"min": {"field": "full"}}}},
])
def test_refused_aggs(es, docs, body):
    with pytest.raises(ApiError) as ei:
        search(es, dict(body, size=0))
    assert ei.value.meta.status == 400
    assert ei.value.body["error"]["root_cause"][0]["type"] == "illegal_argument_exception"


def test_runtime_fields_anywhere_in_the_aggregation_tree(es, docs):
    """Runtime fields are value sources of the aggregations: bucket sources at any depth and
    metrics under buckets, as mapped fields are."""
    from collections import defaultdict
    r = search(es, {"size": 0, "aggs": {
        "full": {"terms": {"field": "full", "size": 100, "order": {"m": "desc"}},
                 "aggs": {"m": {"max": {"field": "a"}}, "s": {"sum": {"field": "twice"}}}},
        "h": {"histogram": {"field": "twice", "interval": 10},
              "aggs": {"multi": {"value_count": {"field": "multi"}},
                       "names": {"terms": {"field": "full", "size": 100}}}},
        "first": {"terms": {"field": "first", "size": 10},
                  "aggs": {"tw": {"stats": {"field": "twice"}}}}}})
    a = r["aggregations"]
    groups = defaultdict(list)
    for d in docs.values():
        groups[d["first"] + " " + d["last"]].append(d)
    want = sorted(((k, len(g), max(d["a"] for d in g), sum(2 * d["a"] for d in g))
                   for k, g in groups.items()), key=lambda t: (-t[2], t[0]))
    got = [(b["key"], b["doc_count"], b["m"]["value"], b["s"]["value"])
           for b in a["full"]["buckets"]]
    assert [g[2] for g in got] == [w[2] for w in want]
    assert sorted(got) == sorted(want)
    hist = defaultdict(list)
    for d in docs.values():
        hist[(2 * d["a"]) // 10 * 10].append(d)
    lo, hi = min(hist), max(hist)
    want_h = []
    for k in range(lo, hi + 10, 10):
        g = hist.get(k, [])
        names = defaultdict(int)
        for d in g:
            names[d["first"] + " " + d["last"]] += 1
        want_h.append((k, len(g), 2 * len(g),
                       sorted(names.items(), key=lambda kv: (-kv[1], kv[0]))))
    got_h = [(b["key"], b["doc_count"], b["multi"]["value"],
              [(n["key"], n["doc_count"]) for n in b["names"]["buckets"]])
             for b in a["h"]["buckets"]]
    assert got_h == want_h
    r = search(es, {"size": 0, "aggs": {"r": {
        "range": {"field": "twice", "ranges": [{"to": 20}, {"from": 10, "to": 40}]},
        "aggs": {"m": {"max": {"field": "multi"}}}}}})
    for b, (lo, hi) in zip(r["aggregations"]["r"]["buckets"], [(None, 20), (10, 40)]):
        sel = [d for d in docs.values()
               if (lo is None or 2 * d["a"] >= lo) and 2 * d["a"] < hi]
        assert b["doc_count"] == len(sel)
        assert b["m"]["value"] == (max(d["a"] + 100 for d in sel) if sel else None)
    for b in a["first"]["buckets"]:
        tw = [2 * d["a"] for d in docs.values() if d["first"] == b["key"]]
        assert b["doc_count"] == len(tw)
        assert b["tw"]["count"] == len(tw) and b["tw"]["sum"] == sum(tw)
        assert b["tw"]["min"] == min(tw) and b["tw"]["max"] == max(tw)


def _terms(counter, size=10, key=lambda k: k):
    ranked = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))
    return ([{"key": key(k), "doc_count": c} for k, c in ranked[:size]],
            sum(c for _, c in ranked[size:]))


def test_terms_agg_on_runtime_fields(es, docs):
    from collections import Counter
    r = search(es, {"size": 0, "query": {"range": {"a": {"gte": 5}}},
                    "aggs": {"full": {"terms": {"field": "full", "size": 4}},
                             "multi": {"terms": {"field": "multi", "size": 5,
                                                         "shard_size": 100}},
                             # Under a key order a shard's default shard_size is `size`, its
                             # first terms by key before min_doc_count (ES): 100 keeps all.
                             "by_key": {"terms": {"field": "twice", "order": {"_key": "desc"},
                                                  "size": 3, "min_doc_count": 2,
                                                  "shard_size": 100}}}})
    sel = [d for d in docs.values() if d["a"] >= 5]
    buckets, other = _terms(Counter(d["first"] + " " + d["last"] for d in sel), 4)
    assert r["aggregations"]["full"]["buckets"] == buckets
    assert r["aggregations"]["full"]["sum_other_doc_count"] == other
    assert r["aggregations"]["full"]["doc_count_error_upper_bound"] == 0
    multi = Counter()
    for d in sel:
        multi.update({d["a"], d["a"] + 100})
    buckets, other = _terms(multi, 5)
    assert r["aggregations"]["multi"]["buckets"] == buckets
    assert r["aggregations"]["multi"]["sum_other_doc_count"] == other
    twice = Counter(d["a"] * 2 for d in sel)
    want = sorted(((k, c) for k, c in twice.items() if c >= 2), reverse=True)[:3]
    assert [(b["key"], b["doc_count"]) for b in r["aggregations"]["by_key"]["buckets"]] == want


def test_terms_agg_types_and_missing(es, docs):
    from collections import Counter
    rt = {"odd": {"type": "boolean", "script": "emit(doc['a'].value % 2 == 1)"},
          "half": {"type": "double", "script": "emit(doc['a'].value / 2.0)"},
          "day": {"type": "date", "script": "emit(86400000L * (doc['a'].value % 3))"},
          "some": {"type": "keyword",
                   "script": "if (doc['a'].value < 10) { emit(doc['first'].value) }"}}
    r = es.perform_request("POST", f"/{INDEX}/_search", params={"typed_keys": "true"}, body={
        "size": 0, "runtime_mappings": rt,
        "aggs": {"odd": {"terms": {"field": "odd"}},
                 "half": {"terms": {"field": "half", "size": 3, "order": {"_count": "asc"}}},
                 "day": {"terms": {"field": "day"}},
                 "some": {"terms": {"field": "some", "missing": "none"}}}},
        headers={"content-type": "application/json", "accept": "application/json"}).body
    aggs = r["aggregations"]
    odd = Counter(d["a"] % 2 == 1 for d in docs.values())
    assert aggs["lterms#odd"]["buckets"] == [
        {"key": int(k), "key_as_string": str(k).lower(), "doc_count": c}
        for k, c in sorted(odd.items(), key=lambda kv: (-kv[1], kv[0]))]
    half = Counter(d["a"] / 2.0 for d in docs.values())
    want = sorted(half.items(), key=lambda kv: (kv[1], kv[0]))[:3]
    assert [(b["key"], b["doc_count"]) for b in aggs["dterms#half"]["buckets"]] == want
    day = Counter(d["a"] % 3 for d in docs.values())
    assert [(b["key"], b["key_as_string"], b["doc_count"]) for b in aggs["lterms#day"]["buckets"]] \
        == [(k * 86400000, "1970-01-0%dT00:00:00.000Z" % (k + 1), c)
            for k, c in sorted(day.items(), key=lambda kv: (-kv[1], kv[0]))]
    some = Counter(d["first"] if d["a"] < 10 else "none" for d in docs.values())
    assert aggs["sterms#some"]["buckets"] == _terms(some)[0]


def test_metric_aggs_on_runtime_fields(es, docs):
    r = search(es, {"size": 0, "query": {"term": {"first": "bob"}}, "aggs": {
        "min": {"min": {"field": "twice"}}, "max": {"max": {"field": "multi"}},
        "sum": {"sum": {"field": "twice"}}, "avg": {"avg": {"field": "twice"}},
        "count": {"value_count": {"field": "multi"}},
        "stats": {"stats": {"field": "twice"}},
        "card": {"cardinality": {"field": "full"}},
        "plain": {"max": {"field": "a"}}}})
    sel = [d for d in docs.values() if d["first"] == "bob"]
    tw = [d["a"] * 2 for d in sel]
    a = r["aggregations"]
    assert a["min"]["value"] == min(tw)
    assert a["max"]["value"] == max(d["a"] + 100 for d in sel)
    assert a["sum"]["value"] == sum(tw)
    assert a["avg"]["value"] == pytest.approx(sum(tw) / len(tw))
    assert a["count"]["value"] == 2 * len(sel)
    assert a["stats"] == {"count": len(tw), "min": min(tw), "max": max(tw),
                          "avg": pytest.approx(sum(tw) / len(tw)), "sum": sum(tw)}
    assert a["card"]["value"] == len({d["first"] + " " + d["last"] for d in sel})
    assert a["plain"]["value"] == max(d["a"] for d in sel)
    r = search(es, {"size": 0, "query": {"term": {"full": "nobody"}}, "aggs": {
        "min": {"min": {"field": "twice"}}, "avg": {"avg": {"field": "twice"}},
        "stats": {"stats": {"field": "twice"}}, "t": {"terms": {"field": "full"}}}})
    a = r["aggregations"]
    assert a["min"]["value"] is None and a["avg"]["value"] is None
    assert a["stats"] == {"count": 0, "min": None, "max": None, "avg": None, "sum": 0.0}
    assert a["t"]["buckets"] == []


def test_aggs_on_mapping_runtime_fields(es, mdocs):
    from collections import Counter
    r = msearch(es, {"size": 0, "aggs": {"tags": {"terms": {"field": "tags"}},
                                         "price": {"stats": {"field": "price"}}}})
    tags = Counter(t for d in mdocs.values() for t in set(d["tags"]))
    assert r["aggregations"]["tags"]["buckets"] == _terms(tags)[0]
    prices = [float(d["price"]) for d in mdocs.values() if d["price"] is not None]
    st = r["aggregations"]["price"]
    assert st["count"] == len(prices) and st["min"] == min(prices)
    assert st["sum"] == pytest.approx(sum(prices))


@pytest.mark.parametrize("rt,etype", [
    ({"x": {"type": "nope", "script": "emit(1)"}}, "mapper_parsing_exception"),
    ({"x": {"type": "long", "script": "emit(1)", "bogus": 1}}, "mapper_parsing_exception"),
])
def test_refused_definitions(es, docs, rt, etype):
    with pytest.raises(ApiError) as ei:
        es.perform_request("POST", f"/{INDEX}/_search", body={"runtime_mappings": rt},
                           headers={"content-type": "application/json",
                                    "accept": "application/json"})
    assert ei.value.meta.status == 400
    assert ei.value.body["error"]["type"] == etype


def req(es, method, path, body=None):
    return es.perform_request(method, path, body=body,
                              headers={"content-type": "application/json",
                                       "accept": "application/json"}).body


MINDEX = "runtime_in_mapping"


@pytest.fixture(scope="module")
def mdocs(es):
    rng = random.Random(5)
    docs = {str(i): {"first": rng.choice(["ann", "bob", "cy"]),
                     "last": rng.choice(["xu", "yi"]), "a": rng.randrange(0, 30),
                     "price": rng.choice([1.5, 2.25, "3.5", None]),
                     "tags": rng.sample(["p", "q", "r"], rng.randrange(0, 3))}
            for i in range(50)}
    es.indices.delete(index=MINDEX, ignore_unavailable=True)
    req(es, "PUT", f"/{MINDEX}", {
        "settings": {"number_of_shards": 2},
        "mappings": {
            "properties": {"first": {"type": "keyword"}, "last": {"type": "keyword"},
                           "a": {"type": "long"}},
            "runtime": {
                "full": {"type": "keyword",
                         "script": {"source": "emit(doc['first'].value + ' ' + doc['last'].value)"}},
                # no script: read from `_source` (the `price` and `tags` are not indexed)
                "price": {"type": "double"},
                "tags": {"type": "keyword"},
                "gone": {"type": "long", "script": "emit(1)"}}}})
    req(es, "PUT", f"/{MINDEX}/_mapping", {"runtime": {
        "gone": None,
        "twice": {"type": "long", "script": "emit(doc['a'].value * 2)"}}})
    ops = []
    for i, d in docs.items():
        ops += [{"index": {"_index": MINDEX, "_id": i}}, d]
    assert es.bulk(operations=ops, refresh=True)["errors"] is False
    yield docs
    es.indices.delete(index=MINDEX, ignore_unavailable=True)


def test_mapping_runtime_section_returned(es, mdocs):
    m = req(es, "GET", f"/{MINDEX}/_mapping")[MINDEX]["mappings"]
    assert set(m["runtime"]) == {"full", "price", "tags", "twice"}
    assert m["runtime"]["price"] == {"type": "double"}
    assert m["runtime"]["twice"]["type"] == "long"
    g = req(es, "GET", f"/{MINDEX}")[MINDEX]["mappings"]
    assert g["runtime"] == m["runtime"]


def msearch(es, body):
    return req(es, "POST", f"/{MINDEX}/_search", body)


def test_mapping_runtime_fields_in_search(es, mdocs):
    r = msearch(es, {"query": {"term": {"full": "cy yi"}}, "size": 100, "fields": ["full"],
                     "sort": [{"twice": "desc"}, "_doc"]})
    want = [i for i, d in mdocs.items() if (d["first"], d["last"]) == ("cy", "yi")]
    assert ids(r) == set(want)
    assert [h["sort"][0] for h in r["hits"]["hits"]] == \
        sorted((mdocs[i]["a"] * 2 for i in want), reverse=True)
    assert all(h["fields"]["full"] == ["cy yi"] for h in r["hits"]["hits"])
    # the request's runtime_mappings shadow the mapping's
    r = msearch(es, {"query": {"term": {"full": "ann"}}, "size": 100,
                     "runtime_mappings": {"full": {"type": "keyword",
                                                   "script": "emit(doc['first'].value)"}}})
    assert ids(r) == {i for i, d in mdocs.items() if d["first"] == "ann"}


def _num(v):
    return None if v is None else float(v)


def test_runtime_field_without_script_reads_source(es, mdocs):
    r = msearch(es, {"query": {"range": {"price": {"gte": 2}}}, "size": 100,
                     "fields": ["price", "tags"]})
    want = {i for i, d in mdocs.items() if _num(d["price"]) is not None and _num(d["price"]) >= 2}
    assert ids(r) == want
    for h in r["hits"]["hits"]:
        d = mdocs[h["_id"]]
        assert h["fields"]["price"] == [_num(d["price"])]
        if d["tags"]:
            assert sorted(h["fields"]["tags"]) == sorted(d["tags"])
        else:
            assert "tags" not in h["fields"]
    r = msearch(es, {"query": {"term": {"tags": "q"}}, "size": 100})
    assert ids(r) == {i for i, d in mdocs.items() if "q" in d["tags"]}
    r = msearch(es, {"query": {"exists": {"field": "price"}}, "size": 0,
                     "track_total_hits": True})
    assert r["hits"]["total"]["value"] == sum(d["price"] is not None for d in mdocs.values())


@pytest.mark.parametrize("body,path,etype", [
    ({"runtime": {"x": {"type": "nope"}}}, "_mapping", "mapper_parsing_exception"),
    ({"runtime": {"x": {"type": "long", "script": "emit("}}}, "_mapping",
     "mapper_parsing_exception"),
    ({"runtime": {"x": {"type": "long", "bogus": 1}}}, "_mapping", "mapper_parsing_exception"),
    ({"runtime": {"x": {"type": "ip"}}}, "_mapping", "mapper_parsing_exception"),
    ({"runtime": 3}, "_mapping", "mapper_parsing_exception"),
    ({"mappings": {"runtime": {"x": {"type": "nope"}}}}, "", "mapper_parsing_exception"),
])
def test_refused_mapping_runtime(es, mdocs, body, path, etype):
    target = f"/{MINDEX}/{path}" if path else "/runtime_refused_create"
    with pytest.raises(ApiError) as ei:
        req(es, "PUT", target, body)
    assert ei.value.meta.status == 400
    assert ei.value.body["error"]["type"] == etype
    assert not es.indices.exists(index="runtime_refused_create")
    # nothing of the refused update was applied
    assert "x" not in req(es, "GET", f"/{MINDEX}/_mapping")[MINDEX]["mappings"]["runtime"]


def test_mapping_runtime_fields_survive_restart(tmp_path_factory):
    from elasticsearch import Elasticsearch
    from conftest import LodeServer, lode_binary
    s = LodeServer(lode_binary(), str(tmp_path_factory.mktemp("runtime_restart")))
    s.start()
    try:
        es = Elasticsearch(s.url)
        req(es, "PUT", "/rt", {"mappings": {
            "properties": {"a": {"type": "long"}},
            "runtime": {"a3": {"type": "long", "script": "emit(doc['a'].value * 3)"},
                        "b": {"type": "keyword"}}}})
        for i in range(5):
            es.index(index="rt", id=str(i), document={"a": i, "b": "v%d" % (i % 2)},
                     refresh=True)
        s.stop()
        s.generation = 0  # the same data directory
        s.start()
        es = Elasticsearch(s.url)
        m = req(es, "GET", "/rt/_mapping")["rt"]["mappings"]
        assert set(m["runtime"]) == {"a3", "b"}
        r = req(es, "POST", "/rt/_search", {"query": {"term": {"b": "v1"}},
                                            "sort": [{"a3": "asc"}]})
        assert [x["sort"][0] for x in r["hits"]["hits"]] == [3, 9]
    finally:
        s.stop()


def test_doc_runtime_field_in_other_scripts(es, docs):
    # a script query, a _script sort, script_fields, script_score and a runtime field
    # reading another runtime field, all through doc['twice'] / doc['full']
    rt = dict(RT, thrice={"type": "long",
                          "script": "emit(doc['twice'].value + doc['a'].value)"})
    r = es.perform_request("POST", f"/{INDEX}/_search", body={
        "runtime_mappings": rt, "size": 100,
        "query": {"bool": {"filter": [
            {"script": {"script": "doc['twice'].value > 20"}},
            {"range": {"thrice": {"lt": 75}}}]}},
        "sort": [{"_script": {"type": "string", "order": "asc",
                              "script": "doc['full'].value"}}, {"a": "asc"}],
        "script_fields": {"t": {"script": "doc['twice'].value + 1"}}},
        headers={"content-type": "application/json", "accept": "application/json"}).body
    sel = sorted((d["first"] + " " + d["last"], d["a"], i) for i, d in docs.items()
                 if d["a"] * 2 > 20 and d["a"] * 3 < 75)
    assert ids(r) == {i for _, _, i in sel}
    assert [h["sort"] for h in r["hits"]["hits"]] == [[f, a] for f, a, _ in sel]
    for h in r["hits"]["hits"]:
        assert h["fields"]["t"] == [docs[h["_id"]]["a"] * 2 + 1]
    r = es.perform_request("POST", f"/{INDEX}/_search", body={
        "runtime_mappings": rt, "size": 3,
        "query": {"script_score": {"query": {"match_all": {}},
                                   "script": "doc['thrice'].value"}}},
        headers={"content-type": "application/json", "accept": "application/json"}).body
    assert r["hits"]["hits"][0]["_score"] == max(d["a"] for d in docs.values()) * 3


def test_runtime_field_cycle_refused(es, docs):
    rt = {"x": {"type": "long", "script": "emit(doc['y'].value)"},
          "y": {"type": "long", "script": "emit(doc['x'].value)"}}
    with pytest.raises(ApiError) as ei:
        es.perform_request("POST", f"/{INDEX}/_search", body={
            "runtime_mappings": rt, "query": {"term": {"x": 1}}},
            headers={"content-type": "application/json", "accept": "application/json"})
    assert ei.value.meta.status == 400


def test_params_source_in_runtime_scripts_and_script_fields(es, mdocs):
    r = msearch(es, {"size": 100, "query": {"exists": {"field": "p2"}},
                     "runtime_mappings": {"p2": {"type": "keyword", "script":
                                                 "if (params._source.tags.size() > 0) "
                                                 "{ emit(params._source.tags[0] + params['_source']['first']) }"}},
                     "fields": ["p2"],
                     "script_fields": {"s": {"script": "params._source.last"}}})
    want = {i for i, d in mdocs.items() if d["tags"]}
    assert ids(r) == want
    for h in r["hits"]["hits"]:
        d = mdocs[h["_id"]]
        assert h["fields"]["p2"] == [d["tags"][0] + d["first"]]
        assert h["fields"]["s"] == [d["last"]]


def test_dynamic_runtime(es):
    from collections import Counter
    name = "runtime_dynamic"
    es.indices.delete(index=name, ignore_unavailable=True)
    req(es, "PUT", f"/{name}", {"mappings": {"dynamic": "runtime",
                                             "properties": {"id": {"type": "long"}}}})
    rng = random.Random(9)
    docs = [{"id": i, "s": rng.choice(["u", "v"]), "n": rng.randrange(10),
             "f": rng.choice([0.5, 1.5]), "b": rng.random() < 0.5,
             "d": rng.choice(["2020-01-01", "2021-06-01T10:00:00Z"]),
             "o": {"x": rng.choice(["p", "q"])}, "nothing": None}
            for i in range(30)]
    ops = []
    for d in docs:
        ops += [{"index": {"_index": name, "_id": str(d["id"])}}, d]
    assert es.bulk(operations=ops, refresh=True)["errors"] is False
    m = req(es, "GET", f"/{name}/_mapping")[name]["mappings"]
    assert m["dynamic"] == "runtime"
    assert m["properties"] == {"id": {"type": "long"}}
    assert m["runtime"] == {"s": {"type": "keyword"}, "n": {"type": "long"},
                            "f": {"type": "double"}, "b": {"type": "boolean"},
                            "d": {"type": "date"}, "o.x": {"type": "keyword"}}
    r = req(es, "POST", f"/{name}/_search", {
        "size": 100, "query": {"bool": {"filter": [{"term": {"s": "u"}},
                                                   {"range": {"n": {"gte": 3}}},
                                                   {"term": {"b": True}}]}},
        "aggs": {"ox": {"terms": {"field": "o.x"}}, "f": {"sum": {"field": "f"}}}})
    sel = [d for d in docs if d["s"] == "u" and d["n"] >= 3 and d["b"]]
    assert ids(r) == {str(d["id"]) for d in sel}
    assert r["aggregations"]["ox"]["buckets"] == _terms(Counter(d["o"]["x"] for d in sel))[0]
    assert r["aggregations"]["f"]["value"] == sum(d["f"] for d in sel)
    es.indices.delete(index=name)


def test_request_cache_sees_runtime_mapping_changes(es):
    name = "runtime_cache"
    es.indices.delete(index=name, ignore_unavailable=True)
    req(es, "PUT", f"/{name}", {"mappings": {
        "properties": {"a": {"type": "long"}},
        "runtime": {"r": {"type": "long", "script": "emit(doc['a'].value)"}}}})
    es.bulk(operations=[{"index": {"_index": name, "_id": "1"}}, {"a": 2},
                        {"index": {"_index": name, "_id": "2"}}, {"a": 3}], refresh=True)
    body = {"size": 0, "aggs": {"s": {"sum": {"field": "r"}}}}
    assert req(es, "POST", f"/{name}/_search?request_cache=true", body)[
        "aggregations"]["s"]["value"] == 5
    req(es, "PUT", f"/{name}/_mapping", {"runtime": {
        "r": {"type": "long", "script": "emit(doc['a'].value * 10)"}}})
    assert req(es, "POST", f"/{name}/_search?request_cache=true", body)[
        "aggregations"]["s"]["value"] == 50
    es.indices.delete(index=name)
