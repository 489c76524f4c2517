//! `lode bench search`: fires queries at a URL, one measured phase per query.

use super::queries::{self, QueryArgs};
use crate::cli::{CacheOpts, LoadOpts, OutputOpts};
use crate::session::{emit, MeasureSpec, Session, Shape};
use anyhow::Result;

/// Fire one query file, a directory of them, or the built-in suite at a URL.
#[derive(clap::Args, Debug)]
pub struct SearchArgs {
    /// Base URL of the server
    #[arg(default_value = crate::DEFAULT_URL)]
    pub url: String,
    #[command(flatten)]
    pub queries: QueryArgs,
    #[command(flatten)]
    pub load: LoadOpts,
    #[command(flatten)]
    pub cache: CacheOpts,
    #[command(flatten)]
    pub out: OutputOpts,
}

/// Runs `search`.
pub async fn run(a: SearchArgs) -> Result<()> {
    let qs = a.queries.load()?;
    let session = Session::start(std::slice::from_ref(&a.url), &a.out).await?;
    let variation = queries::variation(&qs, &a.cache, &session.controls[0], &a.queries.index).await;
    let shape = Shape::from_opts(&a.load, 60);
    let mut conns = session.connections(0, &shape);
    let mut phases = Vec::new();
    for (i, q) in qs.iter().enumerate() {
        if session.stopped() {
            break;
        }
        let (source, kinds) = queries::source(vec![q.clone()], variation.clone(), &a.cache);
        let spec = MeasureSpec {
            name: q.name.clone(),
            target: 0,
            source,
            kinds,
            shape: shape.clone(),
            seed: a.out.seed.wrapping_add(i as u64),
        };
        let (report, c) = session.measure(spec, conns).await;
        conns = c;
        phases.push(report);
    }
    let settings = serde_json::json!({
        "queries": qs.iter().map(|q| &q.name).collect::<Vec<_>>(),
        "index": a.queries.index,
        "concurrency": shape.concurrency,
        "duration_s": shape.duration.map(|d| d.as_secs_f64()),
        "requests": shape.requests,
        "rate": shape.rate,
        "arrival": shape.arrival,
        "warmup_s": shape.warmup.as_secs_f64(),
        "keep_alive": shape.keep_alive,
        "vary": a.cache.vary,
        "request_cache": !a.cache.no_request_cache,
    });
    let report = session.finish("search", settings, phases, vec![]).await;
    emit(&report, &a.out)
}
