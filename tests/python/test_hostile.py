"""Hostile input: hundreds of malformed or abusive requests, generated from tables.

Every request must be answered (no hang: a 30 s socket timeout), with a 4xx (never a 5xx),
and the body must be Elasticsearch's error JSON
`{"error": {"root_cause": [...], "type": ..., "reason": ...}, "status": N}` with `status`
equal to the HTTP status.  Where Elasticsearch's status and error type are well known they
are asserted too.  A control index is checked unchanged (count, a sum, the mapping) before
and after the suite: no refused request may leave a trace in it.

HTTP-level abuse goes over raw sockets, since no HTTP client sends a broken request line.
"""

import http.client
import json
import socket
from urllib.parse import quote, urlsplit

import pytest

TIMEOUT = 30
CTL = "hostile_ctl"
CTL_MAPPING = {"properties": {"n": {"type": "long"}, "t": {"type": "text"},
                              "k": {"type": "keyword"}, "d": {"type": "date"},
                              "o": {"properties": {"x": {"type": "integer"}}}}}
CTL_DOCS = [{"n": i * 7 - 20, "t": "word%d common" % (i % 5), "k": "k%d" % (i % 3),
             "d": "2024-01-%02dT00:00:00Z" % (i % 28 + 1), "o": {"x": i}} for i in range(40)]

PARSE_TYPES = {"parsing_exception", "x_content_parse_exception", "illegal_argument_exception"}


# ---------------------------------------------------------------------------
# Transport
# ---------------------------------------------------------------------------

def _hostport(lode_url):
    u = urlsplit(lode_url)
    return u.hostname, u.port


def send(lode_url, method, path, body=None, headers=None):
    """One request over http.client (exact bytes, no client-side validation)."""
    host, port = _hostport(lode_url)
    conn = http.client.HTTPConnection(host, port, timeout=TIMEOUT)
    try:
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        hdrs = {"Content-Type": "application/json"}
        hdrs.update(headers or {})
        conn.request(method, path, body=body, headers=hdrs)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def send_raw(lode_url, data, shutdown_write=False):
    """Raw bytes over a socket; returns (status or None, body bytes)."""
    host, port = _hostport(lode_url)
    with socket.create_connection((host, port), timeout=TIMEOUT) as s:
        s.sendall(data)
        if shutdown_write:
            s.shutdown(socket.SHUT_WR)
        chunks = []
        while True:
            try:
                c = s.recv(65536)
            except ConnectionResetError:
                break
            if not c:
                break
            chunks.append(c)
            if _complete(b"".join(chunks)):
                break
    raw = b"".join(chunks)
    if not raw:
        return None, b""
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, body


def _complete(raw):
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            return len(body) >= int(v.strip())
    return False


def assert_es_error(status, body, want_status=None, want_types=None):
    assert status is not None, "no response"
    assert 400 <= status < 500, (status, body[:500])
    if want_status is not None:
        assert status == want_status, (status, body[:500])
    doc = json.loads(body)
    assert doc["status"] == status, doc
    err = doc["error"]
    assert isinstance(err, dict), doc
    assert isinstance(err["type"], str) and err["type"], doc
    assert isinstance(err["reason"], str), doc
    assert isinstance(err["root_cause"], list) and err["root_cause"], doc
    for rc in err["root_cause"]:
        assert isinstance(rc["type"], str) and "reason" in rc, doc
    if want_types is not None:
        types = {want_types} if isinstance(want_types, str) else set(want_types)
        assert err["type"] in types, (err["type"], types, doc)
    return doc


# ---------------------------------------------------------------------------
# The control index
# ---------------------------------------------------------------------------

def control_state(es):
    es.indices.refresh(index=CTL)
    count = es.count(index=CTL)["count"]
    total = es.search(index=CTL, size=0, aggs={"s": {"sum": {"field": "n"}}})["aggregations"]["s"]["value"]
    mapping = es.indices.get_mapping(index=CTL)[CTL]["mappings"]
    return count, total, mapping


@pytest.fixture(scope="module")
def ctl(es):
    if es.indices.exists(index=CTL):
        es.indices.delete(index=CTL)
    es.indices.create(index=CTL, mappings=CTL_MAPPING)
    ops = []
    for i, d in enumerate(CTL_DOCS):
        ops += [{"index": {"_index": CTL, "_id": str(i)}}, d]
    assert es.bulk(operations=ops, refresh=True)["errors"] is False
    expected = (len(CTL_DOCS), float(sum(d["n"] for d in CTL_DOCS)), CTL_MAPPING)
    assert control_state(es) == expected
    yield expected
    es.indices.delete(index=CTL, ignore_unavailable=True)


def test_control_before(es, ctl):
    assert control_state(es) == ctl


# ---------------------------------------------------------------------------
# 1. Malformed JSON, sent as a search body
# ---------------------------------------------------------------------------

DEEP = 10000
MALFORMED = {
    "empty_object_truncated": b"{",
    "truncated_key": b'{"query',
    "truncated_value": b'{"query": {"term": ',
    "truncated_string": b'{"query": {"term": {"k": "abc',
    "truncated_array": b'{"sort": ["n", ',
    "trailing_comma": b'{"size": 1,}',
    "trailing_garbage": b'{"size": 1} xyz',
    "trailing_object": b'{"size": 1}{"size": 2}',
    "missing_colon": b'{"size" 1}',
    "missing_comma": b'{"size": 1 "from": 2}',
    "single_quotes": b"{'size': 1}",
    "unquoted_key": b"{size: 1}",
    "top_array": b"[1, 2, 3]",
    "top_string": b'"query"',
    "top_number": b"42",
    "top_true": b"true",
    "top_null_garbage": b"nul",
    "deep_arrays": b"[" * DEEP + b"]" * DEEP,
    "deep_objects": b'{"a":' * DEEP + b"1" + b"}" * DEEP,
    "deep_bool": (b'{"query":' + b'{"bool":{"must":' * DEEP + b"{}" + b"}}" * DEEP + b"}"),
    "deep_unclosed": b"[" * DEEP,
    "huge_number_size": b'{"size": 1e400}',
    "huge_int_size": b'{"size": 123456789012345678901234567890}',
    "huge_negative_from": b'{"from": -123456789012345678901234567890}',
    "nan_size": b'{"size": NaN}',
    "infinity_size": b'{"size": Infinity}',
    "neg_infinity_term": b'{"query": {"term": {"n": -Infinity}}}',
    "invalid_utf8_value": b'{"query": {"term": {"k": "\xff\xfe"}}}',
    "invalid_utf8_key": b'{"\xc3\x28": 1}',
    "lone_surrogate_escape": b'{"query": {"term": {"k": "\\ud800"}}}',
    "bad_escape": b'{"query": {"term": {"k": "\\q"}}}',
    "control_char_in_string": b'{"query": {"term": {"k": "a\x01b"}}}',
    "nul_byte": b'{"size": 1\x00}',
    "comment": b'{"size": 1 /* c */}',
    "hex_number": b'{"size": 0x10}',
    "leading_zero": b'{"size": 01}',
    "plus_number": b'{"size": +1}',
    "bom_only": b"\xef\xbb\xbf",
    "whitespace_then_garbage": b"   \n\t ]",
    "query_not_object": b'{"query": "match_all"}',
}


