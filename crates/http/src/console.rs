//! The built-in console at `/_lode/`: a page of hand-written HTML, CSS and JavaScript compiled
//! into the binary (no framework, nothing fetched from the network) that shows the node and its
//! indices, sends requests, and charts search and indexing rates and latencies from periodic
//! polls of the node's own APIs. `/_lode/api/http_stats` adds what those APIs lack: the HTTP
//! latency histograms per endpoint (the ones `/_prometheus/metrics` exposes) as JSON, so the
//! page computes percentiles over its polling window from bucket deltas.
//!
//! Served by the `metrics::record` middleware before the route table, as `_prometheus` is:
//! Elasticsearch refuses index names starting with `_`, so `_lode` cannot shadow an index, and
//! static files need no thread-pool admission.

use axum::body::Body;
use axum::http::{HeaderValue, Method as HttpMethod, Request, Response, StatusCode};
use lode_api::rest::RestResponse;
use lode_engine::EsError;
use prometheus::proto::MetricFamily;
use serde_json::{json, Value};

/// The console's files: name under `/_lode/`, media type, contents.
const ASSETS: &[(&str, &str, &[u8])] = &[
    (
        "index.html",
        "text/html; charset=utf-8",
        include_bytes!("../console/index.html"),
    ),
    (
        "console.css",
        "text/css; charset=utf-8",
        include_bytes!("../console/console.css"),
    ),
    (
        "console.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../console/console.js"),
    ),
];

/// Nothing from elsewhere: scripts, styles and requests go to this node only.
const CSP: &str = "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'";

/// What a `/_lode...` request is answered with.
#[derive(Debug)]
pub(crate) enum Served {
    /// `/_lode` → `/_lode/` (relative asset URLs resolve under the directory).
    Redirect(String),
    Asset(&'static str, &'static [u8]),
    HttpStats,
    Error(EsError),
}

/// Whether a path (percent-decoded segments) belongs to the console.
pub(crate) fn is_console<S: AsRef<str>>(segs: &[S]) -> bool {
    segs.first().is_some_and(|s| s.as_ref() == "_lode")
}

/// Resolves a console request from its method, raw path and query string.
pub(crate) fn resolve(method: &HttpMethod, path: &str, query: Option<&str>) -> Served {
    if method != HttpMethod::GET && method != HttpMethod::HEAD {
        return Served::Error(EsError::new(
            405,
            "method_not_allowed",
            format!("Incorrect HTTP method for uri [{path}] and method [{method}], allowed: [GET]"),
        ));
    }
    let rest = path.strip_prefix("/_lode").unwrap_or(path);
    if rest.is_empty() {
        let location = match query {
            Some(q) => format!("/_lode/?{q}"),
            None => "/_lode/".to_string(),
        };
        return Served::Redirect(location);
    }
    let name = rest.trim_start_matches('/');
    if name.is_empty() {
        return asset("index.html").expect("the index page is compiled in");
    }
    if name == "api/http_stats" {
        return Served::HttpStats;
    }
    asset(name).unwrap_or_else(|| {
        Served::Error(EsError::new(
            404,
            "resource_not_found_exception",
            format!("no console resource at [{path}]"),
        ))
    })
}

fn asset(name: &str) -> Option<Served> {
    ASSETS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, ct, bytes)| Served::Asset(ct, bytes))
}

