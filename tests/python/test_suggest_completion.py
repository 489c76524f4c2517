"""The completion suggester and the `completion` field, against an oracle computed here from
the indexed documents: each input is analyzed as the `simple` analyzer does (letters only,
lowercased, tokens joined by the separator \\x1f), a document matches a prefix when one of its
keys starts with the analyzed prefix, its option is its best matching input (highest weight,
then text), and options sort by weight, then text, then shard and document; `size` trims them.
Fuzzy matching: a key matches when, past the exact `prefix_length`, a prefix of it is within
`fuzziness` edits (optimal string alignment) of the rest of the query.
"""

import re

import pytest

import oracle
from elasticsearch import ApiError

from conftest import make_index

INDEX = "suggest_completion"
SHARDED = "suggest_completion_sharded"
SEP = "\x1f"

WORDS = ["nirvana", "nevermind", "nirvanic", "nothing", "nice", "night", "nights", "knight",
         "apple", "applied", "apply", "application", "ample", "maple", "star", "start",
         "starting", "stars", "the", "beatles", "rolling", "stones", "nirvana live"]


def _docs():
    docs = []
    for i in range(60):
        w1 = WORDS[(i * 7) % len(WORDS)]
        w2 = WORDS[(i * 11 + 3) % len(WORDS)]
        kind = i % 4
        if kind == 0:
            value = w1.title()
        elif kind == 1:
            value = [w1.upper(), w2 + " " + w1]
        elif kind == 2:
            value = {"input": [w1, w2.title()], "weight": (i * 13) % 50}
        else:
            value = [{"input": w1, "weight": i % 9}, {"input": w2 + "!", "weight": (i * 3) % 20}]
        docs.append((str(i), {"suggest": value, "n": i}))
    # The same input given twice in one document: one option, with ES's weight.
    docs.append(("60", {"suggest": [{"input": "Nightly", "weight": 40}, "Nightly",
                                    {"input": ["Nightly", "Nimble"], "weight": 30}], "n": 60}))
    docs.append(("61", {"suggest": ["Nimbus", {"input": "Nimbus", "weight": 45}], "n": 61}))
    return docs


MAPPINGS = {"properties": {"suggest": {"type": "completion"}, "n": {"type": "integer"}}}


@pytest.fixture(scope="module")
def index(es):
    make_index(es, INDEX, {"settings": {"number_of_shards": 1}, "mappings": MAPPINGS}, _docs())
    return INDEX


@pytest.fixture(scope="module")
def sharded(es):
    make_index(es, SHARDED, {"settings": {"number_of_shards": 3}, "mappings": MAPPINGS},
               _docs())
    return SHARDED


# ---- the oracle --------------------------------------------------------------------------

def key(text):
    return SEP.join(t.lower() for t in re.findall(r"[^\W\d_]+", text))


def inputs(value):
    """input -> weight, as CompletionFieldMapper collects them: a string puts weight 1, an
    object's input replaces an entry of lower weight."""
    out = {}
    items = value if isinstance(value, list) else [value]
    for it in items:
        if isinstance(it, str):
            out[it] = 1
        else:
            ins = it["input"] if isinstance(it["input"], list) else [it["input"]]
            for x in ins:
                out[x] = max(out.get(x, -1), it.get("weight", 1))
    return out


def fuzzy_match(k, q, edits, prefix_length=1, min_length=3):
    if len(q) <= prefix_length or len(q) < min_length:
        return k.startswith(q)
    if k[:prefix_length] != q[:prefix_length]:
        return False
    rest_q, rest_k = q[prefix_length:], k[prefix_length:]
    return any(oracle.osa_distance(rest_q, rest_k[:j]) <= edits for j in range(len(rest_k) + 1))


def expect(prefix, size=5, skip_duplicates=False, match=None):
    q = key(prefix)
    match = match or (lambda k: k.startswith(q))
    best = []
    for doc_id, src in _docs():
        found = [(-w, x) for x, w in inputs(src["suggest"]).items()
                 if x.strip() and match(key(x))]
        if found:
            w, x = min(found)
            best.append((w, x, int(doc_id), doc_id))
    best.sort()
    out, seen = [], set()
    for w, x, _, doc_id in best:
        if skip_duplicates and x in seen:
            continue
        seen.add(x)
        out.append((x, float(-w), doc_id))
    return out[:size]


