//! A self-contained HTML report: tables plus inline SVG charts, no scripts, no network assets.
//!
//! Per query (or per phase): the latency distribution, latency over time (p50 / p99 per
//! one-second window), throughput over time and, where the target exposes `_nodes/stats`,
//! server and client CPU over time. In compare mode both targets share the same axes.

use super::svg::{esc, Chart, Series, XScale, PALETTE};
use super::text::{fmt_bytes, fmt_ms};
use super::{PhaseReport, Report};
use crate::histogram::PERCENTILES;
use std::fmt::Write as _;

const STYLE: &str = "body{font-family:sans-serif;margin:24px;color:#222;max-width:1500px}\
table{border-collapse:collapse;margin:8px 0 16px}td,th{border:1px solid #ddd;padding:3px 7px;\
text-align:right;font-size:13px}th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}\
.warn{background:#fff4d6;border:1px solid #e0b100;padding:8px 12px;margin:8px 0}\
.charts{display:flex;flex-wrap:wrap;gap:12px}h2{margin-top:32px;border-bottom:1px solid #ccc}\
pre{background:#f7f7f7;padding:8px;font-size:12px;overflow:auto}.muted{color:#777}";

fn target_label(report: &Report, i: usize) -> String {
    let t = &report.targets[i];
    let host = t.url.split("://").nth(1).unwrap_or(&t.url);
    let who = match &t.server {
        Some(s) => format!("{s} @ {host}"),
        None => host.to_string(),
    };
    if report.targets.len() > 1 {
        format!("{} {}", ["A", "B"].get(i).unwrap_or(&"?"), who)
    } else {
        who
    }
}

fn summary_table(report: &Report) -> String {
    let mut s = String::from("<table><tr><th>name</th>");
    let compare = report.targets.len() > 1;
    if compare {
        s.push_str("<th>target</th>");
    }
    s.push_str("<th>requests</th><th>req/s</th><th>errors</th><th>non-2xx</th>");
    for p in PERCENTILES {
        let _ = write!(s, "<th>{p}%</th>");
    }
    s.push_str("<th>server CPU</th><th>server mem</th><th>client CPU</th></tr>");
    for ph in &report.phases {
        for k in &ph.kinds {
            let _ = write!(s, "<tr><td>{}</td>", esc(&k.name));
            if compare {
                let _ = write!(s, "<td>{}</td>", esc(&target_label(report, ph.target)));
            }
            let _ = write!(
                s,
                "<td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td>",
                k.requests, k.requests_per_sec, k.errors, k.non_2xx
            );
            for (_, v) in k.latency_ms.table() {
                let _ = write!(s, "<td>{}</td>", fmt_ms(v));
            }
            let srv = ph.server.as_ref();
            let cpu = srv.and_then(|s| s.cpu_pct);
            let mem = srv.and_then(|s| {
                s.rss_max_bytes
                    .map(|b| format!("RSS {}", fmt_bytes(b)))
                    .or(s.heap_max_bytes.map(|b| format!("heap {}", fmt_bytes(b))))
            });
            let _ = write!(
                s,
                "<td>{}</td><td>{}</td><td>{}</td></tr>",
                cpu.map_or("-".into(), |c| format!("{c:.0}%")),
                mem.unwrap_or_else(|| "-".into()),
                ph.client_cpu_pct.map_or("-".into(), |c| format!("{c:.0}%"))
            );
        }
    }
    s.push_str("</table>");
    s
}

fn comparison_table(report: &Report) -> String {
    if report.comparison.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "<h2>B relative to A</h2><p class=muted>Requests/s above 1 and latency below 1: B is faster.</p>\
         <table><tr><th>query</th><th>req/s B/A</th><th>mean</th>",
    );
    let keys = [
        "p50", "p66", "p75", "p80", "p90", "p95", "p98", "p99", "p99_9", "p100",
    ];
    for p in PERCENTILES {
        let _ = write!(s, "<th>{p}%</th>");
    }
    s.push_str("</tr>");
    let f = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.2}"));
    for c in &report.comparison {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td>",
            esc(&c.name),
            f(c.requests_per_sec),
            f(c.latency.get("mean").copied().flatten())
        );
        for k in keys {
            let _ = write!(s, "<td>{}</td>", f(c.latency.get(k).copied().flatten()));
        }
        s.push_str("</tr>");
    }
    s.push_str("</table>");
    s
}

