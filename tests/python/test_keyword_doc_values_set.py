"""Keyword and ip doc values are a sorted SET per document (Lucene's `SORTED_SET`): a value
repeated within one document counts once in `value_count`, `terms`, `composite`,
`multi_terms`, `cardinality`, and `docvalue_fields` list it once, in byte order. Numeric doc
values are `SORTED_NUMERIC`: duplicates kept. This holds through normalizers (equal after
normalization is one value), `copy_to` (values copied from several fields into one), multi-
fields, nested documents (each its own document), a hostile document with 10,000 repeated
values, and after a force merge. A runtime keyword's values are not a set (ES's
`StringScriptDocValues` sorts them only). Expected answers are computed here from the
documents this file indexes."""

import ipaddress
import itertools
import random
from collections import Counter

import pytest

INDEX = "kw_doc_values_set"
COLORS = ["red", "green", "blue", "cyan", "\u00e9cru"]
CASED = ["Red", "red", "RED", "Blue", "blue"]
IPS = ["10.0.0.1", "::ffff:10.0.0.1", "10.0.0.2", "2001:db8::1", "192.168.1.7"]
MAPPING = {
    "properties": {
        "tag": {"type": "keyword", "copy_to": "all_tags"},
        "other": {"type": "keyword", "copy_to": "all_tags"},
        "all_tags": {"type": "keyword"},
        "lc": {"type": "keyword", "normalizer": "lowercase"},
        "title": {"type": "text", "fields": {"raw": {"type": "keyword"}}},
        "ip": {"type": "ip"},
        "n": {"type": "long"},
        "x": {"type": "double"},
        "items": {"type": "nested", "properties": {"k": {"type": "keyword"}}},
    }
}
HOSTILE = {"tag": [COLORS[i % 3] for i in range(10_000)],
           "n": [i % 4 for i in range(10_000)]}


def as_list(v):
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


def ip_key(s):
    """An address as ES stores it: 16 bytes, an IPv4 address as its IPv4-mapped form."""
    a = ipaddress.ip_address(s)
    if a.version == 4:
        a = ipaddress.IPv6Address("::ffff:" + s)
    return int(a)


def ip_render(s):
    a = ipaddress.ip_address(s)
    if a.version == 6 and a.ipv4_mapped:
        return str(a.ipv4_mapped)
    return str(a)


def keyword_set(doc, field):
    """The doc values of a keyword-like field in one (root) document, as a set."""
    if field == "all_tags":
        return set(as_list(doc.get("tag"))) | set(as_list(doc.get("other")))
    if field == "lc":
        return {v.lower() for v in as_list(doc.get("lc"))}
    if field == "title.raw":
        return set(as_list(doc.get("title")))
    if field == "ip":
        return {ip_render(v) for v in as_list(doc.get("ip"))}
    return set(as_list(doc.get(field)))


def sorted_values(field, values):
    if field == "ip":
        return sorted(values, key=ip_key)
    return sorted(values, key=lambda s: s.encode("utf-8"))


def generate(seed, n):
    rng = random.Random(seed)
    docs = {}
    for i in range(n):
        d = {}
        if rng.random() < 0.9:
            d["tag"] = [rng.choice(COLORS) for _ in range(rng.randint(1, 5))]
        if rng.random() < 0.5:
            d["other"] = rng.choice(COLORS)
        if rng.random() < 0.8:
            d["lc"] = [rng.choice(CASED) for _ in range(rng.randint(1, 4))]
        if rng.random() < 0.7:
            d["title"] = [rng.choice(["a b", "a b", "c"]) for _ in range(rng.randint(1, 3))]
        if rng.random() < 0.8:
            d["ip"] = [rng.choice(IPS) for _ in range(rng.randint(1, 4))]
        if rng.random() < 0.8:
            d["n"] = [rng.randint(0, 3) for _ in range(rng.randint(1, 4))]
        if rng.random() < 0.5:
            d["x"] = [rng.choice([0.5, 1.5]) for _ in range(rng.randint(1, 3))]
        if rng.random() < 0.6:
            d["items"] = [{"k": [rng.choice(COLORS[:3]) for _ in range(rng.randint(1, 3))]}
                          for _ in range(rng.randint(1, 3))]
        docs[str(i)] = d
    docs["hostile"] = HOSTILE
    return docs


