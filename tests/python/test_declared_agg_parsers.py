"""The rest of the aggregation bodies declared on the ObjectParser (issue 9, 2f): one refusal
per declaration, worded as Elasticsearch 8's parser at that place, and `terms`'
`shard_min_doc_count` on a 2-shard index checked against an oracle computed here.

Shard routing in the oracle is ES's, computed independently: MurmurHash3 (x86, 32 bit, seed 0)
of the id's UTF-16LE bytes, `floorMod(hash, routing_num_shards) / (routing_num_shards / 2)`,
with `routing_num_shards` 1024 for 2 shards.
"""
import collections

import pytest
from elasticsearch import ApiError

INDEX = "declared_agg_parsers"
TAGS = ["a", "b", "c", "d", "e", "f", "g"]


def murmur3(data: bytes) -> int:
    c1, c2, mask = 0xCC9E2D51, 0x1B873593, 0xFFFFFFFF
    h, n = 0, len(data) // 4 * 4
    for i in range(0, n, 4):
        k = int.from_bytes(data[i:i + 4], "little")
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


def shard_of(doc_id: str) -> int:
    routing_shards = 1024
    return (murmur3(doc_id.encode("utf-16-le")) % routing_shards) // (routing_shards // 2)


def tag_of(i: int) -> str:
    # uneven: a few frequent tags, several rare ones
    return TAGS[(i * i + 3 * i) % 11 % len(TAGS)]


DOCS = {str(i): {"tag": tag_of(i), "n": i % 5, "ip": f"10.0.0.{i % 250}",
                 "loc": {"lat": 40 + i % 7, "lon": -70 - i % 5},
                 "body": f"word{i % 4} common text"} for i in range(90)}


@pytest.fixture(scope="module")
def idx(es):
    es.options(ignore_status=404).indices.delete(index=INDEX)
    es.indices.create(index=INDEX, settings={"number_of_shards": 2}, mappings={"properties": {
        "tag": {"type": "keyword"}, "n": {"type": "long"}, "ip": {"type": "ip"},
        "loc": {"type": "geo_point"}, "body": {"type": "text"}}})
    ops = []
    for i, d in DOCS.items():
        ops += [{"index": {"_index": INDEX, "_id": i}}, d]
    assert es.bulk(operations=ops, refresh=True)["errors"] is False
    yield INDEX
    es.indices.delete(index=INDEX)


def refused(es, aggs):
    with pytest.raises(ApiError) as ei:
        es.search(index=INDEX, size=0, aggs=aggs)
    assert ei.value.meta.status == 400
    return ei.value.body["error"]


HIST = {"histogram": {"field": "n", "interval": 1}}


def under_hist(pipe):
    return {"h": {**HIST, "aggs": {"s": {"sum": {"field": "n"}}, "p": pipe}}}


# item 1: one declaration per pipeline type, worded as ES's parser of that type
@pytest.mark.parametrize("aggs,etype,reason", [
    (under_hist({"moving_fn": {"buckets_path": "s", "window": 2, "script": "1", "unit": "1d"}}),
     "x_content_parse_exception", "[moving_fn] unknown field [unit]"),
    (under_hist({"bucket_sort": {"sizes": 1}}),
     "x_content_parse_exception", "[bucket_sort] unknown field [sizes] did you mean [size]?"),
    (under_hist({"cumulative_sum": {"buckets_path": "s", "gap_policy": "skip"}}),
     "x_content_parse_exception", "[cumulative_sum] unknown field [gap_policy]"),
    (under_hist({"derivative": {"buckets_path": "s", "units": "1d"}}),
     "parsing_exception", "Unknown key for a VALUE_STRING in [p]: [units]."),
    (under_hist({"serial_diff": {"buckets_path": "s", "lag": 0}}),
     "parsing_exception", "Lag must be a positive, non-zero integer.  Value supplied was0 in [p]: [lag]."),
    (under_hist({"bucket_script": {"buckets_path": {"a": "s"}}}),
     "illegal_argument_exception", "Required [script]"),
    ({"h": HIST, "m": {"max_bucket": {"buckets_path": "h>_count", "sigma": 2}}},
     "parsing_exception", "Unexpected token VALUE_NUMBER [sigma] in [m]."),
])
def test_pipeline_declarations(es, idx, aggs, etype, reason):
    e = refused(es, aggs)
    assert (e["type"], e["reason"]) == (etype, reason)


