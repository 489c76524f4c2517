"""Elasticsearch's limits: mapping limits (`index.mapping.*.limit`), term length, numeric
ranges and query limits. Each violating request is checked for its status, error type and
message, and for leaving data and mapping unchanged; a request just under the limit
succeeds. Expected numbers are computed here from the documents and mappings the tests send."""

import pytest
from elasticsearch import BadRequestError

IDX = "limits-test"


@pytest.fixture()
def idx(es):
    es.indices.delete(index=IDX, ignore_unavailable=True)
    yield IDX
    es.indices.delete(index=IDX, ignore_unavailable=True)


def count_mapping_fields(props):
    """Fields ES counts against the total fields limit: every field, multi-field and object."""
    n = 0
    for d in props.values():
        n += 1
        n += len(d.get("fields", {}))
        n += count_mapping_fields(d.get("properties", {}))
    return n


def dynamic_sizes(doc):
    """(path, size) of the fields dynamic mapping adds for `doc`, in document order: a string
    is text + keyword (2), a number or boolean 1, an object 1 and then its children."""
    out = []

    def walk(prefix, obj):
        for k, v in obj.items():
            path = prefix + k
            if isinstance(v, dict):
                out.append((path, 1))
                walk(path + ".", v)
            elif isinstance(v, str):
                out.append((path, 2))
            else:
                out.append((path, 1))

    walk("", doc)
    return out


def mapping_props(es, index):
    return es.indices.get_mapping(index=index).body[index]["mappings"].get("properties", {})


def doc_count(es, index):
    es.indices.refresh(index=index)
    return es.count(index=index)["count"]


# --- index.mapping.total_fields.limit ---------------------------------------------------------


def test_total_fields_limit_on_index_creation(es, idx):
    props = {"a": {"type": "text", "fields": {"raw": {"type": "keyword"}}},
             "o": {"properties": {"x": {"type": "long"}, "y": {"type": "long"}}}}
    total = count_mapping_fields(props)
    with pytest.raises(BadRequestError) as e:
        es.indices.create(index=idx, settings={"index.mapping.total_fields.limit": total - 1},
                          mappings={"properties": props})
    assert e.value.meta.status == 400
    err = e.value.body["error"]
    assert err["type"] == "illegal_argument_exception"
    assert err["reason"] == "Limit of total fields [%d] has been exceeded" % (total - 1)
    assert not es.indices.exists(index=idx)
    es.indices.create(index=idx, settings={"index.mapping.total_fields.limit": total},
                      mappings={"properties": props})
    assert count_mapping_fields(mapping_props(es, idx)) == total


def test_total_fields_limit_on_put_mapping(es, idx):
    limit = 6
    props = {"a": {"type": "text", "fields": {"raw": {"type": "keyword"}}}, "b": {"type": "long"}}
    es.indices.create(index=idx, settings={"index.mapping.total_fields.limit": limit},
                      mappings={"properties": props})
    before = mapping_props(es, idx)
    used = count_mapping_fields(before)
    too_many = {"c%d" % i: {"type": "keyword"} for i in range(limit - used + 1)}
    with pytest.raises(BadRequestError) as e:
        es.indices.put_mapping(index=idx, properties=too_many)
    assert e.value.meta.status == 400
    assert e.value.body["error"]["type"] == "illegal_argument_exception"
    assert e.value.body["error"]["reason"] == "Limit of total fields [%d] has been exceeded" % limit
    assert mapping_props(es, idx) == before
    just_enough = {"c%d" % i: {"type": "keyword"} for i in range(limit - used)}
    es.indices.put_mapping(index=idx, properties=just_enough)
    assert count_mapping_fields(mapping_props(es, idx)) == limit


