//! `GET /_prometheus/metrics`: Lode's metrics in the Prometheus text exposition format
//! (version 0.0.4), encoded by the `prometheus` crate.
//!
//! - HTTP families are recorded here, around every request (the `record` middleware that
//!   `app` installs): a counter per endpoint (the route pattern of `endpoint::label`), method
//!   and status class, and a latency histogram per endpoint and method.
//! - Index and process families are built at scrape time from what `GET _stats` and
//!   `GET _nodes/stats` compute (`lode_api::monitoring`): no counter is kept twice.
//!
//! A scrape reads counters and sizes on a blocking thread and takes no write lock.

use crate::endpoint;
use crate::AppState;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, Method as HttpMethod, Request, Response, StatusCode};
use axum::middleware::Next;
use lode_api::monitoring::{self, IndexMetrics, ProcessMetrics};
use lode_api::rest::{Method, RestRequest, RestResponse};
use lode_engine::EsError;
use prometheus::proto::MetricFamily;
use prometheus::{
    CounterVec, Encoder, Gauge, GaugeVec, HistogramOpts, HistogramVec, IntCounterVec, Opts,
    Registry, TextEncoder,
};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

/// The exposition format's media type.
pub(crate) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Latency buckets, in seconds: 0.5 ms to 10 s.
pub(crate) const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The HTTP families of one server.
pub(crate) struct HttpMetrics {
    registry: Registry,
    requests: IntCounterVec,
    duration: HistogramVec,
}

impl HttpMetrics {
    pub(crate) fn new() -> HttpMetrics {
        let registry = Registry::new();
        let requests = IntCounterVec::new(
            Opts::new(
                "lode_http_requests_total",
                "HTTP requests answered, by endpoint (route pattern), method and status class.",
            ),
            &["endpoint", "method", "status_class"],
        )
        .expect("valid metric");
        let duration = HistogramVec::new(
            HistogramOpts::new(
                "lode_http_request_duration_seconds",
                "Time from receiving an HTTP request to its response, by endpoint and method.",
            )
            .buckets(LATENCY_BUCKETS.to_vec()),
            &["endpoint", "method"],
        )
        .expect("valid metric");
        registry
            .register(Box::new(requests.clone()))
            .expect("registered once");
        registry
            .register(Box::new(duration.clone()))
            .expect("registered once");
        HttpMetrics {
            registry,
            requests,
            duration,
        }
    }

    pub(crate) fn observe(&self, endpoint: &str, method: &str, status: u16, took: Duration) {
        let class = match status {
            100..=199 => "1xx",
            200..=299 => "2xx",
            300..=399 => "3xx",
            400..=499 => "4xx",
            _ => "5xx",
        };
        self.requests
            .with_label_values(&[endpoint, method, class])
            .inc();
        self.duration
            .with_label_values(&[endpoint, method])
            .observe(took.as_secs_f64());
    }

    pub(crate) fn gather(&self) -> Vec<MetricFamily> {
        self.registry.gather()
    }
}

/// The server's HTTP metrics (one server per process).
static HTTP: LazyLock<HttpMetrics> = LazyLock::new(HttpMetrics::new);

/// The method label: the five methods Lode routes, anything else as `other` (extension
/// methods are free text and would make the label unbounded).
fn method_label(m: &HttpMethod) -> &'static str {
    match *m {
        HttpMethod::GET => "GET",
        HttpMethod::HEAD => "HEAD",
        HttpMethod::POST => "POST",
        HttpMethod::PUT => "PUT",
        HttpMethod::DELETE => "DELETE",
        _ => "other",
    }
}

