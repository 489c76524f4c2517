//! Latency histograms (HDR, microsecond resolution) and the percentile summary of the reports.
//!
//! Values are recorded in microseconds, from 1 µs to one hour, with 3 significant digits
//! (any value is stored within 0.1 %). Reports show milliseconds.

use hdrhistogram::{Counter, Histogram};
use serde::{Deserialize, Serialize};

/// The percentiles every report shows: `ab`'s table plus 99.9.
pub const PERCENTILES: [f64; 10] = [50.0, 66.0, 75.0, 80.0, 90.0, 95.0, 98.0, 99.0, 99.9, 100.0];

const MAX_MICROS: u64 = 3_600_000_000;

/// A latency histogram in microseconds with 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_MICROS, 3).expect("valid histogram bounds")
}

/// A smaller histogram (2 significant digits, 32-bit counts, ~13 KB) for the one-second
/// windows.
pub fn new_window_histogram() -> Histogram<u32> {
    Histogram::new_with_bounds(1, MAX_MICROS, 2).expect("valid histogram bounds")
}

/// Records a duration (saturating at one hour, at least 1 µs).
pub fn record<T: Counter>(h: &mut Histogram<T>, d: std::time::Duration) {
    let us = (d.as_micros() as u64).clamp(1, MAX_MICROS);
    h.saturating_record(us);
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// Summary of a latency histogram, in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    /// Number of values.
    pub count: u64,
    /// Smallest value.
    pub min: f64,
    /// Mean.
    pub mean: f64,
    /// Standard deviation.
    pub stdev: f64,
    /// 50th percentile (median).
    pub p50: f64,
    /// 66th percentile.
    pub p66: f64,
    /// 75th percentile.
    pub p75: f64,
    /// 80th percentile.
    pub p80: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 98th percentile.
    pub p98: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p99_9: f64,
    /// Largest value (100th percentile).
    pub p100: f64,
}

impl Percentiles {
    /// Summarizes a histogram (all zeros when empty).
    pub fn of<T: Counter>(h: &Histogram<T>) -> Percentiles {
        if h.is_empty() {
            return Percentiles::default();
        }
        let q = |p: f64| ms(h.value_at_quantile(p / 100.0));
        Percentiles {
            count: h.len(),
            min: ms(h.min()),
            mean: h.mean() / 1000.0,
            stdev: h.stdev() / 1000.0,
            p50: q(50.0),
            p66: q(66.0),
            p75: q(75.0),
            p80: q(80.0),
            p90: q(90.0),
            p95: q(95.0),
            p98: q(98.0),
            p99: q(99.0),
            p99_9: q(99.9),
            p100: ms(h.max()),
        }
    }

    /// (percentile, value) pairs in [`PERCENTILES`] order.
    pub fn table(&self) -> [(f64, f64); 10] {
        [
            (50.0, self.p50),
            (66.0, self.p66),
            (75.0, self.p75),
            (80.0, self.p80),
            (90.0, self.p90),
            (95.0, self.p95),
            (98.0, self.p98),
            (99.0, self.p99),
            (99.9, self.p99_9),
            (100.0, self.p100),
        ]
    }
}

/// The latency distribution as (percentile, ms) points for plotting, finest in the tail.
pub fn distribution(h: &Histogram<u64>) -> Vec<[f64; 2]> {
    if h.is_empty() {
        return Vec::new();
    }
    let mut points: Vec<[f64; 2]> = Vec::new();
    for v in h.iter_quantiles(4) {
        let p = v.quantile_iterated_to() * 100.0;
        let val = ms(h.highest_equivalent(v.value_iterated_to()));
        if let Some(last) = points.last_mut() {
            if last[0] == p {
                last[1] = val;
                continue;
            }
        }
        points.push([p, val]);
        if points.len() >= 400 {
            break;
        }
    }
    if points.last().map(|p| p[0]) != Some(100.0) {
        points.push([100.0, ms(h.max())]);
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn percentiles_of_a_uniform_distribution() {
        let mut h = new_histogram();
        for i in 1..=10_000u64 {
            record(&mut h, Duration::from_micros(i * 100)); // 0.1 ms .. 1000 ms
        }
        let p = Percentiles::of(&h);
        assert_eq!(p.count, 10_000);
        let close = |a: f64, b: f64| (a - b).abs() <= b * 0.001 + 0.001;
        assert!(close(p.p50, 500.0), "{}", p.p50);
        assert!(close(p.p90, 900.0), "{}", p.p90);
        assert!(close(p.p99, 990.0), "{}", p.p99);
        assert!(close(p.p99_9, 999.0), "{}", p.p99_9);
        assert!(close(p.p100, 1000.0), "{}", p.p100);
        assert!(close(p.min, 0.1));
        assert!(close(p.mean, 500.05));
        // Monotone.
        let t = p.table();
        assert!(t.windows(2).all(|w| w[0].1 <= w[1].1));
    }

    #[test]
    fn empty_and_saturating() {
        assert_eq!(Percentiles::of(&new_histogram()), Percentiles::default());
        let mut h = new_histogram();
        record(&mut h, Duration::from_secs(10_000));
        record(&mut h, Duration::ZERO);
        assert_eq!(h.len(), 2);
        assert_eq!(h.min(), 1);
    }

    #[test]
    fn distribution_is_monotone_and_ends_at_max() {
        let mut h = new_histogram();
        for i in 1..=1000u64 {
            record(&mut h, Duration::from_micros(i * i));
        }
        let d = distribution(&h);
        assert!(d
            .windows(2)
            .all(|w| w[0][0] < w[1][0] && w[0][1] <= w[1][1]));
        assert_eq!(d.last().unwrap()[0], 100.0);
        assert!((d.last().unwrap()[1] - 1000.0).abs() < 1.0);
    }

    #[test]
    fn merged_histograms_give_the_combined_percentiles() {
        let mut a = new_histogram();
        let mut b = new_histogram();
        for i in 0..500u64 {
            record(&mut a, Duration::from_micros(1000 + i));
            record(&mut b, Duration::from_micros(2000 + i));
        }
        a.add(&b).unwrap();
        let p = Percentiles::of(&a);
        assert_eq!(p.count, 1000);
        assert!(p.p50 >= 1.49 && p.p50 <= 1.51, "{}", p.p50);
        assert!(p.p75 >= 2.24 && p.p75 <= 2.26, "{}", p.p75);
    }
}
