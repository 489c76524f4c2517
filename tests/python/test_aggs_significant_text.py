"""`significant_text`, against terms scored here in Python from the documents this file
indexes: the text is lowercase words separated by spaces, so the `standard` analyzer's
terms are the words. The foreground is every matching document (each term counted once per
document), the background every document (or those matching `background_filter`); the
score is Elasticsearch's JLH: (fg/fg_size - bg/bg_size) * ((fg/fg_size) / (bg/bg_size)),
buckets with a positive score and at least `min_doc_count` documents, by score then key."""

import random
import re

import pytest
from elasticsearch import BadRequestError

from conftest import make_index

INDEX = "sigtext"
WORDS = ["apple", "banana", "cherry", "date", "elder", "fig", "grape", "honey", "iris",
         "jade", "kiwi", "lime", "mango", "nectar", "olive", "peach"]
TOPIC = {"fruit": ["apple", "banana", "cherry", "mango"], "gem": ["jade", "iris", "olive"],
         "misc": []}


def _docs():
    rnd = random.Random(5)
    docs = []
    for i in range(160):
        cat = rnd.choice(["fruit", "gem", "misc", "misc"])
        words = [rnd.choice(WORDS) for _ in range(rnd.randrange(3, 9))]
        words += [rnd.choice(TOPIC[cat]) for _ in range(2)] if TOPIC[cat] else []
        body = " ".join(words)
        doc = {"cat": cat, "n": i, "body": body}
        if i % 7 == 0:
            doc["body"] = [body, rnd.choice(WORDS) + " " + rnd.choice(WORDS)]
        docs.append(doc)
    return docs


DOCS = _docs()


def terms_of(doc):
    bodies = doc.get("body", [])
    bodies = bodies if isinstance(bodies, list) else [bodies]
    return {w for b in bodies for w in b.split()}


def expected(fg, bg, size=10, min_doc_count=3, include=None, exclude=None):
    fg_counts, bg_counts = {}, {}
    for d in fg:
        for t in terms_of(d):
            fg_counts[t] = fg_counts.get(t, 0) + 1
    for d in bg:
        for t in terms_of(d):
            bg_counts[t] = bg_counts.get(t, 0) + 1
    out = []
    for t, n in fg_counts.items():
        if n < min_doc_count:
            continue
        if include is not None and not re.fullmatch(include, t):
            continue
        if exclude is not None and t in exclude:
            continue
        # ES's JLHScore counts a term missing from the background once.
        b = bg_counts.get(t, 0)
        if not fg or not bg:
            continue
        sub, sup = n / len(fg), max(b, 1) / len(bg)
        if sub - sup <= 0:
            continue
        out.append((-(sub - sup) * (sub / sup), t, n, b))
    out.sort()
    return [{"key": t, "doc_count": n, "bg_count": b, "score": -s}
            for s, t, n, b in out[:size]]


def check(got, fg, bg, **kw):
    assert got["doc_count"] == len(fg)
    assert got["bg_count"] == len(bg)
    want = expected(fg, bg, **kw)
    assert [b["key"] for b in got["buckets"]] == [w["key"] for w in want]
    for g, w in zip(got["buckets"], want):
        assert g["doc_count"] == w["doc_count"]
        assert g["bg_count"] == w["bg_count"]
        assert g["score"] == pytest.approx(w["score"], rel=1e-9)


@pytest.fixture(scope="module", params=[1, 3], ids=["one_shard", "three_shards"])
def sigtext(es, request):
    body = {"settings": {"number_of_shards": request.param}, "mappings": {"properties": {
        "cat": {"type": "keyword"}, "n": {"type": "integer"}, "body": {"type": "text"}}}}
    return make_index(es, INDEX, body, [(str(i), d) for i, d in enumerate(DOCS)])


def agg(es, spec, query=None, **kw):
    r = es.search(index=INDEX, size=0, query=query or {"match_all": {}},
                  aggs={"s": {"significant_text": spec}}, **kw)
    return r


@pytest.mark.parametrize("cat", ["fruit", "gem"])
def test_foreground_against_every_document(es, sigtext, cat):
    r = agg(es, {"field": "body"}, query={"term": {"cat": cat}})
    fg = [d for d in DOCS if d["cat"] == cat]
    check(r["aggregations"]["s"], fg, DOCS)


def test_size_min_doc_count_include_exclude(es, sigtext):
    fg = [d for d in DOCS if d["cat"] == "fruit"]
    r = agg(es, {"field": "body", "size": 2, "min_doc_count": 1},
            query={"term": {"cat": "fruit"}})
    check(r["aggregations"]["s"], fg, DOCS, size=2, min_doc_count=1)
    r = agg(es, {"field": "body", "include": "[a-c].*", "exclude": ["banana"]},
            query={"term": {"cat": "fruit"}})
    check(r["aggregations"]["s"], fg, DOCS, include="[a-c].*", exclude=["banana"])


