"""Mapped fields' `meta` (ES's `TypeParsers#parseMeta` limits, on every field type) and a
date field's `locale` (the ROOT and English locales Lode's date names follow; others are
refused rather than ignored)."""

import pytest
from elasticsearch import ApiError

INDEX = "mapping_meta_locale"


@pytest.fixture
def fresh(es):
    es.indices.delete(index=INDEX, ignore_unavailable=True)
    yield INDEX
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def refused(fn):
    with pytest.raises(ApiError) as ei:
        fn()
    assert ei.value.meta.status == 400
    e = ei.value.body["error"]
    assert e["type"] == "mapper_parsing_exception"
    return e["reason"]


@pytest.mark.parametrize("ty", ["keyword", "text", "long", "double", "date", "boolean", "ip",
                                "geo_point", "binary", "integer_range"])
def test_meta_limits_on_every_type(es, fresh, ty):
    create = lambda meta: es.indices.create(  # noqa: E731
        index=INDEX, mappings={"properties": {"f": {"type": ty, "meta": meta}}})
    assert refused(lambda: create({"unit": 3})) == (
        "Failed to parse mapping: [meta] values can only be strings, but got Integer[3] for field [f]")
    assert refused(lambda: create({str(i): "v" for i in range(6)})) == (
        "Failed to parse mapping: [meta] can't have more than 5 entries, but got 6 on field [f]")
    assert refused(lambda: create({"k" * 21: "v"})) == (
        "Failed to parse mapping: [meta] keys can't be longer than 20 chars, but got ["
        + "k" * 21 + "] for field [f]")
    assert refused(lambda: create({"k": "v" * 51})) == (
        "Failed to parse mapping: [meta] values can't be longer than 50 chars, but got ["
        + "v" * 51 + "] for field [f]")
    create({"unit": "ms", "owner": "ops"})
    got = es.indices.get_mapping(index=INDEX)[INDEX]["mappings"]["properties"]["f"]
    assert got["meta"] == {"unit": "ms", "owner": "ops"}


def test_meta_on_a_multi_field_and_in_a_mapping_update(es, fresh):
    es.indices.create(index=INDEX, mappings={"properties": {"t": {"type": "text"}}})
    reason = refused(lambda: es.indices.put_mapping(index=INDEX, properties={
        "t": {"type": "text", "fields": {"raw": {"type": "keyword", "meta": []}}}}))
    assert reason == "Failed to parse mapping: [meta] must be an object, got ArrayList[[]] for field [raw]"
    reason = refused(lambda: es.indices.put_mapping(index=INDEX, properties={
        "n": {"type": "long", "meta": None}}))
    assert reason == ("Failed to parse mapping: [meta] on mapper [n] of type [long] "
                      "must not have a [null] value")


@pytest.mark.parametrize("ty", ["date", "date_nanos", "date_range"])
def test_date_locales(es, fresh, ty):
    reason = refused(lambda: es.indices.create(
        index=INDEX, mappings={"properties": {"d": {"type": ty, "locale": "de_DE"}}}))
    assert reason.startswith(
        "Failed to parse mapping: Error parsing [locale] on field [d]: "
        "locale [de_DE] is not supported by Lode")
    for ok in ["ROOT", "en", "en-GB", "en_US"]:
        es.indices.delete(index=INDEX, ignore_unavailable=True)
        es.indices.create(index=INDEX, mappings={"properties": {"d": {"type": ty, "locale": ok}}})
    got = es.indices.get_mapping(index=INDEX)[INDEX]["mappings"]["properties"]["d"]
    assert got["locale"] == "en_US"
