"""A stored index's state is read back leniently; requests stay strict.

Elasticsearch parses the mappings of indices created by an older version leniently
(`FieldMapper.Builder#parse`: an unknown parameter is removed with "Parameter [x] has no effect
on type [y] and will be removed in future"). Lode's rule: a mapping parameter that today's
parser refuses as unknown for its type, found in an index's stored state, was accepted by the
Lode that wrote it; the index opens without it (a warning names index, field and parameter).

The test simulates an older Lode: it creates an index through the API, indexes documents,
stops its own `lode serve`, adds parameters today's parser refuses to the stored state file,
and restarts on the same data. The index must open with every document reachable, `GET
_mapping` must not show the dropped parameters, and requests carrying them are still refused.
Stored settings with values refused today are archived (`archived.<key>`), as ES's
`IndexScopedSettings#archiveUnknownOrInvalidSettings` does.

This module starts its own `lode serve` (the session server is not restarted).
"""

import json
import os
import re

import pytest

from conftest import LodeServer, client, error_of, lode_binary

INDEX = "stored-lenient"
MAPPING = {
    "properties": {
        "w": {"type": "wildcard"},
        "m": {"type": "match_only_text"},
        "k": {"type": "keyword"},
        "n": {"type": "long"},
        "o": {"properties": {"c": {"type": "keyword"}}},
    }
}
# What an older Lode accepted and today's refuses, per field (and at the root).
INJECTED = {
    "w": {"index_options": "docs"},
    "m": {"norms": False},
    "k": {"bogus_param": 1},
}
# Stored setting values today's Lode refuses: archived, as ES archives them.
INVALID_SETTINGS = {"index.codec": "no_such_codec", "index.translog.durability": "sometimes"}
WORDS = ["alpha", "beta", "gamma", "delta"]
DOCS = {
    str(i): {
        "w": "code-%03d-%s" % (i, WORDS[i % 4]),
        "m": "%s and %s" % (WORDS[i % 4], WORDS[(i + 1) % 4]),
        "k": WORDS[i % 3],
        "n": i,
        "o": {"c": WORDS[(i + 2) % 4]},
    }
    for i in range(24)
}


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    base = str(tmp_path_factory.mktemp("stored_lenient"))
    server = LodeServer(lode_binary(), base)
    server.start()
    es = client(server.url)
    es.indices.create(index=INDEX, settings={"number_of_shards": 2, "number_of_replicas": 0},
                      mappings=MAPPING)
    ops = []
    for doc_id, doc in DOCS.items():
        ops += [{"index": {"_index": INDEX, "_id": doc_id}}, doc]
    assert not es.bulk(operations=ops, refresh=True)["errors"]
    uuid = es.indices.get_settings(index=INDEX)[INDEX]["settings"]["index"]["uuid"]
    es.indices.flush(index=INDEX)
    data_dir = server.data_dir
    server.stop()

    state_file = os.path.join(data_dir, "indices", uuid, "_state.json")
    with open(state_file) as f:
        state = json.load(f)
    props = state["mappings"]["properties"]
    for field, params in INJECTED.items():
        props[field].update(params)
    props["o"]["flavour"] = "x"
    state["settings"].update(INVALID_SETTINGS)
    with open(state_file, "w") as f:
        json.dump(state, f)

    os.symlink(data_dir, os.path.join(base, "data-%d" % (server.generation + 1)))
    server.start()
    try:
        yield server, client(server.url)
    finally:
        server.stop()


def ids(resp):
    return sorted(h["_id"] for h in resp["hits"]["hits"])


def test_the_index_opens_with_every_document(node):
    _, es = node
    assert es.cluster.health(index=INDEX, wait_for_status="green", timeout="30s")["status"] \
        == "green"
    assert es.count(index=INDEX)["count"] == len(DOCS)
    for doc_id, doc in DOCS.items():
        assert es.get(index=INDEX, id=doc_id)["_source"] == doc