def test_background_filter(es, sigtext):
    fg = [d for d in DOCS if d["cat"] == "gem"]
    bg = [d for d in DOCS if d["n"] < 100]
    r = agg(es, {"field": "body", "background_filter": {"range": {"n": {"lt": 100}}}},
            query={"term": {"cat": "gem"}})
    check(r["aggregations"]["s"], fg, bg)


def test_under_a_terms_bucket_and_typed_keys(es, sigtext):
    r = es.search(index=INDEX, size=0, typed_keys=True, aggs={
        "c": {"terms": {"field": "cat"}, "aggs": {
            "s": {"significant_text": {"field": "body", "min_doc_count": 2}}}}})
    buckets = r["aggregations"]["sterms#c"]["buckets"]
    assert {b["key"] for b in buckets} == {"fruit", "gem", "misc"}
    for b in buckets:
        fg = [d for d in DOCS if d["cat"] == b["key"]]
        check(b["sigsterms#s"], fg, DOCS, min_doc_count=2)


def test_sub_aggregations_see_the_documents_holding_the_term(es, sigtext):
    r = agg(es, {"field": "body", "min_doc_count": 2}, query={"term": {"cat": "gem"}})
    got = r["aggregations"]["s"]
    r2 = es.search(index=INDEX, size=0, query={"term": {"cat": "gem"}}, aggs={
        "s": {"significant_text": {"field": "body", "min_doc_count": 2},
              "aggs": {"top": {"max": {"field": "n"}}, "c": {"value_count": {"field": "n"}},
                       "h": {"top_hits": {"size": 1, "sort": [{"n": "asc"}],
                                          "_source": False}}}}})
    fg = [d for d in DOCS if d["cat"] == "gem"]
    check(r2["aggregations"]["s"], fg, DOCS, min_doc_count=2)
    assert [b["key"] for b in r2["aggregations"]["s"]["buckets"]] == \
        [b["key"] for b in got["buckets"]]
    for b in r2["aggregations"]["s"]["buckets"]:
        holding = [d for d in fg if b["key"] in terms_of(d)]
        assert b["top"]["value"] == max(d["n"] for d in holding)
        assert b["c"]["value"] == len(holding)
        assert b["h"]["hits"]["hits"][0]["_id"] == str(min(d["n"] for d in holding))


def test_no_match(es, sigtext):
    r = agg(es, {"field": "body"}, query={"term": {"cat": "nothing"}})
    assert r["aggregations"]["s"] == {"doc_count": 0, "bg_count": len(DOCS), "buckets": []}


def test_refusals(es, sigtext):
    def refused(spec, **kw):
        with pytest.raises(BadRequestError) as e:
            es.search(index=INDEX, size=0, aggs={"s": {"significant_text": spec, **kw}})
        assert e.value.status_code == 400
        return str(e.value.body["error"])

    assert "not supported" in refused({"field": "cat"})
    refused({"field": "body", "chi_square": {"bogus": 1}})
    refused({"field": "body", "source_fields": [1]})
    refused({"field": "body", "bogus": 1})
    refused({"field": "body", "filter_duplicate_text": True},
            aggs={"m": {"max": {"field": "n"}}})
    refused({"field": "body", "source_fields": ["body"]},
            aggs={"m": {"max": {"field": "n"}}})
    # filter_duplicate_text: false is ES's default behaviour.
    r = agg(es, {"field": "body", "filter_duplicate_text": False})
    assert r["aggregations"]["s"]["doc_count"] == len(DOCS)


# --- filter_duplicate_text: ES's DeDuplicatingTokenFilter, written from its description -

M64 = (1 << 64) - 1


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def _fmix(k):
    k ^= k >> 33
    k = (k * 0xff51afd7ed558ccd) & M64
    k ^= k >> 33
    k = (k * 0xc4ceb9fe1a85ec53) & M64
    return k ^ (k >> 33)


def murmur3_h1(data):
    """MurmurHash3 x64 128, seed 0: the first 64 bits."""
    c1, c2 = 0x87c37b91114253d5, 0x4cf5ad432745937f
    h1 = h2 = 0
    n = len(data) // 16
    for i in range(n):
        k1 = int.from_bytes(data[16 * i:16 * i + 8], "little")
        k2 = int.from_bytes(data[16 * i + 8:16 * i + 16], "little")
        h1 ^= (_rotl((k1 * c1) & M64, 31) * c2) & M64
        h1 = (((_rotl(h1, 27) + h2) & M64) * 5 + 0x52dce729) & M64
        h2 ^= (_rotl((k2 * c2) & M64, 33) * c1) & M64
        h2 = (((_rotl(h2, 31) + h1) & M64) * 5 + 0x38495ab5) & M64
    tail = data[16 * n:]
    if len(tail) > 8:
        k2 = int.from_bytes(tail[8:], "little")
        h2 ^= (_rotl((k2 * c2) & M64, 33) * c1) & M64
    if tail:
        k1 = int.from_bytes(tail[:8], "little")
        h1 ^= (_rotl((k1 * c1) & M64, 31) * c2) & M64
    h1 ^= len(data)
    h2 ^= len(data)
    h1 = (h1 + h2) & M64
    h2 = (h2 + h1) & M64
    return (_fmix(h1) + _fmix(h2)) & M64


