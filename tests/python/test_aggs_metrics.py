"""Metric aggregations: stats, extended_stats, sum, avg, min, max, value_count,
cardinality (HLL error bounds), percentiles (rank-error bounds)."""

import pytest
from elasticsearch import BadRequestError

import oracle

STATUS1 = {"term": {"status": 1}}


def aggs(es, aggs, query=None, index="accounts"):
    body = {"size": 0, "aggs": aggs}
    if query is not None:
        body["query"] = query
    return es.search(index=index, body=body).body["aggregations"]


def pred_status1(d):
    return d["status"] == 1


def test_stats_balance_filtered(es, accounts, corpus):
    got = aggs(es, {"s": {"stats": {"field": "balance"}}}, STATUS1)["s"]
    exp = oracle.stats(corpus.values("balance", pred_status1))
    assert got["count"] == exp["count"]
    assert got["min"] == exp["min"] and got["max"] == exp["max"]
    oracle.assert_float(got["sum"], exp["sum"], "sum", scale=exp["scale"])
    oracle.assert_float(got["avg"], exp["avg"], "avg", scale=exp["scale"] / exp["count"])


def test_stats_integer_field(es, accounts, corpus):
    got = aggs(es, {"s": {"stats": {"field": "status"}}})["s"]
    vals = corpus.values("status")
    assert got["count"] == len(vals)
    assert got["min"] == 0.0 and got["max"] == 3.0
    assert got["sum"] == float(sum(vals))
    oracle.assert_float(got["avg"], sum(vals) / len(vals), "avg")


def test_extended_stats_sigma(es, accounts, corpus):
    got = aggs(es, {"s": {"extended_stats": {"field": "balance", "sigma": 3}}},
               {"term": {"acctType": "CREDIT"}})["s"]
    exp = oracle.extended_stats(corpus.values("balance", lambda d: d["acctType"] == "CREDIT"), sigma=3)
    assert got["count"] == exp["count"]
    oracle.assert_float(got["sum"], exp["sum"], "sum", scale=exp["scale"])
    for k in ("variance", "std_deviation", "variance_sampling", "std_deviation_sampling"):
        oracle.assert_float(got[k], exp[k], k, rel=1e-8)
    for k, v in exp["std_deviation_bounds"].items():
        oracle.assert_float(got["std_deviation_bounds"][k], v, k, rel=1e-8)


def test_sum_avg_min_max_value_count(es, accounts, corpus):
    q = {"range": {"balance": {"gte": 0, "lt": 5000}}}
    got = aggs(es, {
        "sum": {"sum": {"field": "balance"}},
        "avg": {"avg": {"field": "balance"}},
        "min": {"min": {"field": "balance"}},
        "max": {"max": {"field": "balance"}},
        "vc": {"value_count": {"field": "balance"}},
        "vc_kw": {"value_count": {"field": "acctId"}},
        "avg_status": {"avg": {"field": "status"}},
    }, q)
    p = lambda d: 0 <= d["balance"] < 5000
    vals = corpus.values("balance", p)
    sc = oracle.fsum(abs(v) for v in vals)
    oracle.assert_float(got["sum"]["value"], oracle.fsum(vals), "sum", scale=sc)
    oracle.assert_float(got["avg"]["value"], oracle.fsum(vals) / len(vals), "avg", scale=sc / len(vals))
    assert got["min"]["value"] == min(vals)
    assert got["max"]["value"] == max(vals)
    assert got["vc"]["value"] == len(vals)
    assert got["vc_kw"]["value"] == len(vals)
    st = corpus.values("status", p)
    oracle.assert_float(got["avg_status"]["value"], sum(st) / len(st), "avg status")


def test_metrics_over_no_documents(es, accounts):
    got = aggs(es, {
        "sum": {"sum": {"field": "balance"}},
        "avg": {"avg": {"field": "balance"}},
        "min": {"min": {"field": "balance"}},
        "max": {"max": {"field": "balance"}},
        "vc": {"value_count": {"field": "balance"}},
        "stats": {"stats": {"field": "balance"}},
        "card": {"cardinality": {"field": "acctId"}},
    }, {"term": {"acctId": "no-such-account"}})
    assert got["sum"]["value"] == 0.0
    assert got["avg"]["value"] is None
    assert got["min"]["value"] is None
    assert got["max"]["value"] is None
    assert got["vc"]["value"] == 0
    assert got["stats"] == {"count": 0, "min": None, "max": None, "avg": None, "sum": 0.0}
    assert got["card"]["value"] == 0


