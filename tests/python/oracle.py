"""Independent oracle for the Lode Python suite.

Everything here is computed in Python from the generated documents, never
from a server's answer: filters, counts, float statistics, a tokenizer that
mimics Elasticsearch's `standard` analyzer for our vocabulary, date helpers
and the tolerance checks for approximate aggregations.
"""

import bisect
import datetime as _dt
import math
import pathlib
import re
from zoneinfo import ZoneInfo

REPO = pathlib.Path(__file__).resolve().parent.parent.parent
BENCH = REPO / "crates" / "bench" / "workload"   # the project's copy of ../shared/bench
GEN = BENCH / "gen_accounts.py"
MAPPING = BENCH / "mapping-accounts.json"
QUERIES = BENCH / "queries"

UTC = _dt.timezone.utc
CST = _dt.timezone(_dt.timedelta(hours=8))  # "+08:00"

DAY_MS = 86_400_000
HOUR_MS = 3_600_000


# ---------------------------------------------------------------------------
# Corpus
# ---------------------------------------------------------------------------


def osa_distance(a, b):
    """Optimal string alignment distance: Lucene's fuzzy automata with transpositions (an
    adjacent swap is one edit)."""
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def values(doc, field):
    """A source field's values as a list (absent: empty)."""
    v = doc.get(field)
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


def delete_and_update(es, index, docs, rng, deletes, updates, new_doc):
    """Deletes `deletes` random documents of `docs` ({id: source}), then replaces `updates`
    others with `new_doc(id)`, in one bulk, and refreshes: the segments keep deleted
    documents. Keeps `docs` equal to the live documents."""
    ops = []
    for i in rng.sample(sorted(docs), deletes):
        ops.append({"delete": {"_index": index, "_id": i}})
        del docs[i]
    for i in rng.sample(sorted(docs), updates):
        doc = new_doc(i)
        docs[i] = doc
        ops.append({"index": {"_index": index, "_id": i}})
        ops.append(doc)
    assert not es.bulk(operations=ops)["errors"]
    es.indices.refresh(index=index)

class Corpus:
    """The generated accounts documents: `docs` is a list of (id, source)."""

    def __init__(self, docs):
        self.docs = docs                       # [(id:str, source:dict)] in _id order
        self.by_id = dict(docs)
        self.n = len(docs)

    def ids(self, pred=None):
        return [i for i, d in self.docs if pred is None or pred(d)]

    def count(self, pred=None):
        if pred is None:
            return self.n
        return sum(1 for _, d in self.docs if pred(d))

    def values(self, field, pred=None):
        return [d[field] for _, d in self.docs if (pred is None or pred(d)) and field in d]


def parse_ndjson(text):
    """Bulk NDJSON (action line + source line) -> [(id, source)]."""
    import json
    lines = text.splitlines()
    out = []
    for k in range(0, len(lines) - 1, 2):
        action = json.loads(lines[k])
        src = json.loads(lines[k + 1])
        out.append((action["index"]["_id"], src))
    return out


# ---------------------------------------------------------------------------
# Analysis: the `standard` analyzer for our vocabulary
# ---------------------------------------------------------------------------

def _is_han(ch):
    o = ord(ch)
    return (0x4E00 <= o <= 0x9FFF or 0x3400 <= o <= 0x4DBF or 0x20000 <= o <= 0x2A6DF
            or 0xF900 <= o <= 0xFAFF)


def standard_tokens(text):
    """Tokens as ES's `standard` analyzer emits them for our texts.

    UAX#29 word breaking: every Han character is its own token (type
    <IDEOGRAPHIC>); runs of ASCII letters/digits are one token, lowercased.
    Returns [(token, start_offset, end_offset, type)].
    """
    out = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if _is_han(ch):
            out.append((ch, i, i + 1, "<IDEOGRAPHIC>"))
            i += 1
        elif ch.isascii() and ch.isalnum():
            j = i
            while j < n and text[j].isascii() and text[j].isalnum():
                j += 1
            word = text[i:j]
            typ = "<NUM>" if word.isdigit() else "<ALPHANUM>"
            out.append((word.lower(), i, j, typ))
            i = j
        else:
            i += 1
    return out


def analyze(text):
    return [t for t, _, _, _ in standard_tokens(text)]


def contains_phrase(tokens, phrase_tokens):
    k = len(phrase_tokens)
    return any(tokens[i:i + k] == phrase_tokens for i in range(len(tokens) - k + 1))


# ---------------------------------------------------------------------------
# Floats and approximate aggregations
# ---------------------------------------------------------------------------

REL = 1e-9


def fsum(values):
    return math.fsum(values)


