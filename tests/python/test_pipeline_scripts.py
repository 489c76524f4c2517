"""Script pipelines (`bucket_script`, `bucket_selector`, `moving_fn`) checked against values
computed here in Python from the documents the test indexes: a `date_histogram` by day with
the sum of `price` per day, an empty day in the middle, and ES's MovingFunctions re-implemented
below from their definitions."""

import math
import random
from decimal import ROUND_HALF_EVEN, Decimal

import pytest
from elasticsearch import BadRequestError

INDEX = "pipeline_scripts"
DAY_MS = 86_400_000
START = 1_730_419_200_000  # 2024-11-01T00:00:00Z
EMPTY_DAY = 5
TOL = 1e-9


@pytest.fixture(scope="module")
def docs(es):
    rng = random.Random(11)
    docs = []
    for i in range(52):
        day = i % 12
        if day == EMPTY_DAY:
            day = 4
        docs.append({"ts": START + day * DAY_MS + rng.randrange(0, DAY_MS),
                     "price": round(rng.uniform(1, 100), 2),
                     "qty": rng.randrange(1, 10),
                     "tag": rng.choice("abcd")})
    if es.indices.exists(index=INDEX):
        es.indices.delete(index=INDEX)
    es.indices.create(index=INDEX, mappings={"properties": {
        "ts": {"type": "date"}, "price": {"type": "double"}, "qty": {"type": "integer"},
        "tag": {"type": "keyword"}}})
    ops = []
    for i, d in enumerate(docs):
        ops += [{"index": {"_index": INDEX, "_id": str(i)}}, d]
    assert es.bulk(operations=ops, refresh=True)["errors"] is False
    yield docs
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def per_day(docs):
    """[(key, count, sum of price, sum of qty)] for every day from the first to the last."""
    days = sorted({(d["ts"] - START) // DAY_MS for d in docs})
    out = []
    for day in range(days[0], days[-1] + 1):
        ds = [d for d in docs if (d["ts"] - START) // DAY_MS == day]
        out.append((START + day * DAY_MS, len(ds), sum(d["price"] for d in ds),
                    sum(d["qty"] for d in ds)))
    return out


DAYS = {"date_histogram": {"field": "ts", "calendar_interval": "day"}}


def hist(**pipes):
    return {"h": dict(DAYS, aggs={"total": {"sum": {"field": "price"}},
                                  "q": {"sum": {"field": "qty"}}, **pipes})}


def run(es, aggs, **kw):
    return es.search(index=INDEX, size=0, aggs=aggs, **kw)["aggregations"]


def close(got, want):
    if want is None or (isinstance(want, float) and math.isnan(want)):
        return got is None
    return got is not None and abs(got - want) <= TOL * max(1.0, abs(want))


def java_format(x, digits):
    """Java's DecimalFormat `0.000`: HALF_EVEN on the double's exact binary value."""
    return str(Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_EVEN))


def test_bucket_script_ratio_per_day(es, docs):
    aggs = hist(avg_price={"bucket_script": {
        "buckets_path": {"total": "total", "count": "_count"},
        "script": {"source": "params.total / params.count * params.scale", "params": {"scale": 2}},
        "format": "0.0000"}})
    buckets = run(es, aggs)["h"]["buckets"]
    want = per_day(docs)
    assert [b["key"] for b in buckets] == [k for k, *_ in want]
    for b, (key, count, total, _) in zip(buckets, want):
        if count == 0:
            # skip: the empty day's sum is a gap, the bucket is left without a value
            assert "avg_price" not in b
            continue
        expected = total / count * 2
        assert close(b["avg_price"]["value"], expected), (key, b)
        assert b["avg_price"]["value_as_string"] == java_format(expected, 4)


def test_bucket_script_gap_policies_and_path_forms(es, docs):
    aggs = hist(
        zeros={"bucket_script": {"buckets_path": {"t": "total", "q": "q"},
                                 "script": "params.t + params.q", "gap_policy": "insert_zeros"}},
        kept={"bucket_script": {"buckets_path": {"t": "total"}, "script": "params.t - 1",
                                "gap_policy": "keep_values"}},
        single={"bucket_script": {"buckets_path": "q", "script": "params._value * 10"}},
        listed={"bucket_script": {"buckets_path": ["q", "_count"],
                                  "script": "params._value0 / params._value1"}},
        nothing={"bucket_script": {"buckets_path": {"c": "_count"},
                                   "script": "params.c > 4 ? params.c : null"}})
    buckets = run(es, aggs)["h"]["buckets"]
    for b, (_, count, total, qty) in zip(buckets, per_day(docs)):
        assert close(b["zeros"]["value"], total + qty)
        # keep_values keeps the empty day's sum (0) where the value exists
        assert close(b["kept"]["value"], total - 1)
        if count:
            assert close(b["single"]["value"], qty * 10)
            assert close(b["listed"]["value"], qty / count)
        else:
            assert "single" not in b and "listed" not in b
        # a script returning null leaves the bucket alone
        assert ("nothing" in b) == (count > 4)
        if count > 4:
            assert close(b["nothing"]["value"], count)


def test_bucket_selector(es, docs):
    want = per_day(docs)
    threshold = sorted(t for _, c, t, _ in want if c)[len(want) // 2]
    aggs = hist(big={"bucket_selector": {"buckets_path": {"t": "total"},
                                         "script": {"source": "params.t >= params.min",
                                                    "params": {"min": threshold}}}})
    buckets = run(es, aggs)["h"]["buckets"]
    assert [b["key"] for b in buckets] == [k for k, c, t, _ in want if c and t >= threshold]
    assert all("big" not in b for b in buckets)
    # selecting on a bucket_script's output, and over a terms aggregation (any multi-bucket)
    aggs = {"t": {"terms": {"field": "tag"}, "aggs": {
        "total": {"sum": {"field": "price"}},
        "sel": {"bucket_selector": {"buckets_path": {"avg": "avg"}, "script": "params.avg > 50"}},
        "avg": {"bucket_script": {"buckets_path": ["total", "_count"],
                                  "script": "params._value0 / params._value1"}}}}}
    buckets = run(es, aggs)["t"]["buckets"]
    by_tag = {}
    for d in docs:
        by_tag.setdefault(d["tag"], []).append(d["price"])
    expected = {t: sum(p) / len(p) for t, p in by_tag.items() if sum(p) / len(p) > 50}
    assert {b["key"] for b in buckets} == set(expected)
    for b in buckets:
        assert close(b["avg"]["value"], expected[b["key"]])


# ES's MovingFunctions, from their definitions.
def mf_max(v):
    return max(v) if v else math.nan


def mf_min(v):
    return min(v) if v else math.nan


def mf_avg(v):
    return sum(v) / len(v) if v else math.nan


def mf_linear(v):
    # weights 1..n from the oldest; ES's total weight starts at 1
    if not v:
        return math.nan
    return sum(x * (i + 1) for i, x in enumerate(v)) / (1 + sum(range(1, len(v) + 1)))


def mf_ewma(v, alpha):
    avg = math.nan
    for i, x in enumerate(v):
        avg = x if i == 0 else x * alpha + avg * (1 - alpha)
    return avg


def mf_holt(v, alpha, beta):
    if not v:
        return math.nan
    level, trend = v[0], 0.0
    for x in v[1:]:
        new_level = alpha * x + (1 - alpha) * (level + trend)
        trend = beta * (new_level - level) + (1 - beta) * trend
        level = new_level
    return level


def mf_std(v, avg):
    if math.isnan(avg):
        return math.nan
    return math.sqrt(sum((x - avg) ** 2 for x in v) / len(v))


def windows(values, window, shift):
    """Per bucket value (None = gap): the window ES hands the script, or None for a gap."""
    series = [x for x in values if x is not None]
    out, k = [], 0
    for x in values:
        if x is None:
            out.append(None)
            continue
        lo = min(max(k - window + shift, 0), len(series))
        hi = min(max(k + shift, 0), len(series))
        out.append(series[lo:hi])
        k += 1
    return out


MOVING = {
    "avg": ("MovingFunctions.unweightedAvg(values)", mf_avg),
    "max": ("MovingFunctions.max(values)", mf_max),
    "min": ("MovingFunctions.min(values)", mf_min),
    "sum": ("MovingFunctions.sum(values)", sum),
    "lin": ("MovingFunctions.linearWeightedAvg(values)", mf_linear),
    "ewma": ("MovingFunctions.ewma(values, 0.3)", lambda v: mf_ewma(v, 0.3)),
    "holt": ("MovingFunctions.holt(values, 0.3, 0.1)", lambda v: mf_holt(v, 0.3, 0.1)),
    "std": ("MovingFunctions.stdDev(values, MovingFunctions.unweightedAvg(values))",
            lambda v: mf_std(v, mf_avg(v))),
    "len": ("values.length", len),
    "loop": ("double m = 0; for (int i = 0; i < values.length; ++i) { m = Math.max(m, values[i]); } return m;",
             lambda v: max([0.0] + v)),
}


@pytest.mark.parametrize("window,shift,gap", [(3, 0, "skip"), (4, 1, "skip"), (2, 0, "insert_zeros"),
                                               (5, -2, "skip"), (1, 3, "insert_zeros")])
def test_moving_fn(es, docs, window, shift, gap):
    pipes = {f"m_{name}": {"moving_fn": {"buckets_path": "total", "window": window, "shift": shift,
                                         "gap_policy": gap, "script": src}}
             for name, (src, _) in MOVING.items()}
    buckets = run(es, hist(**pipes))["h"]["buckets"]
    want = per_day(docs)
    values = [t if c else (0.0 if gap == "insert_zeros" else None) for _, c, t, _ in want]
    for b, win in zip(buckets, windows(values, window, shift)):
        for name, (_, fn) in MOVING.items():
            if win is None:
                assert f"m_{name}" not in b
            else:
                assert close(b[f"m_{name}"]["value"], float(fn(win))), (name, b["key"], win)


def test_moving_fn_holt_winters_and_format(es, docs):
    src = ("values.length >= 4 ? MovingFunctions.holtWinters(values, 0.5, 0.4, 0.3, 2, false)"
           " : MovingFunctions.sum(values)")
    aggs = hist(hw={"moving_fn": {"buckets_path": "_count", "window": 6, "script": src,
                                  "format": "0.0"}})
    buckets = run(es, aggs, typed_keys=True)["date_histogram#h"]["buckets"]
    counts = [float(c) for _, c, _, _ in per_day(docs)]  # `_count` never gaps
    for b, win in zip(buckets, windows(counts, 6, 0)):
        if len(win) >= 4:
            want = holt_winters_additive(win, 0.5, 0.4, 0.3, 2)
        else:
            want = sum(win)
        assert close(b["simple_value#hw"]["value"], want)
        assert b["simple_value#hw"]["value_as_string"] == java_format(want, 1)
    # fewer than two periods: ES's IllegalArgumentException, a 400
    bad = hist(hw={"moving_fn": {"buckets_path": "_count", "window": 3, "shift": 1,
               "script": "MovingFunctions.holtWinters(values, 0.5, 0.4, 0.3, 2, false)"}})
    with pytest.raises(BadRequestError):
        run(es, bad)


def holt_winters_additive(v, alpha, beta, gamma, period):
    level = sum(v[:period]) / period
    seasonal = [x / level for x in v[:period]] + [0.0] * (len(v) - period)
    last_level, last_trend = level, 0.0
    trend = 0.0
    for i in range(period, len(v)):
        level = alpha * (v[i] - seasonal[i - period]) + (1 - alpha) * (last_level + last_trend)
        trend = beta * (level - last_level) + (1 - beta) * last_trend
        seasonal[i] = gamma * (v[i] - (last_level - last_trend)) + (1 - gamma) * seasonal[i - period]
        last_level, last_trend = level, trend
    return level + trend + seasonal[len(v) - period]


def test_errors(es, docs):
    cases = [
        # moving_fn needs a histogram parent
        ({"t": {"terms": {"field": "tag"}, "aggs": {"m": {"moving_fn": {
            "buckets_path": "_count", "window": 2, "script": "MovingFunctions.sum(values)"}}}}},
         "illegal_argument_exception", "must have a histogram"),
        (hist(m={"moving_fn": {"buckets_path": "total", "window": 0, "script": "1"}}),
         "illegal_argument_exception", "[window] must be a positive, non-zero integer."),
        (hist(m={"moving_fn": {"buckets_path": "total", "script": "1"}}),
         "illegal_argument_exception", "Required [window]"),
        (hist(m={"bucket_script": {"buckets_path": {"t": "total"}}}),
         "illegal_argument_exception", "Required [script]"),
        (hist(m={"bucket_selector": {"script": "true"}}),
         "parsing_exception", "Missing required field [buckets_path] for bucket_selector aggregation [m]"),
        (hist(m={"bucket_script": {"buckets_path": {"t": "total"}, "script": "1", "bogus": 1}}),
         "x_content_parse_exception", "unknown field [bogus]"),
        (hist(m={"bucket_selector": {"buckets_path": {"t": "total"}, "script": "params.t"}}),
         "script_exception", "runtime error"),
        (hist(m={"bucket_script": {"buckets_path": {"t": "total"}, "script": "MovingFunctions.sum(values)"}}),
         "script_exception", "compile error"),
        (hist(m={"bucket_script": {"buckets_path": {"t": "nope"}, "script": "1"}}),
         "aggregation_execution_exception", "No aggregation found for path [nope]"),
        ({"m": {"bucket_script": {"buckets_path": {"a": "_count"}, "script": "1"}}},
         "illegal_argument_exception", "must be declared inside of another aggregation"),
    ]
    for aggs, kind, reason in cases:
        with pytest.raises(BadRequestError) as e:
            run(es, aggs)
        err = e.value.body["error"]
        # failures while reducing come wrapped in search_phase_execution_exception, as ES's
        types = {err["type"]} | {c.get("type") for c in err.get("root_cause", [])}
        assert kind in types, (aggs, err)
        text = err["reason"] + " ".join(c.get("reason", "") for c in err.get("root_cause", []))
        assert reason in text, (aggs, err)


def test_keyed_buckets(es, docs):
    cheap = [d for d in docs if d["price"] < 30]
    dear = [d for d in docs if d["price"] >= 30]
    assert len(dear) > len(cheap)  # so the selector removes `dear`
    aggs = {"f": {"filters": {"filters": {"cheap": {"range": {"price": {"lt": 30}}},
                                          "dear": {"range": {"price": {"gte": 30}}}}},
                  "aggs": {"q": {"sum": {"field": "qty"}},
                           "per": {"bucket_script": {"buckets_path": {"q": "q", "n": "_count"},
                                                     "script": "params.q / params.n"}},
                           "few": {"bucket_selector": {"buckets_path": {"n": "_count"}, "script": {
                               "source": "params.n < params.limit", "params": {"limit": len(cheap) + 1}}}}}}}
    buckets = run(es, aggs)["f"]["buckets"]
    want = {name: ds for name, ds in (("cheap", cheap), ("dear", dear)) if len(ds) < len(cheap) + 1}
    assert set(buckets) == set(want)
    for name, ds in want.items():
        assert close(buckets[name]["per"]["value"], sum(d["qty"] for d in ds) / len(ds))