def test_min_max_on_date_fields(es, accounts, corpus):
    got = aggs(es, {
        "min_str": {"min": {"field": "createdTimeStr"}},
        "max_str": {"max": {"field": "createdTimeStr"}},
        "min_ms": {"min": {"field": "createdTime"}},
        "max_fmt": {"max": {"field": "createdTime", "format": "yyyy-MM-dd"}},
    })
    ts = corpus.values("createdTime")
    lo, hi = min(ts), max(ts)
    assert got["min_str"]["value"] == lo and got["max_str"]["value"] == hi
    # the field's own format, rendered in UTC (Java 'Z' prints +0000)
    assert got["min_str"]["value_as_string"] == oracle.fmt_java_Z(oracle.from_ms(lo))
    assert got["max_str"]["value_as_string"] == oracle.fmt_java_Z(oracle.from_ms(hi))
    assert got["min_ms"]["value"] == lo
    assert got["min_ms"]["value_as_string"] == str(lo)
    assert got["max_fmt"]["value_as_string"] == oracle.from_ms(hi).strftime("%Y-%m-%d")


@pytest.mark.parametrize("field", ["acctType", "balanceTypeName", "status", "acctId", "userName", "balance"])
def test_cardinality(es, accounts, corpus, field):
    got = aggs(es, {"c": {"cardinality": {"field": field}}})["c"]["value"]
    oracle.check_cardinality(got, len(set(corpus.values(field))))


def test_cardinality_filtered(es, accounts, corpus):
    got = aggs(es, {"c": {"cardinality": {"field": "acctId"}}}, {"term": {"balanceTypeName": "红包"}})["c"]["value"]
    exact = len(set(corpus.values("acctId", lambda d: d["balanceTypeName"] == "红包")))
    assert 100 < exact < 3000
    oracle.check_cardinality(got, exact)


def test_cardinality_precision_threshold_above_cardinality(es, accounts, corpus):
    """Below precision_threshold ES counts (near) exactly."""
    got = aggs(es, {"c": {"cardinality": {"field": "acctId", "precision_threshold": 40000}}})["c"]["value"]
    exact = len(set(corpus.values("acctId")))
    oracle.check_cardinality(got, exact, precision_threshold=40000)


def test_percentiles_default(es, accounts, corpus):
    got = aggs(es, {"p": {"percentiles": {"field": "balance"}}})["p"]["values"]
    assert list(got) == ["1.0", "5.0", "25.0", "50.0", "75.0", "95.0", "99.0"]
    vals = sorted(corpus.values("balance"))
    for k, v in got.items():
        oracle.check_percentile(v, vals, float(k))


def test_percentiles_custom_not_keyed(es, accounts, corpus):
    got = aggs(es, {"p": {"percentiles": {"field": "balance", "percents": [10, 50, 90, 99.9],
                                          "keyed": False}}},
               {"term": {"acctType": "BASIC"}})["p"]["values"]
    assert [e["key"] for e in got] == [10.0, 50.0, 90.0, 99.9]
    vals = sorted(corpus.values("balance", lambda d: d["acctType"] == "BASIC"))
    for e in got:
        oracle.check_percentile(e["value"], vals, e["key"])


def test_percentiles_integer_field(es, accounts, corpus):
    got = aggs(es, {"p": {"percentiles": {"field": "status", "percents": [50, 95]}}})["p"]["values"]
    vals = sorted(corpus.values("status"))
    for k, v in got.items():
        oracle.check_percentile(v, vals, float(k))


def test_aggregating_a_text_field_is_rejected(es, accounts):
    with pytest.raises(BadRequestError) as ei:
        aggs(es, {"c": {"value_count": {"field": "remark"}}})
    err = ei.value.body["error"]
    assert err["root_cause"][0]["type"] == "illegal_argument_exception"
    assert "fielddata" in err["root_cause"][0]["reason"].lower() or "text fields" in err["root_cause"][0]["reason"].lower()


def test_unknown_field_metrics(es, accounts):
    """An unmapped field aggregates as if it had no values."""
    got = aggs(es, {"s": {"sum": {"field": "nope"}}, "m": {"max": {"field": "nope"}},
                    "v": {"value_count": {"field": "nope"}}})
    assert got["s"]["value"] == 0.0
    assert got["m"]["value"] is None
    assert got["v"]["value"] == 0


