"""A `constant_keyword`'s doc values hold its value for every document of the index.

ES's `ConstantKeywordFieldType#fielddataBuilder` is a `ConstantIndexFieldData`: every document
reads the mapping's value, including the documents indexed before a document set it (which
stored nothing), and no document reads anything while the mapping has no value. So, for the
oracle here: once the value is set, every document has exactly one value, the mapping's; before,
none has any. Aggregations, sorts, `docvalue_fields`, scripts and `top_metrics` all read it.
"""

import random

import pytest

VALUE = "logs-web"


def load(es, index, shards, before, after, seed):
    """`before` documents without the field (over several refreshes, so several segments),
    then one that sets the value, then `after` that may or may not send it."""
    es.indices.delete(index=index, ignore_unavailable=True)
    es.indices.create(
        index=index,
        settings={"number_of_shards": shards},
        mappings={"properties": {"c": {"type": "constant_keyword"}, "n": {"type": "long"}}},
    )
    rng = random.Random(seed)
    n = 0
    for _ in range(before):
        es.index(index=index, id=str(n), document={"n": n}, refresh=rng.random() < 0.3)
        n += 1
    es.index(index=index, id=str(n), document={"n": n, "c": VALUE})
    n += 1
    for _ in range(after):
        doc = {"n": n, "c": VALUE} if rng.random() < 0.5 else {"n": n}
        es.index(index=index, id=str(n), document=doc)
        n += 1
    es.indices.refresh(index=index)
    return n


@pytest.fixture(params=[1, 3])
def ck(es, request):
    index = f"ck_dv_{request.param}"
    total = load(es, index, request.param, before=23, after=11, seed=request.param)
    yield index, total
    es.indices.delete(index=index, ignore_unavailable=True)


def test_aggregations_see_the_value_on_every_document(es, ck):
    index, total = ck
    aggs = es.search(index=index, size=0, aggs={
        "t": {"terms": {"field": "c"}},
        "card": {"cardinality": {"field": "c"}},
        "count": {"value_count": {"field": "c"}},
        "miss": {"missing": {"field": "c"}},
        "comp": {"composite": {"sources": [{"c": {"terms": {"field": "c"}}}]}},
        "sig": {"significant_terms": {"field": "c", "min_doc_count": 1}},
        "top": {"top_metrics": {"metrics": {"field": "c"}, "sort": {"n": "asc"}}},
        "filtered": {"filter": {"range": {"n": {"lt": 5}}},
                     "aggs": {"t": {"terms": {"field": "c"}}}},
    })["aggregations"]
    assert [(b["key"], b["doc_count"]) for b in aggs["t"]["buckets"]] == [(VALUE, total)]
    assert aggs["card"]["value"] == 1
    assert aggs["count"]["value"] == total
    assert aggs["miss"]["doc_count"] == 0
    assert [(b["key"], b["doc_count"]) for b in aggs["comp"]["buckets"]] == [({"c": VALUE}, total)]
    # the subset is the whole index: a term in every document is not significant
    assert aggs["sig"]["doc_count"] == total
    assert aggs["sig"]["bg_count"] == total
    assert aggs["top"]["top"] == [{"sort": [0], "metrics": {"c": VALUE}}]
    assert [(b["key"], b["doc_count"]) for b in aggs["filtered"]["t"]["buckets"]] == [(VALUE, 5)]


def test_sorts_doc_values_and_scripts_see_the_value(es, ck):
    index, total = ck
    resp = es.search(
        index=index,
        size=total,
        sort=[{"c": "desc"}, {"n": "asc"}],
        docvalue_fields=["c"],
        script_fields={"s": {"script": "doc['c'].size() == 0 ? 'none' : doc['c'].value"}},
    )
    hits = resp["hits"]["hits"]
    assert [h["sort"] for h in hits] == [[VALUE, n] for n in range(total)]
    assert all(h["fields"]["c"] == [VALUE] for h in hits)
    assert all(h["fields"]["s"] == [VALUE] for h in hits)


def test_no_value_yet_means_no_values(es):
    index = "ck_dv_unset"
    es.indices.delete(index=index, ignore_unavailable=True)
    es.indices.create(
        index=index,
        mappings={"properties": {"c": {"type": "constant_keyword"}, "n": {"type": "long"}}},
    )
    for n in range(5):
        es.index(index=index, id=str(n), document={"n": n})
    es.indices.refresh(index=index)
    resp = es.search(
        index=index,
        size=5,
        sort=[{"c": "asc"}, {"n": "desc"}],
        aggs={"t": {"terms": {"field": "c"}}, "miss": {"missing": {"field": "c"}},
              "count": {"value_count": {"field": "c"}}},
    )
    assert resp["aggregations"]["t"]["buckets"] == []
    assert resp["aggregations"]["miss"]["doc_count"] == 5
    assert resp["aggregations"]["count"]["value"] == 0
    # every document sorts as missing (last), so the tie-break decides
    assert [h["_id"] for h in resp["hits"]["hits"]] == ["4", "3", "2", "1", "0"]
    assert all(h["sort"][0] is None for h in resp["hits"]["hits"])
    es.indices.delete(index=index)
