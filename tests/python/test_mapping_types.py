"""Field types and mapping features: `token_count`, `ignore_malformed` with the `_ignored`
metadata field, `coerce`, and the range types (`integer_range`, `long_range`,
`double_range`, `date_range`, `ip_range`). Every expected answer is computed here, in
Python, from the documents the test indexes."""

import datetime
import ipaddress
import random

import pytest
from elasticsearch import BadRequestError

WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"]


def ids_of(resp):
    return sorted(h["_id"] for h in resp["hits"]["hits"])


@pytest.fixture
def index(es):
    names = []

    def make(name, body):
        es.indices.delete(index=name, ignore_unavailable=True)
        es.indices.create(index=name, body=body)
        names.append(name)
        return name

    yield make
    for n in names:
        es.indices.delete(index=n, ignore_unavailable=True)


# ---------------------------------------------------------------- token_count


def test_token_count_term_range_aggs_sort_and_fields(es, index):
    name = index(
        "mt-token-count",
        {
            "settings": {"number_of_shards": 2},
            "mappings": {
                "properties": {
                    "title": {
                        "type": "text",
                        "fields": {"n": {"type": "token_count", "analyzer": "standard"}},
                    },
                    "nv": {"type": "token_count", "analyzer": "standard", "null_value": 42},
                    "nodv": {"type": "token_count", "analyzer": "standard", "doc_values": False},
                }
            },
        },
    )
    rng = random.Random(11)
    counts = {}
    for i in range(60):
        n = rng.randint(0, 9)
        title = " ".join(rng.choice(WORDS) for _ in range(n))
        es.index(index=name, id=str(i), body={"title": title, "nv": None, "nodv": title})
        counts[str(i)] = n
    es.indices.refresh(index=name)

    for v in (0, 3, 9):
        r = es.search(index=name, body={"query": {"term": {"title.n": v}}, "size": 100})
        assert ids_of(r) == sorted(k for k, n in counts.items() if n == v)
        r = es.search(index=name, body={"query": {"term": {"nodv": v}}, "size": 100})
        assert ids_of(r) == sorted(k for k, n in counts.items() if n == v)
    r = es.search(index=name, body={"query": {"range": {"title.n": {"gt": 2, "lte": 6}}}, "size": 100})
    assert ids_of(r) == sorted(k for k, n in counts.items() if 2 < n <= 6)

    r = es.search(
        index=name,
        body={"size": 0, "aggs": {"c": {"terms": {"field": "title.n", "size": 20}}, "s": {"sum": {"field": "title.n"}}}},
    )
    expected = {}
    for n in counts.values():
        expected[n] = expected.get(n, 0) + 1
    got = {b["key"]: b["doc_count"] for b in r["aggregations"]["c"]["buckets"]}
    assert got == expected
    assert r["aggregations"]["s"]["value"] == sum(counts.values())

    r = es.search(
        index=name,
        body={
            "sort": [{"title.n": "desc"}],
            "size": 100,
            "fields": ["title.n", "nv", "nodv"],
            "_source": False,
        },
    )
    sorted_counts = [h["sort"][0] for h in r["hits"]["hits"]]
    assert sorted_counts == sorted(counts.values(), reverse=True)
    for h in r["hits"]["hits"]:
        assert h["fields"]["title.n"] == [counts[h["_id"]]]
        # null indexes null_value; a field without doc values returns nothing.
        assert h["fields"]["nv"] == [42]
        assert "nodv" not in h["fields"]


def test_token_count_requires_an_analyzer(es):
    with pytest.raises(BadRequestError) as e:
        es.indices.create(index="mt-tc-bad", body={"mappings": {"properties": {"c": {"type": "token_count"}}}})
    assert e.value.body["error"]["type"] == "mapper_parsing_exception"
    assert "Analyzer must be set for field [c]" in e.value.body["error"]["reason"]


# ---------------------------------------------------------- ignore_malformed


