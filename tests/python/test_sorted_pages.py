"""Pages sorted on numeric, date and keyword fields, checked against a Python oracle on an index large
enough for the engine to walk the sort field's points index instead of scanning (segments of
20,000 documents), with deleted and updated documents, ties, multi-valued and missing values.

Ties may be broken differently by any engine (by internal document order), so a page is
checked by its sort values, and each hit by its own source holding the value it claims.
"""

import random

import pytest

import oracle

INDEX = "sortedpages"
DAY = 86_400_000
T0 = 1_600_000_000_000
SEGMENT_DOCS = 20_000


def _doc(i, rng):
    doc = {
        "status": rng.randrange(4),
        "ts": T0 + rng.randrange(0, 400 * DAY),
        "n": rng.randrange(-1000, 1000),
        "f": rng.randrange(0, 100_000) / 7.0,
        # A keyword class most documents share (the tie walk under a keyword lead).
        "cls": rng.choice(["dog", "dog", "dog", "cat", "cat", "emu"]) if i % 11 else "yak",
        # A type a `should` of a few terms selects a share of (the bench's balance types).
        "bt": f"t{rng.randrange(12)}",
    }
    if i % 29 == 0:
        doc["n"] = [doc["n"], rng.randrange(-1000, 1000)]
    if i % 31 == 0:
        del doc["ts"]
    if i % 37 == 0:
        del doc["f"]
    if i % 19 != 0:
        doc["k"] = _word(rng)
        if i % 23 == 0:
            doc["k"] = [doc["k"], _word(rng)]
    return doc


def _word(rng):
    """A keyword of 1-6 letters, some CJK: many distinct values, some shared."""
    letters = "abcdefghij中文字"
    return "".join(rng.choice(letters) for _ in range(rng.randrange(1, 7)))


@pytest.fixture(scope="module")
def corpus(es):
    """Three segments, then 2,000 deletes and 1,000 updates across them; {id: source}."""
    rng = random.Random(4242)
    es.options(ignore_status=404).indices.delete(index=INDEX)
    es.indices.create(index=INDEX, body={
        "settings": {"number_of_shards": 1, "refresh_interval": -1},
        "mappings": {"properties": {
            "status": {"type": "integer"},
            "ts": {"type": "date", "format": "epoch_millis"},
            "n": {"type": "long"},
            "f": {"type": "double"},
            "k": {"type": "keyword"},
            "cls": {"type": "keyword"},
            "bt": {"type": "keyword"},
        }},
    })
    docs = {}
    for segment in range(3):
        ops = []
        for i in range(segment * SEGMENT_DOCS, (segment + 1) * SEGMENT_DOCS):
            doc = _doc(i, rng)
            docs[str(i)] = doc
            ops.append({"index": {"_index": INDEX, "_id": str(i)}})
            ops.append(doc)
        for start in range(0, len(ops), 10_000):
            assert not es.bulk(operations=ops[start:start + 10_000])["errors"]
        es.indices.refresh(index=INDEX)
    oracle.delete_and_update(es, INDEX, docs, rng, 2000, 1000,
                             lambda i: _doc(int(i) + 3, rng))
    yield docs
    es.indices.delete(index=INDEX)


def _sort_value(doc, field, desc):
    """ES's sort value: the maximum descending, the minimum ascending; None when missing."""
    vs = oracle.values(doc, field)
    if not vs:
        return None
    return max(vs) if desc else min(vs)


def _oracle(docs, match, sort):
    """Sort-value rows of the matching documents, in ES order (missing values last)."""
    rows = []
    for d in docs.values():
        if match(d):
            rows.append(tuple(_sort_value(d, f, desc) for f, desc in sort))

    # Stable sorts from the last key to the first; missing values last in either order.
    for i in reversed(range(len(sort))):
        desc = sort[i][1]
        present = [r for r in rows if r[i] is not None]
        present.sort(key=lambda r: r[i], reverse=desc)
        rows = present + [r for r in rows if r[i] is None]
    return rows