def test_total_fields_limit_on_dynamic_mapping(es, idx):
    limit = 7
    es.indices.create(index=idx, settings={"index.mapping.total_fields.limit": limit},
                      mappings={"properties": {"a": {"type": "long"}}})
    before = mapping_props(es, idx)
    existing = count_mapping_fields(before)
    doc = {"a": 1, "s": "text", "o": {"n": 5, "t": "more", "u": "over"}}
    # The first field that takes the total over the limit names how many were being added.
    added, expected_new = 0, None
    for path, size in dynamic_sizes(doc):
        if path in before:
            continue
        added += size
        if existing + added > limit:
            expected_new = added
            break
    assert expected_new is not None
    inner = "Limit of total fields [%d] has been exceeded while adding new fields [%d]" % (
        limit, expected_new)
    with pytest.raises(BadRequestError) as e:
        es.index(index=idx, id="1", document=doc)
    assert e.value.meta.status == 400
    err = e.value.body["error"]
    assert err["type"] == "document_parsing_exception"
    assert err["reason"].endswith("failed to parse: " + inner)
    assert err["caused_by"] == {"type": "illegal_argument_exception", "reason": inner}
    assert mapping_props(es, idx) == before
    assert doc_count(es, idx) == 0

    # The same in a bulk item; the other item goes in.
    ok_doc = {"a": 2, "s": "fits"}
    r = es.bulk(operations=[{"index": {"_index": idx, "_id": "1"}}, doc,
                            {"index": {"_index": idx, "_id": "2"}}, ok_doc])
    assert r["errors"] is True
    item = r["items"][0]["index"]
    assert item["status"] == 400
    assert item["error"]["type"] == "document_parsing_exception"
    assert item["error"]["reason"].endswith("failed to parse: " + inner)
    assert r["items"][1]["index"]["status"] == 201
    assert doc_count(es, idx) == 1
    assert count_mapping_fields(mapping_props(es, idx)) == existing + sum(
        size for _p, size in dynamic_sizes({"s": "fits"}))

    # Raising the limit (a dynamic setting) lets the document in.
    es.indices.put_settings(index=idx, settings={"index.mapping.total_fields.limit": 100})
    es.index(index=idx, id="1", document=doc)
    assert doc_count(es, idx) == 2


def test_total_fields_limit_counts_arrays_of_objects_in_one_update(es, idx):
    es.indices.create(index=idx, settings={"index.mapping.total_fields.limit": 3})
    doc = {"list": [{"x": 1}, {"y": 2}, {"z": 3}]}
    # list, list.x, list.y -> 3 fits; list.z is the 4th.
    with pytest.raises(BadRequestError) as e:
        es.index(index=idx, id="1", document=doc)
    assert e.value.body["error"]["caused_by"]["reason"] == (
        "Limit of total fields [3] has been exceeded while adding new fields [4]")
    assert mapping_props(es, idx) == {}
    es.index(index=idx, id="1", document={"list": [{"x": 1}, {"y": 2}]})
    assert set(mapping_props(es, idx)["list"]["properties"]) == {"x", "y"}


# --- index.mapping.depth.limit ----------------------------------------------------------------


def nested_props(depth_objects):
    """A mapping with `depth_objects` nested object levels o1.o2... ending in a long `v`."""
    props = {"v": {"type": "long"}}
    for i in range(depth_objects, 0, -1):
        props = {"o%d" % i: {"properties": props}}
    return props


def test_depth_limit(es, idx):
    limit = 3
    # An object at path o1.o2 is at depth 3 (the root is depth 1).
    with pytest.raises(BadRequestError) as e:
        es.indices.create(index=idx, settings={"index.mapping.depth.limit": limit},
                          mappings={"properties": nested_props(limit)})
    deepest = ".".join("o%d" % i for i in range(1, limit + 1))
    assert e.value.meta.status == 400
    assert e.value.body["error"]["type"] == "illegal_argument_exception"
    assert e.value.body["error"]["reason"] == (
        "Limit of mapping depth [%d] has been exceeded due to object field [%s]" % (limit, deepest))
    assert not es.indices.exists(index=idx)
    es.indices.create(index=idx, settings={"index.mapping.depth.limit": limit},
                      mappings={"properties": nested_props(limit - 1)})
    before = mapping_props(es, idx)

    # A document introducing a deeper object is rejected whole.
    doc = {"x": {"y": {"z": {"w": 1}}}}
    with pytest.raises(BadRequestError) as e:
        es.index(index=idx, id="1", document=doc)
    inner = "Limit of mapping depth [%d] has been exceeded due to object field [x.y.z]" % limit
    err = e.value.body["error"]
    assert err["type"] == "document_parsing_exception"
    assert err["reason"].endswith("failed to parse: " + inner)
    assert err["caused_by"] == {"type": "illegal_argument_exception", "reason": inner}
    assert mapping_props(es, idx) == before
    assert doc_count(es, idx) == 0
    es.index(index=idx, id="1", document={"x": {"y": {"w": 1}}})
    assert doc_count(es, idx) == 1


# --- index.mapping.field_name_length.limit ----------------------------------------------------