def test_ignore_malformed_and_ignored_field(es, index):
    name = index(
        "mt-malformed",
        {
            "settings": {"number_of_shards": 1, "index.mapping.ignore_malformed": True},
            "mappings": {
                "properties": {
                    "k": {"type": "keyword", "ignore_above": 5},
                    "i": {"type": "integer"},
                    "d": {"type": "date"},
                    "b": {"type": "boolean"},
                    "strict": {"type": "long", "ignore_malformed": False},
                }
            },
        },
    )
    rng = random.Random(5)
    docs = {}
    ignored = {}
    for n in range(40):
        src, ign = {}, set()
        if rng.random() < 0.5:
            src["i"] = rng.randint(0, 100)
        else:
            src["i"] = rng.choice(["x", "not a number", {"a": 1}])
            ign.add("i")
        if rng.random() < 0.5:
            src["d"] = "2021-03-0%d" % rng.randint(1, 9)
        else:
            src["d"] = "yesterday-ish"
            ign.add("d")
        word = rng.choice(["ab", "abcdefgh"])
        src["k"] = word
        if len(word) > 5:
            ign.add("k")
        if rng.random() < 0.2:
            src["b"] = "maybe"
            ign.add("b")
        docs[str(n)] = src
        ignored[str(n)] = sorted(ign)
        es.index(index=name, id=str(n), body=src)
    es.indices.refresh(index=name)

    # A field that sets ignore_malformed: false still refuses.
    with pytest.raises(BadRequestError) as e:
        es.index(index=name, id="bad", body={"strict": "nope"})
    assert e.value.body["error"]["type"] == "document_parsing_exception"

    r = es.search(index=name, body={"size": 100, "fields": ["i", "d", "k"], "_source": False})
    assert r["hits"]["total"]["value"] == len(docs)
    for h in r["hits"]["hits"]:
        want = ignored[h["_id"]]
        assert h.get("_ignored", []) == want
        fields = h.get("fields", {})
        src = docs[h["_id"]]
        if "i" in want:
            assert "i" not in fields
        else:
            assert fields["i"] == [src["i"]]
        if "d" in want:
            assert "d" not in fields
        if "k" in want:
            assert "k" not in fields
        else:
            assert fields["k"] == [src["k"]]

    for f in ("i", "d", "k", "b"):
        r = es.search(index=name, body={"query": {"term": {"_ignored": f}}, "size": 100})
        assert ids_of(r) == sorted(k for k, v in ignored.items() if f in v)
    r = es.search(index=name, body={"query": {"exists": {"field": "_ignored"}}, "size": 100})
    assert ids_of(r) == sorted(k for k, v in ignored.items() if v)
    r = es.search(index=name, body={"size": 0, "aggs": {"ig": {"terms": {"field": "_ignored"}}}})
    expected = {}
    for v in ignored.values():
        for f in v:
            expected[f] = expected.get(f, 0) + 1
    assert {b["key"]: b["doc_count"] for b in r["aggregations"]["ig"]["buckets"]} == expected
    # The well-formed values are searchable.
    r = es.search(index=name, body={"query": {"range": {"i": {"gte": 50}}}, "size": 100})
    assert ids_of(r) == sorted(
        k for k, s in docs.items() if isinstance(s["i"], int) and s["i"] >= 50
    )


def test_coerce(es, index):
    name = index(
        "mt-coerce",
        {
            "settings": {"index.mapping.coerce": False},
            "mappings": {
                "properties": {
                    "off": {"type": "integer"},
                    "on": {"type": "integer", "coerce": True},
                    "f": {"type": "float"},
                }
            },
        },
    )
    for body, reason in (
        ({"off": "5"}, "Integer value passed as String"),
        ({"off": 1.5}, "1.5 cannot be converted to Integer without data loss"),
        ({"f": "1.5"}, "Float value passed as String"),
    ):
        with pytest.raises(BadRequestError) as e:
            es.index(index=name, body=body)
        assert e.value.body["error"]["caused_by"]["reason"] == reason
    es.index(index=name, id="1", body={"off": 3.0, "on": "7.9"}, refresh=True)
    es.index(index=name, id="2", body={"on": -2.5}, refresh=True)
    r = es.search(index=name, body={"query": {"term": {"on": 7}}})
    assert ids_of(r) == ["1"]
    r = es.search(index=name, body={"query": {"term": {"on": -2}}})
    assert ids_of(r) == ["2"]
    r = es.search(index=name, body={"query": {"term": {"off": 3}}})
    assert ids_of(r) == ["1"]


