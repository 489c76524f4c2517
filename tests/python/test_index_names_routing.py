"""Date math index names and Elasticsearch's document routing.

The oracle for routing is ES's algorithm computed here independently: MurmurHash3 (x86, 32
bit, seed 0) over the routing string's UTF-16 code units, `floorMod(hash, routing_num_shards)
/ (routing_num_shards / number_of_shards)`.
"""

import datetime

import pytest
from elasticsearch import BadRequestError, NotFoundError


def murmur3(data: bytes) -> int:
    c1, c2, mask = 0xCC9E2D51, 0x1B873593, 0xFFFFFFFF
    h, n = 0, len(data) // 4 * 4
    for i in range(0, n, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        h ^= (k * c2) & mask
        h = ((h << 13) | (h >> 19)) & mask
        h = (h * 5 + 0xE6546B64) & mask
    k, tail = 0, data[n:]
    for i, b in enumerate(tail):
        k |= b << (8 * i)
    if tail:
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        h ^= (k * c2) & mask
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & mask
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & mask
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


def es_shard(routing: str, shards: int, routing_shards: int) -> int:
    h = murmur3(routing.encode("utf-16-le"))
    return (h % routing_shards) // (routing_shards // shards)


def default_routing_shards(shards: int) -> int:
    log2 = (shards - 1).bit_length()
    return shards << max(1, 10 - log2)


@pytest.mark.parametrize("shards,routing_shards", [(5, None), (3, None), (4, 8), (5, 5)])
def test_documents_land_on_the_shard_elasticsearch_picks(es, shards, routing_shards):
    name = f"routing_{shards}_{routing_shards or 0}"
    settings = {"number_of_shards": shards}
    if routing_shards:
        settings["number_of_routing_shards"] = routing_shards
    es.options(ignore_status=404).indices.delete(index=name)
    es.indices.create(index=name, settings=settings)
    ids = [str(i) for i in range(40)] + ["doc-é", "日本", "x" * 37]
    for i in ids:
        es.index(index=name, id=i, document={"n": 1})
    for r in ["user1", "ü"]:
        es.index(index=name, id=f"routed-{r}", routing=r, document={"n": 2})
    es.indices.refresh(index=name)
    resp = es.search(index=name, size=100, explain=True, query={"match_all": {}})
    got = {h["_id"]: int(h["_shard"].strip("[]").split("][")[-1]) for h in resp["hits"]["hits"]}
    rs = routing_shards or default_routing_shards(shards)
    want = {i: es_shard(i, shards, rs) for i in ids}
    want.update({f"routed-{r}": es_shard(r, shards, rs) for r in ["user1", "ü"]})
    assert got == want
    es.indices.delete(index=name)


def test_routing_shards_must_be_a_multiple_of_the_shards(es):
    with pytest.raises(BadRequestError) as e:
        es.indices.create(index="routing_bad", settings={"number_of_shards": 3, "number_of_routing_shards": 8})
    assert e.value.meta.status == 400
    with pytest.raises(BadRequestError):
        es.indices.create(index="routing_bad", settings={"number_of_shards": 4, "number_of_routing_shards": 2})


def _today_names(prefix, fmt):
    # The name depends on the day at the server's clock: accept the day before and after a
    # midnight crossed during the test.
    now = datetime.datetime.now(datetime.timezone.utc)
    return {prefix + (now + datetime.timedelta(seconds=d)).strftime(fmt) for d in (-5, 0, 5)}


def test_date_math_index_names_resolve_in_create_write_and_search(es):
    created = es.indices.create(index="<dm-logs-{now/d}>")
    assert created["index"] in _today_names("dm-logs-", "%Y.%m.%d")
    es.index(index="<dm-logs-{now/d}>", id="1", document={"a": 1}, refresh=True)
    assert es.search(index="<dm-logs-{now/d}>")["hits"]["total"]["value"] == 1
    assert es.get(index="<dm-logs-{now/d}>", id="1")["_index"] == created["index"]
    # A custom format and a time zone.
    monthly = es.indices.create(index="<dm-month-{now/M{yyyy.MM}}>")["index"]
    assert monthly in _today_names("dm-month-", "%Y.%m")
    es.indices.delete(index=[created["index"], monthly])


def test_a_missing_date_math_index_is_named_resolved(es):
    with pytest.raises(NotFoundError) as e:
        es.search(index="<dm-missing-{now/M}>")
    assert e.value.body["error"]["index"] in _today_names("dm-missing-", "%Y.%m.01")


def test_a_malformed_date_math_name_is_a_parse_exception(es):
    with pytest.raises(BadRequestError) as e:
        es.search(index="<dm-{now/d>")
    assert e.value.error == "parse_exception"


def test_partitioned_routing_is_refused(es):
    with pytest.raises(BadRequestError) as e:
        es.indices.create(index="routing_partitioned", settings={"number_of_shards": 4, "routing_partition_size": 2})
    assert e.value.error == "illegal_argument_exception"
