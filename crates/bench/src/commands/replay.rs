//! `lode bench replay`: replays recorded requests at their recorded pace, a multiple of it, or
//! as fast as possible.
//!
//! The file holds one JSON object per line:
//! `{"method":"POST","path":"/accounts/_search","body":{...},"timestamp":"2024-05-01T10:00:00.123Z"}`.
//! `body` is an object (sent as JSON), an array (sent as NDJSON, one element per line, for
//! `_bulk` and `_msearch`), a string (sent as is) or absent. `timestamp` is optional: an
//! RFC 3339 string or a number of milliseconds. `kind` optionally names the report row;
//! otherwise requests are grouped by endpoint (`_search`, `_bulk`, `GET _doc`, ...).

use crate::cli::{parse_duration, OutputOpts};
use crate::http::Request;
use crate::pacing::{replay_offsets, Schedule};
use crate::report::{endpoint, KindInfo};
use crate::runner::{self, Pacing};
use crate::session::{emit, MeasureSpec, Session, Shape};
use crate::sources::ReplaySource;
use anyhow::{bail, Context, Result};
use hyper::Method;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Replay a file of recorded requests.
#[derive(clap::Args, Debug)]
pub struct ReplayArgs {
    /// Base URL of the server
    pub url: String,
    /// Recorded requests, one JSON object per line
    pub file: PathBuf,
    /// Play the recording this many times faster (0.5 = half speed)
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
    /// Ignore the timestamps: send as fast as the connections allow
    #[arg(long)]
    pub max_speed: bool,
    /// Connections (the most requests in flight)
    #[arg(short = 'c', long, default_value_t = 64)]
    pub concurrency: usize,
    /// A new TCP connection per request
    #[arg(long)]
    pub no_keepalive: bool,
    /// Per-request timeout
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub timeout: Duration,
    #[command(flatten)]
    pub out: OutputOpts,
}

/// One parsed line.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Report row.
    pub kind: String,
    /// The request.
    pub request: Request,
    /// Recorded time in milliseconds.
    pub timestamp_ms: Option<f64>,
}

fn parse_timestamp(v: &Value) -> Result<Option<f64>> {
    Ok(match v {
        Value::Null => None,
        Value::Number(n) => n.as_f64(),
        Value::String(s) => Some(
            chrono::DateTime::parse_from_rfc3339(s)
                .with_context(|| format!("bad timestamp {s:?} (RFC 3339 or milliseconds)"))?
                .timestamp_micros() as f64
                / 1000.0,
        ),
        other => bail!("bad timestamp {other}"),
    })
}

/// Parses one line of a replay file.
pub fn parse_line(line: &str) -> Result<Recorded> {
    let v: Value = serde_json::from_str(line)?;
    let method = v["method"].as_str().unwrap_or("GET").to_ascii_uppercase();
    let method = Method::from_bytes(method.as_bytes()).context("bad method")?;
    let mut path = v["path"].as_str().context("missing \"path\"")?.to_string();
    if !path.starts_with('/') {
        path.insert(0, '/');
    }
    let (body, ndjson) = match &v["body"] {
        Value::Null => (String::new(), false),
        Value::String(s) => (s.clone(), s.trim_end().contains('\n')),
        Value::Array(items) => (
            items.iter().map(|i| format!("{i}\n")).collect::<String>(),
            true,
        ),
        other => (other.to_string(), false),
    };
    let ts = v.get("timestamp").or_else(|| v.get("@timestamp"));
    let timestamp_ms = parse_timestamp(ts.unwrap_or(&Value::Null))?;
    let kind = v["kind"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| endpoint(method.as_str(), &path));
    let bulkish = path.contains("_bulk") || path.contains("_msearch");
    let request = if ndjson || bulkish {
        let mut body = body;
        if !body.is_empty() && !body.ends_with('\n') {
            body.push('\n');
        }
        Request {
            method,
            ..Request::ndjson(path, body)
        }
    } else {
        Request::json(method, path, body)
    };
    Ok(Recorded {
        kind,
        request,
        timestamp_ms,
    })
}

/// Reads a replay file.
pub fn read_file(path: &std::path::Path) -> Result<Vec<Recorded>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        out.push(parse_line(line).with_context(|| format!("{}:{}", path.display(), i + 1))?);
    }
    if out.is_empty() {
        bail!("{}: no requests", path.display());
    }
    Ok(out)
}

