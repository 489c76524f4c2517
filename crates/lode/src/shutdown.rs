//! Graceful shutdown of `lode serve` (SIGTERM, SIGINT).
//!
//! On the signal the node stops accepting connections at once and closes its idle keep-alive
//! connections (axum's graceful shutdown: hyper finishes the request a connection is serving,
//! answers it with `connection: close`, and closes idle connections right away). In-flight
//! requests get a grace period (`http.shutdown_grace_period`, 5 s by default) to finish; axum would wait for every connection forever (a slow client,
//! a half-sent request, a long search), so the wait is bounded here and whatever is left is
//! abandoned when the runtime shuts down (its sockets close). The caller then cancels running
//! tasks and flushes every index. A watchdog exits the process `FLUSH_BOUND` after the grace
//! period whatever still runs: acknowledged writes are already in the fsynced translog,
//! so an unfinished flush only means a longer recovery.

use std::future::{Future, IntoFuture};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long in-flight requests may run after the signal before they are abandoned, unless
/// `http.shutdown_grace_period` says otherwise.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);
/// How long cancelling tasks and flushing may take after the grace period before the process
/// exits anyway (so with the default grace, the node is gone 9 s after the signal).
pub const FLUSH_BOUND: Duration = Duration::from_secs(4);

/// Requests being handled right now (counted by `track_in_flight`).
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// Requests received and not yet answered.
pub fn in_flight() -> usize {
    IN_FLIGHT.load(Ordering::SeqCst)
}

struct InFlight;

impl InFlight {
    fn enter() -> InFlight {
        IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Middleware counting in-flight requests, so the shutdown log says how many were abandoned.
/// The count drops when the handler's future completes or is dropped (abandoned).
pub async fn track_in_flight(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let _guard = InFlight::enter();
    next.run(req).await
}

/// Waits for SIGTERM or SIGINT and names it.
pub async fn signal() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("install SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("install SIGINT handler");
    tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    }
}

/// How serving ended.
#[derive(Debug)]
pub struct Stopped {
    /// The signal that started the shutdown.
    pub signal: &'static str,
    /// When it came.
    pub at: Instant,
    /// Every connection finished within the grace period.
    pub drained: bool,
}

/// Serves `app` on `listener` until `stop` resolves, then stops accepting, lets in-flight
/// requests finish for at most `grace` (without bound when `None`) and returns. Connections still open then belong to the
/// runtime's tasks, which the caller abandons by shutting the runtime down. `on_signal` runs
/// as soon as the signal arrives (the log line, the watchdog).
///
/// Each request carries its connection (`ConnectInfo<ConnInfo>`): the client's address
/// (failed logins are logged with it) and a probe that tells whether the client has gone.
pub async fn serve<S, L>(
    listener: L,
    app: axum::Router,
    stop: S,
    grace: Option<Duration>,
    on_signal: impl FnOnce(&'static str) + Send + 'static,
) -> std::io::Result<Stopped>
where
    S: Future<Output = &'static str> + Send + 'static,
    L: axum::serve::Listener<Addr = std::net::SocketAddr>,
    lode_http::connections::ConnInfo:
        for<'a> axum::extract::connect_info::Connected<axum::serve::IncomingStream<'a, L>>,
{
    let (tx, mut rx) = tokio::sync::oneshot::channel();
    let app = app.into_make_service_with_connect_info::<lode_http::connections::ConnInfo>();
    let server = axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            let name = stop.await;
            let at = Instant::now();
            on_signal(name);
            let _ = tx.send((name, at));
        })
        .into_future();
    tokio::pin!(server);
    let (signal, at) = tokio::select! {
        biased;
        s = &mut rx => s.unwrap_or(("none", Instant::now())),
        // axum's serve ends after the signal (when every connection is done, which can be at
        // once), or on an error.
        r = &mut server => {
            r?;
            let (signal, at) = rx.try_recv().unwrap_or(("none", Instant::now()));
            return Ok(Stopped { signal, at, drained: true });
        }
    };
    let drained = match grace {
        Some(grace) => {
            match tokio::time::timeout(grace.saturating_sub(at.elapsed()), &mut server).await {
                Ok(r) => {
                    r?;
                    true
                }
                Err(_) => false,
            }
        }
        None => {
            (&mut server).await?;
            true
        }
    };
    Ok(Stopped {
        signal,
        at,
        drained,
    })
}

