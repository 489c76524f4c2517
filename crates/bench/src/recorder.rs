//! Per-request bookkeeping: counts, latency histograms and one-second windows per request kind.
//!
//! The workers of a phase share one [`Recorder`] behind a mutex held for a few hundred
//! nanoseconds per request: one set of HDR histograms per kind, whatever the concurrency
//! (per-worker histograms would cost ~190 KB each at 200 connections). Recorders of separate
//! runs can be merged.

use crate::histogram::{new_histogram, new_window_histogram, record};
use crate::http::{HttpError, Response};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Statistics of one time window.
#[derive(Clone, Debug)]
pub struct Window {
    /// Latencies of the requests that started in this window.
    pub latency: Histogram<u32>,
    /// Requests without a response.
    pub errors: u64,
    /// Responses with a status other than 2xx.
    pub non_2xx: u64,
}

impl Window {
    fn new() -> Window {
        Window {
            latency: new_window_histogram(),
            errors: 0,
            non_2xx: 0,
        }
    }
}

/// Everything recorded for one kind of request (one query, writes, one replayed endpoint).
#[derive(Clone, Debug)]
pub struct KindStats {
    /// Latency of every answered request: from the intended send time in open-loop mode, from
    /// the actual send time in closed-loop mode.
    pub latency: Histogram<u64>,
    /// Service time: from the actual send to the end of the response.
    pub service: Histogram<u64>,
    /// One-second windows by request start.
    pub windows: Vec<Window>,
    /// 2xx responses.
    pub ok: u64,
    /// Other responses.
    pub non_2xx: u64,
    /// Requests without a response (connect failure, reset, timeout).
    pub errors: u64,
    /// Responses by status code.
    pub statuses: BTreeMap<u16, u64>,
    /// Errors by category.
    pub error_kinds: BTreeMap<String, u64>,
    /// A few error messages (transport errors and non-2xx bodies), for the report.
    pub error_samples: Vec<String>,
    /// Documents sent in 2xx write requests, minus the bulk items that failed.
    pub docs_ok: u64,
    /// Failed `_bulk` items in 2xx responses.
    pub item_errors: u64,
    /// Response body bytes.
    pub bytes_in: u64,
    /// Request body bytes.
    pub bytes_out: u64,
    /// When the first request of this kind started.
    pub first_start: Option<Instant>,
    /// When the last response of this kind ended.
    pub last_end: Option<Instant>,
    /// Every answered request as (start, latency), when the phase keeps a timeline: the
    /// percentiles of an interval that does not fall on window bounds (a force merge) come
    /// from it.
    pub timeline: Vec<(Duration, Duration)>,
}

impl Default for KindStats {
    fn default() -> Self {
        KindStats {
            latency: new_histogram(),
            service: new_histogram(),
            windows: Vec::new(),
            ok: 0,
            non_2xx: 0,
            errors: 0,
            statuses: BTreeMap::new(),
            error_kinds: BTreeMap::new(),
            error_samples: Vec::new(),
            docs_ok: 0,
            item_errors: 0,
            bytes_in: 0,
            bytes_out: 0,
            first_start: None,
            last_end: None,
            timeline: Vec::new(),
        }
    }
}

const MAX_SAMPLES: usize = 5;

/// What happened to one request, as the recorder needs it.
pub struct Sample<'a> {
    /// Intended start (open loop) or actual send time (closed loop).
    pub start: Instant,
    /// Actual send time.
    pub sent: Instant,
    /// End of the response (or of the failure).
    pub end: Instant,
    /// The outcome.
    pub outcome: &'a Result<Response, HttpError>,
    /// Request body size.
    pub bytes_out: u64,
    /// Documents carried by the request (writes).
    pub docs: u64,
    /// The request was a `_bulk` request (its items are checked).
    pub bulk: bool,
}

impl KindStats {
    /// Requests that got a response (2xx or not).
    pub fn answered(&self) -> u64 {
        self.ok + self.non_2xx
    }

    fn window(&mut self, i: usize) -> &mut Window {
        while self.windows.len() <= i {
            self.windows.push(Window::new());
        }
        &mut self.windows[i]
    }

    fn sample(&mut self, msg: String) {
        if self.error_samples.len() < MAX_SAMPLES && !self.error_samples.contains(&msg) {
            self.error_samples.push(msg);
        }
    }

