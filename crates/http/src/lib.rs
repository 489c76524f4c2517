//! The HTTP layer: Elasticsearch's wire format. Routing, query-string and body handling,
//! `pretty` and `filter_path`, response headers (`X-Elastic-Product`), body size limits,
//! and rendering every failure as Elasticsearch's error JSON. Handlers run on blocking
//! threads; nothing here knows about tantivy.

// `EsError` carries Elasticsearch's error details (extras, causes) by value; errors are the
// rare path, so the size of `Result<_, EsError>` is not worth boxing every error for.
#![allow(clippy::result_large_err)]

pub mod connections;
mod console;
mod endpoint;
mod filter_path;
mod human;
pub mod inline;
mod metrics;
mod routes;
pub mod security;

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
    /// How many handlers may run at once on the I/O runtime's own threads (see `inline`).
    pub inline_handlers: usize,
    /// The security gate (`xpack.security.enabled`); `None`: no gate is installed.
    pub security: Option<Arc<security::Security>>,
}

/// The axum application serving every Elasticsearch route.
pub fn app(state: Arc<AppState>) -> axum::Router {
    let router = axum::Router::new()
        .fallback(handle)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            metrics::record,
        ));
    // Security is a gate before everything else (the metrics and console routes included);
    // without it, no layer is installed, so a node without security pays nothing per request.
    let router = match &state.security {
        Some(sec) => router.layer(axum::middleware::from_fn_with_state(
            sec.clone(),
            security::gate,
        )),
        None => router,
    };
    router.with_state(state)
}

pub(crate) fn decode(s: &str) -> String {
    percent_decode_str(s).decode_utf8_lossy().to_string()
}

pub(crate) fn parse_query_string(q: Option<&str>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Some(q) = q {
        for pair in q.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            out.insert(decode(&k.replace('+', " ")), decode(&v.replace('+', " ")));
        }
    }
    out
}

/// The query string's parameters decoded as Elasticsearch's `RestUtils#decodeQueryString`
/// decodes them: a malformed `%` escape refuses the request (ES's `BadParameterException`,
/// 400 `bad_parameter_exception` wrapping the `illegal_argument_exception`), where
/// [`parse_query_string`] keeps it as text.
pub(crate) fn parse_query_string_strict(
    q: Option<&str>,
) -> Result<BTreeMap<String, String>, EsError> {
    let mut out = BTreeMap::new();
    if let Some(q) = q {
        for pair in q.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let bad = |reason: String| {
                EsError::bad_request(
                    "bad_parameter_exception",
                    format!("java.lang.IllegalArgumentException: {reason}"),
                )
                .caused_by(EsError::illegal_argument(reason))
            };
            let k = decode_component(k).map_err(bad)?;
            let v = decode_component(v).map_err(bad)?;
            out.insert(k, v);
        }
    }
    Ok(out)
}

