//! The report model (serialized as the JSON report) and its construction from phase results.
//!
//! A [`Report`] holds one [`PhaseReport`] per measured phase (one per query in a suite, one
//! per target and query in compare mode, one for a mixed, write or replay run); a phase holds
//! one [`KindReport`] per kind of request. Renderers: [`text`] (ab-style tables) and [`html`]
//! (a self-contained page with inline SVG charts).

pub mod html;
pub mod svg;
pub mod text;

use crate::control::Counters;
use crate::histogram::{distribution, Percentiles};
use crate::monitor::{cpu_percent, ResourceSample, Snapshot};
use crate::runner::PhaseResult;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Instant;

/// A whole benchmark run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    /// Always `lode bench`.
    pub tool: String,
    /// Version of the tool.
    pub version: String,
    /// Subcommand (`search`, `compare`, `write`, `mixed`, `replay`).
    pub command: String,
    /// Start time (RFC 3339).
    pub started_at: String,
    /// Targets; phases refer to them by index.
    pub targets: Vec<TargetInfo>,
    /// The options of the run.
    pub settings: serde_json::Value,
    /// Measured phases.
    pub phases: Vec<PhaseReport>,
    /// Compare mode: one row per query, target B relative to target A.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comparison: Vec<ComparisonRow>,
    /// The client's own resource use.
    pub client: ClientReport,
    /// Server resources over the whole run, one list per target (seconds since the start).
    #[serde(default)]
    pub resources: Vec<Vec<ResourceSample>>,
    /// Warnings about the validity of the figures.
    pub warnings: Vec<String>,
    /// Command-specific results, e.g. `count_after` for writes.
    #[serde(default)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// A target server.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TargetInfo {
    /// Base URL (password masked).
    pub url: String,
    /// What `GET /` says, e.g. `opensearch 2.19.1`.
    pub server: Option<String>,
}

/// Something that happened during a phase (force merge, ...).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Event {
    /// Seconds since the phase start.
    pub t: f64,
    /// What happened.
    pub label: String,
}

/// One measured phase.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PhaseReport {
    /// Query name, or `write`, `mixed`, `replay`.
    pub name: String,
    /// Index into [`Report::targets`].
    pub target: usize,
    /// `closed` or `open` loop.
    pub pacing: String,
    /// Connection slots.
    pub concurrency: usize,
    /// HTTP keep-alive (false: a new connection per request).
    pub keep_alive: bool,
    /// Open loop: the intended rate in requests/s.
    pub rate: Option<f64>,
    /// Seconds from the run start to the phase start.
    pub start_s: f64,
    /// Seconds from the phase start to its last response.
    pub elapsed_s: f64,
    /// Requests sent during the warm-up before this phase (not counted anywhere else).
    pub warmup_requests: u64,
    /// Per kind of request.
    pub kinds: Vec<KindReport>,
    /// Server side during the phase (where the target exposes `_stats`/`_nodes/stats`).
    pub server: Option<ServerUsage>,
    /// Client CPU during the phase, percent of one core.
    pub client_cpu_pct: Option<f64>,
    /// TCP connections opened during the phase.
    pub connects: u64,
    /// Open loop: requests sent more than 1 ms late because every connection was busy.
    pub late_sends: u64,
    /// Open loop: 99th percentile of how late idle connections woke up for a due request (ms).
    pub timer_lag_p99_ms: Option<f64>,
    /// Events during the phase.
    #[serde(default)]
    pub events: Vec<Event>,
    /// Latency between two events (a force merge's start and end), per kind.
    #[serde(default)]
    pub intervals: Vec<IntervalReport>,
}

/// The requests that started between two events of a phase.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IntervalReport {
    /// What the interval is (e.g. `during the force merge`).
    pub label: String,
    /// Seconds since the phase start.
    pub from_s: f64,
    /// Seconds since the phase start.
    pub to_s: f64,
    /// (kind name, latency of its answered requests that started within the interval).
    pub kinds: Vec<(String, Percentiles)>,
}