QUERIES = {
    "all": (None, lambda d: True),
    "status": ({"bool": {"filter": [{"term": {"status": 0}}]}}, lambda d: d["status"] == 0),
    "status-before": (
        {"bool": {"filter": [{"term": {"status": 1}}, {"range": {"ts": {"lt": T0 + 150 * DAY}}}]}},
        lambda d: d["status"] == 1 and any(v < T0 + 150 * DAY for v in oracle.values(d, "ts")),
    ),
    "window": (
        {"range": {"ts": {"gte": T0 + 200 * DAY, "lte": T0 + 230 * DAY}}},
        lambda d: any(T0 + 200 * DAY <= v <= T0 + 230 * DAY for v in oracle.values(d, "ts")),
    ),
    "n-range": (
        {"bool": {"filter": [{"range": {"n": {"gt": -100, "lt": 300}}}, {"term": {"status": 2}}]}},
        lambda d: d["status"] == 2 and any(-100 < v < 300 for v in oracle.values(d, "n")),
    ),
    "f-range": (
        {"range": {"f": {"gte": 1000.5, "lt": 9000}}},
        lambda d: any(1000.5 <= v < 9000 for v in oracle.values(d, "f")),
    ),
}

SORTS = [
    [("ts", True)],
    [("ts", False)],
    [("n", False)],
    [("n", True)],
    [("f", True)],
    [("f", False)],
    [("n", True), ("ts", False)],
    [("k", False)],
    [("k", True)],
    [("k", False), ("n", True)],
    # A lead a quarter of the documents share: the next key is walked among them.
    [("status", False), ("ts", True)],
    [("status", True), ("k", False)],
    [("status", False), ("n", True), ("f", False)],
    # A keyword lead most documents share.
    [("cls", False), ("ts", True)],
    [("cls", True), ("k", False)],
    [("cls", False), ("n", True), ("f", False)],
]


def _render(row, sort):
    """The oracle row as ES renders `sort` values (missing: Long.MAX/MIN or ±Infinity)."""
    out = []
    for v, (f, desc) in zip(row, sort):
        if v is None:
            if f == "k":
                out.append(None)
            elif f == "f":
                out.append("-Infinity" if desc else "Infinity")
            else:
                out.append(-(2 ** 63) if desc else 2 ** 63 - 1)
        else:
            out.append(v)
    return out


def _check_hits(hits, corpus, sort):
    ids = [h["_id"] for h in hits]
    assert len(ids) == len(set(ids))
    for h in hits:
        own = _render([_sort_value(corpus[h["_id"]], f, desc) for f, desc in sort], sort)
        assert h["sort"] == own, h["_id"]


@pytest.mark.parametrize("name", sorted(QUERIES))
@pytest.mark.parametrize("sort", SORTS, ids=lambda s: ",".join(f + (":desc" if d else ":asc") for f, d in s))
@pytest.mark.parametrize("page_from", [0, 90, 990, 9990])
def test_sorted_page(es, corpus, name, sort, page_from):
    query, match = QUERIES[name]
    body = {"from": page_from, "size": 10, "_source": False,
            "sort": [{f: {"order": "desc" if d else "asc"}} for f, d in sort]}
    if query is not None:
        body["query"] = query
    res = es.search(index=INDEX, body=body, request_cache=False).body
    rows = _oracle(corpus, match, sort)
    expected = [_render(r, sort) for r in rows[page_from:page_from + 10]]
    assert [h["sort"] for h in res["hits"]["hits"]] == expected
    _check_hits(res["hits"]["hits"], corpus, sort)
    total = res["hits"]["total"]
    if len(rows) > 10_000:
        assert total == {"value": 10_000, "relation": "gte"}
    else:
        assert total == {"value": len(rows), "relation": "eq"}


