//! Resource measurements beside the latency figures.
//!
//! * [`Snapshot`]: exact readings at the start and end of a phase (server `_stats` counters,
//!   server CPU time from `_nodes/stats`, the client's own CPU time).
//! * [`ServerMonitor`]: polls `_nodes/stats` once a second for the over-time charts (CPU, RSS or
//!   heap, store size, segments, refreshes, merges).
//! * [`ClientProbe`]: the client's own CPU once a second and its runtime lag (how late a 10 ms
//!   timer fires), which reveal a client that is itself the bottleneck.

use crate::control::{Control, Counters, NodeReading};
use crate::histogram::{new_histogram, record};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// CPU time (user + system) used by this process so far.
pub fn process_cpu_time() -> Option<Duration> {
    #[cfg(unix)]
    {
        // SAFETY: getrusage only writes into the zero-initialized struct we pass.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
        if rc != 0 {
            return None;
        }
        let tv = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
        };
        Some(tv(ru.ru_utime) + tv(ru.ru_stime))
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Readings taken at one instant.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// When.
    pub at: Instant,
    /// Server operation counters.
    pub counters: Option<Counters>,
    /// Server resources.
    pub node: Option<NodeReading>,
    /// Client CPU time.
    pub client_cpu: Option<Duration>,
}

impl Snapshot {
    /// Takes a snapshot (server parts only with a control connection).
    pub async fn take(control: Option<&Control>) -> Snapshot {
        let (counters, node) = match control {
            Some(c) => (c.counters().await.ok(), c.node_reading().await),
            None => (None, None),
        };
        Snapshot {
            at: Instant::now(),
            counters,
            node,
            client_cpu: process_cpu_time(),
        }
    }
}

/// Server CPU in percent of one core between two readings: over the server's own reading
/// times where it reports them (its process figures may be up to a second old), else over
/// `wall`. `None` when the reading did not change.
pub fn server_cpu_percent(
    before: &NodeReading,
    after: &NodeReading,
    wall: Duration,
) -> Option<f64> {
    let (b, a) = (before.cpu_total_ms?, after.cpu_total_ms?);
    let span = match (before.process_timestamp_ms, after.process_timestamp_ms) {
        (Some(x), Some(y)) if y > x => Duration::from_millis(y - x),
        (Some(x), Some(y)) if y == x => return None,
        _ => wall,
    };
    Some(cpu_percent(
        Duration::from_millis(b),
        Duration::from_millis(a),
        span,
    ))
}

/// CPU use in percent of one core between two cumulative CPU times.
pub fn cpu_percent(cpu_before: Duration, cpu_after: Duration, wall: Duration) -> f64 {
    if wall.is_zero() {
        return 0.0;
    }
    cpu_after.saturating_sub(cpu_before).as_secs_f64() / wall.as_secs_f64() * 100.0
}

/// One `_nodes/stats` reading with its CPU use since the previous one.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ResourceSample {
    /// Seconds since the start of the run.
    pub t: f64,
    /// Server CPU since the previous sample, in percent of one core.
    pub cpu_pct: Option<f64>,
    /// The reading.
    #[serde(flatten)]
    pub reading: NodeReading,
}

/// Polls `_nodes/stats` of one target.
pub struct ServerMonitor {
    stop: watch::Sender<bool>,
    handle: JoinHandle<Vec<ResourceSample>>,
}