/// Server-side figures of a phase.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ServerUsage {
    /// `_stats` counter deltas over the phase.
    pub counters: Option<Counters>,
    /// Server CPU over the phase, percent of one core.
    pub cpu_pct: Option<f64>,
    /// Largest resident set size seen (Lode reports it).
    pub rss_max_bytes: Option<u64>,
    /// Largest JVM heap use seen (Elasticsearch, OpenSearch).
    pub heap_max_bytes: Option<u64>,
    /// Index size on disk at the start.
    pub store_bytes_before: Option<u64>,
    /// Index size on disk at the end.
    pub store_bytes_after: Option<u64>,
    /// Free disk space at the end.
    pub fs_available_bytes: Option<u64>,
    /// Segment count at the end.
    pub segments_after: Option<u64>,
}

/// One kind of request within a phase.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct KindReport {
    /// Query name or request kind.
    pub name: String,
    /// HTTP method.
    pub method: String,
    /// A representative path.
    pub path: String,
    /// The Elasticsearch endpoint (`_search`, `_bulk`, `_doc`, ...).
    pub endpoint: String,
    /// Requests sent (= ok + non_2xx + errors).
    pub requests: u64,
    /// 2xx responses.
    pub ok: u64,
    /// Responses with another status.
    pub non_2xx: u64,
    /// Requests without a response.
    pub errors: u64,
    /// Responses by status code.
    pub statuses: BTreeMap<String, u64>,
    /// Errors by category (`connect`, `timeout`, `io`, `not_sent`).
    pub error_kinds: BTreeMap<String, u64>,
    /// A few error messages.
    pub error_samples: Vec<String>,
    /// Documents written by 2xx write requests (minus failed bulk items).
    pub docs: u64,
    /// Failed bulk items.
    pub item_errors: u64,
    /// Seconds from the first request to the last response of this kind.
    pub elapsed_s: f64,
    /// Answered requests per second.
    pub requests_per_sec: f64,
    /// Documents written per second.
    pub docs_per_sec: f64,
    /// Response bytes.
    pub bytes_in: u64,
    /// Request body bytes.
    pub bytes_out: u64,
    /// Latency of answered requests (open loop: from the intended send time).
    pub latency_ms: Percentiles,
    /// Open loop: service time, from the actual send (what latency would be if coordinated
    /// omission were ignored).
    pub service_ms: Option<Percentiles>,
    /// (percentile, ms) points of the latency distribution.
    pub distribution: Vec<[f64; 2]>,
    /// Latency over time.
    pub windows: Vec<WindowReport>,
}

/// One time window of a kind.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct WindowReport {
    /// Window start, seconds since the phase start.
    pub t: f64,
    /// Answered requests that started in the window.
    pub requests: u64,
    /// Requests without a response.
    pub errors: u64,
    /// Non-2xx responses.
    pub non_2xx: u64,
    /// Median latency (ms).
    pub p50: f64,
    /// 90th percentile (ms).
    pub p90: f64,
    /// 99th percentile (ms).
    pub p99: f64,
    /// Largest latency (ms).
    pub max: f64,
}

/// The client's own resource use over the run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ClientReport {
    /// CPU over the whole run, percent of one core.
    pub cpu_pct: Option<f64>,
    /// Cores of this machine.
    pub cores: usize,
    /// Runtime worker threads of the client.
    pub worker_threads: usize,
    /// 99th percentile of the runtime lag (ms): how late a 10 ms timer fired.
    pub runtime_lag_p99_ms: f64,
    /// Largest runtime lag (ms).
    pub runtime_lag_max_ms: f64,
    /// Runtime lag samples (one per 10 ms).
    #[serde(default)]
    pub runtime_lag_samples: u64,
    /// (seconds since start, CPU % of one core) once a second.
    pub cpu_samples: Vec<(f64, f64)>,
}

/// Compare mode: target B relative to target A for one query (B / A).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ComparisonRow {
    /// Query name.
    pub name: String,
    /// Phase index of target A.
    pub a: usize,
    /// Phase index of target B.
    pub b: usize,
    /// Requests per second, B / A (above 1: B is faster).
    pub requests_per_sec: Option<f64>,
    /// Latency ratios B / A (below 1: B is faster), per figure: mean, p50 .. p100.
    pub latency: BTreeMap<String, Option<f64>>,
}

/// Describes one kind of request for the report.
#[derive(Clone, Debug)]
pub struct KindInfo {
    /// Name.
    pub name: String,
    /// HTTP method.
    pub method: String,
    /// Representative path.
    pub path: String,
}

