"""`collapse.inner_hits`: each collapsed hit expanded with its group's documents (the request's
query within the group), per inner hits definition (`name`, `size`, `from`, `sort`, `_source`,
a second-level `collapse`); `max_concurrent_group_searches` validated. Expected groups are
computed here from the indexed documents."""

import random
from collections import defaultdict

import pytest
from elasticsearch import ApiError

import conftest

INDEX = "collapse_inner"
MAPPING = {"properties": {"g": {"type": "keyword"}, "n": {"type": "long"},
                          "s": {"type": "keyword"}, "w": {"type": "text"}}}


@pytest.fixture(scope="module")
def docs(es):
    rng = random.Random(9)
    docs = {}
    for i in range(60):
        d = {"n": i, "s": rng.choice(["x", "y", "z"]),
             "w": rng.choice(["red fox", "blue fox", "red dog"])}
        if i % 11:
            d["g"] = rng.choice(["a", "b", "c", "d"])
        docs[str(i)] = d
    conftest.make_index(es, INDEX, {"settings": {"number_of_shards": 2}, "mappings": MAPPING},
                        list(docs.items()))
    yield docs
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def search(es, body):
    return es.search(index=INDEX, body=body).body


def test_inner_hits_expand_each_group(es, docs):
    r = search(es, {"query": {"match": {"w": "red"}}, "sort": [{"n": "desc"}], "size": 10,
                    "collapse": {"field": "g", "max_concurrent_group_searches": 3, "inner_hits": [
                        {"name": "first", "size": 2, "sort": [{"n": "asc"}], "_source": ["n"]},
                        {"name": "rest", "from": 1, "size": 3, "sort": [{"n": "desc"}]}]}})
    matching = {i: d for i, d in docs.items() if "red" in d["w"].split()}
    groups = defaultdict(list)
    for i, d in matching.items():
        groups[d.get("g")].append((d["n"], i))
    order = sorted(groups, key=lambda g: -max(groups[g])[0])
    assert [h["fields"]["g"][0] for h in r["hits"]["hits"]] == order
    for h in r["hits"]["hits"]:
        g = h["fields"]["g"][0]
        members = sorted(groups[g])
        first = h["inner_hits"]["first"]["hits"]
        assert first["total"] == {"value": len(members), "relation": "eq"}
        assert [x["_id"] for x in first["hits"]] == [i for _, i in members[:2]]
        assert [x["_source"] for x in first["hits"]] == [{"n": n} for n, _ in members[:2]]
        assert [x["sort"] for x in first["hits"]] == [[n] for n, _ in members[:2]]
        rest = h["inner_hits"]["rest"]["hits"]
        assert [x["_id"] for x in rest["hits"]] == [i for _, i in sorted(members, reverse=True)[1:4]]
        assert rest["hits"][0]["_source"] == docs[rest["hits"][0]["_id"]] if rest["hits"] else True


def test_second_level_collapse(es, docs):
    r = search(es, {"sort": ["n"], "size": 4, "collapse": {"field": "g", "inner_hits": {
        "name": "by_s", "size": 10, "sort": ["n"], "collapse": {"field": "s"}}}})
    for h in r["hits"]["hits"]:
        g = h["fields"]["g"][0]
        members = sorted((d["n"], d["s"]) for d in docs.values() if d.get("g") == g)
        seen, want = set(), []
        for n, s in members:
            if s not in seen:
                seen.add(s)
                want.append(s)
        inner = h["inner_hits"]["by_s"]["hits"]
        assert [x["fields"]["s"][0] for x in inner["hits"]] == want
        assert inner["total"]["value"] == len(members)


@pytest.mark.parametrize("collapse,etype", [
    ({"field": "g", "max_concurrent_group_searches": 0}, "illegal_argument_exception"),
    ({"field": "g", "inner_hits": {"name": "x", "bogus": 1}}, "x_content_parse_exception"),
    ({"field": "g", "inner_hits": [{"name": "x"}, {"name": "x"}]}, "illegal_argument_exception"),
    ({"field": "g", "inner_hits": {"name": "x", "size": -1}}, "illegal_argument_exception"),
])
def test_refused(es, docs, collapse, etype):
    with pytest.raises(ApiError) as ei:
        search(es, {"collapse": collapse})
    assert ei.value.meta.status == 400
    assert ei.value.body["error"]["root_cause"][0]["type"] == etype
