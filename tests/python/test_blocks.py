"""Index blocks (`index.blocks.*`, `PUT /{index}/_block/{block}`) and the flood-stage disk
watermark, through the official client. The expected reasons are Elasticsearch 8's
`ClusterBlockException` texts built from `IndexMetadata`'s block ids and descriptions; counts
are computed from the documents each test indexes."""
import os
import tempfile
import time

import pytest
from elasticsearch import ApiError

import conftest

WRITE = "FORBIDDEN/8/index write (api)"
READ_ONLY = "FORBIDDEN/5/index read-only (api)"
READ = "FORBIDDEN/7/index read (api)"
METADATA = "FORBIDDEN/9/index metadata (api)"
FLOOD = ("TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage watermark, "
         "index has read-only-allow-delete block")

DOCS = [{"n": i, "tag": "even" if i % 2 == 0 else "odd"} for i in range(10)]


def blocked(index, block):
    return "index [%s] blocked by: [%s];" % (index, block)


def refused(call, status, reason):
    with pytest.raises(ApiError) as e:
        call()
    assert e.value.meta.status == status
    err = e.value.body["error"]
    assert err["type"] == "cluster_block_exception"
    assert err["reason"] == reason
    assert e.value.body["status"] == status


@pytest.fixture
def idx(es):
    name = "blocks-%d" % time.time_ns()
    es.indices.create(index=name)
    for i, d in enumerate(DOCS):
        es.index(index=name, id=str(i), document=d)
    es.indices.refresh(index=name)
    yield name
    for b in ("read_only", "read_only_allow_delete", "read", "write", "metadata"):
        try:
            es.indices.put_settings(index=name, settings={"index.blocks." + b: None})
        except ApiError:
            pass
    es.options(ignore_status=404).indices.delete(index=name)


def test_write_block(es, idx):
    es.indices.put_settings(index=idx, settings={"index.blocks.write": True})
    assert es.indices.get_settings(index=idx)[idx]["settings"]["index"]["blocks"]["write"] == "true"
    reason = blocked(idx, WRITE)
    refused(lambda: es.index(index=idx, id="new", document={"n": 99}), 403, reason)
    refused(lambda: es.delete(index=idx, id="0"), 403, reason)
    refused(lambda: es.update(index=idx, id="0", doc={"n": 5}), 403, reason)
    # Bulk items fail one by one with the block error; an unblocked index in the same
    # request is written.
    other = idx + "-free"
    resp = es.bulk(operations=[
        {"index": {"_index": idx, "_id": "b1"}}, {"n": 1},
        {"index": {"_index": other, "_id": "b2"}}, {"n": 2},
        {"delete": {"_index": idx, "_id": "1"}},
    ])
    assert resp["errors"] is True
    items = resp["items"]
    assert items[0]["index"]["status"] == 403
    assert items[0]["index"]["error"]["type"] == "cluster_block_exception"
    assert items[0]["index"]["error"]["reason"] == reason
    assert items[1]["index"]["status"] == 201
    assert items[2]["delete"]["status"] == 403
    es.indices.delete(index=other)
    # Reads, and metadata changes, stay allowed.
    assert es.count(index=idx)["count"] == len(DOCS)
    assert es.get(index=idx, id="3")["_source"] == DOCS[3]
    es.indices.put_mapping(index=idx, properties={"extra": {"type": "keyword"}})
    es.indices.put_settings(index=idx, settings={"index.blocks.write": False})
    es.index(index=idx, id="new", document={"n": 99}, refresh=True)
    assert es.count(index=idx)["count"] == len(DOCS) + 1


def test_block_settings_are_booleans(es, idx):
    with pytest.raises(ApiError) as e:
        es.indices.put_settings(index=idx, settings={"index.blocks.write": "yes"})
    assert e.value.meta.status == 400
    assert e.value.body["error"]["type"] == "illegal_argument_exception"
    es.index(index=idx, id="still", document={"n": 1})


def test_read_only_block(es, idx):
    es.indices.put_settings(index=idx, settings={"index.blocks.read_only": True})
    reason = blocked(idx, READ_ONLY)
    refused(lambda: es.index(index=idx, document={"n": 1}), 403, reason)
    refused(lambda: es.indices.put_mapping(index=idx, properties={"x": {"type": "keyword"}}),
            403, reason)
    refused(lambda: es.indices.put_settings(index=idx, settings={"index.refresh_interval": "5s"}),
            403, reason)
    refused(lambda: es.indices.put_alias(index=idx, name=idx + "-alias"), 403, reason)
    refused(lambda: es.indices.delete(index=idx), 403, reason)
    refused(lambda: es.indices.close(index=idx), 403, reason)
    # Reads and metadata reads work.
    odd = sum(1 for d in DOCS if d["tag"] == "odd")
    assert es.count(index=idx, query={"term": {"tag.keyword": "odd"}})["count"] == odd
    assert "mappings" in es.indices.get_mapping(index=idx)[idx]
    # The block setting itself can be changed (with others in the same request).
    es.indices.put_settings(index=idx, settings={"index.blocks.read_only": False,
                                                 "index.refresh_interval": "2s"})
    assert es.indices.get_settings(index=idx)[idx]["settings"]["index"]["refresh_interval"] == "2s"
    es.index(index=idx, id="x", document={"n": 1})


