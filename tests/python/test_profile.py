"""`"profile": true`: Elasticsearch 8's `profile.shards` shape, keys and types, the query tree
matching the query, real (positive) timings, aggregation profiles whose counts and debug
fields are computed here from the indexed documents, and hits/aggregations unchanged by
profiling."""

import random

import pytest

import conftest

INDEX = "profile_docs"
MAPPING = {"properties": {"title": {"type": "text"}, "n": {"type": "long"},
                          "x": {"type": "double"}, "tag": {"type": "keyword"}}}
QUERY_KEYS = ["create_weight", "build_scorer", "next_doc", "advance", "score", "match",
              "shallow_advance", "compute_max_score", "set_min_competitive_score"]
AGG_KEYS = ["initialize", "build_leaf_collector", "collect", "post_collection",
            "build_aggregation", "reduce"]
WORDS = ["quick", "brown", "fox", "lazy", "dog"]


@pytest.fixture(scope="module")
def docs(es):
    rng = random.Random(11)
    docs = {str(i): {"title": " ".join(rng.sample(WORDS, 2)), "n": rng.randrange(0, 40),
                     "x": rng.randrange(0, 100) / 4, "tag": rng.choice(["a", "b", "c"])}
            for i in range(80)}
    conftest.make_index(es, INDEX, {"settings": {"number_of_shards": 2}, "mappings": MAPPING},
                        list(docs.items()))
    yield docs
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def search(es, body):
    return es.search(index=INDEX, body=body).body


def check_node(node):
    assert isinstance(node["type"], str) and node["type"]
    assert isinstance(node["description"], str)
    b = node["breakdown"]
    for k in QUERY_KEYS:
        assert isinstance(b[k], int) and b[k] >= 0
        assert isinstance(b[k + "_count"], int) and b[k + "_count"] >= 0
    assert node["time_in_nanos"] == sum(v for k, v in b.items() if not k.endswith("_count"))
    for c in node.get("children", []):
        check_node(c)


def shards_of(r):
    shards = r["profile"]["shards"]
    for s in shards:
        assert s["id"] == f"[{s['node_id']}][{s['index']}][{s['shard_id']}]"
        assert s["index"] == INDEX and s["cluster"] == "(local)"
        assert len(s["searches"]) == 1
        search = s["searches"][0]
        assert isinstance(search["rewrite_time"], int) and search["rewrite_time"] >= 0
        for c in search["collector"]:
            assert isinstance(c["name"], str) and isinstance(c["reason"], str)
            assert isinstance(c["time_in_nanos"], int)
        for q in search["query"]:
            check_node(q)
    assert [s["id"] for s in shards] == sorted(s["id"] for s in shards)
    return shards


def test_bool_query_tree_and_timings(es, docs):
    body = {"query": {"bool": {"must": [{"match": {"title": "fox"}}],
                               "filter": [{"range": {"n": {"gte": 10}}}],
                               "must_not": [{"term": {"tag": "c"}}]}},
            "size": 100}
    plain = search(es, body)
    r = search(es, dict(body, profile=True))
    want = {i for i, d in docs.items()
            if "fox" in d["title"].split() and d["n"] >= 10 and d["tag"] != "c"}
    assert {h["_id"] for h in r["hits"]["hits"]} == want
    assert [h["_id"] for h in r["hits"]["hits"]] == [h["_id"] for h in plain["hits"]["hits"]]
    shards = shards_of(r)
    assert len(shards) == 2
    for s in shards:
        (root,) = s["searches"][0]["query"]
        assert root["type"] == "BooleanQuery"
        assert root["description"] == "+title:fox #n:[10 TO 9223372036854775807] -tag:c"
        kinds = [(c["type"], c["description"]) for c in root["children"]]
        assert kinds == [("TermQuery", "title:fox"),
                         ("IndexOrDocValuesQuery", "n:[10 TO 9223372036854775807]"),
                         ("TermQuery", "tag:c")]
        b = root["breakdown"]
        # real measurements: the weight was created and scorers were built
        assert b["create_weight_count"] == 1 and b["create_weight"] > 0
        assert b["build_scorer_count"] >= 1 and b["build_scorer"] > 0
        assert root["time_in_nanos"] > 0
        for k in ("match", "shallow_advance", "compute_max_score", "set_min_competitive_score"):
            assert b[k] == 0
        (qpc,) = s["searches"][0]["collector"]
        assert qpc["name"] == "QueryPhaseCollector"
        assert qpc["children"][0]["reason"] == "search_top_hits"
    # the hits of each shard were fetched: its fetch section counts them
    fetched = sum(s["fetch"]["breakdown"]["load_stored_fields_count"]
                  for s in shards if "fetch" in s)
    assert fetched == len(want)