@pytest.mark.parametrize("query,oracle", [
    ({"wildcard": {"w": {"value": "*-beta"}}}, lambda d: d["w"].endswith("-beta")),
    ({"term": {"k": "gamma"}}, lambda d: d["k"] == "gamma"),
    ({"match": {"m": "delta"}}, lambda d: "delta" in d["m"].split()),
    ({"range": {"n": {"gte": 5, "lt": 11}}}, lambda d: 5 <= d["n"] < 11),
    ({"term": {"o.c": "alpha"}}, lambda d: d["o"]["c"] == "alpha"),
])
def test_documents_are_searchable(node, query, oracle):
    _, es = node
    expected = sorted(i for i, d in DOCS.items() if oracle(d))
    assert expected
    assert ids(es.search(index=INDEX, query=query, size=100)) == expected


def test_get_mapping_does_not_show_dropped_parameters(node):
    _, es = node
    props = es.indices.get_mapping(index=INDEX)[INDEX]["mappings"]["properties"]
    assert props == MAPPING["properties"]


def test_the_warning_names_index_field_and_parameter(node):
    server, _ = node
    with open(server.stderr_path, "rb") as f:
        log = re.sub(r"\x1b\[[0-9;]*m", "", f.read().decode("utf-8", "replace"))
    lines = [line for line in log.splitlines() if "stored mapping" in line]
    for field, params in list(INJECTED.items()) + [("o", {"flavour": "x"})]:
        for param in params:
            assert any(INDEX in line and "field=%s " % field in line
                       and "parameter=%s" % param in line for line in lines), (field, param, lines)


@pytest.mark.parametrize("field,param,value,ty", [
    ("w", "index_options", "docs", "wildcard"),
    ("m", "norms", False, "match_only_text"),
])
def test_requests_with_the_parameter_are_still_refused(node, field, param, value, ty):
    _, es = node
    why = "unknown parameter [%s] on mapper [%s] of type [%s]" % (param, field, ty)
    definition = {"type": ty, param: value}
    status, body = error_of(lambda: es.indices.put_mapping(index=INDEX,
                                                           properties={field: definition}))
    assert status == 400
    assert body["error"]["type"] == "mapper_parsing_exception"
    assert body["error"]["reason"] == "Failed to parse mapping: " + why
    status, body = error_of(lambda: es.indices.create(
        index="stored-lenient-new", mappings={"properties": {field: definition}}))
    assert status == 400
    assert body["error"]["type"] == "mapper_parsing_exception"
    assert body["error"]["reason"] == "Failed to parse mapping: " + why
    assert not es.indices.exists(index="stored-lenient-new")


def test_the_mapping_still_takes_updates_and_documents(node):
    _, es = node
    es.indices.put_mapping(index=INDEX, properties={"added": {"type": "keyword"}})
    es.index(index=INDEX, id="new", document={"w": "code-new", "added": "yes"}, refresh=True)
    assert ids(es.search(index=INDEX, query={"term": {"added": "yes"}})) == ["new"]
    assert ids(es.search(index=INDEX, query={"wildcard": {"w": {"value": "code-new"}}})) \
        == ["new"]
    es.delete(index=INDEX, id="new", refresh=True)


def test_invalid_stored_settings_are_archived(node):
    _, es = node
    settings = es.indices.get_settings(index=INDEX, flat_settings=True)[INDEX]["settings"]
    for key, value in INVALID_SETTINGS.items():
        assert key not in settings
        assert settings["archived." + key] == value
    # setting an archived key is not a thing (the key is an `index.` one as any other);
    # removing them with a pattern is
    status, body = error_of(lambda: es.indices.put_settings(
        index=INDEX, settings={"archived.index.codec": "default"}))
    assert status == 400
    assert body["error"]["reason"].startswith("unknown setting [index.archived.index.codec]")
    es.indices.put_settings(index=INDEX, settings={"archived.*": None})
    settings = es.indices.get_settings(index=INDEX, flat_settings=True)[INDEX]["settings"]
    assert not [k for k in settings if k.startswith("archived.")]
    assert settings["index.number_of_shards"] == "2"
    assert es.count(index=INDEX)["count"] >= len(DOCS)
