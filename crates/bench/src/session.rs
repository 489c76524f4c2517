//! Plumbing shared by the load subcommands: targets, monitors, warm-up + measured phases,
//! and the final report (text on stdout, JSON and HTML files).

use crate::cli::{LoadOpts, OutputOpts};
use crate::control::Control;
use crate::http::{Connection, Target};
use crate::monitor::{ClientProbe, ServerMonitor, Snapshot};
use crate::pacing::{Arrival, Schedule};
use crate::report::{self, ComparisonRow, Event, KindInfo, PhaseInput, PhaseReport, Report};
use crate::runner::{self, Pacing, PhaseConfig, PhaseResult, Source};
use anyhow::{Context, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The load shape of a phase.
#[derive(Clone, Debug)]
pub struct Shape {
    /// Connection slots.
    pub concurrency: usize,
    /// Measuring duration.
    pub duration: Option<Duration>,
    /// Request limit.
    pub requests: Option<u64>,
    /// Open-loop rate.
    pub rate: Option<f64>,
    /// Open-loop arrivals.
    pub arrival: Arrival,
    /// Warm-up duration.
    pub warmup: Duration,
    /// Keep-alive.
    pub keep_alive: bool,
    /// Request timeout.
    pub timeout: Duration,
}

impl Shape {
    /// From the command line, with the subcommand's default concurrency.
    pub fn from_opts(o: &LoadOpts, default_concurrency: usize) -> Shape {
        Shape {
            concurrency: o.concurrency_or(default_concurrency),
            duration: o.duration_or_default(),
            requests: o.requests,
            rate: o.rate.filter(|r| *r > 0.0),
            arrival: o.arrival,
            warmup: o.warmup,
            keep_alive: !o.no_keepalive,
            timeout: o.timeout,
        }
    }

    /// The pacing of the measured part.
    pub fn pacing(&self, seed: u64) -> Pacing {
        match self.rate {
            Some(r) => Pacing::Open(Schedule::fixed_rate(
                r,
                self.arrival,
                seed,
                self.duration,
                self.requests,
            )),
            None => Pacing::Closed {
                duration: self.duration,
                requests: self.requests,
            },
        }
    }

    fn warmup_pacing(&self, seed: u64) -> Pacing {
        match self.rate {
            Some(r) => Pacing::Open(Schedule::fixed_rate(
                r,
                self.arrival,
                seed ^ 0xAAAA,
                Some(self.warmup),
                None,
            )),
            None => Pacing::Closed {
                duration: Some(self.warmup),
                requests: None,
            },
        }
    }
}

/// One phase to measure.
pub struct MeasureSpec {
    /// Phase name.
    pub name: String,
    /// Target index.
    pub target: usize,
    /// Requests.
    pub source: Arc<dyn Source>,
    /// Kind descriptions, in the source's kind order.
    pub kinds: Vec<KindInfo>,
    /// Load shape.
    pub shape: Shape,
    /// Seed of this phase's random choices.
    pub seed: u64,
}

/// A running benchmark command.
pub struct Session {
    /// Start of the run; report times are relative to it.
    pub origin: Instant,
    started_at: String,
    /// Set by Ctrl-C.
    pub stop: Arc<AtomicBool>,
    /// Targets.
    pub targets: Vec<Arc<Target>>,
    /// One control connection per target.
    pub controls: Vec<Arc<Control>>,
    server_names: Vec<Option<String>>,
    monitors: Vec<Option<ServerMonitor>>,
    probe: ClientProbe,
    monitor: bool,
    worker_threads: usize,
    quiet: bool,
}

impl Session {
    /// Connects to the targets, starts the monitors and the Ctrl-C handler.
    pub async fn start(urls: &[String], out: &OutputOpts) -> Result<Session> {
        let origin = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        {
            let stop = stop.clone();
            tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    eprintln!("interrupted: finishing the current phase and reporting");
                    stop.store(true, Ordering::Relaxed);
                }
            });
        }
        let mut targets = Vec::new();
        let mut controls = Vec::new();
        let mut server_names = Vec::new();
        let mut monitors = Vec::new();
        for url in urls {
            let t = Arc::new(Target::parse(url)?);
            let control = Arc::new(Control::new(t.clone()));
            let name = control.server_name().await;
            if name.is_none() {
                // Fail early and clearly when nothing answers.
                control
                    .call(hyper::Method::GET, "/", None, Some(Duration::from_secs(10)))
                    .await
                    .with_context(|| format!("cannot reach {}", t.url))?;
            }
            let monitor = (!out.no_monitor).then(|| {
                ServerMonitor::start(
                    Arc::new(Control::new(t.clone())),
                    origin,
                    Duration::from_secs(1),
                )
            });
            targets.push(t);
            controls.push(control);
            server_names.push(name);
            monitors.push(monitor);
        }
        Ok(Session {
            origin,
            started_at: chrono::Local::now().to_rfc3339(),
            stop,
            targets,
            controls,
            server_names,
            monitors,
            probe: ClientProbe::start(origin),
            monitor: !out.no_monitor,
            worker_threads: crate::worker_threads(out.threads),
            quiet: out.quiet,
        })
    }

    /// True after Ctrl-C.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Readings of target `i` now.
    pub async fn snapshot(&self, i: usize) -> Snapshot {
        Snapshot::take(self.monitor.then(|| self.controls[i].as_ref())).await
    }

    /// Phase settings.
    pub fn phase_config(
        &self,
        seed: u64,
        timeout: Duration,
        start: Option<Instant>,
    ) -> PhaseConfig {
        PhaseConfig {
            timeout: Some(timeout),
            window: crate::WINDOW,
            seed,
            start,
            stop: self.stop.clone(),
            timeline: false,
        }
    }

    /// Connection slots for target `i`.
    pub fn connections(&self, i: usize, shape: &Shape) -> Vec<Connection> {
        runner::connections(&self.targets[i], shape.concurrency, shape.keep_alive)
    }

    fn progress(&self, msg: String) -> indicatif::ProgressBar {
        let pb = if self.quiet {
            indicatif::ProgressBar::hidden()
        } else {
            indicatif::ProgressBar::new_spinner()
        };
        pb.set_style(
            indicatif::ProgressStyle::with_template("{spinner} [{elapsed}] {msg}")
                .expect("valid template"),
        );
        pb.set_message(msg);
        pb.enable_steady_tick(Duration::from_millis(200));
        pb
    }

    /// A phase starts: the spinner's message on a terminal, a plain line otherwise (where
    /// indicatif draws nothing), with the phase's length when it has one.
    fn phase(&self, pb: &indicatif::ProgressBar, msg: String, length: Option<Duration>) {
        if !self.quiet && !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            match length {
                Some(d) => eprintln!("{msg} ({:.0}s)", d.as_secs_f64()),
                None => eprintln!("{msg}"),
            }
        }
        pb.set_message(msg);
    }

    /// Warm-up (not counted), then the measured phase.
    pub async fn measure(
        &self,
        spec: MeasureSpec,
        conns: Vec<Connection>,
    ) -> (PhaseReport, Vec<Connection>) {
        let shape = &spec.shape;
        let target_label = if self.targets.len() > 1 {
            format!(" [{}]", ["A", "B"].get(spec.target).unwrap_or(&"?"))
        } else {
            String::new()
        };
        let pb = self.progress(format!("{}{target_label}", spec.name));
        let mut conns = conns;
        let mut warmup_requests = 0;
        if !shape.warmup.is_zero() && !self.stopped() {
            let msg = format!("{}{target_label}: warm-up", spec.name);
            self.phase(&pb, msg, Some(shape.warmup));
            let cfg = self.phase_config(spec.seed ^ 0x77, shape.timeout, None);
            let w = runner::run_phase(
                spec.source.clone(),
                shape.warmup_pacing(spec.seed),
                conns,
                &cfg,
            )
            .await;
            warmup_requests = w
                .recorder
                .kinds
                .iter()
                .map(|k| k.ok + k.non_2xx + k.errors)
                .sum();
            conns = w.connections;
        }
        let msg = format!("{}{target_label}: measuring", spec.name);
        self.phase(&pb, msg, shape.duration);
        let before = self.snapshot(spec.target).await;
        let cfg = self.phase_config(spec.seed, shape.timeout, None);
        let result =
            runner::run_phase(spec.source.clone(), shape.pacing(spec.seed), conns, &cfg).await;
        let after = self.snapshot(spec.target).await;
        pb.finish_and_clear();
        let report = self.phase_report(&spec, &result, warmup_requests, &before, &after, vec![]);
        (report, result.connections)
    }

    /// Builds the report of a finished phase.
    pub fn phase_report(
        &self,
        spec: &MeasureSpec,
        result: &PhaseResult,
        warmup_requests: u64,
        before: &Snapshot,
        after: &Snapshot,
        events: Vec<Event>,
    ) -> PhaseReport {
        report::phase_report(PhaseInput {
            name: spec.name.clone(),
            target: spec.target,
            result,
            kinds: &spec.kinds,
            rate: spec.shape.rate,
            concurrency: spec.shape.concurrency,
            keep_alive: spec.shape.keep_alive,
            warmup_requests,
            before,
            after,
            run_origin: self.origin,
            events,
        })
    }

    /// Stops the monitors and assembles the report with its warnings.
    pub async fn finish(
        self,
        command: &str,
        settings: serde_json::Value,
        mut phases: Vec<PhaseReport>,
        comparison: Vec<ComparisonRow>,
    ) -> Report {
        let wall = self.origin.elapsed();
        let cpu = crate::monitor::process_cpu_time();
        let client_data = self.probe.finish().await;
        let mut resources = Vec::new();
        for m in self.monitors {
            resources.push(match m {
                Some(m) => m.finish().await,
                None => Vec::new(),
            });
        }
        for ph in &mut phases {
            if let Some(samples) = resources.get(ph.target) {
                ph.add_resource_peaks(samples);
            }
        }
        let lag = &client_data.runtime_lag;
        let client = report::ClientReport {
            cpu_pct: cpu.map(|c| crate::monitor::cpu_percent(Duration::ZERO, c, wall)),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            worker_threads: self.worker_threads,
            runtime_lag_p99_ms: if lag.is_empty() {
                0.0
            } else {
                lag.value_at_quantile(0.99) as f64 / 1000.0
            },
            runtime_lag_max_ms: lag.max() as f64 / 1000.0,
            runtime_lag_samples: lag.len(),
            cpu_samples: client_data.cpu_samples,
        };
        let loopback: Vec<bool> = self.targets.iter().map(|t| t.is_loopback()).collect();
        let mut report = Report {
            tool: "lode bench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            command: command.into(),
            started_at: self.started_at,
            targets: self
                .targets
                .iter()
                .zip(self.server_names)
                .map(|(t, s)| report::TargetInfo {
                    url: t.url.clone(),
                    server: s,
                })
                .collect(),
            settings,
            phases,
            comparison,
            client,
            resources,
            warnings: Vec::new(),
            extra: Default::default(),
        };
        report.warnings = crate::warnings::warnings(&report, &loopback);
        report
    }
}

/// Prints the text report and writes the JSON and HTML files.
pub fn emit(report: &Report, out: &OutputOpts) -> Result<()> {
    if out.quiet {
        for w in &report.warnings {
            eprintln!("WARNING: {w}");
        }
    } else {
        print!("{}", report::text::render(report));
    }
    if let Some(p) = &out.json {
        let json = serde_json::to_string_pretty(report)?;
        std::fs::write(p, json).with_context(|| format!("writing {}", p.display()))?;
    }
    if let Some(p) = &out.html {
        std::fs::write(p, report::html::render(report))
            .with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(())
}