def test_metric_parameters_are_checked(es, accounts):
    for aggs in ({"x": {"extended_stats": {"field": "balance", "sigma": -1}}},
                 {"x": {"cardinality": {"field": "status", "precision_threshold": -1}}},
                 {"x": {"percentiles": {"field": "balance", "tdigest": {"compression": -1}}}},
                 {"x": {"percentiles": {"field": "balance", "hdr": {"number_of_significant_value_digits": 6}}}},
                 {"x": {"avg": {"field": "balance", "missing": "abc"}}}):
        with pytest.raises(BadRequestError):
            es.search(index="accounts", size=0, aggs=aggs)


def test_missing_on_an_unmapped_field(es, accounts):
    r = es.search(index="accounts", size=0, aggs={
        "c": {"cardinality": {"field": "no_such_field", "missing": "foo"}},
        "a": {"avg": {"field": "no_such_field", "missing": 7}}})
    assert r["aggregations"]["c"]["value"] == 1
    assert r["aggregations"]["a"]["value"] == 7


def test_cardinality_exact_under_buckets(es, accounts, corpus):
    """Below precision_threshold every bucket's count is exact, at any depth."""
    got = aggs(es, {"t": {"terms": {"field": "acctType", "size": 50},
                          "aggs": {"c": {"cardinality": {"field": "acctId",
                                                         "precision_threshold": 40000}},
                                   "d": {"cardinality": {"field": "acctId"}},
                                   "b": {"cardinality": {"field": "balance",
                                                         "precision_threshold": 40000}}}}})
    buckets = got["t"]["buckets"]
    assert buckets
    for b in buckets:
        pred = lambda d, k=b["key"]: d.get("acctType") == k  # noqa: E731
        assert b["c"]["value"] == len(set(corpus.values("acctId", pred)))
        oracle.check_cardinality(b["d"]["value"], len(set(corpus.values("acctId", pred))))
        assert b["b"]["value"] == len(set(corpus.values("balance", pred)))


def test_cardinality_missing_counts_as_a_value(es, accounts, corpus):
    got = aggs(es, {"c": {"cardinality": {"field": "balance", "missing": -123456.5,
                                          "precision_threshold": 40000}}})["c"]["value"]
    vals = set(corpus.values("balance"))
    if any("balance" not in d for _, d in corpus.docs):
        vals.add(-123456.5)
    assert len(vals) < 40000
    assert got == len(vals)


def interpolated(sorted_values, q):
    """ES's exact t-digest phase: linear interpolation at q * (n - 1)."""
    index = q * (len(sorted_values) - 1)
    lo = int(index)
    if lo + 1 >= len(sorted_values):
        return sorted_values[-1]
    return sorted_values[lo] + (index - lo) * (sorted_values[lo + 1] - sorted_values[lo])


def test_percentiles_under_two_bucket_levels(es, accounts, corpus):
    """Each bucket's sketch holds exactly its own documents' values (all collected in one pass):
    exact up to 20 x compression values, then within t-digest's rank error."""
    got = aggs(es, {"t": {"terms": {"field": "acctType", "size": 50},
                          "aggs": {"s": {"terms": {"field": "status", "size": 50},
                                         "aggs": {"p": {"percentiles": {"field": "balance",
                                                                        "percents": [50]}},
                                                  "m": {"median_absolute_deviation": {"field": "balance"}}}}}}})
    exact = 0
    for tb in got["t"]["buckets"]:
        for sb in tb["s"]["buckets"]:
            pred = lambda d, k=tb["key"], s=sb["key"]: d.get("acctType") == k and d.get("status") == s  # noqa: E731
            vals = sorted(corpus.values("balance", pred))
            p50 = sb["p"]["values"]["50.0"]
            if not vals:
                assert p50 is None and sb["m"]["value"] is None
                continue
            if len(vals) <= 2000:
                exact += 1
                assert abs(p50 - interpolated(vals, 0.5)) <= 1e-9 * max(1.0, abs(p50))
            else:
                oracle.check_percentile(p50, vals, 50, rank_tol=0.03)
            # MAD's digests (compression 1000) stay exact up to 20000 values.
            med = interpolated(vals, 0.5)
            mad = interpolated(sorted(abs(v - med) for v in vals), 0.5)
            assert abs(sb["m"]["value"] - mad) <= 1e-9 * max(1.0, mad)
    assert exact > 1