# ------------------------------------------------------------------ ranges


def relation_holds(relation, a, b, lo, hi):
    if relation == "intersects":
        return a <= hi and b >= lo
    if relation == "contains":
        return a <= lo and b >= hi
    return a >= lo and b <= hi


def random_bounds(rng, lo, hi, step):
    """A random range in the document/query form and its inclusive bounds."""
    a, b = sorted(rng.randint(lo, hi) for _ in range(2))
    form, inc = {}, [None, None]
    if rng.random() < 0.1:
        inc[0] = None
    elif rng.random() < 0.5:
        form["gte"], inc[0] = a, a
    else:
        form["gt"], inc[0] = a - step, a
    if rng.random() < 0.1:
        inc[1] = None
    elif rng.random() < 0.5:
        form["lte"], inc[1] = b, b
    else:
        form["lt"], inc[1] = b + step, b
    return form, inc


@pytest.mark.parametrize("ty", ["integer_range", "long_range", "double_range"])
def test_numeric_range_fields(es, index, ty):
    name = index(
        "mt-range-" + ty.replace("_", "-"),
        {"settings": {"number_of_shards": 2}, "mappings": {"properties": {"r": {"type": ty}}}},
    )
    rng = random.Random(hash(ty) & 0xFFFF)
    big = 2**40 if ty == "long_range" else 1000
    low_inf, high_inf = -(2**63), 2**63
    docs = {}
    for i in range(120):
        ranges = []
        forms = []
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            form, (a, b) = random_bounds(rng, -big, big, 1)
            forms.append(form)
            ranges.append((low_inf if a is None else a, high_inf if b is None else b))
        if ty == "double_range":
            # Exclusive double bounds are the next representable value: keep them inclusive.
            forms = [{("gte" if k in ("gt", "gte") else "lte"): v + (1 if k == "gt" else -1 if k == "lt" else 0) for k, v in f.items()} for f in forms]
        docs[str(i)] = ranges
        es.index(index=name, id=str(i), body={"r": forms if len(forms) > 1 else forms[0]})
    es.indices.refresh(index=name)

    for _ in range(40):
        relation = rng.choice(["intersects", "contains", "within"])
        a, b = sorted(rng.randint(-big, big) for _ in range(2))
        q = {"gte": a, "lte": b}
        if relation != "intersects" or rng.random() < 0.5:
            q["relation"] = relation
        r = es.search(index=name, body={"query": {"range": {"r": q}}, "size": 200})
        want = sorted(k for k, rs in docs.items() if any(relation_holds(relation, x, y, a, b) for x, y in rs))
        assert ids_of(r) == want, (relation, a, b)
    for _ in range(20):
        v = rng.randint(-big, big)
        r = es.search(index=name, body={"query": {"term": {"r": v}}, "size": 200})
        assert ids_of(r) == sorted(k for k, rs in docs.items() if any(x <= v <= y for x, y in rs))
    r = es.search(index=name, body={"query": {"exists": {"field": "r"}}, "size": 0})
    assert r["hits"]["total"]["value"] == len(docs)