def test_field_name_length_limit(es, idx):
    limit = 10
    es.indices.create(index=idx, settings={"index.mapping.field_name_length.limit": limit})
    long_name = "n" * (limit + 1)
    with pytest.raises(BadRequestError) as e:
        es.indices.put_mapping(index=idx, properties={"o": {"properties": {long_name: {"type": "long"}}}})
    assert e.value.meta.status == 400
    assert e.value.body["error"]["type"] == "illegal_argument_exception"
    assert e.value.body["error"]["reason"] == (
        "Field name [%s] is longer than the limit of [%d] characters" % (long_name, limit))
    assert mapping_props(es, idx) == {}
    # A dynamic field with a long name is refused by the mapping update.
    with pytest.raises(BadRequestError) as e:
        es.index(index=idx, id="1", document={long_name: 1})
    assert e.value.body["error"]["type"] == "illegal_argument_exception"
    assert mapping_props(es, idx) == {}
    assert doc_count(es, idx) == 0
    ok = "n" * limit
    es.index(index=idx, id="1", document={ok: 1})
    assert list(mapping_props(es, idx)) == [ok]


def test_mapping_limit_settings_are_validated(es, idx):
    with pytest.raises(BadRequestError) as e:
        es.indices.create(index=idx, settings={"index.mapping.depth.limit": 0})
    assert e.value.body["error"]["type"] == "illegal_argument_exception"
    assert e.value.body["error"]["reason"] == (
        "Failed to parse value [0] for setting [index.mapping.depth.limit] must be >= 1")
    with pytest.raises(BadRequestError) as e:
        es.indices.create(index=idx, settings={"index.mapping.total_fields.limit": "many"})
    assert e.value.body["error"]["reason"] == (
        "Failed to parse value [many] for setting [index.mapping.total_fields.limit]")
    assert not es.indices.exists(index=idx)


# --- immense terms ----------------------------------------------------------------------------


def java_byte_list(b):
    return "[" + ", ".join(str(x - 256 if x > 127 else x) for x in b) + "]"


def test_immense_keyword_term(es, idx):
    es.indices.create(index=idx, mappings={"properties": {
        "k": {"type": "keyword"}, "cut": {"type": "keyword", "ignore_above": 100}}})
    value = "é" + "x" * 40000
    raw = value.encode("utf-8")
    original = "bytes can be at most 32766 in length; got %d" % len(raw)
    reason = ("Document contains at least one immense term in field=\"k\" (whose UTF8 encoding is "
              "longer than the max length 32766), all of which were skipped.  Please correct the "
              "analyzer to not produce such terms.  The prefix of the first immense term is: "
              "'%s...', original message: %s" % (java_byte_list(raw[:30]), original))
    with pytest.raises(BadRequestError) as e:
        es.index(index=idx, id="1", document={"k": value})
    err = e.value.body["error"]
    assert e.value.meta.status == 400
    assert err["type"] == "illegal_argument_exception"
    assert err["reason"] == reason
    assert err["caused_by"] == {"type": "max_bytes_length_exceeded_exception", "reason": original}
    r = es.bulk(operations=[{"index": {"_index": idx, "_id": "1"}}, {"k": value},
                            {"index": {"_index": idx, "_id": "2"}}, {"cut": value}])
    assert r["items"][0]["index"]["status"] == 400
    assert r["items"][0]["index"]["error"]["type"] == "illegal_argument_exception"
    assert r["items"][0]["index"]["error"]["reason"] == reason
    # ignore_above keeps the long value out of the index: accepted.
    assert r["items"][1]["index"]["status"] == 201
    # Just under the limit is indexed and found.
    under = "y" * 32766
    es.index(index=idx, id="3", document={"k": under}, refresh=True)
    assert doc_count(es, idx) == 2
    assert es.count(index=idx, query={"term": {"k": under}})["count"] == 1


# --- numeric ranges ---------------------------------------------------------------------------


RANGES = {"long": (-2**63, 2**63 - 1), "integer": (-2**31, 2**31 - 1),
          "short": (-2**15, 2**15 - 1), "byte": (-128, 127)}
ARTICLE = {"long": "a long", "integer": "an integer", "short": "a short", "byte": "a byte"}