def test_match_all_default_and_size_zero(es, docs):
    r = search(es, {"profile": True, "size": 0})
    for s in shards_of(r):
        (root,) = s["searches"][0]["query"]
        assert (root["type"], root["description"]) == ("MatchAllDocsQuery", "*:*")
        assert s["searches"][0]["collector"][0]["children"][0]["name"] == "TotalHitCountCollector"
        assert "fetch" not in s
    assert r["hits"]["total"]["value"] == len(docs)


def test_aggregation_profiles(es, docs):
    body = {"size": 0, "profile": True, "query": {"range": {"n": {"lt": 30}}},
            "aggs": {"h": {"histogram": {"field": "n", "interval": 10}},
                     "t": {"terms": {"field": "tag"}, "aggs": {"m": {"max": {"field": "x"}}}},
                     "c": {"cardinality": {"field": "x"}}}}
    r = search(es, body)
    matching = [d for d in docs.values() if d["n"] < 30]
    hist = {}
    for d in matching:
        hist[d["n"] // 10 * 10] = hist.get(d["n"] // 10 * 10, 0) + 1
    assert {b["key"]: b["doc_count"] for b in r["aggregations"]["h"]["buckets"]} == hist
    shards = shards_of(r)
    collected = 0
    for s in shards:
        aggs = {a["description"]: a for a in s["aggregations"]}
        assert aggs["h"]["type"] == "NumericHistogramAggregator"
        assert aggs["t"]["type"] == "GlobalOrdinalsStringTermsAggregator"
        assert aggs["c"]["type"] == "CardinalityAggregator"
        for a in aggs.values():
            for k in AGG_KEYS:
                assert isinstance(a["breakdown"][k], int)
                assert isinstance(a["breakdown"][k + "_count"], int)
            assert a["breakdown"]["reduce"] == 0
            assert a["time_in_nanos"] == sum(
                v for k, v in a["breakdown"].items() if not k.endswith("_count"))
        h = aggs["h"]
        assert h["breakdown"]["initialize"] > 0 and h["breakdown"]["collect"] > 0
        collected += h["breakdown"]["collect_count"]
        assert aggs["c"]["debug"]["numeric_collectors_used"] > 0
        assert aggs["c"]["debug"]["ordinals_collectors_used"] == 0
        (child,) = aggs["t"]["children"]
        assert (child["type"], child["description"]) == ("MaxAggregator", "m")
        col = s["searches"][0]["collector"][0]["children"]
        assert col[1]["reason"] == "aggregation"
    # every matching document was collected once, on its shard
    assert collected == len(matching)
    # total_buckets: the non-empty buckets over both shards are at least the merged ones
    assert sum(s_aggs["debug"]["total_buckets"] for s in shards
               for s_aggs in s["aggregations"] if s_aggs["description"] == "h") >= len(hist)
    plain = search(es, dict(body, profile=False))
    assert plain["aggregations"]["h"] == r["aggregations"]["h"]
    assert plain["aggregations"]["t"] == r["aggregations"]["t"]
    assert "profile" not in plain


def test_profile_must_be_boolean(es, docs):
    from elasticsearch import BadRequestError
    with pytest.raises(BadRequestError) as e:
        es.search(index=INDEX, body={"profile": {"x": 1}})
    assert e.value.status_code == 400