@pytest.mark.parametrize("body", list(MALFORMED.values()), ids=list(MALFORMED))
def test_malformed_json(lode_url, ctl, body):
    status, resp = send(lode_url, "POST", "/%s/_search" % CTL, body)
    assert_es_error(status, resp, 400)


DUPLICATES = {
    "top_level": '{"size": 1, "size": 2}',
    "query": '{"query": {"match_all": {}}, "query": {"match_none": {}}}',
    "inside_term": '{"query": {"term": {"k": {"value": "k1", "value": "k2"}}}}',
    "inside_bool": '{"query": {"bool": {"must": [], "must": []}}}',
    "aggs_name": '{"aggs": {"a": {"max": {"field": "n"}}, "a": {"min": {"field": "n"}}}}',
}


@pytest.mark.parametrize("body", list(DUPLICATES.values()), ids=list(DUPLICATES))
def test_duplicate_keys(lode_url, ctl, body):
    # Elasticsearch's parser has strict duplicate detection on: x_content_parse_exception
    # ("Duplicate field 'size'"), 400.
    status, resp = send(lode_url, "POST", "/%s/_search" % CTL, body)
    assert_es_error(status, resp, 400)


@pytest.mark.parametrize("path", ["/%s/_count" % CTL, "/%s/_doc/x1" % CTL, "/%s/_mapping" % CTL,
                                  "/_cluster/settings", "/%s/_update/0" % CTL,
                                  "/%s/_delete_by_query" % CTL, "/_msearch", "/%s/_settings" % CTL])
@pytest.mark.parametrize("body", [b"{", b"[1]", b'{"a":1} x', b"\xff"], ids=["trunc", "array", "garbage", "utf8"])
def test_malformed_json_other_apis(lode_url, ctl, path, body):
    method = "PUT" if path.endswith(("_mapping", "_settings", "settings", "x1")) else "POST"
    status, resp = send(lode_url, method, path, body)
    assert_es_error(status, resp, 400)


def test_cluster_settings_body_shape(lode_url, ctl):
    # ClusterUpdateSettingsRequest's ObjectParser: an object of persistent/transient only
    status, resp = send(lode_url, "PUT", "/_cluster/settings", b"[1]")
    doc = assert_es_error(status, resp, 400, "x_content_parse_exception")
    assert "Expected START_OBJECT but was: START_ARRAY" in doc["error"]["reason"]
    status, resp = send(lode_url, "PUT", "/_cluster/settings", {"persistant": {}})
    doc = assert_es_error(status, resp, 400, "x_content_parse_exception")
    assert doc["error"]["reason"].endswith("unknown field [persistant] did you mean [persistent]?")


# ---------------------------------------------------------------------------
# 2. Query DSL errors
# ---------------------------------------------------------------------------

FIELD_QUERIES = ["term", "match", "match_phrase", "match_phrase_prefix", "match_bool_prefix",
                 "prefix", "wildcard", "regexp", "fuzzy", "range", "terms"]
OBJECT_QUERIES = ["bool", "exists", "ids", "constant_score", "dis_max", "function_score",
                  "multi_match", "query_string", "simple_query_string", "nested", "script",
                  "boosting", "combined_fields", "match_all", "match_none", "script_score"]
WRONG_VALUES = {"number": 1, "string": "x", "array": [1], "null": None, "true": True}


@pytest.mark.parametrize("wrong", list(WRONG_VALUES), ids=list(WRONG_VALUES))
@pytest.mark.parametrize("query", FIELD_QUERIES + OBJECT_QUERIES)
def test_query_wrong_value_type(lode_url, ctl, query, wrong):
    body = {"query": {query: WRONG_VALUES[wrong]}}
    status, resp = send(lode_url, "POST", "/%s/_search" % CTL, body)
    assert_es_error(status, resp, 400, PARSE_TYPES)


@pytest.mark.parametrize("query", FIELD_QUERIES)
def test_query_unknown_field_parameter(lode_url, ctl, query):
    inner = {"value": "x", "bogus_param": 1} if query != "terms" else {"k": ["x"], "bogus_param": 1}
    body = {"query": {query: {"k": inner} if query != "terms" else inner}}
    status, resp = send(lode_url, "POST", "/%s/_search" % CTL, body)
    assert_es_error(status, resp, 400, PARSE_TYPES)


@pytest.mark.parametrize("query", OBJECT_QUERIES)
def test_query_unknown_top_parameter(lode_url, ctl, query):
    status, resp = send(lode_url, "POST", "/%s/_search" % CTL, {"query": {query: {"bogus_param": 1}}})
    assert_es_error(status, resp, 400, PARSE_TYPES)


@pytest.mark.parametrize("name", ["foo", "match_al", "Term", "", "bool ", "knn_search", "percolate"])
def test_unknown_query(lode_url, ctl, name):
    status, resp = send(lode_url, "POST", "/%s/_search" % CTL, {"query": {name: {}}})
    assert_es_error(status, resp, 400, "parsing_exception")


BOOL_BAD = {"string": "x", "number": 3, "true": True, "array_of_strings": ["x"],
            "array_of_numbers": [1, 2], "nested_array": [[{"match_all": {}}]],
            "unknown_inner": {"nope": {}}, "empty_inner_name": {"": {}}}


@pytest.mark.parametrize("bad", list(BOOL_BAD), ids=list(BOOL_BAD))
@pytest.mark.parametrize("clause", ["must", "should", "filter", "must_not"])
def test_bool_clause_wrong_type(lode_url, ctl, clause, bad):
    status, resp = send(lode_url, "POST", "/%s/_search" % CTL, {"query": {"bool": {clause: BOOL_BAD[bad]}}})
    assert_es_error(status, resp, 400, PARSE_TYPES)


@pytest.mark.parametrize("msm", [{"a": 1}, [1], "abc%", True])
def test_bool_bad_minimum_should_match(lode_url, ctl, msm):
    body = {"query": {"bool": {"should": [{"match_all": {}}], "minimum_should_match": msm}}}
    status, resp = send(lode_url, "POST", "/%s/_search" % CTL, body)
    assert_es_error(status, resp, 400)


