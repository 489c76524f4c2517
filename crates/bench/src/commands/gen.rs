//! `lode bench gen`: writes the accounts corpus as `_bulk` NDJSON.

use crate::workload::accounts::{AccountsGenerator, AccountsModel, CorpusStats};
use crate::workload::vocab::{ACCOUNTS_DEFAULT, DOCS_DEFAULT};
use anyhow::{Context, Result};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

/// Generate the reference accounts corpus (same schema and distributions as
/// `gen_accounts.py`) as `_bulk` NDJSON.
#[derive(clap::Args, Debug)]
pub struct GenArgs {
    /// Number of documents
    #[arg(short = 'n', long, default_value_t = DOCS_DEFAULT)]
    pub docs: u64,
    /// Seed: the same seed always gives the same corpus
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Number of distinct accounts
    #[arg(long, default_value_t = ACCOUNTS_DEFAULT)]
    pub accounts: u32,
    /// `_index` in the action lines
    #[arg(long, default_value = "accounts")]
    pub index: String,
    /// First `_id`
    #[arg(long, default_value_t = 1)]
    pub start_id: u64,
    /// Output file, `-` for stdout
    #[arg(short = 'o', long, default_value = "-")]
    pub out: PathBuf,
    /// Print a distribution summary to stderr
    #[arg(long)]
    pub stats: bool,
    /// No progress on stderr (a bar on a terminal, a line every 5 s otherwise)
    #[arg(long)]
    pub no_progress: bool,
}

/// Runs `gen`.
pub fn run(a: GenArgs) -> Result<()> {
    let started = std::time::Instant::now();
    let model = Arc::new(AccountsModel::new(a.seed, a.accounts));
    let mut gen = AccountsGenerator::new(model.clone(), a.start_id);
    let mut stats = a.stats.then(|| CorpusStats::new(&model));
    let sink: Box<dyn Write> = if a.out.as_os_str() == "-" {
        Box::new(std::io::stdout().lock())
    } else {
        Box::new(
            std::fs::File::create(&a.out)
                .with_context(|| format!("creating {}", a.out.display()))?,
        )
    };
    let mut w = std::io::BufWriter::with_capacity(1 << 20, sink);
    let mut buf = String::with_capacity(1 << 20);
    let progress =
        crate::progress::Progress::new("gen", a.docs, crate::progress::Unit::Docs, a.no_progress);
    let mut reported = 0;
    for i in 0..a.docs {
        let d = gen.next_doc();
        model.write_bulk(&d, &a.index, true, &mut buf);
        if let Some(s) = stats.as_mut() {
            s.add(&model, &d);
        }
        if buf.len() > (1 << 20) - 4096 || i + 1 == a.docs {
            match w.write_all(buf.as_bytes()) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
                r => r?,
            }
            buf.clear();
            progress.inc(i + 1 - reported);
            reported = i + 1;
        }
    }
    progress.finish();
    match w.flush() {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
        r => r?,
    }
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "generated {} docs in {secs:.2}s ({:.0} docs/s)",
        a.docs,
        a.docs as f64 / secs.max(1e-9)
    );
    if let Some(s) = stats {
        eprint!("{}", s.summary());
    }
    Ok(())
}
