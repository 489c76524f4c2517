//! The load engine: a fixed number of connection slots sending requests, closed or open loop.
//!
//! * Closed loop (default, like `ab`): each of the `concurrency` connections sends its next
//!   request as soon as the previous response has arrived, until the duration or the request
//!   count is reached. Latency runs from the actual send.
//! * Open loop (`--rate`): requests are due at times fixed by a [`Schedule`]; a free
//!   connection takes the next due request, waits for its due time and sends it. When every
//!   connection is busy, due requests wait, and that wait is part of their latency, which runs
//!   from the due time (coordinated omission accounted for). Requests still waiting more than
//!   [`DROP_AFTER`] after their due time are not sent and count as errors (`not_sent`).

use crate::histogram::{new_histogram, record};
use crate::http::{Connection, HttpError, Request, Target};
use crate::pacing::Schedule;
use crate::recorder::{Recorder, Sample};
use crate::workload::rng::Rng;
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Open-loop requests that could not be sent within this time after their due time are
/// dropped (counted as `not_sent` errors) instead of being sent.
pub const DROP_AFTER: Duration = Duration::from_secs(10);

/// A request with what the recorder needs to know about it.
pub struct Planned {
    /// Index into the source's kinds.
    pub kind: usize,
    /// The request.
    pub request: Request,
    /// Documents it carries (writes).
    pub docs: u64,
    /// It is a `_bulk` request (items are checked for errors).
    pub bulk: bool,
}

/// Produces the requests of a phase.
pub trait Source: Send + Sync {
    /// Names of the request kinds this source produces (one report row each).
    fn kinds(&self) -> Vec<String>;
    /// The request with sequence number `index`.
    fn plan(&self, index: u64, rng: &mut Rng) -> Planned;
}

/// How requests are paced.
pub enum Pacing {
    /// Closed loop, until `duration` or `requests` (the first reached; neither = no limit).
    Closed {
        /// Stop sending after this time.
        duration: Option<Duration>,
        /// Stop after this many requests.
        requests: Option<u64>,
    },
    /// Open loop on a schedule.
    Open(Schedule),
}

/// Settings of one phase.
#[derive(Clone)]
pub struct PhaseConfig {
    /// Timeout of one request.
    pub timeout: Option<Duration>,
    /// Width of the latency-over-time windows.
    pub window: Duration,
    /// Seed of the per-worker random streams (variations).
    pub seed: u64,
    /// Phase start (due times and windows are relative to it); `None` = now.
    pub start: Option<Instant>,
    /// Set to stop the phase early (Ctrl-C).
    pub stop: Arc<AtomicBool>,
    /// Keep every request's start and latency (`KindStats::timeline`).
    pub timeline: bool,
}

/// What a phase measured.
pub struct PhaseResult {
    /// Merged statistics per kind.
    pub recorder: Recorder,
    /// Kind names.
    pub kinds: Vec<String>,
    /// Phase start.
    pub started: Instant,
    /// From the start to the last response (or the end of the schedule).
    pub elapsed: Duration,
    /// Open loop: how late idle connections woke up for their due time (client scheduling).
    pub timer_lag: Histogram<u64>,
    /// Open loop: requests sent more than 1 ms after their due time because every connection
    /// was busy.
    pub late_sends: u64,
    /// TCP connections opened.
    pub connects: u64,
    /// The connection slots, for the next phase.
    pub connections: Vec<Connection>,
}

enum Slots {
    Closed {
        deadline: Option<Instant>,
        limit: Option<u64>,
        issued: AtomicU64,
    },
    Open {
        schedule: Mutex<Schedule>,
        start: Instant,
    },
}

impl Slots {
    fn next(&self) -> Option<(u64, Option<Instant>)> {
        match self {
            Slots::Closed {
                deadline,
                limit,
                issued,
            } => {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return None;
                }
                let i = issued.fetch_add(1, Ordering::Relaxed);
                if limit.is_some_and(|l| i >= l) {
                    return None;
                }
                Some((i, None))
            }
            Slots::Open { schedule, start } => {
                let (i, due) = schedule.lock().expect("schedule lock").next_slot()?;
                Some((i, Some(*start + due)))
            }
        }
    }
}

/// What the workers of a phase record into, behind one mutex.
struct Tally {
    recorder: Recorder,
    timer_lag: Histogram<u64>,
    late_sends: u64,
}

/// Creates `n` connection slots to `target`.
pub fn connections(target: &Arc<Target>, n: usize, keep_alive: bool) -> Vec<Connection> {
    (0..n.max(1))
        .map(|_| Connection::new(target.clone(), keep_alive))
        .collect()
}

