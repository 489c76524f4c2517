//! When requests are due: the open-loop schedule and replay pacing.
//!
//! In open-loop mode request *i* is due at a time fixed in advance (`i / rate` after the
//! start for uniform arrivals, a Poisson process for `--arrival poisson`), whatever happened
//! to earlier requests. Its latency is measured from that due time, so time spent waiting for
//! a free connection because the server was slow counts against the server: coordinated
//! omission is accounted for.

use crate::workload::rng::Rng;
use std::time::Duration;

/// Arrival process of an open-loop schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// Evenly spaced: request i is due at i / rate.
    Uniform,
    /// Exponentially distributed gaps with mean 1 / rate.
    Poisson,
}

enum Slots {
    Rate {
        rate: f64,
        arrival: Arrival,
        rng: Rng,
        poisson_t: f64,
    },
    Offsets(Vec<Duration>),
}

/// A sequence of due times, relative to the phase start.
pub struct Schedule {
    slots: Slots,
    next: u64,
    limit: Option<u64>,
    horizon: Option<Duration>,
}

impl Schedule {
    /// `rate` requests per second until `horizon` or `limit` requests, whichever comes first.
    pub fn fixed_rate(
        rate: f64,
        arrival: Arrival,
        seed: u64,
        horizon: Option<Duration>,
        limit: Option<u64>,
    ) -> Schedule {
        assert!(rate > 0.0, "rate must be positive");
        Schedule {
            slots: Slots::Rate {
                rate,
                arrival,
                rng: Rng::new(seed ^ 0x5eed),
                poisson_t: 0.0,
            },
            next: 0,
            limit,
            horizon,
        }
    }

    /// Explicit due times (replay); they must not decrease.
    pub fn offsets(offsets: Vec<Duration>) -> Schedule {
        Schedule {
            limit: Some(offsets.len() as u64),
            slots: Slots::Offsets(offsets),
            next: 0,
            horizon: None,
        }
    }

    /// The next (sequence number, due offset), or `None` when the schedule is exhausted.
    pub fn next_slot(&mut self) -> Option<(u64, Duration)> {
        let i = self.next;
        if self.limit.is_some_and(|l| i >= l) {
            return None;
        }
        let due = match &mut self.slots {
            Slots::Rate {
                rate,
                arrival: Arrival::Uniform,
                ..
            } => Duration::from_secs_f64(i as f64 / *rate),
            Slots::Rate {
                rate,
                arrival: Arrival::Poisson,
                rng,
                poisson_t,
            } => {
                let t = *poisson_t;
                *poisson_t += rng.exponential() / *rate;
                Duration::from_secs_f64(t)
            }
            Slots::Offsets(v) => v[i as usize],
        };
        if self.horizon.is_some_and(|h| due >= h) {
            return None;
        }
        self.next += 1;
        Some((i, due))
    }
}

/// Due offsets for replaying recorded requests.
///
/// `timestamps` are the recorded times in milliseconds (`None` when a line has none: it is due
/// with the line before). With `speed` 2.0 the recording plays twice as fast. Out-of-order
/// timestamps never move a request before the one recorded above it.
pub fn replay_offsets(timestamps: &[Option<f64>], speed: f64) -> Vec<Duration> {
    let speed = if speed > 0.0 { speed } else { 1.0 };
    let origin = timestamps.iter().flatten().copied().next().unwrap_or(0.0);
    let mut last = 0.0f64;
    timestamps
        .iter()
        .map(|t| {
            if let Some(t) = t {
                last = last.max((t - origin) / speed);
            }
            Duration::from_secs_f64(last / 1000.0)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(mut s: Schedule) -> Vec<(u64, Duration)> {
        std::iter::from_fn(|| s.next_slot()).collect()
    }

    #[test]
    fn uniform_schedule_is_evenly_spaced_and_bounded() {
        let slots = drain(Schedule::fixed_rate(
            100.0,
            Arrival::Uniform,
            1,
            Some(Duration::from_secs(1)),
            None,
        ));
        assert_eq!(slots.len(), 100);
        assert_eq!(slots[0], (0, Duration::ZERO));
        assert_eq!(slots[1].1, Duration::from_millis(10));
        assert_eq!(slots[99], (99, Duration::from_millis(990)));
        // No drift after many slots.
        let mut s = Schedule::fixed_rate(3.0, Arrival::Uniform, 1, None, Some(3001));
        let last = std::iter::from_fn(|| s.next_slot()).last().unwrap();
        assert_eq!(last.1, Duration::from_secs(1000));
        // A count limit ends it before the horizon.
        let slots = drain(Schedule::fixed_rate(
            1000.0,
            Arrival::Uniform,
            1,
            Some(Duration::from_secs(10)),
            Some(7),
        ));
        assert_eq!(slots.len(), 7);
    }

    #[test]
    fn poisson_schedule_has_the_requested_mean_rate() {
        let slots = drain(Schedule::fixed_rate(
            1000.0,
            Arrival::Poisson,
            9,
            Some(Duration::from_secs(20)),
            None,
        ));
        let n = slots.len() as f64;
        assert!((n - 20_000.0).abs() < 600.0, "{n}");
        assert!(slots.windows(2).all(|w| w[0].1 <= w[1].1));
        // Gaps vary (not evenly spaced), with a coefficient of variation near 1.
        let gaps: Vec<f64> = slots
            .windows(2)
            .map(|w| (w[1].1 - w[0].1).as_secs_f64())
            .collect();
        let m = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let sd = (gaps.iter().map(|g| (g - m) * (g - m)).sum::<f64>() / gaps.len() as f64).sqrt();
        assert!((sd / m - 1.0).abs() < 0.05, "cv {}", sd / m);
    }

    #[test]
    fn replay_pacing() {
        let ts = [Some(1000.0), Some(1500.0), None, Some(1400.0), Some(3000.0)];
        let at1 = replay_offsets(&ts, 1.0);
        let ms: Vec<u128> = at1.iter().map(|d| d.as_millis()).collect();
        assert_eq!(ms, [0, 500, 500, 500, 2000]);
        let at2: Vec<u128> = replay_offsets(&ts, 2.0)
            .iter()
            .map(|d| d.as_millis())
            .collect();
        assert_eq!(at2, [0, 250, 250, 250, 1000]);
        let half: Vec<u128> = replay_offsets(&ts, 0.5)
            .iter()
            .map(|d| d.as_millis())
            .collect();
        assert_eq!(half, [0, 1000, 1000, 1000, 4000]);
        let none = replay_offsets(&[None, None], 1.0);
        assert_eq!(none, [Duration::ZERO, Duration::ZERO]);
        let s = drain(Schedule::offsets(at1));
        assert_eq!(s.len(), 5);
        assert_eq!(s[4], (4, Duration::from_secs(2)));
    }
}
