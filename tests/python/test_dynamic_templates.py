"""`dynamic_templates` applied to new fields as Elasticsearch 8 applies them: the expected
mappings come from a small matcher written here from ES's documented rules, and the
searches on the mapped fields are checked against what keyword / text matching means."""

import re

import pytest
from elasticsearch import BadRequestError

IDX = "dyn-templates"

TEMPLATES = [
    {"ints": {"match_mapping_type": "long", "mapping": {"type": "integer"}}},
    {"kw_suffix": {"match": "*_kw", "mapping": {"type": "keyword"}}},
    {"regex_ids": {"match_pattern": "regex", "match": r"^id\d+$",
                   "mapping": {"type": "keyword", "meta": {"from": "{name}"}}}},
    {"in_meta": {"path_match": "meta.*", "path_unmatch": "meta.free*",
                 "match_mapping_type": "string", "mapping": {"type": "keyword"}}},
    {"flat_objects": {"match_mapping_type": "object", "match": "labels",
                      "mapping": {"type": "flattened"}}},
    {"runtime_rt": {"match": "rt_*", "runtime": {}}},
    {"strings": {"match_mapping_type": "string", "unmatch": "body*",
                 "mapping": {"type": "text", "fields": {"raw": {"type": "{dynamic_type}"}}}}},
]

DOC = {
    "count": 7,
    "ratio": 0.5,
    "city_kw": "New York",
    "id42": "Some Id",
    "meta": {"owner": "Ann Lee", "free_text": "Quick Fox"},
    "labels": {"a": "x", "b": {"c": "y"}},
    "rt_flag": True,
    "rt_name": "Zed",
    "title": "Hello World",
    "body": "The quick brown fox",
    "when": "2024-01-02",
}


def simple_match(pattern, value):
    # ES's Regex.simpleMatch, as a regex over the '*'-split parts.
    return re.fullmatch(".*".join(re.escape(p) for p in pattern.split("*")), value) is not None


def detected(value):
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, dict):
        return "object"
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return "date"
    return "string"


def as_list(v):
    return v if isinstance(v, list) else [v]


def find_template(path, value):
    name = path.split(".")[-1]
    ty = detected(value)
    for entry in TEMPLATES:
        (tname, t), = entry.items()
        runtime = "runtime" in t
        matcher = (lambda p, v: re.fullmatch(p, v) is not None) \
            if t.get("match_pattern") == "regex" else simple_match
        if "match_mapping_type" in t:
            types = as_list(t["match_mapping_type"])
            if types == ["*"]:
                types = None
        elif any(k in t for k in ("match", "path_match", "unmatch_mapping_type")):
            types = None
        else:
            types = []
        if types is None:
            types = ["object", "string", "long", "double", "boolean", "date", "binary"]
            if runtime:
                types = [x for x in types if x not in ("object", "binary")]
        if ty not in types:
            continue
        if "match" in t and not any(matcher(p, name) for p in as_list(t["match"])):
            continue
        if "path_match" in t and not any(matcher(p, path) for p in as_list(t["path_match"])):
            continue
        if any(matcher(p, name) for p in as_list(t.get("unmatch", []))):
            continue
        if any(matcher(p, path) for p in as_list(t.get("path_unmatch", []))):
            continue
        return t, ty
    return None, ty


def fill(v, name, dyn):
    if isinstance(v, dict):
        return {fill(k, name, dyn): fill(x, name, dyn) for k, x in v.items()}
    if isinstance(v, list):
        return [fill(x, name, dyn) for x in v]
    if isinstance(v, str):
        return v.replace("{name}", name).replace("{dynamic_type}", dyn)
    return v


DEFAULTS = {
    "long": {"type": "long"},
    "double": {"type": "float"},
    "boolean": {"type": "boolean"},
    "date": {"type": "date"},
    "string": {"type": "text", "fields": {"keyword": {"type": "keyword", "ignore_above": 256}}},
}