/// (label, phase) pairs drawn together: one group per query name in compare mode, else one
/// group per phase.
fn groups(report: &Report) -> Vec<(String, Vec<&PhaseReport>)> {
    let mut out: Vec<(String, Vec<&PhaseReport>)> = Vec::new();
    for ph in &report.phases {
        if report.targets.len() > 1 {
            if let Some(g) = out.iter_mut().find(|g| g.0 == ph.name) {
                g.1.push(ph);
                continue;
            }
        }
        out.push((ph.name.clone(), vec![ph]));
    }
    out
}

fn series_label(report: &Report, ph: &PhaseReport, kind: &str, many_kinds: bool) -> String {
    let ab = ["A", "B"].get(ph.target).unwrap_or(&"?");
    match (report.targets.len() > 1, many_kinds) {
        (true, true) => format!("{ab} {kind}"),
        (true, false) => ab.to_string(),
        _ => kind.to_string(),
    }
}

fn group_charts(report: &Report, phases: &[&PhaseReport]) -> String {
    let mut dist = Vec::new();
    let mut over_time = Vec::new();
    let mut rate = Vec::new();
    let mut markers = Vec::new();
    let mut color = 0;
    let span = phases
        .iter()
        .map(|p| {
            let w = p.kinds.iter().map(|k| k.windows.len()).max().unwrap_or(0);
            p.elapsed_s.max(w as f64 * crate::WINDOW.as_secs_f64())
        })
        .fold(1.0, f64::max);
    let x_range = Some((0.0, span));
    for ph in phases {
        let many = ph.kinds.len() > 1;
        for k in &ph.kinds {
            let c = PALETTE[color % PALETTE.len()].to_string();
            color += 1;
            let label = series_label(report, ph, &k.name, many);
            dist.push(Series {
                name: label.clone(),
                color: c.clone(),
                points: k.distribution.iter().map(|p| (p[0], p[1])).collect(),
                dashed: false,
            });
            let mid = |w: &super::WindowReport| w.t + 0.5;
            let with_data = || k.windows.iter().filter(|w| w.requests > 0);
            over_time.push(Series {
                name: format!("{label} p50"),
                color: c.clone(),
                points: with_data().map(|w| (mid(w), w.p50)).collect(),
                dashed: false,
            });
            over_time.push(Series {
                name: format!("{label} p99"),
                color: c.clone(),
                points: with_data().map(|w| (mid(w), w.p99)).collect(),
                dashed: true,
            });
            rate.push(Series {
                name: label,
                color: c,
                points: k
                    .windows
                    .iter()
                    .map(|w| (mid(w), (w.requests + w.errors) as f64))
                    .collect(),
                dashed: false,
            });
        }
        for e in &ph.events {
            markers.push((e.t, e.label.clone()));
        }
    }
    let mut s = String::from("<div class=charts>");
    s.push_str(
        &Chart {
            title: "Latency distribution".into(),
            x_label: "percentile".into(),
            y_label: "latency (ms)".into(),
            x_scale: XScale::Percentile,
            series: dist,
            markers: vec![],
            x_range: None,
        }
        .render(),
    );
    s.push_str(
        &Chart {
            title: "Latency over time (p50 solid, p99 dashed, 1 s windows)".into(),
            x_label: "seconds since phase start".into(),
            y_label: "latency (ms)".into(),
            x_scale: XScale::Linear,
            series: over_time,
            markers: markers.clone(),
            x_range,
        }
        .render(),
    );
    s.push_str(
        &Chart {
            title: "Requests per second".into(),
            x_label: "seconds since phase start".into(),
            y_label: "requests".into(),
            x_scale: XScale::Linear,
            series: rate,
            markers: markers.clone(),
            x_range,
        }
        .render(),
    );
    if let Some(c) = resource_chart(report, phases, markers, x_range) {
        s.push_str(&c);
    }
    s.push_str("</div>");
    s
}