/// `RestUtils#decodeComponent` of a query-string component: `+` is a space, `%XX` a byte
/// (the bytes are UTF-8, malformed sequences replaced), and a `%` that does not start two hex
/// digits is refused with ES's message. Written by hand because `percent_encoding` decodes
/// leniently (a bad escape stays as text) and cannot report one.
fn decode_component(s: &str) -> Result<String, String> {
    if !s.contains(['%', '+']) {
        return Ok(s.to_string());
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' => {
                if i == b.len() - 1 {
                    return Err(format!(
                        "unterminated escape sequence at end of string: {s}"
                    ));
                }
                i += 1;
                if b[i] == b'%' {
                    out.push(b'%');
                } else {
                    if i == b.len() - 1 {
                        return Err(format!("partial escape sequence at end of string: {s}"));
                    }
                    let hex = |c: u8| (c as char).to_digit(16);
                    match (hex(b[i]), hex(b[i + 1])) {
                        (Some(h), Some(l)) => out.push((h * 16 + l) as u8),
                        _ => {
                            let seq = String::from_utf8_lossy(&b[i..i + 2]);
                            return Err(format!(
                                "invalid escape sequence `%{seq}' at index {} of: {s}",
                                i - 1
                            ));
                        }
                    }
                    i += 1;
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
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
    let params = match parse_query_string_strict(req.uri().query()) {
        Ok(p) => p,
        Err(e) => return render(error_response(&e), &BTreeMap::new(), method == Method::Head),
    };
    let probe = req
        .extensions()
        .get::<axum::extract::ConnectInfo<connections::ConnInfo>>()
        .map(|c| c.0.probe.clone());
    let headers = req.headers().clone();
    // Set by the security gate: whose request this is, for the checks that need the body.
    let subject = req.extensions().get::<Arc<security::Subject>>().cloned();
    let content_length = headers
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if let Some(len) = content_length {
        if len > state.max_content_length {
            return too_large(len, state.max_content_length, &params);
        }
    }
    // The `in_flight_requests` breaker holds the body's bytes while the request is handled
    // (ES's `<http_request>`): a declared length is charged before the body is read, a chunked
    // body once read, and both before it is parsed.
    let breakers = lode_engine::breaker::service();
    let in_flight_kind = lode_engine::breaker::Kind::InFlightRequests;
    let mut in_flight = breakers.empty(in_flight_kind);
    if let Some(len) = content_length.filter(|&l| l > 0) {
        if let Err(e) = in_flight.grow(len as i64, "<http_request>") {
            // Read and drop the body (nothing is kept), so the client, still sending, gets
            // the answer instead of a broken connection.
            drain_body(req.into_body()).await;
            return render(error_response(&e), &params, method == Method::Head);
        }
    }
    let body = match collect_body(req.into_body(), state.max_content_length).await {
        Ok(b) => b,
        Err(e) => return render(error_response(&e), &params, false),
    };
    if content_length.is_none() && !body.is_empty() {
        if let Err(e) = in_flight.grow(body.len() as i64, "<http_request>") {
            return render(error_response(&e), &params, method == Method::Head);
        }
    }
    // As ES's RestController, the Content-Type is checked only on a request with content
    // (the body of the `source` parameter has its `source_content_type`, checked below).
    if !body.is_empty() {
        if let Some(r) = content_type_refusal(header_str(&headers, "content-type")) {
            return render(r, &params, method == Method::Head);
        }
    }
    // ES's `source` parameter: the body, for clients that cannot send one with GET.
    let body = match params.get("source") {
        Some(source) if !body.iter().any(|b| !b.is_ascii_whitespace()) => {
            match params.get("source_content_type") {
                Some(ct) => match content_type_refusal(Some(ct)) {
                    None => source.clone().into_bytes(),
                    Some(r) => return render(r, &params, method == Method::Head),
                },
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
    let compat = match compatible_version(
        header_str(&headers, "accept"),
        header_str(&headers, "content-type"),
        !body.is_empty(),
    ) {
        Ok(v) => v,
        Err(e) => return render(error_response(&e), &params, method == Method::Head),
    };
    let segs: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(decode)
        .collect();
    let is_head = method == Method::Head;
    // Requests whose indices are in the body (`_bulk`, `_mget`, `_msearch`, alias changes)
    // are authorized item by item once the body is read.
    let mut item_failures = None;
    let body = match (&subject, &state.security) {
        (Some(subject), Some(sec)) => {
            let seg_refs: Vec<&str> = segs.iter().map(String::as_str).collect();
            match security::classify(&method_of(method), &seg_refs) {
                security::Target::Items(action) => {
                    match security::items::check(&sec.node, subject, action, &segs, body) {
                        security::items::Outcome::Proceed {
                            body,
                            failures,
                            list,
                        } => {
                            item_failures = Some((failures, list));
                            body
                        }
                        security::items::Outcome::Answer(r) => return render(r, &params, is_head),
                        security::items::Outcome::Deny(e) => {
                            return security::error_response(&e, &params)
                        }
                    }
                }
                security::Target::Authenticated if segs.first().is_some_and(|s| s == "_search") => {
                    let ids = security::scroll_ids(&segs, &params, &body);
                    if let Err(e) = sec.check_scrolls(subject, &ids) {
                        return render(error_response(&e), &params, is_head);
                    }
                    if method == Method::Delete {
                        sec.forget_scrolls(&ids);
                    }
                    body
                }
                _ => body,
            }
        }
        _ => body,
    };
    // who opens a scroll owns it (search or scroll responses carrying `_scroll_id`)
    let scroll_owner = match (&subject, &state.security) {
        (Some(subject), Some(sec))
            if params.contains_key("scroll") || segs.get(1).is_some_and(|s| s == "scroll") =>
        {
            Some((subject.clone(), sec.clone()))
        }
        _ => None,
    };
    let rest = RestRequest {
        doc_security: subject.as_ref().filter(|s| s.has_dls()).map(|s| {
            let s = s.clone();
            lode_api::rest::DocSecurity(Arc::new(move |index: &str, aliases: &[String]| {
                s.doc_filter(index, aliases)
            }))
        }),
        field_security: subject.as_ref().filter(|s| s.has_fls()).map(|s| {
            let s = s.clone();
            lode_api::rest::FieldSecurity(Arc::new(
                move |action: &str, index: &str, aliases: &[String]| {
                    s.field_permissions(action, index, aliases)
                },
            ))
        }),
        authorized: subject.as_ref().map(|s| {
            let (s, d) = (s.clone(), s.clone());
            lode_api::rest::IndexAuthorization(
                Arc::new(move |action: &str, name: &str| s.can_index(action, name)),
                Arc::new(move |action: &str, names: &[String]| d.index_denied(action, names)),
            )
        }),
        method,
        path: path.clone(),
        params: params.clone(),
        body,
    };
    // Admission by the API's thread pool (ES's `search`, `write`, `get`, `management`, ...):
    // waits in the pool's queue while its slots are taken, refused with a 429 when it is full.
    let api = routes::api_of(&state.node, &state.info, &segs, &rest).map(|api| api.api);
    let pool = api
        .map(lode_api::thread_pool::pool_for_api)
        .unwrap_or(lode_api::thread_pool::MANAGEMENT);
    // Searches run as cancellable tasks (`GET /_tasks`, `_cancel`). As ES's
    // RestCancellableNodeClient, a client that closes its connection cancels its search: hyper
    // drops this future, and the guard's drop sets the task's token.
    let task = api.and_then(|api| {
        lode_api::tasks::start_request_task(api, &segs, &rest, header_str(&headers, "x-opaque-id"))
    });
    let closed = CancelOnDrop(task.as_ref().map(|t| t.token()));
    let running = match state
        .info
        .pools
        .get(pool)
        .admit(&format!("[{} {}]", req_method_name(method), path))
        .await
    {
        Ok(r) => r,
        Err(e) => return render(error_response(&e), &params, is_head),
    };
    // A search or a get runs on this I/O thread when one of the inline slots is free: handing
    // it to a blocking thread and back costs two thread switches, about half the CPU of a
    // cheap request. A slot is always left to the runtime, so long handlers never stop it.
    let inline_slot = if matches!(
        pool,
        lode_api::thread_pool::SEARCH | lode_api::thread_pool::GET
    ) {
        inline::InlineSlot::take(state.inline_handlers)
    } else {
        None
    };
    if let (Some(_), Some(t), Some(probe)) = (&inline_slot, &task, probe) {
        // Hyper cannot drop this future while the handler runs on its thread: the token
        // watches the socket instead. Its first probe comes once the handler has run a
        // while: from then on each probe frees the tasks queued on this worker (`inline`).
        t.token().set_close_probe(Box::new(move || {
            inline::hand_off_worker();
            probe.client_closed()
        }));
    }
    let st = state.clone();
    let work = move || {
        // The pool's slot is held while the handler runs (not while its durability waits).
        let _running = running;
        // Durability waits are handed back instead of blocking this thread (see
        // lode_engine::durability); the response leaves only once they are done.
        let (out, pending) = lode_engine::durability::deferred(|| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match &task {
                Some(t) => t.run(|| routes::route(&st.node, &st.info, &segs, &rest)),
                None => routes::route(&st.node, &st.info, &segs, &rest),
            }))
        });
        // The task leaves the registry as its handler returns.
        drop(task);
        let response = match out {
            Ok(Ok(r)) => {
                if let Some((subject, sec)) = &scroll_owner {
                    sec.record_scroll(subject, &r);
                }
                match item_failures {
                    Some((failures, list)) => security::items::merge(r, failures, list),
                    None => r,
                }
            }
            Ok(Err(e)) => error_response(&e),
            Err(_) => error_response(&EsError::internal(
                "internal error while handling the request",
            )),
        };
        (response, pending)
    };
    let handled = match inline_slot {
        // A long handler gets another worker woken for the I/O driver (`inline::watch`).
        Some(_slot) => Ok(work()),
        None => tokio::task::spawn_blocking(work).await,
    };
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
    closed.disarm();
    if result.status >= 500 {
        tracing::warn!(path = %path, status = result.status, "request failed");
    }
    let mut response = render(result, &params, is_head);
    drop(in_flight);
    if let Some(version) = compat {
        // ES answers a compatible-with request in the same vendor media type.
        if response
            .headers()
            .get("content-type")
            .is_some_and(|v| v == "application/json")
        {
            response.headers_mut().insert(
                "content-type",
                HeaderValue::from_str(&format!(
                    "application/vnd.elasticsearch+json;compatible-with={version}"
                ))
                .expect("a valid header value"),
            );
        }
    }
    response
}

/// Cancels a request's task when dropped armed: the response future was dropped before the
/// handler answered, i.e. the client closed its connection.
struct CancelOnDrop(Option<lode_engine::cancel::CancelToken>);

impl CancelOnDrop {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(token) = self.0.take() {
            token.cancel("channel closed");
        }
    }
}

fn method_of(m: Method) -> HttpMethod {
    match m {
        Method::Get => HttpMethod::GET,
        Method::Head => HttpMethod::HEAD,
        Method::Post => HttpMethod::POST,
        Method::Put => HttpMethod::PUT,
        Method::Delete => HttpMethod::DELETE,
    }
}

fn req_method_name(m: Method) -> &'static str {
    match m {
        Method::Get => "GET",
        Method::Head => "HEAD",
        Method::Post => "POST",
        Method::Put => "PUT",
        Method::Delete => "DELETE",
    }
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The `compatible-with` versions Lode serves: 7 and 8 as Elasticsearch 8 does, and 9 as
/// Elasticsearch 9 does (the 9.x clients send `compatible-with=9`; the APIs Lode implements
/// answer a 9-compatible request as they answer an 8-compatible one, as ES 9 does).
const COMPATIBLE_VERSIONS: std::ops::RangeInclusive<u8> = 7..=9;
/// The version a request without `compatible-with` asks for.
const CURRENT_VERSION: u8 = 8;

/// The `compatible-with` parameter of an `Accept` or `Content-Type` header, if any. An
/// `Accept` list is searched element by element: the JavaScript client sends
/// `application/vnd.elasticsearch+json; compatible-with=8,text/plain`, and its version is the
/// one of the JSON element.
fn compatible_with(header: Option<&str>) -> Option<&str> {
    header?.split(',').find_map(|media_type| {
        media_type.split(';').skip(1).find_map(|p| {
            let (k, v) = p.split_once('=')?;
            k.trim()
                .eq_ignore_ascii_case("compatible-with")
                .then(|| v.trim().trim_matches('"'))
        })
    })
}

/// The REST API version a request asks for through `compatible-with` on its `Accept` and
/// `Content-Type` headers, checked as Elasticsearch's
/// `RestCompatibleVersionHelper` checks it: each version must be one Lode serves, and a
/// request with a body must ask for the same version on both headers or on neither. A
/// failure is ES's 400 `media_type_header_exception` caused by a `status_exception`. The
/// version is returned when `Accept` names one (the answer is then in that vendor media type).
fn compatible_version(
    accept: Option<&str>,
    content_type: Option<&str>,
    has_content: bool,
) -> Result<Option<u8>, EsError> {
    let parse = |header: Option<&str>, name: &str| -> Result<Option<u8>, EsError> {
        match compatible_with(header) {
            None => Ok(None),
            Some(v) => v.parse::<u8>().map(Some).map_err(|_| {
                EsError::bad_request(
                    "media_type_header_exception",
                    format!("Invalid media-type value on headers [{name}]"),
                )
                .caused_by(EsError::illegal_argument(format!(
                    "invalid parameters for header [{}]",
                    header.unwrap_or("")
                )))
            }),
        }
    };
    let a = parse(accept, "Accept")?;
    let c = parse(content_type, "Content-Type")?;
    if a.is_none() && c.is_none() {
        return Ok(None);
    }
    let failed = |reason: String| {
        EsError::bad_request(
            "media_type_header_exception",
            "Invalid media-type value on headers [Accept, Content-Type]",
        )
        .caused_by(EsError::bad_request("status_exception", reason))
    };
    let supported = || {
        let v: Vec<String> = COMPATIBLE_VERSIONS.rev().map(|v| v.to_string()).collect();
        format!("{} or {}", v[..v.len() - 1].join(", "), v[v.len() - 1])
    };
    let accept_version = a.unwrap_or(CURRENT_VERSION);
    if !COMPATIBLE_VERSIONS.contains(&accept_version) {
        return Err(failed(format!(
            "Accept version must be either version {}, but found {accept_version}. Accept={}",
            supported(),
            accept.unwrap_or("")
        )));
    }
    if has_content {
        let content_version = c.unwrap_or(CURRENT_VERSION);
        if !COMPATIBLE_VERSIONS.contains(&content_version) {
            return Err(failed(format!(
                "Content-Type version must be either version {}, but found {content_version}. Content-Type={}",
                supported(),
                content_type.unwrap_or("")
            )));
        }
        if content_version != accept_version {
            return Err(failed(format!(
                "A compatible version is required on both Content-Type and Accept headers if either one has requested a compatible version and the compatible versions must match. Accept={}, Content-Type={}",
                accept.unwrap_or("null"),
                content_type.unwrap_or("null")
            )));
        }
        if a.is_none() != c.is_none() {
            return Err(failed(format!(
                "A compatible version is required on both Content-Type and Accept headers if either one has requested a compatible version. Accept={}, Content-Type={}",
                accept.unwrap_or("null"),
                content_type.unwrap_or("null")
            )));
        }
    }
    // The answer's media type follows Accept: only a versioned Accept gets a versioned answer.
    Ok(a.map(|_| accept_version))
}

fn too_large(len: usize, max: usize, params: &BTreeMap<String, String>) -> Response<Body> {
    render(error_response(&too_large_error(len, max)), params, false)
}

fn too_large_error(len: usize, max: usize) -> EsError {
    EsError::new(413, "content_too_long_exception", format!("request body of [{len}] bytes is larger than the limit [http.max_content_length] of [{max}] bytes"))
}

/// Reads a body to its end, keeping nothing.
async fn drain_body(mut body: Body) {
    while let Some(frame) = body.frame().await {
        if frame.is_err() {
            break;
        }
    }
}

/// Reads the body up to `max` bytes. Over the limit is ES's 413; a broken body (bad chunk
/// framing, the connection closed before Content-Length bytes) is the client's 400, not a
/// body over the limit (which is how every read error was reported before).
async fn collect_body(body: Body, max: usize) -> Result<Vec<u8>, EsError> {
    match http_body_util::Limited::new(body, max).collect().await {
        // A body of several chunks is joined into one buffer the `Vec` takes over (no second copy).
        Ok(b) => Ok(Vec::from(b.to_bytes())),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(too_large_error(max + 1, max)),
        Err(e) => Err(EsError::illegal_argument(format!(
            "failed to read the request body: {e}"
        ))),
    }
}

/// The media types of a request body Lode reads: ES's JSON family (`application/json`,
/// `application/x-ndjson`, ES's `application/*` alias of JSON, and the versioned
/// `application/vnd.elasticsearch+json` / `+x-ndjson` the official clients send). ES also reads
/// SMILE, CBOR and YAML bodies; Lode reads JSON only and refuses them as ES refuses a type it
/// does not know.
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
            | "application/*"
            | "application/vnd.elasticsearch+json"
            | "application/vnd.elasticsearch+x-ndjson"
    )
}

