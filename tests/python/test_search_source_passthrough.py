"""Search hits' `_source` as the bytes the client sent, as Elasticsearch returns it.

Random documents (unicode with astral characters, escapes, control characters, nested
objects and arrays, integers beyond 64 bits, floats such as 1.0 and 1e300) are written as
exact bytes, with whitespace and newlines inside and around the JSON, through `_doc` and
`_bulk`. Every search's hits are checked against the Python documents (parsed-JSON
equality, big integers exact: Python's json keeps them), and a whole `_source` also byte
for byte against what was sent (trimmed), which is what ES answers.

Paths that build the response as a tree (source filtering, `pretty`, `filter_path`,
documents rewritten by `_update`) parse the source with serde_json, which keeps
integers within i64/u64 and reads larger ones as doubles: there the oracle reads them so too
(`as_tree`).
"""

import http.client as httpc
import json
import random
from urllib.parse import urlsplit

import pytest

INDEX = "srcpass"
OTHER = "srcpass_other"
NO_SOURCE = "srcpass_nosrc"
MAPPING = {"dynamic": False, "properties": {
    "k": {"type": "keyword"}, "n": {"type": "long"}, "t": {"type": "text"}}}
N_DOCS = 120

PIECES = ["plain", "é", "日本語", "😀", "𝄞", "\U0010ffff", '"', "\\", "\x00", "\n", "\t",
          "\x1f", "\u2028", "/", "</script>", "lode-source:", "\"_scroll_id\":\"x\"", " "]
KEYS = ["a", "é", "日本", "k😀", "q\"uote", "back\\slash", "_source", "_scroll_id", "hits"]
NUMBERS = [0, -1, 7, 2 ** 63 - 1, -(2 ** 63), 2 ** 64 - 1, 2 ** 64, -(2 ** 63) - 1, 10 ** 30,
           1.0, -0.5, 0.1, 1e300, -1e-300, 1.5e-7, 123456.789]
WORDS = ["alpha", "beta", "gamma", "delta", "quick", "brown"]


def rand_str(r):
    return "".join(r.choice(PIECES) for _ in range(r.randint(0, 6)))


def rand_value(r, depth=0):
    kind = r.randint(0, 7 if depth < 3 else 3)
    if kind == 0:
        return r.choice(NUMBERS)
    if kind == 1:
        return rand_str(r)
    if kind == 2:
        return r.choice([True, False, None])
    if kind == 3:
        return r.randint(-10 ** 6, 10 ** 6)
    if kind in (4, 5):
        return [rand_value(r, depth + 1) for _ in range(r.randint(0, 4))]
    return {r.choice(KEYS) + str(i): rand_value(r, depth + 1) for i in range(r.randint(0, 4))}


def make_doc(r, i):
    return {"k": "k%d" % (i % 5), "n": i, "t": " ".join(r.choice(WORDS) for _ in range(5)),
            "extra": {"v%d" % j: rand_value(r) for j in range(r.randint(1, 5))}}


def pretty_bytes(r, doc):
    """The document's JSON as a client might write it: indented or not, escaped or not, with
    whitespace and newlines around."""
    indent = r.choice([None, 1, 4])
    text = json.dumps(doc, ensure_ascii=r.random() < 0.5, indent=indent,
                      separators=r.choice([(",", ":"), (", ", " : ")]) if indent is None else None)
    return text.encode("utf-8"), r.choice([b"", b" ", b"\n", b" \r\n\t "]), r.choice([b"", b"\n", b"  \n\n"])


def one_line_bytes(r, doc):
    text = json.dumps(doc, ensure_ascii=r.random() < 0.5,
                      separators=r.choice([(",", ":"), (", ", " : ")]))
    return text.encode("utf-8")