/// Exits the process with status 0 at `deadline` if it is still running then.
pub fn start_watchdog(deadline: Instant) {
    std::thread::Builder::new()
        .name("lode-shutdown-watchdog".into())
        .spawn(move || {
            std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
            tracing::warn!(
                "shutdown deadline reached before the flush finished; exiting (the translog is replayed at the next start)"
            );
            std::process::exit(0);
        })
        .expect("spawn shutdown watchdog");
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpStream;

    fn slow_app() -> axum::Router {
        axum::Router::new()
            .route("/", axum::routing::get(|| async { "ok" }))
            .route(
                "/short",
                axum::routing::get(|| async {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    "done"
                }),
            )
            .route(
                "/slow",
                axum::routing::get(|| async {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    "late"
                }),
            )
            .layer(axum::middleware::from_fn(track_in_flight))
    }

    /// Connects and sends `bytes`, from a plain thread (the server runs on the test runtime).
    fn connect(addr: std::net::SocketAddr, bytes: &[u8]) -> TcpStream {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(bytes).unwrap();
        s
    }

    fn run(
        hold: impl FnOnce(std::net::SocketAddr) -> Vec<TcpStream> + Send + 'static,
        grace: Option<Duration>,
    ) -> (Stopped, Vec<TcpStream>) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let stopped = rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let server = tokio::spawn(serve(
                listener,
                slow_app(),
                async move {
                    let _ = stop_rx.await;
                    "SIGTERM"
                },
                grace,
                |_| {},
            ));
            let held = tokio::task::spawn_blocking(move || {
                let held = hold(addr);
                // Let the server read what the clients sent before the signal.
                std::thread::sleep(Duration::from_millis(200));
                held
            })
            .await
            .unwrap();
            stop_tx.send(()).unwrap();
            let stopped = server.await.unwrap().unwrap();
            // New connections are refused once serving stopped.
            assert!(TcpStream::connect(addr).is_err(), "listener still open");
            (stopped, held)
        });
        rt.shutdown_background();
        stopped
    }

    #[test]
    fn idle_keep_alive_connections_do_not_hold_the_shutdown() {
        let (stopped, held) = run(
            |addr| {
                (0..3)
                    .map(|_| {
                        let mut s = connect(addr, b"GET / HTTP/1.1\r\nhost: x\r\n\r\n");
                        let mut buf = [0u8; 256];
                        let n = s.read(&mut buf).unwrap();
                        assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
                        s
                    })
                    .collect()
            },
            // A bound on waiting only: idle connections must not hold the shutdown at all.
            Some(Duration::from_secs(60)),
        );
        assert!(stopped.drained);
        assert_eq!(stopped.signal, "SIGTERM");
        // The server closed each idle connection: reading gives end of stream.
        for mut s in held {
            let mut buf = [0u8; 16];
            assert_eq!(s.read(&mut buf).unwrap_or(0), 0);
        }
    }

    #[test]
    fn in_flight_requests_finish_within_the_grace_period_and_close_their_connection() {
        let (stopped, held) = run(
            |addr| vec![connect(addr, b"GET /short HTTP/1.1\r\nhost: x\r\n\r\n")],
            // No bound (`http.shutdown_grace_period: 0`): the request is waited for.
            None,
        );
        assert!(stopped.drained);
        let mut answer = String::new();
        held.into_iter()
            .next()
            .unwrap()
            .read_to_string(&mut answer)
            .unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(
            answer.to_ascii_lowercase().contains("connection: close"),
            "{answer}"
        );
        assert!(answer.ends_with("done"), "{answer}");
    }

    #[test]
    fn stalled_and_slow_requests_are_abandoned_after_the_grace_period() {
        let (stopped, held) = run(
            |addr| {
                vec![
                    connect(addr, b"GET / HTTP/1.1\r\nhost: x\r\ncontent-le"),
                    connect(addr, b"GET /slow HTTP/1.1\r\nhost: x\r\n\r\n"),
                ]
            },
            Some(Duration::from_millis(300)),
        );
        assert!(!stopped.drained);
        // Once the runtime is gone, the abandoned connections are closed.
        for mut s in held {
            let mut buf = [0u8; 16];
            assert_eq!(s.read(&mut buf).unwrap_or(0), 0);
        }
    }
}
