"""`terms` with a partition-based `include` (`{"partition": p, "num_partitions": n}`), as ES's
`IncludeExclude` defines it: a keyword term belongs to partition
floorMod(murmurhash3_x86_32(utf-8 bytes, seed 31), n) (an `ip` by its 16-byte IPv6
encoding), a long, date or boolean (0/1) to floorMod(mix64(value), n) (hppc's `BitMixer`),
a double to floorMod(mix64(doubleToSortableLong(value)), n). The expected buckets are
computed here, with this file's own MurmurHash3 and mix64, from the documents it indexes."""

import ipaddress
import struct
from collections import Counter

import pytest
from elasticsearch import BadRequestError

INDEX = "terms_partition"
M64 = (1 << 64) - 1


def murmur3_x86_32(data: bytes, seed: int) -> int:
    """The reference MurmurHash3_x86_32, as a signed Java int."""
    c1, c2 = 0xCC9E2D51, 0x1B873593
    h = seed & 0xFFFFFFFF
    n = len(data) // 4 * 4
    for i in range(0, n, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * c1) & 0xFFFFFFFF
        k = ((k << 15) | (k >> 17)) & 0xFFFFFFFF
        k = (k * c2) & 0xFFFFFFFF
        h ^= k
        h = ((h << 13) | (h >> 19)) & 0xFFFFFFFF
        h = (h * 5 + 0xE6546B64) & 0xFFFFFFFF
    tail = data[n:]
    k = 0
    for j, b in enumerate(tail):
        k |= b << (8 * j)
    if tail:
        k = (k * c1) & 0xFFFFFFFF
        k = ((k << 15) | (k >> 17)) & 0xFFFFFFFF
        k = (k * c2) & 0xFFFFFFFF
        h ^= k
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


def mix64(z: int) -> int:
    z &= M64
    z = ((z ^ (z >> 32)) * 0x4CD6944C5CC20B6D) & M64
    z = ((z ^ (z >> 29)) * 0xFC12C5B19D3259E9) & M64
    z ^= z >> 32
    return z - (1 << 64) if z >= 1 << 63 else z


def sortable_long(x: float) -> int:
    bits = struct.unpack("<q", struct.pack("<d", x))[0]
    return bits ^ ((bits >> 63) & 0x7FFFFFFFFFFFFFFF)


def ip_bytes(s: str) -> bytes:
    ip = ipaddress.ip_address(s)
    if ip.version == 4:
        return b"\0" * 10 + b"\xff\xff" + ip.packed
    return ip.packed


def part(field, value, n):
    if field == "k":
        h = murmur3_x86_32(value.encode(), 31)
    elif field == "ip":
        h = murmur3_x86_32(ip_bytes(value), 31)
    elif field == "x":
        h = mix64(sortable_long(value))
    elif field == "b":
        h = mix64(1 if value else 0)
    else:  # n (long), d (epoch millis)
        h = mix64(value)
    return h % n  # Python's % is Java's floorMod for a positive n


DOCS = []
for i in range(60):
    d = {"k": f"term{i % 23}", "n": (i % 17) * 1000 - 5000, "x": (i % 13) * 0.75 - 3.0,
         "d": 1_600_000_000_000 + (i % 11) * 86_400_000, "b": i % 3 == 0,
         "ip": f"10.0.{i % 7}.{i % 19}"}
    if i % 9 == 0:
        d["k"] = [d["k"], f"extra{i % 4}"]
    if i % 10 == 0:
        del d["n"]
    DOCS.append(d)


@pytest.fixture(scope="module")
def index(es):
    if es.indices.exists(index=INDEX):
        es.indices.delete(index=INDEX)
    es.indices.create(index=INDEX, settings={"number_of_shards": 1},
                      mappings={"properties": {"k": {"type": "keyword"}, "n": {"type": "long"},
                                               "x": {"type": "double"}, "d": {"type": "date"},
                                               "b": {"type": "boolean"}, "ip": {"type": "ip"}}})
    ops = []
    for i, d in enumerate(DOCS):
        ops += [{"index": {"_index": INDEX, "_id": str(i)}}, d]
        if i == 29:
            es.bulk(operations=ops, refresh=True)  # two segments
            ops = []
    es.bulk(operations=ops, refresh=True)
    yield INDEX
    es.indices.delete(index=INDEX)


