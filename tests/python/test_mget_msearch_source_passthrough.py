"""`_mget` documents and `_msearch` hits carry a whole `_source` as the bytes the client
sent, as Elasticsearch returns its stored source.

Random documents (see test_search_source_passthrough: unicode, escapes, nested values,
integers beyond 64 bits, 1.0 and 1e300) are written as exact bytes through `_doc` (with
whitespace around) and `_bulk`, some with a routing. Each whole `_source` is checked byte for
byte against the text sent (the response must hold `"_source":<text>`) and, parsed by Python
(big integers exact), against the document; a filtered `_source`, stored fields, `pretty`
and `filter_path` go through serde_json trees, so there the oracle is `as_tree` of the
Python-filtered document.
"""

import json
import random

import pytest

from test_search_source_passthrough import Http, as_tree, make_doc, one_line_bytes, pretty_bytes

INDEX = "srcmget"
OTHER = "srcmget_other"
NO_SOURCE = "srcmget_nosrc"
MAPPING = {"dynamic": False, "properties": {
    "k": {"type": "keyword"}, "n": {"type": "long"}, "t": {"type": "text"},
    "s": {"type": "keyword", "store": True}}}
N_DOCS = 40


@pytest.fixture(scope="module")
def http(lode_url):
    return Http(lode_url)


@pytest.fixture(scope="module")
def corpus(http):
    """{index: {id: (document, the JSON text sent, routing)}}."""
    r = random.Random(1819)
    out = {}
    for name, n in ((INDEX, N_DOCS), (OTHER, 10)):
        http("DELETE", "/" + name)
        http.json("PUT", "/" + name, {"mappings": MAPPING, "settings": {"number_of_shards": 3}})
        docs = {}
        bulk = []
        for i in range(n):
            doc = make_doc(r, i if name == INDEX else 1000 + i)
            doc["s"] = "s%d" % i
            _id = "%s-%d" % (name, i)
            routing = "r%d" % (i % 4) if i % 3 == 0 else None
            q = "?routing=" + routing if routing else ""
            if i % 2 == 0:
                text, lead, trail = pretty_bytes(r, doc)
                http.json("PUT", "/%s/_doc/%s%s" % (name, _id, q), lead + text + trail)
            else:
                text = one_line_bytes(r, doc)
                meta = {"_index": name, "_id": _id}
                if routing:
                    meta["routing"] = routing
                bulk.append(json.dumps({"index": meta}).encode())
                bulk.append(b" " + text + b"  ")
            docs[_id] = (doc, text, routing)
        body, _ = http.json("POST", "/_bulk", b"\n".join(bulk) + b"\n", "application/x-ndjson")
        assert body["errors"] is False
        http.json("POST", "/%s/_refresh" % name)
        out[name] = docs
    yield out
    for name in (INDEX, OTHER, NO_SOURCE, "srcmget_rt", "srcmget_cache"):
        http("DELETE", "/" + name)


def ndjson(lines):
    return b"".join(json.dumps(x).encode() + b"\n" for x in lines)


def check_whole(item, corpus, raw):
    """A found document with its whole `_source`: the document, and the sent bytes as the
    value of `_source` in the response."""
    doc, text, _ = corpus[item["_index"]][item["_id"]]
    assert item["found"] is True, item
    assert item["_source"] == doc, item["_id"]
    assert b'"_source":' + text in raw, item["_id"]


def entry(index, _id, corpus, **extra):
    e = {"_index": index, "_id": _id}
    routing = corpus[index][_id][2] if _id in corpus.get(index, {}) else None
    if routing:
        e["routing"] = routing
    e.update(extra)
    return e


def test_mget_ids_whole_sources(http, corpus):
    ids = [i for i, (_, _, rt) in corpus[INDEX].items() if rt is None]
    body, raw = http.json("POST", "/%s/_mget" % INDEX, {"ids": ids + ["missing-1"]})
    docs = body["docs"]
    assert [d["_id"] for d in docs] == ids + ["missing-1"]
    for d in docs[:-1]:
        check_whole(d, corpus, raw)
        assert d["_index"] == INDEX and d["_version"] == 1 and d["_primary_term"] == 1
    assert docs[-1] == {"_index": INDEX, "_id": "missing-1", "found": False}