def approx_eq(actual, expected, rel=REL, scale=None):
    """True when |actual-expected| <= rel * max(|expected|, scale).

    `scale` is the sum of magnitudes that went into a sum (a float sum's
    rounding error is relative to it, not to a result that may cancel out).
    """
    if actual is None or expected is None:
        return actual is expected
    tol = rel * max(abs(expected), abs(scale) if scale else 0.0, 1e-300)
    return abs(actual - expected) <= tol


def assert_float(actual, expected, what="", rel=REL, scale=None):
    assert actual is not None, "%s: got null, expected %r" % (what, expected)
    assert approx_eq(actual, expected, rel, scale), \
        "%s: got %r, expected %r (rel %g)" % (what, actual, expected, rel)


def stats(values):
    """ES `stats`: count, min, max, avg, sum (None where ES gives null)."""
    n = len(values)
    s = fsum(values)
    return {
        "count": n,
        "min": min(values) if n else None,
        "max": max(values) if n else None,
        "avg": s / n if n else None,
        "sum": s,
        "scale": fsum(abs(v) for v in values),
    }


def extended_stats(values, sigma=2.0):
    st = stats(values)
    n = st["count"]
    sq = fsum(v * v for v in values)
    st["sum_of_squares"] = sq
    if n:
        mean = st["avg"]
        var_pop = fsum((v - mean) ** 2 for v in values) / n
        var_samp = var_pop * n / (n - 1) if n > 1 else None
        sd_pop = math.sqrt(var_pop)
        sd_samp = math.sqrt(var_samp) if var_samp is not None else None
        st.update({
            "variance": var_pop, "variance_population": var_pop, "variance_sampling": var_samp,
            "std_deviation": sd_pop, "std_deviation_population": sd_pop,
            "std_deviation_sampling": sd_samp,
            "std_deviation_bounds": {
                "upper": mean + sigma * sd_pop, "lower": mean - sigma * sd_pop,
                "upper_population": mean + sigma * sd_pop, "lower_population": mean - sigma * sd_pop,
                "upper_sampling": mean + sigma * sd_samp, "lower_sampling": mean - sigma * sd_samp,
            },
        })
    return st


def check_percentile(value, sorted_values, pct, rank_tol=0.01):
    """A percentile estimate is right when its rank is within rank_tol of pct.

    ES computes percentiles with a t-digest (compression 100): the estimate is
    approximate, with the error bounded in rank (best at the tails).  `value`
    may lie between two data points; its rank interval is [#<v, #<=v] / n.
    """
    n = len(sorted_values)
    lo = bisect.bisect_left(sorted_values, value) / n
    hi = bisect.bisect_right(sorted_values, value) / n
    q = pct / 100.0
    ok = (lo - rank_tol) <= q <= (hi + rank_tol)
    assert ok, "percentile %s: %r has rank [%.4f, %.4f], wanted %.4f +- %.3f" % (
        pct, value, lo, hi, q, rank_tol)


def check_cardinality(value, exact, precision_threshold=3000):
    """ES `cardinality` (HyperLogLog++): exact-ish below precision_threshold.

    ES documents "counts below the precision_threshold are expected to be close
    to accurate" and a few percent of error above it.  Tiny cardinalities must
    be exact.
    """
    if exact <= 100:
        assert value == exact, "cardinality %r, exact %r" % (value, exact)
    elif exact <= precision_threshold:
        assert abs(value - exact) <= max(1, 0.005 * exact), "cardinality %r, exact %r (<0.5%%)" % (value, exact)
    else:
        assert abs(value - exact) <= 0.05 * exact, "cardinality %r, exact %r (<5%%)" % (value, exact)


# ---------------------------------------------------------------------------
# Dates
# ---------------------------------------------------------------------------

def ms(dt):
    """aware datetime -> epoch millis"""
    return int(round(dt.timestamp() * 1000))


def from_ms(t, tz=UTC):
    return _dt.datetime.fromtimestamp(t / 1000.0, tz)