@pytest.mark.parametrize("sort", SORTS[:5] + SORTS[7:9] + SORTS[10:],
                         ids=lambda s: ",".join(f + (":desc" if d else ":asc") for f, d in s))
def test_search_after_walks_every_page(es, corpus, sort):
    """Paging with search_after through the first 3,000 hits gives the oracle's rows in order."""
    query, match = QUERIES["status"]
    rows = _oracle(corpus, match, sort)
    body = {"size": 500, "_source": False, "query": query, "track_total_hits": False,
            "sort": [{f: {"order": "desc" if d else "asc"}} for f, d in sort] + [{"_doc": "asc"}]}
    got = []
    seen = set()
    for _ in range(6):
        res = es.search(index=INDEX, body=body, request_cache=False).body
        hits = res["hits"]["hits"]
        for h in hits:
            assert h["_id"] not in seen
            seen.add(h["_id"])
            got.append(h["sort"][:-1])
        body["search_after"] = hits[-1]["sort"]
    assert got == [_render(r, sort) for r in rows[:3000]]


def test_exact_total_with_a_sort(es, corpus):
    query, match = QUERIES["status"]
    res = es.search(index=INDEX, body={"size": 3, "query": query, "track_total_hits": True,
                                       "sort": [{"ts": "desc"}]}, request_cache=False).body
    assert res["hits"]["total"] == {"value": sum(1 for d in corpus.values() if match(d)),
                                    "relation": "eq"}


@pytest.mark.parametrize("desc", [False, True], ids=["asc", "desc"])
@pytest.mark.parametrize("name", ["all", "status"])
@pytest.mark.parametrize("where", ["held", "between"])
def test_search_after_a_keyword_alone(es, corpus, desc, name, where):
    """`search_after` a keyword with no tie-breaker: the hits whose term sorts strictly after
    it (a term some documents hold, or one between two held terms), deep in the order."""
    query, match = QUERIES[name]
    rows = _oracle(corpus, match, [("k", desc)])
    after = rows[2_500][0]
    if where == "between":
        after += "0"  # below every letter: between `after` and the terms it prefixes
    past = [r for r in rows if r[0] is None or (r[0] < after if desc else r[0] > after)]
    body = {"size": 1_000, "_source": False, "track_total_hits": False,
            "sort": [{"k": {"order": "desc" if desc else "asc"}}], "search_after": [after]}
    if query is not None:
        body["query"] = query
    hits = es.search(index=INDEX, body=body, request_cache=False).body["hits"]["hits"]
    assert [h["sort"] for h in hits] == [_render(r, [("k", desc)]) for r in past[:1_000]]
    _check_hits(hits, corpus, [("k", desc)])


def _sorts_after(row, after, sort):
    """Whether `row` sorts strictly after `after` (missing values last in either order)."""
    for v, a, (_, desc) in zip(row, after, sort):
        if v == a:
            continue
        if v is None or a is None:
            return v is None
        return v < a if desc else v > a
    return False