/// Runs one phase with the given connection slots (their number is the concurrency).
pub async fn run_phase(
    source: Arc<dyn Source>,
    pacing: Pacing,
    conns: Vec<Connection>,
    cfg: &PhaseConfig,
) -> PhaseResult {
    let kinds = source.kinds();
    // A small head start so that every worker is waiting before the first due time.
    let start = cfg
        .start
        .unwrap_or_else(|| Instant::now() + Duration::from_millis(2));
    let slots = Arc::new(match pacing {
        Pacing::Closed { duration, requests } => Slots::Closed {
            deadline: duration.map(|d| start + d),
            limit: requests,
            issued: AtomicU64::new(0),
        },
        Pacing::Open(schedule) => Slots::Open {
            schedule: Mutex::new(schedule),
            start,
        },
    });
    let connects_before: u64 = conns.iter().map(|c| c.connects).sum();
    let tally = Arc::new(Mutex::new(Tally {
        recorder: Recorder::new(kinds.len(), start, cfg.window).with_timeline(cfg.timeline),
        timer_lag: new_histogram(),
        late_sends: 0,
    }));
    let mut handles = Vec::with_capacity(conns.len());
    for (w, conn) in conns.into_iter().enumerate() {
        let source = source.clone();
        let slots = slots.clone();
        let cfg = cfg.clone();
        let tally = tally.clone();
        handles.push(tokio::spawn(async move {
            worker(w as u64, source, slots, conn, cfg, start, tally).await
        }));
    }
    let mut connections = Vec::with_capacity(handles.len());
    for h in handles {
        connections.push(h.await.expect("worker task panicked"));
    }
    let Tally {
        recorder,
        timer_lag,
        late_sends,
    } = Arc::try_unwrap(tally)
        .ok()
        .expect("workers finished")
        .into_inner()
        .expect("tally lock");
    let end = recorder
        .kinds
        .iter()
        .filter_map(|k| k.last_end)
        .max()
        .unwrap_or_else(Instant::now);
    let connects = connections.iter().map(|c| c.connects).sum::<u64>() - connects_before;
    PhaseResult {
        recorder,
        kinds,
        started: start,
        elapsed: end.saturating_duration_since(start),
        timer_lag,
        late_sends,
        connects,
        connections,
    }
}

async fn worker(
    id: u64,
    source: Arc<dyn Source>,
    slots: Arc<Slots>,
    mut conn: Connection,
    cfg: PhaseConfig,
    start: Instant,
    tally: Arc<Mutex<Tally>>,
) -> Connection {
    let mut rng = Rng::new(cfg.seed ^ (id + 1).wrapping_mul(0xA24B_AED4_963E_E407));
    let lock = || tally.lock().expect("tally lock");
    if Instant::now() < start {
        tokio::time::sleep_until(start.into()).await;
    }
    while !cfg.stop.load(Ordering::Relaxed) {
        let Some((index, due)) = slots.next() else {
            break;
        };
        let planned = source.plan(index, &mut rng);
        if let Some(due) = due {
            let now = Instant::now();
            if due > now {
                tokio::time::sleep_until(due.into()).await;
                let lag = Instant::now().saturating_duration_since(due);
                record(&mut lock().timer_lag, lag);
            } else if now - due > DROP_AFTER {
                let outcome = Err(HttpError::NotSent);
                let sample = Sample {
                    start: due,
                    sent: now,
                    end: now,
                    outcome: &outcome,
                    bytes_out: 0,
                    docs: 0,
                    bulk: false,
                };
                lock().recorder.record(planned.kind, &sample);
                continue;
            } else if now - due > Duration::from_millis(1) {
                lock().late_sends += 1;
            }
        }
        let sent = Instant::now();
        let outcome = conn.send_timeout(&planned.request, cfg.timeout).await;
        let end = Instant::now();
        let sample = Sample {
            start: due.unwrap_or(sent),
            sent,
            end,
            outcome: &outcome,
            bytes_out: planned.request.body.len() as u64,
            docs: planned.docs,
            bulk: planned.bulk,
        };
        lock().recorder.record(planned.kind, &sample);
    }
    conn
}

impl PhaseResult {
    /// Appends the kinds of a phase that ran side by side with this one (same start), e.g.
    /// writes next to searches.
    pub fn combine(mut self, other: PhaseResult) -> PhaseResult {
        self.recorder.kinds.extend(other.recorder.kinds);
        self.kinds.extend(other.kinds);
        self.elapsed = self.elapsed.max(other.elapsed);
        self.timer_lag.add(&other.timer_lag).expect("same bounds");
        self.late_sends += other.late_sends;
        self.connects += other.connects;
        self.connections.extend(other.connections);
        self
    }
}
