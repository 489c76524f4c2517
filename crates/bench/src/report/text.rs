//! Plain-text rendering: `ab`-style blocks, a summary table, the comparison and warnings.

use super::{KindReport, PhaseReport, Report};
use crate::histogram::PERCENTILES;
use std::fmt::Write as _;

/// Right-aligned columns; the first column is left-aligned.
fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            let pad = widths[c].saturating_sub(cell.chars().count());
            if c == 0 {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str("  ");
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Milliseconds with 3 significant-ish digits.
pub fn fmt_ms(ms: f64) -> String {
    if ms >= 100.0 {
        format!("{ms:.0}")
    } else if ms >= 10.0 {
        format!("{ms:.1}")
    } else {
        format!("{ms:.2}")
    }
}

/// Bytes as KiB/MiB/GiB.
pub fn fmt_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2} GiB", b / (1024.0 * 1024.0 * 1024.0))
    } else if b >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", b / (1024.0 * 1024.0))
    } else {
        format!("{:.1} KiB", b / 1024.0)
    }
}

fn pct_label(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{p:.0}%")
    } else {
        format!("{p}%")
    }
}

fn ab_block(out: &mut String, report: &Report, phase: &PhaseReport, k: &KindReport) {
    let t = &report.targets[phase.target];
    let _ = writeln!(
        out,
        "Server:                 {}",
        t.server.as_deref().unwrap_or("?")
    );
    let _ = writeln!(out, "URL:                    {}", t.url);
    let _ = writeln!(
        out,
        "Request:                {} {}  ({})",
        k.method, k.path, k.name
    );
    let mode = match phase.rate {
        Some(r) => format!(
            "open loop at {r} req/s, at most {} in flight",
            phase.concurrency
        ),
        None => format!("closed loop, {} connections", phase.concurrency),
    };
    let ka = if phase.keep_alive {
        "keep-alive"
    } else {
        "new connection per request"
    };
    let _ = writeln!(out, "Concurrency Level:      {mode}, {ka}");
    let _ = writeln!(
        out,
        "Time taken for tests:   {:.3} seconds",
        phase.elapsed_s
    );
    let _ = writeln!(out, "Complete requests:      {}", k.ok + k.non_2xx);
    let _ = writeln!(out, "Failed requests:        {}", k.errors);
    for (kind, n) in &k.error_kinds {
        let _ = writeln!(out, "   ({kind}: {n})");
    }
    let _ = writeln!(out, "Non-2xx responses:      {}", k.non_2xx);
    if k.docs > 0 || k.item_errors > 0 {
        let _ = writeln!(
            out,
            "Documents written:      {} ({:.1} docs/s), {} failed bulk items",
            k.docs, k.docs_per_sec, k.item_errors
        );
    }
    if phase.warmup_requests > 0 {
        let _ = writeln!(
            out,
            "Warm-up requests:       {} (not counted)",
            phase.warmup_requests
        );
    }
    if phase.rate.is_some() && phase.late_sends > 0 {
        let _ = writeln!(
            out,
            "Late sends:             {} (waited for a free connection; counted in the latency)",
            phase.late_sends
        );
    }
    let _ = writeln!(
        out,
        "Requests per second:    {:.2} [#/sec] (mean)",
        k.requests_per_sec
    );
    if k.requests_per_sec > 0.0 {
        let _ = writeln!(
            out,
            "Time per request:       {:.3} [ms] (mean)",
            k.latency_ms.mean
        );
    }
    if k.elapsed_s > 0.0 {
        let _ = writeln!(
            out,
            "Transfer rate:          {:.2} [Kbytes/sec] received",
            k.bytes_in as f64 / 1024.0 / phase.elapsed_s.max(1e-9)
        );
    }
    let _ = writeln!(out);
    let from = if phase.rate.is_some() {
        " (from the intended send time)"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "Percentage of the requests served within a certain time (ms){from}"
    );
    for (p, v) in k.latency_ms.table() {
        let tail = if p == 100.0 { " (longest request)" } else { "" };
        let _ = writeln!(out, "  {:>6} {:>9}{tail}", pct_label(p), fmt_ms(v));
    }
    if let Some(s) = &k.service_ms {
        let _ = writeln!(
            out,
            "  service time (from the actual send): 50% {}  99% {}  99.9% {}  100% {}",
            fmt_ms(s.p50),
            fmt_ms(s.p99),
            fmt_ms(s.p99_9),
            fmt_ms(s.p100)
        );
    }
    resources(out, phase);
    for m in k.error_samples.iter().take(3) {
        let _ = writeln!(out, "  e.g. {m}");
    }
    let _ = writeln!(out);
}