@pytest.mark.parametrize("ty", sorted(RANGES))
def test_integer_ranges(es, idx, ty):
    es.indices.create(index=idx, mappings={"properties": {"f": {"type": ty}}})
    lo, hi = RANGES[ty]
    bads = [hi + 1, str(hi + 1), str(lo - 1)]
    if ty != "long":
        # Lode parses JSON numbers beyond the 64-bit integers as doubles, so a long's
        # negative overflow is refused (below) but not rendered digit for digit.
        bads.append(lo - 1)
    for i, bad in enumerate(bads):
        with pytest.raises(BadRequestError) as e:
            es.index(index=idx, id="bad%d" % i, document={"f": bad})
        err = e.value.body["error"]
        assert err["type"] == "document_parsing_exception"
        assert err["reason"].endswith(
            "failed to parse field [f] of type [%s] in document with id 'bad%d'. "
            "Preview of field's value: '%s'" % (ty, i, bad))
        assert err["caused_by"] == {"type": "illegal_argument_exception",
                                    "reason": "Value [%s] is out of range for %s" % (bad, ARTICLE[ty])}
    if ty == "long":
        with pytest.raises(BadRequestError) as e:
            es.index(index=idx, id="neg", document={"f": lo - 1})
        assert e.value.body["error"]["caused_by"]["reason"].endswith("is out of range for a long")
    assert doc_count(es, idx) == 0
    es.index(index=idx, id="hi", document={"f": hi})
    es.index(index=idx, id="lo", document={"f": str(lo)})
    es.indices.refresh(index=idx)
    got = sorted((h["_source"]["f"] for h in es.search(index=idx)["hits"]["hits"]), key=int)
    assert got == [str(lo), hi]
    assert es.count(index=idx, query={"term": {"f": hi}})["count"] == 1
    assert es.count(index=idx, query={"term": {"f": lo}})["count"] == 1


@pytest.mark.parametrize("ty,bad,shown", [("float", 1e39, "Infinity"),
                                          ("half_float", 70000, "70000.0"),
                                          ("double", "1e400", "Infinity")])
def test_floats_must_be_finite(es, idx, ty, bad, shown):
    es.indices.create(index=idx, mappings={"properties": {"f": {"type": ty}}})
    with pytest.raises(BadRequestError) as e:
        es.index(index=idx, id="1", document={"f": bad})
    err = e.value.body["error"]
    assert err["type"] == "document_parsing_exception"
    assert err["caused_by"]["reason"] == "[%s] supports only finite values, but got [%s]" % (ty, shown)
    assert doc_count(es, idx) == 0
    es.index(index=idx, id="1", document={"f": 65504}, refresh=True)
    assert es.count(index=idx, query={"range": {"f": {"gte": 65504, "lte": 65504}}})["count"] == 1


# --- query limits -----------------------------------------------------------------------------

MAX_CLAUSES = 4096


@pytest.fixture()
def qidx(es, idx):
    es.indices.create(index=idx, mappings={"properties": {
        "k": {"type": "keyword"}, "t": {"type": "text"}}})
    docs = [{"k": "k%d" % i, "t": "word%d and some text" % i} for i in range(5)]
    for i, d in enumerate(docs):
        es.index(index=idx, id=str(i), document=d)
    es.indices.refresh(index=idx)
    return idx, docs


def search_error_body(es, **kw):
    with pytest.raises(BadRequestError) as e:
        es.search(**kw)
    assert e.value.meta.status == 400
    err = e.value.body["error"]
    assert err["type"] == "search_phase_execution_exception"
    return err


def search_error(es, **kw):
    return search_error_body(es, **kw)["root_cause"][0]


def test_bool_max_clause_count(es, qidx):
    idx, docs = qidx
    term = lambda i: {"term": {"k": docs[i % len(docs)]["k"]}}
    ok = es.count(index=idx, query={"bool": {"should": [term(i) for i in range(MAX_CLAUSES)]}})
    assert ok["count"] == len(docs)
    cause = search_error(es, index=idx, query={
        "bool": {"should": [term(i) for i in range(MAX_CLAUSES + 1)]}})
    assert cause["type"] == "query_shard_exception"
    assert cause["reason"] == "failed to create query: maxClauseCount is set to %d" % MAX_CLAUSES
    # a root cause has no cause (ES renders root causes with rest.exception.cause.skip); the
    # shard failure's reason has it
    assert "caused_by" not in cause
    err = search_error_body(es, index=idx, query={
        "bool": {"should": [term(i) for i in range(MAX_CLAUSES + 1)]}})
    assert err["failed_shards"][0]["reason"]["caused_by"] == {
        "type": "too_many_clauses", "reason": "maxClauseCount is set to %d" % MAX_CLAUSES}
    # Across nested bools Lucene counts leaves: it fails at a leaf once more than
    # maxClauseCount leaves came before it.
    half = MAX_CLAUSES // 2
    nested = lambda extra: {"bool": {"should": [
        {"bool": {"should": [term(i) for i in range(half)]}},
        {"bool": {"should": [term(i) for i in range(half + extra)]}}]}}
    assert es.count(index=idx, query=nested(1))["count"] == len(docs)
    cause = search_error(es, index=idx, query=nested(2))
    assert cause == {"type": "too_many_nested_clauses",
                     "reason": "Query contains too many nested clauses; maxClauseCount is set to %d"
                     % MAX_CLAUSES}
    assert doc_count(es, idx) == len(docs)