fn resource_chart(
    report: &Report,
    phases: &[&PhaseReport],
    markers: Vec<(f64, String)>,
    x_range: Option<(f64, f64)>,
) -> Option<String> {
    let mut series = Vec::new();
    let mut mem = Vec::new();
    for (i, ph) in phases.iter().enumerate() {
        let (t0, t1) = (ph.start_s, ph.start_s + ph.elapsed_s.max(1.0));
        let label = if report.targets.len() > 1 {
            format!("{} ", ["A", "B"].get(ph.target).unwrap_or(&"?"))
        } else {
            String::new()
        };
        let samples = report
            .resources
            .get(ph.target)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let inside: Vec<_> = samples.iter().filter(|s| s.t >= t0 && s.t <= t1).collect();
        let cpu: Vec<(f64, f64)> = inside
            .iter()
            .filter_map(|s| s.cpu_pct.map(|c| (s.t - t0, c)))
            .collect();
        if !cpu.is_empty() {
            series.push(Series {
                name: format!("{label}server CPU %"),
                color: PALETTE[(2 * i) % PALETTE.len()].into(),
                points: cpu,
                dashed: false,
            });
        }
        let m: Vec<(f64, f64)> = inside
            .iter()
            .filter_map(|s| {
                s.reading
                    .rss_bytes
                    .or(s.reading.heap_used_bytes)
                    .map(|b| (s.t - t0, b as f64 / 1048576.0))
            })
            .collect();
        if !m.is_empty() {
            let what = if inside.iter().any(|s| s.reading.rss_bytes.is_some()) {
                "RSS"
            } else {
                "heap"
            };
            mem.push(Series {
                name: format!("{label}server {what} MiB"),
                color: PALETTE[(2 * i + 1) % PALETTE.len()].into(),
                points: m,
                dashed: false,
            });
        }
        let client: Vec<(f64, f64)> = report
            .client
            .cpu_samples
            .iter()
            .filter(|(t, _)| *t >= t0 && *t <= t1)
            .map(|(t, c)| (t - t0, *c))
            .collect();
        if i == 0 && !client.is_empty() {
            series.push(Series {
                name: "client CPU %".into(),
                color: "#7f7f7f".into(),
                points: client,
                dashed: true,
            });
        }
    }
    let activity = activity_chart(report, phases, &markers, x_range);
    if series.is_empty() && mem.is_empty() && activity.is_none() {
        return None;
    }
    let mut s = Chart {
        title: "CPU (% of one core, from _nodes/stats and the client)".into(),
        x_label: "seconds since phase start".into(),
        y_label: "CPU %".into(),
        x_scale: XScale::Linear,
        series,
        markers: markers.clone(),
        x_range,
    }
    .render();
    if let Some(a) = activity {
        s.push_str(&a);
    }
    if !mem.is_empty() {
        s.push_str(
            &Chart {
                title: "Server memory".into(),
                x_label: "seconds since phase start".into(),
                y_label: "MiB".into(),
                x_scale: XScale::Linear,
                series: mem,
                markers,
                x_range,
            }
            .render(),
        );
    }
    Some(s)
}