@pytest.mark.parametrize("desc", [False, True], ids=["asc", "desc"])
@pytest.mark.parametrize("name", ["all", "status", "window"])
@pytest.mark.parametrize("where", ["held", "between"])
def test_search_after_a_shared_keyword_lead(es, corpus, desc, name, where):
    """`search_after` under a keyword lead most documents share, then a date: continues within
    the lead's term (held), or from the next term (a term between two held ones)."""
    sort = [("cls", desc), ("ts", True)]
    query, match = QUERIES[name]
    rows = _oracle(corpus, match, sort)
    after = list(rows[len(rows) // 3])
    if where == "between":
        after[0] += "0"  # between `after` and the next term up
    past = [r for r in rows if _sorts_after(r, after, sort)]
    body = {"size": 300, "_source": False, "track_total_hits": False,
            "sort": [{f: {"order": "desc" if d else "asc"}} for f, d in sort],
            "search_after": _render(tuple(after), sort)}
    if query is not None:
        body["query"] = query
    hits = es.search(index=INDEX, body=body, request_cache=False).body["hits"]["hits"]
    assert [h["sort"] for h in hits] == [_render(r, sort) for r in past[:300]]
    _check_hits(hits, corpus, sort)


SELECTIVE_SORTS = [
    [("cls", False), ("ts", True)],
    [("cls", True), ("n", False)],
    [("cls", False), ("n", True)],
    [("cls", True), ("f", True)],
    [("cls", False), ("f", False)],
    [("status", True), ("ts", False)],
]


def _should(types):
    query = {"bool": {"should": [{"term": {"bt": t}} for t in types], "minimum_should_match": 1}}
    return query, lambda d: d["bt"] in types


@pytest.mark.parametrize("sort", SELECTIVE_SORTS,
                         ids=lambda s: ",".join(f + (":desc" if d else ":asc") for f, d in s))
@pytest.mark.parametrize("types", [("t1", "t7"), ("t3", "t5", "t11")], ids=["two", "three"])
@pytest.mark.parametrize("page_from", [0, 10, 990, 5000, 9990])
def test_selective_should_under_a_shared_lead(es, corpus, sort, types, page_from):
    """A `should` of a few types (a sixth or a quarter of the documents) under a keyword or
    numeric lead many documents share, then a number or date (multi-valued `n`, `ts` and `f`
    missing from some): deep pages take every lead value up to the page's, the last of them
    ordered on the next key."""
    query, match = _should(types)
    size = min(50, 10_000 - page_from)
    body = {"from": page_from, "size": size, "_source": False, "query": query,
            "sort": [{f: {"order": "desc" if d else "asc"}} for f, d in sort]}
    res = es.search(index=INDEX, body=body, request_cache=False).body
    rows = _oracle(corpus, match, sort)
    assert [h["sort"] for h in res["hits"]["hits"]] == [
        _render(r, sort) for r in rows[page_from:page_from + size]]
    _check_hits(res["hits"]["hits"], corpus, sort)


@pytest.mark.parametrize("sort", SELECTIVE_SORTS[:4],
                         ids=lambda s: ",".join(f + (":desc" if d else ":asc") for f, d in s))
@pytest.mark.parametrize("at", [700, 6000])
def test_search_after_a_selective_should(es, corpus, sort, at):
    """`search_after` a deep row of a selective `should`: continues within its lead value on
    the next key (rows equal to it on both keys are skipped, as ES does)."""
    query, match = _should(("t2", "t9"))
    rows = _oracle(corpus, match, sort)
    after = rows[at]
    past = [r for r in rows if _sorts_after(r, after, sort)]
    body = {"size": 1_000, "_source": False, "query": query, "track_total_hits": False,
            "sort": [{f: {"order": "desc" if d else "asc"}} for f, d in sort],
            "search_after": _render(tuple(after), sort)}
    hits = es.search(index=INDEX, body=body, request_cache=False).body["hits"]["hits"]
    assert [h["sort"] for h in hits] == [_render(r, sort) for r in past[:1_000]]
    _check_hits(hits, corpus, sort)


def test_a_selective_should_with_a_missing_tie_break_first(es, corpus):
    """`missing: _first` on the tie-break: documents without `ts` lead each lead value."""
    query, match = _should(("t4", "t6"))
    sort = [{"cls": "asc"}, {"ts": {"order": "desc", "missing": "_first"}}]
    res = es.search(index=INDEX, body={"from": 990, "size": 100, "_source": False,
                                       "query": query, "sort": sort},
                    request_cache=False).body
    rows = []
    for d in corpus.values():
        if match(d):
            ts = _sort_value(d, "ts", True)
            rows.append((d["cls"], ts is not None, -(ts or 0)))
    rows.sort()
    expected = [[c, -t if present else 2 ** 63 - 1] for c, present, t in rows[990:1090]]
    assert [h["sort"] for h in res["hits"]["hits"]] == expected