def test_max_regex_length(es, qidx):
    idx, docs = qidx
    es.indices.put_settings(index=idx, settings={"index.max_regex_length": 4})
    pattern = "k[0-9]"
    cause = search_error(es, index=idx, query={"regexp": {"k": pattern}})
    assert cause["type"] == "illegal_argument_exception"
    assert cause["reason"] == (
        "The length of regex [%d] used in the Regexp Query request has exceeded the allowed "
        "maximum of [4]. This maximum can be set by changing the [index.max_regex_length] index "
        "level setting." % len(pattern))
    short = "k.*"
    expected = sum(1 for d in docs if d["k"].startswith("k"))
    assert es.count(index=idx, query={"regexp": {"k": short}})["count"] == expected


def test_max_terms_count(es, qidx):
    idx, docs = qidx
    es.indices.put_settings(index=idx, settings={"index.max_terms_count": 3})
    values = [d["k"] for d in docs[:4]]
    cause = search_error(es, index=idx, query={"terms": {"k": values}})
    assert cause["type"] == "illegal_argument_exception"
    assert cause["reason"] == (
        "The number of terms [4] used in the Terms Query request has exceeded the allowed maximum "
        "of [3]. This maximum can be set by changing the [index.max_terms_count] index level "
        "setting.")
    assert es.count(index=idx, query={"terms": {"k": values[:3]}})["count"] == 3


def test_max_result_window(es, qidx):
    idx, docs = qidx
    es.indices.put_settings(index=idx, settings={"index.max_result_window": 4})
    cause = search_error(es, index=idx, from_=2, size=3)
    assert cause["type"] == "illegal_argument_exception"
    assert cause["reason"] == (
        "Result window is too large, from + size must be less than or equal to: [4] but was [5]. "
        "See the scroll api for a more efficient way to request large data sets. This limit can "
        "be set by changing the [index.max_result_window] index level setting.")
    assert len(es.search(index=idx, from_=1, size=3)["hits"]["hits"]) == 3


def test_highlight_max_analyzed_offset(es, qidx):
    idx, docs = qidx
    es.indices.put_settings(index=idx, settings={"index.highlight.max_analyzed_offset": 10})
    doc0 = docs[0]
    cause = search_error(es, index=idx, query={"match": {"t": "word0"}},
                         highlight={"fields": {"t": {}}})
    assert cause["type"] == "illegal_argument_exception"
    assert cause["reason"] == (
        "The length [%d] of field [t] in doc[0]/index[%s] exceeds the "
        "[index.highlight.max_analyzed_offset] limit [10]. To avoid this error, set the query "
        "parameter [max_analyzed_offset] to a value less than index setting [10] and this will "
        "tolerate long field values by truncating them." % (len(doc0["t"]), idx))
    es.indices.put_settings(index=idx, settings={"index.highlight.max_analyzed_offset": len(doc0["t"])})
    r = es.search(index=idx, query={"match": {"t": "word0"}}, highlight={"fields": {"t": {}}})
    assert r["hits"]["hits"][0]["highlight"]["t"] == ["<em>word0</em> and some text"]


def test_max_clause_count_node_setting(tmp_path):
    """`indices.query.bool.max_clause_count` set on a node of its own."""
    import os
    import re
    import subprocess

    from elasticsearch import Elasticsearch

    binary = os.environ.get("LODE_BIN") or os.path.join(
        os.path.dirname(__file__), "..", "..", "target", "debug", "lode")
    if os.environ.get("LODE_URL"):
        pytest.skip("needs its own node")
    limit = 5
    proc = subprocess.Popen([binary, "serve", "-E", "http.port=0", "-E", "path.data=%s" % tmp_path,
                             "-E", "indices.query.bool.max_clause_count=%d" % limit],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL)
    try:
        url = None
        for raw in iter(proc.stdout.readline, b""):
            m = re.search(r"https?://[0-9.]+:\d+", raw.decode())
            if m:
                url = m.group(0)
                break
        assert url, "the node did not start"
        es = Elasticsearch(url)
        es.index(index="c", id="1", document={"k": "a"}, refresh=True)
        term = {"term": {"k": "a"}}
        assert es.count(index="c", query={"bool": {"should": [term] * limit}})["count"] == 1
        cause = search_error(es, index="c", query={"bool": {"should": [term] * (limit + 1)}})
        assert cause["reason"] == "failed to create query: maxClauseCount is set to %d" % limit
    finally:
        proc.terminate()
        proc.wait(timeout=30)