def as_tree(v):
    """What serde_json (without arbitrary precision) reads: integers beyond i64/u64 as doubles."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, int):
        return v if -(2 ** 63) <= v <= 2 ** 64 - 1 else float(v)
    if isinstance(v, list):
        return [as_tree(x) for x in v]
    if isinstance(v, dict):
        return {k: as_tree(x) for k, x in v.items()}
    return v


class Http:
    def __init__(self, url):
        u = urlsplit(url)
        self.host, self.port = u.hostname, u.port

    def __call__(self, method, path, body=None, content_type="application/json"):
        conn = httpc.HTTPConnection(self.host, self.port, timeout=60)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body).encode()
            conn.request(method, path, body=body, headers={"Content-Type": content_type})
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def json(self, method, path, body=None, content_type="application/json"):
        status, raw = self(method, path, body, content_type)
        assert status in (200, 201), (status, raw[:500])
        return json.loads(raw), raw


@pytest.fixture(scope="module")
def http(lode_url):
    return Http(lode_url)


@pytest.fixture(scope="module")
def corpus(http):
    """{index: {id: (document, the JSON text sent)}}."""
    r = random.Random(1818)
    out = {}
    for name, n in ((INDEX, N_DOCS), (OTHER, 15)):
        http("DELETE", "/" + name)
        http.json("PUT", "/" + name, {"mappings": MAPPING, "settings": {"number_of_shards": 2}})
        docs = {}
        bulk = []
        for i in range(n):
            doc = make_doc(r, i if name == INDEX else 1000 + i)
            _id = "%s-%d" % (name, i)
            if i % 2 == 0:
                text, lead, trail = pretty_bytes(r, doc)
                http.json("PUT", "/%s/_doc/%s" % (name, _id), lead + text + trail)
            else:
                text = one_line_bytes(r, doc)
                bulk.append(json.dumps({"index": {"_index": name, "_id": _id}}).encode())
                bulk.append(b"  " + text + b" ")
            docs[_id] = (doc, text)
        body, _ = http.json("POST", "/_bulk", b"\n".join(bulk) + b"\n", "application/x-ndjson")
        assert body["errors"] is False
        http.json("POST", "/%s/_refresh" % name)
        out[name] = docs
    yield out
    for name in (INDEX, OTHER, NO_SOURCE):
        http("DELETE", "/" + name)


def check_whole(hits, corpus, raw):
    """Every hit's `_source` is its document, exactly, and the bytes sent are in the response."""
    assert hits
    for h in hits:
        doc, text = corpus[h["_index"]][h["_id"]]
        assert h["_source"] == doc, h["_id"]
        assert text in raw, h["_id"]


def test_whole_source_is_the_sent_bytes(http, corpus):
    body, raw = http.json("POST", "/%s/_search" % INDEX,
                          {"size": N_DOCS, "sort": [{"n": "asc"}]})
    hits = body["hits"]["hits"]
    assert [h["_id"] for h in hits] == ["%s-%d" % (INDEX, i) for i in range(N_DOCS)]
    check_whole(hits, corpus, raw)
    assert [h["sort"] for h in hits] == [[i] for i in range(N_DOCS)]


def test_get_search_without_body_and_from(http, corpus):
    body, raw = http.json("GET", "/%s/_search?size=10&from=5&q=k:k3" % INDEX)
    want = sorted(i for i, (d, _) in corpus[INDEX].items() if d["k"] == "k3")
    assert body["hits"]["total"]["value"] == len(want)
    check_whole(body["hits"]["hits"], corpus, raw)


def test_metadata_beside_the_source(http, corpus):
    body, raw = http.json(
        "POST", "/%s/_search?rest_total_hits_as_int=true&typed_keys=true" % INDEX,
        {"size": 5, "version": True, "seq_no_primary_term": True, "explain": True,
         "query": {"range": {"n": {"gte": 10, "lt": 15}}}, "sort": ["_score", {"n": "desc"}],
         "track_scores": True, "aggs": {"ks": {"terms": {"field": "k"}}}})
    assert body["hits"]["total"] == 5
    assert "sterms#ks" in body["aggregations"]
    hits = body["hits"]["hits"]
    assert [corpus[INDEX][h["_id"]][0]["n"] for h in hits] == [14, 13, 12, 11, 10]
    for h in hits:
        assert h["_version"] == 1 and h["_primary_term"] == 1 and h["_seq_no"] >= 0
        assert h["_score"] == 1.0 and "_explanation" in h and "_shard" in h
    check_whole(hits, corpus, raw)