def test_mget_docs_two_indices_and_routing(http, corpus):
    entries = [entry(ix, i, corpus) for ix in (INDEX, OTHER) for i in corpus[ix]]
    entries.append({"_index": OTHER, "_id": "nope"})
    body, raw = http.json("POST", "/_mget", {"docs": entries})
    docs = body["docs"]
    assert len(docs) == len(entries)
    for e, d in zip(entries[:-1], docs):
        assert (d["_index"], d["_id"]) == (e["_index"], e["_id"])
        check_whole(d, corpus, raw)
        assert d.get("_routing") == e.get("routing")
    assert docs[-1]["found"] is False
    # the routing as a URL parameter applies to every document
    routed = [i for i, (_, _, rt) in corpus[INDEX].items() if rt == "r0"]
    assert routed
    body, raw = http.json("POST", "/%s/_mget?routing=r0" % INDEX, {"ids": routed})
    for d in body["docs"]:
        check_whole(d, corpus, raw)
        assert d["_routing"] == "r0"


def python_filter(doc, includes=(), excludes=()):
    """Top-level names only, on scalar fields when including (how source filtering treats
    empty objects and arrays inside included arrays is not what these tests are about)."""
    assert all(not isinstance(doc.get(k), (dict, list)) for k in includes)
    out = {k: v for k, v in doc.items() if not includes or k in includes}
    return {k: v for k, v in out.items() if k not in excludes}


def test_mget_per_doc_source_filters_and_stored_fields(http, corpus):
    ids = [i for i, (_, _, rt) in corpus[INDEX].items() if rt is None][:6]
    specs = [
        ({"_source": ["k", "n"]}, lambda d: {"_source": as_tree(python_filter(d, ["k", "n"]))}),
        ({"_source": {"excludes": ["extra", "t"]}},
         lambda d: {"_source": as_tree(python_filter(d, excludes=["extra", "t"]))}),
        ({"_source": False}, lambda d: {}),
        ({"stored_fields": ["s"]}, lambda d: {"fields": {"s": [d["s"]]}}),
        ({"stored_fields": ["s", "_source"]},
         lambda d: {"fields": {"s": [d["s"]]}, "_source": as_tree(d)}),
        ({"stored_fields": ["_source"]}, None),
        ({"_source": True}, None),
        ({}, None),
    ]
    entries = []
    for _id in ids:
        for extra, _ in specs:
            entries.append(dict({"_index": INDEX, "_id": _id}, **extra))
    body, raw = http.json("POST", "/_mget", {"docs": entries})
    docs = body["docs"]
    assert len(docs) == len(entries)
    for n, d in enumerate(docs):
        extra, want = specs[n % len(specs)]
        doc = corpus[INDEX][d["_id"]][0]
        if want is None:
            check_whole(d, corpus, raw)
            continue
        got = {k: v for k, v in d.items() if k in ("_source", "fields")}
        assert got == want(doc), (extra, d)


def test_mget_url_source_parameters(http, corpus):
    ids = [i for i, (_, _, rt) in corpus[INDEX].items() if rt is None][:8]
    body, _ = http.json("POST", "/%s/_mget?_source=false" % INDEX, {"ids": ids})
    assert all(d["found"] and "_source" not in d for d in body["docs"])
    body, _ = http.json("POST", "/%s/_mget?_source_includes=k,n,s&_source_excludes=n" % INDEX,
                        {"ids": ids})
    for d in body["docs"]:
        assert d["_source"] == python_filter(corpus[INDEX][d["_id"]][0], ["k", "n", "s"], ["n"])
    # a document's own `_source` wins over the URL's
    body, raw = http.json("POST", "/%s/_mget?_source=false" % INDEX,
                          {"docs": [{"_id": ids[0], "_source": True}, {"_id": ids[1]}]})
    check_whole(body["docs"][0], corpus, raw)
    assert "_source" not in body["docs"][1]
    body, _ = http.json("POST", "/%s/_mget?stored_fields=s" % INDEX, {"ids": ids})
    for d in body["docs"]:
        assert d["fields"] == {"s": [corpus[INDEX][d["_id"]][0]["s"]]} and "_source" not in d


def test_mget_versions(http, corpus):
    _id = next(i for i, (_, _, rt) in corpus[INDEX].items() if rt is None)
    body, raw = http.json("POST", "/%s/_mget" % INDEX,
                          {"docs": [{"_id": _id, "version": 1}, {"_id": _id, "version": 7}]})
    ok, conflict = body["docs"]
    check_whole(ok, corpus, raw)
    assert conflict["error"]["type"] == "version_conflict_engine_exception"
    assert "_source" not in conflict


