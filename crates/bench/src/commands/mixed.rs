//! `lode bench mixed`: searches at a fixed rate while writes go on at a fixed rate, with an
//! optional force merge midway; latency over time in one-second windows shows the spikes
//! after refreshes and merges.

use super::queries::{self, QueryArgs};
use crate::cli::{parse_duration, CacheOpts, OutputOpts};
use crate::histogram::Percentiles;
use crate::pacing::Arrival;
use crate::report::{Event, IntervalReport};
use crate::runner;
use crate::session::{emit, MeasureSpec, Session, Shape};
use crate::sources::{account_docs, WriteSource};
use crate::workload::vocab::ACCOUNTS_DEFAULT;
use anyhow::{bail, Result};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const MERGE_STARTED: &str = "force merge started";
const MERGE_DONE: &str = "force merge done";

/// Searches at a fixed rate while writes go on at a fixed rate (and an optional force merge).
#[derive(clap::Args, Debug)]
pub struct MixedArgs {
    /// Base URL of the server
    #[arg(default_value = crate::DEFAULT_URL)]
    pub url: String,
    #[command(flatten)]
    pub queries: QueryArgs,
    /// Searches per second (open loop, sent round-robin over the selected queries; default
    /// query: ids_range)
    #[arg(long, default_value_t = 20.0, value_name = "PER_SEC")]
    pub search_rate: f64,
    /// Write requests per second (open loop)
    #[arg(long, default_value_t = 5.0, value_name = "PER_SEC")]
    pub write_rate: f64,
    /// Documents per write request: `_bulk` above 1, `POST /INDEX/_doc` for 1
    #[arg(long, default_value_t = 100, value_name = "DOCS")]
    pub write_batch: usize,
    /// Writes replace the documents already indexed (ids 1 to the index's count, in turn)
    /// instead of adding new ones: the index keeps its size while deletes and merges go on
    #[arg(long)]
    pub overwrite: bool,
    /// Index the writes go to [default: the query index]
    #[arg(long, value_name = "INDEX")]
    pub write_index: Option<String>,
    /// Length of the run
    #[arg(short = 't', long, default_value = "20s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Most requests in flight per stream (searches, writes)
    #[arg(short = 'c', long, default_value_t = 32)]
    pub concurrency: usize,
    /// Fire `POST /INDEX/_forcemerge?max_num_segments=1` during the run
    #[arg(long)]
    pub force_merge: bool,
    /// When the force merge fires [default: midway]
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub force_merge_at: Option<Duration>,
    /// Search warm-up before the run, not counted
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub warmup: Duration,
    /// Open-loop arrivals
    #[arg(long, value_enum, default_value_t = Arrival::Uniform)]
    pub arrival: Arrival,
    /// A new TCP connection per request
    #[arg(long)]
    pub no_keepalive: bool,
    /// Per-request timeout
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub timeout: Duration,
    #[command(flatten)]
    pub cache: CacheOpts,
    #[command(flatten)]
    pub out: OutputOpts,
}