/// Refreshes and merges per second and the segment count, for phases that write.
fn activity_chart(
    report: &Report,
    phases: &[&PhaseReport],
    markers: &[(f64, String)],
    x_range: Option<(f64, f64)>,
) -> Option<String> {
    let writes = phases.iter().any(|p| {
        p.kinds
            .iter()
            .any(|k| k.docs > 0 || k.method != "GET" && !k.endpoint.contains("_search"))
    });
    if !writes {
        return None;
    }
    let mut series = Vec::new();
    for (i, ph) in phases.iter().enumerate() {
        let n = ph.kinds.iter().map(|k| k.windows.len()).max().unwrap_or(0);
        let samples = report
            .resources
            .get(ph.target)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let w = super::server_windows(samples, ph, n);
        let mid = |j: usize| j as f64 + 0.5;
        let pick = |f: fn(&super::ServerWindow) -> Option<u64>| -> Vec<(f64, f64)> {
            w.iter()
                .enumerate()
                .filter_map(|(j, x)| f(x).map(|v| (mid(j), v as f64)))
                .collect()
        };
        for (name, pts, dashed) in [
            ("refreshes/s", pick(|x| x.refreshes), false),
            ("merges/s", pick(|x| x.merges), true),
            ("segments", pick(|x| x.segments), false),
        ] {
            if !pts.is_empty() {
                series.push(Series {
                    name: name.into(),
                    color: PALETTE[(3 * i + series.len()) % PALETTE.len()].into(),
                    points: pts,
                    dashed,
                });
            }
        }
    }
    (!series.is_empty()).then(|| {
        Chart {
            title: "Server refreshes, merges and segments".into(),
            x_label: "seconds since phase start".into(),
            y_label: "count".into(),
            x_scale: XScale::Linear,
            series,
            markers: markers.to_vec(),
            x_range,
        }
        .render()
    })
}

/// The whole HTML page.
pub fn render(report: &Report) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>lode bench {}</title><style>{STYLE}</style></head><body>",
        esc(&report.command)
    );
    let _ = write!(
        s,
        "<h1>lode bench {}</h1><p class=muted>{} · {} {}</p>",
        esc(&report.command),
        esc(&report.started_at),
        esc(&report.tool),
        esc(&report.version)
    );
    s.push_str("<ul>");
    for (i, t) in report.targets.iter().enumerate() {
        let _ = write!(
            s,
            "<li>{}: <code>{}</code></li>",
            esc(&target_label(report, i)),
            esc(&t.url)
        );
    }
    s.push_str("</ul>");
    for w in &report.warnings {
        let _ = write!(s, "<div class=warn>⚠ {}</div>", esc(w));
    }
    s.push_str("<h2>Summary</h2><p class=muted>Latency in ms. CPU in % of one core.</p>");
    s.push_str(&summary_table(report));
    s.push_str(&comparison_table(report));
    for (name, phases) in groups(report) {
        let _ = write!(s, "<h2>{}</h2>", esc(&name));
        for ph in &phases {
            let k = &ph.kinds[0];
            let mode = match ph.rate {
                Some(r) => format!(
                    "open loop at {r} req/s (latency from the intended send time), at most {} in flight",
                    ph.concurrency
                ),
                None => format!("closed loop, {} connections", ph.concurrency),
            };
            let _ = write!(
                s,
                "<p class=muted>{}: {} {} · {mode} · {:.2} s · warm-up {} requests</p>",
                esc(&target_label(report, ph.target)),
                esc(&k.method),
                esc(&k.path),
                ph.elapsed_s,
                ph.warmup_requests
            );
        }
        s.push_str(&group_charts(report, &phases));
    }
    let c = &report.client;
    let _ = write!(
        s,
        "<h2>Client</h2><p>CPU {} of one core; {} worker threads on {} cores; runtime lag p99 {} ms, max {} ms.</p>",
        c.cpu_pct.map_or("-".into(), |x| format!("{x:.0}%")),
        c.worker_threads,
        c.cores,
        fmt_ms(c.runtime_lag_p99_ms),
        fmt_ms(c.runtime_lag_max_ms)
    );
    let settings = serde_json::to_string_pretty(&report.settings).unwrap_or_default();
    let _ = write!(s, "<h2>Settings</h2><pre>{}</pre>", esc(&settings));
    s.push_str("</body></html>\n");
    s
}