def test_highlight_fields_and_docvalue_fields(http, corpus):
    body, raw = http.json("POST", "/%s/_search" % INDEX, {
        "size": N_DOCS, "query": {"match": {"t": "gamma"}}, "highlight": {"fields": {"t": {}}},
        "fields": ["k"], "docvalue_fields": ["n"]})
    want = {i for i, (d, _) in corpus[INDEX].items() if "gamma" in d["t"].split()}
    hits = body["hits"]["hits"]
    assert {h["_id"] for h in hits} == want
    for h in hits:
        doc = corpus[INDEX][h["_id"]][0]
        assert h["fields"] == {"k": [doc["k"]], "n": [doc["n"]]}
        assert all("<em>gamma</em>" in f for f in h["highlight"]["t"])
    check_whole(hits, corpus, raw)


def test_source_filtering_takes_the_tree(http, corpus):
    body, _ = http.json("POST", "/%s/_search" % INDEX,
                        {"size": 20, "_source": ["k", "n"], "sort": ["n"]})
    for h in body["hits"]["hits"]:
        doc = corpus[INDEX][h["_id"]][0]
        assert h["_source"] == {"k": doc["k"], "n": doc["n"]}
    body, _ = http.json("POST", "/%s/_search" % INDEX,
                        {"size": 20, "_source": {"excludes": ["extra"]}, "sort": ["n"]})
    for h in body["hits"]["hits"]:
        doc = corpus[INDEX][h["_id"]][0]
        assert h["_source"] == {k: v for k, v in doc.items() if k != "extra"}
    body, _ = http.json("GET", "/%s/_search?_source_excludes=extra,n&size=20" % INDEX)
    for h in body["hits"]["hits"]:
        doc = corpus[INDEX][h["_id"]][0]
        assert h["_source"] == {"k": doc["k"], "t": doc["t"]}
    body, _ = http.json("POST", "/%s/_search" % INDEX, {"size": 20, "_source": False})
    assert len(body["hits"]["hits"]) == 20
    assert all("_source" not in h for h in body["hits"]["hits"])


def test_pretty_human_and_filter_path(http, corpus):
    status, raw = http("POST", "/%s/_search?pretty" % INDEX, {"size": 30, "sort": ["n"]})
    assert status == 200 and raw.startswith(b"{\n  \"took\"")
    for h in json.loads(raw)["hits"]["hits"]:
        assert h["_source"] == as_tree(corpus[INDEX][h["_id"]][0])
    body, _ = http.json("POST", "/%s/_search?human=true" % INDEX, {"size": 30})
    assert len(body["hits"]["hits"]) == 30
    for h in body["hits"]["hits"]:
        assert h["_source"] == as_tree(corpus[INDEX][h["_id"]][0])
    body, _ = http.json("POST", "/%s/_search?filter_path=hits.hits._id,hits.hits._source.k"
                        % INDEX, {"size": 30})
    assert set(body) == {"hits"}
    for h in body["hits"]["hits"]:
        assert h == {"_id": h["_id"], "_source": {"k": corpus[INDEX][h["_id"]][0]["k"]}}
    body, _ = http.json("POST", "/%s/_search?filter_path=hits.total" % INDEX, {"size": 30})
    assert body == {"hits": {"total": {"value": N_DOCS, "relation": "eq"}}}


def test_size_zero(http, corpus):
    body, _ = http.json("POST", "/%s/_search" % INDEX, {"size": 0})
    assert body["hits"]["hits"] == [] and body["hits"]["total"]["value"] == N_DOCS


