"""`GET /_prometheus/metrics`: the Prometheus text exposition format, parsed with the official
parser (prometheus_client). Expected numbers come from what the tests themselves index and send."""
import math
import time
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from conftest import make_index

BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, math.inf]


def scrape(lode_url):
    with urllib.request.urlopen(lode_url + "/_prometheus/metrics") as r:
        assert r.status == 200
        assert r.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
        assert r.headers["X-Elastic-Product"] == "Elasticsearch"
        text = r.read().decode("utf-8")
    return text, {f.name: f for f in text_string_to_metric_families(text)}


def samples(families, family, sample_name=None, **labels):
    f = families.get(family)
    if f is None:  # a family without series (no index left) is not written
        return []
    return [s for s in f.samples
            if (sample_name is None or s.name == sample_name)
            and all(s.labels.get(k) == v for k, v in labels.items())]


def value(families, family, sample_name=None, **labels):
    found = samples(families, family, sample_name, **labels)
    assert len(found) == 1, (family, labels, found)
    return found[0].value


def requests_to(families, endpoint):
    return sum(s.value for s in samples(families, "lode_http_requests", "lode_http_requests_total",
                                        endpoint=endpoint))


def test_index_documents_and_search_counters(es, lode_url):
    n, m = 37, 11
    docs = [(str(i), {"n": i, "tag": "even" if i % 2 == 0 else "odd"}) for i in range(n + 3)]
    name = make_index(es, "prom-docs", {"settings": {"number_of_shards": 1}}, docs)
    for i in range(n, n + 3):
        es.delete(index=name, id=str(i))
    es.indices.refresh(index=name)

    _, before = scrape(lode_url)
    assert value(before, "lode_index_docs", index=name) == n
    searched = 0
    for i in range(m):
        r = es.search(index=name, query={"range": {"n": {"gte": i}}}, size=5)
        # The answer itself is right: documents n >= i among the n kept.
        assert r["hits"]["total"]["value"] == n - i
        searched += 1
    es.get(index=name, id="1")
    text, after = scrape(lode_url)

    assert value(after, "lode_index_docs", index=name) == n
    assert requests_to(after, "/{index}/_search") - requests_to(before, "/{index}/_search") >= searched
    # One shard: every search runs one query phase on it.
    assert (value(after, "lode_index_search_query", "lode_index_search_query_total", index=name)
            - value(before, "lode_index_search_query", "lode_index_search_query_total", index=name)) >= searched
    # Indexing counted n + 3 index operations and 3 deletes on this index.
    assert value(after, "lode_index_indexing_index", "lode_index_indexing_index_total", index=name) == n + 3
    assert value(after, "lode_index_indexing_delete", "lode_index_indexing_delete_total", index=name) == 3
    assert value(after, "lode_index_segments", index=name) >= 1
    assert value(after, "lode_index_store_size_bytes", index=name) > 0
    assert value(after, "lode_index_refresh", "lode_index_refresh_total", index=name) >= 1
    # Endpoints are route patterns: no raw index name or document id becomes a label.
    endpoints = {s.labels["endpoint"] for s in after["lode_http_requests"].samples}
    assert "/{index}/_doc/{id}" in endpoints and "/{index}/_search" in endpoints
    assert not any(name in e for e in endpoints), endpoints
    assert "/_prometheus/metrics" in endpoints, "the first scrape is counted by the second"
    es.indices.delete(index=name)
    _, gone = scrape(lode_url)
    assert not samples(gone, "lode_index_docs", index=name)


def test_histograms_are_cumulative(es, lode_url):
    for _ in range(3):
        es.cluster.health()
    _, families = scrape(lode_url)
    hist = families["lode_http_request_duration_seconds"]
    assert hist.type == "histogram"
    series = {}
    for s in hist.samples:
        key = (s.labels["endpoint"], s.labels["method"])
        series.setdefault(key, {"buckets": []})
        if s.name.endswith("_bucket"):
            series[key]["buckets"].append((float(s.labels["le"]), s.value))
        elif s.name.endswith("_count"):
            series[key]["count"] = s.value
        elif s.name.endswith("_sum"):
            series[key]["sum"] = s.value
    assert ("/_cluster/health", "GET") in series
    assert series[("/_cluster/health", "GET")]["count"] >= 3
    for key, h in series.items():
        bounds = [b for b, _ in h["buckets"]]
        assert bounds == BUCKETS, key
        counts = [c for _, c in h["buckets"]]
        assert counts == sorted(counts), ("buckets are cumulative", key, counts)
        assert h["count"] == counts[-1], ("_count equals the +Inf bucket", key)
        assert h["sum"] >= 0
    # The counter agrees with the histogram's count for the same endpoint and method.
    total = sum(s.value for s in samples(families, "lode_http_requests", "lode_http_requests_total",
                                         endpoint="/_cluster/health", method="GET"))
    assert total == series[("/_cluster/health", "GET")]["count"]


def test_process_metrics_and_format(lode_url):
    text, families = scrape(lode_url)
    for name in ["process_resident_memory_bytes", "process_virtual_memory_bytes", "process_open_fds",
                 "process_max_fds", "process_start_time_seconds"]:
        assert families[name].type == "gauge"
        assert value(families, name) > 0, name
    assert families["process_cpu_seconds"].type == "counter"
    assert value(families, "process_cpu_seconds", "process_cpu_seconds_total") > 0
    assert value(families, "process_max_fds") >= value(families, "process_open_fds")
    assert value(families, "process_virtual_memory_bytes") >= value(families, "process_resident_memory_bytes")
    assert value(families, "process_start_time_seconds") <= time.time() + 1
    # Every family has HELP and TYPE; names are lode_* or the standard process_*; counters
    # end in _total.
    helps = {l.split()[2] for l in text.splitlines() if l.startswith("# HELP ")}
    types = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, metric, kind = line.split()
            types[metric] = kind
    assert helps == set(types)
    for metric, kind in types.items():
        assert metric.startswith("lode_") or metric.startswith("process_"), metric
        assert (kind == "counter") == metric.endswith("_total"), (metric, kind)


def test_only_get(lode_url):
    for method in ["POST", "PUT", "DELETE", "HEAD"]:
        req = urllib.request.Request(lode_url + "/_prometheus/metrics", method=method)
        try:
            urllib.request.urlopen(req)
            raise AssertionError(method + " answered")
        except urllib.error.HTTPError as e:
            assert e.code == 405, method
            if method != "HEAD":
                import json
                body = json.loads(e.read())
                assert body["error"]["type"] == "method_not_allowed"
                assert body["error"]["reason"] == (
                    "Incorrect HTTP method for uri [/_prometheus/metrics] and method [%s], allowed: [GET]" % method)
    try:
        urllib.request.urlopen(lode_url + "/_prometheus/metrics?format=json")
        raise AssertionError("unknown parameter accepted")
    except urllib.error.HTTPError as e:
        assert e.code == 400