    /// Records one request whose window is `window`; `offset` (its start since the phase
    /// origin) goes to the timeline when one is kept.
    pub fn record(&mut self, window: usize, offset: Option<Duration>, s: &Sample<'_>) {
        self.first_start = Some(self.first_start.map_or(s.start, |f| f.min(s.start)));
        self.last_end = Some(self.last_end.map_or(s.end, |l| l.max(s.end)));
        self.bytes_out += s.bytes_out;
        match s.outcome {
            Ok(resp) => {
                let latency = s.end.saturating_duration_since(s.start);
                record(&mut self.latency, latency);
                record(&mut self.service, s.end.saturating_duration_since(s.sent));
                record(&mut self.window(window).latency, latency);
                if let Some(offset) = offset {
                    self.timeline.push((offset, latency));
                }
                *self.statuses.entry(resp.status).or_default() += 1;
                self.bytes_in += resp.body.len() as u64;
                if (200..300).contains(&resp.status) {
                    self.ok += 1;
                    let failed = if s.bulk {
                        bulk_item_errors(&resp.body, &mut |m| self.sample(m))
                    } else {
                        0
                    };
                    self.item_errors += failed;
                    self.docs_ok += s.docs.saturating_sub(failed);
                } else {
                    self.non_2xx += 1;
                    self.window(window).non_2xx += 1;
                    let body = String::from_utf8_lossy(&resp.body[..resp.body.len().min(300)]);
                    self.sample(format!("HTTP {}: {}", resp.status, body));
                }
            }
            Err(e) => {
                self.errors += 1;
                self.window(window).errors += 1;
                *self.error_kinds.entry(e.kind().to_string()).or_default() += 1;
                self.sample(e.to_string());
            }
        }
    }

    /// Adds another kind's statistics (windows are added index by index).
    pub fn merge(&mut self, o: &KindStats) {
        self.latency.add(&o.latency).expect("same bounds");
        self.service.add(&o.service).expect("same bounds");
        for (i, w) in o.windows.iter().enumerate() {
            let mine = self.window(i);
            mine.latency.add(&w.latency).expect("same bounds");
            mine.errors += w.errors;
            mine.non_2xx += w.non_2xx;
        }
        self.ok += o.ok;
        self.non_2xx += o.non_2xx;
        self.errors += o.errors;
        for (k, v) in &o.statuses {
            *self.statuses.entry(*k).or_default() += v;
        }
        for (k, v) in &o.error_kinds {
            *self.error_kinds.entry(k.clone()).or_default() += v;
        }
        for m in &o.error_samples {
            self.sample(m.clone());
        }
        self.docs_ok += o.docs_ok;
        self.item_errors += o.item_errors;
        self.bytes_in += o.bytes_in;
        self.bytes_out += o.bytes_out;
        self.first_start = match (self.first_start, o.first_start) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.last_end = match (self.last_end, o.last_end) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.timeline.extend_from_slice(&o.timeline);
    }

    /// Latencies of the answered requests that started within `[from, to]` (seconds since the
    /// phase origin); empty unless the phase kept a timeline.
    pub fn between(&self, from: f64, to: f64) -> Histogram<u64> {
        let mut h = new_histogram();
        for (start, latency) in &self.timeline {
            if (from..=to).contains(&start.as_secs_f64()) {
                record(&mut h, *latency);
            }
        }
        h
    }
}

/// Counts the failed items of a `_bulk` response (0 unless `"errors": true`).
pub fn bulk_item_errors(body: &[u8], sample: &mut dyn FnMut(String)) -> u64 {
    if !has_errors_true(body) {
        return 0;
    }
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) else {
        sample("bulk response with errors that is not JSON".into());
        return 0;
    };
    let mut failed = 0;
    for item in v["items"].as_array().into_iter().flatten() {
        if let Some((_, r)) = item.as_object().and_then(|o| o.iter().next()) {
            if r.get("error").is_some() {
                failed += 1;
                sample(format!("bulk item: {}", r["error"]));
            }
        }
    }
    failed
}

fn has_errors_true(body: &[u8]) -> bool {
    let key = b"\"errors\"";
    let Some(pos) = body.windows(key.len()).position(|w| w == key) else {
        return false;
    };
    let rest = body[pos + key.len()..]
        .iter()
        .skip_while(|b| b.is_ascii_whitespace() || **b == b':')
        .take(4)
        .copied()
        .collect::<Vec<u8>>();
    rest == b"true"
}

/// A worker's recorder: one [`KindStats`] per kind, windows relative to the phase start.
pub struct Recorder {
    /// Per kind, indexed like the phase's kind names.
    pub kinds: Vec<KindStats>,
    origin: Instant,
    window: Duration,
    timeline: bool,
}

impl Recorder {
    /// A recorder for `kinds` kinds whose windows start at `origin`.
    pub fn new(kinds: usize, origin: Instant, window: Duration) -> Recorder {
        Recorder {
            kinds: (0..kinds).map(|_| KindStats::default()).collect(),
            origin,
            window,
            timeline: false,
        }
    }

    /// Keeps every answered request's start and latency too (16 bytes each).
    pub fn with_timeline(mut self, keep: bool) -> Recorder {
        self.timeline = keep;
        self
    }