def test_read_block(es, idx):
    es.indices.put_settings(index=idx, settings={"index.blocks.read": True})
    reason = blocked(idx, READ)
    refused(lambda: es.search(index=idx), 403, reason)
    refused(lambda: es.count(index=idx), 403, reason)
    refused(lambda: es.get(index=idx, id="1"), 403, reason)
    # A search over several indices fails on the blocked one.
    other = idx + "-other"
    es.index(index=other, id="1", document={"n": 1}, refresh=True)
    try:
        refused(lambda: es.search(index="%s,%s" % (other, idx)), 403, reason)
        assert es.count(index=other)["count"] == 1
    finally:
        es.indices.delete(index=other)
    # Writes and metadata reads still work.
    es.index(index=idx, id="new", document={"n": 100}, refresh=True)
    assert es.indices.get_settings(index=idx)[idx]["settings"]["index"]["blocks"]["read"] == "true"
    es.indices.put_settings(index=idx, settings={"index.blocks.read": None})
    assert es.count(index=idx)["count"] == len(DOCS) + 1


def test_metadata_block(es, idx):
    es.indices.put_settings(index=idx, settings={"index.blocks.metadata": True})
    reason = blocked(idx, METADATA)
    refused(lambda: es.indices.get_settings(index=idx), 403, reason)
    refused(lambda: es.indices.get_mapping(index=idx), 403, reason)
    refused(lambda: es.indices.get(index=idx), 403, reason)
    refused(lambda: es.indices.put_mapping(index=idx, properties={"x": {"type": "keyword"}}),
            403, reason)
    refused(lambda: es.indices.put_settings(index=idx, settings={"index.blocks.metadata": False,
                                                                 "index.refresh_interval": "3s"}),
            403, reason)
    refused(lambda: es.indices.delete(index=idx), 403, reason)
    # Documents are still written and read.
    es.index(index=idx, id="new", document={"n": 1}, refresh=True)
    assert es.count(index=idx)["count"] == len(DOCS) + 1
    # The metadata block alone can be lifted.
    es.indices.put_settings(index=idx, settings={"index.blocks.metadata": False})
    assert "mappings" in es.indices.get_mapping(index=idx)[idx]


def test_add_block_api(es, idx):
    resp = es.indices.add_block(index=idx, block="write")
    assert resp.body == {"acknowledged": True, "shards_acknowledged": True,
                         "indices": [{"name": idx, "blocked": True}]}
    assert es.indices.get_settings(index=idx)[idx]["settings"]["index"]["blocks"]["write"] == "true"
    refused(lambda: es.index(index=idx, document={"n": 1}), 403, blocked(idx, WRITE))
    with pytest.raises(ApiError) as e:
        es.indices.add_block(index=idx, block="nonsense")
    assert e.value.meta.status == 400
    assert e.value.body["error"]["type"] == "illegal_argument_exception"
    assert e.value.body["error"]["reason"] == "No block found with name nonsense"
    # A read_only block is added on top; a read block is then refused (metadata writes are).
    es.indices.add_block(index=idx, block="read_only")
    refused(lambda: es.indices.add_block(index=idx, block="read"), 403, blocked(idx, READ_ONLY))
    es.indices.put_settings(index=idx, settings={"index.blocks.read_only": None})
    es.indices.put_settings(index=idx, settings={"index.blocks.write": None})
    es.index(index=idx, id="after", document={"n": 1})


def _free_bytes():
    server = conftest._state.get("server")
    path = getattr(server, "data_dir", None) or tempfile.gettempdir()
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def _wait_for(pred, what, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.2)
    pytest.fail("timed out waiting for " + what)


WATERMARKS = ("cluster.routing.allocation.disk.watermark.low",
              "cluster.routing.allocation.disk.watermark.high",
              "cluster.routing.allocation.disk.watermark.flood_stage")