fn resources(out: &mut String, phase: &PhaseReport) {
    let mut parts = Vec::new();
    if let Some(s) = &phase.server {
        if let Some(c) = s.cpu_pct {
            parts.push(format!("server CPU {c:.0}%"));
        }
        if let Some(r) = s.rss_max_bytes {
            parts.push(format!("RSS {}", fmt_bytes(r)));
        } else if let Some(h) = s.heap_max_bytes {
            parts.push(format!("heap {}", fmt_bytes(h)));
        }
        if let Some(st) = s.store_bytes_after {
            parts.push(format!("store {}", fmt_bytes(st)));
        }
        if let Some(c) = &s.counters {
            parts.push(format!(
                "_stats: query_total +{}, index_total +{}, get +{}",
                c.search_query_total, c.indexing_index_total, c.get_total
            ));
        }
    }
    if let Some(c) = phase.client_cpu_pct {
        parts.push(format!("client CPU {c:.0}%"));
    }
    if !parts.is_empty() {
        let _ = writeln!(out, "  {} (CPU in % of one core)", parts.join(", "));
    }
}

fn summary(report: &Report) -> String {
    let compare = report.targets.len() > 1;
    let mut head = vec!["name".to_string()];
    if compare {
        head.push("target".into());
    }
    for h in ["requests", "req/s", "errors", "non-2xx"] {
        head.push(h.into());
    }
    head.extend(PERCENTILES.iter().map(|p| pct_label(*p)));
    head.push("srv CPU".into());
    head.push("cli CPU".into());
    let mut rows = vec![head];
    for ph in &report.phases {
        for k in &ph.kinds {
            let name = if ph.kinds.len() > 1 && ph.name != k.name {
                format!("{}/{}", ph.name, k.name)
            } else {
                k.name.clone()
            };
            let mut row = vec![name];
            if compare {
                row.push(["A", "B"].get(ph.target).unwrap_or(&"?").to_string());
            }
            row.push(k.requests.to_string());
            row.push(format!("{:.1}", k.requests_per_sec));
            row.push(k.errors.to_string());
            row.push(k.non_2xx.to_string());
            row.extend(k.latency_ms.table().iter().map(|(_, v)| fmt_ms(*v)));
            let cpu = ph.server.as_ref().and_then(|s| s.cpu_pct);
            row.push(cpu.map_or("-".into(), |c| format!("{c:.0}%")));
            row.push(ph.client_cpu_pct.map_or("-".into(), |c| format!("{c:.0}%")));
            rows.push(row);
        }
    }
    table(&rows)
}

fn comparison(report: &Report) -> String {
    let mut rows = vec![vec![
        "name".to_string(),
        "req/s B/A".into(),
        "mean".into(),
        "50%".into(),
        "90%".into(),
        "99%".into(),
        "99.9%".into(),
        "100%".into(),
    ]];
    let f = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.2}"));
    for c in &report.comparison {
        let l = |k: &str| f(c.latency.get(k).copied().flatten());
        rows.push(vec![
            c.name.clone(),
            f(c.requests_per_sec),
            l("mean"),
            l("p50"),
            l("p90"),
            l("p99"),
            l("p99_9"),
            l("p100"),
        ]);
    }
    table(&rows)
}