/// Answers a console request (the caller checked `is_console`).
/// `http` gathers the HTTP metric families, only for `api/http_stats`.
pub(crate) fn serve(
    req: &Request<Body>,
    http: impl FnOnce() -> Vec<MetricFamily>,
) -> Response<Body> {
    let head = req.method() == HttpMethod::HEAD;
    let params = crate::parse_query_string(req.uri().query());
    match resolve(req.method(), req.uri().path(), req.uri().query()) {
        Served::Redirect(location) => {
            let mut resp = Response::new(Body::empty());
            *resp.status_mut() = StatusCode::MOVED_PERMANENTLY;
            let h = resp.headers_mut();
            h.insert(
                "location",
                HeaderValue::from_str(&location).unwrap_or(HeaderValue::from_static("/_lode/")),
            );
            h.insert("content-length", HeaderValue::from(0));
            resp
        }
        Served::Asset(ct, bytes) => {
            let mut resp = Response::new(if head {
                Body::empty()
            } else {
                Body::from(bytes)
            });
            let h = resp.headers_mut();
            h.insert("content-type", HeaderValue::from_static(ct));
            h.insert("content-length", HeaderValue::from(bytes.len()));
            h.insert("cache-control", HeaderValue::from_static("no-cache"));
            h.insert(
                "x-content-type-options",
                HeaderValue::from_static("nosniff"),
            );
            // The page loads nothing but itself and talks only to this node.
            h.insert("content-security-policy", HeaderValue::from_static(CSP));
            resp
        }
        Served::HttpStats => crate::render(RestResponse::ok(http_stats(&http())), &params, head),
        Served::Error(e) => crate::render(RestResponse::error(&e), &params, head),
    }
}

/// The request latency histograms as JSON: the bucket bounds once, then per endpoint and
/// method the count, the sum, the cumulative bucket counts, and p50/p90/p99 since start
/// (interpolated within buckets, as Prometheus' `histogram_quantile`).
pub(crate) fn http_stats(families: &[MetricFamily]) -> Value {
    let mut endpoints = Vec::new();
    for family in families
        .iter()
        .filter(|f| f.name() == "lode_http_request_duration_seconds")
    {
        for m in family.get_metric() {
            let label = |name: &str| {
                m.get_label()
                    .iter()
                    .find(|l| l.name() == name)
                    .map(|l| l.value().to_string())
                    .unwrap_or_default()
            };
            let h = m.get_histogram();
            let count = h.get_sample_count();
            let cumulative: Vec<u64> = h
                .get_bucket()
                .iter()
                .map(|b| b.cumulative_count())
                .collect();
            let q = |p: f64| quantile(p, crate::metrics::LATENCY_BUCKETS, &cumulative, count);
            endpoints.push(json!({
                "endpoint": label("endpoint"),
                "method": label("method"),
                "count": count,
                "sum_seconds": h.get_sample_sum(),
                "buckets": cumulative,
                "p50_ms": q(0.5) * 1000.0,
                "p90_ms": q(0.9) * 1000.0,
                "p99_ms": q(0.99) * 1000.0,
            }));
        }
    }
    json!({
        "bucket_bounds_seconds": crate::metrics::LATENCY_BUCKETS,
        "endpoints": endpoints,
    })
}

