"""`GET _nodes/stats/{metric}/{index_metric}`: the `indices` section limited to the named
`_stats` groups, ES's errors for index metrics without `indices` and for unknown names."""

import pytest
from elasticsearch import BadRequestError


def node_of(resp):
    (node,) = resp["nodes"].values()
    return node


def test_index_metrics_pick_the_indices_groups(es):
    es.indices.create(index="nsim", settings={"number_of_shards": 1})
    docs = [{"n": i} for i in range(7)]
    for i, d in enumerate(docs):
        es.index(index="nsim", id=str(i), document=d)
    es.indices.refresh(index="nsim")
    es.search(index="nsim", query={"match_all": {}})
    try:
        resp = es.nodes.stats(metric="indices", index_metric="docs,search")
        indices = node_of(resp)["indices"]
        assert set(indices) == {"docs", "search"}
        # Every document of every index on the node (others may exist): at least ours.
        assert indices["docs"]["count"] >= len(docs)
        assert indices["search"]["query_total"] >= 1
        assert "scroll_current" in indices["search"]
        # Only the named node sections.
        assert "jvm" not in node_of(resp)
        full = node_of(es.nodes.stats(metric="indices"))["indices"]
        assert {"docs", "search", "store", "indexing"} <= set(full)
    finally:
        es.indices.delete(index="nsim")


def test_index_metrics_need_the_indices_metric(es):
    with pytest.raises(BadRequestError) as e:
        es.nodes.stats(metric="jvm", index_metric="search")
    assert e.value.meta.status == 400
    assert e.value.error == "illegal_argument_exception"
    assert "contains index metrics [search] but indices stats not requested" in str(e.value)


def test_unknown_index_metric_is_refused(es):
    with pytest.raises(BadRequestError) as e:
        es.nodes.stats(metric="indices", index_metric="serch")
    assert e.value.error == "illegal_argument_exception"
    assert "unrecognized metric: [serch] -> did you mean [search]?" in str(e.value)