def test_scroll_pages(http, corpus):
    body, raw = http.json("POST", "/%s/_search?scroll=1m" % INDEX, {"size": 7})
    seen = []
    while body["hits"]["hits"]:
        check_whole(body["hits"]["hits"], corpus, raw)
        seen += [h["_id"] for h in body["hits"]["hits"]]
        assert raw.startswith(b'{"_scroll_id":')
        body, raw = http.json("POST", "/_search/scroll",
                              {"scroll": "1m", "scroll_id": body["_scroll_id"]})
    assert sorted(seen) == sorted(corpus[INDEX])
    http("DELETE", "/_search/scroll", {"scroll_id": body["_scroll_id"]})


def test_two_indices(http, corpus):
    body, raw = http.json("POST", "/%s,%s/_search" % (INDEX, OTHER),
                          {"size": 200, "sort": [{"n": "desc"}]})
    hits = body["hits"]["hits"]
    assert len(hits) == N_DOCS + len(corpus[OTHER])
    assert {h["_index"] for h in hits[:15]} == {OTHER}
    check_whole(hits, corpus, raw)


def test_msearch_splices_whole_sources(http, corpus):
    """More in test_mget_msearch_source_passthrough."""
    lines = [{"index": INDEX}, {"size": 10, "sort": ["n"]},
             {"index": OTHER}, {"size": 10, "_source": ["n"]}]
    body, raw = http.json("POST", "/_msearch",
                          b"".join(json.dumps(x).encode() + b"\n" for x in lines),
                          "application/x-ndjson")
    first, second = body["responses"]
    assert len(first["hits"]["hits"]) == 10
    check_whole(first["hits"]["hits"], corpus, raw)
    for h in second["hits"]["hits"]:
        assert h["_source"] == {"n": corpus[OTHER][h["_id"]][0]["n"]}


def test_source_disabled_in_the_mapping(http):
    http("DELETE", "/" + NO_SOURCE)
    http.json("PUT", "/" + NO_SOURCE, {"mappings": {"_source": {"enabled": False}, "dynamic": False,
                                                     "properties": {"n": {"type": "long"}}}})
    http.json("PUT", "/%s/_doc/1?refresh=true" % NO_SOURCE, b'{"n": 5, "x": 18446744073709551615}')
    body, _ = http.json("POST", "/%s/_search" % NO_SOURCE, {})
    (hit,) = body["hits"]["hits"]
    assert hit["_id"] == "1" and "_source" not in hit


def test_updated_documents(http, corpus):
    """`_update` stores the merged document (written by serde_json); searches return it."""
    http("DELETE", "/srcpass_upd")
    http.json("PUT", "/srcpass_upd", {"mappings": MAPPING})
    original = {"k": "a", "n": 1, "t": "x", "extra": {"s": "é😀\x00\"", "big": 2 ** 63 - 1,
                                                      "f": 1.0, "arr": [1, {"z": None}]}}
    http.json("PUT", "/srcpass_upd/_doc/1", json.dumps(original, indent=2).encode())
    http.json("PUT", "/srcpass_upd/_doc/2", json.dumps(original).encode())
    http.json("POST", "/srcpass_upd/_update/1",
              {"doc": {"k": "b", "extra": {"added": "日本", "arr": [2]}}})
    http.json("POST", "/srcpass_upd/_update/2",
              {"script": {"source": "ctx._source.n += params.d; ctx._source.note = params.s",
                          "params": {"d": 41, "s": "\U0001d11e"}}})
    http.json("POST", "/srcpass_upd/_update/3", {"doc": {"k": "c"}, "doc_as_upsert": True})
    http.json("POST", "/srcpass_upd/_refresh")
    body, _ = http.json("POST", "/srcpass_upd/_search", {"sort": ["k"]})
    want_1 = json.loads(json.dumps(original))
    want_1["k"] = "b"
    want_1["extra"]["added"] = "日本"
    want_1["extra"]["arr"] = [2]
    want_2 = json.loads(json.dumps(original))
    want_2["n"] = 42
    want_2["note"] = "\U0001d11e"
    assert [(h["_id"], h["_source"]) for h in body["hits"]["hits"]] == [
        ("2", want_2), ("1", want_1), ("3", {"k": "c"})]
    http("DELETE", "/srcpass_upd")