BAD_RANGES = {
    "non_numeric_bound": {"n": {"gte": "abc"}},
    "object_bound": {"n": {"gte": {"a": 1}}},
    "array_bound": {"n": {"lt": [1, 2]}},
    "unknown_key": {"n": {"gte": 1, "bogus": 2}},
    "bad_relation": {"n": {"gte": 1, "relation": "sideways"}},
    "bad_date": {"d": {"gte": "not-a-date"}},
    "bad_date_format": {"d": {"gte": "2024", "format": "qqq||zz"}},
    "bad_date_math": {"d": {"gte": "now-1x"}},
    "bad_time_zone": {"d": {"gte": "2024-01-01", "time_zone": "Mars/Olympus"}},
    "two_fields": {"n": {"gte": 1}, "d": {"gte": "2024-01-01"}},
    "not_object": {"n": 5},
    "huge_number": {"n": {"gte": "1e400"}},
    "boost_string": {"n": {"gte": 1, "boost": "high"}},
}


@pytest.mark.parametrize("rng", list(BAD_RANGES.values()), ids=list(BAD_RANGES))
def test_bad_range(lode_url, ctl, rng):
    status, resp = send(lode_url, "POST", "/%s/_search" % CTL, {"query": {"range": rng}})
    assert_es_error(status, resp, 400)


BAD_PATTERNS = {
    "regexp_unclosed_class": {"regexp": {"k": "[a-"}},
    "regexp_unclosed_group": {"regexp": {"k": "(ab"}},
    "regexp_bad_repeat": {"regexp": {"k": "a{2,1}"}},
    "regexp_huge_repeat": {"regexp": {"t": "a{1000000}"}},
    "regexp_bad_flags": {"regexp": {"k": {"value": "a.*", "flags": "NOPE"}}},
    "regexp_max_states": {"regexp": {"k": {"value": "a.*", "max_determinized_states": "x"}}},
    "regexp_too_long": {"regexp": {"k": "a" * 2000}},
    "wildcard_object_value": {"wildcard": {"k": {"value": {"a": 1}}}},
    "wildcard_no_value": {"wildcard": {"k": {"boost": 1}}},
    "prefix_no_value": {"prefix": {"k": {}}},
    "fuzzy_bad_fuzziness": {"fuzzy": {"k": {"value": "abc", "fuzziness": "ZZ"}}},
    "fuzzy_negative_prefix": {"fuzzy": {"k": {"value": "abc", "prefix_length": -1}}},
    "match_bad_fuzziness": {"match": {"t": {"query": "abc", "fuzziness": "lots"}}},
    "match_bad_operator": {"match": {"t": {"query": "abc", "operator": "xor"}}},
    "query_string_syntax": {"query_string": {"query": "t:(abc"}},
    # not lenient: ES's QueryStringQueryParser rethrows RegExp's error (see the test below)
    "query_string_bad_regex": {"query_string": {"query": "k:/[a-/", "lenient": False}},
    "query_string_bad_regex_default_field": {"query_string": {"query": "/[a-/", "default_field": "k"}},
    "query_string_bad_range": {"query_string": {"query": "n:[1 TO"}},
    "terms_object_values": {"terms": {"k": {"a": 1}}},
    "terms_nested_arrays": {"terms": {"k": [["a"]]}},
    "ids_values_string": {"ids": {"values": "abc"}},
    "exists_no_field": {"exists": {}},
    "constant_score_no_filter": {"constant_score": {}},
    "function_score_bad_mode": {"function_score": {"query": {"match_all": {}}, "score_mode": "wild"}},
    "function_score_bad_function": {"function_score": {"functions": [{"nope": {}}]}},
    "nested_no_path": {"nested": {"query": {"match_all": {}}}},
    "multi_match_bad_type": {"multi_match": {"query": "a", "fields": ["t"], "type": "mostly"}},
    "match_phrase_slop_string": {"match_phrase": {"t": {"query": "a b", "slop": "far"}}},
    "term_boost_object": {"term": {"k": {"value": "a", "boost": {"x": 1}}}},
}


@pytest.mark.parametrize("q", list(BAD_PATTERNS.values()), ids=list(BAD_PATTERNS))
def test_bad_query_values(lode_url, ctl, q):
    status, resp = send(lode_url, "POST", "/%s/_search" % CTL, {"query": q})
    assert_es_error(status, resp, 400)


def test_query_string_bad_regex_is_lenient_over_all_fields(lode_url, ctl):
    # With no default_field the index's default `*` makes query_string lenient (ES's
    # QueryStringQueryBuilder: `lenient == null ? true : lenient`), so a bad regex on a field
    # becomes a query that matches nothing, as Elasticsearch answers.
    status, resp = send(lode_url, "POST", "/%s/_search" % CTL,
                        {"query": {"query_string": {"query": "k:/[a-/"}}})
    assert status == 200, resp
    assert json.loads(resp)["hits"]["total"]["value"] == 0
    status, resp = send(lode_url, "POST", "/%s/_search" % CTL,
                        {"query": {"query_string": {"query": "k:/[a-/ OR k:k1"}}})
    assert status == 200, resp
    want = sum(1 for d in CTL_DOCS if d["k"] == "k1")
    assert json.loads(resp)["hits"]["total"]["value"] == want


BAD_SCRIPTS = {
    "syntax_error": {"source": "doc['n'].value +"},
    "unknown_lang": {"source": "1", "lang": "python"},
    "division_by_zero": {"source": "1 / 0 == 1"},
    "unmapped_field": {"source": "doc['nope'].value > 1"},
    "text_field": {"source": "doc['t'].value == 'x'"},
    "infinite_loop": {"source": "while (true) {} return true;"},
    "deep_recursion_expr": {"source": "(" * 2000 + "1" + ")" * 2000 + " > 0"},
    "source_not_string": {"source": {"a": 1}},
    "params_not_object": {"source": "true", "params": [1]},
    "no_source": {"params": {}},
    "unknown_key": {"source": "true", "nope": 1},
    "stored_missing": {"id": "no-such-script"},
    "null_pointer": {"source": "def x = null; return x.length() > 0"},
    "bad_cast": {"source": "return (int) 'abc' > 0"},
}


@pytest.mark.parametrize("script", list(BAD_SCRIPTS.values()), ids=list(BAD_SCRIPTS))
def test_script_errors(lode_url, ctl, script):
    body = {"query": {"bool": {"filter": {"script": {"script": script}}}}}
    status, resp = send(lode_url, "POST", "/%s/_search" % CTL, body)
    # a missing stored script is ES's 404 resource_not_found_exception
    assert_es_error(status, resp, 404 if "id" in script else 400)