# item 2: significant_text, multi_terms and the heuristics' own parsers
def test_significant_text_multi_terms_and_heuristics(es, idx):
    e = refused(es, {"s": {"significant_text": {"field": "body", "sourc_fields": ["body"]}}})
    assert e["type"] == "x_content_parse_exception"
    assert e["reason"].startswith("[significant_text] unknown field [sourc_fields] did you mean [source_fields")
    e = refused(es, {"s": {"significant_terms": {"field": "tag", "gnd": {"include_negatives": True}}}})
    # a heuristic is a named object of the aggregation's parser: its refusal is not wrapped
    assert (e["type"], e["reason"]) == ("x_content_parse_exception", "[gnd] unknown field [include_negatives]")
    e = refused(es, {"m": {"multi_terms": {"terms": [{"field": "tag"}, {"field": "n"}], "inclde": "a"}}})
    assert e["reason"].startswith("[multi_terms] unknown field [inclde]")


# item 3: geo grids and geo_distance (its ranges too)
def test_geo_declarations(es, idx):
    e = refused(es, {"g": {"geotile_grid": {"field": "loc", "precison": 3}}})
    assert e["reason"] == "[geotile_grid] unknown field [precison] did you mean [precision]?"
    e = refused(es, {"g": {"geohash_grid": {"field": 1}}})
    assert e["reason"] == "[geohash_grid] field doesn't support values of type: VALUE_NUMBER"
    e = refused(es, {"g": {"geo_distance": {"field": "loc", "origin": "40,-70",
                                             "ranges": [{"to": 10, "frum": 1}]}}})
    assert e["reason"] == "[range] unknown field [frum] did you mean [from]?"


# item 4: composite's top level
def test_composite_top_level(es, idx):
    e = refused(es, {"c": {"composite": {"sources": [{"t": {"terms": {"field": "tag"}}}], "siz": 2}}})
    assert e["reason"] == "[composite] unknown field [siz] did you mean [size]?"
    e = refused(es, {"c": {"composite": {"sources": [{"t": {"tems": {"field": "tag"}}}]}}})
    assert (e["type"], e["reason"]) == ("parsing_exception", "invalid source type: tems")
    e = refused(es, {"c": {"composite": {"sources": [{"t": 1}]}}})
    assert e["reason"] == "Failed to parse object: expecting token of type [START_OBJECT] but found [VALUE_NUMBER]"


# item 5: ip_range entries, bounds, partition, order, tdigest/hdr, variable_width_histogram
def test_nested_objects(es, idx):
    e = refused(es, {"r": {"ip_range": {"field": "ip", "ranges": [{"from": "10.0.0.1", "mask2": "x"}]}}})
    assert (e["type"], e["reason"]) == ("parsing_exception", "Unexpected ip range parameter: [mask2]")
    e = refused(es, {"h": {"histogram": {"field": "n", "interval": 1, "extended_bounds": {"mn": 0}}}})
    assert e["reason"] == "[histogram] failed to parse field [extended_bounds]"
    assert e["caused_by"]["reason"] == "[extended_bounds] unknown field [mn] did you mean [min]?"
    e = refused(es, {"t": {"terms": {"field": "tag", "include": {"partition": 0, "num_partition": 2}}}})
    assert e["caused_by"]["reason"] == "Unknown parameter in Include/Exclude clause: num_partition"
    e = refused(es, {"t": {"terms": {"field": "tag", "order": {"_count": 1}}}})
    assert e["reason"] == "[terms] failed to parse field [order]"
    assert e["caused_by"]["reason"] == "Unexpected token [VALUE_NUMBER] for [order]"
    e = refused(es, {"p": {"percentiles": {"field": "n", "tdigest": {"compresion": 50}}}})
    assert e["caused_by"]["reason"] == "[tdigest] unknown field [compresion] did you mean [compression]?"
    e = refused(es, {"v": {"variable_width_histogram": {"field": "n", "bucket": 2}}})
    assert e["reason"] == "[variable_width_histogram] unknown field [bucket] did you mean [buckets]?"