def test_date_range_field(es, index):
    name = index(
        "mt-range-date",
        {"mappings": {"properties": {"r": {"type": "date_range", "format": "yyyy-MM-dd||epoch_millis"}}}},
    )
    rng = random.Random(3)
    base = datetime.date(2020, 1, 1)
    day_ms = 86400000
    docs = {}
    for i in range(80):
        a, b = sorted(rng.randint(0, 365) for _ in range(2))
        lo = (base + datetime.timedelta(days=a)).isoformat()
        # lt the day after b: the range ends at b's last millisecond.
        hi = (base + datetime.timedelta(days=b + 1)).isoformat()
        epoch0 = int(datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc).timestamp() * 1000)
        docs[str(i)] = (epoch0 + a * day_ms, epoch0 + (b + 1) * day_ms - 1)
        es.index(index=name, id=str(i), body={"r": {"gte": lo, "lt": hi}})
    es.indices.refresh(index=name)
    epoch0 = int(datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc).timestamp() * 1000)
    for _ in range(30):
        relation = rng.choice(["intersects", "contains", "within"])
        a, b = sorted(rng.randint(0, 365) for _ in range(2))
        qa = (base + datetime.timedelta(days=a)).isoformat()
        qb = (base + datetime.timedelta(days=b)).isoformat()
        # lte a day rounds up to its last millisecond (date math `||/d` semantics of lte).
        lo, hi = epoch0 + a * day_ms, epoch0 + b * day_ms + day_ms - 1
        r = es.search(
            index=name,
            body={"query": {"range": {"r": {"gte": qa, "lte": qb + "||/d", "relation": relation}}}, "size": 100},
        )
        want = sorted(k for k, (x, y) in docs.items() if relation_holds(relation, x, y, lo, hi))
        assert ids_of(r) == want, (relation, qa, qb)


def test_ip_range_field(es, index):
    name = index("mt-range-ip", {"mappings": {"properties": {"r": {"type": "ip_range"}}}})
    rng = random.Random(8)
    docs = {}
    for i in range(60):
        if rng.random() < 0.3:
            prefix = rng.choice([8, 16, 24, 28])
            net = ipaddress.ip_network("10.%d.%d.0/%d" % (rng.randint(0, 3), rng.randint(0, 255), prefix), strict=False)
            docs[str(i)] = (int(net.network_address), int(net.broadcast_address))
            body = {"r": str(net)}
        else:
            a, b = sorted(rng.randint(int(ipaddress.ip_address("10.0.0.0")), int(ipaddress.ip_address("10.3.255.255"))) for _ in range(2))
            docs[str(i)] = (a, b)
            body = {"r": {"gte": str(ipaddress.ip_address(a)), "lte": str(ipaddress.ip_address(b))}}
        es.index(index=name, id=str(i), body=body)
    es.indices.refresh(index=name)
    for _ in range(30):
        v = rng.randint(int(ipaddress.ip_address("10.0.0.0")), int(ipaddress.ip_address("10.3.255.255")))
        r = es.search(index=name, body={"query": {"term": {"r": str(ipaddress.ip_address(v))}}, "size": 100})
        assert ids_of(r) == sorted(k for k, (x, y) in docs.items() if x <= v <= y)


def test_range_field_errors(es, index):
    name = index("mt-range-err", {"mappings": {"properties": {"r": {"type": "integer_range"}, "g": {"type": "geo_point"}}}})
    with pytest.raises(BadRequestError) as e:
        es.index(index=name, body={"r": {"gte": 5, "lte": 1}})
    assert e.value.body["error"]["caused_by"]["reason"] == "min value (5) is greater than max value (1)"
    with pytest.raises(BadRequestError) as e:
        es.index(index=name, body={"r": {"gte": 5, "up": 1}})
    assert "unknown parameter [up]" in e.value.body["error"]["caused_by"]["reason"]
    es.index(index=name, id="1", body={"r": {"gte": 1, "lte": 3}, "g": "1,2"}, refresh=True)
    # Not built: refused, never an empty answer.
    for body in (
        {"aggs": {"t": {"terms": {"field": "r"}}}},
        {"sort": [{"r": "asc"}]},
        {"query": {"term": {"g": "1,2"}}},
        {"sort": [{"g": "asc"}]},
    ):
        with pytest.raises(BadRequestError):
            es.search(index=name, body=body)