# ---------------------------------------------------------------------------
# 3. Aggregations
# ---------------------------------------------------------------------------

BAD_AGGS = {
    "unknown_type": {"a": {"nope": {"field": "n"}}},
    "two_types": {"a": {"max": {"field": "n"}, "min": {"field": "n"}}},
    "no_type": {"a": {}},
    "not_object": {"a": 5},
    "bad_name": {"a[b]": {"max": {"field": "n"}}},
    "terms_size_huge": {"a": {"terms": {"field": "k", "size": 10 ** 10}}},
    "terms_size_negative": {"a": {"terms": {"field": "k", "size": -1}}},
    "terms_size_zero": {"a": {"terms": {"field": "k", "size": 0}}},
    "terms_size_string": {"a": {"terms": {"field": "k", "size": "ten"}}},
    "terms_shard_size_negative": {"a": {"terms": {"field": "k", "shard_size": -5}}},
    "terms_bad_order": {"a": {"terms": {"field": "k", "order": {"_count": "up"}}}},
    "terms_order_unknown_path": {"a": {"terms": {"field": "k", "order": {"nope": "asc"}}}},
    "terms_text_field": {"a": {"terms": {"field": "t"}}},
    "terms_min_doc_count_neg": {"a": {"terms": {"field": "k", "min_doc_count": -1}}},
    "histogram_zero_interval": {"a": {"histogram": {"field": "n", "interval": 0}}},
    "histogram_negative_interval": {"a": {"histogram": {"field": "n", "interval": -10}}},
    "histogram_no_interval": {"a": {"histogram": {"field": "n"}}},
    "histogram_string_interval": {"a": {"histogram": {"field": "n", "interval": "wide"}}},
    "histogram_tiny_interval_bounds": {"a": {"histogram": {"field": "n", "interval": 1e-9,
                                                           "extended_bounds": {"min": 0, "max": 1e9}}}},
    "histogram_bad_bounds": {"a": {"histogram": {"field": "n", "interval": 1,
                                                 "extended_bounds": {"min": 10, "max": 1}}}},
    "date_histogram_zero": {"a": {"date_histogram": {"field": "d", "fixed_interval": "0s"}}},
    "date_histogram_negative": {"a": {"date_histogram": {"field": "d", "fixed_interval": "-1d"}}},
    "date_histogram_bad_calendar": {"a": {"date_histogram": {"field": "d", "calendar_interval": "3d"}}},
    "date_histogram_garbage": {"a": {"date_histogram": {"field": "d", "fixed_interval": "forever"}}},
    "date_histogram_both": {"a": {"date_histogram": {"field": "d", "fixed_interval": "1d",
                                                      "calendar_interval": "1d"}}},
    "date_histogram_none": {"a": {"date_histogram": {"field": "d"}}},
    "date_histogram_tiny_bounds": {"a": {"date_histogram": {"field": "d", "fixed_interval": "1ms",
                                                             "extended_bounds": {"min": 0, "max": 10 ** 12}}}},
    "date_histogram_bad_tz": {"a": {"date_histogram": {"field": "d", "calendar_interval": "day",
                                                        "time_zone": "Nowhere/Land"}}},
    "range_no_ranges": {"a": {"range": {"field": "n"}}},
    "range_ranges_not_array": {"a": {"range": {"field": "n", "ranges": {"from": 1}}}},
    "range_bad_bound": {"a": {"range": {"field": "n", "ranges": [{"from": "x"}]}}},
    "percentiles_bad_percent": {"a": {"percentiles": {"field": "n", "percents": [150]}}},
    "percentiles_string_percent": {"a": {"percentiles": {"field": "n", "percents": ["x"]}}},
    "top_hits_size_huge": {"a": {"top_hits": {"size": 10 ** 10}}},
    "top_hits_size_negative": {"a": {"top_hits": {"size": -1}}},
    "cardinality_bad_threshold": {"a": {"cardinality": {"field": "k", "precision_threshold": "x"}}},
    "sub_aggs_under_metric": {"a": {"max": {"field": "n"}, "aggs": {"b": {"min": {"field": "n"}}}}},
    "filter_bad_query": {"a": {"filter": {"nope": {}}}},
    "filters_not_object": {"a": {"filters": {"filters": 5}}},
    "composite_bad_sources": {"a": {"composite": {"sources": {"x": 1}}}},
    "composite_size_negative": {"a": {"composite": {"size": -1, "sources": [{"k": {"terms": {"field": "k"}}}]}}},
    "bucket_sort_bad_path": {"h": {"terms": {"field": "k"}, "aggs": {"s": {"bucket_sort": {"sort": [{"nope": "asc"}]}}}}},
    "avg_bucket_bad_path": {"x": {"avg_bucket": {"buckets_path": "nope>n"}}},
    "derivative_top_level": {"x": {"derivative": {"buckets_path": "_count"}}},
    "max_field_object": {"a": {"max": {"field": {"x": 1}}}},
    "deep_nesting": {"a": {"terms": {"field": "k"}, "aggs": {"b": {"terms": {"field": "k"}, "aggs": {"c": {"nope": {}}}}}}},
}


@pytest.mark.parametrize("aggs", list(BAD_AGGS.values()), ids=list(BAD_AGGS))
def test_bad_aggregation(lode_url, ctl, aggs):
    status, resp = send(lode_url, "POST", "/%s/_search" % CTL, {"size": 0, "aggs": aggs})
    assert_es_error(status, resp)


def test_unknown_aggregation_type_is_parsing_exception(lode_url, ctl):
    status, resp = send(lode_url, "POST", "/%s/_search" % CTL, {"aggs": {"a": {"nope": {}}}})
    doc = assert_es_error(status, resp, 400, {"parsing_exception", "x_content_parse_exception"})
    assert "nope" in json.dumps(doc)


# ---------------------------------------------------------------------------
# 4. Mapping violations (on the control index itself: all must be refused)
# ---------------------------------------------------------------------------