/// The `p` quantile of a histogram given by its upper bounds and cumulative counts (`total`
/// includes the observations above the last bound): linear within the bucket holding the
/// rank, the last bound when the rank is beyond it, 0 for no observation.
pub(crate) fn quantile(p: f64, bounds: &[f64], cumulative: &[u64], total: u64) -> f64 {
    if total == 0 {
        return 0.0;
    }
    let rank = p * total as f64;
    let mut prev_bound = 0.0;
    let mut prev_count = 0u64;
    for (bound, &count) in bounds.iter().zip(cumulative) {
        if count as f64 >= rank && count > prev_count {
            let within = (rank - prev_count as f64) / (count - prev_count) as f64;
            return prev_bound + (bound - prev_bound) * within.clamp(0.0, 1.0);
        }
        prev_bound = *bound;
        prev_count = count;
    }
    bounds.last().copied().unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(path: &str) -> Served {
        resolve(&HttpMethod::GET, path, None)
    }

    #[test]
    fn assets_have_their_media_types() {
        match get("/_lode/") {
            Served::Asset(ct, body) => {
                assert_eq!(ct, "text/html; charset=utf-8");
                assert!(std::str::from_utf8(body).unwrap().contains("<title>"));
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(get("/_lode/console.css"), Served::Asset(ct, _) if ct.starts_with("text/css"))
        );
        assert!(
            matches!(get("/_lode/console.js"), Served::Asset(ct, _) if ct.starts_with("text/javascript"))
        );
        assert!(
            matches!(get("/_lode/index.html"), Served::Asset(ct, _) if ct.starts_with("text/html"))
        );
        assert!(matches!(get("/_lode/api/http_stats"), Served::HttpStats));
    }

    #[test]
    fn the_bare_path_redirects_to_the_directory() {
        assert!(matches!(get("/_lode"), Served::Redirect(l) if l == "/_lode/"));
        assert!(matches!(
            resolve(&HttpMethod::GET, "/_lode", Some("a=1")),
            Served::Redirect(l) if l == "/_lode/?a=1"
        ));
    }

    #[test]
    fn unknown_assets_and_other_methods_are_es_errors() {
        for path in ["/_lode/nope.js", "/_lode/api/other", "/_lode/../etc/passwd"] {
            match get(path) {
                Served::Error(e) => assert_eq!(
                    (e.status, e.kind.as_str()),
                    (404, "resource_not_found_exception")
                ),
                other => panic!("{path}: {other:?}"),
            }
        }
        match resolve(&HttpMethod::POST, "/_lode/", None) {
            Served::Error(e) => {
                assert_eq!((e.status, e.kind.as_str()), (405, "method_not_allowed"))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn served_responses_carry_status_and_headers() {
        let req = |m: HttpMethod, p: &str| {
            Request::builder()
                .method(m)
                .uri(p)
                .body(Body::empty())
                .unwrap()
        };
        let r = serve(&req(HttpMethod::GET, "/_lode"), Vec::new);
        assert_eq!(r.status(), 301);
        assert_eq!(r.headers()["location"], "/_lode/");
        let r = serve(&req(HttpMethod::GET, "/_lode/console.js"), Vec::new);
        assert_eq!(r.status(), 200);
        assert_eq!(
            r.headers()["content-type"],
            "text/javascript; charset=utf-8"
        );
        let csp = r.headers()["content-security-policy"].to_str().unwrap();
        assert!(csp.starts_with("default-src 'self'"), "{csp}");
        let r = serve(&req(HttpMethod::GET, "/_lode/missing"), Vec::new);
        assert_eq!(r.status(), 404);
        assert_eq!(r.headers()["content-type"], "application/json");
        let r = serve(&req(HttpMethod::GET, "/_lode/api/http_stats"), Vec::new);
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["content-type"], "application/json");
    }

    #[test]
    fn quantiles_interpolate_within_buckets() {
        let bounds = [1.0, 2.0, 4.0];
        assert_eq!(quantile(0.5, &bounds, &[0, 0, 0], 0), 0.0);
        // 10 observations, all in (1, 2]
        assert_eq!(quantile(0.5, &bounds, &[0, 10, 10], 10), 1.5);
        assert_eq!(quantile(1.0, &bounds, &[0, 10, 10], 10), 2.0);
        // half in [0, 1], half in (2, 4]
        assert_eq!(quantile(0.25, &bounds, &[5, 5, 10], 10), 0.5);
        assert_eq!(quantile(0.9, &bounds, &[5, 5, 10], 10), 3.6);
        // beyond the last bound
        assert_eq!(quantile(0.99, &bounds, &[0, 0, 1], 10), 4.0);
    }

    #[test]
    fn http_stats_lists_each_endpoint_with_its_buckets() {
        let m = crate::metrics::HttpMetrics::new();
        m.observe(
            "/{index}/_search",
            "POST",
            200,
            std::time::Duration::from_millis(3),
        );
        let v = http_stats(&m.gather());
        let e = &v["endpoints"][0];
        assert_eq!(e["endpoint"], "/{index}/_search");
        assert_eq!(e["method"], "POST");
        assert_eq!(e["count"], 1);
        assert_eq!(
            e["buckets"].as_array().unwrap().len(),
            crate::metrics::LATENCY_BUCKETS.len()
        );
        let p50 = e["p50_ms"].as_f64().unwrap();
        assert!(p50 > 2.5 && p50 <= 5.0, "{p50}");
    }
}