/// Middleware around every request: serves `/_prometheus/metrics` and the console
/// (`/_lode/...`, `console.rs`), passes anything else on,
/// and records the answer's endpoint, method, status class and latency.
pub(crate) async fn record(
    State(state): State<Arc<AppState>>,
    req: Request<Body>,
    next: Next,
) -> Response<Body> {
    let started = Instant::now();
    let segs: Vec<String> = req
        .uri()
        .path()
        .split('/')
        .filter(|s| !s.is_empty())
        .map(crate::decode)
        .collect();
    let endpoint = endpoint::label(&segs);
    let method = method_label(req.method());
    let response = if segs == ["_prometheus", "metrics"] {
        serve(state, req).await
    } else if crate::console::is_console(&segs) {
        crate::console::serve(&req, || HTTP.gather())
    } else {
        next.run(req).await
    };
    HTTP.observe(
        &endpoint,
        method,
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}

/// `GET /_prometheus/metrics` (any other method: 405, as the other routes answer).
async fn serve(state: Arc<AppState>, req: Request<Body>) -> Response<Body> {
    let params = crate::parse_query_string(req.uri().query());
    let path = req.uri().path().to_string();
    if req.method() != HttpMethod::GET {
        let e = EsError::new(
            405,
            "method_not_allowed",
            format!(
                "Incorrect HTTP method for uri [{path}] and method [{}], allowed: [GET]",
                req.method()
            ),
        );
        let head = req.method() == HttpMethod::HEAD;
        return crate::render(RestResponse::error(&e), &params, head);
    }
    let rest = RestRequest {
        doc_security: None,
        field_security: None,
        authorized: None,
        method: Method::Get,
        path,
        params: params.clone(),
        body: Vec::new(),
    };
    if let Err(e) = monitoring::check_params(&rest) {
        return crate::render(RestResponse::error(&e), &params, false);
    }
    let node = state.node.clone();
    let scraped = tokio::task::spawn_blocking(move || {
        let indices = monitoring::index_metrics(&node)?;
        Ok::<_, EsError>(render_text(&HTTP, &indices, &monitoring::process_metrics()))
    })
    .await;
    let text = match scraped {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => return crate::render(RestResponse::error(&e), &params, false),
        Err(_) => {
            let e = EsError::internal("metrics scrape failed");
            return crate::render(RestResponse::error(&e), &params, false);
        }
    };
    let len = text.len();
    let mut resp = Response::new(Body::from(text));
    *resp.status_mut() = StatusCode::OK;
    let h = resp.headers_mut();
    h.insert("content-type", HeaderValue::from_static(CONTENT_TYPE));
    h.insert(
        "x-elastic-product",
        HeaderValue::from_static("Elasticsearch"),
    );
    h.insert("content-length", HeaderValue::from(len));
    resp
}

/// The families built at scrape time, in one throwaway registry.
struct Scrape {
    registry: Registry,
}

const NS: f64 = 1e9;

impl Scrape {
    fn gauges(&self, name: &str, help: &str, list: &[IndexMetrics], f: fn(&IndexMetrics) -> f64) {
        let v = GaugeVec::new(Opts::new(name, help), &["index"]).expect("valid metric");
        for i in list {
            v.with_label_values(&[i.index.as_str()]).set(f(i));
        }
        self.registry.register(Box::new(v)).expect("unique name");
    }

    fn counters(&self, name: &str, help: &str, list: &[IndexMetrics], f: fn(&IndexMetrics) -> f64) {
        let v = CounterVec::new(Opts::new(name, help), &["index"]).expect("valid metric");
        for i in list {
            v.with_label_values(&[i.index.as_str()]).inc_by(f(i));
        }
        self.registry.register(Box::new(v)).expect("unique name");
    }

    fn gauge(&self, name: &str, help: &str, value: f64) {
        let g = Gauge::new(name, help).expect("valid metric");
        g.set(value);
        self.registry.register(Box::new(g)).expect("unique name");
    }

    fn counter(&self, name: &str, help: &str, value: f64) {
        let c = prometheus::Counter::new(name, help).expect("valid metric");
        c.inc_by(value);
        self.registry.register(Box::new(c)).expect("unique name");
    }
}

/// Every family, sorted by name, in the text format.
pub(crate) fn render_text(
    http: &HttpMetrics,
    indices: &[IndexMetrics],
    p: &ProcessMetrics,
) -> String {
    let s = Scrape {
        registry: Registry::new(),
    };
    let l = indices;
    s.gauges(
        "lode_index_docs",
        "Documents in the index's primaries (_stats docs.count).",
        l,
        |i| i.docs as f64,
    );
    s.gauges(
        "lode_index_docs_deleted",
        "Deleted documents not yet merged away (_stats docs.deleted).",
        l,
        |i| i.docs_deleted as f64,
    );
    s.gauges(
        "lode_index_store_size_bytes",
        "Bytes of the index's files (_stats store.size_in_bytes).",
        l,
        |i| i.store_bytes as f64,
    );
    s.gauges(
        "lode_index_segments",
        "Searchable segments (_stats segments.count).",
        l,
        |i| i.segments as f64,
    );
    s.counters(
        "lode_index_indexing_index_total",
        "Index operations (_stats indexing.index_total).",
        l,
        |i| i.index_total as f64,
    );
    s.counters(
        "lode_index_indexing_index_time_seconds_total",
        "Time spent on index operations (_stats indexing.index_time_in_millis).",
        l,
        |i| i.index_time_ns as f64 / NS,
    );
    s.counters(
        "lode_index_indexing_index_failed_total",
        "Failed index operations (_stats indexing.index_failed).",
        l,
        |i| i.index_failed as f64,
    );
    s.counters(
        "lode_index_indexing_delete_total",
        "Delete operations (_stats indexing.delete_total).",
        l,
        |i| i.delete_total as f64,
    );
    s.counters(
        "lode_index_indexing_delete_time_seconds_total",
        "Time spent on delete operations (_stats indexing.delete_time_in_millis).",
        l,
        |i| i.delete_time_ns as f64 / NS,
    );
    s.counters(
        "lode_index_search_query_total",
        "Query phases run, one per shard searched (_stats search.query_total).",
        l,
        |i| i.query_total as f64,
    );
    s.counters(
        "lode_index_search_query_time_seconds_total",
        "Time spent in query phases (_stats search.query_time_in_millis).",
        l,
        |i| i.query_time_ns as f64 / NS,
    );
    s.counters(
        "lode_index_search_fetch_total",
        "Fetch phases run (_stats search.fetch_total).",
        l,
        |i| i.fetch_total as f64,
    );
    s.counters(
        "lode_index_search_fetch_time_seconds_total",
        "Time spent in fetch phases (_stats search.fetch_time_in_millis).",
        l,
        |i| i.fetch_time_ns as f64 / NS,
    );
    s.counters(
        "lode_index_refresh_total",
        "Refreshes (_stats refresh.total).",
        l,
        |i| i.refresh_total as f64,
    );
    s.counters(
        "lode_index_refresh_time_seconds_total",
        "Time spent refreshing (_stats refresh.total_time_in_millis).",
        l,
        |i| i.refresh_time_ns as f64 / NS,
    );
    s.counters(
        "lode_index_flush_total",
        "Flushes (_stats flush.total).",
        l,
        |i| i.flush_total as f64,
    );
    s.counters(
        "lode_index_flush_time_seconds_total",
        "Time spent flushing (_stats flush.total_time_in_millis).",
        l,
        |i| i.flush_time_ns as f64 / NS,
    );
    s.counters(
        "lode_index_merges_total",
        "Segment merges completed (_stats merges.total).",
        l,
        |i| i.merge_total as f64,
    );
    s.counters(
        "lode_index_merges_docs_total",
        "Documents merged (_stats merges.total_docs).",
        l,
        |i| i.merge_docs as f64,
    );
    s.counters(
        "lode_index_merges_time_seconds_total",
        "Time spent merging (_stats merges.total_time_in_millis).",
        l,
        |i| i.merge_time_ns as f64 / NS,
    );
    s.gauges(
        "lode_index_translog_operations",
        "Operations in the translog since the last flush (_stats translog.operations).",
        l,
        |i| i.translog_operations as f64,
    );
    s.gauges(
        "lode_index_translog_size_bytes",
        "Bytes of the translog since the last flush (_stats translog.size_in_bytes).",
        l,
        |i| i.translog_bytes as f64,
    );
    s.gauges("lode_index_query_cache_memory_bytes", "Query cache size (_stats query_cache.memory_size_in_bytes; Lode has no node query cache: 0).", l, |i| i.query_cache_bytes as f64);
    s.counters(
        "lode_index_query_cache_hits_total",
        "Query cache hits (_stats query_cache.hit_count; always 0).",
        l,
        |i| i.query_cache_hits as f64,
    );
    s.counters(
        "lode_index_query_cache_misses_total",
        "Query cache misses (_stats query_cache.miss_count; always 0).",
        l,
        |i| i.query_cache_misses as f64,
    );
    s.counters(
        "lode_index_query_cache_evictions_total",
        "Query cache evictions (_stats query_cache.evictions; always 0).",
        l,
        |i| i.query_cache_evictions as f64,
    );
    s.gauges(
        "lode_index_request_cache_memory_bytes",
        "Shard request cache size (_stats request_cache.memory_size_in_bytes).",
        l,
        |i| i.request_cache_bytes as f64,
    );
    s.counters(
        "lode_index_request_cache_hits_total",
        "Shard request cache hits (_stats request_cache.hit_count).",
        l,
        |i| i.request_cache_hits as f64,
    );
    s.counters(
        "lode_index_request_cache_misses_total",
        "Shard request cache misses (_stats request_cache.miss_count).",
        l,
        |i| i.request_cache_misses as f64,
    );
    s.counters(
        "lode_index_request_cache_evictions_total",
        "Shard request cache evictions (_stats request_cache.evictions).",
        l,
        |i| i.request_cache_evictions as f64,
    );
    s.counter(
        "process_cpu_seconds_total",
        "Total user and system CPU time spent in seconds.",
        p.cpu_seconds,
    );
    s.gauge(
        "process_resident_memory_bytes",
        "Resident memory size in bytes.",
        p.resident_bytes as f64,
    );
    s.gauge(
        "process_virtual_memory_bytes",
        "Virtual memory size in bytes.",
        p.virtual_bytes as f64,
    );
    s.gauge(
        "process_open_fds",
        "Number of open file descriptors.",
        p.open_fds as f64,
    );
    s.gauge(
        "process_max_fds",
        "Maximum number of open file descriptors.",
        p.max_fds as f64,
    );
    s.gauge(
        "process_start_time_seconds",
        "Start time of the process since unix epoch in seconds.",
        p.start_time_seconds,
    );
    s.gauge(
        "process_threads",
        "Number of OS threads in the process.",
        p.threads as f64,
    );
    let mut families = http.gather();
    families.extend(s.registry.gather());
    families.sort_by(|a, b| a.name().cmp(b.name()));
    let mut out = Vec::new();
    TextEncoder::new()
        .encode(&families, &mut out)
        .expect("text encoding of valid families");
    String::from_utf8(out).expect("the text format is UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<&str> {
        text.lines().collect()
    }

    #[test]
    fn renders_every_family_in_the_text_format() {
        let http = HttpMetrics::new();
        http.observe("/{index}/_search", "POST", 200, Duration::from_millis(3));
        http.observe("/{index}/_search", "POST", 404, Duration::from_secs(20));
        http.observe("/", "GET", 200, Duration::from_micros(100));
        let indices = vec![
            IndexMetrics {
                index: "a".into(),
                docs: 5,
                query_total: 2,
                query_time_ns: 1_500_000_000,
                ..Default::default()
            },
            IndexMetrics {
                index: "b".into(),
                docs: 7,
                ..Default::default()
            },
        ];
        let p = ProcessMetrics {
            cpu_seconds: 1.25,
            resident_bytes: 4096,
            virtual_bytes: 8192,
            open_fds: 12,
            max_fds: 1024,
            start_time_seconds: 1.7e9,
            threads: 3,
        };
        let text = render_text(&http, &indices, &p);
        let l = lines(&text);
        let at = |line: &str| {
            l.iter()
                .position(|x| *x == line)
                .unwrap_or_else(|| panic!("missing line {line:?} in\n{text}"))
        };
        // HELP, TYPE, then the samples, per family.
        let help =
            at("# HELP lode_index_docs Documents in the index's primaries (_stats docs.count).");
        assert_eq!(at("# TYPE lode_index_docs gauge"), help + 1);
        assert_eq!(at("lode_index_docs{index=\"a\"} 5"), help + 2);
        assert_eq!(at("lode_index_docs{index=\"b\"} 7"), help + 3);
        at("# TYPE lode_index_search_query_total counter");
        at("lode_index_search_query_total{index=\"a\"} 2");
        at("lode_index_search_query_time_seconds_total{index=\"a\"} 1.5");
        at("# TYPE process_cpu_seconds_total counter");
        at("process_cpu_seconds_total 1.25");
        at("process_resident_memory_bytes 4096");
        at("process_start_time_seconds 1700000000");
        at("process_open_fds 12");
        at("process_max_fds 1024");
        // The counter by status class, the histogram by endpoint and method.
        at("# TYPE lode_http_requests_total counter");
        at("lode_http_requests_total{endpoint=\"/{index}/_search\",method=\"POST\",status_class=\"2xx\"} 1");
        at("lode_http_requests_total{endpoint=\"/{index}/_search\",method=\"POST\",status_class=\"4xx\"} 1");
        at("# TYPE lode_http_request_duration_seconds histogram");
        let h = "lode_http_request_duration_seconds";
        let s = "endpoint=\"/{index}/_search\",method=\"POST\"";
        at(&format!("{h}_bucket{{{s},le=\"0.0025\"}} 0"));
        at(&format!("{h}_bucket{{{s},le=\"0.005\"}} 1"));
        at(&format!("{h}_bucket{{{s},le=\"10\"}} 1"));
        at(&format!("{h}_bucket{{{s},le=\"+Inf\"}} 2"));
        at(&format!("{h}_count{{{s}}} 2"));
        at(&format!(
            "{h}_bucket{{endpoint=\"/\",method=\"GET\",le=\"0.0005\"}} 1"
        ));
        // Families sorted by name; every counter ends in _total; names are lode_* or process_*.
        let types: Vec<(&str, &str)> = l
            .iter()
            .filter_map(|x| x.strip_prefix("# TYPE "))
            .map(|x| x.split_once(' ').unwrap())
            .collect();
        let names: Vec<&str> = types.iter().map(|t| t.0).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        for (name, kind) in &types {
            assert_eq!(*kind == "counter", name.ends_with("_total"), "{name}");
            assert!(name.starts_with("lode_") || name.starts_with("process_"));
        }
        assert_eq!(
            l.iter().filter(|x| x.starts_with("# HELP ")).count(),
            types.len()
        );
    }

    #[test]
    fn buckets_span_half_a_millisecond_to_ten_seconds() {
        assert_eq!(LATENCY_BUCKETS.first(), Some(&0.0005));
        assert_eq!(LATENCY_BUCKETS.last(), Some(&10.0));
        assert!(LATENCY_BUCKETS.windows(2).all(|w| w[0] < w[1]));
    }
}