BAD_MAPPINGS = {
    "type_change_long_to_keyword": {"properties": {"n": {"type": "keyword"}}},
    "type_change_text_to_long": {"properties": {"t": {"type": "long"}}},
    "object_to_leaf": {"properties": {"o": {"type": "keyword"}}},
    "leaf_to_object": {"properties": {"k": {"properties": {"x": {"type": "long"}}}}},
    "unknown_type": {"properties": {"z": {"type": "nonsense"}}},
    "type_not_string": {"properties": {"z": {"type": 5}}},
    "field_not_object": {"properties": {"z": "keyword"}},
    "properties_not_object": {"properties": [1]},
    "unknown_analyzer": {"properties": {"z": {"type": "text", "analyzer": "no_such_analyzer"}}},
    "unknown_search_analyzer": {"properties": {"z": {"type": "text", "search_analyzer": "nope"}}},
    "unknown_normalizer": {"properties": {"z": {"type": "keyword", "normalizer": "nope"}}},
    "analyzer_on_keyword": {"properties": {"z": {"type": "keyword", "analyzer": "standard"}}},
    "unknown_parameter": {"properties": {"z": {"type": "long", "bogus": True}}},
    "dotted_conflict_leaf": {"properties": {"n.x": {"type": "long"}}},
    "dotted_conflict_object": {"properties": {"o.x.y": {"type": "long"}}},
    "empty_field_name": {"properties": {"": {"type": "long"}}},
    "dots_only_name": {"properties": {"..": {"type": "long"}}},
    "bad_date_format": {"properties": {"z": {"type": "date", "format": "qqqq||"}}},
    "bad_dynamic": {"dynamic": "sometimes"},
    "bad_index_option": {"properties": {"z": {"type": "text", "index_options": "everything"}}},
    "bad_doc_values": {"properties": {"z": {"type": "long", "doc_values": "maybe"}}},
    "bad_multi_fields": {"properties": {"z": {"type": "text", "fields": [1]}}},
    "bad_scaled_float": {"properties": {"z": {"type": "scaled_float"}}},
    "unknown_root_key": {"nonsense_root": 1},
    "meta_field_property": {"properties": {"_id": {"type": "keyword"}}},
    "bad_ignore_above": {"properties": {"z": {"type": "keyword", "ignore_above": "x"}}},
    "null_value_wrong_type": {"properties": {"z": {"type": "long", "null_value": "abc"}}},
}


@pytest.mark.parametrize("mapping", list(BAD_MAPPINGS.values()), ids=list(BAD_MAPPINGS))
def test_bad_put_mapping(lode_url, ctl, mapping):
    status, resp = send(lode_url, "PUT", "/%s/_mapping" % CTL, mapping)
    assert_es_error(status, resp, 400, {"mapper_parsing_exception", "illegal_argument_exception"})


# Invalid on their own, not only against the control index's mapping.
STANDALONE_BAD = [k for k in BAD_MAPPINGS if not k.startswith(("type_change", "object_to", "leaf_to", "dotted_conflict"))]


@pytest.mark.parametrize("name", STANDALONE_BAD)
def test_bad_create_index_mapping(lode_url, ctl, name):
    send(lode_url, "DELETE", "/hostile_new")
    status, resp = send(lode_url, "PUT", "/hostile_new", {"mappings": BAD_MAPPINGS[name]})
    assert_es_error(status, resp, 400)
    status, _ = send(lode_url, "HEAD", "/hostile_new")
    assert status == 404  # a refused creation leaves no index behind


BAD_DOCS = {
    "long_from_word": {"n": "abc"},
    "long_from_object": {"n": {"a": 1}},
    "long_overflow": {"n": 10 ** 30},
    "long_from_bool": {"n": True},
    "date_garbage": {"d": "yesterday-ish"},
    "object_from_string": {"o": "flat"},
    "object_child_type": {"o": {"x": "many"}},
    "dotted_into_leaf": {"n.x": 1},
    "keyword_from_object": {"k": {"a": "b"}},
    "empty_field_name": {"": 1},
    "meta_field_in_source": {"_id": "x"},
    "array_of_mixed": {"n": [1, "abc"]},
}


def test_dotted_field_into_leaf_message(lode_url, ctl):
    status, resp = send(lode_url, "PUT", "/%s/_doc/bad?refresh=true" % CTL, {"o.x.y": 1})
    doc = assert_es_error(status, resp, 400, "document_parsing_exception")
    assert doc["error"]["reason"].endswith(
        "Could not dynamically add mapping for field [o.x.y]. Existing mapping for [o.x] must "
        "be of type object but found [integer].")


@pytest.mark.parametrize("doc", list(BAD_DOCS.values()), ids=list(BAD_DOCS))
def test_document_violates_mapping(lode_url, ctl, doc):
    status, resp = send(lode_url, "PUT", "/%s/_doc/bad?refresh=true" % CTL, doc)
    assert_es_error(status, resp, 400, {"document_parsing_exception", "mapper_parsing_exception"})


# ---------------------------------------------------------------------------
# 5. Bulk
# ---------------------------------------------------------------------------

BULK_INDEX = "hostile_bulk"
SCRATCH = "hostile_scratch"  # writes that a lenient server might accept go here, never to CTL
BAD_BULK = {
    "missing_final_newline": '{"index":{"_id":"1"}}\n{"n":1}',
    "action_not_object": '"index"\n{"n":1}\n',
    "action_array": '[{"index":{}}]\n{"n":1}\n',
    "action_number": '5\n{"n":1}\n',
    "action_unknown": '{"upsert":{"_id":"1"}}\n{"n":1}\n',
    "action_two_keys": '{"index":{},"create":{}}\n{"n":1}\n',
    "action_meta_not_object": '{"index":1}\n{"n":1}\n',
    "action_unknown_param": '{"index":{"_id":"1","bogus":2}}\n{"n":1}\n',
    "action_truncated": '{"index":{"_id":"1"\n{"n":1}\n',
    "action_garbage": 'not json at all\n{"n":1}\n',
    "missing_source": '{"index":{"_id":"1"}}\n',
    "missing_source_create": '{"create":{"_id":"1"}}\n',
    "missing_source_update": '{"update":{"_id":"1"}}\n',
    "id_object": '{"index":{"_id":{"a":1}}}\n{"n":1}\n',
    "version_string": '{"index":{"_id":"1","version":"abc"}}\n{"n":1}\n',
    "empty_body": "",
    "only_newlines": "\n\n\n",
}


@pytest.mark.parametrize("body", list(BAD_BULK.values()), ids=list(BAD_BULK))
def test_bad_bulk(lode_url, ctl, body):
    send(lode_url, "DELETE", "/" + BULK_INDEX)
    status, resp = send(lode_url, "POST", "/%s/_bulk" % BULK_INDEX, body,
                        {"Content-Type": "application/x-ndjson"})
    assert_es_error(status, resp, 400)
    status, _ = send(lode_url, "HEAD", "/" + BULK_INDEX)
    assert status == 404, "a refused bulk request must not create its index"


