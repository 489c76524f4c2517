//! `lode bench`: the benchmark Elasticsearch users run by hand (ab, JMeter, Locust), built in.
//!
//! # Brief overview
//!
//! One command against any Elasticsearch-compatible URL (Lode, Elasticsearch, OpenSearch),
//! using only standard endpoints:
//!
//! * `gen` / `load`: the reference `accounts` workload of `shared/bench` generated natively
//!   ([`workload::accounts`]) and bulk-loaded with a batch size and parallelism.
//! * `search`: a query file, a directory, or the built-in suite ([`workload::queries`]) at a
//!   fixed concurrency (closed loop, like `ab -c 60 -t 10`) or a fixed rate (open loop, latency
//!   from the intended send time, see [`pacing`]). `--vary` draws fresh parameters per request
//!   ([`workload::vary`]) so caches cannot answer every request; `--no-request-cache` adds
//!   `request_cache=false`.
//! * `write`: single-document or bulk writes (`ab -n 50000 -c 200 -p books.json`).
//! * `mixed`: searches and writes at fixed rates with an optional force merge, reported in
//!   one-second windows.
//! * `replay`: recorded requests at their recorded pace, a multiple of it, or flat out.
//! * `compare`: the same suite against two URLs, alternating per query, with ratios.
//!
//! # Principal types
//!
//! * [`http::Connection`]: one client connection slot on hyper 1 (keep-alive, or a new TCP
//!   connection per request as `ab` without `-k`).
//! * [`runner`]: the load engine; workers take slots from a closed-loop counter or an
//!   open-loop [`pacing::Schedule`] and record into per-worker [`recorder::Recorder`]s (HDR
//!   histograms, [`histogram`]), merged when the phase ends.
//! * [`session::Session`]: warm-up, measured phase, `_stats` / `_nodes/stats` snapshots
//!   ([`control`], [`monitor`]), the client's own CPU and runtime lag, and the final
//!   [`report::Report`] rendered as text, JSON and self-contained HTML.
//! * [`warnings`]: when the client rather than the server is the bottleneck, failed requests,
//!   a rate that was not reached.

pub mod cli;
pub mod commands;
pub mod control;
pub mod histogram;
pub mod http;
pub mod monitor;
pub mod pacing;
pub mod progress;
pub mod recorder;
pub mod report;
pub mod runner;
pub mod session;
pub mod sources;
pub mod warnings;
pub mod workload;

pub use commands::BenchCommand;

/// Default target.
pub const DEFAULT_URL: &str = "http://127.0.0.1:9200";

/// Width of the latency-over-time windows.
pub const WINDOW: std::time::Duration = std::time::Duration::from_secs(1);

/// `lode bench`: benchmark an Elasticsearch-compatible server.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: BenchCommand,
}

/// The client's runtime worker threads: as asked, or one per core.
pub fn worker_threads(asked: Option<usize>) -> usize {
    asked
        .filter(|n| *n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

#[derive(clap::Parser, Debug)]
#[command(
    name = "lode bench",
    about = "Benchmark an Elasticsearch-compatible server"
)]
struct Cli {
    #[command(flatten)]
    bench: BenchArgs,
}

/// Parses `lode bench` arguments (without the program name), e.g.
/// `["search", "http://127.0.0.1:9200", "-c", "60", "-t", "10"]`.
pub fn parse_args<I, T>(args: I) -> Result<BenchArgs, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::Parser;
    let argv = std::iter::once(std::ffi::OsString::from("lode-bench"))
        .chain(args.into_iter().map(Into::into));
    Cli::try_parse_from(argv).map(|c| c.bench)
}

/// Runs a `lode bench` subcommand (builds its own tokio runtime).
pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    let cmd = args.command;
    if let BenchCommand::Gen(a) = cmd {
        return commands::gen::run(a);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(worker_threads(cmd.threads()))
        .enable_all()
        .build()?;
    rt.block_on(async move {
        match cmd {
            BenchCommand::Gen(_) => unreachable!("handled above"),
            BenchCommand::Load(a) => commands::load::run(a).await,
            BenchCommand::Search(a) => commands::search::run(a).await,
            BenchCommand::Write(a) => commands::write::run(a).await,
            BenchCommand::Mixed(a) => commands::mixed::run(a).await,
            BenchCommand::Replay(a) => commands::replay::run(a).await,
            BenchCommand::Compare(a) => commands::compare::run(a).await,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_parses_every_subcommand() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
        let parse = |s: &str| parse_args(s.split_whitespace()).map(|b| b.command);
        assert!(matches!(
            parse("gen -n 10 --seed 3").unwrap(),
            BenchCommand::Gen(_)
        ));
        assert!(matches!(
            parse("load http://h:1 -n 100 -b 10 -p 2").unwrap(),
            BenchCommand::Load(_)
        ));
        match parse("search http://h:1 -c 60 -t 10 -n 5000000 --only term --vary").unwrap() {
            BenchCommand::Search(a) => {
                assert_eq!(a.load.concurrency, Some(60));
                assert_eq!(a.load.duration, Some(std::time::Duration::from_secs(10)));
                assert!(a.cache.vary);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse("write http://h:1 -n 50000 -c 200 -p books.json").unwrap(),
            BenchCommand::Write(_)
        ));
        assert!(matches!(
            parse("mixed http://h:1 --search-rate 50 --write-rate 10 --force-merge").unwrap(),
            BenchCommand::Mixed(_)
        ));
        assert!(matches!(
            parse("replay http://h:1 f.jsonl --speed 2").unwrap(),
            BenchCommand::Replay(_)
        ));
        assert!(matches!(
            parse("compare http://a:1 http://b:2 --rate 100").unwrap(),
            BenchCommand::Compare(_)
        ));
        assert!(parse("write http://h:1 --accounts -p x.json").is_err());
    }
}