def suggest(es, index, body, **params):
    r = es.search(index=index, suggest=body, size=0, **params)
    return r["suggest"]


def options(entry):
    return [(o["text"], o["_score"], o["_id"]) for o in entry["options"]]


# ---- tests -------------------------------------------------------------------------------

PREFIXES = ["n", "ni", "nir", "Nirv", "NIGHT", "app", "a", "st", "star", "nirvana l", "zz",
            "the b", "k"]


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("size", [1, 5, 40])
def test_prefix_matches_sorted_by_weight(es, index, prefix, size):
    s = suggest(es, index, {"s": {"prefix": prefix, "completion": {"field": "suggest",
                                                                    "size": size}}})
    [entry] = s["s"]
    assert entry["text"] == prefix and entry["offset"] == 0 and entry["length"] == len(prefix)
    assert options(entry) == expect(prefix, size)


@pytest.mark.parametrize("prefix", ["n", "app", "st"])
def test_shards_merge_as_one(es, index, sharded, prefix):
    one = suggest(es, index, {"s": {"prefix": prefix, "completion": {"field": "suggest",
                                                                     "size": 10}}})
    many = suggest(es, sharded, {"s": {"prefix": prefix, "completion": {"field": "suggest",
                                                                        "size": 10}}})
    exp = expect(prefix, 10)
    assert options(one["s"][0]) == exp
    # Ties between shards may order by shard: compare the scores and the set of options.
    got = options(many["s"][0])
    assert [o[1] for o in got] == [o[1] for o in exp]
    assert sorted(got) == sorted(exp)


@pytest.mark.parametrize("prefix", ["n", "app", "st"])
def test_skip_duplicates(es, index, prefix):
    s = suggest(es, index, {"s": {"prefix": prefix, "completion": {
        "field": "suggest", "size": 10, "skip_duplicates": True}}})
    assert options(s["s"][0]) == expect(prefix, 10, skip_duplicates=True)


def test_text_is_a_prefix_and_source_and_typed_keys(es, index):
    r = es.search(index=index, size=0, typed_keys=True, source_includes=["n"],
                  suggest={"s": {"text": "app", "completion": {"field": "suggest"}}})
    [entry] = r["suggest"]["completion#s"]
    assert options(entry) == expect("app")
    docs = dict(_docs())
    for o in entry["options"]:
        assert o["_index"] == index
        assert o["_source"] == {"n": docs[o["_id"]]["n"]}


@pytest.mark.parametrize("prefix,edits", [("nriv", 1), ("nirvna", 1), ("aple", 1),
                                          ("stra", 2), ("knigth", 1), ("ni", 1)])
def test_fuzzy(es, index, prefix, edits):
    s = suggest(es, index, {"s": {"prefix": prefix, "completion": {
        "field": "suggest", "size": 100, "fuzzy": {"fuzziness": edits}}}})
    q = key(prefix)
    exp = expect(prefix, 100, match=lambda k: fuzzy_match(k, q, edits))
    assert sorted(o[2] for o in options(s["s"][0])) == sorted(o[2] for o in exp)


def test_regex(es, index):
    s = suggest(es, index, {"s": {"regex": "n[io].*t", "completion": {"field": "suggest",
                                                                      "size": 50}}})
    rx = re.compile(r"n[io].*t", re.S)
    assert options(s["s"][0]) == expect("", 50, match=lambda k: rx.match(k) is not None)


def test_deleted_documents_are_not_suggested(es):
    make_index(es, "suggest_completion_del", {"mappings": MAPPINGS}, _docs())
    exp = expect("n", 100)
    gone = exp[0][2]
    es.delete(index="suggest_completion_del", id=gone, refresh=True)
    s = suggest(es, "suggest_completion_del", {"s": {"prefix": "n", "completion": {
        "field": "suggest", "size": 100}}})
    assert options(s["s"][0]) == [o for o in exp if o[2] != gone]