WRITE_BODY_UNKNOWN_KEYS = {
    # an unknown key anywhere in an index, update, bulk, mapping or settings body is refused
    # with ES's type, and nothing is created
    "create_index": ("PUT", "/hostile_wb", {"setings": {}},
                     "parse_exception", "unknown key [setings] for create index"),
    "create_index_setting": ("PUT", "/hostile_wb", {"settings": {"number_of_shard": 1}},
                             "illegal_argument_exception", "unknown setting [index.number_of_shard]"),
    "create_index_mapping": ("PUT", "/hostile_wb", {"mappings": {"propertes": {}}},
                             "mapper_parsing_exception", "unsupported parameters"),
    "put_mapping_param": ("PUT", "/%s/_mapping" % CTL,
                          {"properties": {"n2": {"type": "long", "indx": False}}},
                          "mapper_parsing_exception", "unsupported parameters:  [indx : false]"),
    "put_settings": ("PUT", "/%s/_settings" % CTL, {"index": {"number_of_replica": 1}},
                     "illegal_argument_exception", "unknown setting [index.number_of_replica]"),
    "update": ("POST", "/%s/_update/1" % CTL, {"doc": {"n": 1}, "upsret": {}},
               "x_content_parse_exception", "[UpdateRequest] unknown field [upsret] did you mean [upsert]?"),
    "bulk_action": ("POST", "/%s/_bulk" % CTL, '{"index":{"_id":"9","bogus":1}}\n{"n":1}\n',
                    "illegal_argument_exception", "contains an unknown parameter [bogus]"),
}


@pytest.mark.parametrize("case", list(WRITE_BODY_UNKNOWN_KEYS.values()), ids=list(WRITE_BODY_UNKNOWN_KEYS))
def test_unknown_keys_in_write_bodies(lode_url, ctl, case):
    method, path, body, kind, words = case
    status, resp = send(lode_url, method, path, body,
                        {"Content-Type": "application/x-ndjson"} if "_bulk" in path else None)
    doc = assert_es_error(status, resp, 400, kind)
    assert words in doc["error"]["reason"], doc
    assert send(lode_url, "HEAD", "/hostile_wb")[0] == 404
    # a bulk update whose payload has an unknown key fails that item with the same error
    status, resp = send(lode_url, "POST", "/%s/_bulk" % CTL,
                        '{"update":{"_id":"nope-wb"}}\n{"docs":{"n":1}}\n',
                        {"Content-Type": "application/x-ndjson"})
    assert status == 200
    (item,) = json.loads(resp)["items"]
    assert item["update"]["status"] == 400
    assert item["update"]["error"]["type"] == "x_content_parse_exception"
    assert item["update"]["error"]["reason"].endswith("unknown field [docs] did you mean [doc]?")


BULK_ITEM_ERRORS = {
    "id_too_long": ('{"index":{"_index":"%s","_id":"%s"}}\n{"n":1}\n' % (CTL, "x" * 513)),
    "bad_index_name": '{"index":{"_index":"Bad_Name"}}\n{"n":1}\n',
    "source_garbage": '{"index":{"_index":"%s","_id":"z"}}\n{nope}\n' % CTL,
    "source_array": '{"index":{"_index":"%s","_id":"z"}}\n[1,2]\n' % CTL,
    "mapping_violation": '{"index":{"_index":"%s","_id":"z"}}\n{"n":"abc"}\n' % CTL,
    "update_missing_doc": '{"update":{"_index":"%s","_id":"nope"}}\n{"doc":{"n":1}}\n' % CTL,
    "update_bad_body": '{"update":{"_index":"%s","_id":"1"}}\n{"doc":5}\n' % CTL,
    "delete_version_conflict": '{"delete":{"_index":"%s","_id":"1","if_seq_no":99999,"if_primary_term":1}}\n' % CTL,
}


@pytest.mark.parametrize("body", list(BULK_ITEM_ERRORS.values()), ids=list(BULK_ITEM_ERRORS))
def test_bulk_item_errors(lode_url, ctl, body):
    """Either the whole request is refused with ES's error (a validation failure), or each
    item carries its own 4xx error: never a 5xx, never a change to the control index."""
    status, resp = send(lode_url, "POST", "/_bulk", body, {"Content-Type": "application/x-ndjson"})
    if status >= 400:
        assert_es_error(status, resp, 400)
        return
    assert status == 200
    doc = json.loads(resp)
    assert doc["errors"] is True
    for item in doc["items"]:
        (res,) = item.values()
        assert 400 <= res["status"] < 500 and res["error"]["type"], res


def test_bulk_id_too_long_single_doc(lode_url, ctl):
    status, resp = send(lode_url, "PUT", "/%s/_doc/%s" % (CTL, "y" * 513), {"n": 1})
    doc = assert_es_error(status, resp, 400)
    assert "is too long, must be no longer than 512 bytes but was: 513" in doc["error"]["reason"]


# ---------------------------------------------------------------------------
# 6. Index names
# ---------------------------------------------------------------------------

BAD_NAMES = {
    "uppercase": "Bad", "mixed_case": "badName", "underscore_prefix": "_bad",
    "dash_prefix": "-bad", "plus_prefix": "+bad", "hash": "a#b", "dot": ".", "dotdot": "..",
    "too_long": "x" * 256, "too_long_multibyte": "é" * 128, "space": "a b", "star": "a*b",
    "question": "a?b", "backslash": "a\\b", "lt": "a<b", "gt": "a>b", "pipe": "a|b",
    "quote": 'a"b', "comma": "a,b", "colon": "a:b", "slash": "a/b",
}


@pytest.mark.parametrize("name", list(BAD_NAMES.values()), ids=list(BAD_NAMES))
def test_bad_index_name(lode_url, ctl, name):
    status, resp = send(lode_url, "PUT", "/" + quote(name, safe=""), {})
    assert_es_error(status, resp, 400, "invalid_index_name_exception")


@pytest.mark.parametrize("name", ["x" * 256, "Bad"], ids=["too_long", "uppercase"])
def test_bad_index_name_via_doc(lode_url, ctl, name):
    status, resp = send(lode_url, "PUT", "/%s/_doc/1" % quote(name, safe=""), {"n": 1})
    assert_es_error(status, resp, 400, "invalid_index_name_exception")


@pytest.mark.parametrize("method,path", [
    ("GET", "/hostile_missing/_search"), ("POST", "/hostile_missing/_count"),
    ("GET", "/hostile_missing/_doc/1"), ("DELETE", "/hostile_missing"),
    ("GET", "/hostile_missing/_mapping"), ("GET", "/hostile_missing/_settings"),
    ("POST", "/hostile_missing/_refresh"), ("POST", "/hostile_missing/_delete_by_query"),
    ("GET", "/hostile_missing,%s/_search" % CTL),
])
def test_index_not_found(lode_url, ctl, method, path):
    body = {"query": {"match_all": {}}} if "by_query" in path else None
    status, resp = send(lode_url, method, path, body)
    assert_es_error(status, resp, 404, "index_not_found_exception")