class Spotter:
    """How often each sequence of 6 token bytes was seen before (up to 255)."""

    def __init__(self):
        self.seen, self.window = {}, []

    def new_sequence(self):
        self.window = []

    def add(self, b):
        self.window = (self.window + [b])[-6:]
        if len(self.window) < 6:
            return 0
        key = tuple(self.window)
        prior = self.seen.get(key, 0)
        self.seen[key] = min(prior + 1, 255)
        return prior


def dedup(tokens, spotter):
    """Drop the tokens of any 6-token run whose byte sequence was seen before."""
    dup = [False] * len(tokens)
    for i, t in enumerate(tokens):
        if spotter.add(murmur3_h1(t.encode()) & 0xFF) >= 1:
            for j in range(max(0, i - 5), i + 1):
                dup[j] = True
    return [t for t, d in zip(tokens, dup) if not d]


def test_murmur3_reference_value():
    assert murmur3_h1(b"hello") == 0xcbd8a7b341bd9b02


def test_filter_duplicate_text(es):
    rnd = random.Random(9)
    boiler = "this message and any attachment is strictly confidential".split()
    docs = []
    for i in range(60):
        cat = rnd.choice(["a", "b"])
        words = [rnd.choice(WORDS) for _ in range(rnd.randrange(2, 6))]
        if cat == "a" or i % 5 == 0:
            words += boiler
        words += [rnd.choice(WORDS) for _ in range(2)]
        docs.append({"cat": cat, "body": " ".join(words)})
    make_index(es, "sigtext_dup", {"settings": {"number_of_shards": 1}, "mappings": {
        "properties": {"cat": {"type": "keyword"}, "body": {"type": "text"}}}},
        [(str(i), d) for i, d in enumerate(docs)])
    r = es.search(index="sigtext_dup", size=0, query={"term": {"cat": "a"}}, aggs={
        "s": {"significant_text": {"field": "body", "filter_duplicate_text": True,
                                   "min_doc_count": 1, "size": 50}}})
    fg = [d for d in docs if d["cat"] == "a"]
    spotter = Spotter()
    seen = []
    for d in fg:  # one shard, one bulk: collection order is indexing order
        seen.append({"body": " ".join(dedup(d["body"].split(), spotter))})
        spotter.new_sequence()
    want = expected(seen, docs, size=50, min_doc_count=1)
    got = r["aggregations"]["s"]
    assert got["doc_count"] == len(fg)
    assert [(b["key"], b["doc_count"], b["bg_count"]) for b in got["buckets"]] == \
        [(w["key"], w["doc_count"], w["bg_count"]) for w in want]
    # The boilerplate is counted in its first document only.
    assert not any(b["key"] == "confidential" and b["doc_count"] > 1 for b in got["buckets"])


def test_source_fields(es):
    rnd = random.Random(4)
    docs = []
    for i in range(80):
        cat = rnd.choice(["x", "y"])
        title = " ".join(rnd.choice(WORDS[:8]) for _ in range(3))
        notes = [" ".join(rnd.choice(WORDS[8:]) for _ in range(2)) for _ in range(2)]
        if cat == "x":
            notes.append("kiwi lime")
        # "body" (whose index is the background) holds the same text, and "peach" in the
        # foreground documents, which the source fields do not hold.
        body = " ".join([title] + notes + (["peach peach"] if cat == "x" else []))
        docs.append({"cat": cat, "body": body, "title": title, "extra": {"notes": notes}})
    make_index(es, "sigtext_src", {"settings": {"number_of_shards": 2}, "mappings": {
        "properties": {"cat": {"type": "keyword"}, "body": {"type": "text"},
                       "title": {"type": "text"},
                       "extra": {"properties": {"notes": {"type": "text"}}}}}},
        [(str(i), d) for i, d in enumerate(docs)])
    r = es.search(index="sigtext_src", size=0, query={"term": {"cat": "x"}}, aggs={
        "s": {"significant_text": {"field": "body", "min_doc_count": 1,
                                   "source_fields": ["title", "extra.notes"]}}})
    fg = [{"body": " ".join([d["title"]] + d["extra"]["notes"])}
          for d in docs if d["cat"] == "x"]
    check(r["aggregations"]["s"], fg, docs, min_doc_count=1)
    assert "kiwi" in [b["key"] for b in r["aggregations"]["s"]["buckets"]]
    assert "peach" not in [b["key"] for b in r["aggregations"]["s"]["buckets"]]