# ---------------------------------------------------------------- date_nanos


def iso_nanos(n):
    """ES's strict_date_optional_time_nanos rendering of epoch nanoseconds (3 to 9 digits)."""
    secs, frac = divmod(n, 10**9)
    base = datetime.datetime.fromtimestamp(secs, tz=datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    digits = "%09d" % frac
    digits = digits.rstrip("0")
    if len(digits) < 3:
        digits = digits + "0" * (3 - len(digits))
    return "%s.%sZ" % (base, digits)


def test_date_nanos_precision_end_to_end(es, index):
    name = index(
        "mt-date-nanos",
        {"settings": {"number_of_shards": 2}, "mappings": {"properties": {"t": {"type": "date_nanos"}}}},
    )
    rng = random.Random(21)
    base = 1571646604 * 10**9
    docs = {}
    for i in range(50):
        # Values a few microseconds to milliseconds apart, some equal at the millisecond.
        n = base + rng.randint(0, 5_000_000)
        docs[str(i)] = n
        es.index(index=name, id=str(i), body={"t": iso_nanos(n)})
    es.indices.refresh(index=name)

    # Sort values are epoch nanoseconds; search_after pages through them exactly.
    seen = []
    after = None
    while True:
        body = {"size": 7, "sort": [{"t": "asc"}], "fields": ["t"], "_source": False}
        if after is not None:
            body["search_after"] = after
        r = es.search(index=name, body=body)
        hits = r["hits"]["hits"]
        if not hits:
            break
        for h in hits:
            assert h["sort"] == [docs[h["_id"]]]
            assert h["fields"]["t"] == [iso_nanos(docs[h["_id"]])]
        seen.extend(h["sort"][0] for h in hits)
        after = hits[-1]["sort"]
    # search_after skips the documents equal to the last sort value of a page (one sort key,
    # no tie-break), so the pages hold every distinct value, in order.
    assert seen == sorted(seen)
    assert set(seen) == set(docs.values())

    values = sorted(docs.values())
    for _ in range(20):
        a, b = sorted(rng.choice(values) + rng.randint(-3, 3) for _ in range(2))
        r = es.search(
            index=name,
            body={"query": {"range": {"t": {"gt": iso_nanos(a), "lte": iso_nanos(b)}}}, "size": 100},
        )
        assert ids_of(r) == sorted(k for k, v in docs.items() if a < v <= b)
    v = rng.choice(values)
    r = es.search(index=name, body={"query": {"term": {"t": iso_nanos(v)}}, "size": 100})
    assert ids_of(r) == sorted(k for k, x in docs.items() if x == v)

    # Buckets stay in milliseconds, as ES's date_histogram on date_nanos.
    r = es.search(index=name, body={"size": 0, "aggs": {"h": {"date_histogram": {"field": "t", "fixed_interval": "1ms"}}}})
    counts = {}
    for n in docs.values():
        counts[n // 10**6] = counts.get(n // 10**6, 0) + 1
    got = {b["key"]: b["doc_count"] for b in r["aggregations"]["h"]["buckets"] if b["doc_count"]}
    assert got == counts


def test_date_nanos_limits(es, index):
    name = index("mt-date-nanos-lim", {"mappings": {"properties": {"t": {"type": "date_nanos"}}}})
    with pytest.raises(BadRequestError) as e:
        es.index(index=name, body={"t": "1969-12-31T23:59:59Z"})
    assert "before the epoch in 1970" in e.value.body["error"]["caused_by"]["reason"]
    with pytest.raises(BadRequestError) as e:
        es.index(index=name, body={"t": "2263-01-01"})
    assert "cannot be stored in nanosecond resolution" in e.value.body["error"]["caused_by"]["reason"]