/// Runs `mixed`.
pub async fn run(mut a: MixedArgs) -> Result<()> {
    if a.search_rate <= 0.0 || a.write_rate < 0.0 {
        bail!("--search-rate must be positive and --write-rate not negative");
    }
    if a.queries.queries.is_empty() && a.queries.only.is_empty() {
        a.queries.only = vec!["ids_range".into()];
    }
    let qs = a.queries.load()?;
    let index = a.queries.index.clone();
    let write_index = a.write_index.clone().unwrap_or_else(|| index.clone());
    let session = Session::start(std::slice::from_ref(&a.url), &a.out).await?;
    let variation = queries::variation(&qs, &a.cache, &session.controls[0], &index).await;
    let (search_src, mut kinds) = queries::source(qs.clone(), variation, &a.cache);
    let shape = |rate: f64| Shape {
        concurrency: a.concurrency.max(1),
        duration: Some(a.duration),
        requests: None,
        rate: Some(rate),
        arrival: a.arrival,
        warmup: a.warmup,
        keep_alive: !a.no_keepalive,
        timeout: a.timeout,
    };
    let search_shape = shape(a.search_rate);
    let seed = a.out.seed;

    // Warm-up: searches only.
    let mut conns = session.connections(0, &search_shape);
    let mut warmup_requests = 0;
    if !a.warmup.is_zero() {
        let mut w = search_shape.clone();
        w.duration = Some(a.warmup);
        let cfg = session.phase_config(seed ^ 0x77, a.timeout, None);
        let r = runner::run_phase(search_src.clone(), w.pacing(seed ^ 0x77), conns, &cfg).await;
        warmup_requests = r
            .recorder
            .kinds
            .iter()
            .map(|k| k.ok + k.non_2xx + k.errors)
            .sum();
        conns = r.connections;
    }

    // New documents continue the loaded corpus's ids, so they are new documents (not
    // updates) and `--vary`'s document ids stay within the corpus.
    let indexed = session.controls[0].count(&write_index).await.unwrap_or(0);
    let first_id = if a.overwrite { 1 } else { indexed + 1 };
    let before = session.snapshot(0).await;
    let start = Instant::now() + Duration::from_millis(5);
    let events = Arc::new(Mutex::new(Vec::<Event>::new()));
    let merge_task = a.force_merge.then(|| {
        let control = crate::control::Control::new(session.targets[0].clone());
        let at = a.force_merge_at.unwrap_or(a.duration / 2);
        let events = events.clone();
        let index = write_index.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until((start + at).into()).await;
            let t0 = Instant::now();
            let since = |t: Instant| t.saturating_duration_since(start).as_secs_f64();
            events.lock().expect("events").push(Event {
                t: since(t0),
                label: MERGE_STARTED.into(),
            });
            let label = match control.force_merge(&index).await {
                Ok(()) => format!("{MERGE_DONE} ({:.1} s)", t0.elapsed().as_secs_f64()),
                Err(e) => format!("force merge failed: {e}"),
            };
            events.lock().expect("events").push(Event {
                t: since(Instant::now()),
                label,
            });
        })
    });

    let mut search_cfg = session.phase_config(seed, a.timeout, Some(start));
    search_cfg.timeline = a.force_merge;
    let searches = runner::run_phase(
        search_src.clone(),
        search_shape.pacing(seed),
        conns,
        &search_cfg,
    );
    let result = if a.write_rate > 0.0 {
        let batch = (a.write_batch > 1).then_some(a.write_batch);
        let writes = WriteSource::new(
            &write_index,
            account_docs(
                a.cache.corpus_seed,
                ACCOUNTS_DEFAULT,
                seed ^ 0xD0C5,
                first_id,
            ),
            batch,
            "write",
        )
        .with_ids();
        let writes = Arc::new(if a.overwrite {
            writes.overwriting(indexed)
        } else {
            writes
        });
        kinds.push(writes.kind_info());
        let write_shape = shape(a.write_rate);
        let mut write_cfg = session.phase_config(seed ^ 0x3, a.timeout, Some(start));
        write_cfg.timeline = a.force_merge;
        let wconns = session.connections(0, &write_shape);
        let w = runner::run_phase(writes, write_shape.pacing(seed ^ 0x3), wconns, &write_cfg);
        let (s, w) = tokio::join!(searches, w);
        s.combine(w)
    } else {
        searches.await
    };
    if let Some(t) = merge_task {
        let _ = t.await;
    }
    let after = session.snapshot(0).await;
    let mut ev = events.lock().expect("events").clone();
    ev.sort_by(|x, y| x.t.total_cmp(&y.t));
    let spec = MeasureSpec {
        name: "mixed".into(),
        target: 0,
        source: search_src,
        kinds,
        shape: Shape {
            rate: Some(a.search_rate + a.write_rate),
            concurrency: result.connections.len(),
            ..search_shape.clone()
        },
        seed,
    };
    let merge = merge_intervals(&ev, &result);
    let mut phase = session.phase_report(&spec, &result, warmup_requests, &before, &after, ev);
    phase.intervals.extend(merge);
    let settings = serde_json::json!({
        "queries": qs.iter().map(|q| &q.name).collect::<Vec<_>>(),
        "index": index,
        "write_index": write_index,
        "search_rate": a.search_rate,
        "write_rate": a.write_rate,
        "write_batch": a.write_batch,
        "overwrite": a.overwrite,
        "duration_s": a.duration.as_secs_f64(),
        "concurrency_per_stream": a.concurrency,
        "force_merge": a.force_merge,
        "force_merge_at_s": a.force_merge.then(|| a.force_merge_at.unwrap_or(a.duration / 2).as_secs_f64()),
        "warmup_s": a.warmup.as_secs_f64(),
        "vary": a.cache.vary,
        "request_cache": !a.cache.no_request_cache,
    });
    let report = session.finish("mixed", settings, vec![phase], vec![]).await;
    emit(&report, &a.out)
}

/// The latency of the requests that started while the force merge ran (between its two
/// events), and of those that started in an interval as long from one second after it ended
/// (when the run lasts that long): the machine's own tail without a merge, for comparison.
fn merge_intervals(events: &[Event], result: &runner::PhaseResult) -> Vec<IntervalReport> {
    let Some(from) = events
        .iter()
        .find(|e| e.label == MERGE_STARTED)
        .map(|e| e.t)
    else {
        return Vec::new();
    };
    let end = result.elapsed.as_secs_f64();
    let to = events
        .iter()
        .find(|e| e.label.starts_with(MERGE_DONE))
        .map_or(end, |e| e.t);
    let interval = |label: &str, from: f64, to: f64| IntervalReport {
        label: label.into(),
        from_s: from,
        to_s: to,
        kinds: result
            .recorder
            .kinds
            .iter()
            .zip(&result.kinds)
            .map(|(k, name)| (name.clone(), Percentiles::of(&k.between(from, to))))
            .collect(),
    };
    let mut out = vec![interval("during the force merge", from, to)];
    let (after, len) = (to + 1.0, to - from);
    if after + len <= end {
        out.push(interval("after it, as long", after, after + len));
    }
    out
}