impl ServerMonitor {
    /// Starts polling every `interval`; sample times are relative to `origin`.
    pub fn start(control: Arc<Control>, origin: Instant, interval: Duration) -> ServerMonitor {
        let (stop, mut stopped) = watch::channel(false);
        let handle = tokio::spawn(async move {
            let mut samples: Vec<ResourceSample> = Vec::new();
            let mut prev: Option<(Instant, NodeReading)> = None;
            let mut ticker = tokio::time::interval(interval);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = ticker.tick() => {}
                    _ = stopped.changed() => break,
                }
                let Some(reading) = control.node_reading().await else {
                    if samples.is_empty() && prev.is_none() {
                        // Not exposed by this target: stop polling.
                        break;
                    }
                    continue;
                };
                let now = Instant::now();
                let cpu_pct = prev
                    .as_ref()
                    .and_then(|(t, before)| server_cpu_percent(before, &reading, now - *t));
                if cpu_pct.is_some() || prev.is_none() {
                    prev = Some((now, reading.clone()));
                }
                samples.push(ResourceSample {
                    t: now.saturating_duration_since(origin).as_secs_f64(),
                    cpu_pct,
                    reading,
                });
            }
            samples
        });
        ServerMonitor { stop, handle }
    }

    /// Stops polling and returns the samples.
    pub async fn finish(self) -> Vec<ResourceSample> {
        let _ = self.stop.send(true);
        self.handle.await.unwrap_or_default()
    }
}

/// The client's own health during the run.
#[derive(Debug)]
pub struct ClientData {
    /// How late a 10 ms timer fired (runtime saturation).
    pub runtime_lag: Histogram<u64>,
    /// (seconds since origin, client CPU % of one core over the last second).
    pub cpu_samples: Vec<(f64, f64)>,
}

/// Samples the client's CPU and runtime lag.
pub struct ClientProbe {
    stop: watch::Sender<bool>,
    handle: JoinHandle<ClientData>,
}

const PROBE_TICK: Duration = Duration::from_millis(10);

impl ClientProbe {
    /// Starts probing; sample times are relative to `origin`.
    pub fn start(origin: Instant) -> ClientProbe {
        let (stop, mut stopped) = watch::channel(false);
        let handle = tokio::spawn(async move {
            let mut lag = new_histogram();
            let mut cpu_samples = Vec::new();
            let mut last = (Instant::now(), process_cpu_time());
            loop {
                let t = Instant::now();
                tokio::select! {
                    _ = tokio::time::sleep(PROBE_TICK) => {}
                    _ = stopped.changed() => break,
                }
                let now = Instant::now();
                record(&mut lag, (now - t).saturating_sub(PROBE_TICK));
                if now - last.0 >= Duration::from_secs(1) {
                    let cpu = process_cpu_time();
                    if let (Some(a), Some(b)) = (last.1, cpu) {
                        let t = now.saturating_duration_since(origin).as_secs_f64();
                        cpu_samples.push((t, cpu_percent(a, b, now - last.0)));
                    }
                    last = (now, cpu);
                }
            }
            ClientData {
                runtime_lag: lag,
                cpu_samples,
            }
        });
        ClientProbe { stop, handle }
    }

    /// Stops probing.
    pub async fn finish(self) -> ClientData {
        let _ = self.stop.send(true);
        self.handle.await.unwrap_or_else(|_| ClientData {
            runtime_lag: new_histogram(),
            cpu_samples: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_percent_of_one_core() {
        let p = cpu_percent(
            Duration::from_millis(1000),
            Duration::from_millis(2500),
            Duration::from_secs(1),
        );
        assert!((p - 150.0).abs() < 1e-9);
        assert_eq!(
            cpu_percent(Duration::ZERO, Duration::ZERO, Duration::ZERO),
            0.0
        );
    }

    #[test]
    fn server_cpu_uses_the_server_reading_times() {
        let r = |cpu, ts| NodeReading {
            cpu_total_ms: Some(cpu),
            process_timestamp_ms: ts,
            ..NodeReading::default()
        };
        let wall = Duration::from_secs(10);
        let p = server_cpu_percent(&r(1000, Some(5000)), &r(2000, Some(7000)), wall);
        assert_eq!(p, Some(50.0));
        assert_eq!(
            server_cpu_percent(&r(1000, Some(5000)), &r(1000, Some(5000)), wall),
            None
        );
        assert_eq!(
            server_cpu_percent(&r(0, None), &r(5000, None), wall),
            Some(50.0)
        );
    }

    #[test]
    fn own_cpu_time_grows() {
        let a = process_cpu_time().unwrap();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        std::hint::black_box(x);
        let b = process_cpu_time().unwrap();
        assert!(b >= a);
    }
}
