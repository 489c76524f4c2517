//! `lode`: one binary. `lode serve` runs an Elasticsearch-compatible node; `lode bench` is
//! the built-in benchmark suite.

mod config;
mod shutdown;

use clap::{Parser, Subcommand};
use std::sync::Arc;

/// mimalloc instead of glibc's malloc: a request allocates and frees many small buffers
/// across threads (parsed bodies, hits, rendered JSON), where glibc's arenas spent about a
/// fifth of a cheap search's CPU (malloc, _int_free, malloc_consolidate in its profile).
/// The `system-allocator` feature keeps glibc's, for heap profilers that intercept malloc
/// (heaptrack, valgrind's massif).
#[cfg(not(feature = "system-allocator"))]
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
    /// Manage the native realm's users in the node's data directory (passwords are stored
    /// hashed), as `elasticsearch-users`.
    Users {
        #[command(subcommand)]
        command: UsersCommand,
        /// A setting, `name=value` (repeatable): `path.data` locates the store.
        #[arg(short = 'E', value_name = "SETTING=VALUE", global = true)]
        settings: Vec<String>,
        /// An optional YAML settings file (default: ./lode.yml when present).
        #[arg(long, global = true)]
        config: Option<std::path::PathBuf>,
    },
}

#[derive(Subcommand)]
enum UsersCommand {
    /// Set a user's password (created when absent; `elastic` gets the `superuser` role).
    Passwd {
        username: String,
        /// The password (read from standard input when absent).
        #[arg(short = 'p', long = "password")]
        password: Option<String>,
    },
    /// Add a user with a password and roles.
    Useradd {
        username: String,
        /// The password (read from standard input when absent).
        #[arg(short = 'p', long = "password")]
        password: Option<String>,
        /// Comma-separated role names.
        #[arg(short = 'r', long = "roles", default_value = "")]
        roles: String,
    },
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve { settings, config } => serve(settings, config),
        Command::Bench(args) => lode_bench::run(*args),
        Command::Users {
            command,
            settings,
            config,
        } => users(command, settings, config),
    }
}

fn read_password(given: Option<String>) -> anyhow::Result<String> {
    let p = match given {
        Some(p) => p,
        None => {
            eprint!("Enter new password: ");
            let mut line = String::new();
            std::io::stdin().read_line(&mut line)?;
            line.trim_end_matches(['\r', '\n']).to_string()
        }
    };
    if p.chars().count() < 6 {
        anyhow::bail!("Invalid password: passwords must be at least [6] characters long");
    }
    Ok(p)
}

fn users(
    command: UsersCommand,
    overrides: Vec<String>,
    config_file: Option<std::path::PathBuf>,
) -> anyhow::Result<()> {
    use lode_http::security::store::Store;
    let cfg = config::Settings::load(config_file.as_deref(), &overrides)?;
    std::fs::create_dir_all(&cfg.path_data)?;
    let store = Store::open(&cfg.path_data).map_err(|e| anyhow::anyhow!(e))?;
    let exists = |name: &str| store.data.lock().users.contains_key(name);
    match command {
        UsersCommand::Passwd { username, password } => {
            let reserved = username == "elastic";
            if !reserved && !exists(&username) {
                anyhow::bail!("User [{username}] doesn't exist");
            }
            let p = read_password(password)?;
            let roles = (reserved && !exists(&username)).then(|| vec!["superuser".to_string()]);
            store
                .set_password(&username, &p, roles)
                .map_err(|e| anyhow::anyhow!(e.reason))?;
        }
        UsersCommand::Useradd {
            username,
            password,
            roles,
        } => {
            if exists(&username) {
                anyhow::bail!("User [{username}] already exists");
            }
            let p = read_password(password)?;
            let roles: Vec<String> = roles
                .split(',')
                .map(str::trim)
                .filter(|r| !r.is_empty())
                .map(str::to_string)
                .collect();
            store
                .set_password(&username, &p, Some(roles))
                .map_err(|e| anyhow::anyhow!(e.reason))?;
        }
    }
    Ok(())
}