    /// Records a sample for kind `kind`.
    pub fn record(&mut self, kind: usize, s: &Sample<'_>) {
        let offset = s.start.saturating_duration_since(self.origin);
        let w = (offset.as_nanos() / self.window.as_nanos().max(1)) as usize;
        self.kinds[kind].record(w, self.timeline.then_some(offset), s);
    }

    /// Merges another worker's recorder into this one.
    pub fn merge(&mut self, o: &Recorder) {
        for (a, b) in self.kinds.iter_mut().zip(&o.kinds) {
            a.merge(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn ok(status: u16, body: &str) -> Result<Response, HttpError> {
        Ok(Response {
            status,
            body: Bytes::from(body.to_string()),
        })
    }

    #[test]
    fn counts_and_windows() {
        let t0 = Instant::now();
        let mut r = Recorder::new(2, t0, Duration::from_secs(1));
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let outcomes = [
            (0, 100, ok(200, "{}")),
            (0, 1500, ok(404, "{\"found\":false}")),
            (1, 2100, Err(HttpError::Timeout)),
            (0, 2200, ok(201, "{}")),
        ];
        for (kind, start, out) in &outcomes {
            let s = Sample {
                start: at(*start),
                sent: at(*start),
                end: at(*start + 10),
                outcome: out,
                bytes_out: 5,
                docs: 1,
                bulk: false,
            };
            r.record(*kind, &s);
        }
        let k0 = &r.kinds[0];
        assert_eq!((k0.ok, k0.non_2xx, k0.errors), (2, 1, 0));
        assert_eq!(k0.latency.len(), 3);
        assert_eq!(k0.windows.len(), 3);
        assert_eq!(k0.windows[1].non_2xx, 1);
        assert_eq!(k0.docs_ok, 2);
        let k1 = &r.kinds[1];
        assert_eq!((k1.ok, k1.errors), (0, 1));
        assert_eq!(k1.error_kinds["timeout"], 1);
        assert_eq!(k1.latency.len(), 0);

        let mut total = Recorder::new(2, t0, Duration::from_secs(1));
        total.merge(&r);
        total.merge(&r);
        assert_eq!(total.kinds[0].ok, 4);
        assert_eq!(total.kinds[0].windows[2].latency.len(), 2);
        assert_eq!(total.kinds[0].statuses[&404], 2);
    }

    #[test]
    fn a_timeline_gives_the_latency_of_any_interval() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let answer = ok(200, "{}");
        let run = |timeline: bool| {
            let mut r = Recorder::new(1, t0, Duration::from_secs(1)).with_timeline(timeline);
            // Requests every 100 ms; those started in [1.0 s, 2.0 s] take 50 ms, others 5 ms.
            for i in 0..30u64 {
                let start = i * 100;
                let took = if (1000..=2000).contains(&start) {
                    50
                } else {
                    5
                };
                r.record(
                    0,
                    &Sample {
                        start: at(start),
                        sent: at(start),
                        end: at(start + took),
                        outcome: &answer,
                        bytes_out: 0,
                        docs: 0,
                        bulk: false,
                    },
                );
            }
            r
        };
        let r = run(true);
        let mut merged = Recorder::new(1, t0, Duration::from_secs(1));
        merged.merge(&r);
        for k in [&r.kinds[0], &merged.kinds[0]] {
            let during = k.between(1.0, 2.0);
            assert_eq!(during.len(), 11);
            assert!((49_000..=51_000).contains(&during.min()));
            assert!((49_000..=51_000).contains(&during.max()));
            let before = k.between(0.0, 0.95);
            assert_eq!(before.len(), 10);
            assert!(before.max() <= 5_100);
        }
        // Without a timeline nothing is kept per request.
        assert_eq!(run(false).kinds[0].between(0.0, 10.0).len(), 0);
    }

    #[test]
    fn bulk_item_errors_are_counted() {
        let body = r#"{"took":3,"errors":true,"items":[{"index":{"status":201}},{"index":{"status":400,"error":{"type":"mapper_parsing_exception"}}}]}"#;
        let mut msgs = Vec::new();
        assert_eq!(bulk_item_errors(body.as_bytes(), &mut |m| msgs.push(m)), 1);
        assert!(msgs[0].contains("mapper_parsing_exception"));
        let fine = r#"{"took":3, "errors" : false,"items":[]}"#;
        assert_eq!(bulk_item_errors(fine.as_bytes(), &mut |_| {}), 0);
        let spaced = r#"{"errors" : true,"items":[{"create":{"error":"x"}}]}"#;
        assert_eq!(bulk_item_errors(spaced.as_bytes(), &mut |_| {}), 1);
    }
}
