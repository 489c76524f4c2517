//! `lode bench compare`: the same queries against two URLs, alternating per query.
//!
//! For each query, target A and target B are measured one after the other with the same
//! settings; the order flips from one query to the next (A B, B A, A B, ...) so that a slow
//! drift (caches filling, the machine heating up) does not always favour the same target.

use super::queries::{self, QueryArgs};
use crate::cli::{CacheOpts, LoadOpts, OutputOpts};
use crate::report::compare;
use crate::session::{emit, MeasureSpec, Session, Shape};
use anyhow::Result;

/// Run the same suite against two URLs, alternating per query, with the ratio of each figure.
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// Base URL of target A (the baseline)
    pub url_a: String,
    /// Base URL of target B (the candidate)
    pub url_b: String,
    #[command(flatten)]
    pub queries: QueryArgs,
    #[command(flatten)]
    pub load: LoadOpts,
    #[command(flatten)]
    pub cache: CacheOpts,
    #[command(flatten)]
    pub out: OutputOpts,
}

/// Runs `compare`.
pub async fn run(a: CompareArgs) -> Result<()> {
    let qs = a.queries.load()?;
    let session = Session::start(&[a.url_a.clone(), a.url_b.clone()], &a.out).await?;
    // Both targets hold the same corpus; document ids are drawn from target A's count.
    let variation = queries::variation(&qs, &a.cache, &session.controls[0], &a.queries.index).await;
    let shape = Shape::from_opts(&a.load, 60);
    let mut conns = [
        session.connections(0, &shape),
        session.connections(1, &shape),
    ];
    let mut phases = Vec::new();
    let mut rows = Vec::new();
    for (i, q) in qs.iter().enumerate() {
        if session.stopped() {
            break;
        }
        let order = if i % 2 == 0 { [0, 1] } else { [1, 0] };
        let mut idx = [0usize; 2];
        for t in order {
            let (source, kinds) = queries::source(vec![q.clone()], variation.clone(), &a.cache);
            let spec = MeasureSpec {
                name: q.name.clone(),
                target: t,
                source,
                kinds,
                shape: shape.clone(),
                // Same seed on both targets: the same varied requests in the same order.
                seed: a.out.seed.wrapping_add(i as u64),
            };
            let c = std::mem::take(&mut conns[t]);
            let (report, c) = session.measure(spec, c).await;
            conns[t] = c;
            idx[t] = phases.len();
            phases.push(report);
        }
        rows.push(compare(&q.name, &phases, idx[0], idx[1]));
    }
    let settings = serde_json::json!({
        "queries": qs.iter().map(|q| &q.name).collect::<Vec<_>>(),
        "index": a.queries.index,
        "concurrency": shape.concurrency,
        "duration_s": shape.duration.map(|d| d.as_secs_f64()),
        "requests": shape.requests,
        "rate": shape.rate,
        "warmup_s": shape.warmup.as_secs_f64(),
        "keep_alive": shape.keep_alive,
        "vary": a.cache.vary,
        "request_cache": !a.cache.no_request_cache,
        "order": "alternating per query (A B, B A, ...)",
    });
    let report = session.finish("compare", settings, phases, rows).await;
    emit(&report, &a.out)
}