/// The Elasticsearch endpoint of a request: the last `_`-segment of the path (`_search`,
/// `_bulk`, ...), with the method for document APIs (`GET _doc`, `POST _doc`), or the
/// method and path for anything else.
pub fn endpoint(method: &str, path: &str) -> String {
    let path = path.split('?').next().unwrap_or("");
    let seg = path
        .split('/')
        .rfind(|s| s.starts_with('_'))
        .map(str::to_string);
    match seg.as_deref() {
        Some("_doc" | "_create" | "_update" | "_source") => {
            format!("{method} {}", seg.unwrap_or_default())
        }
        Some(s) => s.to_string(),
        None => format!("{method} {path}"),
    }
}

fn ratio(b: f64, a: f64) -> Option<f64> {
    (a > 0.0 && b.is_finite()).then(|| b / a)
}

/// A comparison row for two phases of the same query.
pub fn compare(name: &str, phases: &[PhaseReport], a: usize, b: usize) -> ComparisonRow {
    let ka = &phases[a].kinds[0];
    let kb = &phases[b].kinds[0];
    let (la, lb) = (&ka.latency_ms, &kb.latency_ms);
    let mut latency = BTreeMap::new();
    latency.insert("mean".to_string(), ratio(lb.mean, la.mean));
    for ((p, va), (_, vb)) in la.table().iter().zip(lb.table().iter()) {
        latency.insert(
            format!("p{}", p.to_string().replace('.', "_")),
            ratio(*vb, *va),
        );
    }
    ComparisonRow {
        name: name.to_string(),
        a,
        b,
        requests_per_sec: ratio(kb.requests_per_sec, ka.requests_per_sec),
        latency,
    }
}

/// What a phase report is built from.
pub struct PhaseInput<'a> {
    /// Phase name.
    pub name: String,
    /// Target index.
    pub target: usize,
    /// The measured result.
    pub result: &'a PhaseResult,
    /// Description of the kinds, in the result's order.
    pub kinds: &'a [KindInfo],
    /// Open loop rate, if any.
    pub rate: Option<f64>,
    /// Connection slots.
    pub concurrency: usize,
    /// Keep-alive.
    pub keep_alive: bool,
    /// Warm-up requests before the phase.
    pub warmup_requests: u64,
    /// Readings before and after.
    pub before: &'a Snapshot,
    /// Readings after.
    pub after: &'a Snapshot,
    /// Start of the whole run.
    pub run_origin: Instant,
    /// Events.
    pub events: Vec<Event>,
}

/// Builds a [`PhaseReport`].
pub fn phase_report(input: PhaseInput<'_>) -> PhaseReport {
    let r = input.result;
    let open = input.rate.is_some();
    let kinds = r
        .recorder
        .kinds
        .iter()
        .zip(input.kinds)
        .map(|(k, info)| {
            let elapsed = match (k.first_start, k.last_end) {
                (Some(a), Some(b)) => b.saturating_duration_since(a).as_secs_f64(),
                _ => 0.0,
            };
            // Rates over the phase duration, so that kinds running side by side compare.
            let span = r.elapsed.as_secs_f64().max(elapsed);
            let per_sec = |x: u64| if span > 0.0 { x as f64 / span } else { 0.0 };
            let windows = k
                .windows
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    let p = Percentiles::of(&w.latency);
                    WindowReport {
                        t: i as f64 * crate::WINDOW.as_secs_f64(),
                        requests: w.latency.len(),
                        errors: w.errors,
                        non_2xx: w.non_2xx,
                        p50: p.p50,
                        p90: p.p90,
                        p99: p.p99,
                        max: p.p100,
                    }
                })
                .collect();
            KindReport {
                name: info.name.clone(),
                method: info.method.clone(),
                path: info.path.clone(),
                endpoint: endpoint(&info.method, &info.path),
                requests: k.ok + k.non_2xx + k.errors,
                ok: k.ok,
                non_2xx: k.non_2xx,
                errors: k.errors,
                statuses: k
                    .statuses
                    .iter()
                    .map(|(s, n)| (s.to_string(), *n))
                    .collect(),
                error_kinds: k.error_kinds.clone(),
                error_samples: k.error_samples.clone(),
                docs: k.docs_ok,
                item_errors: k.item_errors,
                elapsed_s: elapsed,
                requests_per_sec: per_sec(k.answered()),
                docs_per_sec: per_sec(k.docs_ok),
                bytes_in: k.bytes_in,
                bytes_out: k.bytes_out,
                latency_ms: Percentiles::of(&k.latency),
                service_ms: open.then(|| Percentiles::of(&k.service)),
                distribution: distribution(&k.latency),
                windows,
            }
        })
        .collect();
    let (b, a) = (input.before, input.after);
    let wall = a.at.saturating_duration_since(b.at);
    let server = server_usage(b, a, wall);
    let client_cpu_pct = match (b.client_cpu, a.client_cpu) {
        (Some(x), Some(y)) => Some(cpu_percent(x, y, wall)),
        _ => None,
    };
    PhaseReport {
        name: input.name,
        target: input.target,
        pacing: if open { "open" } else { "closed" }.to_string(),
        concurrency: input.concurrency,
        keep_alive: input.keep_alive,
        rate: input.rate,
        start_s: r
            .started
            .saturating_duration_since(input.run_origin)
            .as_secs_f64(),
        elapsed_s: r.elapsed.as_secs_f64(),
        warmup_requests: input.warmup_requests,
        kinds,
        server,
        client_cpu_pct,
        connects: r.connects,
        late_sends: r.late_sends,
        timer_lag_p99_ms: (!r.timer_lag.is_empty())
            .then(|| r.timer_lag.value_at_quantile(0.99) as f64 / 1000.0),
        events: input.events,
        intervals: Vec::new(),
    }
}

