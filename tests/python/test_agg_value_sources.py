"""Scripts and runtime fields as the value source of every aggregation that reads a field's
values: date_histogram (calendar and fixed intervals), auto_date_histogram, date_range,
weighted_avg, percentiles/percentile_ranks, missing and multi_terms; runtime `date` fields with a `format`; and
highlighting of query_string wildcards. Expected answers are computed here from the indexed
documents (the script's logic applied in Python)."""

import datetime as dt
import random
from collections import Counter, defaultdict

import pytest
from elasticsearch import ApiError

import conftest

INDEX = "agg_value_sources"
MAPPING = {"properties": {"ms": {"type": "long"}, "a": {"type": "long"},
                          "w": {"type": "double"}, "tag": {"type": "keyword"},
                          "day": {"type": "keyword"}, "body": {"type": "text"}}}
DAY = 86_400_000
BASE = 1_704_067_200_000  # 2024-01-01T00:00:00Z
SHIFT = 3 * 3_600_000
WORDS = ["quick", "quiet", "quilt", "brown", "bread", "fox", "fog", "lazy"]


@pytest.fixture(scope="module")
def docs(es):
    rng = random.Random(11)
    docs = {}
    for i in range(80):
        ms = BASE + rng.randrange(0, 200) * DAY + rng.randrange(0, DAY)
        d = {"ms": ms, "a": rng.randrange(0, 30), "tag": rng.choice(["p", "q", "r"]),
             "day": utc(ms).strftime("%d/%m/%Y"),
             "body": " ".join(rng.choice(WORDS) for _ in range(4))}
        if i % 4:
            d["w"] = rng.randrange(1, 5) / 2
        docs[str(i)] = d
    conftest.make_index(es, INDEX, {"settings": {"number_of_shards": 2},
                                    "mappings": MAPPING}, list(docs.items()))
    yield docs
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def utc(ms):
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)


def month_key(ms):
    t = utc(ms)
    return int(dt.datetime(t.year, t.month, 1, tzinfo=dt.timezone.utc).timestamp() * 1000)


def search(es, body):
    return es.search(index=INDEX, body=dict(body, size=0)).body["aggregations"]


def iso(ms):
    return utc(ms).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


SHIFTED = {"source": "doc['ms'].value + params.shift", "params": {"shift": SHIFT}}