# ---------------------------------------------------------------------------
# 7. Parameters
# ---------------------------------------------------------------------------

BAD_PARAMS = [
    ("GET", "/%s/_search?size=abc" % CTL), ("GET", "/%s/_search?size=-5" % CTL),
    ("GET", "/%s/_search?from=-1" % CTL), ("GET", "/%s/_search?from=1e400" % CTL),
    ("GET", "/%s/_search?size=99999999999" % CTL), ("GET", "/%s/_search?timeout=soon" % CTL),
    ("GET", "/%s/_search?track_total_hits=lots" % CTL), ("GET", "/%s/_search?scroll=forever" % CTL),
    ("GET", "/%s/_search?search_type=random" % CTL), ("GET", "/%s/_search?allow_no_indices=maybe" % CTL),
    ("GET", "/%s/_search?expand_wildcards=everything" % CTL), ("GET", "/%s/_search?q=t:(abc" % CTL),
    ("GET", "/%s/_search?sort=n:sideways" % CTL), ("GET", "/%s/_search?request_cache=maybe" % CTL),
    ("GET", "/%s/_search?bogus=1" % CTL), ("GET", "/%s/_search?default_operator=XOR&q=a" % CTL),
    ("GET", "/%s/_search?terminate_after=x" % CTL), ("GET", "/%s/_search?batched_reduce_size=1" % CTL),
    ("GET", "/%s/_count?bogus=1" % CTL), ("GET", "/%s/_count?min_score=high" % CTL),
    ("GET", "/%s/_doc/1?version=abc" % CTL), ("GET", "/%s/_doc/1?bogus=1" % CTL),
    ("GET", "/%s/_doc/1?realtime=maybe" % CTL), ("DELETE", "/%s/_doc/nope?if_seq_no=x&if_primary_term=1" % SCRATCH),
    ("PUT", "/%s/_doc/1?refresh=maybe" % SCRATCH), ("PUT", "/%s/_doc/1?op_type=upsert" % SCRATCH),
    ("PUT", "/%s/_doc/1?version_type=sometimes" % SCRATCH), ("PUT", "/%s/_doc/1?timeout=-5x" % SCRATCH),
    ("POST", "/%s/_bulk?refresh=maybe" % SCRATCH), ("POST", "/_bulk?bogus=1"),
    ("POST", "/%s/_refresh?bogus=1" % CTL), ("GET", "/%s/_mapping?bogus=1" % CTL),
    ("GET", "/_cat/indices?bogus=1"),
    ("GET", "/_cluster/health?wait_for_status=purple"), ("GET", "/_cluster/health?level=galaxy"),
    ("GET", "/%s/_stats/nonsense_metric" % CTL), ("GET", "/?bogus=1"),
    ("POST", "/%s/_search?scroll=1m&size=abc" % CTL), ("POST", "/_search/scroll?scroll_id=not-a-scroll"),
    ("DELETE", "/_search/scroll/not-a-scroll"), ("GET", "/%s/_search?pre_filter_shard_size=x" % CTL),
    ("GET", "/%s/_search?max_concurrent_shard_requests=0" % CTL), ("GET", "/%s/_search?_source=" % CTL + "%ZZ"),
]


@pytest.mark.parametrize("method,path", BAD_PARAMS, ids=["%s %s" % mp for mp in BAD_PARAMS])
def test_bad_parameter(lode_url, ctl, method, path):
    body = {"n": 1} if method == "PUT" else (
        '{"index":{"_id":"1"}}\n{"n":1}\n' if "_bulk" in path else None)
    headers = {"Content-Type": "application/x-ndjson"} if "_bulk" in path else None
    status, resp = send(lode_url, method, path, body, headers)
    assert_es_error(status, resp)


def test_cat_unknown_bytes_unit_renders_human_sizes(lode_url, ctl):
    # Elasticsearch's RestTable compares `bytes` with b/k/kb/m/mb/g/gb/t/tb/p/pb and renders
    # any other value as if it were absent (ByteSizeValue#toString): not an error.
    path = "/_cat/indices/%s?h=index,pri.store.size&format=json" % CTL
    status, plain = send(lode_url, "GET", path)
    assert status == 200
    status, odd = send(lode_url, "GET", path + "&bytes=zz")
    assert status == 200, odd
    assert json.loads(odd) == json.loads(plain)
    status, raw = send(lode_url, "GET", path + "&bytes=b")
    assert status == 200 and json.loads(raw)[0]["pri.store.size"].isdigit()


BAD_BODY_VALUES = {
    "size_string": {"size": "ten"}, "size_negative": {"size": -1}, "from_negative": {"from": -3},
    "size_huge": {"size": 10 ** 12}, "from_object": {"from": {}},
    "sort_number": {"sort": 5}, "sort_unknown_order": {"sort": [{"n": "sideways"}]},
    "sort_unknown_key": {"sort": [{"n": {"order": "asc", "bogus": 1}}]}, "unknown_key": {"qurey": {}},
    "source_number": {"_source": 5}, "timeout_garbage": {"timeout": "soon"},
    "track_total_hits_string": {"track_total_hits": "lots"}, "min_score_string": {"min_score": "x"},
    "search_after_not_array": {"search_after": 5}, "search_after_wrong_len": {"sort": ["n"], "search_after": [1, 2, 3]},
    "highlight_not_object": {"highlight": 5}, "post_filter_unknown": {"post_filter": {"nope": {}}},
    "docvalue_fields_number": {"docvalue_fields": 5}, "stored_fields_object": {"stored_fields": {"a": 1}},
    "rescore_bad": {"rescore": {"window_size": -1}}, "collapse_no_field": {"collapse": {}},
    "terminate_after_negative": {"terminate_after": -1}, "indices_boost_bad": {"indices_boost": 5},
    "script_fields_bad": {"script_fields": {"a": {"script": {"source": "doc['nope'].value"}}}},
    "suggest_bad_max_edits": {"suggest": {"s": {"text": "a", "term": {"field": "t", "max_edits": 5}}}},
    "explain_string": {"explain": "yes"}, "version_object": {"version": {}},
    "from_size_window": {"from": 10000, "size": 1},
}


@pytest.mark.parametrize("body", list(BAD_BODY_VALUES.values()), ids=list(BAD_BODY_VALUES))
def test_bad_search_body_value(lode_url, ctl, body):
    status, resp = send(lode_url, "POST", "/%s/_search" % CTL, body)
    assert_es_error(status, resp, 400)


