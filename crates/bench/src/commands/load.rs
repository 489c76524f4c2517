//! `lode bench load`: creates the index from its mapping and bulk-loads documents, generated
//! or from NDJSON files, with a configurable batch size and parallelism.

use crate::control::Control;
use crate::histogram::Percentiles;
use crate::http::{Connection, Request, Target};
use crate::recorder::{KindStats, Sample};
use crate::workload::accounts::{AccountsGenerator, AccountsModel};
use crate::workload::queries::ACCOUNTS_MAPPING;
use crate::workload::vocab::{ACCOUNTS_DEFAULT, DOCS_DEFAULT};
use anyhow::{bail, Context, Result};
use bytes::Bytes;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Create the index from its mapping and load it through `_bulk`.
#[derive(clap::Args, Debug)]
pub struct LoadArgs {
    /// Base URL of the server
    #[arg(default_value = crate::DEFAULT_URL)]
    pub url: String,
    /// Load this `_bulk` NDJSON file (or every *.ndjson in a directory) instead of generating
    /// the corpus; repeatable
    #[arg(short = 'f', long = "file", value_name = "PATH")]
    pub files: Vec<PathBuf>,
    /// Documents to generate
    #[arg(short = 'n', long, default_value_t = DOCS_DEFAULT)]
    pub docs: u64,
    /// Corpus seed
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Distinct accounts in the generated corpus
    #[arg(long, default_value_t = ACCOUNTS_DEFAULT)]
    pub accounts: u32,
    /// Index name (generated action lines name it; file action lines may name their own)
    #[arg(long, default_value = "accounts")]
    pub index: String,
    /// Documents per `_bulk` request
    #[arg(short = 'b', long, default_value_t = 5000)]
    pub batch_size: usize,
    /// Concurrent `_bulk` requests
    #[arg(short = 'p', long, default_value_t = 2)]
    pub parallel: usize,
    /// Keep the index: do not delete and re-create it (append)
    #[arg(long)]
    pub keep: bool,
    /// Index body (settings + mappings) [default: the accounts mapping]
    #[arg(long, value_name = "FILE")]
    pub mapping: Option<PathBuf>,
    /// Do not refresh the index at the end
    #[arg(long)]
    pub no_refresh: bool,
    /// No progress bar
    #[arg(long)]
    pub no_progress: bool,
    /// Write a JSON summary to FILE
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Client worker threads [default: the number of cores]
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
}

/// The outcome of a load.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct LoadReport {
    /// Target URL.
    pub url: String,
    /// Index.
    pub index: String,
    /// Documents acknowledged by the server.
    pub docs: u64,
    /// Seconds spent in `_bulk` requests (from the first to the last).
    pub seconds: f64,
    /// Documents per second over that time.
    pub docs_per_sec: f64,
    /// `_bulk` requests sent (without retries).
    pub bulk_requests: u64,
    /// Retried requests.
    pub retries: u64,
    /// Latency of the `_bulk` requests.
    pub bulk_latency_ms: Percentiles,
    /// Seconds the final refresh took.
    pub refresh_seconds: Option<f64>,
    /// `GET /{index}/_count` at the end.
    pub count: Option<u64>,
}

/// One `_bulk` request body with what it carries.
struct Batch {
    body: Bytes,
    docs: u64,
    /// Progress units (docs, or bytes for files).
    units: u64,
}

/// Number of documents in a `_bulk` body: action lines, where every action but `delete` is
/// followed by a source line.
pub fn count_bulk_docs(body: &[u8]) -> u64 {
    let mut docs = 0;
    let mut lines = body
        .split(|b| *b == b'\n')
        .filter(|l| !l.trim_ascii().is_empty());
    while let Some(action) = lines.next() {
        docs += 1;
        if !is_delete(action) {
            lines.next();
        }
    }
    docs
}

fn is_delete(action: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(action)
        .ok()
        .and_then(|v| v.as_object().and_then(|o| o.keys().next().cloned()))
        .is_some_and(|k| k == "delete")
}

fn ndjson_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut v: Vec<PathBuf> = std::fs::read_dir(p)
                .with_context(|| format!("reading {}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|e| e == "ndjson" || e == "json"))
                .collect();
            v.sort();
            if v.is_empty() {
                bail!("no *.ndjson files in {}", p.display());
            }
            out.extend(v);
        } else if p.is_file() {
            out.push(p.clone());
        } else {
            bail!("no such file or directory: {}", p.display());
        }
    }
    Ok(out)
}

