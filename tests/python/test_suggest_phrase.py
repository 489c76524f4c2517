"""The phrase suggester against an oracle written from Elasticsearch's algorithm
(`NoisyChannelSpellChecker`, `CandidateScorer`, `WordScorer`), computed here from the indexed
documents: per token of the text, the original term and the direct generator's candidates
(terms of the field missing from the index get the terms within two edits that share the
first letter, scored by the internal distance 1 - edits / min(len)), each candidate ranked by
distance * (ttf + 1) / (sumTtf + 1); a phrase scores exp(sum log10(channel * P(word))) with
channel 0.95 for an original term and the distance for a correction, P from the smoothing
model over unigram total term frequencies (the vocabulary is the field's sumTtf, the number
of terms is the segment's); options are the phrases with at most `max_errors` corrections
scoring above `confidence` times the input's score, best first.
"""

import math
import re
import struct

import pytest

import oracle
from elasticsearch import ApiError

from conftest import make_index

INDEX = "suggest_phrase"
SENTENCES = [
    "noble warriors fight for the kingdom",
    "nobel prize winners gather",
    "the noble prize of the kingdom",
    "the noble warriors of the world",
    "quick brown foxes jump",
    "the quick brown dog sleeps",
    "a quick brown fox jumps over the lazy dog",
    "brown bears fight salmon",
    "world peace prize",
    "the kingdom of the world",
]
MAPPINGS = {"properties": {"body": {"type": "text"}}}


@pytest.fixture(scope="module")
def index(es):
    docs = [(str(i), {"body": s}) for i, s in enumerate(SENTENCES)]
    make_index(es, INDEX, {"settings": {"number_of_shards": 1}, "mappings": MAPPINGS}, docs)
    return INDEX


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def tokens(text):
    return re.findall(r"[a-z0-9]+", text.lower())


def stats():
    ttf = {}
    for s in SENTENCES:
        for t in tokens(s):
            ttf[t] = ttf.get(t, 0) + 1
    return ttf


def candidates(tok, ttf, df):
    """The direct generator's candidates (suggest_mode missing, defaults)."""
    if tok in ttf or len(tok) < 4:
        return []
    out = []
    for t in ttf:
        if t[0] != tok[0]:
            continue
        ed = oracle.osa_distance(tok, t)
        if ed > 2:
            continue
        sc = f32(1 - ed / min(len(tok), len(t)))
        if sc < 0.5:
            continue
        out.append((-sc, -df[t], t, sc))
    out.sort()
    sum_ttf = sum(ttf.values())
    cands = [(t, sc, sc * (ttf[t] + 1) / (sum_ttf + 1)) for _, _, t, sc in out[:5]]
    cands.sort(key=lambda c: (-c[2], c[0]))
    return cands


def expect(text, size=5, confidence=1.0, max_errors=1.0, smoothing=("stupid_backoff", 0.4),
           rwel=0.95):
    ttf = stats()
    df = {}
    for s in SENTENCES:
        for t in set(tokens(s)):
            df[t] = df.get(t, 0) + 1
    voc = sum(ttf.values())
    nterms = len(ttf)

    def p(term):
        f = ttf.get(term, 0)
        if smoothing[0] == "laplace":
            a = smoothing[1]
            return (a + f) / (voc + a * nterms)
        return (1 + f) / (voc + nterms)

    toks = tokens(text)
    sets = [[(t, 1.0, True)] + [(c, sc, False) for c, sc, _ in candidates(t, ttf, df)]
            for t in toks]

    def score(path):
        s = 0.0
        for term, dist, _ in path:
            ch = rwel if dist == 1.0 else dist
            s += math.log10(ch * p(term))
        return math.exp(s)

    cutoff = score([s[0] for s in sets]) * confidence if confidence > 0 else 5e-324
    n = int(max_errors) if max_errors >= 1 else round(max_errors * len(sets))
    n = max(1, n)
    paths = [[]]
    for st in sets:
        paths = [pa + [c] for pa in paths for c in st]
    paths = [pa for pa in paths if sum(not c[2] for c in pa) <= n]
    out = []
    for pa in paths:
        sc = score(pa)
        if sc > cutoff and f32(sc) > cutoff:
            out.append((f32(sc), " ".join(c[0] for c in pa)))
    out.sort(key=lambda o: (-o[0], o[1]))
    return [(t, s) for s, t in out[:size]]