def test_date_histogram_script_calendar_and_fixed(es, docs):
    a = search(es, {"aggs": {
        "m": {"date_histogram": {"script": SHIFTED, "calendar_interval": "month"},
              "aggs": {"s": {"sum": {"field": "a"}}}},
        "d": {"date_histogram": {"script": SHIFTED, "fixed_interval": "7d",
                                 "format": "yyyy-MM-dd"}}}})
    months = defaultdict(list)
    for d in docs.values():
        months[month_key(d["ms"] + SHIFT)].append(d)
    got = [(b["key"], b["key_as_string"], b["doc_count"], b["s"]["value"])
           for b in a["m"]["buckets"] if b["doc_count"]]
    assert got == [(k, iso(k), len(v), sum(d["a"] for d in v))
                   for k, v in sorted(months.items())]
    weeks = Counter((d["ms"] + SHIFT) // (7 * DAY) * 7 * DAY for d in docs.values())
    got = [(b["key"], b["key_as_string"], b["doc_count"])
           for b in a["d"]["buckets"] if b["doc_count"]]
    assert got == [(k, utc(k).strftime("%Y-%m-%d"), c) for k, c in sorted(weeks.items())]


def test_date_histogram_on_runtime_dates_with_format(es, docs):
    body = {"runtime_mappings": {
        "shifted": {"type": "date", "format": "yyyy/MM/dd HH:mm",
                    "script": "emit(doc['ms'].value + 10800000L)"},
        # no script: read from `_source` with the field's format
        "day": {"type": "date", "format": "dd/MM/yyyy"}},
        "aggs": {"m": {"date_histogram": {"field": "shifted", "calendar_interval": "1M"}},
                 "days": {"date_histogram": {"field": "day", "calendar_interval": "month"}},
                 "mn": {"min": {"field": "shifted"}}}}
    a = search(es, body)
    months = Counter(month_key(d["ms"] + SHIFT) for d in docs.values())
    assert [(b["key"], b["key_as_string"], b["doc_count"]) for b in a["m"]["buckets"]
            if b["doc_count"]] == \
        [(k, utc(k).strftime("%Y/%m/%d %H:%M"), c) for k, c in sorted(months.items())]
    days = Counter(month_key(d["ms"]) for d in docs.values())
    assert [(b["key"], b["key_as_string"], b["doc_count"]) for b in a["days"]["buckets"]
            if b["doc_count"]] == \
        [(k, utc(k).strftime("%d/%m/%Y"), c) for k, c in sorted(days.items())]
    lo = min(d["ms"] for d in docs.values()) + SHIFT
    assert a["mn"]["value"] == lo
    assert a["mn"]["value_as_string"] == utc(lo).strftime("%Y/%m/%d %H:%M")
    # `fields` renders the runtime date with its format; a range query parses with it
    r = es.search(index=INDEX, body={
        "runtime_mappings": body["runtime_mappings"], "fields": ["day"], "size": 100,
        "query": {"range": {"day": {"gte": "01/03/2024"}}}})
    want = {i for i, d in docs.items()
            if utc(d["ms"]).date() >= dt.date(2024, 3, 1)}
    assert {h["_id"] for h in r["hits"]["hits"]} == want
    for h in r["hits"]["hits"]:
        assert h["fields"]["day"] == [docs[h["_id"]]["day"]]


def test_date_range_script(es, docs):
    a = search(es, {"aggs": {"r": {"date_range": {
        "script": SHIFTED, "format": "yyyy-MM-dd",
        "ranges": [{"to": "2024-03-01"}, {"from": "2024-02-01", "to": "2024-05-01"},
                   {"from": "2024-05-01"}]}}}})
    def ms(s):
        return int(dt.datetime.fromisoformat(s).replace(tzinfo=dt.timezone.utc)
                   .timestamp() * 1000)
    def count(lo, hi):
        return sum(1 for d in docs.values()
                   if (lo is None or d["ms"] + SHIFT >= ms(lo))
                   and (hi is None or d["ms"] + SHIFT < ms(hi)))
    got = [(b["key"], b["doc_count"]) for b in a["r"]["buckets"]]
    assert got == [("*-2024-03-01", count(None, "2024-03-01")),
                   ("2024-02-01-2024-05-01", count("2024-02-01", "2024-05-01")),
                   ("2024-05-01-*", count("2024-05-01", None))]


def test_weighted_avg_scripts_and_runtime_fields(es, docs):
    a = search(es, {
        "runtime_mappings": {"w2": {"type": "double",
                                    "script": "if (doc['w'].size() > 0) emit(doc['w'].value * 2)"}},
        "aggs": {"by": {"terms": {"field": "tag"}, "aggs": {
            "wa": {"weighted_avg": {"value": {"script": "doc['a'].value + 1"},
                                    "weight": {"field": "w2"}}},
            "wm": {"weighted_avg": {"value": {"field": "a"},
                                    "weight": {"script": "doc['a'].value % 3",
                                               "missing": 1}}}}}}})
    for b in a["by"]["buckets"]:
        sel = [d for d in docs.values() if d["tag"] == b["key"]]
        with_w = [d for d in sel if "w" in d]
        want = sum((d["a"] + 1) * d["w"] * 2 for d in with_w) / sum(d["w"] * 2 for d in with_w)
        assert b["wa"]["value"] == pytest.approx(want)
        den = sum(d["a"] % 3 for d in sel)
        want = sum(d["a"] * (d["a"] % 3) for d in sel) / den if den else None
        assert b["wm"]["value"] == pytest.approx(want)
    with pytest.raises(ApiError) as ei:
        search(es, {"aggs": {"x": {"weighted_avg": {"value": {"field": "a", "script": "1"},
                                                    "weight": {"field": "w"}}}}})
    assert ei.value.meta.status == 400


def test_percentiles_and_ranks_on_scripts_and_runtime_fields(es, docs):
    a = search(es, {
        "runtime_mappings": {"a3": {"type": "long", "script": "emit(doc['a'].value * 3)"}},
        "aggs": {
            "p": {"percentiles": {"field": "a3", "percents": [0, 100]}},
            "ps": {"percentiles": {"script": "doc['a'].value * 3", "percents": [0, 100]}},
            "r": {"percentile_ranks": {"script": "doc['a'].value * 3", "values": [-1, 1000]}},
            "rf": {"percentile_ranks": {"field": "a3", "values": [-1, 1000]}}}})
    vals = [d["a"] * 3 for d in docs.values()]
    for name in ["p", "ps"]:
        assert a[name]["values"]["0.0"] == min(vals)
        assert a[name]["values"]["100.0"] == max(vals)
    for name in ["r", "rf"]:
        assert a[name]["values"]["-1.0"] == 0.0
        assert a[name]["values"]["1000.0"] == 100.0


def test_missing_on_runtime_fields_and_scripts(es, docs):
    a = search(es, {
        "runtime_mappings": {"wr": {"type": "double",
                                    "script": "if (doc['w'].size() > 0) emit(doc['w'].value)"}},
        "aggs": {"m": {"missing": {"field": "wr"}, "aggs": {"s": {"sum": {"field": "a"}}}},
                 "ms": {"missing": {"script": "doc['a'].value > 20 ? null : doc['a'].value"}}}})
    sel = [d for d in docs.values() if "w" not in d]
    assert a["m"]["doc_count"] == len(sel)
    assert a["m"]["s"]["value"] == sum(d["a"] for d in sel)
    assert a["ms"]["doc_count"] == sum(1 for d in docs.values() if d["a"] > 20)


def test_query_string_wildcards_are_highlighted(es, docs):
    for query in [{"query_string": {"query": "body:qui*"}},
                  {"simple_query_string": {"query": "qui* -lazy", "fields": ["body"],
                                          "default_operator": "and"}},
                  {"query_string": {"query": "br?wn OR fo*", "default_field": "body"}}]:
        r = es.search(index=INDEX, body={"query": query, "size": 100,
                                         "highlight": {"fields": {"body": {
                                             "number_of_fragments": 0}}}})
        hits = r["hits"]["hits"]
        assert hits
        for h in hits:
            words = docs[h["_id"]]["body"].split()
            if "simple_query_string" in query:
                hit = lambda w: w.startswith("qui")
            elif "br?wn" in str(query):
                hit = lambda w: w == "brown" or w.startswith("fo")
            else:
                hit = lambda w: w.startswith("qui")
            want = " ".join(f"<em>{w}</em>" if hit(w) else w for w in words)
            assert h["highlight"]["body"] == [want]


def test_top_metrics_on_runtime_fields(es, docs):
    a = search(es, {
        "runtime_mappings": {
            "neg": {"type": "long", "script": "emit(-doc['a'].value * 100 - doc['ms'].value % 97)"},
            "label": {"type": "keyword", "script": "emit(doc['tag'].value + doc['a'].value)"},
            "when": {"type": "date", "format": "yyyy-MM-dd",
                     "script": "emit(doc['ms'].value)"}},
        "aggs": {"t": {"top_metrics": {"metrics": [{"field": "label"}, {"field": "when"},
                                                   {"field": "neg"}],
                                       "sort": {"neg": "asc"}, "size": 3}}}})
    ranked_docs = sorted(docs.values(), key=lambda d: -d["a"] * 100 - d["ms"] % 97)[:3]
    got = a["t"]["top"]
    assert [t["sort"] for t in got] == [[-d["a"] * 100 - d["ms"] % 97] for d in ranked_docs]
    assert [t["metrics"] for t in got] == [
        {"label": d["tag"] + str(d["a"]), "when": utc(d["ms"]).strftime("%Y-%m-%d"),
         "neg": -d["a"] * 100 - d["ms"] % 97} for d in ranked_docs]


def test_composite_on_scripts_and_runtime_fields(es, docs):
    """Script and runtime-field sources are computed keys (see test_composite_full.py)."""
    from collections import Counter
    tags = Counter(d["tag"] for d in docs.values())
    days = Counter(d["ms"] // DAY * DAY for d in docs.values())
    for source, want in [
        ({"terms": {"script": "doc['tag'].value"}}, tags),
        ({"date_histogram": {"script": "doc['ms'].value", "calendar_interval": "day"}}, days),
    ]:
        a = search(es, {"aggs": {"c": {"composite": {"size": 1000, "sources": [{"k": source}]}}}})
        assert [(b["key"]["k"], b["doc_count"]) for b in a["c"]["buckets"]] == sorted(want.items())
    a = search(es, {"runtime_mappings": {"t2": {"type": "keyword",
                                                "script": "emit(doc['tag'].value)"}},
                    "aggs": {"c": {"composite": {"sources": [{"k": {"terms": {"field": "t2"}}}]}}}})
    assert [(b["key"]["k"], b["doc_count"]) for b in a["c"]["buckets"]] == sorted(tags.items())


def test_auto_date_histogram_on_a_script_and_a_runtime_date(es, docs):
    """200 days of data in 10 buckets: 200 daily buckets exceed 10 x 7, the months fit."""
    a = search(es, {
        "runtime_mappings": {"shifted": {"type": "date",
                                         "script": "emit(doc['ms'].value + 10800000L)"}},
        "aggs": {"s": {"auto_date_histogram": {"script": SHIFTED, "buckets": 10},
                       "aggs": {"t": {"sum": {"field": "a"}}}},
                 "r": {"auto_date_histogram": {"field": "shifted", "buckets": 10,
                                               "format": "yyyy-MM"}}}})
    months = defaultdict(list)
    for d in docs.values():
        months[month_key(d["ms"] + SHIFT)].append(d)
    assert a["s"]["interval"] == "1M" and a["r"]["interval"] == "1M"
    assert [(b["key"], b["doc_count"], b["t"]["value"]) for b in a["s"]["buckets"]
            if b["doc_count"]] == \
        [(k, len(v), sum(d["a"] for d in v)) for k, v in sorted(months.items())]
    assert [(b["key"], b["key_as_string"], b["doc_count"]) for b in a["r"]["buckets"]
            if b["doc_count"]] == \
        [(k, utc(k).strftime("%Y-%m"), len(v)) for k, v in sorted(months.items())]


def test_multi_terms_on_scripts_and_runtime_fields(es, docs):
    a = search(es, {
        "runtime_mappings": {"half": {"type": "long", "script": "emit(doc['a'].value / 10)"}},
        "aggs": {"m": {"multi_terms": {"size": 100, "terms": [
            {"script": "doc['tag'].value + '-x'"},
            {"field": "half"},
            {"field": "a", "script": "_value % 2"}]}}}})
    want = Counter((d["tag"] + "-x", d["a"] // 10, d["a"] % 2) for d in docs.values())
    got = a["m"]["buckets"]
    assert sorted((tuple(b["key"]), b["doc_count"]) for b in got) == sorted(want.items())
    # by count descending, then the keys ascending
    assert [(tuple(b["key"]), b["doc_count"]) for b in got] == \
        sorted(want.items(), key=lambda kv: (-kv[1], kv[0]))
    b = got[0]
    assert b["key_as_string"] == "|".join(str(k) for k in b["key"])