# ---------------------------------------------------------------------------
# 8. HTTP-level abuse over raw sockets
# ---------------------------------------------------------------------------

def _req(line, headers=(), body=b""):
    head = line + b"\r\n" + b"".join(h + b"\r\n" for h in headers)
    return head + b"\r\n" + body


RAW = {
    "garbage_request_line": (_req(b"HELLO THERE"), False),
    "missing_version": (_req(b"GET /"), False),
    "bad_http_version": (_req(b"GET / HTTP/9.9", [b"Host: x"]), False),
    "bad_content_length": (_req(b"POST /%s/_search HTTP/1.1" % CTL.encode(),
                                [b"Host: x", b"Content-Type: application/json", b"Content-Length: abc"],
                                b"{}"), False),
    "negative_content_length": (_req(b"POST /%s/_search HTTP/1.1" % CTL.encode(),
                                     [b"Host: x", b"Content-Type: application/json", b"Content-Length: -5"],
                                     b"{}"), False),
    "two_content_lengths": (_req(b"POST /%s/_search HTTP/1.1" % CTL.encode(),
                                 [b"Host: x", b"Content-Type: application/json", b"Content-Length: 2",
                                  b"Content-Length: 7"], b"{}"), False),
    "short_body_then_eof": (_req(b"POST /%s/_search HTTP/1.1" % CTL.encode(),
                                 [b"Host: x", b"Content-Type: application/json", b"Content-Length: 100"],
                                 b"{}"), True),
    "oversized_header": (_req(b"GET / HTTP/1.1", [b"Host: x", b"X-Big: " + b"a" * (1 << 20)]), False),
    "many_headers": (_req(b"GET / HTTP/1.1", [b"Host: x"] + [b"X-H%d: v" % i for i in range(500)]), False),
    "bad_chunked": (_req(b"POST /%s/_search HTTP/1.1" % CTL.encode(),
                         [b"Host: x", b"Content-Type: application/json", b"Transfer-Encoding: chunked"],
                         b"zz\r\n{}\r\n0\r\n\r\n"), False),
    "header_no_colon": (_req(b"GET / HTTP/1.1", [b"Host: x", b"NoColonHere"]), False),
}


@pytest.mark.parametrize("case", list(RAW), ids=list(RAW))
def test_raw_http_abuse(lode_url, ctl, case):
    data, shut = RAW[case]
    status, body = send_raw(lode_url, data, shut)
    assert_es_error(status, body)


def test_url_64k(lode_url, ctl):
    status, resp = send(lode_url, "GET", "/%s/_search?q=%s" % (CTL, "a" * 65536))
    assert_es_error(status, resp)


def test_path_64k(lode_url, ctl):
    status, resp = send(lode_url, "GET", "/" + "a" * 65536)
    assert_es_error(status, resp)


@pytest.mark.parametrize("method,path", [("PATCH", "/%s/_search" % CTL), ("TRACE", "/"),
                                         ("CONNECT", "/"), ("FOO", "/"), ("PATCH", "/%s/_doc/1" % CTL)])
def test_unsupported_method(lode_url, ctl, method, path):
    status, resp = send(lode_url, method, path)
    assert_es_error(status, resp, 405)


@pytest.mark.parametrize("path", ["/%s/_doc/1" % CTL, "/", "/%s/_mapping" % CTL, "/_cat/indices",
                                  "/_cluster/health"])
def test_body_on_get(lode_url, ctl, path):
    # Elasticsearch: "request [GET /...] does not support having a body", 400
    status, resp = send(lode_url, "GET", path, {"a": 1})
    assert_es_error(status, resp, 400, "illegal_argument_exception")


@pytest.mark.parametrize("ctype", ["text/plain", "application/xml", "image/png",
                                   "application/x-www-form-urlencoded", "application/smile",
                                   "application/cbor", "application/yaml"])
def test_bad_content_type(lode_url, ctl, ctype):
    # Elasticsearch's RestController answers a body of a type it does not read (Lode reads
    # JSON only) in its simple error shape: 406 {"error": "...", "status": 406}
    status, resp = send(lode_url, "POST", "/%s/_search" % CTL, b"{}", {"Content-Type": ctype})
    assert status == 406, (status, resp)
    assert json.loads(resp) == {"error": "Content-Type header [%s] is not supported" % ctype,
                                "status": 406}


def test_unparsable_content_type(lode_url, ctl):
    # not a media type at all: the request fails parsing, a 400 media_type_header_exception
    status, resp = send(lode_url, "POST", "/%s/_search" % CTL, b"{}", {"Content-Type": "garbage"})
    doc = assert_es_error(status, resp, 400, "media_type_header_exception")
    assert doc["error"]["caused_by"]["reason"] == "invalid media-type [garbage]"


@pytest.mark.parametrize("ctype", ["application/json", "application/json; charset=UTF-8",
                                   "application/vnd.elasticsearch+json; compatible-with=8",
                                   "application/x-ndjson"])
def test_json_content_types_accepted(lode_url, ctl, ctype):
    # a versioned Content-Type needs the matching Accept, as the official clients send it
    status, resp = send(lode_url, "POST", "/%s/_search" % CTL, b"{}",
                        {"Content-Type": ctype, "Accept": ctype.replace("x-ndjson", "json")})
    assert status == 200, (status, resp)


def test_content_type_not_checked_without_body(lode_url, ctl):
    # curl's default form type on a body-less request: ES checks the type only with content
    status, resp = send(lode_url, "GET", "/%s/_search" % CTL, None,
                        {"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 200, (status, resp)


def test_body_on_get_message(lode_url, ctl):
    status, resp = send(lode_url, "GET", "/?pretty", {"a": 1})
    doc = assert_es_error(status, resp, 400, "illegal_argument_exception")
    assert doc["error"]["reason"] == "request [GET /] does not support having a body"


@pytest.mark.parametrize("method,path", [("POST", "/%s/_refresh" % CTL), ("DELETE", "/%s_nope" % CTL),
                                         ("POST", "/%s/_forcemerge" % CTL)])
def test_body_on_bodyless_api(lode_url, ctl, method, path):
    status, resp = send(lode_url, method, path, {"a": 1})
    doc = assert_es_error(status, resp, 400, "illegal_argument_exception")
    assert doc["error"]["reason"] == "request [%s %s] does not support having a body" % (method, path)


def test_server_still_answers(es, ctl):
    assert es.info()["version"]["number"]


def test_control_after(es, ctl):
    assert control_state(es) == ctl