fn windows(out: &mut String, report: &Report, phase: &PhaseReport) {
    let mut head = vec!["t (s)".to_string()];
    for k in &phase.kinds {
        head.push(format!("{} n", k.name));
        head.push("p50".into());
        head.push("p99".into());
        head.push("max".into());
    }
    let n = phase
        .kinds
        .iter()
        .map(|k| k.windows.len())
        .max()
        .unwrap_or(0);
    let samples = report
        .resources
        .get(phase.target)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let server = super::server_windows(samples, phase, n);
    let has_server = server
        .iter()
        .any(|w| w.refreshes.is_some() || w.cpu_pct.is_some());
    if has_server {
        for h in ["srv CPU", "refreshes", "merges", "segments"] {
            head.push(h.into());
        }
    }
    let mut rows = vec![head];
    let opt = |x: Option<u64>| x.map_or("-".to_string(), |x| x.to_string());
    for (i, srv) in server.iter().enumerate() {
        let mut row = vec![format!("{i}")];
        for k in &phase.kinds {
            match k.windows.get(i) {
                Some(w) => {
                    row.push(w.requests.to_string());
                    row.push(fmt_ms(w.p50));
                    row.push(fmt_ms(w.p99));
                    row.push(fmt_ms(w.max));
                }
                None => row.extend(["-", "-", "-", "-"].map(String::from)),
            }
        }
        if has_server {
            let w = srv;
            row.push(w.cpu_pct.map_or("-".into(), |c| format!("{c:.0}%")));
            row.push(opt(w.refreshes));
            row.push(opt(w.merges));
            row.push(opt(w.segments));
        }
        rows.push(row);
    }
    out.push_str(&table(&rows));
    for e in &phase.events {
        let _ = writeln!(out, "  at {:.1}s: {}", e.t, e.label);
    }
    for iv in &phase.intervals {
        let _ = writeln!(
            out,
            "\nRequests started {} ({:.1}-{:.1} s, ms):",
            iv.label, iv.from_s, iv.to_s
        );
        let mut rows = vec![["kind", "n", "50%", "99%", "99.9%", "100%", "99.9%/50%"]
            .map(String::from)
            .to_vec()];
        for (name, p) in &iv.kinds {
            rows.push(vec![
                name.clone(),
                p.count.to_string(),
                fmt_ms(p.p50),
                fmt_ms(p.p99),
                fmt_ms(p.p99_9),
                fmt_ms(p.p100),
                if p.p50 > 0.0 {
                    format!("{:.1}", p.p99_9 / p.p50)
                } else {
                    "-".into()
                },
            ]);
        }
        out.push_str(&table(&rows));
    }
}

/// The whole text report.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let kinds: usize = report.phases.iter().map(|p| p.kinds.len()).sum();
    if kinds <= 3 {
        for ph in &report.phases {
            for k in &ph.kinds {
                ab_block(&mut out, report, ph, k);
            }
        }
    } else {
        for (i, t) in report.targets.iter().enumerate() {
            let label = if report.targets.len() > 1 {
                format!("{} ", ["A", "B"].get(i).unwrap_or(&"?"))
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "Target {label}{} ({})",
                t.url,
                t.server.as_deref().unwrap_or("?")
            );
        }
        if let Some(ph) = report.phases.first() {
            let mode = match ph.rate {
                Some(r) => format!("open loop at {r} req/s"),
                None => format!("closed loop, {} connections", ph.concurrency),
            };
            let _ = writeln!(
                out,
                "{mode}, {}; latency in ms",
                if ph.keep_alive {
                    "keep-alive"
                } else {
                    "new connection per request"
                }
            );
        }
        let _ = writeln!(out);
    }
    out.push_str(&summary(report));
    if matches!(report.command.as_str(), "mixed") {
        for ph in &report.phases {
            let _ = writeln!(out, "\nLatency over time (one-second windows, ms):");
            windows(&mut out, report, ph);
        }
    }
    if !report.comparison.is_empty() {
        let _ = writeln!(
            out,
            "\nB relative to A (req/s above 1 and latency below 1: B is faster):"
        );
        out.push_str(&comparison(report));
    }
    let c = &report.client;
    let _ = writeln!(
        out,
        "\nClient: CPU {} of one core ({} worker threads, {} cores), runtime lag p99 {} ms",
        c.cpu_pct.map_or("-".into(), |x| format!("{x:.0}%")),
        c.worker_threads,
        c.cores,
        fmt_ms(c.runtime_lag_p99_ms)
    );
    for w in &report.warnings {
        let _ = writeln!(out, "WARNING: {w}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_alignment() {
        let t = table(&[
            vec!["name".into(), "n".into()],
            vec!["term".into(), "12345".into()],
        ]);
        assert_eq!(t, "name      n\nterm  12345\n");
        assert_eq!(fmt_ms(1.234), "1.23");
        assert_eq!(fmt_ms(12.34), "12.3");
        assert_eq!(fmt_ms(123.4), "123");
        assert_eq!(pct_label(99.9), "99.9%");
        assert_eq!(pct_label(50.0), "50%");
    }
}
