//! Progress of long commands (`load`, `gen`) on stderr: an indicatif bar with rate and ETA on
//! a terminal, and a plain line every few seconds otherwise (indicatif draws nothing when
//! stderr is not a terminal, so logs and CI would show nothing for minutes).

use indicatif::{HumanBytes, ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What is counted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Unit {
    Docs,
    Bytes,
}

/// A progress report, cheap to clone across tasks.
#[derive(Clone)]
pub struct Progress(Arc<Inner>);

enum Inner {
    Hidden,
    Bar(ProgressBar),
    Lines(Lines),
}

struct Lines {
    what: String,
    unit: Unit,
    total: u64,
    pos: AtomicU64,
    started: Instant,
    last: Mutex<Instant>,
    every: Duration,
}

impl Progress {
    /// A bar on a terminal, plain lines every 5 s otherwise, nothing when `hidden`.
    pub fn new(what: &str, total: u64, unit: Unit, hidden: bool) -> Progress {
        if hidden {
            return Progress(Arc::new(Inner::Hidden));
        }
        if !std::io::stderr().is_terminal() {
            let now = Instant::now();
            return Progress(Arc::new(Inner::Lines(Lines {
                what: what.to_string(),
                unit,
                total,
                pos: AtomicU64::new(0),
                started: now,
                last: Mutex::new(now),
                every: Duration::from_secs(5),
            })));
        }
        let template = match unit {
            Unit::Docs => "{bar:40} {human_pos}/{human_len} docs [{elapsed}<{eta}] {per_sec}",
            Unit::Bytes => "{bar:40} {bytes}/{total_bytes} [{elapsed}<{eta}] {bytes_per_sec}",
        };
        let bar = ProgressBar::new(total);
        bar.set_style(ProgressStyle::with_template(template).expect("valid template"));
        Progress(Arc::new(Inner::Bar(bar)))
    }

    pub fn inc(&self, n: u64) {
        match &*self.0 {
            Inner::Hidden => {}
            Inner::Bar(bar) => bar.inc(n),
            Inner::Lines(l) => {
                let pos = l.pos.fetch_add(n, Ordering::Relaxed) + n;
                let mut last = l.last.lock().expect("not poisoned");
                if last.elapsed() >= l.every {
                    *last = Instant::now();
                    eprintln!(
                        "{}",
                        line(&l.what, l.unit, pos, l.total, l.started.elapsed())
                    );
                }
            }
        }
    }

    /// Clears the bar (the commands print their own summary).
    pub fn finish(&self) {
        if let Inner::Bar(bar) = &*self.0 {
            bar.finish_and_clear();
        }
    }
}

/// One plain progress line: `what: pos/total unit (pct%), rate/s, ETA`.
fn line(what: &str, unit: Unit, pos: u64, total: u64, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64().max(1e-9);
    let rate = pos as f64 / secs;
    let pct = if total == 0 {
        100.0
    } else {
        pos as f64 * 100.0 / total as f64
    };
    let eta = if rate > 0.0 {
        format!("{:.0}s", total.saturating_sub(pos) as f64 / rate)
    } else {
        "?".to_string()
    };
    match unit {
        Unit::Docs => {
            format!("{what}: {pos}/{total} docs ({pct:.0}%), {rate:.0} docs/s, ETA {eta}")
        }
        Unit::Bytes => format!(
            "{what}: {}/{} ({pct:.0}%), {}/s, ETA {eta}",
            HumanBytes(pos),
            HumanBytes(total),
            HumanBytes(rate as u64)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines_give_rate_and_eta() {
        assert_eq!(
            line("gen", Unit::Docs, 250, 1000, Duration::from_secs(5)),
            "gen: 250/1000 docs (25%), 50 docs/s, ETA 15s"
        );
        assert_eq!(
            line("load", Unit::Bytes, 0, 2048, Duration::from_secs(1)),
            "load: 0 B/2.00 KiB (0%), 0 B/s, ETA ?"
        );
    }

    #[test]
    fn hidden_progress_counts_nothing() {
        let p = Progress::new("x", 10, Unit::Docs, true);
        p.inc(5);
        p.finish();
    }
}