/// ES's answer to a body whose Content-Type it cannot read (`RestController`): no header is
/// 406 "Content-Type header is missing"; a well-formed type it does not read is 406
/// "Content-Type header [text/plain] is not supported", both in ES's simple error shape
/// (`{"error": "...", "status": 406}`); a value that is no media type at all (no `type/subtype`)
/// fails parsing the request (`RestRequest.MediaTypeHeaderException`): a 400
/// `media_type_header_exception`.
fn content_type_refusal(ct: Option<&str>) -> Option<RestResponse> {
    let simple = |reason: String| {
        RestResponse::json(406, serde_json::json!({"error": reason, "status": 406}))
    };
    let Some(ct) = ct else {
        return Some(simple("Content-Type header is missing".to_string()));
    };
    if acceptable_content_type(ct) {
        return None;
    }
    let base = ct.split(';').next().unwrap_or("").trim();
    let well_formed = base
        .split_once('/')
        .is_some_and(|(t, s)| !t.is_empty() && !s.is_empty() && !s.contains('/'));
    if !well_formed {
        let e = EsError::bad_request(
            "media_type_header_exception",
            "Invalid media-type value on headers [Content-Type]",
        )
        .caused_by(EsError::illegal_argument(format!(
            "invalid media-type [{ct}]"
        )));
        return Some(error_response(&e));
    }
    Some(simple(format!(
        "Content-Type header [{ct}] is not supported"
    )))
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

pub(crate) fn render(
    r: RestResponse,
    params: &BTreeMap<String, String>,
    head: bool,
) -> Response<Body> {
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

#[cfg(test)]
mod tests {
    #[test]
    fn query_strings_decode_as_restutils_does() {
        let p =
            super::parse_query_string_strict(Some("a=b+c&_source=%5Fid,%C3%A9&f=%%&flag")).unwrap();
        assert_eq!(p["a"], "b c");
        assert_eq!(p["_source"], "_id,\u{e9}");
        assert_eq!(p["f"], "%");
        assert_eq!(p["flag"], "");
        let e = super::parse_query_string_strict(Some("q=1&_source=%ZZ")).unwrap_err();
        assert_eq!(
            (e.status, e.kind.as_str()),
            (400, "bad_parameter_exception")
        );
        assert_eq!(
            e.reason,
            "java.lang.IllegalArgumentException: invalid escape sequence `%ZZ' at index 0 of: %ZZ"
        );
        let cause = e.caused_by.unwrap();
        assert_eq!(cause.kind, "illegal_argument_exception");
        assert_eq!(
            cause.reason,
            "invalid escape sequence `%ZZ' at index 0 of: %ZZ"
        );
        let e = super::decode_component("ab%4x").unwrap_err();
        assert_eq!(e, "invalid escape sequence `%4x' at index 2 of: ab%4x");
        assert_eq!(
            super::decode_component("fo%").unwrap_err(),
            "unterminated escape sequence at end of string: fo%"
        );
        assert_eq!(
            super::decode_component("f%4").unwrap_err(),
            "partial escape sequence at end of string: f%4"
        );
    }

    use super::*;

    const V8: &str = "application/vnd.elasticsearch+json; compatible-with=8";
    const V9: &str = "application/vnd.elasticsearch+json; compatible-with=9";

    fn cause(e: &EsError) -> (&str, &str) {
        let c = e.caused_by.as_ref().expect("a cause");
        (c.kind.as_str(), c.reason.as_str())
    }

    #[test]
    fn compatible_versions_seven_to_nine_are_served() {
        assert_eq!(compatible_version(None, None, true).unwrap(), None);
        assert_eq!(
            compatible_version(Some("application/json"), Some("application/json"), true).unwrap(),
            None
        );
        assert_eq!(
            compatible_version(Some(V8), Some(V8), true).unwrap(),
            Some(8)
        );
        assert_eq!(
            compatible_version(Some(V9), Some(V9), true).unwrap(),
            Some(9)
        );
        // elasticsearch-py 9 sends a versioned Content-Type on body-less requests too
        assert_eq!(compatible_version(Some(V9), None, false).unwrap(), Some(9));
        // the JavaScript client's Accept is a list
        let js = "application/vnd.elasticsearch+json; compatible-with=8,text/plain";
        assert_eq!(
            compatible_version(Some(js), Some(V8), true).unwrap(),
            Some(8)
        );
        let v7 = "application/vnd.elasticsearch+x-ndjson;compatible-with=7";
        assert_eq!(
            compatible_version(Some(v7), Some(v7), true).unwrap(),
            Some(7)
        );
    }

    #[test]
    fn unsupported_versions_are_refused_as_elasticsearch_does() {
        let v10 = "application/vnd.elasticsearch+json;compatible-with=10";
        let e = compatible_version(Some(v10), None, false).unwrap_err();
        assert_eq!(
            (e.status, e.kind.as_str()),
            (400, "media_type_header_exception")
        );
        assert_eq!(
            e.reason,
            "Invalid media-type value on headers [Accept, Content-Type]"
        );
        assert_eq!(
            cause(&e),
            (
                "status_exception",
                "Accept version must be either version 9, 8 or 7, but found 10. \
                 Accept=application/vnd.elasticsearch+json;compatible-with=10"
            )
        );
        let v6 = "application/vnd.elasticsearch+json;compatible-with=6";
        let e = compatible_version(Some(V8), Some(v6), true).unwrap_err();
        assert!(cause(&e)
            .1
            .starts_with("Content-Type version must be either version 9, 8 or 7, but found 6."));
        // without a body the Content-Type is not looked at
        assert_eq!(
            compatible_version(Some(V8), Some(v6), false).unwrap(),
            Some(8)
        );
    }

    #[test]
    fn versions_must_match_and_be_on_both_headers() {
        let e = compatible_version(Some(V8), Some(V9), true).unwrap_err();
        assert_eq!(
            cause(&e).1,
            format!(
                "A compatible version is required on both Content-Type and Accept headers if \
                 either one has requested a compatible version and the compatible versions \
                 must match. Accept={V8}, Content-Type={V9}"
            )
        );
        let e = compatible_version(Some(V8), Some("application/json"), true).unwrap_err();
        assert_eq!(
            cause(&e).1,
            format!(
                "A compatible version is required on both Content-Type and Accept headers if \
                 either one has requested a compatible version. Accept={V8}, \
                 Content-Type=application/json"
            )
        );
        // an unversioned Accept means the current version: 9 in the Content-Type mismatches
        let e = compatible_version(None, Some(V9), true).unwrap_err();
        assert!(cause(&e)
            .1
            .contains("the compatible versions must match. Accept=null"));
    }

    #[test]
    fn a_non_numeric_version_is_an_invalid_header() {
        let bad = "application/vnd.elasticsearch+json;compatible-with=x";
        let e = compatible_version(Some(bad), None, false).unwrap_err();
        assert_eq!(e.reason, "Invalid media-type value on headers [Accept]");
        assert_eq!(
            cause(&e),
            (
                "illegal_argument_exception",
                "invalid parameters for header [application/vnd.elasticsearch+json;compatible-with=x]"
            )
        );
    }
}

#[cfg(test)]
mod body_tests {
    use super::*;

    fn run<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn a_broken_body_is_a_400_and_an_oversized_one_a_413() {
        let ok = run(collect_body(Body::from("{}"), 10)).unwrap();
        assert_eq!(ok, b"{}");
        let e = run(collect_body(Body::from("x".repeat(11)), 10)).unwrap_err();
        assert_eq!(
            (e.status, e.kind.as_str()),
            (413, "content_too_long_exception")
        );
        // a body that fails mid-way, as hyper's does on bad chunks or an early EOF
        let e = run(collect_body(Body::new(Broken(false)), 1 << 20)).unwrap_err();
        assert_eq!(
            (e.status, e.kind.as_str()),
            (400, "illegal_argument_exception")
        );
        assert!(
            e.reason.starts_with("failed to read the request body"),
            "{}",
            e.reason
        );
    }

    struct Broken(bool);

    impl http_body::Body for Broken {
        type Data = bytes::Bytes;
        type Error = std::io::Error;

        fn poll_frame(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<http_body::Frame<bytes::Bytes>, std::io::Error>>>
        {
            if self.0 {
                let eof =
                    std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "connection closed");
                return std::task::Poll::Ready(Some(Err(eof)));
            }
            self.0 = true;
            std::task::Poll::Ready(Some(Ok(http_body::Frame::data(bytes::Bytes::from_static(
                b"{",
            )))))
        }
    }
}