def test_watermark_validation(es):
    with pytest.raises(ApiError) as e:
        es.cluster.put_settings(transient={WATERMARKS[0]: "85%", WATERMARKS[1]: "80%",
                                           WATERMARKS[2]: "95%"})
    assert e.value.meta.status == 400
    assert e.value.body["error"]["reason"] == \
        "low disk watermark [85%] more than high disk watermark [80%]"
    with pytest.raises(ApiError) as e:
        es.cluster.put_settings(transient={WATERMARKS[0]: "1gb", WATERMARKS[1]: "2gb",
                                           WATERMARKS[2]: "1mb"})
    assert e.value.body["error"]["reason"] == \
        "low disk watermark [1gb] less than high disk watermark [2gb]"
    with pytest.raises(ApiError) as e:
        es.cluster.put_settings(transient={"cluster.info.update.interval": "1s"})
    assert e.value.body["error"]["reason"] == (
        "failed to parse value [1s] for setting [cluster.info.update.interval], must be >= [10s]")
    # Percentages and byte values cannot be mixed.
    with pytest.raises(ApiError) as e:
        es.cluster.put_settings(transient={WATERMARKS[0]: "85%", WATERMARKS[1]: "90%",
                                           WATERMARKS[2]: "1gb"})
    assert e.value.meta.status == 400
    assert e.value.body["error"]["type"] == "illegal_argument_exception"
    # Nothing was applied.
    assert es.cluster.get_settings()["transient"] == {}


def test_flood_stage_blocks_and_releases(es, idx):
    free = _free_bytes()
    # Byte watermarks are minimums of free space; all above what the disk has, falling from
    # low to flood stage as ES requires.
    es.cluster.put_settings(transient={
        WATERMARKS[0]: "%db" % (free * 4),
        WATERMARKS[1]: "%db" % (free * 3),
        WATERMARKS[2]: "%db" % (free * 2),
        "cluster.info.update.interval": "10s",
    })
    no_retry = es.options(max_retries=0)
    try:
        def flagged():
            s = es.indices.get_settings(index=idx, flat_settings=True)[idx]["settings"]
            return s.get("index.blocks.read_only_allow_delete") == "true"
        _wait_for(flagged, "the flood-stage block")
        reason = blocked(idx, FLOOD)
        refused(lambda: no_retry.index(index=idx, document={"n": 1}), 429, reason)
        refused(lambda: no_retry.delete(index=idx, id="1"), 429, reason)
        # Reads work, and metadata changes too (ES 8: the block is a write block).
        assert es.count(index=idx)["count"] == len(DOCS)
        assert es.search(index=idx, query={"term": {"n": 4}})["hits"]["total"]["value"] == 1
        es.indices.put_settings(index=idx, settings={"index.refresh_interval": "2s"})
        # An index that is flood-blocked can be deleted.
        doomed = idx + "-doomed"
        es.options(max_retries=0, ignore_status=429).index(index=doomed, id="1", document={"n": 1})
        if es.indices.exists(index=doomed):
            _wait_for(lambda: es.indices.get_settings(index=doomed, flat_settings=True)[doomed]
                      ["settings"].get("index.blocks.read_only_allow_delete") == "true",
                      "the flood-stage block on the second index")
            es.indices.delete(index=doomed)
            assert not es.indices.exists(index=doomed)
        # Free space back above the high watermark (tiny byte watermarks: the test cannot
        # free real disk, and this machine's usage may lie between the default high and
        # flood-stage watermarks, where ES keeps the block): the block is lifted.
        es.cluster.put_settings(transient={WATERMARKS[0]: "3b", WATERMARKS[1]: "2b",
                                           WATERMARKS[2]: "1b"})
        _wait_for(lambda: "index.blocks.read_only_allow_delete" not in
                  es.indices.get_settings(index=idx, flat_settings=True)[idx]["settings"],
                  "the block to be released")
    finally:
        es.cluster.put_settings(transient={k: None for k in WATERMARKS + (
            "cluster.info.update.interval",)})
    es.index(index=idx, id="after", document={"n": 1}, refresh=True)
    assert es.count(index=idx)["count"] == len(DOCS) + 1


def test_blocks_at_creation(es):
    name = "blocks-created-%d" % time.time_ns()
    # Aliases given at creation are added whatever blocks the creation settings set.
    es.indices.create(index=name, settings={"index.blocks.metadata": True, "index.blocks.write": True},
                      aliases={name + "-alias": {}})
    try:
        refused(lambda: es.indices.get_alias(index=name), 403,
                blocked(name, METADATA))
        # Only the blocks of the level checked are listed (metadata writes here).
        refused(lambda: es.indices.update_aliases(actions=[
            {"remove": {"index": name, "alias": name + "-alias"}}]), 403,
            blocked(name, METADATA))
        refused(lambda: es.index(index=name + "-alias", document={"n": 1}), 403,
                "index [%s] blocked by: [%s];" % (name, WRITE))
    finally:
        es.indices.put_settings(index=name, settings={"index.blocks.metadata": False})
        es.indices.delete(index=name)