DOCS = generate(1717, 150)
KEYWORDS = ["tag", "all_tags", "lc", "title.raw", "ip"]


def bulk(es, items, refresh):
    body = []
    for i, d in items:
        body.append({"index": {"_index": INDEX, "_id": i}})
        body.append(d)
    r = es.bulk(operations=body, refresh=refresh)
    assert not r["errors"], r


@pytest.fixture(scope="module")
def index(es):
    if es.indices.exists(index=INDEX):
        es.indices.delete(index=INDEX)
    es.indices.create(index=INDEX, mappings=MAPPING,
                      settings={"number_of_shards": 2, "number_of_replicas": 0})
    items = list(DOCS.items())
    # several refreshes: several segments per shard
    for start in range(0, len(items), 40):
        bulk(es, items[start:start + 40], True)
    yield INDEX
    es.indices.delete(index=INDEX)


def search(es, **body):
    return es.search(index=INDEX, size=0, **body)


def check_all(es):
    docs = DOCS.values()
    aggs = {}
    for f in KEYWORDS:
        aggs["vc_" + f] = {"value_count": {"field": f}}
        aggs["terms_" + f] = {"terms": {"field": f, "size": 100}}
        aggs["card_" + f] = {"cardinality": {"field": f}}
    for f in ["n", "x"]:
        aggs["vc_" + f] = {"value_count": {"field": f}}
    aggs["comp"] = {"composite": {"size": 1000, "sources": [
        {"t": {"terms": {"field": "tag"}}}, {"i": {"terms": {"field": "ip"}}}]}}
    aggs["mt"] = {"multi_terms": {"size": 1000, "terms": [{"field": "tag"}, {"field": "lc"}]}}
    aggs["nested"] = {"nested": {"path": "items"}, "aggs": {
        "vc": {"value_count": {"field": "items.k"}},
        "terms": {"terms": {"field": "items.k"}}}}
    r = search(es, aggs=aggs)["aggregations"]

    for f in KEYWORDS:
        sets = [keyword_set(d, f) for d in docs]
        assert r["vc_" + f]["value"] == sum(len(s) for s in sets), f
        counts = Counter(v for s in sets for v in s)
        got = {b["key"]: b["doc_count"] for b in r["terms_" + f]["buckets"]}
        assert got == dict(counts), f
        assert r["card_" + f]["value"] == len(counts), f
    assert r["vc_n"]["value"] == sum(len(as_list(d.get("n"))) for d in docs)
    assert r["vc_x"]["value"] == sum(len(as_list(d.get("x"))) for d in docs)

    comp = Counter()
    mt = Counter()
    for d in docs:
        for t, i in itertools.product(keyword_set(d, "tag"), keyword_set(d, "ip")):
            comp[(t, i)] += 1
        for t, c in itertools.product(keyword_set(d, "tag"), keyword_set(d, "lc")):
            mt[(t, c)] += 1
    assert {(b["key"]["t"], b["key"]["i"]): b["doc_count"]
            for b in r["comp"]["buckets"]} == dict(comp)
    assert {tuple(b["key"]): b["doc_count"] for b in r["mt"]["buckets"]} == dict(mt)

    nested_sets = [set(item["k"]) for d in docs for item in as_list(d.get("items"))]
    assert r["nested"]["doc_count"] == len(nested_sets)
    assert r["nested"]["vc"]["value"] == sum(len(s) for s in nested_sets)
    assert {b["key"]: b["doc_count"] for b in r["nested"]["terms"]["buckets"]} == \
        dict(Counter(v for s in nested_sets for v in s))

    hits = es.search(index=INDEX, size=len(DOCS), _source=False,
                     docvalue_fields=KEYWORDS + ["n"])["hits"]["hits"]
    assert len(hits) == len(DOCS)
    for h in hits:
        d = DOCS[h["_id"]]
        fields = h.get("fields", {})
        for f in KEYWORDS:
            expected = sorted_values(f, keyword_set(d, f))
            assert fields.get(f, []) == expected, (h["_id"], f)
        assert fields.get("n", []) == sorted(as_list(d.get("n"))), h["_id"]

    # `doc['tag']` is the set too
    for size in range(0, 4):
        r = es.count(index=INDEX, query={"script": {"script": {
            "source": "doc['tag'].size() == params.n", "params": {"n": size}}}})
        assert r["count"] == sum(1 for d in docs if len(keyword_set(d, "tag")) == size)


