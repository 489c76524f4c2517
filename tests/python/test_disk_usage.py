"""`POST /{index}/_disk_usage` (ES 8's "Analyze index disk usage"), through the official client.

Shape and messages follow ES's `RestAnalyzeIndexDiskUsageAction` and `IndexDiskUsageStats`.
Expectations are computed independently of the API where possible: a field with neither an
index nor doc values takes no inverted-index or doc-values bytes; the store size is `_stats`'."""
import json
import time
import urllib.error
import urllib.request

import pytest
from elasticsearch import ApiError

import conftest

CATEGORY_KEYS = ["stored_fields", "doc_values", "points", "norms", "term_vectors", "knn_vectors"]
EXPENSIVE = ("analyzing the disk usage of an index is expensive and resource-intensive, the "
             "parameter [run_expensive_tasks] must be set to [true] in order for the task to "
             "be performed.")

MAPPING = {
    "properties": {
        "title": {"type": "text"},
        "tag": {"type": "keyword"},
        "n": {"type": "long"},
        "when": {"type": "date"},
        "opaque": {"type": "keyword", "index": False, "doc_values": False},
        "quiet": {"type": "long", "index": False, "doc_values": False},
    }
}


def docs(count):
    return [(str(i), {
        "title": "the quick brown fox %d jumps over the lazy dog %d" % (i, i * 7),
        "tag": "tag-%d" % (i % 13),
        "n": i * 31,
        "when": 1700000000000 + i * 60000,
        "opaque": "opaque value %d" % i,
        "quiet": i,
    }) for i in range(count)]


@pytest.fixture(scope="module")
def idx(es):
    name = "disk-usage-%d" % time.time_ns()
    conftest.make_index(es, name, {"mappings": MAPPING}, docs(300))
    yield name
    es.indices.delete(index=name, ignore_unavailable=True)


def usage(es, index, **kw):
    return es.indices.disk_usage(index=index, run_expensive_tasks=True, **kw).body


def total(u):
    return (u["inverted_index"]["total_in_bytes"]
            + sum(u[k + "_in_bytes"] for k in CATEGORY_KEYS))


def check_usage_shape(u):
    assert list(u) == ["total", "total_in_bytes", "inverted_index"] + [
        x for k in CATEGORY_KEYS for x in (k, k + "_in_bytes")]
    assert list(u["inverted_index"]) == ["total", "total_in_bytes"]
    assert isinstance(u["total"], str) and isinstance(u["total_in_bytes"], int)
    assert u["total_in_bytes"] == total(u)


def test_shape_and_sums(es, idx):
    body = usage(es, idx)
    assert list(body) == ["_shards", idx]
    assert body["_shards"] == {"total": 1, "successful": 1, "failed": 0}
    stats = body[idx]
    assert list(stats) == ["store_size", "store_size_in_bytes", "all_fields", "fields"]
    check_usage_shape(stats["all_fields"])
    for name, u in stats["fields"].items():
        check_usage_shape(u)
    assert list(stats["fields"]) == sorted(stats["fields"])
    all_fields = stats["all_fields"]
    for key in ["total_in_bytes"] + [k + "_in_bytes" for k in CATEGORY_KEYS]:
        assert all_fields[key] == sum(u[key] for u in stats["fields"].values()), key
    assert all_fields["inverted_index"]["total_in_bytes"] == sum(
        u["inverted_index"]["total_in_bytes"] for u in stats["fields"].values())
    # The measured bytes are within the files of the store.
    assert 0 < all_fields["total_in_bytes"] <= stats["store_size_in_bytes"]


def test_store_size_is_the_stats_store_size(es, idx):
    body = usage(es, idx)
    st = es.indices.stats(index=idx, metric="store").body
    assert body[idx]["store_size_in_bytes"] == \
        st["indices"][idx]["primaries"]["store"]["size_in_bytes"]