fn server_usage(b: &Snapshot, a: &Snapshot, wall: std::time::Duration) -> Option<ServerUsage> {
    let counters = match (b.counters, a.counters) {
        (Some(x), Some(y)) => Some(y.delta(&x)),
        _ => None,
    };
    let (nb, na) = (b.node.as_ref(), a.node.as_ref());
    if counters.is_none() && nb.is_none() && na.is_none() {
        return None;
    }
    let cpu_pct = match (nb, na) {
        (Some(x), Some(y)) => crate::monitor::server_cpu_percent(x, y, wall),
        _ => None,
    };
    let max = |f: fn(&crate::control::NodeReading) -> Option<u64>| {
        [nb, na].into_iter().flatten().filter_map(f).max()
    };
    Some(ServerUsage {
        counters,
        cpu_pct,
        rss_max_bytes: max(|n| n.rss_bytes),
        heap_max_bytes: max(|n| n.heap_used_bytes),
        store_bytes_before: nb.and_then(|n| n.store_bytes),
        store_bytes_after: na.and_then(|n| n.store_bytes),
        fs_available_bytes: na.and_then(|n| n.fs_available_bytes),
        segments_after: na.and_then(|n| n.segments),
    })
}

impl PhaseReport {
    /// Fills the peak memory of the phase from the run's resource samples.
    pub fn add_resource_peaks(&mut self, samples: &[ResourceSample]) {
        let (t0, t1) = (self.start_s, self.start_s + self.elapsed_s);
        let inside = samples.iter().filter(|s| s.t >= t0 && s.t <= t1 + 1.0);
        let Some(server) = self.server.as_mut() else {
            return;
        };
        for s in inside {
            if let Some(r) = s.reading.rss_bytes {
                server.rss_max_bytes = Some(server.rss_max_bytes.map_or(r, |m| m.max(r)));
            }
            if let Some(h) = s.reading.heap_used_bytes {
                server.heap_max_bytes = Some(server.heap_max_bytes.map_or(h, |m| m.max(h)));
            }
        }
    }

    /// Requests of this phase's kinds that hit `endpoint` and got a 2xx answer.
    pub fn ok_for(&self, endpoint: &str) -> u64 {
        self.kinds
            .iter()
            .filter(|k| k.endpoint == endpoint)
            .map(|k| k.ok)
            .sum()
    }
}

/// Server activity in one window of a phase, from the once-a-second `_nodes/stats` samples.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerWindow {
    /// Refreshes completed in the window.
    pub refreshes: Option<u64>,
    /// Merges completed in the window.
    pub merges: Option<u64>,
    /// Segment count at the end of the window.
    pub segments: Option<u64>,
    /// Server CPU, % of one core.
    pub cpu_pct: Option<f64>,
}