def test_keyword_and_ip_values_count_once_per_document(es, index):
    check_all(es)


def test_the_sets_survive_a_force_merge(es, index):
    es.indices.forcemerge(index=INDEX, max_num_segments=1)
    es.indices.refresh(index=INDEX)
    check_all(es)


def test_hostile_document_is_one_set(es, index):
    r = es.search(index=INDEX, size=0, query={"ids": {"values": ["hostile"]}}, aggs={
        "vc": {"value_count": {"field": "tag"}},
        "vn": {"value_count": {"field": "n"}},
        "t": {"terms": {"field": "tag"}}})["aggregations"]
    assert r["vc"]["value"] == len(set(HOSTILE["tag"]))
    assert r["vn"]["value"] == len(HOSTILE["n"])
    assert {b["key"]: b["doc_count"] for b in r["t"]["buckets"]} == \
        {v: 1 for v in set(HOSTILE["tag"])}


def test_a_keyword_term_scores_with_lucenes_average_length(es, index):
    """A keyword is indexed without frequencies: Lucene's `sumTotalTermFreq` is its
    `sumDocFreq` (each distinct value once per document), so `avgdl` is the mean number of
    distinct values, and a document's length is 1 (no norms)."""
    import math
    name = INDEX + "_bm25"
    if es.indices.exists(index=name):
        es.indices.delete(index=name)
    es.indices.create(index=name, mappings={"properties": {"k": {"type": "keyword"}}},
                      settings={"number_of_shards": 1})
    docs = [["a", "a", "a", "b"], ["a"], ["c", "c"], ["b"]]
    for i, k in enumerate(docs):
        es.index(index=name, id=str(i), document={"k": k})
    es.indices.refresh(index=name)
    try:
        hits = es.search(index=name, query={"term": {"k": "a"}})["hits"]["hits"]
        n = len(docs)
        df = sum(1 for k in docs if "a" in k)
        avgdl = sum(len(set(k)) for k in docs) / n
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        k1, b = 1.2, 0.75
        # Lucene quantizes the length 1 exactly; freq is 1 without frequencies
        expected = idf * (k1 + 1) / (1 + k1 * (1 - b + b * 1 / avgdl))
        assert len(hits) == 2
        for h in hits:
            assert h["_score"] == pytest.approx(expected, rel=1e-6)
    finally:
        es.indices.delete(index=name)


def test_a_runtime_keyword_keeps_its_repeated_values(es, index):
    """ES's `StringScriptDocValues` sorts a runtime keyword's emitted values but keeps them
    all: `doc[...]` and `value_count` see each, while `terms` counts a document once per
    key (its collector skips a value equal to the previous one)."""
    rt = {"r": {"type": "keyword", "script": {
        "source": "emit('b'); emit('a'); emit('b')"}}}
    r = es.search(index=INDEX, size=0, runtime_mappings=rt, query={"ids": {"values": ["0"]}},
                  aggs={"t": {"terms": {"field": "r"}},
                        "vc": {"value_count": {"field": "r"}}})["aggregations"]
    assert r["vc"]["value"] == 3
    assert {b["key"]: b["doc_count"] for b in r["t"]["buckets"]} == {"a": 1, "b": 1}
    hits = es.search(index=INDEX, runtime_mappings=rt, query={"ids": {"values": ["0"]}},
                     script_fields={"s": {"script": {"source": "doc['r'].size()"}}},
                     _source=False)["hits"]["hits"]
    assert hits[0]["fields"]["s"] == [3]