def phrase(es, index, text, **opts):
    body = {"field": "body"}
    body.update(opts)
    r = es.search(index=index, size=0, suggest={"s": {"text": text, "phrase": body}})
    [entry] = r["suggest"]["s"]
    assert entry["text"] == text and entry["offset"] == 0 and entry["length"] == len(text)
    return entry["options"]


def close(got, exp):
    assert [o["text"] for o in got] == [t for t, _ in exp]
    for o, (_, s) in zip(got, exp):
        assert o["score"] == pytest.approx(s, rel=1e-5)


TEXTS = ["noble warrors", "nobel prize", "quikc brwn fox", "the kingdon of the wrld",
         "brown bears fihgt", "noble warriors", "zzzz"]


@pytest.mark.parametrize("text", TEXTS)
def test_defaults(es, index, text):
    close(phrase(es, index, text), expect(text))


@pytest.mark.parametrize("text", ["quikc brwn fox", "the kingdon of the wrld"])
@pytest.mark.parametrize("max_errors,confidence", [(2, 1.0), (0.5, 0.0), (3, 0.5)])
def test_max_errors_and_confidence(es, index, text, max_errors, confidence):
    got = phrase(es, index, text, max_errors=max_errors, confidence=confidence, size=10)
    close(got, expect(text, size=10, max_errors=max_errors, confidence=confidence))


def test_laplace(es, index):
    text = "quikc brwn fox"
    got = phrase(es, index, text, max_errors=2, smoothing={"laplace": {"alpha": 0.7}})
    close(got, expect(text, max_errors=2, smoothing=("laplace", 0.7)))


def test_highlight(es, index):
    got = phrase(es, index, "quikc brwn fox jumps", max_errors=2,
                 highlight={"pre_tag": "<b>", "post_tag": "</b>"})
    assert got
    for o in got:
        words = o["text"].split()
        orig = "quikc brwn fox jumps".split()
        parts, i = [], 0
        while i < len(words):
            if words[i] == orig[i]:
                parts.append(words[i])
                i += 1
            else:
                j = i
                while j < len(words) and words[j] != orig[j]:
                    j += 1
                parts.append("<b>" + " ".join(words[i:j]) + "</b>")
                i = j
        assert o["highlighted"] == " ".join(parts)


def test_typed_keys(es, index):
    r = es.search(index=index, size=0, typed_keys=True,
                  suggest={"s": {"text": "noble warrors", "phrase": {"field": "body"}}})
    assert "phrase#s" in r["suggest"]


def _err(es, index, body):
    with pytest.raises(ApiError) as ei:
        es.search(index=index, suggest={"s": {"text": "noble warrors", "phrase": body}}, size=0)
    return ei.value


@pytest.mark.parametrize("body,etype", [
    ({"field": "body", "collate": {"query": {"source": {"match_all": {}}}}}, "parsing_exception"),
    ({"field": "body", "direct_generator": [{"field": "body", "pre_filter": "x"}]},
     "parsing_exception"),
    ({"field": "body", "smoothing": {"linear_interpolation": {"unigram_lambda": 0.2}}},
     "illegal_argument_exception"),
    ({"field": "body", "real_word_error_likelihood": 0}, "illegal_argument_exception"),
    ({"field": "body", "max_errors": 0}, "illegal_argument_exception"),
    ({"field": "body", "gram_size": 0}, "illegal_argument_exception"),
    ({"field": "body", "highlight": {"pre_tag": "<b>"}}, "illegal_argument_exception"),
    ({"field": "body", "nope": 1}, "parsing_exception"),
    # ES's ConstructingObjectParser for a generator
    ({"field": "body", "direct_generator": [{"field": "body", "sise": 1}]},
     "x_content_parse_exception"),
    ({"size": 1}, "parse_exception"),
])
def test_refusals(es, index, body, etype):
    e = _err(es, index, body)
    assert e.meta.status == 400
    assert e.body["error"]["type"] == etype