/// Groups the recorded requests into kinds, in order of first appearance.
pub fn source(recorded: &[Recorded]) -> ReplaySource {
    let mut kinds: Vec<KindInfo> = Vec::new();
    let mut entries = Vec::with_capacity(recorded.len());
    for r in recorded {
        let k = match kinds.iter().position(|k| k.name == r.kind) {
            Some(k) => k,
            None => {
                kinds.push(KindInfo {
                    name: r.kind.clone(),
                    method: r.request.method.to_string(),
                    path: r.request.path.clone(),
                });
                kinds.len() - 1
            }
        };
        entries.push((k, r.request.clone()));
    }
    ReplaySource { entries, kinds }
}

/// Runs `replay`.
pub async fn run(a: ReplayArgs) -> Result<()> {
    let recorded = read_file(&a.file)?;
    let src = source(&recorded);
    let n = recorded.len() as u64;
    let offsets = replay_offsets(
        &recorded.iter().map(|r| r.timestamp_ms).collect::<Vec<_>>(),
        a.speed,
    );
    let span = offsets.last().copied().unwrap_or_default();
    let paced = !a.max_speed && !span.is_zero();
    let session = Session::start(std::slice::from_ref(&a.url), &a.out).await?;
    let shape = Shape {
        concurrency: a.concurrency.max(1),
        duration: None,
        requests: Some(n),
        // For the report: the average recorded rate.
        rate: paced.then(|| n as f64 / span.as_secs_f64().max(1e-3)),
        arrival: crate::pacing::Arrival::Uniform,
        warmup: Duration::ZERO,
        keep_alive: !a.no_keepalive,
        timeout: a.timeout,
    };
    let pacing = if paced {
        Pacing::Open(Schedule::offsets(offsets))
    } else {
        Pacing::Closed {
            duration: None,
            requests: Some(n),
        }
    };
    let kinds = src.kinds.clone();
    let spec = MeasureSpec {
        name: "replay".into(),
        target: 0,
        source: Arc::new(src),
        kinds,
        shape: shape.clone(),
        seed: a.out.seed,
    };
    let conns = session.connections(0, &shape);
    let before = session.snapshot(0).await;
    let cfg = session.phase_config(a.out.seed, a.timeout, None);
    let result = runner::run_phase(spec.source.clone(), pacing, conns, &cfg).await;
    let after = session.snapshot(0).await;
    let phase = session.phase_report(&spec, &result, 0, &before, &after, vec![]);
    let settings = serde_json::json!({
        "file": a.file.display().to_string(),
        "requests": n,
        "speed": if paced { Value::from(a.speed) } else { Value::from("max") },
        "recorded_span_s": span.as_secs_f64() * if paced { a.speed } else { 1.0 },
        "concurrency": shape.concurrency,
        "keep_alive": shape.keep_alive,
    });
    let report = session
        .finish("replay", settings, vec![phase], vec![])
        .await;
    emit(&report, &a.out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lines() {
        let r = parse_line(
            r#"{"method":"post","path":"/a/_search","body":{"size":0},"timestamp":1500}"#,
        )
        .unwrap();
        assert_eq!(r.request.method, Method::POST);
        assert_eq!(r.kind, "_search");
        assert_eq!(&r.request.body[..], br#"{"size":0}"#);
        assert_eq!(r.timestamp_ms, Some(1500.0));
        let r = parse_line(r#"{"method":"POST","path":"_bulk","body":[{"index":{"_index":"a"}},{"x":1}],"timestamp":"2024-05-01T10:00:00.250Z"}"#).unwrap();
        assert_eq!(r.request.path, "/_bulk");
        assert_eq!(r.request.content_type, Some("application/x-ndjson"));
        assert_eq!(
            &r.request.body[..],
            b"{\"index\":{\"_index\":\"a\"}}\n{\"x\":1}\n"
        );
        assert_eq!(r.timestamp_ms, Some(1_714_557_600_250.0));
        let r = parse_line(r#"{"path":"/a/_doc/1","kind":"detail"}"#).unwrap();
        assert_eq!(
            (r.kind.as_str(), r.request.method.as_str()),
            ("detail", "GET")
        );
        assert!(r.request.body.is_empty() && r.timestamp_ms.is_none());
        assert!(parse_line(r#"{"method":"GET"}"#).is_err());
        assert!(parse_line(r#"{"path":"/","timestamp":"yesterday"}"#).is_err());
    }

    #[test]
    fn groups_kinds_in_order() {
        let lines = [
            r#"{"method":"POST","path":"/a/_search","body":{}}"#,
            r#"{"method":"GET","path":"/a/_doc/1"}"#,
            r#"{"method":"POST","path":"/a/_search","body":{"size":1}}"#,
        ];
        let rec: Vec<_> = lines.iter().map(|l| parse_line(l).unwrap()).collect();
        let s = source(&rec);
        assert_eq!(s.kinds.len(), 2);
        let ks: Vec<usize> = s.entries.iter().map(|e| e.0).collect();
        assert_eq!(ks, [0, 1, 0]);
    }
}