def counts(field):
    c = Counter()
    for d in DOCS:
        v = d.get(field)
        if v is None:
            continue
        for x in set(v) if isinstance(v, list) else [v]:
            c[x] += 1
    return c


def expected(field, p, n, size):
    c = counts(field)
    kept = [(v, cnt) for v, cnt in c.items() if part(field, v, n) == p]

    def order_key(vc):
        v, cnt = vc
        if field == "ip":
            return (-cnt, ip_bytes(v))
        if field == "b":
            return (-cnt, int(v))
        return (-cnt, v)

    kept.sort(key=order_key)
    return kept[:size], sum(cnt for _, cnt in kept[size:])


def key_of(field, b):
    if field == "b":
        return b["key"] == 1
    if field in ("n", "d"):
        return int(b["key"])
    if field == "x":
        return float(b["key"])
    return b["key"]


@pytest.mark.parametrize("field", ["k", "n", "x", "d", "b", "ip"])
@pytest.mark.parametrize("n", [1, 2, 5])
def test_partitions(es, index, field, n):
    size = 4
    seen = Counter()
    for p in range(n):
        r = es.search(index=INDEX, size=0, aggs={"t": {"terms": {
            "field": field, "size": size, "include": {"partition": p, "num_partitions": n}}}})
        t = r["aggregations"]["t"]
        want, other = expected(field, p, n, size)
        got = [(key_of(field, b), b["doc_count"]) for b in t["buckets"]]
        assert got == want, (field, p, n)
        assert t["sum_other_doc_count"] == other
        for b in t["buckets"]:
            seen[key_of(field, b)] += 1
    # every term is in at most one partition
    assert all(v == 1 for v in seen.values())


def test_partition_with_missing_and_sub_aggs(es, index):
    # `missing` is hashed like any term; the sub-aggregation sees the bucket's documents.
    n = 3
    for p in range(n):
        r = es.search(index=INDEX, size=0, aggs={"t": {"terms": {
            "field": "n", "size": 100, "missing": 7,
            "include": {"partition": p, "num_partitions": n}},
            "aggs": {"s": {"sum": {"field": "x"}}}}})
        got = {int(b["key"]): (b["doc_count"], b["s"]["value"])
               for b in r["aggregations"]["t"]["buckets"]}
        want = {}
        for d in DOCS:
            v = d.get("n", 7)
            if part("n", v, n) == p:
                c, s = want.get(v, (0, 0.0))
                want[v] = (c + 1, s + d["x"])
        assert set(got) == set(want)
        for k, (c, s) in want.items():
            assert got[k][0] == c and got[k][1] == pytest.approx(s)


def test_partition_errors(es, index):
    def err(include, extra=None):
        body = {"field": "k", "include": include}
        body.update(extra or {})
        with pytest.raises(BadRequestError) as e:
            es.search(index=INDEX, size=0, aggs={"t": {"terms": body}})
        return e.value.body["error"]

    e = err({"partition": 0})
    assert e["type"] == "x_content_parse_exception"
    assert e["caused_by"]["reason"] == \
        "Missing [num_partitions] parameter for partition-based include"
    e = err({"num_partitions": 4})
    assert e["caused_by"]["reason"] == "Missing [partition] parameter for partition-based include"
    e = err({"partition": 4, "num_partitions": 4})
    assert e["caused_by"]["reason"] == "Partition must be >=0 and < numPartition which is 4"
    e = err({"partition": 0, "num_partitions": 2, "size": 3})
    assert e["caused_by"]["type"] == "parse_exception"
    assert e["caused_by"]["reason"] == "Unknown parameter in Include/Exclude clause: size"
    e = err({"partition": 0, "num_partitions": 2}, {"exclude": ["term1"]})
    assert e["caused_by"]["reason"] == \
        "Cannot specify any excludes when using a partition-based include"
