"""The term suggester against an oracle written from Elasticsearch's documented algorithm
(Lucene's DirectSpellChecker): for each analyzed token of the text, the terms of the field
within `max_edits` (optimal-string-alignment distance, a transposition is one edit) that share
the first `prefix_length` characters (one edit: `prefix_length`; more: at least `max_edits - 1`),
filtered by `suggest_mode`, `min_word_length`, `min_doc_freq`, `max_term_freq` and `accuracy`,
scored by the string distance and sorted by score, frequency, then text.

The documents are generated from a vocabulary with known document frequencies, so every
expected answer is computed here from the words, never read from Lode.
"""

import re

import pytest

import oracle
from elasticsearch import ApiError

from conftest import make_index

INDEX = "suggest_terms"
SHARDED = "suggest_terms_sharded"
N = 40
# word -> number of documents it appears in
BODY_FREQ = {
    "apple": 10, "apply": 4, "ample": 3, "maple": 2, "appel": 1, "applet": 2, "apples": 5,
    "search": 8, "serach": 1, "searches": 3, "starch": 2, "seared": 1,
    "quick": 6, "quack": 2, "quirk": 1, "quicker": 2,
    "brown": 5, "brawn": 2, "crown": 3, "grown": 1, "browns": 1,
    "house": 6, "mouse": 3, "horse": 4, "hose": 2, "houses": 2, "hoser": 1,
}
TAG_FREQ = {"kibana": 7, "kibanna": 1, "kibble": 2, "logstash": 5, "logstesh": 1}
FILLER = "lorem"


def _members(word, freq, salt):
    start = (sum(map(ord, word)) * 3 + salt) % N
    return {(start + k * 7) % N for k in range(freq)}


def _docs():
    words = {i: [FILLER] for i in range(N)}
    for w, f in BODY_FREQ.items():
        for i in _members(w, f, 0):
            words[i].append(w)
    tags = {i: [] for i in range(N)}
    for w, f in TAG_FREQ.items():
        for i in _members(w, f, 5):
            tags[i].append(w)
    return [(str(i), {"body": " ".join(words[i]), "tag": tags[i]}) for i in range(N)]


def _freqs():
    body, tag = {}, {}
    for _, d in _docs():
        for w in set(d["body"].split()):
            body[w] = body.get(w, 0) + 1
        for w in set(d["tag"]):
            tag[w] = tag.get(w, 0) + 1
    return {"body": body, "tag": tag}


MAPPINGS = {"properties": {"body": {"type": "text"}, "tag": {"type": "keyword"}}}


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


def lev(a, b):
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]))
        prev = cur
    return prev[len(b)]


def f32(x):
    import struct
    return struct.unpack("f", struct.pack("f", x))[0]


def score(distance, term, cand):
    if distance in ("internal", "damerau_levenshtein"):
        return f32(1 - oracle.osa_distance(term, cand) / min(len(term), len(cand)))
    if distance == "levenshtein":
        return f32(1 - lev(term, cand) / max(len(term), len(cand)))
    if distance == "jaro_winkler":
        return jaro_winkler(term, cand)
    if distance == "ngram":
        return ngram(term, cand)
    raise AssertionError(distance)