def test_mget_realtime_before_refresh(http, corpus):
    name = "srcmget_rt"
    http("DELETE", "/" + name)
    http.json("PUT", "/" + name, {"mappings": MAPPING,
                                  "settings": {"number_of_shards": 2, "refresh_interval": "-1"}})
    docs = {"a": {"k": "x", "big": 2 ** 64, "f": 1.0, "e": 1e300, "u": "é😀\n\"\\"},
            "b": {"nested": {"arr": [1, [2, {"z": None}]], "neg": -(2 ** 63) - 1}}}
    texts = {"a": json.dumps(docs["a"], indent=2, ensure_ascii=False).encode(),
             "b": json.dumps(docs["b"], separators=(" , ", " : ")).encode()}
    http.json("PUT", "/%s/_doc/a" % name, b"\n " + texts["a"] + b" \n")
    http.json("POST", "/_bulk", json.dumps({"index": {"_index": name, "_id": "b"}}).encode()
              + b"\n" + texts["b"] + b"\n", "application/x-ndjson")
    rt = {name: {i: (d, texts[i], None) for i, d in docs.items()}}
    body, raw = http.json("POST", "/%s/_mget" % name, {"ids": ["a", "b"]})
    for d in body["docs"]:
        check_whole(d, rt, raw)
    body, _ = http.json("POST", "/%s/_mget?realtime=false" % name, {"ids": ["a", "b"]})
    assert [d["found"] for d in body["docs"]] == [False, False]
    body, raw = http.json("POST", "/%s/_mget?realtime=false&refresh=true" % name,
                          {"ids": ["a", "b"]})
    for d in body["docs"]:
        check_whole(d, rt, raw)
    http("DELETE", "/" + name)


def test_mget_source_disabled(http):
    http("DELETE", "/" + NO_SOURCE)
    http.json("PUT", "/" + NO_SOURCE, {"mappings": {"_source": {"enabled": False},
                                                     "dynamic": False,
                                                     "properties": {"n": {"type": "long"}}}})
    http.json("PUT", "/%s/_doc/1" % NO_SOURCE, b'{"n": 5, "x": 18446744073709551616}')
    body, _ = http.json("POST", "/%s/_mget" % NO_SOURCE, {"ids": ["1"]})
    (d,) = body["docs"]
    assert d["found"] is True and "_source" not in d


def test_mget_pretty_and_filter_path(http, corpus):
    ids = [i for i, (_, _, rt) in corpus[INDEX].items() if rt is None][:10]
    status, raw = http("POST", "/%s/_mget?pretty" % INDEX, {"ids": ids})
    assert status == 200 and raw.startswith(b'{\n  "docs"')
    for d in json.loads(raw)["docs"]:
        assert d["_source"] == as_tree(corpus[INDEX][d["_id"]][0])
    body, _ = http.json("POST", "/%s/_mget?filter_path=docs._id,docs._source.k" % INDEX,
                        {"ids": ids})
    assert body == {"docs": [{"_id": i, "_source": {"k": corpus[INDEX][i][0]["k"]}} for i in ids]}


def msearch(http, lines, path="/_msearch"):
    return http.json("POST", path, ndjson(lines), "application/x-ndjson")


def test_msearch_whole_sources(http, corpus):
    lines = [{"index": INDEX}, {"size": N_DOCS, "sort": ["n"]},
             {"index": [INDEX, OTHER]}, {"size": 100, "sort": [{"n": "desc"}],
                                         "query": {"term": {"k": "k1"}}},
             {"index": OTHER}, {"size": 5, "_source": ["n", "k"], "sort": ["n"]},
             {"index": INDEX}, {"query": {"no_such_query": {}}},
             {"index": INDEX}, {"size": 0, "aggs": {"ks": {"terms": {"field": "k"}}}},
             {"index": OTHER}, {"size": 3, "_source": {"excludes": ["extra"]}, "sort": ["n"]}]
    body, raw = msearch(http, lines)
    all_, two, filtered, failing, size0, excluded = body["responses"]
    assert [h["_id"] for h in all_["hits"]["hits"]] == sorted(
        corpus[INDEX], key=lambda i: corpus[INDEX][i][0]["n"])
    for h in all_["hits"]["hits"]:
        check_whole(dict(h, found=True), corpus, raw)
    want = sorted(((ix, i) for ix in (INDEX, OTHER) for i, (d, _, _) in corpus[ix].items()
                   if d["k"] == "k1"), key=lambda p: -corpus[p[0]][p[1]][0]["n"])
    assert [(h["_index"], h["_id"]) for h in two["hits"]["hits"]] == want
    for h in two["hits"]["hits"]:
        check_whole(dict(h, found=True), corpus, raw)
    for h in filtered["hits"]["hits"]:
        assert h["_source"] == as_tree(python_filter(corpus[OTHER][h["_id"]][0], ["n", "k"]))
    assert failing["status"] == 400
    assert failing["error"]["type"] == "parsing_exception"
    assert size0["hits"]["hits"] == [] and size0["hits"]["total"]["value"] == N_DOCS
    assert sum(b["doc_count"] for b in size0["aggregations"]["ks"]["buckets"]) == N_DOCS
    for h in excluded["hits"]["hits"]:
        assert h["_source"] == as_tree(python_filter(corpus[OTHER][h["_id"]][0],
                                                     excludes=["extra"]))
    assert all(r["status"] == 200 for r in (all_, two, filtered, size0, excluded))