# item 6: the phrase suggester's smoothing models
def test_phrase_smoothing_models(es, idx):
    def smoothing_error(model):
        with pytest.raises(ApiError) as ei:
            es.search(index=INDEX, size=0, suggest={"s": {"text": "word1 commn", "phrase": {
                "field": "body", "smoothing": model}}})
        assert ei.value.meta.status == 400
        return ei.value.body["error"]
    e = smoothing_error({"linear_interpolation": {"trigram_lambda": 0.5, "alpha": 0.5}})
    assert (e["type"], e["reason"]) == (
        "illegal_argument_exception", "suggester[phrase][smoothing][linear] doesn't support field [alpha]")
    e = smoothing_error({"laplace": 0.5})
    assert e["reason"] == "[smoothing] unknown token [VALUE_NUMBER] after [laplace]"


# item 7: the terms parser names the outer aggregation type
@pytest.mark.parametrize("ty,extra", [("rare_terms", {}), ("significant_terms", {}),
                                      ("significant_text", {})])
def test_terms_errors_name_the_outer_type(es, idx, ty, extra):
    field = "body" if ty == "significant_text" else "tag"
    e = refused(es, {"x": {ty: {"field": field, "include": 5, **extra}}})
    assert e["reason"] == f"[{ty}] include doesn't support values of type: VALUE_NUMBER"


# item 8: execution_hint / collect_mode validated as ES validates them
def test_terms_hints_are_validated(es, idx):
    e = refused(es, {"t": {"terms": {"field": "tag", "execution_hint": "fast"}}})
    assert e["reason"] == "Unknown `execution_hint`: [fast], expected any of [map, global_ordinals]"
    e = refused(es, {"t": {"terms": {"field": "tag", "collect_mode": "deep"}}})
    assert e["caused_by"]["type"] == "parse_exception"
    assert e["caused_by"]["reason"] == "no [collect_mode] found for value [deep]"
    e = refused(es, {"t": {"terms": {"field": "tag", "shard_min_doc_count": -1}}})
    assert e["reason"] == "[shardMinDocCount] must be greater than or equal to 0. Found [-1] in [t]"
    r = es.search(index=INDEX, size=0, aggs={"t": {"terms": {
        "field": "tag", "execution_hint": "map", "collect_mode": "breadth_first"}}})
    assert r["aggregations"]["t"]["buckets"]


def oracle_terms(shard_min, size, min_doc_count=1):
    per_shard = [collections.Counter(), collections.Counter()]
    for i, d in DOCS.items():
        per_shard[shard_of(i)][d["tag"]] += 1
    total = collections.Counter()
    for counts in per_shard:
        for tag, n in counts.items():
            if n >= shard_min:
                total[tag] += n
    buckets = sorted(((t, n) for t, n in total.items() if n >= min_doc_count),
                     key=lambda kv: (-kv[1], kv[0]))[:size]
    other = len(DOCS) - sum(n for _, n in buckets)
    return [{"key": t, "doc_count": n} for t, n in buckets], other


@pytest.mark.parametrize("shard_min", [0, 1, 3, 5, 8, 20])
@pytest.mark.parametrize("size", [2, 10])
def test_shard_min_doc_count_on_two_shards(es, idx, shard_min, size):
    # both shards hold documents (else the test shows nothing)
    assert {shard_of(i) for i in DOCS} == {0, 1}
    r = es.search(index=INDEX, size=0, aggs={"t": {"terms": {
        "field": "tag", "size": size, "shard_size": 100, "shard_min_doc_count": shard_min}}})
    t = r["aggregations"]["t"]
    want, other = oracle_terms(shard_min, size)
    assert t["buckets"] == want
    assert t["sum_other_doc_count"] == other


def test_shard_min_doc_count_below_another_bucket(es, idx):
    r = es.search(index=INDEX, size=0, aggs={"h": {**HIST, "aggs": {"t": {"terms": {
        "field": "tag", "shard_size": 100, "shard_min_doc_count": 3}}}}})
    for b in r["aggregations"]["h"]["buckets"]:
        per_shard = [collections.Counter(), collections.Counter()]
        for i, d in DOCS.items():
            if d["n"] == b["key"]:
                per_shard[shard_of(i)][d["tag"]] += 1
        total = collections.Counter()
        for counts in per_shard:
            for tag, n in counts.items():
                if n >= 3:
                    total[tag] += n
        want = sorted(total.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
        assert [(x["key"], x["doc_count"]) for x in b["t"]["buckets"]] == want