def test_max_input_length_and_weights_in_strings(es):
    make_index(es, "suggest_completion_len", {"mappings": {"properties": {
        "s": {"type": "completion", "max_input_length": 5}}}},
        [("1", {"s": {"input": "abcdefgh", "weight": "7"}})])
    s = suggest(es, "suggest_completion_len", {"x": {"prefix": "abcde", "completion": {
        "field": "s"}}})
    assert options(s["x"][0]) == [("abcde", 7.0, "1")]
    s = suggest(es, "suggest_completion_len", {"x": {"prefix": "abcdef", "completion": {
        "field": "s"}}})
    assert options(s["x"][0]) == []


@pytest.mark.parametrize("value,reason", [
    ({"input": "a", "weight": -1}, "weight must be in the interval [0..2147483647], but was [-1]"),
    ({"input": "a", "weight": 1.5}, "weight must be an integer, but was [1.5]"),
    ({"input": "a", "weight": "x"}, "weight must be an integer, but was [x]"),
    ({"input": 5}, "input must be a string or array, but was [VALUE_NUMBER]"),
    ({"input": "a", "other": 1}, "unknown field name [other], must be one of [input, weight, contexts]"),
    ({"input": "a", "contexts": {"c": "x"}}, "contexts field is not supported for field: [suggest]"),
])
def test_bad_values_are_refused(es, index, value, reason):
    with pytest.raises(ApiError) as ei:
        es.index(index=index, id="bad", document={"suggest": value})
    e = ei.value
    assert e.meta.status == 400
    assert e.body["error"]["type"] == "document_parsing_exception"
    assert e.body["error"]["caused_by"]["reason"] == reason


def _err(es, index, body):
    with pytest.raises(ApiError) as ei:
        es.search(index=index, suggest=body, size=0)
    return ei.value


def test_refusals(es, index):
    e = _err(es, index, {"s": {"prefix": "a", "completion": {"field": "n"}}})
    assert e.meta.status == 400
    assert e.body["error"]["caused_by"]["reason"] == "Field [n] is not a completion suggest field"
    e = _err(es, index, {"s": {"prefix": "a", "completion": {"field": "suggest",
                                                              "contexts": {"c": ["x"]}}}})
    assert e.meta.status == 400
    assert e.body["error"]["type"] == "parsing_exception"
    assert "not supported by Lode" in e.body["error"]["reason"]
    e = _err(es, index, {"s": {"prefix": "a", "completion": {"size": 2}}})
    assert e.meta.status == 400
    assert e.body["error"]["type"] == "parse_exception"
    e = _err(es, index, {"s": {"prefix": "a", "completion": {"field": "suggest",
                                                              "fuzzy": {"fuzziness": 3}}}})
    assert e.meta.status == 400
    assert e.body["error"]["type"] == "illegal_argument_exception"
    e = _err(es, index, {"s": {"regex": "a@", "completion": {"field": "suggest"}}})
    assert e.meta.status == 400
    # unknown keys: ES's ObjectParsers (completion, fuzzy and regex options) with their
    # "did you mean" (one edit from a declared key: similarity above 0.5)
    e = _err(es, index, {"s": {"prefix": "a", "completion": {"field": "suggest", "sizes": 2}}})
    assert e.meta.status == 400
    assert e.body["error"]["type"] == "x_content_parse_exception"
    assert e.body["error"]["reason"].endswith("[completion] unknown field [sizes] did you mean [size]?")
    for opt, key, meant in [("fuzzy", "fuzzines", "fuzziness"), ("regex", "flag", "flags")]:
        e = _err(es, index, {"s": {"prefix": "a", "completion": {"field": "suggest",
                                                                  opt: {key: 1}}}})
        assert e.meta.status == 400
        assert e.body["error"]["type"] == "x_content_parse_exception"
        assert e.body["error"]["reason"].endswith("[completion] failed to parse field [%s]" % opt)
        cause = e.body["error"]["caused_by"]
        assert cause["type"] == "x_content_parse_exception"
        assert cause["reason"].endswith("[%s] unknown field [%s] did you mean [%s]?" % (opt, key, meant))
    with pytest.raises(ApiError) as ei:
        es.indices.create(index="suggest_completion_ctx", mappings={"properties": {
            "s": {"type": "completion", "contexts": [{"name": "c", "type": "category"}]}}})
    assert ei.value.meta.status == 400
    assert ei.value.body["error"]["type"] == "mapper_parsing_exception"
