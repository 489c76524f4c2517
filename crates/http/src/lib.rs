//! The HTTP layer: Elasticsearch's wire format. Routing, query-string and body handling,
//! `pretty` and `filter_path`, response headers (`X-Elastic-Product`), body size limits,
//! and rendering every failure as Elasticsearch's error JSON. Handlers run on blocking
//! threads; nothing here knows about tantivy.

// `EsError` carries Elasticsearch's error details (extras, causes) by value; errors are the
// rare path, so the size of `Result<_, EsError>` is not worth boxing every error for.
#![allow(clippy::result_large_err)]

mod endpoint;
mod filter_path;
mod human;
mod metrics;
mod routes;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method as HttpMethod, Request, Response, StatusCode};
use http_body_util::BodyExt;
use lode_api::cluster::NodeInfo;
use lode_api::rest::{Method, RestBody, RestRequest, RestResponse};
use lode_engine::{EsError, Node};
use percent_encoding::percent_decode_str;
use std::collections::BTreeMap;
use std::sync::Arc;

pub struct AppState {
    pub node: Arc<Node>,
    pub info: NodeInfo,
    pub max_content_length: usize,
}

/// The axum application serving every Elasticsearch route.
pub fn app(state: Arc<AppState>) -> axum::Router {
    axum::Router::new()
        .fallback(handle)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            metrics::record,
        ))
        .with_state(state)
}

fn decode(s: &str) -> String {
    percent_decode_str(s).decode_utf8_lossy().to_string()
}

fn parse_query_string(q: Option<&str>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Some(q) = q {
        for pair in q.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            out.insert(decode(&k.replace('+', " ")), decode(&v.replace('+', " ")));
        }
    }
    out
}

fn error_response(e: &EsError) -> RestResponse {
    RestResponse::error(e)
}

async fn handle(State(state): State<Arc<AppState>>, req: Request<Body>) -> Response<Body> {
    let method = match *req.method() {
        HttpMethod::GET => Method::Get,
        HttpMethod::HEAD => Method::Head,
        HttpMethod::POST => Method::Post,
        HttpMethod::PUT => Method::Put,
        HttpMethod::DELETE => Method::Delete,
        _ => {
            let e = EsError::new(
                405,
                "method_not_allowed",
                format!(
                    "Incorrect HTTP method for uri [{}] and method [{}]",
                    req.uri().path(),
                    req.method()
                ),
            );
            return render(RestResponse::error(&e), &BTreeMap::new(), false);
        }
    };
    let path = req.uri().path().to_string();
    let params = parse_query_string(req.uri().query());
    let headers = req.headers().clone();
    if let Some(ct) = headers.get("content-type").and_then(|v| v.to_str().ok()) {
        if !acceptable_content_type(ct) {
            let e = EsError::new(
                406,
                "media_type_header_exception",
                format!("Content-Type header [{ct}] is not supported"),
            );
            return render(error_response(&e), &params, method == Method::Head);
        }
    }
    if let Some(len) = headers
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
    {
        if len > state.max_content_length {
            return too_large(len, state.max_content_length, &params);
        }
    }
    let limited = http_body_util::Limited::new(req.into_body(), state.max_content_length);
    let body = match limited.collect().await {
        Ok(b) => b.to_bytes().to_vec(),
        Err(_) => {
            return too_large(
                state.max_content_length + 1,
                state.max_content_length,
                &params,
            )
        }
    };
    // ES's `source` parameter: the body, for clients that cannot send one with GET.
    let body = match params.get("source") {
        Some(source) if !body.iter().any(|b| !b.is_ascii_whitespace()) => {
            match params.get("source_content_type") {
                Some(ct) if acceptable_content_type(ct) => source.clone().into_bytes(),
                Some(ct) => {
                    let e = EsError::new(
                        406,
                        "media_type_header_exception",
                        format!("Content-Type header [{ct}] is not supported"),
                    );
                    return render(error_response(&e), &params, method == Method::Head);
                }
                None => {
                    let e = EsError::bad_request(
                        "illegal_state_exception",
                        "source and source_content_type parameters are required",
                    );
                    return render(error_response(&e), &params, method == Method::Head);
                }
            }
        }
        _ => body,
    };
    let segs: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(decode)
        .collect();
    let is_head = method == Method::Head;
    let rest = RestRequest {
        method,
        path: path.clone(),
        params: params.clone(),
        body,
    };
    let st = state.clone();
    let handled = tokio::task::spawn_blocking(move || {
        // Durability waits are handed back instead of blocking this thread (see
        // lode_engine::durability); the response leaves only once they are done.
        let (out, pending) = lode_engine::durability::deferred(|| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                routes::route(&st.node, &st.info, &segs, &rest)
            }))
        });
        let response = match out {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => error_response(&e),
            Err(_) => error_response(&EsError::internal(
                "internal error while handling the request",
            )),
        };
        (response, pending)
    })
    .await;
    let result = match handled {
        Ok((response, pending)) if pending.is_empty() => response,
        Ok((response, pending)) => {
            let (tx, rx) = tokio::sync::oneshot::channel();
            pending.on_durable(Box::new(move |r| {
                let _ = tx.send(r);
            }));
            match rx.await {
                Ok(Ok(())) => response,
                Ok(Err(e)) => {
                    error_response(&EsError::internal(format!("translog sync failed: {e}")))
                }
                Err(_) => error_response(&EsError::internal("translog sync abandoned")),
            }
        }
        Err(_) => error_response(&EsError::internal("request handler failed")),
    };
    if result.status >= 500 {
        tracing::warn!(path = %path, status = result.status, "request failed");
    }
    render(result, &params, is_head)
}