/// Splits NDJSON files into batches of `batch` documents.
fn file_batches(
    files: &[PathBuf],
    batch: usize,
    tx: &tokio::sync::mpsc::Sender<Batch>,
) -> Result<()> {
    let mut body = Vec::new();
    let mut docs = 0u64;
    let mut units = 0u64;
    let mut pending_source = false;
    for f in files {
        let file = std::fs::File::open(f).with_context(|| format!("opening {}", f.display()))?;
        let reader = std::io::BufReader::with_capacity(1 << 20, file);
        for line in reader.split(b'\n') {
            let line = line.with_context(|| format!("reading {}", f.display()))?;
            units += line.len() as u64 + 1;
            if line.trim_ascii().is_empty() {
                continue;
            }
            body.extend_from_slice(&line);
            body.push(b'\n');
            if pending_source {
                pending_source = false;
            } else {
                docs += 1;
                pending_source = !is_delete(&line);
            }
            if !pending_source && docs as usize >= batch {
                let b = Batch {
                    body: Bytes::from(std::mem::take(&mut body)),
                    docs,
                    units,
                };
                if tx.blocking_send(b).is_err() {
                    return Ok(());
                }
                docs = 0;
                units = 0;
            }
        }
    }
    if pending_source {
        bail!("the last action line has no source line");
    }
    if docs > 0 {
        let _ = tx.blocking_send(Batch {
            body: Bytes::from(body),
            docs,
            units,
        });
    }
    Ok(())
}

/// What to generate.
#[derive(Clone)]
struct GenSpec {
    seed: u64,
    accounts: u32,
    docs: u64,
    batch: usize,
    index: String,
}

fn generated_batches(a: &GenSpec, tx: &tokio::sync::mpsc::Sender<Batch>) {
    let model = Arc::new(AccountsModel::new(a.seed, a.accounts));
    let mut gen = AccountsGenerator::new(model.clone(), 1);
    let mut left = a.docs;
    while left > 0 {
        let n = left.min(a.batch as u64);
        let mut body = String::with_capacity(n as usize * 420);
        for _ in 0..n {
            let d = gen.next_doc();
            model.write_bulk(&d, &a.index, true, &mut body);
        }
        left -= n;
        let b = Batch {
            body: Bytes::from(body),
            docs: n,
            units: n,
        };
        if tx.blocking_send(b).is_err() {
            return;
        }
    }
}

struct SenderOut {
    stats: KindStats,
    retries: u64,
}

async fn send_batches(
    target: Arc<Target>,
    path: String,
    rx: Arc<tokio::sync::Mutex<tokio::sync::mpsc::Receiver<Batch>>>,
    pb: crate::progress::Progress,
    failed: Arc<std::sync::atomic::AtomicBool>,
) -> Result<SenderOut> {
    use std::sync::atomic::Ordering;
    let mut conn = Connection::new(target, true);
    let mut stats = KindStats::default();
    let mut retries = 0;
    loop {
        if failed.load(Ordering::Relaxed) {
            break;
        }
        let Some(batch) = rx.lock().await.recv().await else {
            break;
        };
        let req = Request::ndjson(path.clone(), batch.body.clone());
        let mut attempt = 0;
        loop {
            attempt += 1;
            let sent = Instant::now();
            let outcome = conn
                .send_timeout(&req, Some(Duration::from_secs(600)))
                .await;
            let end = Instant::now();
            let retryable = match &outcome {
                Err(_) => true,
                Ok(r) => matches!(r.status, 429 | 502 | 503 | 504),
            };
            if retryable && attempt < 5 {
                retries += 1;
                tokio::time::sleep(Duration::from_millis(500 * attempt)).await;
                continue;
            }
            stats.record(
                0,
                None,
                &Sample {
                    start: sent,
                    sent,
                    end,
                    outcome: &outcome,
                    bytes_out: req.body.len() as u64,
                    docs: batch.docs,
                    bulk: true,
                },
            );
            match outcome {
                Err(e) => {
                    failed.store(true, Ordering::Relaxed);
                    bail!("_bulk failed after {attempt} attempts: {e}");
                }
                Ok(r) if !(200..300).contains(&r.status) => {
                    failed.store(true, Ordering::Relaxed);
                    bail!(
                        "_bulk: HTTP {}: {}",
                        r.status,
                        String::from_utf8_lossy(&r.body[..r.body.len().min(500)])
                    );
                }
                Ok(_) if stats.item_errors > 0 => {
                    failed.store(true, Ordering::Relaxed);
                    bail!(
                        "_bulk: {} items failed, e.g. {}",
                        stats.item_errors,
                        stats.error_samples.join("; ")
                    );
                }
                Ok(_) => break,
            }
        }
        pb.inc(batch.units);
    }
    Ok(SenderOut { stats, retries })
}

