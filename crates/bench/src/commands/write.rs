//! `lode bench write`: single-document or bulk writes at a concurrency, like
//! `ab -n 50000 -c 200 -p books.json http://HOST/books/_doc`.

use crate::cli::{LoadOpts, OutputOpts};
use crate::session::{emit, MeasureSpec, Session, Shape};
use crate::sources::{account_docs, Docs, WriteSource};
use crate::workload::queries::BOOKS_DOC;
use crate::workload::vocab::ACCOUNTS_DEFAULT;
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::sync::Arc;

/// Single-document writes (`POST /INDEX/_doc`) or bulk writes (`POST /_bulk`) at a
/// concurrency.
#[derive(clap::Args, Debug)]
pub struct WriteArgs {
    /// Base URL of the server
    #[arg(default_value = crate::DEFAULT_URL)]
    pub url: String,
    /// The document to post [default: the reference books.json]
    #[arg(short = 'p', long, value_name = "FILE")]
    pub doc: Option<PathBuf>,
    /// Write generated accounts documents instead of one fixed document
    #[arg(long, conflicts_with = "doc")]
    pub accounts: bool,
    /// Index to write to (created by dynamic mapping if it does not exist)
    #[arg(long, default_value = "books")]
    pub index: String,
    /// Documents per `_bulk` request [default: single-document writes to /INDEX/_doc]
    #[arg(long, value_name = "DOCS")]
    pub bulk: Option<usize>,
    /// Do not refresh and count the index after the run
    #[arg(long)]
    pub no_refresh: bool,
    /// Corpus seed for --accounts
    #[arg(long, default_value_t = 42)]
    pub corpus_seed: u64,
    #[command(flatten)]
    pub load: LoadOpts,
    #[command(flatten)]
    pub out: OutputOpts,
}

/// Runs `write`.
pub async fn run(a: WriteArgs) -> Result<()> {
    let docs = if a.accounts {
        account_docs(a.corpus_seed, ACCOUNTS_DEFAULT, a.out.seed, 1)
    } else {
        let doc = match &a.doc {
            Some(p) => {
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?
            }
            None => BOOKS_DOC.to_string(),
        };
        Docs::Fixed(doc.trim().to_string())
    };
    let name = if a.bulk.is_some() { "bulk" } else { "write" };
    let source = Arc::new(WriteSource::new(&a.index, docs, a.bulk, name));
    let session = Session::start(std::slice::from_ref(&a.url), &a.out).await?;
    let shape = Shape::from_opts(&a.load, 200);
    let spec = MeasureSpec {
        name: name.into(),
        target: 0,
        kinds: vec![source.kind_info()],
        source,
        shape: shape.clone(),
        seed: a.out.seed,
    };
    let conns = session.connections(0, &shape);
    let (phase, _) = session.measure(spec, conns).await;
    let mut count = None;
    if !a.no_refresh {
        let c = &session.controls[0];
        if c.refresh(&a.index).await.is_ok() {
            count = c.count(&a.index).await.ok();
        }
    }
    let settings = serde_json::json!({
        "index": a.index,
        "bulk": a.bulk,
        "documents": if a.accounts { "generated accounts" } else { "fixed" },
        "concurrency": shape.concurrency,
        "duration_s": shape.duration.map(|d| d.as_secs_f64()),
        "requests": shape.requests,
        "rate": shape.rate,
        "warmup_s": shape.warmup.as_secs_f64(),
        "keep_alive": shape.keep_alive,
    });
    let mut report = session.finish("write", settings, vec![phase], vec![]).await;
    if let Some(c) = count {
        report.extra.insert("count_after".into(), c.into());
    }
    emit(&report, &a.out)?;
    if let (Some(c), false) = (count, a.out.quiet) {
        println!("{}: _count after refresh = {c}", a.index);
    }
    Ok(())
}