def test_msearch_default_index_and_pretty_filter_path(http, corpus):
    lines = [{}, {"size": 10, "sort": ["n"]}, {"index": OTHER}, {"size": 2, "sort": ["n"]}]
    body, raw = msearch(http, lines, "/%s/_msearch" % INDEX)
    first, second = body["responses"]
    assert [h["_index"] for h in first["hits"]["hits"]] == [INDEX] * 10
    assert [h["_index"] for h in second["hits"]["hits"]] == [OTHER] * 2
    for h in first["hits"]["hits"] + second["hits"]["hits"]:
        check_whole(dict(h, found=True), corpus, raw)
    status, raw = http("POST", "/%s/_msearch?pretty" % INDEX, ndjson(lines),
                       "application/x-ndjson")
    assert status == 200 and raw.startswith(b'{\n  "took"')
    for r in json.loads(raw)["responses"]:
        for h in r["hits"]["hits"]:
            assert h["_source"] == as_tree(corpus[h["_index"]][h["_id"]][0])
    body, _ = http.json("POST", "/%s/_msearch?filter_path=responses.hits.hits._source.n" % INDEX,
                        ndjson(lines), "application/x-ndjson")
    got = [[h["_source"]["n"] for h in r["hits"]["hits"]] for r in body["responses"]]
    assert got == [list(range(10)), [1000, 1001]]


def test_msearch_request_cache_is_not_poisoned(http, corpus):
    """The same msearch thrice with `request_cache: true` items: cacheable `size: 0` searches beside
    sized ones, and a `_search` of the same `size: 0` body in between; every answer is right."""
    name = "srcmget_cache"
    http("DELETE", "/" + name)
    http.json("PUT", "/" + name, {"mappings": MAPPING, "settings": {"number_of_shards": 1}})
    docs = {str(i): {"k": "k%d" % (i % 2), "n": i, "big": 2 ** 64 + i, "f": 1.0}
            for i in range(6)}
    texts = {i: json.dumps(d, separators=(", ", ": ")).encode() for i, d in docs.items()}
    for i in docs:
        http.json("PUT", "/%s/_doc/%s" % (name, i), texts[i])
    http.json("POST", "/%s/_refresh" % name)
    rt = {name: {i: (d, texts[i], None) for i, d in docs.items()}}
    size0 = {"size": 0, "aggs": {"ks": {"terms": {"field": "k"}}}}
    lines = [{"index": name, "request_cache": True}, size0,
             {"index": name, "request_cache": True}, {"size": 10, "sort": ["n"]},
             {"index": name}, dict(size0, query={"term": {"k": "k1"}})]
    answers = []
    for round_ in range(3):
        body, raw = msearch(http, lines)
        agg, sized, filtered = body["responses"]
        assert agg["hits"]["hits"] == []
        assert {b["key"]: b["doc_count"] for b in agg["aggregations"]["ks"]["buckets"]} == {
            "k0": 3, "k1": 3}
        assert [h["_id"] for h in sized["hits"]["hits"]] == [str(i) for i in range(6)]
        for h in sized["hits"]["hits"]:
            check_whole(dict(h, found=True), rt, raw)
        assert filtered["hits"]["total"]["value"] == 3
        assert b"lode-source:" not in raw
        answers.append([agg["aggregations"], [h["_source"] for h in sized["hits"]["hits"]]])
        # the same size-0 body through `_search`, which does use the request cache
        body, raw = http.json("POST", "/%s/_search?request_cache=true" % name, size0)
        assert body["hits"]["hits"] == [] and b"lode-source:" not in raw
        assert body["aggregations"] == agg["aggregations"]
    assert answers[0] == answers[1] == answers[2]
    http("DELETE", "/" + name)