fn too_large(len: usize, max: usize, params: &BTreeMap<String, String>) -> Response<Body> {
    let e = EsError::new(413, "content_too_long_exception", format!("request body of [{len}] bytes is larger than the limit [http.max_content_length] of [{max}] bytes"));
    render(error_response(&e), params, false)
}

fn acceptable_content_type(ct: &str) -> bool {
    let base = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    matches!(
        base.as_str(),
        "application/json"
            | "application/x-ndjson"
            | "application/vnd.elasticsearch+json"
            | "application/vnd.elasticsearch+x-ndjson"
            | "text/plain"
            | "application/x-www-form-urlencoded"
            | ""
            | "application/yaml"
            | "application/smile"
            | "application/cbor"
            | "text/x-ndjson"
            | "application/octet-stream"
    )
}

/// Serializes a JSON response, applying `human`, `filter_path` and `pretty`.
fn json_body(v: &serde_json::Value, params: &BTreeMap<String, String>, pretty: bool) -> Vec<u8> {
    let with_twins;
    let v = if flag(params, "human") {
        with_twins = {
            let mut t = v.clone();
            human::add_readable_fields(&mut t);
            t
        };
        &with_twins
    } else {
        v
    };
    let filtered;
    let v = match params.get("filter_path") {
        Some(fp) if !fp.is_empty() => {
            filtered = filter_path::apply(v, fp);
            &filtered
        }
        _ => v,
    };
    let mut out = if pretty {
        serde_json::to_vec_pretty(v).unwrap_or_default()
    } else {
        serde_json::to_vec(v).unwrap_or_default()
    };
    if pretty {
        out.push(b'\n');
    }
    out
}

/// A response flag: present with no value or any value but `false`.
fn flag(params: &BTreeMap<String, String>, name: &str) -> bool {
    params.get(name).is_some_and(|v| v != "false")
}

fn render(r: RestResponse, params: &BTreeMap<String, String>, head: bool) -> Response<Body> {
    let pretty = flag(params, "pretty");
    let mut headers = HeaderMap::new();
    headers.insert(
        "x-elastic-product",
        HeaderValue::from_static("Elasticsearch"),
    );
    let body: Vec<u8> = match r.body {
        RestBody::Json(v) => {
            headers.insert("content-type", HeaderValue::from_static("application/json"));
            json_body(&v, params, pretty)
        }
        RestBody::JsonBytes(bytes) => {
            headers.insert("content-type", HeaderValue::from_static("application/json"));
            let reshape = pretty
                || flag(params, "human")
                || params.get("filter_path").is_some_and(|fp| !fp.is_empty());
            match reshape.then(|| serde_json::from_slice::<serde_json::Value>(&bytes)) {
                Some(Ok(v)) => json_body(&v, params, pretty),
                _ => bytes,
            }
        }
        RestBody::Text(t) => {
            headers.insert(
                "content-type",
                HeaderValue::from_static("text/plain; charset=UTF-8"),
            );
            t.into_bytes()
        }
        RestBody::Empty => Vec::new(),
    };
    let status = StatusCode::from_u16(r.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let len = body.len();
    let mut resp = Response::new(if head {
        Body::empty()
    } else {
        Body::from(body)
    });
    *resp.status_mut() = status;
    *resp.headers_mut() = headers;
    resp.headers_mut()
        .insert("content-length", HeaderValue::from(len));
    resp
}