/// Server activity per window of `phase` (`n` windows): each sample's change since the previous
/// sample is put in the window the sample falls in.
pub fn server_windows(
    samples: &[ResourceSample],
    phase: &PhaseReport,
    n: usize,
) -> Vec<ServerWindow> {
    let mut out = vec![ServerWindow::default(); n];
    let w = crate::WINDOW.as_secs_f64();
    for pair in samples.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let rel = b.t - phase.start_s;
        if rel < 0.0 {
            continue;
        }
        let i = (rel / w) as usize;
        let Some(slot) = out.get_mut(i) else {
            continue;
        };
        let delta = |x: Option<u64>, y: Option<u64>| match (x, y) {
            (Some(x), Some(y)) => Some(y.saturating_sub(x)),
            _ => None,
        };
        let add = |acc: Option<u64>, d: Option<u64>| match (acc, d) {
            (Some(a), Some(d)) => Some(a + d),
            (a, d) => a.or(d),
        };
        slot.refreshes = add(
            slot.refreshes,
            delta(a.reading.refresh_total, b.reading.refresh_total),
        );
        slot.merges = add(
            slot.merges,
            delta(a.reading.merges_total, b.reading.merges_total),
        );
        slot.segments = b.reading.segments.or(slot.segments);
        slot.cpu_pct = b.cpu_pct.or(slot.cpu_pct);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::{Counters, NodeReading};
    use crate::http::{HttpError, Response};
    use crate::recorder::{Recorder, Sample};
    use std::time::Duration;

    /// A phase of 300 requests over 3 s in two kinds: kind "a" has 120 2xx and 30 404s, kind
    /// "b" 135 2xx and 15 timeouts.
    fn synthetic() -> (PhaseResult, Vec<KindInfo>, Snapshot, Snapshot) {
        let t0 = Instant::now();
        let mut rec = Recorder::new(2, t0, crate::WINDOW);
        for i in 0..300u64 {
            let start = t0 + Duration::from_millis(i * 10);
            let outcome = match i % 10 {
                0 => Ok(Response {
                    status: 404,
                    body: bytes::Bytes::from_static(b"{}"),
                }),
                9 if i % 20 == 9 => Err(HttpError::Timeout),
                _ => Ok(Response {
                    status: 200,
                    body: bytes::Bytes::from_static(b"{\"hits\":{}}"),
                }),
            };
            rec.record(
                (i % 2) as usize,
                &Sample {
                    start,
                    sent: start,
                    end: start + Duration::from_micros(500 + i * 7),
                    outcome: &outcome,
                    bytes_out: 10,
                    docs: 0,
                    bulk: false,
                },
            );
        }
        let result = PhaseResult {
            recorder: rec,
            kinds: vec!["a".into(), "b".into()],
            started: t0,
            elapsed: Duration::from_secs(3),
            timer_lag: crate::histogram::new_histogram(),
            late_sends: 0,
            connects: 4,
            connections: Vec::new(),
        };
        let kinds = vec![
            KindInfo {
                name: "a".into(),
                method: "POST".into(),
                path: "/i/_search".into(),
            },
            KindInfo {
                name: "b".into(),
                method: "GET".into(),
                path: "/i/_doc/1".into(),
            },
        ];
        let node = |cpu, ts| NodeReading {
            cpu_total_ms: Some(cpu),
            process_timestamp_ms: Some(ts),
            heap_used_bytes: Some(100),
            ..NodeReading::default()
        };
        let before = Snapshot {
            at: t0,
            counters: Some(Counters::default()),
            node: Some(node(1000, 10_000)),
            client_cpu: Some(Duration::from_millis(100)),
        };
        let after = Snapshot {
            at: t0 + Duration::from_secs(3),
            counters: Some(Counters {
                search_query_total: 120,
                indexing_index_total: 0,
                get_total: 150,
            }),
            node: Some(node(4000, 13_000)),
            client_cpu: Some(Duration::from_millis(400)),
        };
        (result, kinds, before, after)
    }

    #[test]
    fn phase_report_is_consistent_and_round_trips_through_json() {
        let (result, kinds, before, after) = synthetic();
        let p = phase_report(PhaseInput {
            name: "x".into(),
            target: 0,
            result: &result,
            kinds: &kinds,
            rate: None,
            concurrency: 4,
            keep_alive: true,
            warmup_requests: 7,
            before: &before,
            after: &after,
            run_origin: result.started,
            events: vec![],
        });
        let total: u64 = p.kinds.iter().map(|k| k.requests).sum();
        assert_eq!(total, 300);
        for k in &p.kinds {
            assert_eq!(k.requests, k.ok + k.non_2xx + k.errors);
            assert_eq!(k.latency_ms.count, k.ok + k.non_2xx);
            assert_eq!(k.windows.len(), 3);
            assert_eq!(
                k.windows.iter().map(|w| w.requests).sum::<u64>(),
                k.latency_ms.count
            );
            assert_eq!(k.statuses.values().sum::<u64>(), k.latency_ms.count);
            assert!((k.requests_per_sec * 3.0 - (k.ok + k.non_2xx) as f64).abs() < 1e-9);
            assert!(k.service_ms.is_none());
        }
        // Kind "a" (even i) gets every 404 (i % 10 == 0), kind "b" (odd i) every timeout.
        assert_eq!((p.kinds[0].non_2xx, p.kinds[0].errors), (30, 0));
        assert_eq!((p.kinds[1].errors, p.kinds[1].non_2xx), (15, 0));
        assert_eq!(p.ok_for("_search"), 120);
        let server = p.server.as_ref().unwrap();
        assert_eq!(server.counters.unwrap().search_query_total, 120);
        assert!((server.cpu_pct.unwrap() - 100.0).abs() < 1e-9);
        assert!((p.client_cpu_pct.unwrap() - 10.0).abs() < 1e-6);

        let report = Report {
            tool: "lode bench".into(),
            version: "0".into(),
            command: "search".into(),
            started_at: "now".into(),
            targets: vec![TargetInfo {
                url: "http://x".into(),
                server: None,
            }],
            settings: serde_json::json!({}),
            phases: vec![p.clone(), p],
            comparison: vec![],
            client: ClientReport::default(),
            resources: vec![],
            warnings: vec![],
            extra: BTreeMap::new(),
        };
        let json = serde_json::to_string(&report).unwrap();
        let back: Report = serde_json::from_str(&json).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
        let row = compare("x", &back.phases, 0, 1);
        assert_eq!(row.requests_per_sec, Some(1.0));
        assert_eq!(row.latency["p99_9"], Some(1.0));
        let single = Report {
            phases: vec![back.phases[0].clone()],
            ..back.clone()
        };
        let text = text::render(&single);
        assert!(text.contains("Complete requests:      150"), "{text}");
        assert!(text.contains("Non-2xx responses:      30"));
        let page = html::render(&back);
        assert!(page.contains("<svg") && !page.contains("<script"));
    }

    #[test]
    fn server_activity_per_window() {
        let sample = |t: f64, refresh: u64, segments: u64| ResourceSample {
            t,
            cpu_pct: Some(50.0),
            reading: NodeReading {
                refresh_total: Some(refresh),
                segments: Some(segments),
                ..NodeReading::default()
            },
        };
        let samples = [
            sample(9.9, 10, 5),
            sample(10.5, 12, 6),
            sample(11.5, 13, 7),
            sample(12.5, 20, 1),
            sample(14.5, 30, 2),
        ];
        let (result, kinds, before, after) = synthetic();
        let mut p = phase_report(PhaseInput {
            name: "x".into(),
            target: 0,
            result: &result,
            kinds: &kinds,
            rate: None,
            concurrency: 1,
            keep_alive: true,
            warmup_requests: 0,
            before: &before,
            after: &after,
            run_origin: result.started,
            events: vec![],
        });
        p.start_s = 10.0;
        let w = server_windows(&samples, &p, 3);
        let refreshes: Vec<Option<u64>> = w.iter().map(|w| w.refreshes).collect();
        assert_eq!(refreshes, [Some(2), Some(1), Some(7)]);
        assert_eq!(w[2].segments, Some(1));
        assert_eq!(w[0].cpu_pct, Some(50.0));
    }

    #[test]
    fn endpoints() {
        assert_eq!(
            endpoint("POST", "/accounts/_search?request_cache=false"),
            "_search"
        );
        assert_eq!(endpoint("GET", "/accounts/_doc/5"), "GET _doc");
        assert_eq!(endpoint("POST", "/books/_doc"), "POST _doc");
        assert_eq!(endpoint("POST", "/_bulk"), "_bulk");
        assert_eq!(endpoint("POST", "/a/_bulk"), "_bulk");
        assert_eq!(endpoint("GET", "/"), "GET /");
        assert_eq!(endpoint("GET", "/_cat/indices"), "_cat");
    }
}
