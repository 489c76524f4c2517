//! Honesty checks on a finished report: is the client the bottleneck, did requests fail, was
//! the intended rate reached?

use crate::report::Report;

/// Client CPU above this share of its worker threads' capacity means the client is saturated.
const CLIENT_CPU_SHARE: f64 = 0.85;
/// Runtime lag p99 above this (ms) means the client's runtime could not keep up.
const RUNTIME_LAG_MS: f64 = 5.0;
/// Lag percentiles need this many samples before they are trusted (one second of probing).
const MIN_SAMPLES: u64 = 100;
/// Client + server CPU above this share of the machine (loopback only).
const MACHINE_SHARE: f64 = 0.90;

/// Warnings for a report. `loopback[i]` says whether target i runs on this machine.
pub fn warnings(report: &Report, loopback: &[bool]) -> Vec<String> {
    let mut w = Vec::new();
    let c = &report.client;
    let capacity = 100.0 * c.worker_threads.min(c.cores.max(1)) as f64;
    for ph in &report.phases {
        let label = if report.phases.len() > 1 {
            format!("{}: ", ph.name)
        } else {
            String::new()
        };
        if let Some(cpu) = ph.client_cpu_pct {
            if cpu >= CLIENT_CPU_SHARE * capacity {
                w.push(format!(
                    "{label}the client used {cpu:.0}% CPU of the {capacity:.0}% its {} worker threads can use: \
                     the client, not the server, is likely the bottleneck (the server may be faster than measured; \
                     run the client on another machine or give it more threads)",
                    c.worker_threads
                ));
            }
            let server_cpu = ph.server.as_ref().and_then(|s| s.cpu_pct);
            if let (Some(srv), true) = (
                server_cpu,
                loopback.get(ph.target).copied().unwrap_or(false),
            ) {
                let machine = 100.0 * c.cores as f64;
                if cpu + srv >= MACHINE_SHARE * machine && cpu >= 0.2 * machine {
                    w.push(format!(
                        "{label}client ({cpu:.0}%) and server ({srv:.0}%) share this machine's {} cores ({machine:.0}%): \
                         the machine is saturated and the client takes a large share of it; the server alone would be faster",
                        c.cores
                    ));
                }
            }
        }
        if let Some(lag) = ph.timer_lag_p99_ms {
            let samples: u64 = ph.kinds.iter().map(|k| k.requests).sum();
            if lag > RUNTIME_LAG_MS && samples >= MIN_SAMPLES {
                w.push(format!(
                    "{label}idle connections woke up {lag:.1} ms late (p99) for their scheduled requests: \
                     the client could not keep the schedule"
                ));
            }
        }
        let sent: u64 = ph.kinds.iter().map(|k| k.requests).sum();
        let answered: u64 = ph.kinds.iter().map(|k| k.ok + k.non_2xx).sum();
        if let Some(rate) = ph.rate {
            let achieved = if ph.elapsed_s > 0.0 {
                answered as f64 / ph.elapsed_s
            } else {
                0.0
            };
            if achieved < 0.9 * rate && sent > 0 {
                w.push(format!(
                    "{label}intended {rate} req/s, achieved {achieved:.1}: the server (or the {} connections) could \
                     not keep up; latencies include the time requests waited for their turn",
                    ph.concurrency
                ));
            }
        }
        let not_sent: u64 = ph
            .kinds
            .iter()
            .filter_map(|k| k.error_kinds.get("not_sent"))
            .sum();
        if not_sent > 0 {
            w.push(format!(
                "{label}{not_sent} requests fell more than {} s behind schedule and were not sent",
                crate::runner::DROP_AFTER.as_secs()
            ));
        }
        let errors: u64 = ph.kinds.iter().map(|k| k.errors).sum::<u64>() - not_sent;
        if errors > 0 {
            w.push(format!(
                "{label}{errors} of {sent} requests got no response"
            ));
        }
        let non2xx: u64 = ph.kinds.iter().map(|k| k.non_2xx).sum();
        if non2xx > 0 {
            w.push(format!(
                "{label}{non2xx} of {sent} responses were not 2xx (their latency is included)"
            ));
        }
        let items: u64 = ph.kinds.iter().map(|k| k.item_errors).sum();
        if items > 0 {
            w.push(format!("{label}{items} bulk items failed"));
        }
    }
    if c.runtime_lag_p99_ms > RUNTIME_LAG_MS && c.runtime_lag_samples >= MIN_SAMPLES {
        w.push(format!(
            "the client's timers fired {:.1} ms late at p99 (its threads did not get a CPU in time: the client \
             is overloaded or competes with the server for this machine's cores): latencies include client-side delay",
            c.runtime_lag_p99_ms
        ));
    }
    w
}