def test_document_text_cannot_pose_as_a_marker_or_a_scroll_id(http, corpus):
    """A source holding a marker-like string or a `_scroll_id` key comes back as sent and the
    response's own scroll id is the one that works."""
    http("DELETE", "/srcpass_fake")
    http.json("PUT", "/srcpass_fake", {"mappings": MAPPING})
    body, raw = http.json("POST", "/%s/_search" % INDEX, {"size": 1})
    fake = {"_scroll_id": "not-a-scroll", "k": "lode-source:%032x:0" % 0,
            "extra": {"m": '"lode-source:', "hits": {"hits": []}}}
    text = json.dumps(fake, separators=(",", ":")).encode()
    http.json("PUT", "/srcpass_fake/_doc/1?refresh=true", text)
    body, raw = http.json("POST", "/srcpass_fake/_search?scroll=1m",
                          {"size": 1, "query": {"term": {"k": fake["k"]}}})
    assert body["hits"]["hits"][0]["_source"] == fake and text in raw
    assert body["_scroll_id"] != "not-a-scroll"
    page, _ = http.json("POST", "/_search/scroll", {"scroll": "1m", "scroll_id": body["_scroll_id"]})
    assert page["hits"]["hits"] == []
    http("DELETE", "/_search/scroll", {"scroll_id": body["_scroll_id"]})
    http("DELETE", "/srcpass_fake")


def test_inner_hits_keep_the_tree_beside_a_spliced_parent(http):
    """A nested query's inner hits and collapse's inner hits: the top hit's `_source` is the
    stored bytes, the inner ones are trees (a nested object is a part of the parent's)."""
    name = "srcpass_nested"
    http("DELETE", "/" + name)
    http.json("PUT", "/" + name, {"mappings": {"dynamic": False, "properties": {
        "g": {"type": "keyword"},
        "users": {"type": "nested", "properties": {"name": {"type": "keyword"}}}}}})
    docs = {
        "1": {"g": "a", "users": [{"name": "x", "big": 2 ** 64}, {"name": "y", "s": "é\x00"}]},
        "2": {"g": "a", "users": [{"name": "x", "f": 1.0}], "top": 18446744073709551616},
        "3": {"g": "b", "users": []},
    }
    texts = {}
    for i, d in docs.items():
        texts[i] = json.dumps(d, indent=3, ensure_ascii=False).encode()
        http.json("PUT", "/%s/_doc/%s" % (name, i), texts[i])
    http.json("POST", "/%s/_refresh" % name)
    body, raw = http.json("POST", "/%s/_search" % name, {
        "query": {"nested": {"path": "users", "query": {"term": {"users.name": "x"}},
                             "inner_hits": {}}},
        "sort": [{"g": "asc"}, "_doc"]})
    hits = body["hits"]["hits"]
    assert {h["_id"] for h in hits} == {"1", "2"}
    for h in hits:
        assert h["_source"] == docs[h["_id"]] and texts[h["_id"]] in raw
        (inner,) = h["inner_hits"]["users"]["hits"]["hits"]
        assert inner["_nested"] == {"field": "users", "offset": 0}
        assert inner["_source"] == as_tree(docs[h["_id"]]["users"][0])
    body, raw = http.json("POST", "/%s/_search" % name, {
        "collapse": {"field": "g", "inner_hits": {"name": "all", "size": 5, "sort": ["_doc"]}},
        "sort": [{"g": "asc"}]})
    hits = body["hits"]["hits"]
    assert [h["fields"]["g"] for h in hits] == [["a"], ["b"]]
    for h in hits:
        assert h["_source"] == docs[h["_id"]] and texts[h["_id"]] in raw
        for inner in h["inner_hits"]["all"]["hits"]["hits"]:
            assert inner["_source"] == as_tree(docs[inner["_id"]])
    http("DELETE", "/" + name)
