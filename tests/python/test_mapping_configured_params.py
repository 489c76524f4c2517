"""GET _mapping shows the parameters that are configured, as Elasticsearch 8 serializes them.

ES writes a mapper's parameter when it is configured (`FieldMapper.Parameter#isConfigured`:
set, and different from its default) or when `include_defaults` is asked, which `GET
_mapping` does not take (ES 8 refuses it as an unrecognized parameter; only the field mapping
API has it). So a parameter stated with its default in a request is not echoed.
"""

import pytest
from elasticsearch import BadRequestError

INDEX = "mapping_configured_params"
STATED = {
    "k": {"type": "keyword", "index": True, "doc_values": True, "store": False,
          "norms": False, "index_options": "docs", "eager_global_ordinals": False},
    "t": {"type": "text", "index": True, "norms": True, "index_options": "positions",
          "term_vector": "no", "index_phrases": False, "fielddata": False,
          "fields": {"raw": {"type": "keyword", "doc_values": True}}},
    "d": {"type": "date", "format": "strict_date_optional_time||epoch_millis"},
    "n": {"type": "long", "index": True, "store": False},
    "b": {"type": "binary", "doc_values": False},
}
EXPECTED = {
    "k": {"type": "keyword"},
    "t": {"type": "text", "fields": {"raw": {"type": "keyword"}}},
    "d": {"type": "date"},
    "n": {"type": "long"},
    "b": {"type": "binary"},
}
# Set away from the default: configured, shown as given.
CONFIGURED = {
    "k2": {"type": "keyword", "index": False, "doc_values": False, "store": True},
    "t2": {"type": "text", "norms": False, "index_options": "freqs", "analyzer": "standard"},
    "d2": {"type": "date", "format": "yyyy"},
    "b2": {"type": "binary", "doc_values": True},
}


@pytest.fixture
def index(es):
    es.options(ignore_status=404).indices.delete(index=INDEX)
    es.indices.create(index=INDEX, mappings={"properties": {**STATED, **CONFIGURED}})
    yield INDEX
    es.options(ignore_status=404).indices.delete(index=INDEX)


def props(es):
    return es.indices.get_mapping(index=INDEX)[INDEX]["mappings"]["properties"]


def test_defaults_stated_at_create_are_not_echoed(es, index):
    assert props(es) == {**EXPECTED, **CONFIGURED}


def test_defaults_stated_in_an_update_are_not_echoed(es, index):
    es.indices.put_mapping(index=index, properties={
        "new": {"type": "keyword", "index": True, "store": False},
        "k": {"type": "keyword", "doc_values": True},
    })
    p = props(es)
    assert p["new"] == {"type": "keyword"}
    assert p["k"] == {"type": "keyword"}


def test_the_fields_work_as_their_effective_parameters_say(es, index):
    es.index(index=index, id="1", refresh=True,
             document={"k": "x", "t": "quick fox", "d": "2020-01-02", "n": 5})
    assert es.count(index=index, query={"term": {"n": 5}})["count"] == 1
    assert es.count(index=index, query={"term": {"k": "x"}})["count"] == 1
    assert es.count(index=index, query={"match_phrase": {"t": "quick fox"}})["count"] == 1
    assert es.count(index=index, query={"range": {"d": {"gte": "2020-01-01"}}})["count"] == 1


def test_include_defaults_is_refused(es, index):
    with pytest.raises(BadRequestError) as e:
        es.perform_request("GET", f"/{index}/_mapping", params={"include_defaults": "true"})
    assert e.value.error == "illegal_argument_exception"
    assert "contains unrecognized parameter: [include_defaults]" in \
        e.value.info["error"]["reason"]


@pytest.mark.parametrize("field,update,param,old,new", [
    ("k", {"type": "keyword", "index": False}, "index", "true", "false"),
    ("n", {"type": "long", "store": True}, "store", "false", "true"),
    ("d", {"type": "date", "format": "yyyy"}, "format",
     "strict_date_optional_time||epoch_millis", "yyyy"),
])
def test_a_default_not_kept_conflicts_with_its_value(es, index, field, update, param, old, new):
    with pytest.raises(BadRequestError) as e:
        es.indices.put_mapping(index=index, properties={field: update})
    assert e.value.error == "illegal_argument_exception"
    assert e.value.info["error"]["reason"] == (
        f"Mapper for [{field}] conflicts with existing mapper:\n\t"
        f"Cannot update parameter [{param}] from [{old}] to [{new}]")