def expected_mapping(doc, prefix=""):
    props, runtime = {}, {}
    for k, v in doc.items():
        path = prefix + k
        t, ty = find_template(path, v)
        if t is None:
            if ty == "object":
                sub, rt = expected_mapping(v, path + ".")
                props[k] = {"properties": sub}
                runtime.update(rt)
            else:
                props[k] = DEFAULTS[ty]
            continue
        runtime_t = "runtime" in t
        dyn = {"string": "keyword" if runtime_t else "text",
               "double": "double" if runtime_t else "float"}.get(ty, ty)
        body = fill(t["runtime" if runtime_t else "mapping"], k, dyn)
        body.setdefault("type", dyn)
        if runtime_t:
            runtime[path] = body
        else:
            props[k] = body
    return props, runtime


@pytest.fixture(scope="module")
def idx(es):
    es.indices.delete(index=IDX, ignore_unavailable=True)
    es.indices.create(index=IDX, mappings={"dynamic_templates": TEMPLATES})
    es.index(index=IDX, id="1", document=DOC, refresh=True)
    yield IDX
    es.indices.delete(index=IDX, ignore_unavailable=True)


def strip_ordering(d):
    return {k: strip_ordering(v) if isinstance(v, dict) else v for k, v in d.items()}


def test_new_fields_are_mapped_by_the_first_matching_template(es, idx):
    got = es.indices.get_mapping(index=idx).body[idx]["mappings"]
    props, runtime = expected_mapping(DOC)
    assert got["dynamic_templates"] == TEMPLATES
    assert strip_ordering(got["properties"]) == strip_ordering(props)
    assert got.get("runtime", {}) == runtime


def hits(es, query):
    return es.search(index=IDX, query=query).body["hits"]["total"]["value"]


def test_keyword_templated_fields_match_exactly(es, idx):
    assert hits(es, {"term": {"city_kw": "New York"}}) == 1
    assert hits(es, {"term": {"city_kw": "new"}}) == 0
    assert hits(es, {"term": {"meta.owner": "Ann Lee"}}) == 1
    assert hits(es, {"term": {"id42": "Some Id"}}) == 1


def test_text_templated_fields_match_analyzed(es, idx):
    assert hits(es, {"match": {"title": "hello"}}) == 1
    # `{dynamic_type}` of a string is `text`: the subfield is analyzed too.
    assert hits(es, {"term": {"title.raw": "hello"}}) == 1
    assert hits(es, {"term": {"title.raw": "Hello World"}}) == 0
    assert hits(es, {"match": {"meta.free_text": "fox"}}) == 1
    assert hits(es, {"term": {"labels": "x"}}) == 1
    assert hits(es, {"term": {"rt_name": "Zed"}}) == 1
    assert hits(es, {"range": {"count": {"gte": 7, "lte": 7}}}) == 1


def test_dynamic_strict_refuses_before_templates(es):
    name = "dyn-templates-strict"
    es.indices.delete(index=name, ignore_unavailable=True)
    try:
        es.indices.create(index=name, mappings={"dynamic": "strict", "dynamic_templates": TEMPLATES})
        with pytest.raises(BadRequestError) as ei:
            es.index(index=name, id="1", document={"city_kw": "x"})
        assert ei.value.body["error"]["type"] == "strict_dynamic_mapping_exception"
    finally:
        es.indices.delete(index=name, ignore_unavailable=True)


def test_dynamic_runtime_still_applies_mapping_templates(es):
    name = "dyn-templates-runtime"
    es.indices.delete(index=name, ignore_unavailable=True)
    try:
        es.indices.create(index=name, mappings={"dynamic": "runtime", "dynamic_templates": TEMPLATES})
        doc = {"city_kw": "x", "other": "y", "body": "b", "rt_n": 1.5}
        es.index(index=name, id="1", document=doc, refresh=True)
        got = es.indices.get_mapping(index=name).body[name]["mappings"]
        props, runtime = expected_mapping(doc)
        # No template for `body`: the `dynamic: runtime` default, a keyword runtime field.
        del props["body"]
        runtime["body"] = {"type": "keyword"}
        assert got["properties"] == props
        assert got["runtime"] == runtime
    finally:
        es.indices.delete(index=name, ignore_unavailable=True)