/// Opens the security store; `ELASTIC_PASSWORD` sets the `elastic` superuser's password when
/// it has none yet (the first start), as Elasticsearch's bootstrap password.
fn open_security(
    cfg: &config::Settings,
    node: &Arc<lode_engine::Node>,
) -> anyhow::Result<Option<Arc<lode_http::security::Security>>> {
    use lode_http::security::{store::Store, Security};
    if !cfg.security.enabled {
        return Ok(None);
    }
    let store = Store::open(&cfg.path_data).map_err(|e| anyhow::anyhow!(e))?;
    let has_password = store
        .data
        .lock()
        .users
        .get("elastic")
        .is_some_and(|u| u.password_hash.is_some());
    if !has_password {
        match std::env::var("ELASTIC_PASSWORD") {
            Ok(p) if p.chars().count() >= 6 => {
                let roles = (!store.data.lock().users.contains_key("elastic"))
                    .then(|| vec!["superuser".to_string()]);
                store
                    .set_password("elastic", &p, roles)
                    .map_err(|e| anyhow::anyhow!(e.reason))?;
            }
            Ok(_) => anyhow::bail!("[ELASTIC_PASSWORD] must be at least [6] characters long"),
            Err(_) => tracing::warn!(
                "security is enabled and the [elastic] user has no password: set ELASTIC_PASSWORD at start or run `lode users passwd elastic`"
            ),
        }
    }
    Ok(Some(Arc::new(Security::new(store, node.clone()))))
}

fn serve(overrides: Vec<String>, config_file: Option<std::path::PathBuf>) -> anyhow::Result<()> {
    let cfg = config::Settings::load(config_file.as_deref(), &overrides)?;
    let filter = tracing_subscriber::EnvFilter::try_from_env("LODE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(&cfg.log_level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    cfg.check_network_security()?;
    let tls = match &cfg.security.http_ssl {
        Some(ssl) => Some(
            lode_http::security::tls::server_config(
                &ssl.certificate,
                &ssl.key,
                &ssl.certificate_authorities,
            )
            .map_err(|e| anyhow::anyhow!(e))?,
        ),
        None => None,
    };
    if let Some(n) = cfg.max_clause_count {
        lode_api::set_max_clause_count(n);
    }
    if let Some(n) = cfg.request_cache_bytes {
        lode_api::search::request_cache::set_max_bytes(n);
    }
    let node = lode_engine::Node::open(&cfg.path_data)
        .map_err(|e| anyhow::anyhow!("cannot open data path {}: {e}", cfg.path_data.display()))?;
    let mut node_defaults = cfg.disk.clone();
    node_defaults.extend(cfg.breakers.clone());
    lode_api::cluster_settings::set_node_defaults(&node, node_defaults);
    lode_api::cluster_settings::configure_disk(&node);
    lode_api::cluster_settings::configure_breakers(&node);
    lode_api::cluster_settings::configure_search(&node);
    let security = open_security(&cfg, &node)?;
    node.start_background();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<usize>().ok());
    let workers = env("LODE_WORKERS").unwrap_or(cores + 1);
    let inline_handlers = env("LODE_INLINE_SLOTS").unwrap_or(lode_http::inline::slots_for(workers));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()?;
    lode_http::inline::watch(rt.handle().clone());
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
            security,
        });
        let app =
            lode_http::app(state).layer(axum::middleware::from_fn(shutdown::track_in_flight));
        println!(
            "lode ready: {}://{addr} (node {}, cluster {}, data {})",
            if tls.is_some() { "https" } else { "http" },
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
        let listener = lode_http::connections::CountingListener::new(listener, tls.clone())
            .with_head_limits(cfg.head_limits);
        let stopped = shutdown::serve(
            listener,
            app,
            shutdown::signal(),
            grace,
            on_signal,
        )
        .await?;
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