/// Runs `load`.
pub async fn run(a: LoadArgs) -> Result<()> {
    let target = Arc::new(Target::parse(&a.url)?);
    let control = Control::new(target.clone());
    if a.batch_size == 0 || a.parallel == 0 {
        bail!("--batch-size and --parallel must be at least 1");
    }
    let files = ndjson_files(&a.files)?;
    if !a.keep {
        let body = match &a.mapping {
            Some(p) => {
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?
            }
            None => ACCOUNTS_MAPPING.to_string(),
        };
        control
            .recreate_index(&a.index, &body)
            .await
            .with_context(|| format!("creating index {} on {}", a.index, target.url))?;
        eprintln!("created index {}", a.index);
    }
    let total_units = if files.is_empty() {
        a.docs
    } else {
        files
            .iter()
            .map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0))
            .sum()
    };
    let unit = if files.is_empty() {
        crate::progress::Unit::Docs
    } else {
        crate::progress::Unit::Bytes
    };
    let pb = crate::progress::Progress::new("load", total_units, unit, a.no_progress);

    let (tx, rx) = tokio::sync::mpsc::channel::<Batch>(a.parallel * 2);
    let producer = {
        let files = files.clone();
        let spec = GenSpec {
            seed: a.seed,
            accounts: a.accounts,
            docs: a.docs,
            batch: a.batch_size,
            index: a.index.clone(),
        };
        std::thread::spawn(move || -> Result<()> {
            if files.is_empty() {
                generated_batches(&spec, &tx);
                Ok(())
            } else {
                file_batches(&files, spec.batch, &tx)
            }
        })
    };
    let rx = Arc::new(tokio::sync::Mutex::new(rx));
    let failed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let path = format!("/{}/_bulk", a.index);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..a.parallel {
        tasks.push(tokio::spawn(send_batches(
            target.clone(),
            path.clone(),
            rx.clone(),
            pb.clone(),
            failed.clone(),
        )));
    }
    let mut stats = KindStats::default();
    let mut retries = 0;
    let mut first_err = None;
    for t in tasks {
        match t.await? {
            Ok(o) => {
                stats.merge(&o.stats);
                retries += o.retries;
            }
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    // Unblock the producer if the senders stopped early.
    drop(rx);
    let produced = producer.join().expect("producer thread panicked");
    pb.finish();
    if let Some(e) = first_err {
        return Err(e);
    }
    produced?;
    let seconds = started.elapsed().as_secs_f64();
    let mut refresh_seconds = None;
    if !a.no_refresh {
        let t = Instant::now();
        control.refresh(&a.index).await?;
        refresh_seconds = Some(t.elapsed().as_secs_f64());
    }
    let count = control.count(&a.index).await.ok();
    let report = LoadReport {
        url: target.url.clone(),
        index: a.index.clone(),
        docs: stats.docs_ok,
        seconds,
        docs_per_sec: stats.docs_ok as f64 / seconds.max(1e-9),
        bulk_requests: stats.ok,
        retries,
        bulk_latency_ms: Percentiles::of(&stats.latency),
        refresh_seconds,
        count,
    };
    println!(
        "loaded {} docs into {} in {:.1} s: {:.0} docs/s ({} bulk requests of up to {} docs, {} parallel, {} retries)",
        report.docs,
        report.index,
        report.seconds,
        report.docs_per_sec,
        report.bulk_requests,
        a.batch_size,
        a.parallel,
        report.retries
    );
    let l = &report.bulk_latency_ms;
    println!(
        "bulk latency (ms): 50% {:.1}  90% {:.1}  99% {:.1}  100% {:.1}",
        l.p50, l.p90, l.p99, l.p100
    );
    if let Some(r) = refresh_seconds {
        println!("refresh {r:.2} s");
    }
    if let Some(c) = count {
        println!("count: {c}");
    }
    if let Some(p) = &a.json {
        std::fs::write(p, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(())
}

/// Reads an NDJSON file's `_bulk` batches (used by tests).
pub fn batches_of_file(path: &Path, batch: usize) -> Result<Vec<(u64, usize)>> {
    let (tx, mut rx) = tokio::sync::mpsc::channel(1024);
    let files = vec![path.to_path_buf()];
    let h = std::thread::spawn(move || file_batches(&files, batch, &tx));
    let mut out = Vec::new();
    while let Some(b) = rx.blocking_recv() {
        out.push((b.docs, b.body.len()));
    }
    h.join().expect("thread")?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_docs_in_bulk_bodies() {
        let body = b"{\"index\":{\"_id\":\"1\"}}\n{\"a\":1}\n{\"delete\":{\"_id\":\"2\"}}\n{\"create\":{}}\n{\"b\":2}\n";
        assert_eq!(count_bulk_docs(body), 3);
        assert_eq!(count_bulk_docs(b""), 0);
    }

    #[test]
    fn splits_files_into_batches_without_breaking_pairs() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x.ndjson");
        let mut s = String::new();
        for i in 0..10 {
            s.push_str(&format!(
                "{{\"index\":{{\"_id\":\"{i}\"}}}}\n{{\"n\":{i}}}\n"
            ));
            if i == 4 {
                s.push_str("{\"delete\":{\"_id\":\"0\"}}\n\n");
            }
        }
        std::fs::write(&f, &s).unwrap();
        let b = batches_of_file(&f, 4).unwrap();
        let docs: Vec<u64> = b.iter().map(|x| x.0).collect();
        assert_eq!(docs, [4, 4, 3]);
        assert_eq!(b.iter().map(|x| x.1).sum::<usize>(), s.len() - 1);
    }
}
