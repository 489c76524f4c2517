"""Aliases through the official client: filtered aliases on the accounts corpus (counts checked
against the generated documents), write indices, and the errors Elasticsearch gives."""
import pytest
from elasticsearch import BadRequestError, NotFoundError

from conftest import make_index


@pytest.fixture
def filtered(es, accounts):
    es.indices.update_aliases(actions=[
        {"add": {"index": "accounts", "alias": "accounts-status0", "filter": {"term": {"status": 0}}}},
        {"add": {"index": "accounts", "alias": "accounts-status1", "filter": {"term": {"status": 1}}}},
        {"add": {"index": "accounts", "alias": "accounts-all"}},
    ])
    yield
    es.indices.delete_alias(index="accounts", name="accounts-*")


def test_filtered_alias_counts_and_aggs(es, corpus, filtered):
    exp0 = corpus.count(lambda d: d["status"] == 0)
    assert es.count(index="accounts-status0")["count"] == exp0
    # Two filtered aliases of one index: their filters are OR-ed.
    exp01 = corpus.count(lambda d: d["status"] in (0, 1))
    assert es.count(index="accounts-status0,accounts-status1")["count"] == exp01
    # An unfiltered alias (or the index itself) next to a filtered one lifts the filter.
    assert es.count(index="accounts-status0,accounts-all")["count"] == corpus.n
    assert es.count(index="accounts-status0,accounts")["count"] == corpus.n
    resp = es.search(index="accounts-status1", size=0, query={"term": {"acctType": "BASIC"}},
                     aggs={"s": {"terms": {"field": "status"}}})
    exp = corpus.count(lambda d: d["status"] == 1 and d["acctType"] == "BASIC")
    assert resp["hits"]["total"]["value"] == exp
    assert [(b["key"], b["doc_count"]) for b in resp["aggregations"]["s"]["buckets"]] == \
        ([(1, exp)] if exp else [])


def test_get_alias_shapes(es, filtered):
    got = es.indices.get_alias(name="accounts-status0").body
    assert got == {"accounts": {"aliases": {"accounts-status0": {"filter": {"term": {"status": 0}}}}}}
    assert es.indices.exists_alias(name="accounts-all")
    assert not es.indices.exists_alias(name="no-such-alias")
    assert "accounts-all" in es.indices.get(index="accounts")["accounts"]["aliases"]


def test_write_index_and_errors(es):
    make_index(es, "al-1", {}, [("1", {"v": 1})])
    make_index(es, "al-2", {}, [("2", {"v": 2})])
    es.indices.put_alias(index="al-1", name="al-w", is_write_index=True)
    es.indices.put_alias(index="al-2", name="al-w")
    r = es.index(index="al-w", id="3", document={"v": 3}, refresh=True)
    assert r["_index"] == "al-1"
    assert es.count(index="al-w")["count"] == 3
    # A single-document read through an alias of two indices is refused.
    with pytest.raises(BadRequestError) as ei:
        es.get(index="al-w", id="1")
    assert ei.value.body["error"]["type"] == "illegal_argument_exception"
    # Deleting an alias name as if it were an index is refused; the indices stay.
    with pytest.raises(BadRequestError):
        es.indices.delete(index="al-w")
    assert es.indices.exists(index="al-1") and es.indices.exists(index="al-2")
    # An index cannot take the name of an alias.
    with pytest.raises(BadRequestError) as ei:
        es.indices.create(index="al-w")
    assert ei.value.body["error"]["type"] == "invalid_index_name_exception"
    with pytest.raises(NotFoundError):
        es.indices.delete_alias(index="al-1", name="nope")
    es.indices.delete(index="al-1,al-2")
    assert not es.indices.exists_alias(name="al-w")