def jaro_winkler(s1, s2):
    """Jaro-Winkler as Lucene's JaroWinklerDistance: matches within half the longer length
    minus one, half the out-of-order matches as transpositions, and the common prefix (not
    capped) weighted by min(0.1, 1 / longer length) above a Jaro of 0.7."""
    longer, shorter = (s1, s2) if len(s1) > len(s2) else (s2, s1)
    window = max(len(longer) // 2 - 1, 0)
    taken = [False] * len(longer)
    matched_short = []
    for i, c in enumerate(shorter):
        for k in range(max(i - window, 0), min(i + window + 1, len(longer))):
            if not taken[k] and longer[k] == c:
                taken[k] = True
                matched_short.append(c)
                break
    m = len(matched_short)
    if m == 0:
        return 0.0
    matched_long = [c for c, t in zip(longer, taken) if t]
    half_transpositions = sum(a != b for a, b in zip(matched_short, matched_long)) // 2
    prefix = 0
    for a, b in zip(s1, s2):
        if a != b:
            break
        prefix += 1
    j = f32((f32(m / len(s1)) + f32(m / len(s2)) + f32((m - half_transpositions) / m)) / 3)
    if j < 0.7:
        return j
    return f32(j + min(0.1, f32(1 / len(longer))) * prefix * (1 - j))


def ngram(source, target, n=2):
    """Kondrak's n-gram edit similarity (Lucene's NGramDistance, n = 2): an edit distance
    whose substitution cost is the fraction of differing characters of the two n-grams ending
    at the positions (padded at the start; matches on padding not counted), normalized by the
    longer length."""
    sl, tl = len(source), len(target)
    if sl == 0 or tl == 0:
        return 1.0 if sl == tl else 0.0
    if sl < n or tl < n:
        return sum(a == b for a, b in zip(source, target)) / max(sl, tl)
    pad = "\0" * (n - 1)
    sp, tp = pad + source, pad + target
    prev = [float(i) for i in range(sl + 1)]
    for j in range(1, tl + 1):
        gram_t = tp[j - 1:j - 1 + n]
        cur = [float(j)] + [0.0] * sl
        for i in range(1, sl + 1):
            gram_s = sp[i - 1:i - 1 + n]
            cost = sum(a != b for a, b in zip(gram_s, gram_t))
            counted = n - sum(a == b == "\0" for a, b in zip(gram_s, gram_t))
            cur[i] = min(cur[i - 1] + 1, prev[i] + 1, prev[i - 1] + f32(cost / counted))
        prev = cur
    return f32(1 - prev[sl] / max(sl, tl))


def tokens(text, lowercase=True):
    """The standard analyzer on ASCII words: (token, offset, length)."""
    out = []
    for m in re.finditer(r"[A-Za-z0-9]+", text):
        t = m.group(0)
        out.append((t.lower() if lowercase else t, m.start(), len(t)))
    return out


def expect(text, field="body", size=5, mode="missing", max_edits=2, prefix_length=1,
           min_word_length=4, min_doc_freq=0.0, max_term_freq=0.01, sort="score",
           distance="internal", accuracy=0.5, lowercase_terms=False, analyze=True):
    freq = _freqs()[field]
    toks = tokens(text) if analyze else [(text, 0, len(text))]
    out = []
    for tok, off, length in toks:
        entry = {"text": tok, "offset": off, "length": length, "options": []}
        out.append(entry)
        if len(tok) < min_word_length:
            continue
        term = tok.lower() if lowercase_terms else tok
        df = freq.get(term, 0)
        if mode == "missing" and df > 0:
            continue
        if max_term_freq >= 1 and df > max_term_freq:
            continue
        if df > -(-f32(max_term_freq * N) // 1):
            continue
        threshold = df if mode == "popular" else 0
        if min_doc_freq >= 1:
            threshold = max(threshold, int(min_doc_freq))
        elif min_doc_freq > 0:
            threshold = max(threshold, int(f32(min_doc_freq * N)) - 1)
        opts = []
        for cand, cf in freq.items():
            if cand == term or cf <= threshold:
                continue
            ed = oracle.osa_distance(term, cand)
            ok = False
            for edits in ([1, max_edits] if max_edits > 1 else [1]):
                p = min(max(prefix_length, edits - 1), len(term))
                if cand[:p] == term[:p] and ed <= edits:
                    ok = True
            if not ok:
                continue
            s = score(distance, term, cand)
            if s < accuracy:
                continue
            opts.append({"text": cand, "score": s, "freq": cf})
        if sort == "score":
            opts.sort(key=lambda o: (-o["score"], -o["freq"], o["text"]))
        else:
            opts.sort(key=lambda o: (-o["freq"], -o["score"], o["text"]))
        entry["options"] = opts[:size]
    return out


def check(got, want):
    assert [(e["text"], e["offset"], e["length"]) for e in got] == \
        [(e["text"], e["offset"], e["length"]) for e in want]
    for g, w in zip(got, want):
        assert [(o["text"], o["freq"]) for o in g["options"]] == \
            [(o["text"], o["freq"]) for o in w["options"]], (g, w)
        for go, wo in zip(g["options"], w["options"]):
            assert go["score"] == pytest.approx(wo["score"], rel=1e-6)


def run(es, index, term, text="appel serach quikc hous browm", **kw):
    r = es.search(index=index, size=0, suggest={"s": {"text": text, "term": term}}, **kw)
    return r["suggest"]["s"]


# ---- the tests ------------------------------------------------------------------------------

TEXTS = [
    "appel serach quikc hous browm",
    "Aple sarch quick horsse",
    "mapel crwn hoser searchs applle",
    "xyzzy hos brwn",
]


@pytest.mark.parametrize("text", TEXTS)
def test_defaults(es, index, text):
    check(run(es, index, {"field": "body"}, text), expect(text))


@pytest.mark.parametrize("opts", [
    {"max_edits": 1},
    {"prefix_length": 0},
    {"prefix_length": 2, "max_edits": 1},
    {"prefix_length": 3},
    {"min_word_length": 6},
    {"size": 2},
    {"size": 1, "sort": "frequency"},
    {"sort": "frequency"},
    {"min_doc_freq": 3},
    {"min_doc_freq": 0.1},
    {"accuracy": 0.7},
    {"accuracy": 0.0, "prefix_length": 0},
])
@pytest.mark.parametrize("text", TEXTS[:3])
def test_options(es, index, text, opts):
    check(run(es, index, {"field": "body", **opts}, text), expect(text, **opts))


@pytest.mark.parametrize("distance", ["internal", "damerau_levenshtein", "levenshtein",
                                      "jaro_winkler", "ngram"])
@pytest.mark.parametrize("text", TEXTS)
def test_string_distances(es, index, text, distance):
    got = run(es, index, {"field": "body", "string_distance": distance}, text)
    check(got, expect(text, distance=distance))


def test_suggest_modes(es, index):
    text = "apply apple hose"
    # popular: only terms more frequent than the token (allowed by max_term_freq as a count)
    check(run(es, index, {"field": "body", "suggest_mode": "popular", "max_term_freq": 10},
              text),
          expect(text, mode="popular", max_term_freq=10))
    check(run(es, index, {"field": "body", "suggest_mode": "always", "max_term_freq": 0.5},
              text),
          expect(text, mode="always", max_term_freq=0.5))
    # the default max_term_freq (1% of the documents) silences frequent tokens
    got = run(es, index, {"field": "body", "suggest_mode": "always"}, text)
    check(got, expect(text, mode="always"))
    assert all(e["options"] == [] for e in got)
    # missing: tokens in the index get no suggestions
    assert all(e["options"] == [] for e in run(es, index, {"field": "body"}, text))


def test_lowercase_terms_and_analyzer(es, index):
    text = "Appel Serach"
    got = run(es, index, {"field": "body", "analyzer": "whitespace"}, text)
    assert [e["text"] for e in got] == ["Appel", "Serach"]
    assert all(e["options"] == [] for e in got)
    got = run(es, index, {"field": "body", "analyzer": "whitespace", "lowercase_terms": True},
              text)
    want = expect(text, lowercase_terms=True)
    for w, t in zip(want, ["Appel", "Serach"]):
        w["text"] = t
    check(got, want)


def test_keyword_field_takes_the_whole_text(es, index):
    for text in ["kibanu", "logstach", "kibana"]:
        got = run(es, index, {"field": "tag"}, text)
        check(got, expect(text, field="tag", analyze=False))


def test_global_text_several_suggestions_and_typed_keys(es, index):
    r = es.search(index=index, query={"match": {"body": "apple"}}, size=1, typed_keys=True,
                  suggest={"text": "serach quikc",
                           "one": {"term": {"field": "body"}},
                           "two": {"text": "hoser", "term": {"field": "body", "size": 1}}})
    assert r["hits"]["total"]["value"] == _freqs()["body"]["apple"]
    assert set(r["suggest"]) == {"term#one", "term#two"}
    check(r["suggest"]["term#one"], expect("serach quikc"))
    check(r["suggest"]["term#two"], expect("hoser", size=1))
    # without typed_keys the names are bare; a suggest-only request (no query) works too
    r = es.search(index=index, suggest={"text": "quikc", "one": {"term": {"field": "body"}}})
    check(r["suggest"]["one"], expect("quikc"))


def test_shards_merge_frequencies(es, sharded):
    # Tokens absent from every shard: each shard proposes its own candidates, the reduce sums
    # their frequencies, so the answer is the single-index one.
    for text in ["quikc hous browm aple", "sarch horsse crwn mapel applle"]:
        got = run(es, sharded, {"field": "body", "size": 10, "shard_size": 50}, text)
        check(got, expect(text, size=10))


def test_offsets_and_empty_text(es, index):
    got = run(es, index, {"field": "body"}, "  x  appel!")
    assert [(e["text"], e["offset"], e["length"]) for e in got] == [("x", 2, 1), ("appel", 5, 5)]
    assert run(es, index, {"field": "body"}, "") == []


def _err(es, index, suggest, **kw):
    with pytest.raises(ApiError) as ei:
        es.search(index=index, size=0, suggest=suggest, **kw)
    return ei.value


@pytest.mark.parametrize("opts,reason", [
    ({"max_edits": 3}, "Illegal max_edits value 3"),
    ({"max_edits": 0}, "Illegal max_edits value 0"),
    ({"suggest_mode": "sometimes"}, "Illegal suggest mode sometimes"),
    ({"sort": "random"}, "Illegal suggest sort random"),
    ({"string_distance": "hamming"}, "Illegal distance option hamming"),
    ({"size": 0}, "size must be positive"),
    ({"min_word_length": 0}, "minWordLength must be greater or equal to 1"),
    ({"prefix_length": -1}, "prefixLength must be positive"),
    ({"min_doc_freq": 1.5}, "if minDocFreq is greater than 1, it must not be a fraction"),
    ({"max_term_freq": -1}, "maxTermFreq must be positive"),
])
def test_bad_options(es, index, opts, reason):
    e = _err(es, index, {"s": {"text": "appel", "term": {"field": "body", **opts}}})
    assert e.meta.status == 400
    assert e.body["error"]["type"] == "illegal_argument_exception"
    assert e.body["error"]["reason"] == reason


def test_parse_errors(es, index):
    e = _err(es, index, {"s": {"text": "appel", "term": {"size": 1}}})
    assert e.meta.status == 400
    assert e.body["error"]["reason"] == "the required field option [field] is missing"
    e = _err(es, index, {"s": {"text": "appel", "term": {"field": "body", "bogus": 1}}})
    assert e.body["error"]["type"] == "parsing_exception"
    assert e.body["error"]["reason"] == "suggester[term] doesn't support field [bogus]"
    e = _err(es, index, {"s": {"text": "appel"}})
    assert e.body["error"]["reason"] == "missing suggestion object"
    e = _err(es, index, {"size": 2, "s": {"term": {"field": "body"}}})
    assert e.body["error"]["reason"] == "[suggest] does not support [size]"


def test_shard_level_errors(es, index):
    e = _err(es, index, {"s": {"term": {"field": "body"}}})
    assert e.meta.status == 400
    assert e.body["error"]["type"] == "search_phase_execution_exception"
    assert e.body["error"]["caused_by"]["reason"] == "The required text option is missing"
    e = _err(es, index, {"s": {"text": "x", "term": {"field": "nope"}}})
    assert e.meta.status == 400
    assert e.body["error"]["caused_by"]["reason"] == "no mapping found for field [nope]"
    e = _err(es, index, {"s": {"text": "x", "term": {"field": "body", "analyzer": "nope"}}})
    assert e.body["error"]["caused_by"]["reason"] == "analyzer [nope] doesn't exists"


def lucene_queue(term, freq, num, edits, prefix):
    """One pass of DirectSpellChecker over the terms in order, keeping the best `num` in a
    queue: a candidate that does not beat the queue's weakest (lowest score, then greatest
    term) once it is full is skipped, so among equal scores the first terms found stay."""
    p = min(max(prefix, edits - 1), len(term))
    queue = []
    for cand in sorted(freq):
        if cand[:p] != term[:p] or oracle.osa_distance(term, cand) > edits:
            continue
        s = f32(1 - oracle.osa_distance(term, cand) / min(len(term), len(cand)))
        weakest = min(queue, key=lambda q: (q[1], [-ord(c) for c in q[0]]), default=None)
        if len(queue) >= num and s <= weakest[1]:
            continue
        if cand == term or s < 0.5:
            continue
        queue.append((cand, s))
        if len(queue) > num:
            queue.remove(min(queue, key=lambda q: (q[1], [-ord(c) for c in q[0]])))
    return queue


@pytest.mark.parametrize("text", ["aple", "sarch", "horsse", "mapel"])
def test_max_inspections_bounds_each_pass(es, index, text):
    freq = _freqs()["body"]
    inspections = 1  # shard_size 1 x max_inspections 1
    found = lucene_queue(text, freq, inspections, 1, 1)
    if len(found) < inspections:
        names = {c for c, _ in found}
        found += [q for q in lucene_queue(text, freq, inspections, 2, 1) if q[0] not in names]
    found.sort(key=lambda q: (-q[1], -freq[q[0]], q[0]))
    want = [(c, freq[c]) for c, _ in found[:1]]
    got = run(es, index, {"field": "body", "size": 1, "shard_size": 1, "max_inspections": 1},
              text)
    assert [(o["text"], o["freq"]) for o in got[0]["options"]] == want


def test_msearch_and_several_indices(es, index, sharded):
    text = "quikc aple"
    r = es.msearch(searches=[
        {"index": index}, {"size": 0, "suggest": {"s": {"text": text, "term": {"field": "body"}}}},
        {"index": sharded}, {"size": 0, "suggest": {"s": {"text": text, "term": {
            "field": "body", "shard_size": 50}}}},
    ])
    for resp in r["responses"]:
        check(resp["suggest"]["s"], expect(text))
    # Two indices with the same documents: every option's frequency counts both (each
    # shard's candidates fit in its shard_size, so no shard truncates).
    r = es.search(index=[index, sharded], size=0,
                  suggest={"s": {"text": text, "term": {"field": "body", "size": 10}}})
    want = expect(text, size=10)
    for e in want:
        for o in e["options"]:
            o["freq"] *= 2
    check(r["suggest"]["s"], want)


def test_null_text_falls_back_to_the_global_text(es, index):
    r = es.search(index=index, size=0,
                  suggest={"text": "serach", "s": {"text": None, "term": {"field": "body"}}})
    check(r["suggest"]["s"], expect("serach"))


def test_an_index_without_live_documents_gives_entries_without_options(es):
    name = make_index(es, "suggest_emptied", {"settings": {"number_of_shards": 1},
                                              "mappings": MAPPINGS},
                      [("1", {"body": "apple apples"}), ("2", {"body": "apple"})])
    es.delete(index=name, id="1", refresh=True)
    es.delete(index=name, id="2", refresh=True)
    got = run(es, name, {"field": "body"}, "appel sth")
    assert got == [{"text": "appel", "offset": 0, "length": 5, "options": []},
                   {"text": "sth", "offset": 6, "length": 3, "options": []}]
    r = es.search(index="suggest_missing_*", size=0,
                  suggest={"s": {"text": "appel", "term": {"field": "body"}}})
    # no index at all: no shard answers, and ES's empty response has no suggest section
    assert "suggest" not in r