@pytest.mark.parametrize("templates,reason", [
    ({"t": {}}, "Dynamic template syntax error. An array of named objects is expected."),
    ([{"a": {"match": "x", "mapping": {}}, "b": {"match": "x", "mapping": {}}}],
     "A dynamic template must be defined with a name"),
    ([{"t": {"match": "x", "foo": 1, "mapping": {}}}], "Illegal dynamic template parameter: [foo]"),
    ([{"t": {"match_mapping_type": "text", "mapping": {}}}],
     "No field type matched on [text], possible values are "
     "[object, string, long, double, boolean, date, binary]"),
    ([{"t": {"match_pattern": "regex", "match": "(", "mapping": {}}}],
     "Pattern [(] of type [regex] is invalid. Cannot create dynamic template [t]."),
    ([{"t": {"match": "x"}}], "template [t] must have either mapping or runtime set"),
])
def test_invalid_templates_are_refused(es, templates, reason):
    with pytest.raises(BadRequestError) as ei:
        es.indices.create(index="dyn-templates-bad", mappings={"dynamic_templates": templates})
    err = ei.value.body["error"]
    assert err["type"] == "mapper_parsing_exception"
    assert err["reason"] == "Failed to parse mapping: " + reason


def test_invalid_template_mapping_is_refused(es):
    t = {"match_mapping_type": "string", "mapping": {"type": "nope"}}
    with pytest.raises(BadRequestError) as ei:
        es.indices.create(index="dyn-templates-bad", mappings={"dynamic_templates": [{"t": t}]})
    err = ei.value.body["error"]
    assert err["type"] == "mapper_parsing_exception"
    assert err["reason"].startswith(
        "Failed to parse mapping: dynamic template [t] has invalid content [")
    assert err["reason"].endswith("attempted to validate it with the following match_mapping_type: [string]")


def test_put_mapping_replaces_the_templates(es):
    name = "dyn-templates-put"
    es.indices.delete(index=name, ignore_unavailable=True)
    try:
        es.indices.create(index=name, mappings={"dynamic_templates": TEMPLATES[:2]})
        new = [{"kw_suffix": {"match": "*_k", "mapping": {"type": "keyword"}}}]
        es.indices.put_mapping(index=name, dynamic_templates=new)
        got = es.indices.get_mapping(index=name).body[name]["mappings"]
        # As ES's RootObjectMapper.merge for a mapping update: the new list replaces the old.
        assert got["dynamic_templates"] == new
        es.index(index=name, id="1", document={"a_k": "X Y", "n": 3}, refresh=True)
        got = es.indices.get_mapping(index=name).body[name]["mappings"]["properties"]
        assert got == {"a_k": {"type": "keyword"}, "n": {"type": "long"}}
    finally:
        es.indices.delete(index=name, ignore_unavailable=True)


def test_object_template_with_its_own_dynamic_decides_for_children(es):
    name = "dyn-templates-obj"
    es.indices.delete(index=name, ignore_unavailable=True)
    try:
        t = [{"closed": {"match_mapping_type": "object", "match": "closed",
                         "mapping": {"dynamic": False}}}]
        es.indices.create(index=name, mappings={"dynamic_templates": t})
        es.index(index=name, id="1", document={"closed": {"a": 1}, "open": {"b": 2}}, refresh=True)
        got = es.indices.get_mapping(index=name).body[name]["mappings"]["properties"]
        assert got["open"] == {"properties": {"b": {"type": "long"}}}
        assert got["closed"]["dynamic"] is False
        assert got["closed"].get("properties", {}) == {}
    finally:
        es.indices.delete(index=name, ignore_unavailable=True)