def test_fields_by_structure(es, idx):
    fields = usage(es, idx)[idx]["fields"]
    title = fields["title"]
    assert title["inverted_index"]["total_in_bytes"] > 0
    assert title["norms_in_bytes"] > 0
    assert title["doc_values_in_bytes"] == 0
    for name in ("tag", "n", "when"):
        assert fields[name]["doc_values_in_bytes"] > 0, name
        assert fields[name]["norms_in_bytes"] == 0, name
    assert fields["tag"]["inverted_index"]["total_in_bytes"] > 0
    # Stored fields are `_source` and `_id` (Lode stores nothing else per field).
    assert fields["_source"]["stored_fields_in_bytes"] > 0
    assert fields["_id"]["stored_fields_in_bytes"] > 0
    assert fields["_id"]["inverted_index"]["total_in_bytes"] > 0
    stored = {n for n, u in fields.items() if u["stored_fields_in_bytes"] > 0}
    assert stored <= {"_id", "_source", "_routing"}
    # Neither indexed nor with doc values: nothing but the `_source` bytes it is part of.
    for name in ("opaque", "quiet"):
        u = fields.get(name)
        if u is not None:
            assert u["inverted_index"]["total_in_bytes"] == 0
            assert u["doc_values_in_bytes"] == 0
            assert u["total_in_bytes"] == 0
    for u in fields.values():
        assert u["term_vectors_in_bytes"] == 0
        assert u["knn_vectors_in_bytes"] == 0


def test_readable_sizes(es, idx):
    stats = usage(es, idx)[idx]
    n = stats["store_size_in_bytes"]
    # ES's ByteSizeValue: the largest unit reached, one decimal truncated.
    for unit, size in (("mb", 1 << 20), ("kb", 1 << 10)):
        if n >= size:
            v = int(n / size * 10) / 10
            expected = ("%d" % v if v == int(v) else "%.1f" % v) + unit
            break
    else:
        expected = "%db" % n
    assert stats["store_size"] == expected
    assert stats["fields"]["_seq_no"]["points"] == "0b"


def test_flush_false_and_several_indices(es, idx):
    other = "disk-usage-other-%d" % time.time_ns()
    conftest.make_index(es, other, {"mappings": MAPPING}, docs(20))
    try:
        body = usage(es, "%s,%s" % (idx, other), flush=False)
        assert list(body) == ["_shards"] + sorted([idx, other])
        assert body["_shards"]["successful"] == 2
        # Wildcards expand to closed indices only by default (DEFAULT_INDICES_OPTIONS).
        with pytest.raises(ApiError) as e:
            usage(es, "disk-usage-other-*")
        assert e.value.meta.status == 404
        assert e.value.body["error"]["type"] == "index_not_found_exception"
        body = usage(es, "disk-usage-other-*", expand_wildcards="open")
        assert list(body) == ["_shards", other]
    finally:
        es.indices.delete(index=other)


def test_unflushed_documents_are_counted_after_flush(es):
    name = "disk-usage-fresh-%d" % time.time_ns()
    es.indices.create(index=name, mappings=MAPPING, settings={"refresh_interval": "-1"})
    try:
        for i, d in docs(5):
            es.index(index=name, id=i, document=d)
        body = usage(es, name)
        assert body[name]["fields"]["_source"]["stored_fields_in_bytes"] > 0
    finally:
        es.indices.delete(index=name)


def raw(url, path):
    req = urllib.request.Request(url + path, method="POST")
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.mark.parametrize("query", ["", "?run_expensive_tasks=false", "?run_expensive_tasks="])
def test_refused_without_run_expensive_tasks(lode_url, idx, query):
    status, body = raw(lode_url, "/%s/_disk_usage%s" % (idx, query))
    assert status == 400
    assert body["error"]["type"] == "illegal_argument_exception"
    assert body["error"]["reason"] == EXPENSIVE
    assert body["status"] == 400


def test_refused_inputs(es, lode_url, idx):
    status, body = raw(lode_url, "/%s/_disk_usage?run_expensive_tasks=yes" % idx)
    assert status == 400
    assert body["error"]["type"] == "illegal_argument_exception"
    status, body = raw(lode_url, "/%s/_disk_usage?run_expensive_tasks=true&bogus=1" % idx)
    assert status == 400
    assert body["error"]["type"] == "illegal_argument_exception"
    assert "unrecognized parameter: [bogus]" in body["error"]["reason"]
    with pytest.raises(ApiError) as e:
        usage(es, "no-such-index-for-disk-usage")
    assert e.value.meta.status == 404
    assert e.value.body["error"]["type"] == "index_not_found_exception"
    body = usage(es, "%s,no-such-index-for-disk-usage" % idx, ignore_unavailable=True)
    assert list(body) == ["_shards", idx]