def parse_created_str(s):
    """yyyy-MM-dd'T'HH:mm:ss.SSSZ -> epoch millis"""
    return ms(_dt.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%f%z"))


def fmt_java_Z(dt):
    """yyyy-MM-dd'T'HH:mm:ss.SSSZ as Java formats it (Z = +HHMM, +0000 for UTC)."""
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + "%03d" % (dt.microsecond // 1000) + dt.strftime("%z")


def tz_of(name):
    if name in (None, "UTC", "Z", "+00:00"):
        return UTC
    m = re.fullmatch(r"([+-])(\d\d):(\d\d)", name)
    if m:
        sign = 1 if m.group(1) == "+" else -1
        return _dt.timezone(sign * _dt.timedelta(hours=int(m.group(2)), minutes=int(m.group(3))))
    return ZoneInfo(name)


def local_midnight(t, tz):
    """epoch ms -> epoch ms of the start of its day in tz (DST aware)"""
    d = from_ms(t, tz).date()
    return ms(_dt.datetime(d.year, d.month, d.day, tzinfo=tz))


def calendar_floor(t, unit, tz):
    """Start of the calendar unit (minute/hour/day/week/month/quarter/year) holding t, in tz."""
    dt = from_ms(t, tz)
    if unit == "minute":
        dt = dt.replace(second=0, microsecond=0)
        return ms(dt)
    if unit == "hour":
        return ms(dt.replace(minute=0, second=0, microsecond=0))
    d = dt.date()
    if unit == "day":
        pass
    elif unit == "week":
        d = d - _dt.timedelta(days=d.weekday())  # ISO weeks start on Monday
    elif unit == "month":
        d = d.replace(day=1)
    elif unit == "quarter":
        d = d.replace(month=(d.month - 1) // 3 * 3 + 1, day=1)
    elif unit == "year":
        d = d.replace(month=1, day=1)
    else:
        raise ValueError(unit)
    return ms(_dt.datetime(d.year, d.month, d.day, tzinfo=tz))


def calendar_next(t, unit, tz):
    """Start of the next calendar unit after the one starting at t."""
    dt = from_ms(t, tz)
    d = dt.date()
    if unit == "day":
        d = d + _dt.timedelta(days=1)
    elif unit == "week":
        d = d + _dt.timedelta(days=7)
    elif unit in ("month", "quarter", "year"):
        step = {"month": 1, "quarter": 3, "year": 12}[unit]
        m = d.month - 1 + step
        d = _dt.date(d.year + m // 12, m % 12 + 1, 1)
    else:
        raise ValueError(unit)
    return ms(_dt.datetime(d.year, d.month, d.day, tzinfo=tz))


def fixed_floor(t, interval_ms, tz_offset_ms=0, offset_ms=0):
    """ES fixed_interval rounding for a fixed-offset zone (+ optional `offset`)."""
    local = t + tz_offset_ms - offset_ms
    return (local // interval_ms) * interval_ms - tz_offset_ms + offset_ms


def counts_by(keys):
    out = {}
    for k in keys:
        out[k] = out.get(k, 0) + 1
    return out


def terms_order_default(counts):
    """ES terms default order: _count desc, then _key asc."""
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


# ---------------------------------------------------------------------------
# A small index with missing and multi-valued fields ("sparse")
# ---------------------------------------------------------------------------

SPARSE_MAPPING = {
    "settings": {"number_of_shards": 1, "number_of_replicas": 0},
    "mappings": {
        "properties": {
            "name": {"type": "keyword"},
            "group": {"type": "keyword"},
            "score": {"type": "integer"},
            "price": {"type": "double"},
            "tags": {"type": "keyword"},
            "day": {"type": "date", "format": "yyyy-MM-dd"},
            "note": {"type": "text"},
        }
    },
}


def sparse_docs():
    """40 deterministic documents; some fields missing, `tags` multi-valued."""
    docs = []
    tags_pool = ["red", "green", "blue", "black"]
    for i in range(1, 41):
        d = {"name": "n%02d" % i, "group": "g%d" % (i % 3)}
        if i % 4 != 0:
            d["score"] = (i * 7) % 23
        if i % 5 != 0:
            d["price"] = round(i * 1.25 - 10, 2)
        if i % 6 != 0:
            d["tags"] = [tags_pool[(i + k) % 4] for k in range(i % 3 + 1)]
        if i % 7 != 0:
            d["day"] = (_dt.date(2021, 1, 1) + _dt.timedelta(days=i * 3)).isoformat()
        if i % 2 == 0:
            d["note"] = "note number %d %s" % (i, "even")
        docs.append((str(i), d))
    return docs


# --- Lucene's SmallFloat (norm encoding) -------------------------------------------------

def _int_to_int4(i):
    bits = i.bit_length()
    if bits < 4:
        return i
    shift = bits - 4
    return ((i >> shift) & 0x07) | ((shift + 1) << 3)


def _int4_to_long(i):
    bits, shift = i & 0x07, (i >> 3) - 1
    return bits if shift == -1 else (bits | 0x08) << shift


_FREE = 255 - _int_to_int4(2 ** 31 - 1)


def norm_length(n):
    """The field length Lucene's norm keeps: byte4ToInt(intToByte4(n))."""
    b = n if n < _FREE else _FREE + _int_to_int4(n - _FREE)
    return b if b < _FREE else _FREE + _int4_to_long(b - _FREE)
