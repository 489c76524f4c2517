//! Command-line options shared by several subcommands.

use crate::pacing::Arrival;
use std::path::PathBuf;
use std::time::Duration;

/// Parses `10` (seconds), `10s`, `500ms`, `1.5s`, `2m`, `1h`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, mult) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = s.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("invalid duration {s:?} (e.g. 10, 10s, 500ms, 2m)"))?;
    if !(v >= 0.0 && v.is_finite()) {
        return Err(format!("invalid duration {s:?}"));
    }
    Ok(Duration::from_secs_f64(v * mult))
}

/// How much load, for how long.
#[derive(clap::Args, Debug, Clone)]
pub struct LoadOpts {
    /// Concurrent connections, like `ab -c` (open loop: at most this many requests in flight)
    /// [default: 60; write: 200]
    #[arg(short = 'c', long, value_name = "N")]
    pub concurrency: Option<usize>,
    /// Measure for this long per query (e.g. 10, 10s, 500ms, 2m) [default: 10s unless -n]
    #[arg(short = 't', long, value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Stop after this many requests per query (with -t: whichever comes first)
    #[arg(short = 'n', long, value_name = "N")]
    pub requests: Option<u64>,
    /// Open loop: send at this fixed rate (requests/s); latency counts from the intended send
    /// time, so a stalled server cannot hide its stalls (coordinated omission)
    #[arg(long, value_name = "PER_SEC")]
    pub rate: Option<f64>,
    /// Open loop arrivals: evenly spaced or Poisson
    #[arg(long, value_enum, default_value_t = Arrival::Uniform)]
    pub arrival: Arrival,
    /// Warm-up before each measured run, not counted (0 to skip)
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "1s")]
    pub warmup: Duration,
    /// Open a new TCP connection for every request, as `ab` without `-k` does
    #[arg(long)]
    pub no_keepalive: bool,
    /// Per-request timeout; a request without a response by then counts as an error
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "60s")]
    pub timeout: Duration,
}

impl LoadOpts {
    /// Concurrency with a subcommand-specific default.
    pub fn concurrency_or(&self, default: usize) -> usize {
        self.concurrency.unwrap_or(default).max(1)
    }

    /// The measuring duration: as given, or 10 s when neither -t nor -n is given.
    pub fn duration_or_default(&self) -> Option<Duration> {
        match (self.duration, self.requests) {
            (None, None) => Some(Duration::from_secs(10)),
            (d, _) => d,
        }
    }
}

/// Cache honesty.
#[derive(clap::Args, Debug, Clone)]
pub struct CacheOpts {
    /// Vary every request with parameters drawn from the workload's distributions (other
    /// accounts, dates, names, document ids) so that result caches cannot answer them all
    #[arg(long)]
    pub vary: bool,
    /// Add `request_cache=false` to every search
    #[arg(long)]
    pub no_request_cache: bool,
    /// Seed of the corpus that was loaded (variations draw its accounts)
    #[arg(long, default_value_t = 42, value_name = "SEED")]
    pub corpus_seed: u64,
    /// Accounts of the corpus that was loaded
    #[arg(long, default_value_t = crate::workload::vocab::ACCOUNTS_DEFAULT, value_name = "N")]
    pub corpus_accounts: u32,
    /// Documents loaded (ids drawn from 1..=N) [default: the index's `_count`]
    #[arg(long, value_name = "N")]
    pub corpus_docs: Option<u64>,
}

/// Reports and client settings.
#[derive(clap::Args, Debug, Clone)]
pub struct OutputOpts {
    /// Write the JSON report to FILE
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write a self-contained HTML report to FILE
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Do not poll `_stats` / `_nodes/stats` for server resources
    #[arg(long)]
    pub no_monitor: bool,
    /// Client worker threads [default: the number of cores]
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Seed of the client's random choices (variations, Poisson arrivals)
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print no text report (errors and warnings still go to stderr)
    #[arg(short, long)]
    pub quiet: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert!(parse_duration("x").is_err());
        assert!(parse_duration("-1").is_err());
    }
}
