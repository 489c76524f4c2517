//! `lode`: one binary. `lode serve` runs an Elasticsearch-compatible node; `lode bench` is
//! the built-in benchmark suite.

mod config;
mod shutdown;

use clap::{Parser, Subcommand};
use std::sync::Arc;

/// mimalloc instead of glibc's malloc: a request allocates and frees many small buffers
/// across threads (parsed bodies, hits, rendered JSON), where glibc's arenas spent about a
/// fifth of a cheap search's CPU (malloc, _int_free, malloc_consolidate in its profile).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "lode",
    version,
    about = "An Elasticsearch-compatible search engine on tantivy"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start a node (settings as Elasticsearch names them: -E http.port=9200 -E path.data=./data).
    Serve {
        /// A setting, `name=value` (repeatable), as `elasticsearch -E` takes it.
        #[arg(short = 'E', value_name = "SETTING=VALUE")]
        settings: Vec<String>,
        /// An optional YAML settings file (default: ./lode.yml when present).
        #[arg(long)]
        config: Option<std::path::PathBuf>,
    },
    /// Benchmark any Elasticsearch-compatible URL.
    Bench(Box<lode_bench::BenchArgs>),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve { settings, config } => serve(settings, config),
        Command::Bench(args) => lode_bench::run(*args),
    }
}

fn serve(overrides: Vec<String>, config_file: Option<std::path::PathBuf>) -> anyhow::Result<()> {
    let cfg = config::Settings::load(config_file.as_deref(), &overrides)?;
    let filter = tracing_subscriber::EnvFilter::try_from_env("LODE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(&cfg.log_level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    if let Some(n) = cfg.max_clause_count {
        lode_api::set_max_clause_count(n);
    }
    let node = lode_engine::Node::open(&cfg.path_data)
        .map_err(|e| anyhow::anyhow!("cannot open data path {}: {e}", cfg.path_data.display()))?;
    let mut node_defaults = cfg.disk.clone();
    node_defaults.extend(cfg.breakers.clone());
    lode_api::cluster_settings::set_node_defaults(&node, node_defaults);
    lode_api::cluster_settings::configure_disk(&node);
    lode_api::cluster_settings::configure_breakers(&node);
    node.start_background();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<usize>().ok());
    let workers = env("LODE_WORKERS").unwrap_or(cores + 1);
    let inline_handlers = env("LODE_INLINE_SLOTS").unwrap_or(lode_http::inline::slots_for(workers));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()?;
    let stopped = rt.block_on(async {
        let listener =
            tokio::net::TcpListener::bind((cfg.network_host.as_str(), cfg.http_port)).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(lode_http::AppState {
            node: node.clone(),
            info: lode_api::cluster::NodeInfo {
                node_name: cfg.node_name.clone(),
                cluster_name: cfg.cluster_name.clone(),
                http_address: addr.to_string(),
                started: std::time::Instant::now(),
                pools: cfg.thread_pools.clone(),
            },
            max_content_length: cfg.max_content_length,
            inline_handlers,
        });
        let app =
            lode_http::app(state).layer(axum::middleware::from_fn(shutdown::track_in_flight));
        println!(
            "lode ready: http://{addr} (node {}, cluster {}, data {})",
            cfg.node_name,
            cfg.cluster_name,
            cfg.path_data.display()
        );
        use std::io::Write;
        std::io::stdout().flush().ok();
        let grace = cfg.shutdown_grace_period;
        let on_signal = move |signal: &'static str| {
            if let Some(grace) = grace {
                shutdown::start_watchdog(std::time::Instant::now() + grace + shutdown::FLUSH_BOUND);
            }
            tracing::info!(
                signal,
                in_flight = shutdown::in_flight(),
                grace_period_ms = grace.map(|g| g.as_millis() as u64),
                "shutdown started: not accepting connections, closing idle ones, waiting for in-flight requests"
            );
        };
        let listener = lode_http::connections::CountingListener(listener);
        let stopped = shutdown::serve(listener, app, shutdown::signal(), grace, on_signal).await?;
        anyhow::Ok(stopped)
    })?;
    let abandoned = shutdown::in_flight();
    if cfg.shutdown_grace_period.is_none() {
        // Waited for every request without bound; the flush is still bounded.
        shutdown::start_watchdog(std::time::Instant::now() + shutdown::FLUSH_BOUND);
    }
    // Drops every connection task still running (their sockets close, so nothing left in
    // flight is answered from here on); handlers already on blocking threads are left to the
    // process exit.
    rt.shutdown_background();
    let cancelled = lode_api::tasks::cancel_all();
    node.shutdown();
    let elapsed_ms = stopped.at.elapsed().as_millis() as u64;
    if stopped.drained {
        tracing::info!(
            signal = stopped.signal,
            cancelled_tasks = cancelled,
            elapsed_ms,
            "shutdown complete: every request finished, indices flushed"
        );
    } else {
        tracing::warn!(
            signal = stopped.signal,
            abandoned_requests = abandoned,
            cancelled_tasks = cancelled,
            elapsed_ms,
            "shutdown complete: requests still running after the grace period were abandoned, indices flushed"
        );
    }
    // Exit now: dropping the node would wait for background merges and abandoned handlers.
    std::process::exit(0)
}
