"""PUT _mapping on an existing field merges as Elasticsearch 8 merges it
(`FieldMapper.Builder#merge`): the update's definition is complete, every parameter it leaves
out has its default. An updateable parameter left out goes back to its default (`ignore_above`,
`copy_to` replaced), a fixed one set away from its default is a conflict naming both values,
stating a default a field left out is no change, and multi-fields left out stay.
"""

import pytest
from elasticsearch import BadRequestError

INDEX = "mapping_omitted_params"
BASE = {
    "f": {"type": "keyword", "doc_values": False},
    "t": {"type": "text", "index_options": "docs"},
    "a": {"type": "text", "analyzer": "whitespace", "fields": {"raw": {"type": "keyword"}}},
    "n": {"type": "long", "null_value": 3},
    "k": {"type": "keyword", "ignore_above": 10, "copy_to": "a"},
    "s": {"type": "text", "norms": False},
    "plain": {"type": "keyword"},
    "d": {"type": "date", "format": "yyyy"},
    "dn": {"type": "date_nanos", "format": "strict_date_optional_time_nanos"},
    "dr": {"type": "date_range", "format": "yyyy-MM-dd"},
    "dl": {"type": "date", "locale": "en-us"},
    "dp": {"type": "date"},
    "g": {"type": "text", "position_increment_gap": 10},
    "sim": {"type": "text", "similarity": "boolean"},
    "sf": {"type": "scaled_float", "scaling_factor": 10},
}


@pytest.fixture
def index(es):
    es.options(ignore_status=404).indices.delete(index=INDEX)
    es.indices.create(index=INDEX, mappings={"properties": BASE})
    yield INDEX
    es.options(ignore_status=404).indices.delete(index=INDEX)


def props(es):
    return es.indices.get_mapping(index=INDEX)[INDEX]["mappings"]["properties"]


@pytest.mark.parametrize("field,update,param,old,new", [
    ("f", {"type": "keyword"}, "doc_values", "false", "true"),
    ("t", {"type": "text"}, "index_options", "docs", "positions"),
    ("a", {"type": "text"}, "analyzer", "whitespace", "default"),
    ("n", {"type": "long"}, "null_value", "3", "null"),
    ("s", {"type": "text"}, "norms", "false", "true"),
    # ES 8's defaults: DateFieldMapper (the resolution's pattern, DEFAULT_LOCALE English),
    # RangeFieldMapper, TextParams (similarity null, position_increment_gap -1: the analyzer's)
    ("d", {"type": "date"}, "format", "yyyy", "strict_date_optional_time||epoch_millis"),
    ("dn", {"type": "date_nanos"}, "format", "strict_date_optional_time_nanos",
     "strict_date_optional_time_nanos||epoch_millis"),
    ("dr", {"type": "date_range"}, "format", "yyyy-MM-dd",
     "strict_date_optional_time||epoch_millis"),
    ("dl", {"type": "date"}, "locale", "en_US", "en"),
    ("g", {"type": "text"}, "position_increment_gap", "10", "-1"),
    ("sim", {"type": "text"}, "similarity", "boolean", "null"),
])
def test_a_fixed_parameter_left_out_conflicts(es, index, field, update, param, old, new):
    with pytest.raises(BadRequestError) as e:
        es.indices.put_mapping(index=index, properties={field: update})
    assert e.value.error == "illegal_argument_exception"
    assert e.value.info["error"]["reason"] == (
        f"Mapper for [{field}] conflicts with existing mapper:\n\t"
        f"Cannot update parameter [{param}] from [{old}] to [{new}]")
    assert props(es)[field] == BASE[field]


def test_updateable_parameters_left_out_go_back_to_their_defaults(es, index):
    es.indices.put_mapping(index=index, properties={"k": {"type": "keyword"}})
    assert props(es)["k"] == {"type": "keyword"}
    # the default ignore_above indexes a long value again, and copy_to no longer copies it
    es.index(index=index, id="1", document={"k": "a value longer than ten"}, refresh=True)
    assert es.count(index=index, query={"term": {"k": "a value longer than ten"}})["count"] == 1
    assert es.count(index=index, query={"match": {"a": "longer"}})["count"] == 0


def test_stating_defaults_and_keeping_the_rest_is_no_change(es, index):
    es.indices.put_mapping(index=index, properties={
        "plain": {"type": "keyword", "index": True, "store": False, "doc_values": True},
        "a": {"type": "text", "analyzer": "whitespace"},
        "f": {"type": "keyword", "doc_values": False, "ignore_above": 5},
    })
    p = props(es)
    assert p["a"]["fields"] == {"raw": {"type": "keyword"}}  # multi-fields left out stay
    assert p["f"]["ignore_above"] == 5
    assert p["f"]["doc_values"] is False


def test_norms_may_be_disabled_but_not_enabled_again(es, index):
    es.indices.put_mapping(index=index, properties={"t": {"type": "text", "index_options": "docs",
                                                          "norms": False}})
    assert props(es)["t"]["norms"] is False
    with pytest.raises(BadRequestError):
        es.indices.put_mapping(index=index, properties={"t": {"type": "text", "index_options": "docs",
                                                              "norms": True}})


def test_stating_the_default_format_and_locale_is_no_change(es, index):
    es.indices.put_mapping(index=index, properties={
        "dp": {"type": "date", "format": "strict_date_optional_time||epoch_millis",
               "locale": "en"},
        "d": {"type": "date", "format": "yyyy"},
    })
    p = props(es)
    assert p["d"]["format"] == "yyyy"
    es.index(index=index, id="1", document={"dp": "2020-01-02", "d": "2021"}, refresh=True)
    assert es.count(index=index, query={"range": {"d": {"gte": "2021", "lte": "2021"}}})["count"] == 1


def test_a_scaled_float_update_without_its_scaling_factor_does_not_parse(es, index):
    with pytest.raises(BadRequestError) as e:
        es.indices.put_mapping(index=index, properties={"sf": {"type": "scaled_float"}})
    assert e.value.error == "mapper_parsing_exception"
    assert e.value.info["error"]["reason"] == \
        "Failed to parse mapping: Field [scaling_factor] is required"
    assert props(es)["sf"] == BASE["sf"]
